// System-call level memory: mmap_ops and big_alloc (tests/progs/).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

TEST_CASE("syscalls: mmap, munmap, mremap and brk") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("mmap_ops"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    const std::set<uint64_t> lengths = {FX_MMAP_LEN, FX_MREMAP_FROM, FX_MREMAP_GROW, FX_MREMAP_SHRINK};
    std::map<uint64_t, std::string> expected;
    for (uint64_t len : lengths) expected[len] = "Mmap x" + std::to_string(n) + ", Munmap x" + std::to_string(n);
    CHECK(show(tally_by_size(t.events, lengths)) == show(expected));

    // The fixture never mallocs, and startup only calls brk(0): its sbrk calls are the only Brk.
    const auto mine = by_time(of_pid(t.events, t.result.root_pid));
    CHECK(tally(select(t.events, [](const Event& e) { return e.type == "Brk"; })) ==
          "Brk x" + std::to_string(2 * n));

    // In time order, each round is exactly this sequence.
    auto seq = select(mine, [&](const Event& e) {
        return e.type == "Brk" || ((e.type == "Mmap" || e.type == "Munmap") && lengths.count(*e.size));
    });
    const std::string round_shape = "Mmap 151675, Munmap 151675, Mmap 167936, Munmap 167936, Mmap 397312, "
                                    "Munmap 397312, Mmap 217088, Munmap 217088, Brk 0, Brk 0, ";
    std::string expected_shape, shape;
    for (unsigned i = 0; i < n; i++) expected_shape += round_shape;
    for (const Event& e : seq) shape += e.type + " " + std::to_string(*e.size) + ", ";
    REQUIRE(shape == expected_shape);

    std::vector<std::string> wrong;
    auto same = [&](const Event& a, const Event& b, const char* what) {
        if (a.addr != b.addr) wrong.push_back(std::string(what) + ": " + a.describe() + " vs " + b.describe());
    };
    for (unsigned r = 0; r < n; r++) {
        const Event* e = &seq[10 * r];
        same(e[0], e[1], "munmap of the mmap'd block");
        same(e[2], e[3], "mremap's Munmap is the old block");
        same(e[4], e[5], "the shrinking mremap unmaps the grown block");
        same(e[4], e[6], "the shrinking mremap stays in place");
        same(e[6], e[7], "munmap of the remapped block");
        if (e[8].addr != e[9].addr + FX_SBRK_INC)
            wrong.push_back("sbrk(+" + std::to_string(FX_SBRK_INC) + ") then sbrk(-" + std::to_string(FX_SBRK_INC) +
                            "): " + e[8].describe() + " then " + e[9].describe());
    }
    CHECK_MESSAGE(wrong.empty(), join(wrong));
    CHECK(tids_of(seq) == std::set<int>{t.result.root_pid});
}

TEST_CASE("syscalls: glibc's own mmap, munmap and brk inside malloc and free are not recorded") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("big_alloc"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    const std::set<uint64_t> sizes = {FX_BIG_START_MARK, FX_BIG_SIZE, FX_BIG_END_MARK};
    const std::map<uint64_t, std::string> expected = {
        {FX_BIG_START_MARK, "Malloc x1"},
        {FX_BIG_SIZE, "Malloc x" + std::to_string(n)},
        {FX_BIG_END_MARK, "Malloc x1"},
    };
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK(show(p.frees) == show(std::map<uint64_t, size_t>{{FX_BIG_START_MARK, 1}, {FX_BIG_SIZE, n}, {FX_BIG_END_MARK, 1}}));

    // Between the start marker's Free and the end marker's Malloc the process does nothing but
    // the big malloc/free pairs.
    const auto mine = by_time(of_pid(t.events, t.result.root_pid));
    size_t start = mine.size(), end = mine.size();
    for (size_t i = 0; i < mine.size(); i++) {
        if (mine[i].type == "Malloc" && mine[i].size == FX_BIG_START_MARK) {
            for (size_t j = i + 1; j < mine.size(); j++)
                if (mine[j].type == "Free" && mine[j].addr == mine[i].addr) {
                    start = j;
                    break;
                }
        }
        if (mine[i].type == "Malloc" && mine[i].size == FX_BIG_END_MARK) end = i;
    }
    REQUIRE_MESSAGE(start < end, "markers not found in order");
    std::vector<Event> window(mine.begin() + long(start) + 1, mine.begin() + long(end));
    std::vector<std::string> lines;
    for (const auto& e : window) lines.push_back(e.describe());
    CHECK_MESSAGE(tally(window) == "Free x" + std::to_string(n) + ", Malloc x" + std::to_string(n),
                  "events between the markers:", join(lines, 40));

    // Nor anywhere else: glibc maps the 1 MiB chunk plus its header, rounded to pages, and the
    // fixture itself never calls brk.
    CHECK(tally(select(t.events, [](const Event& e) { return e.size && *e.size > FX_BIG_SIZE && *e.size <= FX_BIG_SIZE + 8192; })) == "none");
    CHECK(tally(select(mine, [](const Event& e) { return e.type == "Brk"; })) == "none");
}

TEST_CASE("syscalls: the dynamic loader's own mappings (ld.so.cache, the program's objects) are not recorded") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    // exit3 maps nothing itself: one malloc, then exit 3. The loader mapped libc, the fixture's
    // objects and /etc/ld.so.cache before main (8 Mmap and 1 Munmap when ld.so was probed).
    Tracked t = track_and_dump(dir, {fixture("exit3")});
    CHECK_MESSAGE(t.result.run.status == 3, "memtrack ", t.result.run.describe());
    CHECK(tally(select(t.events, [](const Event& e) { return e.type == "Mmap" || e.type == "Munmap" || e.type == "Brk"; })) ==
          "none");
    CHECK(tally(select(t.events, [](const Event& e) { return e.size && *e.size == FX_EXIT3_SIZE; })) == "Malloc x1");
}
