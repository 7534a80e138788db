// How `memtrack track` and `memtrack dump` fail: exit statuses and one-line errors.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "Events.hpp"
#include "fixture_sizes.h"

using namespace memtrack::roottest;

namespace {

// Things that mean a crash or an uncaught exception rather than an error message.
void check_no_crash_text(const std::string& err) {
    for (const char* bad : {"terminate called", "what():", "Aborted", "Segmentation fault", "core dumped",
                            "stack trace", "Stack trace", "backtrace", "#0 ", "#1 "})
        CHECK_MESSAGE(err.find(bad) == std::string::npos, "stderr contains \"", bad, "\":\n", err);
}

// memtrack refused the run: a non-zero exit of its own, one line on stderr that names `named`.
void check_refused(const RunResult& r, std::string_view named) {
    CHECK_FALSE(r.timed_out);
    CHECK_MESSAGE(r.status != 0, "memtrack ", r.describe());
    CHECK_FALSE(r.signaled);
    CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
    CHECK_MESSAGE(r.err.find(named) != std::string::npos, "stderr does not name ", named, ":\n", r.err);
    check_no_crash_text(r.err);
}

}  // namespace

TEST_CASE("cli: a command that does not exist makes memtrack exit 127 with one line") {
    ROOT_SUITE_GUARD();
    for (const std::string cmd : {"/nonexistent-dir/memtrack-no-such-command", "memtrack-no-such-command-on-path"}) {
        CAPTURE(cmd);
        TempDir dir;
        RunResult r = track_raw(dir, {"--stats", dir / "stats.json", "--", cmd, "arg"});
        CHECK_FALSE(r.timed_out);
        CHECK_FALSE(r.strays);
        CHECK_MESSAGE(r.status == 127, "memtrack ", r.describe());
        CHECK_FALSE(r.signaled);
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        CHECK_MESSAGE(r.err.find(cmd) != std::string::npos, "stderr does not name the command:\n", r.err);
        check_no_crash_text(r.err);
    }
}

TEST_CASE("cli: an unknown option is a one-line error, and nothing runs") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string marker = dir / "ran";
    RunResult r = track_raw(dir, {"--memtrack-no-such-option", "--", "/bin/sh", "-c", "touch " + marker});
    check_refused(r, "--memtrack-no-such-option");
    CHECK_FALSE(std::filesystem::exists(marker));
    CHECK(artifact_names(dir / "out").empty());

    // Unknown at the top level too.
    RunResult top = run({memtrack_bin(), "--memtrack-no-such-option"});
    CHECK_MESSAGE(top.status != 0, "memtrack ", top.describe());
    CHECK_FALSE(top.signaled);
    CHECK_MESSAGE(is_one_line(top.err), "stderr is not one line:\n", top.err);
    check_no_crash_text(top.err);
}

TEST_CASE("cli: a --cache-dir others can write is refused in one line and the run goes on uncached") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string open_dir = dir / "open";
    std::filesystem::create_directory(open_dir);
    std::filesystem::permissions(open_dir, std::filesystem::perms::all);
    const std::string marker = dir / "ran";
    RunResult r = track_raw(dir, {"--cache-dir", open_dir, "--", "/bin/sh", "-c", "touch " + marker});
    CHECK_FALSE(r.strays);
    CHECK_MESSAGE(r.status == 0, "memtrack ", r.describe());
    CHECK(std::filesystem::exists(marker));
    // One line names the folder and why; nothing was written in it.
    size_t naming = 0;
    std::istringstream lines(r.err);
    for (std::string line; std::getline(lines, line);)
        if (line.find(open_dir) != std::string::npos) ++naming;
    CHECK_MESSAGE(naming == 1, r.err);
    CHECK(std::filesystem::is_empty(open_dir));
    check_no_crash_text(r.err);
}

TEST_CASE("cli: --cache-dir with --no-cache is a one-line error, and nothing runs") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string marker = dir / "ran";
    RunResult r = track_raw(dir, {"--cache-dir", dir / "c", "--no-cache", "--", "/bin/sh", "-c", "touch " + marker});
    CHECK_FALSE(r.strays);
    check_refused(r, "cache");
    CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("cli: dump of a corrupt artifact fails with one line") {
    ROOT_SUITE_GUARD();
    TempDir dir;

    SUBCASE("not zstd at all") {
        const std::string path = dir / "1.MemtrackArtifact.msgpack";
        write_file(path, "this is not a zstd stream, nor msgpack\n");
        RunResult r = run({memtrack_bin(), "dump", path});
        CHECK_MESSAGE(r.status != 0, "memtrack dump ", r.describe());
        CHECK_FALSE(r.signaled);
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        check_no_crash_text(r.err);
    }
    SUBCASE("a real artifact cut in the middle of its frame") {
        Tracked t = track_and_dump(dir, {fixture("exit3")});
        REQUIRE(t.result.run.status == 3);
        std::string bytes = read_file(t.result.artifact);
        REQUIRE(bytes.size() > 16);
        const std::string cut = dir / "cut.MemtrackArtifact.msgpack";
        write_file(cut, bytes.substr(0, bytes.size() / 2));
        RunResult r = run({memtrack_bin(), "dump", cut});
        CHECK_MESSAGE(r.status != 0, "memtrack dump ", r.describe());
        CHECK_FALSE(r.signaled);
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        check_no_crash_text(r.err);
    }
    SUBCASE("a file that does not exist") {
        RunResult r = run({memtrack_bin(), "dump", dir / "missing.MemtrackArtifact.msgpack"});
        CHECK_MESSAGE(r.status != 0, "memtrack dump ", r.describe());
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        check_no_crash_text(r.err);
    }
}
