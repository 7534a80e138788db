#include "core/OutputFiles.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <vector>
#include <algorithm>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/PrivateDir.hpp"

namespace memtrack {
namespace {

constexpr std::string_view kArtifactSuffix = ".MemtrackArtifact.msgpack";
constexpr std::string_view kStacksSuffix = ".MemtrackStacks.msgpack";
constexpr std::string_view kTimelineSuffix = ".MemtrackTimeline.msgpack";

const char* kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "an unknown kind of file";
}

// What may be reused under an existing name; nothing else is opened.
std::optional<std::string> refuse_existing(const struct stat& st, bool shared) {
    if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
        return fmt::format("it exists and is {}; not writing to it", kind(st.st_mode));
    if (shared && st.st_uid != ::geteuid())
        return fmt::format("it exists in a shared folder and belongs to uid {}; not writing to it", st.st_uid);
    if (shared && S_ISREG(st.st_mode) && st.st_nlink != 1)
        return fmt::format("it exists in a shared folder with {} hard links; not writing to it", st.st_nlink);
    return std::nullopt;
}

}  // namespace

std::string artifact_name(int32_t root_pid) { return fmt::format("{}{}", root_pid, kArtifactSuffix); }
std::string stacks_name(int32_t root_pid) { return fmt::format("{}{}", root_pid, kStacksSuffix); }

std::string timeline_name(int32_t root_pid) { return fmt::format("{}{}", root_pid, kTimelineSuffix); }

std::string stacks_path_for(const std::string& artifact) {
    if (!artifact.ends_with(kArtifactSuffix)) return {};
    return artifact.substr(0, artifact.size() - kArtifactSuffix.size()) + std::string(kStacksSuffix);
}

std::string timeline_path_for(const std::string& artifact) {
    if (!artifact.ends_with(kArtifactSuffix)) return {};
    return artifact.substr(0, artifact.size() - kArtifactSuffix.size()) + std::string(kTimelineSuffix);
}

Result<std::string> artifact_in(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) return path;  // a file, or an error its reader names
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(kArtifactSuffix)) found.push_back(entry.path().string());
    }
    if (ec) return Error{"list", path, ec.value(), "cannot list the folder"};
    if (found.size() == 1) return found.front();
    if (found.empty()) return Error{"open", path, 0, "a folder with no *.MemtrackArtifact.msgpack in it"};
    std::sort(found.begin(), found.end());
    return Error{"open", path, 0,
                 fmt::format("a folder with {} artifacts: name one ({})", found.size(), fmt::join(found, ", "))};
}

Result<OutputDir> OutputDir::open(const std::string& path, bool create) {
    const std::string op = "output folder";
    if (create) {
        std::error_code ec;
        std::filesystem::create_directories(path, ec);
        if (ec) return Error{op, path, ec.value(), "cannot create it"};
    }
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return errno_error(op, path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error(op, path);
    const bool others_write = st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    const bool sticky = (st.st_mode & S_ISVTX) != 0;
    if (others_write && !sticky)
        return Error{op, path, 0,
                     fmt::format("someone else can write it (owner uid {}, mode {:04o}) and it is not sticky; "
                                 "refusing to create files there (choose a folder of your own with -o)",
                                 st.st_uid, st.st_mode & 07777)};
    if (::faccessat(fd.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) return Error{op, path, errno, "not writable"};
    return OutputDir(path, std::move(fd), others_write);
}

Result<OutputDir> OutputDir::open_private(const std::string& path) {
    auto fd = open_private_dir(path, true);
    if (!fd) return fd.error();
    if (::faccessat(fd->get(), ".", W_OK | X_OK, AT_EACCESS) != 0)
        return Error{"cache folder", path, errno, "not writable"};
    return OutputDir(path, std::move(fd).value(), false);
}

Result<Fd> OutputDir::create(std::string_view name_view) const {
    const std::string name(name_view);
    const std::string full = path_of(name);
    constexpr int kFlags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    Fd fd(::openat(fd_.get(), name.c_str(), kFlags | O_CREAT | O_EXCL, 0644));
    if (fd.valid()) return fd;
    if (errno != EEXIST) return errno_error("create", full);

    // The name exists: look before opening, so that nobody's FIFO or device is even opened.
    struct stat before {};
    if (::fstatat(fd_.get(), name.c_str(), &before, AT_SYMLINK_NOFOLLOW) != 0) return errno_error("stat", full);
    if (S_ISLNK(before.st_mode)) return Error{"create", full, 0, "it is a symbolic link; not following it"};
    if (auto why = refuse_existing(before, shared_)) return Error{"create", full, 0, *why};
    fd.reset(::openat(fd_.get(), name.c_str(), kFlags));
    if (!fd.valid()) {
        if (errno == ELOOP) return Error{"create", full, 0, "it is a symbolic link; not following it"};
        if (errno == ENXIO) return Error{"open", full, 0, "it is a FIFO and nothing reads it"};
        return errno_error("open", full);
    }
    // What was opened is what was looked at, not something swapped in between.
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat", full);
    if (st.st_dev != before.st_dev || st.st_ino != before.st_ino)
        return Error{"create", full, 0, "it was replaced while being opened; not writing to it"};
    if (auto why = refuse_existing(st, shared_)) return Error{"create", full, 0, *why};
    if (S_ISREG(st.st_mode) && ::ftruncate(fd.get(), 0) != 0) return errno_error("truncate", full);
    return fd;
}

void OutputDir::remove(std::string_view name) const { ::unlinkat(fd_.get(), std::string(name).c_str(), 0); }

Result<Fd> OutputDir::open_own(std::string_view name_view) const {
    const std::string name(name_view);
    Fd fd(::openat(fd_.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ELOOP) return Error{"open", path_of(name), 0, "it is a symbolic link; not following it"};
        return errno_error("open", path_of(name));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat", path_of(name));
    if (!S_ISREG(st.st_mode)) return Error{"open", path_of(name), 0, fmt::format("it is {}", kind(st.st_mode))};
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return Error{"open", path_of(name), 0,
                     fmt::format("someone else can write it (owner uid {}, mode {:04o}); not reading it", st.st_uid,
                                 st.st_mode & 07777)};
    return fd;
}

Result<void> OutputDir::rename(std::string_view from, std::string_view to) const {
    if (::renameat(fd_.get(), std::string(from).c_str(), fd_.get(), std::string(to).c_str()) != 0)
        return errno_error("rename", path_of(to));
    return {};
}

std::string OutputDir::path_of(std::string_view name) const {
    if (path_.empty() || path_.back() == '/') return path_ + std::string(name);
    return fmt::format("{}/{}", path_, name);
}

namespace {

struct Split {
    std::string dir;
    std::string name;
};

Result<Split> split_path(const std::string& path) {
    const std::filesystem::path p(path);
    std::string name = p.filename().string();
    if (name.empty() || name == "." || name == "..") return Error{"output file", path, EISDIR, "not a file name"};
    std::string dir = p.parent_path().string();
    if (dir.empty()) dir = ".";
    return Split{std::move(dir), std::move(name)};
}

}  // namespace

Result<Fd> open_output_file(const std::string& path) {
    auto split = split_path(path);
    if (!split) return split.error();
    auto dir = OutputDir::open(split->dir, false);
    if (!dir) return dir.error();
    return dir->create(split->name);
}

Result<void> check_output_file(const std::string& path) {
    auto split = split_path(path);
    if (!split) return split.error();
    auto dir = OutputDir::open(split->dir, false);
    if (!dir) return dir.error();
    return {};
}

Result<void> write_all_bounded(int fd, std::string_view data, const std::string& what, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n >= 0) {
            data.remove_prefix(size_t(n));
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return errno_error("write", what);
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return Error{"write", what, 0, fmt::format("its reader took no data for {} ms", timeout_ms)};
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, int(left.count()));
    }
    return {};
}

}  // namespace memtrack
