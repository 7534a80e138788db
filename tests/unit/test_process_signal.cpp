// pidfd_exited (process/ProcessSignal) and ExitWatch (process/ExitWatch), which makes that check
// before it says a process ended, since a completed wait on its pidfd is no proof that it did;
// PidfdSignals' kept pidfds (process/HoldMaps).
#include <doctest/doctest.h>

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "core/Fd.hpp"
#include "process/ExitWatch.hpp"
#include "process/HoldMaps.hpp"
#include "process/ProcessSignal.hpp"

using namespace memtrack;

namespace {

// A child that runs until the parent closes `gate` (or kills it).
struct GatedChild {
    pid_t pid = -1;
    int gate = -1;  // the parent's end
};

GatedChild start_gated_child() {
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
    return {child, gate[1]};
}

Fd open_pidfd(pid_t pid) {
    Fd pidfd(int(::syscall(SYS_pidfd_open, pid, 0)));
    REQUIRE(pidfd.valid());
    return pidfd;
}

}  // namespace

TEST_CASE("pidfd_exited: false while the process runs, true once it has ended (zombie or reaped)") {
    const auto [child, gate] = start_gated_child();
    const Fd pidfd = open_pidfd(child);
    auto running = pidfd_exited(pidfd.get());
    REQUIRE(running);
    CHECK_FALSE(*running);
    ::close(gate);
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

TEST_CASE("ExitWatch: a completed wait while the process runs is counted and waited again; exited runs once, at the exit") {
    const auto [child, gate] = start_gated_child();
    boost::asio::io_context io;
    Counter early;
    ExitWatch watch(io.get_executor(), open_pidfd(child), &early);
    int exited = 0;
    watch.async_wait([&] { ++exited; });
    // What the reactor did in flood.sh --pipelines: a completion handed to a live process's watch.
    watch.completed({});
    CHECK(exited == 0);
    CHECK(early.get() == 1);
    io.poll();  // the wait made again does not complete while the child runs
    CHECK(exited == 0);
    ::close(gate);
    io.run_for(std::chrono::seconds(10));  // returns once the exit was delivered: nothing is left to wait for
    CHECK(exited == 1);
    CHECK(early.get() == 1);
    watch.completed({});  // a late completion after the exit calls nothing twice
    CHECK(exited == 1);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
}

TEST_CASE("ExitWatch: nothing runs after cancel, though the process then exits") {
    const auto [child, gate] = start_gated_child();
    boost::asio::io_context io;
    ExitWatch watch(io.get_executor(), open_pidfd(child));
    int exited = 0;
    watch.async_wait([&] { ++exited; });
    watch.cancel();
    ::close(gate);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    io.run_for(std::chrono::seconds(10));
    CHECK(exited == 0);
}

TEST_CASE("ExitWatch: an exit already queued on the strand when the watch is destroyed runs nothing") {
    // What ProcessLinks::detach_all met: the process's exit completed and was queued on the strand
    // behind the handler that destroys every watch. The old watch's queued completion then read the
    // freed watch (`poll pidfd 82: Bad file descriptor`) and called its handler.
    const auto [child, gate] = start_gated_child();
    Fd pidfd = open_pidfd(child);
    ::close(gate);
    int status = 0;
    REQUIRE(::waitid(P_PID, id_t(child), nullptr, WEXITED | WNOWAIT) == 0);  // exited, not reaped: readable

    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    auto strand = boost::asio::make_strand(io);
    std::atomic<int> exited{0};
    auto watch = std::make_unique<ExitWatch>(strand, std::move(pidfd));
    watch->async_wait([&] { ++exited; });
    std::promise<void> destroyed;
    // Holds the strand while the second thread's reactor completes the wait and queues it behind.
    boost::asio::post(strand, [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        watch.reset();
        destroyed.set_value();
    });
    std::thread a([&] { io.run(); });
    std::thread b([&] { io.run(); });
    destroyed.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the queued completion runs
    work.reset();
    io.stop();
    a.join();
    b.join();
    CHECK(exited == 0);
    REQUIRE(::waitpid(child, &status, 0) == child);
}

namespace {

// The start time BPF would give the process (task->start_boottime), from its /proc/PID/stat ticks.
uint64_t start_boottime_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    REQUIRE(std::getline(f, line));
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i) REQUIRE(bool(rest >> field));
    return std::stoull(field) * (1000000000ull / uint64_t(::sysconf(_SC_CLK_TCK)));
}

// The process's state letter (T: stopped).
char state_of(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    REQUIRE(std::getline(f, line));
    return line.at(line.rfind(')') + 2);
}

}  // namespace

TEST_CASE("PidfdSignals: a kept pidfd signals its process, never another start time, and nothing once it is gone") {
    const auto [child, gate] = start_gated_child();
    const uint64_t start = start_boottime_of(child);
    PidfdSignals signals;
    // Another start time under the same pid: a reused pid, never signalled.
    auto other = signals.send(uint32_t(child), start + 10'000'000'000ull, SIGSTOP);
    REQUIRE(other);
    CHECK_FALSE(*other);
    int status = 0;
    for (int round = 0; round < 2; ++round) {  // the first opens and checks, the second uses the kept pidfd
        auto stopped = signals.send(uint32_t(child), start, SIGSTOP);
        REQUIRE(stopped);
        CHECK(*stopped);
        REQUIRE(::waitpid(child, &status, WUNTRACED) == child);
        CHECK(bool(WIFSTOPPED(status)));
        CHECK(state_of(child) == 'T');
        auto resumed = signals.send(uint32_t(child), start, SIGCONT);
        REQUIRE(resumed);
        CHECK(*resumed);
        REQUIRE(::waitpid(child, &status, WCONTINUED) == child);
        CHECK(bool(WIFCONTINUED(status)));
    }
    // Still kept for the right start time only.
    other = signals.send(uint32_t(child), start + 10'000'000'000ull, SIGSTOP);
    REQUIRE(other);
    CHECK_FALSE(*other);
    ::close(gate);
    REQUIRE(::waitpid(child, &status, 0) == child);
    // Reaped: the kept pidfd names a process that no longer exists, whatever holds its pid now.
    auto gone = signals.send(uint32_t(child), start, SIGCONT);
    REQUIRE(gone);
    CHECK_FALSE(*gone);
}

TEST_CASE("PidfdSignals: signalling kept processes out of order keeps each one's pidfd (the re-ordering once erased through an iterator its own push had invalidated)") {
    // More processes than are kept, signalled in an order that moves a kept pidfd to the back each
    // time: the old re-ordering pushed, then erased through the invalidated iterator, and crashed
    // `track -- exit_many 200` (1 run in 5).
    constexpr size_t kChildren = PidfdSignals::kKeep + 8;
    std::vector<GatedChild> children;
    std::vector<uint64_t> starts;
    for (size_t i = 0; i < kChildren; ++i) {
        children.push_back(start_gated_child());
        starts.push_back(start_boottime_of(children.back().pid));
    }
    PidfdSignals signals;
    unsigned sent = 0;
    for (size_t round = 0; round < 20; ++round)
        for (size_t i = 0; i < kChildren; i += (round % 3) + 1) {
            const size_t k = (i * 7 + round) % kChildren;
            auto r = signals.send(uint32_t(children[k].pid), starts[k], SIGCONT);  // a running process ignores it
            REQUIRE(r);
            if (*r) ++sent;
        }
    unsigned expected = 0;
    for (size_t round = 0; round < 20; ++round)
        for (size_t i = 0; i < kChildren; i += (round % 3) + 1) ++expected;
    CHECK(sent == expected);
    // Each child holds its elder siblings' gates (inherited): a closed gate ends none of them.
    for (const auto& c : children) {
        ::kill(c.pid, SIGKILL);
        ::close(c.gate);
        int status = 0;
        REQUIRE(::waitpid(c.pid, &status, 0) == c.pid);
    }
}
