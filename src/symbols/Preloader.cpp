#include "symbols/Preloader.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "symbols/ModuleIdentity.hpp"

namespace memtrack {

Preloader::Preloader(std::vector<Mapping> files, std::shared_ptr<ObjectFiles> objects) : objects_(std::move(objects)) {
    for (const Mapping& m : files) pending_.push_back(file_key(m));
    thread_ = std::thread([this, files = std::move(files)]() mutable { run(std::move(files)); });
}

// The loading thread leaves the idle class and competes like any thread: someone waits for it.
void Preloader::leave_idle_class() {
    waited_for_ = true;
    const sched_param normal{};
    if (const pid_t tid = tid_; tid != 0) ::sched_setscheduler(tid, SCHED_OTHER, &normal);
}

void Preloader::stop() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(mu_);
        cancel_ = true;
    }
    leave_idle_class();
    thread_.join();
}

std::vector<Preloader::Done> Preloader::take(const std::string& key) {
    std::unique_lock lock(mu_);
    std::erase(pending_, key);
    if (loading_ == key) {
        leave_idle_class();
        const uint64_t t0 = monotonic_ns();
        cv_.wait(lock, [&] { return loading_ != key; });
        log::info("symbols: waited {:.1f} ms for a preload", double(monotonic_ns() - t0) / 1e6);
    }
    return std::exchange(done_, {});
}

// On the preload thread: touches only what mu_ guards and the modules it creates, each in a Dwfl
// of its own.
void Preloader::run(std::vector<Mapping> files) {
    // Idle class: the warm-up uses only a CPU nobody else wants (start-up keeps one busy in the
    // kernel verifying BPF programs), until someone waits for it. A wait that came before the
    // tid was published is seen here.
    const sched_param idle{};
    ::sched_setscheduler(0, SCHED_IDLE, &idle);
    tid_ = ::gettid();
    if (waited_for_) leave_idle_class();
    for (const Mapping& m : files) {
        const std::string key = file_key(m);
        {
            std::lock_guard lock(mu_);
            if (cancel_) break;
            if (std::find(pending_.begin(), pending_.end(), key) == pending_.end()) continue;  // taken over
            std::erase(pending_, key);
            loading_ = key;
        }
        const uint64_t t0 = monotonic_ns();
        auto file = objects_->get(0, m.path, m.dev, m.inode);
        Result<LoadedModule> loaded = file ? load_module(**file, m.path) : Result<LoadedModule>(file.error());
        if (loaded) {
            loaded->module->index_symbols();
            log::info("symbols: preloaded {} ({} symbols) in {:.1f} ms", m.path, loaded->module->symbols(),
                      double(monotonic_ns() - t0) / 1e6);
        } else {
            log::info("symbols: preloading {}: {}", m.path, loaded.error().message());
        }
        std::lock_guard lock(mu_);
        loading_.clear();
        done_.push_back({key, std::move(loaded)});
        cv_.notify_all();
    }
    // Cancelled: nobody waits any more (only stop() cancels).
}

}  // namespace memtrack
