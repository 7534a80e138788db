#include "cli/TrackOptions.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "bpf/record.h"
#include "core/Result.hpp"

namespace memtrack {
namespace {

constexpr size_t kMaxChunkRecords = 1 << 20;  // a turn's batch: 56 MiB of events at most
constexpr unsigned kMaxThreads = 256;

void check_options(const TrackOptions& o) {
    if (o.command.empty()) throw FatalError("track: no command given (memtrack track [options] -- CMD [ARGS...])");
    if (!(o.stop_fill > 0.0 && o.stop_fill <= 1.0)) throw FatalError("--stop-fill must be in (0, 1]");
    if (!(o.resume_fill >= 0.0 && o.resume_fill < o.stop_fill))
        throw FatalError("--resume-fill must be in [0, --stop-fill)");
    if (o.chunk_records == 0) throw FatalError("--chunk-records must be at least 1");
    if (!(o.wakeup_fill >= 0.0 && o.wakeup_fill < o.stop_fill)) throw FatalError("--wakeup-fill must be in [0, --stop-fill)");
    if (o.threads == 0 || o.threads > kMaxThreads) throw FatalError(fmt::format("--threads must be in 1..{}", kMaxThreads));
    if (o.chunk_records > kMaxChunkRecords)
        throw FatalError(fmt::format("--chunk-records must be in 1..{}", kMaxChunkRecords));
    if (o.unwind != "cfi" && o.unwind != "fp") throw FatalError("--unwind must be cfi or fp");
    if (o.unwind_rows < 1 || o.unwind_rows > (1u << 26))
        throw FatalError(fmt::format("--unwind-rows must be in 1..{}", 1u << 26));
    if (o.no_cache && !o.cache_dir.empty()) throw FatalError("--cache-dir and --no-cache exclude each other");
    if (o.max_frames < 1 || o.max_frames > MT_MAX_FRAMES)
        throw FatalError(fmt::format("--max-frames must be in 1..{}", MT_MAX_FRAMES));
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    for (auto [name, bytes] : {std::pair{"--ring-size", o.ring_size}, std::pair{"--stack-ring-size", o.stack_ring_size}})
        if (bytes < page || (bytes & (bytes - 1)) != 0 || bytes > (1ull << 31))
            throw FatalError(fmt::format("{} {} is not a power of two between {} and 2 GiB", name, bytes, page));
}

}  // namespace

TrackOptions resolve_track_options(TrackOptions opt) {
    if (opt.stats_file.empty())
        if (const char* env = std::getenv("MEMTRACK_STATS")) opt.stats_file = env;
    if (const char* env = std::getenv("MEMTRACK_NO_SUMMARY"); env && std::string_view(env) == "1") opt.summary = false;
    check_options(opt);
    return opt;
}

BpfConfig bpf_config(const TrackOptions& opt) {
    return BpfConfig{
        .ring_bytes = opt.ring_size,
        .stop_fill = opt.stop_fill,
        .wakeup_fill = opt.wakeup_fill,
        .capture_stacks = !opt.no_stacks,
        .place_probes = !opt.probe_at_entry,
        .max_frames = opt.max_frames,
        .python_frames = !opt.no_python_frames,
        .time_parts = opt.time_bpf_parts,
        .record_rss = !opt.no_rss,
        .rss_granularity = opt.rss_granularity,
        .unwind_cfi = opt.unwind == "cfi",
        .unwind_rows = opt.unwind_rows,
        .stack_ring_bytes = opt.stack_ring_size,
        .libc_path = opt.libc_path,
        .libstdcxx_path = opt.libstdcxx_path,
        .per_process_links = !opt.system_wide_probes,
    };
}

}  // namespace memtrack
