// JIT code names from a runtime's perf map: parsing, appended lines, overlaps, refusals.
#include <doctest/doctest.h>

#include "TestFiles.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "symbols/PerfMap.hpp"

using memtrack::PerfMap;
using memtrack::unittest::TempDir;

namespace {

std::string at(PerfMap& map, uint64_t addr) {
    const std::string* name = map.find(addr);
    return name ? *name : "<none>";
}

void append(const std::string& path, std::string_view text) {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << text;
}

// A child that waits to be killed, and its perf map under /tmp; both ended by pid, whatever happens.
class MapWriter {
public:
    MapWriter() : pid_(::fork()) {
        if (pid_ == 0) {
            for (;;) ::pause();
        }
        REQUIRE(pid_ > 0);
        path_ = "/tmp/perf-" + std::to_string(pid_) + ".map";
    }
    ~MapWriter() {
        end();
        std::filesystem::remove(path_);
    }
    int pid() const { return pid_; }
    const std::string& path() const { return path_; }
    // Killed and reaped: /proc/PID (and the map's name through it) is gone.
    void end() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }

private:
    int pid_;
    std::string path_;
};

}  // namespace

TEST_CASE("PerfMap: node's lines, names with spaces, ends exclusive") {
    PerfMap map("/nonexistent/perf-1.map", uid_t(-1));
    map.add("7fae30005b80 4d0 JS:*makeBuffers /tmp/jit/alloc.js:1:32\n"
            "37a7fab0b286 3d JS:~makeBuffers /tmp/jit/alloc.js:1:32\n"
            "0x1000 10 py::f:/x.py\n"
            "not a line\n"
            "2000 0 empty\n");
    CHECK(map.size() == 3);
    CHECK(at(map, 0x7fae30005b80) == "JS:*makeBuffers /tmp/jit/alloc.js:1:32");
    CHECK(at(map, 0x7fae3000604f) == "JS:*makeBuffers /tmp/jit/alloc.js:1:32");
    CHECK(at(map, 0x7fae30006050) == "<none>");
    CHECK(at(map, 0x37a7fab0b286 + 0x3c) == "JS:~makeBuffers /tmp/jit/alloc.js:1:32");
    CHECK(at(map, 0x100f) == "py::f:/x.py");
    CHECK(at(map, 0xfff) == "<none>");
    CHECK(at(map, 0x2000) == "<none>");
}

TEST_CASE("PerfMap: a line split across reads waits for its end; later code replaces what it overlaps") {
    PerfMap map("/nonexistent/perf-1.map", uid_t(-1));
    map.add("1000 100 fir");
    CHECK(map.size() == 0);
    map.add("st\n2000 100 second\n");
    CHECK(at(map, 0x1050) == "first");
    map.add("1080 1000 third\n");  // over the end of first and the start of second
    CHECK(at(map, 0x107f) == "first");
    CHECK(at(map, 0x1080) == "third");
    CHECK(at(map, 0x2050) == "third");
    CHECK(at(map, 0x2080) == "second");
    CHECK(at(map, 0x20ff) == "second");
    CHECK(at(map, 0x2100) == "<none>");
    map.add("1010 10 inner\n");  // inside first: first goes on after it
    CHECK(at(map, 0x100f) == "first");
    CHECK(at(map, 0x1010) == "inner");
    CHECK(at(map, 0x1020) == "first");
    CHECK(map.size() == 5);  // first, inner, first, third, second
}

TEST_CASE("PerfMap: a miss reads what the runtime appended since; a replaced file starts over") {
    TempDir dir;
    const std::string path = dir / "perf-42.map";
    append(path, "1000 10 one\n");
    PerfMap map(path, ::getuid());
    CHECK(at(map, 0x1000) == "one");
    append(path, "2000 10 two\n3000 1");
    CHECK(at(map, 0x2000) == "two");
    CHECK(at(map, 0x3000) == "<none>");
    append(path, "0 three\n");
    CHECK(at(map, 0x3000) == "three");
    std::filesystem::remove(path);
    append(path, "4000 10 four\n");
    CHECK(at(map, 0x4000) == "four");
    CHECK(at(map, 0x1000) == "<none>");
}

TEST_CASE("PerfMap: a symlink or another user's file is refused") {
    TempDir dir;
    const std::string real = dir / "secret";
    append(real, "1000 10 secret\n");
    const std::string link = dir / "perf-43.map";
    std::filesystem::create_symlink(real, link);
    PerfMap linked(link, ::getuid());
    CHECK_FALSE(linked.refresh());
    CHECK(at(linked, 0x1000) == "<none>");
    PerfMap foreign(real, ::getuid() + 1);
    CHECK_FALSE(foreign.refresh());
    CHECK(at(foreign, 0x1000) == "<none>");
    PerfMap mine(real, ::getuid());
    CHECK(at(mine, 0x1000) == "secret");
}

TEST_CASE("PerfMap: what the runtime appended before it exited is found after it exited") {
    // The symbolizer lags behind the process: the stacks of its last code are named after it
    // has gone, when its /proc/PID/root no longer leads to its /tmp.
    MapWriter writer;
    append(writer.path(), "1000 10 early\n");
    PerfMap map = PerfMap::for_process(writer.pid());
    CHECK(map.path() == "/proc/" + std::to_string(writer.pid()) + "/root" + writer.path());
    CHECK(at(map, 0x1000) == "early");
    append(writer.path(), "2000 10 last\n");
    writer.end();
    CHECK(at(map, 0x2000) == "last");
    CHECK(at(map, 0x1000) == "early");
    CHECK(at(map, 0x3000) == "<none>");
}
