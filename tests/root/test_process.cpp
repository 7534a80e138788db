// Processes and threads: fork_tree, threads, exit3, killed and inherit (tests/progs/).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

// What fork_tree N must have produced: each member's sizes exactly, from its own process, every
// block freed, and each new process held until its probes existed.
void check_fork_tree(const Tracked& t, unsigned n) {
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    // size -> how many times its process allocates it
    const std::map<uint64_t, unsigned> counts = {
        {FX_FORK_PARENT, n}, {FX_FORK_CHILD0, n}, {FX_FORK_CHILD1, 2 * n}, {FX_FORK_CHILD2, 3 * n},
        {FX_FORK_GRANDCHILD, 4 * n},
    };
    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    std::map<uint64_t, size_t> expected_frees;
    for (const auto& [size, k] : counts) {
        sizes.insert(size);
        expected[size] = "Malloc x" + std::to_string(k);
        expected_frees[size] = k;
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    // Each size comes from exactly one process, and those are five different processes.
    std::set<int> all_pids;
    for (uint64_t size : sizes) {
        auto evs = with_size(t.events, size);
        auto pids = pids_of(evs);
        CHECK_MESSAGE(pids.size() == 1, "size ", size, " from pids ", show(pids));
        CHECK_MESSAGE(tids_of(evs) == pids, "size ", size, ": tids ", show(tids_of(evs)), " != pids ", show(pids));
        all_pids.insert(pids.begin(), pids.end());
    }
    CHECK_MESSAGE(all_pids.size() == 5, "pids ", show(all_pids));
    CHECK(pids_of(with_size(t.events, FX_FORK_PARENT)) == std::set<int>{t.result.root_pid});
    for (uint64_t size : {FX_FORK_CHILD0, FX_FORK_CHILD1, FX_FORK_CHILD2, FX_FORK_GRANDCHILD})
        CHECK_MESSAGE(pids_of(with_size(t.events, size)).count(t.result.root_pid) == 0, "size ", size);

    // Frees are matched per process (a child's heap is a copy of its parent's).
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(expected_frees));

    // Each of the four new processes was held until its own probes existed, none ran without.
    // Without per-process probes (KernelFeatures) every process traps in the shared ones.
    INFO("stats: ", t.result.stats.raw);
    const bool own = kernel_has_per_process_probes();
    CHECK(stats_u64(t.result.stats, "spawn_stops") == (own ? 4 : 0));
    CHECK(stats_u64(t.result.stats, "spawn_unstopped") == 0);
    CHECK(stats_u64(t.result.stats, "processes_probed") + stats_u64(t.result.stats, "processes_on_shared_probes") ==
          (own ? 5 : 1));
    CHECK(stats_u64(t.result.stats, "probe_attach_errors") == 0);
}

// memtrack as a container runs it: the first process of a new pid namespace, /proc mounted for it.
const std::vector<std::string> kNewPidNamespace = {"unshare", "--pid", "--fork", "--mount-proc"};

}  // namespace

TEST_CASE("process: a fork tree is tracked, each event carrying the pid that allocated") {
    ROOT_SUITE_GUARD();
    const unsigned n = 5;
    TempDir dir;
    check_fork_tree(track_and_dump(dir, {fixture("fork_tree"), std::to_string(n)}), n);
}

TEST_CASE("process: in a pid namespace of its own, a fork tree is tracked exactly, stacks included") {
    ROOT_SUITE_GUARD();
    const unsigned n = 5;
    TempDir dir;
    Tracked t;
    t.result = track_wrapped(dir, kNewPidNamespace, {fixture("fork_tree"), std::to_string(n)});
    t.events = dump(t.result.artifact);
    check_fork_tree(t, n);
    // The pids are the namespace's: memtrack is its pid 1, the command one of the first few.
    CHECK_MESSAGE(t.result.root_pid < 100, "root pid ", t.result.root_pid, " is not one of the new namespace's");
    size_t without_stack = 0;
    for (const Event& e : t.events)
        if (e.type == "Malloc" && !e.stack_hash) ++without_stack;
    CHECK_MESSAGE(without_stack == 0, without_stack, " Mallocs carry no stack");
    INFO("stats: ", t.result.stats.raw);
    CHECK(stats_u64(t.result.stats, "snapshot_stops") == 5);
}

TEST_CASE("process: in a pid namespace of its own with --no-stacks, a fork tree is tracked exactly") {
    ROOT_SUITE_GUARD();
    const unsigned n = 5;
    TempDir dir;
    Tracked t;
    t.result = track_wrapped(dir, kNewPidNamespace, {fixture("fork_tree"), std::to_string(n)}, {"--no-stacks"});
    t.events = dump(t.result.artifact);
    check_fork_tree(t, n);
}

TEST_CASE("process: /proc of another pid namespace than memtrack's is refused in one line") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    // A new pid namespace with the old /proc: its pids are not memtrack's.
    const RunResult r = run({"unshare", "--pid", "--fork", memtrack_bin(), "track", "-o", dir / "out", "--", fixture("exit3")});
    CHECK_MESSAGE(r.status == 1, r.describe());
    CHECK_MESSAGE(is_one_line(r.err), r.err);
    CHECK_MESSAGE(r.err.find("/proc") != std::string::npos, r.err);
}

TEST_CASE("process: more live processes than get probes of their own: the rest use the shared ones, counts exact") {
    ROOT_SUITE_GUARD();
    const unsigned k = 8;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("wide_tree"), std::to_string(k)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    for (unsigned i = 0; i < k; i++) {
        sizes.insert(FX_WIDE_BASE + i);
        expected[FX_WIDE_BASE + i] = "Malloc x" + std::to_string(i + 1);
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));
    std::set<int> all_pids;
    for (uint64_t size : sizes) {
        auto pids = pids_of(with_size(t.events, size));
        CHECK_MESSAGE(pids.size() == 1, "size ", size, " from pids ", show(pids));
        all_pids.insert(pids.begin(), pids.end());
    }
    CHECK(all_pids.size() == k);
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));

    INFO("stats: ", t.result.stats.raw);
    // Every process was probed one way or the other. No child exits before every child has run
    // (wide_tree.c), so the command and the first kMaxOwnLinked - 1 = 3 children got links of
    // their own and the other k - 3 children the shared probes.
    const uint64_t own = stats_u64(t.result.stats, "processes_probed");
    const uint64_t shared = stats_u64(t.result.stats, "processes_on_shared_probes");
    CHECK(own + shared == k + 1);
    CHECK(own == 4);
    CHECK(shared == k - 3);
    CHECK(stats_u64(t.result.stats, "spawn_unstopped") == 0);
    // The shared probes trap every process that maps the C library, memtrack too, unless its
    // own allocator lives in its own file (meson.build).
    CHECK(stats_u64(t.result.stats, "self_traps") == 0);
}

TEST_CASE("process: threads carry their own tid and the process's pid") {
    ROOT_SUITE_GUARD();
    const unsigned n = 10;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("threads"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    const std::set<uint64_t> sizes = {FX_THREAD0, FX_THREAD1, FX_THREAD2, FX_THREAD3};
    std::map<uint64_t, std::string> expected;
    std::map<uint64_t, size_t> expected_frees;
    for (uint64_t s : sizes) {
        expected[s] = "Malloc x" + std::to_string(n);
        expected_frees[s] = n;
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    std::set<int> all_tids;
    for (uint64_t size : sizes) {
        auto evs = with_size(t.events, size);
        CHECK_MESSAGE(pids_of(evs) == std::set<int>{t.result.root_pid}, "size ", size, " pids ", show(pids_of(evs)));
        auto tids = tids_of(evs);
        CHECK_MESSAGE(tids.size() == 1, "size ", size, " tids ", show(tids));
        all_tids.insert(tids.begin(), tids.end());
    }
    CHECK_MESSAGE(all_tids.size() == 4, "tids ", show(all_tids));
    CHECK_MESSAGE(all_tids.count(t.result.root_pid) == 0, "a worker's tid is the main thread's: ", show(all_tids));

    // Each thread frees its own blocks: the Free carries the same tid as the Malloc.
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(expected_frees));
    // The worker does nothing between its malloc and its free: in that thread, the event right
    // after each Malloc is the Free of that block.
    std::vector<std::string> wrong;
    for (int tid : all_tids) {
        auto evs = by_time(select(t.events, [tid](const Event& e) { return e.tid == tid; }));
        for (size_t i = 0; i < evs.size(); i++) {
            if (evs[i].type != "Malloc" || !sizes.count(*evs[i].size)) continue;
            if (i + 1 >= evs.size() || evs[i + 1].type != "Free" || evs[i + 1].addr != evs[i].addr)
                wrong.push_back(evs[i].describe() + " is followed by " +
                                (i + 1 < evs.size() ? evs[i + 1].describe() : std::string("nothing")));
        }
    }
    CHECK_MESSAGE(wrong.empty(), "Malloc not followed by its Free in the same thread:", join(wrong));
}

// fd-find's lost frees (#29): its receiver thread frees its walker's blocks and allocates nothing
// between frees, so an address the walker got back was freed again by the same free() at the same
// stack pointer, and the thread's last-free marker took it for a free inside the first one.
TEST_CASE("process: a thread freeing blocks another thread allocates again at the same address records every Free") {
    ROOT_SUITE_GUARD();
    const unsigned n = 100;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("cross_free"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    const std::set<uint64_t> sizes = {FX_CROSS_FREE};
    CHECK(tally(with_size(t.events, FX_CROSS_FREE)) == "Malloc x" + std::to_string(n));
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{FX_CROSS_FREE, n}}));
    // Allocated by the producer thread, freed by the main thread.
    auto frees = select(t.events, [](const Event& e) { return e.type == "Free"; });
    auto mallocs = with_size(t.events, FX_CROSS_FREE);
    CHECK(tids_of(mallocs).size() == 1);
    CHECK(tids_of(mallocs).count(t.result.root_pid) == 0);
    std::set<uint64_t> addrs;
    for (const Event& e : mallocs) addrs.insert(e.addr);
    size_t main_frees = 0;
    for (const Event& e : frees)
        if (addrs.count(e.addr) && e.tid == t.result.root_pid) main_frees++;
    CHECK(main_frees == n);
}

TEST_CASE("process: the command's exit status is memtrack's, and the artifact stays valid") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("exit3")});
    CHECK_MESSAGE(t.result.run.status == 3, "memtrack ", t.result.run.describe());
    CHECK_FALSE(t.result.run.signaled);
    check_common(t);
    CHECK(tally(with_size(t.events, FX_EXIT3_SIZE)) == "Malloc x1");
    CHECK(pids_of(with_size(t.events, FX_EXIT3_SIZE)) == std::set<int>{t.result.root_pid});
}

TEST_CASE("process: a command killed by SIGTERM makes memtrack exit 143") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("killed")});
    CHECK_MESSAGE(t.result.run.status != 87,
                  "the fixture survived its own SIGTERM: memtrack started it with SIGTERM ignored or blocked");
    CHECK_MESSAGE(t.result.run.status == 128 + 15, "memtrack ", t.result.run.describe());
    CHECK_FALSE(t.result.run.signaled);  // memtrack itself exits; it is not killed
    check_common(t);
    CHECK(tally(with_size(t.events, FX_KILLED_SIZE)) == "Malloc x1");
    CHECK(pids_of(with_size(t.events, FX_KILLED_SIZE)) == std::set<int>{t.result.root_pid});
}

TEST_CASE("process: the command inherits nothing of memtrack's (signal dispositions, mask, fds)") {
    ROOT_SUITE_GUARD();
    // The harness starts memtrack clean (see run()); the fixture lists whatever differs.
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("inherit")});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
}
