#include "report/TrackSummary.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "report/Load.hpp"
#include "report/Owners.hpp"
#include "report/Units.hpp"

namespace memtrack::report {

std::string track_summary(const Analysis& a, const std::string& artifact) {
    std::string s;
    s += fmt::format("memtrack: {} events from {} {} in {}\n", a.events, a.processes.size(),
                     a.processes.size() == 1 ? "process" : "processes", human_duration(span_ns(a)));
    s += fmt::format("memtrack: peak heap {} ({} B) in {} at {}\n", human_bytes(a.peak_bytes), a.peak_bytes,
                     blocks(a.peak_blocks), human_duration(a.peak_time_ns));
    s += fmt::format("memtrack: leaked {} ({} B) in {}{}\n", human_bytes(a.leaked_bytes), a.leaked_bytes,
                     blocks(a.leaked_blocks), leak_exclusions(a, ""));
    // Processes still running when recording ended (an attach, a detach): theirs is not leaked.
    if (a.live_at_end_blocks)
        s += fmt::format("memtrack: live at the end of the recording (processes still running) {} ({} B) in {}\n",
                         human_bytes(a.live_at_end_bytes), a.live_at_end_bytes, blocks(a.live_at_end_blocks));
    s += fmt::format("memtrack: next: memtrack report {}\n", artifact);
    return s;
}

Result<std::string> track_summary_of(const std::string& artifact) {
    LoadOptions opt;
    opt.shown_stacks = false;  // totals only: no view names a frame
    auto loaded = load(artifact, opt);
    if (!loaded) return loaded.error();
    return track_summary(loaded->analysis, artifact);
}

void print_track_summary(const std::string& artifact) {
    auto s = track_summary_of(artifact);
    if (!s) {
        fmt::print(stderr, "memtrack: no summary: {}\n", s.error().message());
        return;
    }
    std::fputs(s->c_str(), stderr);
}

}  // namespace memtrack::report
