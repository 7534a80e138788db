#include "probes/LoaderList.hpp"

#include <elf.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <fstream>
#include <string>

namespace memtrack {

namespace {

// The public heads of struct r_debug and struct link_map (<link.h>): what debuggers read.
struct RDebugHead {
    int32_t version;
    uint32_t pad;
    uint64_t map;  // the first link_map
};
struct LinkMapHead {
    uint64_t addr;  // l_addr: load address - vaddr
    uint64_t name;  // l_name: the path the loader opened
    uint64_t ld;
    uint64_t next;
    uint64_t prev;
};

constexpr size_t kMaxObjects = 1u << 20;  // a list longer than this is taken for a loop
constexpr size_t kMaxName = 4096;
constexpr uint64_t kPage = 4096;

// A span of the process's memory to read, and where to.
struct Piece {
    uint64_t addr;
    void* out;
    size_t size;
};

// Every piece, in one call (each call pins the pages it reads: a hold at a dlopen made six).
// EFAULT or a short read (a word not mapped) is a value, `false`: the list cannot be followed
// there.
Result<bool> read_remote(pid_t pid, std::initializer_list<Piece> pieces) {
    iovec local[2], remote[2];
    if (pieces.size() > std::size(local)) return Error{"process_vm_readv", std::to_string(pid), EINVAL, "too many pieces"};
    size_t n = 0, total = 0;
    for (const Piece& p : pieces) {
        local[n] = {p.out, p.size};
        remote[n] = {reinterpret_cast<void*>(p.addr), p.size};
        total += p.size;
        ++n;
    }
    const ssize_t got = ::process_vm_readv(pid, local, n, remote, n, 0);
    if (got == ssize_t(total)) return true;
    if (got >= 0 || errno == EFAULT) return false;
    return errno_error("process_vm_readv", std::to_string(pid));
}

Result<bool> read_remote(pid_t pid, uint64_t addr, void* out, size_t size) { return read_remote(pid, {{addr, out, size}}); }

constexpr size_t kNameChunk = 256;

// How much of the name at addr one read takes: a chunk may cross into an unmapped page, so it
// ends at the page's end at most.
size_t name_chunk(uint64_t addr) { return std::min<uint64_t>(kNameChunk, kPage - addr % kPage); }

// The name at addr; `first` holds its first name_chunk(addr) bytes, read already.
Result<std::optional<std::string>> read_name(pid_t pid, uint64_t addr, const char* first) {
    using R = std::optional<std::string>;
    std::string name;
    char chunk[kNameChunk];
    for (bool have = true; name.size() < kMaxName; have = false) {
        const size_t n = name_chunk(addr + name.size());
        if (!have) {
            auto r = read_remote(pid, addr + name.size(), chunk, n);
            if (!r) return r.error();
            if (!*r) return R{};
        }
        const char* bytes = have ? first : chunk;
        const size_t len = ::strnlen(bytes, n);
        name.append(bytes, len);
        if (len < n) return R(std::move(name));
    }
    return R{};
}

// The ELF header and the program headers that follow it (where every shared object has them),
// as one read takes them with the name: 64 + 16 * 56 bytes, within the header's page.
struct HeadBlock {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[16];
};
static_assert(sizeof(HeadBlock) < kPage);

// An object the loader lists: its name and its headers at l_addr, read together.
struct Listed {
    std::string name;
    HeadBlock head;
};

Result<std::optional<Listed>> read_listed(pid_t pid, const LinkMapHead& node) {
    using R = std::optional<Listed>;
    Listed out;
    char first[kNameChunk];
    auto r = read_remote(pid, {{node.name, first, name_chunk(node.name)}, {node.addr, &out.head, sizeof(out.head)}});
    if (!r) return r.error();
    if (!*r) return R{};
    auto name = read_name(pid, node.name, first);
    if (!name) return name.error();
    if (!*name) return R{};
    out.name = std::move(**name);
    return R(std::move(out));
}

// The executable mappings of the object the loader put at `bias`, from its ELF headers in the
// process's memory (`head`, read there), each confirmed by the kernel (/proc/PID/map_files: a
// mapping with exactly those bounds exists, and maps which file). nullopt: not found as expected.
Result<std::optional<std::vector<Mapping>>> code_of(pid_t pid, uint64_t bias, const std::string& name,
                                                    const HeadBlock& head) {
    using R = std::optional<std::vector<Mapping>>;
    if (!name.starts_with("/")) return R{};  // the main program (""), the vDSO: not from a file
    const Elf64_Ehdr& eh = head.eh;
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_type != ET_DYN || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 64)
        return R{};
    std::vector<Elf64_Phdr> ph(eh.e_phnum);
    if (eh.e_phoff == sizeof(Elf64_Ehdr) && eh.e_phnum <= std::size(head.ph)) {
        std::copy_n(head.ph, eh.e_phnum, ph.begin());
    } else {
        auto r = read_remote(pid, bias + eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr));
        if (!r) return r.error();
        if (!*r) return R{};
    }
    std::vector<Mapping> code;
    bool first_load = true;
    for (const Elf64_Phdr& p : ph) {
        if (p.p_type != PT_LOAD) continue;
        // The headers read at `bias` are the file's own only when its first segment maps
        // offset 0 at vaddr 0 (every shared object the loader maps).
        if (first_load && (p.p_offset != 0 || p.p_vaddr != 0)) return R{};
        first_load = false;
        if (!(p.p_flags & PF_X) || p.p_filesz == 0) continue;
        Mapping m;
        m.start = bias + p.p_vaddr / kPage * kPage;
        m.end = bias + (p.p_vaddr + p.p_filesz + kPage - 1) / kPage * kPage;
        m.offset = p.p_offset / kPage * kPage;
        m.path = name;
        m.executable = true;
        struct stat st{};
        if (::stat(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, m.start, m.end).c_str(), &st) != 0) {
            if (errno == ENOENT) return R{};  // no mapping with those bounds (merged, moved, gone)
            return errno_error("stat", fmt::format("/proc/{}/map_files", pid));
        }
        m.dev = uint64_t(st.st_dev);
        m.inode = uint64_t(st.st_ino);
        if (!code.empty() && (code.front().dev != m.dev || code.front().inode != m.inode)) return R{};
        code.push_back(std::move(m));
    }
    if (code.empty()) return R{};
    return R(std::move(code));
}

}  // namespace

Result<uint64_t> loader_base(pid_t pid) {
    const std::string path = fmt::format("/proc/{}/auxv", pid);
    std::ifstream in(path, std::ios::binary);
    if (!in) return errno_error("open", path);
    uint64_t kv[2];
    while (in.read(reinterpret_cast<char*>(kv), sizeof(kv))) {
        if (kv[0] == AT_NULL) break;
        if (kv[0] == AT_BASE) return kv[1];
    }
    return uint64_t(0);
}

Result<std::optional<LoaderList>> LoaderList::at_end(pid_t pid, uint64_t r_debug) {
    RDebugHead head{};
    auto r = read_remote(pid, r_debug, &head, sizeof(head));
    if (!r) return r.error();
    // Version 1: the base namespace only (2: dlmopen made others, each a list of its own).
    if (!*r || head.version != 1 || head.map == 0) return std::optional<LoaderList>{};
    LoaderList list(r_debug);
    LinkMapHead node{};
    uint64_t at = head.map;
    for (size_t i = 0; at != 0; ++i) {
        if (i == kMaxObjects) return std::optional<LoaderList>{};
        r = read_remote(pid, at, &node, sizeof(node));
        if (!r) return r.error();
        if (!*r) return std::optional<LoaderList>{};
        list.tail_ = at;
        at = node.next;
    }
    auto listed = read_listed(pid, node);
    if (!listed) return listed.error();
    if (!*listed) return std::optional<LoaderList>{};
    auto code = code_of(pid, node.addr, (*listed)->name, (*listed)->head);
    if (!code) return code.error();
    if (!*code) return std::optional<LoaderList>{};
    list.tail_code_ = (*code)->front();
    return std::optional<LoaderList>(std::move(list));
}

Result<std::optional<std::vector<AddedObject>>> LoaderList::added(pid_t pid) {
    using R = std::optional<std::vector<AddedObject>>;
    RDebugHead head{};
    LinkMapHead node{};
    // The last node is read with the head; it is used only once its object is known still loaded.
    auto r = read_remote(pid, {{r_debug_, &head, sizeof(head)}, {tail_, &node, sizeof(node)}});
    if (!r) return r.error();
    if (!*r || head.version != 1) return R{};
    // The last object seen still loaded: its code still mapped, from the same file.
    struct stat st{};
    if (::stat(fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, tail_code_.start, tail_code_.end).c_str(), &st) != 0 ||
        uint64_t(st.st_dev) != tail_code_.dev || uint64_t(st.st_ino) != tail_code_.inode)
        return R{};
    std::vector<AddedObject> out;
    for (uint64_t at = node.next; at != 0; at = node.next) {
        if (out.size() == kMaxObjects) return R{};
        r = read_remote(pid, at, &node, sizeof(node));
        if (!r) return r.error();
        if (!*r) return R{};
        auto listed = read_listed(pid, node);
        if (!listed) return listed.error();
        if (!*listed) return R{};
        const std::string& name = (*listed)->name;
        auto code = code_of(pid, node.addr, name, (*listed)->head);
        if (!code) return code.error();
        if (!*code) return R{};
        const Mapping& first = (*code)->front();
        out.push_back({MappedObject{openable_path(pid, name, first.dev, first.inode), first.dev, first.inode},
                       std::move(**code)});
        tail_ = at;
        tail_code_ = out.back().code.front();
    }
    return R(std::move(out));
}

}  // namespace memtrack
