#pragma once
// Which events a report counts: --pid, --from/--to, --focus/--ignore, --min-size/--max-size.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/StacksFile.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

struct FilterOptions {
    std::set<int32_t> pids;                  // empty: every process
    std::optional<std::regex> command;       // only processes whose command line matches (the timeline's)
    std::optional<uint64_t> from_ns, to_ns;  // since the artifact's first event
    std::optional<std::regex> focus;         // a stack counts only if some frame matches
    std::optional<std::regex> ignore;        // a stack is dropped if some frame matches
    uint64_t min_size = 0;
    uint64_t max_size = UINT64_MAX;
};

class Filter {
public:
    explicit Filter(FilterOptions opt) : opt_(std::move(opt)) {}

    bool accepts_pid(int32_t pid) const {
        return (opt_.pids.empty() || opt_.pids.contains(pid)) && (!command_pids_ || command_pids_->contains(pid));
    }
    bool selects_commands() const { return opt_.command.has_value(); }
    // --command: the processes whose command line (forked children inherit their parent's until
    // they exec) matches, by their pid and command line.
    void select_commands(const std::vector<std::pair<int32_t, std::string>>& commands);
    // Narrows the time window to [from, to] as well (--window), both since the first event.
    void narrow(uint64_t from_ns, uint64_t to_ns) {
        opt_.from_ns = std::max(opt_.from_ns.value_or(0), from_ns);
        if (to_ns != UINT64_MAX) opt_.to_ns = std::min(opt_.to_ns.value_or(UINT64_MAX), to_ns);
    }
    // The time window's start since the first event (--from, --window); 0 without one.
    uint64_t from_ns() const { return opt_.from_ns.value_or(0); }
    bool accepts_size(uint64_t size) const { return size >= opt_.min_size && size <= opt_.max_size; }
    // `since_start_ns`: the event's time since the artifact's first event.
    bool before_window(uint64_t since_start_ns) const { return opt_.from_ns && since_start_ns < *opt_.from_ns; }
    bool after_window(uint64_t since_start_ns) const { return opt_.to_ns && since_start_ns > *opt_.to_ns; }
    // --focus and --ignore look at every frame's function, file and module. `frames` is null for
    // an allocation without a known stack: --focus drops it, --ignore keeps it.
    bool accepts_stack(const StackFrames* frames) const;

private:
    FilterOptions opt_;
    std::optional<std::set<int32_t>> command_pids_;
};

}  // namespace memtrack::report
