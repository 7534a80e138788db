// When an RSS record is written (src/bpf/rss.h): the rule the BPF program runs at each rss_stat.
#include <doctest/doctest.h>

extern "C" {
#include "bpf/rss.h"
}

namespace {
constexpr __u64 kMiB = 1ull << 20;

bool moved(const mt_rss_sent& sent, __u64 file, __u64 anon, __u64 swap, __u64 shmem, __u64 granularity) {
    const __u64 now[MT_RSS_MEMBERS] = {file, anon, swap, shmem};
    return mt_rss_moved(&sent, now, granularity);
}
}  // namespace

TEST_CASE("a small process is followed to the granularity, either way") {
    mt_rss_sent sent{{4 * kMiB, 10 * kMiB, 0, 0}};
    CHECK_FALSE(moved(sent, 4 * kMiB, 11 * kMiB - 4096, 0, 0, kMiB));
    CHECK(moved(sent, 4 * kMiB, 11 * kMiB, 0, 0, kMiB));
    CHECK(moved(sent, 4 * kMiB, 9 * kMiB, 0, 0, kMiB));
    CHECK(moved(sent, 3 * kMiB, 10 * kMiB, 0, 0, kMiB));  // any counter
    CHECK(moved(sent, 4 * kMiB, 10 * kMiB, kMiB, 0, kMiB));
    CHECK(moved(sent, 4 * kMiB, 10 * kMiB, 0, kMiB, kMiB));
}

TEST_CASE("a record that showed no memory is followed by one at the next change, however small") {
    // A new image's first record often reads 0 everywhere (its pages not yet folded into the
    // kernel's shared counts); at 1 MiB steps from there a small program never showed any.
    const mt_rss_sent empty{{0, 0, 0, 0}};
    CHECK(moved(empty, 128 * 1024, 0, 0, 0, kMiB));
    CHECK(moved(empty, 0, 4096, 0, 0, kMiB));
    CHECK_FALSE(moved(empty, 0, 0, 0, 0, kMiB));
    // Not once something was shown.
    const mt_rss_sent some{{4096, 0, 0, 0}};
    CHECK_FALSE(moved(some, 128 * 1024, 0, 0, 0, kMiB));
}

TEST_CASE("a large process is followed to 1/64 of each counter") {
    mt_rss_sent sent{{0, 4096 * kMiB, 0, 0}};  // 4 GiB anonymous: steps of 64 MiB
    CHECK_FALSE(moved(sent, 0, 4096 * kMiB + 63 * kMiB, 0, 0, kMiB));
    CHECK(moved(sent, 0, 4096 * kMiB + 64 * kMiB, 0, 0, kMiB));
    CHECK(moved(sent, 0, 4096 * kMiB - 64 * kMiB, 0, 0, kMiB));
    // A granularity above 1/64 of the value wins.
    CHECK_FALSE(moved(sent, 0, 4096 * kMiB + 64 * kMiB, 0, 0, 128 * kMiB));
}

TEST_CASE("granularity 0 records every change and nothing else") {
    mt_rss_sent sent{{4096, 8192, 0, 0}};
    CHECK_FALSE(moved(sent, 4096, 8192, 0, 0, 0));
    CHECK(moved(sent, 4096, 8192 + 4096, 0, 0, 0));
    CHECK(moved(sent, 0, 8192, 0, 0, 0));
}
