#pragma once
// What the running kernel offers memtrack, asked of the kernel itself once at start (a trial
// load or attach, libbpf's feature probes, vmlinux BTF), never guessed from its version: Debian
// and RHEL backport features, and a version says nothing about a kernel built without them.
// BpfSession reads it to choose its mechanisms; `memtrack doctor` prints it.
#include <string>
#include <vector>

namespace memtrack {

struct KernelFeature {
    const char* id;        // its key in `memtrack doctor --json`: "ring_buffer"
    const char* name;      // as printed: "ring buffer"
    const char* since;     // the mainline release that brought it: "5.8"
    bool required;         // memtrack cannot run without it
    const char* without;   // what its absence costs, when it is not required
    bool present = false;
};

struct KernelFeatures {
    std::string release;   // uname's, for messages only
    KernelFeature btf{"btf", "vmlinux BTF", "5.4", true, ""};
    // The ring's dynptr reservations (a stack record sized at run time) came in 5.19.
    KernelFeature ring_buffer{"ring_buffer", "BPF ring buffer with dynptrs", "5.19", true, ""};
    KernelFeature task_storage{"task_storage", "task storage in tracing programs", "5.11", true, ""};
    KernelFeature attach_cookie{"attach_cookie", "bpf_get_attach_cookie", "5.15", true, ""};
    KernelFeature loop{"loop", "bpf_loop", "5.17", true, ""};
    KernelFeature uprobe_multi{"uprobe_multi", "uprobe_multi links", "6.6", false,
                               "one perf-event uprobe per probe site: attaching and detaching cost "
                               "a system call and a link each"};
    KernelFeature send_signal_task{"send_signal_task", "bpf_send_signal_task kfunc", "6.13", false,
                                   "allocator probes trap in every process that maps the probed "
                                   "libraries (only tracked ones are recorded)"};

    static KernelFeatures probe();
    std::vector<const KernelFeature*> all() const;
    // The first required feature missing, or nullptr.
    const KernelFeature* missing() const;
    // The oldest mainline release with every required feature.
    static constexpr const char* kMinimumKernel = "5.19";
};

}  // namespace memtrack
