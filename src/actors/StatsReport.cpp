#include "actors/StatsReport.hpp"

#include "bpf/hold.h"
#include "bpf/record.h"
#include "probes/BpfSession.hpp"
#include "ring/RingView.hpp"
#include "unwind/UnwindTables.hpp"

namespace memtrack {
namespace {

boost::json::object ms_summary(const Histogram& h) {
    auto ms = [](uint64_t ns) { return double(ns) / 1e6; };
    return {{"p50", ms(h.percentile(0.50))}, {"p99", ms(h.percentile(0.99))}, {"max", ms(h.max())},
            {"count", h.count()}};
}

// A pause ends when memtrack releases it or when its process exits: stops == resumes once
// nothing is held.
boost::json::object pause_json(const HoldCounts& c) {
    static constexpr const char* kNames[MT_HOLD_REASONS] = {"pressure", "snapshot", "spawn", "module", "continuer"};
    boost::json::object by_reason;
    for (uint32_t r = 0; r < MT_HOLD_REASONS; ++r)
        by_reason[kNames[r]] = {{"taken", c.taken[r]}, {"released", c.released[r]}, {"exited", c.exited[r]}};
    return {
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

boost::json::object programs_json(const std::vector<ProgramRunStats>& programs) {
    boost::json::object out;
    for (const ProgramRunStats& p : programs)
        out[p.name] = {{"runs", p.runs},
                       {"run_ns", p.run_ns},
                       {"ns_per_run", p.runs ? double(p.run_ns) / double(p.runs) : 0.0}};
    return out;
}

boost::json::object parts_json(const PartTimes& t) {
    auto per_event = [&](uint64_t ns) { return t.events ? double(ns) / double(t.events) : 0.0; };
    return {{"events", t.events},
            {"walk_ns_per_event", per_event(t.walk_ns)},
            {"hash_ns_per_event", per_event(t.hash_ns)},
            {"stack_record_ns_per_event", per_event(t.stack_record_ns)},
            {"event_record_ns_per_event", per_event(t.event_record_ns)}};
}

}  // namespace

KernelCounters read_kernel_counters(const BpfSession& bpf) {
    KernelCounters k;
    k.dropped = bpf.counters().shown(MT_COUNTER_DROPPED);
    k.nested = bpf.counters().shown(MT_COUNTER_NESTED);
    k.stale_frames = bpf.counters().shown(MT_COUNTER_STALE_FRAME);
    k.self_traps = bpf.counters().shown(MT_COUNTER_SELF_TRAPS);
    k.stacks_captured = bpf.counters().shown(MT_COUNTER_STACKS_CAPTURED);
    k.stacks_sent = bpf.counters().shown(MT_COUNTER_STACKS_SENT);
    k.stack_errors = bpf.counters().shown(MT_COUNTER_STACK_ERRORS);
    k.stacks_dropped = bpf.counters().shown(MT_COUNTER_STACKS_DROPPED);
    k.stacks_unclaimed = bpf.counters().shown(MT_COUNTER_STACKS_UNCLAIMED);
    k.spawn_unstopped = bpf.counters().shown(MT_COUNTER_SPAWN_UNSTOPPED);
    k.spawn_notices_dropped = bpf.counters().shown(MT_COUNTER_SPAWNS_DROPPED);
    k.holds_broken = bpf.counters().shown(MT_COUNTER_HOLDS_BROKEN);
    k.holds_restopped = bpf.counters().shown(MT_COUNTER_HOLDS_RESTOPPED);
    k.holds_unrestored = bpf.counters().shown(MT_COUNTER_HOLDS_UNRESTORED);
    k.holds_escaped = bpf.counters().shown(MT_COUNTER_HOLDS_ESCAPED);
    k.holds_restopped_self = bpf.counters().shown(MT_COUNTER_HOLDS_RESTOPPED_SELF);
    k.continuers_paused = bpf.counters().shown(MT_COUNTER_CONTINUERS_PAUSED);
    k.holds_caught_at_start = bpf.counters().shown(MT_COUNTER_HOLDS_CAUGHT_AT_START);
    k.loader_hooks_missed = bpf.counters().shown(MT_COUNTER_LOADER_HOOKS_MISSED);
    k.loader_missed_untrapped = bpf.counters().shown(MT_COUNTER_LOADER_MISSED_UNTRAPPED);
    k.loader_missed_rejected = bpf.counters().shown(MT_COUNTER_LOADER_MISSED_REJECTED);
    k.loader_missed_unheld = bpf.counters().shown(MT_COUNTER_LOADER_MISSED_UNHELD);
    k.loader_missed_no_hook = bpf.counters().shown(MT_COUNTER_LOADER_MISSED_NO_HOOK);
    k.events_max_fill_bytes = bpf.max_fill_bytes(0);
    k.stacks_max_fill_bytes = bpf.max_fill_bytes(1);
    k.stop_bytes = bpf.stop_bytes();
    k.programs = bpf.program_stats();
    k.parts = {bpf.counters().shown(MT_COUNTER_PART_EVENTS), bpf.counters().shown(MT_COUNTER_PART_WALK_NS),
               bpf.counters().shown(MT_COUNTER_PART_HASH_NS), bpf.counters().shown(MT_COUNTER_PART_STACK_RECORD_NS),
               bpf.counters().shown(MT_COUNTER_PART_EVENT_RECORD_NS)};
    // Last: the failures of every read above (and of all before) are in it.
    k.counter_read_errors = bpf.counters().read_errors();
    return k;
}

UnwindCounters read_unwind_counters(const UnwindTables* tables, const BpfSession& bpf) {
    if (!tables) return {};
    UnwindCounters u = tables->counters();
    u.cfi_frames = bpf.counters().shown(MT_COUNTER_UNWIND_CFI_FRAMES);
    u.fp_frames = bpf.counters().shown(MT_COUNTER_UNWIND_FP_FRAMES);
    u.walks_without_tables = bpf.counters().shown(MT_COUNTER_UNWIND_NO_TABLES);
    u.walks_complete = bpf.counters().shown(MT_COUNTER_UNWIND_COMPLETE);
    u.walks_truncated = bpf.counters().shown(MT_COUNTER_UNWIND_TRUNCATED);
    u.walks_unsupported = bpf.counters().shown(MT_COUNTER_UNWIND_UNSUPPORTED);
    u.walks_read_failed = bpf.counters().shown(MT_COUNTER_UNWIND_READ_FAILED);
    u.walks_bad_frame = bpf.counters().shown(MT_COUNTER_UNWIND_BAD_FRAME);
    u.walks_matched = bpf.counters().shown(MT_COUNTER_UNWIND_CHAINS_MATCHED);
    u.walks_changed = bpf.counters().shown(MT_COUNTER_UNWIND_CHAINS_CHANGED);
    u.row_cache_misses = bpf.counters().shown(MT_COUNTER_UNWIND_ROW_MISSES);
    u.walks_spliced = bpf.counters().shown(MT_COUNTER_UNWIND_SPLICED);
    u.spliced_frames = bpf.counters().shown(MT_COUNTER_UNWIND_SPLICED_FRAMES);
    u.walks_known = bpf.counters().shown(MT_COUNTER_UNWIND_CHAINS_KNOWN);
    return u;
}

boost::json::object stats_json(const RunCounters& c) {
    const ConsumerCounters& ev = c.events;
    const WriterCounters& w = c.writer;
    const SymbolizerCounters& sym = c.symbolizer;
    const LinkCounters& links = c.links;
    const PauseCounters& pauses = c.pauses;
    const KernelCounters& k = c.kernel;
    const UnwindCounters& u = c.unwind;
    const double paused_s = double(pauses.paused_ns.get()) / 1e9;
    const uint64_t lifetime_ns = w.process_lifetime_ns.get();
    const uint64_t allocations = w.allocations.get();
    const uint64_t cache_lookups = sym.cache_hits.get() + sym.cache_misses.get();
    boost::json::object by_pid;
    for (auto [pid, n] : pauses.pressure_resumes_by_pid) by_pid[std::to_string(pid)] = n;
    boost::json::object out = {
        {"pressure_resumes_by_pid", std::move(by_pid)},
        {"records", ev.records.get()},
        {"bytes", ev.bytes.get()},
        {"dropped", k.dropped},
        {"duration_s", double(c.duration_ns) / 1e9},
        {"startup_ms", double(c.phases.startup_ns) / 1e6},
        {"run_ms", double(c.phases.run_ns) / 1e6},
        {"teardown_ms", double(c.phases.teardown_ns) / 1e6},
        {"written", w.written.get()},
        {"unwritten", w.unwritten.get()},
        {"artifact_events", w.artifact_events.get()},
        {"nested_calls", k.nested},
        {"stale_frames", k.stale_frames},
        {"self_traps", k.self_traps},
        {"chunks", ev.chunks.get()},
        {"chunk_ms", ms_summary(ev.chunk_ns)},
        {"max_records_per_chunk", ev.max_records_per_chunk.get()},
        {"max_fill", c.ring_bytes ? double(k.events_max_fill_bytes) / double(c.ring_bytes) : 0.0},
        {"max_fill_bytes", k.events_max_fill_bytes},
        {"stack_max_fill_bytes", k.stacks_max_fill_bytes},
        {"stop_bytes", k.stop_bytes},
        {"counter_read_errors", k.counter_read_errors},
        {"stopped_at_exit", c.shutdown.stopped_at_exit.get()},
        {"cut_short_by_signal", c.shutdown.cut_short_by_signal.get()},
        {"command_running_at_exit", c.shutdown.command_running_at_exit.get()},
        {"stop_to_resume_ms", ms_summary(pauses.stop_to_resume_ns)},
        {"paused_s", paused_s},
        {"paused_fraction", lifetime_ns ? paused_s / (double(lifetime_ns) / 1e9) : 0.0},
        {"drain_ms", ms_summary(c.drains.drain_ns)},
        {"consumer_idle_s", double(ev.idle_ns.get()) / 1e9},
        {"allocation_events", allocations},
        {"stacks_captured", k.stacks_captured},
        {"stacks_sent", k.stacks_sent},
        {"stacks_unique", sym.stacks_unique.get()},
        {"stack_errors", k.stack_errors},
        {"stacks_dropped", k.stacks_dropped},
        {"stacks_unclaimed", k.stacks_unclaimed},
        {"stack_ring_bytes", sym.stack_ring_bytes.get()},
        // Both rings' bytes per allocation event: each event record's plus the stacks, amortised.
        {"ring_bytes_per_event",
         allocations ? double(allocations * RingView::record_bytes(sizeof(mt_record)) + sym.stack_ring_bytes.get()) /
                           double(allocations)
                     : 0.0},
        {"symbolize_ms", ms_summary(sym.symbolize_ns)},
        {"symbolizer_cache_hit_rate", cache_lookups ? double(sym.cache_hits.get()) / double(cache_lookups) : 0.0},
        {"symbolizer_modules", sym.modules.get()},
        {"symbolizer_addresses", sym.cache_misses.get()},
        {"symbolize_cpu_s", double(sym.cpu_ns.get()) / 1e9},
        {"symbolizer_module_load_ms", double(sym.module_load_ns.get()) / 1e6},
        {"symbolizer_max_queued_batches", sym.max_queued_batches.get()},
        {"symbolizer_jit_frames", sym.jit_frames.get()},
        {"python_frames_unnamed", sym.python_frames_unnamed.get()},
        {"python_trampolines_folded", sym.python_trampolines_folded.get()},
        {"python_stacks", sym.python_stacks.get()},
        {"python_stacks_known", sym.python_stacks_known.get()},
        {"symbolizer_maps_full_reads", sym.maps_full_reads.get()},
        {"symbolizer_maps_added_reads", sym.maps_added_reads.get()},
        {"stacks_cut_outside_code", sym.stacks_cut_outside_code.get()},
        {"frames_cut_outside_code", sym.frames_cut_outside_code.get()},
        // What memtrack makes its caller wait for once the command is done.
        {"shutdown_artifact_ms", double(c.drains.artifact_closed_ns.get()) / 1e6},
        {"shutdown_stacks_ms", double(c.drains.stacks_closed_ns.get()) / 1e6},
        {"processes_probed", links.processes_probed.get()},
        {"processes_on_shared_probes", links.processes_shared.get()},
        {"probe_attach_errors", links.probe_errors.get()},
        {"probe_attach_ms", ms_summary(links.attach_ns)},
        {"spawn_unstopped", k.spawn_unstopped},
        {"spawn_notices_dropped", k.spawn_notices_dropped},
        {"holds_broken_by_others", k.holds_broken},
        {"holds_restopped", k.holds_restopped},
        {"holds_unrestored", k.holds_unrestored},
        {"holds_escaped", k.holds_escaped},
        {"holds_restopped_self", k.holds_restopped_self},
        {"continuers_paused", k.continuers_paused},
        {"holds_caught_at_start", k.holds_caught_at_start},
        {"loader_hooks_missed", k.loader_hooks_missed},
        {"loader_missed_untrapped", k.loader_missed_untrapped},
        {"loader_missed_rejected", k.loader_missed_rejected},
        {"loader_missed_unheld", k.loader_missed_unheld},
        {"loader_missed_no_hook", k.loader_missed_no_hook},
        {"spawn_held_ms", ms_summary(pauses.spawn_held_ns)},
        {"new_code_held_ms", ms_summary(pauses.new_code_held_ns)},
        {"processes_without_allocator", links.processes_without_allocator.get()},
        {"code_objects_examined", links.code_objects_examined.get()},
        {"code_full_scans", links.code_full_scans.get()},
        {"object_files_parsed", c.objects.parsed},
        {"object_files_lookups", c.objects.lookups},
        {"object_files_failed", c.objects.failed},
        {"object_files_reopened", c.objects.reopened},
        {"object_files_reopened_for_symbols", c.objects.reopened_for_symbols},
        {"exit_wakeups_early", links.exit_wakeups_early.get()},
    };
    boost::json::object kinds;
    for (size_t i = 0; i < kAllocatorKinds; ++i) kinds[kind_name(AllocatorKind(i))] = links.objects_by_kind[i].get();
    out["allocator_objects"] = std::move(kinds);
    for (auto& kv : pause_json(c.holds)) out[kv.key()] = std::move(kv.value());
    out["bpf_programs"] = programs_json(k.programs);
    out["bpf_parts"] = parts_json(k.parts);
    out["unwind"] = boost::json::object{
        {"objects", u.objects},
        {"objects_without_cfi", u.objects_without_cfi},
        {"objects_failed", u.objects_failed},
        {"objects_shared_by_build_id", u.objects_shared},
        {"objects_from_cache", u.objects_cached},
        {"objects_stored_in_cache", u.objects_stored},
        {"cache_errors", u.cache_errors},
        {"rows", u.rows},
        {"rows_capacity", u.rows_capacity},
        {"tables_full", u.tables_full},
        {"build_ms", double(u.build_ns) / 1e6},
        {"processes_described", u.processes},
        {"describe_errors", u.describe_errors},
        {"mappings_left_out", u.mappings_left_out},
        {"cfi_frames", u.cfi_frames},
        {"frame_pointer_frames", u.fp_frames},
        {"walks_without_tables", u.walks_without_tables},
        {"walks_complete", u.walks_complete},
        {"walks_truncated", u.walks_truncated},
        {"walks_unsupported", u.walks_unsupported},
        {"walks_read_failed", u.walks_read_failed},
        {"walks_bad_frame", u.walks_bad_frame},
        {"walks_matched", u.walks_matched},
        {"walks_changed", u.walks_changed},
        {"row_cache_misses", u.row_cache_misses},
        {"walks_spliced", u.walks_spliced},
        {"spliced_frames", u.spliced_frames},
        {"walks_known", u.walks_known},
    };
    return out;
}

}  // namespace memtrack
