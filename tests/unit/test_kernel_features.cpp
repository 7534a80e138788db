// KernelFeatures' verdict (which missing feature stops memtrack) and the one line a verifier
// refusal becomes (VerifierLog), on the log Debian 12's 6.1 kernel gave for alloc_return.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "probes/KernelFeatures.hpp"
#include "probes/VerifierLog.hpp"

using namespace memtrack;

TEST_CASE("kernel features: the first required feature missing stops memtrack; an optional one does not") {
    KernelFeatures f;
    REQUIRE(f.missing() != nullptr);
    CHECK(std::string(f.missing()->name) == f.btf.name);
    f.btf.present = f.ring_buffer.present = f.task_storage.present = f.attach_cookie.present = f.loop.present = true;
    CHECK(f.missing() == nullptr);  // uprobe_multi and bpf_send_signal_task absent: fallbacks
    f.loop.present = false;
    REQUIRE(f.missing() != nullptr);
    CHECK(std::string(f.missing()->name) == "bpf_loop");
    // Every optional feature says what its absence costs; the floor is the newest required one.
    auto release = [](const char* v) {
        unsigned major = 0, minor = 0;
        std::sscanf(v, "%u.%u", &major, &minor);
        return major * 1000 + minor;
    };
    unsigned newest = 0;
    for (const KernelFeature* k : f.all()) {
        if (!k->required) CHECK(std::string(k->without).size() > 10);
        if (k->required) newest = std::max(newest, release(k->since));
    }
    CHECK(newest == release(KernelFeatures::kMinimumKernel));
}

TEST_CASE("verifier log: the refused program and the verifier's last lines, one line") {
    const std::string log =
        "prog 'alloc_return': -- BEGIN PROG LOAD LOG --\n"
        "func#0 @0\n"
        "4773: (85) call bpf_probe_read_user#112\n"
        "R2 unbounded memory access, use 'var &= const' or 'if (var < const)'\n"
        "processed 2579 insns (limit 1000000) max_states_per_insn 3 total_states 200\n"
        "-- END PROG LOAD LOG --\n";
    REQUIRE(is_verifier_log(log));
    auto r = parse_verifier_log(log, 2);
    REQUIRE(r.has_value());
    CHECK(r->program == "alloc_return");
    CHECK(r->last_lines ==
          "R2 unbounded memory access, use 'var &= const' or 'if (var < const)' | processed 2579 insns (limit "
          "1000000) max_states_per_insn 3 total_states 200");
    CHECK(parse_verifier_log(log, 10)->last_lines.find("func#0 @0 | 4773") == 0);
    CHECK_FALSE(parse_verifier_log("failed to load BPF skeleton 'memtrack_bpf': -13").has_value());
}
