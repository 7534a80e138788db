#include "core/PrivateDir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <string_view>

#include <fmt/format.h>

namespace memtrack {
namespace {

// As many links as the kernel follows in one path (MAXSYMLINKS).
constexpr int kMaxLinks = 40;

void push_parts(std::deque<std::string>& parts, std::string_view path) {
    std::deque<std::string> mine;
    size_t at = 0;
    while (at <= path.size()) {
        size_t end = path.find('/', at);
        if (end == std::string_view::npos) end = path.size();
        if (end > at) mine.emplace_back(path.substr(at, end - at));
        at = end + 1;
    }
    parts.insert(parts.begin(), mine.begin(), mine.end());
}

// Whether only we or root can change the entries of the folder `st` describes.
bool written_by_us_alone(const struct stat& st) {
    return (st.st_uid == 0 || st.st_uid == ::geteuid()) && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace

Result<Fd> open_private_dir(const std::string& path, bool create) {
    const std::string op = "cache folder";
    if (path.empty()) return Error{op, path, EINVAL, "no folder named"};
    std::deque<std::string> parts;
    push_parts(parts, path);
    constexpr int kWalk = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    Fd cur(::open(path.front() == '/' ? "/" : ".", kWalk));
    if (!cur.valid()) return errno_error(op, path);
    std::string walked = path.front() == '/' ? "" : ".";  // for messages: where the walk is
    int links = 0;
    while (!parts.empty()) {
        const std::string name = std::move(parts.front());
        parts.pop_front();
        if (name == ".") continue;
        const std::string here = walked + "/" + name;
        Fd next(::openat(cur.get(), name.c_str(), kWalk));
        if (!next.valid() && errno == ENOENT && create) {
            // Only the folder itself is private; parents are made as mkdir -p would.
            if (::mkdirat(cur.get(), name.c_str(), parts.empty() ? 0700 : 0755) != 0 && errno != EEXIST)
                return errno_error("mkdir", here);
            next.reset(::openat(cur.get(), name.c_str(), kWalk));
        }
        if (!next.valid() && errno == ENOTDIR) {
            // O_PATH | O_NOFOLLOW | O_DIRECTORY on a symbolic link fails with ENOTDIR.
            struct stat link {}, parent {};
            if (::fstatat(cur.get(), name.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0) return errno_error(op, here);
            if (!S_ISLNK(link.st_mode)) return Error{op, here, ENOTDIR, {}};
            if (::fstat(cur.get(), &parent) != 0)
                return errno_error(op, walked.empty() ? "/" : walked);
            if (!written_by_us_alone(parent))
                return Error{op, path, 0,
                             fmt::format("{} is a symbolic link in a folder others can write (owner uid {}, mode {:04o}); "
                                         "not following it",
                                         here, parent.st_uid, parent.st_mode & 07777)};
            if (++links > kMaxLinks) return Error{op, path, ELOOP, {}};
            std::string target(PATH_MAX, '\0');
            const ssize_t n = ::readlinkat(cur.get(), name.c_str(), target.data(), target.size());
            if (n < 0) return errno_error("readlink", here);
            target.resize(size_t(n));
            push_parts(parts, target);
            if (target.starts_with('/')) {
                cur.reset(::open("/", kWalk));
                if (!cur.valid()) return errno_error(op, "/");
                walked.clear();
            }
            continue;
        }
        if (!next.valid()) return errno_error(op, here);
        cur = std::move(next);
        walked = here;
    }
    Fd dir(::openat(cur.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir.valid()) return errno_error(op, path);
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) return errno_error(op, path);
    if (st.st_uid != ::geteuid())
        return Error{op, path, 0, fmt::format("it belongs to uid {}, not to us; not using it", st.st_uid)};
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return Error{op, path, 0,
                     fmt::format("someone else can write it (mode {:04o}); not using it", st.st_mode & 07777)};
    return dir;
}

}  // namespace memtrack
