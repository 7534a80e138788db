#pragma once
// The processes of a recorded session, from its timeline (format/Timeline.hpp): who forked whom,
// what each ran, when and how it ended, its RSS. The Analyzer ends a process's heap at its exit
// (what is live then is leaked) and at its exec (discarded by the exec, not leaked); a process
// the timeline saw still running at the end has its blocks live at the end of the recording.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/Result.hpp"
#include "format/Timeline.hpp"

namespace memtrack::report {

struct ProcessInfo {
    int32_t pid = 0;
    int32_t parent = 0;       // 0: the command memtrack started, or an attached process
    bool attached = false;
    std::string command;      // the last exec's (or attach's) argv joined by spaces
    uint64_t start_ns = 0;    // CLOCK_MONOTONIC: fork, start or attach
    uint64_t end_ns = 0;      // exit, or the end of the recording (detach); 0: unknown
    std::string status;       // "exit 3", "signal 9", "running at the end", "" unknown
    uint64_t rss_peak = 0;    // rss_peak at exit, else the highest `rss` sample (anon+file+shmem)
};

// A point where a process's heap ends: its exit, or an exec (its old image's heap is gone).
struct HeapEnd {
    uint64_t time = 0;  // CLOCK_MONOTONIC
    int32_t pid = 0;
    bool exec = false;
};

struct RssSample {
    uint64_t time = 0;
    int32_t pid = 0;
    uint64_t bytes = 0;  // anon + file + shmem
};

struct ProcessModel {
    std::map<int32_t, ProcessInfo> processes;  // by pid; a reused pid keeps its last life
    std::vector<HeapEnd> ends;                 // by time
    std::vector<RssSample> rss;                // by time
    std::vector<TimelineEvent> session;        // enable, disable, mark: by time
};

// Builds the model from the events of one timeline, in any order.
ProcessModel build_process_model(std::vector<TimelineEvent> events);
// Reads `path` and builds its model.
Result<ProcessModel> load_process_model(const std::string& path);

}  // namespace memtrack::report
