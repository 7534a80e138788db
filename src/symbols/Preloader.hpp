#pragma once
// Modules loaded ahead of need, on a thread of their own in the idle scheduling class: the files
// stacks will almost surely name (the command, the C library) cost tens of milliseconds each to
// load and index (libc's compressed debug info, node's 185k symbols), which for a short command
// would otherwise fall on its exit path. The resolver adopts what is done, and waits only for a
// file it needs that is still loading, lifting the thread out of the idle class meanwhile.
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/Result.hpp"
#include "symbols/ModuleLoader.hpp"
#include "symbols/ObjectFiles.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

class Preloader {
public:
    struct Done {
        std::string file_key;
        Result<LoadedModule> loaded;
    };

    // Starts loading `files` (path, device, inode filled in), in order, each read through
    // `objects` (the run's one reading of it).
    Preloader(std::vector<Mapping> files, std::shared_ptr<ObjectFiles> objects);
    ~Preloader() { stop(); }
    Preloader(const Preloader&) = delete;
    Preloader& operator=(const Preloader&) = delete;

    // Every module loaded and not taken yet. When `key` is still pending it is dropped from the
    // list (the caller loads it now); when it is loading, this waits for it first.
    std::vector<Done> take(const std::string& key);

    // Skips the files not started, finishes the one loading (at normal priority), joins the
    // thread. Idempotent.
    void stop();

private:
    void run(std::vector<Mapping> files);
    void leave_idle_class();

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<std::string> pending_;  // file keys not started yet, in order; under mu_
    std::string loading_;               // the file key being loaded; empty between files; under mu_
    std::vector<Done> done_;            // loaded, not taken yet; under mu_
    bool cancel_ = false;               // under mu_
    std::atomic<pid_t> tid_{0};         // the loading thread, for its scheduling policy
    std::atomic<bool> waited_for_{false};
    std::shared_ptr<ObjectFiles> objects_;  // thread-safe
    std::thread thread_;
};

}  // namespace memtrack
