#include "process/HoldRelease.hpp"

#include <signal.h>

#include <atomic>
#include <thread>

namespace memtrack {
namespace {

std::atomic_ref<uint32_t> word_of(HoldStore& store, uint32_t pid) { return std::atomic_ref<uint32_t>(store.words()[pid]); }

void one_less(HoldStore& store, uint32_t reason_index) {
    if (uint64_t* out = store.outstanding()) std::atomic_ref<uint64_t>(out[reason_index]).fetch_sub(1);
}

bool closed(HoldStore& store) { return word_of(store, MT_HOLD_CLOSED_WORD).load() != 0; }

}  // namespace

HoldRelease release_hold(HoldStore& store, HoldSignals& signals, uint32_t pid, uint32_t reason) {
    HoldRelease out;
    if (pid == MT_HOLD_CLOSED_WORD || pid >= store.capacity()) return out;
    auto word = word_of(store, pid);
    const uint32_t index = mt_hold_reason_index(reason);
    uint32_t old = word.load();
    std::optional<mt_held> entry;
    enum mt_hold_release step = MT_RELEASE_NOT_HELD;
    uint32_t next = 0;
    for (;;) {
        step = mt_hold_release(old, reason, &next);
        if (step == MT_RELEASE_NOT_HELD) return out;
        if (step == MT_RELEASE_BUSY) {
            out.outcome = HoldRelease::Outcome::Busy;
            return out;
        }
        // Read before the word changes: once the reason is gone, an exit may remove the entry.
        entry = store.entry(pid);
        if (word.compare_exchange_strong(old, next)) break;
    }
    one_less(store, index);
    out.since_ns = entry ? entry->since_ns[index] : 0;
    if (step == MT_RELEASE_KEPT) {
        out.outcome = HoldRelease::Outcome::Kept;
        return out;
    }
    // The last reason: SIGCONT while RESUMING keeps other releases out, then end the resume.
    // Someone else stopped the process meanwhile: it stays stopped, for them to continue.
    const bool sends = mt_hold_resume_sends(next);
    Result<bool> sent = !entry ? Result<bool>(false) : sends ? signals.send(pid, entry->start_boottime, SIGCONT) : Result<bool>(true);
    uint32_t cur = word.load(), after = 0;
    bool restop = false;
    do {
        restop = mt_hold_resumed(cur, sends && sent && *sent, &after);
    } while (!word.compare_exchange_weak(cur, after));
    // Reasons taken, or someone else's SIGSTOP sent, while RESUMING: those SIGSTOPs may have
    // been cancelled by ours; this one comes after our SIGCONT, so it holds. Once the protocol
    // is closed a reason taken sent no SIGSTOP (no sender was in flight, or this release would
    // have been busy): only someone else's is sent again, so nothing memtrack pauses after the
    // close.
    if (restop && closed(store) && !(cur & MT_HOLD_USER_STOP)) restop = false;
    if (restop && entry) {
        if (auto again = signals.send(pid, entry->start_boottime, SIGSTOP); !again) out.error = again.error();
    }
    if (sent && *sent && !sends) {
        out.outcome = HoldRelease::Outcome::LeftStopped;
    } else if (!sent) {
        out.error = sent.error();
        out.outcome = HoldRelease::Outcome::Gone;
    } else {
        out.outcome = *sent ? HoldRelease::Outcome::Resumed : HoldRelease::Outcome::Gone;
    }
    return out;
}

void close_protocol(HoldStore& store) { word_of(store, MT_HOLD_CLOSED_WORD).store(1, std::memory_order_seq_cst); }

FinalPass release_all_for_good(HoldStore& store, HoldSignals& signals, std::chrono::milliseconds sender_wait) {
    FinalPass pass;
    // Closed first: a sender that checks after this sends nothing, and one that checked before
    // is counted in its word, which is waited for below. Its entry was made before its claim.
    close_protocol(store);
    for (uint32_t pid : store.indexed()) {
        if (pid == MT_HOLD_CLOSED_WORD || pid >= store.capacity()) continue;
        auto word = word_of(store, pid);
        const auto deadline = std::chrono::steady_clock::now() + sender_wait;
        // A RESTOP on its way is a SIGSTOP too: ours must come after it.
        const auto in_flight = [&] { return mt_hold_senders(word.load()) || mt_hold_restops(word.load()); };
        while (in_flight() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (in_flight()) ++pass.senders_left;
        const auto entry = store.entry(pid);
        uint32_t old = word.load(), next = 0, reasons = 0;
        do {
            reasons = mt_hold_end_all(old, &next);
            if (!reasons && !(old & MT_HOLD_RESUMING)) break;
        } while (!word.compare_exchange_weak(old, next));
        if (!reasons && !(old & MT_HOLD_RESUMING)) continue;
        for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r)
            if (reasons & (1u << r)) {
                ++pass.ended[r];
                one_less(store, r);
            }
        if (!entry) continue;
        if (!mt_hold_resume_sends(next)) {
            ++pass.left_stopped;  // someone else stopped it: theirs to continue
            continue;
        }
        auto sent = signals.send(pid, entry->start_boottime, SIGCONT);
        if (!sent || !*sent) continue;
        ++pass.resumed;
        // Someone else's SIGSTOP sent before our SIGCONT was cancelled by it: send it again.
        if (word.load() & MT_HOLD_USER_STOP) (void)signals.send(pid, entry->start_boottime, SIGSTOP);
    }
    return pass;
}

std::optional<uint32_t> hold_word_now(HoldStore& store, uint32_t pid) {
    if (pid == MT_HOLD_CLOSED_WORD || pid >= store.capacity()) return std::nullopt;
    return word_of(store, pid).load();
}

std::vector<uint32_t> pids_held_for(HoldStore& store, uint32_t reasons) {
    std::vector<uint32_t> pids;
    for (uint32_t pid : store.indexed())
        if (auto w = hold_word_now(store, pid); w && (*w & reasons)) pids.push_back(pid);
    return pids;
}

}  // namespace memtrack
