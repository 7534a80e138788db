#include "core/ProcMaps.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <memory>

#include <fmt/format.h>

#include "core/Fd.hpp"

namespace memtrack {
namespace {

// The whole file: the kernel generates the text as it is read.
Result<std::string> read_whole(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    std::string text;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read", path);
        }
        if (n == 0) break;
        text.append(buf, size_t(n));
    }
    return text;
}

}  // namespace

Result<std::string> read_proc_maps(pid_t pid) {
    auto text = read_whole(fmt::format("/proc/{}/maps", pid));
    if (!text || !text->empty()) return text;
    // The main thread is gone: any live thread shows the process's map.
    const std::string tasks = fmt::format("/proc/{}/task", pid);
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(tasks.c_str()), ::closedir);
    if (!dir) return text;
    std::string found;
    while (dirent* e = ::readdir(dir.get())) {
        if (e->d_name[0] == '.') continue;
        auto t = read_whole(tasks + "/" + e->d_name + "/maps");
        if (t && !t->empty()) {
            found = std::move(*t);
            break;
        }
    }
    return found;
}

}  // namespace memtrack
