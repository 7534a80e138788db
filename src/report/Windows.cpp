#include "report/Windows.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace memtrack::report {

std::vector<WindowTotals> windows_of(const std::vector<TimelineEvent>& session) {
    using Type = TimelineEvent::Type;
    constexpr size_t kNone = SIZE_MAX;
    std::vector<WindowTotals> out;
    size_t enabled = kNone;  // the enable..disable window open now
    size_t marked = kNone;   // the mark span open now
    bool seen_switch = false;
    auto open = [&](std::string name, uint64_t start) {
        WindowTotals w;
        w.name = std::move(name);
        w.start_ns = start;
        out.push_back(std::move(w));
        return out.size() - 1;
    };
    auto close = [&](size_t& window, uint64_t t) {
        if (window != kNone) out[window].end_ns = t;
        window = kNone;
    };
    for (const TimelineEvent& e : session) {
        switch (e.type) {
            case Type::Enable:
                seen_switch = true;
                if (enabled == kNone) enabled = open({}, e.time);  // enabled twice: the first one holds
                break;
            case Type::Disable:
                // Recording was on from the start: its window began with the recording.
                if (!seen_switch) enabled = open({}, 0);
                seen_switch = true;
                close(marked, e.time);
                close(enabled, e.time);
                break;
            case Type::Mark:
                close(marked, e.time);
                marked = open(e.name, e.time);
                break;
            default: break;
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; });
    for (size_t i = 0; i < out.size(); ++i) out[i].number = uint32_t(i + 1);
    return out;
}

Result<size_t> find_window(const std::vector<WindowTotals>& windows, const std::string& key) {
    uint32_t number = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), number);
    const bool numeric = ec == std::errc() && end == key.data() + key.size();
    std::vector<size_t> named;
    for (size_t i = 0; i < windows.size(); ++i) {
        if (numeric && windows[i].number == number) return i;
        if (!numeric && windows[i].name == key) named.push_back(i);
    }
    if (named.size() == 1) return named[0];
    if (named.size() > 1) {
        std::string numbers;
        for (size_t i : named) numbers += fmt::format("{}{}", numbers.empty() ? "" : ", ", windows[i].number);
        return Error{"--window", fmt::format("'{}'", key), 0, fmt::format("the mark names windows {}: give its number", numbers)};
    }
    return Error{"--window", fmt::format("'{}'", key), 0,
                 windows.empty() ? std::string("the recording has no windows (no enable, disable or mark)")
                                 : fmt::format("no such window (1 to {}, or a mark's name)", windows.size())};
}

WindowTracker::WindowTracker(std::vector<WindowTotals> windows) : windows_(std::move(windows)) {
    for (size_t i = 0; i < windows_.size(); ++i) {
        bounds_.push_back({windows_[i].start_ns, i, true});
        if (windows_[i].end_ns != UINT64_MAX) bounds_.push_back({windows_[i].end_ns, i, false});
    }
    // At one instant a window closes before the next one opens (a mark ends the previous span).
    std::stable_sort(bounds_.begin(), bounds_.end(), [](const Boundary& x, const Boundary& y) {
        return x.time != y.time ? x.time < y.time : (!x.opens && y.opens);
    });
}

uint64_t WindowTracker::next_time() const { return next_ < bounds_.size() ? bounds_[next_].time : UINT64_MAX; }

void WindowTracker::step(uint64_t rss_sum, const std::vector<uint64_t>& thread_counts) {
    const Boundary& b = bounds_[next_++];
    if (b.opens) {
        windows_[b.index].rss_peak_bytes = rss_sum;
        open_.push_back(Open{b.index, thread_counts, 0, 0, 0});
        return;
    }
    auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.index == b.index; });
    if (it != open_.end()) close(it);
}

void WindowTracker::close(std::vector<Open>::iterator it) {
    WindowTotals& w = windows_[it->index];
    w.leaked_bytes = it->kept_bytes;
    w.leaked_blocks = it->kept_blocks;
    open_.erase(it);
}

void WindowTracker::allocated(uint64_t size) {
    for (Open& o : open_) {
        WindowTotals& w = windows_[o.index];
        ++w.calls;
        w.bytes += size;
        o.live_bytes += size;
        w.peak_bytes = std::max(w.peak_bytes, o.live_bytes);
        ++o.kept_blocks;
        o.kept_bytes += size;
    }
}

void WindowTracker::released(const Block& b) {
    for (Open& o : open_) {
        if (!o.made_in(b)) continue;
        o.live_bytes -= b.size;
        --o.kept_blocks;
        o.kept_bytes -= b.size;
    }
}

void WindowTracker::exited(const Block& b) {
    for (Open& o : open_)
        if (o.made_in(b)) o.live_bytes -= b.size;
}

void WindowTracker::rss(uint64_t rss_sum) {
    for (const Open& o : open_) {
        WindowTotals& w = windows_[o.index];
        w.rss_peak_bytes = std::max(w.rss_peak_bytes, rss_sum);
    }
}

std::vector<WindowTotals> WindowTracker::finish() && {
    while (!open_.empty()) close(open_.begin());
    return std::move(windows_);
}

}  // namespace memtrack::report
