#pragma once
// The BPF maps of the pause protocol as a HoldStore: the `holds` array mmapped as one flat array
// of words indexed by tgid, and the `held` index read through its fd. Owns both fds and the
// mapping; memtrack-guard builds one from the fds memtrack hands it.
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"
#include "process/HoldStore.hpp"

namespace memtrack {

class HoldMaps final : public HoldStore {
public:
    // holds_fd: the `holds` array map with `words` words; held_fd: the `held` hash map. Both are
    // duplicated. outstanding: BPF's counters (the skeleton's mmapped .bss), or null.
    static Result<HoldMaps> open(int holds_fd, int held_fd, uint32_t words, uint64_t* outstanding);
    HoldMaps(HoldMaps&& o) noexcept;
    HoldMaps& operator=(HoldMaps&&) = delete;
    ~HoldMaps() override;

    uint32_t* words() override { return words_; }
    uint32_t capacity() const override { return capacity_; }
    std::vector<uint32_t> indexed() const override;
    std::optional<mt_held> entry(uint32_t pid) const override;
    uint64_t* outstanding() override { return outstanding_; }

    int holds_fd() const { return holds_fd_.get(); }
    int held_fd() const { return held_fd_.get(); }

private:
    HoldMaps() = default;
    Fd holds_fd_, held_fd_;
    uint32_t* words_ = nullptr;
    uint32_t capacity_ = 0;
    uint64_t* outstanding_ = nullptr;
};

// Signals through a pidfd per process, opened and checked against the start time once
// (open_same_process: pidfd_open, then /proc/PID/stat read) and then kept: that check cost ~30 us
// of every new-code hold (a dlopen's). A kept pidfd names the process it was opened for whatever
// becomes of its pid: once that process is gone, a signal through it fails (ESRCH), so a reused
// pid is never signalled. The kKeep processes signalled last keep theirs. Thread-safe.
class PidfdSignals final : public HoldSignals {
public:
    static constexpr size_t kKeep = 64;
    Result<bool> send(uint32_t pid, uint64_t start_boottime, int sig) override;

private:
    struct Kept {
        uint32_t pid;
        uint64_t start_boottime;
        Fd pidfd;
    };
    std::mutex mu_;
    std::deque<Kept> kept_;  // the most recently signalled last
};

}  // namespace memtrack
