// KernelFeatures' verdict (which missing feature stops memtrack) and the one line a verifier
// refusal becomes (VerifierLog), on the log Debian 12's 6.1 kernel gave for alloc_return.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include <boost/json/serialize.hpp>

#include "cli/DoctorCommand.hpp"
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

TEST_CASE("kernel features: doctor's JSON has every feature by id, and its text says the same") {
    KernelFeatures f;
    f.release = "6.1.0-57-amd64";
    f.btf.present = f.ring_buffer.present = f.task_storage.present = f.attach_cookie.present = true;
    f.uprobe_multi.present = true;  // bpf_loop and bpf_send_signal_task missing
    const boost::json::object report = doctor_report(f);
    CHECK(boost::json::serialize(report) ==
          R"({"kernel":"6.1.0-57-amd64","features":{)"
          R"("btf":{"name":"vmlinux BTF","since":"5.4","required":true,"present":true,"without":""},)"
          R"("ring_buffer":{"name":"BPF ring buffer with dynptrs","since":"5.19","required":true,"present":true,"without":""},)"
          R"("task_storage":{"name":"task storage in tracing programs","since":"5.11","required":true,"present":true,"without":""},)"
          R"("attach_cookie":{"name":"bpf_get_attach_cookie","since":"5.15","required":true,"present":true,"without":""},)"
          R"("loop":{"name":"bpf_loop","since":"5.17","required":true,"present":false,"without":""},)"
          R"("uprobe_multi":{"name":"uprobe_multi links","since":"6.6","required":false,"present":true,"without":")"
          + std::string(f.uprobe_multi.without) + R"("},)"
          R"("send_signal_task":{"name":"bpf_send_signal_task kfunc","since":"6.13","required":false,"present":false,"without":")"
          + std::string(f.send_signal_task.without) + R"("}},"minimum_kernel":"5.19"})");
    CHECK(report.at("features").as_object().size() == f.all().size());
    CHECK(doctor_text(report) ==
          "kernel 6.1.0-57-amd64\n"
          "vmlinux BTF (Linux 5.4+): yes\n"
          "BPF ring buffer with dynptrs (Linux 5.19+): yes\n"
          "task storage in tracing programs (Linux 5.11+): yes\n"
          "bpf_get_attach_cookie (Linux 5.15+): yes\n"
          "bpf_loop (Linux 5.17+): no: memtrack cannot run without it\n"
          "uprobe_multi links (Linux 6.6+): yes\n"
          "bpf_send_signal_task kfunc (Linux 6.13+): no: " + std::string(f.send_signal_task.without) + "\n"
          "minimum kernel: 5.19\n");
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
