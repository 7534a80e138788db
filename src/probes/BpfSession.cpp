#include "probes/BpfSession.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <optional>
#include <fstream>
#include <mutex>

#include "core/Log.hpp"
#include "core/Result.hpp"
#include "memtrack.bpf.skel.h"
#include "bpf/record.h"
#include "bpf/hold.h"
#include "bpf/unwind.h"
#include "probes/AllocatorProbes.hpp"
#include "probes/LibbpfLog.hpp"

namespace memtrack {
namespace {

// Hold words for every pid the kernel may hand out (pid_max), in whole pages of
// MT_HOLD_WORDS_PER_PAGE: the `holds` map's max_entries is this / MT_HOLD_WORDS_PER_PAGE.
uint32_t hold_words_for_pid_max() {
    uint64_t pid_max = 4194304;  // the kernel's ceiling, when /proc does not say
    std::ifstream f("/proc/sys/kernel/pid_max");
    if (uint64_t v = 0; f >> v && v > 0 && v <= pid_max) pid_max = v;
    const uint64_t pages = (pid_max + MT_HOLD_WORDS_PER_PAGE - 1) / MT_HOLD_WORDS_PER_PAGE;
    return uint32_t(pages * MT_HOLD_WORDS_PER_PAGE);
}

}  // namespace

std::unique_ptr<BpfSession> BpfSession::open_and_load(const BpfConfig& cfg, std::shared_ptr<ObjectFiles> files) {
    capture_libbpf_log();
    // The configuration was checked with the other options, before anything was created
    // (check_options in TrackCommand.cpp).
    std::unique_ptr<BpfSession> s(new BpfSession(cfg, std::move(files)));
    s->sites_.emplace(cfg.place_probes, *s->files_);
    s->features_ = KernelFeatures::probe();
    if (const KernelFeature* f = s->features_.missing())
        throw FatalError(fmt::format("this kernel ({}) lacks {} (Linux {}+): memtrack needs Linux {} or later",
                                     s->features_.release, f->name, f->since, KernelFeatures::kMinimumKernel));
    s->uprobes_ = s->features_.uprobe_multi.present ? UprobeMechanism::multi : UprobeMechanism::perf_event;
    s->skel_.reset(memtrack_bpf__open());
    if (!s->skel_) fail_bpf("open", errno);

    if (bpf_map__set_max_entries(s->skel_->maps.events, uint32_t(cfg.ring_bytes)) != 0)
        fail_bpf("ring resize", errno);
    if (bpf_map__set_max_entries(s->skel_->maps.stacks, uint32_t(cfg.stack_ring_bytes)) != 0)
        fail_bpf("stack ring resize", errno);
    auto watermark = [&](uint64_t ring) { return cfg.stop_fill >= 1.0 ? ~0ull : uint64_t(cfg.stop_fill * double(ring)); };
    s->skel_->rodata->stop_bytes = watermark(cfg.ring_bytes);
    s->skel_->rodata->stack_stop_bytes = watermark(cfg.stack_ring_bytes);
    s->skel_->rodata->capture_stacks = cfg.capture_stacks;
    s->skel_->rodata->max_frames = cfg.max_frames;
    s->skel_->rodata->time_parts = cfg.time_parts;
    s->skel_->rodata->python_frames = cfg.python_frames;
    s->skel_->rodata->record_rss = cfg.record_rss;
    s->skel_->rodata->rss_granularity = cfg.rss_granularity;
    const bool cfi = cfg.capture_stacks && cfg.unwind_cfi;
    s->skel_->rodata->unwind_cfi = cfi;
    if (bpf_map__set_max_entries(s->skel_->maps.unwind_rows, cfi ? cfg.unwind_rows : 1) != 0)
        fail_bpf("unwind rows resize", errno);
    const int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) fail_bpf("count CPUs", -cpus);
    if (bpf_map__set_max_entries(s->skel_->maps.row_cache, cfi ? uint32_t(cpus) * MT_ROW_CACHE_SLOTS : 1) != 0)
        fail_bpf("row cache resize", errno);
    s->skel_->rodata->wakeup_bytes = uint64_t(cfg.wakeup_fill * double(cfg.ring_bytes));
    s->skel_->rodata->stack_wakeup_bytes = uint64_t(cfg.wakeup_fill * double(cfg.stack_ring_bytes));
    // A new process is held until its own probes exist by bpf_send_signal_task (on_fork).
    s->per_process_ = cfg.per_process_links && s->features_.send_signal_task.present;
    if (cfg.per_process_links && !s->per_process_)
        log::info("no {}: {}", s->features_.send_signal_task.name, s->features_.send_signal_task.without);
    s->skel_->rodata->per_process_links = s->per_process_;
    s->skel_->rodata->signal_task = s->features_.send_signal_task.present;
    s->hold_words_ = hold_words_for_pid_max();
    if (bpf_map__set_max_entries(s->skel_->maps.holds, s->hold_words_ / MT_HOLD_WORDS_PER_PAGE) != 0)
        fail_bpf("holds resize", errno);
    // One program serves every allocator entry (and one every return), through uprobe_multi
    // links where the kernel has them, else perf-event uprobes (the section's default).
    if (s->uprobes_ == UprobeMechanism::multi)
        for (bpf_program* p : {s->skel_->progs.alloc_entry, s->skel_->progs.alloc_return})
            bpf_program__set_expected_attach_type(p, bpf_attach_type(kAttachTypeUprobeMulti));

    bpf_program__set_autoattach(s->skel_->progs.find_pidns, false);

    if (int err = memtrack_bpf__load(s->skel_.get()); err != 0) fail_bpf_load(err);
    // Before anything is attached: from here on BPF speaks in pids of memtrack's namespace.
    LIBBPF_OPTS(bpf_test_run_opts, run);
    if (int err = bpf_prog_test_run_opts(bpf_program__fd(s->skel_->progs.find_pidns), &run); err != 0)
        fail_bpf("find pid namespace", err);
    if (run.retval != 0) throw FatalError("BPF: memtrack's pid namespace is deeper than the kernel allows");
    s->counters_.emplace(bpf_map__fd(s->skel_->maps.counters));
    s->tracked_.emplace(bpf_map__fd(s->skel_->maps.tracked));
    BpfSession* session = s.get();
    s->shared_.emplace([session](const ProbedObject& o) { return session->attach_object(0, o); }, s->closer_);
    return s;
}

void BpfSession::SkeletonDeleter::operator()(memtrack_bpf* skel) const { memtrack_bpf__destroy(skel); }

BpfSession::~BpfSession() { detach(); }

void BpfSession::detach() {
    // Each close waits for an RCU grace period in the kernel; the closer's threads overlap them.
    if (shared_) shared_->detach();
    closer_.close(std::move(tracepoint_links_));
    tracepoint_links_.clear();
    closer_.wait_idle();
}

void BpfSession::attach_tracepoints() {
    // A tracepoint calls its programs in the order they were attached: on_exit_rss must see the
    // exiting process before on_exit forgets it.
    std::vector<bpf_program*> progs = {skel_->progs.on_fork,   skel_->progs.on_exec,   skel_->progs.on_exit_rss,
                                       skel_->progs.on_exit,   skel_->progs.on_signal, skel_->progs.on_signal_deliver,
                                       skel_->progs.on_rss};
    // A new child held before it ran stops itself on its way back to user space: only where new
    // children are held (their own links). It runs at every return after a switch on the machine.
    if (per_process_) progs.push_back(skel_->progs.on_rseq_update);
    for (bpf_program* p : progs) {
        bpf_link* l = bpf_program__attach(p);
        if (!l) fail_bpf(fmt::format("attach {}", bpf_program__name(p)), errno);
        // A tp_btf link is its fd: taken over, and libbpf's handle freed without closing it.
        tracepoint_links_.emplace_back(bpf_link__fd(l));
        bpf_link__disconnect(l);
        bpf_link__destroy(l);
    }
}

void BpfSession::attach_allocator_probes() {
    const std::string libc = cfg_.libc_path.empty() ? loaded_library_path("libc.so") : cfg_.libc_path;
    const std::string libstdcxx =
        cfg_.libstdcxx_path.empty() ? loaded_library_path("libstdc++.so") : cfg_.libstdcxx_path;
    if (libc.empty()) throw FatalError("cannot find the C library to probe");
    // Resolve everything before attaching anything: once malloc is probed, each of memtrack's
    // own allocations pays a trap. The loader is memtrack's own: a command's is the same file
    // nearly always, and exec discovers it otherwise.
    startup_.clear();
    for (const std::string& path : {libc, libstdcxx, loaded_library_path("ld-linux")}) {
        if (path.empty()) continue;  // optional library not loaded: nothing to probe
        struct stat st{};
        if (::stat(path.c_str(), &st) != 0) {
            if (path == libc) throw FatalError(errno_error("stat", path));
            log::error("skipping {}: {}", path, std::strerror(errno));
            continue;
        }
        auto probes = object_probes({path, uint64_t(st.st_dev), uint64_t(st.st_ino)});
        if (path == libc && !std::any_of(probes.probes->kinds.begin(), probes.probes->kinds.end(), allocates))
            throw FatalError(fmt::format("cannot probe malloc and free in {}", path));
        if (!probes.probes->empty()) startup_.push_back(std::move(probes));
    }
    if (per_process_) return;
    if (auto r = shared_->attach(startup_); !r) throw FatalError("BPF attach failed: " + r.error().message());
}

ProbedObject BpfSession::object_probes(const MappedObject& object) { return sites_->get(object); }

Result<std::vector<UprobeMultiLink>> BpfSession::attach_object(pid_t pid, const ProbedObject& o) const {
    std::vector<UprobeMultiLink> links;
    const std::pair<bpf_program*, const UprobeMultiSpec*> parts[] = {
        {skel_->progs.alloc_entry, &o.probes->entry}, {skel_->progs.alloc_return, &o.probes->ret}};
    for (const auto& [prog, spec] : parts) {
        if (spec->offsets.empty()) continue;
        UprobeMultiSpec filtered = *spec;
        filtered.path = o.object.path;  // as this process maps it
        filtered.pid = pid;
        if (pid != 0)
            for (uint64_t& cookie : filtered.cookies) cookie |= MT_COOKIE_OWN_LINK;
        auto link = UprobeMultiLink::attach(bpf_program__fd(prog), filtered, uprobes_);
        if (!link) return link.error();
        links.push_back(std::move(link).value());
    }
    return links;
}

Result<void> BpfSession::watch_loader_hook(pid_t pid) {
    const uint32_t key = uint32_t(pid), bits = MT_EXEC_WATCH_LOADER;
    if (bpf_map__update_elem(skel_->maps.exec_watch, &key, sizeof(key), &bits, sizeof(bits), BPF_ANY) != 0)
        return errno_error("watch the loader's hook of", std::to_string(pid));
    return {};
}

void BpfSession::set_recording(bool on) {
    std::atomic_ref<uint32_t>(skel_->bss->recording).store(on ? 1 : 0, std::memory_order_seq_cst);
}

int BpfSession::events_ring_fd() const { return bpf_map__fd(skel_->maps.events); }
int BpfSession::stacks_ring_fd() const { return bpf_map__fd(skel_->maps.stacks); }
int BpfSession::unwind_rows_fd() const { return bpf_map__fd(skel_->maps.unwind_rows); }
int BpfSession::unwind_procs_fd() const { return bpf_map__fd(skel_->maps.unwind_procs); }
int BpfSession::python_procs_fd() const { return bpf_map__fd(skel_->maps.python_procs); }
int BpfSession::python_codes_fd() const { return bpf_map__fd(skel_->maps.python_codes); }
uint32_t BpfSession::unwind_rows_capacity() const {
    return skel_->rodata->unwind_cfi ? bpf_map__max_entries(skel_->maps.unwind_rows) : 0;
}
int BpfSession::holds_map_fd() const { return bpf_map__fd(skel_->maps.holds); }
int BpfSession::held_map_fd() const { return bpf_map__fd(skel_->maps.held); }
int BpfSession::spawns_ring_fd() const { return bpf_map__fd(skel_->maps.spawns); }
uint64_t* BpfSession::holds_outstanding() {
    // Declared `unsigned long` in BPF so the skeleton's type is uint64_t's on this ABI.
    static_assert(sizeof(skel_->bss->holds_outstanding[0]) == sizeof(uint64_t));
    return reinterpret_cast<uint64_t*>(skel_->bss->holds_outstanding);
}

uint64_t BpfSession::stop_bytes() const { return skel_->rodata->stop_bytes; }

uint64_t BpfSession::max_fill_bytes(int ring) const {
    return std::atomic_ref<unsigned long>(skel_->bss->max_fill_bytes[ring & 1]).load(std::memory_order_relaxed);
}

std::vector<ProgramRunStats> BpfSession::program_stats() const {
    std::vector<ProgramRunStats> out;
    bpf_program* prog = nullptr;
    bpf_object__for_each_program(prog, skel_->obj) {
        const int fd = bpf_program__fd(prog);
        if (fd < 0) continue;  // not loaded (autoload off)
        bpf_prog_info info{};
        uint32_t len = sizeof(info);
        ProgramRunStats p{bpf_program__name(prog)};
        if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
            p.runs = info.run_cnt;
            p.run_ns = info.run_time_ns;
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace memtrack
