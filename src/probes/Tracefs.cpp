#include "probes/Tracefs.hpp"

#include <sys/mount.h>
#include <unistd.h>

namespace memtrack {

Result<void> ensure_tracefs() {
    if (::access("/sys/kernel/tracing/events", F_OK) == 0 ||
        ::access("/sys/kernel/debug/tracing/events", F_OK) == 0)
        return {};
    if (::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0 && errno != EBUSY)
        return errno_error("mount tracefs on", "/sys/kernel/tracing");
    return {};
}

}  // namespace memtrack
