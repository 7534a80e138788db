#pragma once
// Looking at a dumped event stream: picking out a fixture's events by size, counting them by kind,
// and pairing every Free with the allocation it releases. Results come back as strings so a
// failing CHECK shows the whole picture (expected and actual) in one line.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "Harness.hpp"

namespace memtrack::roottest {

bool is_allocation(const Event& e);  // Malloc, Calloc, AlignedAlloc, Realloc

// Stable sort by timestamp: the order things happened in, across CPUs and processes.
std::vector<Event> by_time(std::vector<Event> events);

std::vector<Event> select(const std::vector<Event>& events, const std::function<bool(const Event&)>& pred);
std::vector<Event> with_size(const std::vector<Event>& events, uint64_t size);
std::vector<Event> of_pid(const std::vector<Event>& events, int pid);

// "Calloc x10, Free x3" (kinds in name order), or "none".
std::string tally(const std::vector<Event>& events);

// size -> tally of the events with that size, for each of `sizes` (Free has no size, so it never
// counts here; see Pairing for frees).
std::map<uint64_t, std::string> tally_by_size(const std::vector<Event>& events, const std::set<uint64_t>& sizes);

// "7001: Malloc x10\n7033: Calloc x10\n" and the like, for CHECKs on whole maps.
std::string show(const std::map<uint64_t, std::string>& m);
std::string show(const std::map<uint64_t, size_t>& m);
std::string show(const std::set<int>& s);

// Follows the fixture's allocations (those whose size is in `sizes`) through Realloc and Free, in
// timestamp order, keyed by (pid, address) since each process has its own heap.
struct Pairing {
    size_t allocations = 0;                   // Malloc/Calloc/AlignedAlloc of a fixture size
    std::map<uint64_t, size_t> reallocs;      // size before -> Realloc of a fixture block
    std::map<uint64_t, size_t> frees;         // size of the block freed -> Free count
    std::vector<std::string> problems;        // what contradicts a sane allocation history
    std::vector<std::string> live;            // fixture blocks never freed, described

    size_t total_frees() const;
    std::string problems_text() const;
};

// Problems reported:
//   - a fixture-size allocation at an address that is still live (a missing Free);
//   - a Realloc to a fixture size without old_addr, or whose old_addr is no live fixture block;
//   - a live fixture block realloc'd to a size outside the set (a failed realloc recorded);
//   - a second Free of a fixture block's address with no allocation at it in between (a free
//     recorded twice, by nested probes for instance).
Pairing pair_up(const std::vector<Event>& events, const std::set<uint64_t>& sizes);

// Every Free (and every Realloc's old_addr) of any size that names no block its process
// allocated and has not freed since, in time order per process; described.
std::vector<std::string> unallocated_frees(const std::vector<Event>& events);

// Checks that hold for every tracked run: --stats dropped == 0, timestamps within the run's
// CLOCK_MONOTONIC interval, no event at address 0 (failed allocations and free(NULL) record
// nothing), Brk sizes 0, sizes within the user address space. Returns the violations.
std::vector<std::string> common_problems(const TrackResult& t, const std::vector<Event>& events);
std::string join(const std::vector<std::string>& lines, size_t max_lines = 20);

// One tracked run and what `memtrack dump` made of its artifact.
struct Tracked {
    TrackResult result;
    std::vector<Event> events;  // in dump (file) order
};

// track() then dump(); throws (failing the test case) when either cannot produce events.
// extra: memtrack track options before the `--`.
Tracked track_and_dump(const TempDir& dir, const std::vector<std::string>& command,
                       const std::vector<std::string>& extra = {});
Tracked track_args_and_dump(const TempDir& dir, const std::vector<std::string>& args);

// CHECKs common_problems() and the --stats values (records cover the events, bytes and
// duration_s plausible, startup_ms + run_ms + teardown_ms within the wall time) on a run.
void check_common(const Tracked& t);

// The pids and tids of `events`.
std::set<int> pids_of(const std::vector<Event>& events);
std::set<int> tids_of(const std::vector<Event>& events);

}  // namespace memtrack::roottest
