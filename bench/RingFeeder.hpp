#pragma once
// The consumer benchmark's producer side: bench/ring_feed.bpf.c loaded with a ring of the
// requested size, run through BPF_PROG_TEST_RUN to write batches of synthetic records.
#include <cstdint>
#include <memory>

#include "core/Result.hpp"

struct ring_feed_bpf;

namespace memtrack::bench {

class RingFeeder {
public:
    // Opens, sizes the ring (a power of two, at least a page), loads.
    static Result<RingFeeder> load(uint64_t ring_bytes);

    int ring_fd() const;
    // Writes records first .. first+count-1 (bench/ring_feed.h); below wakeup_bytes of fill a
    // record does not wake the consumer.
    Result<void> feed(uint64_t first, uint32_t count, uint64_t wakeup_bytes);
    // Reservations that failed so far.
    uint64_t dropped() const;

private:
    struct Deleter {
        void operator()(ring_feed_bpf* skel) const;
    };
    explicit RingFeeder(std::unique_ptr<ring_feed_bpf, Deleter> skel) : skel_(std::move(skel)) {}

    std::unique_ptr<ring_feed_bpf, Deleter> skel_;
};

}  // namespace memtrack::bench
