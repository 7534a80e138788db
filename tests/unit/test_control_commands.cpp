// The command table: every command run against fake handlers, and bad requests, checked by their
// exact reply lines, without a socket. docs/PROTOCOL.md's command table is checked against it.
#include <doctest/doctest.h>

#include <cerrno>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "control/Commands.hpp"
#include "control/Request.hpp"

namespace json = boost::json;
using memtrack::ControlHandlers;
using memtrack::Error;
using memtrack::Result;

namespace {

// What each fake handler was called with, in order.
using Calls = std::vector<std::string>;

ControlHandlers fake_handlers(std::shared_ptr<Calls> calls) {
    ControlHandlers h;
    h.set_recording = [calls](bool on, ControlHandlers::Reply reply) {
        calls->push_back(fmt::format("set_recording({})", on));
        reply(json::object{{"recording", on}});
    };
    h.drain = [calls](ControlHandlers::Reply reply) {
        calls->push_back("drain");
        reply(json::object{{"records", 42}});
    };
    h.stats = [calls] {
        calls->push_back("stats");
        return json::object{{"records", 7}};
    };
    h.attach = [calls](int32_t pid, ControlHandlers::Reply reply) {
        calls->push_back(fmt::format("attach({})", pid));
        if (pid == 4343) throw std::runtime_error("boom");
        if (pid == 4444) return reply(Error{"attach", "4444", ESRCH, {}});
        reply(json::object{{"ok", false}, {"id", 99}, {"pid", pid}});  // "ok" and "id" are not the handler's
    };
    h.mark = [calls](const std::string& name, ControlHandlers::Reply reply) {
        calls->push_back(fmt::format("mark({})", name));
        reply(json::object{{"mark", name}});
    };
    h.shutdown = [calls](ControlHandlers::Reply reply) {
        calls->push_back("shutdown");
        reply(json::object{{"records", 0}});
    };
    return h;
}

// The reply line Control sends for `line` (without its newline), as a connection makes it:
// parse, then run; the answer comes back at once or through the reply.
std::string answer(const std::string& line, const ControlHandlers& handlers) {
    memtrack::Request r = memtrack::parse_request(line);
    std::optional<Result<json::object>> answered;
    if (r.error) {
        answered = Error{*r.error, {}, 0, {}};
    } else {
        REQUIRE(r.command != nullptr);
        auto now = memtrack::run_command(*r.command, r.args, handlers, [&] {
            return ControlHandlers::Reply([&](Result<json::object> a) {
                if (!answered) answered = std::move(a);
            });
        });
        if (now) answered = std::move(*now);  // goes first, as it does on a connection
    }
    REQUIRE_MESSAGE(answered.has_value(), "no answer to " << line);
    std::string reply = memtrack::reply_line(r.id, std::move(*answered));
    REQUIRE(reply.ends_with('\n'));
    reply.pop_back();
    return reply;
}

const std::string kKnown = "ping, enable, disable, drain, stats, attach, mark, shutdown";

}  // namespace

TEST_CASE("control commands: each command calls its handler and answers with its fields") {
    auto calls = std::make_shared<Calls>();
    const auto h = fake_handlers(calls);
    struct Case {
        std::string request, reply, call;
    };
    const std::map<std::string, Case> cases = {
        {"ping", {R"({"cmd":"ping","id":1})", R"({"ok":true,"id":1,"protocol":1,"version":")" MEMTRACK_VERSION "\"}", ""}},
        {"enable", {R"({"cmd":"enable","id":"a"})", R"({"ok":true,"id":"a","recording":true})", "set_recording(true)"}},
        {"disable", {R"({"cmd":"disable"})", R"({"ok":true,"recording":false})", "set_recording(false)"}},
        {"drain", {R"({"id":[1, 2.50],"cmd":"drain"})", R"({"ok":true,"id":[1, 2.50],"records":42})", "drain"}},
        {"stats", {R"({"cmd":"stats","id":1e400})", R"({"ok":true,"id":1e400,"stats":{"records":7}})", "stats"}},
        {"attach", {R"({"cmd":"attach","pid":1234,"id":5})", R"({"ok":true,"id":5,"pid":1234})", "attach(1234)"}},
        {"mark", {R"({"cmd":"mark","name":"bench parse","id":6})", R"({"ok":true,"id":6,"mark":"bench parse"})", "mark(bench parse)"}},
        {"shutdown", {R"({"cmd":"shutdown","extra":[true]})", R"({"ok":true,"records":0})", "shutdown"}},
    };
    // Every command of the table has its case here: a new command needs a new case.
    for (const auto& c : memtrack::control_commands()) CHECK_MESSAGE(cases.count(std::string(c.name)), c.name);
    CHECK(cases.size() == memtrack::control_commands().size());
    for (const auto& [name, c] : cases) {
        CAPTURE(name);
        calls->clear();
        CHECK(answer(c.request, h) == c.reply);
        CHECK(*calls == (c.call.empty() ? Calls{} : Calls{c.call}));
    }
    CHECK(memtrack::command_names() == kKnown);
    CHECK(memtrack::commands_taking("pid") == "attach");
    CHECK(memtrack::commands_taking("name") == "mark");
}

TEST_CASE("control commands: a mark's name is 1 to 256 printable ASCII characters") {
    auto calls = std::make_shared<Calls>();
    const auto h = fake_handlers(calls);
    const std::string refused = R"({"ok":false,"error":"\"name\" must be a string of 1 to 256 printable ASCII characters"})";
    CHECK(answer(R"({"cmd":"mark"})", h) == R"({"ok":false,"error":"mark needs \"name\""})");
    CHECK(answer(R"({"cmd":"mark","name":""})", h) == refused);
    CHECK(answer(R"({"cmd":"mark","name":7})", h) == refused);
    CHECK(answer(R"({"cmd":"mark","name":"tab\there"})", h) == refused);
    CHECK(answer(fmt::format(R"({{"cmd":"mark","name":"{}"}})", std::string(257, 'x')), h) == refused);
    CHECK(answer(fmt::format(R"({{"cmd":"mark","name":"{}"}})", std::string(256, 'x')), h) ==
          fmt::format(R"({{"ok":true,"mark":"{}"}})", std::string(256, 'x')));
    CHECK(calls->size() == 1);
}

TEST_CASE("control commands: a handler's error, a handler that throws, an empty handler") {
    auto calls = std::make_shared<Calls>();
    const auto h = fake_handlers(calls);
    CHECK(answer(R"({"cmd":"attach","pid":4444,"id":2})", h) == R"({"ok":false,"id":2,"error":"attach 4444: No such process"})");
    CHECK(answer(R"({"cmd":"attach","pid":4343})", h) == R"({"ok":false,"error":"internal error: boom"})");

    const ControlHandlers none;
    for (const auto& c : memtrack::control_commands()) {
        CAPTURE(c.name);
        std::string request = fmt::format(R"({{"cmd":"{}","id":3)", c.name);
        for (const auto& arg : c.arguments)
            request += arg.kind == memtrack::CommandArgument::Kind::Pid ? fmt::format(R"(,"{}":1)", arg.field)
                                                                        : fmt::format(R"(,"{}":"x")", arg.field);
        request += "}";
        if (c.name == "ping") CHECK(answer(request, none).starts_with(R"({"ok":true,"id":3,"protocol":1,)"));
        else CHECK(answer(request, none) == R"({"ok":false,"id":3,"error":"not available"})");
    }
}

TEST_CASE("control commands: bad requests, exact replies") {
    auto calls = std::make_shared<Calls>();
    const auto h = fake_handlers(calls);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"cmd":"flush","id":8})", R"({"ok":false,"id":8,"error":"unknown command \"flush\" (known: )" + kKnown + ")\"}"},
        {R"({"cmd":"PING"})", R"({"ok":false,"error":"unknown command \"PING\" (known: )" + kKnown + ")\"}"},
        {R"({"cmd":")" + std::string(65, 'x') + "\"}", R"({"ok":false,"error":"unknown command (known: )" + kKnown + ")\"}"},
        {R"({"cmd":"attach","id":"p"})", R"({"ok":false,"id":"p","error":"attach needs \"pid\""})"},
        {R"({"cmd":"attach","pid":"123"})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":0})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":-3})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":1.5})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":null})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":2147483648})", R"({"ok":false,"error":"\"pid\" must be a positive integer"})"},
        {R"({"cmd":"attach","pid":2147483647})", R"({"ok":true,"pid":2147483647})"},
        {R"({"id":4})", R"({"ok":false,"id":4,"error":"missing \"cmd\""})"},
        {R"({"cmd":5})", R"({"ok":false,"error":"\"cmd\" must be a string"})"},
        {R"({"id":5,"cmd":"enable","cmd":"disable"})", R"({"ok":false,"id":5,"error":"duplicate key \"cmd\""})"},
        {"[1]", R"({"ok":false,"error":"a request must be a JSON object"})"},
        {"", R"({"ok":false,"error":"empty request"})"},
        {" \t ", R"({"ok":false,"error":"empty request"})"},
    };
    for (const auto& [request, reply] : cases) {
        CAPTURE(request);
        CHECK(answer(request, h) == reply);
    }
    // Refused requests reach no handler; the one valid attach does.
    CHECK(*calls == Calls{"attach(2147483647)"});
    const std::string bad = answer("{\"cmd\":\"\xc3\x28\"}", h);
    CHECK(bad.starts_with(R"({"ok":false,"error":"invalid JSON: )"));
}

TEST_CASE("control commands: docs/PROTOCOL.md lists exactly these commands and their request fields") {
    std::ifstream in(PROTOCOL_DOC);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    // Its rows, below the header: | `name` | request fields | ...
    const size_t from = doc.find("## Commands");
    REQUIRE(from != std::string::npos);
    std::istringstream section(doc.substr(from, doc.find("\n## ", from + 1) - from));
    std::vector<std::pair<std::string, std::string>> rows;
    bool header_done = false;
    for (std::string line; std::getline(section, line);) {
        if (line.starts_with("|---")) header_done = true;
        if (!header_done || !line.starts_with("| `")) continue;
        const size_t name_end = line.find('`', 3);
        const size_t cell = line.find('|', name_end) + 1;
        std::string fields = line.substr(cell, line.find('|', cell) - cell);
        fields.erase(0, fields.find_first_not_of(' '));
        fields.erase(fields.find_last_not_of(' ') + 1);
        rows.emplace_back(line.substr(3, name_end - 3), fields);
    }
    const auto commands = memtrack::control_commands();
    REQUIRE(rows.size() == commands.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        CAPTURE(rows[i].first);
        CHECK(rows[i].first == commands[i].name);
        std::string fields;
        for (const auto& arg : commands[i].arguments) fields += fmt::format("`{}` ({})", arg.field, memtrack::argument_kind_text(arg.kind));
        CHECK(rows[i].second == (fields.empty() ? "none" : fields));
    }
    CHECK(doc.find("(known: " + memtrack::command_names() + ")") != std::string::npos);
}
