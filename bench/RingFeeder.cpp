#include "RingFeeder.hpp"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ring_feed.bpf.skel.h"

extern "C" {
#include "ring_feed.h"
}

namespace memtrack::bench {

void RingFeeder::Deleter::operator()(ring_feed_bpf* skel) const { ring_feed_bpf__destroy(skel); }

Result<RingFeeder> RingFeeder::load(uint64_t ring_bytes) {
    std::unique_ptr<ring_feed_bpf, Deleter> skel(ring_feed_bpf__open());
    if (!skel) return errno_error("bpf_object__open", "ring_feed");
    if (int err = bpf_map__set_max_entries(skel->maps.ring, uint32_t(ring_bytes)); err)
        return Error{"bpf_map__set_max_entries", "ring", -err, {}};
    if (int err = ring_feed_bpf__load(skel.get()); err) return Error{"bpf_object__load", "ring_feed", -err, {}};
    return RingFeeder(std::move(skel));
}

int RingFeeder::ring_fd() const { return bpf_map__fd(skel_->maps.ring); }

Result<void> RingFeeder::feed(uint64_t first, uint32_t count, uint64_t wakeup_bytes) {
    ring_feed_args args{first, count, 0, wakeup_bytes};
    bpf_test_run_opts opts{};
    opts.sz = sizeof(opts);
    opts.ctx_in = &args;
    opts.ctx_size_in = sizeof(args);
    if (int err = bpf_prog_test_run_opts(bpf_program__fd(skel_->progs.feed), &opts); err)
        return Error{"bpf_prog_test_run", "feed", -err, {}};
    return {};
}

uint64_t RingFeeder::dropped() const {
    // The program adds atomically; read it as the same memory the kernel writes (mmapped .bss).
    return __atomic_load_n(&skel_->bss->dropped, __ATOMIC_RELAXED);
}

}  // namespace memtrack::bench
