#pragma once
// Owns: every pause of a tracked process while memtrack runs (the hold words and the `held`
// index, through a HoldStore), the only SIGCONTs memtrack sends, and the pause counters.
// Accepts: release(pid, reason), release_every(reason, still_wanted, done), stop_pausing(),
// start(), stop(), close() once the io_context has stopped; from any thread:
// outstanding(reason), held_for(reasons), counts(), pause_counters().
// Ends CONTINUER pauses itself: once the process each continued holds no reason (hold.h).
//
// The protocol is src/bpf/hold.h's; docs/ARCHITECTURE.md draws it as a state machine.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "bpf/hold.h"
#include "core/Backstop.hpp"
#include "core/Strand.hpp"
#include "process/HoldRelease.hpp"
#include "process/HoldStore.hpp"
#include "process/PauseCounters.hpp"

namespace memtrack {

// Pauses per reason index (hold.h): begun (BPF), ended by memtrack, ended by the process's exit.
// Once nothing is held, taken == released + exited for every reason.
struct HoldCounts {
    std::array<uint64_t, MT_HOLD_REASONS> taken{}, released{}, exited{};
    uint64_t signals = 0;         // SIGSTOPs BPF sent
    uint64_t signal_failures = 0; // SIGSTOPs the kernel refused
    uint64_t failed = 0;          // pauses BPF could not take
};

class ProcessHolds {
public:
    // kernel_counter(i): BPF's counter i (record.h's mt_counter), summed over CPUs.
    ProcessHolds(boost::asio::io_context& io, HoldStore& store, HoldSignals& signals,
                 std::function<uint64_t(uint32_t)> kernel_counter);

    // Ends `reason` (one MT_HOLD_* bit) on pid, retrying shortly while senders are in flight.
    void release(uint32_t pid, uint32_t reason);
    // Ends `reason` on every process that holds it, one after the other while still_wanted()
    // (asked before each), then done(). Busy ones are left for the caller's next call.
    void release_every(uint32_t reason, std::function<bool()> still_wanted, Done done = {});
    // Starts and stops the backstop that ends CONTINUER pauses whose continued process ended
    // its pause by exiting (BPF clears an exiting process's word; nothing tells memtrack).
    void start();
    void stop();
    // Closes the protocol before it returns (no SIGSTOP from here on) and resumes every held
    // process on the strand: for when nothing would resume them should memtrack die
    // (memtrack-guard died).
    void stop_pausing();
    // Once the io_context has stopped: closes the protocol and resumes everything for good.
    FinalPass close();

    uint64_t outstanding(uint32_t reason) const;
    std::vector<uint32_t> held_for(uint32_t reasons) const { return pids_held_for(store_, reasons); }
    // pid's `held` entry (its start time, when each reason was taken), if it has one.
    std::optional<mt_held> entry(uint32_t pid) const { return store_.entry(pid); }
    HoldCounts counts() const;
    PauseCounters pause_counters() const;

private:
    // On strand_.
    bool try_release(uint32_t pid, uint32_t reason);
    void release_continuers();
    void arm_retry();
    void account(uint32_t pid, uint32_t reason, const HoldRelease& r);

    Strand strand_;
    HoldStore& store_;
    HoldSignals& signals_;
    std::function<uint64_t(uint32_t)> kernel_counter_;
    boost::asio::steady_timer retry_timer_;
    Backstop continuer_backstop_;
    std::set<std::pair<uint32_t, uint32_t>> retries_;  // (pid, reason) found busy
    bool retry_armed_ = false;
    std::array<std::atomic<uint64_t>, MT_HOLD_REASONS> released_{};
    mutable std::mutex pause_counters_mu_;  // ActorCounters.hpp says why PauseCounters has a lock
    PauseCounters pause_counters_;
    // Where release_every starts, per reason: it stops once the rings fill again, and starting
    // at the same process every time left the last ones held for several rounds.
    std::array<size_t, MT_HOLD_REASONS> next_first_{};
};

}  // namespace memtrack
