#pragma once
// Signalling a process by pid only while it is still the process memtrack means: the pid is
// pinned by a pidfd and checked against the start time BPF read (task->start_boottime), so a
// pid reused meanwhile is never signalled.
#include <cstdint>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

// Fails unless /proc is the one of memtrack's own pid namespace: pids memtrack and BPF use are
// that namespace's, and a /proc mounted for another one shows other processes under them.
Result<void> check_proc_matches_pid_namespace();

// A pidfd for pid if it is still the process that started at start_boottime_ns; an invalid Fd
// when it is gone or the pid was reused.
Result<Fd> open_same_process(int32_t pid, uint64_t start_boottime_ns);

// Whether the process a pidfd names has ended (the pidfd polls readable: its thread group is
// empty). A wait on a pidfd that completed is no proof of that (ProcessLinks::on_exit).
Result<bool> pidfd_exited(int pidfd);

// `sig` through pidfd (of process pid, named in errors). false: the process is gone.
Result<bool> send_signal(int pidfd, int32_t pid, int sig);

}  // namespace memtrack
