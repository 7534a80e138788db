#pragma once
// One control request line (docs/PROTOCOL.md) checked and taken apart: the only place a request's
// text is interpreted. Kept apart from the socket so it can be tested and fuzzed alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memtrack {

struct Request {
    // The id exactly as the client wrote it (JSON text), echoed verbatim: a number re-printed by a
    // JSON library loses digits past 2^53 and turns 1e400 into "Infinity", which is not JSON.
    std::optional<std::string> id;
    std::string cmd;             // one of the known commands, when error is empty
    std::optional<int32_t> pid;  // attach's
    // Why the request is refused; id is set when the line was an object with an id.
    std::optional<std::string> error;
};

// Refused: not JSON, not an object, a key given twice anywhere in it, no string "cmd", an unknown
// command, attach without a pid in 1..INT32_MAX.
Request parse_request(std::string_view line);

}  // namespace memtrack
