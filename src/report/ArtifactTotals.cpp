#include "report/ArtifactTotals.hpp"

#include <fmt/format.h>

#include "format/ArtifactReader.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

ArtifactTotals analyze_artifact(const std::string& artifact) {
    const StackTable none;
    Analyzer analyzer(none, FilterOptions{}, 1);
    auto read = read_artifact(artifact, [&](const Event& e) { analyzer.add(e); });
    return {std::move(analyzer).finish(), std::move(read)};
}

std::string dump_summary(const Analysis& a) {
    std::string s = fmt::format("{:<14}{:>14}{:>20}\n", "kind", "count", "bytes");
    for (size_t i = 0; i < a.kinds.size(); ++i) {
        const auto kind = EventKind(size_t(EventKind::Malloc) + i);
        const KindTotals& k = a.kinds[i];
        if (kind == EventKind::Free)
            s += fmt::format("{:<14}{:>14}{:>20}\n", artifact_name(kind), k.count, "-");
        else
            s += fmt::format("{:<14}{:>14}{:>20}\n", artifact_name(kind), k.count, k.bytes);
    }
    // Without a timeline nothing ends a process's heap: what is live at the end is leaked_*.
    s += fmt::format("peak live heap bytes: {}\n", a.peak_bytes);
    s += fmt::format("live at end: {} bytes in {} blocks\n", a.leaked_bytes, a.leaked_blocks);
    s += fmt::format("peak mapped bytes: {}\n", a.peak_mapped_bytes);
    s += fmt::format("processes: {}\n", a.processes.size());
    return s;
}

}  // namespace memtrack::report
