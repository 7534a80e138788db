#pragma once
// A backstop: `tick` every `period` on its owner's strand, from start() to stop(), for work a
// notice may have missed (a wake-up that did not come, a process that ended its pause by
// exiting). start() and stop() are called on that strand; no tick runs after stop().
#include <chrono>
#include <functional>
#include <utility>

#include <boost/asio/steady_timer.hpp>

#include "core/Strand.hpp"

namespace memtrack {

class Backstop {
public:
    Backstop(const Strand& strand, std::chrono::milliseconds period, std::function<void()> tick)
        : timer_(strand), period_(period), tick_(std::move(tick)) {}

    void start() {
        stopped_ = false;
        arm();
    }
    void stop() {
        stopped_ = true;
        timer_.cancel();
    }

private:
    void arm() {
        if (stopped_) return;
        timer_.expires_after(period_);
        timer_.async_wait([this](boost::system::error_code ec) {
            if (ec || stopped_) return;
            tick_();
            arm();
        });
    }

    boost::asio::steady_timer timer_;
    std::chrono::milliseconds period_;
    std::function<void()> tick_;
    bool stopped_ = false;
};

}  // namespace memtrack
