#pragma once
// The text of a process's memory map, /proc/PID/maps. The one way memtrack reads it.
#include <sys/types.h>

#include <string>

#include "core/Result.hpp"

namespace memtrack {

// /proc/PID/maps shows the main thread's view: once the main thread has ended (pthread_exit,
// the process living on in its other threads) it is empty, so the map is then read through a
// live thread (/proc/PID/task/TID/maps). Empty only for a process with no memory left.
Result<std::string> read_proc_maps(pid_t pid);

}  // namespace memtrack
