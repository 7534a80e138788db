#include "probes/KernelFeatures.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <memory>

#include "core/Fd.hpp"
#include "probes/UprobeMultiLink.hpp"

namespace memtrack {
namespace {

bool helper(bpf_func_id id) { return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, nullptr) == 1; }

bool map_type(bpf_map_type type) { return libbpf_probe_bpf_map_type(type, nullptr) == 1; }

// As libbpf 1.3 probes it (probe_uprobe_multi_link): a kernel with uprobe_multi links loads a
// program for them and refuses a link in "/" (a folder) with EBADF; one without refuses the
// program or the attach type with EINVAL.
bool uprobe_multi_links() {
    const bpf_insn insns[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
    };
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = bpf_attach_type(kAttachTypeUprobeMulti));
    const int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts);
    if (prog < 0) return false;
    const Fd prog_fd(prog);
    UprobeMultiSpec spec{.path = "/", .offsets = {0}, .cookies = {0}};
    auto link = UprobeMultiLink::attach(prog_fd.get(), spec, UprobeMechanism::multi);
    return !link && link.error().err == EBADF;
}

}  // namespace

KernelFeatures KernelFeatures::probe() {
    KernelFeatures f;
    if (utsname u{}; ::uname(&u) == 0) f.release = u.release;
    std::unique_ptr<struct btf, decltype(&btf__free)> vmlinux(btf__load_vmlinux_btf(), btf__free);
    f.btf.present = vmlinux != nullptr;
    f.ring_buffer.present = map_type(BPF_MAP_TYPE_RINGBUF) && helper(BPF_FUNC_ringbuf_reserve_dynptr);
    f.task_storage.present = map_type(BPF_MAP_TYPE_TASK_STORAGE) && helper(BPF_FUNC_get_current_task_btf);
    f.attach_cookie.present = helper(BPF_FUNC_get_attach_cookie);
    f.loop.present = helper(BPF_FUNC_loop);
    f.uprobe_multi.present = uprobe_multi_links();
    // A kfunc exists when vmlinux BTF declares it (what libbpf resolves the program's __ksym by).
    f.send_signal_task.present =
        vmlinux && btf__find_by_name_kind(vmlinux.get(), "bpf_send_signal_task", BTF_KIND_FUNC) >= 0;
    return f;
}

std::vector<const KernelFeature*> KernelFeatures::all() const {
    return {&btf, &ring_buffer, &task_storage, &attach_cookie, &loop, &uprobe_multi, &send_signal_task};
}

const KernelFeature* KernelFeatures::missing() const {
    for (const KernelFeature* f : all())
        if (f->required && !f->present) return f;
    return nullptr;
}

}  // namespace memtrack
