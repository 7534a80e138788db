#include "report/Filter.hpp"

namespace memtrack::report {
namespace {

bool any_frame_matches(const StackFrames& frames, const std::regex& re) {
    for (const Frame* f : frames)
        if (std::regex_search(f->function, re) || std::regex_search(f->file, re) || std::regex_search(f->module, re))
            return true;
    return false;
}

}  // namespace

bool Filter::accepts_stack(const StackFrames* frames) const {
    if (opt_.focus && (!frames || !any_frame_matches(*frames, *opt_.focus))) return false;
    if (opt_.ignore && frames && any_frame_matches(*frames, *opt_.ignore)) return false;
    return true;
}

void Filter::select_commands(const std::vector<std::pair<int32_t, std::string>>& commands) {
    if (!opt_.command) return;
    command_pids_.emplace();
    for (const auto& [pid, command] : commands)
        if (std::regex_search(command, *opt_.command)) command_pids_->insert(pid);
}

}  // namespace memtrack::report
