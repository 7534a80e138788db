// BpfCounters: a counter that cannot be read is an error value, and counted, never a 0 that
// would read as "nothing dropped". Without root: the read of a map that is not there fails
// the way a failed lookup of the real map does (bpf(2) returns -1 with errno).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "bpf/record.h"
#include "probes/BpfCounters.hpp"

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
