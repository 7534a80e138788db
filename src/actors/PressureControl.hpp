#pragma once
// Owns: the user-space side of the pressure_stopped map: resuming every process BPF stopped.
// Accepts: on_chunk(fill) after each consumer chunk, start(), resume_all(done).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "actors/Messages.hpp"

namespace memtrack {

class BpfSession;
class RingView;
class Stats;

// When to resume: strictly below `resume_fill`; 0 means only once the ring is empty (the old
// behaviour, kept for comparison).
struct WatermarkPolicy {
    double stop_fill = 0.75;
    double resume_fill = 0.25;
    bool should_resume(double fill) const { return resume_fill <= 0.0 ? fill <= 0.0 : fill < resume_fill; }
    bool should_stop(double fill) const { return fill >= stop_fill; }
};

class PressureControl {
public:
    PressureControl(boost::asio::io_context& io, BpfSession& bpf, Stats& stats, WatermarkPolicy policy);

    // The rings whose fill decides (events, then stacks); read live, from any thread.
    void watch(const RingView* ring) { rings_.push_back(ring); }

    void start();
    // From a consumer's strand after every chunk (ring 0: events, 1: stacks): cheap when nothing
    // is stopped. Producers resume once every ring is below the resume watermark.
    void on_chunk(size_t ring, double fill);
    // Resumes every process memtrack stopped, whatever the fill; done() on the caller's behalf.
    void resume_all(Done done);
    void stop();

private:
    // Touched only on strand_.
    void evaluate();
    size_t resume_stopped();
    void arm_backstop();

    Strand strand_;
    BpfSession& bpf_;
    Stats& stats_;
    WatermarkPolicy policy_;
    boost::asio::steady_timer backstop_;
    // Fills are read live when deciding: a reported fill is stale by the time a timer fires, and
    // resuming on a stale low fill let producers run straight through a full ring.
    std::vector<const RingView*> rings_;
    std::atomic<bool> evaluate_pending_{false};
    bool stopped_ = false;
};

}  // namespace memtrack
