#pragma once
// A recording whose every figure is known, for the html page's tests (test_site_timeline.cpp,
// test_html_page.cpp): two processes with a timeline, over one second.
//   alpha (pid 100, "alpha --run", exits at 900 ms):
//     early_build: 10 blocks of 1000 B at 0..90 ms, freed at 150 ms (the last one temporary:
//                  alpha allocates nothing else before)
//     late_build:  20 blocks of 500 B at 200..295 ms, never freed: leaked at alpha's exit
//     temp_loop:   50 blocks of 64 B at 400..449 ms, each freed before the next: temporary
//   beta (pid 200, "beta", running at the end):
//     beta_cache:  4 blocks of 4096 B at 500 ms, live at the end
//   The heap: 10000 B at 90 ms, 0 at 150 ms, 10000 B at 295 ms, 26384 B at 500 ms (the peak).
// Stacks, root first: main (app.c:5) -> build (app.c:20) -> early_build (app.c:31) / late_build
// (app.c:42); main -> temp_loop (app.c:50); beta_main (beta.c:3) -> beta_cache (beta.c:9).
#include "report/Analysis.hpp"
#include "report/FrameNames.hpp"
#include "report/StackTable.hpp"

namespace memtrack::unittest {

constexpr uint64_t kHtmlStart = 1'000'000'000;  // the first event, CLOCK_MONOTONIC
constexpr uint64_t html_ms(uint64_t n) { return n * 1'000'000; }  // since the first event

// Fills `stacks` (which the analysis points into) and analyses the recording, the site
// timeline kept.
report::Analysis html_recording(report::StackTable& stacks);

// The same program after a change, for --diff's page: one process (pid 100, no timeline: what
// is live at the end is leaked), its stacks with the frames folding leaves out (`malloc`,
// `operator new`, `std::__new_allocator<…>::allocate`) so that they match the recording
// above's only once folded:
//   early_build: as above (10 blocks of 1000 B at 0..90 ms, freed at 150 ms)
//   late_build:  30 blocks of 500 B at 200..345 ms (20 before), never freed
//   temp_loop, beta_cache: gone
//   main (app.c:5) -> std::vector<int, std::allocator<int> >::push_back(int const&) (vec.cc:12),
//                new: 8 blocks of 3000 B at 600 ms, never freed
//   The heap: 39000 B at 600 ms (the peak: late_build's 15000 and push_back's 24000).
report::Analysis html_recording_after(report::StackTable& stacks);

// Both, folded as `report` folds them (Load.cpp): the after recording's malloc, operator new
// and allocator frames fold away, so its stacks match the before one's by name. Not movable:
// the analyses point into its members.
struct HtmlDiffPair {
    report::StackTable before_stacks, after_stacks;
    report::FrameFolder folder{{}};
    report::Analysis before = html_recording(before_stacks);
    report::Analysis after = html_recording_after(after_stacks);
    HtmlDiffPair() {
        report::fold_sites(before, folder, false);
        report::fold_sites(after, folder, false);
    }
    HtmlDiffPair(const HtmlDiffPair&) = delete;
};

}  // namespace memtrack::unittest
