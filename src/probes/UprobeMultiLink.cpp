#include "probes/UprobeMultiLink.hpp"

#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

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

// The uprobe PMU's type and its retprobe bit, as sysfs describes them ("config:0").
struct UprobePmu {
    int type = -1;
    int retprobe_bit = -1;
};

UprobePmu uprobe_pmu() {
    static const UprobePmu pmu = [] {
        UprobePmu p;
        std::ifstream("/sys/bus/event_source/devices/uprobe/type") >> p.type;
        std::string format;
        std::ifstream("/sys/bus/event_source/devices/uprobe/format/retprobe") >> format;
        if (format.rfind("config:", 0) == 0) p.retprobe_bit = std::atoi(format.c_str() + 7);
        return p;
    }();
    return pmu;
}

// One site as a perf-event uprobe with the program linked to it (BPF_LINK_CREATE of the event,
// 5.15+, which carries the cookie). libbpf's bpf_program__attach_uprobe_opts does the same but
// keeps the event's fd beside the link's and disables the event at destroy; here the link holds
// the event (the kernel takes a reference), so the event's fd is closed at once and the link's
// fd is all there is to own and to close, as with uprobe_multi links.
Result<Fd> attach_perf_event(int prog_fd, const UprobeMultiSpec& spec, uint64_t offset, uint64_t cookie) {
    const UprobePmu pmu = uprobe_pmu();
    if (pmu.type < 0 || (spec.retprobe && pmu.retprobe_bit < 0))
        return Error{"perf_event_open(uprobe)", spec.path, ENOENT, "no uprobe PMU in /sys/bus/event_source"};
    perf_event_attr attr{};
    attr.size = sizeof(attr);
    attr.type = uint32_t(pmu.type);
    attr.config = spec.retprobe ? 1ull << pmu.retprobe_bit : 0;
    attr.config1 = reinterpret_cast<uint64_t>(spec.path.c_str());  // uprobe_path
    attr.config2 = offset;                                         // probe_offset
    // A process's event traps only its tasks; a shared one (pid -1) needs a cpu, and its
    // program then runs on every cpu.
    const long event = ::syscall(__NR_perf_event_open, &attr, spec.pid > 0 ? spec.pid : -1,
                                 spec.pid > 0 ? -1 : 0, -1, PERF_FLAG_FD_CLOEXEC);
    if (event < 0) return errno_error("perf_event_open(uprobe)", spec.path);
    const Fd event_fd{int(event)};
    LIBBPF_OPTS(bpf_link_create_opts, opts, .perf_event = {.bpf_cookie = cookie});
    const int link = bpf_link_create(prog_fd, event_fd.get(), BPF_PERF_EVENT, &opts);
    if (link < 0) return errno_error("bpf_link_create(perf_event)", spec.path);
    return Fd(link);
}

}  // namespace

Result<UprobeMultiLink> UprobeMultiLink::attach(int prog_fd, const UprobeMultiSpec& spec, UprobeMechanism how) {
    if (spec.offsets.empty() || spec.offsets.size() != spec.cookies.size())
        return Error{"attach uprobes", spec.path, EINVAL, "offsets and cookies differ"};
    std::vector<Fd> fds;
    if (how == UprobeMechanism::perf_event) {
        fds.reserve(spec.offsets.size());
        for (size_t i = 0; i < spec.offsets.size(); ++i) {
            auto fd = attach_perf_event(prog_fd, spec, spec.offsets[i], spec.cookies[i]);
            if (!fd) return fd.error();
            fds.push_back(std::move(fd).value());
        }
        return UprobeMultiLink(std::move(fds));
    }
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
    fds.emplace_back(int(fd));
    return UprobeMultiLink(std::move(fds));
}

}  // namespace memtrack
