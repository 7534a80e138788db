#pragma once
// What BPF's counters say about a whole run, as its exit status: records dropped, processes
// that ran before their probes existed (spawn_unstopped, holds_unrestored, holds_escaped: one
// line each, with what is known, as the allocator calls they missed cannot be counted), exec'd
// images the loader's hook missed, and any counter that could not be read each fail the run
// (nothing lost silently: a counter not read cannot vouch that nothing was lost). Each is said
// in one line on stderr. TrackRun's one use, kept apart so that the
// verdict is tested without BPF (tests/unit/test_bpf_counters.cpp).
#include <cstdint>
#include <functional>

#include "core/Result.hpp"

namespace memtrack {

using CounterRead = std::function<Result<uint64_t>(uint32_t index)>;

// status: the run's status so far (kept when non-zero); read: BpfCounters::read;
// earlier_read_errors: reads that failed before (the stats', shown there as 0).
int counters_exit_status(int status, const CounterRead& read, uint64_t earlier_read_errors);

}  // namespace memtrack
