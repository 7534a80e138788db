#include "ReportScenario.hpp"

#include "format/ArtifactEncoder.hpp"

namespace memtrack::unittest {
namespace {

// `t_us` microseconds after kStart.
Event ev(EventKind kind, int32_t pid, int32_t tid, uint64_t t_us, uint64_t addr, uint64_t size, uint64_t hash,
         std::optional<uint64_t> old_addr = std::nullopt) {
    return make_event(kind, pid, tid, kStart + t_us * 1000, addr, size, hash, old_addr);
}

Frame frame(uint64_t ip, const char* function, const char* file, uint32_t line, bool inlined = false,
            const char* module = "/opt/app/bin/app", const char* build_id = "ab12cd34") {
    return Frame{ip, module, build_id, function, file, line, inlined};
}

}  // namespace

Event make_event(EventKind kind, int32_t pid, int32_t tid, uint64_t timestamp, uint64_t addr, uint64_t size,
                 uint64_t hash, std::optional<uint64_t> old_addr) {
    Event e;
    e.kind = kind;
    e.pid = pid;
    e.tid = tid;
    e.timestamp = timestamp;
    e.addr = addr;
    e.size = kind == EventKind::Free ? 0 : size;
    e.stack_hash = is_allocation(kind) ? hash : 0;
    e.old_addr = old_addr;
    return e;
}

Scenario report_scenario() {
    using K = EventKind;
    Scenario s;
    s.stacks = {
        {kHashLeak, 100,
         {frame(0x401010, "leak_inner", "src/app.c", 10), frame(0x401020, "leak_outer", "src/app.c", 20),
          frame(0x401030, "main", "src/app.c", 30)}},
        {kHashPeak, 100,
         {frame(0x402010, "make_buffer", "src/buffer.h", 5, true), frame(0x402010, "build_peak", "src/app.c", 40),
          frame(0x401031, "main", "src/app.c", 31)}},
        {kHashScratch, 100, {frame(0x403010, "scratch", "src/app.c", 50), frame(0x401032, "main", "src/app.c", 32)}},
        {kHashChild, 200,
         {frame(0x404010, "child_work", "src/app.c", 60), frame(0x401033, "main", "src/app.c", 33),
          frame(0x7f0000001000, "", "", 0, false, "/lib/x86_64-linux-gnu/libc.so.6", "")}},
    };
    s.events = {
        ev(K::Malloc, 100, 100, 0, 0x1000, 1000, kHashLeak),
        ev(K::Malloc, 100, 100, 1, 0x1100, 1000, kHashLeak),
        ev(K::Malloc, 100, 100, 2, 0x2000, 4096, kHashPeak),
        ev(K::Malloc, 100, 100, 3, 0x2100, 4096, kHashPeak),
        ev(K::Calloc, 100, 100, 4, 0x2200, 4096, kHashPeak),
        ev(K::Free, 100, 100, 5, 0x2000, 0, 0),
        ev(K::Free, 100, 100, 6, 0x2100, 0, 0),
        ev(K::Free, 100, 100, 7, 0x2200, 0, 0),
        ev(K::Malloc, 100, 100, 8, 0x3000, 64, kHashScratch),
        ev(K::Free, 100, 100, 9, 0x3000, 0, 0),
        ev(K::Malloc, 100, 100, 10, 0x3000, 64, kHashScratch),
        ev(K::Malloc, 100, 100, 11, 0x3100, 64, kHashScratch),
        ev(K::Free, 100, 100, 12, 0x3000, 0, 0),
        ev(K::Free, 100, 100, 13, 0x3100, 0, 0),
        ev(K::Realloc, 100, 100, 14, 0x3200, 128, kHashScratch),
        ev(K::Realloc, 100, 100, 15, 0x3300, 256, kHashScratch, 0x3200),
        ev(K::Free, 100, 100, 16, 0x3300, 0, 0),
        ev(K::Malloc, 100, 100, 17, 0x4000, 500, kHashMissing),
        ev(K::Malloc, 100, 101, 18, 0x5000, 300, 0),
        ev(K::Free, 100, 100, 19, 0x9999, 0, 0),
        ev(K::Malloc, 100, 100, 20, 0, 50, kHashScratch),
        ev(K::Malloc, 200, 200, 21, 0x1000, 2048, kHashChild),
        ev(K::Free, 200, 200, 22, 0x1000, 0, 0),
        ev(K::Mmap, 100, 100, 23, 0x7000, 8192, 0),
        ev(K::Munmap, 100, 100, 24, 0x7000, 8192, 0),
        ev(K::Malloc, 100, 100, 25, 0x1200, 20000, kHashLeak),
        ev(K::Free, 100, 100, 26, 0x1200, 0, 0),
    };
    return s;
}

Scenario report_scenario_base() {
    Scenario s = report_scenario();
    s.events.resize(s.events.size() - 2);
    return s;
}

std::string scenario_artifact_bytes(const Scenario& s) {
    std::string raw;
    for (const Event& e : s.events) encode_event(e, raw);
    return raw;
}

std::string scenario_stacks_bytes(const Scenario& s) {
    std::string raw;
    for (const ScenarioStack& st : s.stacks) encode_stack(st.hash, st.pid, st.frames, raw);
    return raw;
}

}  // namespace memtrack::unittest
