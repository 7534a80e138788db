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

}  // namespace memtrack::report
