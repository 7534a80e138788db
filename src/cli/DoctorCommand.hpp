#pragma once
// `memtrack doctor`: what this kernel offers memtrack (KernelFeatures, probed as `track` probes
// them), what each missing feature costs, and whether memtrack's BPF programs load here; as
// lines for people, or as one JSON object (`--json`) for scripts. Both are printed from one
// report object (doctor_report), so they say the same.
#include <string>

#include <boost/json/object.hpp>

#include "probes/KernelFeatures.hpp"

namespace memtrack {

// {"kernel": uname's release, "features": {ID: {"name", "since", "required", "present",
// "without"}} in KernelFeatures::all()'s order, "minimum_kernel"} (docs/USAGE.md).
boost::json::object doctor_report(const KernelFeatures& f);
// The report's lines: the kernel, one per feature (a missing one with what it costs), the minimum.
std::string doctor_text(const boost::json::object& report);

// 0 when memtrack can run on this kernel; 1 otherwise: with the one-line reason on stderr, or
// with --json in the object's "bpf_programs" ({"loaded": false, "error": ...}).
int run_doctor(bool json = false);

}  // namespace memtrack
