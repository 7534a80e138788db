#include "format/StacksFile.hpp"

#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <msgpack.hpp>

#include "bpf/record.h"
#include "format/MsgpackStream.hpp"

namespace memtrack {
namespace {

using msgpack_stream::get_bool;
using msgpack_stream::get_i32;
using msgpack_stream::get_str;
using msgpack_stream::get_u32;
using msgpack_stream::get_u64;
using msgpack_stream::type_name;

// msgpack allocates an array's slots when it reads the header, so these bound what a corrupt
// header can make it allocate. A stack holds at most MT_MAX_FRAMES captured addresses (the most
// --max-frames allows), each of which becomes one frame plus the calls inlined there; C++ names
// can be long, but not a mebibyte.
constexpr uint32_t kMaxInlinedPerAddress = 63;
constexpr uint32_t kMaxStackFrames = MT_MAX_FRAMES * (1 + kMaxInlinedPerAddress);
const msgpack::unpack_limit kLimits(/*array=*/kMaxStackFrames, /*map=*/64, /*str=*/1 << 20, /*bin=*/4096,
                                    /*ext=*/4096, /*depth=*/8);
// What one stack may take in the file: far above a real one (a few KiB to a few hundred), and
// the most a stack that never ends makes the reader hold.
constexpr size_t kMaxStackBytes = 16 << 20;

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

// A stack's frames, held to what a captured stack can be: at most MT_MAX_FRAMES addresses (frames
// that are not inlined), each with at most kMaxInlinedPerAddress inlined calls before it.
std::optional<std::string> to_frames(const msgpack::object& v, std::vector<Frame>& frames) {
    frames.resize(v.via.array.size);
    uint32_t addresses = 0;
    uint32_t inlined_run = 0;
    for (uint32_t i = 0; i < v.via.array.size; ++i) {
        if (auto why = to_frame(v.via.array.ptr[i], frames[i])) return fmt::format("frame {}: {}", i, *why);
        if (frames[i].inlined) {
            if (++inlined_run > kMaxInlinedPerAddress)
                return fmt::format("frame {}: more than {} inlined frames at one address", i, kMaxInlinedPerAddress);
            continue;
        }
        inlined_run = 0;
        if (++addresses > MT_MAX_FRAMES)
            return fmt::format("frame {}: more than {} addresses, the most a captured stack holds", i, MT_MAX_FRAMES);
    }
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
                return to_frames(v, s.frames);
            case kStackKeyCount: break;
        }
        return std::nullopt;
    });
    if (bad) return bad;
    for (StackKey required : {kHash, kPid, kFrames})
        if (!seen[required]) return fmt::format("missing key '{}'", kStackKeys[required]);
    return std::nullopt;
}

}  // namespace

void encode_stack(uint64_t hash, int32_t pid, const std::vector<Frame>& frames, std::string& out) {
    using msgpack_stream::pack_string;
    using msgpack_stream::StringSink;
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

Result<uint64_t> read_stacks(const std::string& path,
                             const std::function<void(uint64_t, int32_t, std::vector<Frame>&&)>& on_stack) {
    return msgpack_stream::read_stream(path, kLimits, kMaxStackBytes, {.value = "stack", .file = "stacks file"},
                                       [&](const msgpack::object& o, uint64_t) -> std::optional<std::string> {
                                           Stack s;
                                           if (auto bad = to_stack(o, s)) return bad;
                                           on_stack(s.hash, s.pid, std::move(s.frames));
                                           return std::nullopt;
                                       });
}

}  // namespace memtrack
