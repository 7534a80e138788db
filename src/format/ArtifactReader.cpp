#include "format/ArtifactReader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <msgpack.hpp>
#include <zstd.h>

#include "core/Fd.hpp"

namespace memtrack {
namespace {

// msgpack allocates a map's or array's slots as soon as it reads the header, so a corrupt header
// claiming 2^32 entries would exhaust memory before any check of ours runs. An event has at most
// 8 keys; the rest is generous room for keys a newer writer might add.
const msgpack::unpack_limit kLimits(/*array=*/64, /*map=*/64, /*str=*/4096, /*bin=*/4096,
                                    /*ext=*/4096, /*depth=*/4);

Error corrupt_event(uint64_t offset, std::string reason) {
    return Error{fmt::format("corrupt event at decompressed offset {}", offset), {}, 0, std::move(reason)};
}

Error corrupt_zstd(uint64_t offset, std::string reason) {
    return Error{fmt::format("corrupt zstd stream at compressed offset {}", offset), {}, 0, std::move(reason)};
}

std::string_view type_name(msgpack::type::object_type t) {
    switch (t) {
        case msgpack::type::NIL: return "nil";
        case msgpack::type::BOOLEAN: return "bool";
        case msgpack::type::POSITIVE_INTEGER: return "uint";
        case msgpack::type::NEGATIVE_INTEGER: return "negative int";
        case msgpack::type::FLOAT32: return "float32";
        case msgpack::type::FLOAT64: return "float64";
        case msgpack::type::STR: return "str";
        case msgpack::type::BIN: return "bin";
        case msgpack::type::ARRAY: return "array";
        case msgpack::type::MAP: return "map";
        case msgpack::type::EXT: return "ext";
    }
    return "unknown";
}

enum Key { kPid, kTid, kTimestamp, kAddr, kType, kOldAddr, kSize, kStackHash, kKeyCount };
constexpr std::array<std::string_view, kKeyCount> kKeyNames{
    "pid", "tid", "timestamp", "addr", "type", "old_addr", "size", "stack_hash"};

std::optional<std::string> get_u64(const msgpack::object& v, Key key, uint64_t& out) {
    if (v.type != msgpack::type::POSITIVE_INTEGER)
        return fmt::format("key '{}': expected uint, found {}", kKeyNames[key], type_name(v.type));
    out = v.via.u64;
    return std::nullopt;
}

std::optional<std::string> get_i32(const msgpack::object& v, Key key, int32_t& out) {
    if (v.type == msgpack::type::POSITIVE_INTEGER) {
        if (v.via.u64 > uint64_t(std::numeric_limits<int32_t>::max()))
            return fmt::format("key '{}': {} does not fit in i32", kKeyNames[key], v.via.u64);
        out = int32_t(v.via.u64);
        return std::nullopt;
    }
    if (v.type == msgpack::type::NEGATIVE_INTEGER) {
        if (v.via.i64 < int64_t(std::numeric_limits<int32_t>::min()))
            return fmt::format("key '{}': {} does not fit in i32", kKeyNames[key], v.via.i64);
        out = int32_t(v.via.i64);
        return std::nullopt;
    }
    return fmt::format("key '{}': expected int, found {}", kKeyNames[key], type_name(v.type));
}

// Fills `e` from one decoded value; returns why it is not an event otherwise.
std::optional<std::string> to_event(const msgpack::object& o, Event& e) {
    if (o.type != msgpack::type::MAP) return fmt::format("expected a map, found {}", type_name(o.type));
    std::array<bool, kKeyCount> seen{};
    std::string_view type;
    uint64_t old_addr = 0;
    uint64_t size = 0;
    uint64_t stack_hash = 0;
    bool old_addr_nil = false;

    for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object& k = o.via.map.ptr[i].key;
        const msgpack::object& v = o.via.map.ptr[i].val;
        if (k.type != msgpack::type::STR) return fmt::format("map key is {}, not str", type_name(k.type));
        const std::string_view name(k.via.str.ptr, k.via.str.size);
        size_t key = 0;
        while (key < kKeyCount && kKeyNames[key] != name) ++key;
        if (key == kKeyCount) continue;  // the runner ignores keys it does not know
        if (seen[key]) return fmt::format("duplicate key '{}'", name);
        seen[key] = true;

        std::optional<std::string> bad;
        switch (Key(key)) {
            case kPid: bad = get_i32(v, kPid, e.pid); break;
            case kTid: bad = get_i32(v, kTid, e.tid); break;
            case kTimestamp: bad = get_u64(v, kTimestamp, e.timestamp); break;
            case kAddr: bad = get_u64(v, kAddr, e.addr); break;
            case kType:
                if (v.type != msgpack::type::STR)
                    bad = fmt::format("key 'type': expected str, found {}", type_name(v.type));
                else
                    type = std::string_view(v.via.str.ptr, v.via.str.size);
                break;
            case kOldAddr:
                // The runner reads old_addr as an Option, so nil means "unknown" there too.
                if (v.type == msgpack::type::NIL)
                    old_addr_nil = true;
                else
                    bad = get_u64(v, kOldAddr, old_addr);
                break;
            case kSize: bad = get_u64(v, kSize, size); break;
            case kStackHash: bad = get_u64(v, kStackHash, stack_hash); break;
            case kKeyCount: break;
        }
        if (bad) return bad;
    }

    for (Key required : {kPid, kTid, kTimestamp, kAddr, kType})
        if (!seen[required]) return fmt::format("missing key '{}'", kKeyNames[required]);
    const std::optional<EventKind> kind = kind_from_artifact_name(type);
    if (!kind) return fmt::format("unknown type '{}'", type);
    e.kind = *kind;
    if (e.kind != EventKind::Free) {
        if (!seen[kSize]) return fmt::format("missing key 'size' for {}", type);
        e.size = size;
    }
    if (e.kind == EventKind::Realloc && seen[kOldAddr] && !old_addr_nil) e.old_addr = old_addr;
    if (is_allocation(e.kind)) e.stack_hash = stack_hash;
    return std::nullopt;
}

struct DCtxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

// Decompressed bytes not yet decoded, and where they sit in the decompressed stream.
class ValueDecoder {
public:
    explicit ValueDecoder(const std::function<void(const Event&)>& on_event) : on_event_(on_event) {}

    // Appends decompressed bytes and delivers every event now complete.
    std::optional<Error> feed(const char* data, size_t len) {
        pending_.append(data, len);
        size_t pos = 0;
        std::optional<Error> err;
        while (pos < pending_.size()) {
            size_t next = pos;
            msgpack::object_handle oh;
            try {
                oh = msgpack::unpack(pending_.data(), pending_.size(), next, nullptr, nullptr, kLimits);
            } catch (const msgpack::insufficient_bytes&) {
                // The value continues in the next decompressed chunk; parse it again from its
                // start then. Values are small next to a chunk, so re-parsing costs little.
                break;
            } catch (const msgpack::unpack_error& ex) {
                err = corrupt_event(base_ + pos, fmt::format("invalid MessagePack: {}", ex.what()));
                break;
            }
            Event e;
            if (auto bad = to_event(oh.get(), e)) {
                err = corrupt_event(base_ + pos, std::move(*bad));
                break;
            }
            on_event_(e);
            ++count_;
            pos = next;
        }
        pending_.erase(0, pos);
        base_ += pos;
        return err;
    }

    // Bytes left over at the end of the stream: the start of a value that never ended.
    std::optional<Error> finish() const {
        if (pending_.empty()) return std::nullopt;
        return corrupt_event(base_, fmt::format("value cut short by the end of the stream ({} bytes left)",
                                                pending_.size()));
    }

    uint64_t count() const { return count_; }

private:
    const std::function<void(const Event&)>& on_event_;
    std::string pending_;
    uint64_t base_ = 0;  // decompressed offset of pending_[0]
    uint64_t count_ = 0;
};

}  // namespace

Result<uint64_t> read_artifact(const std::string& path, const std::function<void(const Event&)>& on_event) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) return Error{"ZSTD_createDCtx", path, ENOMEM, {}};

    std::vector<char> in(ZSTD_DStreamInSize());
    std::vector<char> out(ZSTD_DStreamOutSize());
    ValueDecoder values(on_event);
    uint64_t file_offset = 0;  // compressed bytes read so far
    uint64_t frame_start = 0;
    bool in_frame = false;

    // Runs the decompressor over `input` (empty at the end of the file, to drain what it holds)
    // and decodes what comes out.
    auto decompress = [&](ZSTD_inBuffer& input, uint64_t input_offset) -> std::optional<Error> {
        for (;;) {
            const size_t before = input.pos;
            ZSTD_outBuffer output{out.data(), out.size(), 0};
            const size_t ret = ZSTD_decompressStream(dctx.get(), &output, &input);
            if (ZSTD_isError(ret)) return corrupt_zstd(input_offset + input.pos, ZSTD_getErrorName(ret));
            if (!in_frame && input.pos > before) {
                in_frame = true;
                frame_start = input_offset + before;
            }
            // zstd stops at each frame's end and returns 0 there, having flushed all its output.
            if (ret == 0) in_frame = false;
            if (output.pos > 0)
                if (auto err = values.feed(out.data(), output.pos)) return err;
            // A full output buffer may mean more is waiting inside zstd, even with no input left.
            if (input.pos == input.size && output.pos < output.size) return std::nullopt;
            if (input.size == 0 && output.pos == 0) return std::nullopt;
        }
    };

    for (;;) {
        const ssize_t n = ::read(fd.get(), in.data(), in.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("read", path);
        }
        if (n == 0) break;
        ZSTD_inBuffer input{in.data(), size_t(n), 0};
        if (auto err = decompress(input, file_offset)) return *err;
        file_offset += uint64_t(n);
    }

    if (file_offset == 0) return Error{"empty artifact (0 bytes)", {}, 0, {}};
    if (in_frame) {
        ZSTD_inBuffer none{nullptr, 0, 0};
        if (auto err = decompress(none, file_offset)) return *err;
        return Error{fmt::format("truncated artifact: unfinished zstd frame at compressed offset {}", frame_start),
                     {}, 0, fmt::format("file ends at byte {}", file_offset)};
    }
    if (auto err = values.finish()) return *err;
    return values.count();
}

}  // namespace memtrack
