// ObjectFiles: each object file is opened and parsed once for the whole run, whichever stage asks
// (the probe sites, the unwind table, a symbol lookup) and whichever path names it (issue 33.8).
// Counted by open_elf_calls(), which every opening of an ELF file in memtrack goes through: a
// stage that reads a file by its path again fails these tests.
#include <doctest/doctest.h>

#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "probes/AllocatorProbes.hpp"
#include "probes/ElfSymbols.hpp"
#include "probes/ProbeSiteCache.hpp"
#include "symbols/Resolver.hpp"
#include "symbols/ElfFile.hpp"
#include "symbols/ObjectFiles.hpp"
#include "unwind/CfiTableCache.hpp"

using namespace memtrack;

namespace {

std::string fixture_lib() {
    const char* v = std::getenv("CFI_RULES_LIB");
    REQUIRE_MESSAGE(v != nullptr, "CFI_RULES_LIB is not set (meson test sets it)");
    return v;
}

struct stat stat_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st;
}

// Every stage a new object goes through while its process is held, in ProcessLinks' order:
// probe sites, then the unwind table; then a second process mapping it asks again.
void every_stage(ObjectFiles& files, ProbeSiteCache& sites, const std::string& path) {
    const struct stat st = stat_of(path);
    const MappedObject object{path, uint64_t(st.st_dev), uint64_t(st.st_ino)};
    (void)sites.get(object);
    auto file = files.get(::getpid(), path, object.dev, object.ino);
    REQUIRE_MESSAGE(file, file.error().message());
    LoadedTable table = load_cfi_table(**file, nullptr);
    REQUIRE_MESSAGE(table.table, table.table.error().message());
    auto symbols = ElfSymbols::load(file.value(), {"_PyRuntime"});
    REQUIRE_MESSAGE(symbols, symbols.error().message());
    (void)sites.get(object);
    REQUIRE(files.get(::getpid(), path, object.dev, object.ino));
}

// How many times this process opened the file `st` names and still holds it: its descriptors
// counted once per open file description (kcmp(2) KCMP_FILE), so a dup of a descriptor, which
// libdwfl is given, counts with it, and an open(2) of the file by anyone in this process (a
// stage, libdwfl's own search for the file or its debug file) counts again.
size_t open_descriptions(const struct stat& st) {
    std::vector<int> fds;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        const int fd = std::stoi(entry.path().filename().string());
        struct stat fst {};
        if (::fstat(fd, &fst) == 0 && fst.st_dev == st.st_dev && fst.st_ino == st.st_ino) fds.push_back(fd);
    }
    std::vector<int> distinct;
    for (const int fd : fds) {
        bool seen = false;
        for (const int d : distinct) {
            const long same = ::syscall(SYS_kcmp, ::getpid(), ::getpid(), KCMP_FILE, fd, d);
            REQUIRE_MESSAGE(same >= 0, "kcmp: ", std::strerror(errno));
            if (same == 0) seen = true;
        }
        if (!seen) distinct.push_back(fd);
    }
    return distinct.size();
}

// A fake mapping line of `path`'s code at `start`, from the page of `file_offset`, and the return
// address just past that offset (a frame in the function there).
std::pair<std::string, uint64_t> code_mapping(const std::string& path, uint64_t start, uint64_t file_offset) {
    const struct stat st = stat_of(path);
    const uint64_t page = file_offset & ~uint64_t(0xfff);
    return {fmt::format("{:x}-{:x} r-xp {:08x} {:02x}:{:02x} {} {}\n", start, start + 0x10000, page, major(st.st_dev),
                        minor(st.st_dev), uint64_t(st.st_ino), path),
            start + (file_offset - page) + 1};
}

}  // namespace

TEST_CASE("object files: one opening and parse per file for every stage and process") {
    const std::string lib = fixture_lib();
    ObjectFiles files;
    ProbeSiteCache sites(false, files);
    const uint64_t before = open_elf_calls();
    every_stage(files, sites, lib);
    // The fixture has no separate debug file: its one opening is all.
    CHECK(open_elf_calls() - before == 1);
    const ObjectFileCounters c = files.counters();
    CHECK(c.parsed == 1);
    CHECK(c.lookups == 3);  // the probe sites' first, the unwind table's, the second process's
    CHECK(c.failed == 0);
    CHECK(c.reopened == 0);

    // The same file under another name (as another mount namespace or a symlink shows it): the same object.
    const std::string link = std::filesystem::temp_directory_path() / ("memtrack-objfile-" + std::to_string(::getpid()));
    std::filesystem::remove(link);
    std::filesystem::create_symlink(lib, link);
    every_stage(files, sites, link);
    std::filesystem::remove(link);
    CHECK(open_elf_calls() - before == 1);
    CHECK(files.counters().parsed == 1);
}

TEST_CASE("object files: a stripped library is read once with its separate debug file") {
    const std::string libc = loaded_library_path("libc.so");
    REQUIRE(!libc.empty());
    auto alone = ObjectFile::open(libc);
    REQUIRE_MESSAGE(alone, alone.error().message());
    const bool has_debug = ::access(debug_file_path((*alone)->build_id()).c_str(), R_OK) == 0;
    ObjectFiles files;
    ProbeSiteCache sites(false, files);
    const uint64_t before = open_elf_calls();
    every_stage(files, sites, libc);
    CHECK(open_elf_calls() - before == 1 + (has_debug ? 1 : 0));
    CHECK(files.counters().parsed == 1);
    // What the stages found in it is what a reading of its own finds (the handles are shared, not changed).
    auto shared = files.get(0, libc, uint64_t(stat_of(libc).st_dev), uint64_t(stat_of(libc).st_ino));
    REQUIRE(shared);
    CHECK((*shared)->build_id() == (*alone)->build_id());
    CHECK((*shared)->segments().size() == (*alone)->segments().size());
    CHECK(sites.get({libc, uint64_t(stat_of(libc).st_dev), uint64_t(stat_of(libc).st_ino)}).probes->kinds_text() == "glibc");
}

TEST_CASE("object files: an unreadable file is tried once; a closed handle is reopened and counted") {
    ObjectFiles files;
    const uint64_t before = open_elf_calls();
    CHECK(!files.get(0, "/nonexistent/libnothing.so", 1, 2));
    CHECK(!files.get(0, "/nonexistent/libnothing.so", 1, 2));
    CHECK(open_elf_calls() - before == 1);
    CHECK(files.counters().failed == 1);

    // A path that does not name the file with the identity asked for is refused.
    const std::string lib = fixture_lib();
    CHECK(!files.get(0, lib, 0, 0));

    // Past kKeepOpen newer files its handles are let go of; a stage asking again reopens (counted).
    const struct stat st = stat_of(lib);
    auto first = files.get(0, lib, uint64_t(st.st_dev), uint64_t(st.st_ino));
    REQUIRE(first);
    const std::string dir = std::filesystem::temp_directory_path() / ("memtrack-objfiles-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < ObjectFiles::kKeepOpen; ++i) {
        const std::string copy = dir + "/lib" + std::to_string(i) + ".so";
        std::filesystem::copy_file(lib, copy, std::filesystem::copy_options::overwrite_existing);
        const struct stat cst = stat_of(copy);
        REQUIRE(files.get(0, copy, uint64_t(cst.st_dev), uint64_t(cst.st_ino)));
    }
    std::filesystem::remove_all(dir);
    // Let go of, its handles close only at close_released() (a hold calls it after its release).
    CHECK(open_descriptions(st) == 1);
    files.close_released();
    CHECK(open_descriptions(st) == 0);
    CHECK(files.counters().reopened == 0);
    // The symbolizer's late reading is counted apart from the hold stages'.
    CHECK((*first)->handles_for_symbols());
    CHECK(files.counters().reopened_for_symbols == 1);
    CHECK(files.counters().reopened == 0);
    (*first)->close();
    CHECK((*first)->handles());
    CHECK(files.counters().reopened == 1);
    CHECK(files.counters().reopened_for_symbols == 1);
}

TEST_CASE("object files: the symbolizer reads each file through the run's one opening, and opens one copy of a build") {
    const std::string lib = fixture_lib();
    auto fn = ElfSymbols::load(lib, {"cfi_rbp_frame"});
    REQUIRE_MESSAGE(fn, fn.error().message());
    auto sym = fn->find("cfi_rbp_frame");
    REQUIRE(sym);
    const std::string dir = std::filesystem::temp_directory_path() / ("memtrack-objsym-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string text;
    std::vector<std::string> copies;
    std::vector<uint64_t> ips;
    for (int i = 0; i < 2; ++i) {
        copies.push_back(dir + "/libcopy" + std::to_string(i) + ".so");
        std::filesystem::copy_file(lib, copies.back(), std::filesystem::copy_options::overwrite_existing);
        // Its code mapped 1 MiB apart.
        auto [line, ip] = code_mapping(copies.back(), 0x7f0000000000 + uint64_t(i) * 0x100000, sym->file_offset);
        text += line;
        ips.push_back(ip);
    }
    const ProcessMaps maps = ProcessMaps::parse(text);
    auto files = std::make_shared<ObjectFiles>();
    {
        Resolver resolver;
        resolver.share_files(files);
        for (size_t i = 0; i < ips.size(); ++i) {
            const std::vector<Frame> frames = resolver.resolve(maps, ips[i]);
            REQUIRE(!frames.empty());
            CHECK(frames.back().function == "cfi_rbp_frame");
            CHECK(frames.back().module == copies[i]);
        }
        // One module: the second copy, read by ObjectFiles, is known by its build-id.
        CHECK(resolver.modules_loaded() == 1);
        CHECK(files->counters().parsed == 2);
        // Each copy opened once in this process, libdwfl's module included (issue 33.8: libdwfl
        // opened the first copy of a build once more by its path).
        for (const std::string& copy : copies) {
            CAPTURE(copy);
            CHECK(open_descriptions(stat_of(copy)) == 1);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("object files: libdwfl reads a stripped library's separate debug file through the run's opening of it") {
    const std::string libc = loaded_library_path("libc.so");
    REQUIRE(!libc.empty());
    std::string debug;
    uint64_t malloc_offset = 0;
    {  // read on its own, its handles closed at the end of the block
        auto fn = ElfSymbols::load(libc, {"malloc"});
        REQUIRE_MESSAGE(fn, fn.error().message());
        auto sym = fn->find("malloc");
        REQUIRE(sym);
        malloc_offset = sym->file_offset;
        auto alone = ObjectFile::open(libc);
        REQUIRE_MESSAGE(alone, alone.error().message());
        debug = debug_file_path((*alone)->build_id());
    }
    if (::access(debug.c_str(), R_OK) != 0) {
        MESSAGE("no separate debug file for " << libc << " (" << debug << "): nothing to read it from");
        return;
    }
    // A copy: a file nobody else in this process has open, with the build-id of the debug file.
    const std::string dir = std::filesystem::temp_directory_path() / ("memtrack-objdbg-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string copy = dir + "/libc.so.6";
    std::filesystem::copy_file(libc, copy, std::filesystem::copy_options::overwrite_existing);
    auto [line, ip] = code_mapping(copy, 0x7f0000000000, malloc_offset);
    const ProcessMaps maps = ProcessMaps::parse(line);
    REQUIRE(open_descriptions(stat_of(debug)) == 0);
    auto files = std::make_shared<ObjectFiles>();
    {
        Resolver resolver;
        resolver.share_files(files);
        const std::vector<Frame> frames = resolver.resolve(maps, ip);
        REQUIRE(!frames.empty());
        // The name and source line come from the debug file's symbols and DWARF.
        CHECK(frames.back().function == "__GI___libc_malloc");  // as Debian 12's glibc debug file names it
        CHECK(frames.back().file.ends_with("malloc.c"));
        CHECK(frames.back().line > 0);
        CHECK(open_descriptions(stat_of(copy)) == 1);
        CHECK(open_descriptions(stat_of(debug)) == 1);
    }
    files.reset();  // every opening closed with its last holder
    CHECK(open_descriptions(stat_of(copy)) == 0);
    CHECK(open_descriptions(stat_of(debug)) == 0);
    std::filesystem::remove_all(dir);
}
