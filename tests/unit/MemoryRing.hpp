#pragma once
// A BPF ring buffer's layout in ordinary memory (consumer page, producer page, the data area
// mapped twice back to back), with a producer that writes records the way bpf_ringbuf_submit
// leaves them: the unit tests' stand-in for a kernel ring, read through a real RingView.
//
// Nothing wakes the reader: its fd is an eventfd never signalled, so a RingConsumer reads on
// kick(), on drain requests and on its backstop timer, which are the paths under test.
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "bpf/record.h"
#include "ring/RingView.hpp"

namespace memtrack::unittest {

class MemoryRing {
public:
    // `capacity`: data bytes, a power of two and a multiple of the page size.
    explicit MemoryRing(uint64_t capacity) : capacity_(capacity), page_(size_t(::sysconf(_SC_PAGESIZE))) {
        wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        data_fd_ = ::memfd_create("memory-ring", MFD_CLOEXEC);
        if (wake_ < 0 || data_fd_ < 0 || ::ftruncate(data_fd_, off_t(capacity)) != 0)
            throw std::runtime_error("memory ring: eventfd or memfd failed");
        void* cons = ::mmap(nullptr, page_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        void* prod = ::mmap(nullptr, page_ + 2 * capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (cons == MAP_FAILED || prod == MAP_FAILED) throw std::runtime_error("memory ring: mmap failed");
        auto* data = static_cast<uint8_t*>(prod) + page_;
        for (uint8_t* at : {data, data + capacity})
            if (::mmap(at, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, data_fd_, 0) == MAP_FAILED)
                throw std::runtime_error("memory ring: data mmap failed");
        consumer_ = static_cast<uint64_t*>(cons);
        producer_ = static_cast<uint64_t*>(prod);
        data_ = data;
    }
    ~MemoryRing() {
        if (!adopted_) {
            ::munmap(consumer_, page_);
            ::munmap(producer_, page_ + 2 * capacity_);
        }
        ::close(wake_);
        ::close(data_fd_);
    }
    MemoryRing(const MemoryRing&) = delete;
    MemoryRing& operator=(const MemoryRing&) = delete;

    // The reader, which takes over the mappings (once).
    RingView view() {
        if (adopted_) throw std::logic_error("memory ring: view() twice");
        adopted_ = true;
        return RingView::adopt(wake_, consumer_, producer_, capacity_);
    }

    // Writes one committed record; false when it does not fit (what bpf_ringbuf_reserve refuses).
    bool write(const void* record, uint32_t len) {
        const uint64_t prod = std::atomic_ref<uint64_t>(*producer_).load(std::memory_order_relaxed);
        const uint64_t cons = std::atomic_ref<uint64_t>(*consumer_).load(std::memory_order_acquire);
        const uint64_t total = RingView::record_bytes(len);
        if (prod + total - cons > capacity_) return false;
        uint8_t* hdr = data_ + (prod & (capacity_ - 1));
        std::memcpy(hdr + RingView::kHeaderBytes, record, len);
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(hdr)).store(len, std::memory_order_release);
        std::atomic_ref<uint64_t>(*producer_).store(prod + total, std::memory_order_release);
        return true;
    }
    // Record `seq` of a known sequence: a Malloc whose address and size say which it is.
    static mt_record event(uint64_t seq) {
        mt_record r{};
        r.timestamp = 1000 + seq;
        r.addr = 0x10000 + 16 * seq;
        r.size_kind = mt_pack_size_kind(seq + 1, MT_KIND_MALLOC, 0);
        r.pid = 42;
        r.tid = 42;
        return r;
    }
    bool write_event(uint64_t seq) {
        const mt_record r = event(seq);
        return write(&r, sizeof(r));
    }
    uint64_t producer_pos() const { return std::atomic_ref<uint64_t>(*producer_).load(std::memory_order_acquire); }
    uint64_t consumer_pos() const { return std::atomic_ref<uint64_t>(*consumer_).load(std::memory_order_acquire); }
    static constexpr uint64_t kEventBytes = RingView::record_bytes(sizeof(mt_record));

private:
    uint64_t capacity_;
    size_t page_;
    int wake_ = -1;
    int data_fd_ = -1;
    uint64_t* consumer_ = nullptr;
    uint64_t* producer_ = nullptr;
    uint8_t* data_ = nullptr;
    bool adopted_ = false;
};

}  // namespace memtrack::unittest
