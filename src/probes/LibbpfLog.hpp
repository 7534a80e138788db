#pragma once
// libbpf's messages: through memtrack's logger (with -v), the last warning kept to explain a
// failed load or attach, the last verifier log kept to name the program the kernel refused.
// Process-wide, as libbpf's print callback is.
#include <string>

namespace memtrack {

// Routes libbpf's messages here; once, before anything of libbpf runs.
void capture_libbpf_log();

// Throws FatalError: "BPF <what> failed: <errno text>", with libbpf's last message.
[[noreturn]] void fail_bpf(const std::string& what, int err);
// Throws FatalError for a failed load: the program the verifier refused and its last words
// when the verifier said so, else as fail_bpf("load", err).
[[noreturn]] void fail_bpf_load(int err);

}  // namespace memtrack
