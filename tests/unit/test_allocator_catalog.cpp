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

TEST_CASE("catalog: the C library's after-syscall site follows its kill's system call, and the loader's sits at its entry") {
    const std::string libc = loaded_library_path("libc.so");
    auto p = resolve_object_probes(libc, false);
    REQUIRE(p);
    auto syms = ElfSymbols::load(libc, {"kill"});
    REQUIRE(syms);
    std::ifstream in(libc, std::ios::binary);
    // A site right after a `syscall` (0f 05) in the file, within `fn`'s first bytes.
    auto after_syscall_in = [&](uint64_t offset, const char* fn, uint64_t within) {
        const uint64_t start = syms->find(fn)->file_offset;
        if (offset <= start + 2 || offset >= start + within) return false;
        char two[2] = {};
        in.seekg(std::streamoff(offset - 2));
        in.read(two, 2);
        return two[0] == '\x0f' && two[1] == '\x05';
    };
    auto after_syscall_sites = [](const UprobeMultiSpec& spec) {
        std::vector<std::pair<uint64_t, uint64_t>> out;  // (offset, cookie)
        for (size_t i = 0; i < spec.offsets.size(); ++i)
            if (MT_COOKIE_FUNC(spec.cookies[i]) == MT_FUNC_AFTER_SYSCALL) out.emplace_back(spec.offsets[i], spec.cookies[i]);
        return out;
    };
    // With the entry probes: kill's (a sender's). libc.so.6 has an interpreter: no entry site.
    const auto with_entry = after_syscall_sites(p->entry);
    REQUIRE(with_entry.size() == 1);
    CHECK(after_syscall_in(with_entry[0].first, "kill", 32));
    CHECK((with_entry[0].second & MT_COOKIE_AFTER_SIGNAL) != 0);
    CHECK(MT_COOKIE_AFTER_LENGTH(with_entry[0].second) > 0);
    // The loader: its entry, a new image's first instruction.
    const std::string loader = loaded_library_path("ld-linux");
    auto l = resolve_object_probes(loader, false);
    REQUIRE(l);
    auto ld = ElfSymbols::load(loader, {"_dl_debug_state"});
    REQUIRE(ld);
    REQUIRE(ld->entry());
    const auto ld_sites = after_syscall_sites(l->entry);
    REQUIRE(ld_sites.size() == 1);
    CHECK(ld_sites[0].first == ld->entry()->file_offset);
}
