#include "report/Analysis.hpp"

#include <algorithm>
#include <bit>

namespace memtrack::report {
namespace {

constexpr size_t slot(EventKind k) { return size_t(k) - size_t(EventKind::Malloc); }
// mmap's MAP_FAILED, should a failed call ever be recorded.
constexpr uint64_t kMapFailed = ~uint64_t(0);

// Whether the process was alive at some point of the window.
bool lived_in(const ProcessInfo& p, const WindowTotals& w) {
    return p.start_ns < w.end_ns && (p.end_ns == 0 || p.end_ns >= w.start_ns);
}

}  // namespace

Analyzer::Analyzer(const StackTable& stacks, FilterOptions filter, uint64_t temporary_threshold)
    : filter_(std::move(filter)), sites_(stacks, filter_), temporary_(temporary_threshold) {
    a_.temporary_threshold = temporary_threshold;
}

ProcessTotals& Analyzer::process(int32_t pid) {
    // Runs of events from one process are the rule: remember the last one looked up.
    if (last_process_ && last_process_->pid == pid) return *last_process_;
    auto [it, fresh] = processes_.try_emplace(pid);
    if (fresh) it->second.pid = pid;
    last_process_ = &it->second;  // valid until the next insertion, which replaces it
    return it->second;
}

void Analyzer::prefetch(const Event& e) const {
    if (e.addr != 0) live_.prefetch(BlockKey{e.pid, e.addr});
    if (e.old_addr && *e.old_addr != 0) live_.prefetch(BlockKey{e.pid, *e.old_addr});
    if (is_allocation(e.kind)) sites_.prefetch_index(e.stack_hash);
}

void Analyzer::prefetch_sites(const Event& e) {
    auto freed = [&](uint64_t addr) {
        if (addr == 0) return;
        if (const Block* b = live_.find(BlockKey{e.pid, addr})) sites_.prefetch_site(b->site);
    };
    if (e.kind == EventKind::Free) freed(e.addr);
    if (e.kind == EventKind::Realloc && e.old_addr) freed(*e.old_addr);
    if (is_allocation(e.kind)) sites_.prefetch(e.stack_hash);
}

void Analyzer::set_processes(ProcessModel model, std::optional<size_t> window) {
    std::vector<std::pair<int32_t, std::string>> commands;
    for (const auto& [pid, info] : model.processes) commands.emplace_back(pid, info.command);
    filter_.select_commands(commands);
    std::vector<WindowTotals> windows = windows_of(model.session);
    if (window) selected_ = windows.at(*window);
    windows_.emplace(std::move(windows));
    model_ = std::move(model);
    a_.has_timeline = true;
}

void Analyzer::end_processes_until(uint64_t time) {
    // --window: nothing after its end is its own. A block live then is leaked in it, whatever
    // its process does later (exit, exec, or running on): the window's leaked-in-window figure.
    if (selected_) time = std::min(time, selected_->end_ns);
    const auto& ends = model_->ends;
    const auto& rss = model_->rss;
    for (;;) {
        const bool end_next = next_end_ < ends.size() && ends[next_end_].time <= time;
        const bool rss_next = next_rss_ < rss.size() && rss[next_rss_].time <= time;
        const uint64_t bound = windows_->next_time();
        if (bound != UINT64_MAX && bound <= time && (!end_next || bound <= ends[next_end_].time) &&
            (!rss_next || bound <= rss[next_rss_].time)) {
            windows_->step(rss_sum_, temporary_.counts());
            continue;
        }
        if (!end_next && !rss_next) return;
        if (end_next && (!rss_next || ends[next_end_].time <= rss[next_rss_].time)) {
            const HeapEnd& end = ends[next_end_++];
            end_heap(end);
            if (!end.exec) {
                if (auto it = rss_now_.find(end.pid); it != rss_now_.end()) {
                    rss_sum_ -= it->second;
                    rss_now_.erase(it);
                }
            }
            continue;
        }
        const RssSample& s = rss[next_rss_++];
        if (!filter_.accepts_pid(s.pid)) continue;
        uint64_t& now = rss_now_[s.pid];
        rss_sum_ = rss_sum_ - now + s.bytes;
        now = s.bytes;
        a_.peak_rss_bytes = std::max(a_.peak_rss_bytes, rss_sum_);
        windows_->rss(rss_sum_);
        if (started_) rss_timeline_.add(s.time > a_.start_ns ? s.time - a_.start_ns : 0, rss_sum_);
    }
}

// The process's blocks leave the live heap: leaked at its exit, discarded at its exec. Every
// block of the process is looked at: a walk over the live map per exit or exec.
void Analyzer::end_heap(const HeapEnd& end) {
    std::vector<uint64_t> addrs;
    live_.for_each([&](const BlockKey& key, const Block&) {
        if (key.pid == end.pid) addrs.push_back(key.addr);
    });
    if (addrs.empty()) return;
    const uint64_t t = started_ && end.time > a_.start_ns ? end.time - a_.start_ns : 0;
    ProcessTotals& p = process(end.pid);
    for (uint64_t addr : addrs) {
        Block b;
        if (!take_live(live_.find(BlockKey{end.pid, addr}), b)) continue;
        --p.live_blocks;
        p.live_bytes -= b.size;
        if (site_timeline_)
            site_timeline_->released(b.site, end.pid, addr, b.size, t,
                                     end.exec ? SiteTimeline::Release::Exec : SiteTimeline::Release::Exit);
        if (end.exec) {
            windows_->released(b);  // not leaked in the window it was made in either
            ++p.exec_discarded_blocks;
            p.exec_discarded_bytes += b.size;
            ++a_.exec_discarded_blocks;
            a_.exec_discarded_bytes += b.size;
        } else {
            windows_->exited(b);
            SitePeak& exited = sites_.exited(b.site);
            ++exited.blocks;
            exited.bytes += b.size;
            ++p.leaked_blocks;
            p.leaked_bytes += b.size;
            ++a_.leaked_blocks;
            a_.leaked_bytes += b.size;
        }
    }
    timeline_.add(t, heap_bytes_);
}

void Analyzer::add(const Event& e) {
    if (!is_artifact_kind(e.kind)) return;
    if (!started_) {
        started_ = true;
        a_.start_ns = e.timestamp;
        if (selected_) {
            // --window: its bounds as --from/--to, which count from the first event.
            const auto since = [&](uint64_t t) { return t > a_.start_ns ? t - a_.start_ns : 0; };
            filter_.narrow(since(selected_->start_ns),
                           selected_->end_ns == UINT64_MAX ? UINT64_MAX : since(selected_->end_ns));
        }
    }
    if (model_) end_processes_until(e.timestamp);
    if (!filter_.accepts_pid(e.pid)) return;
    // Events a little out of order across CPUs may come before the first one.
    const uint64_t t = e.timestamp > a_.start_ns ? e.timestamp - a_.start_ns : 0;
    if (filter_.after_window(t)) return;
    const bool before = filter_.before_window(t);
    if (!before) {
        ++a_.events;
        a_.duration_ns = std::max(a_.duration_ns, t);
        KindTotals& k = a_.kinds[slot(e.kind)];
        ++k.count;
        if (e.kind != EventKind::Free) k.bytes += e.size;
        ++process(e.pid).events;
    }

    switch (e.kind) {
        case EventKind::Free:
            // free(NULL) releases nothing.
            if (e.addr != 0) release(e.pid, e.addr, /*temporary_candidate=*/true, t);
            break;
        case EventKind::Realloc:
            // A failed realloc returns NULL and leaves the old block alone.
            if (e.addr == 0) {
                if (!before) ++a_.failed_allocations;
                break;
            }
            if (e.old_addr && *e.old_addr != 0) release(e.pid, *e.old_addr, /*temporary_candidate=*/true, t);
            allocate(e, before ? UINT64_MAX : t);
            break;
        case EventKind::Malloc:
        case EventKind::Calloc:
        case EventKind::AlignedAlloc:
            if (e.addr == 0) {
                if (!before) ++a_.failed_allocations;
                break;
            }
            allocate(e, before ? UINT64_MAX : t);
            break;
        case EventKind::Mmap:
            if (!before) map(e);
            break;
        case EventKind::Munmap: unmap(e); break;
        default: break;
    }
}

// `t` is UINT64_MAX for an allocation before the time window: kept only so its free is known.
void Analyzer::allocate(const Event& e, uint64_t t) {
    const TemporaryDetector::Stamp stamp = temporary_.on_allocation(e.pid);
    uint32_t site = kIgnoredSite;
    if (t != UINT64_MAX) {
        site = filter_.accepts_size(e.size) ? sites_.site_for(e.stack_hash) : kIgnoredSite;
        if (site == kIgnoredSite) ++a_.filtered_out;
    }
    auto [block, fresh] = live_.try_emplace(BlockKey{e.pid, e.addr});
    if (!fresh) {
        // Still live at this address: its free was never seen. Let the new block take its place.
        if (t != UINT64_MAX && block->site != kIgnoredSite) ++a_.replaced_blocks;
        release(e.pid, e.addr, /*temporary_candidate=*/false, t == UINT64_MAX ? 0 : t);
        block = live_.try_emplace(BlockKey{e.pid, e.addr}).first;
    }
    *block = Block{e.size, site, stamp.thread, stamp.seq};
    if (site == kIgnoredSite) return;

    SiteCounters& s = sites_.counters(site);
    peak_.touch(s, sites_.peak(site));
    sites_.ran_in(site, s, e.pid);
    ++s.calls;
    s.bytes += e.size;
    ++s.live_blocks;
    s.live_bytes += e.size;
    if (e.stack_hash == 0)
        ++a_.without_stack;
    else if (s.no_frames)
        ++a_.stack_missing;

    ++a_.calls;
    a_.bytes += e.size;
    ++heap_blocks_;
    heap_bytes_ += e.size;
    ProcessTotals& p = process(e.pid);
    ++p.calls;
    p.bytes += e.size;
    ++p.live_blocks;
    p.live_bytes += e.size;
    p.peak_bytes = std::max(p.peak_bytes, p.live_bytes);
    SizeBucket& b = sizes_[std::bit_width(e.size)];
    ++b.calls;
    b.bytes += e.size;

    if (site_timeline_) {
        site_timeline_->allocated(site, e.pid, e.addr, e.size, t);
        if (heap_bytes_ > peak_.peak_bytes()) site_timeline_->peak();
    }
    peak_.update(heap_bytes_, heap_blocks_, t);
    timeline_.add(t, heap_bytes_);
    if (windows_) windows_->allocated(e.size);
}

SiteCounters* Analyzer::take_live(Block* live, Block& b) {
    b = *live;
    live_.erase(live);
    if (b.site == kIgnoredSite) return nullptr;
    SiteCounters& s = sites_.counters(b.site);
    peak_.touch(s, sites_.peak(b.site));
    --s.live_blocks;
    s.live_bytes -= b.size;
    --heap_blocks_;
    heap_bytes_ -= b.size;
    return &s;
}

void Analyzer::release(int32_t pid, uint64_t addr, bool temporary_candidate, uint64_t t) {
    Block* live = live_.find(BlockKey{pid, addr});
    if (!live) {
        if (!filter_.before_window(t)) ++a_.unknown_frees;
        return;
    }
    Block b;
    SiteCounters* const counted = take_live(live, b);
    const bool temporary = temporary_.release({b.thread, b.seq}) && temporary_candidate;
    if (!counted) return;
    SiteCounters& s = *counted;
    if (windows_) windows_->released(b);
    ++a_.frees;
    ProcessTotals& p = process(pid);
    --p.live_blocks;
    p.live_bytes -= b.size;
    if (temporary) {
        ++s.temporary_calls;
        s.temporary_bytes += b.size;
        ++a_.temporary_calls;
        a_.temporary_bytes += b.size;
    }
    if (site_timeline_)
        site_timeline_->released(b.site, pid, addr, b.size, t,
                                 temporary ? SiteTimeline::Release::Temporary : SiteTimeline::Release::Free);
    timeline_.add(t, heap_bytes_);
}

void Analyzer::map(const Event& e) {
    if (e.addr == 0 || e.addr == kMapFailed) return;
    auto [it, fresh] = mapped_.try_emplace(BlockKey{e.pid, e.addr}, e.size);
    if (!fresh) {
        // A new mapping at a recorded address replaced the old one (MAP_FIXED).
        a_.mapped_bytes -= it->second;
        it->second = e.size;
    }
    a_.mapped_bytes += e.size;
    a_.peak_mapped_bytes = std::max(a_.peak_mapped_bytes, a_.mapped_bytes);
}

void Analyzer::unmap(const Event& e) {
    // Exact address match only: a partial munmap of a mapping is not tracked.
    auto it = mapped_.find(BlockKey{e.pid, e.addr});
    if (it == mapped_.end()) return;
    a_.mapped_bytes -= it->second;
    mapped_.erase(it);
}

Analysis Analyzer::finish() && {
    if (model_) end_processes_until(UINT64_MAX);
    a_.from_ns = filter_.from_ns();
    peak_.finish(sites_);
    a_.peak_bytes = peak_.peak_bytes();
    a_.peak_blocks = peak_.peak_blocks();
    a_.peak_time_ns = peak_.peak_time_ns();

    if (model_) {
        if (selected_) {
            // Live at the window's end (end_processes_until went no further): leaked in it.
            a_.leaked_bytes += heap_bytes_;
            a_.leaked_blocks += heap_blocks_;
            for (auto& [pid, p] : processes_) {
                p.leaked_bytes += p.live_bytes;
                p.leaked_blocks += p.live_blocks;
                p.live_bytes = p.live_blocks = 0;  // leaked in it, not live at the end
            }
            a_.window = selected_->number;
        } else {
            // What is still live belongs to processes running at the end: not leaked.
            a_.live_at_end_bytes = heap_bytes_;
            a_.live_at_end_blocks = heap_blocks_;
        }
        for (const auto& [pid, info] : model_->processes) {
            if (!filter_.accepts_pid(pid)) continue;
            if (selected_ && !lived_in(info, *selected_)) {
                processes_.erase(pid);
                last_process_ = nullptr;
                continue;
            }
            process(pid).info = info;
            // The samples are to a granularity; a process's own mark at its exit is exact, but
            // it may have been reached outside a --window.
            if (!selected_) a_.peak_rss_bytes = std::max(a_.peak_rss_bytes, info.rss_peak);
        }
        a_.windows = std::move(*windows_).finish();
        if (selected_) {
            const uint32_t number = selected_->number;
            std::erase_if(a_.windows, [&](const WindowTotals& w) { return w.number != number; });
            a_.peak_rss_bytes = a_.windows.at(0).rss_peak_bytes;
        }
    } else {
        a_.leaked_bytes = heap_bytes_;
        a_.leaked_blocks = heap_blocks_;
        for (auto& [pid, p] : processes_) {
            p.leaked_bytes = p.live_bytes;
            p.leaked_blocks = p.live_blocks;
        }
    }
    for (auto& [pid, p] : processes_) {
        p.info.pid = pid;
        a_.processes.push_back(p);
    }
    std::sort(a_.processes.begin(), a_.processes.end(),
              [](const ProcessTotals& x, const ProcessTotals& y) { return x.pid < y.pid; });

    for (size_t i = 0; i < sizes_.size(); ++i) {
        if (sizes_[i].calls == 0) continue;
        SizeBucket b = sizes_[i];
        b.min = i == 0 ? 0 : uint64_t(1) << (i - 1);
        b.max = i == 0 ? 0 : i == 64 ? UINT64_MAX : (uint64_t(1) << i) - 1;
        a_.histogram.push_back(b);
    }
    a_.timeline = timeline_.points();
    a_.timeline_bucket_ns = timeline_.bucket_ns();
    a_.rss_timeline = rss_timeline_.points();
    a_.rss_timeline_bucket_ns = rss_timeline_.bucket_ns();
    a_.sites = sites_.sites();
    if (site_timeline_) a_.site_timeline = std::move(*site_timeline_).finish();
    return std::move(a_);
}

}  // namespace memtrack::report
