#pragma once
// The user-space half of the pause protocol (src/bpf/hold.h): ending a hold, and ending every
// hold for good. The only code that sends SIGCONT to a process BPF paused; ProcessHolds (while
// memtrack runs), its final pass and memtrack-guard all go through it.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "bpf/hold.h"
#include "core/Result.hpp"
#include "process/HoldStore.hpp"

namespace memtrack {

struct HoldRelease {
    enum class Outcome {
        NotHeld,  // the reason was not held
        Busy,     // a sender or a resume was in flight: nothing changed, try again shortly
        Kept,     // released; another reason still holds the process
        Resumed,  // released, the last reason: SIGCONT sent
        Gone,     // released, the last reason, but the process had exited (or its pid was reused)
        LeftStopped,  // released, the last reason, no SIGCONT: someone else stopped it meanwhile
    };
    Outcome outcome = Outcome::NotHeld;
    uint64_t since_ns = 0;        // when BPF took the reason (0: unknown)
    std::optional<Error> error;   // a signal that failed for another reason than the exit
    bool released() const {
        return outcome == Outcome::Kept || outcome == Outcome::Resumed || outcome == Outcome::Gone ||
               outcome == Outcome::LeftStopped;
    }
};

// Ends `reason`'s hold on pid (a single MT_HOLD_* bit).
HoldRelease release_hold(HoldStore& store, HoldSignals& signals, uint32_t pid, uint32_t reason);

struct FinalPass {
    std::array<uint64_t, MT_HOLD_REASONS> ended{};  // holds ended, per reason index
    uint64_t resumed = 0;                           // processes sent SIGCONT
    uint64_t left_stopped = 0;                      // held ones someone else had stopped: no SIGCONT
    uint64_t senders_left = 0;                      // words whose senders did not finish in time
};

// Closes the protocol: no SIGSTOP is sent after this (a sender that checked before is still
// counted in its word). From any thread.
void close_protocol(HoldStore& store);

// Closes the protocol (no SIGSTOP is sent after this) and ends every hold, waiting up to
// `sender_wait` per process for senders in flight. Once it returns nothing memtrack or BPF
// paused stays stopped.
FinalPass release_all_for_good(HoldStore& store, HoldSignals& signals,
                               std::chrono::milliseconds sender_wait = std::chrono::milliseconds(2000));

// pid's hold word as it is now; none for a pid without one (0, the closed flag's, or past the array).
std::optional<uint32_t> hold_word_now(HoldStore& store, uint32_t pid);

// Indexed pids whose word holds `reason` (any reason with MT_HOLD_REASON_MASK).
std::vector<uint32_t> pids_held_for(HoldStore& store, uint32_t reasons);

}  // namespace memtrack
