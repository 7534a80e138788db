// AllocatorCatalog and AllocatorProbes on the system's own libraries: each is recognised as the
// allocator it is, and names sharing an address get one probe.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "bpf/record.h"
#include "probes/AllocatorProbes.hpp"
#include "probes/ElfSymbols.hpp"

using namespace memtrack;

namespace {

const std::string kLib = "/usr/lib/x86_64-linux-gnu/";

// The library, or empty (with a note) when this machine lacks it; scripts/deps.sh installs them.
std::string present(const std::string& path) {
    if (::access(path.c_str(), R_OK) == 0) return path;
    MESSAGE("not installed, not checked: ", path);
    return {};
}

std::string kinds_of(const std::string& path) {
    auto p = resolve_object_probes(path, false);
    REQUIRE_MESSAGE(p, p.error().message());
    return p->kinds_text();
}

}  // namespace

TEST_CASE("catalog: each library is classified by the names it defines") {
    CHECK(kinds_of(loaded_library_path("libc.so")) == "glibc");
    CHECK(kinds_of(loaded_library_path("libstdc++.so")) == "cxx_operators");
    CHECK(kinds_of(loaded_library_path("ld-linux")) == "loader");
    if (auto p = present(kLib + "libjemalloc.so.2"); !p.empty()) CHECK(kinds_of(p) == "jemalloc, cxx_operators");
    if (auto p = present(kLib + "libmimalloc.so.2"); !p.empty()) CHECK(kinds_of(p) == "mimalloc, cxx_operators");
    if (auto p = present(kLib + "libtcmalloc_minimal.so.4"); !p.empty()) CHECK(kinds_of(p) == "tcmalloc, cxx_operators");
    if (auto p = present("/bin/true"); !p.empty()) CHECK(kinds_of(p) == "none");
}

TEST_CASE("catalog: aliases at one address are one probe, with the first name's function") {
    const std::string path = present(kLib + "libmimalloc.so.2");
    if (path.empty()) return;
    auto p = resolve_object_probes(path, false);
    REQUIRE(p);
    // malloc, __libc_malloc and mi_malloc share an address: no offset is probed twice.
    auto offsets = p->entry.offsets;
    std::sort(offsets.begin(), offsets.end());
    CHECK(std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end());
    CHECK(p->functions > p->entry.offsets.size());
    // free = mi_free = operator delete: probed as free (no return probe).
    size_t frees = 0;
    for (uint64_t c : p->entry.cookies) frees += MT_COOKIE_FUNC(c) == MT_FUNC_FREE;
    CHECK(frees >= 3);  // free, mi_free_size, mi_free_aligned at least
    CHECK(p->ret.offsets.size() < p->entry.offsets.size());
}

TEST_CASE("catalog: glibc's thread-exit teardown is found in libc's debug file") {
    const std::string libc = loaded_library_path("libc.so");
    auto p = resolve_object_probes(libc, false);
    REQUIRE(p);
    size_t internal = 0;
    for (uint64_t c : p->entry.cookies) internal += MT_COOKIE_FUNC(c) == MT_FUNC_INTERNAL;
    // libc6-dbg (scripts/deps.sh) holds the local symbol; without it nothing filters the frees.
    if (::access("/usr/lib/debug/.build-id", R_OK) != 0) {
        MESSAGE("libc6-dbg not installed, not checked");
        return;
    }
    CHECK(internal == 1);
}

TEST_CASE("catalog: the C library's after-syscall sites follow its fork's and kill's system calls, and the loader's sits at its entry") {
    const std::string libc = loaded_library_path("libc.so");
    auto p = resolve_object_probes(libc, false);
    REQUIRE(p);
    auto syms = ElfSymbols::load(libc, {"_Fork", "kill"});
    REQUIRE(syms);
    std::ifstream in(libc, std::ios::binary);
    // Each site is right after a `syscall` (0f 05) in the file; _Fork's and kill's are among them.
    auto after_syscall = [&](uint64_t offset) {
        char two[2] = {};
        in.seekg(std::streamoff(offset - 2));
        in.read(two, 2);
        return two[0] == '\x0f' && two[1] == '\x05';
    };
    size_t signals = 0;
    bool fork_found = false, kill_found = false;
    REQUIRE(p->after_syscall.offsets.size() == p->after_syscall.cookies.size());
    for (size_t i = 0; i < p->after_syscall.offsets.size(); ++i) {
        const uint64_t off = p->after_syscall.offsets[i], cookie = p->after_syscall.cookies[i];
        CHECK((cookie & MT_AFTER_LENGTH_MASK) > 0);
        if (cookie & MT_AFTER_SIGNAL) ++signals;
        // libc.so.6 has an entry point too (it runs as a program): the one site not after a syscall.
        if (!after_syscall(off)) continue;
        fork_found = fork_found || (off > syms->find("_Fork")->file_offset && off < syms->find("_Fork")->file_offset + 64);
        kill_found = kill_found || (off > syms->find("kill")->file_offset && off < syms->find("kill")->file_offset + 32);
    }
    CHECK(fork_found);
    CHECK(kill_found);
    CHECK(signals == 4);  // kill, tgkill, sigqueue, pidfd_send_signal
    const std::string loader = loaded_library_path("ld-linux");
    auto l = resolve_object_probes(loader, false);
    REQUIRE(l);
    auto ld = ElfSymbols::load(loader, {"_dl_debug_state"});
    REQUIRE(ld);
    REQUIRE(ld->entry());
    CHECK(l->after_syscall.offsets == std::vector<uint64_t>{ld->entry()->file_offset});
}
