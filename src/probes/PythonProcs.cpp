#include "probes/PythonProcs.hpp"

#include <bpf/bpf.h>
#include <sys/uio.h>

#include "bpf/python.h"
#include "core/Log.hpp"
#include "probes/ElfSymbols.hpp"
#include "symbols/ElfFile.hpp"
#include "symbols/ProcessMaps.hpp"
#include "symbols/PythonCode.hpp"
#include "symbols/PythonLayout.hpp"

namespace memtrack {

const PythonProcs::RuntimeFile& PythonProcs::runtime_file(const std::shared_ptr<const ObjectFile>& file) {
    auto [it, fresh] = runtime_by_file_.try_emplace({uint64_t(file->stat().st_dev), uint64_t(file->stat().st_ino)});
    RuntimeFile& f = it->second;
    if (!fresh) return f;
    auto elf = ElfSymbols::load(file, {"_PyRuntime", "_Py_trampoline_func_start", "_Py_trampoline_func_end"});
    if (!elf) {
        log::info("python: {}: {}", file->path(), elf.error().message());
        return f;
    }
    f.runtime = elf->object_vaddr("_PyRuntime");
    // 3.12+: the perf trampoline's code, for its unwind rule (python_trampoline_rule).
    auto start = elf->find("_Py_trampoline_func_start");
    auto end = elf->find("_Py_trampoline_func_end");
    if (start && end && end->vaddr > start->vaddr) {
        start->size = end->vaddr - start->vaddr;
        auto code = elf->code(*start, 64);
        if (!code) log::info("python: {}: {}", file->path(), code.error().message());
        else if (!python_trampoline_rule(code->data(), code->size(), f.trampoline))
            log::info("python: {}: a perf trampoline memtrack does not know: stacks stop at its frames", file->path());
    }
    return f;
}

Result<void> PythonProcs::describe(pid_t pid) {
    auto maps = ProcessMaps::read(pid);
    if (!maps) return maps.error();
    auto found = describe_from(pid, maps->mappings());
    if (!found) return found.error();
    if (!*found) forget(pid);
    return {};
}

Result<void> PythonProcs::describe_added(pid_t pid, const std::vector<Mapping>& added) {
    auto found = describe_from(pid, added);
    if (!found) return found.error();
    return {};
}

Result<bool> PythonProcs::describe_from(pid_t pid, const std::vector<Mapping>& maps) {
    for (const Mapping& m : maps) {
        const PythonLayout* layout = python_runtime_layout(m);
        if (!layout) continue;
        auto file = files_.get(pid, m.path, m.dev, m.inode);
        if (!file) {
            log::info("python: {}: {}", m.path, file.error().message());
            continue;
        }
        const RuntimeFile& rf = runtime_file(*file);
        const auto vaddr = rf.runtime;
        if (!vaddr) continue;
        const auto bias = mapping_bias((*file)->segments(), m.start, m.offset);
        if (!bias) continue;
        const uint64_t runtime = *vaddr + *bias;
        // The interpreter's own offsets where it publishes them (3.13+), else the table's.
        std::optional<PythonLayout> published;
        if (layout->minor >= 13) {
            unsigned char bytes[kPythonDebugOffsetsBytes];
            iovec local{bytes, sizeof(bytes)};
            iovec remote{reinterpret_cast<void*>(runtime), sizeof(bytes)};
            if (::process_vm_readv(pid, &local, 1, &remote, 1, 0) == ssize_t(sizeof(bytes)))
                published = python_layout_from_debug_offsets(*layout, bytes, sizeof(bytes));
        }
        if (published && code_) code_->publish(m.dev, m.inode, *published);
        mt_python_proc p = published ? published->proc_value() : layout->proc_value();
        p.runtime = runtime;
        p.tramp = rf.trampoline;
        const uint32_t key = uint32_t(pid);
        if (::bpf_map_update_elem(procs_fd_, &key, &p, BPF_ANY) != 0) return errno_error("bpf_map_update_elem", "python_procs");
        log::info("python: process {} runs CPython 3.{} ({}), _PyRuntime at {:#x}, offsets from {}", pid, layout->minor,
                  m.path, p.runtime, published ? "its _Py_DebugOffsets" : "memtrack's table");
        return true;
    }
    return false;
}

void PythonProcs::forget(pid_t pid) {
    const uint32_t key = uint32_t(pid);
    ::bpf_map_delete_elem(procs_fd_, &key);
}

}  // namespace memtrack
