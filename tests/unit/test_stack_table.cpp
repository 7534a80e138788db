// StackTable: a stacks file of many deep stacks costs memory for its distinct frames and
// sequences, not for every repeat (issue 28 item 5). The growth is measured in a child process
// whose peak RSS is reset first (clear_refs 5), so other tests' heap does not hide or add to it.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../common/TempDir.hpp"
#include "format/StacksFile.hpp"
#include "format/ZstdFileWriter.hpp"
#include "report/StackTable.hpp"

using namespace memtrack;
using memtrack::testsupport::TempDir;

namespace {

Frame deep_frame(uint64_t fn) {
    return Frame{0x400000 + fn * 64, "/test/deep", "0123abcd", fmt::format("deep_function_{}", fn), "/test/deep.cpp",
                 uint32_t(10 + fn), false};
}

// `n` stacks of `depth` frames; with `leaf`, the innermost frame differs per stack.
std::string write_stacks(const TempDir& tmp, uint64_t n, size_t depth, bool leaf) {
    const std::string path = tmp / "deep.MemtrackStacks.msgpack";
    auto w = ZstdFileWriter::create(path);
    REQUIRE(w.ok());
    std::vector<Frame> frames;
    for (size_t d = 0; d < depth; ++d) frames.push_back(deep_frame(1000000 + d));
    std::string buf;
    for (uint64_t s = 0; s < n; ++s) {
        if (leaf) frames[0] = deep_frame(s);
        encode_stack(s + 1, 1000, frames, buf);
        if (buf.size() > (1 << 20)) {
            REQUIRE(w->write(buf).ok());
            buf.clear();
        }
    }
    REQUIRE(w->write(buf).ok());
    REQUIRE(w->finish().ok());
    return path;
}

long status_kib(const char* key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
    return -1;
}

// ASan's allocator keeps freed memory in quarantine and pads every block: the peak then says
// nothing about the table's layout. The plain unit suite asserts the bounds.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMeasuresMemory = false;
#else
constexpr bool kMeasuresMemory = true;
#endif

struct Loaded {
    long growth_kib = -1;  // peak RSS during the load, above the RSS before it
    size_t stacks = 0, distinct_stacks = 0, distinct_frames = 0;
};

// Loads `path` in a child and returns what it measured.
Loaded load_in_child(const std::string& path) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        Loaded l;
        std::ofstream("/proc/self/clear_refs") << "5";  // the peak RSS is now the RSS
        const long before = status_kib("VmRSS:");
        auto table = report::StackTable::load(path);
        if (table) {
            l.growth_kib = status_kib("VmHWM:") - before;
            l.stacks = table->size();
            l.distinct_stacks = table->distinct_stacks();
            l.distinct_frames = table->distinct_frames();
        }
        (void)!::write(fds[1], &l, sizeof l);
        ::_exit(0);
    }
    ::close(fds[1]);
    Loaded l;
    const ssize_t got = ::read(fds[0], &l, sizeof l);
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(got == ssize_t(sizeof l));
    return l;
}

}  // namespace

TEST_CASE("stack table: 20000 stacks of 127 frames cost their distinct frames, not 2.5 M copies") {
    TempDir tmp;
    constexpr uint64_t kStacks = 20000;
    constexpr size_t kDepth = 127;
    SUBCASE("every stack the same frames (the file compresses to almost nothing)") {
        const Loaded l = load_in_child(write_stacks(tmp, kStacks, kDepth, false));
        CHECK(l.stacks == kStacks);
        CHECK(l.distinct_stacks == 1);
        CHECK(l.distinct_frames == kDepth);
        // A copy per stack was 2.5 M Frames, about 450 MiB; held interned, a hash table of 20000.
        if (kMeasuresMemory) CHECK_MESSAGE(l.growth_kib < 16 * 1024, "peak growth ", l.growth_kib, " KiB");
    }
    SUBCASE("the innermost frame differs per stack") {
        const Loaded l = load_in_child(write_stacks(tmp, kStacks, kDepth, true));
        CHECK(l.stacks == kStacks);
        CHECK(l.distinct_stacks == kStacks);
        CHECK(l.distinct_frames == kStacks + kDepth - 1);
        // 2.5 M pointers (20 MiB) and as many symbol ids (10 MiB), the 20126 frames; not 450 MiB.
        if (kMeasuresMemory) CHECK_MESSAGE(l.growth_kib < 64 * 1024, "peak growth ", l.growth_kib, " KiB");
    }
}

TEST_CASE("stack table: a hash written twice keeps the later stack, and stacks share frames") {
    report::StackTable t;
    const std::vector<Frame> a{deep_frame(1), deep_frame(2)}, b{deep_frame(3), deep_frame(2)};
    CHECK(t.add(7, a).empty());
    CHECK(t.add(8, a).empty());
    CHECK(t.add(7, b).empty());
    REQUIRE(t.find(7) != nullptr);
    REQUIRE(t.find(8) != nullptr);
    CHECK(t.find(9) == nullptr);
    CHECK((*t.find(7))[0]->function == "deep_function_3");
    CHECK((*t.find(8))[0]->function == "deep_function_1");
    CHECK((*t.find(7))[1] == (*t.find(8))[1]);  // deep_function_2, held once
    CHECK(t.distinct_frames() == 3);
    CHECK(t.distinct_stacks() == 2);
    // Another address in the same function, file and line: one site, as Sites.hpp says.
    Frame moved = deep_frame(1);
    moved.ip += 4;
    CHECK(t.add(10, {moved, deep_frame(2)}).empty());
    CHECK(t.symbolic_id(t.find(10)) == t.symbolic_id(t.find(8)));
    CHECK(t.symbolic_id(t.find(10)) != t.symbolic_id(t.find(7)));
}
