// What memtrack says when its outputs cannot be written (docs/SECURITY.md, "What memtrack writes"):
// a file size limit stands in for a full disk (the same write error, ENOSPC or EFBIG, on the same
// path), set on memtrack alone with prlimit.
#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

#include "Events.hpp"

using namespace memtrack::roottest;

namespace {

std::string flood() {
    const char* v = std::getenv("FLOOD_BIN");
    if (!v || !*v) throw std::runtime_error("FLOOD_BIN is not set (run the suite through `meson test --suite root`)");
    return v;
}

size_t count_lines(const std::string& s) {
    size_t n = 0;
    for (char c : s) n += c == '\n';
    return n;
}

}  // namespace

TEST_CASE("faults: an artifact that cannot be written is an error, and the stats count only what reached it") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string out = dir / "out";
    const std::string stats_path = dir / "stats.json";
    // 200000 malloc+free pairs compress to well over 256 KiB.
    RunResult r = run({"/usr/bin/prlimit", "--fsize=262144", memtrack_bin(), "track", "--no-stacks", "--no-summary",
                       "-o", out, "--stats", stats_path, "--", flood(), "1", "200000"});
    CHECK_FALSE(r.timed_out);
    CHECK_FALSE(r.signaled);
    CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
    CHECK_MESSAGE(r.err.find("File too large") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("artifact incomplete") != std::string::npos, r.err);

    Stats s = parse_stats(read_file(stats_path));
    const uint64_t written = stats_u64(s, "written");
    const uint64_t unwritten = stats_u64(s, "unwritten");
    CHECK(unwritten > 0);
    CHECK_MESSAGE(s.records == written + unwritten, s.raw);

    // What the stats call written is in the file: the truncated artifact still gives at least
    // that many events (flushed blocks) before its cut.
    const auto names = artifact_names(out);
    REQUIRE(names.size() == 1);
    RunResult d = run({memtrack_bin(), "dump", out + "/" + names[0]});
    CHECK(d.status == 1);
    const uint64_t readable = count_lines(d.out);
    CHECK_MESSAGE(readable >= stats_u64(s, "artifact_events"), readable, " events readable, stats: ", s.raw);
    // And the stats do not call written much less than the file holds: the writer flushes every
    // 256 KiB of events (Writer.hpp), so what was cut short is at most that much, here about a
    // quarter of what fits under the limit (once `written 0` while the file held 438103 events).
    CHECK_MESSAGE(written > 0, s.raw);
    CHECK_MESSAGE(stats_u64(s, "artifact_events") * 2 >= readable, readable, " events readable, stats: ", s.raw);
    CHECK(stats_u64(s, "artifact_events") < 400000);
}
