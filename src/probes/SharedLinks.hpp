#pragma once
// Owns the shared allocator links: for each object file (device, inode), one set of links that
// every process mapping the file traps on (the programs record only processes the `tracked` map
// marks shared: TrackedProcesses). Attached at most once per file, whoever asks first: the
// start-up, or ProcessLinks for a process served by the shared links. Thread-safe. Detached by
// handing the links to the run's one LinkCloser (BpfSession::detach).
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/Result.hpp"
#include "probes/LinkCloser.hpp"
#include "probes/ProbeSiteCache.hpp"
#include "probes/UprobeMultiLink.hpp"

namespace memtrack {

class SharedLinks {
public:
    // One object's links for every process (BpfSession::attach_object with pid 0).
    using Attach = std::function<Result<std::vector<UprobeMultiLink>>(const ProbedObject&)>;

    SharedLinks(Attach attach, LinkCloser& closer) : attach_(std::move(attach)), closer_(closer) {}
    SharedLinks(const SharedLinks&) = delete;
    SharedLinks& operator=(const SharedLinks&) = delete;

    // The object's links, unless it has them already; an object without probe sites has none.
    // A failed attach leaves the object without links (a later call tries again).
    Result<void> attach(const ProbedObject& o);
    Result<void> attach(const std::vector<ProbedObject>& objects);
    // Hands every link to the closer (it does not wait); the objects may be attached again.
    void detach();

private:
    Attach attach_;
    LinkCloser& closer_;
    std::mutex mu_;  // guards links_ and objects_
    std::vector<UprobeMultiLink> links_;
    std::set<std::pair<uint64_t, uint64_t>> objects_;  // (dev, ino) with links
};

}  // namespace memtrack
