#include "format/Timeline.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>
#include <msgpack.hpp>

#include "format/MsgpackStream.hpp"

namespace memtrack {
namespace {

using msgpack_stream::get_bool;
using msgpack_stream::get_i32;
using msgpack_stream::get_str;
using msgpack_stream::get_u64;
using msgpack_stream::pack_string;
using msgpack_stream::StringSink;
using msgpack_stream::type_name;
using Type = TimelineEvent::Type;

constexpr std::array<std::pair<Type, std::string_view>, 11> kTypeNames{{
    {Type::Start, "start"},
    {Type::Attach, "attach"},
    {Type::Fork, "fork"},
    {Type::Exec, "exec"},
    {Type::Exit, "exit"},
    {Type::Detach, "detach"},
    {Type::Enable, "enable"},
    {Type::Disable, "disable"},
    {Type::Mark, "mark"},
    {Type::Rss, "rss"},
    {Type::RssPeak, "rss_peak"},
}};

// An argv of at most the kernel side's 4 KiB, plus what `attach` reads from /proc: far below.
const msgpack::unpack_limit kLimits(/*array=*/1 << 16, /*map=*/32, /*str=*/1 << 20, /*bin=*/0, /*ext=*/0,
                                    /*depth=*/4);
constexpr size_t kMaxEventBytes = 4 << 20;

bool has_pid(Type t) { return t != Type::Enable && t != Type::Disable && t != Type::Mark; }

std::optional<std::string> to_event(const msgpack::object& o, TimelineEvent& e) {
    if (o.type != msgpack::type::MAP) return fmt::format("expected a map, found {}", type_name(o.type));
    bool typed = false, timed = false;
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
        const msgpack::object& k = o.via.map.ptr[i].key;
        const msgpack::object& v = o.via.map.ptr[i].val;
        if (k.type != msgpack::type::STR) return fmt::format("map key is {}, not str", type_name(k.type));
        const std::string_view key(k.via.str.ptr, k.via.str.size);
        std::optional<std::string> bad;
        if (key == "type") {
            std::string name;
            if ((bad = get_str(v, key, name))) return bad;
            auto it = std::find_if(kTypeNames.begin(), kTypeNames.end(), [&](auto& p) { return p.second == name; });
            if (it == kTypeNames.end()) return fmt::format("unknown type '{}'", name);
            e.type = it->first;
            typed = true;
        } else if (key == "time") {
            bad = get_u64(v, key, e.time);
            timed = true;
        } else if (key == "pid") {
            bad = get_i32(v, key, e.pid);
        } else if (key == "parent") {
            bad = get_i32(v, key, e.parent);
        } else if (key == "path") {
            bad = get_str(v, key, e.path);
        } else if (key == "argv") {
            if (v.type != msgpack::type::ARRAY) return fmt::format("key 'argv': expected array, found {}", type_name(v.type));
            e.argv.resize(v.via.array.size);
            for (uint32_t a = 0; a < v.via.array.size && !bad; ++a) bad = get_str(v.via.array.ptr[a], key, e.argv[a]);
        } else if (key == "argv_cut") {
            bad = get_bool(v, key, e.argv_cut);
        } else if (key == "code" || key == "signal") {
            int32_t x = 0;
            bad = get_i32(v, key, x);
            (key == "code" ? e.code : e.signal) = x;
        } else if (key == "core") {
            bad = get_bool(v, key, e.core);
        } else if (key == "name") {
            bad = get_str(v, key, e.name);
        } else if (key == "anon") {
            bad = get_u64(v, key, e.anon);
        } else if (key == "file") {
            bad = get_u64(v, key, e.file);
        } else if (key == "shmem") {
            bad = get_u64(v, key, e.shmem);
        } else if (key == "swap") {
            bad = get_u64(v, key, e.swap);
        } else if (key == "peak") {
            bad = get_u64(v, key, e.peak);
        }
        if (bad) return bad;
    }
    if (!typed) return std::string("missing key 'type'");
    if (!timed) return std::string("missing key 'time'");
    return std::nullopt;
}

}  // namespace

std::string_view timeline_type_name(Type t) {
    for (auto& [type, name] : kTypeNames)
        if (type == t) return name;
    return "?";
}

std::vector<std::string> split_argv(std::string_view args) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < args.size()) {
        size_t end = args.find('\0', start);
        if (end == std::string_view::npos) end = args.size();
        out.emplace_back(args.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

void set_exit_status(TimelineEvent& e, uint32_t status) {
    if (status & 0x7f) {
        e.signal = int32_t(status & 0x7f);
        e.core = (status & 0x80) != 0;
    } else {
        e.code = int32_t((status >> 8) & 0xff);
    }
}

void encode_timeline_event(const TimelineEvent& e, std::string& out) {
    StringSink sink{out};
    msgpack::packer<StringSink> pk(sink);
    uint32_t keys = 2 + has_pid(e.type);
    switch (e.type) {
        case Type::Fork: keys += 1; break;
        case Type::Attach:
        case Type::Exec: keys += 2 + e.argv_cut; break;
        case Type::Exit: keys += 1 + e.core; break;
        case Type::Mark: keys += 1; break;
        case Type::Rss: keys += 4; break;
        case Type::RssPeak: keys += 1; break;
        default: break;
    }
    pk.pack_map(keys);
    pack_string(pk, "type");
    pack_string(pk, timeline_type_name(e.type));
    pack_string(pk, "time");
    pk.pack_uint64(e.time);
    if (has_pid(e.type)) {
        pack_string(pk, "pid");
        pk.pack_int32(e.pid);
    }
    auto u64 = [&](std::string_view key, uint64_t v) {
        pack_string(pk, key);
        pk.pack_uint64(v);
    };
    switch (e.type) {
        case Type::Fork:
            pack_string(pk, "parent");
            pk.pack_int32(e.parent);
            break;
        case Type::Attach:
        case Type::Exec:
            pack_string(pk, "path");
            pack_string(pk, e.path);
            pack_string(pk, "argv");
            pk.pack_array(uint32_t(e.argv.size()));
            for (const auto& a : e.argv) pack_string(pk, a);
            if (e.argv_cut) {
                pack_string(pk, "argv_cut");
                pk.pack_true();
            }
            break;
        case Type::Exit:
            pack_string(pk, e.signal ? "signal" : "code");
            pk.pack_int32(e.signal ? *e.signal : e.code.value_or(0));
            if (e.core) {
                pack_string(pk, "core");
                pk.pack_true();
            }
            break;
        case Type::Mark:
            pack_string(pk, "name");
            pack_string(pk, e.name);
            break;
        case Type::Rss:
            u64("anon", e.anon);
            u64("file", e.file);
            u64("shmem", e.shmem);
            u64("swap", e.swap);
            break;
        case Type::RssPeak: u64("peak", e.peak); break;
        default: break;
    }
}

Result<uint64_t> read_timeline(const std::string& path, const std::function<void(TimelineEvent&&)>& on_event) {
    return msgpack_stream::read_stream(path, kLimits, kMaxEventBytes, {.value = "timeline event", .file = "timeline"},
                                       [&](const msgpack::object& o, uint64_t) -> std::optional<std::string> {
                                           TimelineEvent e;
                                           if (auto bad = to_event(o, e)) return bad;
                                           on_event(std::move(e));
                                           return std::nullopt;
                                       });
}

}  // namespace memtrack
