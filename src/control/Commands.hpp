#pragma once
// The control commands, listed once: each one's name, the request fields it needs and how they
// are checked, the ControlHandlers member it calls, and its help line. The request parser, the
// connection's dispatch, `memtrack ctl`'s help and the "unknown command" error all read this
// table, so a command is added by adding its row (and its handler), and a unit test can run
// every command against fake handlers without a socket. docs/PROTOCOL.md's command table is
// checked against it by test_control_commands.cpp.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "control/ControlHandlers.hpp"
#include "core/Result.hpp"

namespace memtrack {

constexpr int kControlProtocolVersion = 1;  // ping's "protocol"

// A request's arguments, once checked against its command's.
struct CommandArgs {
    std::optional<int32_t> pid;
    std::optional<std::string> name;
};

// A request field a command needs, of one of two kinds: a pid (an integer in 1..INT32_MAX, into
// CommandArgs::pid) or a name (1..kMaxNameBytes printable ASCII characters, into CommandArgs::name).
struct CommandArgument {
    enum class Kind { Pid, Name };
    std::string_view field;  // the request's key; `memtrack ctl` sends it from --pid or its NAME
    Kind kind;
    std::string_view help;
};
constexpr size_t kMaxNameBytes = 256;
// How docs/PROTOCOL.md describes a field of each kind: "positive integer", "string".
std::string_view argument_kind_text(CommandArgument::Kind kind);

// An answer known as soon as the command has run; nullopt when the handler took the reply and
// answers through it (at most once, now or later, from any thread).
using CommandAnswer = std::optional<Result<boost::json::object>>;
// Makes the reply a handler answers through; called only by commands that hand one on.
using MakeReply = std::function<ControlHandlers::Reply()>;

struct ControlCommand {
    std::string_view name;
    std::span<const CommandArgument> arguments;  // every one is required
    std::string_view help;
    // Calls the command's ControlHandlers member; "not available" when that member is empty.
    CommandAnswer (*run)(const ControlHandlers&, const CommandArgs&, const MakeReply&);
};

// Every command, in the order docs and error messages list them.
std::span<const ControlCommand> control_commands();
const ControlCommand* find_command(std::string_view name);
// "ping, enable, ...": for the "unknown command" error and help texts.
std::string command_names();
// The commands that take `field`, "attach" or "a, b": for a help text.
std::string commands_taking(std::string_view field);
// One line per command, "  name   help", for `memtrack ctl --help`.
std::string commands_help();

// Checks `request`'s fields against the command's arguments: the refusal's text, or nullopt
// with `out` filled.
std::optional<std::string> check_arguments(const ControlCommand& command, const boost::json::object& request,
                                           CommandArgs& out);

// Runs a checked request. A handler that throws gets "internal error: ..." as the answer (which
// goes before anything it may have sent through its reply).
CommandAnswer run_command(const ControlCommand& command, const CommandArgs& args, const ControlHandlers& handlers,
                          const MakeReply& make_reply);

}  // namespace memtrack
