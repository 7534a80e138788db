#pragma once
// Turns the ring's process-life and RSS records (record.h: MT_KIND_FORK and on) into timeline
// events. An exec arrives as its MT_KIND_EXEC and then the pieces of its path and arguments;
// the exec is an event once its arguments' last piece is in. Owned by the Writer, on its strand.
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "format/Record.hpp"
#include "format/Timeline.hpp"

namespace memtrack {

class TimelineRecords {
public:
    // Takes one record of a non-artifact kind; calls `out` with each event it completes.
    void add(const mt_record& r, const std::function<void(const TimelineEvent&)>& out);
    // Execs whose arguments have not all arrived (a record lost, or memtrack stopped between).
    size_t unfinished_execs() const { return execs_.size(); }
    // Records of a kind this build does not know, or pieces with no exec before them.
    uint64_t unexpected() const { return unexpected_; }

private:
    struct Exec {
        uint64_t time = 0;
        std::string path, args;
        bool cut = false;
    };
    std::unordered_map<int32_t, Exec> execs_;  // by pid
    uint64_t unexpected_ = 0;
};

}  // namespace memtrack
