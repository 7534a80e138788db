#pragma once
// Owns: the decision to end ring-pressure pauses (MT_HOLD_PRESSURE), which ProcessHolds carries out.
// Accepts: on_chunk(fill) after each consumer chunk, start(), resume_all(done), stop().
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "actors/Messages.hpp"
#include "core/Backstop.hpp"

namespace memtrack {

class ProcessHolds;
class RingView;

// When to resume: strictly below `resume_fill`; 0 means only once the ring is empty (the old
// behaviour, kept for comparison).
struct WatermarkPolicy {
    double stop_fill = 0.75;
    double resume_fill = 0.25;
    bool should_resume(double fill) const { return resume_fill <= 0.0 ? fill <= 0.0 : fill < resume_fill; }
};

class PressureControl {
public:
    PressureControl(boost::asio::io_context& io, ProcessHolds& holds, WatermarkPolicy policy);

    // The rings whose fill decides (events, then stacks); read live, from any thread.
    void watch(const RingView* ring) { rings_.push_back(ring); }

    void start();
    // From a consumer's strand after every chunk: cheap when nothing is paused. Producers
    // resume once every ring is below the resume watermark.
    void on_chunk(double fill);
    // Ends every pressure pause, whatever the fill; done() on the caller's behalf.
    void resume_all(Done done);
    void stop();

private:
    // Touched only on strand_.
    void evaluate();
    bool rings_low() const;

    Strand strand_;
    ProcessHolds& holds_;
    WatermarkPolicy policy_;
    // Covers a pause taken just after the consumer's last chunk report, and busy releases.
    Backstop backstop_;
    // Fills are read live when deciding, and again before each process is resumed: a reported
    // fill is stale by the time a timer fires, and resuming on a stale low fill let producers
    // run straight through a full ring.
    std::vector<const RingView*> rings_;
    std::atomic<bool> evaluate_pending_{false};
    bool stopped_ = false;
};

}  // namespace memtrack
