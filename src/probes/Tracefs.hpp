#pragma once
#include "core/Result.hpp"

namespace memtrack {
// Syscall tracepoints are looked up in tracefs; mount it when the machine has not.
Result<void> ensure_tracefs();
}
