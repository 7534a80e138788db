// The watermark policy PressureControl applies and the histogram behind every *_ms statistic.
#include <doctest/doctest.h>

#include "core/Histogram.hpp"
#include "actors/PressureControl.hpp"

using memtrack::Histogram;
using memtrack::WatermarkPolicy;

TEST_CASE("resume below the low watermark, not only when empty") {
    WatermarkPolicy p{0.75, 0.25};
    CHECK(p.should_resume(0.2499));
    CHECK(p.should_resume(0.0));
    CHECK_FALSE(p.should_resume(0.25));
    CHECK_FALSE(p.should_resume(0.5));
}

TEST_CASE("resume-fill 0 is the old resume-at-empty behaviour") {
    WatermarkPolicy p{0.75, 0.0};
    CHECK(p.should_resume(0.0));
    CHECK_FALSE(p.should_resume(0.0001));
}

TEST_CASE("histogram percentiles stay within a bucket of the truth") {
    Histogram h;
    for (uint64_t v = 1; v <= 100000; ++v) h.add(v * 1000);  // 1 us .. 100 ms
    CHECK(h.count() == 100000);
    CHECK(h.max() == 100000000);
    const double p50 = double(h.percentile(0.50)), p99 = double(h.percentile(0.99));
    CHECK(p50 >= 50000000.0 * 0.94);
    CHECK(p50 <= 50000000.0 * 1.07);
    CHECK(p99 >= 99000000.0 * 0.94);
    CHECK(p99 <= 100000000.0);
}

TEST_CASE("histogram edges: empty, small values, one huge value") {
    Histogram h;
    CHECK(h.percentile(0.5) == 0);
    h.add(0);
    h.add(3);
    CHECK(h.percentile(0.0) == 0);
    CHECK(h.percentile(1.0) == 3);
    h.add(~0ull);
    CHECK(h.max() == ~0ull);
    CHECK(h.percentile(1.0) == ~0ull);
    for (uint64_t v : {17ull, 1000ull, 123456789ull, 1ull << 40}) {
        const size_t i = Histogram::index(v);
        CHECK(Histogram::upper_edge(i) >= v);
        CHECK(Histogram::index(Histogram::upper_edge(i)) == i);
    }
}
