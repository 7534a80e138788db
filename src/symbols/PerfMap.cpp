#include "symbols/PerfMap.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <optional>

#include "symbols/TextFields.hpp"

namespace memtrack {
namespace {

// A "START " or "SIZE " field: hex, with or without 0x, and the space after it.
std::optional<uint64_t> take_hex_field(std::string_view& s) {
    if (s.starts_with("0x")) s.remove_prefix(2);
    const auto v = text::take_hex(s);
    if (!v || !text::take_char(s, ' ')) return std::nullopt;
    return v;
}

// The pid a process has in its own namespace: the last of /proc/PID/status's NSpid.
int own_pid(int pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (!line.starts_with("NSpid:")) continue;
        const size_t last = line.find_last_of(" \t");
        int v = 0;
        const char* b = line.data() + last + 1;
        if (std::from_chars(b, line.data() + line.size(), v).ec == std::errc()) return v;
    }
    return pid;
}

}  // namespace

PerfMap PerfMap::for_process(int pid) {
    struct stat st {};
    const std::string proc = "/proc/" + std::to_string(pid);
    if (::stat(proc.c_str(), &st) != 0) return PerfMap("/tmp/perf-" + std::to_string(pid) + ".map", uid_t(-1));
    return PerfMap(proc + "/root/tmp/perf-" + std::to_string(own_pid(pid)) + ".map", st.st_uid);
}

PerfMap::PerfMap(std::string path, uid_t owner) : path_(std::move(path)), owner_(owner) {}

const std::string* PerfMap::find(uint64_t addr) {
    auto hit = [&]() -> const std::string* {
        auto it = objects_.upper_bound(addr);
        if (it == objects_.begin()) return nullptr;
        --it;
        return addr < it->second.end ? &it->second.name : nullptr;
    };
    if (const std::string* name = hit()) return name;
    if (!refresh()) return nullptr;
    return hit();
}

void PerfMap::add(std::string_view text) {
    partial_.append(text);
    std::string_view rest = partial_;
    for (size_t nl; (nl = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(nl + 1)) {
        std::string_view line = rest.substr(0, nl);
        const auto start = take_hex_field(line);
        const auto size = start ? take_hex_field(line) : std::nullopt;
        if (!size || *size == 0 || line.empty() || *start + *size < *start) continue;
        const uint64_t end = *start + *size;
        // Earlier objects overlapping [start, end) are gone: cut them to what is left outside.
        auto it = objects_.upper_bound(*start);
        if (it != objects_.begin() && std::prev(it)->second.end > *start) --it;
        while (it != objects_.end() && it->first < end) {
            Object old = it->second;
            const uint64_t old_start = it->first;
            it = objects_.erase(it);
            if (old_start < *start) objects_.emplace(old_start, Object{*start, old.name});
            if (old.end > end) it = objects_.emplace(end, Object{old.end, std::move(old.name)}).first;
        }
        objects_.emplace(*start, Object{end, std::string(line)});
    }
    partial_.erase(0, partial_.size() - rest.size());
}

namespace {

struct OpenedMap {
    Fd fd;
    struct stat st;
};

// The file under `path` now, if the runtime's user could have written it.
Result<OpenedMap> open_map(const std::string& path, uid_t owner) {
    OpenedMap m{Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)), {}};
    if (!m.fd.valid()) return errno_error("open", path);
    if (::fstat(m.fd.get(), &m.st) != 0) return errno_error("stat", path);
    // Written by the runtime, so owned by the process's user: anything else was planted there.
    if (!S_ISREG(m.st.st_mode) || (owner != uid_t(-1) && m.st.st_uid != owner))
        return Error{"open", path, EPERM, "not a regular file of the process's user"};
    return m;
}

}  // namespace

Result<void> PerfMap::refresh() {
    Result<OpenedMap> now = open_map(path_, owner_);
    if (now) {
        // Another file under the name (another inode, or the same one rewritten shorter) is
        // another map: another process's, once the pid was reused.
        const struct stat& st = now->st;
        if (!file_.valid() || st.st_ino != inode_ || st.st_dev != dev_ || st.st_size < read_to_) {
            if (file_.valid()) {
                objects_.clear();
                partial_.clear();
                read_to_ = 0;
            }
            file_ = std::move(now->fd);
            inode_ = st.st_ino;
            dev_ = st.st_dev;
        }
    } else if (!file_.valid()) {
        return now.error();
    }
    // Otherwise the name leads nowhere now (the process exited, and /proc/PID/root with it) or to
    // a file refused: the map the runtime wrote is the one held open.
    char buf[65536];
    for (;;) {
        const ssize_t n = ::pread(file_.get(), buf, sizeof buf, read_to_);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read", path_);
        }
        if (n == 0) return {};
        read_to_ += n;
        add(std::string_view(buf, size_t(n)));
    }
}

}  // namespace memtrack
