// pidfd_exited (process/ProcessSignal): the check ProcessLinks::on_exit makes before it closes a
// process's links, since a completed wait on its pidfd is no proof that it ended.
#include <doctest/doctest.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "core/Fd.hpp"
#include "process/ProcessSignal.hpp"

using namespace memtrack;

TEST_CASE("pidfd_exited: false while the process runs, true once it has ended (zombie or reaped)") {
    int gate[2];
    REQUIRE(::pipe(gate) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(gate[1]);
        char c;
        (void)!::read(gate[0], &c, 1);  // until the parent closes its end
        ::_exit(0);
    }
    ::close(gate[0]);
    Fd pidfd(int(::syscall(SYS_pidfd_open, child, 0)));
    REQUIRE(pidfd.valid());
    auto running = pidfd_exited(pidfd.get());
    REQUIRE(running);
    CHECK_FALSE(*running);
    ::close(gate[1]);
    bool ended = false;
    for (int i = 0; i < 2000 && !ended; ++i) {
        auto e = pidfd_exited(pidfd.get());
        REQUIRE(e);
        ended = *e;
        if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHECK(ended);  // a zombie, not reaped yet
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    auto reaped = pidfd_exited(pidfd.get());
    REQUIRE(reaped);
    CHECK(*reaped);
}
