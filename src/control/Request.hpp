#pragma once
// One control request line (docs/PROTOCOL.md) checked and taken apart, and the reply line made
// for it: the only place a request's text is interpreted and a reply's text is put together.
// Kept apart from the socket so it can be tested and fuzzed alone.
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "control/Commands.hpp"
#include "core/Result.hpp"

namespace memtrack {

struct Request {
    // The id exactly as the client wrote it (JSON text), echoed verbatim: a number re-printed by a
    // JSON library loses digits past 2^53 and turns 1e400 into "Infinity", which is not JSON.
    std::optional<std::string> id;
    const ControlCommand* command = nullptr;  // set when error is empty
    CommandArgs args;
    // Why the request is refused; id is set when the line was an object with an id.
    std::optional<std::string> error;
};

// `line` comes without its newline (and without a \r before it). Refused: a blank line, not JSON,
// not an object, a key given twice anywhere in it, no string "cmd", an unknown command, an
// argument of the command missing or out of its range (control/Commands.hpp).
Request parse_request(std::string_view line);

// The reply line, newline included: "ok" first, then the request's id as its text (when it had
// one), then the answer's fields ("error" for a failure); an "ok" or "id" among them is dropped.
std::string reply_line(const std::optional<std::string>& id, Result<boost::json::object> answer);

}  // namespace memtrack
