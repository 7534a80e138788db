// Symbols: /proc maps parsing, the resolver on this very executable (built with -g), the stacks
// file codec and `memtrack dump --stacks/--resolve`.
#include <doctest/doctest.h>

#include "TestFiles.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <zstd.h>

#include "cli/DumpCommand.hpp"
#include "format/ArtifactEncoder.hpp"
#include "format/JsonLines.hpp"
#include "format/StacksFile.hpp"
#include "format/ZstdFileWriter.hpp"
#include "symbols/ProcessMaps.hpp"
#include "symbols/Resolver.hpp"

// The functions the resolver is asked about. noipa keeps each one a real function under its own
// name: not inlined, not cloned ("[clone .constprop.0]"), not turned into a tail call (which
// would leave no return address inside it).
namespace memtrack_test {

// A return address and the line of the call it returns from.
struct Site {
    uintptr_t ra = 0;
    int line = 0;
};

Site g_alpha;
Site g_inner;
Site g_outer;

[[gnu::noipa]] uintptr_t return_address() { return reinterpret_cast<uintptr_t>(__builtin_return_address(0)); }

[[gnu::noipa]] int alpha(int x) {
    g_alpha.line = __LINE__; g_alpha.ra = return_address();
    return x * 3 + 1;
}

[[gnu::always_inline]] inline int inner(int x) {
    g_inner.line = __LINE__; g_inner.ra = return_address();
    return x + 7;
}

[[gnu::noipa]] int outer(int x) {
    g_outer.line = __LINE__; int r = inner(x);
    return r * 5;
}

}  // namespace memtrack_test

using namespace memtrack;
using namespace memtrack::unittest;
using namespace std::string_literals;  // "..."s keeps the NUL bytes of hand-made MessagePack

namespace {




ProcessMaps self_maps() {
    auto maps = ProcessMaps::read(::getpid());
    REQUIRE(maps.ok());
    return std::move(maps).value();
}

bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

// The address of `symbol` in an ELF image, translated to a file offset through its PT_LOADs.
std::optional<uint64_t> symbol_file_offset(Elf* elf, std::string_view symbol) {
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB)) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (data == nullptr || sh.sh_entsize == 0) continue;
        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, int(i), &sym) == nullptr) continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name == nullptr || symbol != name || sym.st_value == 0) continue;
            size_t phnum = 0;
            elf_getphdrnum(elf, &phnum);
            for (size_t p = 0; p < phnum; ++p) {
                GElf_Phdr ph;
                if (gelf_getphdr(elf, int(p), &ph) != nullptr && ph.p_type == PT_LOAD && sym.st_value >= ph.p_vaddr &&
                    sym.st_value < ph.p_vaddr + ph.p_filesz)
                    return sym.st_value - ph.p_vaddr + ph.p_offset;
            }
        }
    }
    return std::nullopt;
}


std::vector<boost::json::value> json_lines(const std::string& text) {
    std::vector<boost::json::value> lines;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        REQUIRE(nl != std::string::npos);
        lines.push_back(boost::json::parse(std::string_view(text).substr(pos, nl - pos)));
        pos = nl + 1;
    }
    return lines;
}

Frame make_frame(uint64_t ip, std::string function, uint32_t line, bool inlined) {
    Frame f;
    f.ip = ip;
    f.module = "/usr/lib/x86_64-linux-gnu/libexample.so.1";
    f.build_id = "0123456789abcdef0123456789abcdef01234567";
    f.function = std::move(function);
    f.file = "/src/example/alloc.cpp";
    f.line = line;
    f.inlined = inlined;
    return f;
}

struct StackRecord {
    uint64_t hash = 0;
    int32_t pid = 0;
    std::vector<Frame> frames;
    bool operator==(const StackRecord&) const = default;
};

struct StacksOutcome {
    std::vector<StackRecord> stacks;
    bool ok = false;
    uint64_t count = 0;
    std::string message;
};

StacksOutcome read_all_stacks(const std::string& path) {
    StacksOutcome o;
    auto r = read_stacks(path, [&](uint64_t hash, int32_t pid, std::vector<Frame>&& frames) {
        o.stacks.push_back({hash, pid, std::move(frames)});
    });
    o.ok = r.ok();
    if (r)
        o.count = r.value();
    else
        o.message = r.error().message();
    return o;
}

std::vector<StackRecord> sample_stacks() {
    std::vector<StackRecord> s;
    s.push_back({0xdeadbeefcafef00dull, 4242,
                 {make_frame(0x7f0000001234, "example::inlined_helper(int)", 12, true),
                  make_frame(0x7f0000001234, "example::make_buffer(unsigned long)", 40, false),
                  make_frame(0x55555555a000, "main", 7, false)}});
    s.push_back({1, 0, {}});
    Frame unknown;
    unknown.ip = std::numeric_limits<uint64_t>::max();
    s.push_back({std::numeric_limits<uint64_t>::max(), -1, {unknown}});
    Frame long_name = make_frame(0x401000, std::string(70000, 'x'), std::numeric_limits<uint32_t>::max(), false);
    s.push_back({0x100000000ull, std::numeric_limits<int32_t>::max(), {long_name}});
    return s;
}

void write_stacks(const std::string& path, const std::vector<StackRecord>& stacks) {
    auto w = ZstdFileWriter::create(path);
    REQUIRE(w.ok());
    for (const StackRecord& s : stacks) {
        std::string raw;
        encode_stack(s.hash, s.pid, s.frames, raw);
        REQUIRE(w->write(raw).ok());
    }
    REQUIRE(w->finish().ok());
}

}  // namespace

TEST_CASE("ProcessMaps::parse keeps file mappings, [vdso] and anonymous code, sorted, and finds addresses") {
    const char* text =
        "7f1c2a400000-7f1c2a428000 r--p 00000000 fd:01 1835123                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "555f1c600000-555f1c602000 r--p 00000000 fd:01 2097160                    /usr/bin/prog\n"
        "555f1c602000-555f1c607000 r-xp 00002000 fd:01 2097160                    /usr/bin/prog\n"
        "555f1d000000-555f1d021000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f1c2a428000-7f1c2a59d000 r-xp 00028000 fd:01 1835123                    /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f1c2a600000-7f1c2a601000 rw-p 00000000 00:00 0 \n"
        "7f1c2a680000-7f1c2a690000 r-xp 00000000 00:00 0 \n"
        "7f1c2a700000-7f1c2a710000 r-xp 00001000 08:02 77                         /opt/my app/lib plugin.so (deleted)\n"
        "7ffd3e1f0000-7ffd3e211000 rw-p 00000000 00:00 0                          [stack]\n"
        "7ffd3e2fa000-7ffd3e2fe000 r--p 00000000 00:00 0                          [vvar]\n"
        "7ffd3e2fe000-7ffd3e300000 r-xp 00000000 00:00 0                          [vdso]\n"
        "not a maps line\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";
    const ProcessMaps maps = ProcessMaps::parse(text);
    CHECK(maps.pid() == 0);
    const auto& m = maps.mappings();
    REQUIRE(m.size() == 7);
    CHECK(m[0].path == "/usr/bin/prog");
    CHECK(m[0].start == 0x555f1c600000);
    CHECK(m[0].end == 0x555f1c602000);
    CHECK_FALSE(m[0].executable);
    CHECK(m[1].offset == 0x2000);
    CHECK(m[1].executable);
    CHECK(m[1].inode == 2097160);
    CHECK(m[1].dev == makedev(0xfd, 0x01));
    CHECK(m[2].path == "/usr/lib/x86_64-linux-gnu/libc.so.6");
    CHECK(m[3].offset == 0x28000);
    CHECK(m[4].path.empty());  // code a runtime made: executable, anonymous
    CHECK(m[4].executable);
    CHECK(m[4].anonymous());
    CHECK_FALSE(m[3].anonymous());
    CHECK(m[5].path == "/opt/my app/lib plugin.so (deleted)");
    CHECK(m[5].dev == makedev(8, 2));
    CHECK(m[6].path == "[vdso]");
    CHECK(m[6].executable);
    CHECK_FALSE(m[6].anonymous());

    CHECK(maps.find(0x555f1c602000) == &m[1]);
    CHECK(maps.find(0x555f1c606fff) == &m[1]);
    CHECK(maps.find(0x555f1c600000) == &m[0]);
    CHECK(maps.find(0x555f1c607000) == nullptr);  // end is exclusive, and the heap is not kept
    CHECK(maps.find(0x555f1d000010) == nullptr);
    CHECK(maps.find(0) == nullptr);
    CHECK(maps.find(std::numeric_limits<uint64_t>::max()) == nullptr);
    CHECK(maps.find(0x7ffd3e2fe800) == &m[6]);
    CHECK(maps.find(0x7f1c2a600010) == nullptr);  // anonymous data is not kept
    CHECK(maps.find(0x7f1c2a68ffff) == &m[4]);
    CHECK(ProcessMaps::parse("").mappings().empty());
}

TEST_CASE("ProcessMaps::read sees this executable") {
    const ProcessMaps maps = self_maps();
    CHECK(maps.pid() == ::getpid());
    const Mapping* m = maps.find(reinterpret_cast<uintptr_t>(&memtrack_test::alpha));
    REQUIRE(m != nullptr);
    CHECK(m->executable);
    CHECK(m->path == std::filesystem::canonical("/proc/self/exe").string());
    CHECK_FALSE(ProcessMaps::read(-1).ok());
}

TEST_CASE("Resolver names a function, its file and the line of a call") {
    CHECK(memtrack_test::alpha(2) == 7);
    const ProcessMaps maps = self_maps();
    Resolver resolver;
    const std::vector<Frame> frames = resolver.resolve(maps, memtrack_test::g_alpha.ra);
    REQUIRE(frames.size() == 1);
    const Frame& f = frames[0];
    CHECK(f.ip == memtrack_test::g_alpha.ra);
    CHECK(f.function == "memtrack_test::alpha(int)");
    CHECK(ends_with(f.file, "test_symbols.cpp"));
    CHECK(f.line == uint32_t(memtrack_test::g_alpha.line));
    CHECK_FALSE(f.inlined);
    CHECK(f.module == maps.find(f.ip)->path);
    CHECK(f.build_id.size() >= 16);  // GNU ld and gcc give every executable a build-id
    CHECK(resolver.modules_loaded() == 1);
    CHECK(resolver.cache_misses() == 1);
    CHECK(resolver.cache_hits() == 0);

    // A second lookup, through maps read again, comes from the cache and says the same.
    const ProcessMaps again = self_maps();
    CHECK(resolver.resolve(again, memtrack_test::g_alpha.ra) == frames);
    CHECK(resolver.cache_hits() == 1);
    CHECK(resolver.cache_misses() == 1);
    CHECK(resolver.modules_loaded() == 1);

    // The same executable known only by path (no pid): opened by path, found to be the same
    // module by its build-id.
    const Mapping* m = maps.find(memtrack_test::g_alpha.ra);
    REQUIRE(m != nullptr);
    const ProcessMaps by_path = ProcessMaps::parse(
        fmt::format("{:x}-{:x} r-xp {:08x} 00:00 0 {}\n", m->start, m->end, m->offset, m->path));
    CHECK(resolver.resolve(by_path, memtrack_test::g_alpha.ra) == frames);
    CHECK(resolver.modules_loaded() == 1);
    CHECK(resolver.cache_hits() == 2);
}

TEST_CASE("Resolver expands inlined calls, innermost first") {
    CHECK(memtrack_test::outer(1) == 40);
    const ProcessMaps maps = self_maps();
    Resolver resolver;
    const std::vector<Frame> frames = resolver.resolve(maps, memtrack_test::g_inner.ra);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].inlined);
    CHECK(frames[0].function == "memtrack_test::inner(int)");
    CHECK(ends_with(frames[0].file, "test_symbols.cpp"));
    CHECK(frames[0].line == uint32_t(memtrack_test::g_inner.line));
    CHECK_FALSE(frames[1].inlined);
    CHECK(frames[1].function == "memtrack_test::outer(int)");
    CHECK(ends_with(frames[1].file, "test_symbols.cpp"));
    CHECK(frames[1].line == uint32_t(memtrack_test::g_outer.line));
    for (const Frame& f : frames) {
        CHECK(f.ip == memtrack_test::g_inner.ra);
        CHECK(!f.module.empty());
        CHECK(!f.build_id.empty());
    }
}

TEST_CASE("Resolver never fails on garbage") {
    const ProcessMaps maps = self_maps();
    Resolver resolver;
    for (uint64_t ip : {uint64_t(0), uint64_t(1), uint64_t(0x10), std::numeric_limits<uint64_t>::max()}) {
        const std::vector<Frame> frames = resolver.resolve(maps, ip);
        REQUIRE(frames.size() == 1);
        CHECK(frames[0].ip == ip);
        CHECK(frames[0].function.empty());
        CHECK(frames[0].module.empty());
    }

    // Inside a mapping that holds no code: the module is known, nothing else.
    for (const Mapping& m : maps.mappings()) {
        if (m.executable) continue;
        const std::vector<Frame> frames = resolver.resolve(maps, m.start + 1);
        REQUIRE(frames.size() == 1);
        CHECK(frames[0].module == m.path);
        CHECK(frames[0].function.empty());
        break;
    }

    // Anywhere in every code mapping (this executable, libc, libdw, the vDSO...): one frame or
    // more, all carrying the address asked about.
    uint64_t s = 12345;
    for (const Mapping& m : maps.mappings()) {
        if (!m.executable) continue;
        for (int i = 0; i < 300; ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            const uint64_t ip = m.start + (s >> 17) % (m.end - m.start + 1);
            const std::vector<Frame> frames = resolver.resolve(maps, ip);
            REQUIRE(!frames.empty());
            for (const Frame& f : frames) CHECK(f.ip == ip);
        }
    }

    // Files that cannot serve: missing, not ELF, deleted. Parsed maps have no pid, so the
    // resolver can only go by path.
    const ProcessMaps odd = ProcessMaps::parse(
        "100000-200000 r-xp 00000000 00:00 0 /nonexistent/libgone.so\n"
        "300000-400000 r-xp 00000000 00:00 0 /etc/passwd\n"
        "500000-600000 r-xp 00000000 00:00 0 /usr/bin/true (deleted)\n");
    for (uint64_t ip : {0x100400ull, 0x300400ull, 0x500400ull}) {
        const std::vector<Frame> frames = resolver.resolve(odd, ip);
        REQUIRE(frames.size() == 1);
        CHECK(frames[0].ip == ip);
        CHECK(frames[0].module == odd.find(ip)->path);
        CHECK(frames[0].function.empty());
        CHECK(frames[0].build_id.empty());
    }
}

TEST_CASE("Resolver keeps module and build-id for a module without symbols") {
    // Debian's /usr/bin/true is stripped: only imported names in .dynsym. Its debug info would
    // come from coreutils-dbgsym, which a build machine normally lacks.
    const char* path = "/usr/bin/true";
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    REQUIRE(elf != nullptr);
    std::optional<GElf_Phdr> text;
    size_t phnum = 0;
    REQUIRE(elf_getphdrnum(elf, &phnum) == 0);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) != nullptr && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) text = ph;
    }
    elf_end(elf);
    ::close(fd);
    REQUIRE(text.has_value());

    const uint64_t start = 0x7f0000000000;
    const uint64_t offset = text->p_offset & ~uint64_t(0xfff);
    const ProcessMaps maps = ProcessMaps::parse(
        fmt::format("{:x}-{:x} r-xp {:08x} 00:00 0 {}\n", start, start + 0x100000, offset, path));
    const uint64_t ip = start + (text->p_offset - offset) + text->p_filesz / 2;
    Resolver resolver;
    const std::vector<Frame> frames = resolver.resolve(maps, ip);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].ip == ip);
    CHECK(frames[0].module == path);
    CHECK(frames[0].build_id.size() == 40);
    const bool has_debug_package = std::filesystem::exists("/usr/lib/debug/.build-id/" +
                                                           frames[0].build_id.substr(0, 2) + "/" +
                                                           frames[0].build_id.substr(2) + ".debug");
    if (!has_debug_package) CHECK(frames[0].function.empty());
    CHECK(resolver.modules_loaded() == 1);
}

TEST_CASE("Resolver names vDSO functions from memtrack's own copy of the image") {
    const uint64_t base = ::getauxval(AT_SYSINFO_EHDR);
    if (base == 0) return;  // no vDSO here
    const ProcessMaps maps = self_maps();
    const Mapping* vdso = maps.find(base);
    REQUIRE(vdso != nullptr);
    REQUIRE(vdso->path == "[vdso]");
    std::string image(reinterpret_cast<const char*>(base), vdso->end - base);
    elf_version(EV_CURRENT);
    Elf* elf = elf_memory(image.data(), image.size());
    REQUIRE(elf != nullptr);
    const std::optional<uint64_t> offset = symbol_file_offset(elf, "__vdso_clock_gettime");
    elf_end(elf);
    REQUIRE(offset.has_value());

    Resolver resolver;
    // A return address just past the function's first byte, so ip - 1 is its entry.
    const uint64_t ip = vdso->start + *offset + 1;
    const std::vector<Frame> frames = resolver.resolve(maps, ip);
    REQUIRE(!frames.empty());
    CHECK(frames.back().module == "[vdso]");
    CHECK(ends_with(frames.back().function, "clock_gettime"));
}

TEST_CASE("stacks file round trip through ZstdFileWriter and read_stacks") {
    TempDir dir;
    const std::string path = dir / "7.MemtrackStacks.msgpack";
    const std::vector<StackRecord> stacks = sample_stacks();
    write_stacks(path, stacks);
    StacksOutcome o = read_all_stacks(path);
    CHECK(o.ok);
    CHECK(o.count == stacks.size());
    CHECK(o.stacks == stacks);

    SUBCASE("a hash twice is delivered twice") {
        std::vector<StackRecord> twice = stacks;
        twice.push_back(stacks[0]);
        twice.back().frames.pop_back();
        write_stacks(path, twice);
        o = read_all_stacks(path);
        CHECK(o.ok);
        CHECK(o.stacks == twice);
    }
}

TEST_CASE("encode_stack writes the documented map") {
    std::string raw;
    Frame f;
    f.ip = 0x401000;
    f.module = "/bin/x";
    f.function = "main";
    f.line = 3;
    encode_stack(5, 42, {f}, raw);
    // {"hash":5,"pid":42,"frames":[{"ip":0x401000,"module":"/bin/x","build_id":"","function":"main",
    //  "file":"","line":3,"inlined":false}]}
    const std::string want =
        "\x83\xa4hash\x05\xa3pid\x2a\xa6" "frames\x91"
        "\x87\xa2ip\xce\x00\x40\x10\x00\xa6module\xa6/bin/x\xa8" "build_id\xa0\xa8" "function\xa4main"
        "\xa4" "file\xa0\xa4line\x03\xa7inlined\xc2"s;
    CHECK(raw == want);
}

TEST_CASE("read_stacks reports damage with its offset, after the good stacks") {
    TempDir dir;
    const std::string path = dir / "1.MemtrackStacks.msgpack";
    const std::vector<StackRecord> stacks = sample_stacks();
    std::string good;
    encode_stack(stacks[0].hash, stacks[0].pid, stacks[0].frames, good);

    SUBCASE("invalid MessagePack") {
        write_zstd_file(path, good + "\xc1");
        const StacksOutcome o = read_all_stacks(path);
        CHECK_FALSE(o.ok);
        REQUIRE(o.stacks.size() == 1);
        CHECK(o.stacks[0] == stacks[0]);
        CHECK(o.message == fmt::format("corrupt stack at decompressed offset {}: invalid MessagePack: parse error",
                                       good.size()));
    }
    SUBCASE("values that are not stacks") {
        struct Case {
            std::string raw;
            std::string reason;
        };
        const Case cases[] = {
            {"\x05", "expected a map, found uint"},
            {"\x82\xa4hash\x01\xa3pid\x01", "missing key 'frames'"},
            {"\x83\xa4hash\x01\xa4hash\x01\xa3pid\x01", "duplicate key 'hash'"},
            {"\x83\xa4hash\xa1x\xa3pid\x01\xa6" "frames\x90", "key 'hash': expected uint, found str"},
            {"\x83\xa4hash\x01\xa3pid\xce\x80\x00\x00\x00\xa6" "frames\x90"s, "key 'pid': 2147483648 does not fit in i32"},
            {"\x83\xa4hash\x01\xa3pid\x01\xa6" "frames\x91\x80", "frame 0: missing key 'ip'"},
            {"\x83\xa4hash\x01\xa3pid\x01\xa6" "frames\x91\x82\xa2ip\x01\xa4line\xcf\x00\x00\x00\x01\x00\x00\x00\x00"s,
             "frame 0: key 'line': 4294967296 does not fit in u32"},
            {"\x83\xa4hash\x01\xa3pid\x01\xa6" "frames\x91\x82\xa2ip\x01\xa7inlined\x01",
             "frame 0: key 'inlined': expected bool, found uint"},
        };
        for (const Case& c : cases) {
            CAPTURE(c.reason);
            write_zstd_file(path, good + c.raw);
            const StacksOutcome o = read_all_stacks(path);
            CHECK_FALSE(o.ok);
            CHECK(o.stacks.size() == 1);
            CHECK(o.message == fmt::format("corrupt stack at decompressed offset {}: {}", good.size(), c.reason));
        }
    }
    SUBCASE("unknown keys and missing optional frame keys are fine") {
        write_zstd_file(path, "\x84\xa3new\xc0\xa4hash\x09\xa3pid\xff\xa6" "frames\x91\x82\xa2ip\x07\xa5" "extra\x90");
        const StacksOutcome o = read_all_stacks(path);
        CHECK(o.ok);
        REQUIRE(o.stacks.size() == 1);
        CHECK(o.stacks[0].hash == 9);
        CHECK(o.stacks[0].pid == -1);
        REQUIRE(o.stacks[0].frames.size() == 1);
        Frame want;
        want.ip = 7;
        CHECK(o.stacks[0].frames[0] == want);
    }
    SUBCASE("a value cut short") {
        write_zstd_file(path, good + good.substr(0, 10));
        const StacksOutcome o = read_all_stacks(path);
        CHECK_FALSE(o.ok);
        CHECK(o.stacks.size() == 1);
        CHECK(o.message == fmt::format("corrupt stack at decompressed offset {}: value cut short by the end of "
                                       "the stream (10 bytes left)",
                                       good.size()));
    }
    SUBCASE("an unfinished zstd frame") {
        {
            auto w = ZstdFileWriter::create(path);
            REQUIRE(w.ok());
            REQUIRE(w->write(good).ok());
            REQUIRE(w->flush().ok());
        }
        const uint64_t size = std::filesystem::file_size(path);
        const StacksOutcome o = read_all_stacks(path);
        CHECK_FALSE(o.ok);
        CHECK(o.stacks.size() == 1);
        CHECK(o.message == fmt::format("truncated stacks file: unfinished zstd frame at compressed offset 0: "
                                       "file ends at byte {}",
                                       size));
    }
    SUBCASE("empty and missing files") {
        { std::ofstream touch(path); }
        CHECK(read_all_stacks(path).message == "empty stacks file (0 bytes)");
        const StacksOutcome o = read_all_stacks(dir / "absent");
        CHECK_FALSE(o.ok);
        CHECK(o.message == "open " + dir / "absent" + ": No such file or directory");
    }
}

TEST_CASE("memtrack dump --stacks and --resolve") {
    TempDir dir;
    const std::string artifact = dir / "77.MemtrackArtifact.msgpack";
    const std::string stacks_path = dir / "77.MemtrackStacks.msgpack";
    const std::vector<StackRecord> stacks = sample_stacks();
    write_stacks(stacks_path, stacks);

    Event with_stack;
    with_stack.pid = 77;
    with_stack.tid = 78;
    with_stack.timestamp = 1000;
    with_stack.addr = 0x1000;
    with_stack.kind = EventKind::Malloc;
    with_stack.size = 64;
    with_stack.stack_hash = stacks[0].hash;
    Event unknown_stack = with_stack;
    unknown_stack.stack_hash = 0x1234;  // not in the stacks file
    Event no_stack = with_stack;
    no_stack.kind = EventKind::Free;
    no_stack.stack_hash = 0;
    {
        auto w = ZstdFileWriter::create(artifact);
        REQUIRE(w.ok());
        std::string raw;
        for (const Event& e : {with_stack, unknown_stack, no_stack}) encode_event(e, raw);
        REQUIRE(w->write(raw).ok());
        REQUIRE(w->finish().ok());
    }

    SUBCASE("--stacks prints every stack with every frame key") {
        DumpOptions opts;
        opts.stacks_file = stacks_path;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 0);
        CHECK(c.err.empty());
        const auto lines = json_lines(c.out);
        REQUIRE(lines.size() == stacks.size());
        const auto& first = lines[0].as_object();
        CHECK(boost::json::serialize(first.at("hash")) == std::to_string(stacks[0].hash));
        CHECK(first.at("pid").as_int64() == 4242);
        const auto& frames = first.at("frames").as_array();
        REQUIRE(frames.size() == 3);
        const auto& f0 = frames[0].as_object();
        CHECK(f0.size() == 7);
        CHECK(f0.at("ip").to_number<uint64_t>() == stacks[0].frames[0].ip);
        CHECK(f0.at("module").as_string() == stacks[0].frames[0].module);
        CHECK(f0.at("build_id").as_string() == stacks[0].frames[0].build_id);
        CHECK(f0.at("function").as_string() == "example::inlined_helper(int)");
        CHECK(f0.at("file").as_string() == "/src/example/alloc.cpp");
        CHECK(f0.at("line").to_number<uint32_t>() == 12);
        CHECK(f0.at("inlined").as_bool());
        CHECK_FALSE(frames[1].as_object().at("inlined").as_bool());
        CHECK(lines[1].as_object().at("frames").as_array().empty());
        CHECK(lines[2].as_object().at("pid").as_int64() == -1);
    }
    SUBCASE("--resolve adds frames from the stacks file beside the artifact") {
        DumpOptions opts;
        opts.file = artifact;
        opts.resolve = true;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 0);
        CHECK(c.err.empty());
        const auto lines = json_lines(c.out);
        REQUIRE(lines.size() == 3);
        // Everything plain dump prints, then "frames".
        const Event events[] = {with_stack, unknown_stack, no_stack};
        for (size_t i = 0; i < 3; ++i) {
            boost::json::object plain = event_to_json_object(events[i]);
            boost::json::object got = lines[i].as_object();
            REQUIRE(got.contains("frames"));
            CHECK(std::prev(got.end())->key() == "frames");
            got.erase("frames");
            CHECK(boost::json::serialize(got) == boost::json::serialize(plain));
        }
        const auto& frames = lines[0].as_object().at("frames").as_array();
        REQUIRE(frames.size() == 3);
        const auto& f1 = frames[1].as_object();
        CHECK(f1.size() == 4);
        CHECK(f1.at("function").as_string() == "example::make_buffer(unsigned long)");
        CHECK(f1.at("module").as_string() == stacks[0].frames[1].module);
        CHECK(f1.at("file").as_string() == "/src/example/alloc.cpp");
        CHECK(f1.at("line").to_number<uint32_t>() == 40);
        CHECK(frames[2].as_object().at("function").as_string() == "main");
        CHECK(lines[1].as_object().at("frames").as_array().empty());
        CHECK(lines[2].as_object().at("frames").as_array().empty());
    }
    SUBCASE("--resolve with --stacks naming the stacks file") {
        const std::string renamed = dir / "elsewhere.msgpack";
        std::filesystem::rename(stacks_path, renamed);
        DumpOptions opts;
        opts.file = artifact;
        opts.resolve = true;
        opts.stacks_file = renamed;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 0);
        const auto lines = json_lines(c.out);
        REQUIRE(lines.size() == 3);
        CHECK(lines[0].as_object().at("frames").as_array().size() == 3);
    }
    SUBCASE("--resolve without the stacks file still prints the events, then fails") {
        std::filesystem::remove(stacks_path);
        DumpOptions opts;
        opts.file = artifact;
        opts.resolve = true;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 1);
        const auto lines = json_lines(c.out);
        REQUIRE(lines.size() == 3);
        for (const auto& l : lines) CHECK(l.as_object().at("frames").as_array().empty());
        CHECK(c.err == "memtrack: dump: " + stacks_path + ": open " + stacks_path + ": No such file or directory\n");
    }
    SUBCASE("--resolve on an artifact whose name says nothing of its stacks") {
        const std::string odd = dir / "capture.bin";
        std::filesystem::copy_file(artifact, odd);
        DumpOptions opts;
        opts.file = odd;
        opts.resolve = true;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 1);
        CHECK(json_lines(c.out).size() == 3);
        CHECK(c.err.find("memtrack: dump: " + odd + ": cannot name its stacks file") == 0);
    }
    SUBCASE("--stacks on a damaged file prints what decoded, then the error") {
        std::string raw;
        encode_stack(stacks[0].hash, stacks[0].pid, stacks[0].frames, raw);
        write_zstd_file(stacks_path, raw + "\xc1");
        DumpOptions opts;
        opts.stacks_file = stacks_path;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 1);
        CHECK(json_lines(c.out).size() == 1);
        CHECK(c.err == fmt::format("memtrack: dump: {}: corrupt stack at decompressed offset {}: invalid "
                                   "MessagePack: parse error\n",
                                   stacks_path, raw.size()));
    }
    SUBCASE("--summary does not combine with --stacks or --resolve") {
        DumpOptions opts;
        opts.file = artifact;
        opts.summary = true;
        opts.resolve = true;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 1);
        CHECK(c.out.empty());
        CHECK(c.err == "memtrack: dump: --summary cannot be combined with --stacks or --resolve\n");
    }
    SUBCASE("plain dump is unchanged") {
        DumpOptions opts;
        opts.file = artifact;
        const Captured c = capture_output(dir, [&] { return run_dump(opts); });
        CHECK(c.rc == 0);
        CHECK(c.out == event_to_json(with_stack) + "\n" + event_to_json(unknown_stack) + "\n" +
                           event_to_json(no_stack) + "\n");
    }
}
