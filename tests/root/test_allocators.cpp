// Every allocator and every way it arrives (issue 11): tests/progs/allocators.c built against
// jemalloc, mimalloc, glibc (static too), with mimalloc dlopen'ed, tcmalloc LD_PRELOADed, each
// also reached through an exec, and a Rust program whose global allocator is mimalloc. Each
// checks the exact events of every fixture size, that every block is freed once, and that no
// Free names a block that is not live.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

constexpr unsigned kRounds = 10;
const char* const kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

// Rust's sizes (tests/progs/rust_mimalloc.rs).
constexpr uint64_t kRustAlloc = 12101, kRustZeroed = 12203, kRustGrowFrom = 12301, kRustGrowTo = 12407;

std::string times(const char* type, unsigned n = kRounds) { return std::string(type) + " x" + std::to_string(n); }

// A fixture or file that exists only when its library was installed at build time: missing, the
// case skips, or fails under MEMTRACK_REQUIRE_BPF=1 (scripts/deps.sh installs them).
std::string optional_file(const std::string& path, const char* needs) {
    if (::access(path.c_str(), R_OK) == 0) return path;
    const char* req = std::getenv("MEMTRACK_REQUIRE_BPF");
    const std::string why = path + " is missing: it needs " + needs + " (scripts/deps.sh)";
    if (req && std::string(req) == "1") FAIL(why);
    std::printf("SKIP: %s\n", why.c_str());
    return {};
}

std::string optional_fixture(const std::string& name, const char* needs) {
    const char* dir = std::getenv("FIXTURE_DIR");
    return optional_file(std::string(dir ? dir : ".") + "/" + name, needs);
}

using Expected = std::map<uint64_t, std::string>;

const Expected kCApi = {
    {FX_AL_MALLOC, times("Malloc")},        {FX_AL_CALLOC, times("Calloc")},
    {FX_AL_REALLOC_FROM, times("Malloc")},  {FX_AL_REALLOC_TO, times("Realloc")},
    {FX_AL_ALIGNED, times("AlignedAlloc")}, {FX_AL_POSIX, times("AlignedAlloc")},
};

const Expected kJemallocApi = {
    {FX_JE_MALLOCX, times("Malloc")},       {FX_JE_MALLOCX_ALIGN, times("AlignedAlloc")},
    {FX_JE_MALLOCX_ZERO, times("Calloc")},  {FX_JE_RALLOCX_FROM, times("Malloc")},
    {FX_JE_RALLOCX_TO, times("Realloc")},   {FX_JE_SDALLOCX, times("Malloc")},
};

const Expected kMimallocApi = {
    {FX_MI_MALLOC, times("Malloc")},          {FX_MI_CALLOC, times("Calloc")},
    {FX_MI_ZALLOC, times("Calloc")},          {FX_MI_REALLOC_FROM, times("Malloc")},
    {FX_MI_REALLOC_TO, times("Realloc")},     {FX_MI_ALIGNED, times("AlignedAlloc")},
    {FX_MI_ZALIGNED, times("AlignedAlloc")},  {FX_MI_CALIGNED, times("AlignedAlloc")},
    {FX_MI_REALIGNED_FROM, times("AlignedAlloc")}, {FX_MI_REALIGNED_TO, times("Realloc")},
    {FX_MI_FREE_SIZE, times("Malloc")},
    {FX_MI_MALLOCN, times("Malloc")},         {FX_MI_SMALL_ALIGNED, times("AlignedAlloc")},
    {FX_MI_HEAP_MALLOC, times("Malloc")},     {FX_MI_HEAP_CALLOC, times("Calloc")},
    {FX_MI_HEAP_ZALLOC, times("Calloc")},     {FX_MI_HEAP_REALLOC_FROM, times("Malloc")},
    {FX_MI_HEAP_REALLOC_TO, times("Realloc")}, {FX_MI_HEAP_ALIGNED, times("AlignedAlloc")},
    {FX_MI_HEAP_MALLOCN, times("Malloc")},
};

Expected merged(Expected a, const Expected& b) {
    a.insert(b.begin(), b.end());
    return a;
}

std::set<uint64_t> sizes_of(const Expected& e) {
    std::set<uint64_t> s;
    for (const auto& [size, what] : e) s.insert(size);
    return s;
}

// Tracks `command` and checks it made exactly `expected` (by size), every block freed once.
// extra: memtrack track options.
Tracked check_run(const std::vector<std::string>& command, const Expected& expected,
                  const std::vector<std::string>& extra = {}) {
    TempDir dir;
    Tracked t = track_and_dump(dir, command, extra);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    const auto sizes = sizes_of(expected);
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));
    Pairing p = pair_up(t.events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "fixture blocks never freed:", join(p.live));
    const auto stray = unallocated_frees(t.events);
    CHECK_MESSAGE(stray.empty(), stray.size(), " frees of no live block:", join(stray));
    return t;
}

uint64_t objects_of_kind(const Tracked& t, const char* kind) {
    // allocator_objects is an object of counts: read through the raw JSON.
    const std::string key = std::string("\"") + kind + "\":";
    const std::string& raw = t.result.stats.raw;
    const auto at = raw.find("\"allocator_objects\"");
    if (at == std::string::npos) return 0;
    const auto k = raw.find(key, at);
    return k == std::string::npos ? 0 : std::stoull(raw.substr(k + key.size()));
}

}  // namespace

TEST_CASE("allocators: jemalloc linked (-ljemalloc): C API and mallocx/rallocx/dallocx/sdallocx") {
    ROOT_SUITE_GUARD();
    const std::string exe = optional_fixture("alloc_jemalloc", "libjemalloc-dev");
    if (exe.empty()) return;
    Tracked t = check_run({exe, std::to_string(kRounds)}, merged(kCApi, kJemallocApi));
    CHECK(objects_of_kind(t, "jemalloc") == 1);
}

TEST_CASE("allocators: jemalloc static in the executable (libjemalloc_pic.a)") {
    ROOT_SUITE_GUARD();
    const std::string exe = optional_fixture("alloc_jemalloc_static", "libjemalloc-dev (libjemalloc_pic.a)");
    if (exe.empty()) return;
    Tracked t = check_run({exe, std::to_string(kRounds)}, merged(kCApi, kJemallocApi));
    CHECK(objects_of_kind(t, "jemalloc") == 1);
}

TEST_CASE("allocators: mimalloc linked (-lmimalloc): its malloc override and mi_* API") {
    ROOT_SUITE_GUARD();
    const std::string exe = optional_fixture("alloc_mimalloc", "libmimalloc-dev");
    if (exe.empty()) return;
    Tracked t = check_run({exe, std::to_string(kRounds)}, merged(kCApi, kMimallocApi));
    CHECK(objects_of_kind(t, "mimalloc") == 1);
}

TEST_CASE("allocators: mimalloc loaded by dlopen, called through dlsym") {
    ROOT_SUITE_GUARD();
    if (optional_file("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "libmimalloc2.0").empty()) return;
    Tracked t = check_run({fixture("alloc_dlopen_mimalloc"), std::to_string(kRounds)},
                          {{FX_DL_MALLOC, times("Malloc")}, {FX_DL_CALLOC, times("Calloc")}});
    CHECK(objects_of_kind(t, "mimalloc") == 1);
    CHECK(stats_u64(t.result.stats, "processes_without_allocator") == 0);
}

TEST_CASE("allocators: tcmalloc by LD_PRELOAD, through an exec (env)") {
    ROOT_SUITE_GUARD();
    const std::string lib = optional_file(kTcmalloc, "libtcmalloc-minimal4");
    if (lib.empty()) return;
    Tracked t = check_run({"/usr/bin/env", "LD_PRELOAD=" + lib, fixture("alloc_glibc"), std::to_string(kRounds)}, kCApi);
    CHECK(objects_of_kind(t, "tcmalloc") == 1);
}

TEST_CASE("allocators: jemalloc and mimalloc by LD_PRELOAD, and mimalloc through an exec") {
    ROOT_SUITE_GUARD();
    SUBCASE("jemalloc by LD_PRELOAD") {
        const std::string lib = optional_file("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "libjemalloc2");
        if (lib.empty()) return;
        Tracked t = check_run({"/usr/bin/env", "LD_PRELOAD=" + lib, fixture("alloc_glibc"), std::to_string(kRounds)}, kCApi);
        CHECK(objects_of_kind(t, "jemalloc") == 1);
    }
    SUBCASE("mimalloc by LD_PRELOAD") {
        const std::string lib = optional_file("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "libmimalloc2.0");
        if (lib.empty()) return;
        Tracked t = check_run({"/usr/bin/env", "LD_PRELOAD=" + lib, fixture("alloc_glibc"), std::to_string(kRounds)}, kCApi);
        CHECK(objects_of_kind(t, "mimalloc") == 1);
    }
    SUBCASE("mimalloc linked, reached through an exec") {
        const std::string exe = optional_fixture("alloc_mimalloc", "libmimalloc-dev");
        if (exe.empty()) return;
        check_run({fixture("exec_into"), exe, std::to_string(kRounds)}, merged(kCApi, kMimallocApi));
    }
}

TEST_CASE("allocators: glibc static in the executable (gcc -static), directly and through an exec") {
    ROOT_SUITE_GUARD();
    Tracked t = check_run({fixture("alloc_glibc_static"), std::to_string(kRounds)}, kCApi);
    CHECK(pids_of(t.events) == std::set<int>{t.result.root_pid});
    check_run({fixture("exec_into"), fixture("alloc_glibc_static"), std::to_string(kRounds)}, kCApi);
}

TEST_CASE("allocators: jemalloc linked, reached through an exec") {
    ROOT_SUITE_GUARD();
    const std::string exe = optional_fixture("alloc_jemalloc", "libjemalloc-dev");
    if (exe.empty()) return;
    check_run({fixture("exec_into"), exe, std::to_string(kRounds)}, merged(kCApi, kJemallocApi));
}

TEST_CASE("allocators: with --system-wide-probes, allocators found at exec and at dlopen are probed too") {
    ROOT_SUITE_GUARD();
    const std::vector<std::string> wide{"--system-wide-probes"};
    SUBCASE("jemalloc linked, reached through an exec") {
        const std::string exe = optional_fixture("alloc_jemalloc", "libjemalloc-dev");
        if (exe.empty()) return;
        Tracked t = check_run({fixture("exec_into"), exe, std::to_string(kRounds)}, merged(kCApi, kJemallocApi), wide);
        CHECK(objects_of_kind(t, "jemalloc") == 1);
    }
    SUBCASE("mimalloc loaded by dlopen") {
        if (optional_file("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", "libmimalloc2.0").empty()) return;
        Tracked t = check_run({fixture("alloc_dlopen_mimalloc"), std::to_string(kRounds)},
                              {{FX_DL_MALLOC, times("Malloc")}, {FX_DL_CALLOC, times("Calloc")}}, wide);
        CHECK(objects_of_kind(t, "mimalloc") == 1);
    }
    SUBCASE("glibc static in the executable") {
        check_run({fixture("alloc_glibc_static"), std::to_string(kRounds)}, kCApi, wide);
    }
}

TEST_CASE("allocators: a Rust program whose #[global_allocator] calls mimalloc") {
    ROOT_SUITE_GUARD();
    const std::string exe = optional_fixture("alloc_rust_mimalloc", "libmimalloc-dev");
    if (exe.empty()) return;
    check_run({exe, std::to_string(kRounds)}, {{kRustAlloc, times("AlignedAlloc")},
                                               {kRustZeroed, times("AlignedAlloc")},
                                               {kRustGrowFrom, times("AlignedAlloc")},
                                               {kRustGrowTo, times("Realloc")}});
}

TEST_CASE("allocators: a process with no allocator memtrack knows gets one warning") {
    ROOT_SUITE_GUARD();
    // A static executable stripped of its symbols: nothing names its malloc.
    TempDir dir;
    const std::string stripped = dir / "stripped_static";
    RunResult s = run({"strip", "--strip-all", "-o", stripped, fixture("alloc_glibc_static")});
    REQUIRE_MESSAGE(s.status == 0, s.describe());
    Tracked t = track_and_dump(dir, {stripped, "1"});
    CHECK_MESSAGE(t.result.run.status == 0, t.result.run.describe());
    CHECK(stats_u64(t.result.stats, "processes_without_allocator") == 1);
    size_t warnings = 0;
    for (size_t at = 0; (at = t.result.run.err.find("maps no allocator memtrack knows", at)) != std::string::npos; ++at)
        ++warnings;
    CHECK_MESSAGE(warnings == 1, "stderr: ", t.result.run.err);
}

TEST_CASE("allocators: glibc's free trimming the heap with brk is no event") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("heap_trim"), std::to_string(kRounds)});
    CHECK_MESSAGE(t.result.run.status == 0, t.result.run.describe());
    check_common(t);
    const Expected expected = {{FX_TRIM_A, times("Malloc")}, {FX_TRIM_B, times("Malloc")}};
    CHECK(show(tally_by_size(t.events, sizes_of(expected))) == show(expected));
    Pairing p = pair_up(t.events, sizes_of(expected));
    CHECK_MESSAGE(p.problems.empty(), p.problems_text());
    CHECK(p.total_frees() == 2 * kRounds);
    // Neither malloc's brk (growing) nor free's (trimming) is the program's: no Brk at all.
    CHECK(tally(select(t.events, [](const Event& e) { return e.type == "Brk"; })) == "none");
}
