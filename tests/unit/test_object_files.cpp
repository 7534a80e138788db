// ObjectFiles: each object file is opened and parsed once for the whole run, whichever stage asks
// (the probe sites, the unwind table, a symbol lookup) and whichever path names it (issue 33.8).
// Counted by open_elf_calls(), which every opening of an ELF file in memtrack goes through: a
// stage that reads a file by its path again fails these tests.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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

    // Past kKeepOpen newer files its handles are closed; a stage asking again reopens (counted).
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
    CHECK(files.counters().reopened == 0);
    CHECK((*first)->handles());
    CHECK(files.counters().reopened == 1);
}

TEST_CASE("object files: the symbolizer opens one copy of a build, and names each copy's frames") {
    const std::string lib = fixture_lib();
    auto fn = ElfSymbols::load(lib, {"cfi_rbp_frame"});
    REQUIRE_MESSAGE(fn, fn.error().message());
    auto sym = fn->find("cfi_rbp_frame");
    REQUIRE(sym);
    const std::string dir = std::filesystem::temp_directory_path() / ("memtrack-objsym-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string text;
    std::vector<uint64_t> ips;
    for (int i = 0; i < 2; ++i) {
        const std::string copy = dir + "/libcopy" + std::to_string(i) + ".so";
        std::filesystem::copy_file(lib, copy, std::filesystem::copy_options::overwrite_existing);
        const struct stat st = stat_of(copy);
        // Its code mapped from the page of the function's file offset, 1 MiB apart.
        const uint64_t start = 0x7f0000000000 + uint64_t(i) * 0x100000, offset = sym->file_offset & ~uint64_t(0xfff);
        text += fmt::format("{:x}-{:x} r-xp {:08x} {:02x}:{:02x} {} {}\n", start, start + 0x10000, offset,
                            major(st.st_dev), minor(st.st_dev), uint64_t(st.st_ino), copy);
        ips.push_back(start + (sym->file_offset - offset) + 1);  // a return address just past its entry
    }
    const ProcessMaps maps = ProcessMaps::parse(text);
    for (bool shared : {false, true}) {
        CAPTURE(shared);
        auto files = std::make_shared<ObjectFiles>();
        Resolver resolver;
        if (shared) resolver.share_files(files);
        for (size_t i = 0; i < ips.size(); ++i) {
            const std::vector<Frame> frames = resolver.resolve(maps, ips[i]);
            REQUIRE(!frames.empty());
            CHECK(frames.back().function == "cfi_rbp_frame");
            CHECK(frames.back().module == dir + "/libcopy" + std::to_string(i) + ".so");
        }
        // One module either way; without the run's reading, the second copy is opened to learn it.
        CHECK(resolver.modules_loaded() == 1);
        CHECK(resolver.files_opened() == (shared ? 1 : 2));
    }
    std::filesystem::remove_all(dir);
}
