// The pause protocol (src/bpf/hold.h, src/process/HoldRelease.cpp) without root: the hold words
// live in plain memory, and a model of the kernel's signal rule stands for the processes (of the
// SIGSTOPs and SIGCONTs sent to a process, the last one decides whether it ends up stopped).
// Producer threads run the steps memtrack.bpf.c's hold_process runs, with the same transitions.
#include <doctest/doctest.h>

#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "MemoryRing.hpp"
#include "TestFiles.hpp"
#include "actors/Lane.hpp"
#include "actors/PressureControl.hpp"
#include "actors/Writer.hpp"
#include "bpf/hold.h"
#include "process/HoldRelease.hpp"
#include "process/ProcessHolds.hpp"
#include "process/HoldStore.hpp"

using namespace memtrack;
using memtrack::unittest::TempDir;

namespace {

constexpr uint32_t kStart = 777;  // every fake process's start time

class FakeStore final : public HoldStore {
public:
    explicit FakeStore(uint32_t words) : words_(words, 0) {}
    uint32_t* words() override { return words_.data(); }
    uint32_t capacity() const override { return uint32_t(words_.size()); }
    std::vector<uint32_t> indexed() const override {
        std::lock_guard lock(mu_);
        return {index_.begin(), index_.end()};
    }
    std::optional<mt_held> entry(uint32_t pid) const override {
        std::lock_guard lock(mu_);
        if (!index_.count(pid) || gone_.count(pid)) return std::nullopt;
        mt_held h{};
        h.start_boottime = kStart;
        if (auto it = continued_.find(pid); it != continued_.end()) h.continued = it->second;
        return h;
    }
    uint64_t* outstanding() override { return outstanding_; }
    void add(uint32_t pid) {
        std::lock_guard lock(mu_);
        index_.insert(pid);
    }
    void mark_gone(uint32_t pid) {
        std::lock_guard lock(mu_);
        gone_.insert(pid);
    }
    void set_continued(uint32_t pid, uint32_t target) {
        std::lock_guard lock(mu_);
        continued_[pid] = target;
    }
    uint64_t outstanding_[MT_HOLD_REASONS] = {};

private:
    std::vector<uint32_t> words_;
    mutable std::mutex mu_;
    std::set<uint32_t> index_, gone_;
    std::map<uint32_t, uint32_t> continued_;
};

// The kernel's rule: the last signal sent decides. `on_send` runs right after a signal lands
// (to interleave a producer at an exact point).
class FakeSignals final : public HoldSignals {
public:
    Result<bool> send(uint32_t pid, uint64_t start, int sig) override {
        CHECK(start == kStart);
        {
            std::lock_guard lock(mu_);
            last_[pid] = sig;
            sent_.push_back({pid, sig});
        }
        if (on_send) on_send(pid, sig);
        return true;
    }
    bool stopped(uint32_t pid) const {
        std::lock_guard lock(mu_);
        auto it = last_.find(pid);
        return it != last_.end() && it->second == SIGSTOP;
    }
    std::vector<std::pair<uint32_t, int>> sent() const {
        std::lock_guard lock(mu_);
        return sent_;
    }
    std::function<void(uint32_t, int)> on_send;

private:
    mutable std::mutex mu_;
    std::map<uint32_t, int> last_;
    std::vector<std::pair<uint32_t, int>> sent_;
};

// memtrack.bpf.c's hold_process: entry first, claim, count, closed check, SIGSTOP, sender done.
// `before_signal` runs between the closed check and the SIGSTOP.
// Returns whether this call took the reason.
bool hold_process(FakeStore& store, FakeSignals& sig, uint32_t pid, uint32_t reason, bool resend,
                  std::atomic<uint64_t>* taken = nullptr, const std::function<void()>& before_signal = {}) {
    store.add(pid);
    std::atomic_ref<uint32_t> w(store.words()[pid]);
    uint32_t old = w.load(), next = 0;
    bool claimed = false;
    for (int i = 0; i < 8; i++) {
        if (!mt_hold_claim(old, reason, resend, &next)) return false;
        if (w.compare_exchange_strong(old, next)) {
            claimed = true;
            break;
        }
    }
    if (!claimed) return false;
    const bool was_taken = !(old & reason);
    if (was_taken) {
        std::atomic_ref<uint64_t>(store.outstanding_[mt_hold_reason_index(reason)]).fetch_add(1);
        if (taken) taken->fetch_add(1);
    }
    if (std::atomic_ref<uint32_t>(store.words()[MT_HOLD_CLOSED_WORD]).load() == 0) {
        if (before_signal) before_signal();  // the window that matters: checked, not yet sent
        (void)sig.send(pid, kStart, SIGSTOP);
    }
    w.fetch_sub(MT_HOLD_SENDER_ONE);
    return was_taken;
}

uint32_t word(FakeStore& s, uint32_t pid) { return std::atomic_ref<uint32_t>(s.words()[pid]).load(); }

}  // namespace

TEST_CASE("holds: the last reason's release resumes, an earlier one keeps the process stopped") {
    FakeStore store(64);
    FakeSignals sig;
    CHECK(hold_process(store, sig, 5, MT_HOLD_PRESSURE, true));
    CHECK(hold_process(store, sig, 5, MT_HOLD_SNAPSHOT, false));
    CHECK_FALSE(hold_process(store, sig, 5, MT_HOLD_SNAPSHOT, false));  // held already: nothing sent
    CHECK(sig.sent().size() == 2);
    CHECK(sig.stopped(5));
    CHECK(release_hold(store, sig, 5, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Kept);
    CHECK(sig.stopped(5));
    CHECK(release_hold(store, sig, 5, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::NotHeld);
    CHECK(release_hold(store, sig, 5, MT_HOLD_SNAPSHOT).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(5));
    CHECK(word(store, 5) == 0);
    CHECK(store.outstanding_[0] == 0);
    CHECK(store.outstanding_[1] == 0);
}

TEST_CASE("holds: a release waits while a sender is between its claim and its SIGSTOP") {
    FakeStore store(64);
    FakeSignals sig;
    // The producer is stopped right between its claim and its signal; the release comes then.
    HoldRelease during{};
    hold_process(store, sig, 9, MT_HOLD_PRESSURE, true, nullptr,
                 [&] { during = release_hold(store, sig, 9, MT_HOLD_PRESSURE); });
    CHECK(during.outcome == HoldRelease::Outcome::Busy);
    CHECK(sig.stopped(9));  // the SIGSTOP still went out, and nothing cancelled it
    CHECK(release_hold(store, sig, 9, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(9));
}

TEST_CASE("holds: a reason taken while a resume is under way is stopped again after the SIGCONT") {
    FakeStore store(64);
    FakeSignals sig;
    hold_process(store, sig, 3, MT_HOLD_PRESSURE, true);
    // Right after the release's SIGCONT lands, a producer claims and signals (its SIGSTOP
    // lands after the SIGCONT here; in the kernel it may also land before and be cancelled).
    bool once = false;
    sig.on_send = [&](uint32_t pid, int s) {
        if (s != SIGCONT || once) return;
        once = true;
        CHECK((word(store, pid) & MT_HOLD_RESUMING) != 0);
        CHECK(release_hold(store, sig, pid, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::NotHeld);
        hold_process(store, sig, pid, MT_HOLD_SNAPSHOT, false);
        CHECK(release_hold(store, sig, pid, MT_HOLD_SNAPSHOT).outcome == HoldRelease::Outcome::Busy);
    };
    CHECK(release_hold(store, sig, 3, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    sig.on_send = nullptr;
    // The releaser sent its own SIGSTOP after its SIGCONT: stopped, as the word says.
    const auto sent = sig.sent();
    REQUIRE(sent.size() == 4);
    CHECK(sent[1].second == SIGCONT);
    CHECK(sent[3].second == SIGSTOP);
    CHECK(sig.stopped(3));
    CHECK(word(store, 3) == MT_HOLD_SNAPSHOT);
    CHECK(release_hold(store, sig, 3, MT_HOLD_SNAPSHOT).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(3));
}

TEST_CASE("holds: once closed, a reason taken while a resume is under way is not stopped again") {
    FakeStore store(64);
    FakeSignals sig;
    hold_process(store, sig, 3, MT_HOLD_PRESSURE, true);
    close_protocol(store);
    bool once = false;
    sig.on_send = [&](uint32_t pid, int s) {
        if (s != SIGCONT || once) return;
        once = true;
        hold_process(store, sig, pid, MT_HOLD_PRESSURE, true);  // claimed; closed: no SIGSTOP
    };
    CHECK(release_hold(store, sig, 3, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    sig.on_send = nullptr;
    const auto sent = sig.sent();
    REQUIRE(sent.size() == 2);  // the first pause's SIGSTOP, the release's SIGCONT: nothing after
    CHECK(sent[1].second == SIGCONT);
    CHECK_FALSE(sig.stopped(3));
}

TEST_CASE("holds: a process gone since its pause is released without a signal") {
    FakeStore store(64);
    FakeSignals sig;
    hold_process(store, sig, 7, MT_HOLD_SPAWN, false);
    store.mark_gone(7);
    CHECK(release_hold(store, sig, 7, MT_HOLD_SPAWN).outcome == HoldRelease::Outcome::Gone);
    CHECK(sig.sent().size() == 1);
    CHECK(word(store, 7) == 0);
}

TEST_CASE("holds: closing waits for a sender in flight and resumes after its SIGSTOP; none follows") {
    FakeStore store(64);
    FakeSignals sig;
    std::atomic<bool> claimed{false}, go{false};
    std::thread producer([&] {
        hold_process(store, sig, 11, MT_HOLD_PRESSURE, true, nullptr, [&] {
            claimed = true;
            while (!go) std::this_thread::yield();
        });
    });
    while (!claimed) std::this_thread::yield();
    std::thread closer([&] { release_all_for_good(store, sig); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    go = true;
    producer.join();
    closer.join();
    const auto sent = sig.sent();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].second == SIGSTOP);
    CHECK(sent[1].second == SIGCONT);
    CHECK_FALSE(sig.stopped(11));
    // Closed: a later claim sends nothing.
    hold_process(store, sig, 11, MT_HOLD_PRESSURE, true);
    CHECK(sig.sent().size() == 2);
}

namespace {

// Producers on `pids` claim pressure (re-sending) and first-stack pauses at random while one
// releaser ends them at random, as memtrack's actors would. Then everybody stops: the word and
// the last signal must agree for every process, and after a release of everything none is left
// stopped.
struct StormResult {
    bool consistent = true;
    bool none_left_stopped = true;
    uint64_t taken = 0, released = 0;
};

StormResult storm(unsigned producers, unsigned rounds) {
    FakeStore store(64);
    FakeSignals sig;
    const std::vector<uint32_t> pids = {2, 3, 4};
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> taken{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < producers; ++t)
        threads.emplace_back([&, t] {
            std::mt19937 rng(t * 7919 + 1);
            while (!stop) {
                const uint32_t pid = pids[rng() % pids.size()];
                const bool pressure = rng() % 4 != 0;
                hold_process(store, sig, pid, pressure ? MT_HOLD_PRESSURE : MT_HOLD_SNAPSHOT, pressure, &taken);
            }
        });
    uint64_t released = 0;
    std::mt19937 rng(42);
    for (unsigned i = 0; i < rounds; ++i) {
        const uint32_t pid = pids[rng() % pids.size()];
        const uint32_t reason = rng() % 2 ? MT_HOLD_PRESSURE : MT_HOLD_SNAPSHOT;
        released += release_hold(store, sig, pid, reason).released();
    }
    stop = true;
    for (auto& t : threads) t.join();

    StormResult out;
    for (uint32_t pid : pids)
        if ((mt_hold_reasons(word(store, pid)) != 0) != sig.stopped(pid)) out.consistent = false;
    for (uint32_t pid : pids)
        for (uint32_t reason : {MT_HOLD_PRESSURE, MT_HOLD_SNAPSHOT})
            released += release_hold(store, sig, pid, reason).released();
    for (uint32_t pid : pids)
        if (sig.stopped(pid) || word(store, pid) != 0) out.none_left_stopped = false;
    out.taken = taken;
    out.released = released;
    return out;
}

}  // namespace

TEST_CASE("holds: under contention the word and the process agree, nothing stays stopped, stops = resumes") {
    for (int run = 0; run < 20; ++run) {
        CAPTURE(run);
        const StormResult r = storm(4, 20000);
        CHECK(r.consistent);
        CHECK(r.none_left_stopped);
        CHECK(r.taken == r.released);
    }
}

TEST_CASE("holds: the agreement check catches a release that does not wait for senders (the check can fail)") {
    // The interleaving the senders count exists for, with a release that ignores it: the SIGCONT
    // lands between a producer's claim and its SIGSTOP, and the process ends up stopped with no
    // reason held, which nobody would ever resume.
    FakeStore store(64);
    FakeSignals sig;
    hold_process(store, sig, 6, MT_HOLD_PRESSURE, true, nullptr, [&] {
        std::atomic_ref<uint32_t> w(store.words()[6]);
        uint32_t old = w.load();
        REQUIRE(w.compare_exchange_strong(old, old & ~MT_HOLD_PRESSURE));  // senders ignored
        (void)sig.send(6, kStart, SIGCONT);
    });
    CHECK(sig.stopped(6));
    CHECK(mt_hold_reasons(word(store, 6)) == 0);
    // What storm() checks, failing here as it must.
    CHECK((mt_hold_reasons(word(store, 6)) != 0) != sig.stopped(6));
    // The real release refuses that moment.
    FakeStore store2(64);
    FakeSignals sig2;
    hold_process(store2, sig2, 6, MT_HOLD_PRESSURE, true, nullptr,
                 [&] { CHECK(release_hold(store2, sig2, 6, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Busy); });
    CHECK((mt_hold_reasons(word(store2, 6)) != 0) == sig2.stopped(6));
}

namespace {

// memtrack.bpf.c's on_signal for someone else's SIGSTOP: the signal lands, BPF marks the word.
void user_stop(FakeStore& store, FakeSignals& sig, uint32_t pid) {
    (void)sig.send(pid, kStart, SIGSTOP);
    std::atomic_ref<uint32_t>(store.words()[pid]).fetch_or(MT_HOLD_USER_STOP);
}

}  // namespace

TEST_CASE("holds: a process someone else stopped while it was held stays stopped when the hold ends") {
    FakeStore store(64);
    FakeSignals sig;
    CHECK(hold_process(store, sig, 7, MT_HOLD_PRESSURE, true));
    user_stop(store, sig, 7);
    const size_t sent_before = sig.sent().size();
    CHECK(release_hold(store, sig, 7, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::LeftStopped);
    CHECK(sig.sent().size() == sent_before);  // no SIGCONT
    CHECK(sig.stopped(7));
    CHECK(word(store, 7) == MT_HOLD_USER_STOP);
    // The final pass leaves it stopped too.
    CHECK(hold_process(store, sig, 7, MT_HOLD_SNAPSHOT, false));
    const FinalPass pass = release_all_for_good(store, sig);
    CHECK(pass.left_stopped == 1);
    CHECK(pass.resumed == 0);
    CHECK(sig.stopped(7));
}

TEST_CASE("holds: someone else's SIGSTOP landing while memtrack's SIGCONT is on its way is sent again after it") {
    FakeStore store(64);
    FakeSignals sig;
    CHECK(hold_process(store, sig, 8, MT_HOLD_PRESSURE, true));
    // The user's SIGSTOP comes after the release chose to resume, just before its SIGCONT lands.
    sig.on_send = [&](uint32_t pid, int s) {
        if (pid == 8 && s == SIGCONT) {
            sig.on_send = nullptr;
            user_stop(store, sig, 8);
            (void)sig.send(8, kStart, SIGCONT);  // ... and ours lands last, cancelling it
        }
    };
    CHECK(release_hold(store, sig, 8, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    CHECK(sig.stopped(8));  // the releaser's SIGSTOP after its SIGCONT
    CHECK(word(store, 8) == MT_HOLD_USER_STOP);
}

TEST_CASE("holds: after someone else's SIGCONT, the hold's end resumes the process again") {
    FakeStore store(64);
    FakeSignals sig;
    CHECK(hold_process(store, sig, 9, MT_HOLD_PRESSURE, true));
    user_stop(store, sig, 9);
    (void)sig.send(9, kStart, SIGCONT);  // the user's SIGCONT: BPF clears the mark
    std::atomic_ref<uint32_t>(store.words()[9]).fetch_and(~MT_HOLD_USER_STOP);
    CHECK_FALSE(hold_process(store, sig, 9, MT_HOLD_PRESSURE, true));  // it ran: paused again (a re-send)
    CHECK(sig.stopped(9));
    CHECK(release_hold(store, sig, 9, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(9));
    CHECK(word(store, 9) == 0);
}

TEST_CASE("holds: stop_pausing closes the protocol before it returns, and resumes on the strand") {
    // memtrack says "no process is paused from now on" right after stop_pausing(): a process
    // that writes once it is said must find the protocol closed, however busy the strand is.
    boost::asio::io_context io;  // not run yet: the strand is "busy"
    FakeStore store(64);
    FakeSignals sig;
    ProcessHolds holds(io, store, sig, [](uint32_t) { return uint64_t(0); });
    CHECK(hold_process(store, sig, 11, MT_HOLD_PRESSURE, true));
    holds.stop_pausing();
    CHECK(word(store, MT_HOLD_CLOSED_WORD) == 1);
    const size_t sent = sig.sent().size();
    CHECK(hold_process(store, sig, 12, MT_HOLD_PRESSURE, true));  // claimed, but closed:
    CHECK(sig.sent().size() == sent);                              // no SIGSTOP for 12
    CHECK(sig.stopped(11));            // 11 waits for the strand
    io.run();
    CHECK_FALSE(sig.stopped(11));
    CHECK(word(store, 11) == 0);
}

TEST_CASE("pressure: producers resume between chunks once the rings are below the resume mark, not once empty") {
    // The pause protocol's other half: a RingConsumer reading a ring (MemoryRing) chunk by chunk
    // reports each chunk's fill to PressureControl, which must end the pressure pause as soon as
    // the fill is under 1/4 while records are still waiting.
    TempDir dir;
    constexpr uint64_t kRingBytes = 1 << 20;
    unittest::MemoryRing ring(kRingBytes);
    uint64_t written = 0;
    while ((written + 1) * unittest::MemoryRing::kEventBytes <= kRingBytes * 8 / 10) REQUIRE(ring.write_event(written++));

    boost::asio::io_context io;
    FakeStore store(64);
    FakeSignals sig;
    ProcessHolds holds(io, store, sig, [](uint32_t) { return uint64_t(0); });
    CHECK(hold_process(store, sig, 7, MT_HOLD_PRESSURE, true));  // BPF's stop at 3/4
    auto artifact = ZstdFileWriter::create(dir / "events.MemtrackArtifact.msgpack");
    REQUIRE(artifact);
    SinkLane<Writer> lane(io, ring.view(),
                          {RingConsumer::Records::Events, 1024, std::chrono::microseconds(0), std::chrono::milliseconds(10)},
                          std::move(artifact).value());
    PressureControl pressure(io, holds, WatermarkPolicy{0.75, 0.25});
    pressure.watch(&lane.ring());
    lane.consumer().set_chunk_observer([&](uint64_t, double fill) { pressure.on_chunk(fill); });

    std::optional<uint64_t> fill_at_resume;
    sig.on_send = [&](uint32_t pid, int s) {
        if (pid == 7 && s == SIGCONT) fill_at_resume = ring.producer_pos() - ring.consumer_pos();
    };
    pressure.start();
    lane.consumer().start();
    for (int turn = 0; turn < 100000 && !fill_at_resume; ++turn) io.run_one();
    REQUIRE(fill_at_resume);
    CHECK_FALSE(sig.stopped(7));
    CHECK(*fill_at_resume > 0);                   // records still waiting: not resumed at empty
    CHECK(*fill_at_resume < kRingBytes / 4);      // and not before the ring was under 1/4
    // At most one chunk past the mark: the fill is looked at between chunks of 1024 records.
    CHECK(*fill_at_resume + 2 * 1024 * unittest::MemoryRing::kEventBytes >= kRingBytes / 4);

    pressure.stop();
    lane.consumer().stop();
    io.run();
}

TEST_CASE("holds: each pause ProcessHolds ends is counted under its reason, pressure resumes per process") {
    boost::asio::io_context io;
    FakeStore store(64);
    FakeSignals sig;
    ProcessHolds holds(io, store, sig, [](uint32_t) { return uint64_t(0); });
    for (int round = 0; round < 2; ++round) {
        CHECK(hold_process(store, sig, 21, MT_HOLD_PRESSURE, true));
        if (round == 0) CHECK(hold_process(store, sig, 22, MT_HOLD_PRESSURE, true));
        if (round == 0) CHECK(hold_process(store, sig, 23, MT_HOLD_SPAWN, true));
        holds.release(21, MT_HOLD_PRESSURE);
        if (round == 0) holds.release(22, MT_HOLD_PRESSURE);
        if (round == 0) holds.release(23, MT_HOLD_SPAWN);
        holds.release(24, MT_HOLD_MODULE);  // never held: nothing ends, nothing counted
        io.restart();
        io.run();
    }
    const PauseCounters c = holds.pause_counters();
    CHECK(c.pressure_resumes_by_pid == std::map<int32_t, uint64_t>{{21, 2}, {22, 1}});
    CHECK(c.stop_to_resume_ns.count() == 3);
    CHECK(c.spawn_held_ns.count() == 1);
    CHECK(c.new_code_held_ns.count() == 0);
    const HoldCounts counts = holds.counts();
    CHECK(counts.released[mt_hold_reason_index(MT_HOLD_PRESSURE)] == 3);
    CHECK(counts.released[mt_hold_reason_index(MT_HOLD_SPAWN)] == 1);
    for (uint32_t pid : {21u, 22u, 23u}) CHECK_FALSE(sig.stopped(pid));
}

namespace {

// memtrack.bpf.c's restop, on someone else's SIGCONT (which has landed already): claim a RESTOP
// while a reason is held. Its SIGSTOP is sent later (irq_work): deliver_restop() then lands it.
bool foreign_cont(FakeStore& store, FakeSignals& sig, uint32_t pid) {
    (void)sig.send(pid, kStart, SIGCONT);
    std::atomic_ref<uint32_t> w(store.words()[pid]);
    uint32_t old = w.load(), next = 0;
    while (mt_hold_restop_claim(old, 0, &next))
        if (w.compare_exchange_strong(old, next)) return true;
    return false;
}

void deliver_restop(FakeStore& store, FakeSignals& sig, uint32_t pid) {
    (void)sig.send(pid, kStart, SIGSTOP);
    std::atomic_ref<uint32_t> w(store.words()[pid]);
    uint32_t old = w.load();
    while (!w.compare_exchange_strong(old, mt_hold_restop_landed(old))) {
    }
}

}  // namespace

TEST_CASE("holds: someone else's SIGCONT to a held process is followed by a RESTOP, and no release overtakes it") {
    FakeStore store(64);
    FakeSignals sig;
    CHECK(hold_process(store, sig, 13, MT_HOLD_SPAWN, false));
    // No pause held: a SIGCONT ends nothing of ours, no RESTOP.
    CHECK_FALSE(foreign_cont(store, sig, 14));
    CHECK(foreign_cont(store, sig, 13));
    CHECK_FALSE(sig.stopped(13));  // running until the RESTOP lands
    CHECK(mt_hold_restops(word(store, 13)) == 1);
    // memtrack's release comes while the RESTOP's SIGSTOP is on its way: it must wait, or its
    // SIGCONT would land before that SIGSTOP and leave the process stopped with nothing held.
    CHECK(release_hold(store, sig, 13, MT_HOLD_SPAWN).outcome == HoldRelease::Outcome::Busy);
    deliver_restop(store, sig, 13);
    CHECK(sig.stopped(13));
    CHECK(word(store, 13) == MT_HOLD_SPAWN);
    CHECK(release_hold(store, sig, 13, MT_HOLD_SPAWN).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(13));
    CHECK(word(store, 13) == 0);
}

TEST_CASE("holds: the sender of a SIGCONT that ended a pressure pause pauses itself for pressure, and no release overtakes its SIGSTOP") {
    FakeStore store(64);
    FakeSignals sig;
    // memtrack.bpf.c's pause_continuer: the reason and a RESTOP claimed at once, on a word that
    // held nothing; the SIGSTOP is the sender's own, sent a moment later (irq_work).
    store.add(31);
    uint32_t next = 0;
    REQUIRE(mt_hold_restop_claim(word(store, 31), MT_HOLD_PRESSURE, &next));
    CHECK(mt_hold_reasons(next) == MT_HOLD_PRESSURE);
    CHECK(mt_hold_restops(next) == 1);
    store.words()[31] = next;
    std::atomic_ref<uint64_t>(store.outstanding_[mt_hold_reason_index(MT_HOLD_PRESSURE)]).fetch_add(1);
    // The pressure release comes before that SIGSTOP has landed: it must wait.
    CHECK(release_hold(store, sig, 31, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Busy);
    deliver_restop(store, sig, 31);
    CHECK(sig.stopped(31));
    CHECK(release_hold(store, sig, 31, MT_HOLD_PRESSURE).outcome == HoldRelease::Outcome::Resumed);
    CHECK_FALSE(sig.stopped(31));
    CHECK(word(store, 31) == 0);
    // Already paused for pressure (its stop cancelled by someone else): one more RESTOP, the
    // reason as it was.
    REQUIRE(mt_hold_restop_claim(MT_HOLD_PRESSURE, MT_HOLD_PRESSURE, &next));
    CHECK(next == (MT_HOLD_PRESSURE | MT_HOLD_RESTOP_ONE));
}

// memtrack.bpf.c's pause_continuer: `pid` continued `target` (held), and pauses itself until
// that pause ends (the reason and a RESTOP claimed at once, its own SIGSTOP landing later).
void pause_continuer(FakeStore& store, FakeSignals& sig, uint32_t pid, uint32_t target) {
    store.add(pid);
    store.set_continued(pid, target);
    std::atomic_ref<uint32_t> w(store.words()[pid]);
    uint32_t old = w.load(), next = 0;
    REQUIRE(mt_hold_restop_claim(old, MT_HOLD_CONTINUER, &next));
    REQUIRE(w.compare_exchange_strong(old, next));
    if (!(old & MT_HOLD_CONTINUER))
        std::atomic_ref<uint64_t>(store.outstanding_[mt_hold_reason_index(MT_HOLD_CONTINUER)]).fetch_add(1);
    deliver_restop(store, sig, pid);
}

TEST_CASE("holds: a process paused for continuing a held one resumes once that one's pause ends, not before") {
    boost::asio::io_context io;
    FakeStore store(64);
    FakeSignals sig;
    ProcessHolds holds(io, store, sig, [](uint32_t) { return uint64_t(0); });
    CHECK(hold_process(store, sig, 41, MT_HOLD_SPAWN, false));   // a new child, held
    CHECK(hold_process(store, sig, 42, MT_HOLD_MODULE, false));  // another, held for new code
    pause_continuer(store, sig, 40, 41);                         // its parent continued the first
    CHECK(sig.stopped(40));
    CHECK(mt_hold_reasons(word(store, 40)) == MT_HOLD_CONTINUER);
    // Another process's pause ending changes nothing for it.
    holds.release(42, MT_HOLD_MODULE);
    io.run();
    io.restart();
    CHECK_FALSE(sig.stopped(42));
    CHECK(sig.stopped(40));
    // Its child's does.
    holds.release(41, MT_HOLD_SPAWN);
    io.run();
    io.restart();
    CHECK_FALSE(sig.stopped(41));
    CHECK_FALSE(sig.stopped(40));
    CHECK(word(store, 40) == 0);
    CHECK(holds.counts().released[mt_hold_reason_index(MT_HOLD_CONTINUER)] == 1);

    // A continued process that exits while held (BPF clears its word, nothing tells memtrack):
    // the backstop finds it.
    CHECK(hold_process(store, sig, 44, MT_HOLD_SPAWN, false));
    pause_continuer(store, sig, 43, 44);
    holds.start();
    for (int i = 0; i < 3; ++i) io.run_for(std::chrono::milliseconds(5));
    CHECK(sig.stopped(43));  // 44 still held
    store.words()[44] = 0;   // end_holds at its exit
    std::atomic_ref<uint64_t>(store.outstanding_[mt_hold_reason_index(MT_HOLD_SPAWN)]).fetch_sub(1);
    for (int i = 0; i < 20 && sig.stopped(43); ++i) io.run_for(std::chrono::milliseconds(5));
    CHECK_FALSE(sig.stopped(43));
    CHECK(word(store, 43) == 0);
    holds.stop();
    io.run();
}

TEST_CASE("holds: RESTOPs are counted up to their field's room, and forgotten when every reason ends") {
    uint32_t w = MT_HOLD_MODULE, next = 0;
    for (unsigned i = 0; i < 15; ++i) {
        REQUIRE(mt_hold_restop_claim(w, 0, &next));
        w = next;
    }
    CHECK(mt_hold_restops(w) == 15);
    CHECK_FALSE(mt_hold_restop_claim(w, 0, &next));  // full: the caller counts it unrestored
    CHECK_FALSE(mt_hold_restop_claim(w, MT_HOLD_PRESSURE, &next));  // no reason taken without its RESTOP
    CHECK(mt_hold_reasons(w) == MT_HOLD_MODULE);   // nothing spilled into other fields
    CHECK(mt_hold_senders(w) == 0);
    CHECK((w & MT_HOLD_USER_STOP) == 0);
    CHECK(mt_hold_end_all(w, &next) == MT_HOLD_MODULE);
    CHECK(next == 0);
    CHECK(mt_hold_restop_landed(0) == 0);  // a late landing after the exit changes nothing
}

TEST_CASE("holds: with SIGCONTs from others and their RESTOPs in a storm, the word and the process agree") {
    // A producer takes pauses, a releaser ends them, another process sends SIGCONTs at random and
    // BPF answers each with a RESTOP delivered a little later. Whenever everybody stops, a process
    // with a reason held must be stopped and one without must run.
    for (int run = 0; run < 10; ++run) {
        CAPTURE(run);
        FakeStore store(64);
        FakeSignals sig;
        const std::vector<uint32_t> pids = {2, 3, 4};
        std::atomic<bool> stop{false}, others_done{false};
        std::mutex queue_mu;
        std::vector<uint32_t> queued;  // RESTOPs claimed, their SIGSTOPs not sent yet
        std::thread producer([&] {
            std::mt19937 rng(run * 31 + 7);
            while (!stop) hold_process(store, sig, pids[rng() % pids.size()], rng() % 2 ? MT_HOLD_SPAWN : MT_HOLD_MODULE, false);
        });
        std::thread other([&] {
            std::mt19937 rng(run * 17 + 3);
            while (!stop) {
                const uint32_t pid = pids[rng() % pids.size()];
                if (foreign_cont(store, sig, pid)) {
                    std::lock_guard lock(queue_mu);
                    queued.push_back(pid);
                }
            }
        });
        std::thread irq_work([&] {
            for (;;) {
                std::vector<uint32_t> now;
                {
                    std::lock_guard lock(queue_mu);
                    now.swap(queued);
                }
                for (uint32_t pid : now) deliver_restop(store, sig, pid);
                if (others_done && now.empty()) {
                    std::lock_guard lock(queue_mu);
                    if (queued.empty()) return;
                }
                std::this_thread::yield();
            }
        });
        std::mt19937 rng(run);
        for (unsigned i = 0; i < 20000; ++i)
            release_hold(store, sig, pids[rng() % pids.size()], rng() % 2 ? MT_HOLD_SPAWN : MT_HOLD_MODULE);
        stop = true;
        producer.join();
        other.join();
        others_done = true;  // every RESTOP claimed is queued: the "kernel" delivers them all
        irq_work.join();
        for (uint32_t pid : pids) {
            CAPTURE(pid);
            CHECK(mt_hold_restops(word(store, pid)) == 0);
            CHECK((mt_hold_reasons(word(store, pid)) != 0) == sig.stopped(pid));
        }
        const FinalPass pass = release_all_for_good(store, sig);
        CHECK(pass.senders_left == 0);
        for (uint32_t pid : pids) CHECK_FALSE(sig.stopped(pid));
    }
}

namespace {

// A `held` entry watching a process held for `reason` (taken at `since`) before it ran, to
// resume with registers (ip, sp).
mt_held watched_before_run(uint32_t reason, uint64_t since, uint64_t ip, uint64_t sp) {
    mt_held h{};
    h.since_ns[mt_hold_reason_index(reason)] = since;
    h.unrun_reason = reason;
    h.unrun_since = since;
    h.unrun_ip = ip;
    h.unrun_sp = sp;
    return h;
}

}  // namespace

TEST_CASE("holds: a process held before it ran is caught stopping anywhere but where it was held") {
    mt_held h = watched_before_run(MT_HOLD_SPAWN, 500, 0x401000, 0x7ffc0000);
    // Stopped where it was held: it never ran.
    CHECK_FALSE(mt_hold_ran_unheld(&h, MT_HOLD_SPAWN, 0x401000, 0x7ffc0000));
    // Anywhere else while the pause holds: it ran.
    CHECK(mt_hold_ran_unheld(&h, MT_HOLD_SPAWN, 0x401234, 0x7ffc0000));
    CHECK(mt_hold_ran_unheld(&h, MT_HOLD_SPAWN | MT_HOLD_PRESSURE, 0x401000, 0x7ffbff00));
    // The pause ended: it runs as it should; a later pause for the same reason is not watched.
    CHECK_FALSE(mt_hold_ran_unheld(&h, MT_HOLD_PRESSURE, 0x401234, 0x7ffc0000));
    h.since_ns[mt_hold_reason_index(MT_HOLD_SPAWN)] = 900;
    CHECK_FALSE(mt_hold_ran_unheld(&h, MT_HOLD_SPAWN, 0x401234, 0x7ffc0000));
    // Nothing watched.
    mt_held none{};
    CHECK_FALSE(mt_hold_ran_unheld(&none, MT_HOLD_SPAWN | MT_HOLD_MODULE, 0x401234, 0x7ffc0000));
}

TEST_CASE("holds: a process held before it ran that a SIGCONT let reach user space is stopped at its first instruction only") {
    mt_held h = watched_before_run(MT_HOLD_MODULE, 700, 0x7f0000001000, 0x7ffd0000);
    // Where it was held, that pause holding: it has run nothing yet.
    CHECK(mt_hold_first_run(&h, MT_HOLD_MODULE, 0x7f0000001000, 0x7ffd0000));
    CHECK(mt_hold_first_run(&h, MT_HOLD_MODULE | MT_HOLD_RESTOP_ONE, 0x7f0000001000, 0x7ffd0000));
    // The same instruction later (another call, another stack), or another one: not its first.
    CHECK_FALSE(mt_hold_first_run(&h, MT_HOLD_MODULE, 0x7f0000001000, 0x7ffcff00));
    CHECK_FALSE(mt_hold_first_run(&h, MT_HOLD_MODULE, 0x7f0000001004, 0x7ffd0000));
    // Released (memtrack's own SIGCONT): it goes on.
    CHECK_FALSE(mt_hold_first_run(&h, MT_HOLD_PRESSURE, 0x7f0000001000, 0x7ffd0000));
    CHECK_FALSE(mt_hold_first_run(&h, 0, 0x7f0000001000, 0x7ffd0000));
    // A later pause for the same reason was taken after it ran: not watched.
    h.since_ns[mt_hold_reason_index(MT_HOLD_MODULE)] = 900;
    CHECK_FALSE(mt_hold_first_run(&h, MT_HOLD_MODULE, 0x7f0000001000, 0x7ffd0000));
    // Caught once (the watch cleared): never again.
    h.since_ns[mt_hold_reason_index(MT_HOLD_MODULE)] = 700;
    h.unrun_ip = 0;
    CHECK_FALSE(mt_hold_first_run(&h, MT_HOLD_MODULE, 0, 0x7ffd0000));
}
