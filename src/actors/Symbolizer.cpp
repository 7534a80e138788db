#include "actors/Symbolizer.hpp"

#include <algorithm>
#include <thread>
#include <utility>
#include <unordered_set>

#include "bpf/hold.h"
#include "process/ProcessHolds.hpp"
#include "bpf/python.h"
#include "bpf/record.h"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "ring/RingView.hpp"
#include "symbols/AddedCode.hpp"

namespace memtrack {

Symbolizer::Symbolizer(boost::asio::io_context& io, BatchQueue& in, ZstdFileWriter stacks_file, ProcessHolds* holds,
                       AddedCode* added, std::unique_ptr<Resolver> resolver,
                       std::chrono::microseconds delay_per_stack)
    : BatchSink(io, in), file_(std::move(stacks_file)), holds_(holds), added_(added),
      resolver_(resolver ? std::move(resolver) : std::make_unique<Resolver>()), delay_per_stack_(delay_per_stack) {}

Result<void> Symbolizer::finish_file() {
    // Every stack is written: a module still preloading is needed by none. Ends now, while the
    // probes detach, rather than when the Resolver is destroyed on memtrack's way out.
    resolver_->stop_preloading();
    return file_.finish();
}

void Symbolizer::read_new_maps(RecordBatch& b) {
    for (StackSample& s : b.stacks) {
        if (s.flags & MT_STACK_NEW_MAPS) {
            const uint64_t t0 = monotonic_ns();
            std::optional<std::vector<Mapping>> added;
            if ((s.flags & MT_STACK_LOADER_CODE) && added_) added = added_->take(s.pid);
            if (added) {
                counters_.maps_added_reads.add();
                ProcessMaps maps = ProcessMaps::of(s.pid, std::move(*added));
                python_.note_maps(maps, true);
                b.maps.emplace_back(std::move(maps), true);
            } else if (auto maps = read_all(s.pid)) {
                b.maps.emplace_back(std::move(*maps));
            }
            log::info("symbols: mappings of {} read in {:.2f} ms", s.pid, double(monotonic_ns() - t0) / 1e6);
        }
        // Its Python frames, named from the code objects as they are now, while they exist (held
        // for them), or as they were read before (PY_KNOWN: BPF found them unchanged).
        s.python.clear();
        const bool known = s.flags & MT_STACK_PY_KNOWN;
        for (uint64_t ip : s.ips)
            if (ip & MT_PY_FRAME) s.python.push_back(python_.resolve(s.pid, ip, known));
        if (!s.python.empty()) counters_.python_stacks.add();
        if (!s.python.empty() && known) counters_.python_stacks_known.add();
    }
    // BPF paused the process at these stacks so that these reads could not miss them. Released
    // after the whole batch is read: a stack another thread took while the process was held
    // for this one could not take the pause itself, and is read before the process runs on.
    if (holds_)
        for (const StackSample& s : b.stacks)
            if (s.flags & MT_STACK_HELD) holds_->release(uint32_t(s.pid), MT_HOLD_SNAPSHOT);
}

void Symbolizer::install(MapsRead read) {
    const int32_t pid = read.maps.pid();
    if (read.added_only) {
        auto [it, fresh] = maps_.try_emplace(pid, std::move(read.maps));
        if (!fresh) it->second.add(read.maps.mappings());
        return;
    }
    // A process that has exited shows no mappings: what was read before it exited stays true.
    if (!read.maps.mappings().empty() || !maps_.count(pid)) maps_[pid] = std::move(read.maps);
}

std::optional<ProcessMaps> Symbolizer::read_all(int32_t pid) {
    counters_.maps_full_reads.add();
    if (added_) added_->covered(pid);  // before the read: what is published later is not in it
    auto maps = ProcessMaps::read(pid);
    if (!maps) {
        log::info("mappings of {}: {}", pid, maps.error().message());
        return std::nullopt;
    }
    python_.note_maps(*maps);
    return std::move(maps).value();
}

void Symbolizer::read_again(int32_t pid) {
    if (auto maps = read_all(pid)) install(std::move(*maps));
}

bool Symbolizer::in_code(int32_t pid, uint64_t ip, std::unordered_set<int32_t>& reread) {
    const ProcessMaps& maps = maps_[pid];
    // No mappings (the process was gone before they could be read): nothing to judge by.
    if (maps.mappings().empty()) return true;
    auto covered = [&] {
        const Mapping* m = maps.find(ip - 1);  // the same element after snapshot() replaced it
        return ip != 0 && m != nullptr && m->executable;
    };
    if (covered()) return true;
    if (ip == 0) return false;
    // A stack taken inside dlopen, before the snapshot its return asks for (a constructor's):
    // the loader's hook published what it added before the code ran.
    if (added_) {
        if (auto m = added_->find(pid, ip - 1)) {
            counters_.maps_added_reads.add();
            maps_[pid].add({std::move(*m)});
            if (covered()) return true;
        }
    }
    // Code mapped since the snapshot without an event that says so (mprotect of a JIT's pages):
    // read the mappings once more, once a batch.
    if (!reread.insert(pid).second) return false;
    read_again(pid);
    return covered();
}

void Symbolizer::write_batch(const RecordBatch& b) {
    // The strand runs on whichever pool thread: CPU time is read on this one, around the batch.
    const uint64_t cpu_t0 = thread_cpu_ns();
    counters_.max_queued_batches.raise_to(waiting_at_pop());
    buf_.clear();
    std::unordered_set<int32_t> reread;  // processes whose mappings this batch read again
    const uint64_t batch_t0 = monotonic_ns();
    std::vector<Frame> frames;
    size_t next_maps = 0;  // b.maps holds, in order, what the stacks flagged NEW_MAPS read
    for (const StackSample& s : b.stacks) {
        // A process's new mappings apply from the stack that brought them: the stacks before it
        // in the batch were taken in the image it had before (an exec moves everything).
        if ((s.flags & MT_STACK_NEW_MAPS) && next_maps < b.maps.size() && b.maps[next_maps].maps.pid() == s.pid)
            install(b.maps[next_maps++]);
        if (!maps_.count(s.pid)) read_again(s.pid);
        counters_.stack_ring_bytes.add(RingView::record_bytes(MT_STACK_HEADER_BYTES + 8 * s.ips.size()));
        if (!written_.insert(s.hash).second) continue;  // in the file already: nothing to resolve
        const uint64_t t0 = monotonic_ns();
        if (delay_per_stack_.count() > 0) std::this_thread::sleep_for(delay_per_stack_);
        frames.clear();
        // The Python frames (bpf/python.h) follow the native ones.
        const size_t native_end = size_t(std::find_if(s.ips.begin(), s.ips.end(), [](uint64_t ip) {
                                                return (ip & MT_PY_FRAME) != 0;
                                            }) - s.ips.begin());
        size_t next_py = native_end;
        // One eval loop's Python frames, innermost first, through the one it was entered with:
        // as read_new_maps named them (s.python[i] is slot native_end + i).
        auto take_python = [&] {
            while (next_py < s.ips.size()) {
                const uint64_t slot = s.ips[next_py];
                const size_t i = next_py++ - native_end;
                Frame f = i < s.python.size() ? s.python[i] : PythonCode::unnamed(slot);
                if (!PythonCode::named(f)) counters_.python_frames_unnamed.add();
                frames.push_back(std::move(f));
                if (slot & MT_PY_ENTRY) break;
            }
        };
        bool after_eval = false;  // the frame before ran Python frames
        for (size_t i = 0; i < native_end; ++i) {
            const uint64_t ip = s.ips[i];
            if (!in_code(s.pid, ip, reread)) {
                // A frame-pointer walk that left the stack reads data as return addresses: what
                // follows the first one is no more a caller than it is.
                counters_.stacks_cut_outside_code.add();
                counters_.frames_cut_outside_code.add(native_end - i);
                break;
            }
            // Anonymous code that called an eval loop is CPython's perf trampoline (-X perf,
            // 3.12+: one copy per code object, the BPF walk steps through it by its own rule):
            // it stands for the Python frame before it, and is folded into it. Named from the
            // perf map it would be `py::QUALNAME:FILE`, but not in a forked child, whose map
            // starts empty while it runs its parent's trampolines.
            if (std::exchange(after_eval, false)) {
                const Mapping* m = maps_[s.pid].find(ip - 1);
                if (m && m->anonymous()) {
                    counters_.python_trampolines_folded.add();
                    continue;
                }
            }
            auto resolved = resolver_->resolve(maps_[s.pid], ip);
            // The eval loop's frame (or its cold part) stands for the Python frames it ran.
            if (next_py < s.ips.size() && resolved.back().function.starts_with("_PyEval_EvalFrameDefault")) {
                take_python();
                after_eval = true;
                continue;
            }
            frames.insert(frames.end(), std::make_move_iterator(resolved.begin()),
                          std::make_move_iterator(resolved.end()));
        }
        // Frames of eval loops the native walk did not reach: outermost, in order.
        while (next_py < s.ips.size()) take_python();
        encode_stack(s.hash, s.pid, frames, buf_);
        counters_.stacks_unique.add();
        counters_.symbolize_ns.add(monotonic_ns() - t0);
    }
    if (!buf_.empty()) {
        if (auto r = file_.write(buf_); !r) fail(r.error());
    }
    log::info("symbols: {} stacks symbolized in {:.1f} ms", b.stacks.size(), double(monotonic_ns() - batch_t0) / 1e6);
    counters_.cache_hits.set(resolver_->cache_hits());
    counters_.cache_misses.set(resolver_->cache_misses());
    counters_.jit_frames.set(resolver_->jit_frames());
    counters_.modules.set(resolver_->modules_loaded());
    counters_.module_load_ns.set(resolver_->module_load_ns());
    counters_.cpu_ns.add(thread_cpu_ns() - cpu_t0);
}

}  // namespace memtrack
