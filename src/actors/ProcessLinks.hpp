#pragma once
// Owns: the allocator probe links of each tracked process (shared ones only with
// --system-wide-probes or before Linux 6.13), the spawns ring,
// the SPAWN pauses (a new process runs once its probes are decided and attached) and the MODULE
// pauses (new code, at exec and at the loader's hook, runs once the objects it maps are probed).
// Accepts: attach(pid, done) for a root process, spawn and new-code notices (ring), exits
// (pidfds), stop(); from any thread: counters().
//
// Allocator discovery happens here: each object a process maps executable is classified by the
// symbols it defines (AllocatorCatalog, resolved once per file by BpfSession::object_probes) and
// gets links of the process's own (or shared links) before the process runs its code.
//
// Each trap runs every link's filter on that probe, so the cost of a trap grows with the number
// of processes that have links of their own (measured: ~47 ns per link per trap; 50 live
// processes made a malloc+free pair 7 us dearer). Past kMaxOwnLinked live processes, new ones
// are served by the shared links instead, attached then, which trap in every process.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "probes/PythonProcs.hpp"

#include "actors/ActorCounters.hpp"
#include "actors/Messages.hpp"
#include "core/Backstop.hpp"
#include "core/Result.hpp"
#include "probes/BpfSession.hpp"
#include "probes/LinkCloser.hpp"
#include "probes/LoaderList.hpp"
#include "probes/UprobeMultiLink.hpp"
#include "process/ExitWatch.hpp"

struct ring_buffer;

namespace memtrack {

class AddedCode;
class BpfSession;
class ProcessHolds;
class UnwindTables;

class ProcessLinks {
public:
    static constexpr size_t kMaxOwnLinked = 4;

    // unwind: the CFI walker's tables, described for each process before it runs new code (null: none).
    // added: where the code each loader hook added is published for the Symbolizer (null: none).
    // python_code: told the layouts CPython runtimes publish, for naming frames (null: none).
    ProcessLinks(boost::asio::io_context& io, BpfSession& bpf, ProcessHolds& holds, UnwindTables* unwind,
                 AddedCode* added = nullptr, PythonCode* python_code = nullptr);
    ~ProcessLinks();

    // Attaches pid's probes now, from the caller's thread: only before the io_context runs (the
    // command, still held by its launcher).
    Result<void> attach_now(pid_t pid);
    // Attaches pid's probes on the strand (the socket's `attach`).
    void attach(pid_t pid, std::function<void(Result<void>)> done);
    void start();
    // Stops watching for spawns; links stay until detach_all().
    void stop();
    // The one route that detaches every process's probes: their links handed to BpfSession's
    // closer (which closes them in parallel; BpfSession::detach waits for it), then `then`. On
    // the strand while the io_context runs; once it has stopped (after run()), at once.
    void detach_all(Done then);
    LinkCounters counters() const { return counters_; }

private:
    // Hands every process's links to BpfSession's closer (detach_all, and the destructor).
    void hand_all_links();
    using ObjectKey = std::pair<uint64_t, uint64_t>;  // (dev, ino)
    struct Process {
        std::vector<UprobeMultiLink> links;
        std::unique_ptr<ExitWatch> exit_watch;      // on its pidfd
        std::map<ObjectKey, ProbedObject> objects;  // probed, with links
    };
    // What the new-code notices of one process said since its last exec.
    // Reset at exec.
    struct CodeState {
        unsigned loader_hooks = 0;
        bool allocator = false;   // an object seen defines an allocator memtrack knows
        bool warned = false;
        std::set<ObjectKey> known;          // objects examined in this image
        std::optional<uint64_t> r_debug;    // the loader's r_debug, as a vaddr of the loader
        std::optional<LoaderList> list;     // where the loader's list was last read up to
    };
    struct Notice {
        uint32_t pid, parent, hold, source;
        uint64_t start_boottime;
    };

    // Touched only on strand_ (or before the io_context runs).
    Result<void> attach_process(pid_t pid, uint64_t start_boottime, const std::vector<ProbedObject>& objects);
    Result<void> use_shared(uint64_t t0, const std::vector<ProbedObject>& objects);
    Result<std::vector<ProbedObject>> discover(pid_t pid);
    Result<std::vector<ProbedObject>> new_code_objects(pid_t pid, uint32_t source, CodeState& st);
    std::optional<ProbedObject> examine(const MappedObject& m, CodeState& st);
    void follow_loader(pid_t pid, CodeState& st);
    void note_probed(pid_t pid, const ProbedObject& o);
    void describe_unwind(pid_t pid);
    void describe_python(pid_t pid);
    void on_spawns();
    void release_spawned(uint32_t pid, uint64_t start_boottime, uint32_t parent);
    void release_new_code(uint32_t pid, uint32_t source);
    void scan_held(bool all = false);
    void arm_spawn_watch();
    void on_exit(pid_t pid);
    static int on_spawn_record(void* ctx, void* data, size_t size);

    Strand strand_;
    BpfSession& bpf_;
    ProcessHolds& holds_;
    LinkCounters counters_;
    UnwindTables* unwind_;
    AddedCode* added_;
    PythonProcs python_;
    std::unique_ptr<ring_buffer, void (*)(ring_buffer*)> spawns_;
    boost::asio::posix::stream_descriptor spawns_watch_;
    Backstop backstop_;  // a scan of the held index, for notices the spawns ring had no room for
    std::vector<Notice> pending_;  // notices read, not yet handled
    std::map<pid_t, Process> processes_;
    // New processes whose spawn release was asked, until they no longer look held: the ring's
    // notice and the backstop scan may both find one before ProcessHolds has released it.
    std::set<std::pair<uint32_t, uint64_t>> releasing_;
    std::map<pid_t, CodeState> code_;
    std::set<uint32_t> unannounced_;  // held for new code at the last scan, no notice yet
    std::set<ObjectKey> probed_;  // objects probed in some process (stats, -v)
    bool stopped_ = false;
};

}  // namespace memtrack
