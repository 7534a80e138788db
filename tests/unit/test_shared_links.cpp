// SharedLinks: one set of shared links per object file, whoever asks and however often; a failed
// attach is not remembered as attached. TrackedProcesses: a failed write to the `tracked` map is
// an error value (the socket's attach replies with it), not an exception. Without root: the
// links are made by the test's attach function, the map is an fd that is none.
#include <doctest/doctest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "probes/LinkCloser.hpp"
#include "probes/SharedLinks.hpp"
#include "probes/TrackedProcesses.hpp"

using namespace memtrack;

namespace {

ProbedObject object(uint64_t dev, uint64_t ino, bool with_sites = true) {
    auto probes = std::make_shared<ObjectProbes>();
    if (with_sites) probes->entry.offsets.push_back(0x1000);
    return {{"/lib/x.so", dev, ino}, probes};
}

}  // namespace

TEST_CASE("SharedLinks: each object file is attached once, by whoever asks first") {
    LinkCloser closer;
    std::vector<uint64_t> attached;  // the inodes attach was called for
    bool fail = false;
    SharedLinks links(
        [&](const ProbedObject& o) -> Result<std::vector<UprobeMultiLink>> {
            attached.push_back(o.object.ino);
            if (fail) return Error{"attach", o.object.path, EINVAL, {}};
            return std::vector<UprobeMultiLink>{};
        },
        closer);
    REQUIRE(links.attach(object(1, 10)).ok());
    REQUIRE(links.attach(object(1, 10)).ok());  // the same file again: nothing
    REQUIRE(links.attach({object(1, 10), object(1, 11), object(2, 10)}).ok());
    CHECK(attached == std::vector<uint64_t>{10, 11, 10});
    CHECK(links.attach(object(3, 30, false)).ok());  // no probe sites: no links
    CHECK(attached.size() == 3);

    SUBCASE("a failed attach is an error, and the object is tried again") {
        fail = true;
        auto r = links.attach(object(4, 40));
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().err == EINVAL);
        fail = false;
        CHECK(links.attach(object(4, 40)).ok());
        CHECK(attached == std::vector<uint64_t>{10, 11, 10, 40, 40});
    }
    SUBCASE("after detach, an object may be attached again") {
        links.detach();
        closer.wait_idle();
        CHECK(links.attach(object(1, 10)).ok());
        CHECK(attached == std::vector<uint64_t>{10, 11, 10, 10});
    }
}

TEST_CASE("TrackedProcesses: a failed write to the tracked map is an error value naming the pid") {
    TrackedProcesses tracked(-1);  // no map: EBADF
    auto shared = tracked.track_shared(1234);
    REQUIRE_FALSE(shared.ok());
    CHECK(shared.error().err == EBADF);
    CHECK(shared.error().message().find("1234") != std::string::npos);
    auto own = tracked.track_own(1234);
    REQUIRE_FALSE(own.ok());
    CHECK(own.error().err == EBADF);
}
