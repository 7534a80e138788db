#pragma once
// What a running process was started as, read from /proc: for the timeline's `attach` event,
// the one process whose exec memtrack did not see.
#include <string>
#include <sys/types.h>

namespace memtrack {

struct ProcessCommand {
    std::string path;               // /proc/PID/exe's target; empty when unreadable
    std::string args;  // /proc/PID/cmdline: the arguments, each ended by a NUL; empty when unreadable
};

// Best effort: a process that exits meanwhile, or a kernel thread, gives empty fields.
ProcessCommand read_process_command(pid_t pid);

}  // namespace memtrack
