// CfiTableCache: an entry gives back exactly the table stored, and only for the file, the
// builder and the folder it was made for; damaged, foreign or unsafe entries are never used.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ctime>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>

#include "../common/TempDir.hpp"
#include "symbols/ElfFile.hpp"
#include "unwind/CfiTableCache.hpp"

using namespace memtrack;
using memtrack::testsupport::TempDir;

namespace {

// A copy of the C library (a real object with CFI) that a test may touch or replace.
std::string copy_of_libc(const TempDir& tmp, const std::string& name) {
    const std::string path = tmp / name;
    std::filesystem::copy_file("/lib/x86_64-linux-gnu/libc.so.6", path, std::filesystem::copy_options::overwrite_existing);
    return path;
}

struct stat stat_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st;
}

CfiTable built(const std::string& path) {
    auto t = build_cfi_table(path);
    REQUIRE_MESSAGE(t.ok(), (t.ok() ? "" : t.error().message()));
    REQUIRE(t->rows.size() > 1);
    return std::move(t).value();
}

CfiTableCache opened(const std::string& dir, const std::string& builder = "builder-a") {
    auto c = CfiTableCache::open(dir, builder);
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
    return std::move(c).value();
}

bool same_rows(const CfiTable& a, const CfiTable& b) {
    return a.rows.size() == b.rows.size() &&
           std::memcmp(a.rows.data(), b.rows.data(), a.rows.size() * sizeof(mt_unwind_row)) == 0;
}

// The one entry in `dir`.
std::string only_entry(const std::string& dir) {
    std::string found;
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".cfi") continue;
        found = e.path().string();
        ++n;
    }
    REQUIRE(n == 1);
    return found;
}

// A cache folder holding one entry: that of a copy of the C library.
struct StoredEntry {
    TempDir tmp;
    std::string lib = copy_of_libc(tmp, "libc-copy.so");
    CfiTableCache cache = opened(tmp / "cache");
    std::string entry = stored_entry(cache, lib, tmp / "cache");

    static std::string stored_entry(const CfiTableCache& cache, const std::string& lib, const std::string& dir) {
        REQUIRE(cache.store(stat_of(lib), built(lib)).ok());
        return only_entry(dir);
    }
};

}  // namespace

TEST_CASE("cfi cache: an entry gives back the table stored, rows, segments and build-id alike") {
    TempDir tmp;
    const std::string lib = copy_of_libc(tmp, "libc-copy.so");
    const CfiTable table = built(lib);
    const CfiTableCache cache = opened(tmp / "cache");
    const struct stat st = stat_of(lib);

    auto before = cache.find(st);
    REQUIRE(before.ok());
    CHECK_FALSE(before->has_value());  // nothing stored yet
    REQUIRE(cache.store(st, table).ok());
    auto got = cache.find(st);
    REQUIRE(got.ok());
    REQUIRE(got->has_value());
    const CfiTable& back = **got;
    CHECK(same_rows(back, table));
    CHECK(back.build_id == table.build_id);
    CHECK(!back.build_id.empty());
    CHECK(back.debug_frame_file == table.debug_frame_file);
    REQUIRE(back.segments.size() == table.segments.size());
    for (size_t i = 0; i < table.segments.size(); ++i) {
        CHECK(back.segments[i].vaddr == table.segments[i].vaddr);
        CHECK(back.segments[i].offset == table.segments[i].offset);
        CHECK(back.segments[i].filesz == table.segments[i].filesz);
        CHECK(back.segments[i].memsz == table.segments[i].memsz);
        CHECK(back.segments[i].executable == table.segments[i].executable);
    }
    // The folder and the entry are the user's alone.
    CHECK((stat_of(tmp / "cache").st_mode & 0777) == 0700);
    CHECK((stat_of(only_entry(tmp / "cache")).st_mode & 0777) == 0600);
}

TEST_CASE("cfi cache: a file changed, replaced or another builder's entry is a miss") {
    TempDir tmp;
    const std::string lib = copy_of_libc(tmp, "libc-copy.so");
    const CfiTable table = built(lib);
    const CfiTableCache cache = opened(tmp / "cache");
    REQUIRE(cache.store(stat_of(lib), table).ok());

    SUBCASE("another memtrack binary built it") {
        auto got = opened(tmp / "cache", "builder-b").find(stat_of(lib));
        REQUIRE(got.ok());
        CHECK_FALSE(got->has_value());
    }
    SUBCASE("the file was modified in place (its times change)") {
        const timespec later[2] = {{0, UTIME_NOW}, {12345, 0}};
        REQUIRE(::utimensat(AT_FDCWD, lib.c_str(), later, 0) == 0);
        auto got = cache.find(stat_of(lib));
        REQUIRE(got.ok());
        CHECK_FALSE(got->has_value());
    }
    SUBCASE("the file was replaced by another one under its name") {
        const std::string other = copy_of_libc(tmp, "libc-other.so");
        std::filesystem::rename(other, lib);
        auto got = cache.find(stat_of(lib));
        REQUIRE(got.ok());
        CHECK_FALSE(got->has_value());
    }
    SUBCASE("its size differs (what stat says is compared whole)") {
        struct stat st = stat_of(lib);
        st.st_size += 1;
        auto got = cache.find(st);
        REQUIRE(got.ok());
        CHECK_FALSE(got->has_value());
    }
}

TEST_CASE("cfi cache: a separate debug file that appears (or goes) since the entry was stored is a miss") {
    // The debug file lives where Debian installs them, by build-id: a root-only place.
    if (::geteuid() != 0) {
        MESSAGE("SKIP: writing under /usr/lib/debug needs root");
        return;
    }
    const char* nofp = std::getenv("CFI_NOFP_BIN");
    REQUIRE_MESSAGE(nofp != nullptr, "CFI_NOFP_BIN is not set (meson test sets it)");
    TempDir tmp;
    const std::string bin = tmp / "nofp";
    std::filesystem::copy_file(nofp, bin);
    const CfiTable table = built(bin);
    const std::string debug = debug_file_path(table.build_id);
    REQUIRE(!debug.empty());
    REQUIRE_FALSE(std::filesystem::exists(debug));  // the test program has no debug file installed
    const CfiTableCache cache = opened(tmp / "cache");
    REQUIRE(cache.store(stat_of(bin), table).ok());

    const std::filesystem::path folder = std::filesystem::path(debug).parent_path();
    const bool new_folder = std::filesystem::create_directories(folder);
    std::filesystem::copy_file(bin, debug);
    auto with_debug = cache.find(stat_of(bin));
    std::filesystem::remove(debug);
    if (new_folder) std::filesystem::remove(folder);  // the machine as it was
    REQUIRE(with_debug.ok());
    CHECK_FALSE(with_debug->has_value());  // built without it: built again
    auto without = cache.find(stat_of(bin));  // gone again: the entry holds
    REQUIRE(without.ok());
    CHECK(without->has_value());
}

TEST_CASE("cfi cache: a damaged entry is an error, never a table") {
    StoredEntry stored;
    const auto& [tmp, lib, cache, entry] = stored;
    const auto size = std::filesystem::file_size(entry);

    SUBCASE("a byte in its middle flipped: the checksum fails") {
        std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(std::streamoff(size / 2));
        char c = 0;
        f.get(c);
        f.seekp(std::streamoff(size / 2));
        f.put(char(c ^ 0x5a));
    }
    SUBCASE("cut short") { std::filesystem::resize_file(entry, size / 2); }
    SUBCASE("not zstd at all") { std::ofstream(entry, std::ios::trunc) << "not an entry"; }
    auto got = cache.find(stat_of(lib));
    REQUIRE_FALSE(got.ok());
    CHECK(got.error().message().find(entry) != std::string::npos);
}

TEST_CASE("cfi cache: entries others could have written are not read, nor a folder others can write") {
    StoredEntry stored;
    const auto& [tmp, lib, cache, entry] = stored;

    SUBCASE("a group- and world-writable entry") {
        REQUIRE(::chmod(entry.c_str(), 0666) == 0);
        auto got = cache.find(stat_of(lib));
        REQUIRE_FALSE(got.ok());
        CHECK(got.error().message().find("someone else can write it") != std::string::npos);
    }
    SUBCASE("an entry that is a symbolic link") {
        const std::string target = tmp / "elsewhere.cfi";
        std::filesystem::rename(entry, target);
        std::filesystem::create_symlink(target, entry);
        auto got = cache.find(stat_of(lib));
        REQUIRE_FALSE(got.ok());
        CHECK(got.error().message().find("symbolic link") != std::string::npos);
    }
    SUBCASE("a folder anyone can write, not sticky") {
        const std::string open_dir = tmp / "open";
        std::filesystem::create_directory(open_dir);
        REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
        auto c = CfiTableCache::open(open_dir, "builder-a");
        REQUIRE_FALSE(c.ok());
        CHECK(c.error().message().find("someone else can write it") != std::string::npos);
    }
}

TEST_CASE("cfi cache: past kMaxEntries entries, the first store removes the least recently used, and old cut stores") {
    TempDir tmp;
    const std::string dir = tmp / "cache";
    const std::string lib = copy_of_libc(tmp, "libc-copy.so");
    const CfiTable table = built(lib);
    opened(dir);
    const size_t extra = 3;
    // Named as memtrack names entries: <device>-<inode>.cfi in hex.
    auto entry = [&](size_t i) { return dir + "/1-" + fmt::format("{:x}", i) + ".cfi"; };
    for (size_t i = 0; i < CfiTableCache::kMaxEntries + extra; ++i) {
        const std::string name = entry(i);
        std::ofstream(name) << "x";
        // Entry i was used at time 1000 + i.
        const timespec t[2] = {{0, UTIME_NOW}, {time_t(1000 + i), 0}};
        REQUIRE(::utimensat(AT_FDCWD, name.c_str(), t, 0) == 0);
    }
    std::ofstream(dir + "/unrelated.txt") << "kept";
    // A store cut short two days ago, and one that may still be writing.
    const std::string stale = dir + "/.1-ffff.cfi.1.tmp", fresh = dir + "/.1-fffe.cfi.2.tmp";
    std::ofstream(stale) << "x";
    const timespec old_time[2] = {{0, UTIME_NOW}, {::time(nullptr) - 2 * 24 * 3600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, stale.c_str(), old_time, 0) == 0);
    std::ofstream(fresh) << "x";
    auto count_entries = [&] {
        size_t n = 0;
        for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".cfi";
        return n;
    };

    // Opening and reading trim nothing.
    const CfiTableCache cache = opened(dir);
    auto miss = cache.find(stat_of(lib));
    REQUIRE(miss.ok());
    CHECK(count_entries() == CfiTableCache::kMaxEntries + extra);
    CHECK(std::filesystem::exists(stale));

    // The first store does: its own entry is the newest, so extra + 1 of the oldest go.
    REQUIRE(cache.store(stat_of(lib), table).ok());
    CHECK_FALSE(std::filesystem::exists(stale));
    CHECK(std::filesystem::exists(fresh));
    CHECK(count_entries() == CfiTableCache::kMaxEntries);
    for (size_t i = 0; i <= extra; ++i) CHECK_FALSE(std::filesystem::exists(entry(i)));
    CHECK(std::filesystem::exists(entry(extra + 1)));
    auto hit = cache.find(stat_of(lib));
    REQUIRE(hit.ok());
    CHECK(hit->has_value());
    CHECK(std::filesystem::exists(dir + "/unrelated.txt"));
}

TEST_CASE("cfi cache: the default folder follows MEMTRACK_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
    struct Env {
        const char* name;
        std::string saved;
        bool had;
        explicit Env(const char* n) : name(n), had(std::getenv(n) != nullptr) {
            if (had) saved = std::getenv(n);
        }
        ~Env() {
            if (had)
                ::setenv(name, saved.c_str(), 1);
            else
                ::unsetenv(name);
        }
    } a("MEMTRACK_CACHE_DIR"), b("XDG_CACHE_HOME"), c("HOME");
    ::setenv("MEMTRACK_CACHE_DIR", "/m", 1);
    ::setenv("XDG_CACHE_HOME", "/x", 1);
    ::setenv("HOME", "/h", 1);
    CHECK(CfiTableCache::default_dir() == "/m");
    ::unsetenv("MEMTRACK_CACHE_DIR");
    CHECK(CfiTableCache::default_dir() == "/x/memtrack");
    ::unsetenv("XDG_CACHE_HOME");
    CHECK(CfiTableCache::default_dir() == "/h/.cache/memtrack");
    ::unsetenv("HOME");
    CHECK(CfiTableCache::default_dir().empty());
}

namespace {

// The cache folder `dir` cannot be opened, for `why`, said in one line, and `untouched` (where a
// link would have led) holds nothing new.
void check_refused(const std::string& dir, const std::string& why, const std::string& untouched = {}) {
    auto c = CfiTableCache::open(dir, "builder-a");
    REQUIRE_FALSE(c.ok());
    const std::string m = c.error().message();
    CHECK_MESSAGE(m.find(why) != std::string::npos, m);
    CHECK(m.find('\n') == std::string::npos);
    if (!untouched.empty()) CHECK(std::filesystem::is_empty(untouched));
}

bool is_root() { return ::geteuid() == 0; }
constexpr uid_t kNobody = 65534;

}  // namespace

TEST_CASE("cfi cache: the folder is reached without following a link others could have planted") {
    TempDir tmp;
    // A folder like /tmp: anyone can make names there.
    const std::string shared = tmp / "shared";
    std::filesystem::create_directory(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    const std::string target = tmp / "target";
    std::filesystem::create_directory(target);
    REQUIRE(::chmod(target.c_str(), 0700) == 0);

    SUBCASE("the folder itself is a link in a folder anyone can write") {
        std::filesystem::create_directory_symlink(target, shared + "/cache");
        check_refused(shared + "/cache", "symbolic link", target);
    }
    SUBCASE("a component on the way is a link in a folder anyone can write") {
        std::filesystem::create_directory_symlink(target, shared + "/link");
        check_refused(shared + "/link/cache", "symbolic link", target);
    }
    SUBCASE("a link in a folder only we can write is ours, and followed") {
        std::filesystem::create_directory_symlink(target, tmp / "alias");
        auto c = CfiTableCache::open(tmp / "alias/cache", "builder-a");
        REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
        CHECK(std::filesystem::is_directory(target + "/cache"));
    }
}

TEST_CASE("cfi cache: a folder someone else owns or can write is refused, sticky or not") {
    TempDir tmp;
    const std::string dir = tmp / "cache";
    std::filesystem::create_directory(dir);
    SUBCASE("world-writable and sticky, as /tmp is") {
        REQUIRE(::chmod(dir.c_str(), 01777) == 0);
        check_refused(dir, "someone else can write it");
    }
    SUBCASE("group-writable") {
        REQUIRE(::chmod(dir.c_str(), 0770) == 0);
        check_refused(dir, "someone else can write it");
    }
    SUBCASE("another user's, sticky") {
        if (!is_root()) {
            MESSAGE("SKIP: giving a folder to another user needs root");
            return;
        }
        REQUIRE(::chown(dir.c_str(), kNobody, kNobody) == 0);
        REQUIRE(::chmod(dir.c_str(), 01755) == 0);
        check_refused(dir, "belongs to uid 65534");
    }
}

TEST_CASE("cfi cache: pruning removes only what memtrack wrote there") {
    TempDir tmp;
    const std::string dir = tmp / "cache";
    const std::string lib = copy_of_libc(tmp, "libc-copy.so");
    const CfiTable table = built(lib);
    const CfiTableCache cache = opened(dir);
    const timespec old_time[2] = {{0, UTIME_NOW}, {::time(nullptr) - 2 * 24 * 3600, 0}};
    auto plant = [&](const std::string& name) {
        const std::string path = dir + "/" + name;
        std::ofstream(path) << "not memtrack's";
        REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old_time, 0) == 0);
        return path;
    };
    // Old, and named as a cut store would be by someone's guess, but not by memtrack.
    const std::string other_tmp = plant(".notes.tmp");
    const std::string other_cfi_tmp = plant(".my.cfi.tmp");
    // Named as memtrack names a cut store, but another user's file.
    const std::string foreign = plant(".1-2.cfi.3.tmp");
    if (is_root()) REQUIRE(::chown(foreign.c_str(), kNobody, kNobody) == 0);
    REQUIRE(cache.store(stat_of(lib), table).ok());  // the first store prunes
    CHECK(std::filesystem::exists(other_tmp));
    CHECK(std::filesystem::exists(other_cfi_tmp));
    if (is_root()) CHECK(std::filesystem::exists(foreign));
    else CHECK_FALSE(std::filesystem::exists(foreign));  // ours after all: a cut store of ours
}

namespace {

// Rewrites the entry file `entry`, which holds `table`'s rows, with `mutate` applied to its rows
// and a fresh checksum: damage a checksum cannot see.
template <typename Mutate>
void rewrite_rows(const std::string& entry, const CfiTable& table, Mutate&& mutate) {
    std::ifstream in(entry, std::ios::binary);
    const std::string frame((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string data(ZSTD_getFrameContentSize(frame.data(), frame.size()), '\0');
    REQUIRE(ZSTD_decompress(data.data(), data.size(), frame.data(), frame.size()) == data.size());
    const std::string_view rows(reinterpret_cast<const char*>(table.rows.data()), table.rows.size() * sizeof(mt_unwind_row));
    const size_t at = data.find(rows);
    REQUIRE(at != std::string::npos);
    std::vector<mt_unwind_row> changed = table.rows;
    mutate(changed);
    std::memcpy(data.data() + at, changed.data(), rows.size());
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
    std::string out(ZSTD_compressBound(data.size()), '\0');
    const size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), data.data(), data.size());
    REQUIRE_FALSE(ZSTD_isError(n));
    out.resize(n);
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << out;
}

}  // namespace

TEST_CASE("cfi cache: an entry whose rows could not come from the object is rejected, and built again") {
    StoredEntry stored;
    const auto& [tmp, lib, cache, entry] = stored;
    const CfiTable table = built(lib);
    std::string why;
    SUBCASE("rows not sorted") {
        rewrite_rows(entry, table, [](auto& rows) { std::swap(rows[10], rows[11]); });
        why = "is not sorted after";
    }
    SUBCASE("two rows at one pc") {
        rewrite_rows(entry, table, [](auto& rows) { rows[11].pc = rows[10].pc; });
        why = "overlaps";
    }
    SUBCASE("a row past the object's code") {
        rewrite_rows(entry, table, [](auto& rows) { rows.back().pc = 0xfff00000u; });
        why = "points outside the object's code";
    }
    SUBCASE("a row of no known kind") {
        rewrite_rows(entry, table, [](auto& rows) { rows[5].kind = 0x0f; });
        why = "unknown kind";
    }
    auto got = cache.find(stat_of(lib));
    REQUIRE_FALSE(got.ok());
    const std::string m = got.error().message();
    CHECK_MESSAGE(m.find("rejected") != std::string::npos, m);
    CHECK_MESSAGE(m.find(why) != std::string::npos, m);
    CHECK(m.find(entry) != std::string::npos);

    // The one route to a table says so (UnwindTables prints it), builds, and replaces the entry.
    LoadedTable first = load_cfi_table(lib, &cache);
    REQUIRE(first.table.ok());
    CHECK(same_rows(*first.table, table));
    CHECK_FALSE(first.from_cache);
    REQUIRE(first.entry_error.has_value());
    CHECK(first.entry_error->message().find(why) != std::string::npos);
    CHECK(first.stored);
    LoadedTable second = load_cfi_table(lib, &cache);
    CHECK(second.from_cache);
    CHECK_FALSE(second.entry_error.has_value());
}

TEST_CASE("cfi cache: a table that fails the check is not kept") {
    StoredEntry stored;
    const auto& [tmp, lib, cache, entry] = stored;
    CfiTable bad = built(lib);
    bad.segments.back().offset = uint64_t(stat_of(lib).st_size);
    bad.segments.back().filesz = 4096;
    auto refused = cache.store(stat_of(lib), bad);
    REQUIRE_FALSE(refused.ok());
    CHECK_MESSAGE(refused.error().message().find("lies outside the") != std::string::npos, refused.error().message());
}

TEST_CASE("cfi cache: a zstd frame claiming a gibibyte for a small entry is refused before allocating it") {
    StoredEntry stored;
    const auto& [tmp, lib, cache, entry] = stored;
    // A frame header (single segment, 4-byte content size = 1 GiB) and one raw 3-byte block.
    const unsigned char frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0x00, 0x00, 0x00, 0x40,
                                   0x19, 0x00, 0x00, 'a',  'b',  'c'};
    REQUIRE(ZSTD_getFrameContentSize(frame, sizeof frame) == (1ull << 30));
    std::ofstream(entry, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(frame), sizeof frame);
    auto got = cache.find(stat_of(lib));
    REQUIRE_FALSE(got.ok());
    const std::string m = got.error().message();
    CHECK_MESSAGE(m.find("claims 1073741824 bytes") != std::string::npos, m);
}
