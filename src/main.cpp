// memtrack's command line: parsing and wiring only; each command lives in src/cli/.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/CtlCommand.hpp"
#include "cli/DoctorCommand.hpp"
#include "cli/DumpCommand.hpp"
#include "cli/ReportCommand.hpp"
#include "cli/TrackCommand.hpp"
#include "control/Commands.hpp"
#include "core/Log.hpp"
#include "core/OutputFiles.hpp"
#include "core/Result.hpp"

namespace {

// A ring size may be written 67108864, 64M, 64MiB, 1G...
uint64_t parse_size(const std::string& text) {
    size_t pos = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(text, &pos);
    } catch (const std::exception&) {
        throw CLI::ValidationError("--ring-size", "not a size: " + text);
    }
    std::string unit = text.substr(pos);
    uint64_t mult = 1;
    if (unit == "" || unit == "B") mult = 1;
    else if (unit == "K" || unit == "KiB" || unit == "k") mult = 1ull << 10;
    else if (unit == "M" || unit == "MiB") mult = 1ull << 20;
    else if (unit == "G" || unit == "GiB") mult = 1ull << 30;
    else throw CLI::ValidationError("--ring-size", "unknown unit in " + text);
    return uint64_t(v) * mult;
}

// A folder named where an artifact is read means the one artifact in it (the -o folder `track`
// wrote): core/OutputFiles.hpp's artifact_in is the rule.
const CLI::Validator kArtifactPath(
    [](std::string& path) {
        auto found = memtrack::artifact_in(path);
        if (!found) return found.error().message();
        path = std::move(found).value();
        return std::string();
    },
    "ARTIFACT");

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"memtrack: records every heap allocation of a command and its descendants, with eBPF"};
    app.require_subcommand(1);
    bool verbose = false;
    app.add_flag("-v,--verbose", verbose, "log probe placement, timings and libbpf messages; with --version, the kernel features (memtrack doctor)");
    // After -v: CLI11 runs the options' callbacks in the order they were added, so `verbose` is
    // set when --version's callback throws, whichever of the two came first on the line.
    app.set_version_flag("--version", "memtrack " MEMTRACK_VERSION " (with -v: the kernel features it finds)");

    memtrack::TrackOptions track;
    std::string ring_size;
    auto* t = app.add_subcommand("track", "run a command and record its allocations");
    t->add_option("-o,--output", track.output_dir, "folder for the artifact (created if missing)");
    t->add_flag("--start-disabled", track.start_disabled, "start with recording off (enable it over --socket)");
    t->add_option("--stats", track.stats_file, "write run statistics as JSON to FILE at exit (or MEMTRACK_STATS)");
    t->add_option("--socket", track.socket, "control socket path (docs/PROTOCOL.md)");
    t->add_option("--control-idle-timeout", track.control_idle_timeout,
                  "close a control client idle this many seconds (default 60; 0: never)")
        ->check(CLI::Range(0.0, 86400.0));
    t->add_option("--ring-size", ring_size, "ring buffer bytes, a power of two (default 64M)");
    t->add_option("--chunk-records", track.chunk_records, "records read per consumer turn (default 1024)");
    t->add_option("--stop-fill", track.stop_fill, "ring fill that pauses a producer (default 0.75)");
    t->add_option("--resume-fill", track.resume_fill, "ring fill below which paused producers resume (default 0.25; 0: only when empty)");
    t->add_option("--wakeup-fill", track.wakeup_fill, "ring fill below which records do not wake the consumer; a 10 ms timer reads them (default 1/64; 0: wake on every record)");
    t->add_option("--consumer-delay-us", track.consumer_delay_us, "testing knob: delay every chunk by N microseconds");
    t->add_option("--symbolize-delay-us", track.symbolize_delay_us, "testing knob: delay every new stack's symbolization by N microseconds");
    t->add_option("--libc", track.libc_path, "C library to probe (default: the one memtrack uses)");
    t->add_option("--libstdcxx", track.libstdcxx_path, "C++ runtime to probe (default: the one memtrack uses)");
    t->add_option("--threads", track.threads, "io threads (default 2)");
    t->add_flag("--no-stacks", track.no_stacks, "do not capture call stacks");
    t->add_flag("--probe-at-entry", track.probe_at_entry, "put every probe at its function's entry (no placement)");
    t->add_flag("--system-wide-probes", track.system_wide_probes,
                "attach the allocator probes for every process (they trap in untracked ones too) instead of "
                "per tracked process");
    t->add_flag("--debuginfod", track.debuginfod,
                "ask the servers of DEBUGINFOD_URLS for missing debug info (off: no network requests; a "
                "server that does not answer stalls symbolization)");
    t->add_flag("--no-python-frames", track.no_python_frames,
                "stacks without CPython's frames: the interpreter's eval loop stands for them (measuring aid: "
                "what reading them costs)");
    t->add_flag("--time-bpf-parts", track.time_bpf_parts,
                "measuring aid: time each part of the allocation return program (stack walk, hashing, stack "
                "record, event record) and report the sums in the stats (bpf_parts); adds its own cost");
    t->add_option("--rss-granularity", track.rss_granularity,
                  "timeline: record a process's RSS when a counter moves by max(BYTES, 1/64 of it) "
                  "(default 1048576; 0: every change)");
    t->add_flag("--no-rss", track.no_rss, "timeline: no RSS records (fork, exec, exit and the rest stay)");
    t->add_option("--max-frames", track.max_frames, "frames per captured stack, 1..127 (default 64)");
    t->add_option("--unwind", track.unwind,
                  "how stacks are walked: cfi (each object's DWARF CFI, through code without frame pointers; "
                  "the default) or fp (frame pointers only)");
    t->add_option("--unwind-rows", track.unwind_rows,
                  "unwind rows for all objects together, 8 bytes each (default 4194304)");
    t->add_option("--cache-dir", track.cache_dir,
                  "where unwind tables built from the objects' CFI are kept between runs (default "
                  "$MEMTRACK_CACHE_DIR, else $XDG_CACHE_HOME/memtrack, else ~/.cache/memtrack)");
    t->add_flag("--no-cache", track.no_cache, "build every unwind table again; read and keep none");
    std::string stack_ring_size;
    t->add_option("--stack-ring-size", stack_ring_size, "stack ring bytes, a power of two (default 16M)");
    bool no_summary = false;
    t->add_flag("--no-summary", no_summary,
                "do not print the summary (events, peak, leaked) at the end (or MEMTRACK_NO_SUMMARY=1)");
    t->add_option("command", track.command, "CMD [ARGS...] after --, or one string run with bash -c")->required();

    memtrack::DumpOptions dump;
    auto* d = app.add_subcommand("dump", "print an artifact as JSON lines, or a summary");
    d->add_flag("--summary", dump.summary, "counts and bytes per type, peak live bytes");
    d->add_option("--stacks", dump.stacks_file, "print a .MemtrackStacks.msgpack file, one JSON object per stack");
    d->add_option("--timeline", dump.timeline_file, "print a .MemtrackTimeline.msgpack file, one JSON object per event");
    d->add_flag("--resolve", dump.resolve, "add each event's symbolized frames (from the stacks file beside it)");
    auto* dump_file = d->add_option("file", dump.file, "a .MemtrackArtifact.msgpack file, or the folder holding one")
                          ->transform(kArtifactPath);
    // FILE is needed unless --stacks alone names what to print.
    d->callback([&] {
        if (dump.file.empty() && ((dump.stacks_file.empty() && dump.timeline_file.empty()) || dump.resolve || dump.summary))
            throw CLI::RequiredError(dump_file->get_name());
    });

    memtrack::ReportOptions report;
    auto* r = app.add_subcommand("report", "where the memory went: peak, leaks, sites (docs/REPORT.md)");
    r->add_option("artifact", report.artifact, "a .MemtrackArtifact.msgpack file, or the folder holding one")
        ->required()
        ->transform(kArtifactPath);
    r->add_option("--stacks", report.stacks_file, "its stacks file (default: the .MemtrackStacks.msgpack beside it)");
    r->add_option("--format", report.format, "text, json, folded, pprof, speedscope or html (default text)");
    r->add_option("-o,--output", report.output, "write to FILE instead of stdout (required for pprof)");
    r->add_option("--limit", report.limit, "sites per section (default 10)");
    r->add_option("--cost", report.cost, "folded: peak, leaked, allocated, allocations or temporary (default peak)");
    r->add_option("--temporary-threshold", report.temporary_threshold,
                  "temporary: released with at most N other heap events of its process in between (default 0: "
                  "heaptrack's)");
    r->add_option("--pid", report.pids, "only these processes (repeatable)")->allow_extra_args(false);
    r->add_option("--command", report.command,
                  "only the processes whose command line matches REGEX (needs the timeline beside the artifact)");
    r->add_option("--from", report.from, "only from this time on, since the first event (1.5s, 200ms)");
    r->add_option("--to", report.to, "only up to this time, since the first event");
    r->add_flag("--windows", report.windows,
                "each enable..disable window and each span between marks: peak, allocated, RSS peak, leaked");
    r->add_option("--window", report.window, "narrow every section to window N, or the one a mark NAME names");
    r->add_option("--focus", report.focus, "only stacks with a frame whose function, file or module matches REGEX");
    r->add_option("--ignore", report.ignore, "leave out stacks with a frame whose function, file or module matches REGEX");
    r->add_flag("--python-only", report.python_only,
                "a stack with Python frames shows only those (the interpreter's native frames between them folded)");
    r->add_option("--min-size", report.min_size, "only allocations of at least this size (4096, 64KiB)");
    r->add_option("--max-size", report.max_size, "only allocations of at most this size");
    r->add_option("--by", report.by, "text, json: 'function' lists allocating functions instead of sites");
    r->add_flag("--bottom-up", report.bottom_up, "text, json: allocating functions, then their callers, as a tree");
    r->add_flag("--top-down", report.top_down, "text, json: from the outermost frames to the allocating ones, as a tree");
    r->add_option("--caller-callee", report.caller_callee,
                  "text, json: FUNCTION's own figures, its callers' and its callees' (a name or part of one)");
    r->add_option("--hide-frames", report.hide_frames,
                  "fold frames whose function, file or module matches REGEX too (shown as a count)");
    r->add_flag("--keep-frames", report.keep_frames,
                "keep every frame: no default folding of start-up and allocator frames, no runs of unresolved ones");
    r->add_flag("--full-names", report.full_names, "keep template arguments in function names");
    r->add_option("--suppressions", report.suppressions,
                  "FILE of leak:PATTERN lines: leaks with a frame matching a PATTERN are reported apart");
    r->add_option("--diff", report.diff_base, "per-site changes from BASE (an artifact or its folder) to ARTIFACT")
        ->transform(kArtifactPath);
    r->add_option("--fail-if", report.fail_if,
                  "exit 3 when EXPR holds: leaked>0, peak>256MiB, calls>1e6, peak_delta>5%, "
                  "window:NAME peak>10MiB (repeatable)")
        ->allow_extra_args(false);

    memtrack::CtlOptions ctl;
    int64_t pid = 0;
    auto* c = app.add_subcommand("ctl", "send one request to a running memtrack's control socket");
    c->add_option("--socket", ctl.socket, "control socket path")->required();
    auto* pid_opt = c->add_option("--pid", pid, "process id for " + memtrack::commands_taking("pid"));
    c->add_option("--timeout", ctl.timeout_s, "seconds to wait for the reply (default 60)");
    c->add_option("cmd", ctl.cmd, memtrack::command_names())->required();
    std::string ctl_name;
    auto* name_opt = c->add_option("name", ctl_name, "NAME for " + memtrack::commands_taking("name"));
    c->footer(memtrack::commands_help());

    auto* doctor = app.add_subcommand(
        "doctor", "print the kernel features memtrack found, what a missing one costs, and whether its BPF programs load");
    bool doctor_json = false;
    doctor->add_flag("--json", doctor_json, "print the report as one JSON object (docs/USAGE.md)");

    bool version_features = false;
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        const int status = app.exit(e);
        if (!verbose) return status;
        std::fflush(stdout);
        version_features = true;  // --version -v: then what `memtrack doctor` prints
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "memtrack: %s\n", e.what());
        return 2;
    }
    memtrack::log::set_verbose(verbose);

    try {
        if (version_features) return memtrack::run_doctor();
        if (*t) {
            if (!ring_size.empty()) track.ring_size = parse_size(ring_size);
            if (!stack_ring_size.empty()) track.stack_ring_size = parse_size(stack_ring_size);
            if (no_summary) track.summary = false;
            return memtrack::run_track(track);
        }
        if (*d) return memtrack::run_dump(dump);
        if (*doctor) return memtrack::run_doctor(doctor_json);
        if (*r) return memtrack::run_report(report);
        if (*c) {
            if (*pid_opt) ctl.pid = pid;
            if (*name_opt) ctl.name = ctl_name;
            return memtrack::run_ctl(ctl);
        }
    } catch (const memtrack::FatalError& e) {
        memtrack::log::error("{}", e.what());
        return e.exit_code();
    } catch (const CLI::ValidationError& e) {
        std::fprintf(stderr, "memtrack: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        memtrack::log::error("{}", e.what());
        return 1;
    }
    return 0;
}
