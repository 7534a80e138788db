#pragma once
// `memtrack doctor`: what this kernel offers memtrack (KernelFeatures, probed as `track` probes
// them), what each missing feature costs, and whether memtrack's BPF programs load here.
namespace memtrack {

// 0 when memtrack can run on this kernel; 1 (with the one-line reason on stderr) otherwise.
int run_doctor();

}  // namespace memtrack
