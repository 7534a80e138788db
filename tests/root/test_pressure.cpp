// Back-pressure: BPF pauses (SIGSTOP) a process that writes into a nearly full ring, and memtrack
// resumes (SIGCONT) every process it paused once the consumer has caught up, when it shuts down,
// or, through memtrack-guard, when it dies. Driven by bench/flood.c (FLOOD_BIN): `flood K N` forks
// K writers, writer k making N malloc+free pairs of size 1000 + k.
//
// Small rings and a slowed consumer (--consumer-delay-us) make the pauses happen in a fraction of
// a second. Cases that signal memtrack run it in the background (Background below), as a
// child subreaper, so the processes memtrack leaves behind come back to the test to be reaped
// (PID 1 of a container may never reap them) and nothing outlives the test case.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>

#include "Events.hpp"

extern char** environ;

using namespace memtrack::roottest;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kFloodBaseSize = 1000;  // writer k allocates kFloodBaseSize + k
constexpr uint64_t kFloodThreadBaseSize = 2000;  // with threads: kFloodThreadBaseSize + k * threads + j

std::string flood_bin() {
    const char* v = std::getenv("FLOOD_BIN");
    if (!v || !*v) throw std::runtime_error("FLOOD_BIN is not set (run the suite through `meson test --suite root`)");
    if (::access(v, X_OK) != 0) throw std::runtime_error(std::string("flood ") + v + ": " + std::strerror(errno));
    return v;
}

// ---- the --stats file, pressure part ----

struct PressureStats {
    uint64_t records = 0;
    uint64_t dropped = 0;
    uint64_t stops = 0;
    uint64_t resumes = 0;         // pauses ended: by memtrack, or by the process's exit
    uint64_t ended_by_exit = 0;
    uint64_t stopped_at_exit = 0;
    uint64_t stop_to_resume_count = 0;
    std::map<int, uint64_t> resumes_by_pid;
    std::string raw;
};

uint64_t u64_at(const json::object& o, const char* key) {
    const json::value* v = o.if_contains(key);
    if (!v) throw std::runtime_error(std::string("--stats: missing \"") + key + "\"");
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return uint64_t(v->get_int64());
    throw std::runtime_error(std::string("--stats: \"") + key + "\" is not a count: " + json::serialize(*v));
}

PressureStats pressure_stats(const std::string& text) {
    json::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec || !v.is_object()) throw std::runtime_error("--stats file is not a JSON object: " + text);
    const auto& o = v.get_object();
    PressureStats s;
    s.raw = text;
    s.records = u64_at(o, "records");
    s.dropped = u64_at(o, "dropped");
    s.stops = u64_at(o, "pressure_stops");
    s.resumes = u64_at(o, "pressure_resumes");
    s.ended_by_exit = u64_at(o, "pressure_ended_by_exit");
    s.stopped_at_exit = u64_at(o, "stopped_at_exit");
    const json::value* hist = o.if_contains("stop_to_resume_ms");
    if (!hist || !hist->is_object()) throw std::runtime_error("--stats: \"stop_to_resume_ms\" missing: " + text);
    s.stop_to_resume_count = u64_at(hist->get_object(), "count");
    const json::value* by_pid = o.if_contains("pressure_resumes_by_pid");
    if (!by_pid || !by_pid->is_object())
        throw std::runtime_error("--stats: \"pressure_resumes_by_pid\" missing or not an object: " + text);
    for (const auto& kv : by_pid->get_object()) {
        const std::string key(kv.key());
        if (key.empty() || !std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; }))
            throw std::runtime_error("--stats: pressure_resumes_by_pid key is not a pid: " + key);
        s.resumes_by_pid[std::stoi(key)] = u64_at(by_pid->get_object(), key.c_str());
    }
    return s;
}

std::string show_by_pid(const std::map<int, uint64_t>& m) {
    std::string s;
    for (const auto& [pid, n] : m) s += (s.empty() ? "" : ", ") + std::to_string(pid) + ": " + std::to_string(n);
    return "{" + s + "}";
}

// What every run that paused its writers and ended with memtrack's own shutdown must show.
void check_pauses_balanced(const PressureStats& s) {
    INFO("stats: ", s.raw);
    CHECK(s.dropped == 0);
    CHECK_MESSAGE(s.stops > 0, "the slowed consumer never paused a writer: the test did not test anything");
    CHECK(s.resumes == s.stops);
    CHECK(s.stop_to_resume_count + s.ended_by_exit == s.resumes);
    CHECK(s.stopped_at_exit == 0);
}

// The processes resumed are the flood's writers (`writers`: pid -> anything) and its parent,
// and pressure_resumes_by_pid accounts for every resume.
void check_resumed_are_flood(const PressureStats& s, const std::map<int, uint64_t>& writers, int flood_pid) {
    INFO("pressure_resumes_by_pid ", show_by_pid(s.resumes_by_pid));
    uint64_t total = 0;
    for (const auto& [pid, n] : s.resumes_by_pid) {
        CHECK_MESSAGE((writers.count(pid) || pid == flood_pid), "pid ", pid, " resumed ", n,
                      " times is neither a writer nor the flood's parent ", flood_pid);
        CHECK_MESSAGE(n >= 1, "pid ", pid, " listed with 0 resumes");
        total += n;
    }
    CHECK(total + s.ended_by_exit == s.resumes);
}

// ---- /proc ----

struct Proc {
    int pid = 0;
    char state = '?';
    int ppid = 0;
    int pgrp = 0;
    std::string comm;
    std::string describe() const {
        return std::to_string(pid) + " (" + comm + ") state " + state + " ppid " + std::to_string(ppid) + " pgrp " +
               std::to_string(pgrp);
    }
};

std::optional<Proc> read_proc(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(f, line)) return std::nullopt;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
    Proc p;
    p.pid = pid;
    p.comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 1));
    rest >> p.state >> p.ppid >> p.pgrp;
    if (!rest) return std::nullopt;
    return p;
}

std::vector<Proc> processes(const std::function<bool(const Proc&)>& pred) {
    std::vector<Proc> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        if (auto p = read_proc(std::stoi(name)); p && pred(*p)) out.push_back(*p);
    }
    return out;
}

std::vector<Proc> group(int pgid) {
    return processes([pgid](const Proc& p) { return p.pgrp == pgid; });
}

std::vector<Proc> stopped(const std::vector<Proc>& procs) {
    std::vector<Proc> out;
    for (const auto& p : procs)
        if (p.state == 'T') out.push_back(p);
    return out;
}

std::string describe(const std::vector<Proc>& procs) {
    std::string s;
    for (const auto& p : procs) s += "\n    " + p.describe();
    return s.empty() ? std::string("none") : s;
}

// The CPU time pid's threads have used, in ns (/proc/PID/schedstat, its main thread's).
std::optional<uint64_t> cpu_ns(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/schedstat");
    uint64_t ns = 0;
    if (!(in >> ns)) return std::nullopt;
    return ns;
}

// Polls `done` every 5 ms until it holds or `timeout` passes; returns whether it held.
bool poll_until(std::chrono::milliseconds timeout, const std::function<bool()>& done) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (done()) return true;
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
}

// `memtrack ctl stats` on a running memtrack's socket: its stats object, or nothing.
std::optional<json::object> live_stats(const std::string& sock) {
    const RunResult r = run({memtrack_bin(), "ctl", "--socket", sock, "stats"}, 10s);
    json::error_code ec;
    const json::value v = json::parse(r.out, ec);
    if (r.status != 0 || ec || !v.is_object()) return std::nullopt;
    const json::value* stats = v.get_object().if_contains("stats");
    if (!stats || !stats->is_object()) return std::nullopt;
    return stats->get_object();
}

// Polls until memtrack (asked through its socket) has paused a process for ring pressure and a
// writer is stopped: from then on the writers spend most of their time paused for pressure, and
// the pauses every new process has at its start (probes, first stack) are over.
bool pressure_paused(const std::string& sock, const std::set<int>& writers, std::chrono::milliseconds timeout) {
    const bool stopped_once = poll_until(timeout, [&] {
        std::this_thread::sleep_for(20ms);
        const auto stats = live_stats(sock);
        return stats && u64_at(*stats, "pressure_stops") > 0;
    });
    return stopped_once && poll_until(timeout, [&] {
        for (int w : writers)
            if (auto p = read_proc(w); p && p->state == 'T') return true;
        return false;
    });
}

std::string read_or_empty(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---- memtrack in the background ----

// While alive, the test process is a child subreaper: orphans of its descendants become its
// children instead of PID 1's.
class Subreaper {
public:
    Subreaper() {
        ::prctl(PR_GET_CHILD_SUBREAPER, &previous_);
        if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
            throw std::runtime_error(std::string("PR_SET_CHILD_SUBREAPER: ") + std::strerror(errno));
    }
    ~Subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, previous_); }
    Subreaper(const Subreaper&) = delete;
    Subreaper& operator=(const Subreaper&) = delete;

private:
    int previous_ = 0;
};

struct Exit {
    int status = -1;        // exit code, or 128 + N for signal N
    bool signaled = false;
    std::string describe() const {
        return signaled ? "killed by signal " + std::to_string(status - 128) : "exit " + std::to_string(status);
    }
};

Exit exit_of(int wstatus) {
    if (WIFSIGNALED(wstatus)) return {128 + WTERMSIG(wstatus), true};
    return {WEXITSTATUS(wstatus), false};
}

// `memtrack track -o DIR/out --stats DIR/stats.json [extra...] -- command...` started in the
// background in its own process group (its pid is the group id; every process it starts stays
// in that group), with stdin from /dev/null, stdout and stderr to DIR/memtrack.out and .err,
// default signal dispositions and an empty mask. Whatever happens to the test case, the
// destructor SIGKILLs (and SIGCONTs) the whole group and reaps what comes back to the test.
class Background {
public:
    Background(const TempDir& dir, const std::vector<std::string>& extra, const std::vector<std::string>& command)
        : err_path_(dir / "memtrack.err") {
        std::vector<std::string> argv = {memtrack_bin(), "track", "-o", dir / "out", "--stats", dir / "stats.json"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.push_back("--");
        argv.insert(argv.end(), command.begin(), command.end());
        for (const auto& a : argv) cmdline_ += (cmdline_.empty() ? "" : " ") + a;

        posix_spawnattr_t attr;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
        const std::string out_path = dir / "memtrack.out";
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
        posix_spawnattr_setpgroup(&attr, 0);
        spawn_default_signals(attr, POSIX_SPAWN_SETPGROUP);
        std::vector<char*> cargv;
        for (auto& a : argv) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        const int rc = posix_spawn(&pid_, cargv[0], &actions, &attr, cargv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
    }

    ~Background() {
        // Nothing of the run may outlive the test case: stopped processes die on SIGKILL too.
        ::kill(-pid_, SIGKILL);
        ::kill(-pid_, SIGCONT);
        poll_until(10s, [this] {
            collect();
            return statuses_.count(pid_) && group(pid_).empty();
        });
        // memtrack-guard has a session of its own: it ends its pass after memtrack's death and
        // comes back to the subreaper.
        poll_until(10s, [this] {
            collect();
            return processes([this](const Proc& p) {
                       return p.comm == "memtrack-guard" && (p.ppid == pid_ || p.ppid == ::getpid());
                   }).empty();
        });
    }
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    int pid() const { return pid_; }
    const std::string& cmdline() const { return cmdline_; }
    std::string stderr_text() const { return read_or_empty(err_path_); }

    // memtrack's exit, once it has exited (reaped within `timeout`).
    std::optional<Exit> wait(std::chrono::milliseconds timeout) { return wait_for(pid_, timeout); }
    // The exit of a process of the group that is, or becomes, the test's child (memtrack, or
    // an orphan handed to the subreaper), reaped within `timeout`.
    std::optional<Exit> wait_for(int pid, std::chrono::milliseconds timeout) {
        poll_until(timeout, [&] {
            collect();
            return statuses_.count(pid) != 0;
        });
        auto it = statuses_.find(pid);
        return it == statuses_.end() ? std::nullopt : std::optional<Exit>(it->second);
    }

    // The memtrack child running the command (memtrack-guard is the other child), once it has
    // exec'd `comm`.
    std::optional<int> command_pid(const std::string& comm, std::chrono::milliseconds timeout) {
        std::optional<int> found;
        poll_until(timeout, [&] {
            auto c = processes([&](const Proc& p) { return p.ppid == pid_ && p.comm == comm; });
            if (!c.empty()) found = c.front().pid;
            return found.has_value();
        });
        return found;
    }

    std::optional<int> guard_pid() {
        auto c = processes([&](const Proc& p) { return p.ppid == pid_ && p.comm == "memtrack-guard"; });
        if (c.empty()) return std::nullopt;
        return c.front().pid;
    }

    // Every state the group's processes are in, for failure messages.
    std::string group_text() const { return describe(group(pid_)); }

private:
    // Reaps every child of the test in memtrack's process group, and memtrack-guard (in a
    // session of its own) once it is the test's child.
    void collect() {
        for (;;) {
            int st = 0;
            const pid_t got = ::waitpid(-pid_, &st, WNOHANG);
            if (got > 0) {
                statuses_[got] = exit_of(st);
                continue;
            }
            if (got < 0 && errno == EINTR) continue;
            break;
        }
        for (const Proc& g : processes([](const Proc& p) { return p.comm == "memtrack-guard" && p.ppid == ::getpid(); })) {
            int st = 0;
            if (::waitpid(g.pid, &st, WNOHANG) == g.pid) statuses_[g.pid] = exit_of(st);
        }
    }

    Subreaper subreaper_;  // first: in force before memtrack starts, until the group is reaped
    pid_t pid_ = -1;
    std::string cmdline_;
    std::string err_path_;
    std::map<int, Exit> statuses_;
};

// The writers of a running flood (its children), once `k` of them exist.
std::set<int> flood_writers(int flood_pid, size_t k, std::chrono::milliseconds timeout) {
    std::set<int> pids;
    poll_until(timeout, [&] {
        for (const auto& p : processes([&](const Proc& p) { return p.ppid == flood_pid && p.comm == "flood"; }))
            pids.insert(p.pid);
        return pids.size() >= k;
    });
    return pids;
}

// ---- reading back the writers ----

// writer pid -> its size (1000 + k), from the artifact: the pids whose Mallocs have a writer's size.
std::map<int, uint64_t> writers_in(const std::vector<Event>& events, unsigned k) {
    std::map<int, uint64_t> out;
    for (unsigned i = 0; i < k; i++)
        for (int pid : pids_of(with_size(events, kFloodBaseSize + i))) out[pid] = kFloodBaseSize + i;
    return out;
}

std::set<uint64_t> writer_sizes(unsigned k) {
    std::set<uint64_t> s;
    for (unsigned i = 0; i < k; i++) s.insert(kFloodBaseSize + i);
    return s;
}

// A flood of k writers that ran to completion: each writer is one process (not the root) with
// exactly n Mallocs of its own size, each freed once. Returns writer pid -> size.
std::map<int, uint64_t> check_complete_flood(const std::vector<Event>& events, int root_pid, unsigned k, long n) {
    const auto sizes = writer_sizes(k);
    std::map<uint64_t, std::string> expected;
    std::map<uint64_t, size_t> expected_frees;
    for (uint64_t s : sizes) {
        expected[s] = "Malloc x" + std::to_string(n);
        expected_frees[s] = size_t(n);
    }
    CHECK(show(tally_by_size(events, sizes)) == show(expected));

    for (uint64_t s : sizes) {
        auto pids = pids_of(with_size(events, s));
        CHECK_MESSAGE(pids.size() == 1, "size ", s, " from pids ", show(pids));
        CHECK_MESSAGE(pids.count(root_pid) == 0, "size ", s, " allocated by the flood's parent");
    }
    auto writers = writers_in(events, k);
    CHECK_MESSAGE(writers.size() == k, writers.size(), " writer pids in the artifact");

    // Frees matched to their Malloc, per process (each writer's heap is its own).
    Pairing p = pair_up(events, sizes);
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "writer blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(expected_frees));
    return writers;
}

// The artifact of a run that memtrack ended early: each writer's events are a prefix of its
// malloc/free sequence. Nothing in it may be missing, so every Malloc but a writer's last one
// is freed, and no writer has more than n.
void check_flood_prefix(const std::vector<Event>& events, const std::set<int>& writer_pids, unsigned k, long n) {
    const auto sizes = writer_sizes(k);
    for (const auto& [pid, size] : writers_in(events, k))
        CHECK_MESSAGE(writer_pids.count(pid), "size ", size, " allocated by ", pid, ", not a writer of ",
                      show(writer_pids));
    for (int pid : writer_pids) {
        CAPTURE(pid);
        auto mine = of_pid(events, pid);
        auto mallocs = select(mine, [&](const Event& e) { return e.type == "Malloc" && sizes.count(*e.size); });
        auto sizes_seen = std::set<uint64_t>();
        for (const auto& e : mallocs) sizes_seen.insert(*e.size);
        CHECK_MESSAGE(sizes_seen.size() <= 1, "writer ", pid, " allocated several writer sizes");
        CHECK(mallocs.size() <= size_t(n));
        Pairing p = pair_up(mine, sizes);
        CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
        CHECK_MESSAGE(p.live.size() <= 1, "writer blocks never freed (only the last may be):", join(p.live));
        CHECK(p.total_frees() + p.live.size() == mallocs.size());
    }
}

}  // namespace

TEST_CASE("pressure: slow_consumer_pause_recovers_without_loss") {
    ROOT_SUITE_GUARD();
    // One writer, 100,000 records through a 64 KiB ring (about 1,170 records) read at most
    // 1,024 records per 2 ms: the writer is paused again and again. The delay is real time while
    // the writer runs at the machine's pace: a slow machine (time_factor) slows the consumer too.
    const long n = 50000;
    TempDir dir;
    Tracked t;
    t.result = track(dir, {flood_bin(), "1", std::to_string(n)},
                     {"--ring-size", "64K", "--consumer-delay-us", std::to_string(2000 * time_factor())});
    t.events = dump(t.result.artifact);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);

    const PressureStats s = pressure_stats(t.result.stats.raw);
    check_pauses_balanced(s);

    auto writers = check_complete_flood(t.events, t.result.root_pid, 1, n);
    REQUIRE(writers.size() == 1);
    const int writer = writers.begin()->first;
    // Only the writer allocates while the ring is full, so it is the only process paused.
    CHECK(show_by_pid(s.resumes_by_pid) == show_by_pid(std::map<int, uint64_t>{{writer, s.stops}}));
}

TEST_CASE("pressure: in a pid namespace of its own, a writer paused again and again loses nothing and ends") {
    ROOT_SUITE_GUARD();
    // As slow_consumer_pause_recovers_without_loss, with memtrack the first process of a new pid
    // namespace: BPF must pause and memtrack resume the writer by the same pid.
    const long n = 50000;
    TempDir dir;
    Tracked t;
    t.result = track_wrapped(dir, {"unshare", "--pid", "--fork", "--mount-proc"}, {flood_bin(), "1", std::to_string(n)},
                             {"--ring-size", "64K", "--consumer-delay-us", "2000"});
    t.events = dump(t.result.artifact);
    CHECK_MESSAGE(t.result.run.status == 0, "memtrack ", t.result.run.describe());
    check_common(t);
    const PressureStats s = pressure_stats(t.result.stats.raw);
    CHECK(s.stops > 0);
    check_pauses_balanced(s);
    auto writers = check_complete_flood(t.events, t.result.root_pid, 1, n);
    REQUIRE(writers.size() == 1);
    CHECK(show_by_pid(s.resumes_by_pid) == show_by_pid(std::map<int, uint64_t>{{writers.begin()->first, s.stops}}));
}

TEST_CASE("pressure: slow_consumer_pause_resumes_every_writing_process") {
    ROOT_SUITE_GUARD();
    const unsigned k = 4;
    const long n = 25000;
    TempDir dir;
    Background mt(dir, {"--ring-size", "64K", "--consumer-delay-us", "2000"}, {flood_bin(), std::to_string(k), std::to_string(n)});
    INFO("`", mt.cmdline(), "`");
    const auto ended = mt.wait(60s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running after 60 s; its group:", mt.group_text());
    CHECK_MESSAGE(ended->status == 0, "memtrack ", ended->describe(), "; stderr: ", mt.stderr_text());
    CHECK_FALSE(ended->signaled);
    // memtrack exits once the flood has reaped its writers: nothing of the run may be left, stopped
    // or otherwise (the guard included, which memtrack reaps).
    CHECK_MESSAGE(stopped(group(mt.pid())).empty(), "stopped after memtrack exited:", describe(stopped(group(mt.pid()))));
    CHECK_MESSAGE(group(mt.pid()).empty(), "left behind by memtrack:", mt.group_text());

    const PressureStats s = pressure_stats(read_file(dir / "stats.json"));
    check_pauses_balanced(s);

    auto names = artifact_names(dir / "out");
    REQUIRE(names.size() == 1);
    auto events = dump(dir / "out" + "/" + names[0]);
    const int root_pid = std::stoi(names[0]);
    auto writers = check_complete_flood(events, root_pid, k, n);

    // Every writer was paused and resumed. The flood's parent may have been too: its fork
    // records go through the same ring, and it forks the later writers while the first ones
    // fill it. Nobody else.
    INFO("pressure_resumes_by_pid ", show_by_pid(s.resumes_by_pid));
    for (const auto& [pid, size] : writers)
        CHECK_MESSAGE(s.resumes_by_pid.count(pid) == 1, "writer ", pid, " (size ", size, ") never resumed");
    check_resumed_are_flood(s, writers, root_pid);
}

TEST_CASE("pressure: a process stopped by the user stays stopped, whatever memtrack resumes") {
    ROOT_SUITE_GUARD();
    // The command starts a long sleep, waits for the test to SIGSTOP it, then floods (so memtrack
    // pauses and resumes writers next to the stopped sleep) and waits for the sleep, which never
    // ends: the test then stops memtrack with SIGTERM.
    const unsigned k = 2;
    const long n = 20000;
    TempDir dir;
    const std::string script =
        "sleep 120 & echo $! > \"$1/sleep.pid\"\n"
        "while [ ! -e \"$1/go\" ]; do sleep 0.02; done\n"
        "\"$2\" " + std::to_string(k) + " " + std::to_string(n) + "; echo $? > \"$1/flood.status\"\n"
        "wait\n";
    Background mt(dir, {"--ring-size", "64K", "--consumer-delay-us", "2000", "--socket", dir / "ctl.sock"},
                  {"/bin/bash", "-c", script, "bash", dir.path(), flood_bin()});
    INFO("`", mt.cmdline(), "`");

    int sleep_pid = 0;
    REQUIRE_MESSAGE(poll_until(20s,
                               [&] {
                                   const std::string text = read_or_empty(dir / "sleep.pid");
                                   if (text.empty() || text.back() != '\n') return false;
                                   sleep_pid = std::stoi(text);
                                   return true;
                               }),
                    "the command never started its sleep; memtrack's group:", mt.group_text(),
                    "\nstderr: ", mt.stderr_text());
    auto is_our_sleep = [&](const Proc& p) { return p.comm == "sleep" && p.pgrp == mt.pid(); };
    // Stop it once it sleeps in clock_nanosleep (syscall 230), past its start-up allocations: a
    // SIGSTOP landing while memtrack has it paused for its first stack would be undone by that
    // pause's SIGCONT, which is not what this case is about.
    REQUIRE_MESSAGE(poll_until(20s,
                               [&] {
                                   auto p = read_proc(sleep_pid);
                                   if (!p || !is_our_sleep(*p)) return false;
                                   const std::string sc = read_or_empty("/proc/" + std::to_string(sleep_pid) + "/syscall");
                                   return p->state == 'S' && sc.rfind("230 ", 0) == 0;
                               }),
                    "sleep ", sleep_pid, " never settled in clock_nanosleep; memtrack's group:", mt.group_text());
    REQUIRE(::kill(sleep_pid, SIGSTOP) == 0);
    REQUIRE(poll_until(5s, [&] {
        auto p = read_proc(sleep_pid);
        return p && p->state == 'T';
    }));
    // The sleep may have been paused for pressure and resumed during its start-up allocations,
    // before the user stopped it; from now on it must not be resumed.
    const auto before = live_stats(dir / "ctl.sock");
    REQUIRE_MESSAGE(before.has_value(), "no stats from memtrack's socket; stderr: ", mt.stderr_text());
    const json::value* by_pid_before = before->if_contains("pressure_resumes_by_pid");
    REQUIRE((by_pid_before && by_pid_before->is_object()));
    const std::string sleep_key = std::to_string(sleep_pid);
    const uint64_t sleep_resumes_before =
        by_pid_before->get_object().contains(sleep_key) ? u64_at(by_pid_before->get_object(), sleep_key.c_str()) : 0;
    write_file(dir / "go", "");

    REQUIRE_MESSAGE(poll_until(60s, [&] { return read_or_empty(dir / "flood.status") == "0\n"; }),
                    "the flood did not end with 0 (", read_or_empty(dir / "flood.status"), "); memtrack's group:",
                    mt.group_text(), "\nstderr: ", mt.stderr_text());
    {
        auto p = read_proc(sleep_pid);
        REQUIRE(p.has_value());
        CHECK_MESSAGE(p->state == 'T', "the user-stopped sleep was resumed while memtrack paused and resumed the writers: ",
                      p->describe());
    }

    REQUIRE(::kill(mt.pid(), SIGTERM) == 0);
    const auto ended = mt.wait(30s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running 30 s after SIGTERM; its group:", mt.group_text());
    // memtrack passes the SIGTERM to the command (bash, waiting for the sleep) and exits with its status.
    CHECK_MESSAGE(ended->status == 128 + SIGTERM, "memtrack ", ended->describe(), "; stderr: ", mt.stderr_text());
    CHECK_FALSE(ended->signaled);

    {
        auto p = read_proc(sleep_pid);
        REQUIRE_MESSAGE(p.has_value(), "the sleep is gone");
        CHECK(is_our_sleep(*p));
        CHECK_MESSAGE(p->state == 'T', "memtrack resumed a process it had not stopped: ", p->describe());
    }
    const PressureStats s = pressure_stats(read_file(dir / "stats.json"));
    check_pauses_balanced(s);
    const uint64_t sleep_resumes = s.resumes_by_pid.count(sleep_pid) ? s.resumes_by_pid.at(sleep_pid) : 0;
    CHECK_MESSAGE(sleep_resumes == sleep_resumes_before, "the user-stopped sleep was resumed for pressure: ",
                  show_by_pid(s.resumes_by_pid), " (", sleep_resumes_before, " before the user stopped it)");

    auto names = artifact_names(dir / "out");
    REQUIRE(names.size() == 1);
    auto events = dump(dir / "out" + "/" + names[0]);
    // bash may be paused too (it allocates while the ring is still full after the flood), so
    // the resumed processes are not only the writers here.
    check_complete_flood(events, std::stoi(names[0]), k, n);

    // The sleep's parent (bash) is gone: it is the test's child now. Kill it and reap it.
    REQUIRE(::kill(sleep_pid, SIGKILL) == 0);
    const auto gone = mt.wait_for(sleep_pid, 10s);
    CHECK_MESSAGE(gone.has_value(), "the sleep was not reaped; memtrack's group:", mt.group_text());
    if (gone) CHECK(gone->status == 128 + SIGKILL);
    CHECK_MESSAGE(group(mt.pid()).empty(), "left behind:", mt.group_text());
}

namespace {

// The two "memtrack ends while writers are paused" cases: k writers under a tiny ring read very
// slowly, so they spend their time paused.
constexpr unsigned kPausedWriters = 4;
constexpr long kPausedPairs = 100000;

std::vector<std::string> paused_flood_options(const TempDir& dir) {
    return {"--ring-size", "64K", "--consumer-delay-us", "20000", "--socket", dir / "ctl.sock"};
}
std::vector<std::string> paused_flood_command() {
    return {flood_bin(), std::to_string(kPausedWriters), std::to_string(kPausedPairs)};
}

struct PausedFlood {
    int flood = 0;
    std::set<int> writers;
};

// Waits until the flood runs its writers and memtrack has paused one of them for pressure.
PausedFlood wait_until_writers_paused(Background& mt, const TempDir& dir) {
    const auto flood = mt.command_pid("flood", 20s);
    REQUIRE_MESSAGE(flood.has_value(), "the flood never started; memtrack's group:", mt.group_text());
    PausedFlood p{*flood, flood_writers(*flood, kPausedWriters, 20s)};
    REQUIRE_MESSAGE(p.writers.size() == kPausedWriters, "writers ", show(p.writers), "; memtrack's group:",
                    mt.group_text());
    REQUIRE_MESSAGE(pressure_paused(dir / "ctl.sock", p.writers, 20s), "no writer was ever seen paused; memtrack's group:",
                    mt.group_text());
    return p;
}

}  // namespace

TEST_CASE("pressure: memtrack ended by SIGTERM while writers are paused resumes them and keeps what it recorded") {
    ROOT_SUITE_GUARD();
    const unsigned k = kPausedWriters;
    const long n = kPausedPairs;
    TempDir dir;
    Background mt(dir, paused_flood_options(dir), paused_flood_command());
    INFO("`", mt.cmdline(), "`");
    const auto [flood_pid, writers] = wait_until_writers_paused(mt, dir);

    REQUIRE(::kill(mt.pid(), SIGTERM) == 0);
    const auto ended = mt.wait(30s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running 30 s after SIGTERM; its group:", mt.group_text());
    // memtrack passes the SIGTERM on to the flood's parent, and exits with its status.
    CHECK_MESSAGE(ended->status == 128 + SIGTERM, "memtrack ", ended->describe(), "; stderr: ", mt.stderr_text());
    CHECK_FALSE(ended->signaled);
    CHECK_MESSAGE(stopped(group(mt.pid())).empty(), "stopped after memtrack exited:", describe(stopped(group(mt.pid()))));

    // The writers outlive their parent; recording is off, so nothing pauses them any more and
    // each finishes its n iterations (exit 0) as the test's child.
    for (int w : writers) {
        const auto done = mt.wait_for(w, 60s);
        CHECK_MESSAGE(done.has_value(), "writer ", w, " did not finish; memtrack's group:", mt.group_text());
        if (done) CHECK_MESSAGE(done->status == 0, "writer ", w, " ", done->describe());
    }
    CHECK_MESSAGE(group(mt.pid()).empty(), "left behind:", mt.group_text());

    const PressureStats s = pressure_stats(read_file(dir / "stats.json"));
    check_pauses_balanced(s);
    auto names = artifact_names(dir / "out");
    REQUIRE(names.size() == 1);
    CHECK(names[0] == std::to_string(flood_pid) + ".MemtrackArtifact.msgpack");
    const auto events = dump(dir / "out" + "/" + names[0]);  // throws unless it decodes to the end
    CHECK(s.records >= events.size());
    check_flood_prefix(events, writers, k, n);
    std::map<int, uint64_t> writer_sizes_by_pid;
    for (int w : writers) writer_sizes_by_pid[w] = 0;
    check_resumed_are_flood(s, writer_sizes_by_pid, flood_pid);
}

TEST_CASE("pressure: memtrack killed by SIGKILL while writers are paused: memtrack-guard resumes them") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Background mt(dir, paused_flood_options(dir), paused_flood_command());
    INFO("`", mt.cmdline(), "`");
    const auto [flood_pid, writers] = wait_until_writers_paused(mt, dir);
    const auto guard = mt.guard_pid();
    REQUIRE_MESSAGE(guard.has_value(), "no memtrack-guard child; memtrack's group:", mt.group_text());

    REQUIRE(::kill(mt.pid(), SIGKILL) == 0);
    const auto ended = mt.wait(10s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack not reaped 10 s after SIGKILL; its group:", mt.group_text());
    CHECK(ended->signaled);
    CHECK(ended->status == 128 + SIGKILL);

    // The guard notices memtrack's death, resumes every paused writer and exits.
    const auto guard_ended = mt.wait_for(*guard, 5s);
    CHECK_MESSAGE(guard_ended.has_value(), "memtrack-guard still there 5 s after memtrack died; memtrack's group:",
                  mt.group_text());
    if (guard_ended) CHECK_MESSAGE(guard_ended->status == 0, "memtrack-guard ", guard_ended->describe());
    CHECK_MESSAGE(poll_until(5s, [&] { return stopped(group(mt.pid())).empty(); }),
                  "still stopped 5 s after memtrack died:", describe(stopped(group(mt.pid()))));

    // The flood is the test's child now: it reaps its writers and exits 0 once all finished.
    const auto flood_ended = mt.wait_for(flood_pid, 60s);
    REQUIRE_MESSAGE(flood_ended.has_value(), "the flood did not finish within 60 s of memtrack's death; its group:",
                    mt.group_text());
    CHECK_MESSAGE(flood_ended->status == 0, "flood ", flood_ended->describe());
    CHECK_MESSAGE(group(mt.pid()).empty(), "left behind:", mt.group_text());
}

TEST_CASE("spawn: memtrack killed by SIGKILL while a new process waits for its probes: memtrack-guard resumes it") {
    ROOT_SUITE_GUARD();
    // A shell starting processes one after another: each is held stopped (spawn_stopped) until
    // memtrack has attached its probes. memtrack is killed while one is held.
    TempDir dir;
    const std::string script = "for i in $(seq 5000); do /bin/true; done; echo 0 > \"$1/status\"\n";
    Background mt(dir, {"--no-stacks"}, {"/bin/bash", "-c", script, "bash", dir.path()});
    INFO("`", mt.cmdline(), "`");
    std::optional<int> guard;
    REQUIRE_MESSAGE(poll_until(20s,
                               [&] {
                                   guard = mt.guard_pid();
                                   return guard.has_value();
                               }),
                    "no memtrack-guard child; memtrack's group:", mt.group_text());
    std::vector<Proc> held;
    REQUIRE_MESSAGE(poll_until(20s,
                               [&] {
                                   held = stopped(group(mt.pid()));
                                   return !held.empty();
                               }),
                    "no new process was ever seen held; memtrack's group:", mt.group_text());

    REQUIRE(::kill(mt.pid(), SIGKILL) == 0);
    const auto ended = mt.wait(10s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack not reaped 10 s after SIGKILL; its group:", mt.group_text());
    INFO("held when memtrack died:", describe(held));
    const auto guard_ended = mt.wait_for(*guard, 5s);
    CHECK_MESSAGE(guard_ended.has_value(), "memtrack-guard still there 5 s after memtrack died; memtrack's group:",
                  mt.group_text());
    CHECK_MESSAGE(poll_until(5s, [&] { return stopped(group(mt.pid())).empty(); }),
                  "still stopped 5 s after memtrack died:", describe(stopped(group(mt.pid()))));
    // The shell goes on, untraced, and finishes its loop.
    CHECK_MESSAGE(poll_until(60s, [&] { return read_or_empty(dir / "status") == "0\n"; }),
                  "the shell did not finish; its group:", mt.group_text());
}

namespace {

// A CPU hog for as long as it lives: the producers and memtrack compete with it for the cores,
// which stretches every window a race needs.
class BusyLoop {
public:
    BusyLoop() {
        pid_ = ::fork();
        if (pid_ == 0) {
            for (;;) asm volatile("" ::: "memory");
        }
        if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    }
    ~BusyLoop() {
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    }
    BusyLoop(const BusyLoop&) = delete;
    BusyLoop& operator=(const BusyLoop&) = delete;

private:
    pid_t pid_ = -1;
};

// One threaded flood run to its end under memtrack, with `memtrack ctl drain` every 100 ms.
struct ThreadFlood {
    unsigned writers, threads;
    std::string ring;
    unsigned delay_us;
    long n;
    std::string name() const {
        return std::to_string(writers) + "x" + std::to_string(threads) + " threads, ring " + ring + ", delay " +
               std::to_string(delay_us) + " us, n " + std::to_string(n);
    }
};

uint64_t json_u64(const json::object& o, const char* key) { return u64_at(o, key); }

void run_thread_flood(const ThreadFlood& f) {
    TempDir dir;
    const std::string sock = dir / "ctl.sock";
    Background mt(dir, {"--ring-size", f.ring, "--consumer-delay-us", std::to_string(f.delay_us), "--socket", sock},
                  {flood_bin(), std::to_string(f.writers), std::to_string(f.n), std::to_string(f.threads)});
    INFO(f.name(), ": `", mt.cmdline(), "`");
    std::optional<Exit> ended;
    const auto deadline = Clock::now() + 120s;
    while (!(ended = mt.wait(100ms)) && Clock::now() < deadline)
        run({memtrack_bin(), "ctl", "--socket", sock, "drain"}, 10s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running after 120 s; its group:", mt.group_text());
    CHECK_MESSAGE(ended->status == 0, "memtrack ", ended->describe(), "; stderr: ", mt.stderr_text());
    CHECK_MESSAGE(group(mt.pid()).empty(), "left behind by memtrack:", mt.group_text());

    const std::string raw = read_file(dir / "stats.json");
    const PressureStats s = pressure_stats(raw);
    check_pauses_balanced(s);
    // The bound on the fill: once the ring is at its stop mark, each producer thread writes at
    // most two more traps' records (one whose SIGSTOP a resume may cancel, one after it), and
    // each process one fork record and one exit record, which never pause: 2 x 56 bytes a trap.
    json::error_code ec;
    const json::object o = json::parse(raw, ec).as_object();
    const uint64_t stop = json_u64(o, "stop_bytes"), max_fill = json_u64(o, "max_fill_bytes");
    const uint64_t producers = uint64_t(f.writers) * f.threads + f.writers + 1;
    CHECK_MESSAGE(max_fill <= stop + 2 * producers * 112, "max_fill_bytes ", max_fill, " above stop_bytes ", stop,
                  " + 2 x ", producers, " x 112");

    // Every thread's allocations, exactly: size 2000 + k * threads + j is thread j of writer k.
    auto names = artifact_names(dir / "out");
    REQUIRE(names.size() == 1);
    const auto events = dump(dir / "out" + "/" + names[0]);
    std::set<uint64_t> sizes;
    for (unsigned i = 0; i < f.writers * f.threads; ++i) sizes.insert(kFloodThreadBaseSize + i);
    std::map<uint64_t, std::string> expected;
    for (uint64_t sz : sizes) expected[sz] = "Malloc x" + std::to_string(f.n);
    CHECK(show(tally_by_size(events, sizes)) == show(expected));
    std::map<uint64_t, std::set<std::pair<int, int>>> who;
    for (const Event& e : events)
        if (e.size && sizes.count(*e.size)) who[*e.size].insert({e.pid, e.tid});
    for (const auto& [sz, threads] : who)
        CHECK_MESSAGE(threads.size() == 1, "size ", sz, " from ", threads.size(), " threads");
    // The whole history at once: every Malloc freed once, and no Free of anything else (glibc's
    // thread-cache teardown at each thread's exit frees blocks already freed: no events).
    Pairing p = pair_up(events, sizes);
    CHECK_MESSAGE(p.problems.empty(), p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(p.total_frees() == size_t(f.n) * sizes.size());
    const auto stray = unallocated_frees(events);
    CHECK_MESSAGE(stray.empty(), stray.size(), " frees of no live block:", join(stray));
}

}  // namespace

TEST_CASE("pressure: producer threads beside a busy loop, tiny rings, drains: nothing lost, every pause ends, fill bounded") {
    ROOT_SUITE_GUARD();
    // scripts/flood.sh --threads runs this kind of run a hundred times; CI runs a few.
    const ThreadFlood floods[] = {
        {1, 8, "64K", 2000, 6000},
        {1, 32, "64K", 500, 1500},
        {2, 16, "256K", 500, 2000},
        {1, 64, "1M", 200, 1500},
    };
    BusyLoop busy;
    for (const ThreadFlood& f : floods) {
        CAPTURE(f.name());
        run_thread_flood(f);
    }
}

TEST_CASE("pressure: memtrack killed by SIGKILL while threads are paused: memtrack-guard resumes them") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Background mt(dir, paused_flood_options(dir), {flood_bin(), "1", "200000", "16"});
    INFO("`", mt.cmdline(), "`");
    const auto flood = mt.command_pid("flood", 20s);
    REQUIRE(flood.has_value());
    const auto writers = flood_writers(*flood, 1, 20s);
    REQUIRE(writers.size() == 1);
    REQUIRE_MESSAGE(pressure_paused(dir / "ctl.sock", writers, 20s), "the writer was never seen paused; memtrack's group:",
                    mt.group_text());
    const auto guard = mt.guard_pid();
    REQUIRE(guard.has_value());
    REQUIRE(::kill(mt.pid(), SIGKILL) == 0);
    // Its death closes every probe's link; with perf-event uprobes (one per site, on kernels
    // without uprobe_multi) each waits for an RCU grace period, seconds in a slow guest.
    REQUIRE(mt.wait(10s * time_factor()).has_value());
    const auto guard_ended = mt.wait_for(*guard, 5s);
    CHECK_MESSAGE(guard_ended.has_value(), "memtrack-guard still there 5 s after memtrack died");
    if (guard_ended) CHECK_MESSAGE(guard_ended->status == 0, "memtrack-guard ", guard_ended->describe());
    CHECK_MESSAGE(poll_until(5s, [&] { return stopped(group(mt.pid())).empty(); }),
                  "still stopped 5 s after memtrack died:", describe(stopped(group(mt.pid()))));
    const auto flood_ended = mt.wait_for(*flood, 60s);
    REQUIRE_MESSAGE(flood_ended.has_value(), "the flood did not finish within 60 s of memtrack's death; its group:",
                    mt.group_text());
    CHECK(flood_ended->status == 0);
}

namespace {

// `flood 1 <forever>` started by the test itself, outside memtrack, in a process group of its
// own: a process to attach. The destructor SIGKILLs (and SIGCONTs) the group and reaps the flood.
class OwnFlood {
public:
    OwnFlood() {
        posix_spawnattr_t attr;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addclosefrom_np(&actions, 3);
        posix_spawnattr_setpgroup(&attr, 0);
        spawn_default_signals(attr, POSIX_SPAWN_SETPGROUP);
        std::string bin = flood_bin(), one = "1", n = "1000000000000";
        char* argv[] = {bin.data(), one.data(), n.data(), nullptr};
        const int rc = posix_spawn(&pid_, argv[0], &actions, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw std::runtime_error(std::string("posix_spawn flood: ") + std::strerror(rc));
        const auto w = flood_writers(pid_, 1, 20s);
        if (w.size() != 1) throw std::runtime_error("the flood started no writer");
        writer_ = *w.begin();
    }
    ~OwnFlood() {
        ::kill(-pid_, SIGKILL);
        ::kill(-pid_, SIGCONT);
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    }
    OwnFlood(const OwnFlood&) = delete;
    OwnFlood& operator=(const OwnFlood&) = delete;
    int writer() const { return writer_; }

private:
    pid_t pid_ = -1;
    int writer_ = 0;
};

bool answers(const std::string& sock) {
    return poll_until(30s, [&] { return live_stats(sock).has_value(); });
}

RunResult attach(const std::string& sock, int pid) {
    return run({memtrack_bin(), "ctl", "--socket", sock, "attach", "--pid", std::to_string(pid)}, 30s);
}

// Whether pid is seen stopped at any sample within `span`.
bool seen_stopped(int pid, std::chrono::milliseconds span) {
    bool stopped_once = false;
    poll_until(span, [&] {
        auto p = read_proc(pid);
        stopped_once = stopped_once || (p && p->state == 'T');
        return false;
    });
    return stopped_once;
}

// memtrack running `sleep 600` with the paused-flood options and a socket, answering, beside a
// flood of the test's own to attach; both ended by their destructors (memtrack first).
struct BesideFlood {
    explicit BesideFlood(const TempDir& dir) : sock(dir / "ctl.sock"), mt(dir, paused_flood_options(dir), {"sleep", "600"}) {
        REQUIRE_MESSAGE(answers(sock), "memtrack never answered; stderr: ", mt.stderr_text());
        const auto g = mt.guard_pid();
        REQUIRE_MESSAGE(g.has_value(), "no memtrack-guard child; memtrack's group:", mt.group_text());
        guard = *g;
    }
    OwnFlood flood;
    std::string sock;
    Background mt;
    int guard = 0;
};

}  // namespace

TEST_CASE("pressure: kill -KILL of memtrack's whole process group: memtrack-guard resumes an attached process it paused") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    BesideFlood run(dir);
    auto& [flood, sock, mt, guard] = run;
    INFO("`", mt.cmdline(), "`");
    const RunResult a = attach(sock, flood.writer());
    REQUIRE_MESSAGE(a.status == 0, a.describe());
    REQUIRE_MESSAGE(pressure_paused(sock, {flood.writer()}, 20s), "the attached writer was never seen paused; stderr: ",
                    mt.stderr_text());

    // What a CI runner does to a job: the whole group at once.
    REQUIRE(::kill(-mt.pid(), SIGKILL) == 0);
    const auto ended = mt.wait(10s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack not reaped 10 s after SIGKILL; its group:", mt.group_text());
    CHECK(ended->status == 128 + SIGKILL);
    const auto guard_ended = mt.wait_for(guard, 5s);
    CHECK_MESSAGE(guard_ended.has_value(), "memtrack-guard did not outlive the group kill and exit");
    if (guard_ended) CHECK_MESSAGE(guard_ended->status == 0, "memtrack-guard ", guard_ended->describe());
    CHECK_MESSAGE(poll_until(5s,
                             [&] {
                                 auto p = read_proc(flood.writer());
                                 return p && p->state != 'T';
                             }),
                  "the attached writer is still stopped 5 s after memtrack's group was killed");
}

TEST_CASE("pressure: memtrack-guard killed: memtrack says so in one line and pauses nobody from then on") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    BesideFlood run(dir);
    auto& [flood, sock, mt, guard] = run;
    INFO("`", mt.cmdline(), "`");
    REQUIRE(::kill(guard, SIGKILL) == 0);
    REQUIRE_MESSAGE(poll_until(5s, [&] { return mt.stderr_text().find("memtrack-guard died") != std::string::npos; }),
                    "memtrack did not say its guard died; stderr: ", mt.stderr_text());
    CHECK_MESSAGE(is_one_line(mt.stderr_text()), mt.stderr_text());

    // A writer that a 64 KiB ring read every 20 ms would keep paused: it is never stopped now.
    const RunResult a = attach(sock, flood.writer());
    REQUIRE_MESSAGE(a.status == 0, a.describe());
    CHECK_MESSAGE(!seen_stopped(flood.writer(), 2000ms), "memtrack paused a process after its guard died");
    const auto stats = live_stats(sock);
    REQUIRE(stats.has_value());
    CHECK(u64_at(*stats, "dropped") > 0);  // what not pausing costs, counted

    REQUIRE(::kill(mt.pid(), SIGTERM) == 0);
    const auto ended = mt.wait(30s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running 30 s after SIGTERM; its group:", mt.group_text());
    CHECK_MESSAGE(ended->status == 128 + SIGTERM, "memtrack ", ended->describe(), "; stderr: ", mt.stderr_text());
    CHECK_FALSE(seen_stopped(flood.writer(), 100ms));
}

TEST_CASE("pressure: a SIGSTOP sent while memtrack has a process paused is not undone by memtrack's resume (30 rounds)") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string sock = dir / "ctl.sock";
    Background mt(dir, paused_flood_options(dir), {flood_bin(), "2", "1000000000000"});
    INFO("`", mt.cmdline(), "`");
    const auto flood = mt.command_pid("flood", 20s);
    REQUIRE_MESSAGE(flood.has_value(), "the flood never started; memtrack's group:", mt.group_text());
    const auto writers = flood_writers(*flood, 2, 20s);
    REQUIRE(writers.size() == 2);
    REQUIRE_MESSAGE(pressure_paused(sock, writers, 20s), "no writer was ever seen paused; memtrack's group:",
                    mt.group_text());
    const int w = *writers.begin();
    unsigned undone = 0, rounds = 0;
    for (; rounds < 30; ++rounds) {
        // Paused by memtrack (nobody else stops it), then stopped by "the user" too.
        REQUIRE_MESSAGE(poll_until(10s,
                                   [&] {
                                       auto p = read_proc(w);
                                       return p && p->state == 'T';
                                   }),
                        "writer ", w, " never paused again; memtrack's group:", mt.group_text());
        REQUIRE(::kill(w, SIGSTOP) == 0);
        // Undone means the writer runs on after the user's SIGSTOP: then it refills the ring
        // until memtrack pauses it again, milliseconds of CPU. It may run for microseconds: the
        // 'T' read above can be that old (memtrack's SIGCONT just before the SIGSTOP), and a
        // SIGSTOP that lands between memtrack's look at the hold word and its SIGCONT is
        // cancelled by it and sent again at once (BPF, in traces 17 us later). So: at most 1 ms
        // of CPU in the 300 ms after the SIGSTOP (a pause ends within milliseconds once the ring
        // has room), and stopped at the end.
        const auto cpu_before = cpu_ns(w);
        std::this_thread::sleep_for(300ms);
        const auto cpu_after = cpu_ns(w);
        const auto p = read_proc(w);
        REQUIRE_MESSAGE((cpu_before && cpu_after && p), "writer ", w, " gone");
        const bool ran = *cpu_after - *cpu_before > 1'000'000 || p->state != 'T';
        if (ran) ++undone;
        REQUIRE(::kill(w, SIGCONT) == 0);
    }
    CHECK_MESSAGE(undone == 0, "the user's SIGSTOP was undone in ", undone, " of ", rounds, " rounds");
    const auto stats = live_stats(sock);
    REQUIRE(stats.has_value());
    CHECK_MESSAGE(u64_at(*stats, "dropped") == 0, json::serialize(*stats));
    REQUIRE(::kill(mt.pid(), SIGTERM) == 0);
    const auto ended = mt.wait(30s);
    REQUIRE_MESSAGE(ended.has_value(), "memtrack still running 30 s after SIGTERM; its group:", mt.group_text());
    CHECK_FALSE(ended->signaled);
    const PressureStats s = pressure_stats(read_file(dir / "stats.json"));
    check_pauses_balanced(s);
}
