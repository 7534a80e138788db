// The control socket: protocol, ordering, bad input, limits, socket-file handling, and
// `memtrack ctl`, against fake handlers. No root, no BPF.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>
#include <fmt/format.h>

#include "actors/Control.hpp"
#include "cli/CtlCommand.hpp"
#include "TestFiles.hpp"
#include "core/Fd.hpp"

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using memtrack::Control;
using memtrack::ControlHandlers;
using memtrack::Fd;
using memtrack::unittest::TempDir;

namespace {

// A private directory for socket paths, removed with everything in it.
// An io_context run by two threads until stop() lets it run out of work.
struct IoThreads {
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard{io.get_executor()};
    std::vector<std::thread> threads;
    IoThreads() {
        for (int i = 0; i < 2; ++i) threads.emplace_back([this] { io.run(); });
    }
    // Drops the guard; returns whether run() returned on its own within `limit`.
    bool finish(std::chrono::milliseconds limit = 5000ms) {
        guard.reset();
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!io.stopped() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
        const bool clean = io.stopped();
        io.stop();
        for (auto& t : threads) t.join();
        threads.clear();
        return clean;
    }
    ~IoThreads() {
        if (!threads.empty()) finish(0ms);
    }
};

// What the fake handlers saw.
struct Calls {
    std::mutex mu;
    std::vector<bool> recording;
    std::vector<int32_t> attached;
    std::atomic<int> drains{0};
};

ControlHandlers fake_handlers(asio::io_context& io, std::shared_ptr<Calls> calls,
                              std::chrono::milliseconds drain_delay = 150ms) {
    ControlHandlers h;
    h.set_recording = [calls](bool on, ControlHandlers::Reply reply) {
        {
            std::lock_guard lock(calls->mu);
            calls->recording.push_back(on);
        }
        reply(json::object{{"recording", on}});
    };
    h.drain = [&io, calls, drain_delay](ControlHandlers::Reply reply) {
        // Replies later, from whichever io thread runs the timer.
        auto timer = std::make_shared<asio::steady_timer>(io, drain_delay);
        timer->async_wait([timer, calls, reply](boost::system::error_code) {
            reply(json::object{{"records", 42 + calls->drains++}});
        });
    };
    h.stats = [] { return json::object{{"records", 7}, {"chunks", 1}}; };
    h.attach = [calls](int32_t pid, ControlHandlers::Reply reply) {
        if (pid == 4242) return;  // drops the reply: Control must still answer
        if (pid == 4343) throw std::runtime_error("boom");
        if (pid == 4444) return reply(memtrack::Error{"attach", "4444", ESRCH, {}});
        {
            std::lock_guard lock(calls->mu);
            calls->attached.push_back(pid);
        }
        reply(json::object{{"pid", pid}, {"ok", false}});  // "ok" from a handler is ignored
    };
    h.shutdown = [](ControlHandlers::Reply reply) { reply(json::object{{"records", 0}}); };
    return h;
}

// A blocking client socket with a receive timeout, so a broken server fails a test, not hangs it.
class Client {
public:
    explicit Client(const std::string& path) {
        fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        REQUIRE(fd_.valid());
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
        REQUIRE(::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
        timeval tv{5, 0};
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }

    void send(const std::string& data) { REQUIRE(try_send(data)); }

    // false: the server has closed the connection (a client turned away may be closed before
    // its first request goes out).
    bool try_send(const std::string& data) {
        size_t sent = 0;
        while (sent < data.size()) {
            const ssize_t n = ::send(fd_.get(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }

    // The next line, without its newline; nullopt on EOF, error or timeout.
    std::optional<std::string> line() {
        for (;;) {
            if (auto nl = buf_.find('\n'); nl != std::string::npos) {
                std::string l = buf_.substr(0, nl);
                buf_.erase(0, nl + 1);
                return l;
            }
            char chunk[4096];
            const ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
            if (n <= 0) return std::nullopt;
            buf_.append(chunk, static_cast<size_t>(n));
        }
    }

    json::object reply() {
        auto l = line();
        REQUIRE_MESSAGE(l.has_value(), "no reply line");
        boost::system::error_code ec;
        json::value v = json::parse(*l, ec);
        REQUIRE_MESSAGE(!ec, "reply is not JSON: " << *l);
        REQUIRE_MESSAGE(v.is_object(), "reply is not an object: " << *l);
        return v.as_object();
    }

    json::object request(const std::string& line) {
        send(line + "\n");
        return reply();
    }

    // True when the server closed: EOF (or a reset) with no more data.
    bool at_eof() {
        if (!buf_.empty()) return false;
        char c;
        const ssize_t n = ::recv(fd_.get(), &c, 1, 0);
        return n == 0 || (n < 0 && errno == ECONNRESET);
    }

    void close() { fd_.reset(); }
    int fd() const { return fd_.get(); }

private:
    Fd fd_;
    std::string buf_;
};

bool is_ok(const json::object& r) { return r.at("ok").as_bool(); }

void check_error(const json::object& r, const std::string& words) {
    CHECK_FALSE(is_ok(r));
    REQUIRE(r.contains("error"));
    const std::string e(r.at("error").as_string());
    CHECK_MESSAGE(e.find(words) != std::string::npos, "error \"" << e << "\" lacks \"" << words << "\"");
}

void check_ping(Client& c) {
    auto r = c.request(R"({"cmd":"ping","id":"after"})");
    CHECK(is_ok(r));
    CHECK(r.at("id") == json::value("after"));
}

// A server with fake handlers, run by two threads.
struct Fixture {
    TempDir dir;
    std::string path = dir / "ctl.sock";
    IoThreads io;
    std::shared_ptr<Calls> calls = std::make_shared<Calls>();
    std::unique_ptr<Control> control;

    explicit Fixture(bool with_handlers = true, std::chrono::milliseconds idle_timeout = {},
                     std::chrono::milliseconds drain_delay = 150ms) {
        auto c = Control::bind(io.io, path, idle_timeout);
        REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
        control = std::move(c).value();
        if (with_handlers) control->set_handlers(fake_handlers(io.io, calls, drain_delay));
        control->start();
    }
    ~Fixture() {
        if (control) control->stop();
        CHECK_MESSAGE(io.finish(), "io_context still had work 5 s after stop()");
    }
};

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// Captures what fd 1 or 2 receives while `f` runs.
template <typename F>
std::string capture_fd(int target, F&& f) {
    std::fflush(nullptr);
    char tmpl[] = "/tmp/mt-ctl-out-XXXXXX";
    Fd file(::mkstemp(tmpl));
    ::unlink(tmpl);
    Fd saved(::dup(target));
    ::dup2(file.get(), target);
    f();
    std::fflush(nullptr);
    ::dup2(saved.get(), target);
    std::string out;
    ::lseek(file.get(), 0, SEEK_SET);
    char chunk[4096];
    for (ssize_t n; (n = ::read(file.get(), chunk, sizeof(chunk))) > 0;) out.append(chunk, static_cast<size_t>(n));
    return out;
}

}  // namespace

TEST_CASE("control: ping echoes the id, whatever its type") {
    Fixture fx;
    Client c(fx.path);
    auto r = c.request(R"({"cmd":"ping","id":17})");
    CHECK(is_ok(r));
    CHECK(r.at("id") == json::value(17));
    CHECK(r.at("protocol") == json::value(1));

    r = c.request(R"({"cmd":"ping","id":"req-a"})");
    CHECK(r.at("id") == json::value("req-a"));

    r = c.request(R"({"id":{"n":[1,2]},"cmd":"ping"})");
    CHECK(r.at("id") == json::parse(R"({"n":[1,2]})"));

    r = c.request(R"({"cmd":"ping"})");
    CHECK(is_ok(r));
    CHECK_FALSE(r.contains("id"));

    r = c.request("{\"cmd\":\"ping\",\"id\":3}\r");  // CRLF is tolerated
    CHECK(r.at("id") == json::value(3));
}

TEST_CASE("control: an id is echoed as the client wrote it; a key given twice is an error") {
    Fixture fx;
    Client c(fx.path);
    // Raw lines: a JSON library would print the first as Infinity and round the second.
    c.send("{\"cmd\":\"ping\",\"id\":1e400}\n");
    CHECK(c.line().value_or("") == "{\"ok\":true,\"id\":1e400,\"protocol\":1,\"version\":\"" MEMTRACK_VERSION "\"}");
    c.send("{\"id\":123456789012345678901234567890,\"cmd\":\"nope\"}\n");
    const std::string unknown = c.line().value_or("");
    CHECK(unknown.starts_with("{\"ok\":false,\"id\":123456789012345678901234567890,\"error\":\"unknown command"));
    c.send("{\"cmd\":\"ping\",\"id\": [1, 2.50] }\n");
    CHECK(c.line().value_or("").starts_with("{\"ok\":true,\"id\":[1, 2.50],"));

    auto r = c.request(R"({"cmd":"enable","cmd":"disable","id":5})");
    check_error(r, "duplicate key \"cmd\"");
    r = c.request(R"({"id":{"a":1,"\u0061":2},"cmd":"ping"})");
    check_error(r, "duplicate key \"a\"");
    CHECK(fx.calls->recording.empty());
    check_ping(c);
}

TEST_CASE("control: the socket file is mode 0600 and goes away at stop(), which is idempotent") {
    Fixture fx;
    struct stat st {};
    REQUIRE(::lstat(fx.path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);

    Client c(fx.path);
    check_ping(c);
    fx.control->stop();
    CHECK_FALSE(exists(fx.path));
    CHECK(c.at_eof());  // the open connection is closed too
    fx.control->stop();
    fx.control.reset();  // and the destructor after stop() is harmless
}

// The rename-and-symlink race on the socket path, made deterministic: this test binary's own
// chmod() (it interposes libc's for every caller in the process) performs the attacker's swap
// when it is asked to change the path under attack, then does what was asked. A Control that
// changed the socket's mode by name after bind() would change the victim's instead.
namespace {
std::mutex g_race_mu;
std::string g_race_path;    // the socket path under attack; empty: no attack
std::string g_race_victim;  // what the path is swapped for
int g_race_chmods = 0;      // chmod() calls on the path under attack
}  // namespace

extern "C" int chmod(const char* path, mode_t mode) {
    {
        std::lock_guard lock(g_race_mu);
        if (!g_race_path.empty() && g_race_path == path) {
            ++g_race_chmods;
            ::rename(path, (g_race_path + ".moved").c_str());
            ::symlink(g_race_victim.c_str(), path);
        }
    }
    return int(::syscall(SYS_fchmodat, AT_FDCWD, path, mode));
}

TEST_CASE("control: the socket's mode is set before bind and its path is never chmod()ed") {
    TempDir dir;
    const std::string victim = dir / "victim";
    { std::ofstream(victim) << "root's file\n"; }
    REQUIRE(::syscall(SYS_fchmodat, AT_FDCWD, victim.c_str(), 0644) == 0);
    const std::string path = dir / "ctl.sock";
    {
        std::lock_guard lock(g_race_mu);
        g_race_path = path;
        g_race_victim = victim;
        g_race_chmods = 0;
    }
    const mode_t old_umask = ::umask(0);  // the socket must not rely on the umask for its mode
    IoThreads io;
    auto c = Control::bind(io.io, path);
    ::umask(old_umask);
    {
        std::lock_guard lock(g_race_mu);
        g_race_path.clear();
        CHECK(g_race_chmods == 0);
    }
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
    struct stat st {};
    REQUIRE(::stat(victim.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0644);
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    CHECK(S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    c.value()->stop();
    CHECK_FALSE(exists(path));
    CHECK(io.finish());
}

TEST_CASE("control: the destructor alone cleans up") {
    Fixture fx;
    Client c(fx.path);
    check_ping(c);
    fx.control.reset();
    CHECK_FALSE(exists(fx.path));
    CHECK(c.at_eof());
}

TEST_CASE("control: replies come in request order on one connection") {
    Fixture fx;
    Client c(fx.path);
    // One write: the drain completes 150 ms later, the ping at once, yet drain's reply is first.
    c.send("{\"cmd\":\"drain\",\"id\":1}\n{\"cmd\":\"ping\",\"id\":2}\n{\"cmd\":\"drain\",\"id\":3}\n"
           "{\"cmd\":\"stats\",\"id\":4}\n");
    auto r1 = c.reply();
    auto r2 = c.reply();
    auto r3 = c.reply();
    auto r4 = c.reply();
    CHECK(r1.at("id") == json::value(1));
    CHECK(is_ok(r1));
    CHECK(r1.contains("records"));
    CHECK(r2.at("id") == json::value(2));
    CHECK(r3.at("id") == json::value(3));
    CHECK(r3.contains("records"));
    CHECK(r4.at("id") == json::value(4));
    CHECK(r4.at("stats").at("records") == json::value(7));
}

TEST_CASE("control: a slow request on one client does not hold up another") {
    Fixture fx;
    Client a(fx.path), b(fx.path);
    a.send("{\"cmd\":\"drain\",\"id\":1}\n");
    const auto t0 = std::chrono::steady_clock::now();
    check_ping(b);
    CHECK(std::chrono::steady_clock::now() - t0 < 100ms);
    CHECK(is_ok(a.reply()));
}

TEST_CASE("control: enable and disable reach the handler, in order, before the reply") {
    Fixture fx;
    Client c(fx.path);
    auto r = c.request(R"({"cmd":"enable","id":1})");
    CHECK(is_ok(r));
    CHECK(r.at("recording") == json::value(true));
    {
        std::lock_guard lock(fx.calls->mu);
        CHECK(fx.calls->recording == std::vector<bool>{true});
    }
    r = c.request(R"({"cmd":"disable","id":2})");
    CHECK(r.at("recording") == json::value(false));
    std::lock_guard lock(fx.calls->mu);
    CHECK(fx.calls->recording == std::vector<bool>{true, false});
}

TEST_CASE("control: attach, stats and shutdown") {
    Fixture fx;
    Client c(fx.path);
    auto r = c.request(R"({"cmd":"attach","pid":1234,"id":5})");
    CHECK(is_ok(r));  // the handler's own "ok" does not override ours
    CHECK(r.at("pid") == json::value(1234));
    CHECK(r.at("id") == json::value(5));

    r = c.request(R"({"cmd":"attach","pid":4444})");
    check_error(r, "attach 4444");  // a handler's Error becomes "error"

    r = c.request(R"({"cmd":"attach","pid":4343})");
    check_error(r, "internal error: boom");  // a handler that throws

    r = c.request(R"({"cmd":"attach","pid":4242,"id":"dropped"})");
    check_error(r, "dropped");  // a handler that never replies
    CHECK(r.at("id") == json::value("dropped"));

    r = c.request(R"({"cmd":"stats"})");
    CHECK(is_ok(r));
    CHECK(r.at("stats").is_object());
    CHECK(r.at("stats").at("chunks") == json::value(1));

    r = c.request(R"({"cmd":"shutdown","id":9})");
    CHECK(is_ok(r));
    CHECK(r.at("records") == json::value(0));
}

TEST_CASE("control: bad input is answered and the connection stays usable") {
    Fixture fx;
    Client c(fx.path);
    struct Case {
        std::string line;
        std::string error;
    };
    const std::vector<Case> cases = {
        {"{\"cmd\": \"ping\"", "invalid JSON"},
        {"not json at all", "invalid JSON"},
        {"", "empty request"},
        {"   ", "empty request"},
        {"[1,2,3]", "JSON object"},
        {"\"ping\"", "JSON object"},
        {"42", "JSON object"},
        {"{}", "missing \"cmd\""},
        {"{\"cmd\":5}", "\"cmd\" must be a string"},
        {"{\"cmd\":null}", "\"cmd\" must be a string"},
        {"{\"cmd\":\"explode\"}", "unknown command \"explode\""},
        {"{\"cmd\":\"PING\"}", "unknown command"},
        {std::string("\xff\xfe\x00\x01garbage\x80\x7f", 14), "invalid JSON"},
        {"{\"cmd\":\"\xc3\x28\"}", "invalid JSON"},  // invalid UTF-8 in a string
        {"{\"cmd\":\"attach\"}", "attach needs \"pid\""},
        {"{\"cmd\":\"attach\",\"pid\":\"123\"}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":-3}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":0}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":1.5}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":true}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":4294967296}", "\"pid\" must be a positive integer"},
        {"{\"cmd\":\"attach\",\"pid\":18446744073709551615}", "\"pid\" must be a positive integer"},
        {std::string(100, '['), "invalid JSON"},  // nesting too deep
    };
    for (const auto& tc : cases) {
        CAPTURE(tc.line);
        check_error(c.request(tc.line), tc.error);
        check_ping(c);
    }
    // The id of a request that parsed is echoed even when the request is refused.
    auto r = c.request(R"({"cmd":"nope","id":"x"})");
    CHECK(r.at("id") == json::value("x"));
    r = c.request(R"({"id":8})");
    CHECK(r.at("id") == json::value(8));
    // Several bad lines in one write: one reply each, in order.
    c.send("\n\n{\"cmd\":\"ping\",\"id\":1}\n");
    check_error(c.reply(), "empty request");
    check_error(c.reply(), "empty request");
    CHECK(c.reply().at("id") == json::value(1));
}

TEST_CASE("control: an empty handler is 'not available'") {
    Fixture fx(false);
    Client c(fx.path);
    for (const char* cmd : {"enable", "disable", "drain", "stats", "shutdown"}) {
        CAPTURE(cmd);
        check_error(c.request(fmt::format(R"({{"cmd":"{}"}})", cmd)), "not available");
    }
    check_error(c.request(R"({"cmd":"attach","pid":1})"), "not available");
    check_ping(c);
}

TEST_CASE("control: a line over 64 KiB gets an error, then the connection closes") {
    Fixture fx;
    Client c(fx.path);
    c.send(R"({"cmd":"ping","id":1})"
           "\n");
    std::string huge = R"({"cmd":"ping","pad":")" + std::string(65 * 1024, 'x') + "\"}\n";
    c.send(huge);
    CHECK(c.reply().at("id") == json::value(1));  // what came before is answered
    check_error(c.reply(), "longer than 65536 bytes");
    CHECK(c.at_eof());

    // Exactly 64 KiB is still fine.
    Client d(fx.path);
    std::string max = R"({"cmd":"ping","id":2,"pad":")";
    max += std::string(64 * 1024 - max.size() - 2, 'y') + "\"}";
    REQUIRE(max.size() == 64 * 1024);
    auto r = d.request(max);
    CHECK(is_ok(r));
    CHECK(r.at("id") == json::value(2));
}

TEST_CASE("control: at most 64 connections; the 65th is turned away, and a freed place is reused") {
    Fixture fx;
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 64; ++i) {
        clients.push_back(std::make_unique<Client>(fx.path));
        CHECK(is_ok(clients.back()->request(fmt::format(R"({{"cmd":"ping","id":{}}})", i))));
    }
    Client extra(fx.path);
    auto r = extra.reply();
    CHECK_FALSE(is_ok(r));
    CHECK(r.at("error") == json::value("too many connections"));
    CHECK_FALSE(r.contains("id"));
    CHECK(extra.at_eof());

    // Every one of the 64 still works.
    for (auto& c : clients) check_ping(*c);

    // Closing one frees its place (the server notices asynchronously).
    clients.front()->close();
    bool accepted = false;
    for (int attempt = 0; attempt < 100 && !accepted; ++attempt) {
        Client again(fx.path);
        // Turned away while the server has not yet seen the close: its error line, then EOF,
        // possibly before the ping is even sent.
        accepted = again.try_send(R"({"cmd":"ping","id":"again"})" "\n") && is_ok(again.reply());
        if (!accepted) std::this_thread::sleep_for(10ms);
    }
    CHECK(accepted);
}

TEST_CASE("control: 64 idle clients are closed after the idle timeout, and the runner gets in") {
    constexpr auto kIdle = 500ms;
    Fixture fx(true, kIdle, /*drain_delay=*/1500ms);
    // One client waits for a drain longer than the timeout: waiting for memtrack is not idle.
    Client draining(fx.path);
    draining.send(R"({"cmd":"drain","id":"d"})" "\n");
    std::vector<std::unique_ptr<Client>> idle;
    // Before the first idle client connects: its idle time starts no earlier than this, so no
    // place may free up before kIdle from here (connecting 64 clients can take most of kIdle on a
    // loaded machine, so the clock must not start after them).
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 63; ++i) {
        idle.push_back(std::make_unique<Client>(fx.path));
        // Half send the start of a request and stall; half send nothing at all.
        if (i % 2 == 0) idle.back()->send(R"({"cmd":"pi)");
    }
    // The table is full: a new client is turned away.
    {
        Client extra(fx.path);
        auto r = extra.reply();
        CHECK(r.at("error") == json::value("too many connections"));
    }
    bool served = false;
    while (!served && std::chrono::steady_clock::now() - start < 5s + kIdle) {
        Client runner(fx.path);
        served = runner.try_send(R"({"cmd":"ping","id":"runner"})" "\n") && is_ok(runner.reply());
        if (!served) std::this_thread::sleep_for(50ms);
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK_MESSAGE(served, "no place freed in 5 s");
    CHECK(waited >= kIdle - 100ms);  // not before the idle clients had their time
    // The idle ones were closed; the one waiting for its drain got its reply, then its ping.
    for (auto& c : idle) CHECK(c->at_eof());
    auto d = draining.reply();
    CHECK(is_ok(d));
    CHECK(d.at("id") == json::value("d"));
    check_ping(draining);
}

TEST_CASE("control: a client that leaves mid-drain costs nothing") {
    Fixture fx;
    {
        Client gone(fx.path);
        gone.send("{\"cmd\":\"drain\",\"id\":1}\n{\"cmd\":\"drain\",\"id\":2}\n");
        gone.close();
    }
    {
        Client half(fx.path);  // a half-closed client still gets its reply
        half.send("{\"cmd\":\"drain\",\"id\":7}");  // no newline: EOF ends the request
        ::shutdown(half.fd(), SHUT_WR);
        auto r = half.reply();
        CHECK(r.at("id") == json::value(7));
        CHECK(r.contains("records"));
        CHECK(half.at_eof());
    }
    Client c(fx.path);
    check_ping(c);
    std::this_thread::sleep_for(300ms);  // the abandoned drains reply into closed connections
    check_ping(c);
    CHECK(fx.calls->drains.load() == 3);
}

TEST_CASE("control: a client that does not read is dropped; others are not affected") {
    Fixture fx;
    Client hog(fx.path);
    Client other(fx.path);
    // Pipeline pings and never read: unsent replies pile up past 1 MiB and the server hangs up,
    // which shows here as a failed send.
    ::fcntl(hog.fd(), F_SETFL, ::fcntl(hog.fd(), F_GETFL) | O_NONBLOCK);
    std::string burst;
    for (int i = 0; i < 1000; ++i) burst += "{\"cmd\":\"ping\",\"id\":123456789}\n";
    bool dropped = false;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!dropped && std::chrono::steady_clock::now() < until) {
        const ssize_t n = ::send(hog.fd(), burst.data(), burst.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) dropped = true;
        else if (n < 0) {
            pollfd p{hog.fd(), POLLOUT, 0};
            ::poll(&p, 1, 10);
            check_ping(other);
        }
    }
    CHECK(dropped);
    check_ping(other);
}

TEST_CASE("control: stop() is not held up by a client that does not read, nor by a pending drain") {
    TempDir dir;
    const std::string path = dir / "ctl.sock";
    IoThreads io;
    // A drain that is never answered while Control runs: the handler keeps its Reply.
    std::mutex mu;
    std::vector<ControlHandlers::Reply> held;
    ControlHandlers h;
    h.drain = [&](ControlHandlers::Reply reply) {
        std::lock_guard lock(mu);
        held.push_back(std::move(reply));
    };
    auto control = std::move(Control::bind(io.io, path)).value();
    control->set_handlers(std::move(h));
    control->start();

    Client stuck(path);  // sends a lot, reads nothing: its replies wait in the server's queue
    std::string burst;
    for (int i = 0; i < 10000; ++i) burst += "{\"cmd\":\"ping\"}\n";
    ::fcntl(stuck.fd(), F_SETFL, ::fcntl(stuck.fd(), F_GETFL) | O_NONBLOCK);
    ::send(stuck.fd(), burst.data(), burst.size(), MSG_NOSIGNAL);
    Client waiting(path);
    waiting.send("{\"cmd\":\"drain\",\"id\":1}\n");
    for (int i = 0; i < 200; ++i) {
        {
            std::lock_guard lock(mu);
            if (!held.empty()) break;
        }
        std::this_thread::sleep_for(5ms);
    }

    control->stop();
    // The pending drain is answered with an error rather than left hanging, then closed.
    auto r = waiting.reply();
    CHECK(r.at("id") == json::value(1));
    check_error(r, "shutting down");
    CHECK(waiting.at_eof());
    // The stuck client is hung up on after the grace period, and nothing is left to run.
    pollfd p{stuck.fd(), POLLRDHUP, 0};
    CHECK(::poll(&p, 1, 3000) == 1);
    CHECK((p.revents & (POLLHUP | POLLRDHUP)) != 0);
    CHECK_MESSAGE(io.finish(3000ms), "io_context still had work after stop()");
    // A reply that comes after everything is gone is harmless.
    std::lock_guard lock(mu);
    REQUIRE(held.size() == 1);
    held.front()(json::object{{"records", 1}});
    held.clear();
}

TEST_CASE("control: a stale socket is replaced; a regular file, a directory or a live socket is refused") {
    TempDir dir;
    IoThreads io;

    SUBCASE("stale socket") {
        const std::string path = dir / "stale.sock";
        {
            Fd s(::socket(AF_UNIX, SOCK_STREAM, 0));
            sockaddr_un addr{};
            addr.sun_family = AF_UNIX;
            path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
            REQUIRE(::bind(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0);
        }  // closed without unlink: the file stays, nobody listens
        REQUIRE(exists(path));
        auto c = Control::bind(io.io, path);
        REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.error().message()));
        auto control = std::move(c).value();
        control->set_handlers(fake_handlers(io.io, std::make_shared<Calls>()));
        control->start();
        Client client(path);
        check_ping(client);
        control->stop();
        CHECK_FALSE(exists(path));
    }
    SUBCASE("regular file") {
        const std::string path = dir / "file";
        { std::ofstream(path) << "precious\n"; }
        auto c = Control::bind(io.io, path);
        REQUIRE_FALSE(c.ok());
        CHECK(c.error().message().find("regular file") != std::string::npos);
        std::ifstream in(path);
        std::stringstream content;
        content << in.rdbuf();
        CHECK(content.str() == "precious\n");
    }
    SUBCASE("directory") {
        const std::string path = dir / "sub";
        REQUIRE(::mkdir(path.c_str(), 0700) == 0);
        auto c = Control::bind(io.io, path);
        REQUIRE_FALSE(c.ok());
        CHECK(c.error().message().find("directory") != std::string::npos);
        struct stat st {};
        CHECK((::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));
    }
    SUBCASE("live socket") {
        const std::string path = dir / "live.sock";
        auto first = std::move(Control::bind(io.io, path)).value();
        first->set_handlers(fake_handlers(io.io, std::make_shared<Calls>()));
        first->start();
        auto second = Control::bind(io.io, path);
        REQUIRE_FALSE(second.ok());
        CHECK(second.error().message().find("listening") != std::string::npos);
        Client client(path);  // the first one is untouched
        check_ping(client);
        first->stop();
    }
    SUBCASE("path too long") {
        auto c = Control::bind(io.io, dir / std::string(200, 'a'));
        CHECK_FALSE(c.ok());
    }
    CHECK(io.finish());
}

TEST_CASE("control: stop() only removes the socket it created") {
    Fixture fx;
    // Someone replaced our socket file with theirs: stop() must leave it alone.
    REQUIRE(::unlink(fx.path.c_str()) == 0);
    { std::ofstream(fx.path) << "theirs\n"; }
    fx.control->stop();
    CHECK(exists(fx.path));
}

TEST_CASE("ctl: exit codes and output") {
    Fixture fx;
    memtrack::CtlOptions opt;
    opt.socket = fx.path;
    opt.timeout_s = 5;

    int code = -1;
    opt.cmd = "ping";
    std::string out = capture_fd(1, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 0);
    auto r = json::parse(out).as_object();
    CHECK(is_ok(r));
    CHECK(r.at("id") == json::value(1));
    CHECK(out.back() == '\n');

    opt.cmd = "drain";
    out = capture_fd(1, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 0);
    CHECK(json::parse(out).at("records").is_int64());

    opt.cmd = "attach";
    opt.pid = 321;
    out = capture_fd(1, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 0);
    CHECK(json::parse(out).at("pid") == json::value(321));
    opt.pid = -5;
    out = capture_fd(1, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 1);
    opt.pid.reset();

    opt.cmd = "frobnicate";
    out = capture_fd(1, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 1);
    CHECK_FALSE(json::parse(out).at("ok").as_bool());

    opt.socket = fx.dir / "nobody-here.sock";
    opt.cmd = "ping";
    std::string err = capture_fd(2, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 2);
    CHECK(err.rfind("memtrack: ctl: ", 0) == 0);
    CHECK(err.find('\n') == err.size() - 1);
}

TEST_CASE("ctl: times out when the server never answers") {
    TempDir dir;
    IoThreads io;
    auto control = std::move(Control::bind(io.io, dir / "slow.sock")).value();
    control->set_handlers(fake_handlers(io.io, std::make_shared<Calls>(), 3s));
    control->start();
    memtrack::CtlOptions opt{dir / "slow.sock", "drain", std::nullopt, 0.2, std::nullopt};
    int code = -1;
    const auto t0 = std::chrono::steady_clock::now();
    std::string err = capture_fd(2, [&] { code = memtrack::run_ctl(opt); });
    CHECK(code == 2);
    CHECK(err.find("no reply within") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    control->stop();
    io.finish(0ms);
}
