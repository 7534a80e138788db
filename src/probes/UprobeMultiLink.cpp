#include "probes/UprobeMultiLink.hpp"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace memtrack {
namespace {

// The kernel's link_create layout for uprobe_multi (include/uapi/linux/bpf.h, 6.6+).
struct LinkCreateUprobeMulti {
    uint32_t prog_fd;
    uint32_t target_fd;
    uint32_t attach_type;
    uint32_t flags;
    uint64_t path;
    uint64_t offsets;
    uint64_t ref_ctr_offsets;
    uint64_t cookies;
    uint32_t cnt;
    uint32_t uprobe_flags;
    uint32_t pid;
};
static_assert(offsetof(LinkCreateUprobeMulti, path) == 16);
static_assert(sizeof(LinkCreateUprobeMulti) <= sizeof(bpf_attr));

}  // namespace

Result<UprobeMultiLink> UprobeMultiLink::attach(int prog_fd, const UprobeMultiSpec& spec) {
    if (spec.offsets.empty() || spec.offsets.size() != spec.cookies.size())
        return Error{"bpf_link_create(uprobe_multi)", spec.path, EINVAL, "offsets and cookies differ"};
    LinkCreateUprobeMulti req{};
    req.prog_fd = uint32_t(prog_fd);
    req.attach_type = kAttachTypeUprobeMulti;
    req.path = reinterpret_cast<uint64_t>(spec.path.c_str());
    req.offsets = reinterpret_cast<uint64_t>(spec.offsets.data());
    req.cookies = reinterpret_cast<uint64_t>(spec.cookies.data());
    req.cnt = uint32_t(spec.offsets.size());
    req.uprobe_flags = spec.retprobe ? kUprobeMultiReturn : 0;
    req.pid = uint32_t(spec.pid);

    bpf_attr attr;
    std::memset(&attr, 0, sizeof(attr));
    std::memcpy(&attr, &req, sizeof(req));
    const long fd = ::syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
    if (fd < 0) return errno_error("bpf_link_create(uprobe_multi)", spec.path);
    return UprobeMultiLink(Fd(int(fd)));
}

}  // namespace memtrack
