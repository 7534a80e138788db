#pragma once
// Whether memtrack may trace: root, or CAP_BPF and CAP_PERFMON.
namespace memtrack {

// Throws the one-line error the CLI promises when memtrack lacks the privileges to trace.
void require_bpf_privileges();

}  // namespace memtrack
