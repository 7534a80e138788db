#include "format/MsgpackStream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <zstd.h>

#include "core/Fd.hpp"

namespace memtrack::msgpack_stream {

void pack_string(msgpack::packer<StringSink>& pk, std::string_view s) {
    pk.pack_str(static_cast<uint32_t>(s.size()));
    pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
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

namespace {

constexpr int kWindowLogMax = 23;

Error corrupt_zstd(uint64_t offset, std::string reason) {
    return Error{fmt::format("corrupt zstd stream at compressed offset {}", offset), {}, 0, std::move(reason)};
}

struct DCtxDeleter {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

bool refer_to_buffer(msgpack::type::object_type, std::size_t, void*) { return true; }

// Decompressed bytes not yet decoded, and where they sit in the decompressed stream.
class ValueDecoder {
public:
    ValueDecoder(const msgpack::unpack_limit& limits, size_t max_value_bytes, std::string_view noun,
                 const OnValue& on_value, const FastValues& fast, Work& work)
        : limits_(limits), max_value_(max_value_bytes), noun_(noun), on_value_(on_value), fast_(fast), work_(work) {}

    // Room for `n` more decompressed bytes, right after those not yet decoded: zstd writes
    // there, so its output is decoded where it lands rather than copied into a buffer first.
    char* space(size_t n) {
        if (buf_.size() < filled_ + n) buf_.resize(filled_ + n);
        return buf_.data() + filled_;
    }

    // Takes the `n` bytes just written at space() and delivers every value now complete, except
    // that a value already found incomplete is tried again only once its bytes have doubled (or
    // passed the bound): re-parsing it from its start at every chunk would be quadratic in its size.
    std::optional<Error> feed(size_t n) {
        filled_ += n;
        work_.max_pending = std::max(work_.max_pending, filled_);
        if (filled_ < retry_at_) return std::nullopt;
        return decode();
    }

    // At the end of the stream, or before reporting a problem of the stream itself: delivers
    // what is complete, whatever retry_at_ says.
    std::optional<Error> drain() { return filled_ == 0 ? std::nullopt : decode(); }

    // Bytes left over at the end of the stream: the start of a value that never ended.
    std::optional<Error> finish() const {
        if (filled_ == 0) return std::nullopt;
        return corrupt(base_, fmt::format("value cut short by the end of the stream ({} bytes left)", filled_));
    }

    uint64_t count() const { return count_; }

private:
    std::optional<Error> decode() {
        retry_at_ = 0;
        const char* data = buf_.data();
        size_t pos = 0;
        std::optional<Error> err;
        while (pos < filled_) {
            if (fast_) {
                const Taken taken = fast_(data + pos, filled_ - pos);
                pos += taken.bytes;
                count_ += taken.values;
                if (pos == filled_) break;
            }
            size_t next = pos;
            msgpack::object value;
            // No value may claim more than max_value_ bytes, so none is parsed past that.
            const size_t avail = std::min(filled_ - pos, max_value_ + 1);
            work_.parsed_bytes += avail;
            try {
                // One zone for every value, emptied before each: a fresh one per value (what
                // msgpack::unpack without a zone makes) costs a malloc and a free per event.
                // Strings and bins point into buf_ rather than being copied into the zone:
                // the value is used and dropped before buf_ changes.
                zone_.clear();
                value = msgpack::unpack(zone_, data, pos + avail, next, refer_to_buffer, nullptr, limits_);
            } catch (const msgpack::insufficient_bytes&) {
                if (avail > max_value_) {
                    err = corrupt(base_ + pos, fmt::format("value longer than {} bytes", max_value_));
                    break;
                }
                // The value continues in a later chunk: try again once twice as much is here.
                retry_at_ = 2 * (filled_ - pos);
                break;
            } catch (const msgpack::unpack_error& ex) {
                err = corrupt(base_ + pos, fmt::format("invalid MessagePack: {}", ex.what()));
                break;
            }
            if (next - pos > max_value_) {
                err = corrupt(base_ + pos, fmt::format("value longer than {} bytes", max_value_));
                break;
            }
            if (auto bad = on_value_(value, base_ + pos)) {
                err = corrupt(base_ + pos, std::move(*bad));
                break;
            }
            ++count_;
            pos = next;
        }
        // What is left is the start of one value: moved to the front.
        std::memmove(buf_.data(), buf_.data() + pos, filled_ - pos);
        filled_ -= pos;
        base_ += pos;
        if (retry_at_ != 0) retry_at_ = std::min(retry_at_, max_value_ + 1);
        return err;
    }

    Error corrupt(uint64_t offset, std::string reason) const {
        return Error{fmt::format("corrupt {} at decompressed offset {}", noun_, offset), {}, 0, std::move(reason)};
    }

    const msgpack::unpack_limit& limits_;
    const size_t max_value_;
    std::string_view noun_;
    const OnValue& on_value_;
    const FastValues& fast_;
    Work& work_;
    msgpack::zone zone_;     // holds the value being delivered
    std::vector<char> buf_;  // [0, filled_): decompressed, not yet decoded
    size_t filled_ = 0;
    size_t retry_at_ = 0;  // filled_ at which its unfinished first value is tried again
    uint64_t base_ = 0;    // decompressed offset of buf_[0]
    uint64_t count_ = 0;
};

}  // namespace

Result<uint64_t> read_stream(const std::string& path, const msgpack::unpack_limit& limits, size_t max_value_bytes,
                             const Wording& wording, const OnValue& on_value, const FastValues& fast, Work* work) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return errno_error("open", path);
    std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
    if (!dctx) return Error{"ZSTD_createDCtx", path, ENOMEM, {}};
    // A frame names the window its decoder must hold; a crafted one asks for up to 128 MiB
    // (zstd's default bound) or more. memtrack writes with a window of at most 2 MiB (levels 3
    // and below); 8 MiB leaves room for a file recompressed by zstd itself at a higher level.
    if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, kWindowLogMax)))
        return Error{"ZSTD_d_windowLogMax", path, EINVAL, {}};

    std::vector<char> in(ZSTD_DStreamInSize());
    const size_t out_size = ZSTD_DStreamOutSize();
    Work local_work;
    ValueDecoder values(limits, max_value_bytes, wording.value, on_value, fast, work ? *work : local_work);
    uint64_t file_offset = 0;  // compressed bytes read so far
    uint64_t frame_start = 0;
    bool in_frame = false;

    // Runs the decompressor over `input` (empty at the end of the file, to drain what it holds)
    // and decodes what comes out.
    auto decompress = [&](ZSTD_inBuffer& input, uint64_t input_offset) -> std::optional<Error> {
        for (;;) {
            const size_t before = input.pos;
            ZSTD_outBuffer output{values.space(out_size), out_size, 0};
            const size_t ret = ZSTD_decompressStream(dctx.get(), &output, &input);
            if (ZSTD_isError(ret)) {
                if (auto err = values.drain()) return err;  // a bad value before the bad block comes first
                return corrupt_zstd(input_offset + input.pos, ZSTD_getErrorName(ret));
            }
            if (!in_frame && input.pos > before) {
                in_frame = true;
                frame_start = input_offset + before;
            }
            // zstd stops at each frame's end and returns 0 there, having flushed all its output.
            if (ret == 0) in_frame = false;
            if (output.pos > 0)
                if (auto err = values.feed(output.pos)) return err;
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

    if (file_offset == 0) return Error{fmt::format("empty {} (0 bytes)", wording.file), {}, 0, {}};
    if (in_frame) {
        ZSTD_inBuffer none{nullptr, 0, 0};
        if (auto err = decompress(none, file_offset)) return *err;
        if (auto err = values.drain()) return *err;
        return Error{fmt::format("truncated {}: unfinished zstd frame at compressed offset {}", wording.file,
                                 frame_start),
                     {}, 0, fmt::format("file ends at byte {}", file_offset)};
    }
    if (auto err = values.drain()) return *err;
    if (auto err = values.finish()) return *err;
    return values.count();
}

}  // namespace memtrack::msgpack_stream
