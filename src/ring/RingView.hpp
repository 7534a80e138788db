#pragma once
// A reader over a BPF ring buffer's own mmapped pages (the kernel ABI libbpf uses): it gives the
// producer and consumer positions directly and reads at most N records per call, which Debian's
// libbpf 1.1 (no ring__consume_n, no position accessors) cannot.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <linux/bpf.h>

#include "core/Result.hpp"

namespace memtrack {

class RingView {
public:
    // The kernel's header before each record (its length and busy/discard bits).
    static constexpr uint32_t kHeaderBytes = BPF_RINGBUF_HDR_SZ;
    // The ring bytes a record of `len` bytes takes: its header, and padding to 8 bytes.
    static constexpr uint64_t record_bytes(uint64_t len) { return (len + kHeaderBytes + 7) & ~uint64_t(7); }

    static Result<RingView> map(int map_fd);
    // Takes over mappings laid out as map() makes them: `consumer` one page, `producer` one page
    // followed by the data area (`capacity` bytes, a power of two) mapped twice back to back;
    // `fd` wakes a reader (epoll) and stays the caller's. map() ends here, and unit tests drive
    // RingConsumer through it with a ring in ordinary memory (tests/unit/MemoryRing.hpp).
    static RingView adopt(int fd, void* consumer, void* producer, uint64_t capacity);
    RingView(RingView&&) noexcept;
    RingView& operator=(RingView&&) = delete;
    RingView(const RingView&) = delete;
    ~RingView();

    int fd() const { return fd_; }
    uint64_t capacity() const { return mask_ + 1; }
    uint64_t producer_pos() const {
        return std::atomic_ref<uint64_t>(*producer_).load(std::memory_order_acquire);
    }
    uint64_t consumer_pos() const {
        return std::atomic_ref<uint64_t>(*consumer_).load(std::memory_order_acquire);
    }
    uint64_t fill_bytes() const { return producer_pos() - consumer_pos(); }

    // Calls fn(const void* data, uint32_t len) for up to max_records committed records, in
    // order, and publishes the new consumer position once at the end. Stops early at a record still being
    // written. Returns the number of records read (discarded ones are skipped, not counted).
    template <typename Fn>
    size_t consume(size_t max_records, Fn&& fn);

private:
    RingView() = default;
    static constexpr uint32_t kBusyBit = BPF_RINGBUF_BUSY_BIT;
    static constexpr uint32_t kDiscardBit = BPF_RINGBUF_DISCARD_BIT;

    int fd_ = -1;
    uint64_t mask_ = 0;
    size_t page_ = 0;
    uint64_t* consumer_ = nullptr;  // rw page
    uint64_t* producer_ = nullptr;  // ro page, followed by the data pages mapped twice
    uint8_t* data_ = nullptr;
};

template <typename Fn>
size_t RingView::consume(size_t max_records, Fn&& fn) {
    uint64_t cons = consumer_pos();
    const uint64_t prod = producer_pos();
    size_t n = 0;
    while (cons < prod && n < max_records) {
        const uint8_t* hdr = data_ + (cons & mask_);
        const uint32_t len_word =
            std::atomic_ref<const uint32_t>(*reinterpret_cast<const uint32_t*>(hdr)).load(std::memory_order_acquire);
        if (len_word & kBusyBit) break;
        const uint32_t len = len_word & ~(kBusyBit | kDiscardBit);
        if (!(len_word & kDiscardBit)) {
            fn(static_cast<const void*>(hdr + kHeaderBytes), len);
            ++n;
        }
        cons += record_bytes(len);
    }
    // Published once per call, not per record: every reservation reads this cache line, and a
    // store per record made each producer's reservation miss on it while we read.
    std::atomic_ref<uint64_t>(*consumer_).store(cons, std::memory_order_release);
    return n;
}

}  // namespace memtrack
