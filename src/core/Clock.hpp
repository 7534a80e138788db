#pragma once
#include <time.h>

#include <cstdint>

namespace memtrack {

// CLOCK_MONOTONIC in ns: the clock bpf_ktime_get_ns() reads, so user and BPF times compare.
inline uint64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// The calling thread's CPU time in ns: what a piece of work cost, whatever else runs.
inline uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace memtrack
