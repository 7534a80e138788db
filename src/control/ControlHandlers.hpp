#pragma once
// What the control socket can ask of the rest of memtrack: one member per handler the command
// table (control/Commands.hpp) calls. A member left empty makes its commands "not available".
#include <cstdint>
#include <functional>
#include <string>

#include <boost/json/object.hpp>

#include "core/Result.hpp"

namespace memtrack {

// Each handler may be called from a connection's strand and must not block: it posts onwards and
// replies through `reply`, at most once, from any thread.
struct ControlHandlers {
    using Reply = std::function<void(Result<boost::json::object>)>;
    std::function<void(bool on, Reply)> set_recording;
    std::function<void(Reply)> drain;               // reply carries "records"
    std::function<boost::json::object()> stats;     // the live stats object
    std::function<void(int32_t pid, Reply)> attach;
    std::function<void(const std::string& name, Reply)> mark;  // reply carries "mark"

    std::function<void(Reply)> shutdown;            // reply before memtrack exits
};

}  // namespace memtrack
