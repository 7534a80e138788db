// Call stacks: what `memtrack dump --resolve` and `memtrack dump --stacks` make of the stacks
// captured for the stack_* fixtures (tests/progs/stack_*, sizes in stack_sizes.h).
//
// Source lines are not written here: each fixture marks the calls that matter with a
// STACK_MARK(name) comment, and the test reads the fixture's source ($FIXTURE_SRC_DIR) to find
// the line.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <boost/json.hpp>

#include "Events.hpp"
#include "bpf/unwind.h"
#include "fixture_sizes.h"
#include "stack_sizes.h"

using namespace memtrack::roottest;

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// ---- reading what memtrack wrote ----

// One frame of `memtrack dump --stacks`: all seven keys.
struct StackFrame {
    uint64_t ip = 0;
    std::string module;
    std::string build_id;
    std::string function;
    std::string file;
    uint64_t line = 0;
    bool inlined = false;
};

struct Stack {
    uint64_t hash = 0;
    int pid = 0;
    std::vector<StackFrame> frames;
};

// One frame of `memtrack dump --resolve`.
struct ResolvedFrame {
    std::string function;
    std::string module;
    std::string file;
    uint64_t line = 0;
};

struct Resolved {
    Event event;
    std::vector<ResolvedFrame> frames;
};

std::string hex(uint64_t v) {
    std::ostringstream s;
    s << "0x" << std::hex << v;
    return s.str();
}

std::string base_name(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

const json::value& need(const json::object& o, const char* key, const std::string& where) {
    const json::value* v = o.if_contains(key);
    if (!v) throw std::runtime_error(where + ": missing \"" + key + "\"");
    return *v;
}

uint64_t need_u64(const json::object& o, const char* key, const std::string& where) {
    const json::value& v = need(o, key, where);
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<uint64_t>(v.get_int64());
    throw std::runtime_error(where + ": \"" + key + "\" is not a non-negative integer");
}

std::string need_string(const json::object& o, const char* key, const std::string& where) {
    const json::value& v = need(o, key, where);
    if (!v.is_string()) throw std::runtime_error(where + ": \"" + key + "\" is not a string");
    return std::string(v.get_string());
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
}

// <prefix>.MemtrackStacks.msgpack beside <prefix>.MemtrackArtifact.msgpack.
std::string stacks_file_of(const std::string& artifact) {
    const std::string from = "MemtrackArtifact";
    auto at = artifact.rfind(from);
    if (at == std::string::npos) throw std::runtime_error("not an artifact name: " + artifact);
    return artifact.substr(0, at) + "MemtrackStacks" + artifact.substr(at + from.size());
}

// `memtrack dump --stacks FILE`, by hash; throws unless it exits 0, every line has exactly the
// documented keys, and no hash comes twice (a single run's symbolizer has no reason to repeat).
std::map<uint64_t, Stack> dump_stacks(const std::string& stacks_file) {
    RunResult r = run({memtrack_bin(), "dump", "--stacks", stacks_file});
    if (r.timed_out || r.status != 0)
        throw std::runtime_error("`memtrack dump --stacks " + stacks_file + "`: " + r.describe());
    std::map<uint64_t, Stack> stacks;
    size_t line_no = 0;
    for (const std::string& line : lines_of(r.out)) {
        ++line_no;
        const std::string where = "dump --stacks line " + std::to_string(line_no);
        json::error_code ec;
        json::value v = json::parse(line, ec);
        if (ec || !v.is_object()) throw std::runtime_error(where + ": not a JSON object: " + line);
        const json::object& o = v.get_object();
        if (o.size() != 3) throw std::runtime_error(where + ": expected hash, pid, frames: " + line);
        Stack s;
        s.hash = need_u64(o, "hash", where);
        s.pid = static_cast<int>(need_u64(o, "pid", where));
        const json::value& frames = need(o, "frames", where);
        if (!frames.is_array()) throw std::runtime_error(where + ": frames is not an array");
        for (const json::value& fv : frames.get_array()) {
            if (!fv.is_object() || fv.get_object().size() != 7)
                throw std::runtime_error(where + ": a frame is not an object of 7 keys: " + line);
            const json::object& f = fv.get_object();
            StackFrame frame;
            frame.ip = need_u64(f, "ip", where);
            frame.module = need_string(f, "module", where);
            frame.build_id = need_string(f, "build_id", where);
            frame.function = need_string(f, "function", where);
            frame.file = need_string(f, "file", where);
            frame.line = need_u64(f, "line", where);
            const json::value& inl = need(f, "inlined", where);
            if (!inl.is_bool()) throw std::runtime_error(where + ": inlined is not a bool");
            frame.inlined = inl.get_bool();
            s.frames.push_back(std::move(frame));
        }
        if (!stacks.emplace(s.hash, s).second) throw std::runtime_error(where + ": hash " + hex(s.hash) + " again");
    }
    return stacks;
}

// `memtrack dump --resolve ARTIFACT`: each event as plain dump has it (checked by parse_event),
// plus its "frames".
std::vector<Resolved> dump_resolved(const std::string& artifact) {
    RunResult r = run({memtrack_bin(), "dump", "--resolve", artifact});
    if (r.timed_out || r.status != 0)
        throw std::runtime_error("`memtrack dump --resolve " + artifact + "`: " + r.describe());
    std::vector<Resolved> out;
    size_t line_no = 0;
    for (const std::string& line : lines_of(r.out)) {
        ++line_no;
        if (line.empty()) continue;
        const std::string where = "dump --resolve line " + std::to_string(line_no);
        json::error_code ec;
        json::value v = json::parse(line, ec);
        if (ec || !v.is_object()) throw std::runtime_error(where + ": not a JSON object: " + line);
        json::object& o = v.as_object();
        const json::value* frames = o.if_contains("frames");
        if (!frames || !frames->is_array()) throw std::runtime_error(where + ": no frames array: " + line);
        Resolved res;
        for (const json::value& fv : frames->get_array()) {
            if (!fv.is_object() || fv.get_object().size() != 4)
                throw std::runtime_error(where + ": a frame is not an object of 4 keys: " + line);
            const json::object& f = fv.get_object();
            res.frames.push_back({need_string(f, "function", where), need_string(f, "module", where),
                                  need_string(f, "file", where), need_u64(f, "line", where)});
        }
        o.erase("frames");
        res.event = parse_event(json::serialize(o), line_no);
        out.push_back(std::move(res));
    }
    return out;
}

std::string show(const std::vector<ResolvedFrame>& frames) {
    std::string s;
    for (const auto& f : frames)
        s += "\n    " + (f.function.empty() ? std::string("?") : f.function) + " [" + base_name(f.module) + "] " +
             base_name(f.file) + ":" + std::to_string(f.line);
    return s.empty() ? std::string(" (no frames)") : s;
}

std::string show(const std::vector<StackFrame>& frames) {
    std::string s;
    for (const auto& f : frames)
        s += "\n    " + hex(f.ip) + " " + (f.function.empty() ? std::string("?") : f.function) +
             (f.inlined ? " (inlined)" : "") + " [" + f.module + "] " + base_name(f.file) + ":" +
             std::to_string(f.line);
    return s.empty() ? std::string(" (no frames)") : s;
}

std::vector<Resolved> with_size(const std::vector<Resolved>& events, uint64_t size) {
    std::vector<Resolved> out;
    for (const auto& r : events)
        if (r.event.size && *r.event.size == size && is_allocation(r.event)) out.push_back(r);
    return out;
}

// ---- the fixtures' sources ----

std::string fixture_source(const std::string& name) {
    const char* env = std::getenv("FIXTURE_SRC_DIR");
    std::string dir = env ? env : "";
    if (dir.empty()) {
        // Run by hand without meson's environment: build/tests/progs -> tests/progs.
        const char* fd = std::getenv("FIXTURE_DIR");
        if (fd && *fd) dir = (fs::path(fd).parent_path().parent_path().parent_path() / "tests/progs").string();
    }
    const std::string path = dir + "/" + name;
    if (dir.empty() || !fs::exists(path))
        throw std::runtime_error("fixture source " + name + " not found (" + path +
                                 "): set FIXTURE_SRC_DIR to tests/progs");
    return path;
}

// The line of `source` holding STACK_MARK(marker); it must hold exactly one.
uint64_t marked_line(const std::string& source, const std::string& marker) {
    const std::string text = read_file(fixture_source(source));
    const std::string tag = "STACK_MARK(" + marker + ")";
    uint64_t found = 0, line_no = 0;
    for (const std::string& line : lines_of(text)) {
        ++line_no;
        if (line.find(tag) != std::string::npos) {
            if (found) throw std::runtime_error(source + ": " + tag + " twice");
            found = line_no;
        }
    }
    if (!found) throw std::runtime_error(source + ": no " + tag);
    return found;
}

// ---- stats ----

json::object stats_object(const Tracked& t) {
    return json::parse(t.result.stats.raw).as_object();
}

uint64_t stat_u64(const json::object& s, const char* key) { return need_u64(s, key, "--stats"); }

double stat_double(const json::object& s, const char* key) {
    const json::value& v = need(s, key, "--stats");
    if (!v.is_number()) throw std::runtime_error(std::string("--stats: ") + key + " is not a number");
    return v.to_number<double>();
}

std::string stack_stats(const json::object& s) {
    std::string out;
    for (const char* key : {"allocation_events", "stacks_captured", "stacks_sent", "stacks_unique", "stack_errors",
                            "stacks_dropped", "snapshot_stops", "stack_ring_bytes", "ring_bytes_per_event"})
        if (const json::value* v = s.if_contains(key)) out += std::string(" ") + key + "=" + json::serialize(*v);
    return out;
}

// Capture and delivery lost nothing.
void check_stack_stats(const Tracked& t) {
    const json::object s = stats_object(t);
    MESSAGE("stack stats:", stack_stats(s));
    CHECK(stat_u64(s, "stack_errors") == 0);
    CHECK(stat_u64(s, "stacks_dropped") == 0);
    CHECK(stat_u64(s, "stacks_unique") == stat_u64(s, "stacks_sent"));
}

bool ends_with(const std::string& s, const std::string& tail) { return s.ends_with(tail); }

// Where each frame may be: every named function inside an executable mapping of its module.
struct Mapping {
    uint64_t start = 0, end = 0;
    bool executable = false;
    std::string path;
};

std::vector<Mapping> parse_maps(const std::string& text) {
    std::vector<Mapping> maps;
    for (const std::string& line : lines_of(text)) {
        std::istringstream in(line);
        std::string range, perms, offset, dev, inode, path;
        in >> range >> perms >> offset >> dev >> inode;
        std::getline(in >> std::ws, path);
        auto dash = range.find('-');
        if (dash == std::string::npos || perms.size() < 4) continue;
        Mapping m;
        m.start = std::stoull(range.substr(0, dash), nullptr, 16);
        m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
        m.executable = perms[2] == 'x';
        m.path = path;
        maps.push_back(m);
    }
    return maps;
}

const Mapping* mapping_of(const std::vector<Mapping>& maps, uint64_t addr) {
    for (const auto& m : maps)
        if (addr >= m.start && addr < m.end) return &m;
    return nullptr;
}

}  // namespace

TEST_CASE("stacks: a call chain resolves to gamma, beta, alpha, main, each at its call's line") {
    ROOT_SUITE_GUARD();
    const unsigned n = 5;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_chain"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);

    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    for (unsigned i = 0; i < n; i++) {
        sizes.insert(STK_CHAIN_FIRST + i * STK_CHAIN_STEP);
        expected[STK_CHAIN_FIRST + i * STK_CHAIN_STEP] = "Malloc x1";
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    const std::string src = "stack_chain.c";
    const std::vector<std::pair<std::string, uint64_t>> want = {
        {"gamma", marked_line(src, "gamma-malloc")},
        {"beta", marked_line(src, "beta-calls-gamma")},
        {"alpha", marked_line(src, "alpha-calls-beta")},
        {"main", marked_line(src, "main-calls-alpha")},
    };

    const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
    std::set<uint64_t> hashes;
    size_t checked = 0;
    for (uint64_t size : sizes) {
        for (const Resolved& r : with_size(resolved, size)) {
            ++checked;
            CAPTURE(r.event.describe());
            REQUIRE_MESSAGE(r.event.stack_hash.has_value(), "no stack_hash");
            hashes.insert(*r.event.stack_hash);
            REQUIRE_MESSAGE(r.frames.size() >= 4, "frames:", show(r.frames));
            for (size_t i = 0; i < want.size(); i++) {
                const ResolvedFrame& f = r.frames[i];
                CHECK_MESSAGE(f.function == want[i].first, "frame ", i, ":", show(r.frames));
                CHECK_MESSAGE(ends_with(f.module, "/stack_chain"), "frame ", i, ":", show(r.frames));
                CHECK_MESSAGE(ends_with(f.file, "/" + src), "frame ", i, ":", show(r.frames));
                CHECK_MESSAGE(f.line == want[i].second, "frame ", i, ": want line ", want[i].second, ":",
                              show(r.frames));
            }
        }
    }
    CHECK(checked == n);
    // One call site, so one stack for all n calls.
    CHECK(hashes.size() == 1);

    // The same stack in the stacks file: addresses, build-id, nothing inlined.
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    for (uint64_t h : hashes) {
        auto it = stacks.find(h);
        REQUIRE_MESSAGE(it != stacks.end(), "stack ", hex(h), " is not in the stacks file");
        const Stack& s = it->second;
        CHECK(s.pid == t.result.root_pid);
        REQUIRE_MESSAGE(s.frames.size() >= 4, show(s.frames));
        for (size_t i = 0; i < 4; i++) {
            CHECK_MESSAGE(s.frames[i].function == want[i].first, show(s.frames));
            CHECK_MESSAGE(!s.frames[i].inlined, show(s.frames));
            CHECK_MESSAGE(s.frames[i].ip != 0, show(s.frames));
            CHECK_MESSAGE(s.frames[i].build_id.size() >= 16, show(s.frames));
        }
    }
}

TEST_CASE("stacks: an allocation in a shared library names its function and the .so") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_shlib"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    CHECK(show(tally_by_size(t.events, {STK_SHLIB_SIZE})) == show(std::map<uint64_t, std::string>{
                                                                  {STK_SHLIB_SIZE, "Malloc x" + std::to_string(n)}}));

    const uint64_t leaf_line = marked_line("stack_lib.c", "stacklib-leaf-malloc");
    const uint64_t alloc_line = marked_line("stack_lib.c", "stacklib-alloc-calls-leaf");
    const uint64_t main_line = marked_line("stack_shlib.c", "main-calls-stacklib");
    const std::vector<Resolved> resolved = with_size(dump_resolved(t.result.artifact), STK_SHLIB_SIZE);
    CHECK(resolved.size() == n);
    for (const Resolved& r : resolved) {
        CAPTURE(r.event.describe());
        CHECK(r.event.stack_hash.has_value());
        REQUIRE_MESSAGE(r.frames.size() >= 3, show(r.frames));
        CHECK_MESSAGE(r.frames[0].function == "stacklib_leaf", show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[0].module, "/libstacklib.so"), show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[0].file, "/stack_lib.c"), show(r.frames));
        CHECK_MESSAGE(r.frames[0].line == leaf_line, show(r.frames));
        CHECK_MESSAGE(r.frames[1].function == "stacklib_alloc", show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[1].module, "/libstacklib.so"), show(r.frames));
        CHECK_MESSAGE(r.frames[1].line == alloc_line, show(r.frames));
        CHECK_MESSAGE(r.frames[2].function == "main", show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[2].module, "/stack_shlib"), show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[2].file, "/stack_shlib.c"), show(r.frames));
        CHECK_MESSAGE(r.frames[2].line == main_line, show(r.frames));
    }
}

TEST_CASE("stacks: code loaded by dlopen after the first stack still resolves (its mappings are read again)") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_dlopen"), fixture("libstacklib.so"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    CHECK(show(tally_by_size(t.events, {STK_DLOPEN_FIRST_SIZE, STK_SHLIB_SIZE})) ==
          show(std::map<uint64_t, std::string>{{STK_DLOPEN_FIRST_SIZE, "Malloc x1"},
                                               {STK_SHLIB_SIZE, "Malloc x" + std::to_string(n)}}));
    const uint64_t leaf_line = marked_line("stack_lib.c", "stacklib-leaf-malloc");
    const std::vector<Resolved> resolved = with_size(dump_resolved(t.result.artifact), STK_SHLIB_SIZE);
    CHECK(resolved.size() == n);
    for (const Resolved& r : resolved) {
        CAPTURE(r.event.describe());
        REQUIRE_MESSAGE(r.frames.size() >= 3, show(r.frames));
        CHECK_MESSAGE(r.frames[0].function == "stacklib_leaf", show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[0].module, "/libstacklib.so"), show(r.frames));
        CHECK_MESSAGE(r.frames[0].line == leaf_line, show(r.frames));
        CHECK_MESSAGE(r.frames[1].function == "stacklib_alloc", show(r.frames));
        CHECK_MESSAGE(r.frames[2].function == "main", show(r.frames));
        CHECK_MESSAGE(ends_with(r.frames[2].module, "/stack_dlopen"), show(r.frames));
    }
}

TEST_CASE("stacks: hundreds of dlopens, each new object examined once and its constructor's allocation exact") {
    ROOT_SUITE_GUARD();
    // Each copy of libmany is an object of its own; each dlopen holds the process at the
    // loader's hook, and memtrack reads only what the loader added (LoaderList).
    const unsigned n = 300;
    TempDir dir;
    const std::string libs = dir.path() + "/libs";
    std::filesystem::create_directory(libs);
    for (unsigned i = 0; i < n; ++i)
        std::filesystem::copy_file(fixture("libmany.so"), libs + "/libmany" + std::to_string(i) + ".so");
    const std::string count_file = dir.path() + "/objects";
    Tracked t = track_and_dump(dir, {fixture("dlopen_many"), std::to_string(n), libs, count_file});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    CHECK(show(tally_by_size(t.events, {FX_MANY_LIB_ALLOC})) ==
          show(std::map<uint64_t, std::string>{{FX_MANY_LIB_ALLOC, "Malloc x" + std::to_string(n)}}));
    // Every object it maps was examined once: the n libraries and what it started with, none
    // of them again at a later hook.
    std::ifstream counted(count_file);
    uint64_t mapped = 0;
    REQUIRE(static_cast<bool>(counted >> mapped));
    CHECK(mapped > n);
    CHECK(stats_u64(t.result.stats, "code_objects_examined") == mapped);
    // And each object file was opened and parsed once for every stage (probe sites, unwind table,
    // Python runtime): the files it maps, and the C++ runtime memtrack resolves the probes of at
    // its start, which this C program does not map (ObjectFiles).
    CHECK(stats_u64(t.result.stats, "object_files_parsed") == mapped + 1);
    CHECK(stats_u64(t.result.stats, "object_files_failed") == 0);
    CHECK(stats_u64(t.result.stats, "object_files_reopened") == 0);
    // The symbolizer reads a new build's file when its first stack arrives: the process may run
    // 64 files ahead of it by then (counted apart, not a hold stage's reading).
    MESSAGE("object_files_reopened_for_symbols ", stats_u64(t.result.stats, "object_files_reopened_for_symbols"));
    // All mappings read at the exec and at the loader's first hook only; every dlopen after
    // that read the loader's list from where the last one ended.
    CHECK(stats_u64(t.result.stats, "code_full_scans") == 2);
    CHECK(stats_u64(t.result.stats, "processes_without_allocator") == 0);
    // The symbolizer too read all the mappings once (the process's first stack): each stack
    // after a dlopen was answered with what the loader's hooks found (AddedCode): one per dlopen
    // (its constructor's stack: the first one looked up inside dlopen, each later one the first
    // new stack since the previous dlopen returned) and one for the first new stack after the
    // last dlopen returned (fopen of the count file).
    CHECK(stats_u64(t.result.stats, "symbolizer_maps_full_reads") == 1);
    CHECK(stats_u64(t.result.stats, "symbolizer_maps_added_reads") == n + 1);
    CHECK(stats_u64(t.result.stats, "stacks_cut_outside_code") == 0);
    // The unwind description has room for MT_UNWIND_MAPPINGS mappings (one per file here): the
    // later libraries are left out (walked by frame pointer), and a dlopen whose library is left
    // out leaves the description as it was, not written again. Written at the exec, at the
    // loader's first hook, and at each dlopen whose library fit.
    const json::object stats = stats_object(t);
    const json::value* unwind = stats.if_contains("unwind");
    REQUIRE(unwind != nullptr);
    REQUIRE(unwind->is_object());
    REQUIRE(mapped > MT_UNWIND_MAPPINGS);
    const uint64_t left_out = mapped - MT_UNWIND_MAPPINGS;
    CHECK(need_u64(unwind->get_object(), "mappings_left_out", "unwind") == left_out);
    CHECK(need_u64(unwind->get_object(), "processes_described", "unwind") == 2 + n - left_out);
    // The allocation is the constructor's, in code mapped by that dlopen.
    const std::vector<Resolved> resolved = with_size(dump_resolved(t.result.artifact), FX_MANY_LIB_ALLOC);
    REQUIRE(resolved.size() == n);
    std::set<std::string> modules;
    for (const Resolved& r : resolved) {
        REQUIRE_MESSAGE(!r.frames.empty(), r.event.describe());
        CHECK_MESSAGE(r.frames[0].function == "many_lib_init", show(r.frames));
        CHECK_MESSAGE(r.frames[0].module.starts_with(libs + "/libmany"), show(r.frames));
        modules.insert(r.frames[0].module);
    }
    CHECK(modules.size() == n);
}

TEST_CASE("stacks: C++ frames are demangled, and a call inside inlined code gets the inlined frame") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_cxx"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    const std::string malloc_n = "Malloc x" + std::to_string(n);
    CHECK(show(tally_by_size(t.events, {STK_CXX_WIDGET, STK_CXX_GADGET})) ==
          show(std::map<uint64_t, std::string>{{STK_CXX_WIDGET, malloc_n}, {STK_CXX_GADGET, malloc_n}}));

    const std::string src = "stack_cxx.cpp";
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    auto stack_of = [&](const Event& e) -> const Stack& {
        REQUIRE_MESSAGE(e.stack_hash.has_value(), "no stack_hash: ", e.describe());
        auto it = stacks.find(*e.stack_hash);
        REQUIRE_MESSAGE(it != stacks.end(), "stack of ", e.describe(), " is not in the stacks file");
        return it->second;
    };

    // A static member function in a namespace, named in full.
    {
        const std::vector<Event> made = with_size(t.events, STK_CXX_WIDGET);
        CHECK(made.size() == n);
        for (const Event& e : made) {
            const Stack& s = stack_of(e);
            REQUIRE_MESSAGE(s.frames.size() >= 2, show(s.frames));
            CHECK_MESSAGE(s.frames[0].function == "stk::Widget::make(int)", show(s.frames));
            CHECK_MESSAGE(!s.frames[0].inlined, show(s.frames));
            CHECK_MESSAGE(ends_with(s.frames[0].file, "/" + src), show(s.frames));
            CHECK_MESSAGE(s.frames[0].line == marked_line(src, "widget-make-new"), show(s.frames));
            CHECK_MESSAGE(s.frames[1].function == "main", show(s.frames));
            CHECK_MESSAGE(s.frames[1].line == marked_line(src, "main-calls-make"), show(s.frames));
        }
    }
    // The inlined helper, then the function it was inlined into, both at one address.
    {
        const std::vector<Event> made = with_size(t.events, STK_CXX_GADGET);
        CHECK(made.size() == n);
        for (const Event& e : made) {
            const Stack& s = stack_of(e);
            REQUIRE_MESSAGE(s.frames.size() >= 3, show(s.frames));
            const StackFrame& helper = s.frames[0];
            const StackFrame& outer = s.frames[1];
            CHECK_MESSAGE(helper.inlined, show(s.frames));
            CHECK_MESSAGE(helper.function == "stk::inlined_helper(int)", show(s.frames));
            CHECK_MESSAGE(ends_with(helper.file, "/" + src), show(s.frames));
            CHECK_MESSAGE(helper.line == marked_line(src, "inlined-helper-new"), show(s.frames));
            CHECK_MESSAGE(!outer.inlined, show(s.frames));
            CHECK_MESSAGE(outer.function == "stk::outer(int)", show(s.frames));
            CHECK_MESSAGE(outer.ip == helper.ip, show(s.frames));
            CHECK_MESSAGE(outer.line == marked_line(src, "outer-calls-helper"), show(s.frames));
            CHECK_MESSAGE(s.frames[2].function == "main", show(s.frames));
            CHECK_MESSAGE(!s.frames[2].inlined, show(s.frames));
            CHECK_MESSAGE(s.frames[2].line == marked_line(src, "main-calls-outer"), show(s.frames));
        }
        // --resolve lists the same frames, the inlined one first.
        const auto resolved = with_size(dump_resolved(t.result.artifact), STK_CXX_GADGET);
        CHECK(resolved.size() == n);
        for (const Resolved& r : resolved) {
            REQUIRE_MESSAGE(r.frames.size() >= 3, show(r.frames));
            CHECK_MESSAGE(r.frames[0].function == "stk::inlined_helper(int)", show(r.frames));
            CHECK_MESSAGE(r.frames[1].function == "stk::outer(int)", show(r.frames));
            CHECK_MESSAGE(r.frames[2].function == "main", show(r.frames));
        }
    }
}

// stack_exit_fast's 20 children: one Malloc each, each from its own process, and each stack
// symbolized although its process was gone a few microseconds after the allocation.
static void check_exit_fast(const Tracked& t) {
    INFO("stats: ", t.result.stats.raw);
    INFO("memtrack's stderr: ", t.result.run.err);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);

    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    for (unsigned i = 0; i < STK_EXIT_CHILDREN; i++) {
        sizes.insert(STK_EXIT_FIRST + i);
        expected[STK_EXIT_FIRST + i] = "Malloc x1";
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    const std::string src = "stack_exit_fast.c";
    const std::vector<std::pair<std::string, uint64_t>> want = {
        {"exit_child_alloc", marked_line(src, "exit-child-malloc")},
        {"exit_child", marked_line(src, "exit-child-calls-alloc")},
        {"main", marked_line(src, "main-calls-exit-child")},
    };
    const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
    std::set<int> pids;
    size_t symbolized = 0;
    for (uint64_t size : sizes) {
        for (const Resolved& r : with_size(resolved, size)) {
            CAPTURE(r.event.describe());
            pids.insert(r.event.pid);
            CHECK_MESSAGE(r.event.stack_hash.has_value(), "no stack_hash");
            bool ok = r.frames.size() >= want.size();
            for (size_t i = 0; ok && i < want.size(); i++) {
                const ResolvedFrame& f = r.frames[i];
                ok = f.function == want[i].first && ends_with(f.module, "/stack_exit_fast") && f.line == want[i].second;
            }
            CHECK_MESSAGE(ok, "not symbolized as exit_child_alloc <- exit_child <- main:", show(r.frames));
            symbolized += ok;
        }
    }
    CHECK(symbolized == STK_EXIT_CHILDREN);
    CHECK(pids.size() == STK_EXIT_CHILDREN);
    CHECK(pids.count(t.result.root_pid) == 0);
}

TEST_CASE("stacks: 20 processes that allocate once and exit at once are all symbolized") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    check_exit_fast(track_and_dump(dir, {fixture("stack_exit_fast")}));
}

// Stacks from two images of one process, the second exec'ed from the first: each is symbolized
// with the mappings of its own image (libc moved at the exec). Within one batch, the order is
// the unit suite's ("Symbolizer: new mappings apply from the stack that brought them").
TEST_CASE("stacks: stacks taken before an exec are symbolized with the image they were taken in") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_exec")});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    std::set<uint64_t> sizes = {STK_EXEC_AFTER};
    for (unsigned i = 0; i < STK_EXEC_SITES; i++) sizes.insert(STK_EXEC_BEFORE + i);
    std::map<uint64_t, std::string> expected;
    for (uint64_t size : sizes) expected[size] = "Malloc x1";
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
    auto check_frames = [&](uint64_t size, const std::string& leaf, uint64_t main_line) {
        const auto r = with_size(resolved, size);
        REQUIRE(r.size() == 1);
        const auto& frames = r[0].frames;
        INFO("size ", size, " frames:", show(frames));
        REQUIRE(frames.size() >= 2);
        CHECK(frames[0].function == leaf);
        CHECK(ends_with(frames[0].module, "/stack_exec"));
        CHECK(frames[1].function == "main");
        if (main_line) CHECK(frames[1].line == main_line);
    };
    for (unsigned i = 0; i < STK_EXEC_SITES; i++)
        check_frames(STK_EXEC_BEFORE + i, "exec_site_" + std::to_string(i), 0);
    check_frames(STK_EXEC_AFTER, "exec_after", marked_line("stack_exec.c", "exec-main-calls-after"));
    CHECK(stat_u64(stats_object(t), "stacks_cut_outside_code") == 0);
}

// A process held at its first stack until its mappings are read (MT_HOLD_SNAPSHOT) and paused
// for ring pressure (MT_HOLD_PRESSURE) is one SIGSTOP with two reasons: ending the pressure
// pause must not resume it, or it exits before /proc/PID/maps is read and its stacks come out
// with no module and no function. A tiny events ring with a low stop fill makes every child hit
// both pauses.
TEST_CASE("stacks: ring pressure does not release a process paused for its first stack") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    TrackResult r = track(dir, {fixture("stack_exit_fast")},
                          {"--ring-size", "4096", "--stop-fill", "0.02", "--resume-fill", "0.01"});
    const json::object s = json::parse(r.stats.raw).as_object();
    const uint64_t pressure = stat_u64(s, "pressure_stops");
    CHECK_MESSAGE(pressure > 0, "no pressure pause: the case did not test both pauses at once");
    CHECK(stat_u64(s, "snapshot_stops") == 20);
    Tracked t{r, dump(r.artifact)};
    check_exit_fast(t);
}

TEST_CASE("stacks: a stripped binary gives hashes and modules, no names, and no trouble") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_stripped"), std::to_string(n)});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    CHECK(show(tally_by_size(t.events, {STK_STRIP_SIZE})) == show(std::map<uint64_t, std::string>{
                                                                  {STK_STRIP_SIZE, "Malloc x" + std::to_string(n)}}));

    // Stripped: no symbol table, no DWARF. A name would have to be one of these (had memtrack
    // found the unstripped file somewhere), anything else is made up.
    const std::set<std::string> real = {"", "strip_inner", "strip_outer", "main"};
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    std::set<uint64_t> hashes;
    for (const Event& e : with_size(t.events, STK_STRIP_SIZE)) {
        CAPTURE(e.describe());
        REQUIRE_MESSAGE(e.stack_hash.has_value(), "no stack_hash");
        hashes.insert(*e.stack_hash);
        auto it = stacks.find(*e.stack_hash);
        REQUIRE_MESSAGE(it != stacks.end(), "stack not in the stacks file");
        const auto& frames = it->second.frames;
        // Frame pointers are intact: strip_inner, strip_outer, main, all in the stripped file.
        REQUIRE_MESSAGE(frames.size() >= 3, show(frames));
        for (size_t i = 0; i < 3; i++) {
            CHECK_MESSAGE(ends_with(frames[i].module, "/stack_stripped"), show(frames));
            CHECK_MESSAGE(frames[i].ip != 0, show(frames));
        }
        for (const StackFrame& f : frames) {
            if (!ends_with(f.module, "/stack_stripped")) continue;
            CHECK_MESSAGE(real.count(f.function) == 1, "made-up name \"", f.function, "\":", show(frames));
            CHECK_MESSAGE(f.file.empty(), show(frames));
            CHECK_MESSAGE(f.line == 0, show(frames));
            CHECK_MESSAGE(!f.inlined, show(frames));
        }
    }
    CHECK(hashes.size() == 1);
    // --resolve copes too.
    const auto resolved = with_size(dump_resolved(t.result.artifact), STK_STRIP_SIZE);
    CHECK(resolved.size() == n);
    for (const Resolved& r : resolved) CHECK_MESSAGE(!r.frames.empty(), r.event.describe());
}

TEST_CASE("stacks: a frame-pointer walk (--unwind fp) without frame pointers gets frame 0 right and makes nothing up") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string maps_file = dir / "maps.txt";
    Tracked t = track_and_dump(dir, {fixture("stack_nofp"), maps_file}, {"--unwind", "fp"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    const std::set<uint64_t> sizes = {STK_NOFP_CHAIN, STK_NOFP_LOWADDR, STK_NOFP_DATA, STK_NOFP_BADRBP};
    std::map<uint64_t, std::string> expected;
    for (uint64_t s : sizes) expected[s] = "Malloc x1";
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    const std::vector<Mapping> maps = parse_maps(read_file(maps_file));
    REQUIRE(!maps.empty());
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));

    for (uint64_t size : sizes) {
        for (const Event& e : with_size(t.events, size)) {
            CAPTURE(e.describe());
            REQUIRE_MESSAGE(e.stack_hash.has_value(), "no stack_hash");
            auto it = stacks.find(*e.stack_hash);
            REQUIRE_MESSAGE(it != stacks.end(), "stack not in the stacks file");
            const auto& frames = it->second.frames;
            REQUIRE_MESSAGE(!frames.empty(), "no frames");

            // Frame 0 comes from the registers: always there, always right.
            const StackFrame& f0 = frames[0];
            CHECK_MESSAGE(ends_with(f0.module, "/stack_nofp"), show(frames));
            if (size == STK_NOFP_CHAIN) {
                CHECK_MESSAGE(f0.function == "nofp_leaf", show(frames));
                CHECK_MESSAGE(ends_with(f0.file, "/stack_nofp.c"), show(frames));
                CHECK_MESSAGE(f0.line == marked_line("stack_nofp.c", "nofp-leaf-malloc"), show(frames));
            } else {
                CHECK_MESSAGE(f0.function == "nofp_call_malloc_with_rbp", show(frames));
            }

            // Past it: a frame only for an address in executable code; a walk that reads data
            // as a return address ends there, and a module is only named for an address it maps.
            for (const StackFrame& f : frames) {
                const std::string ip = hex(f.ip);
                CAPTURE(ip);
                const Mapping* m = f.ip ? mapping_of(maps, f.ip - 1) : nullptr;
                REQUIRE_MESSAGE((m && m->executable), "a frame outside code:", show(frames));
                if (m->path.starts_with("/") || m->path == "[vdso]") CHECK_MESSAGE(f.module == m->path, show(frames));
            }

            // The crafted frames: what rbp pointed at (0x10, then an address in .data) is no
            // code, so the stack ends at frame 0.
            if (size != STK_NOFP_CHAIN) CHECK_MESSAGE(frames.size() == 1, show(frames));
        }
    }
    // Those two at least were cut; others (the chain's, glibc's own) may be.
    CHECK(stat_u64(stats_object(t), "stacks_cut_outside_code") >= 2);
}

namespace {

// The frames glibc runs main from, outermost last, as gdb shows them.
const std::vector<std::string> kLibcStart = {"__libc_start_call_main", "__libc_start_main_impl", "_start"};

// frames[from..] are glibc's start frames, down to _start, and nothing after.
void check_libc_start(const std::vector<ResolvedFrame>& frames, size_t from) {
    REQUIRE(frames.size() == from + kLibcStart.size());
    for (size_t i = 0; i < kLibcStart.size(); i++)
        CHECK_MESSAGE(frames[from + i].function == kLibcStart[i], "frame ", from + i);
}

// Tracks a CFI fixture and checks what each of these tests needs first: it ran, nothing was lost.
Tracked track_cfi_fixture(const TempDir& dir, const std::string& name, const std::vector<std::string>& extra = {}) {
    Tracked t = track_and_dump(dir, {fixture(name)}, extra);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    return t;
}

// `want` (function, line; line 0: any) innermost first, then glibc's start frames down to _start.
void check_whole_stack(const std::vector<ResolvedFrame>& frames, const std::string& module_tail,
                       const std::vector<std::tuple<std::string, std::string, uint64_t>>& want) {
    INFO("frames:", show(frames));
    REQUIRE(frames.size() == want.size() + kLibcStart.size());
    for (size_t i = 0; i < want.size(); i++) {
        const auto& [function, module, line] = want[i];
        CHECK_MESSAGE(frames[i].function == function, "frame ", i);
        CHECK_MESSAGE(ends_with(frames[i].module, module.empty() ? module_tail : module), "frame ", i);
        if (line) CHECK_MESSAGE(frames[i].line == line, "frame ", i);
    }
    check_libc_start(frames, want.size());
}

using WantedFrames = std::vector<std::tuple<std::string, std::string, uint64_t>>;

// stack_cfi's chain from cfi_a down to its malloc, innermost first, then `callers`.
WantedFrames cfi_chain_then(const WantedFrames& callers) {
    const std::string src = "stack_cfi.c";
    WantedFrames want = {{"cfi_c", "", marked_line(src, "cfi-c-malloc")},
                         {"cfi_b", "", marked_line(src, "cfi-b-calls-c")},
                         {"cfi_a", "", marked_line(src, "cfi-a-calls-b")}};
    want.insert(want.end(), callers.begin(), callers.end());
    return want;
}

// That chain called from main: stack_cfi's STK_CFI_CHAIN allocation.
WantedFrames cfi_chain_from_main() {
    return cfi_chain_then({{"main", "", marked_line("stack_cfi.c", "cfi-main-calls-a")}});
}

// stack_cfi's malloc in libstackcfi.so (no frame pointers) called from main, innermost first.
WantedFrames cfi_shlib_chain() {
    const std::string lib_src = "stack_cfi_lib.c";
    return {{"cfi_lib_inner", "/libstackcfi.so", marked_line(lib_src, "cfi-lib-inner-malloc")},
            {"cfi_lib_outer", "/libstackcfi.so", marked_line(lib_src, "cfi-lib-outer-calls-inner")},
            {"main", "", marked_line("stack_cfi.c", "cfi-main-calls-lib")}};
}

json::object unwind_stats(const Tracked& t) {
    const json::object s = stats_object(t);
    const json::value* u = s.if_contains("unwind");
    if (!u || !u->is_object()) throw std::runtime_error("--stats: no \"unwind\" object");
    return u->get_object();
}

}  // namespace

TEST_CASE("stacks: code without frame pointers (rbp clobbered) unwinds by its CFI to main and _start") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_cfi_fixture(dir, "stack_cfi");
    const std::set<uint64_t> sizes = {STK_CFI_CHAIN,  STK_CFI_QSORT,  STK_CFI_SHLIB,  STK_CFI_REPEAT,
                                      STK_CFI_TWIN_X, STK_CFI_TWIN_Y, STK_CFI_FORK_P, STK_CFI_FORK_Q};
    std::map<uint64_t, std::string> expected;
    for (uint64_t size : sizes) expected[size] = "Malloc x1";
    expected[STK_CFI_REPEAT] = "Malloc x" + std::to_string(STK_CFI_REPEATS);
    expected[STK_CFI_TWIN_X] = expected[STK_CFI_TWIN_Y] = "Malloc x" + std::to_string(STK_CFI_TWINS);
    expected[STK_CFI_FORK_P] = expected[STK_CFI_FORK_Q] = "Malloc x" + std::to_string(STK_CFI_FORKS);
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    const std::string src = "stack_cfi.c";
    const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
    SUBCASE("a chain of three functions") {
        const auto r = with_size(resolved, STK_CFI_CHAIN);
        REQUIRE(r.size() == 1);
        check_whole_stack(r[0].frames, "/stack_cfi", cfi_chain_from_main());
    }
    SUBCASE("through glibc's qsort") {
        const auto r = with_size(resolved, STK_CFI_QSORT);
        REQUIRE(r.size() == 1);
        const auto& frames = r[0].frames;
        INFO("frames:", show(frames));
        REQUIRE(frames.size() >= 2 + kLibcStart.size());
        CHECK(frames[0].function == "cfi_compare");
        CHECK(frames[0].line == marked_line(src, "cfi-compare-malloc"));
        // qsort's own frames (its merge sort recursing), all in libc, then main.
        size_t i = 1;
        while (i < frames.size() && ends_with(frames[i].module, "/libc.so.6") && frames[i].function != "__libc_start_call_main")
            ++i;
        std::set<std::string> sort_frames;
        for (size_t k = 1; k < i; k++) sort_frames.insert(frames[k].function);
        // qsort itself tail-calls __qsort_r: no frame of its own on the stack (gdb shows one it
        // rebuilds from DWARF call-site data, not from the stack).
        CHECK_MESSAGE(sort_frames.count("__GI___qsort_r"), "no __GI___qsort_r between cfi_compare and main");
        REQUIRE(i < frames.size());
        CHECK(frames[i].function == "main");
        CHECK(frames[i].line == marked_line(src, "cfi-main-calls-qsort"));
        check_libc_start(frames, i + 1);
    }
    SUBCASE("out of a shared library without frame pointers") {
        const auto r = with_size(resolved, STK_CFI_SHLIB);
        REQUIRE(r.size() == 1);
        check_whole_stack(r[0].frames, "/stack_cfi", cfi_shlib_chain());
    }
    SUBCASE("the same chain again, answered by the walk kept from its first time") {
        const auto r = with_size(resolved, STK_CFI_REPEAT);
        REQUIRE(r.size() == STK_CFI_REPEATS);
        for (const Resolved& e : r)
            check_whole_stack(e.frames, "/stack_cfi",
                              cfi_chain_then({{"cfi_repeat", "", marked_line(src, "cfi-repeat-calls-a")},
                                          {"main", "", marked_line(src, "cfi-main-calls-repeat")}}));
    }
    SUBCASE("twins: walks from the same registers whose stacks differ in one word") {
        for (const auto& [size, twin, mark] : {std::tuple{STK_CFI_TWIN_X, "cfi_twin_x", "cfi-twin-x-calls-leaf"},
                                               std::tuple{STK_CFI_TWIN_Y, "cfi_twin_y", "cfi-twin-y-calls-leaf"}}) {
            const auto r = with_size(resolved, size);
            REQUIRE(r.size() == STK_CFI_TWINS);
            for (const Resolved& e : r)
                check_whole_stack(e.frames, "/stack_cfi",
                                  {{"cfi_twin_leaf", "", marked_line(src, "cfi-twin-leaf-malloc")},
                                   {twin, "", marked_line(src, mark)},
                                   {"main", "", marked_line(src, "cfi-main-calls-twin")}});
        }
    }
    SUBCASE("forks: walks that meet the kept one at a frame whose callers differ, then at main") {
        for (const auto& [size, outer, outer_mark, inner, inner_mark] :
             {std::tuple{STK_CFI_FORK_P, "cfi_fork_x", "cfi-fork-x-calls-c", "cfi_fork_m", "cfi-fork-m-calls-leaf"},
              std::tuple{STK_CFI_FORK_Q, "cfi_fork_y", "cfi-fork-y-calls-c", "cfi_fork_n", "cfi-fork-n-calls-leaf"}}) {
            const auto r = with_size(resolved, size);
            REQUIRE(r.size() == STK_CFI_FORKS);
            for (const Resolved& e : r)
                check_whole_stack(e.frames, "/stack_cfi",
                                  {{"cfi_fork_leaf", "", marked_line(src, "cfi-fork-leaf-malloc")},
                                   {inner, "", marked_line(src, inner_mark)},
                                   {"cfi_fork_c", "", marked_line(src, "cfi-fork-c-calls-inner")},
                                   {outer, "", marked_line(src, outer_mark)},
                                   {"main", "", marked_line(src, "cfi-main-calls-fork")}});
        }
    }
    SUBCASE("kept walks: each repeat answered, each twin and fork that differs spliced at its first kept frame") {
        const json::object u = unwind_stats(t);
        // One thread; the repeats, the twins and the forks each start where no other walk does.
        // The first of each is walked whole and kept. A repeat, an X twin and a P fork after it
        // is answered by the kept walk; a Y twin or a Q fork starts as the kept walk but reads
        // another return address, and takes the rest from the kept walk where they meet: the
        // twin at main; the fork not at cfi_fork_c (the word above it, its caller, differs),
        // but at main. A spliced walk is not kept, so the kept walk stays the first one.
        CHECK(need_u64(u, "walks_matched", "unwind") == (STK_CFI_REPEATS - 1) + (STK_CFI_TWINS - 1) + (STK_CFI_FORKS - 1));
        CHECK(need_u64(u, "walks_changed", "unwind") == STK_CFI_TWINS + STK_CFI_FORKS);
        CHECK(need_u64(u, "walks_spliced", "unwind") == STK_CFI_TWINS + STK_CFI_FORKS);
        // The twin's rest is main's frame and libc's below it; the fork's the same.
        CHECK(need_u64(u, "spliced_frames", "unwind") ==
              (STK_CFI_TWINS + STK_CFI_FORKS) * (1 + kLibcStart.size()));
        // Every answered walk's stack had been sent with the walk that was kept.
        CHECK(need_u64(u, "walks_known", "unwind") == need_u64(u, "walks_matched", "unwind"));
    }
    SUBCASE("every walk ended at the outermost frame, each caller found from a row") {
        const json::object u = unwind_stats(t);
        MESSAGE("unwind stats: ", json::serialize(u));
        const json::object s = stats_object(t);
        CHECK(need_u64(u, "walks_complete", "unwind") == stat_u64(s, "stacks_captured"));
        for (const char* key : {"walks_truncated", "walks_unsupported", "walks_read_failed", "walks_bad_frame",
                                "walks_without_tables", "frame_pointer_frames", "describe_errors", "tables_full"})
            CHECK_MESSAGE(need_u64(u, key, "unwind") == 0, key);
        CHECK(need_u64(u, "cfi_frames", "unwind") > 0);
    }
}

TEST_CASE("stacks: a second run reads every unwind table from the cache folder and walks the same stacks") {
    ROOT_SUITE_GUARD();
    TempDir cache, first_dir, second_dir, uncached_dir;
    const std::vector<std::string> opts = {"--cache-dir", cache / "cfi"};
    // Each run's stacks of the chain and of the shared library: whole, and equal in every run.
    auto check_stacks = [&](const Tracked& t) {
        const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
        const auto chain = with_size(resolved, STK_CFI_CHAIN);
        REQUIRE(chain.size() == 1);
        check_whole_stack(chain[0].frames, "/stack_cfi", cfi_chain_from_main());
        const auto shlib = with_size(resolved, STK_CFI_SHLIB);
        REQUIRE(shlib.size() == 1);
        check_whole_stack(shlib[0].frames, "/stack_cfi", cfi_shlib_chain());
        const json::object u = unwind_stats(t);
        CHECK(need_u64(u, "walks_complete", "unwind") == stat_u64(stats_object(t), "stacks_captured"));
        CHECK(need_u64(u, "frame_pointer_frames", "unwind") == 0);
        CHECK(need_u64(u, "cache_errors", "unwind") == 0);
        return show(chain[0].frames) + show(shlib[0].frames);
    };

    Tracked first = track_cfi_fixture(first_dir, "stack_cfi", opts);
    const json::object u1 = unwind_stats(first);
    MESSAGE("first run: ", json::serialize(u1));
    const uint64_t objects = need_u64(u1, "objects", "unwind");
    CHECK(objects >= 3);  // stack_cfi, libstackcfi.so, libc, the loader
    CHECK(need_u64(u1, "objects_from_cache", "unwind") == 0);
    CHECK(need_u64(u1, "objects_stored_in_cache", "unwind") == objects);
    const std::string stacks1 = check_stacks(first);

    Tracked second = track_cfi_fixture(second_dir, "stack_cfi", opts);
    const json::object u2 = unwind_stats(second);
    MESSAGE("second run: ", json::serialize(u2));
    CHECK(need_u64(u2, "objects", "unwind") == objects);
    CHECK(need_u64(u2, "objects_from_cache", "unwind") == objects);
    CHECK(need_u64(u2, "objects_stored_in_cache", "unwind") == 0);
    CHECK(need_u64(u2, "rows", "unwind") == need_u64(u1, "rows", "unwind"));
    CHECK(check_stacks(second) == stacks1);

    // --no-cache: every table built, none read or kept.
    size_t entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(cache / "cfi")) entries += e.path().extension() == ".cfi";
    CHECK(entries == objects);
    Tracked uncached = track_cfi_fixture(uncached_dir, "stack_cfi", {"--no-cache"});
    const json::object u3 = unwind_stats(uncached);
    CHECK(need_u64(u3, "objects_from_cache", "unwind") == 0);
    CHECK(need_u64(u3, "objects_stored_in_cache", "unwind") == 0);
    CHECK(check_stacks(uncached) == stacks1);
}

TEST_CASE("stacks: with --system-wide-probes, each process is described to the CFI walker too") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_cfi_fixture(dir, "stack_cfi", {"--system-wide-probes"});
    const auto r = with_size(dump_resolved(t.result.artifact), STK_CFI_CHAIN);
    REQUIRE(r.size() == 1);
    check_whole_stack(r[0].frames, "/stack_cfi", cfi_chain_from_main());
    const json::object u = unwind_stats(t);
    CHECK(need_u64(u, "walks_without_tables", "unwind") == 0);
    CHECK(need_u64(u, "frame_pointer_frames", "unwind") == 0);
    CHECK(need_u64(u, "walks_complete", "unwind") == stat_u64(stats_object(t), "stacks_captured"));
}

TEST_CASE("stacks: the same program walked by frame pointer (--unwind fp) loses its callers") {
    ROOT_SUITE_GUARD();
    // What the CFI walk is for: with rbp clobbered, frame pointers cannot reach main.
    TempDir dir;
    Tracked t = track_cfi_fixture(dir, "stack_cfi", {"--unwind", "fp"});
    const auto r = with_size(dump_resolved(t.result.artifact), STK_CFI_CHAIN);
    REQUIRE(r.size() == 1);
    INFO("frames:", show(r[0].frames));
    REQUIRE(!r[0].frames.empty());
    CHECK(r[0].frames[0].function == "cfi_c");
    for (const ResolvedFrame& f : r[0].frames) CHECK(f.function != "main");
}

TEST_CASE("stacks: C++ at -O2 without frame pointers: every vector growth unwinds to main") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_cfi_fixture(dir, "stack_cfi_cxx");
    // Capacity doubles from 1 to STK_CFI_CXX_ELEMS: one allocation per power of two.
    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    for (uint64_t n = 1; n <= STK_CFI_CXX_ELEMS; n *= 2) {
        sizes.insert(n * sizeof(unsigned));
        expected[n * sizeof(unsigned)] = "Malloc x1";
    }
    // (The loader maps pages of those sizes too: allocations only.)
    CHECK(show(tally_by_size(select(t.events, is_allocation), sizes)) == show(expected));
    const std::string src = "stack_cfi_cxx.cpp";
    const std::vector<Resolved> resolved = dump_resolved(t.result.artifact);
    for (uint64_t size : sizes) {
        const auto r = with_size(resolved, size);
        REQUIRE(r.size() == 1);
        const auto& frames = r[0].frames;
        INFO("size ", size, ", frames:", show(frames));
        // The vector's growth code (inlined frames of libstdc++'s templates, named with their
        // return types), then cfi_grow at the push_back, main, glibc.
        size_t i = 0;
        while (i < frames.size() && frames[i].function.find("std::") != std::string::npos) ++i;
        CHECK(i > 0);
        REQUIRE(i + 2 <= frames.size());
        CHECK(frames[i].function == "cfi_grow");
        CHECK(frames[i].line == marked_line(src, "cfi-grow-push-back"));
        CHECK(frames[i + 1].function == "main");
        CHECK(frames[i + 1].line == marked_line(src, "cfi-main-calls-grow"));
        check_libc_start(frames, i + 2);
    }
}

TEST_CASE("stacks: 100k allocations from 10 call sites send about 10 stacks") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_sites")});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);

    std::set<uint64_t> sizes;
    std::map<uint64_t, std::string> expected;
    for (unsigned i = 0; i < STK_SITES_COUNT; i++) {
        sizes.insert(STK_SITES_FIRST + i * STK_SITES_STEP);
        expected[STK_SITES_FIRST + i * STK_SITES_STEP] = "Malloc x" + std::to_string(STK_SITES_CALLS);
    }
    CHECK(show(tally_by_size(t.events, sizes)) == show(expected));

    // One stack per call site, none shared, none missing.
    std::map<uint64_t, std::set<uint64_t>> hashes_by_size;
    std::set<uint64_t> hashes;
    size_t without = 0;
    for (const Event& e : t.events) {
        if (!e.size || !sizes.count(*e.size) || !is_allocation(e)) continue;
        if (!e.stack_hash) {
            ++without;
            continue;
        }
        hashes_by_size[*e.size].insert(*e.stack_hash);
        hashes.insert(*e.stack_hash);
    }
    CHECK(without == 0);
    CHECK(hashes.size() == STK_SITES_COUNT);
    for (const auto& [size, hs] : hashes_by_size) CHECK_MESSAGE(hs.size() == 1, "size ", size);

    const json::object s = stats_object(t);
    const uint64_t sent = stat_u64(s, "stacks_sent");
    const double per_event = stat_double(s, "ring_bytes_per_event");
    MESSAGE("stacks_sent ", sent, ", ring_bytes_per_event ", per_event);
    CHECK(sent >= STK_SITES_COUNT);
    CHECK(sent <= 2 * STK_SITES_COUNT);
    CHECK(per_event <= 64.0);
    CHECK(stat_u64(s, "allocation_events") >= STK_SITES_COUNT * STK_SITES_CALLS);
    CHECK(stat_u64(s, "stacks_captured") >= STK_SITES_COUNT * STK_SITES_CALLS);

    // And each of those stacks names its site.
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    for (const auto& [size, hs] : hashes_by_size) {
        const std::string site = "site_" + std::to_string((size - STK_SITES_FIRST) / STK_SITES_STEP);
        for (uint64_t h : hs) {
            auto it = stacks.find(h);
            REQUIRE_MESSAGE(it != stacks.end(), "stack of size ", size, " not in the stacks file");
            const auto& frames = it->second.frames;
            REQUIRE_MESSAGE(frames.size() >= 2, show(frames));
            CHECK_MESSAGE(frames[0].function == site, show(frames));
            CHECK_MESSAGE(frames[1].function == "main", show(frames));
        }
    }
}

TEST_CASE("stacks: a flood of new stacks faster than the symbolizer pauses the flood, loses no stack, and bounds the queue") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    // A symbolizer slowed to 200 us per new stack (4096 of them: ~0.8 s behind), a queue of 64
    // batches of 8 stacks and a 64 KiB stacks ring (~250 of these stacks): the flood outruns
    // both within milliseconds.
    Tracked t;
    t.result = track(dir, {fixture("stack_flood")},
                     {"--symbolize-delay-us", "200", "--chunk-records", "8", "--stack-ring-size", "64K"});
    t.events = dump(t.result.artifact);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);

    const json::object s = stats_object(t);
    MESSAGE("pressure_stops ", stat_u64(s, "pressure_stops"), ", symbolizer_max_queued_batches ",
            stat_u64(s, "symbolizer_max_queued_batches"), ", shutdown_stacks_ms ", stat_double(s, "shutdown_stacks_ms"));
    // What lagging does: the queue stays within its bound, and the writers are paused by the
    // stacks ring's pressure instead of anything being dropped.
    CHECK(stat_u64(s, "pressure_stops") > 0);
    CHECK(stat_u64(s, "symbolizer_max_queued_batches") <= 64);
    CHECK(stat_u64(s, "symbolizer_max_queued_batches") > 1);
    CHECK(stat_u64(s, "dropped") == 0);
    CHECK(stat_double(s, "symbolize_cpu_s") > 0);

    // Every allocation of the flood has its own stack, and every stack is in the file, leaf first.
    std::set<uint64_t> hashes;
    size_t allocations = 0;
    for (const Event& e : t.events) {
        if (!e.size || *e.size != STK_FLOOD_SIZE || !is_allocation(e)) continue;
        ++allocations;
        REQUIRE(e.stack_hash.has_value());
        hashes.insert(*e.stack_hash);
    }
    CHECK(allocations == (1u << STK_FLOOD_DEPTH));
    CHECK(hashes.size() == (1u << STK_FLOOD_DEPTH));
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    size_t missing = 0;
    for (uint64_t h : hashes) {
        auto it = stacks.find(h);
        if (it == stacks.end()) {
            ++missing;
            continue;
        }
        const auto& frames = it->second.frames;
        REQUIRE_MESSAGE(frames.size() >= STK_FLOOD_DEPTH + 2, show(frames));
        CHECK_MESSAGE(frames[0].function == "leaf", show(frames));
    }
    CHECK(missing == 0);
}

TEST_CASE("stacks: --time-bpf-parts times every allocation's return program, and only with it") {
    ROOT_SUITE_GUARD();
    for (bool timed : {false, true}) {
        CAPTURE(timed);
        TempDir dir;
        std::vector<std::string> extra;
        if (timed) extra.push_back("--time-bpf-parts");
        Tracked t = track_and_dump(dir, {fixture("stack_sites")}, extra);
        CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
        check_common(t);
        const json::object s = stats_object(t);
        const json::object& parts = s.at("bpf_parts").as_object();
        const uint64_t events = stat_u64(s, "allocation_events");
        CHECK(events >= STK_SITES_COUNT * STK_SITES_CALLS);
        CHECK(parts.at("events").to_number<uint64_t>() == (timed ? events : 0));
        for (const char* part : {"walk_ns_per_event", "hash_ns_per_event", "event_record_ns_per_event"}) {
            CAPTURE(part);
            CHECK((parts.at(part).to_number<double>() > 0) == timed);
        }
        // Every loaded program is listed, whatever kernel.bpf_stats_enabled says.
        const json::object& programs = s.at("bpf_programs").as_object();
        for (const char* prog : {"alloc_entry", "alloc_return", "on_fork", "on_exec", "on_exit"}) {
            CAPTURE(prog);
            CHECK(programs.contains(prog));
        }
    }
}

TEST_CASE("stacks: 128k distinct stacks, each twice: each crosses the ring once, not again once 64k others came") {
    ROOT_SUITE_GUARD();
    // Twice the stacks an LRU hash of 64k entries held: with it, every stack of the second pass
    // had been forgotten and was sent again (stacks_sent twice stacks_unique).
    constexpr unsigned kDepth = 17, kStacks = 1u << kDepth;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_flood"), std::to_string(kDepth), "2"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    std::map<uint64_t, unsigned> uses;
    size_t allocations = 0;
    for (const Event& e : t.events) {
        if (!e.size || *e.size != STK_FLOOD_SIZE || !is_allocation(e)) continue;
        ++allocations;
        REQUIRE(e.stack_hash.has_value());
        ++uses[*e.stack_hash];
    }
    CHECK(allocations == 2 * kStacks);
    CHECK(uses.size() == kStacks);
    size_t not_twice = 0;
    for (const auto& [hash, n] : uses) not_twice += n != 2;
    CHECK(not_twice == 0);

    // Not check_stack_stats: here some stacks are sent again (below).
    const json::object s = stats_object(t);
    MESSAGE("stack stats:", stack_stats(s));
    CHECK(stat_u64(s, "stack_errors") == 0);
    CHECK(stat_u64(s, "stacks_dropped") == 0);
    const uint64_t sent = stat_u64(s, "stacks_sent"), unique = stat_u64(s, "stacks_unique");
    CHECK(unique >= kStacks);
    // Sent again only where later stacks took both ways of its set (1-2 % here).
    CHECK(sent < unique + kStacks / 20);
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    size_t missing = 0;
    for (const auto& [hash, n] : uses) missing += !stacks.count(hash);
    CHECK(missing == 0);
}

TEST_CASE("stacks: two threads meeting each new stack at the same moment send it once") {
    ROOT_SUITE_GUARD();
    // Both threads wait for each other before each of the 4096 stacks, so each new stack is
    // captured on both CPUs at once: a lookup of seen_stacks followed by a later mark let both
    // send it (4935-7259 stacks sent for 4097-4098 unique, measured before the claim).
    constexpr unsigned kStacks = 1u << STK_FLOOD_DEPTH;
    TempDir dir;
    Tracked t = track_and_dump(dir, {fixture("stack_flood"), std::to_string(STK_FLOOD_DEPTH), "1", "2"});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    check_stack_stats(t);
    std::map<uint64_t, std::set<int>> tids_by_stack;
    size_t allocations = 0;
    for (const Event& e : t.events) {
        if (!e.size || *e.size != STK_FLOOD_SIZE || !is_allocation(e)) continue;
        ++allocations;
        REQUIRE(e.stack_hash.has_value());
        tids_by_stack[*e.stack_hash].insert(e.tid);
    }
    CHECK(allocations == 2 * kStacks);
    CHECK(tids_by_stack.size() == kStacks);
    size_t not_both = 0;
    for (const auto& [hash, tids] : tids_by_stack) not_both += tids.size() != 2;
    CHECK(not_both == 0);
    CHECK(stat_u64(stats_object(t), "stacks_unclaimed") == 0);
}

TEST_CASE("stacks: JavaScript frames are named from node's perf map") {
    ROOT_SUITE_GUARD();
    // Debian's nodejs: scripts/deps.sh installs it for this test.
    REQUIRE_MESSAGE(::access("/usr/bin/node", X_OK) == 0, "/usr/bin/node is missing (apt-get install nodejs)");
    TempDir dir;
    const std::string script = dir / "alloc.js";
    // Each ArrayBuffer's backing store is one allocation in node's C++ code, called from the
    // JavaScript function: interpreted first (each with a trampoline of its own, so it has an
    // address), then compiled, each version logged to /tmp/perf-PID.map before it runs.
    write_file(script,
               "function makeBuffersForMemtrack(n) {\n"
               "  const keep = [];\n"
               "  for (let i = 0; i < n; i++) keep.push(new ArrayBuffer(100000 + i));\n"
               "  return keep.length;\n"
               "}\n"
               "let total = 0;\n"
               "for (let r = 0; r < 200; r++) total += makeBuffersForMemtrack(20);\n"
               "if (total !== 4000) process.exit(1);\n");
    // --perf-basic-prof turns V8's log on too: into the test's folder, not the working directory.
    Tracked t = track_and_dump(dir, {"/usr/bin/node", "--perf-basic-prof", "--interpreted-frames-native-stack",
                                     "--logfile=" + (dir / "v8.log"), "--no-logfile-per-isolate", script});
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_stack_stats(t);
    for (int pid : pids_of(t.events)) ::unlink(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
    std::set<uint64_t> sizes;
    for (uint64_t s = 100000; s < 100020; ++s) sizes.insert(s);
    // node makes ~465k allocations of its own: the buffers' stacks are looked up in the stacks
    // file by hash rather than through `dump --resolve`, whose 1.1 GB of JSON lines would be
    // most of this case's time (past its bound with the sanitized memtrack).
    const auto stacks = dump_stacks(stacks_file_of(t.result.artifact));
    size_t buffers = 0, named = 0;
    std::string example;
    for (const Event& e : t.events) {
        if (!is_allocation(e) || !e.size || !sizes.count(*e.size)) continue;
        ++buffers;
        REQUIRE(e.stack_hash.has_value());
        const auto it = stacks.find(*e.stack_hash);
        REQUIRE_MESSAGE(it != stacks.end(), "no stack ", hex(*e.stack_hash), " in the stacks file");
        const auto& frames = it->second.frames;
        const bool has_js = std::any_of(frames.begin(), frames.end(), [&](const StackFrame& f) {
            return f.module == "[jit]" && f.function.starts_with("JS:") &&
                   f.function.find("makeBuffersForMemtrack " + script + ":1:") != std::string::npos;
        });
        named += has_js;
        if (!has_js && example.empty()) example = show(frames);
    }
    CHECK(buffers == 4000);
    CHECK_MESSAGE(named == buffers, "a stack without the JavaScript frame: ", example);
    CHECK(stat_u64(stats_object(t), "symbolizer_jit_frames") > 0);
}

TEST_CASE("stacks: a Rust release binary's frames have demangled names, legacy and v0 mangling alike") {
    ROOT_SUITE_GUARD();
    for (const char* name : {"stack_rust_legacy", "stack_rust_v0"}) {
        CAPTURE(name);
        TempDir dir;
        Tracked t = track_and_dump(dir, {fixture(name), "3"});
        CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
        check_common(t);
        check_stack_stats(t);
        CHECK(show(tally_by_size(t.events, {12345})) == show(std::map<uint64_t, std::string>{{12345, "Malloc x3"}}));
        const std::vector<Resolved> resolved = with_size(dump_resolved(t.result.artifact), 12345);
        CHECK(resolved.size() == 3);
        for (const Resolved& r : resolved) {
            REQUIRE_MESSAGE(r.frames.size() >= 2, show(r.frames));
            CHECK_MESSAGE(r.frames[0].function == "stack_rust::make_rust_buffer_for_memtrack", show(r.frames));
            CHECK_MESSAGE(ends_with(r.frames[0].module, std::string("/") + name), show(r.frames));
            CHECK_MESSAGE(r.frames[1].function == "stack_rust::main", show(r.frames));
            // Then Rust's runtime (std::rt::lang_start_internal, built without frame pointers)
            // down to the C main and _start: the whole stack, by CFI.
            const size_t c_main = r.frames.size() - 1 - kLibcStart.size();
            REQUIRE_MESSAGE(r.frames.size() > 3 + kLibcStart.size(), show(r.frames));
            CHECK_MESSAGE(r.frames[c_main - 1].function == "std::rt::lang_start_internal", show(r.frames));
            CHECK_MESSAGE(r.frames[c_main].function == "main", show(r.frames));
            check_libc_start(r.frames, c_main + 1);
        }
    }
}

namespace {

// A local "debuginfod server" that never answers: a listening socket nobody accepts on, so a
// client's connection waits in its backlog. Sets DEBUGINFOD_URLS (and a short client timeout)
// for the processes the test starts while it lives.
class SilentServer {
public:
    SilentServer() {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(fd_, 64) == 0);
        socklen_t len = sizeof a;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
        const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
        ::setenv("DEBUGINFOD_URLS", url.c_str(), 1);
        ::setenv("DEBUGINFOD_TIMEOUT", "3", 1);
    }
    ~SilentServer() {
        ::unsetenv("DEBUGINFOD_URLS");
        ::unsetenv("DEBUGINFOD_TIMEOUT");
        refuse();
    }
    SilentServer(const SilentServer&) = delete;
    SilentServer& operator=(const SilentServer&) = delete;
    // Connections made to it so far (each taken off the backlog).
    unsigned connections() {
        unsigned n = 0;
        for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0; ++n) ::close(c);
        return n;
    }
    // Stops listening: every later request fails at once.
    void refuse() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_ = -1;
};

}  // namespace

TEST_CASE("stacks: DEBUGINFOD_URLS alone makes no network request; --debuginfod does") {
    ROOT_SUITE_GUARD();
    const unsigned n = 3;
    SilentServer server;
    {
        // A stripped binary: libdw looks for its debug info everywhere it may.
        TempDir dir;
        const uint64_t t0 = monotonic_ns();
        Tracked t = track_and_dump(dir, {fixture("stack_stripped"), std::to_string(n)});
        const double seconds = double(monotonic_ns() - t0) / 1e9;
        CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
        CHECK(tally(with_size(t.events, STK_STRIP_SIZE)) == "Malloc x" + std::to_string(n));
        CHECK_MESSAGE(server.connections() == 0, "memtrack asked DEBUGINFOD_URLS' server without --debuginfod");
        CHECK_MESSAGE(seconds < 20, "the run took ", seconds, " s");
    }
    {
        TempDir dir;
        Tracked t;
        t.result = track(dir, {fixture("stack_stripped"), std::to_string(n)}, {"--debuginfod"});
        CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
        CHECK_MESSAGE(server.connections() >= 1, "--debuginfod did not ask the server");
    }
}

TEST_CASE("stacks: with --debuginfod, a process held for its first stack does not wait for a silent server") {
    ROOT_SUITE_GUARD();
    // The server answers nothing for 600 s (DEBUGINFOD_TIMEOUT): the lookup of the shell's and
    // the fixture's missing debug info stalls the symbolizer until the test lets it fail. Each
    // fixture process is held at its first stack meanwhile, and runs on only once its mappings
    // are read. The three runs take well under a second when no pause waits for the lookup, so
    // 20 s cannot be reached by a slow machine, and cannot be passed by a lookup that gave up.
    constexpr double kBoundS = 20;
    SilentServer server;
    ::setenv("DEBUGINFOD_TIMEOUT", "600", 1);
    TempDir dir;
    ::setenv("DEBUGINFOD_CACHE_PATH", (dir / "debuginfod-cache").c_str(), 1);  // no answer remembered from before
    const std::string marker = dir / "done";
    const std::string f = fixture("stack_stripped");
    const std::string script = f + " 1; " + f + " 1; " + f + " 1; : > " + marker;

    const uint64_t t0 = monotonic_ns();
    double done_s = -1;
    unsigned asked = 0;
    // Ends the stall once the command is done (or the bound passed), so memtrack can finish.
    std::thread releaser([&] {
        while (double(monotonic_ns() - t0) / 1e9 < kBoundS) {
            if (::access(marker.c_str(), F_OK) == 0) {
                done_s = double(monotonic_ns() - t0) / 1e9;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        asked = server.connections();
        server.refuse();
    });
    Tracked t;
    try {
        t.result = track(dir, {"/bin/sh", "-c", script}, {"--debuginfod"});
    } catch (...) {
        releaser.join();
        ::unsetenv("DEBUGINFOD_CACHE_PATH");
        throw;
    }
    releaser.join();
    ::unsetenv("DEBUGINFOD_CACHE_PATH");
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    CHECK_MESSAGE(asked >= 1, "no lookup was waiting on the server while the command ran: the test proves nothing");
    CHECK_MESSAGE((done_s >= 0 && done_s < kBoundS), "the command was not done ", kBoundS,
                  " s after memtrack started (done at ", done_s, " s)");
    t.events = dump(t.result.artifact);
    CHECK(tally(with_size(t.events, STK_STRIP_SIZE)) == "Malloc x3");
}

namespace {

// CPython interpreters to run python_frames.py with: Debian's python3.11 (scripts/deps.sh
// installs it: never skipped), and pyenv's 3.10-3.13 where this machine has them.
std::vector<std::pair<std::string, int>> python_interpreters() {
    std::vector<std::pair<std::string, int>> out = {{"/usr/bin/python3.11", 11}};
    const char* env = std::getenv("PYENV_ROOT");
    const char* home = std::getenv("HOME");
    const fs::path root = env && *env ? fs::path(env) : fs::path(home ? home : "/root") / ".pyenv";
    for (int minor : {10, 11, 12, 13}) {
        std::string found;
        std::error_code ec;
        for (const auto& d : fs::directory_iterator(root / "versions", ec)) {
            const std::string name = d.path().filename().string();
            const fs::path bin = d.path() / "bin" / ("python3." + std::to_string(minor));
            if (name.starts_with("3." + std::to_string(minor) + ".") && fs::exists(bin)) found = bin.string();
        }
        if (found.empty()) MESSAGE("SKIP python 3.", minor, " of pyenv: not installed under ", root.string());
        else out.emplace_back(found, minor);
    }
    return out;
}

}  // namespace

namespace {

// Runs python_frames.py under `python` (3.`minor`; with -X perf when `perf`) and checks the
// Python frames of its known allocations frame for frame. With -X perf each Python call is an
// eval loop called through a perf trampoline: the whole stack is there, down to the thread's
// start, with each trampoline folded into the Python frame it ran.
void check_python_stacks(const std::string& artifact, const Stats& stats, int minor, bool perf) {
    const std::string src = "python_frames.py";
    auto line = [&](const char* mark) { return marked_line(src, mark); };
    {
        if (perf) {
            CHECK(stats_u64(stats, "python_trampolines_folded") > 0);
            CHECK(stats_u64(stats, "stacks_cut_outside_code") == 0);
        } else {
            CHECK(stats_u64(stats, "python_trampolines_folded") == 0);
        }
        // 3.10's code objects have no qualified name.
        auto qual = [&](const std::string& cls, const std::string& fn) { return minor >= 11 ? cls + "." + fn : fn; };
        using Want = std::vector<std::tuple<std::string, std::string, uint64_t>>;  // function, file, line (0: any)
        // The frames of one of main's calls, then main at that call and the module at main's.
        auto chain = [&](Want head, const char* main_mark) {
            head.emplace_back("main", src, line(main_mark));
            head.emplace_back("<module>", src, line("py-module"));
            return head;
        };
        const std::string json_py = "decoder.py";
        const std::map<uint64_t, Want> want = {
            {1000004, chain({{qual("Store", "fill"), src, line("py-method")}}, "py-main-method")},
            {1000034, chain({{"recurse", src, line("py-recurse-leaf")},
                             {"recurse", src, line("py-recurse-call")},
                             {"recurse", src, line("py-recurse-call")},
                             {"recurse", src, line("py-recurse-call")}},
                            "py-main-recurse")},
            {1000038, chain({{"gen", src, line("py-gen")}}, "py-main-gen")},
            {1000040, chain({{"hook", src, line("py-hook")},
                             {qual("JSONDecoder", "raw_decode"), json_py, 0},
                             {qual("JSONDecoder", "decode"), json_py, 0},
                             {"loads", "__init__.py", 0}},
                            "py-main-json")},
            // In a forked child: the parent's runtime, at the same address.
            {1000100, chain({{"in_child", src, line("py-child")}}, "py-main-fork")},
            {1000082, {{"in_thread", src, line("py-thread")},
                       {qual("Thread", "run"), "threading.py", 0},
                       {qual("Thread", "_bootstrap_inner"), "threading.py", 0},
                       {qual("Thread", "_bootstrap"), "threading.py", 0}}},
        };
        const std::vector<Resolved> resolved = dump_resolved(artifact);
        // Every Python frame of the run is named, and named right: a code object freed after its
        // stack (a module's body, an exec'd string) was shown as "?", one made at its address
        // later lent its name, when frames were read again at write time. The script's own
        // functions run under its module's frame or the thread's bootstrap, nowhere else.
        CHECK(stats_u64(stats, "python_frames_unnamed") == 0);
        size_t unnamed = 0, misplaced = 0;
        for (const Resolved& r : resolved) {
            const ResolvedFrame* outermost = nullptr;
            bool script = false;
            for (const ResolvedFrame& f : r.frames) {
                if (f.module != "[python]") continue;
                outermost = &f;
                unnamed += f.function == "?";
                script = script || base_name(f.file) == src;
            }
            if (script && !(outermost->function == "<module>" && base_name(outermost->file) == src) &&
                outermost->function != qual("Thread", "_bootstrap")) {
                if (misplaced++ == 0) MESSAGE("a frame of ", src, " outside it:", show(r.frames));
            }
        }
        CHECK_MESSAGE(unnamed == 0, unnamed, " Python frames named \"?\" among ", resolved.size(), " events");
        CHECK(misplaced == 0);
        for (const auto& [size, frames] : want) {
            CAPTURE(size);
            const auto events = with_size(resolved, size);
            REQUIRE_MESSAGE(events.size() == 1, events.size(), " allocations of ", size, " bytes");
            const Resolved& r = events.front();
            std::vector<ResolvedFrame> py;
            for (const ResolvedFrame& f : r.frames) {
                if (f.module == "[python]") py.push_back(f);
                // The eval loop's frames are replaced by the Python frames they ran.
                CHECK_MESSAGE(!f.function.starts_with("_PyEval_EvalFrameDefault"), show(r.frames));
            }
            REQUIRE_MESSAGE(py.size() == frames.size(), "python frames:", show(py), "\nall:", show(r.frames));
            for (size_t i = 0; i < frames.size(); i++) {
                const auto& [fn, file, ln] = frames[i];
                CHECK_MESSAGE(py[i].function == fn, "frame ", i, ":", show(py));
                CHECK_MESSAGE(base_name(py[i].file) == file, "frame ", i, ":", show(py));
                if (ln) CHECK_MESSAGE(py[i].line == ln, "frame ", i, ":", show(py));
                else CHECK_MESSAGE(py[i].line > 0, "frame ", i, ":", show(py));
            }
            // Interleaved: the C code between hook and the decoder (the _json extension's
            // scanner, which calls object_hook) sits between their frames.
            if (size == 1000040) {
                size_t hook_at = 0, decoder_at = 0, json_c = 0;
                for (size_t i = 0; i < r.frames.size(); i++) {
                    if (r.frames[i].function == "hook") hook_at = i;
                    if (r.frames[i].function == qual("JSONDecoder", "raw_decode")) decoder_at = i;
                    if (r.frames[i].module.find("_json") != std::string::npos) json_c = i;
                }
                CHECK_MESSAGE((hook_at < json_c && json_c < decoder_at), show(r.frames));
            }
            if (perf) {
                // Each Python frame its own eval call through a trampoline, the walk past all
                // of them to the thread's first frame; no trampoline left unfolded.
                size_t evaluators = 0, jit = 0;
                for (const ResolvedFrame& f : r.frames) {
                    evaluators += f.function == "py_trampoline_evaluator";
                    jit += f.module == "[jit]" || (f.module.empty() && f.function.empty());
                }
                CHECK_MESSAGE(evaluators == py.size(), show(r.frames));
                CHECK_MESSAGE(jit == 0, show(r.frames));
                const std::string outermost = r.frames.empty() ? "" : r.frames.back().function;
                CHECK_MESSAGE(outermost == (size == 1000082 ? "__clone3" : "_start"), show(r.frames));
            }
        }
    }
}

// Tracks python_frames.py run by `python` (3.`minor`), after `prefix` (a command that runs it),
// with -X perf when `perf`, and checks its stacks.
void check_python_frames(const std::string& python, int minor, bool perf,
                         const std::vector<std::string>& prefix = {}) {
    CAPTURE(python);
    CAPTURE(perf);
    REQUIRE_MESSAGE(fs::exists(python), python, " is missing: scripts/deps.sh installs it");
    TempDir dir;
    std::vector<std::string> command = prefix;
    command.push_back(python);
    if (perf) command.insert(command.end(), {"-X", "perf"});
    command.push_back(fixture_source("python_frames.py"));
    Tracked t = track_and_dump(dir, command);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_python_stacks(t.result.artifact, t.result.stats, minor, perf);
}

}  // namespace

TEST_CASE("stacks: Python frames (3.10-3.13) replace the eval loop's, frame for frame: name, file, line, in threads and forked children") {
    ROOT_SUITE_GUARD();
    for (const auto& [python, minor] : python_interpreters()) check_python_frames(python, minor, false);
}

TEST_CASE("stacks: Python frames of a python in a new pid namespace (unshare -p -f --mount-proc)") {
    ROOT_SUITE_GUARD();
    // Debian's 3.11 (its table's offsets) and the newest pyenv interpreter (3.13: its own
    // _Py_DebugOffsets): thread states are matched by fs base, never by a pid the namespace renames.
    const auto all = python_interpreters();
    std::vector<std::pair<std::string, int>> some = {all.front()};
    if (all.size() > 1) some.push_back(all.back());
    for (const auto& [python, minor] : some)
        check_python_frames(python, minor, false, {"unshare", "-p", "-f", "--mount-proc"});
}

TEST_CASE("stacks: Python frames of a python memtrack attaches to (ctl attach), and of its thread and forked child") {
    ROOT_SUITE_GUARD();
    const auto all = python_interpreters();
    const auto [python, minor] = all.back();
    CAPTURE(python);
    TempDir dir;
    const std::string sock = dir / "ctl.sock", ready = dir / "ready", go = dir / "go", done = dir / "done";
    // memtrack tracks a shell that waits for `done`; python, the test's own child, waits for `go`.
    RunResult tracked, attached;
    std::thread mt([&] {
        tracked = run({memtrack_bin(), "track", "--socket", sock, "-o", dir / "out", "--stats", dir / "stats.json",
                       "--", "/bin/sh", "-c", "while [ ! -e " + done + " ]; do sleep 0.05; done"});
    });
    std::thread py([&] { attached = run({python, fixture_source("python_frames.py"), ready, go}); });
    auto finish = [&] {
        write_file(go, "");
        write_file(done, "");
        py.join();
        mt.join();
    };
    int pid = 0;
    try {
        for (int i = 0; i < 3000 && (!fs::exists(sock) || !fs::exists(ready)); i++)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        REQUIRE(fs::exists(sock));
        REQUIRE(fs::exists(ready));
        pid = std::stoi(read_file(ready));
        RunResult a = run({memtrack_bin(), "ctl", "--socket", sock, "--timeout", "30", "attach", "--pid", std::to_string(pid)});
        CHECK_MESSAGE(a.status == 0, a.describe());
        write_file(go, "");
        py.join();
        write_file(done, "");
        mt.join();
    } catch (...) {
        if (py.joinable() || mt.joinable()) finish();
        throw;
    }
    CHECK_MESSAGE(attached.status == 0, attached.describe());
    CHECK_MESSAGE(tracked.status == 0, tracked.describe());
    const auto names = artifact_names(dir / "out");
    REQUIRE(names.size() == 1);
    check_python_stacks((dir / "out") + "/" + names[0], parse_stats(read_file(dir / "stats.json")), minor, false);
}

TEST_CASE("stacks: python -X perf (3.12+): the walk goes on past each perf trampoline, folded into its Python frame") {
    ROOT_SUITE_GUARD();
    size_t ran = 0;
    for (const auto& [python, minor] : python_interpreters()) {
        if (minor < 12) continue;
        check_python_frames(python, minor, true);
        ++ran;
    }
    if (ran == 0) MESSAGE("SKIP python -X perf: no CPython 3.12+ of pyenv here");
}
