#pragma once
// `memtrack ctl --socket PATH CMD [--pid N]`: sends one request to a running `memtrack track
// --socket PATH` and prints its reply line (docs/PROTOCOL.md).
#include <cstdint>
#include <optional>
#include <string>

namespace memtrack {

struct CtlOptions {
    std::string socket;
    std::string cmd;             // sent as given: the server checks it (control/Commands.hpp)
    std::optional<int64_t> pid;  // sent as "pid" when given (the commands that take a pid need it)
    double timeout_s = 60;       // for connecting, sending and the reply together; <= 0: no limit
    std::optional<std::string> name;  // sent as "name" when given (`mark NAME`)
};

// Returns the process exit code: 0 when the reply says "ok": true, 1 when it says false (the
// reply is printed to stdout either way), 2 when there is no usable reply (cannot connect, timed
// out, connection closed, malformed reply), with one line "memtrack: ctl: <reason>" on stderr.
int run_ctl(const CtlOptions& opts);

}  // namespace memtrack
