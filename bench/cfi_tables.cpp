// cfi_tables: how long building an object's unwind rows takes (build_cfi_table), and their size.
//
//   cfi_tables [--reps N] [--json FILE] FILE...
//
// Builds each FILE's table N times (default 3), each from a fresh open as when a process maps
// it, and reports the median wall and CPU (CLOCK_THREAD_CPUTIME_ID) times, with the table's rows
// (8 bytes each), FDEs, rows per CFA type and the libdw rows it could not express, by cause.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "JsonFile.hpp"
#include "core/Clock.hpp"
#include "unwind/CfiTable.hpp"

namespace memtrack::bench {
namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int run(int argc, char** argv) {
    CLI::App app{"memtrack's unwind tables: build time and size per file"};
    unsigned reps = 3;
    std::string json_path;
    std::vector<std::string> files;
    app.add_option("--reps", reps, "builds per file (default 3)")->check(CLI::PositiveNumber);
    app.add_option("--json", json_path, "write the results as JSON to FILE");
    app.add_option("files", files, "ELF files")->required();
    CLI11_PARSE(app, argc, argv);

    static constexpr const char* kTypes[kCfaTypes] = {"none", "rsp", "rbp", "plt", "end", "unsupported"};
    boost::json::object all;
    for (const std::string& file : files) {
        std::vector<double> wall_ms, cpu_ms, one_thread_ms;
        std::optional<CfiTable> last;
        for (unsigned i = 0; i < reps; ++i) {
            // The same build read by one thread, for the ratio (the table is the same).
            auto one = build_cfi_table(file, std::numeric_limits<size_t>::max());
            if (one) one_thread_ms.push_back(double(one->counts.build_ns) / 1e6);
            const uint64_t c0 = thread_cpu_ns();
            auto table = build_cfi_table(file);
            cpu_ms.push_back(double(thread_cpu_ns() - c0) / 1e6);
            if (!table) {
                std::fprintf(stderr, "cfi_tables: %s\n", table.error().message().c_str());
                return 1;
            }
            wall_ms.push_back(double(table->counts.build_ns) / 1e6);
            last = std::move(table).value();
        }
        const CfiCounts& c = last->counts;
        boost::json::object types, causes;
        for (size_t t = 0; t < kCfaTypes; ++t) types[kTypes[t]] = c.rows_by_type[t];
        for (size_t k = 1; k < kUnsupportedCauses; ++k)
            if (c.unsupported[k]) causes[unsupported_name(Unsupported(k))] = c.unsupported[k];
        all[file] = {{"build_ms", median(wall_ms)},
                     {"build_cpu_ms", median(cpu_ms)},
                     {"build_one_thread_ms", one_thread_ms.empty() ? 0.0 : median(one_thread_ms)},
                     {"rows", c.rows},
                     {"bytes", c.rows * sizeof(mt_unwind_row)},
                     {"fdes", c.fdes},
                     {"fdes_debug_frame", c.fdes_debug_frame},
                     {"libdw_rows", c.frames_eh_frame + c.frames_debug_frame},
                     {"rows_by_type", types},
                     {"unsupported_libdw_rows", causes},
                     {"lookup_failures", c.lookup_failures},
                     {"undecodable_fdes", c.undecodable_fdes}};
        std::printf("%s: %zu rows (%zu bytes), %zu FDEs, build %.1f ms (CPU %.1f ms)\n", file.c_str(), c.rows,
                    c.rows * sizeof(mt_unwind_row), c.fdes, median(wall_ms), median(cpu_ms));
    }
    std::printf("%s\n", boost::json::serialize(all).c_str());
    if (!json_path.empty() && !write_json_file("cfi_tables", json_path, all)) return 1;
    return 0;
}

}  // namespace
}  // namespace memtrack::bench

int main(int argc, char** argv) { return memtrack::bench::run(argc, argv); }
