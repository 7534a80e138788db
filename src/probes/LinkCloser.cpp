#include "probes/LinkCloser.hpp"

#include <algorithm>
#include <iterator>
#include <thread>

namespace memtrack {

void LinkCloser::close(std::vector<UprobeMultiLink> links) {
    std::vector<Fd> fds;
    fds.reserve(links.size());
    for (UprobeMultiLink& l : links)
        for (Fd& fd : std::move(l).take_fds()) fds.push_back(std::move(fd));
    close(std::move(fds));
}

void LinkCloser::close(std::vector<Fd> link_fds) {
    std::lock_guard lock(mu_);
    std::move(link_fds.begin(), link_fds.end(), std::back_inserter(queued_));
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
        Fd link = std::move(queued_.back());
        queued_.pop_back();
        lock.unlock();
        link.reset();  // the close blocks here, unlocked
        lock.lock();
    }
    if (--running_ == 0) idle_.notify_all();
}

}  // namespace memtrack
