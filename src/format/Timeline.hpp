#pragma once
// The timeline file, DIR/<root-pid>.MemtrackTimeline.msgpack: what happened to the processes of
// the tracked tree and to the recording, in time (docs/FORMATS.md). Same conventions as the
// artifact: one zstd stream of MessagePack maps back to back, decodable up to its last flush.
//
// Its name must not contain "MemtrackArtifact": the benchmark runner reads every such file as
// an artifact.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/Result.hpp"

namespace memtrack {

struct TimelineEvent {
    enum class Type : uint8_t {
        Start,    // the command memtrack started (its exec follows): pid
        Attach,   // a running process added by the socket's `attach`: pid, path, argv
        Fork,     // pid is the child, parent the process that forked it
        Exec,     // pid, path, argv (argv_cut: longer than the kernel side copies)
        Exit,     // pid; code, or signal (core: it dumped core)
        Detach,   // pid: still running when the recording ended
        Enable,   // the socket's `enable`
        Disable,  // the socket's `disable`
        Mark,     // `ctl mark NAME`: name
        Rss,      // pid; anon, file, shmem, swap in bytes
        RssPeak,  // pid; peak: its RSS high-water mark, at its exit
    };
    Type type = Type::Mark;
    uint64_t time = 0;  // CLOCK_MONOTONIC ns, the artifact's clock
    int32_t pid = 0;
    int32_t parent = 0;
    std::string path;
    std::vector<std::string> argv;
    bool argv_cut = false;
    std::optional<int32_t> code;
    std::optional<int32_t> signal;
    bool core = false;
    std::string name;
    uint64_t anon = 0, file = 0, shmem = 0, swap = 0;
    uint64_t peak = 0;

    bool operator==(const TimelineEvent&) const = default;
};

// "fork", "exec", ...: the `type` each event is written with.
std::string_view timeline_type_name(TimelineEvent::Type t);

// A wait status as the kernel keeps it at exit (task->exit_code) into code / signal / core.
void set_exit_status(TimelineEvent& e, uint32_t status);

// Arguments as the kernel keeps them (each ended by a NUL, the last one's NUL possibly cut)
// into a list.
std::vector<std::string> split_argv(std::string_view args);

// Appends `e` to `out` as one MessagePack map, with the keys its type carries, in the order
// docs/FORMATS.md lists them.
void encode_timeline_event(const TimelineEvent& e, std::string& out);

// Streams the timeline at `path`, calling `on_event` for each event in file order; returns how
// many there were. Unknown keys are skipped, an unknown `type` is an error. Errors are worded as
// read_stacks' are, with "timeline event" and "timeline".
Result<uint64_t> read_timeline(const std::string& path, const std::function<void(TimelineEvent&&)>& on_event);

}  // namespace memtrack
