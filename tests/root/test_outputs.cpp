// Where `memtrack track` refuses to write (docs/SECURITY.md): run as root, it must not be made to
// overwrite another file through links planted by a user who can write its output folder.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "Events.hpp"

using namespace memtrack::roottest;

namespace {

constexpr uid_t kNobody = 65534;

// Symbolic links to `target` under the names memtrack gives its outputs, for the next `n` pids.
void plant_links(const std::string& dir, const std::string& target, int n) {
    int last = 0;
    std::ifstream("/proc/sys/kernel/ns_last_pid") >> last;
    REQUIRE(last > 0);
    for (int pid = last + 1; pid <= last + n; ++pid)
        for (const char* suffix : {".MemtrackArtifact.msgpack", ".MemtrackStacks.msgpack", ".MemtrackTimeline.msgpack"}) {
            const std::string link = dir + "/" + std::to_string(pid) + suffix;
            REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
            ::lchown(link.c_str(), kNobody, kNobody);
        }
}

void write_victim(const std::string& path) {
    write_file(path, "root's own file\n");
    REQUIRE(::chmod(path.c_str(), 0600) == 0);
}

}  // namespace

TEST_CASE("outputs: a folder another user owns is refused, and links planted there are not followed") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string victim = dir / "victim";
    write_victim(victim);
    const std::string theirs = dir / "theirs";
    REQUIRE(::mkdir(theirs.c_str(), 0755) == 0);
    REQUIRE(::chown(theirs.c_str(), kNobody, kNobody) == 0);
    plant_links(theirs, victim, 2000);

    RunResult r = run({memtrack_bin(), "track", "--no-summary", "-o", theirs, "--", "/bin/true"});
    CHECK_FALSE(r.timed_out);
    CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
    CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
    CHECK_MESSAGE(r.err.find("someone else can write it") != std::string::npos, r.err);
    CHECK(read_file(victim) == "root's own file\n");
}

TEST_CASE("outputs: a world-writable folder that is not sticky is refused") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string open_dir = dir / "open";
    REQUIRE(::mkdir(open_dir.c_str(), 0755) == 0);
    REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
    const std::string victim = dir / "victim";
    write_victim(victim);
    plant_links(open_dir, victim, 2000);
    RunResult r = run({memtrack_bin(), "track", "--no-summary", "-o", open_dir, "--", "/bin/true"});
    CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
    CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
    CHECK_MESSAGE(r.err.find("mode 0777") != std::string::npos, r.err);
    CHECK(read_file(victim) == "root's own file\n");
}

TEST_CASE("outputs: --stats and MEMTRACK_STATS do not follow a planted link, and say so before the run") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string victim = dir / "victim";
    write_victim(victim);
    const std::string out = dir / "out";
    REQUIRE(::mkdir(out.c_str(), 0700) == 0);
    const std::string marker = dir / "ran";

    // A folder someone else owns: refused at start, the command never runs.
    const std::string theirs = dir / "theirs";
    REQUIRE(::mkdir(theirs.c_str(), 0755) == 0);
    REQUIRE(::chown(theirs.c_str(), kNobody, kNobody) == 0);
    const std::string planted = theirs + "/stats.json";
    REQUIRE(::symlink(victim.c_str(), planted.c_str()) == 0);
    for (bool env : {false, true}) {
        CAPTURE(env);
        std::vector<std::string> argv{"/usr/bin/env"};
        if (env) argv.push_back("MEMTRACK_STATS=" + planted);
        for (const std::string& a : {memtrack_bin(), std::string("track"), std::string("--no-summary"),
                                     std::string("-o"), out})
            argv.push_back(a);
        if (!env) {
            argv.push_back("--stats");
            argv.push_back(planted);
        }
        for (const std::string& a : {std::string("--"), std::string("/bin/touch"), marker}) argv.push_back(a);
        RunResult r = run(argv);
        CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        CHECK_MESSAGE(r.err.find("--stats: output folder " + theirs) != std::string::npos, r.err);
        CHECK(read_file(victim) == "root's own file\n");
        CHECK_FALSE(std::ifstream(marker).good());
    }

    // Our own folder, where a link to the victim was left: the run happens, the stats do not go
    // through the link, and memtrack says so and exits non-zero.
    const std::string link = out + "/stats.json";
    REQUIRE(::symlink(victim.c_str(), link.c_str()) == 0);
    RunResult r = run({memtrack_bin(), "track", "--no-summary", "-o", out, "--stats", link, "--", "/bin/true"});
    CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
    CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
    CHECK_MESSAGE(r.err.find("it is a symbolic link; not following it") != std::string::npos, r.err);
    CHECK(read_file(victim) == "root's own file\n");
}
