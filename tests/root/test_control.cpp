// The control socket (docs/PROTOCOL.md), driven the way a benchmark runner drives it: the phases
// fixture (tests/progs/phases.c) runs one phase per letter it reads on stdin, and the test
// switches recording, drains, attaches and shuts down between phases, then counts exactly what
// the artifact holds.
//
// Every process a case starts, directly or through memtrack, is registered by pid in a
// `Processes` set. While a case runs, the test process is a child subreaper, so what memtrack
// leaves behind when it exits (the command after a `shutdown`, `sleep` in the attach case)
// comes back to the test; at the end of the case (also on failure) every registered process
// still alive is killed by pid and reaped, and the case checks that none of them is left.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/OutputFiles.hpp"
#include "core/Fd.hpp"
#include "Events.hpp"
#include "format/Timeline.hpp"

extern char** environ;

using namespace memtrack::roottest;

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What phases.c allocates (it keeps its own copy of these numbers).
constexpr size_t kRounds = 100;
constexpr uint64_t kSizeA = 11111;
constexpr uint64_t kSizeB = 22222;
constexpr uint64_t kSizeC = 33333;
constexpr uint64_t kSizeLoop = 44444;
constexpr uint64_t kSizeKeep = 55555;  // 'k' keeps one block of it live, 'f' frees it

// Bounds. Generous: the machine running the suite may be shared and slow; anything near them
// means something is stuck.
constexpr auto kStartup = 60s;     // memtrack up and answering ping
constexpr auto kPhase = 30s;       // one fixture phase (100 malloc/free pairs)
constexpr auto kReply = 30s;       // a control reply that does no real work
constexpr auto kDrainBound = 10s;  // one drain under load (the causality case)
constexpr auto kExit = 30s;        // memtrack's exit after its command ended or a shutdown

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

[[noreturn]] void fail_errno(const std::string& what) {
    throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::string read_text_or_empty(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---- processes ----

// /proc/PID/stat after the command name: "S ppid pgrp ..." as fields; empty when gone.
std::vector<std::string> stat_fields(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line)) return {};
    const auto close = line.rfind(')');
    if (close == std::string::npos) return {};
    std::istringstream rest(line.substr(close + 1));
    std::vector<std::string> fields;
    for (std::string f; rest >> f;) fields.push_back(f);
    return fields;
}

// 'R', 'S', 'T', 'Z', ...; 0 when the process does not exist.
char proc_state(pid_t pid) {
    auto f = stat_fields(pid);
    return f.empty() ? 0 : f[0][0];
}

// Start time in clock ticks since boot (stat field 22): tells a process from a later one that
// reuses its pid. 0 when gone.
uint64_t proc_start(pid_t pid) {
    auto f = stat_fields(pid);
    return f.size() > 19 ? std::stoull(f[19]) : 0;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const pid_t pid = std::stoi(name);
        auto f = stat_fields(pid);
        if (f.size() > 1 && std::stol(f[1]) == parent) out.push_back(pid);
    }
    return out;
}

std::string describe_wait_status(int wstatus) {
    if (WIFEXITED(wstatus)) return "exit " + std::to_string(WEXITSTATUS(wstatus));
    if (WIFSIGNALED(wstatus)) return "killed by signal " + std::to_string(WTERMSIG(wstatus));
    return "wait status " + std::to_string(wstatus);
}

// Every process a test case started, directly or through memtrack, by pid. See the file comment.
class Processes {
public:
    Processes() {
        if (::prctl(PR_GET_CHILD_SUBREAPER, &previous_) != 0) previous_ = 0;
        if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) fail_errno("PR_SET_CHILD_SUBREAPER");
    }
    ~Processes() {
        kill_all();
        ::prctl(PR_SET_CHILD_SUBREAPER, previous_);
    }
    Processes(const Processes&) = delete;
    Processes& operator=(const Processes&) = delete;

    void add(pid_t pid) {
        if (pid <= 0) return;
        for (const auto& e : entries_)
            if (e.pid == pid) return;
        entries_.push_back(Entry{pid, proc_start(pid), std::nullopt});
    }

    // `pid`'s descendants as of now, for the processes memtrack starts that the test cannot
    // name otherwise (its stop-guard helper, for one).
    void add_descendants(pid_t pid) {
        for (pid_t c : children_of(pid)) {
            add(c);
            add_descendants(c);
        }
    }

    // Waits up to `limit` for `pid` to end. Our child (started by the test, or an orphan handed
    // to the subreaper): reaped, and its wait status returned. Someone else's child (the command
    // under a running memtrack): returns -1 once it is gone. nullopt when it is still there.
    std::optional<int> wait_exit(pid_t pid, Clock::duration limit) {
        Entry* e = find(pid);
        if (e && e->status) return e->status;
        const auto deadline = Clock::now() + limit;
        for (;;) {
            int st = 0;
            const pid_t got = ::waitpid(pid, &st, WNOHANG);
            if (got == pid) {
                if (e) e->status = st;
                return st;
            }
            if (got < 0 && errno == ECHILD) {
                const char state = proc_state(pid);
                if (state == 0 || (e && proc_start(pid) != e->start)) {
                    if (e) e->status = -1;
                    return -1;
                }
            }
            if (Clock::now() >= deadline) return std::nullopt;
            std::this_thread::sleep_for(5ms);
        }
    }

    // SIGKILL every registered process still alive (the same process: same start time), then
    // reap it, for at most a few seconds in all.
    void kill_all() {
        for (auto& e : entries_) {
            if (e.status) continue;
            if (e.start != 0 && proc_start(e.pid) == e.start) ::kill(e.pid, SIGKILL);
        }
        for (auto& e : entries_) {
            if (!e.status) wait_exit(e.pid, 5s);
        }
    }

    // The registered processes that still exist, described; empty when all are gone.
    std::string leftovers() {
        std::string out;
        for (auto& e : entries_) {
            if (e.status && *e.status != -1) continue;  // reaped by us
            if (e.start == 0 || proc_start(e.pid) != e.start) continue;
            const char state = proc_state(e.pid);
            if (state == 0) continue;
            out += " pid " + std::to_string(e.pid) + " state " + state + ";";
        }
        return out;
    }

private:
    struct Entry {
        pid_t pid;
        uint64_t start;
        std::optional<int> status;  // wait status once reaped; -1 once gone without us reaping it
    };
    Entry* find(pid_t pid) {
        for (auto& e : entries_)
            if (e.pid == pid) return &e;
        return nullptr;
    }

    int previous_ = 0;
    std::vector<Entry> entries_;
};

// A process the test talks to: its stdin and stdout are pipes to the test, its stderr a file.
struct Child {
    pid_t pid = -1;
    memtrack::Fd in;   // writes go to its stdin
    memtrack::Fd out;  // its stdout
    std::string err_path;
    std::string buffered;  // stdout read but not yet returned as a line
    std::string what;      // its command line, for messages

    std::string err() const { return read_text_or_empty(err_path); }
};

std::string join_args(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
    return s;
}

// Spawns argv with pipes for stdin and stdout, stderr to `err_path`, nothing else open, default
// signal dispositions and an empty mask, and registers it with `procs`.
Child spawn_child(const std::vector<std::string>& argv, const std::string& err_path, Processes& procs) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) fail_errno("pipe2");
    memtrack::Fd in_r(in[0]), in_w(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) fail_errno("pipe2");
    memtrack::Fd out_r(out[0]), out_w(out[1]);

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&actions, in_r.get(), 0);
    posix_spawn_file_actions_adddup2(&actions, out_w.get(), 1);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    spawn_default_signals(attr, 0);

    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("posix_spawnp " + argv[0] + ": " + std::strerror(rc));
    procs.add(pid);

    Child c;
    c.pid = pid;
    c.in = std::move(in_w);
    c.out = std::move(out_r);
    c.err_path = err_path;
    c.what = join_args(argv);
    return c;
}

void send_text(Child& c, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(c.in.get(), text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_errno("writing to the stdin of `" + c.what + "`");
        done += static_cast<size_t>(n);
    }
}

// The next line of the child's stdout (without its newline). Throws on EOF or after `limit`.
std::string read_line(Child& c, Clock::duration limit, const std::string& waiting_for) {
    const auto deadline = Clock::now() + limit;
    for (;;) {
        if (auto nl = c.buffered.find('\n'); nl != std::string::npos) {
            std::string line = c.buffered.substr(0, nl);
            c.buffered.erase(0, nl + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0)
            throw std::runtime_error("no line from `" + c.what + "` within " + std::to_string(seconds(limit)) +
                                     " s while waiting for " + waiting_for + "; its stderr: " + c.err());
        pollfd p{c.out.get(), POLLIN, 0};
        const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
        if (n < 0 && errno != EINTR) fail_errno("poll");
        if (n <= 0) continue;
        char buf[4096];
        const ssize_t got = ::read(c.out.get(), buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw std::runtime_error("`" + c.what + "` closed its stdout while the test waited for " + waiting_for +
                                     " (read so far: \"" + c.buffered + "\"); its stderr: " + c.err());
        c.buffered.append(buf, static_cast<size_t>(got));
    }
}

// Runs one phase of the fixture ('a', 'b', 'c') and waits for its "done".
void run_phase(Child& c, char phase) {
    send_text(c, std::string(1, phase));
    const std::string line = read_line(c, kPhase, std::string("the end of phase ") + phase);
    if (line != "done") throw std::runtime_error(std::string("phase ") + phase + ": the fixture said \"" + line + "\"");
}

// "ready <pid>", the fixture's first line: its pid.
pid_t read_ready(Child& c, Clock::duration limit) {
    const std::string line = read_line(c, limit, "the fixture's \"ready <pid>\"");
    if (line.rfind("ready ", 0) != 0) throw std::runtime_error("expected \"ready <pid>\", got \"" + line + "\"");
    return static_cast<pid_t>(std::stol(line.substr(6)));
}

// "looped <n>", after a loop ended: n.
uint64_t read_looped(Child& c) {
    const std::string line = read_line(c, kPhase, "the fixture's \"looped <n>\"");
    if (line.rfind("looped ", 0) != 0) throw std::runtime_error("expected \"looped <n>\", got \"" + line + "\"");
    return std::stoull(line.substr(7));
}

// ---- the control socket ----

json::object parse_reply(const std::string& line) {
    json::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) throw std::runtime_error("reply is not a JSON object: " + line);
    json::object o = v.get_object();
    if (!o.contains("ok") || !o.at("ok").is_bool()) throw std::runtime_error("reply without a boolean \"ok\": " + line);
    // `ok` comes first (docs/PROTOCOL.md).
    if (o.begin()->key() != "ok") throw std::runtime_error("reply does not start with \"ok\": " + line);
    return o;
}

bool is_ok(const json::object& o) {
    return o.at("ok").as_bool();
}

std::string error_of(const json::object& o) {
    const json::value* e = o.if_contains("error");
    return e && e->is_string() ? std::string(e->get_string()) : std::string();
}

uint64_t u64_field(const json::object& o, const char* key) {
    const json::value* v = o.if_contains(key);
    if (v && v->is_uint64()) return v->get_uint64();
    if (v && v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
    throw std::runtime_error(std::string("reply field \"") + key + "\" missing or not a count: " + json::serialize(o));
}

// One raw connection to the control socket.
class Client {
public:
    enum class Got { Line, Eof, Timeout, Reset };

    // Connects; nullopt when nothing accepts connections at `path` (no file, nobody listening).
    static std::optional<Client> try_connect(const std::string& path) {
        memtrack::Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (fd.get() < 0) fail_errno("socket");
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
        path.copy(addr.sun_path, sizeof addr.sun_path - 1);
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return std::nullopt;
        return Client(std::move(fd));
    }
    static Client connect(const std::string& path) {
        auto c = try_connect(path);
        if (!c) fail_errno("connect " + path);
        return std::move(*c);
    }

    // Sends everything, or throws. `tolerate_close`: a peer that closed (EPIPE, ECONNRESET)
    // ends the send quietly; returns false then.
    bool send(std::string_view data, bool tolerate_close = false) {
        const auto deadline = Clock::now() + 10s;
        size_t done = 0;
        while (done < data.size()) {
            const ssize_t n = ::send(fd_.get(), data.data() + done, data.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0) {
                done += static_cast<size_t>(n);
                continue;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (Clock::now() >= deadline) throw std::runtime_error("control socket: send blocked for 10 s");
                pollfd p{fd_.get(), POLLOUT, 0};
                ::poll(&p, 1, 100);
                continue;
            }
            if (tolerate_close && (errno == EPIPE || errno == ECONNRESET)) return false;
            fail_errno("control socket: send");
        }
        return true;
    }

    Got next(std::string& line, Clock::duration limit) {
        const auto deadline = Clock::now() + limit;
        for (;;) {
            if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
                line = buffered_.substr(0, nl);
                buffered_.erase(0, nl + 1);
                return Got::Line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return Got::Timeout;
            pollfd p{fd_.get(), POLLIN, 0};
            const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
            if (n < 0 && errno != EINTR) fail_errno("poll");
            if (n <= 0) continue;
            char buf[65536];
            const ssize_t got = ::recv(fd_.get(), buf, sizeof buf, 0);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0 && errno == ECONNRESET) return Got::Reset;
            if (got < 0) fail_errno("control socket: recv");
            if (got == 0) {
                line = buffered_;  // a partial last line, if any
                return Got::Eof;
            }
            buffered_.append(buf, static_cast<size_t>(got));
        }
    }

    // The next reply line, parsed; throws unless one arrives within `limit`.
    json::object reply(Clock::duration limit, const std::string& what) {
        std::string line;
        switch (next(line, limit)) {
            case Got::Line:
                return parse_reply(line);
            case Got::Eof:
                throw std::runtime_error(what + ": the connection closed without a reply" +
                                         (line.empty() ? "" : " (partial: " + line + ")"));
            case Got::Reset:
                throw std::runtime_error(what + ": the connection was reset without a reply");
            case Got::Timeout:
                break;
        }
        throw std::runtime_error(what + ": no reply within " + std::to_string(seconds(limit)) + " s");
    }

    json::object request(const std::string& line, Clock::duration limit = kReply) {
        send(line + "\n");
        return reply(limit, "`" + line + "`");
    }

    // Whether the peer closes the connection within `limit` with nothing more to say; what it
    // said instead goes to `extra`.
    Got wait_close(Clock::duration limit, std::string& extra) {
        std::string line;
        Got g = next(line, limit);
        if (g == Got::Line) extra = line;
        return g;
    }

    void half_close() { ::shutdown(fd_.get(), SHUT_WR); }
    int fd() const { return fd_.get(); }

private:
    explicit Client(memtrack::Fd fd) : fd_(std::move(fd)) {}
    memtrack::Fd fd_;
    std::string buffered_;
};

const char* got_name(Client::Got g) {
    switch (g) {
        case Client::Got::Line:
            return "a line";
        case Client::Got::Eof:
            return "EOF";
        case Client::Got::Timeout:
            return "nothing (timeout)";
        case Client::Got::Reset:
            return "ECONNRESET";
    }
    return "?";
}

// Waits for the socket file to appear and for memtrack to answer a ping on it, failing early if
// memtrack exits instead.
void wait_ready(const std::string& sock, Child& memtrack, Processes& procs) {
    const auto deadline = Clock::now() + kStartup;
    while (!fs::exists(fs::symlink_status(sock))) {
        if (auto st = procs.wait_exit(memtrack.pid, 0s))
            throw std::runtime_error("memtrack ended (" + describe_wait_status(*st) +
                                     ") before creating its socket; stderr: " + memtrack.err());
        if (Clock::now() >= deadline) throw std::runtime_error("no socket at " + sock + " after 60 s");
        std::this_thread::sleep_for(5ms);
    }
    // Connected while memtrack may still be loading its BPF programs: the reply comes once it is
    // up. The file appears at bind(), a moment before listen(): connect() may be refused until then.
    std::optional<Client> conn;
    while (!(conn = Client::try_connect(sock))) {
        if (Clock::now() >= deadline) fail_errno("connect " + sock);
        std::this_thread::sleep_for(5ms);
    }
    Client& c = *conn;
    json::object r = c.request(R"({"cmd":"ping","id":"ready"})", kStartup);
    if (!is_ok(r)) throw std::runtime_error("ping failed: " + json::serialize(r));
    if (u64_field(r, "protocol") != 1) throw std::runtime_error("ping: protocol is not 1: " + json::serialize(r));
    if (r.at("id") != json::value("ready")) throw std::runtime_error("ping: id not echoed: " + json::serialize(r));
}

// `memtrack ctl --socket sock cmd [--pid N]`: its exit status and the reply it printed.
struct CtlResult {
    RunResult run;
    std::optional<json::object> reply;
    std::string describe() const { return "`memtrack ctl` " + run.describe() + "; stdout: " + run.out; }
};

CtlResult ctl(const std::string& sock, const std::string& cmd, std::optional<int> pid = std::nullopt,
              std::optional<std::string> name = std::nullopt) {
    std::vector<std::string> argv{memtrack_bin(), "ctl", "--socket", sock, "--timeout", "30", cmd};
    if (name) argv.push_back(*name);
    if (pid) {
        argv.push_back("--pid");
        argv.push_back(std::to_string(*pid));
    }
    CtlResult r;
    r.run = run(argv, std::chrono::seconds(60));
    if (is_one_line(r.run.out)) {
        try {
            r.reply = parse_reply(r.run.out.substr(0, r.run.out.find('\n')));
        } catch (const std::exception&) {
        }
    }
    return r;
}

// `memtrack ctl ... cmd` must succeed (exit 0, one ok:true reply line); returns the reply.
json::object ctl_ok(const std::string& sock, const std::string& cmd, std::optional<int> pid = std::nullopt,
                    std::optional<std::string> name = std::nullopt) {
    CtlResult r = ctl(sock, cmd, pid, name);
    if (r.run.status != 0 || !r.reply || !is_ok(*r.reply) || r.reply->at("id") != json::value(1))
        throw std::runtime_error("`memtrack ctl " + cmd + "` did not succeed: " + r.describe());
    return *r.reply;
}

// ---- the artifact while memtrack runs ----

// The events of a live artifact: a copy of its bytes as of now, decoded by `memtrack dump`.
// Until memtrack finishes it, the artifact's zstd frame is open, so dump prints every record
// it holds and then fails with an unfinished-frame error; that failure is required here (a
// clean exit would mean the frame was closed early). Lines are parsed as harness::dump does.
struct LiveDump {
    std::vector<Event> events;
    size_t bytes = 0;
};

LiveDump dump_live(const std::string& artifact, const std::string& copy) {
    const std::string bytes = read_file(artifact);
    write_file(copy, bytes);
    RunResult r = run({memtrack_bin(), "dump", copy}, std::chrono::seconds(120));
    if (r.timed_out || r.signaled) throw std::runtime_error("`memtrack dump` of a live artifact: " + r.describe());
    if (r.status == 0 || r.err.find("unfinished") == std::string::npos)
        throw std::runtime_error("`memtrack dump` of a live artifact (" + std::to_string(bytes.size()) +
                                 " bytes) should print its records then report the unfinished frame: " + r.describe());
    LiveDump d;
    d.bytes = bytes.size();
    std::istringstream in(r.out);
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty()) d.events.push_back(parse_event(line, line_no));
    }
    return d;
}

// Exactly one <pid>.MemtrackArtifact.msgpack in `out`: its path and pid.
std::pair<std::string, int> the_artifact(const std::string& out) {
    auto names = artifact_names(out);
    if (names.size() != 1)
        throw std::runtime_error("expected one artifact in " + out + ", found " + std::to_string(names.size()));
    return {out + "/" + names[0], std::stoi(names[0])};
}

size_t count(const std::vector<Event>& events, const std::string& type, uint64_t size) {
    return std::count_if(events.begin(), events.end(),
                         [&](const Event& e) { return e.type == type && e.size && *e.size == size; });
}

// The fixture's phase sizes -> tally, for one CHECK showing everything.
std::string phase_tally(const std::vector<Event>& events) {
    return show(tally_by_size(events, {kSizeA, kSizeB, kSizeC, kSizeLoop}));
}

std::string expected_tally(std::map<uint64_t, size_t> mallocs) {
    std::map<uint64_t, std::string> m;
    for (uint64_t s : {kSizeA, kSizeB, kSizeC, kSizeLoop}) {
        const size_t n = mallocs.count(s) ? mallocs[s] : 0;
        m[s] = n ? "Malloc x" + std::to_string(n) : "none";
    }
    return show(m);
}

// Frees by the size of the block they release, for the phase sizes, with no allocation
// history problem allowed.
void check_pairs(const std::vector<Event>& events, std::map<uint64_t, size_t> frees) {
    Pairing p = pair_up(events, {kSizeA, kSizeB, kSizeC, kSizeLoop});
    CHECK_MESSAGE(p.problems.empty(), "allocation history problems:", p.problems_text());
    CHECK_MESSAGE(p.live.empty(), "blocks never freed:", join(p.live));
    CHECK(show(p.frees) == show(frees));
}

// A file mapped read-only: the fixture's loop counter.
class Counter {
public:
    explicit Counter(const std::string& path) {
        const auto deadline = Clock::now() + kPhase;
        for (;;) {
            fd_ = memtrack::Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
            struct stat st {};
            if (fd_.get() >= 0 && ::fstat(fd_.get(), &st) == 0 && st.st_size >= 8) break;
            if (Clock::now() >= deadline) throw std::runtime_error("the fixture never created its counter " + path);
            std::this_thread::sleep_for(5ms);
        }
        void* m = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd_.get(), 0);
        if (m == MAP_FAILED) fail_errno("mmap " + path);
        p_ = static_cast<const uint64_t*>(m);
    }
    ~Counter() {
        if (p_) ::munmap(const_cast<uint64_t*>(p_), 4096);
    }
    uint64_t value() const { return __atomic_load_n(p_, __ATOMIC_ACQUIRE); }
    // Waits until the counter passes `at_least`.
    uint64_t wait_above(uint64_t at_least, Clock::duration limit) const {
        const auto deadline = Clock::now() + limit;
        while (value() <= at_least) {
            if (Clock::now() >= deadline)
                throw std::runtime_error("the fixture's loop counter is stuck at " + std::to_string(value()));
            std::this_thread::sleep_for(2ms);
        }
        return value();
    }

private:
    memtrack::Fd fd_;
    const uint64_t* p_ = nullptr;
};

// memtrack must end by itself with status 0, within kExit.
void check_memtrack_exits_0(Processes& procs, Child& memtrack) {
    auto st = procs.wait_exit(memtrack.pid, kExit);
    REQUIRE_MESSAGE(st.has_value(), "memtrack still running ", seconds(kExit),
                    " s after it should have ended; stderr: ", memtrack.err());
    CHECK_MESSAGE((WIFEXITED(*st) && WEXITSTATUS(*st) == 0), "memtrack ", describe_wait_status(*st),
                  "; stderr: ", memtrack.err());
}

// The timeline beside `artifact`, whole (memtrack has finished it).
std::vector<memtrack::TimelineEvent> read_timeline_of(const std::string& artifact) {
    std::vector<memtrack::TimelineEvent> out;
    auto r = memtrack::read_timeline(memtrack::timeline_path_for(artifact),
                                     [&](memtrack::TimelineEvent&& e) { out.push_back(std::move(e)); });
    if (!r) throw std::runtime_error("timeline: " + r.error().message());
    return out;
}

std::vector<memtrack::TimelineEvent> timeline_of_type(const std::vector<memtrack::TimelineEvent>& all,
                                                      memtrack::TimelineEvent::Type t) {
    std::vector<memtrack::TimelineEvent> out;
    for (const auto& e : all)
        if (e.type == t) out.push_back(e);
    return out;
}

std::vector<std::string> track_argv(const TempDir& dir, const std::string& sock,
                                    const std::vector<std::string>& options, const std::vector<std::string>& command) {
    std::vector<std::string> argv{memtrack_bin(), "track",     "--socket", sock,
                                  "-o",           dir / "out", "--stats",  dir / "stats.json"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
}

// memtrack tracking the phases fixture with recording off, its socket answering, the fixture
// ready (its pid in `fixture`), both in `procs`.
struct PhasesRun : Child {
    pid_t fixture = 0;
};

PhasesRun start_disabled_phases(const TempDir& dir, const std::string& sock, Processes& procs) {
    PhasesRun mt{spawn_child(track_argv(dir, sock, {"--start-disabled"}, {fixture("phases")}), dir / "memtrack.err", procs)};
    wait_ready(sock, mt, procs);
    mt.fixture = read_ready(mt, kStartup);
    procs.add(mt.fixture);
    procs.add_descendants(mt.pid);
    return mt;
}

}  // namespace

TEST_CASE("control: a runner records only the phase between enable and disable, and drain flushes it") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    PhasesRun mt = start_disabled_phases(dir, sock, procs);
    const pid_t fx = mt.fixture;

    run_phase(mt, 'a');  // recording is off
    json::object r = ctl_ok(sock, "enable");
    CHECK(r.at("recording") == json::value(true));
    r = ctl_ok(sock, "mark", std::nullopt, "phase b");
    CHECK(r.at("mark") == json::value("phase b"));
    run_phase(mt, 'b');
    r = ctl_ok(sock, "disable");
    CHECK(r.at("recording") == json::value(false));
    run_phase(mt, 'c');
    r = ctl_ok(sock, "drain");
    const uint64_t drained = u64_field(r, "records");

    // After the drain, phase B is in the artifact already, while memtrack still runs.
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);
    LiveDump live = dump_live(artifact, dir / "live.msgpack");
    CHECK(phase_tally(live.events) == expected_tally({{kSizeB, kRounds}}));
    check_pairs(live.events, {{kSizeB, kRounds}});
    CHECK_MESSAGE(drained >= live.events.size(), "drain said ", drained, " records, the artifact holds ",
                  live.events.size());
    CHECK_MESSAGE(drained >= 2 * kRounds, "drain said ", drained, " records");

    send_text(mt, "q");
    check_memtrack_exits_0(procs, mt);
    CHECK_FALSE(fs::exists(fs::symlink_status(sock)));
    const Stats stats = parse_stats(read_file(dir / "stats.json"));
    CHECK_MESSAGE(stats.dropped == 0, stats.raw);

    const std::vector<Event> events = dump(artifact);
    CHECK(phase_tally(events) == expected_tally({{kSizeB, kRounds}}));
    check_pairs(events, {{kSizeB, kRounds}});
    CHECK(pids_of(with_size(events, kSizeB)) == std::set<int>{fx});
    // While recording was on, the fixture did nothing but phase B.
    CHECK(tally(of_pid(events, fx)) == "Free x100, Malloc x100");

    // The timeline holds the session's enable, mark and disable, in that order.
    using Type = memtrack::TimelineEvent::Type;
    std::vector<std::string> session;
    uint64_t last = 0;
    for (const auto& e : read_timeline_of(artifact)) {
        if (e.type != Type::Enable && e.type != Type::Disable && e.type != Type::Mark) continue;
        session.push_back(std::string(memtrack::timeline_type_name(e.type)) + (e.name.empty() ? "" : " " + e.name));
        CHECK(e.time > last);
        last = e.time;
    }
    CHECK(session == std::vector<std::string>{"enable", "mark phase b", "disable"});

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: report --windows gives each enable..disable window and mark span its own figures") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    PhasesRun mt = start_disabled_phases(dir, sock, procs);
    const pid_t fx = mt.fixture;

    run_phase(mt, 'a');            // off: in no window
    ctl_ok(sock, "enable");        // window 1 opens
    ctl_ok(sock, "mark", std::nullopt, "bench_b");  // window 2
    run_phase(mt, 'b');            // 100 x (malloc 22222, free)
    ctl_ok(sock, "mark", std::nullopt, "bench_k");  // window 2 ends, window 3 opens
    run_phase(mt, 'k');            // one 55555 kept live
    ctl_ok(sock, "disable");       // windows 1 and 3 end
    run_phase(mt, 'c');            // off
    ctl_ok(sock, "enable");        // window 4
    run_phase(mt, 'c');            // 100 x (malloc 33333, free), the kept block still live
    run_phase(mt, 'f');            // frees the block window 1 and 3 kept
    ctl_ok(sock, "disable");
    send_text(mt, "q");
    check_memtrack_exits_0(procs, mt);
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);

    auto report = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {memtrack_bin(), "report", artifact});
        return run(args, std::chrono::seconds(120));
    };
    RunResult r = report({"--windows", "--format", "json"});
    REQUIRE_MESSAGE(r.status == 0, r.describe());
    const json::object j = json::parse(r.out).as_object();
    const json::array& windows = j.at("windows").as_array();
    REQUIRE(windows.size() == 4);
    struct Want {
        const char* name;
        uint64_t calls, bytes, peak, leaked, leaked_blocks;
    };
    // Each window's heap is the blocks made in it: window 4's peak is one 33333 block, though
    // the block window 1 kept was live beside it; window 1 leaked that block, though window 4
    // freed it.
    const Want want[4] = {{"", 101, 100 * kSizeB + kSizeKeep, kSizeKeep, kSizeKeep, 1},
                          {"bench_b", 100, 100 * kSizeB, kSizeB, 0, 0},
                          {"bench_k", 1, kSizeKeep, kSizeKeep, kSizeKeep, 1},
                          {"", 100, 100 * kSizeC, kSizeC, 0, 0}};
    const uint64_t process_rss = j.at("processes").at(0).at("rss_peak_bytes").to_number<uint64_t>();
    for (size_t i = 0; i < 4; ++i) {
        CAPTURE(i);
        const json::object& w = windows[i].as_object();
        CHECK(w.at("number").to_number<uint64_t>() == i + 1);
        CHECK(w.at("name").as_string() == want[i].name);
        CHECK(w.at("calls").to_number<uint64_t>() == want[i].calls);
        CHECK(w.at("bytes").to_number<uint64_t>() == want[i].bytes);
        CHECK(w.at("average_bytes").to_number<uint64_t>() == want[i].bytes / want[i].calls);
        CHECK(w.at("peak_bytes").to_number<uint64_t>() == want[i].peak);
        CHECK(w.at("leaked_bytes").to_number<uint64_t>() == want[i].leaked);
        CHECK(w.at("leaked_blocks").to_number<uint64_t>() == want[i].leaked_blocks);
        // The fixture's RSS as last sampled: there, and (sampled to 1 MiB) near its exact mark.
        const uint64_t rss = w.at("rss_peak_bytes").to_number<uint64_t>();
        CHECK(rss > 0);
        CHECK(rss <= process_rss + (uint64_t(1) << 20));
        CHECK(w.at("end_ns").to_number<uint64_t>() > w.at("start_ns").to_number<uint64_t>());
    }
    // Window 1 holds 2 and 3; 2 ends where 3 starts.
    CHECK(windows[1].at("end_ns") == windows[2].at("start_ns"));
    CHECK(windows[0].at("end_ns") == windows[2].at("end_ns"));

    // --window narrows every figure: the whole report is then that window's.
    for (const auto& [key, calls, bytes, peak, leaked] :
         std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t, uint64_t>>{
             {"bench_b", 100, 100 * kSizeB, kSizeB, 0},
             {"3", 1, kSizeKeep, kSizeKeep, kSizeKeep},  // freed after the window: left live, so leaked at exit
             {"4", 100, 100 * kSizeC, kSizeC, 0}}) {
        CAPTURE(key);
        RunResult n = report({"--window", key, "--format", "json"});
        REQUIRE_MESSAGE(n.status == 0, n.describe());
        const json::object k = json::parse(n.out).as_object();
        CHECK(k.at("totals").at("calls").to_number<uint64_t>() == calls);
        CHECK(k.at("totals").at("bytes").to_number<uint64_t>() == bytes);
        CHECK(k.at("peak").at("bytes").to_number<uint64_t>() == peak);
        CHECK(k.at("totals").at("live_bytes").to_number<uint64_t>() == leaked);
        CHECK(k.at("totals").at("unknown_frees").to_number<uint64_t>() == 0);
        REQUIRE(k.at("windows").as_array().size() == 1);
        CHECK(k.at("totals").at("peak_rss_bytes") == k.at("windows").at(0).at("rss_peak_bytes"));
    }

    // The text section, one line per window.
    r = report({"--windows"});
    REQUIRE_MESSAGE(r.status == 0, r.describe());
    CHECK(r.out.find("== windows ==") != std::string::npos);
    CHECK(r.out.find("bench_k") != std::string::npos);

    // --fail-if per window: by mark name or number.
    r = report({"--fail-if", "window:bench_k leaked>0", "-o", "/dev/null"});
    CHECK(r.status == 3);
    CHECK(r.err.find("window:bench_k leaked>0 holds: window:bench_k leaked = 55555") != std::string::npos);
    r = report({"--fail-if", "window:bench_b peak>10MiB", "--fail-if", "window:4 calls!=100", "-o", "/dev/null"});
    CHECK_MESSAGE(r.status == 0, r.describe());
    r = report({"--fail-if", "window:2 average>=22222", "-o", "/dev/null"});
    CHECK(r.status == 3);
    r = report({"--fail-if", "window:nope peak>1", "-o", "/dev/null"});
    CHECK_MESSAGE(r.status == 1, r.describe());
    CHECK(r.err.find("no window 'nope'") != std::string::npos);
    r = report({"--fail-if", "window:bench_b size>1", "-o", "/dev/null"});
    CHECK_MESSAGE(r.status == 2, r.describe());
    r = report({"--window", "9"});
    CHECK_MESSAGE(r.status == 1, r.describe());
    CHECK(r.err.find("no such window (1 to 4") != std::string::npos);

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: under load, every drain holds every allocation made before it") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    const std::string counter_path = dir / "counter";
    // A small ring read slowly behind a writer that allocates as fast as it can: the consumer
    // takes 4 records every 8 ms (at most 500 a second), so the 16 KiB ring (292 records) sits at
    // its stop watermark, the writer is paused and resumed by the pressure control all the time,
    // and every drain has a backlog of a few hundred records to get through (about 0.4 s).
    // Volume matters too: each check decodes the whole live artifact again, and while memtrack
    // runs every malloc on the machine (memtrack dump's included) goes through its uprobes, so
    // decoding is slow; 500 records a second keeps the twenty decodes to seconds.
    Child mt =
        spawn_child(track_argv(dir, sock, {"--ring-size", "16K", "--consumer-delay-us", "8000", "--chunk-records", "4"},
                               {fixture("phases"), counter_path}),
                    dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const pid_t fx = read_ready(mt, kStartup);
    procs.add(fx);
    procs.add_descendants(mt.pid);
    Counter counter(counter_path);
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);

    send_text(mt, "l");
    counter.wait_above(300, kPhase);

    Client c = Client::connect(sock);
    std::vector<double> latencies;
    uint64_t last_records = 0;
    for (int i = 1; i <= 20; i++) {
        CAPTURE(i);
        const uint64_t before = counter.value();
        const auto t0 = Clock::now();
        c.send(R"({"cmd":"drain","id":)" + std::to_string(i) + "}\n");
        json::object r = c.reply(kDrainBound, "drain " + std::to_string(i));
        const double latency = seconds(Clock::now() - t0);
        latencies.push_back(latency);
        REQUIRE_MESSAGE(is_ok(r), json::serialize(r));
        CHECK(r.at("id") == json::value(i));
        const uint64_t records = u64_field(r, "records");
        CHECK_MESSAGE(records >= last_records, "records went back from ", last_records, " to ", records);
        last_records = records;
        // Each loop round is a Malloc then a Free: `before` Mallocs and `before - 1` Frees at least.
        CHECK_MESSAGE(records >= 2 * before - 1, "drain reply records ", records, " < 2 x ", before, " - 1");

        LiveDump live = dump_live(artifact, dir / "live.msgpack");
        const uint64_t after = counter.value();
        const size_t mallocs = count(live.events, "Malloc", kSizeLoop);
        const size_t frees = select(live.events, [](const Event& e) { return e.type == "Free"; }).size();
        CHECK_MESSAGE(mallocs >= before, "drain ", i, ": ", mallocs, " Malloc of ", kSizeLoop,
                      " in the artifact, but the writer had made ", before, " before the drain was sent");
        CHECK_MESSAGE(frees + 1 >= before, "drain ", i, ": ", frees, " Free in the artifact, the writer had freed ",
                      before - 1, " blocks before the drain was sent");
        CHECK_MESSAGE(mallocs <= after, "drain ", i, ": ", mallocs, " Malloc of ", kSizeLoop,
                      " in the artifact, more than the ", after, " the writer had made after the copy");
        std::printf(
            "control: drain %2d: %.3f s, counter %llu before, %zu Malloc in the artifact (%zu bytes), %llu after\n", i,
            latency, static_cast<unsigned long long>(before), mallocs, live.bytes,
            static_cast<unsigned long long>(after));
        std::fflush(stdout);
    }
    const double max_latency = *std::max_element(latencies.begin(), latencies.end());
    json::object st = c.request(R"({"cmd":"stats"})").at("stats").as_object();
    std::printf("control: max drain latency %.3f s (bound %.0f s); memtrack stats: pressure_stops %s, drain_ms %s\n",
                max_latency, seconds(kDrainBound),
                st.contains("pressure_stops") ? json::serialize(st.at("pressure_stops")).c_str() : "?",
                st.contains("drain_ms") ? json::serialize(st.at("drain_ms")).c_str() : "?");
    std::fflush(stdout);
    CHECK(u64_field(st, "dropped") == 0);
    CHECK_MESSAGE(u64_field(st, "pressure_stops") > 0, "the writer was never paused: the drains ran without a backlog");

    CHECK_MESSAGE(proc_state(fx) != 0, "the writer is gone");

    send_text(mt, "q");
    const uint64_t looped = read_looped(mt);
    check_memtrack_exits_0(procs, mt);
    CHECK(counter.value() == looped);
    const Stats stats = parse_stats(read_file(dir / "stats.json"));
    CHECK_MESSAGE(stats.dropped == 0, stats.raw);

    // The finished artifact holds the whole loop, exactly.
    const std::vector<Event> events = dump(artifact);
    CHECK(phase_tally(events) == expected_tally({{kSizeLoop, looped}}));
    check_pairs(events, {{kSizeLoop, looped}});

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running or stopped:", procs.leftovers());
}

TEST_CASE("control: bad input on a live session is answered, and recording is unaffected") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    const std::string counter_path = dir / "counter";
    Child mt = spawn_child(track_argv(dir, sock, {}, {fixture("phases"), counter_path}), dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const pid_t fx = read_ready(mt, kStartup);
    procs.add(fx);
    procs.add_descendants(mt.pid);
    Counter counter(counter_path);

    // The fixture allocates steadily (paced) all through the abuse.
    send_text(mt, "p");
    const uint64_t at_start = counter.wait_above(100, kPhase);

    const std::string ping = R"({"cmd":"ping","id":"after"})";
    auto check_ping = [&](Client& c, const std::string& after) {
        json::object r = c.request(ping);
        CHECK_MESSAGE(is_ok(r), "ping after ", after, ": ", json::serialize(r));
        CHECK_MESSAGE(r.at("id") == json::value("after"), "ping after ", after, ": ", json::serialize(r));
    };

    {
        Client c = Client::connect(sock);
        struct Bad {
            std::string line;
            std::string error_prefix;
            std::optional<json::value> id;  // echoed when the request was an object with an id
        };
        const std::string binary("\x00\xff\xfe\x80\x01\x7f{\x1b[0m\xc3(", 13);
        const std::vector<Bad> bad = {
            {"{not json", "invalid JSON", std::nullopt},
            {R"({"cmd":"ping")", "invalid JSON", std::nullopt},
            {binary, "invalid JSON", std::nullopt},
            {"{\"cmd\":\"\xff\xfe\",\"id\":1}", "invalid JSON", std::nullopt},  // invalid UTF-8
            {"", "empty request", std::nullopt},
            {" \t ", "empty request", std::nullopt},
            {"\r", "empty request", std::nullopt},
            {"[1]", "a request must be a JSON object", std::nullopt},
            {R"("ping")", "a request must be a JSON object", std::nullopt},
            {"42", "a request must be a JSON object", std::nullopt},
            {R"({"id":3})", "missing \"cmd\"", json::value(3)},
            {R"({"cmd":42,"id":4})", "\"cmd\" must be a string", json::value(4)},
            {R"({"cmd":null})", "\"cmd\" must be a string", std::nullopt},
            {R"({"cmd":"flush","id":8})", "unknown command", json::value(8)},
            {R"({"cmd":"PING","id":"x"})", "unknown command", json::value("x")},
            {R"({"cmd":"ping2"})", "unknown command", std::nullopt},
            {R"({"cmd":"attach","id":9})", "attach needs \"pid\"", json::value(9)},
            {R"({"cmd":"attach","pid":"123","id":[1,2]})", "\"pid\" must be a positive integer", json::array{1, 2}},
            {R"({"cmd":"attach","pid":-5})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":0})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":1.5})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":true})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":null})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":4294967297})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":18446744073709551615})", "\"pid\" must be a positive integer", std::nullopt},
            {R"({"cmd":"attach","pid":1e30})", "\"pid\" must be a positive integer", std::nullopt},
        };
        for (const Bad& b : bad) {
            std::string shown;  // the request, printable
            for (unsigned char ch : b.line) {
                if (ch >= 0x20 && ch < 0x7f) {
                    shown += static_cast<char>(ch);
                    continue;
                }
                char hexbuf[8];
                std::snprintf(hexbuf, sizeof hexbuf, "\\x%02x", ch);
                shown += hexbuf;
            }
            CAPTURE(shown);
            json::object r = c.request(b.line);
            CHECK_MESSAGE(!is_ok(r), json::serialize(r));
            CHECK_MESSAGE(error_of(r).rfind(b.error_prefix, 0) == 0, "error should start with `", b.error_prefix,
                          "`: ", json::serialize(r));
            if (b.id)
                CHECK_MESSAGE((r.contains("id") && r.at("id") == *b.id), "id not echoed: ", json::serialize(r));
            else
                CHECK_MESSAGE(!r.contains("id"), "an id that was never sent: ", json::serialize(r));
            check_ping(c, shown);
        }

        // A line of exactly 64 KiB is still a request.
        std::string full = R"({"cmd":"ping","id":"full","pad":")";
        full += std::string(65536 - full.size() - 2, 'x') + "\"}";
        REQUIRE(full.size() == 65536);
        json::object r = c.request(full);
        CHECK_MESSAGE(is_ok(r), "a 65536-byte request: ", json::serialize(r));
        CHECK(r.at("id") == json::value("full"));
        check_ping(c, "a 65536-byte request");

        // One byte more: the replies to earlier requests, the error, then the connection closes.
        c.send(R"({"cmd":"ping","id":"before-long"})"
               "\n");
        std::string too_long = R"({"cmd":"ping","pad":")";
        too_long += std::string(65537 - too_long.size() - 2, 'y') + "\"}";
        REQUIRE(too_long.size() == 65537);
        c.send(too_long + "\n", /*tolerate_close=*/true);
        json::object first = c.reply(kReply, "the ping before the long line");
        CHECK(is_ok(first));
        CHECK(first.at("id") == json::value("before-long"));
        json::object err = c.reply(kReply, "the line over 64 KiB");
        CHECK_FALSE(is_ok(err));
        CHECK_MESSAGE(error_of(err).rfind("request line longer than 65536 bytes", 0) == 0, json::serialize(err));
        std::string extra;
        Client::Got g = c.wait_close(kReply, extra);
        CHECK_MESSAGE(g == Client::Got::Eof, "after the long line memtrack should close the connection; got ",
                      got_name(g), " ", extra);
    }

    {
        // A client that sends drain and leaves at once costs nothing.
        {
            Client gone = Client::connect(sock);
            gone.send(R"({"cmd":"drain","id":1})"
                      "\n");
        }
        // A last request without its newline, then a half-close: answered, then closed.
        Client half = Client::connect(sock);
        half.send(R"({"cmd":"ping","id":"half"})");
        half.half_close();
        json::object r = half.reply(kReply, "a half-closed ping");
        CHECK(is_ok(r));
        CHECK(r.at("id") == json::value("half"));
        std::string extra;
        Client::Got g = half.wait_close(kReply, extra);
        CHECK_MESSAGE(g == Client::Got::Eof, "after the last reply to a half-closed client: ", got_name(g), " ", extra);

        Client c = Client::connect(sock);
        check_ping(c, "a client that sent drain and left");
        json::object d = c.request(R"({"cmd":"drain"})");
        CHECK_MESSAGE(is_ok(d), json::serialize(d));
    }

    {
        // 64 connections at once; the 65th gets one line and is closed; a place frees up when a
        // client leaves. Earlier clients may take a moment to be forgotten: a round that finds
        // fewer than 64 places is retried once, after a second, and reported.
        std::vector<Client> held;
        std::string refused_line;
        Client::Got refused_end = Client::Got::Timeout;
        size_t accepted = 0;
        std::vector<size_t> rounds;
        for (int round = 0; round < 2; round++) {
            held.clear();
            accepted = 0;
            for (int i = 0; i < 70; i++) {
                Client k = Client::connect(sock);
                k.send(R"({"cmd":"ping","id":)" + std::to_string(i) + "}\n", /*tolerate_close=*/true);
                std::string line;
                Client::Got g = k.next(line, kReply);
                REQUIRE_MESSAGE(g == Client::Got::Line, "connection ", i + 1, ": ", got_name(g));
                json::object r = parse_reply(line);
                if (is_ok(r)) {
                    held.push_back(std::move(k));
                    accepted++;
                    continue;
                }
                refused_line = line;
                std::string extra;
                refused_end = k.wait_close(kReply, extra);
                break;
            }
            rounds.push_back(accepted);
            if (accepted == 64) break;
            held.clear();
            std::this_thread::sleep_for(1s);
        }
        if (rounds.size() > 1)
            std::printf("control: first round of connections found %zu places, not 64\n", rounds.front());
        CHECK_MESSAGE(accepted == 64, "connections accepted before one was refused: ", accepted);
        CHECK(refused_line == R"({"ok":false,"error":"too many connections"})");
        // EOF, or a reset when our ping reached it after memtrack had thrown away its input.
        CHECK_MESSAGE((refused_end == Client::Got::Eof || refused_end == Client::Got::Reset),
                      "the refused connection should be closed: ", got_name(refused_end));

        // Every held connection still works.
        for (size_t i = 0; i < held.size(); i += 16) check_ping(held[i], "64 connections");
        // One leaves; a new one gets its place (soon: the listener forgets it asynchronously).
        held.pop_back();
        // Until it does, a new connection is turned away: memtrack may close it before our
        // request is even sent (EPIPE), but its one line is there to read.
        bool got_place = false;
        int attempts = 0;
        std::string last;
        const auto deadline = Clock::now() + 5s;
        while (!got_place && Clock::now() < deadline) {
            ++attempts;
            Client k = Client::connect(sock);
            k.send(ping + "\n", /*tolerate_close=*/true);
            std::string line;
            Client::Got g = k.next(line, kReply);
            last = g == Client::Got::Line ? line : got_name(g);
            got_place = g == Client::Got::Line && is_ok(parse_reply(line));
            if (!got_place) std::this_thread::sleep_for(20ms);
        }
        CHECK_MESSAGE(got_place, "no place for a new connection after one of 64 left; last answer: ", last);
        if (attempts > 1)
            std::printf("control: the place of a closed connection was free after %d attempts\n", attempts);
    }

    // The fixture kept allocating through all of that.
    const uint64_t at_end = counter.value();
    CHECK_MESSAGE(at_end > at_start, "the loop counter did not move: ", at_start, " -> ", at_end);
    CHECK_MESSAGE(proc_state(fx) != 0, "the fixture is gone");

    // Stop the loop ('b' is read as the next command: phase B) and check the recording.
    send_text(mt, "b");
    const uint64_t looped = read_looped(mt);
    const std::string line = read_line(mt, kPhase, "the end of phase b");
    CHECK(line == "done");
    json::object d = ctl_ok(sock, "drain");
    Client c = Client::connect(sock);
    json::object st = c.request(R"({"cmd":"stats","id":"s"})");
    REQUIRE_MESSAGE(is_ok(st), json::serialize(st));
    CHECK_MESSAGE(u64_field(st.at("stats").as_object(), "dropped") == 0, json::serialize(st));
    CHECK(u64_field(st.at("stats").as_object(), "records") >= u64_field(d, "records"));

    send_text(mt, "q");
    check_memtrack_exits_0(procs, mt);
    const Stats stats = parse_stats(read_file(dir / "stats.json"));
    CHECK_MESSAGE(stats.dropped == 0, stats.raw);
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);
    const std::vector<Event> events = dump(artifact);
    CHECK(phase_tally(events) == expected_tally({{kSizeB, kRounds}, {kSizeLoop, looped}}));
    check_pairs(events, {{kSizeB, kRounds}, {kSizeLoop, looped}});
    std::printf("control: the abuse ran beside %llu loop allocations, all recorded\n",
                static_cast<unsigned long long>(looped));
    std::fflush(stdout);

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: attach adds a running process from the moment it is attached") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";

    // The fixture is the test's own child, not memtrack's.
    Child fx = spawn_child({fixture("phases")}, dir / "phases.err", procs);
    REQUIRE(read_ready(fx, kPhase) == fx.pid);
    run_phase(fx, 'a');  // before attach: not recorded

    Child mt = spawn_child(track_argv(dir, sock, {}, {"sleep", "600"}), dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    procs.add_descendants(mt.pid);
    const auto [artifact, sleep_pid] = the_artifact(dir / "out");
    procs.add(sleep_pid);

    // A pid that cannot exist is refused, and the session goes on.
    CtlResult bad = ctl(sock, "attach", 2147483647);
    CHECK_MESSAGE(bad.run.status == 1, bad.describe());
    CHECK_MESSAGE((bad.reply && !is_ok(*bad.reply)), bad.describe());

    json::object r = ctl_ok(sock, "attach", fx.pid);
    CHECK(u64_field(r, "pid") == static_cast<uint64_t>(fx.pid));
    run_phase(fx, 'b');
    ctl_ok(sock, "drain");
    r = ctl_ok(sock, "shutdown");
    const uint64_t records = u64_field(r, "records");
    check_memtrack_exits_0(procs, mt);
    run_phase(fx, 'c');  // after shutdown: memtrack is gone, the fixture carries on

    const std::vector<Event> events = dump(artifact);
    CHECK_MESSAGE(records >= events.size(), "shutdown said ", records, " records, the artifact holds ", events.size());
    CHECK(phase_tally(events) == expected_tally({{kSizeB, kRounds}}));
    check_pairs(events, {{kSizeB, kRounds}});
    CHECK(pids_of(with_size(events, kSizeB)) == std::set<int>{fx.pid});
    CHECK(tally(of_pid(events, fx.pid)) == "Free x100, Malloc x100");

    // The timeline: the attach with the fixture's command line, and both processes still
    // running when the recording ended.
    using Type = memtrack::TimelineEvent::Type;
    const auto timeline = read_timeline_of(artifact);
    const auto attached = timeline_of_type(timeline, Type::Attach);
    REQUIRE(attached.size() == 1);
    CHECK(attached[0].pid == fx.pid);
    CHECK(attached[0].path == fixture("phases"));
    CHECK(attached[0].argv == std::vector<std::string>{fixture("phases")});
    std::set<int> detached;
    for (const auto& e : timeline_of_type(timeline, Type::Detach)) detached.insert(e.pid);
    CHECK(detached == std::set<int>{fx.pid, sleep_pid});
    CHECK(timeline_of_type(timeline, Type::Exit).empty());

    // sleep outlived memtrack (shutdown does not end the command); it is ours to end now.
    CHECK_MESSAGE((proc_state(sleep_pid) != 0 && proc_state(sleep_pid) != 'Z'), "sleep did not outlive memtrack");
    ::kill(sleep_pid, SIGKILL);
    CHECK(procs.wait_exit(sleep_pid, kExit).has_value());
    send_text(fx, "q");
    auto st = procs.wait_exit(fx.pid, kExit);
    CHECK_MESSAGE((st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0), "the fixture ",
                  st ? describe_wait_status(*st) : std::string("did not exit"), "; stderr: ", fx.err());

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: shutdown replies, memtrack exits 0 and the command keeps running; a stale socket is replaced") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";

    // A stale socket: bound, then closed, so nobody listens on it.
    {
        memtrack::Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        sock.copy(addr.sun_path, sizeof addr.sun_path - 1);
        REQUIRE(::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    }
    struct stat stale {};
    REQUIRE(::lstat(sock.c_str(), &stale) == 0);
    REQUIRE(S_ISSOCK(stale.st_mode));
    REQUIRE_FALSE(Client::try_connect(sock).has_value());

    Child mt = spawn_child(track_argv(dir, sock, {}, {fixture("phases")}), dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const pid_t fx = read_ready(mt, kStartup);
    procs.add(fx);
    procs.add_descendants(mt.pid);
    struct stat live {};
    REQUIRE(::lstat(sock.c_str(), &live) == 0);
    CHECK(S_ISSOCK(live.st_mode));
    CHECK((live.st_mode & 0777) == 0600);

    run_phase(mt, 'b');

    // Two shutdowns pipelined on one connection: replies in order, the second refused.
    Client c = Client::connect(sock);
    c.send(R"({"cmd":"shutdown","id":1})"
           "\n"
           R"({"cmd":"shutdown","id":2})"
           "\n");
    json::object first = c.reply(kExit, "shutdown");
    CHECK_MESSAGE(is_ok(first), json::serialize(first));
    CHECK(first.at("id") == json::value(1));
    const uint64_t records = u64_field(first, "records");
    json::object second = c.reply(kReply, "the second shutdown");
    CHECK_FALSE(is_ok(second));
    CHECK(second.at("id") == json::value(2));
    std::string extra;
    Client::Got g = c.wait_close(kExit, extra);
    CHECK_MESSAGE(g == Client::Got::Eof, "after shutdown the connection should close: ", got_name(g), " ", extra);

    check_memtrack_exits_0(procs, mt);
    CHECK_FALSE(fs::exists(fs::symlink_status(sock)));
    // Nobody to ask any more: `memtrack ctl` exits 2 with one line on stderr.
    CtlResult gone = ctl(sock, "ping");
    CHECK_MESSAGE(gone.run.status == 2, gone.describe());
    CHECK_MESSAGE(is_one_line(gone.run.err), gone.describe());
    CHECK_MESSAGE(gone.run.out.empty(), gone.describe());
    // The command carries on, untracked, and is not left stopped.
    const char state = proc_state(fx);
    CHECK_MESSAGE((state != 0 && state != 'Z' && state != 'T' && state != 't'), "the command's state: ", state);
    run_phase(mt, 'a');

    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);
    const std::vector<Event> events = dump(artifact);  // finished: dump exits 0
    CHECK_MESSAGE(records >= events.size(), "shutdown said ", records, " records, the artifact holds ", events.size());
    CHECK(phase_tally(events) == expected_tally({{kSizeB, kRounds}}));
    check_pairs(events, {{kSizeB, kRounds}});

    send_text(mt, "q");
    auto st = procs.wait_exit(fx, kExit);
    CHECK_MESSAGE((st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0), "the fixture ",
                  st ? describe_wait_status(*st) : std::string("did not exit"));

    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

// A small tmpfs on `path` for the life of the object: a disk that can be filled.
class SmallDisk {
public:
    explicit SmallDisk(const std::string& path) : path_(path) {
        fs::create_directories(path);
        // mode 0700: a tmpfs root is 1777 by default, an output folder memtrack refuses.
        if (::mount("memtrack-test", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") != 0)
            fail_errno("mount tmpfs on " + path);
    }
    ~SmallDisk() { ::umount2(path_.c_str(), MNT_DETACH); }
    SmallDisk(const SmallDisk&) = delete;
    SmallDisk& operator=(const SmallDisk&) = delete;

    // Writes `name` until the disk refuses more (ENOSPC); true when not one block is left free.
    bool fill(const std::string& name) const {
        memtrack::Fd fd(::open((path_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
        if (fd.get() < 0) fail_errno("create " + name);
        const std::string chunk(65536, 'x');
        for (;;) {
            const ssize_t n = ::write(fd.get(), chunk.data(), chunk.size());
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == ENOSPC) break;
            if (n < 0) fail_errno("write " + name);
        }
        struct statvfs v {};
        if (::statvfs(path_.c_str(), &v) != 0) fail_errno("statvfs " + path_);
        return v.f_bfree == 0;
    }

private:
    std::string path_;
};

TEST_CASE("control: shutdown on a full disk replies with the write error, counts only what was written, exit 1") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    SmallDisk disk(dir / "out");
    Processes procs;
    const std::string sock = dir / "ctl.sock";

    Child mt = spawn_child(track_argv(dir, sock, {"--no-summary"}, {fixture("phases")}), dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const pid_t fx = read_ready(mt, kStartup);
    procs.add(fx);
    procs.add_descendants(mt.pid);

    // The disk fills up behind memtrack's open files; then 2000 events, far more than the few
    // bytes left in the last pages of its files, which tmpfs already holds for them.
    REQUIRE(disk.fill("filler"));
    for (int i = 0; i < 10; ++i) run_phase(mt, 'b');

    Client c = Client::connect(sock);
    c.send(R"({"cmd":"shutdown","id":1})"
           "\n");
    json::object reply = c.reply(kExit, "shutdown");
    CHECK_FALSE_MESSAGE(is_ok(reply), json::serialize(reply));
    CHECK(reply.at("id") == json::value(1));
    CHECK_MESSAGE(error_of(reply).find("No space left on device") != std::string::npos, json::serialize(reply));
    CHECK_MESSAGE(error_of(reply).find("artifact incomplete") != std::string::npos, json::serialize(reply));
    CHECK_FALSE(reply.contains("records"));

    auto st = procs.wait_exit(mt.pid, kExit);
    REQUIRE_MESSAGE(st.has_value(), "memtrack still running; stderr: ", mt.err());
    CHECK_MESSAGE((WIFEXITED(*st) && WEXITSTATUS(*st) == 1), "memtrack ", describe_wait_status(*st),
                  "; stderr: ", mt.err());
    CHECK_MESSAGE(mt.err().find("No space left on device") != std::string::npos, mt.err());

    // The stats (outside the full disk) count as written only what reached the artifact.
    Stats s = parse_stats(read_file(dir / "stats.json"));
    CHECK_MESSAGE(stats_u64(s, "unwritten") > 0, s.raw);
    CHECK_MESSAGE(s.records == stats_u64(s, "written") + stats_u64(s, "unwritten"), s.raw);
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);
    RunResult d = run({memtrack_bin(), "dump", artifact});
    CHECK_MESSAGE(d.status == 1, "dump of the cut artifact: ", d.describe());
    const auto readable = static_cast<uint64_t>(std::count(d.out.begin(), d.out.end(), '\n'));
    CHECK_MESSAGE(readable >= stats_u64(s, "artifact_events"), readable, " events readable, stats: ", s.raw);
    CHECK_MESSAGE(stats_u64(s, "artifact_events") < 2000, s.raw);

    send_text(mt, "q");
    auto fst = procs.wait_exit(fx, kExit);
    CHECK_MESSAGE((fst && WIFEXITED(*fst) && WEXITSTATUS(*fst) == 0), "the fixture ",
                  fst ? describe_wait_status(*fst) : std::string("did not exit"));
    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: a socket path taken by a file or a live socket is refused, untouched") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    const std::string marker = dir / "ran";
    const std::vector<std::string> command{"/bin/sh", "-c", "touch " + marker};

    auto refused = [&](const std::string& path, const std::string& reason) {
        RunResult r = track_raw(dir, {"--socket", path, "--", command[0], command[1], command[2]});
        CHECK_FALSE(r.timed_out);
        CHECK_MESSAGE(r.status != 0, "memtrack ", r.describe());
        CHECK_FALSE(r.signaled);
        CHECK_MESSAGE(is_one_line(r.err), "stderr is not one line:\n", r.err);
        CHECK_MESSAGE(r.err.find(path) != std::string::npos, "stderr does not name the path:\n", r.err);
        CHECK_MESSAGE(r.err.find(reason) != std::string::npos, "stderr does not say `", reason, "`:\n", r.err);
        CHECK_MESSAGE(!fs::exists(marker), "the command ran");
        CHECK(artifact_names(dir / "out").empty());
    };

    SUBCASE("a regular file") {
        const std::string path = dir / "file.sock";
        write_file(path, "not a socket\n");
        struct stat before {};
        REQUIRE(::stat(path.c_str(), &before) == 0);
        refused(path, "regular file");
        struct stat after {};
        REQUIRE(::stat(path.c_str(), &after) == 0);
        CHECK(read_file(path) == "not a socket\n");
        CHECK(after.st_ino == before.st_ino);
        CHECK(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
        CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
        CHECK((after.st_mode & 07777) == (before.st_mode & 07777));
    }
    SUBCASE("a socket another process listens on") {
        const std::string path = dir / "live.sock";
        memtrack::Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path.copy(addr.sun_path, sizeof addr.sun_path - 1);
        REQUIRE(::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(s.get(), 8) == 0);
        struct stat before {};
        REQUIRE(::lstat(path.c_str(), &before) == 0);
        refused(path, "listening");
        struct stat after {};
        REQUIRE(::lstat(path.c_str(), &after) == 0);
        CHECK(after.st_ino == before.st_ino);
        // Still ours: a client still reaches it.
        CHECK(Client::try_connect(path).has_value());
    }
}

namespace {

std::string comm_of(pid_t pid) {
    std::string c = read_text_or_empty("/proc/" + std::to_string(pid) + "/comm");
    if (!c.empty() && c.back() == '\n') c.pop_back();
    return c;
}

}  // namespace

TEST_CASE("control: attach refuses memtrack, memtrack-guard, memtrack's ancestors, thread ids and kernel threads; memtrack goes on") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    Child mt = spawn_child(track_argv(dir, sock, {}, {fixture("phases")}), dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const pid_t fx = read_ready(mt, kStartup);
    procs.add_descendants(mt.pid);
    pid_t guard = 0;
    for (pid_t c : children_of(mt.pid))
        if (comm_of(c) == "memtrack-guard") guard = c;
    REQUIRE_MESSAGE(guard > 0, "no memtrack-guard child of memtrack ", mt.pid);
    // One of memtrack's own threads (it runs several: the io pool, the symbol loader).
    pid_t thread = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(mt.pid) + "/task", ec))
        if (const pid_t t = std::stoi(e.path().filename().string()); t != mt.pid) thread = t;
    REQUIRE_MESSAGE(thread > 0, "memtrack runs no second thread");

    const std::vector<std::pair<pid_t, std::string>> refused = {
        {mt.pid, "memtrack itself"}, {guard, "memtrack-guard"}, {::getpid(), "an ancestor of memtrack"},
        {1, "an ancestor of memtrack"}, {thread, "a thread of process " + std::to_string(mt.pid)},
        {2, "a kernel thread"}};
    // The test's own setup: pid 2 is kthreadd here (not in a pid namespace of our own).
    REQUIRE(comm_of(2) == "kthreadd");
    for (const auto& [pid, why] : refused) {
        CAPTURE(pid);
        CtlResult r = ctl(sock, "attach", pid);
        CHECK_MESSAGE(r.run.status == 1, r.describe());
        REQUIRE_MESSAGE(r.reply.has_value(), r.describe());
        CHECK_FALSE(is_ok(*r.reply));
        CHECK_MESSAGE(error_of(*r.reply).find(why) != std::string::npos, error_of(*r.reply));
    }
    // Nothing of memtrack's was paused: it answers, the command's phases are recorded.
    run_phase(mt, 'b');
    ctl_ok(sock, "drain");
    CHECK(proc_state(mt.pid) != 'T');
    CHECK(proc_state(guard) != 'T');
    send_text(mt, "q");
    check_memtrack_exits_0(procs, mt);
    const auto [artifact, root_pid] = the_artifact(dir / "out");
    CHECK(root_pid == fx);
    const std::vector<Event> events = dump(artifact);
    CHECK(phase_tally(events) == expected_tally({{kSizeB, kRounds}}));
    CHECK(pids_of(events) == std::set<int>{fx});
    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: attaching a tracked process again changes nothing, while shared probes are in use too") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    Child fx = spawn_child({fixture("phases")}, dir / "phases.err", procs);
    REQUIRE(read_ready(fx, kPhase) == fx.pid);

    // The command makes memtrack attach its shared probes (more live processes than get links
    // of their own), then sleeps.
    const std::string script = "\"$1\" 8; : > \"$2\"; exec sleep 600";
    Child mt = spawn_child(track_argv(dir, sock, {}, {"/bin/bash", "-c", script, "bash", fixture("wide_tree"), dir / "tree.done"}),
                           dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    const auto deadline = Clock::now() + kStartup;
    while (!fs::exists(dir / "tree.done")) {
        REQUIRE_MESSAGE(Clock::now() < deadline, "wide_tree never finished; stderr: ", mt.err());
        std::this_thread::sleep_for(5ms);
    }
    procs.add_descendants(mt.pid);
    const json::object before = ctl_ok(sock, "stats");
    // bash, wide_tree and its first 2 children hold the kMaxOwnLinked links of their own; no
    // child exits before all 8 ran (wide_tree.c), so the other 6 are on the shared probes.
    REQUIRE_MESSAGE(u64_field(before.at("stats").as_object(), "processes_on_shared_probes") == 6, json::serialize(before));

    ctl_ok(sock, "attach", fx.pid);
    run_phase(fx, 'a');
    json::object again = ctl_ok(sock, "attach", fx.pid);
    CHECK(u64_field(again, "pid") == static_cast<uint64_t>(fx.pid));
    run_phase(fx, 'b');
    ctl_ok(sock, "attach", fx.pid);
    run_phase(fx, 'c');
    ctl_ok(sock, "drain");
    ctl_ok(sock, "shutdown");
    check_memtrack_exits_0(procs, mt);

    const auto [artifact, root_pid] = the_artifact(dir / "out");
    (void)root_pid;
    const std::vector<Event> fx_events = of_pid(dump(artifact), fx.pid);
    CHECK(phase_tally(fx_events) == expected_tally({{kSizeA, kRounds}, {kSizeB, kRounds}, {kSizeC, kRounds}}));
    check_pairs(fx_events, {{kSizeA, kRounds}, {kSizeB, kRounds}, {kSizeC, kRounds}});
    CHECK(tally(fx_events) == "Free x300, Malloc x300");

    send_text(fx, "q");
    auto st = procs.wait_exit(fx.pid, kExit);
    CHECK_MESSAGE((st && WIFEXITED(*st) && WEXITSTATUS(*st) == 0), "the fixture did not exit 0; stderr: ", fx.err());
    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}

TEST_CASE("control: SIGINT to memtrack while the command ignores it: cut short, said in the stats and on stderr, exit non-zero") {
    ROOT_SUITE_GUARD();
    TempDir dir;
    Processes procs;
    const std::string sock = dir / "ctl.sock";
    // The shell ignores SIGINT and SIGTERM, and so does the sleep it becomes (exec keeps SIG_IGN).
    Child mt = spawn_child(track_argv(dir, sock, {}, {"/bin/sh", "-c", "trap '' INT TERM; echo ready; exec sleep 60"}),
                           dir / "memtrack.err", procs);
    wait_ready(sock, mt, procs);
    REQUIRE(read_line(mt, kStartup, "the command's ready line") == "ready");
    procs.add_descendants(mt.pid);  // the sleep, which outlives memtrack: ended by pid below
    REQUIRE(::kill(mt.pid, SIGINT) == 0);
    auto st = procs.wait_exit(mt.pid, 30s);  // memtrack gives the command 10 s to end
    REQUIRE_MESSAGE(st.has_value(), "memtrack still running 30 s after SIGINT; stderr: ", mt.err());
    CHECK_MESSAGE((WIFEXITED(*st) && WEXITSTATUS(*st) == 128 + SIGINT), "memtrack ", describe_wait_status(*st),
                  "; stderr: ", mt.err());
    const std::string err = mt.err();
    CHECK_MESSAGE(err.find("recording cut short by SIGINT: the command (pid ") != std::string::npos, err);
    CHECK_MESSAGE(err.find("ignored it and runs on") != std::string::npos, err);
    const Stats s = parse_stats(read_file(dir / "stats.json"));
    CHECK_MESSAGE(stats_u64(s, "cut_short_by_signal") == uint64_t(SIGINT), s.raw);
    CHECK_MESSAGE(stats_u64(s, "command_running_at_exit") == 1, s.raw);
    procs.kill_all();
    CHECK_MESSAGE(procs.leftovers().empty(), "left running:", procs.leftovers());
}
