#include "format/StacksFile.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <msgpack.hpp>
#include <zstd.h>

#include "core/Fd.hpp"

namespace memtrack {
namespace {

// ---- writing ----

struct StringSink {
    std::string& out;
    void write(const char* data, size_t len) { out.append(data, len); }
};

void pack_string(msgpack::packer<StringSink>& pk, std::string_view s) {
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// ---- reading ----

// msgpack allocates an array's slots when it reads the header, so these bound what a corrupt
// header can make it allocate. Real stacks are at most a few hundred frames once inlined frames
// are added; C++ names can be long, but not a mebibyte.
const msgpack::unpack_limit kLimits(/*array=*/8192, /*map=*/64, /*str=*/1 << 20, /*bin=*/4096,
                                    /*ext=*/4096, /*depth=*/8);

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

std::optional<std::string> get_u64(const msgpack::object& v, std::string_view key, uint64_t& out) {
    if (v.type != msgpack::type::POSITIVE_INTEGER)
        return fmt::format("key '{}': expected uint, found {}", key, type_name(v.type));
    out = v.via.u64;
    return std::nullopt;
}

std::optional<std::string> get_u32(const msgpack::object& v, std::string_view key, uint32_t& out) {
    uint64_t wide = 0;
    if (auto bad = get_u64(v, key, wide)) return bad;
    if (wide > std::numeric_limits<uint32_t>::max())
        return fmt::format("key '{}': {} does not fit in u32", key, wide);
    out = uint32_t(wide);
    return std::nullopt;
}

std::optional<std::string> get_i32(const msgpack::object& v, std::string_view key, int32_t& out) {
    if (v.type == msgpack::type::POSITIVE_INTEGER) {
        if (v.via.u64 > uint64_t(std::numeric_limits<int32_t>::max()))
            return fmt::format("key '{}': {} does not fit in i32", key, v.via.u64);
        out = int32_t(v.via.u64);
        return std::nullopt;
    }
    if (v.type == msgpack::type::NEGATIVE_INTEGER) {
        if (v.via.i64 < int64_t(std::numeric_limits<int32_t>::min()))
            return fmt::format("key '{}': {} does not fit in i32", key, v.via.i64);
        out = int32_t(v.via.i64);
        return std::nullopt;
    }
    return fmt::format("key '{}': expected int, found {}", key, type_name(v.type));
}

std::optional<std::string> get_str(const msgpack::object& v, std::string_view key, std::string& out) {
    if (v.type != msgpack::type::STR)
        return fmt::format("key '{}': expected str, found {}", key, type_name(v.type));
    out.assign(v.via.str.ptr, v.via.str.size);
    return std::nullopt;
}

std::optional<std::string> get_bool(const msgpack::object& v, std::string_view key, bool& out) {
    if (v.type != msgpack::type::BOOLEAN)
        return fmt::format("key '{}': expected bool, found {}", key, type_name(v.type));
    out = v.via.boolean;
    return std::nullopt;
}

// Calls `on_key(index, value)` for each key of map `o` found in `names`; unknown keys are
// skipped, duplicates and non-string keys rejected. `seen` says which keys were there.
template <size_t N, typename OnKey>
std::optional<std::string> for_each_key(const msgpack::object& o, const std::array<std::string_view, N>& names,
                                        std::array<bool, N>& seen, OnKey&& on_key) {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object& k = o.via.map.ptr[i].key;
        if (k.type != msgpack::type::STR) return fmt::format("map key is {}, not str", type_name(k.type));
        const std::string_view name(k.via.str.ptr, k.via.str.size);
        size_t key = 0;
        while (key < N && names[key] != name) ++key;
        if (key == N) continue;
        if (seen[key]) return fmt::format("duplicate key '{}'", name);
        seen[key] = true;
        if (auto bad = on_key(key, o.via.map.ptr[i].val)) return bad;
    }
    return std::nullopt;
}

enum FrameKey { kIp, kModule, kBuildId, kFunction, kFile, kLine, kInlined, kFrameKeyCount };
constexpr std::array<std::string_view, kFrameKeyCount> kFrameKeys{"ip",   "module", "build_id", "function",
                                                                  "file", "line",   "inlined"};

std::optional<std::string> to_frame(const msgpack::object& o, Frame& f) {
    if (o.type != msgpack::type::MAP) return fmt::format("expected a map, found {}", type_name(o.type));
    std::array<bool, kFrameKeyCount> seen{};
    auto bad = for_each_key(o, kFrameKeys, seen, [&](size_t key, const msgpack::object& v) {
        const std::string_view name = kFrameKeys[key];
        switch (FrameKey(key)) {
            case kIp: return get_u64(v, name, f.ip);
            case kModule: return get_str(v, name, f.module);
            case kBuildId: return get_str(v, name, f.build_id);
            case kFunction: return get_str(v, name, f.function);
            case kFile: return get_str(v, name, f.file);
            case kLine: return get_u32(v, name, f.line);
            case kInlined: return get_bool(v, name, f.inlined);
            case kFrameKeyCount: break;
        }
        return std::optional<std::string>{};
    });
    if (bad) return bad;
    if (!seen[kIp]) return std::string("missing key 'ip'");
    return std::nullopt;
}

enum StackKey { kHash, kPid, kFrames, kStackKeyCount };
constexpr std::array<std::string_view, kStackKeyCount> kStackKeys{"hash", "pid", "frames"};

struct Stack {
    uint64_t hash = 0;
    int32_t pid = 0;
    std::vector<Frame> frames;
};

std::optional<std::string> to_stack(const msgpack::object& o, Stack& s) {
    if (o.type != msgpack::type::MAP) return fmt::format("expected a map, found {}", type_name(o.type));
    std::array<bool, kStackKeyCount> seen{};
    auto bad = for_each_key(o, kStackKeys, seen, [&](size_t key, const msgpack::object& v) -> std::optional<std::string> {
        switch (StackKey(key)) {
            case kHash: return get_u64(v, "hash", s.hash);
            case kPid: return get_i32(v, "pid", s.pid);
            case kFrames:
                if (v.type != msgpack::type::ARRAY)
                    return fmt::format("key 'frames': expected array, found {}", type_name(v.type));
                s.frames.resize(v.via.array.size);
                for (uint32_t i = 0; i < v.via.array.size; ++i)
                    if (auto why = to_frame(v.via.array.ptr[i], s.frames[i]))
                        return fmt::format("frame {}: {}", i, *why);
                return std::nullopt;
            case kStackKeyCount: break;
        }
        return std::nullopt;
    });
    if (bad) return bad;
    for (StackKey required : {kHash, kPid, kFrames})
        if (!seen[required]) return fmt::format("missing key '{}'", kStackKeys[required]);
    return std::nullopt;
}

Error corrupt_stack(uint64_t offset, std::string reason) {
    return Error{fmt::format("corrupt stack at decompressed offset {}", offset), {}, 0, std::move(reason)};
}

Error corrupt_zstd(uint64_t offset, std::string reason) {
    return Error{fmt::format("corrupt zstd stream at compressed offset {}", offset), {}, 0, std::move(reason)};
}

struct DCtxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

using OnStack = std::function<void(uint64_t, int32_t, std::vector<Frame>&&)>;

// Decompressed bytes not yet decoded, and where they sit in the decompressed stream. The same
// scheme as the artifact reader: a value cut by a chunk boundary is parsed again from its start
// once the next chunk has arrived.
class ValueDecoder {
public:
    explicit ValueDecoder(const OnStack& on_stack) : on_stack_(on_stack) {}

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
                break;
            } catch (const msgpack::unpack_error& ex) {
                err = corrupt_stack(base_ + pos, fmt::format("invalid MessagePack: {}", ex.what()));
                break;
            }
            Stack s;
            if (auto bad = to_stack(oh.get(), s)) {
                err = corrupt_stack(base_ + pos, std::move(*bad));
                break;
            }
            on_stack_(s.hash, s.pid, std::move(s.frames));
            ++count_;
            pos = next;
        }
        pending_.erase(0, pos);
        base_ += pos;
        return err;
    }

    std::optional<Error> finish() const {
        if (pending_.empty()) return std::nullopt;
        return corrupt_stack(base_, fmt::format("value cut short by the end of the stream ({} bytes left)",
                                                pending_.size()));
    }

    uint64_t count() const { return count_; }

private:
    const OnStack& on_stack_;
    std::string pending_;
    uint64_t base_ = 0;  // decompressed offset of pending_[0]
    uint64_t count_ = 0;
};

}  // namespace

void encode_stack(uint64_t hash, int32_t pid, const std::vector<Frame>& frames, std::string& out) {
    StringSink sink{out};
    msgpack::packer<StringSink> pk(sink);
    pk.pack_map(3);
    pack_string(pk, "hash");
    pk.pack_uint64(hash);
    pack_string(pk, "pid");
    pk.pack_int32(pid);
    pack_string(pk, "frames");
    pk.pack_array(static_cast<uint32_t>(frames.size()));
    for (const Frame& f : frames) {
        pk.pack_map(7);
        pack_string(pk, "ip");
        pk.pack_uint64(f.ip);
        pack_string(pk, "module");
        pack_string(pk, f.module);
        pack_string(pk, "build_id");
        pack_string(pk, f.build_id);
        pack_string(pk, "function");
        pack_string(pk, f.function);
        pack_string(pk, "file");
        pack_string(pk, f.file);
        pack_string(pk, "line");
        pk.pack_uint32(f.line);
        pack_string(pk, "inlined");
        if (f.inlined)
            pk.pack_true();
        else
            pk.pack_false();
    }
}

Result<uint64_t> read_stacks(const std::string& path, const OnStack& on_stack) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) return Error{"ZSTD_createDCtx", path, ENOMEM, {}};

    std::vector<char> in(ZSTD_DStreamInSize());
    std::vector<char> out(ZSTD_DStreamOutSize());
    ValueDecoder values(on_stack);
    uint64_t file_offset = 0;  // compressed bytes read so far
    uint64_t frame_start = 0;
    bool in_frame = false;

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
            if (ret == 0) in_frame = false;
            if (output.pos > 0)
                if (auto err = values.feed(out.data(), output.pos)) return err;
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

    if (file_offset == 0) return Error{"empty stacks file (0 bytes)", {}, 0, {}};
    if (in_frame) {
        ZSTD_inBuffer none{nullptr, 0, 0};
        if (auto err = decompress(none, file_offset)) return *err;
        return Error{fmt::format("truncated stacks file: unfinished zstd frame at compressed offset {}", frame_start),
                     {}, 0, fmt::format("file ends at byte {}", file_offset)};
    }
    if (auto err = values.finish()) return *err;
    return values.count();
}

}  // namespace memtrack
