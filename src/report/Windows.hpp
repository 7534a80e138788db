#pragma once
// The session's windows (docs/REPORT.md, --windows): each enable..disable of the control socket,
// and each span from a `mark` to the next mark or disable (or the end), with what a benchmark
// runner shows for it: peak heap, allocated bytes and count, RSS peak, leaked in the window.
// Its heap is that of the blocks made in it: blocks from before it do not count (as with
// --from), which is also what a runner recording only while enabled sees.
//
// WindowTracker keeps their figures while the Analyzer streams the artifact; the Analyzer tells
// it every boundary, allocation, release and RSS sum in time order. A block belongs to a window
// when it was allocated while the window was open: TemporaryDetector's (thread, seq) stamps
// (`thread`: its process's stream) tell, against each stream's count when the window opened,
// so a Block carries nothing more.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "format/Timeline.hpp"
#include "report/LiveMap.hpp"

namespace memtrack::report {

struct WindowTotals {
    uint32_t number = 0;      // 1.. in order of start
    std::string name;         // the mark's name; empty for an enable..disable window
    uint64_t start_ns = 0;    // CLOCK_MONOTONIC; 0: from the start of the recording
    uint64_t end_ns = UINT64_MAX;  // UINT64_MAX: still open at the end of the recording
    uint64_t peak_bytes = 0;  // the most bytes of blocks made in it live at once
    uint64_t calls = 0;       // heap allocations made in it
    uint64_t bytes = 0;
    uint64_t rss_peak_bytes = 0;  // the highest sum of the processes' RSS samples while open
    uint64_t leaked_bytes = 0;    // allocated in it and not freed (nor dropped by exec) by its end
    uint64_t leaked_blocks = 0;
};

// The windows of a session's enable, disable and mark events (sorted by time). A `disable`
// before any `enable` closes a window open from the start (recording was on from the start).
std::vector<WindowTotals> windows_of(const std::vector<TimelineEvent>& session);

// The window `key` names: its number, or a mark's name that names exactly one window.
Result<size_t> find_window(const std::vector<WindowTotals>& windows, const std::string& key);

class WindowTracker {
public:
    explicit WindowTracker(std::vector<WindowTotals> windows);

    // The time of the next opening or closing; UINT64_MAX when none is left (no boundary is at
    // UINT64_MAX: a window open at the end has no closing).
    uint64_t next_time() const;
    // Applies that boundary. `thread_counts`: the TemporaryDetector's events per stream.
    void step(uint64_t rss_sum, const std::vector<uint64_t>& thread_counts);
    // A counted allocation of `size`.
    void allocated(uint64_t size);
    // A counted block freed or dropped by exec: no longer live nor leaked in the window it
    // came from.
    void released(const Block& b);
    // A counted block whose process exited: leaked, and no longer live.
    void exited(const Block& b);
    void rss(uint64_t rss_sum);
    // Closes what is still open (their leaks: what was live at the end).
    std::vector<WindowTotals> finish() &&;

private:
    struct Open {
        size_t index = 0;
        std::vector<uint64_t> counts_at_start;  // per stream index
        uint64_t live_bytes = 0;                 // made in it, live now
        uint64_t kept_bytes = 0, kept_blocks = 0;  // made in it, neither freed nor dropped by exec
        bool made_in(const Block& b) const {
            return b.thread >= counts_at_start.size() || b.seq > counts_at_start[b.thread];
        }
    };
    struct Boundary {
        uint64_t time = 0;
        size_t index = 0;
        bool opens = false;
    };
    void close(std::vector<Open>::iterator it);

    std::vector<WindowTotals> windows_;
    std::vector<Boundary> bounds_;  // by time
    size_t next_ = 0;
    std::vector<Open> open_;
};

}  // namespace memtrack::report
