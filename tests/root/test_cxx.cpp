// libstdc++'s operator new and operator delete, through the cxx_ops fixture
// (tests/progs/cxx_ops.cpp). libstdc++ implements them on top of one another and of
// malloc/aligned_alloc/free: each must still be recorded exactly once, as the outer call.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

constexpr uint64_t round_up(uint64_t size, uint64_t align) {
    return (size + align - 1) / align * align;
}

}  // namespace

TEST_CASE("c++: every operator new is one Malloc or AlignedAlloc and every operator delete one Free") {
    ROOT_SUITE_GUARD();
    const unsigned n = 10;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("cxx_ops"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    const std::string malloc_n = "Malloc x" + std::to_string(n);
    const std::string aligned_n = "AlignedAlloc x" + std::to_string(n);
    const std::map<uint64_t, std::string> expected = {
        {FX_CXX_NEW_OBJ, malloc_n},         {FX_CXX_NEW_ARR, malloc_n},
        {FX_CXX_NEW_ARR_DTOR, malloc_n},    {FX_CXX_NOTHROW_OBJ, malloc_n},
        {FX_CXX_NOTHROW_ARR, malloc_n},     {FX_CXX_OPNEW, malloc_n},
        {FX_CXX_OPNEW_ARR, malloc_n},       {FX_CXX_OPNEW_SIZED, malloc_n},
        {FX_CXX_ALIGNED_OBJ, aligned_n},    {FX_CXX_ALIGNED_ARR, aligned_n},
        {FX_CXX_OPNEW_AL, aligned_n},       {FX_CXX_OPNEW_ARR_AL, aligned_n},
        {FX_CXX_OPNEW_AL_NT, aligned_n},    {FX_CXX_OPNEW_ARR_AL_NT, aligned_n},
    };
    std::set<uint64_t> sizes;
    for (const auto& [size, _] : expected) sizes.insert(size);
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    // The aligned_alloc libstdc++ makes inside aligned operator new asks for the size rounded up
    // to the alignment: seeing it means the nested call was recorded too (or instead).
    const std::set<uint64_t> inner = {
        round_up(FX_CXX_OPNEW_AL, FX_CXX_OPNEW_AL_ALIGN),
        round_up(FX_CXX_OPNEW_ARR_AL, FX_CXX_OPNEW_ARR_AL_ALIGN),
        round_up(FX_CXX_OPNEW_AL_NT, FX_CXX_OPNEW_AL_NT_ALIGN),
        round_up(FX_CXX_OPNEW_ARR_AL_NT, FX_CXX_OPNEW_ARR_AL_NT_ALIGN),
    };
    std::map<uint64_t, std::string> none;
    for (uint64_t s : inner) none[s] = "none";
    CHECK(show(tally_by_size(t.events, inner)) == show(none));

    // One Free per delete, each at a block operator new returned: 12 delete forms, 14 blocks.
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(p.allocations == sizes.size() * n);
    std::map<uint64_t, size_t> frees;
    for (uint64_t s : sizes) frees[s] = n;
    CHECK(show(p.frees) == show(frees));

    // Alignment requests honoured, so the address recorded is the one operator new returned.
    for (const Event& e : with_size(t.events, FX_CXX_ALIGNED_OBJ)) CHECK_MESSAGE(e.addr % FX_CXX_ALIGNED_ALIGN == 0, e.describe());
    for (const Event& e : with_size(t.events, FX_CXX_OPNEW_AL_NT)) CHECK_MESSAGE(e.addr % FX_CXX_OPNEW_AL_NT_ALIGN == 0, e.describe());

    auto mine = select(t.events, [&](const Event& e) { return e.size && sizes.count(*e.size); });
    CHECK(pids_of(mine) == std::set<int>{t.result.root_pid});
    CHECK(tids_of(mine) == std::set<int>{t.result.root_pid});
}
