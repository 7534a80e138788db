#include "ring/RingView.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <utility>

namespace memtrack {

Result<RingView> RingView::map(int map_fd) {
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0) return errno_error("bpf_obj_get_info", "ring");
    if (info.type != BPF_MAP_TYPE_RINGBUF) return Error{"map", "ring", EINVAL, "not a ring buffer"};
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    void* cons = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
    if (cons == MAP_FAILED) return errno_error("mmap", "ring consumer page");
    // The data area is mapped twice back to back, so a record that wraps reads contiguously.
    void* prod = ::mmap(nullptr, page + 2 * size_t(info.max_entries), PROT_READ, MAP_SHARED, map_fd, off_t(page));
    if (prod == MAP_FAILED) {
        const int err = errno;
        ::munmap(cons, page);
        return errno_error("mmap", "ring data pages", err);
    }
    return adopt(map_fd, cons, prod, info.max_entries);
}

RingView RingView::adopt(int fd, void* consumer, void* producer, uint64_t capacity) {
    RingView v;
    v.fd_ = fd;
    v.page_ = size_t(::sysconf(_SC_PAGESIZE));
    v.mask_ = capacity - 1;
    v.consumer_ = static_cast<uint64_t*>(consumer);
    v.producer_ = static_cast<uint64_t*>(producer);
    v.data_ = static_cast<uint8_t*>(producer) + v.page_;
    return v;
}

RingView::RingView(RingView&& o) noexcept
    : fd_(o.fd_), mask_(o.mask_), page_(o.page_), consumer_(std::exchange(o.consumer_, nullptr)),
      producer_(std::exchange(o.producer_, nullptr)), data_(std::exchange(o.data_, nullptr)) {}

RingView::~RingView() {
    if (consumer_) ::munmap(consumer_, page_);
    if (producer_) ::munmap(producer_, page_ + 2 * size_t(mask_ + 1));
}

}  // namespace memtrack
