#include "unwind/CfiTableCache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <regex>
#include <vector>

#include <fmt/format.h>
#include <msgpack.hpp>
#include <zstd.h>

#include "symbols/ElfFile.hpp"
#include "unwind/CfiTableCheck.hpp"

namespace memtrack {
namespace {

constexpr std::string_view kMagic = "memtrack-cfi";
// Bumped when the entry's layout changes (what the rows mean is covered by memtrack's build-id).
constexpr uint32_t kVersion = 1;
constexpr std::string_view kSuffix = ".cfi";
// No table is larger: the BPF rows array holds at most 1 << 26 rows of 8 bytes.
constexpr size_t kMaxEntryBytes = size_t(1) << 30;
// Nor is an entry larger than this for a file of `file_size` bytes: its rows start at distinct
// pcs of the file's executable segments (cfi_table_fault), at most one per byte of them, and
// what else it holds (ids, paths, segments) is small. A zstd frame claiming more is refused
// before anything is allocated for it.
uint64_t max_entry_bytes(uint64_t file_size) {
    return std::min<uint64_t>(kMaxEntryBytes, 8 * file_size + (uint64_t(1) << 20));
}
// The names memtrack gives its entries and their stores in progress; prune() touches no other.
const std::regex kEntryName("[0-9a-f]+-[0-9a-f]+\\.cfi");
const std::regex kStoreName("\\.[0-9a-f]+-[0-9a-f]+\\.cfi\\.[0-9]+\\.tmp");

// What a file's entry is valid for: the file as stat(2) describes it.
struct FileStamp {
    uint64_t dev = 0, ino = 0, size = 0, mtime_ns = 0, ctime_ns = 0;
    bool exists = false;
    MSGPACK_DEFINE(dev, ino, size, mtime_ns, ctime_ns, exists);
    bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const struct stat& st) {
    auto ns = [](const timespec& t) { return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_nsec); };
    return {uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size), ns(st.st_mtim), ns(st.st_ctim), true};
}

// The separate debug file the builder would read for `build_id` (CfiTable.cpp), as it is now.
FileStamp debug_stamp(const std::string& build_id) {
    const std::string path = debug_file_path(build_id);
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
    return stamp_of(st);
}

struct Segment {
    uint64_t vaddr = 0, offset = 0, filesz = 0, memsz = 0;
    bool executable = false;
    MSGPACK_DEFINE(vaddr, offset, filesz, memsz, executable);
};

struct Entry {
    std::string magic;
    uint32_t version = 0;
    std::string memtrack_id;
    FileStamp file;
    FileStamp debug;
    std::string build_id;
    std::string debug_frame_file;
    std::vector<Segment> segments;
    msgpack::type::raw_ref rows;  // mt_unwind_row[], as the BPF array holds them
    MSGPACK_DEFINE(magic, version, memtrack_id, file, debug, build_id, debug_frame_file, segments, rows);
};

std::string entry_name(const struct stat& st) {
    return fmt::format("{:x}-{:x}{}", uint64_t(st.st_dev), uint64_t(st.st_ino), kSuffix);
}

std::string running_build_id() {
    auto self = open_elf("/proc/self/exe");
    return self ? gnu_build_id(self->elf.get()) : std::string();
}

Result<std::string> read_all(const Fd& fd, const std::string& what) {
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return errno_error("stat", what);
    if (uint64_t(st.st_size) > kMaxEntryBytes) return Error{"read", what, 0, "larger than any entry"};
    std::string data(size_t(st.st_size), '\0');
    size_t got = 0;
    while (got < data.size()) {
        const ssize_t n = ::read(fd.get(), data.data() + got, data.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno_error("read", what);
        if (n == 0) return Error{"read", what, 0, "shorter than its size"};
        got += size_t(n);
    }
    return data;
}

Result<std::string> decompress(const std::string& frame, const std::string& what, uint64_t file_size) {
    const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
        return Error{"read", what, 0, "not a cache entry (zstd frame header)"};
    if (size > max_entry_bytes(file_size))
        return Error{"read", what, 0,
                     fmt::format("rejected: its zstd frame claims {} bytes, more than any table of a {}-byte file",
                                 size, file_size)};
    std::string out(size_t(size), '\0');
    const size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
    if (ZSTD_isError(n) || n != out.size())
        return Error{"read", what, 0, fmt::format("damaged ({})", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short")};
    return out;
}

Result<std::string> compress(const std::string& data, const std::string& what) {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
    if (!cctx) return Error{"zstd", what, ENOMEM, {}};
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 1);
    std::string out(ZSTD_compressBound(data.size()), '\0');
    const size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), data.data(), data.size());
    if (ZSTD_isError(n)) return Error{"zstd", what, 0, ZSTD_getErrorName(n)};
    out.resize(n);
    return out;
}

}  // namespace

bool CfiTableCache::same_file(const struct stat& a, const struct stat& b) { return stamp_of(a) == stamp_of(b); }

std::string CfiTableCache::default_dir() {
    if (const char* d = std::getenv("MEMTRACK_CACHE_DIR"); d && *d) return d;
    if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fmt::format("{}/memtrack", d);
    if (const char* d = std::getenv("HOME"); d && *d) return fmt::format("{}/.cache/memtrack", d);
    return {};
}

Result<CfiTableCache> CfiTableCache::open(const std::string& dir) {
    std::string id = running_build_id();
    if (id.empty()) return Error{"cache folder", dir, 0, "the memtrack binary has no build-id to tell its entries apart"};
    return open(dir, std::move(id));
}

Result<CfiTableCache> CfiTableCache::open(const std::string& dir, std::string builder_id) {
    const std::string op = "cache folder";
    if (dir.empty()) return Error{op, dir, EINVAL, "no folder named"};
    // Ours alone: root writes entries there and prunes it, so no one else may choose what it is.
    auto out = OutputDir::open_private(dir);
    if (!out) return out.error();
    return CfiTableCache(std::move(out).value(), std::move(builder_id));
}

Result<std::optional<CfiTable>> CfiTableCache::find(const struct stat& st) const {
    const std::string name = entry_name(st);
    const std::string what = dir_.path_of(name);
    auto fd = dir_.open_own(name);
    if (!fd) {
        if (fd.error().err == ENOENT) return std::optional<CfiTable>();
        return fd.error();
    }
    auto frame = read_all(*fd, what);
    if (!frame) return frame.error();
    auto data = decompress(*frame, what, uint64_t(st.st_size));
    if (!data) return data.error();

    Entry e;
    msgpack::object_handle oh;
    try {
        const msgpack::unpack_limit limits(/*array=*/4096, /*map=*/0, /*str=*/4096, /*bin=*/kMaxEntryBytes,
                                           /*ext=*/0, /*depth=*/4);
        oh = msgpack::unpack(data->data(), data->size(), nullptr, nullptr, limits);
        oh.get().convert(e);
    } catch (const std::exception& ex) {
        return Error{"read", what, 0, fmt::format("damaged ({})", ex.what())};
    }
    if (e.magic != kMagic || e.version != kVersion) return Error{"read", what, 0, "not a cache entry of this version"};
    // Built by another memtrack, or from another file (or version of it): not ours to use.
    if (e.memtrack_id != builder_id_ || e.file != stamp_of(st) || e.debug != debug_stamp(e.build_id))
        return std::optional<CfiTable>();
    if (e.rows.size % sizeof(mt_unwind_row) != 0) return Error{"read", what, 0, "damaged (row bytes)"};

    // Its time says when it was last used: prune() keeps the most recently used. Best effort: a
    // failure only makes the entry look older.
    ::futimens(fd->get(), nullptr);
    CfiTable t;
    t.rows.resize(e.rows.size / sizeof(mt_unwind_row));
    std::memcpy(t.rows.data(), e.rows.ptr, e.rows.size);
    t.build_id = std::move(e.build_id);
    t.debug_frame_file = std::move(e.debug_frame_file);
    for (const Segment& s : e.segments) t.segments.push_back({s.vaddr, s.offset, s.filesz, s.memsz, s.executable});
    t.counts.rows = t.rows.size();
    if (auto why = cfi_table_fault(t, uint64_t(st.st_size))) return Error{"read", what, 0, "rejected: " + *why};
    return std::optional<CfiTable>(std::move(t));
}

Result<void> CfiTableCache::store(const struct stat& st, const CfiTable& table) const {
    const std::string name = entry_name(st);
    const std::string what = dir_.path_of(name);
    // What find() would refuse is not kept (built again each run instead, and said at -v).
    if (auto why = cfi_table_fault(table, uint64_t(st.st_size))) return Error{"store", what, 0, "not kept: " + *why};
    Entry e;
    e.magic = kMagic;
    e.version = kVersion;
    e.memtrack_id = builder_id_;
    e.file = stamp_of(st);
    e.debug = debug_stamp(table.build_id);
    e.build_id = table.build_id;
    e.debug_frame_file = table.debug_frame_file;
    for (const LoadSegment& s : table.segments) e.segments.push_back({s.vaddr, s.offset, s.filesz, s.memsz, s.executable});
    e.rows = {reinterpret_cast<const char*>(table.rows.data()), uint32_t(table.rows.size() * sizeof(mt_unwind_row))};
    msgpack::sbuffer buf;
    msgpack::pack(buf, e);
    auto frame = compress(std::string(buf.data(), buf.size()), what);
    if (!frame) return frame.error();

    // Written whole under a name of its own, then renamed over the entry: a reader (another
    // memtrack) sees the old entry or the new one, never half of one.
    const std::string tmp = fmt::format(".{}.{}.tmp", name, ::getpid());
    auto fd = dir_.create(tmp);
    if (!fd) return fd.error();
    if (auto w = write_all_bounded(fd->get(), *frame, what, 10000); !w) {
        dir_.remove(tmp);
        return w.error();
    }
    // No fsync: an entry a crash left half-written fails its checksum and is built again.
    if (::fchmod(fd->get(), 0600) != 0) {
        const Error err = errno_error("write", what);
        dir_.remove(tmp);
        return err;
    }
    if (auto r = dir_.rename(tmp, name); !r) {
        dir_.remove(tmp);
        return r.error();
    }
    if (!pruned_) {
        pruned_ = true;
        prune();
    }
    return {};
}

LoadedTable load_cfi_table(const std::string& path, const CfiTableCache* cache) {
    auto file = ObjectFile::open(path);
    if (!file) {
        LoadedTable out;
        out.table = file.error();
        return out;
    }
    return load_cfi_table(**file, cache);
}

LoadedTable load_cfi_table(const ObjectFile& file, const CfiTableCache* cache) {
    LoadedTable out;
    // The file as it was opened: what its entry is valid for.
    const struct stat& before = file.stat();
    if (!cache) {
        out.table = build_cfi_table(file);
        return out;
    }
    auto cached = cache->find(before);
    if (cached && *cached) {
        out.table = std::move(**cached);
        out.from_cache = true;
        return out;
    }
    if (!cached) out.entry_error = cached.error();
    out.table = build_cfi_table(file);
    struct stat after {};
    auto open = file.handles();
    if (!out.table || !open || ::fstat((*open)->file.fd.get(), &after) != 0 || !CfiTableCache::same_file(before, after))
        return out;
    if (auto r = cache->store(before, *out.table); !r)
        out.store_error = r.error();
    else
        out.stored = true;
    return out;
}

// Past kMaxEntries entries, the least recently used go (an entry's modification time is when
// it was last written or read).
void CfiTableCache::prune() const {
    const int fd = ::openat(dir_.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    DIR* d = ::fdopendir(fd);
    if (!d) {
        ::close(fd);
        return;
    }
    std::vector<std::pair<timespec, std::string>> entries;
    const time_t day_ago = ::time(nullptr) - 24 * 3600;
    while (const dirent* de = ::readdir(d)) {
        const std::string n = de->d_name;
        struct stat st {};
        // Only what memtrack wrote: regular files of ours under the names it gives.
        if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != ::geteuid())
            continue;
        // What a store cut short left (store() writes under such names, then renames).
        if (std::regex_match(n, kStoreName)) {
            if (st.st_mtim.tv_sec < day_ago) dir_.remove(n);
            continue;
        }
        if (std::regex_match(n, kEntryName)) entries.emplace_back(st.st_mtim, n);
    }
    ::closedir(d);
    if (entries.size() <= kMaxEntries) return;
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return a.first.tv_sec != b.first.tv_sec ? a.first.tv_sec < b.first.tv_sec : a.first.tv_nsec < b.first.tv_nsec;
    });
    for (size_t i = 0; i + kMaxEntries < entries.size(); ++i) dir_.remove(entries[i].second);
}

}  // namespace memtrack
