#pragma once
// Owns the BPF object (skeleton), every link attached to it, and the shared .bss variables.
// Lifecycle as libbpf-tools does it: open, configure (rodata, ring size), load, attach.
// Apart: libbpf's log (LibbpfLog), the privilege check (BpfPrivileges), the counters' reads
// (BpfCounters), link closing (LinkCloser), the probe sites of each file (ProbeSiteCache), the
// shared links' registry (SharedLinks), the `tracked` map's writes (TrackedProcesses), and the
// run's one reading of each object file (ObjectFiles), which every stage shares.
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "core/Fd.hpp"
#include "probes/AllocatorProbes.hpp"
#include "probes/BpfCounters.hpp"
#include "probes/KernelFeatures.hpp"
#include "probes/LinkCloser.hpp"
#include "probes/ProbeSiteCache.hpp"
#include "probes/SharedLinks.hpp"
#include "probes/TrackedProcesses.hpp"
#include "symbols/MappedObjects.hpp"
#include "symbols/ObjectFiles.hpp"
#include "probes/UprobeMultiLink.hpp"

struct memtrack_bpf;

namespace memtrack {

struct ProgramRunStats {
    std::string name;
    uint64_t runs = 0, run_ns = 0;
};

// Made by bpf_config(TrackOptions) (cli/TrackOptions.hpp), the one route from the options to
// the session: the defaults are TrackOptions', so there are none here; bpf_config names every
// field (designated initializers: -Wmissing-field-initializers fails the build on one left out).
struct BpfConfig {
    uint64_t ring_bytes;
    double stop_fill;     // SIGSTOP the producer at or above this fill
    double wakeup_fill;   // below this fill, records do not wake the consumer
    bool capture_stacks;
    bool place_probes;  // ProbePlacement; off: every probe at its function's entry
    uint32_t max_frames;
    bool python_frames;  // CPython's frames in stacks (bpf/python_walk.h)
    bool time_parts;  // the return program times its parts (MT_COUNTER_PART_*)
    // The timeline's RSS records (src/bpf/rss.h): off, none; a record when a counter moves by
    // max(rss_granularity, 1/64 of it); 0: every change.
    bool record_rss;
    uint64_t rss_granularity;
    // Stacks walked by the CFI rows user space loads (UnwindTables); off: by frame pointer.
    bool unwind_cfi;
    uint32_t unwind_rows;  // rows for every object's table together (8 bytes each)
    uint64_t stack_ring_bytes;
    std::string libc_path;      // empty: the C library memtrack itself uses
    std::string libstdcxx_path; // empty: the C++ runtime memtrack itself uses
    // Allocator probes as links filtered to each tracked process (ProcessLinks), so other
    // processes on the machine do not trap; off, or on kernels without bpf_send_signal_task
    // (KernelFeatures), system-wide.
    bool per_process_links;
};

class BpfSession {
public:
    // Throws FatalError with a one-line reason: a required kernel feature missing (KernelFeatures),
    // the program the verifier refused and its last words, or libbpf's own message.
    // `files`: the run's one reading of each object file, shared with the stages outside the
    // session (the symbolizer); not null.
    static std::unique_ptr<BpfSession> open_and_load(const BpfConfig& cfg, std::shared_ptr<ObjectFiles> files);
    ~BpfSession();
    BpfSession(const BpfSession&) = delete;
    BpfSession& operator=(const BpfSession&) = delete;

    void attach_tracepoints();
    // Finds every probe site in the C library, the C++ runtime and the loader memtrack maps
    // (what a command maps at its start nearly always); throws when malloc or free cannot be
    // probed. Then, without per-process links, attaches the shared ones.
    void attach_allocator_probes();
    bool per_process_links() const { return per_process_; }
    const KernelFeatures& features() const { return features_; }
    const std::vector<ProbedObject>& startup_objects() const { return startup_; }
    // An object's probe sites, resolved once per file (device, inode) for every process; an
    // object that cannot be read has none (the error is logged once).
    ProbedObject object_probes(const MappedObject& object);
    // Every object file the run reads, each read once: the probe sites above, the unwind tables
    // and the Python runtimes take them from here (thread-safe).
    ObjectFiles& object_files() { return *files_; }
    // One object's links filtered to `pid` (0: every process mapping it).
    Result<std::vector<UprobeMultiLink>> attach_object(pid_t pid, const ProbedObject& o) const;
    // The links every process mapping an object traps on (SharedLinks); closed by detach().
    SharedLinks& shared_links() { return *shared_; }
    // Which processes are recorded, and through which links (the `tracked` map's writes).
    TrackedProcesses& tracked() { return *tracked_; }
    // pid's new image maps the loader: its exit says whether the loader's hook held it
    // (MT_COUNTER_LOADER_HOOKS_MISSED). Only while pid is held at its exec.
    Result<void> watch_loader_hook(pid_t pid);
    void set_recording(bool on);

    int events_ring_fd() const;
    int stacks_ring_fd() const;
    int spawns_ring_fd() const;
    // The pause protocol's maps (src/bpf/hold.h): the hold words (hold_words() of them), the
    // `held` index, and BPF's pauses-under-way counters in the mmapped .bss.
    // The CFI walker's maps (src/bpf/unwind.h): every object's rows, each process's mappings.
    int unwind_rows_fd() const;
    int unwind_procs_fd() const;
    int python_procs_fd() const;  // python_walk.h's python_procs
    int python_codes_fd() const;  // memtrack.bpf.c's python_codes
    uint32_t unwind_rows_capacity() const;
    int holds_map_fd() const;
    int held_map_fd() const;
    uint32_t hold_words() const { return hold_words_; }
    uint64_t* holds_outstanding();
    // The highest fill, in bytes, BPF saw the events (0) or stacks (1) ring at.
    uint64_t max_fill_bytes(int ring) const;
    uint64_t stop_bytes() const;  // the events ring's stop mark
    const BpfCounters& counters() const { return *counters_; }
    // Each loaded program's runs and run time as the kernel counts them (both 0 unless
    // kernel.bpf_stats_enabled was on while it ran).
    std::vector<ProgramRunStats> program_stats() const;
    // The one pool every link is closed by, the session's and each process's (ProcessLinks):
    // closes that wait at the same time share their RCU grace period.
    LinkCloser& closer() { return closer_; }
    // Detaches the session's probes now (the tracepoints' and the shared links) and waits for
    // every close queued on closer(), the processes' links too; maps stay readable.
    void detach();

private:
    BpfSession(const BpfConfig& cfg, std::shared_ptr<ObjectFiles> files) : cfg_(cfg), files_(std::move(files)) {}
    struct SkeletonDeleter {
        void operator()(memtrack_bpf* skel) const;
    };
    BpfConfig cfg_;
    std::unique_ptr<memtrack_bpf, SkeletonDeleter> skel_;
    std::vector<Fd> tracepoint_links_;  // each tracepoint link's fd (LinkCloser closes them)
    LinkCloser closer_;                 // closer(); before shared_, which hands it links
    std::optional<SharedLinks> shared_;  // once loaded
    std::optional<TrackedProcesses> tracked_;  // once loaded
    std::vector<ProbedObject> startup_;
    std::shared_ptr<ObjectFiles> files_;   // object_files(); never null
    std::optional<ProbeSiteCache> sites_;  // from the configuration, at open_and_load
    std::optional<BpfCounters> counters_;  // once loaded
    KernelFeatures features_;
    UprobeMechanism uprobes_ = UprobeMechanism::multi;
    bool per_process_ = false;
    uint32_t hold_words_ = 0;
};

}  // namespace memtrack
