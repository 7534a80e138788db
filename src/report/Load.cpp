#include "report/Load.hpp"

#include <sys/stat.h>

#include <array>
#include <optional>

#include "core/OutputFiles.hpp"
#include "format/ArtifactReader.hpp"
#include "report/FrameNames.hpp"
#include "report/Owners.hpp"
#include "report/Progress.hpp"

namespace memtrack::report {
namespace {

// Every error names its file once: the readers name it only when open or read fails.
Error naming(const std::string& path, const Error& e) {
    if (e.message().find(path) != std::string::npos) return e;
    return Error{path, {}, 0, e.message()};
}

}  // namespace

Result<Loaded> load(const std::string& artifact, const LoadOptions& opt) {
    Loaded out;
    out.stacks = std::make_unique<StackTable>();
    std::string stacks_path = opt.stacks_file;
    if (stacks_path.empty()) {
        stacks_path = stacks_path_for(artifact);
        struct stat st {};
        if (stacks_path.empty() || ::stat(stacks_path.c_str(), &st) != 0) {
            out.warning = stacks_path.empty()
                              ? "the artifact is not named <prefix>.MemtrackArtifact.msgpack, so its stacks file "
                                "is unknown (name it with --stacks): sites have no frames"
                              : "no stacks file " + stacks_path + " (recorded with --no-stacks?): sites have no frames";
            stacks_path.clear();
        }
    }
    if (!stacks_path.empty()) {
        auto table = StackTable::load(stacks_path, opt.python_only);
        if (!table) return naming(stacks_path, table.error());
        *out.stacks = std::move(table).value();
    }

    // Gone before the stacks are folded: its live blocks are no longer needed then.
    std::optional<Analyzer> analyzer_holder(std::in_place, *out.stacks, opt.filter, opt.temporary_threshold);
    Analyzer& analyzer = *analyzer_holder;
    if (opt.site_timeline) analyzer.record_site_timeline();
    if (const std::string timeline = opt.use_timeline ? timeline_path_for(artifact) : std::string(); !timeline.empty()) {
        struct stat st{};
        if (::stat(timeline.c_str(), &st) == 0) {
            auto model = load_process_model(timeline);
            if (!model) return naming(timeline, model.error());
            std::optional<size_t> window;
            if (!opt.window.empty()) {
                auto found = find_window(windows_of(model->session), opt.window);
                if (!found) return found.error();
                window = *found;
            }
            analyzer.set_processes(std::move(model).value(), window);
        }
    }
    for (const auto& [needed, option] : {std::pair{bool(opt.filter.command), "--command"},
                                         std::pair{!opt.window.empty() || opt.windows, "--window and --windows"}})
        if (needed && !analyzer.has_processes())
            return Error{artifact, {}, 0,
                         std::string(option) + " needs the timeline beside the artifact (.MemtrackTimeline.msgpack)"};
    std::optional<Progress> progress;
    if (opt.progress) progress.emplace(artifact);
    // Events reach the analyzer kLookahead events after their prefetch() and half as many
    // after their prefetch_sites(), so the cache misses of that many events overlap instead of
    // each stalling in turn (LiveMap.hpp).
    constexpr size_t kLookahead = 32;
    std::array<Event, kLookahead> ahead;
    uint64_t queued = 0;
    // Decoded on a second thread (read_artifact_ahead): reading and decoding are a third of a
    // json report's CPU time, which then overlaps the analysis (docs/BENCHMARKS.md, "Report").
    auto read = read_artifact_ahead(artifact, [&](std::span<const Event> events) {
        for (const Event& e : events) {
            Event& slot = ahead[queued % kLookahead];
            if (queued >= kLookahead) analyzer.add(slot);
            if (queued >= kLookahead / 2) analyzer.prefetch_sites(ahead[(queued - kLookahead / 2) % kLookahead]);
            analyzer.prefetch(e);
            slot = e;
            ++queued;
            if (progress) progress->tick();
        }
    });
    // The last kLookahead events are still queued.
    for (uint64_t i = queued > kLookahead ? queued - kLookahead : 0; i < queued; ++i)
        analyzer.add(ahead[i % kLookahead]);
    if (!read) return naming(artifact, read.error());
    out.analysis = std::move(analyzer).finish();
    analyzer_holder.reset();
    auto folder = std::make_unique<FrameFolder>(opt.fold);
    fold_sites(out.analysis, *folder, opt.debug_packages, opt.shown_stacks);
    if (opt.shown_stacks) out.folder = std::move(folder);
    classify_owners(out.analysis, opt.suppressions);
    return out;
}

}  // namespace memtrack::report
