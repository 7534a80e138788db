#include "Events.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include <doctest/doctest.h>

namespace memtrack::roottest {

namespace {

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

using Key = std::pair<int, uint64_t>;  // (pid, address)

std::string key_text(const Key& k) {
    return "pid " + std::to_string(k.first) + " addr " + hex(k.second);
}

}  // namespace

bool is_allocation(const Event& e) {
    return e.type == "Malloc" || e.type == "Calloc" || e.type == "AlignedAlloc" || e.type == "Realloc";
}

std::vector<Event> by_time(std::vector<Event> events) {
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.timestamp < b.timestamp; });
    return events;
}

std::vector<Event> select(const std::vector<Event>& events, const std::function<bool(const Event&)>& pred) {
    std::vector<Event> out;
    std::copy_if(events.begin(), events.end(), std::back_inserter(out), pred);
    return out;
}

std::vector<Event> with_size(const std::vector<Event>& events, uint64_t size) {
    return select(events, [size](const Event& e) { return e.size && *e.size == size; });
}

std::vector<Event> of_pid(const std::vector<Event>& events, int pid) {
    return select(events, [pid](const Event& e) { return e.pid == pid; });
}

std::string tally(const std::vector<Event>& events) {
    std::map<std::string, size_t> counts;
    for (const auto& e : events) counts[e.type]++;
    if (counts.empty()) return "none";
    std::string s;
    for (const auto& [type, n] : counts) s += (s.empty() ? "" : ", ") + type + " x" + std::to_string(n);
    return s;
}

std::map<uint64_t, std::string> tally_by_size(const std::vector<Event>& events, const std::set<uint64_t>& sizes) {
    std::map<uint64_t, std::string> out;
    for (uint64_t size : sizes) out[size] = tally(with_size(events, size));
    return out;
}

std::string show(const std::map<uint64_t, std::string>& m) {
    std::string s;
    for (const auto& [k, v] : m) s += "\n  " + std::to_string(k) + ": " + v;
    return s;
}

std::string show(const std::map<uint64_t, size_t>& m) {
    std::string s;
    for (const auto& [k, v] : m) s += "\n  " + std::to_string(k) + ": " + std::to_string(v);
    return s.empty() ? "none" : s;
}

std::string show(const std::set<int>& set) {
    std::string s = "{";
    for (int v : set) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
    return s + "}";
}

size_t Pairing::total_frees() const {
    size_t n = 0;
    for (const auto& [size, count] : frees) n += count;
    return n;
}

std::string Pairing::problems_text() const {
    return join(problems);
}

std::vector<std::string> unallocated_frees(const std::vector<Event>& events) {
    std::map<int, std::set<uint64_t>> live;  // per pid
    std::vector<std::string> problems;
    for (const Event& e : by_time(events)) {
        auto& mine = live[e.pid];
        if (e.type == "Realloc" && e.old_addr) {
            if (!mine.erase(*e.old_addr)) problems.push_back(e.describe() + ": old_addr is no live block");
        }
        if (is_allocation(e)) mine.insert(e.addr);
        if (e.type == "Free" && !mine.erase(e.addr)) problems.push_back(e.describe() + ": no live block there");
    }
    return problems;
}

Pairing pair_up(const std::vector<Event>& events, const std::set<uint64_t>& sizes) {
    Pairing p;
    std::map<Key, uint64_t> live;  // fixture block -> its size
    std::set<Key> freed;           // fixture blocks freed, with no allocation at that address since

    for (const Event& e : by_time(events)) {
        const Key key{e.pid, e.addr};
        const bool fixture_size = e.size && sizes.count(*e.size) != 0;

        if (e.type == "Malloc" || e.type == "Calloc" || e.type == "AlignedAlloc") {
            freed.erase(key);
            if (auto it = live.find(key); it != live.end()) {
                p.problems.push_back(e.describe() + ": allocated at the live fixture block of size " +
                                     std::to_string(it->second) + " (its Free is missing)");
                live.erase(it);
            }
            if (fixture_size) {
                live[key] = *e.size;
                p.allocations++;
            }
        } else if (e.type == "Realloc") {
            freed.erase(key);
            std::optional<Key> old;
            if (e.old_addr) old = Key{e.pid, *e.old_addr};
            auto from = old ? live.find(*old) : live.end();
            if (fixture_size) {
                if (!old) {
                    p.problems.push_back(e.describe() + ": Realloc to a fixture size without old_addr");
                } else if (from == live.end()) {
                    p.problems.push_back(e.describe() + ": Realloc whose old_addr is no live fixture block");
                } else {
                    p.reallocs[from->second]++;
                    live.erase(from);
                    if (*old != key) freed.insert(*old);
                }
                if (auto it = live.find(key); it != live.end()) {
                    p.problems.push_back(e.describe() + ": Realloc result at another live fixture block");
                    live.erase(it);
                }
                live[key] = *e.size;
            } else if (from != live.end()) {
                p.problems.push_back(e.describe() + ": fixture block of size " + std::to_string(from->second) +
                                     " realloc'd to a size the fixture never asks for");
                live.erase(from);
            }
        } else if (e.type == "Free") {
            if (auto it = live.find(key); it != live.end()) {
                p.frees[it->second]++;
                live.erase(it);
                freed.insert(key);
            } else if (freed.count(key)) {
                p.problems.push_back(e.describe() + ": second Free of a fixture block with no allocation between");
            }
        }
    }
    for (const auto& [key, size] : live) p.live.push_back(key_text(key) + " size " + std::to_string(size));
    return p;
}

std::vector<std::string> common_problems(const TrackResult& t, const std::vector<Event>& events) {
    std::vector<std::string> out;
    if (t.stats.dropped != 0) out.push_back("--stats dropped = " + std::to_string(t.stats.dropped) + ": " + t.stats.raw);
    constexpr uint64_t kUserSpace = uint64_t(1) << 47;
    for (const Event& e : events) {
        if (e.timestamp < t.t_begin || e.timestamp > t.t_end)
            out.push_back(e.describe() + ": timestamp outside the run [" + std::to_string(t.t_begin) + ", " +
                          std::to_string(t.t_end) + "] (not CLOCK_MONOTONIC ns?)");
        if (e.addr == 0) out.push_back(e.describe() + ": address 0 (a failed call or free(NULL) recorded?)");
        if (e.old_addr && *e.old_addr == 0) out.push_back(e.describe() + ": old_addr 0 should be omitted");
        if (e.type == "Brk" && e.size && *e.size != 0) out.push_back(e.describe() + ": Brk size must be 0");
        if (e.size && *e.size >= kUserSpace) out.push_back(e.describe() + ": size beyond the user address space");
        if (e.addr >= kUserSpace) out.push_back(e.describe() + ": address beyond the user address space");
    }
    return out;
}

std::string join(const std::vector<std::string>& lines, size_t max_lines) {
    std::string s;
    for (size_t i = 0; i < lines.size() && i < max_lines; i++) s += "\n  " + lines[i];
    if (lines.size() > max_lines) s += "\n  ... and " + std::to_string(lines.size() - max_lines) + " more";
    return s.empty() ? "none" : s;
}

Tracked track_and_dump(const TempDir& dir, const std::vector<std::string>& command,
                       const std::vector<std::string>& extra) {
    Tracked t;
    t.result = track(dir, command, extra);
    t.events = dump(t.result.artifact);
    return t;
}

Tracked track_args_and_dump(const TempDir& dir, const std::vector<std::string>& args) {
    Tracked t;
    t.result = track_args(dir, args);
    t.events = dump(t.result.artifact);
    return t;
}

void check_common(const Tracked& t) {
    INFO("artifact ", t.result.artifact, ", stats ", t.result.stats.raw);
    auto problems = common_problems(t.result, t.events);
    CHECK_MESSAGE(problems.empty(), "common problems:", join(problems));
    CHECK(t.result.stats.dropped == 0);
    CHECK_MESSAGE(t.result.stats.records >= t.events.size(),
                  "--stats records ", t.result.stats.records, " < ", t.events.size(), " events in the artifact");
    CHECK(t.result.stats.bytes > 0);
    // No fixture leaves an allocator call without its return (no exception, no longjmp out of
    // one): a stale frame here is the nesting rule misreading a stack pointer.
    CHECK(stats_u64(t.result.stats, "stale_frames") == 0);
    CHECK(stats_u64(t.result.stats, "counter_read_errors") == 0);
    double wall_s = double(t.result.t_end - t.result.t_begin) / 1e9;
    CHECK_MESSAGE(t.result.stats.duration_s > 0, "duration_s ", t.result.stats.duration_s);
    CHECK_MESSAGE(t.result.stats.duration_s <= wall_s + 0.5,
                  "duration_s ", t.result.stats.duration_s, " exceeds the run's wall time ", wall_s, " s");
    // memtrack's phases (RunPhases) cover its start to the exit stats: within the wall time
    // measured around its process, each begun.
    const double startup = stats_double(t.result.stats, "startup_ms"), run = stats_double(t.result.stats, "run_ms"),
                 teardown = stats_double(t.result.stats, "teardown_ms");
    CHECK(startup > 0);
    CHECK(run > 0);
    CHECK(teardown > 0);
    CHECK_MESSAGE(startup + run + teardown <= wall_s * 1e3, "startup_ms ", startup, " + run_ms ", run, " + teardown_ms ",
                  teardown, " exceed the run's wall time ", wall_s, " s");
}

std::set<int> pids_of(const std::vector<Event>& events) {
    std::set<int> s;
    for (const auto& e : events) s.insert(e.pid);
    return s;
}

std::set<int> tids_of(const std::vector<Event>& events) {
    std::set<int> s;
    for (const auto& e : events) s.insert(e.tid);
    return s;
}

}  // namespace memtrack::roottest
