#pragma once
// What a refused BPF load says, in one line: libbpf hands the verifier's log over as one message,
// "prog 'NAME': -- BEGIN PROG LOAD LOG --\n...\n-- END PROG LOAD LOG --", whose last lines are
// where the verifier says what it refused.
#include <optional>
#include <string>

namespace memtrack {

struct VerifierRefusal {
    std::string program;     // "alloc_return"
    std::string last_lines;  // the log's last `lines` lines, joined by " | "
};

bool is_verifier_log(const std::string& libbpf_message);
// nullopt when the message is no verifier log.
std::optional<VerifierRefusal> parse_verifier_log(const std::string& libbpf_message, size_t lines = 3);

}  // namespace memtrack
