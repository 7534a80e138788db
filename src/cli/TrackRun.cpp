#include "cli/TrackRun.hpp"

#include <signal.h>
#include <unistd.h>

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
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "core/OutputFiles.hpp"
#include "core/Result.hpp"
#include "core/RunPhases.hpp"
#include "format/Timeline.hpp"
#include "format/ZstdFileWriter.hpp"
#include "process/ProcessCommand.hpp"
#include "probes/BpfSession.hpp"
#include "probes/CounterVerdict.hpp"
#include "process/AttachCheck.hpp"
#include "process/ChildLauncher.hpp"
#include "process/StopGuard.hpp"
#include "process/HoldMaps.hpp"
#include "process/ProcessHolds.hpp"
#include "process/ExitWatch.hpp"
#include "process/ProcessSignal.hpp"
#include "ring/RingView.hpp"
#include "symbols/Resolver.hpp"
#include "symbols/AddedCode.hpp"
#include "unwind/UnwindTables.hpp"

namespace memtrack {

namespace asio = boost::asio;

class TrackRun::Impl {
public:
    Impl(asio::io_context& io, const TrackOptions& opt, BpfSession& bpf, ZstdFileWriter artifact,
         ZstdFileWriter timeline, std::optional<ZstdFileWriter> stacks_file, std::unique_ptr<Resolver> resolver,
         std::shared_ptr<const CfiTableCache> unwind_cache, HeldChild& child, Control* control, const StopGuard& guard,
         uint64_t started_ns)
        : io_(io), opt_(opt), bpf_(bpf), child_(child), control_(control), phases_(started_ns),
          hold_maps_(value_or_throw(HoldMaps::open(bpf.holds_map_fd(), bpf.held_map_fd(), bpf.hold_words(),
                                                   bpf.holds_outstanding()))),
          holds_(io_, hold_maps_, hold_signals_, [&bpf](uint32_t i) { return bpf.counters().shown(i); }),
          events_(io, value_or_throw(RingView::map(bpf.events_ring_fd())), consumer_options(RingConsumer::Records::Events),
                  std::move(artifact), std::move(timeline)),
          pressure_(io_, holds_, WatermarkPolicy{opt.stop_fill, opt.resume_fill}),
          watch_strand_(asio::make_strand(io_)), exit_watch_(watch_strand_, Fd(::dup(child.pidfd()))), guard_(guard),
          guard_watch_(watch_strand_, Fd(::dup(guard.pidfd()))),
          signals_(io_, SIGINT, SIGTERM, SIGHUP) {
        watch_pressure(events_);
        std::vector<Lane*> lanes{&events_};
        if (stacks_file) {
            stacks_.emplace(io, value_or_throw(RingView::map(bpf.stacks_ring_fd())),
                            consumer_options(RingConsumer::Records::Stacks), std::move(*stacks_file), &holds_,
                            &added_code_, std::move(resolver), std::chrono::microseconds(opt.symbolize_delay_us));
            stacks_->consumer().set_before_queue([this](RecordBatch& b) { stacks_->sink().read_new_maps(b); });
            stacks_->sink().python_code().share_reads(bpf.python_codes_fd());
            watch_pressure(*stacks_);
            lanes.push_back(&*stacks_);
        }
        drains_.emplace(io_, std::move(lanes));
        if (stacks_file && bpf_.unwind_rows_capacity())
            unwind_ = value_or_throw(UnwindTables::open({bpf_.unwind_rows_fd(), bpf_.unwind_procs_fd(), bpf_.unwind_rows_capacity()},
                                                       std::move(unwind_cache), bpf_.object_files()));
        links_.emplace(io_, bpf_, holds_, unwind_.get(), stacks_ ? &added_code_ : nullptr,
                       stacks_ ? &stacks_->sink().python_code() : nullptr);
        if (auto r = links_->attach_now(child.pid()); !r) throw FatalError("BPF attach failed: " + r.error().message());
        events_.sink().add_root_process(timeline_event(TimelineEvent::Type::Start, child.pid()));
        if (control_) control_->set_handlers(control_handlers());
    }

    // Runs until the command exits, a signal arrives or a client asks for shutdown.
    int run() {
        for_each_lane([](Lane& l) { l.consumer().start(); });
        pressure_.start();
        holds_.start();
        links_->start();
        if (control_) control_->start();
        exit_watch_.async_wait([this] { shutdown(Reason::CommandExited, 0, nullptr); });
        signals_.async_wait([this](boost::system::error_code ec, int sig) {
            if (!ec) shutdown(Reason::Signal, sig, nullptr);
        });
        guard_watch_.async_wait([this] { on_guard_died(); });

        std::vector<std::thread> pool;
        for (unsigned i = 1; i < opt_.threads; ++i) pool.emplace_back([this] { io_.run(); });
        phases_.mark_released(monotonic_ns());
        log::info("start-up took {:.1f} ms", double(phases_.released_ns() - phases_.started_ns()) / 1e6);
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

    ~Impl() {
        if (detacher_.joinable()) detacher_.join();
    }

    // Detaches every probe, each process's and the session's, and waits for the closes; after
    // run(). Started during shutdown already when the command exited (start_detach).
    void detach_probes() {
        start_detach();
        if (detacher_.joinable()) detacher_.join();
    }

    bool exec_failed() const { return exec_error_ != 0; }
    const std::string& cut_short() const { return cut_short_; }
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

    static TimelineEvent timeline_event(TimelineEvent::Type type, int32_t pid = 0) {
        TimelineEvent e;
        e.type = type;
        e.time = monotonic_ns();
        e.pid = pid;
        return e;
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
            events_.sink().note(timeline_event(on ? TimelineEvent::Type::Enable : TimelineEvent::Type::Disable));
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
            auto tracked = bpf_.tracked().track_shared(pid);
            if (!tracked) return reply(tracked.error());
            // Tracked already (attached before, or one of the command's): nothing changes.
            if (!tracked.value()) return reply(boost::json::object{{"pid", pid}});
            TimelineEvent attached = timeline_event(TimelineEvent::Type::Attach, pid);
            ProcessCommand command = read_process_command(pid);
            attached.path = std::move(command.path);
            attached.argv = split_argv(command.args);
            events_.sink().add_root_process(std::move(attached));
            links_->attach(pid, [pid, reply = std::move(reply)](Result<void> r) {
                if (!r) reply(r.error());
                else reply(boost::json::object{{"pid", pid}});
            });
        };
        h.mark = [this](const std::string& name, ControlHandlers::Reply reply) {
            if (refuse_after_shutdown(reply)) return;
            TimelineEvent mark = timeline_event(TimelineEvent::Type::Mark);
            mark.name = name;
            events_.sink().note(std::move(mark));
            reply(boost::json::object{{"mark", name}});
        };
        h.shutdown = [this](ControlHandlers::Reply reply) { shutdown(Reason::ClientShutdown, 0, std::move(reply)); };
        return h;
    }

    // --stats and the socket's `stats`: each owner's counters as of now, and the kernel's.
    boost::json::object live_stats() {
        RunCounters c;
        const uint64_t now = monotonic_ns();
        c.duration_ns = now - started_ns_;
        c.phases = phases_.durations(now);
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
        c.objects = bpf_.object_files().counters();
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
        phases_.mark_shutdown(t0);
        log::info("shutdown: {} at {:.1f} ms after release", reason_name(why), double(t0 - phases_.released_ns()) / 1e6);
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

    // The one route that detaches probes, once: every process's links handed to the session's
    // closer (ProcessLinks::detach_all, on its strand while the io_context runs), then the
    // session's own closed and every close waited for (BpfSession::detach) on a thread of its
    // own, as closes wait for RCU grace periods.
    void start_detach() {
        if (detach_started_.exchange(true)) return;
        links_->detach_all([this] {
            detacher_ = std::thread([this] {
                const uint64_t t0 = monotonic_ns();
                bpf_.detach();
                log::info("shutdown: probes detached in {:.1f} ms", double(monotonic_ns() - t0) / 1e6);
            });
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
        holds_.stop();
        links_->stop();
        // On the watches' strand: a completion may be running on another pool thread.
        asio::post(watch_strand_, [this] {
            exit_watch_.cancel();
            guard_watch_.cancel();
        });
        asio::post(io_, [this] {
            boost::system::error_code ec;
            signals_.cancel(ec);
            // Let the shutdown reply reach the client before the socket closes.
            if (control_) control_->stop();
        });
    }

    int finish() {
        // A last resume pass: nothing may stay stopped, whatever happened above.
        pressure_resume_remaining();
        // The command's end first, so the stats can say whether a signal cut the recording short.
        std::optional<int> signalled_status;
        if (reason_ == Reason::Signal) {
            ::kill(child_.pid(), signal_);
            signalled_status = wait_with_timeout(std::chrono::seconds(10));
            shutdown_counters_.cut_short_by_signal.set(uint64_t(signal_));
            shutdown_counters_.command_running_at_exit.set(!signalled_status.has_value());
            const char* abbrev = sigabbrev_np(signal_);
            cut_short_ = fmt::format(
                "recording cut short by {}: {}", abbrev ? fmt::format("SIG{}", abbrev) : std::to_string(signal_),
                signalled_status
                    ? "what the command did after it is not recorded"
                    : fmt::format("the command (pid {}) ignored it and runs on, no longer recorded", child_.pid()));
        }
        // The teardown ends here: what follows is the exit's own (writing the stats, the probes'
        // detach when still under way, the summary).
        phases_.mark_finished(monotonic_ns());
        log::info("teardown took {:.1f} ms", double(phases_.durations(monotonic_ns()).teardown_ns) / 1e6);
        auto stats = live_stats();
        bool stats_failed = false;
        if (!opt_.stats_file.empty()) {
            if (auto w = write_stats(boost::json::serialize(stats) + "\n"); !w) {
                log::error("--stats: {}", w.error().message());
                stats_failed = true;
            }
        }

        int status = 0;
        switch (reason_) {
        case Reason::CommandExited: status = child_.wait_exit_status(); break;
        case Reason::ExecFailed: status = child_.wait_exit_status(); break;
        case Reason::ClientShutdown: status = 0; break;
        case Reason::Signal:
            // Non-zero even when the command exits 0 after handling the signal: the recording
            // did not see its end.
            status = signalled_status.value_or(128 + signal_);
            if (status == 0) status = 128 + signal_;
            break;
        }
        if (write_error_) {
            log::error("artifact incomplete: {}", write_error_->message());
            if (status == 0) status = 1;
        }
        // Drops, processes that ran unprobed, unreadable counters: said, and the run fails.
        const BpfCounters& counters = bpf_.counters();
        status = counters_exit_status(
            status, [&counters](uint32_t i) { return counters.read(i); }, counters.read_errors());
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
    RunPhases phases_;  // start-up, run and teardown: the stats' startup_ms, run_ms, teardown_ms
    const uint64_t started_ns_ = monotonic_ns();  // the stats' duration_s
    ShutdownCounters shutdown_counters_;
    HoldMaps hold_maps_;
    PidfdSignals hold_signals_;
    ProcessHolds holds_;  // before every actor that ends a pause
    AddedCode added_code_;  // ProcessLinks -> Symbolizer: what each dlopen added
    SinkLane<Writer> events_;
    std::optional<SinkLane<Symbolizer>> stacks_;
    PressureControl pressure_;
    std::optional<DrainBarrier> drains_;
    std::unique_ptr<UnwindTables> unwind_;  // with stacks walked by CFI
    std::optional<ProcessLinks> links_;
    Strand watch_strand_;  // the two exit watches': ExitWatch is not for concurrent use
    ExitWatch exit_watch_;
    const StopGuard& guard_;
    ExitWatch guard_watch_;  // memtrack-guard's exit
    asio::signal_set signals_;
    std::atomic<bool> shutting_down_{false};
    Reason reason_ = Reason::CommandExited;
    int signal_ = 0;
    int exec_error_ = 0;
    std::string cut_short_;  // finish(): why the recording ended before the command did; empty when it did not
    std::mutex error_mu_;
    std::optional<Error> write_error_;
    std::atomic<bool> detach_started_{false};  // start_detach()
    std::thread detacher_;  // closes the probes' links (BpfSession::detach); set by start_detach's route
};

TrackRun::TrackRun(asio::io_context& io, const TrackOptions& opt, BpfSession& bpf, ZstdFileWriter artifact,
                   ZstdFileWriter timeline, std::optional<ZstdFileWriter> stacks_file, std::unique_ptr<Resolver> resolver,
                   std::shared_ptr<const CfiTableCache> unwind_cache, HeldChild& child, Control* control,
                   const StopGuard& guard, uint64_t started_ns)
    : impl_(std::make_unique<Impl>(io, opt, bpf, std::move(artifact), std::move(timeline), std::move(stacks_file), std::move(resolver),
                                   std::move(unwind_cache), child, control, guard, started_ns)) {}
TrackRun::~TrackRun() = default;
int TrackRun::run() { return impl_->run(); }
void TrackRun::detach_probes() { impl_->detach_probes(); }
bool TrackRun::exec_failed() const { return impl_->exec_failed(); }
int TrackRun::exec_error() const { return impl_->exec_error(); }
const std::string& TrackRun::cut_short() const { return impl_->cut_short(); }

}  // namespace memtrack
