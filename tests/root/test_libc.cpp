// glibc's allocation functions, through the libc_all fixture (tests/progs/libc_all.c).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

const std::set<uint64_t> kSizes = {
    FX_LIBC_MALLOC,        FX_LIBC_BLOCKER,   FX_LIBC_CALLOC,    FX_LIBC_GROW_FROM, FX_LIBC_GROW_TO,     FX_LIBC_REALLOC_NULL,
    FX_LIBC_REALLOC_ZERO,  FX_LIBC_REALLOC_FAIL, FX_LIBC_RA_NULL, FX_LIBC_RA_FROM,    FX_LIBC_RA_TO,
    FX_LIBC_ALIGNED_ALLOC, FX_LIBC_MEMALIGN,  FX_LIBC_POSIX_MEMALIGN, FX_LIBC_VALLOC, FX_LIBC_PVALLOC,
};

std::string times(const char* type, unsigned n) {
    return std::string(type) + " x" + std::to_string(n);
}

// Everything libc_all N must have recorded, whatever the pid it ran as.
void check_libc_all(const std::vector<Event>& events, unsigned n) {
    const std::map<uint64_t, std::string> expected = {
        {FX_LIBC_MALLOC, times("Malloc", n)},
        {FX_LIBC_CALLOC, times("Calloc", n)},
        {FX_LIBC_GROW_FROM, times("Malloc", n)},
        {FX_LIBC_BLOCKER, times("Malloc", n)},
        {FX_LIBC_GROW_TO, times("Realloc", n)},
        {FX_LIBC_REALLOC_NULL, times("Malloc", n)},
        {FX_LIBC_REALLOC_ZERO, times("Malloc", n)},
        {FX_LIBC_REALLOC_FAIL, times("Malloc", n)},
        {FX_LIBC_RA_NULL, times("Malloc", n)},
        {FX_LIBC_RA_FROM, times("Malloc", n)},
        {FX_LIBC_RA_TO, times("Realloc", n)},
        {FX_LIBC_ALIGNED_ALLOC, times("AlignedAlloc", n)},
        {FX_LIBC_MEMALIGN, times("AlignedAlloc", n)},
        {FX_LIBC_POSIX_MEMALIGN, times("AlignedAlloc", n)},
        {FX_LIBC_VALLOC, times("Malloc", n)},
        {FX_LIBC_PVALLOC, times("Malloc", n)},
    };
    CHECK(show(tally_by_size(events, kSizes)) == show(expected));

    // Every block the fixture allocates is freed once, through free() or realloc(p, 0); the two
    // realloc'd blocks are freed at their new size.
    Pairing p = pair_up(events, kSizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "fixture blocks never freed:", join(p.live));
    CHECK(p.allocations == 14 * n);
    CHECK(show(p.reallocs) == show(std::map<uint64_t, size_t>{{FX_LIBC_GROW_FROM, n}, {FX_LIBC_RA_FROM, n}}));
    std::map<uint64_t, size_t> frees;
    for (uint64_t size : kSizes)
        if (size != FX_LIBC_GROW_FROM && size != FX_LIBC_RA_FROM) frees[size] = n;
    CHECK(show(p.frees) == show(frees));

    // One single-threaded process.
    auto mine = select(events, [](const Event& e) { return e.size && kSizes.count(*e.size); });
    auto pids = pids_of(mine);
    CHECK_MESSAGE(pids.size() == 1, "pids ", show(pids));
    CHECK_MESSAGE(tids_of(mine) == pids, "tids ", show(tids_of(mine)), " pids ", show(pids));
}

}  // namespace

TEST_CASE("libc: each allocation function is recorded once, with its kind and exact size") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("libc_all"), "10"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_libc_all(t.events, 10);
    CHECK(pids_of(with_size(t.events, FX_LIBC_MALLOC)) == std::set<int>{t.result.root_pid});
}

TEST_CASE("libc: realloc edge cases") {
    ROOT_SUITE_GUARD();
    const unsigned n = 4;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("libc_all"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    const auto ev = by_time(of_pid(t.events, t.result.root_pid));
    // One run, several aspects: each block says which one a failure is about.

    {
        INFO("realloc(p, n) that moves the block: Realloc at the new address, old_addr = the block it was given");
        // The fixture allocates the N blocks up front, each followed by a blocker, then realloc's
        // each once; it checks the block moved.
        std::set<uint64_t> from;
        for (const Event& e : ev)
            if (e.type == "Malloc" && e.size == FX_LIBC_GROW_FROM) from.insert(e.addr);
        CHECK(from.size() == n);
        std::vector<std::string> wrong;
        size_t seen = 0;
        for (const Event& e : ev) {
            if (e.type != "Realloc" || e.size != FX_LIBC_GROW_TO) continue;
            seen++;
            if (!e.old_addr || from.erase(*e.old_addr) != 1)
                wrong.push_back(e.describe() + ": old_addr is not one of the blocks malloc'd with size " +
                                std::to_string(FX_LIBC_GROW_FROM) + " (or is used twice)");
            else if (e.addr == *e.old_addr)
                wrong.push_back(e.describe() + ": addr is the old block's, not the new one's");
        }
        CHECK(seen == n);
        CHECK_MESSAGE(wrong.empty(), join(wrong));
    }
    {
        INFO("realloc(NULL, n) is a Malloc");
        CHECK(tally(with_size(ev, FX_LIBC_REALLOC_NULL)) == times("Malloc", n));
    }
    {
        INFO("realloc(p, 0) is one Free of p, and no allocation");
        Pairing p = pair_up(ev, {FX_LIBC_REALLOC_ZERO});
        CHECK_MESSAGE(p.problems.empty(), p.problems_text());
        CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{FX_LIBC_REALLOC_ZERO, n}}));
        CHECK(tally(select(ev, [](const Event& e) { return e.type != "Brk" && e.size == 0u; })) == "none");
    }
    {
        INFO("a failed realloc records nothing, and the block it was given is freed once later");
        Pairing p = pair_up(ev, {FX_LIBC_REALLOC_FAIL});
        CHECK_MESSAGE(p.problems.empty(), p.problems_text());
        CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{FX_LIBC_REALLOC_FAIL, n}}));
        CHECK(p.reallocs.empty());
        CHECK(tally(with_size(ev, SIZE_MAX / 2)) == "none");
    }
    {
        INFO("failed malloc and calloc, and free(NULL), record nothing");
        CHECK(tally(with_size(ev, SIZE_MAX / 2)) == "none");
        CHECK(tally(with_size(ev, (SIZE_MAX / 2) * 3)) == "none");  // calloc's n*s, wrapped
        CHECK(tally(select(ev, [](const Event& e) { return e.addr == 0; })) == "none");
    }
    {
        INFO("reallocarray");
        CHECK(tally(with_size(ev, FX_LIBC_RA_NULL)) == times("Malloc", n));
        CHECK(tally(with_size(ev, FX_LIBC_RA_TO)) == times("Realloc", n));
        Pairing p = pair_up(ev, {FX_LIBC_RA_FROM, FX_LIBC_RA_TO});
        CHECK_MESSAGE(p.problems.empty(), p.problems_text());
        CHECK(show(p.reallocs) == show(std::map<uint64_t, size_t>{{FX_LIBC_RA_FROM, n}}));
    }
    {
        INFO("posix_memalign records the block it stores through its out-pointer");
        // The fixture frees exactly that pointer: a wrong address would leave the block live.
        Pairing p = pair_up(ev, {FX_LIBC_POSIX_MEMALIGN});
        CHECK_MESSAGE(p.problems.empty(), p.problems_text());
        CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{FX_LIBC_POSIX_MEMALIGN, n}}));
        CHECK(p.live.empty());
        for (const Event& e : with_size(ev, FX_LIBC_POSIX_MEMALIGN)) CHECK_MESSAGE(e.addr % 256 == 0, e.describe());
    }
}

TEST_CASE("cli: the single-string command form runs through bash -c with the same events") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_args_and_dump(dir, {fixture("libc_all") + " 5"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_libc_all(t.events, 5);
}

TEST_CASE("libc: a long run loses nothing") {
    ROOT_SUITE_GUARD();
    // ~30 records per round: enough for the consumer to fall behind now and then.
    const unsigned n = 3000;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("libc_all"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_libc_all(t.events, n);
}

TEST_CASE("process: a descendant that execs another program is tracked") {
    ROOT_SUITE_GUARD();
    // sh forks for a command that is not its last, so libc_all runs in a child of the root
    // process, in a program image exec'd after tracking started.
    TempDir dir;
    Tracked t = track_and_dump(dir, {"/bin/sh", "-c", fixture("libc_all") + " 3; exit 0"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_libc_all(t.events, 3);
    auto pids = pids_of(with_size(t.events, FX_LIBC_MALLOC));
    CHECK_MESSAGE(pids.count(t.result.root_pid) == 0, "libc_all ran as the root process ", t.result.root_pid,
                  ": sh did not fork, the test proves nothing");
}
