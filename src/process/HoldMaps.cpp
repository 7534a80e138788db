#include "process/HoldMaps.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <algorithm>
#include <iterator>
#include <unordered_set>
#include <utility>

#include "process/ProcessSignal.hpp"

namespace memtrack {

Result<HoldMaps> HoldMaps::open(int holds_fd, int held_fd, uint32_t words, uint64_t* outstanding) {
    HoldMaps m;
    m.holds_fd_.reset(::fcntl(holds_fd, F_DUPFD_CLOEXEC, 3));
    m.held_fd_.reset(::fcntl(held_fd, F_DUPFD_CLOEXEC, 3));
    if (!m.holds_fd_.valid() || !m.held_fd_.valid()) return errno_error("dup", "hold maps");
    void* p = ::mmap(nullptr, size_t(words) * sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_SHARED, m.holds_fd_.get(), 0);
    if (p == MAP_FAILED) return errno_error("mmap", "holds map");
    m.words_ = static_cast<uint32_t*>(p);
    m.capacity_ = words;
    m.outstanding_ = outstanding;
    return m;
}

HoldMaps::HoldMaps(HoldMaps&& o) noexcept
    : holds_fd_(std::move(o.holds_fd_)), held_fd_(std::move(o.held_fd_)), words_(std::exchange(o.words_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)), outstanding_(std::exchange(o.outstanding_, nullptr)) {}

HoldMaps::~HoldMaps() {
    if (words_) ::munmap(words_, size_t(capacity_) * sizeof(uint32_t));
}

std::vector<uint32_t> HoldMaps::indexed() const {
    std::vector<uint32_t> pids;
    std::unordered_set<uint32_t> seen;
    uint32_t key = 0, next = 0;
    // A key removed under the walk (an exit) restarts it at the first key: walk on past the
    // keys seen to the end of the map, or the pids after the restart point would be missed
    // (the final pass would leave them stopped). Bounded, for keys that keep vanishing.
    constexpr size_t kMaxSteps = 4 * 65536;
    for (size_t step = 0; step < kMaxSteps; ++step) {
        if (bpf_map_get_next_key(held_fd_.get(), step == 0 ? nullptr : &key, &next) != 0) break;
        if (seen.insert(next).second) pids.push_back(next);
        key = next;
    }
    return pids;
}

std::optional<mt_held> HoldMaps::entry(uint32_t pid) const {
    mt_held h{};
    if (bpf_map_lookup_elem(held_fd_.get(), &pid, &h) != 0) return std::nullopt;
    return h;
}

Result<bool> PidfdSignals::send(uint32_t pid, uint64_t start_boottime, int sig) {
    std::lock_guard lock(mu_);
    auto it = std::find_if(kept_.begin(), kept_.end(),
                           [&](const Kept& k) { return k.pid == pid && k.start_boottime == start_boottime; });
    if (it == kept_.end()) {
        auto opened = open_same_process(int32_t(pid), start_boottime);
        if (!opened) return opened.error();
        if (!opened->valid()) return false;  // gone or reused: nothing to signal
        kept_.push_back({pid, start_boottime, std::move(opened).value()});
        if (kept_.size() > kKeep) kept_.pop_front();
        it = std::prev(kept_.end());
    } else if (std::next(it) != kept_.end()) {
        // Signalled last: kept longest. Taken out before the push, which invalidates `it`.
        Kept k = std::move(*it);
        kept_.erase(it);
        kept_.push_back(std::move(k));
        it = std::prev(kept_.end());
    }
    auto sent = send_signal(it->pidfd.get(), int32_t(pid), sig);
    if (!sent || !*sent) kept_.erase(it);  // gone: its pidfd is of no more use
    return sent;
}

}  // namespace memtrack
