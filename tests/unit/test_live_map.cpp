// report/LiveMap, the open-addressing table of live blocks, against std::map under random
// inserts and erases: backward-shift deletion must keep every remaining key findable.
#include <doctest/doctest.h>

#include <map>
#include <random>
#include <utility>
#include <vector>

#include "report/LiveMap.hpp"

using namespace memtrack::report;

TEST_CASE("LiveMap finds, replaces and erases like a std::map") {
    LiveMap live;
    std::map<std::pair<int32_t, uint64_t>, uint64_t> want;
    std::mt19937_64 rng(7);
    // Few distinct addresses, so runs collide and erases shift; growth from the minimum size.
    for (int step = 0; step < 200000; ++step) {
        const BlockKey key{int32_t(rng() % 3), 16 * (1 + rng() % 5000)};
        if (rng() % 2) {
            auto [b, fresh] = live.try_emplace(key);
            CHECK(fresh == !want.contains({key.pid, key.addr}));
            b->size = uint64_t(step);
            want[{key.pid, key.addr}] = uint64_t(step);
        } else if (Block* b = live.find(key)) {
            REQUIRE(want.contains({key.pid, key.addr}));
            CHECK(b->size == want[{key.pid, key.addr}]);
            live.erase(b);
            want.erase({key.pid, key.addr});
        } else {
            CHECK(!want.contains({key.pid, key.addr}));
        }
        REQUIRE(live.size() == want.size());
    }
    size_t seen = 0;
    live.for_each([&](const BlockKey& k, const Block& b) {
        ++seen;
        auto it = want.find({k.pid, k.addr});
        REQUIRE(it != want.end());
        CHECK(b.size == it->second);
    });
    CHECK(seen == want.size());
    for (auto& [k, size] : want) {
        Block* b = live.find(BlockKey{k.first, k.second});
        REQUIRE(b);
        CHECK(b->size == size);
    }
}
