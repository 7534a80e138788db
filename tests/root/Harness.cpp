#include "Harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include "core/Fd.hpp"

extern char** environ;

namespace memtrack::roottest {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string env_or_empty(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
}

[[noreturn]] void fail_errno(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

using memtrack::Fd;

std::array<Fd, 2> make_pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) fail_errno("pipe2");
    return {Fd(p[0]), Fd(p[1])};
}

std::string slurp_or_empty(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string first_line_of(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// One line per process of group `pgid`: pid, state, command line, kernel wait channel, and
// where a stopped or sleeping process sits (its syscall line), for hang diagnostics.
std::string describe_group(pid_t pgid) {
    std::string out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const std::string stat = first_line_of(entry.path() / "stat");
        // "pid (comm) state ppid pgrp ...": comm may hold spaces, so parse after the last ')'.
        auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        std::string state;
        long ppid = 0, pgrp = 0;
        rest >> state >> ppid >> pgrp;
        if (pgrp != pgid) continue;
        std::string cmdline = slurp_or_empty((entry.path() / "cmdline").string());
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        std::string status = slurp_or_empty((entry.path() / "status").string());
        std::string sig;
        for (const char* key : {"SigBlk:", "SigIgn:"}) {
            auto at = status.find(key);
            if (at != std::string::npos) sig += " " + status.substr(at, status.find('\n', at) - at);
        }
        out += "\n    pid " + name + " ppid " + std::to_string(ppid) + " state " + state + " wchan " +
               first_line_of((entry.path() / "wchan").string()) + " syscall " +
               first_line_of((entry.path() / "syscall").string()) + sig + " : " + cmdline;
    }
    return out.empty() ? std::string("\n    (no process left in the group)") : out;
}

}  // namespace

// ---- environment ----

bool root_suite_skipped() {
    return ::geteuid() != 0 && env_or_empty("MEMTRACK_REQUIRE_BPF") != "1";
}

void root_suite_check() {
    // test_main returned 77 before any case when the suite is skipped; a case running without
    // root is one MEMTRACK_REQUIRE_BPF=1 asked to run, so it fails.
    if (::geteuid() != 0)
        FAIL("root suite needs root (CAP_BPF, CAP_PERFMON) and MEMTRACK_REQUIRE_BPF=1 is set");
    REQUIRE_MESSAGE(!env_or_empty("MEMTRACK_BIN").empty(),
                    "MEMTRACK_BIN is not set (run the suite through `meson test --suite root`)");
    REQUIRE_MESSAGE(!env_or_empty("FIXTURE_DIR").empty(),
                    "FIXTURE_DIR is not set (run the suite through `meson test --suite root`)");
}

std::string memtrack_bin() {
    std::string bin = env_or_empty("MEMTRACK_BIN");
    if (bin.empty()) throw std::runtime_error("MEMTRACK_BIN is not set");
    if (::access(bin.c_str(), X_OK) != 0) fail_errno("memtrack binary " + bin);
    return bin;
}

bool kernel_has_per_process_probes() {
    static const bool has = [] {
        const RunResult r = run({memtrack_bin(), "doctor", "--json"});
        REQUIRE_MESSAGE(r.status == 0, "memtrack doctor --json: ", r.describe());
        return json::parse(r.out).at("features").at("send_signal_task").at("present").as_bool();
    }();
    return has;
}

std::string fixture(const std::string& name) {
    std::string dir = env_or_empty("FIXTURE_DIR");
    if (dir.empty()) throw std::runtime_error("FIXTURE_DIR is not set");
    std::string path = dir + "/" + name;
    if (::access(path.c_str(), X_OK) != 0) fail_errno("fixture " + path);
    return path;
}

// ---- running processes ----

std::string RunResult::describe() const {
    std::string s;
    if (timed_out)
        s = "timed out (killed by the harness); its process group was:" + hang_report + "\n";
    else if (signaled)
        s = "killed by signal " + std::to_string(status - 128) + " (status " + std::to_string(status) + ")";
    else
        s = "exit " + std::to_string(status);
    if (strays) s += ", left descendants holding its stdout/stderr";
    s += "; stderr: ";
    s += err.empty() ? std::string("(empty)") : "\n" + err;
    return s;
}

int time_factor() {
    const char* f = std::getenv("MEMTRACK_TIME_FACTOR");
    return f && std::atoi(f) > 1 ? std::atoi(f) : 1;
}

RunResult run(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
    if (argv.empty()) throw std::runtime_error("run: empty argv");
    timeout *= time_factor();
    auto out_pipe = make_pipe();
    auto err_pipe = make_pipe();

    pid_t pid = -1;
    {
        SpawnSetup s;
        check_spawn(posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0),
                    "posix_spawn_file_actions_addopen");
        check_spawn(posix_spawn_file_actions_adddup2(&s.actions, out_pipe[1].get(), 1),
                    "posix_spawn_file_actions_adddup2");
        check_spawn(posix_spawn_file_actions_adddup2(&s.actions, err_pipe[1].get(), 2),
                    "posix_spawn_file_actions_adddup2");
        // Nothing but 0-2: whatever else the command under test has open, it opened itself.
        check_spawn(posix_spawn_file_actions_addclosefrom_np(&s.actions, 3),
                    "posix_spawn_file_actions_addclosefrom_np");

        check_spawn(posix_spawnattr_setpgroup(&s.attr, 0), "posix_spawnattr_setpgroup");
        check_spawn(spawn_default_signals(s.attr, POSIX_SPAWN_SETPGROUP), "posix_spawnattr signals");

        std::vector<char*> cargv;
        for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
        cargv.push_back(nullptr);
        int rc = posix_spawnp(&pid, cargv[0], &s.actions, &s.attr, cargv.data(), environ);
        if (rc != 0) throw std::runtime_error("posix_spawnp " + argv[0] + ": " + std::strerror(rc));
    }
    out_pipe[1].reset();
    err_pipe[1].reset();

    RunResult r;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const auto stray_grace = std::chrono::seconds(10);
    std::optional<std::chrono::steady_clock::time_point> reaped_at;
    int wstatus = 0;
    bool killed_group = false;
    std::chrono::steady_clock::time_point killed_at;
    std::array<Fd*, 2> fds{&out_pipe[0], &err_pipe[0]};
    std::array<std::string*, 2> sinks{&r.out, &r.err};

    auto kill_group = [&] {
        if (r.timed_out) r.hang_report = describe_group(pid);
        // The group outlives its leader while any member is alive; ESRCH means nobody is left.
        ::kill(-pid, SIGKILL);
        killed_group = true;
        killed_at = std::chrono::steady_clock::now();
    };

    for (;;) {
        if (!reaped_at) {
            pid_t got = ::waitpid(pid, &wstatus, WNOHANG);
            if (got == pid)
                reaped_at = std::chrono::steady_clock::now();
            else if (got < 0 && errno != EINTR)
                fail_errno("waitpid " + std::to_string(pid));
        }
        bool open = fds[0]->get() >= 0 || fds[1]->get() >= 0;
        if (reaped_at && !open) break;

        auto now = std::chrono::steady_clock::now();
        if (!killed_group && now >= deadline) {
            r.timed_out = true;
            kill_group();
        }
        if (!killed_group && reaped_at && open && now - *reaped_at >= stray_grace) {
            r.strays = true;
            kill_group();
        }

        if (killed_group && reaped_at && open && now - killed_at >= std::chrono::seconds(5)) {
            // Something outside the group still holds the pipes: stop reading.
            r.strays = true;
            fds[0]->reset();
            fds[1]->reset();
            continue;
        }
        if (!open) {
            // Pipes closed but the child not yet reaped: wait for it a little.
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            continue;
        }
        std::array<pollfd, 2> pfds{};
        for (size_t i = 0; i < 2; i++) pfds[i] = pollfd{fds[i]->get(), POLLIN, 0};
        int n = ::poll(pfds.data(), pfds.size(), 50);
        if (n < 0 && errno != EINTR) fail_errno("poll");
        for (size_t i = 0; i < 2; i++) {
            if (fds[i]->get() < 0 || !(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[65536];
            ssize_t got = ::read(fds[i]->get(), buf, sizeof buf);
            if (got > 0)
                sinks[i]->append(buf, static_cast<size_t>(got));
            else if (got == 0 || (errno != EINTR && errno != EAGAIN))
                fds[i]->reset();
        }
    }

    if (WIFEXITED(wstatus)) {
        r.status = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
        r.signaled = true;
        r.status = 128 + WTERMSIG(wstatus);
    }
    return r;
}

// ---- files ----

SpawnSetup::SpawnSetup() {
    if (posix_spawnattr_init(&attr) != 0) throw std::runtime_error("posix_spawnattr_init failed");
    if (posix_spawn_file_actions_init(&actions) != 0) {
        posix_spawnattr_destroy(&attr);
        throw std::runtime_error("posix_spawn_file_actions_init failed");
    }
}

SpawnSetup::~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
}

void check_spawn(int rc, const char* what) {
    if (rc != 0) throw std::runtime_error(std::string(what) + ": " + std::strerror(rc));
}

int spawn_default_signals(posix_spawnattr_t& attr, short extra_flags) {
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigfillset(&defaults);
    sigdelset(&defaults, SIGKILL);
    sigdelset(&defaults, SIGSTOP);
    if (int e = posix_spawnattr_setsigmask(&attr, &empty)) return e;
    if (int e = posix_spawnattr_setsigdefault(&attr, &defaults)) return e;
    return posix_spawnattr_setflags(&attr, short(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | extra_flags));
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail_errno("open " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) fail_errno("write " + path);
}

std::vector<std::string> artifact_names(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        if (name.find("MemtrackArtifact") != std::string::npos) names.push_back(name);
    }
    if (ec) throw std::runtime_error("cannot list " + dir + ": " + ec.message());
    std::sort(names.begin(), names.end());
    return names;
}

bool is_one_line(const std::string& s) {
    std::string body = s;
    if (!body.empty() && body.back() == '\n') body.pop_back();
    return !body.empty() && body.find('\n') == std::string::npos;
}

uint64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// ---- memtrack track ----

namespace {

std::vector<std::string> track_prefix(const TempDir& dir) {
    std::string out = dir / "out";
    fs::create_directories(out);
    std::vector<std::string> argv = {memtrack_bin(), "track", "-o", out};
    // $MEMTRACK_TEST_TRACK_ARGS: more options for every run, split at spaces (scripts/flood.sh
    // --lifecycle runs cases under a small ring this way).
    if (const char* more = std::getenv("MEMTRACK_TEST_TRACK_ARGS")) {
        std::istringstream words(more);
        for (std::string w; words >> w;) argv.push_back(w);
    }
    return argv;
}

TrackResult track_checked(const TempDir& dir, std::vector<std::string> args,
                          const std::vector<std::string>& wrapper = {}) {
    std::vector<std::string> argv = wrapper;
    const auto prefix = track_prefix(dir);
    argv.insert(argv.end(), prefix.begin(), prefix.end());
    argv.push_back("--stats");
    argv.push_back(dir / "stats.json");
    argv.insert(argv.end(), args.begin(), args.end());

    TrackResult t;
    t.out_dir = dir / "out";
    t.t_begin = monotonic_ns();
    t.run = run(argv);
    t.t_end = monotonic_ns();

    std::string cmdline;
    for (const auto& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
    if (t.run.timed_out || t.run.strays)
        throw std::runtime_error("`" + cmdline + "`: " + t.run.describe());

    auto names = artifact_names(t.out_dir);
    if (names.size() != 1) {
        std::string listed;
        for (const auto& n : names) listed += " " + n;
        throw std::runtime_error("`" + cmdline + "`: expected exactly one MemtrackArtifact file in " +
                                 t.out_dir + ", found " + std::to_string(names.size()) +
                                 (listed.empty() ? "" : ":" + listed) + "; memtrack " + t.run.describe());
    }
    const std::string suffix = ".MemtrackArtifact.msgpack";
    const std::string& name = names[0];
    std::string pid_part = name.size() > suffix.size() && name.ends_with(suffix)
                               ? name.substr(0, name.size() - suffix.size())
                               : std::string();
    if (pid_part.empty() || !std::all_of(pid_part.begin(), pid_part.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw std::runtime_error("artifact name is not <root-pid>" + suffix + ": " + name);
    t.root_pid = std::stoi(pid_part);
    t.artifact = t.out_dir + "/" + name;

    std::string stats_path = dir / "stats.json";
    if (!fs::exists(stats_path))
        throw std::runtime_error("`" + cmdline + "` wrote no --stats file; memtrack " + t.run.describe());
    t.stats = parse_stats(read_file(stats_path));
    return t;
}

}  // namespace

TrackResult track(const TempDir& dir, const std::vector<std::string>& command,
                  const std::vector<std::string>& extra) {
    std::vector<std::string> args = extra;
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return track_checked(dir, std::move(args));
}

TrackResult track_wrapped(const TempDir& dir, const std::vector<std::string>& wrapper,
                          const std::vector<std::string>& command, const std::vector<std::string>& extra) {
    std::vector<std::string> args = extra;
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return track_checked(dir, std::move(args), wrapper);
}

TrackResult track_args(const TempDir& dir, const std::vector<std::string>& args) {
    return track_checked(dir, args);
}

RunResult track_raw(const TempDir& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv = track_prefix(dir);
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

namespace {

uint64_t json_u64(const json::object& o, const char* key, const std::string& where) {
    const json::value* v = o.if_contains(key);
    if (!v) throw std::runtime_error(where + ": missing \"" + key + "\"");
    if (v->is_uint64()) return v->get_uint64();
    if (v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
    throw std::runtime_error(where + ": \"" + key + "\" is not a non-negative integer: " +
                             json::serialize(*v));
}

}  // namespace

Stats parse_stats(const std::string& text) {
    json::error_code ec;
    json::value v = json::parse(text, ec);
    if (ec) throw std::runtime_error("--stats file is not JSON (" + ec.message() + "): " + text);
    if (!v.is_object()) throw std::runtime_error("--stats file is not a JSON object: " + text);
    const auto& o = v.get_object();
    Stats s;
    s.raw = text;
    s.records = json_u64(o, "records", "--stats");
    s.bytes = json_u64(o, "bytes", "--stats");
    s.dropped = json_u64(o, "dropped", "--stats");
    const json::value* d = o.if_contains("duration_s");
    if (!d || !d->is_number()) throw std::runtime_error("--stats: \"duration_s\" missing or not a number: " + text);
    s.duration_s = d->to_number<double>();
    return s;
}

uint64_t stats_u64(const Stats& s, const char* key) {
    json::error_code ec;
    json::value v = json::parse(s.raw, ec);
    if (ec || !v.is_object()) throw std::runtime_error("--stats file is not a JSON object: " + s.raw);
    return json_u64(v.get_object(), key, "--stats");
}

double stats_double(const Stats& s, const char* key) {
    json::error_code ec;
    json::value v = json::parse(s.raw, ec);
    if (ec || !v.is_object()) throw std::runtime_error("--stats file is not a JSON object: " + s.raw);
    const json::value* n = v.get_object().if_contains(key);
    if (!n || !n->is_number()) throw std::runtime_error(std::string("--stats: \"") + key + "\" is missing or not a number");
    return n->to_number<double>();
}

// ---- memtrack dump ----

std::string Event::describe() const {
    std::string s = "line " + std::to_string(line) + ": " + type + " pid " + std::to_string(pid) + " tid " +
                    std::to_string(tid) + " ts " + std::to_string(timestamp) + " addr " + hex(addr);
    if (old_addr) s += " old_addr " + hex(*old_addr);
    if (size) s += " size " + std::to_string(*size);
    if (stack_hash) s += " stack_hash " + hex(*stack_hash);
    return s;
}

Event parse_event(const std::string& line, size_t line_no) {
    const std::string where = "dump line " + std::to_string(line_no) + " `" + line + "`";
    json::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec) throw std::runtime_error(where + ": not JSON: " + ec.message());
    if (!v.is_object()) throw std::runtime_error(where + ": not a JSON object");
    const auto& o = v.get_object();

    static const std::array<const char*, 8> known{"pid", "tid", "timestamp", "addr", "type", "old_addr", "size", "stack_hash"};
    for (const auto& kv : o) {
        bool ok = std::any_of(known.begin(), known.end(), [&](const char* k) { return kv.key() == k; });
        if (!ok) throw std::runtime_error(where + ": unexpected key \"" + std::string(kv.key()) + "\"");
    }

    Event e;
    e.line = line_no;
    uint64_t pid = json_u64(o, "pid", where);
    uint64_t tid = json_u64(o, "tid", where);
    if (pid == 0 || pid > 0x7fffffff || tid == 0 || tid > 0x7fffffff)
        throw std::runtime_error(where + ": pid/tid out of range");
    e.pid = static_cast<int>(pid);
    e.tid = static_cast<int>(tid);
    e.timestamp = json_u64(o, "timestamp", where);
    e.addr = json_u64(o, "addr", where);
    const json::value* type = o.if_contains("type");
    if (!type || !type->is_string()) throw std::runtime_error(where + ": \"type\" missing or not a string");
    e.type = std::string(type->get_string());
    static const std::array<const char*, 8> kinds{"Malloc", "Free", "Realloc", "Calloc", "AlignedAlloc", "Mmap", "Munmap", "Brk"};
    if (std::none_of(kinds.begin(), kinds.end(), [&](const char* k) { return e.type == k; }))
        throw std::runtime_error(where + ": unknown type \"" + e.type + "\"");

    if (o.contains("old_addr")) {
        if (e.type != "Realloc") throw std::runtime_error(where + ": old_addr on a " + e.type);
        e.old_addr = json_u64(o, "old_addr", where);
    }
    if (e.type == "Free") {
        if (o.contains("size")) throw std::runtime_error(where + ": size on a Free");
        if (o.contains("stack_hash")) throw std::runtime_error(where + ": stack_hash on a Free");
    } else {
        e.size = json_u64(o, "size", where);
    }
    if (o.contains("stack_hash")) {
        e.stack_hash = json_u64(o, "stack_hash", where);
        if (*e.stack_hash == 0) throw std::runtime_error(where + ": stack_hash 0 must be omitted");
    }
    return e;
}

std::vector<Event> dump(const std::string& artifact) {
    RunResult r = run({memtrack_bin(), "dump", artifact});
    if (r.timed_out || r.status != 0)
        throw std::runtime_error("`memtrack dump " + artifact + "`: " + r.describe());
    std::vector<Event> events;
    std::istringstream in(r.out);
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.empty()) continue;
        events.push_back(parse_event(line, line_no));
    }
    return events;
}

}  // namespace memtrack::roottest
