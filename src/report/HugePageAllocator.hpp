#pragma once
// An allocator for the report's big random-access tables (the live blocks, the sites): whole
// 2 MiB transparent huge pages when the kernel allows them (madvise mode, Debian's default).
// Events touch those tables at random; on 4 KiB pages nearly every touch was a TLB miss as
// well as a cache miss, and a TLB miss also stalls the prefetches meant to hide the latter.
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace memtrack::report {

template <typename T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr size_t kHugePage = size_t(2) << 20;

    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}

    T* allocate(size_t n) {
        const size_t bytes = n * sizeof(T);
        // Small tables stay on ordinary pages: a huge page each would waste memory for nothing.
        // T may be aligned to a cache line, more than malloc promises.
        if (bytes < kHugePage) {
            constexpr size_t align = alignof(T) > alignof(std::max_align_t) ? alignof(T) : alignof(std::max_align_t);
            if (void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align)) return static_cast<T*>(p);
            throw std::bad_alloc();
        }
        const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
        void* p = std::aligned_alloc(kHugePage, rounded);
        if (!p) throw std::bad_alloc();
        ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: without huge pages it is only slower
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) { std::free(p); }

    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const { return true; }
};

}  // namespace memtrack::report
