#include "actors/ProcessLinks.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include <boost/asio/post.hpp>

#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "probes/BpfSession.hpp"
#include "symbols/AddedCode.hpp"
#include "symbols/MappedObjects.hpp"
#include "bpf/hold.h"
#include "process/ProcessHolds.hpp"
#include "process/ProcessSignal.hpp"
#include "unwind/UnwindTables.hpp"

namespace memtrack {

namespace asio = boost::asio;

namespace {

// Spawn notices wake us at once (BPF_RB_FORCE_WAKEUP); the scan only finds notices the ring
// had no room for, so it can be slow.
constexpr auto kBackstop = std::chrono::milliseconds(50);

ring_buffer* open_spawns(int map_fd, ring_buffer_sample_fn fn, void* ctx) {
    ring_buffer* rb = ring_buffer__new(map_fd, fn, ctx, nullptr);
    if (!rb) throw FatalError(fmt::format("cannot read the spawns ring: {}", std::strerror(errno)));
    return rb;
}

// The loader names an object by the path it opened (a symlink, say); the Symbolizer's frames name
// it as /proc/PID/maps does, whichever way its mappings were learnt.
std::vector<Mapping> kernel_named(pid_t pid, std::vector<Mapping> code) {
    for (Mapping& m : code) {
        std::error_code ec;
        auto target = std::filesystem::read_symlink(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, m.start, m.end), ec);
        if (!ec) m.path = target.string();
    }
    return code;
}

// A failure because the process ended meanwhile (its pid or its /proc entries gone) is no error.
bool process_gone(const Error& e) { return e.err == ESRCH || e.err == ENOENT; }

// Logs what could not be done for pid (`what` of process pid), unless the process ended meanwhile.
void log_unless_gone(const Result<void>& r, const char* what, pid_t pid) {
    if (!r && !process_gone(r.error())) log::error("{} of process {}: {}", what, pid, r.error().message());
}

}  // namespace

ProcessLinks::ProcessLinks(asio::io_context& io, BpfSession& bpf, ProcessHolds& holds, UnwindTables* unwind,
                           AddedCode* added, PythonCode* python_code)
    : strand_(asio::make_strand(io)),
      bpf_(bpf),
      holds_(holds),
      unwind_(unwind),
      added_(added),
      python_(bpf.python_procs_fd(), bpf.object_files(), python_code),
      spawns_(open_spawns(bpf.spawns_ring_fd(), &ProcessLinks::on_spawn_record, this), ring_buffer__free),
      spawns_watch_(strand_, ::dup(ring_buffer__epoll_fd(spawns_.get()))),
      backstop_(strand_, kBackstop, [this] { scan_held(); }) {}

ProcessLinks::~ProcessLinks() { hand_all_links(); }

Result<void> ProcessLinks::attach_now(pid_t pid) { return attach_process(pid, 0, bpf_.startup_objects()); }

void ProcessLinks::attach(pid_t pid, std::function<void(Result<void>)> done) {
    asio::post(strand_, [this, pid, done = std::move(done)] {
        describe_unwind(pid);
        auto objects = discover(pid);
        done(objects ? attach_process(pid, 0, *objects) : Result<void>(objects.error()));
    });
}

Result<std::vector<ProbedObject>> ProcessLinks::discover(pid_t pid) {
    auto mapped = executable_objects(pid);
    if (!mapped) return mapped.error();
    std::vector<ProbedObject> out;
    for (const MappedObject& m : *mapped) {
        ProbedObject o = bpf_.object_probes(m);
        if (!o.probes->empty()) out.push_back(std::move(o));
    }
    return out;
}

// Its stacks are walked by frame pointer where this fails: logged, and counted by UnwindTables.
void ProcessLinks::describe_unwind(pid_t pid) {
    describe_python(pid);
    if (!unwind_) return;
    log_unless_gone(unwind_->describe(pid), "unwind tables", pid);
}

// Its Python frames are missing from its stacks where this fails: logged.
void ProcessLinks::describe_python(pid_t pid) {
    log_unless_gone(python_.describe(pid), "python runtime", pid);
}

void ProcessLinks::note_probed(pid_t pid, const ProbedObject& o) {
    if (!probed_.insert({o.object.dev, o.object.ino}).second) return;
    for (AllocatorKind k : o.probes->kinds) counters_.objects_by_kind[size_t(k)].add();
    log::info("process {}: probing {} ({}, {} probes)", pid, o.object.path, o.probes->kinds_text(),
              o.probes->entry.offsets.size());
}

Result<void> ProcessLinks::attach_process(pid_t pid, uint64_t start_boottime, const std::vector<ProbedObject>& objects) {
    if (processes_.count(pid)) return {};
    const uint64_t t0 = monotonic_ns();
    if (!bpf_.per_process_links() || processes_.size() >= kMaxOwnLinked) return use_shared(t0, objects);
    // The pidfd first: it pins the process we check, and tells us when it exits.
    Fd pidfd;
    if (start_boottime) {
        auto opened = open_same_process(pid, start_boottime);
        if (!opened) return opened.error();
        pidfd = std::move(opened).value();
        if (!pidfd.valid()) return Error{"attach probes", std::to_string(pid), ESRCH, "process gone"};
    } else {
        pidfd.reset(int(::syscall(SYS_pidfd_open, pid, 0)));
        if (!pidfd.valid()) return errno_error("pidfd_open", std::to_string(pid));
    }
    Process p;
    for (const ProbedObject& o : objects) {
        auto links = bpf_.attach_object(pid, o);
        if (!links) {
            bpf_.closer().close(std::move(p.links));
            log::error("probes of its own for process {}: {}; using the shared ones", pid, links.error().message());
            return use_shared(t0, objects);
        }
        for (auto& l : *links) p.links.push_back(std::move(l));
        p.objects.emplace(ObjectKey{o.object.dev, o.object.ino}, o);
    }
    if (auto r = bpf_.tracked().track_own(pid); !r) {
        // Still marked shared: the shared links serve it, its own would record it twice.
        bpf_.closer().close(std::move(p.links));
        log::error("probes of its own for process {}: {}; using the shared ones", pid, r.error().message());
        return use_shared(t0, objects);
    }
    for (const ProbedObject& o : objects) note_probed(pid, o);
    p.exit_watch = std::make_unique<ExitWatch>(strand_, std::move(pidfd), &counters_.exit_wakeups_early);
    p.exit_watch->async_wait([this, pid] { on_exit(pid); });
    processes_.emplace(pid, std::move(p));
    counters_.processes_probed.add();
    counters_.attach_ns.add(monotonic_ns() - t0);
    return {};
}

// The process keeps the `tracked` mark BPF gave it at fork (or track_shared() gave it): shared.
Result<void> ProcessLinks::use_shared(uint64_t t0, const std::vector<ProbedObject>& objects) {
    if (auto r = bpf_.shared_links().attach(bpf_.startup_objects()); !r) return r.error();
    for (const ProbedObject& o : objects) {
        if (auto r = bpf_.shared_links().attach(o); !r) return r.error();
        note_probed(0, o);
    }
    counters_.processes_shared.add();
    counters_.attach_ns.add(monotonic_ns() - t0);
    return {};
}

void ProcessLinks::start() {
    asio::post(strand_, [this] {
        arm_spawn_watch();
        backstop_.start();
    });
}

void ProcessLinks::stop() {
    asio::post(strand_, [this] {
        stopped_ = true;
        boost::system::error_code ec;
        spawns_watch_.cancel(ec);
        backstop_.stop();
        // Whoever is still held gets its probes now (or is released without them): nobody stays
        // stopped behind us.
        scan_held(true);
        for (auto& [pid, p] : processes_) p.exit_watch->cancel();
    });
}

void ProcessLinks::detach_all(Done then) {
    auto work = [this, then = std::move(then)] {
        hand_all_links();
        if (then) then();
    };
    if (strand_.get_inner_executor().context().stopped()) work();
    else asio::post(strand_, std::move(work));
}

void ProcessLinks::hand_all_links() {
    // Closing a uprobe link waits for an RCU grace period (~0.1 s here): BpfSession's closer
    // does it off the strand, on the one pool every link of the run is closed by.
    for (auto& [pid, p] : processes_) bpf_.closer().close(std::move(p.links));
    processes_.clear();
}

int ProcessLinks::on_spawn_record(void* ctx, void* data, size_t size) {
    if (size < sizeof(mt_spawn)) return 0;
    const auto* s = static_cast<const mt_spawn*>(data);
    static_cast<ProcessLinks*>(ctx)->pending_.push_back({s->pid, s->parent, s->hold, s->source, s->start_boottime});
    return 0;
}

void ProcessLinks::arm_spawn_watch() {
    spawns_watch_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
        if (ec || stopped_) return;
        on_spawns();
        arm_spawn_watch();
    });
}

void ProcessLinks::on_spawns() {
    pending_.clear();
    if (int n = ring_buffer__consume(spawns_.get()); n < 0)
        log::error("spawns ring: {}", std::strerror(-n));
    for (const Notice& n : pending_) {
        if (n.hold == MT_HOLD_MODULE) release_new_code(n.pid, n.source);
        else release_spawned(n.pid, n.start_boottime, n.parent);
    }
    pending_.clear();
}

// Processes the ring had no room to announce: still held for their probes. A new process whose
// release was asked already (its notice came) may still look held: it is not handled twice.
// A new-code hold is taken before its notice is sent, so one seen held may have its notice on
// the way: it is handled (without knowing its source: all its mappings read) only when a scan
// finds it held again and no notice came in between; `all`: now (stop()).
void ProcessLinks::scan_held(bool all) {
    // Notices already in the ring first: a hold is then handled knowing its source.
    on_spawns();
    const std::vector<uint32_t> held = holds_.held_for(MT_HOLD_SPAWN);
    std::erase_if(releasing_, [&](const auto& r) { return std::find(held.begin(), held.end(), r.first) == held.end(); });
    for (uint32_t pid : held)
        if (auto h = holds_.entry(pid); h && !releasing_.count({pid, h->start_boottime}))
            release_spawned(pid, h->start_boottime, 0);
    std::set<uint32_t> unannounced;
    for (uint32_t pid : holds_.held_for(MT_HOLD_MODULE)) {
        if (all || unannounced_.count(pid)) release_new_code(pid, 0);
        else unannounced.insert(pid);
    }
    unannounced_ = std::move(unannounced);
}

void ProcessLinks::release_spawned(uint32_t pid, uint64_t start_boottime, uint32_t parent) {
    if (!releasing_.emplace(pid, start_boottime).second) return;  // its notice and the scan both found it
    // A forked child maps what its parent maps: the parent's objects, without reading its maps.
    Result<void> r;
    if (auto it = processes_.find(pid_t(parent)); it != processes_.end()) {
        std::vector<ProbedObject> objects;
        for (const auto& [key, o] : it->second.objects) objects.push_back(o);
        r = attach_process(pid_t(pid), start_boottime, objects);
    } else if (auto objects = discover(pid_t(pid)); objects) {
        r = attach_process(pid_t(pid), start_boottime, *objects);
    } else {
        r = objects.error();
    }
    if (!r) {
        // It runs unrecorded rather than stays stopped; an exit in between is not an error.
        if (!process_gone(r.error())) {
            counters_.probe_errors.add();
            log::error("probes for new process {}: {}", pid, r.error().message());
        }
    }
    holds_.release(pid, MT_HOLD_SPAWN);
}

// The objects pid maps that are new in this image, each examined once (its probes looked up):
// nullopt for one seen before or without probes. Notes the loader's r_debug when it is the loader.
std::optional<ProbedObject> ProcessLinks::examine(const MappedObject& m, CodeState& st) {
    if (!st.known.insert({m.dev, m.ino}).second) return std::nullopt;
    counters_.code_objects_examined.add();
    ProbedObject o = bpf_.object_probes(m);
    if (o.probes->has(AllocatorKind::Loader) && o.probes->r_debug) st.r_debug = o.probes->r_debug;
    st.allocator = st.allocator || std::any_of(o.probes->kinds.begin(), o.probes->kinds.end(), allocates);
    if (o.probes->empty()) return std::nullopt;
    return o;
}

// Where the loader's list ends now, so the next hook reads only what follows (LoaderList). Left
// unset (every hook reads all mappings) when it cannot be followed.
void ProcessLinks::follow_loader(pid_t pid, CodeState& st) {
    st.list.reset();
    if (!st.r_debug) return;
    auto base = loader_base(pid);
    if (!base || *base == 0) return;
    auto list = LoaderList::at_end(pid, *base + *st.r_debug);
    if (!list) {
        if (list.error().err != ESRCH) log::info("process {}: the loader's list: {}", pid, list.error().message());
        return;
    }
    if (!*list) log::info("process {}: the loader's list cannot be followed: every hook reads all its mappings", pid);
    st.list = std::move(*list);
}

// New code in pid (held): the objects it maps that are new, from the loader's list when it can
// be followed from the last hook (O(new objects)), else from all its mappings; their unwind
// tables described.
Result<std::vector<ProbedObject>> ProcessLinks::new_code_objects(pid_t pid, uint32_t source, CodeState& st) {
    if (source == MT_CODE_LOADER && st.list) {
        auto added = st.list->added(pid);
        if (!added) return added.error();
        if (*added) {
            std::vector<ProbedObject> out;
            std::vector<Mapping> code;
            for (const AddedObject& a : **added) {
                // An object loaded again after an unload: probed already (links are on the
                // file), its new mappings described below.
                if (auto o = examine(a.object, st)) out.push_back(std::move(*o));
                code.insert(code.end(), a.code.begin(), a.code.end());
            }
            // Only what was added: a read of all of pid's mappings at each hook made N dlopens O(N^2).
            log_unless_gone(python_.describe_added(pid, code), "python runtime", pid);
            if (unwind_ && !code.empty()) log_unless_gone(unwind_->describe_added(pid, code), "unwind tables", pid);
            if (added_) added_->publish(pid, kernel_named(pid, std::move(code)));
            return out;
        }
        log::info("process {}: the loader's list cannot be followed from its last object: all its mappings read", pid);
    }
    counters_.code_full_scans.add();
    if (added_) added_->lose_track(pid);
    log::info("process {}: new code ({}): all its mappings read", pid, source == MT_CODE_EXEC ? "exec" : "loader");
    describe_unwind(pid);
    auto mapped = executable_objects(pid);
    if (!mapped) return mapped.error();
    std::vector<ProbedObject> out;
    for (const MappedObject& m : *mapped)
        if (auto o = examine(m, st)) out.push_back(std::move(*o));
    // At exec the loader has no list yet: the first hook reads all mappings and starts it. A hold
    // whose notice was lost (source 0) may have been an exec: the list is read again at the next hook.
    if (source == MT_CODE_LOADER) follow_loader(pid, st);
    else st.list.reset();
    return out;
}

// New code in pid (held): every object it now maps is probed before the process goes on.
void ProcessLinks::release_new_code(uint32_t pid, uint32_t source) {
    unannounced_.erase(pid);
    CodeState& st = code_[pid_t(pid)];
    if (source == MT_CODE_EXEC) st = CodeState{};
    if (source == MT_CODE_LOADER) ++st.loader_hooks;
    auto objects = new_code_objects(pid_t(pid), source, st);
    if (!objects) {
        if (!process_gone(objects.error())) {
            counters_.probe_errors.add();
            log::error("new code in process {}: {}", pid, objects.error().message());
        }
        // Where the loader's list was left is no longer trusted: the next hook reads all mappings.
        st.list.reset();
        holds_.release(pid, MT_HOLD_MODULE);
        return;
    }
    auto own = processes_.find(pid_t(pid));
    // A link names the task that led the process when it was made, and traps only in that
    // task's memory: after an exec from another thread (which took the pid of the main thread,
    // now gone) the old links trap nowhere, so every object gets new ones.
    const auto held = holds_.entry(pid);
    const bool thread_exec =
        held && held->thread_exec_since && held->thread_exec_since == held->since_ns[mt_hold_reason_index(MT_HOLD_MODULE)];
    if (own != processes_.end() && thread_exec) {
        // Closed here, before the release, not handed to the closer: an old link still runs
        // for the process's threads (it names the same thread group) wherever a new link's
        // breakpoint traps, and would record each call twice until it is gone.
        own->second.links.clear();
        own->second.objects.clear();
    }
    bool loader = false;
    for (const ProbedObject& o : *objects) {
        loader = loader || o.probes->has(AllocatorKind::Loader);
        Result<void> r;
        if (own == processes_.end()) {
            r = bpf_.shared_links().attach(o);
        } else if (!own->second.objects.count({o.object.dev, o.object.ino})) {
            auto links = bpf_.attach_object(pid_t(pid), o);
            if (links) {
                for (auto& l : *links) own->second.links.push_back(std::move(l));
                own->second.objects.emplace(ObjectKey{o.object.dev, o.object.ino}, o);
            } else {
                r = links.error();
            }
        }
        if (r) {
            note_probed(pid_t(pid), o);
        } else {
            counters_.probe_errors.add();
            log::error("probes for {} in process {}: {}", o.object.path, pid, r.error().message());
        }
    }
    // The loader's hook must hold the new image once its libraries are mapped: BPF says at its
    // exit if it never did (an error, not a silent miss). Only an executable the kernel mapped
    // the loader for (two objects at exec): the loader run as the program itself (ldd's
    // `ld.so --verify`) may end before any hook.
    if (source == MT_CODE_EXEC && loader && st.known.size() > 1) {
        if (auto r = bpf_.watch_loader_hook(pid_t(pid)); !r) {
            counters_.probe_errors.add();
            log::error("new code in process {}: {}", pid, r.error().message());
        }
    }
    // Whether the process has an allocator memtrack knows is settled once its start-up objects
    // are mapped: at exec for a static executable (no loader), at the loader's first hook that
    // holds otherwise (RT_CONSISTENT: the libraries are mapped).
    const bool settled = (source == MT_CODE_EXEC && !loader) || st.loader_hooks >= 1;
    if (settled && !st.allocator && !st.warned) {
        st.warned = true;
        counters_.processes_without_allocator.add();
        log::warn("process {} maps no allocator memtrack knows (a stripped static executable?): its "
                  "allocations are not recorded", pid);
    }
    holds_.release(pid, MT_HOLD_MODULE);
    // Needed by nothing the process runs: after the release.
    bpf_.object_files().close_released();
}

void ProcessLinks::on_exit(pid_t pid) {
    auto it = processes_.find(pid);
    if (it == processes_.end()) return;
    bpf_.closer().close(std::move(it->second.links));
    processes_.erase(it);
    code_.erase(pid);
    if (unwind_) unwind_->forget(pid);
    if (added_) added_->forget(pid);
    python_.forget(pid);
}

}  // namespace memtrack
