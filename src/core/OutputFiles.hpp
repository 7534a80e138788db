#pragma once
// The one place that names and creates the files `memtrack track` writes: the artifact, the
// stacks file, the timeline and the --stats file. memtrack runs as root in folders other users may write
// (a CI runner's /tmp, a shared -o folder), so a name there may already be a symbolic link, a
// hard link or a FIFO planted by someone else. Every output is opened by these functions only:
// never through a symbolic link, never into a folder someone else can write unless it is sticky
// and what is opened is ours.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

// "<root pid>.MemtrackArtifact.msgpack" and "<root pid>.MemtrackStacks.msgpack".
std::string artifact_name(int32_t root_pid);
std::string stacks_name(int32_t root_pid);
// "<root pid>.MemtrackTimeline.msgpack".
std::string timeline_name(int32_t root_pid);
// The stacks file beside an artifact: <prefix>.MemtrackArtifact.msgpack ->
// <prefix>.MemtrackStacks.msgpack; empty when `artifact` is not so named.
std::string stacks_path_for(const std::string& artifact);
// The timeline beside an artifact, the same way.
std::string timeline_path_for(const std::string& artifact);
// What a reader opens when the user names `path`: `path` itself, or, when it is a folder (the
// -o folder `memtrack track` wrote), the one <prefix>.MemtrackArtifact.msgpack in it. A folder
// with none, or with several (which one is ambiguous), is an error naming what is there.
Result<std::string> artifact_in(const std::string& path);

// A folder outputs are created in, held open by fd so that a rename of a parent after the
// checks cannot redirect what is created in it.
class OutputDir {
public:
    // Opens `path` (creating it and its parents when `create`), and refuses it when someone other
    // than us can write it (not our own, or group/other-writable) unless it is sticky.
    static Result<OutputDir> open(const std::string& path, bool create);
    // A folder of our own alone, created (0700) when missing: open_private_dir's walk and checks
    // (core/PrivateDir.hpp). Never shared.
    static Result<OutputDir> open_private(const std::string& path);

    // Opens `name` for writing: creates it (mode 0644) with O_EXCL | O_NOFOLLOW; a name that
    // exists is reused only when it is not a symbolic link, is a regular file, FIFO or character
    // device, and, in a shared (sticky) folder, is ours with no other hard link. A regular file
    // is truncated. Opened non-blocking: a FIFO without a reader is an error (ENXIO), not a wait.
    Result<Fd> create(std::string_view name) const;
    // Removes `name` if it is there; by the folder's fd, never following a link.
    void remove(std::string_view name) const;
    // Opens `name` for reading when it is a regular file of ours that no one else can write
    // (what memtrack wrote there itself); never through a symbolic link. Absent: ENOENT.
    Result<Fd> open_own(std::string_view name) const;
    // Renames `from` to `to` within the folder, replacing `to` at once.
    Result<void> rename(std::string_view from, std::string_view to) const;
    // The folder's descriptor, for listing it.
    int fd() const { return fd_.get(); }

    std::string path_of(std::string_view name) const;
    const std::string& path() const { return path_; }
    bool shared() const { return shared_; }

private:
    OutputDir(std::string path, Fd fd, bool shared) : path_(std::move(path)), fd_(std::move(fd)), shared_(shared) {}
    std::string path_;
    Fd fd_;
    bool shared_;  // sticky and writable by others: what we open there must be ours
};

// A single output file named by the user (--stats, MEMTRACK_STATS): its folder checked and the
// file opened as OutputDir::create does.
Result<Fd> open_output_file(const std::string& path);
// The folder check alone, for a file that is opened only at exit: a bad --stats fails at start.
Result<void> check_output_file(const std::string& path);

// Writes all of `data` to a possibly non-blocking fd, waiting at most `timeout_ms` in total
// for it to accept more (a FIFO whose reader stopped reading).
Result<void> write_all_bounded(int fd, std::string_view data, const std::string& what, int timeout_ms);

}  // namespace memtrack
