#pragma once
// Which running processes `attach` may add. Not memtrack itself, memtrack-guard or an ancestor
// of memtrack's: a pause (ring pressure, a first stack) would stop the one process that ends
// pauses, or one it waits for, for good. Not a thread id: probes and pauses are per process. Not
// a kernel thread (kthreadd, pid 2, and its children): no user memory to record.
#include <sys/types.h>

#include "core/Result.hpp"

namespace memtrack {

// An error naming the reason when pid must not be attached; guard: memtrack-guard's pid.
Result<void> check_attachable(pid_t pid, pid_t guard);

}  // namespace memtrack
