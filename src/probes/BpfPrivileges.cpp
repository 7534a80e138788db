#include "probes/BpfPrivileges.hpp"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/Result.hpp"

namespace memtrack {
namespace {

bool has_capability(const __user_cap_data_struct (&data)[2], int cap) {
    return data[cap / 32].effective & (1u << (cap % 32));
}

}  // namespace

void require_bpf_privileges() {
    if (::geteuid() == 0) return;
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2]{};
    constexpr int kCapPerfmon = 38, kCapBpf = 39;
    if (::syscall(SYS_capget, &hdr, data) == 0 && has_capability(data, kCapBpf) &&
        has_capability(data, kCapPerfmon))
        return;
    throw FatalError("memtrack needs root, or CAP_BPF and CAP_PERFMON");
}

}  // namespace memtrack
