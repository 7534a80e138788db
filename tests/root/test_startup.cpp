// memtrack's start and end as a user meets them: options checked before anything exists, a
// command that cannot run, a signal during start-up, requests after shutdown.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "Events.hpp"
#include "core/Fd.hpp"

using namespace memtrack::roottest;

namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("startup: a directory or a file without execute permission exits 126, as a shell does") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string plain = dir / "plain";
    write_file(plain, "echo hi\n");
    for (const std::string& cmd : {dir.path(), plain}) {
        CAPTURE(cmd);
        RunResult r = track_raw(dir, {"--", cmd});
        CHECK_MESSAGE(r.status == 126, "memtrack ", r.describe());
        CHECK_MESSAGE(is_one_line(r.err), r.err);
        CHECK(r.err.find(cmd) != std::string::npos);
    }
}

TEST_CASE("startup: on PATH, a file without execute permission or a directory exits 126, naming what was found") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    // Only in the first PATH folder, as execvp (and env) would meet them; nothing of either name
    // exists in the later folders, which keep memtrack's own helpers reachable.
    const std::string bin = dir / "bin";
    REQUIRE(::mkdir(bin.c_str(), 0755) == 0);
    write_file(bin + "/memtrack-test-plain", "echo hi\n");
    REQUIRE(::mkdir((bin + "/memtrack-test-dir").c_str(), 0755) == 0);
    for (const std::string name : {"memtrack-test-plain", "memtrack-test-dir"}) {
        CAPTURE(name);
        RunResult r = run({"/usr/bin/env", "PATH=" + bin + ":/usr/bin:/bin", memtrack_bin(), "track", "--no-summary",
                           "-o", dir.path(), "--", name});
        CHECK_MESSAGE(r.status == 126, "memtrack ", r.describe());
        CHECK_MESSAGE(is_one_line(r.err), r.err);
        CHECK_MESSAGE(r.err.find(bin + "/" + name) != std::string::npos, r.err);
        CHECK_MESSAGE(r.err.find("command not found") == std::string::npos, r.err);
    }
}

TEST_CASE("startup: an out-of-range option is one line and leaves no socket behind") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string sock = dir / "ctl.sock";
    for (const std::string& opt : {std::string("--chunk-records=2147483648"), std::string("--threads=100000"),
                                   std::string("--max-frames=500"), std::string("--ring-size=3000")}) {
        CAPTURE(opt);
        RunResult r = track_raw(dir, {opt, "--socket", sock, "--", "/bin/true"});
        CHECK_FALSE(r.signaled);
        CHECK_MESSAGE(r.status == 1, "memtrack ", r.describe());
        CHECK_MESSAGE(is_one_line(r.err), r.err);
        CHECK_FALSE(exists(sock));
    }
}

TEST_CASE("startup: a SIGTERM during start-up ends the run the usual way, socket removed") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string sock = dir / "ctl.sock";
    // 50 ms in, memtrack has its socket and is loading its BPF programs.
    const std::string script = "\"$0\" track --no-summary --socket " + sock + " -o " + (dir / "out") +
                               " -- /bin/sleep 5 & p=$!; sleep 0.05; kill -TERM $p; wait $p; echo status=$?";
    RunResult r = run({"/bin/bash", "-c", script, memtrack_bin()});
    CHECK_MESSAGE(r.out == "status=143\n", r.describe(), " ", r.out);
    CHECK_FALSE(exists(sock));
    CHECK_FALSE(r.strays);
}

TEST_CASE("startup: requests after shutdown are refused") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string sock = dir / "ctl.sock";
    // The client waits until memtrack answers `stats` (its run exists), then pipelines shutdown
    // and enable on one connection: enable arrives after shutdown.
    const std::string client_py = dir / "client.py";
    write_file(client_py, R"(import json, socket, sys, time
s = socket.socket(socket.AF_UNIX)
for i in range(3000):
    try:
        s.connect(sys.argv[1])
        break
    except OSError:
        time.sleep(0.01)
f = s.makefile("rw")
for i in range(3000):
    f.write('{"cmd":"stats"}\n')
    f.flush()
    if json.loads(f.readline())["ok"]:
        break
    time.sleep(0.01)
f.write('{"cmd":"shutdown","id":1}\n{"cmd":"enable","id":2}\n')
f.flush()
sys.stdout.write(f.readline() + f.readline())
)");
    const std::string client = "python3 " + client_py + " " + sock;
    const std::string script = "\"$0\" track --no-summary --socket " + sock + " -o " + (dir / "out") +
                               " -- /bin/sleep 3 >/dev/null & p=$!; " + client + "; wait $p; echo status=$?";
    RunResult r = run({"/bin/bash", "-c", script, memtrack_bin()});
    const std::string enable_reply = "{\"ok\":false,\"id\":2,\"error\":\"memtrack is shutting down\"}\n";
    CHECK_MESSAGE(r.out.find(enable_reply) != std::string::npos, r.out, r.describe());
    CHECK_MESSAGE(r.out.find("{\"ok\":true,\"id\":1,\"records\":") == 0, r.out);
    CHECK(r.out.ends_with("status=0\n"));
}

TEST_CASE("startup: --version names the version; with -v (either order) the kernel features, as doctor prints them") {
    ROOT_SUITE_GUARD();
    const RunResult plain = run({memtrack_bin(), "--version"});
    CHECK_MESSAGE(plain.status == 0, "memtrack ", plain.describe());
    CHECK(plain.out.rfind("memtrack ", 0) == 0);
    CHECK(plain.out.find("uprobe_multi") == std::string::npos);
    const RunResult doctor = run({memtrack_bin(), "doctor"});
    REQUIRE_MESSAGE(doctor.status == 0, "memtrack doctor: ", doctor.describe());
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--version", "-v"}, {"-v", "--version"}}) {
        CAPTURE(args[0]);
        std::vector<std::string> argv{memtrack_bin()};
        argv.insert(argv.end(), args.begin(), args.end());
        const RunResult r = run(argv);
        CHECK_MESSAGE(r.status == 0, "memtrack ", r.describe());
        // The version line, then doctor's report word for word (features, minimum, the load).
        CHECK(r.out == plain.out + doctor.out);
    }
}

TEST_CASE("startup: doctor --json is the report doctor prints, as one object") {
    ROOT_SUITE_GUARD();
    const RunResult text = run({memtrack_bin(), "doctor"});
    REQUIRE_MESSAGE(text.status == 0, "memtrack doctor: ", text.describe());
    const RunResult r = run({memtrack_bin(), "doctor", "--json"});
    REQUIRE_MESSAGE(r.status == 0, "memtrack doctor --json: ", r.describe());
    CHECK(r.err.empty());
    CHECK(r.out.find('\n') == r.out.size() - 1);  // one line
    const boost::json::object report = boost::json::parse(r.out).as_object();
    CHECK(report.size() == 4);
    CHECK(boost::json::serialize(report.at("bpf_programs")) == R"({"loaded":true})");
    const boost::json::object& features = report.at("features").as_object();
    std::string ids;
    for (const auto& kv : features) ids += std::string(kv.key()) + " ";
    CHECK(ids == "btf ring_buffer task_storage attach_cookie loop uprobe_multi send_signal_task ");
    for (const auto& kv : features) {
        CAPTURE(kv.key());
        const boost::json::object& k = kv.value().as_object();
        CHECK(k.size() == 5);
        // Each feature's line in the text says the same.
        const std::string line = std::string(k.at("name").as_string()) + " (Linux " + std::string(k.at("since").as_string()) +
                                 "+): " + (k.at("present").as_bool() ? "yes" : "no");
        CHECK(text.out.find(line) != std::string::npos);
    }
    CHECK(text.out.starts_with("kernel " + std::string(report.at("kernel").as_string()) + "\n"));
    CHECK(text.out.ends_with("minimum kernel: " + std::string(report.at("minimum_kernel").as_string()) +
                             "\nBPF programs: loaded\n"));
    CHECK(std::count(text.out.begin(), text.out.end(), '\n') == long(features.size()) + 3);
}

TEST_CASE("startup: the stats split memtrack's time into start-up, the command's run and teardown, within its wall time") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const TrackResult t = track(dir, {"/bin/sleep", "0.3"});
    REQUIRE_MESSAGE(t.run.status == 0, "memtrack ", t.run.describe());
    const boost::json::object s = boost::json::parse(t.stats.raw).as_object();
    const double startup = s.at("startup_ms").as_double(), run = s.at("run_ms").as_double(),
                 teardown = s.at("teardown_ms").as_double();
    // Measured by this test around memtrack's process: from before its spawn to its reaping.
    const double wall = double(t.t_end - t.t_begin) / 1e6;
    MESSAGE("startup_ms ", startup, ", run_ms ", run, ", teardown_ms ", teardown, ", wall ", wall, " ms");
    CHECK(startup > 0);
    CHECK(run >= 300.0);  // the command's exec and its 0.3 s of sleep
    CHECK(teardown > 0);
    CHECK(startup + run + teardown <= wall);
}
