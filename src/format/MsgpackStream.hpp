#pragma once
// What the artifact and stacks-file codecs share: packing straight into a std::string, typed
// reads of decoded values with the decoders' error wording, and streaming a zstd file of
// concatenated MessagePack values one value at a time.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <msgpack.hpp>

#include "core/Result.hpp"

namespace memtrack::msgpack_stream {

// ---- writing ----

// msgpack::packer writes through any type with write(const char*, size_t); appending straight
// into the caller's string avoids an intermediate sbuffer copy per value.
struct StringSink {
    std::string& out;
    void write(const char* data, size_t len) { out.append(data, len); }
};

void pack_string(msgpack::packer<StringSink>& pk, std::string_view s);

// ---- typed reads ----
// Each returns why `v` does not fit, naming `key`, or nothing after storing it in `out`.

std::string_view type_name(msgpack::type::object_type t);

std::optional<std::string> get_u64(const msgpack::object& v, std::string_view key, uint64_t& out);
std::optional<std::string> get_u32(const msgpack::object& v, std::string_view key, uint32_t& out);
std::optional<std::string> get_i32(const msgpack::object& v, std::string_view key, int32_t& out);
std::optional<std::string> get_str(const msgpack::object& v, std::string_view key, std::string& out);
std::optional<std::string> get_bool(const msgpack::object& v, std::string_view key, bool& out);

// ---- streaming ----

// How a reader names its values and its files in error messages.
struct Wording {
    std::string_view value;  // "event": "corrupt event at decompressed offset N: ..."
    std::string_view file;   // "artifact": "empty artifact (0 bytes)", "truncated artifact: ..."
};

// Takes one decoded value and the decompressed offset where it starts; returns why the value
// is rejected, or nothing once it has been delivered.
using OnValue = std::function<std::optional<std::string>(const msgpack::object& value, uint64_t offset)>;

// A reader's own decoder for the values it expects, tried before msgpack-cxx's: building a
// msgpack::object per value was about 40 % of `memtrack report`'s time. It takes whole values
// from the start of data[0, len), delivering each, and stops at the first one it cannot vouch
// for (incomplete, in a form it does not know, or invalid), which then goes to the generic path
// (msgpack-cxx and on_value): so the generic path alone decides what is rejected and how.
struct Taken {
    size_t bytes = 0;
    uint64_t values = 0;
};
using FastValues = std::function<Taken(const char* data, size_t len)>;

// What reading a stream cost, for the tests that hold the reader to linear work and bounded
// memory on crafted input.
struct Work {
    uint64_t parsed_bytes = 0;  // bytes handed to msgpack-cxx, counting each re-parse
    size_t max_pending = 0;     // most decompressed bytes held at once
};

// Streams the zstd file at `path` (any number of frames), decoding the MessagePack values in
// it one after another under `limits` and passing each to `on_value`, and returns how many
// were accepted. A value may take at most `max_value_bytes` of the stream: memory stays bounded
// by zstd's window plus that, whatever the file. A value that arrives in pieces is parsed again
// only once the bytes held for it have doubled, so the work stays linear in its size.
//
// On a problem the values before it have already been delivered, and the Error's message()
// says where, with `wording` filled in:
//   "corrupt <value> at decompressed offset N: <reason>"
//     (reason: on_value's, "invalid MessagePack: ...", "value cut short by the end of the
//     stream (K bytes left)", or "value longer than M bytes")
//   "corrupt zstd stream at compressed offset N: <zstd's reason>"
//   "truncated <file>: unfinished zstd frame at compressed offset N: file ends at byte M"
//     (N is where that frame starts)
//   "empty <file> (0 bytes)"
// and open/read failures carry their errno.
// `fast`, when set, is tried first at every value (FastValues). `work`, when set, is filled in.
Result<uint64_t> read_stream(const std::string& path, const msgpack::unpack_limit& limits, size_t max_value_bytes,
                             const Wording& wording, const OnValue& on_value, const FastValues& fast = {},
                             Work* work = nullptr);

}  // namespace memtrack::msgpack_stream
