// probe_sites: where memtrack puts its allocator probes in each FILE, as JSON lines, for
// scripts/bench.sh's trap floor (bench/trap_floor needs the same sites, empty programs on them).
//
//   probe_sites FILE...
//
// One line per probe site: {"object":FILE,"entry":N,"placed":N,"return":true|false}, offsets in
// the file. "entry" is the function's first instruction (--probe-at-entry), "placed" where
// ProbePlacement puts the probe by default; "return": a return probe shares the site. The sites
// come from resolve_object_probes, the function memtrack's probes are resolved by, so the floor
// follows any change to the catalog or the placement. A FILE that defines no allocator prints
// nothing; one that cannot be read is said on stderr and the exit status is 1.
#include <cstdio>
#include <set>

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "probes/AllocatorProbes.hpp"

int main(int argc, char** argv) {
    using namespace memtrack;
    if (argc < 2) {
        std::fprintf(stderr, "usage: probe_sites FILE...\n");
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; ++i) {
        auto entry = resolve_object_probes(argv[i], false);
        auto placed = resolve_object_probes(argv[i], true);
        if (!entry || !placed) {
            std::fprintf(stderr, "probe_sites: %s: %s\n", argv[i], (entry ? placed : entry).error().message().c_str());
            status = 1;
            continue;
        }
        // Both resolutions walk the catalog in the same order over the same symbols: the i-th
        // site of one is the i-th of the other.
        if (entry->entry.offsets.size() != placed->entry.offsets.size()) {
            std::fprintf(stderr, "probe_sites: %s: %zu entry sites but %zu placed ones\n", argv[i],
                         entry->entry.offsets.size(), placed->entry.offsets.size());
            status = 1;
            continue;
        }
        const std::set<uint64_t> returns(placed->ret.offsets.begin(), placed->ret.offsets.end());
        for (size_t s = 0; s < placed->entry.offsets.size(); ++s) {
            const uint64_t at = placed->entry.offsets[s];
            boost::json::object site{{"object", argv[i]},
                                     {"entry", entry->entry.offsets[s]},
                                     {"placed", at},
                                     {"return", returns.count(at) > 0}};
            std::printf("%s\n", boost::json::serialize(site).c_str());
        }
    }
    return status;
}
