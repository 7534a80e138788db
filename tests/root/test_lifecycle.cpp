// The corners of a process's life (tests/progs/lifecycle.c): exec from a thread other than the
// main one, SIGCONTs from someone else to a held process, a main thread that ends first. Each
// process's allocations are counted exactly; none may run unrecorded.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

// `size` was allocated and freed exactly `n` times by each of `processes` processes (n each),
// every block freed by the process that allocated it.
void check_pairs_per_process(const Tracked& t, uint64_t size, unsigned processes, unsigned n) {
    const auto evs = with_size(t.events, size);
    CHECK(tally(evs) == "Malloc x" + std::to_string(processes * n));
    const std::set<int> pids = pids_of(evs);
    CHECK_MESSAGE(pids.size() == processes, "pids ", show(pids));
    std::vector<std::string> short_ones;
    for (int pid : pids) {
        const auto mine = of_pid(evs, pid);
        if (tally(mine) != "Malloc x" + std::to_string(n))
            short_ones.push_back("pid " + std::to_string(pid) + ": " + tally(mine));
    }
    CHECK_MESSAGE(short_ones.empty(), "processes not counted exactly:", join(short_ones));
    Pairing p = pair_up(t.events, {size});
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{size, size_t(processes) * n}}));
}

}  // namespace

TEST_CASE("lifecycle: a thread other than the main one execs: the new image is tracked exactly") {
    ROOT_SUITE_GUARD();
    const unsigned n = 51;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "thread-exec", fixture("lifecycle"), "alloc", std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_EXECED, 1, n);
    CHECK(pids_of(with_size(t.events, FX_LIFE_EXECED)) == std::set<int>{t.result.root_pid});
    // The exec'ing thread took over the main thread's pid: the tid is the pid.
    CHECK(tids_of(with_size(t.events, FX_LIFE_EXECED)) == std::set<int>{t.result.root_pid});
}

TEST_CASE("lifecycle: the main thread ends with pthread_exit first: the other threads are tracked to the end") {
    ROOT_SUITE_GUARD();
    const unsigned threads = 4, n = 20000;
    // Probes of the process's own, and the shared ones (which look the process up as tracked).
    std::vector<std::string> extra;
    SUBCASE("own probes") {}
    SUBCASE("shared probes") { extra = {"--system-wide-probes"}; }
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "leader-exit", std::to_string(threads), std::to_string(n)}, extra);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    INFO("stats: ", t.result.stats.raw);
    std::set<int> tids;
    for (unsigned i = 0; i < threads; i++) {
        const uint64_t size = FX_LIFE_THREAD0 + 2 * i;
        const auto evs = with_size(t.events, size);
        CHECK_MESSAGE(tally(evs) == "Malloc x" + std::to_string(n), "thread ", i);
        CHECK(pids_of(evs) == std::set<int>{t.result.root_pid});
        const auto mine = tids_of(evs);
        tids.insert(mine.begin(), mine.end());
        Pairing p = pair_up(t.events, {size});
        CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
        CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    }
    CHECK_MESSAGE(tids.size() == threads, "tids ", show(tids));
    CHECK(tids.count(t.result.root_pid) == 0);
    // Every allocation carries its stack: the process's mappings stay known past its main thread.
    size_t without_stack = 0;
    for (const Event& e : t.events)
        if (e.type == "Malloc" && !e.stack_hash) ++without_stack;
    CHECK_MESSAGE(without_stack == 0, without_stack, " Mallocs carry no stack");
}

TEST_CASE("lifecycle: SIGCONTs sent to each new child: it is stopped again before it runs, and every child's counts are exact") {
    ROOT_SUITE_GUARD();
    const unsigned children = 20, n = 5000, conts = 200;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "sigcont-children", std::to_string(children),
                                     std::to_string(n), std::to_string(conts)});
    INFO("stats: ", t.result.stats.raw);
    INFO("memtrack: ", t.result.run.describe(), "\n", t.result.run.err);
    CHECK(t.result.stats.dropped == 0);
    // Each SIGCONT that ended a pause was answered by a RESTOP from its sender
    // (bpf_send_signal_task, Linux 6.13+; without it, 6.1 and 6.12, the sender sends none). New
    // children are held only where they get probes of their own (elsewhere the shared probes
    // serve them from the start, and what is paused there, a new child's snapshot of its
    // mappings, runs on them: counts exact). The child also stops itself again from its own
    // context: at its CLD_CONTINUED notice after a full stop (every kernel), and on its way back
    // to user space when a SIGCONT came before its first stop (where it is held): counted apart
    // (holds_restopped_self, holds_caught_at_start), as many as the race gives.
    const bool restops = kernel_has_per_process_probes();
    const uint64_t broken = stats_u64(t.result.stats, "holds_broken_by_others");
    if (restops) {
        CHECK(broken > 0);
        // A pause the child restores by itself (it was continued from a full stop, or paused for
        // pressure alone, under flood.sh --lifecycle's small ring) is answered by pausing the
        // parent instead (continuers_paused).
        CHECK(stats_u64(t.result.stats, "holds_restopped") + stats_u64(t.result.stats, "continuers_paused") >= broken);
        // The parent is paused after the first SIGCONT that broke a child's pause, once back from
        // kill (owe_pause): a few breaks a child, not hundreds (2000-2800 a run before).
        CHECK(broken <= 10 * children);
    } else {
        CHECK(stats_u64(t.result.stats, "holds_restopped") == 0);
    }
    CHECK(stats_u64(t.result.stats, "holds_unrestored") == 0);
    CHECK(stats_u64(t.result.stats, "spawn_unstopped") == 0);
    // No child reaches user code before it is stopped again: 1 to 7 of 20 did a run before the
    // parent paused and the child stopped itself before its first instruction.
    CHECK(stats_u64(t.result.stats, "holds_escaped") == 0);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_CHILD, children, n);
    MESSAGE("SIGCONTs that ended a pause: ", broken, "; RESTOPs from their senders: ",
            stats_u64(t.result.stats, "holds_restopped"), ", from the children themselves: ",
            stats_u64(t.result.stats, "holds_restopped_self"), " (before their first instruction: ",
            stats_u64(t.result.stats, "holds_caught_at_start"), "); senders paused: ",
            stats_u64(t.result.stats, "continuers_paused"));
}

TEST_CASE("lifecycle: SIGCONTs sent to each new child until it has exited, through its exec: the new images are tracked exactly") {
    ROOT_SUITE_GUARD();
    const unsigned children = 10, n = 2000;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "sigcont-exec", std::to_string(children), fixture("lifecycle"),
                                     "alloc", std::to_string(n)});
    INFO("stats: ", t.result.stats.raw);
    INFO("memtrack: ", t.result.run.describe(), "\n", t.result.run.err);
    // Each child is held as a new process where it gets probes of its own, and its new image
    // until its executable and loader are probed, on every kernel; the SIGCONTs hit both pauses.
    CHECK(stats_u64(t.result.stats, "holds_broken_by_others") > 0);
    // A pause they broke is restored before the child runs code of its own (stopped again by the
    // sender, 6.13+, or by itself: at the CLD_CONTINUED notice, or at its new image's first
    // instruction, the loader's entry), and the parent pauses once back from kill. Where the
    // kernel cannot stop another process from BPF (6.1, 6.12) a pause may not be restored: it is
    // counted, said, and fails the run, and the counts are exact unless memtrack said otherwise.
    const uint64_t unrestored = stats_u64(t.result.stats, "holds_unrestored");
    const uint64_t escaped = stats_u64(t.result.stats, "holds_escaped");
    if (kernel_has_per_process_probes()) CHECK(unrestored + escaped == 0);  // 3 to 8 escaped a run before
    if (unrestored + escaped == 0) {
        CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
        check_common(t);
        check_pairs_per_process(t, FX_LIFE_EXECED, children, n);
    } else {
        CHECK_MESSAGE(t.result.run.status == 1, "memtrack ", t.result.run.describe());
        const auto evs = with_size(t.events, FX_LIFE_EXECED);
        unsigned exact_children = 0;
        for (int pid : pids_of(evs))
            if (tally(of_pid(evs, pid)) == "Malloc x" + std::to_string(n)) ++exact_children;
        CHECK(children - std::min(children, exact_children) <= unrestored + escaped);
    }
    MESSAGE("unrestored: ", unrestored, ", escaped: ", escaped, "; ","SIGCONTs that ended a pause: ", stats_u64(t.result.stats, "holds_broken_by_others"),
            "; RESTOPs from their senders: ", stats_u64(t.result.stats, "holds_restopped"),
            ", from the children themselves: ", stats_u64(t.result.stats, "holds_restopped_self"),
            " (before their first instruction: ", stats_u64(t.result.stats, "holds_caught_at_start"), ")");
}

TEST_CASE("lifecycle: SIGCONTs sent to a child paused for ring pressure until it has exited: its counts are exact, nothing dropped") {
    ROOT_SUITE_GUARD();
    const unsigned n = 20000;
    TempDir dir;
    // A small ring and a consumer slower than the child even in a TCG guest (the child writes
    // ~28K records a second there; a consumer that empties the ring in one chunk and waits only
    // between chunks never let the 6.12 guest reach the mark): at most 16 records every 2 ms,
    // so the child is paused for pressure over and over. flood.sh --lifecycle gives every case a
    // small ring already (MEMTRACK_TEST_TRACK_ARGS): an option given twice is refused.
    const std::vector<std::string> small_ring = {"--ring-size", "64K", "--chunk-records", "16", "--consumer-delay-us", "2000"};
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "sigcont-busy", std::to_string(n)},
                               std::getenv("MEMTRACK_TEST_TRACK_ARGS") ? std::vector<std::string>{} : small_ring);
    INFO("stats: ", t.result.stats.raw);
    INFO("memtrack: ", t.result.run.describe(), "\n", t.result.run.err);
    CHECK(stats_u64(t.result.stats, "pressure_stops") > 0);
    CHECK(stats_u64(t.result.stats, "holds_broken_by_others") > 0);
    // The parent's SIGCONT that ends the child's pressure pause pauses the parent for pressure
    // too, so the child, stopping itself at its next record above the mark, is not continued
    // again until the rings are low. Without that the storm let it write on through the full
    // ring (with this consumer: dropped 13006 and 28226 in 2 of 2 runs).
    CHECK(stats_u64(t.result.stats, "continuers_paused") > 0);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_CHILD, 1, n);
    MESSAGE("pressure stops: ", stats_u64(t.result.stats, "pressure_stops"), "; SIGCONTs that ended a pause: ",
            stats_u64(t.result.stats, "holds_broken_by_others"), "; senders paused: ",
            stats_u64(t.result.stats, "continuers_paused"));
}

// One child allocating FX_LIFE_CHILD n times while its parent (the fixture in `mode`) stops it,
// traces it or continues it: exact, whatever the parent does.
static void check_one_busy_child(const char* mode) {
    const unsigned n = 100000;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), mode, std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_CHILD, 1, n);
}

TEST_CASE("lifecycle: a child stopped and continued by its parent over and over is tracked exactly") {
    ROOT_SUITE_GUARD();
    check_one_busy_child("stop-loop");
}

TEST_CASE("lifecycle: a child under ptrace, interrupted over and over by its tracer, is tracked exactly") {
    ROOT_SUITE_GUARD();
    check_one_busy_child("traced");
}

TEST_CASE("lifecycle: a vfork child that execs (posix_spawn's way) is tracked exactly") {
    ROOT_SUITE_GUARD();
    const unsigned n = 51;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "vfork-exec", fixture("lifecycle"), "alloc", std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_EXECED, 1, n);
    CHECK(pids_of(with_size(t.events, FX_LIFE_EXECED)).count(t.result.root_pid) == 0);
}

TEST_CASE("lifecycle: a thread ends the process with exit() while the main thread waits: events whole, status kept") {
    ROOT_SUITE_GUARD();
    const unsigned n = 20000;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("lifecycle"), "thread-exit", std::to_string(n), "7"});
    CHECK_MESSAGE(t.result.run.status == 7, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_THREAD0, 1, n);
}

TEST_CASE("lifecycle: a process in a pid namespace it made itself (unshare) is tracked exactly") {
    ROOT_SUITE_GUARD();
    const unsigned n = 51;
    TempDir dir;
    Tracked t = track_and_dump(dir, {"unshare", "--pid", "--fork", fixture("lifecycle"), "alloc", std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_pairs_per_process(t, FX_LIFE_EXECED, 1, n);
}
