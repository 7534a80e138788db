#include "cli/DumpCommand.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>
#include <msgpack.hpp>

#include "core/OutputFiles.hpp"
#include "format/ArtifactReader.hpp"
#include "format/JsonLines.hpp"
#include "format/StacksFile.hpp"
#include "format/Timeline.hpp"
#include "report/ArtifactTotals.hpp"
#include "report/StackTable.hpp"

namespace memtrack {
namespace {

boost::json::string_view js(const std::string& s) { return boost::json::string_view(s.data(), s.size()); }

void print_line(const boost::json::object& o, std::string& line) {
    line = boost::json::serialize(o);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
}

// A failure of one file, printed after stdout so it follows the output in a shared terminal.
struct Failure {
    std::string file;
    std::string message;
};

int finish(const std::vector<Failure>& failures) {
    std::fflush(stdout);
    for (const Failure& f : failures) fmt::print(stderr, "memtrack: dump: {}: {}\n", f.file, f.message);
    if (!failures.empty()) return 1;
    if (std::ferror(stdout)) {
        fmt::print(stderr, "memtrack: dump: writing to stdout failed\n");
        return 1;
    }
    return 0;
}

// --stacks: every frame key, as the stacks file holds it.
boost::json::object stack_to_json(uint64_t hash, int32_t pid, const std::vector<Frame>& frames) {
    boost::json::array list;
    list.reserve(frames.size());
    for (const Frame& f : frames) {
        boost::json::object o;
        o["ip"] = f.ip;
        o["module"] = js(f.module);
        o["build_id"] = js(f.build_id);
        o["function"] = js(f.function);
        o["file"] = js(f.file);
        o["line"] = f.line;
        o["inlined"] = f.inlined;
        list.push_back(std::move(o));
    }
    boost::json::object o;
    o["hash"] = hash;
    o["pid"] = pid;
    o["frames"] = std::move(list);
    return o;
}

// --resolve: what a reader of an event's stack wants, and no more.
boost::json::array frames_to_json(const report::StackFrames* frames) {
    boost::json::array list;
    if (!frames) return list;
    list.reserve(frames->size());
    for (const Frame* frame : *frames) {
        const Frame& f = *frame;
        boost::json::object o;
        o["function"] = js(f.function);
        o["module"] = js(f.module);
        o["file"] = js(f.file);
        o["line"] = f.line;
        list.push_back(std::move(o));
    }
    return list;
}

int dump_stacks(const std::string& path) {
    std::string line;
    auto result = read_stacks(path, [&](uint64_t hash, int32_t pid, std::vector<Frame>&& frames) {
        print_line(stack_to_json(hash, pid, frames), line);
    });
    std::vector<Failure> failures;
    if (!result) failures.push_back({path, result.error().message()});
    return finish(failures);
}

// A decoded MessagePack value as JSON, keys in their order: the timeline's encoder alone says
// what an event holds.
boost::json::value msgpack_to_json(const msgpack::object& o) {
    switch (o.type) {
        case msgpack::type::BOOLEAN: return o.via.boolean;
        case msgpack::type::POSITIVE_INTEGER: return o.via.u64;
        case msgpack::type::NEGATIVE_INTEGER: return o.via.i64;
        case msgpack::type::STR: return boost::json::string(o.via.str.ptr, o.via.str.size);
        case msgpack::type::ARRAY: {
            boost::json::array a;
            for (uint32_t i = 0; i < o.via.array.size; ++i) a.push_back(msgpack_to_json(o.via.array.ptr[i]));
            return a;
        }
        case msgpack::type::MAP: {
            boost::json::object m;
            for (uint32_t i = 0; i < o.via.map.size; ++i) {
                const auto& k = o.via.map.ptr[i].key;
                m[boost::json::string_view(k.via.str.ptr, k.via.str.size)] = msgpack_to_json(o.via.map.ptr[i].val);
            }
            return m;
        }
        default: return nullptr;
    }
}

int dump_timeline(const std::string& path) {
    std::string line, packed;
    auto result = read_timeline(path, [&](TimelineEvent&& e) {
        packed.clear();
        encode_timeline_event(e, packed);
        const msgpack::object_handle h = msgpack::unpack(packed.data(), packed.size());
        print_line(msgpack_to_json(h.get()).as_object(), line);
    });
    std::vector<Failure> failures;
    if (!result) failures.push_back({path, result.error().message()});
    return finish(failures);
}

int dump_resolved(const DumpOptions& opts) {
    std::vector<Failure> failures;
    // Stacks first: each appears once, and events refer to them by hash from anywhere in the file.
    // Held interned (report::StackTable), so memory follows the distinct frames, not the file's repeats.
    report::StackTable stacks;
    const std::string stacks_path = opts.stacks_file.empty() ? stacks_path_for(opts.file) : opts.stacks_file;
    if (stacks_path.empty()) {
        failures.push_back({opts.file,
                            "cannot name its stacks file: the artifact is not called "
                            "<prefix>.MemtrackArtifact.msgpack (name the stacks file with --stacks)"});
    } else {
        auto read = report::StackTable::load(stacks_path);
        if (read)
            stacks = std::move(read).value();
        else
            failures.push_back({stacks_path, read.error().message()});
    }

    std::string line;
    auto result = read_artifact(opts.file, [&](const Event& e) {
        boost::json::object o = event_to_json_object(e);
        o["frames"] = frames_to_json(e.stack_hash != 0 ? stacks.find(e.stack_hash) : nullptr);
        print_line(o, line);
    });
    if (!result) failures.push_back({opts.file, result.error().message()});
    return finish(failures);
}

}  // namespace

int run_dump(const DumpOptions& opts) {
    if (opts.summary && (opts.resolve || !opts.stacks_file.empty())) {
        fmt::print(stderr, "memtrack: dump: --summary cannot be combined with --stacks or --resolve\n");
        return 1;
    }
    if (opts.resolve) return dump_resolved(opts);
    if (!opts.stacks_file.empty()) return dump_stacks(opts.stacks_file);
    if (!opts.timeline_file.empty()) return dump_timeline(opts.timeline_file);

    std::vector<Failure> failures;
    if (opts.summary) {
        // What was read is worth printing even when the file is damaged: it is exactly what the
        // runner would have kept, since it too stops at the first bad value.
        report::ArtifactTotals totals = report::analyze_artifact(opts.file);
        std::fputs(report::dump_summary(totals.analysis).c_str(), stdout);
        if (!totals.read) failures.push_back({opts.file, totals.read.error().message()});
        return finish(failures);
    }
    std::string line;
    auto result = read_artifact(opts.file, [&](const Event& e) {
        line = event_to_json(e);
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), stdout);
    });
    if (!result) failures.push_back({opts.file, result.error().message()});
    return finish(failures);
}

}  // namespace memtrack
