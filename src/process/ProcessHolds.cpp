#include "process/ProcessHolds.hpp"

#include <chrono>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;

namespace {
// A sender is a BPF program between its claim and its SIGSTOP: microseconds, unless preempted.
constexpr auto kRetry = std::chrono::microseconds(200);
// A CONTINUER pause whose continued process exited: found within this.
constexpr auto kContinuerBackstop = std::chrono::milliseconds(10);
static_assert(MT_COUNTER_HOLDS_EXITED - MT_COUNTER_HOLDS_TAKEN == MT_HOLD_REASONS, "one taken counter per reason");
static_assert(MT_COUNTER_UNWIND_CFI_FRAMES - MT_COUNTER_HOLDS_EXITED == MT_HOLD_REASONS, "one exited counter per reason");
}  // namespace

ProcessHolds::ProcessHolds(asio::io_context& io, HoldStore& store, HoldSignals& signals,
                           std::function<uint64_t(uint32_t)> kernel_counter)
    : strand_(asio::make_strand(io)), store_(store), signals_(signals),
      kernel_counter_(std::move(kernel_counter)), retry_timer_(strand_),
      continuer_backstop_(strand_, kContinuerBackstop, [this] { release_continuers(); }) {}

void ProcessHolds::start() {
    asio::post(strand_, [this] { continuer_backstop_.start(); });
}

void ProcessHolds::stop() {
    asio::post(strand_, [this] { continuer_backstop_.stop(); });
}

// A CONTINUER pause ends once the process it continued holds no reason but being a continuer
// too (released, exited, or its pid taken by a process not held). Busy ones are retried. Run
// after every handler that ends pauses (cheap while no continuer is paused), and by the backstop.
void ProcessHolds::release_continuers() {
    if (outstanding(MT_HOLD_CONTINUER) == 0) return;
    for (uint32_t pid : pids_held_for(store_, MT_HOLD_CONTINUER)) {
        const std::optional<mt_held> e = store_.entry(pid);
        const std::optional<uint32_t> target = e ? hold_word_now(store_, e->continued) : std::nullopt;
        if (target && !mt_hold_continued_ended(*target)) continue;
        if (!try_release(pid, MT_HOLD_CONTINUER)) {
            retries_.emplace(pid, MT_HOLD_CONTINUER);
            arm_retry();
        }
    }
}

// Dispatched, not posted: called from an io thread while the strand is idle, the SIGCONT goes out
// in the caller's handler. A post woke another io thread to send it (epoll's interrupter), and the
// held process stayed stopped for that wake-up too, at every hold (BENCHMARKS.md, dlopen).
void ProcessHolds::release(uint32_t pid, uint32_t reason) {
    asio::dispatch(strand_, [this, pid, reason] {
        if (!try_release(pid, reason)) {
            retries_.emplace(pid, reason);
            arm_retry();
        }
        release_continuers();  // a pause ended: whoever continued that process may go on too
    });
}

void ProcessHolds::release_every(uint32_t reason, std::function<bool()> still_wanted, Done done) {
    asio::post(strand_, [this, reason, still_wanted = std::move(still_wanted), done = std::move(done)] {
        const std::vector<uint32_t> pids = pids_held_for(store_, reason);
        size_t& first = next_first_[mt_hold_reason_index(reason)];
        for (size_t i = 0; i < pids.size(); ++i) {
            if (!still_wanted()) {
                first += i;  // the next round starts with the first one left held
                break;
            }
            try_release(pids[(first + i) % pids.size()], reason);
        }
        release_continuers();  // once for the round, not per process
        if (done) done();
    });
}

// false: busy, try again.
bool ProcessHolds::try_release(uint32_t pid, uint32_t reason) {
    const HoldRelease r = release_hold(store_, signals_, pid, reason);
    if (r.outcome == HoldRelease::Outcome::Busy) return false;
    if (r.error) log::error("resume {}: {}", pid, r.error->message());
    if (r.released()) account(pid, reason, r);
    return true;
}

void ProcessHolds::account(uint32_t pid, uint32_t reason, const HoldRelease& r) {
    const uint32_t index = mt_hold_reason_index(reason);
    released_[index].fetch_add(1, std::memory_order_relaxed);
    const uint64_t now = monotonic_ns();
    const uint64_t held_ns = r.since_ns && r.since_ns <= now ? now - r.since_ns : 0;
    std::lock_guard lock(pause_counters_mu_);
    PauseCounters& c = pause_counters_;
    if (reason == MT_HOLD_PRESSURE) {
        auto& by_pid = c.pressure_resumes_by_pid;
        if (by_pid.size() < PauseCounters::kMaxPids || by_pid.count(int32_t(pid))) ++by_pid[int32_t(pid)];
        c.paused_ns.add(held_ns);
        c.stop_to_resume_ns.add(held_ns);
    } else if (reason == MT_HOLD_SPAWN) {
        c.spawn_held_ns.add(held_ns);
    } else if (reason == MT_HOLD_MODULE) {
        c.new_code_held_ns.add(held_ns);
    }
}

void ProcessHolds::arm_retry() {
    if (retry_armed_) return;
    retry_armed_ = true;
    retry_timer_.expires_after(kRetry);
    retry_timer_.async_wait([this](boost::system::error_code ec) {
        retry_armed_ = false;
        if (ec) return;
        auto pending = std::move(retries_);
        retries_.clear();
        for (auto [pid, reason] : pending)
            if (!try_release(pid, reason)) retries_.emplace(pid, reason);
        release_continuers();
        if (!retries_.empty()) arm_retry();
    });
}

void ProcessHolds::stop_pausing() {
    // Closed now, not when the strand gets to it: a process that starts writing once this
    // returns is never paused (the strand may be busy for a while, slower still under ASan).
    close_protocol(store_);
    asio::post(strand_, [this] {
        const FinalPass pass = release_all_for_good(store_, signals_);
        for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r) released_[r].fetch_add(pass.ended[r]);
    });
}

FinalPass ProcessHolds::close() {
    retry_timer_.cancel();
    continuer_backstop_.stop();
    retries_.clear();
    // Each hold still there ends as any other does (counted, timed); release_all_for_good then
    // closes the protocol and ends whatever a sender in flight still had.
    for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r)
        for (uint32_t pid : pids_held_for(store_, 1u << r)) try_release(pid, 1u << r);
    FinalPass pass = release_all_for_good(store_, signals_);
    for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r) released_[r].fetch_add(pass.ended[r]);
    if (pass.senders_left) log::error("resume: {} processes still had a pause in flight at exit", pass.senders_left);
    return pass;
}

uint64_t ProcessHolds::outstanding(uint32_t reason) const {
    uint64_t* out = store_.outstanding();
    if (!out) return 1;  // unknown: look
    return std::atomic_ref<uint64_t>(out[mt_hold_reason_index(reason)]).load(std::memory_order_acquire);
}

HoldCounts ProcessHolds::counts() const {
    HoldCounts c;
    for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r) {
        c.taken[r] = kernel_counter_(MT_COUNTER_HOLDS_TAKEN + r);
        c.exited[r] = kernel_counter_(MT_COUNTER_HOLDS_EXITED + r);
        c.released[r] = released_[r].load(std::memory_order_relaxed);
    }
    c.signals = kernel_counter_(MT_COUNTER_HOLD_SIGNALS);
    c.signal_failures = kernel_counter_(MT_COUNTER_SIGNAL_FAILED);
    c.failed = kernel_counter_(MT_COUNTER_HOLD_FAILED);
    return c;
}

PauseCounters ProcessHolds::pause_counters() const {
    std::lock_guard lock(pause_counters_mu_);
    return pause_counters_;
}

}  // namespace memtrack
