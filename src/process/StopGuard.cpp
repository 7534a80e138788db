#include "process/StopGuard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "process/HoldMaps.hpp"
#include "process/HoldRelease.hpp"

namespace memtrack {
namespace {

struct Handover {
    uint32_t words = 0;
};

// A Handover with two fds beside it (SCM_RIGHTS), as sendmsg and recvmsg both take it.
struct HandoverMessage {
    Handover h;
    alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
    iovec iov{&h, sizeof(h)};
    msghdr msg{};
    HandoverMessage() {
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof(control);
    }
    HandoverMessage(const HandoverMessage&) = delete;
    HandoverMessage& operator=(const HandoverMessage&) = delete;
};

// The guard's whole life. Returns its exit status.
int guard_main(int sock) {
    ::setsid();
    ::prctl(PR_SET_NAME, "memtrack-guard");
    // Ctrl-C and a job's SIGTERM reach memtrack's group: the guard must outlive memtrack.
    ::signal(SIGINT, SIG_IGN);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    // Nothing of memtrack's: a reader of memtrack's output must not wait for the guard.
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && null >= 0; ++fd) ::dup2(null, fd);
    if (sock > 3) ::syscall(SYS_close_range, 3u, unsigned(sock) - 1, 0);
    ::syscall(SYS_close_range, unsigned(sock) + 1, ~0u, 0);

    HandoverMessage m;
    ssize_t n;
    while ((n = ::recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
    const cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    if (n != ssize_t(sizeof(m.h)) || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int)))
        return 0;  // memtrack ended before it paused anything
    int fds[2];
    std::memcpy(fds, CMSG_DATA(c), sizeof(fds));
    auto maps = HoldMaps::open(fds[0], fds[1], m.h.words, nullptr);
    ::close(fds[0]);
    ::close(fds[1]);
    if (!maps) return 1;

    char byte;
    while (::read(sock, &byte, 1) < 0 && errno == EINTR) {}
    // A byte: memtrack exits cleanly and has resumed everything; EOF: it died. Either way one
    // pass: it closes the protocol first, so nothing can be paused after it.
    PidfdSignals signals;
    release_all_for_good(*maps, signals);
    return 0;
}

}  // namespace

Result<StopGuard> StopGuard::start() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return errno_error("socketpair", "stop guard");
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(sv[0]);
        ::close(sv[1]);
        return errno_error("fork", "stop guard");
    }
    if (pid == 0) {
        ::close(sv[0]);
        ::_exit(guard_main(sv[1]));
    }
    ::close(sv[1]);
    StopGuard g;
    g.pid_ = pid;
    g.sock_.reset(sv[0]);
    g.pidfd_.reset(int(::syscall(SYS_pidfd_open, pid, 0)));
    if (!g.pidfd_.valid()) return errno_error("pidfd_open", "stop guard");
    return g;
}

Result<void> StopGuard::arm(int holds_fd, int held_fd, uint32_t words) {
    HandoverMessage m;
    m.h.words = words;
    cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    const int fds[2] = {holds_fd, held_fd};
    std::memcpy(CMSG_DATA(c), fds, sizeof(fds));
    if (::sendmsg(sock_.get(), &m.msg, MSG_NOSIGNAL) != ssize_t(sizeof(m.h))) return errno_error("sendmsg", "stop guard");
    return {};
}

StopGuard::~StopGuard() {
    if (pid_ <= 0) return;
    const char clean = 1;
    (void)!::send(sock_.get(), &clean, 1, MSG_NOSIGNAL);
    sock_.reset();
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
}

}  // namespace memtrack
