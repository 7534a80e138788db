#pragma once
// One uprobe_multi BPF link: many probes in one file behind one fd, so attaching and detaching
// costs one kernel round trip instead of one per probe (each separate link took ~0.1 s to close).
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

class UprobeMultiLink {
public:
    // prog_fd must have been loaded with expected_attach_type BPF_TRACE_UPROBE_MULTI.
    static Result<UprobeMultiLink> attach(int prog_fd, const UprobeMultiSpec& spec);
    int fd() const { return fd_.get(); }
    // The link's fd, whose close detaches it (LinkCloser).
    Fd take_fd() && { return std::move(fd_); }

private:
    explicit UprobeMultiLink(Fd fd) : fd_(std::move(fd)) {}
    Fd fd_;
};

// Debian's libbpf 1.1 and uapi headers predate uprobe_multi (kernel 6.6): the values are ours.
inline constexpr unsigned kAttachTypeUprobeMulti = 48;  // BPF_TRACE_UPROBE_MULTI
inline constexpr unsigned kUprobeMultiReturn = 1;       // BPF_F_UPROBE_MULTI_RETURN

}  // namespace memtrack
