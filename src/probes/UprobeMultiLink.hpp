#pragma once
// The uprobes of one spec (many probe sites in one file) behind their link fds. On kernels with
// uprobe_multi links (6.6+) that is one link, so attaching and detaching costs one kernel round
// trip instead of one per probe (each separate link took ~0.1 s to close). Older kernels get one
// perf-event uprobe and its BPF link per site: the same programs run with the same cookies.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

struct UprobeMultiSpec {
    std::string path;
    std::vector<uint64_t> offsets;  // file offsets
    std::vector<uint64_t> cookies;  // one per offset, read by bpf_get_attach_cookie()
    bool retprobe = false;
    pid_t pid = 0;  // 0: every process mapping the file
};

// How uprobes are attached: chosen once from KernelFeatures::uprobe_multi.
enum class UprobeMechanism { multi, perf_event };

class UprobeMultiLink {
public:
    // multi: prog_fd must have been loaded with expected_attach_type BPF_TRACE_UPROBE_MULTI;
    // perf_event: without one. A spec's sites are attached all or none.
    static Result<UprobeMultiLink> attach(int prog_fd, const UprobeMultiSpec& spec, UprobeMechanism how);
    // The link fds, whose close detaches them (LinkCloser).
    std::vector<Fd> take_fds() && { return std::move(fds_); }

private:
    explicit UprobeMultiLink(std::vector<Fd> fds) : fds_(std::move(fds)) {}
    std::vector<Fd> fds_;
};

// Debian's libbpf 1.1 and uapi headers predate uprobe_multi (kernel 6.6): the values are ours.
inline constexpr unsigned kAttachTypeUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI
inline constexpr unsigned kUprobeMultiReturn = 1;       // BPF_F_UPROBE_MULTI_RETURN

}  // namespace memtrack
