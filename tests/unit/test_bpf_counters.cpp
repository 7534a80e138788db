// BpfCounters: a counter that cannot be read is an error value, and counted, never a 0 that
// would read as "nothing dropped". Without root: the read of a map that is not there fails
// the way a failed lookup of the real map does (bpf(2) returns -1 with errno).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <string>

#include "bpf/record.h"
#include "probes/BpfCounters.hpp"
#include "probes/CounterVerdict.hpp"
#include "TestFiles.hpp"

using namespace memtrack;

TEST_CASE("BpfCounters: a failed read is an error naming the counter, and counted") {
    BpfCounters counters(-1);  // no map: EBADF
    CHECK(counters.read_errors() == 0);
    auto dropped = counters.read(MT_COUNTER_DROPPED);
    REQUIRE_FALSE(dropped.ok());
    CHECK(dropped.error().err == EBADF);
    CHECK(dropped.error().message().find("read BPF counter") != std::string::npos);
    CHECK(counters.read_errors() == 1);
    // What the stats show for it is 0, and the failure is counted again.
    CHECK(counters.shown(MT_COUNTER_NESTED) == 0);
    CHECK(counters.read_errors() == 2);
}

TEST_CASE("BpfCounters: an fd that is no BPF map fails too (EINVAL), not 0") {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    BpfCounters counters(fd);
    auto r = counters.read(MT_COUNTER_DROPPED);
    CHECK_FALSE(r.ok());
    CHECK(counters.read_errors() == 1);
    ::close(fd);
}

// TrackRun's exit status from the counters (counters_exit_status), over counters given here.
namespace {

struct FakeCounters {
    std::map<uint32_t, uint64_t> values;
    std::set<uint32_t> unreadable;
    CounterRead reader() const {
        return [this](uint32_t i) -> Result<uint64_t> {
            if (unreadable.count(i)) return Error{"read BPF counter", std::to_string(i), EIO, {}};
            auto it = values.find(i);
            return it == values.end() ? 0 : it->second;
        };
    }
};

}  // namespace

TEST_CASE("counters_exit_status: nothing lost passes the command's status through") {
    FakeCounters c;
    c.values[MT_COUNTER_NESTED] = 7;  // a counter that says nothing about losses
    CHECK(counters_exit_status(0, c.reader(), 0) == 0);
    CHECK(counters_exit_status(3, c.reader(), 0) == 3);
}

TEST_CASE("counters_exit_status: a dropped record, an escaped process or a failed read fails the run") {
    SUBCASE("dropped > 0") {
        FakeCounters c;
        c.values[MT_COUNTER_DROPPED] = 1;
        CHECK(counters_exit_status(0, c.reader(), 0) == 1);
        CHECK(counters_exit_status(5, c.reader(), 0) == 5);  // the command's own failure is kept
    }
    SUBCASE("a process ran before its probes existed (an escape)") {
        for (uint32_t unheld : {MT_COUNTER_SPAWN_UNSTOPPED, MT_COUNTER_HOLDS_UNRESTORED, MT_COUNTER_HOLDS_ESCAPED}) {
            CAPTURE(unheld);
            FakeCounters c;
            c.values[unheld] = 2;
            CHECK(counters_exit_status(0, c.reader(), 0) == 1);
        }
    }
    SUBCASE("the dropped counter cannot be read: not 'nothing dropped'") {
        FakeCounters c;
        c.unreadable.insert(MT_COUNTER_DROPPED);
        CHECK(counters_exit_status(0, c.reader(), 0) == 1);
    }
    SUBCASE("an escape counter cannot be read") {
        FakeCounters c;
        c.unreadable.insert(MT_COUNTER_HOLDS_ESCAPED);
        CHECK(counters_exit_status(0, c.reader(), 0) == 1);
    }
    SUBCASE("a read failed earlier (the stats')") {
        FakeCounters c;
        CHECK(counters_exit_status(0, c.reader(), 1) == 1);
    }
}

// Each counter of processes that ran before their probes existed has its own line, saying what
// is known (the number the counter holds) and that the calls missed cannot be counted.
TEST_CASE("counters_exit_status: each way a process ran unprobed is said in its own line, with its count") {
    unittest::TempDir dir;
    FakeCounters c;
    c.values[MT_COUNTER_HOLDS_ESCAPED] = 3;
    c.values[MT_COUNTER_HOLDS_UNRESTORED] = 5;
    c.values[MT_COUNTER_SPAWN_UNSTOPPED] = 7;
    const unittest::Captured out = unittest::capture_output(dir, [&] { return counters_exit_status(0, c.reader(), 0); });
    CHECK(out.rc == 1);
    CHECK(out.err ==
          "memtrack: 3 processes paused for their probes or new code ran user code before memtrack stopped them "
          "again (another process's SIGCONT ended the pause): allocator calls they made meanwhile are missing, and "
          "how many cannot be counted (no memtrack program runs for them) (stats: holds_escaped)\n"
          "memtrack: 5 pauses for probes or new code ended by another process's SIGCONT could not be restored: their "
          "processes may have run user code before their probes existed, allocator calls then missing, uncounted "
          "(stats: holds_unrestored)\n"
          "memtrack: 7 new processes could not be paused before they first ran: allocator calls they made before "
          "their probes existed are missing, uncounted (stats: spawn_unstopped)\n");
    // One counter alone: its line only.
    FakeCounters one;
    one.values[MT_COUNTER_HOLDS_ESCAPED] = 1;
    const unittest::Captured alone = unittest::capture_output(dir, [&] { return counters_exit_status(0, one.reader(), 0); });
    CHECK(alone.rc == 1);
    CHECK(alone.err.find("(stats: holds_escaped)\n") != std::string::npos);
    CHECK(alone.err.find("holds_unrestored") == std::string::npos);
    CHECK(alone.err.find("spawn_unstopped") == std::string::npos);
}

TEST_CASE("counters_exit_status: an exec'd image whose allocator went unprobed fails the run") {
    FakeCounters c;
    c.values[MT_COUNTER_LOADER_HOOKS_MISSED] = 1;
    CHECK(counters_exit_status(0, c.reader(), 0) == 1);
    CHECK(counters_exit_status(5, c.reader(), 0) == 5);  // the command's own failure kept
}

TEST_CASE("counters_exit_status over a BpfCounters whose reads fail: non-zero") {
    BpfCounters counters(-1);
    CHECK(counters_exit_status(0, [&counters](uint32_t i) { return counters.read(i); }, counters.read_errors()) == 1);
}
