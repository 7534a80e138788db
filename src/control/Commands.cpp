#include "control/Commands.hpp"

#include <algorithm>
#include <exception>
#include <limits>

#include <boost/json.hpp>
#include <fmt/format.h>

#ifndef MEMTRACK_VERSION
#define MEMTRACK_VERSION "unknown"
#endif

namespace memtrack {

namespace json = boost::json;

namespace {

CommandAnswer not_available() { return Error{"not available", {}, 0, {}}; }

// Calls handler member `M` with `args...` and a fresh reply, unless it is empty.
template <auto M, typename... A>
CommandAnswer call(const ControlHandlers& h, const MakeReply& make_reply, A... args) {
    const auto& handler = h.*M;
    if (!handler) return not_available();
    handler(args..., make_reply());
    return std::nullopt;
}

constexpr CommandArgument kPid[] = {{"pid", CommandArgument::Kind::Pid, "a positive integer: the process to add"}};
constexpr CommandArgument kName[] = {{"name", CommandArgument::Kind::Name, "the mark's name"}};

constexpr ControlCommand kCommands[] = {
    {"ping", {}, "protocol version and memtrack's version, at once (after start-up)",
     [](const ControlHandlers&, const CommandArgs&, const MakeReply&) -> CommandAnswer {
         return json::object{{"protocol", kControlProtocolVersion}, {"version", MEMTRACK_VERSION}};
     }},
    {"enable", {}, "turn recording on; allocations after the reply are recorded",
     [](const ControlHandlers& h, const CommandArgs&, const MakeReply& r) {
         return call<&ControlHandlers::set_recording>(h, r, true);
     }},
    {"disable", {}, "turn recording off; allocations after the reply are not recorded",
     [](const ControlHandlers& h, const CommandArgs&, const MakeReply& r) {
         return call<&ControlHandlers::set_recording>(h, r, false);
     }},
    {"drain", {}, "reply once every record produced before the request is written and flushed",
     [](const ControlHandlers& h, const CommandArgs&, const MakeReply& r) {
         return call<&ControlHandlers::drain>(h, r);
     }},
    {"stats", {}, "the live statistics (what --stats FILE writes at exit)",
     [](const ControlHandlers& h, const CommandArgs&, const MakeReply&) -> CommandAnswer {
         if (!h.stats) return not_available();
         return json::object{{"stats", h.stats()}};
     }},
    {"attach", kPid, "add a running process (--pid N) and the processes it starts to the tracked set",
     [](const ControlHandlers& h, const CommandArgs& a, const MakeReply& r) {
         return call<&ControlHandlers::attach>(h, r, *a.pid);
     }},
    {"mark", kName, "a named point in the timeline (a benchmark's start, say), at the time of the request",
     [](const ControlHandlers& h, const CommandArgs& a, const MakeReply& r) {
         return call<&ControlHandlers::mark>(h, r, *a.name);
     }},
    {"shutdown", {}, "stop recording, drain, finish the artifact, reply; then memtrack exits",
     [](const ControlHandlers& h, const CommandArgs&, const MakeReply& r) {
         return call<&ControlHandlers::shutdown>(h, r);
     }},
};

std::string join_names(bool (*keep)(const ControlCommand&, std::string_view), std::string_view field) {
    std::string out;
    for (const auto& c : kCommands) {
        if (!keep(c, field)) continue;
        if (!out.empty()) out += ", ";
        out += c.name;
    }
    return out;
}

}  // namespace

std::span<const ControlCommand> control_commands() { return kCommands; }

std::string_view argument_kind_text(CommandArgument::Kind kind) {
    return kind == CommandArgument::Kind::Pid ? "positive integer" : "string";
}

const ControlCommand* find_command(std::string_view name) {
    for (const auto& c : kCommands)
        if (c.name == name) return &c;
    return nullptr;
}

std::string command_names() {
    return join_names([](const ControlCommand&, std::string_view) { return true; }, {});
}

std::string commands_taking(std::string_view field) {
    return join_names(
        [](const ControlCommand& c, std::string_view f) {
            return std::any_of(c.arguments.begin(), c.arguments.end(),
                               [&](const CommandArgument& a) { return a.field == f; });
        },
        field);
}

std::string commands_help() {
    size_t width = 0;
    for (const auto& c : kCommands) width = std::max(width, c.name.size());
    std::string out = "Commands (docs/PROTOCOL.md):\n";
    for (const auto& c : kCommands) out += fmt::format("  {:<{}}  {}\n", c.name, width, c.help);
    return out;
}

std::optional<std::string> check_arguments(const ControlCommand& command, const json::object& request,
                                           CommandArgs& out) {
    for (const auto& arg : command.arguments) {
        const auto it = request.find(arg.field);
        if (it == request.end()) return fmt::format("{} needs \"{}\"", command.name, arg.field);
        const json::value& v = it->value();
        if (arg.kind == CommandArgument::Kind::Pid) {
            if (!v.is_int64() || v.get_int64() <= 0 || v.get_int64() > std::numeric_limits<int32_t>::max())
                return fmt::format("\"{}\" must be a positive integer", arg.field);
            out.pid = int32_t(v.get_int64());
            continue;
        }
        const json::string* s = v.if_string();
        if (!s || s->empty() || s->size() > kMaxNameBytes ||
            !std::all_of(s->begin(), s->end(), [](char c) { return c >= 0x20 && c < 0x7f; }))
            return fmt::format("\"{}\" must be a string of 1 to {} printable ASCII characters", arg.field,
                               kMaxNameBytes);
        out.name = std::string(s->data(), s->size());
    }
    return std::nullopt;
}

CommandAnswer run_command(const ControlCommand& command, const CommandArgs& args, const ControlHandlers& handlers,
                          const MakeReply& make_reply) {
    try {
        return command.run(handlers, args, make_reply);
    } catch (const std::exception& e) {
        return Error{fmt::format("internal error: {}", e.what()), {}, 0, {}};
    }
}

}  // namespace memtrack
