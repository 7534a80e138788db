#include "probes/LinkCloser.hpp"

#include <algorithm>
#include <iterator>
#include <thread>

namespace memtrack {

void LinkCloser::close(std::vector<UprobeMultiLink> links) {
    std::lock_guard lock(mu_);
    std::move(links.begin(), links.end(), std::back_inserter(queued_));
    // Threads already running take links too: more than needed only exit at once.
    const size_t start = std::min(queued_.size(), kMaxThreads - std::min(running_, kMaxThreads));
    for (size_t i = 0; i < start; ++i, ++running_) std::thread([this] { work(); }).detach();
}

void LinkCloser::wait_idle() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [this] { return queued_.empty() && running_ == 0; });
}

void LinkCloser::work() {
    std::unique_lock lock(mu_);
    while (!queued_.empty()) {
        UprobeMultiLink link = std::move(queued_.back());
        queued_.pop_back();
        lock.unlock();
        { UprobeMultiLink closing = std::move(link); }  // the close blocks here, unlocked
        lock.lock();
    }
    if (--running_ == 0) idle_.notify_all();
}

}  // namespace memtrack
