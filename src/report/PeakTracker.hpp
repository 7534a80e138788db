#pragma once
// The peak of the live heap and, for every site, what it had live at that moment, in O(1) per
// event: no snapshot of the live map is ever taken.
//
// Each new peak starts an epoch. A site's live counters stand for its state at the latest peak
// until the first time they change after it; just before that change, touch() saves them into
// the site's SitePeak. At the end, a site touched since the latest peak has its state at
// the peak saved, and one not touched since still holds it in its live counters.
#include <cstdint>

#include "report/Sites.hpp"

namespace memtrack::report {

class PeakTracker {
public:
    // Before any change to `s.live_bytes` or `s.live_blocks`; `p` is the same site's.
    void touch(SiteCounters& s, SitePeak& p) const {
        if (s.peak_epoch == epoch_) return;
        p.bytes = s.live_bytes;
        p.blocks = s.live_blocks;
        s.peak_epoch = epoch_;
    }
    // After every change to the live total; `time_ns` is the event's.
    void update(uint64_t live_bytes, uint64_t live_blocks, uint64_t time_ns) {
        if (live_bytes <= peak_bytes_) return;
        peak_bytes_ = live_bytes;
        peak_blocks_ = live_blocks;
        peak_time_ns_ = time_ns;
        ++epoch_;
    }
    // Leaves every site's SitePeak as it was at the peak.
    void finish(SiteTable& sites) const;

    uint64_t peak_bytes() const { return peak_bytes_; }
    uint64_t peak_blocks() const { return peak_blocks_; }
    uint64_t peak_time_ns() const { return peak_time_ns_; }

private:
    uint64_t epoch_ = 1;  // sites start at epoch 0: the first touch saves their (empty) state
    uint64_t peak_bytes_ = 0;
    uint64_t peak_blocks_ = 0;
    uint64_t peak_time_ns_ = 0;
};

}  // namespace memtrack::report
