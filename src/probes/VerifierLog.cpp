#include "probes/VerifierLog.hpp"

#include <algorithm>
#include <vector>

namespace memtrack {
namespace {
constexpr const char* kBegin = "-- BEGIN PROG LOAD LOG --";
}  // namespace

bool is_verifier_log(const std::string& libbpf_message) {
    return libbpf_message.find(kBegin) != std::string::npos;
}

std::optional<VerifierRefusal> parse_verifier_log(const std::string& message, size_t lines) {
    if (!is_verifier_log(message)) return std::nullopt;
    VerifierRefusal r{"?", ""};
    if (const size_t a = message.find("prog '"); a != std::string::npos)
        if (const size_t b = message.find('\'', a + 6); b != std::string::npos) r.program = message.substr(a + 6, b - a - 6);
    std::vector<std::string> body;
    for (size_t at = 0; at < message.size();) {
        const size_t end = std::min(message.find('\n', at), message.size());
        std::string l = message.substr(at, end - at);
        if (!l.empty() && l.find("PROG LOAD LOG --") == std::string::npos) body.push_back(std::move(l));
        at = end + 1;
    }
    for (size_t i = body.size() - std::min(lines, body.size()); i < body.size(); ++i)
        r.last_lines += (r.last_lines.empty() ? "" : " | ") + body[i];
    return r;
}

}  // namespace memtrack
