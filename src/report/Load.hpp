#pragma once
// Reading a recorded session into an Analysis: its stacks file and timeline first (events name stacks by
// hash from anywhere in the artifact), then the artifact, streamed once; then the sites' stacks
// folded for reading (fold_sites) and the leaks that are not the program's set apart
// (classify_owners).
#include <memory>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "report/Analysis.hpp"
#include "report/Filter.hpp"
#include "report/FrameFold.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

struct Loaded {
    std::unique_ptr<StackTable> stacks;  // the sites' frames point into it
    std::unique_ptr<FrameFolder> folder;  // the sites show their stacks through it (Site::folder)
    Analysis analysis;
    std::string warning;  // non-empty when the stacks file was absent (sites have no frames)
};

struct LoadOptions {
    std::string stacks_file;  // empty: the one beside the artifact, if it exists
    // The timeline beside the artifact, if it exists, makes the report model processes
    // (Processes.hpp); off: the artifact alone, as if there were none.
    bool use_timeline = true;
    FilterOptions filter;
    std::string window;    // --window N|NAME: every figure narrowed to that window (Windows.hpp)
    bool windows = false;  // --windows: the report lists them (needs the timeline)
    uint64_t temporary_threshold = 0;
    bool progress = false;  // a progress line on stderr (on a terminal, past a second)
    bool site_timeline = false;  // Analysis::site_timeline too (--format html)
    bool python_only = false;  // --python-only: stacks as python_only() keeps them (StackTable.hpp)
    FoldOptions fold;       // how stacks are shown (fold_sites)
    // Sites show their stacks (Site::folder): off for a report that reads none (json's sites),
    // which then gets Analysis::unresolved alone and no Loaded::folder.
    bool shown_stacks = true;
    bool debug_packages = false;  // ask dpkg which package holds each module with unresolved frames
    std::vector<std::string> suppressions;  // leak:PATTERN patterns (classify_owners)
};

// Errors name the file: a damaged or unreadable artifact, a stacks file named with --stacks
// that cannot be read, or one beside the artifact that exists but is damaged; the same for the
// timeline beside it.
Result<Loaded> load(const std::string& artifact, const LoadOptions& opt);

}  // namespace memtrack::report
