#include "cli/TrackCommand.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>

#include "actors/Control.hpp"
#include "bpf/record.h"
#include "cli/TrackRun.hpp"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "core/OutputFiles.hpp"
#include "core/Result.hpp"
#include "format/ZstdFileWriter.hpp"
#include "probes/AllocatorProbes.hpp"
#include "probes/BpfPrivileges.hpp"
#include "probes/BpfSession.hpp"
#include "process/AttachCheck.hpp"
#include "process/ChildLauncher.hpp"
#include "process/ProcessSignal.hpp"
#include "process/StopGuard.hpp"
#include "report/TrackSummary.hpp"
#include "symbols/Resolver.hpp"
#include "unwind/CfiTableCache.hpp"

namespace memtrack {

namespace asio = boost::asio;

std::vector<std::string> command_argv(const std::vector<std::string>& command) {
    if (command.size() == 1 && command[0].find_first_of(" \t\n;&|<>()$`\\\"'*?[]#~=%{}") != std::string::npos)
        return {"bash", "-c", command[0]};
    return command;
}

namespace {


// Blocks signals for a scope; deliver() (or the end of the scope) unblocks them, and any that
// arrived meanwhile is then delivered.
class DeferredSignals {
public:
    explicit DeferredSignals(std::initializer_list<int> signals) {
        sigemptyset(&set_);
        for (int s : signals) sigaddset(&set_, s);
        ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
    }
    ~DeferredSignals() { deliver(); }
    DeferredSignals(const DeferredSignals&) = delete;
    DeferredSignals& operator=(const DeferredSignals&) = delete;
    void deliver() {
        if (std::exchange(delivered_, true)) return;
        ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }

private:
    sigset_t set_, old_;
    bool delivered_ = false;
};

// The files nearly every stack passes through: the command's executable (cheap, and first: its
// first stack should not wait behind libc), the C library (main is called from it; its separate
// debug info is the slow one), the C++ runtime (whose lack of debug info is itself slow to find).
std::vector<std::string> likely_modules(const TrackOptions& o, const std::string& command) {
    std::vector<std::string> paths;
    auto found = find_executable(command);
    for (std::string p : {found ? found.value() : std::string(), o.libc_path.empty() ? loaded_library_path("libc.so") : o.libc_path,
                          o.libstdcxx_path.empty() ? loaded_library_path("libstdc++.so") : o.libstdcxx_path})
        if (!p.empty()) paths.push_back(std::move(p));
    return paths;
}

// The folder --cache-dir names, or the default one: one that is not memtrack's own (another
// owner, others may write, a link on the way) or cannot be made is refused in one line, and
// tables are built every run (issue 28.3: no cache, the run goes on).
std::shared_ptr<const CfiTableCache> open_cache(const TrackOptions& opt) {
    if (opt.no_cache) return nullptr;
    const bool named = !opt.cache_dir.empty();
    const std::string dir = named ? opt.cache_dir : CfiTableCache::default_dir();
    if (dir.empty()) return nullptr;
    auto cache = CfiTableCache::open(dir);
    if (cache) return std::make_shared<const CfiTableCache>(std::move(cache).value());
    log::warn("{}unwind tables are built every run: {}", named ? "--cache-dir refused; " : "",
              cache.error().message());
    return nullptr;
}

}  // namespace

int run_track(const TrackOptions& opt_in) {
    const uint64_t started_ns = monotonic_ns();  // where the stats' startup_ms begins (RunPhases)
    const TrackOptions opt = resolve_track_options(opt_in);
    require_bpf_privileges();
    if (auto own = check_proc_matches_pid_namespace(); !own) throw FatalError(own.error().message());
    const auto argv = command_argv(opt.command);
    if (auto found = find_executable(argv[0]); !found) {
        // What a shell says, with its status: 127 for nothing of that name, 126 for something
        // (by path or on PATH) that cannot run.
        if (found.error().err == ENOENT) {
            log::error("command not found: {}", argv[0]);
            return 127;
        }
        log::error("{}", found.error().message());
        return 126;
    }
    const OutputDir dir = value_or_throw(OutputDir::open(opt.output_dir, true));
    if (!opt.stats_file.empty())
        if (auto ok = check_output_file(opt.stats_file); !ok) throw FatalError("--stats: " + ok.error().message());
    ::signal(SIGPIPE, SIG_IGN);
    // A file size limit (RLIMIT_FSIZE) then fails the write with EFBIG, reported like a full disk,
    // instead of killing memtrack with its command still held.
    ::signal(SIGXFSZ, SIG_IGN);
    // The guard first of all: memtrack has no other thread yet, and no BPF object.
    StopGuard guard = value_or_throw(StopGuard::start());
    // From here until the run's signal_set exists, a SIGINT, SIGTERM or SIGHUP waits: it then
    // ends the run the usual way (socket removed, command told, files closed), instead of
    // killing memtrack half set up. Threads started meanwhile inherit the mask; the command
    // gets an empty one (ChildLauncher).
    DeferredSignals deferred({SIGINT, SIGTERM, SIGHUP});

    // The socket first: a client may connect while the slow start-up below runs.
    asio::io_context io;
    std::unique_ptr<Control> control;
    if (!opt.socket.empty())
        control = value_or_throw(
            Control::bind(io, opt.socket, std::chrono::milliseconds(int64_t(opt.control_idle_timeout * 1000))));

    // The unwind table cache before the command exists (a refused folder is said before it runs).
    std::shared_ptr<const CfiTableCache> unwind_cache;
    if (!opt.no_stacks && opt.unwind == "cfi") unwind_cache = open_cache(opt);

    auto child = value_or_throw(HeldChild::spawn(argv));
    // libdw asks DEBUGINFOD_URLS' servers for whatever debug info is missing: requests that name
    // the build-ids of the machine's files, from root, and a server that never answers stalls the
    // symbolizer (and the processes waiting on it) for its timeout. Only when asked. Dropped
    // after the fork: the command keeps its environment; no other thread runs yet.
    if (!opt.debuginfod) ::unsetenv("DEBUGINFOD_URLS");
    // Symbols for the files stacks will almost surely name, loaded beside the BPF load below.
    // After the fork: the child must not inherit a lock the loading thread holds.
    // Every object file the run reads, read once: by the probes, the unwind tables and the symbolizer.
    auto files = std::make_shared<ObjectFiles>();
    std::unique_ptr<Resolver> resolver;
    if (!opt.no_stacks) {
        resolver = std::make_unique<Resolver>();
        resolver->share_files(files);
        resolver->preload(likely_modules(opt, argv[0]));
    }
    std::unique_ptr<BpfSession> bpf;
    const uint64_t t0 = monotonic_ns();
    try {
        bpf = BpfSession::open_and_load(bpf_config(opt), files);
        log::info("loaded at {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
        if (auto armed = guard.arm(bpf->holds_map_fd(), bpf->held_map_fd(), bpf->hold_words()); !armed)
            throw FatalError("stop guard: " + armed.error().message());
        bpf->attach_tracepoints();
        log::info("tracepoints at {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
        bpf->attach_allocator_probes();
        (void)value_or_throw(bpf->tracked().track_shared(child.pid()));
        bpf->set_recording(!opt.start_disabled);
    } catch (...) {
        child.abandon();
        throw;
    }
    const std::string artifact_path = dir.path_of(artifact_name(child.pid()));
    auto open_output = [&](const std::string& name) {
        auto fd = dir.create(name);
        auto f = fd ? ZstdFileWriter::create(std::move(fd).value(), dir.path_of(name)) : Result<ZstdFileWriter>(fd.error());
        if (!f) {
            child.abandon();
            throw FatalError(f.error());
        }
        return std::move(f).value();
    };
    ZstdFileWriter artifact = open_output(artifact_name(child.pid()));
    std::optional<ZstdFileWriter> timeline, stacks_file;
    try {
        timeline.emplace(open_output(timeline_name(child.pid())));
        if (!opt.no_stacks) stacks_file.emplace(open_output(stacks_name(child.pid())));
    } catch (...) {
        dir.remove(artifact_name(child.pid()));  // no empty files left behind
        dir.remove(timeline_name(child.pid()));
        throw;
    }

    std::optional<TrackRun> run;
    try {
        run.emplace(io, opt, *bpf, std::move(artifact), std::move(*timeline), std::move(stacks_file), std::move(resolver),
                    std::move(unwind_cache), child, control.get(), guard, started_ns);
    } catch (...) {
        child.abandon();
        throw;
    }
    deferred.deliver();
    const int status = run->run();
    const uint64_t t1 = monotonic_ns();
    // Done during shutdown already (detach_early); here for a run that never got that far.
    run->detach_probes();
    log::info("exit: probes detached {:.1f} ms after the run ({:.1f} ms since memtrack started)",
              double(monotonic_ns() - t1) / 1e6, double(monotonic_ns() - started_ns) / 1e6);
    if (run->exec_failed()) {
        dir.remove(artifact_name(child.pid()));  // no empty artifact for a command that never ran
        dir.remove(stacks_name(child.pid()));
        dir.remove(timeline_name(child.pid()));
        const int err = run->exec_error();
        log::error("cannot run {}: {}", argv[0], std::strerror(err));
        return err == ENOENT ? 127 : 126;
    }
    if (opt.summary) report::print_track_summary(artifact_path);
    // After the summary, so that its last line says the summary is not the command's whole run.
    if (!run->cut_short().empty()) log::warn("{}", run->cut_short());
    return status;
}

}  // namespace memtrack
