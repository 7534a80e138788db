#include "cli/DoctorCommand.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "core/Result.hpp"
#include "cli/TrackOptions.hpp"
#include "probes/BpfPrivileges.hpp"
#include "probes/BpfSession.hpp"
#include "probes/KernelFeatures.hpp"

namespace memtrack {

int run_doctor() {
    require_bpf_privileges();
    const KernelFeatures f = KernelFeatures::probe();
    fmt::print("kernel {}\n", f.release);
    for (const KernelFeature* k : f.all()) {
        fmt::print("{} (Linux {}+): {}", k->name, k->since, k->present ? "yes" : "no");
        if (!k->present) fmt::print(": {}", k->required ? "memtrack cannot run without it" : k->without);
        fmt::print("\n");
    }
    fmt::print("minimum kernel: {}\n", KernelFeatures::kMinimumKernel);
    std::fflush(stdout);
    // The real test: the verifier of this kernel takes every program (throws the reason if not).
    BpfSession::open_and_load(bpf_config(TrackOptions{}), std::make_shared<ObjectFiles>());
    fmt::print("BPF programs: loaded\n");
    return 0;
}

}  // namespace memtrack
