#include "process/ExitWatch.hpp"

#include <utility>

#include "core/Log.hpp"
#include "process/ProcessSignal.hpp"

namespace memtrack {

ExitWatch::ExitWatch(const boost::asio::any_io_executor& executor, Fd pidfd, Counter* early)
    : descriptor_(executor, pidfd.release()), early_(early) {}

ExitWatch::~ExitWatch() { cancel(); }

void ExitWatch::async_wait(std::function<void()> exited) {
    exited_ = std::move(exited);
    arm();
}

void ExitWatch::cancel() {
    boost::system::error_code ec;
    descriptor_.cancel(ec);
    descriptor_.close(ec);
    exited_ = nullptr;
}

void ExitWatch::arm() {
    descriptor_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [this, alive = std::weak_ptr<const bool>(alive_)](const boost::system::error_code& ec) {
                               if (alive.expired()) return;  // destroyed: `this` is gone
                               completed(ec);
                           });
}

void ExitWatch::completed(const boost::system::error_code& ec) {
    if (ec || !exited_) return;  // cancelled
    auto ended = pidfd_exited(descriptor_.native_handle());
    if (ended && !*ended) {
        if (early_) early_->add();
        arm();
        return;
    }
    // A pidfd that cannot be polled is taken as ended: waiting again would never end.
    if (!ended) log::error("process exit watch: {}", ended.error().message());
    std::exchange(exited_, nullptr)();
}

}  // namespace memtrack
