// symbol_throughput: how fast memtrack's Resolver turns new addresses into frames, per file.
//
//   symbol_throughput [--addresses N] [--seed S] [--json FILE] FILE...
//
// Each FILE is mapped as the loader would map it (map_file, no process) and resolved by a fresh
// Resolver: first one address, which loads and indexes the module ("load"), then N distinct
// random addresses of its code (pass 1: each compile unit's functions are indexed the first
// time an address falls in it, as in a real run), then N other distinct addresses (pass 2: every
// unit met already). Rates are addresses per CPU-second of the resolving thread
// (CLOCK_THREAD_CPUTIME_ID), so they mean "per core" whatever else the machine runs.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>

#include "JsonFile.hpp"
#include "core/Clock.hpp"
#include "symbols/FileMaps.hpp"
#include "symbols/Resolver.hpp"

namespace memtrack::bench {
namespace {

struct Pass {
    double cpu_s = 0;
    double wall_s = 0;
    uint64_t named = 0;   // addresses whose outermost frame has a function name
    uint64_t lined = 0;   // ... and a line
    uint64_t frames = 0;  // frames produced, inlined ones included
};

Pass resolve_all(Resolver& r, const ProcessMaps& maps, const std::vector<uint64_t>& ips) {
    Pass p;
    const uint64_t c0 = thread_cpu_ns(), w0 = monotonic_ns();
    for (uint64_t ip : ips) {
        const std::vector<Frame> frames = r.resolve(maps, ip);
        p.frames += frames.size();
        p.named += !frames.back().function.empty();
        p.lined += frames.back().line != 0;
    }
    p.cpu_s = double(thread_cpu_ns() - c0) / 1e9;
    p.wall_s = double(monotonic_ns() - w0) / 1e9;
    return p;
}

boost::json::object pass_json(const Pass& p, size_t n) {
    return {{"addresses", n},           {"cpu_s", p.cpu_s},       {"wall_s", p.wall_s},
            {"per_cpu_s", double(n) / p.cpu_s}, {"named", p.named}, {"lined", p.lined},
            {"frames", p.frames}};
}

int run(int argc, char** argv) {
    CLI::App app{"memtrack's Resolver: new addresses per CPU-second, per file"};
    size_t addresses = 100000;
    unsigned seed = 1;
    std::string json_path;
    std::vector<std::string> files;
    app.add_option("--addresses", addresses, "distinct addresses per pass (default 100000)");
    app.add_option("--seed", seed, "random seed (default 1)");
    app.add_option("--json", json_path, "write the results as JSON to FILE");
    app.add_option("files", files, "ELF files")->required();
    CLI11_PARSE(app, argc, argv);

    boost::json::object all;
    for (const std::string& file : files) {
        auto mapped = map_file(file);
        if (!mapped || mapped->code.empty()) {
            std::fprintf(stderr, "symbol_throughput: %s: %s\n", file.c_str(),
                         mapped ? "no code segment" : mapped.error().message().c_str());
            return 1;
        }
        // 2N distinct return addresses in the code segments, weighted by their size.
        uint64_t code_bytes = 0;
        for (auto [lo, hi] : mapped->code) code_bytes += hi - lo;
        std::mt19937_64 rng(seed);
        std::unordered_set<uint64_t> seen;
        std::vector<uint64_t> ips;
        while (ips.size() < 2 * addresses + 1 && seen.size() < code_bytes) {
            uint64_t at = rng() % code_bytes;
            for (auto [lo, hi] : mapped->code) {
                if (at < hi - lo) {
                    at += lo;
                    break;
                }
                at -= hi - lo;
            }
            if (seen.insert(at).second) ips.push_back(mapped->base + at + 1);  // resolve() looks at ip - 1
        }
        const size_t n = (ips.size() - 1) / 2;
        const std::vector<uint64_t> first(ips.begin(), ips.begin() + 1);
        const std::vector<uint64_t> pass1(ips.begin() + 1, ips.begin() + 1 + n);
        const std::vector<uint64_t> pass2(ips.begin() + 1 + n, ips.begin() + 1 + 2 * n);

        Resolver r;
        const Pass load = resolve_all(r, mapped->maps, first);
        const Pass p1 = resolve_all(r, mapped->maps, pass1);
        const Pass p2 = resolve_all(r, mapped->maps, pass2);
        std::printf("%s: load %.1f ms (CPU %.1f ms); pass 1 (units indexed as met): %.0f addresses/CPU-s, "
                    "%.0f%% named, %.0f%% with a line; pass 2: %.0f addresses/CPU-s\n",
                    file.c_str(), load.wall_s * 1e3, load.cpu_s * 1e3, double(n) / p1.cpu_s,
                    100.0 * double(p1.named) / double(n), 100.0 * double(p1.lined) / double(n), double(n) / p2.cpu_s);
        all[file] = {{"load_ms", load.wall_s * 1e3}, {"load_cpu_ms", load.cpu_s * 1e3},
                     {"pass1", pass_json(p1, n)}, {"pass2", pass_json(p2, n)},
                     {"cache_misses", r.cache_misses()}};
    }
    if (!json_path.empty() && !write_json_file("symbol_throughput", json_path, all)) return 1;
    return 0;
}

}  // namespace
}  // namespace memtrack::bench

int main(int argc, char** argv) { return memtrack::bench::run(argc, argv); }
