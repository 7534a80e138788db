#include "report/TrackSummary.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "report/ArtifactTotals.hpp"
#include "report/Units.hpp"

namespace memtrack::report {

std::string track_summary(const Analysis& a, const std::string& artifact) {
    std::string s;
    s += fmt::format("memtrack: {} events from {} {} in {}\n", a.events, a.processes.size(),
                     a.processes.size() == 1 ? "process" : "processes", human_duration(a.duration_ns));
    s += fmt::format("memtrack: peak heap {} ({} B) in {} blocks at {}\n", human_bytes(a.peak_bytes), a.peak_bytes,
                     a.peak_blocks, human_duration(a.peak_time_ns));
    s += fmt::format("memtrack: leaked {} ({} B) in {} blocks\n", human_bytes(a.leaked_bytes), a.leaked_bytes,
                     a.leaked_blocks);
    s += fmt::format("memtrack: next: memtrack report {}\n", artifact);
    return s;
}

void print_track_summary(const std::string& artifact) {
    ArtifactTotals totals = analyze_artifact(artifact);
    if (!totals.read) {
        fmt::print(stderr, "memtrack: no summary: {}\n", totals.read.error().message());
        return;
    }
    const std::string s = track_summary(totals.analysis, artifact);
    std::fputs(s.c_str(), stderr);
}

}  // namespace memtrack::report
