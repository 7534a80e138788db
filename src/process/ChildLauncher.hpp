#pragma once
// Starts the tracked command held before exec, so no allocation happens before the probes are
// attached, and reports exec failures (command not found) back to memtrack.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

class HeldChild {
public:
    // Forks; the child waits on a pipe, then execs argv (PATH lookup as a shell does).
    static Result<HeldChild> spawn(const std::vector<std::string>& argv);
    HeldChild(HeldChild&&) = default;
    ~HeldChild();

    pid_t pid() const { return pid_; }
    int pidfd() const { return pidfd_.get(); }
    // Lets the child exec. An error carries the exec errno (ENOENT: command not found).
    Result<void> release();
    // Kills a child that was never released (start-up failed) and reaps it.
    void abandon();
    // Blocks until the child exits; returns the shell-style status (128+N for signal N).
    int wait_exit_status();
    // Non-blocking: the exit status if the child has exited.
    std::optional<int> try_exit_status();

private:
    HeldChild() = default;
    pid_t pid_ = -1;
    Fd go_;      // write end: one byte releases the child
    Fd report_;  // read end: exec errno, or EOF when exec succeeded
    Fd pidfd_;
    bool reaped_ = false;
    int status_ = 0;
};

// Resolves a command name the way execvp would. The error names what was found and why it
// cannot run (EISDIR, EACCES, ...), or is ENOENT when nothing of that name exists.
Result<std::string> find_executable(const std::string& name);
// Turns a waitpid status into the shell's convention.
int shell_status(int wait_status);

}  // namespace memtrack
