#include "cli/TrackCommand.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <mutex>
#include <thread>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/json/serialize.hpp>

#include "actors/Control.hpp"
#include "actors/DrainBarrier.hpp"
#include "actors/Lane.hpp"
#include "actors/PressureControl.hpp"
#include "actors/ProcessLinks.hpp"
#include "actors/RingConsumer.hpp"
#include "actors/StatsReport.hpp"
#include "actors/Symbolizer.hpp"
#include "actors/Writer.hpp"
#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "core/OutputFiles.hpp"
#include "core/Result.hpp"
#include "format/ZstdFileWriter.hpp"
#include "probes/AllocatorProbes.hpp"
#include "probes/BpfSession.hpp"
#include "process/AttachCheck.hpp"
#include "process/ChildLauncher.hpp"
#include "process/StopGuard.hpp"
#include "process/HoldMaps.hpp"
#include "process/ProcessHolds.hpp"
#include "process/ProcessSignal.hpp"
#include "report/TrackSummary.hpp"
#include "ring/RingView.hpp"
#include "symbols/Resolver.hpp"
#include "unwind/UnwindTables.hpp"

namespace memtrack {

namespace asio = boost::asio;
namespace fs = std::filesystem;

std::vector<std::string> command_argv(const std::vector<std::string>& command) {
    if (command.size() == 1 && command[0].find_first_of(" \t\n;&|<>()$`\\\"'*?[]#~=%{}") != std::string::npos)
        return {"bash", "-c", command[0]};
    return command;
}

namespace {

// Every option is checked here, before anything is created (no socket, no child, no file).
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
    if (o.max_frames < 1 || o.max_frames > MT_MAX_FRAMES)
        throw FatalError(fmt::format("--max-frames must be in 1..{}", MT_MAX_FRAMES));
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    for (auto [name, bytes] : {std::pair{"--ring-size", o.ring_size}, std::pair{"--stack-ring-size", o.stack_ring_size}})
        if (bytes < page || (bytes & (bytes - 1)) != 0 || bytes > (1ull << 31))
            throw FatalError(fmt::format("{} {} is not a power of two between {} and 2 GiB", name, bytes, page));
}

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

// Everything that lives for one tracked run; the shutdown sequence walks it in order.
class TrackRun {
public:
    TrackRun(asio::io_context& io, const TrackOptions& opt, BpfSession& bpf, ZstdFileWriter artifact,
             std::optional<ZstdFileWriter> stacks_file, std::unique_ptr<Resolver> resolver, HeldChild& child,
             Control* control, const StopGuard& guard)
        : io_(io), opt_(opt), bpf_(bpf), child_(child), control_(control),
          hold_maps_(value_or_throw(HoldMaps::open(bpf.holds_map_fd(), bpf.held_map_fd(), bpf.hold_words(),
                                                   bpf.holds_outstanding()))),
          holds_(io_, hold_maps_, hold_signals_, [&bpf](uint32_t i) { return bpf.counter(i); }),
          events_(io, value_or_throw(RingView::map(bpf.events_ring_fd())), consumer_options(RingConsumer::Records::Events),
                  std::move(artifact)),
          pressure_(io_, holds_, WatermarkPolicy{opt.stop_fill, opt.resume_fill}),
          exit_watch_(io_, ::dup(child.pidfd())), guard_(guard), guard_watch_(io_, ::dup(guard.pidfd())),
          signals_(io_, SIGINT, SIGTERM, SIGHUP) {
        watch_pressure(events_);
        std::vector<Lane*> lanes{&events_};
        if (stacks_file) {
            stacks_.emplace(io, value_or_throw(RingView::map(bpf.stacks_ring_fd())),
                            consumer_options(RingConsumer::Records::Stacks), std::move(*stacks_file), &holds_,
                            std::move(resolver), std::chrono::microseconds(opt.symbolize_delay_us));
            stacks_->consumer().set_before_queue([this](RecordBatch& b) { stacks_->sink().read_new_maps(b); });
            watch_pressure(*stacks_);
            lanes.push_back(&*stacks_);
        }
        drains_.emplace(io_, std::move(lanes));
        if (stacks_file && bpf_.unwind_rows_capacity()) unwind_ = value_or_throw(UnwindTables::open(bpf_));
        links_.emplace(io_, bpf_, holds_, unwind_.get());
        if (auto r = links_->attach_now(child.pid()); !r) throw FatalError("BPF attach failed: " + r.error().message());
        events_.sink().add_root_process(child.pid(), monotonic_ns());
        if (control_) control_->set_handlers(control_handlers());
    }

    // Runs until the command exits, a signal arrives or a client asks for shutdown.
    int run() {
        for_each_lane([](Lane& l) { l.consumer().start(); });
        pressure_.start();
        links_->start();
        if (control_) control_->start();
        exit_watch_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
            if (!ec) shutdown(Reason::CommandExited, 0, nullptr);
        });
        signals_.async_wait([this](boost::system::error_code ec, int sig) {
            if (!ec) shutdown(Reason::Signal, sig, nullptr);
        });
        guard_watch_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
            if (!ec) on_guard_died();
        });

        std::vector<std::thread> pool;
        for (unsigned i = 1; i < opt_.threads; ++i) pool.emplace_back([this] { io_.run(); });
        released_ns_ = monotonic_ns();
        auto released = child_.release();
        if (!released) {
            exec_error_ = released.error().err;
            shutdown(Reason::ExecFailed, 0, nullptr);
        }
        io_.run();
        for (auto& t : pool) t.join();
        const int status = finish();
        if (detacher_.joinable()) detacher_.join();
        return status;
    }

    ~TrackRun() {
        if (detacher_.joinable()) detacher_.join();
    }

    // Detaches the per-process probes (links closed in parallel); after run().
    void close_process_probes() {
        if (links_) links_->close_all();
    }

    bool exec_failed() const { return exec_error_ != 0; }
    int exec_error() const { return exec_error_; }

private:
    enum class Reason { CommandExited, Signal, ClientShutdown, ExecFailed };

    static const char* reason_name(Reason r) {
        switch (r) {
        case Reason::CommandExited: return "command exited";
        case Reason::Signal: return "signal";
        case Reason::ClientShutdown: return "client request";
        case Reason::ExecFailed: return "exec failed";
        }
        return "?";
    }

    RingConsumer::Options consumer_options(RingConsumer::Records records) const {
        return {records, opt_.chunk_records, std::chrono::microseconds(opt_.consumer_delay_us),
                std::chrono::milliseconds(10)};
    }

    void watch_pressure(Lane& lane) {
        pressure_.watch(&lane.ring());
        lane.consumer().set_chunk_observer([this](uint64_t, double fill) { pressure_.on_chunk(fill); });
    }

    template <typename Fn>
    void for_each_lane(Fn&& fn) {
        fn(events_);
        if (stacks_) fn(*stacks_);
    }

    // Once shutdown has begun the recording is over: nothing may turn it back on, drain what is
    // being closed or attach anything more.
    bool refuse_after_shutdown(const ControlHandlers::Reply& reply) {
        if (!shutting_down_.load()) return false;
        reply(Error{"memtrack is shutting down", {}, 0, {}});
        return true;
    }

    ControlHandlers control_handlers() {
        ControlHandlers h;
        h.set_recording = [this](bool on, ControlHandlers::Reply reply) {
            if (refuse_after_shutdown(reply)) return;
            bpf_.set_recording(on);
            reply(boost::json::object{{"recording", on}});
        };
        h.drain = [this](ControlHandlers::Reply reply) {
            if (refuse_after_shutdown(reply)) return;
            drains_->request([reply = std::move(reply)](Result<uint64_t> r) {
                if (!r) reply(r.error());
                else reply(boost::json::object{{"records", r.value()}});
            });
        };
        h.stats = [this] { return live_stats(); };
        h.attach = [this](int32_t pid, ControlHandlers::Reply reply) {
            if (refuse_after_shutdown(reply)) return;
            if (::kill(pid, 0) != 0) return reply(errno_error("attach", std::to_string(pid)));
            if (auto ok = check_attachable(pid, guard_.pid()); !ok) return reply(ok.error());
            try {
                // Tracked already (attached before, or one of the command's): nothing changes.
                if (!bpf_.track(pid)) return reply(boost::json::object{{"pid", pid}});
            } catch (const FatalError& e) {
                return reply(Error{"attach", std::to_string(pid), 0, e.what()});
            }
            events_.sink().add_root_process(pid, monotonic_ns());
            links_->attach(pid, [pid, reply = std::move(reply)](Result<void> r) {
                if (!r) reply(r.error());
                else reply(boost::json::object{{"pid", pid}});
            });
        };
        h.shutdown = [this](ControlHandlers::Reply reply) { shutdown(Reason::ClientShutdown, 0, std::move(reply)); };
        return h;
    }

    // --stats and the socket's `stats`: each owner's counters as of now, and the kernel's.
    boost::json::object live_stats() {
        RunCounters c;
        c.duration_ns = monotonic_ns() - started_ns_;
        c.ring_bytes = opt_.ring_size;
        c.events = events_.consumer().counters();
        c.writer = events_.sink().counters();
        if (stacks_) c.symbolizer = stacks_->sink().counters();
        c.drains = drains_->counters();
        c.links = links_->counters();
        c.holds = holds_.counts();
        c.pauses = holds_.pause_counters();
        c.kernel = read_kernel_counters(bpf_);
        c.unwind = read_unwind_counters(unwind_.get(), bpf_);
        c.shutdown = shutdown_counters_;
        return stats_json(c);
    }

    // Stop recording, read the ring to the producer position of now, finish the artifact,
    // resume every process we stopped, then let io_context run out of work.
    void shutdown(Reason why, int sig, ControlHandlers::Reply reply) {
        if (shutting_down_.exchange(true)) {
            if (reply) reply(Error{"shutdown", {}, 0, "already shutting down"});
            return;
        }
        reason_ = why;
        signal_ = sig;
        bpf_.set_recording(false);
        const uint64_t t0 = monotonic_ns();
        log::info("shutdown: {} at {:.1f} ms after release", reason_name(why), double(t0 - released_ns_) / 1e6);
        // When the command has exited, once every ring is read to its position of now the probes
        // have nothing left to give: detach them while the sinks finish. Closing the links is
        // mostly waiting for RCU grace periods (50-90 ms), which then overlaps the symbolizer's
        // last stacks instead of following them. Not on a signal or a client's request: the
        // command still runs, and freed of its traps it could finish before finish() passes
        // the signal on.
        const bool detach_early = why == Reason::CommandExited;
        drains_->close(
            [this, detach_early] {
                if (detach_early) start_detach();
            },
            [this, reply = std::move(reply)](Result<uint64_t> written) mutable {
                if (!written) record_write_error(written.error());
                pressure_.resume_all([this, reply = std::move(reply)]() mutable {
                    if (reply) {
                        if (auto e = write_error()) reply(Error{"shutdown", {}, 0, "artifact incomplete: " + e->message()});
                        else reply(boost::json::object{{"records", events_.sink().counters().written.get()}});
                    }
                    stop_all();
                });
            });
    }

    // The guard ends every pause should memtrack die; without it, a pause would outlive a
    // SIGKILLed memtrack. So memtrack pauses nobody from now on and records on: a ring that fills
    // drops records (counted, and the exit status says so), a new process may run before its probes.
    void on_guard_died() {
        holds_.stop_pausing();
        log::error("memtrack-guard died: no process is paused from now on, so records may be dropped");
    }

    void start_detach() {
        links_->detach_all();
        detacher_ = std::thread([this] {
            const uint64_t t0 = monotonic_ns();
            bpf_.detach();
            log::info("shutdown: probes detached in {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
        });
    }

    std::optional<Error> write_error() {
        std::lock_guard lock(error_mu_);
        return write_error_;
    }

    void record_write_error(const Error& e) {
        std::lock_guard lock(error_mu_);
        if (!write_error_) write_error_ = e;
    }

    void stop_all() {
        for_each_lane([](Lane& l) { l.consumer().stop(); });
        pressure_.stop();
        links_->stop();
        asio::post(io_, [this] {
            boost::system::error_code ec;
            exit_watch_.cancel(ec);
            exit_watch_.close(ec);
            guard_watch_.cancel(ec);
            guard_watch_.close(ec);
            signals_.cancel(ec);
            // Let the shutdown reply reach the client before the socket closes.
            if (control_) control_->stop();
        });
    }

    int finish() {
        // A last resume pass: nothing may stay stopped, whatever happened above.
        pressure_resume_remaining();
        auto stats = live_stats();
        bool stats_failed = false;
        if (!opt_.stats_file.empty()) {
            if (auto w = write_stats(boost::json::serialize(stats) + "\n"); !w) {
                log::error("--stats: {}", w.error().message());
                stats_failed = true;
            }
        }
        const uint64_t dropped = bpf_.counter(MT_COUNTER_DROPPED);

        int status = 0;
        switch (reason_) {
        case Reason::CommandExited: status = child_.wait_exit_status(); break;
        case Reason::ExecFailed: status = child_.wait_exit_status(); break;
        case Reason::ClientShutdown: status = 0; break;
        case Reason::Signal:
            ::kill(child_.pid(), signal_);
            status = wait_with_timeout(std::chrono::seconds(10)).value_or(128 + signal_);
            break;
        }
        if (write_error_) {
            log::error("artifact incomplete: {}", write_error_->message());
            if (status == 0) status = 1;
        }
        if (dropped > 0) {
            fmt::print(stderr, "dropped: {}\n", dropped);
            if (status == 0) status = 1;
        }
        if (stats_failed && status == 0) status = 1;
        return status;
    }

    // A FIFO's reader gets kStatsWaitMs to take the stats; memtrack's exit does not wait longer.
    static constexpr int kStatsWaitMs = 2000;

    Result<void> write_stats(const std::string& text) const {
        auto fd = open_output_file(opt_.stats_file);
        if (!fd) return fd.error();
        if (auto w = write_all_bounded(fd->get(), text, opt_.stats_file, kStatsWaitMs); !w) return w;
        if (::close(fd->release()) != 0) return errno_error("close", opt_.stats_file);
        return {};
    }

    void pressure_resume_remaining() {
        const FinalPass pass = holds_.close();
        shutdown_counters_.stopped_at_exit.set(pass.senders_left);
    }

    std::optional<int> wait_with_timeout(std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (auto s = child_.try_exit_status()) return s;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return std::nullopt;
    }

    asio::io_context& io_;
    const TrackOptions& opt_;
    BpfSession& bpf_;
    HeldChild& child_;
    Control* control_;
    const uint64_t started_ns_ = monotonic_ns();  // the stats' duration_s
    ShutdownCounters shutdown_counters_;
    HoldMaps hold_maps_;
    PidfdSignals hold_signals_;
    ProcessHolds holds_;  // before every actor that ends a pause
    SinkLane<Writer> events_;
    std::optional<SinkLane<Symbolizer>> stacks_;
    PressureControl pressure_;
    std::optional<DrainBarrier> drains_;
    std::unique_ptr<UnwindTables> unwind_;  // with stacks walked by CFI
    std::optional<ProcessLinks> links_;
    asio::posix::stream_descriptor exit_watch_;
    const StopGuard& guard_;
    asio::posix::stream_descriptor guard_watch_;  // memtrack-guard's pidfd: readable once it died
    asio::signal_set signals_;
    std::atomic<bool> shutting_down_{false};
    Reason reason_ = Reason::CommandExited;
    int signal_ = 0;
    int exec_error_ = 0;
    uint64_t released_ns_ = 0;  // when the command was let go to exec, for -v timings
    std::mutex error_mu_;
    std::optional<Error> write_error_;
    std::thread detacher_;  // closes the probes' links during shutdown (BpfSession::detach)
};

}  // namespace

int run_track(const TrackOptions& opt_in) {
    const uint64_t started_ns = monotonic_ns();
    TrackOptions opt = opt_in;
    if (opt.stats_file.empty())
        if (const char* env = std::getenv("MEMTRACK_STATS")) opt.stats_file = env;
    if (const char* env = std::getenv("MEMTRACK_NO_SUMMARY"); env && std::string_view(env) == "1") opt.summary = false;
    check_options(opt);
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
    if (!opt.socket.empty()) control = value_or_throw(Control::bind(io, opt.socket));

    auto child = value_or_throw(HeldChild::spawn(argv));
    // libdw asks DEBUGINFOD_URLS' servers for whatever debug info is missing: requests that name
    // the build-ids of the machine's files, from root, and a server that never answers stalls the
    // symbolizer (and the processes waiting on it) for its timeout. Only when asked. Dropped
    // after the fork: the command keeps its environment; no other thread runs yet.
    if (!opt.debuginfod) ::unsetenv("DEBUGINFOD_URLS");
    // Symbols for the files stacks will almost surely name, loaded beside the BPF load below.
    // After the fork: the child must not inherit a lock the loading thread holds.
    std::unique_ptr<Resolver> resolver;
    if (!opt.no_stacks) {
        resolver = std::make_unique<Resolver>();
        resolver->preload(likely_modules(opt, argv[0]));
    }
    std::unique_ptr<BpfSession> bpf;
    const uint64_t t0 = monotonic_ns();
    try {
        BpfConfig cfg;
        cfg.ring_bytes = opt.ring_size;
        cfg.stop_fill = opt.stop_fill;
        cfg.wakeup_fill = opt.wakeup_fill;
        cfg.libc_path = opt.libc_path;
        cfg.capture_stacks = !opt.no_stacks;
        cfg.place_probes = !opt.probe_at_entry;
        cfg.max_frames = opt.max_frames;
        cfg.unwind_cfi = opt.unwind == "cfi";
        cfg.unwind_rows = opt.unwind_rows;
        cfg.stack_ring_bytes = opt.stack_ring_size;
        cfg.libstdcxx_path = opt.libstdcxx_path;
        cfg.per_process_links = !opt.system_wide_probes;
        bpf = BpfSession::open_and_load(cfg);
        log::info("loaded at {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
        if (auto armed = guard.arm(bpf->holds_map_fd(), bpf->held_map_fd(), bpf->hold_words()); !armed)
            throw FatalError("stop guard: " + armed.error().message());
        bpf->attach_tracepoints();
        log::info("tracepoints at {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
        bpf->attach_allocator_probes();
        (void)bpf->track(child.pid());
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
    std::optional<ZstdFileWriter> stacks_file;
    if (!opt.no_stacks) {
        try {
            stacks_file.emplace(open_output(stacks_name(child.pid())));
        } catch (...) {
            dir.remove(artifact_name(child.pid()));  // no empty artifact left behind
            throw;
        }
    }

    std::optional<TrackRun> run;
    try {
        run.emplace(io, opt, *bpf, std::move(artifact), std::move(stacks_file), std::move(resolver), child,
                    control.get(), guard);
    } catch (...) {
        child.abandon();
        throw;
    }
    log::info("start-up took {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
    deferred.deliver();
    const int status = run->run();
    const uint64_t t1 = monotonic_ns();
    // Both done during shutdown already (detach_early); here for a run that never got that far.
    run->close_process_probes();
    bpf->detach();
    log::info("teardown took {:.1f} ms ({:.1f} ms since memtrack started)", double(monotonic_ns() - t1) / 1e6,
              double(monotonic_ns() - started_ns) / 1e6);
    if (run->exec_failed()) {
        dir.remove(artifact_name(child.pid()));  // no empty artifact for a command that never ran
        dir.remove(stacks_name(child.pid()));
        const int err = run->exec_error();
        log::error("cannot run {}: {}", argv[0], std::strerror(err));
        return err == ENOENT ? 127 : 126;
    }
    if (opt.summary) report::print_track_summary(artifact_path);
    return status;
}

}  // namespace memtrack
