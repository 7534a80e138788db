// OutputFiles: what memtrack's outputs refuse to open (a planted symbolic link, a stranger's file
// in a shared folder, a hard link there, a folder others can write), what they reuse, and that a
// FIFO without a reader is an error at once, not a wait.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "TestFiles.hpp"
#include "core/OutputFiles.hpp"

using namespace memtrack;
using namespace memtrack::unittest;

namespace {

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("output files: the names memtrack gives its outputs") {
    CHECK(artifact_name(42) == "42.MemtrackArtifact.msgpack");
    CHECK(stacks_name(42) == "42.MemtrackStacks.msgpack");
    CHECK(stacks_path_for("d/42.MemtrackArtifact.msgpack") == "d/42.MemtrackStacks.msgpack");
    CHECK(stacks_path_for("d/42.msgpack").empty());
}

TEST_CASE("output files: a folder named as an artifact means the one artifact in it") {
    TempDir tmp;
    const std::string out = tmp / "out";
    REQUIRE(::mkdir(out.c_str(), 0755) == 0);
    auto none = artifact_in(out);
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().message() == "open " + out + ": a folder with no *.MemtrackArtifact.msgpack in it");

    write_file(out + "/9.MemtrackStacks.msgpack", "");
    write_file(out + "/9.MemtrackArtifact.msgpack", "");
    auto one = artifact_in(out);
    REQUIRE(one.ok());
    CHECK(*one == out + "/9.MemtrackArtifact.msgpack");
    // A file is itself, named or not as memtrack names it; so is a path that is not there.
    CHECK(artifact_in(out + "/9.MemtrackStacks.msgpack").value() == out + "/9.MemtrackStacks.msgpack");
    CHECK(artifact_in(out + "/absent").value() == out + "/absent");

    write_file(out + "/10.MemtrackArtifact.msgpack", "");
    auto two = artifact_in(out);
    REQUIRE_FALSE(two.ok());
    CHECK(two.error().message() == "open " + out + ": a folder with 2 artifacts: name one (" + out +
                                       "/10.MemtrackArtifact.msgpack, " + out + "/9.MemtrackArtifact.msgpack)");
}

TEST_CASE("output files: a planted symbolic link is not followed, and its target is untouched") {
    TempDir tmp;
    const std::string victim = tmp / "victim";
    write_file(victim, "secret\n");
    REQUIRE(::chmod(victim.c_str(), 0600) == 0);
    const std::string out = tmp / "out";
    REQUIRE(::mkdir(out.c_str(), 0755) == 0);
    REQUIRE(::symlink(victim.c_str(), (out + "/7.MemtrackArtifact.msgpack").c_str()) == 0);

    auto dir = OutputDir::open(out, false);
    REQUIRE(dir.ok());
    auto fd = dir->create(artifact_name(7));
    REQUIRE_FALSE(fd.ok());
    CHECK(fd.error().message() == "create " + out + "/7.MemtrackArtifact.msgpack: it is a symbolic link; not following it");
    CHECK(read_file(victim) == "secret\n");
    CHECK(mode_of(victim) == 0600);

    // The same through a single named file (--stats).
    const std::string stats = out + "/stats.json";
    REQUIRE(::symlink(victim.c_str(), stats.c_str()) == 0);
    auto s = open_output_file(stats);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message() == "create " + stats + ": it is a symbolic link; not following it");
    CHECK(read_file(victim) == "secret\n");
}

TEST_CASE("output files: a folder someone else can write is refused unless it is sticky") {
    TempDir tmp;
    const std::string open_dir = tmp / "open";
    REQUIRE(::mkdir(open_dir.c_str(), 0755) == 0);
    REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
    auto refused = OutputDir::open(open_dir, false);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message().find("someone else can write it") != std::string::npos);
    CHECK(refused.error().message().find("mode 0777") != std::string::npos);
    CHECK_FALSE(open_output_file(open_dir + "/stats.json").ok());
    CHECK_FALSE(check_output_file(open_dir + "/stats.json").ok());

    const std::string sticky = tmp / "sticky";
    REQUIRE(::mkdir(sticky.c_str(), 0755) == 0);
    REQUIRE(::chmod(sticky.c_str(), 01777) == 0);
    auto dir = OutputDir::open(sticky, false);
    REQUIRE(dir.ok());
    CHECK(dir->shared());
    auto fd = dir->create("new");
    REQUIRE(fd.ok());

    // In a shared folder, a file we did not create alone is not ours to write: a second hard link.
    const std::string mine = tmp / "mine";
    write_file(mine, "keep\n");
    REQUIRE(::link(mine.c_str(), (sticky + "/linked").c_str()) == 0);
    auto linked = dir->create("linked");
    REQUIRE_FALSE(linked.ok());
    CHECK(linked.error().message() ==
          "create " + sticky + "/linked: it exists in a shared folder with 2 hard links; not writing to it");
    CHECK(read_file(mine) == "keep\n");

    if (::geteuid() == 0) {
        // A stranger's file in the shared folder.
        const std::string theirs = sticky + "/theirs";
        write_file(theirs, "theirs\n");
        REQUIRE(::chown(theirs.c_str(), 65534, 65534) == 0);
        auto t = dir->create("theirs");
        REQUIRE_FALSE(t.ok());
        CHECK(t.error().message() ==
              "create " + theirs + ": it exists in a shared folder and belongs to uid 65534; not writing to it");
        CHECK(read_file(theirs) == "theirs\n");
        // And a folder that belongs to someone else, though only they can write it.
        const std::string other = tmp / "other";
        REQUIRE(::mkdir(other.c_str(), 0755) == 0);
        REQUIRE(::chown(other.c_str(), 65534, 65534) == 0);
        CHECK_FALSE(OutputDir::open(other, false).ok());
    }
}

TEST_CASE("output files: our own earlier file is replaced, a directory is not") {
    TempDir tmp;
    const std::string path = tmp / "stats.json";
    write_file(path, "an older and longer run's stats\n");
    auto fd = open_output_file(path);
    REQUIRE(fd.ok());
    REQUIRE(::write(fd->get(), "{}\n", 3) == 3);
    fd->reset();
    CHECK(read_file(path) == "{}\n");

    REQUIRE(::mkdir((tmp / "d").c_str(), 0755) == 0);
    auto d = open_output_file(tmp / "d");
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().message() == "create " + tmp / "d" + ": it exists and is a directory; not writing to it");
}

TEST_CASE("output files: a FIFO without a reader is an error at once") {
    TempDir tmp;
    const std::string fifo = tmp / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto fd = open_output_file(fifo);
    REQUIRE_FALSE(fd.ok());
    CHECK(fd.error().message() == "open " + fifo + ": it is a FIFO and nothing reads it");

    // With a reader that never reads: the write gives up after its bound.
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    auto w = open_output_file(fifo);
    REQUIRE(w.ok());
    const std::string big(1 << 20, 'x');  // more than a pipe holds
    auto r = write_all_bounded(w->get(), big, fifo, 50);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == "write " + fifo + ": its reader took no data for 50 ms");
    ::close(reader);
}
