#include "actors/Stats.hpp"

#include <algorithm>

#include "bpf/hold.h"
#include "core/Clock.hpp"
#include "process/ProcessHolds.hpp"

namespace memtrack {
namespace {
boost::json::object ms_summary(const Histogram& h) {
    auto ms = [](uint64_t ns) { return double(ns) / 1e6; };
    return {{"p50", ms(h.percentile(0.50))}, {"p99", ms(h.percentile(0.99))}, {"max", ms(h.max())},
            {"count", h.count()}};
}
}  // namespace

namespace {
constexpr uint64_t kEventRingBytes = 56;  // a 48-byte record plus the ring's 8-byte header
}

Stats::Stats() : start_ns_(monotonic_ns()) {}

void Stats::on_chunk(uint64_t records, uint64_t bytes, uint64_t duration_ns) {
    std::lock_guard lock(mu_);
    records_ += records;
    bytes_ += bytes;
    ++chunks_;
    max_records_per_chunk_ = std::max(max_records_per_chunk_, records);
    chunk_ns_.add(duration_ns);
}

void Stats::on_written(uint64_t records, uint64_t artifact_events, uint64_t allocations) {
    std::lock_guard lock(mu_);
    written_ += records;
    artifact_events_ += artifact_events;
    allocations_ += allocations;
}

void Stats::on_unwritten(uint64_t records) {
    std::lock_guard lock(mu_);
    unwritten_ += records;
}

void Stats::on_stack(uint64_t ring_bytes, uint64_t symbolize_ns) {
    std::lock_guard lock(mu_);
    ++stacks_unique_;
    stack_ring_bytes_ += ring_bytes;
    symbolize_ns_.add(symbolize_ns);
}

void Stats::set_unwind(const UnwindCounters& c) {
    std::lock_guard lock(mu_);
    unwind_ = c;
}

void Stats::set_symbolizer(const SymbolizerCounters& c) {
    std::lock_guard lock(mu_);
    symbolizer_ = c;
}

void Stats::on_shutdown_file_closed(bool stacks, uint64_t ns) {
    std::lock_guard lock(mu_);
    (stacks ? shutdown_stacks_ns_ : shutdown_artifact_ns_) = ns;
}

void Stats::set_stack_counters(uint64_t captured, uint64_t sent, uint64_t errors, uint64_t dropped) {
    std::lock_guard lock(mu_);
    stacks_captured_ = captured;
    stacks_sent_ = sent;
    stack_errors_ = errors;
    stacks_dropped_ = dropped;
}

void Stats::on_resume(int32_t pid, uint64_t stop_to_resume_ns) {
    std::lock_guard lock(mu_);
    if (resumes_by_pid_.size() < kMaxPids || resumes_by_pid_.count(pid)) ++resumes_by_pid_[pid];
    paused_ns_ += stop_to_resume_ns;
    stop_to_resume_ns_.add(stop_to_resume_ns);
}

void Stats::on_consumer_idle(uint64_t ns) {
    std::lock_guard lock(mu_);
    consumer_idle_ns_ += ns;
}

void Stats::on_drain(uint64_t duration_ns) {
    std::lock_guard lock(mu_);
    drain_ns_.add(duration_ns);
}

void Stats::add_process_lifetime(uint64_t ns) {
    std::lock_guard lock(mu_);
    lifetime_ns_ += ns;
}

void Stats::set_kernel_counters(uint64_t dropped, uint64_t nested, uint64_t stale_frames, uint64_t self_traps) {
    std::lock_guard lock(mu_);
    dropped_ = dropped;
    nested_ = nested;
    stale_frames_ = stale_frames;
    self_traps_ = self_traps;
}

void Stats::set_pauses(const HoldCounts& c) {
    static constexpr const char* kNames[MT_HOLD_REASONS] = {"pressure", "snapshot", "spawn", "module"};
    boost::json::object by_reason;
    for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r)
        by_reason[kNames[r]] = {{"taken", c.taken[r]}, {"released", c.released[r]}, {"exited", c.exited[r]}};
    std::lock_guard lock(mu_);
    // A pause ends when memtrack releases it or when its process exits: stops == resumes once
    // nothing is held.
    pauses_ = {
        {"pressure_stops", c.taken[0]},
        {"pressure_resumes", c.released[0] + c.exited[0]},
        {"pressure_ended_by_exit", c.exited[0]},
        {"snapshot_stops", c.taken[1]},
        {"spawn_stops", c.taken[2]},
        {"new_code_stops", c.taken[3]},
        {"stop_signals", c.signals},
        {"stop_signal_failures", c.signal_failures},
        {"pause_failures", c.failed},
        {"pauses", std::move(by_reason)},
    };
}

void Stats::set_max_fill(uint64_t events_bytes, uint64_t stacks_bytes, uint64_t ring_bytes, uint64_t stop_bytes) {
    std::lock_guard lock(mu_);
    max_fill_bytes_ = events_bytes;
    stack_max_fill_bytes_ = stacks_bytes;
    ring_bytes_ = ring_bytes;
    stop_bytes_ = stop_bytes;
}

void Stats::set_stopped_at_exit(uint64_t n) {
    std::lock_guard lock(mu_);
    stopped_at_exit_ = n;
}

void Stats::on_process_probes(uint64_t attach_ns) {
    std::lock_guard lock(mu_);
    ++processes_probed_;
    probe_attach_ns_.add(attach_ns);
}

void Stats::on_shared_probes(uint64_t attach_ns) {
    std::lock_guard lock(mu_);
    ++processes_shared_;
    probe_attach_ns_.add(attach_ns);
}

void Stats::on_process_probe_error() {
    std::lock_guard lock(mu_);
    ++probe_errors_;
}

void Stats::on_spawn_held(uint64_t held_ns) {
    std::lock_guard lock(mu_);
    spawn_held_ns_.add(held_ns);
}

void Stats::on_object_probed(const std::vector<AllocatorKind>& kinds) {
    std::lock_guard lock(mu_);
    for (AllocatorKind k : kinds) ++objects_by_kind_[size_t(k)];
}

void Stats::on_new_code_held(uint64_t held_ns) {
    std::lock_guard lock(mu_);
    new_code_held_ns_.add(held_ns);
}

void Stats::on_process_without_allocator() {
    std::lock_guard lock(mu_);
    ++processes_without_allocator_;
}

void Stats::set_spawn_counters(uint64_t unstopped, uint64_t notices_dropped) {
    std::lock_guard lock(mu_);
    spawn_unstopped_ = unstopped;
    spawns_dropped_ = notices_dropped;
}

uint64_t Stats::records_written() const {
    std::lock_guard lock(mu_);
    return written_;
}

boost::json::object Stats::to_json() const {
    std::lock_guard lock(mu_);
    const double paused_s = double(paused_ns_) / 1e9;
    boost::json::object by_pid;
    for (auto [pid, n] : resumes_by_pid_) by_pid[std::to_string(pid)] = n;
    boost::json::object out = {
        {"pressure_resumes_by_pid", std::move(by_pid)},
        {"records", records_},
        {"bytes", bytes_},
        {"dropped", dropped_},
        {"duration_s", double(monotonic_ns() - start_ns_) / 1e9},
        {"written", written_},
        {"unwritten", unwritten_},
        {"artifact_events", artifact_events_},
        {"nested_calls", nested_},
        {"stale_frames", stale_frames_},
        {"self_traps", self_traps_},
        {"chunks", chunks_},
        {"chunk_ms", ms_summary(chunk_ns_)},
        {"max_records_per_chunk", max_records_per_chunk_},
        {"max_fill", ring_bytes_ ? double(max_fill_bytes_) / double(ring_bytes_) : 0.0},
        {"max_fill_bytes", max_fill_bytes_},
        {"stack_max_fill_bytes", stack_max_fill_bytes_},
        {"stop_bytes", stop_bytes_},
        {"stopped_at_exit", stopped_at_exit_},
        {"stop_to_resume_ms", ms_summary(stop_to_resume_ns_)},
        {"paused_s", paused_s},
        {"paused_fraction", lifetime_ns_ ? paused_s / (double(lifetime_ns_) / 1e9) : 0.0},
        {"drain_ms", ms_summary(drain_ns_)},
        {"consumer_idle_s", double(consumer_idle_ns_) / 1e9},
        {"allocation_events", allocations_},
        {"stacks_captured", stacks_captured_},
        {"stacks_sent", stacks_sent_},
        {"stacks_unique", stacks_unique_},
        {"stack_errors", stack_errors_},
        {"stacks_dropped", stacks_dropped_},
        {"stack_ring_bytes", stack_ring_bytes_},
        // Both rings' bytes per allocation event: 56 per event record plus the stacks, amortised.
        {"ring_bytes_per_event",
         allocations_ ? double(allocations_ * kEventRingBytes + stack_ring_bytes_) / double(allocations_) : 0.0},
        {"symbolize_ms", ms_summary(symbolize_ns_)},
        {"symbolizer_cache_hit_rate", symbolizer_.cache_hits + symbolizer_.cache_misses
                                          ? double(symbolizer_.cache_hits) /
                                                double(symbolizer_.cache_hits + symbolizer_.cache_misses)
                                          : 0.0},
        {"symbolizer_modules", symbolizer_.modules},
        {"symbolizer_addresses", symbolizer_.cache_misses},
        {"symbolize_cpu_s", double(symbolizer_.cpu_ns) / 1e9},
        {"symbolizer_module_load_ms", double(symbolizer_.module_load_ns) / 1e6},
        {"symbolizer_max_queued_batches", symbolizer_.max_queued_batches},
        {"symbolizer_jit_frames", symbolizer_.jit_frames},
        {"stacks_cut_outside_code", symbolizer_.stacks_cut_outside_code},
        {"frames_cut_outside_code", symbolizer_.frames_cut_outside_code},
        // From the start of the shutdown (the command's exit, a signal, a request) to each file
        // closed: what memtrack makes its caller wait for once the command is done.
        {"shutdown_artifact_ms", double(shutdown_artifact_ns_) / 1e6},
        {"shutdown_stacks_ms", double(shutdown_stacks_ns_) / 1e6},
        {"processes_probed", processes_probed_},
        {"processes_on_shared_probes", processes_shared_},
        {"probe_attach_errors", probe_errors_},
        {"probe_attach_ms", ms_summary(probe_attach_ns_)},
        {"spawn_unstopped", spawn_unstopped_},
        {"spawn_notices_dropped", spawns_dropped_},
        {"spawn_held_ms", ms_summary(spawn_held_ns_)},
        {"new_code_held_ms", ms_summary(new_code_held_ns_)},
        {"processes_without_allocator", processes_without_allocator_},
    };
    boost::json::object kinds;
    for (size_t k = 0; k < kAllocatorKinds; ++k) kinds[kind_name(AllocatorKind(k))] = objects_by_kind_[k];
    out["allocator_objects"] = std::move(kinds);
    for (const auto& kv : pauses_) out[kv.key()] = kv.value();
    out["unwind"] = boost::json::object{
        {"objects", unwind_.objects},
        {"objects_without_cfi", unwind_.objects_without_cfi},
        {"objects_failed", unwind_.objects_failed},
        {"objects_shared_by_build_id", unwind_.objects_shared},
        {"rows", unwind_.rows},
        {"rows_capacity", unwind_.rows_capacity},
        {"tables_full", unwind_.tables_full},
        {"build_ms", double(unwind_.build_ns) / 1e6},
        {"processes_described", unwind_.processes},
        {"describe_errors", unwind_.describe_errors},
        {"mappings_left_out", unwind_.mappings_left_out},
        {"cfi_frames", unwind_.cfi_frames},
        {"frame_pointer_frames", unwind_.fp_frames},
        {"walks_without_tables", unwind_.walks_without_tables},
        {"walks_complete", unwind_.walks_complete},
        {"walks_truncated", unwind_.walks_truncated},
        {"walks_unsupported", unwind_.walks_unsupported},
        {"walks_read_failed", unwind_.walks_read_failed},
        {"walks_bad_frame", unwind_.walks_bad_frame},
        {"walks_matched", unwind_.walks_matched},
        {"walks_changed", unwind_.walks_changed},
    };
    return out;
}

}  // namespace memtrack
