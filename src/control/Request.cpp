#include "control/Request.hpp"

#include <set>
#include <vector>

#include <boost/json.hpp>
#include <fmt/format.h>

namespace memtrack {
namespace json = boost::json;

namespace {

// Walks text that boost::json has already accepted, to see what its value tree does not keep:
// where each value's text lies, and keys given twice. Recursion is bounded by the parser's
// depth limit, which the text has passed.
class TextWalk {
public:
    explicit TextWalk(std::string_view text) : t_(text) {}

    // The top-level object: its duplicate key if any, and the span of its "id" value.
    std::optional<std::string> walk() {
        skip_ws();
        return value(0);
    }
    std::optional<std::string_view> id() const { return id_; }

private:
    std::optional<std::string> value(int depth) {
        skip_ws();
        const char c = t_[p_];
        if (c == '{') return object(depth);
        if (c == '[') {
            ++p_;
            skip_ws();
            if (t_[p_] == ']') return ++p_, std::nullopt;
            for (;;) {
                if (auto bad = value(depth + 1)) return bad;
                skip_ws();
                if (t_[p_++] == ']') return std::nullopt;
            }
        }
        if (c == '"') return skip_string(), std::nullopt;
        while (p_ < t_.size() && std::string_view(",]} \t\r\n").find(t_[p_]) == std::string_view::npos) ++p_;
        return std::nullopt;
    }

    std::optional<std::string> object(int depth) {
        ++p_;
        std::set<std::string> keys;
        skip_ws();
        if (t_[p_] == '}') return ++p_, std::nullopt;
        for (;;) {
            skip_ws();
            const size_t k0 = p_;
            skip_string();
            // The key's text decoded by the same parser (escapes included), so "\u0069d" is "id".
            std::string key(json::parse(t_.substr(k0, p_ - k0)).as_string());
            skip_ws();
            ++p_;  // ':'
            skip_ws();
            const size_t v0 = p_;
            if (auto bad = value(depth + 1)) return bad;
            if (depth == 0 && key == "id") id_ = t_.substr(v0, p_ - v0);
            if (keys.count(key)) return fmt::format("duplicate key \"{}\"", key.size() <= 64 ? key : key.substr(0, 64) + "...");
            keys.insert(std::move(key));
            skip_ws();
            if (t_[p_++] == '}') return std::nullopt;
        }
    }

    void skip_string() {
        ++p_;  // opening quote
        while (t_[p_] != '"') p_ += t_[p_] == '\\' ? 2 : 1;
        ++p_;
    }
    void skip_ws() {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\r' || t_[p_] == '\n')) ++p_;
    }

    std::string_view t_;
    size_t p_ = 0;
    std::optional<std::string_view> id_;
};

}  // namespace

Request parse_request(std::string_view line) {
    Request r;
    if (line.find_first_not_of(" \t") == std::string_view::npos) return r.error = "empty request", r;
    boost::system::error_code ec;
    json::value request = json::parse(line, ec);
    if (ec) return r.error = fmt::format("invalid JSON: {}", ec.message()), r;
    const json::object* obj = request.if_object();
    if (!obj) return r.error = "a request must be a JSON object", r;

    TextWalk walk(line);
    auto duplicate = walk.walk();
    if (auto id = walk.id()) r.id = std::string(*id);
    if (duplicate) return r.error = std::move(*duplicate), r;

    const auto cmd_it = obj->find("cmd");
    if (cmd_it == obj->end()) return r.error = "missing \"cmd\"", r;
    const json::string* cmd = cmd_it->value().if_string();
    if (!cmd) return r.error = "\"cmd\" must be a string", r;
    const ControlCommand* command = find_command(*cmd);
    if (!command) {
        std::string msg = "unknown command";
        if (cmd->size() <= 64) msg += fmt::format(" \"{}\"", std::string_view(*cmd));
        return r.error = msg + fmt::format(" (known: {})", command_names()), r;
    }
    if (auto bad = check_arguments(*command, *obj, r.args)) return r.error = std::move(*bad), r;
    r.command = command;
    return r;
}

std::string reply_line(const std::optional<std::string>& id, Result<json::object> answer) {
    const bool ok = answer.ok();
    json::object fields = ok ? std::move(answer).value() : json::object{{"error", answer.error().message()}};
    json::object out;
    out["ok"] = ok;
    for (auto& kv : fields) {
        if (kv.key() != "ok" && kv.key() != "id") out[kv.key()] = std::move(kv.value());
    }
    std::string line = json::serialize(out);
    line += '\n';
    // The id's own text goes in after "ok", as the client wrote it.
    if (id) line.insert(ok ? 10 : 11, fmt::format(",\"id\":{}", *id));  // after {"ok":true
    return line;
}

}  // namespace memtrack
