#include "process/ChildLauncher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

namespace memtrack {

Result<std::string> find_executable(const std::string& name) {
    // What execve would say about one candidate: 0 when it can run; as a shell reports it, a
    // directory is "is a directory" and anything else that exists "permission denied".
    auto why_not = [](const std::string& p) {
        struct stat st{};
        if (::stat(p.c_str(), &st) != 0) return errno;
        if (S_ISDIR(st.st_mode)) return EISDIR;
        return S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0 ? 0 : EACCES;
    };
    if (name.find('/') != std::string::npos) {
        if (const int err = why_not(name)) return errno_error("cannot run", name, err);
        return name;
    }
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
    // As execvp: the first candidate that can run wins; if none can, the first that exists
    // names the failure.
    std::optional<Error> found;
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string candidate = end > start ? dirs.substr(start, end - start) : std::string(".");
        candidate.append("/").append(name);
        const int err = why_not(candidate);
        if (err == 0) return candidate;
        if (!found && err != ENOENT && err != ENOTDIR) found = errno_error("cannot run", candidate, err);
        start = end + 1;
    }
    if (found) return *found;
    return errno_error("cannot run", name, ENOENT);
}

int shell_status(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return 1;
}

Result<HeldChild> HeldChild::spawn(const std::vector<std::string>& argv) {
    int go[2], report[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return errno_error("pipe", "child release");
    if (::pipe2(report, O_CLOEXEC) != 0) {
        ::close(go[0]);
        ::close(go[1]);
        return errno_error("pipe", "child report");
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    const pid_t pid = ::fork();
    if (pid < 0) return errno_error("fork", argv.front());
    if (pid == 0) {
        // Child: only async-signal-safe calls from here on.
        ::close(go[1]);
        ::close(report[0]);
        // The command starts as a shell would start it: nothing blocked, nothing ignored that
        // memtrack ignores for itself (SIGPIPE for the control socket).
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGPIPE, SIGXFSZ, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
        char byte;
        ssize_t n;
        do n = ::read(go[0], &byte, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) ::_exit(127);  // memtrack gave up before releasing us
        ::execvp(args[0], args.data());
        const int err = errno;
        (void)!::write(report[1], &err, sizeof(err));
        ::_exit(err == ENOENT ? 127 : 126);
    }
    ::close(go[0]);
    ::close(report[1]);
    HeldChild c;
    c.pid_ = pid;
    c.go_.reset(go[1]);
    c.report_.reset(report[0]);
    c.pidfd_.reset(int(::syscall(SYS_pidfd_open, pid, 0)));
    if (!c.pidfd_.valid()) return errno_error("pidfd_open", std::to_string(pid));
    return c;
}

HeldChild::~HeldChild() {
    if (pid_ > 0 && !reaped_ && go_.valid()) abandon();
}

Result<void> HeldChild::release() {
    const char byte = 1;
    if (::write(go_.get(), &byte, 1) != 1) return errno_error("release", std::to_string(pid_));
    go_.reset();
    int err = 0;
    ssize_t n;
    do n = ::read(report_.get(), &err, sizeof(err));
    while (n < 0 && errno == EINTR);
    report_.reset();
    if (n == sizeof(err)) return Error{"exec", {}, err, {}};
    return {};
}

void HeldChild::abandon() {
    if (pid_ <= 0 || reaped_) return;
    ::kill(pid_, SIGKILL);
    go_.reset();
    wait_exit_status();
}

int HeldChild::wait_exit_status() {
    if (!reaped_) {
        int st = 0;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
        status_ = shell_status(st);
        reaped_ = true;
    }
    return status_;
}

std::optional<int> HeldChild::try_exit_status() {
    if (reaped_) return status_;
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r != pid_) return std::nullopt;
    status_ = shell_status(st);
    reaped_ = true;
    return status_;
}

}  // namespace memtrack
