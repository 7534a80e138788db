#pragma once
// A statistics counter with one writer (the actor that owns it, on its strand) and readers on
// any thread. The writer does a plain load and store (no read-modify-write: nothing locked in
// the data path); a reader's copy has each counter whole. Relaxed: the stats want values, not
// an order between them. A live copy is therefore as of some moment during the read; the copy
// taken once the writers' threads have been joined (--stats at exit) is exact.
#include <atomic>
#include <cstdint>

namespace memtrack {

class Counter {
public:
    Counter() = default;
    // Implicit both ways: a counter stands for its value (in the stats, in tests).
    Counter(uint64_t v) : v_(v) {}
    Counter(const Counter& o) : v_(o.get()) {}
    Counter& operator=(const Counter& o) {
        set(o.get());
        return *this;
    }

    uint64_t get() const { return v_.load(std::memory_order_relaxed); }
    operator uint64_t() const { return get(); }

    // The writer's side.
    void add(uint64_t n = 1) { set(get() + n); }
    void set(uint64_t v) { v_.store(v, std::memory_order_relaxed); }
    void raise_to(uint64_t v) {
        if (v > get()) set(v);
    }

private:
    std::atomic<uint64_t> v_{0};
};

}  // namespace memtrack
