#include "probes/LinkCloser.hpp"

#include <algorithm>
#include <iterator>

namespace memtrack {

LinkCloser::LinkCloser() : coordinator_([this] { run(); }) {}

LinkCloser::~LinkCloser() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    coordinator_.join();
}

void LinkCloser::close(std::vector<UprobeMultiLink> links) {
    if (links.empty()) return;
    {
        std::lock_guard lock(mu_);
        std::move(links.begin(), links.end(), std::back_inserter(queued_));
    }
    cv_.notify_all();
}

void LinkCloser::wait_idle() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return queued_.empty() && closing_ == 0; });
}

void LinkCloser::run() {
    std::unique_lock lock(mu_);
    for (;;) {
        cv_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
        if (queued_.empty()) return;  // stopping, nothing left
        const size_t n = std::min(queued_.size(), kMaxWave);
        std::vector<UprobeMultiLink> wave(std::make_move_iterator(queued_.end() - long(n)),
                                          std::make_move_iterator(queued_.end()));
        queued_.erase(queued_.end() - long(n), queued_.end());
        closing_ = n;
        lock.unlock();
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (auto& link : wave) threads.emplace_back([l = std::move(link)]() mutable { (void)l; });
        for (auto& t : threads) t.join();
        lock.lock();
        closing_ = 0;
        cv_.notify_all();
    }
}

}  // namespace memtrack
