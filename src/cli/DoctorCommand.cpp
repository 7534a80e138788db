#include "cli/DoctorCommand.hpp"

#include <fmt/format.h>

#include <cstdio>

#include <boost/json/serialize.hpp>

#include "core/Result.hpp"
#include "cli/TrackOptions.hpp"
#include "probes/BpfPrivileges.hpp"
#include "probes/BpfSession.hpp"

namespace memtrack {

boost::json::object doctor_report(const KernelFeatures& f) {
    boost::json::object features;
    for (const KernelFeature* k : f.all())
        features[k->id] = {{"name", k->name},
                           {"since", k->since},
                           {"required", k->required},
                           {"present", k->present},
                           {"without", k->without}};
    return {{"kernel", f.release}, {"features", std::move(features)}, {"minimum_kernel", KernelFeatures::kMinimumKernel}};
}

std::string doctor_text(const boost::json::object& report) {
    std::string out = fmt::format("kernel {}\n", report.at("kernel").as_string().c_str());
    for (const auto& kv : report.at("features").as_object()) {
        const boost::json::object& k = kv.value().as_object();
        const bool present = k.at("present").as_bool();
        out += fmt::format("{} (Linux {}+): {}", k.at("name").as_string().c_str(), k.at("since").as_string().c_str(),
                           present ? "yes" : "no");
        if (!present)
            out += fmt::format(": {}", k.at("required").as_bool() ? "memtrack cannot run without it"
                                                                   : k.at("without").as_string().c_str());
        out += "\n";
    }
    out += fmt::format("minimum kernel: {}\n", report.at("minimum_kernel").as_string().c_str());
    return out;
}

int run_doctor(bool json) {
    require_bpf_privileges();
    boost::json::object report = doctor_report(KernelFeatures::probe());
    if (!json) {
        // Printed before the load: a load that fails (or never returns) leaves the features said.
        fmt::print("{}", doctor_text(report));
        std::fflush(stdout);
    }
    // The real test: the verifier of this kernel takes every program (throws the reason if not).
    try {
        BpfSession::open_and_load(bpf_config(TrackOptions{}), std::make_shared<ObjectFiles>());
    } catch (const std::exception& e) {
        if (!json) throw;
        report["bpf_programs"] = {{"loaded", false}, {"error", e.what()}};
        fmt::print("{}\n", boost::json::serialize(report));
        return 1;
    }
    if (json) {
        report["bpf_programs"] = {{"loaded", true}};
        fmt::print("{}\n", boost::json::serialize(report));
    } else {
        fmt::print("BPF programs: loaded\n");
    }
    return 0;
}

}  // namespace memtrack
