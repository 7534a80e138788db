#pragma once
// One tracked run, wired: the lanes (rings, consumers, Writer, Symbolizer), pressure control,
// the drain barrier, per-process probes, pauses, the control handlers and the shutdown sequence
// (every route to the end: the command's exit, a signal, a client's request, a failed exec).
// `memtrack track`'s start-up (TrackCommand.cpp) makes what it needs, then hands it over here.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "cli/TrackOptions.hpp"
#include "format/ZstdFileWriter.hpp"

namespace memtrack {

class BpfSession;
class CfiTableCache;
class Control;
class HeldChild;
class Resolver;
class StopGuard;

class TrackRun {
public:
    // started_ns: when `memtrack track` started (monotonic_ns): where the stats' startup_ms begins.
    TrackRun(boost::asio::io_context& io, const TrackOptions& opt, BpfSession& bpf, ZstdFileWriter artifact,
             ZstdFileWriter timeline, std::optional<ZstdFileWriter> stacks_file, std::unique_ptr<Resolver> resolver,
             std::shared_ptr<const CfiTableCache> unwind_cache, HeldChild& child, Control* control,
             const StopGuard& guard, uint64_t started_ns);
    ~TrackRun();
    TrackRun(const TrackRun&) = delete;
    TrackRun& operator=(const TrackRun&) = delete;

    // Runs until the command exits, a signal arrives or a client asks for shutdown: the exit status.
    int run();
    // Detaches every probe (each process's links and the session's) and waits; after run().
    void detach_probes();
    bool exec_failed() const;
    int exec_error() const;
    // After run(): one line saying that a signal ended the recording before the command ended,
    // and whether the command still runs; empty when the recording saw the command's end.
    const std::string& cut_short() const;

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack
