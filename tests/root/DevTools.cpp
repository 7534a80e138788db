#include "DevTools.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <array>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/json.hpp>

extern char** environ;

namespace memtrack::roottest {
namespace json = boost::json;
namespace {

constexpr auto kReplyTimeout = std::chrono::seconds(60);

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("devtools: " + what); }
[[noreturn]] void fail_errno(const std::string& what) { fail(what + ": " + std::strerror(errno)); }

// A pipe whose ends sit at fd 10 or above: the child's dup2 onto 3 and 4 must not overwrite
// one end with the other.
std::array<Fd, 2> high_pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) fail_errno("pipe2");
    Fd low[2] = {Fd(p[0]), Fd(p[1])};
    std::array<Fd, 2> out;
    for (int i = 0; i < 2; ++i) {
        out[i] = Fd(::fcntl(low[i].get(), F_DUPFD_CLOEXEC, 10));
        if (!out[i].valid()) fail_errno("fcntl F_DUPFD_CLOEXEC");
    }
    return out;
}

}  // namespace

DevTools::DevTools(const std::string& chromium, const std::string& url) {
    auto commands = high_pipe();
    auto replies = high_pipe();
    const std::string log = profile_ / "chromium.log";
    const std::vector<std::string> argv{chromium,
                                        "--headless",
                                        "--no-sandbox",
                                        "--disable-gpu",
                                        "--disable-quic",
                                        "--no-first-run",
                                        "--disable-background-networking",
                                        "--disable-component-update",
                                        "--disable-sync",
                                        "--user-data-dir=" + profile_ / "profile",
                                        "--window-size=1200,900",
                                        "--remote-debugging-pipe",
                                        "about:blank"};
    {
        SpawnSetup s;
        check_spawn(posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0), "addopen");
        check_spawn(posix_spawn_file_actions_addopen(&s.actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
              "addopen");
        check_spawn(posix_spawn_file_actions_adddup2(&s.actions, 1, 2), "adddup2");
        check_spawn(posix_spawn_file_actions_adddup2(&s.actions, commands[0].get(), 3), "adddup2");
        check_spawn(posix_spawn_file_actions_adddup2(&s.actions, replies[1].get(), 4), "adddup2");
        check_spawn(posix_spawn_file_actions_addclosefrom_np(&s.actions, 5), "addclosefrom_np");
        check_spawn(posix_spawnattr_setpgroup(&s.attr, 0), "setpgroup");
        check_spawn(spawn_default_signals(s.attr, POSIX_SPAWN_SETPGROUP), "posix_spawnattr signals");
        std::vector<char*> cargv;
        for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
        cargv.push_back(nullptr);
        check_spawn(posix_spawn(&pid_, cargv[0], &s.actions, &s.attr, cargv.data(), environ), "posix_spawn chromium");
    }
    to_browser_ = std::move(commands[1]);
    from_browser_ = std::move(replies[0]);

    try {
        // A tab of our own rather than the start-up one, which may not exist yet.
        const json::value target =
            call("Target.createTarget", {{"url", "about:blank"}}, false);
        const json::value attached =
            call("Target.attachToTarget", {{"targetId", target.at("targetId")}, {"flatten", true}}, false);
        session_ = std::string(attached.at("sessionId").as_string());
        call("Emulation.setDeviceMetricsOverride",
             {{"width", 1200}, {"height", 900}, {"deviceScaleFactor", 1}, {"mobile", false}});
        call("Page.navigate", {{"url", url}});
    } catch (...) {
        stop();
        throw;
    }
}

DevTools::~DevTools() { stop(); }

void DevTools::stop() noexcept {
    if (pid_ <= 0) return;
    try {
        send(json::serialize(json::object{{"id", next_id_++}, {"method", "Browser.close"}}));
    } catch (const std::exception&) {
        // Already gone: the wait below sees it.
    }
    to_browser_.reset();
    from_browser_.reset();
    // Seen exited but not reaped yet, so the group id cannot have been reused: whatever is left
    // of the group (renderers, helpers) goes with it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    siginfo_t info{};
    for (;;) {
        info.si_pid = 0;
        const int rc = ::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
        if (rc == 0 && info.si_pid == pid_) break;
        if (rc != 0 && errno != EINTR) break;
        if (std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(-pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void DevTools::send(const std::string& message) {
    std::string framed = message;
    framed.push_back('\0');
    size_t done = 0;
    while (done < framed.size()) {
        const ssize_t n = ::write(to_browser_.get(), framed.data() + done, framed.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_errno("write to chromium");
        }
        done += size_t(n);
    }
}

std::string DevTools::receive(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        if (const size_t end = buffered_.find('\0'); end != std::string::npos) {
            std::string message = buffered_.substr(0, end);
            buffered_.erase(0, end + 1);
            return message;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) fail("no reply from chromium in time (its log: " + read_file(profile_ / "chromium.log") + ")");
        pollfd p{from_browser_.get(), POLLIN, 0};
        const int rc = ::poll(&p, 1, int(left.count()));
        if (rc < 0 && errno != EINTR) fail_errno("poll");
        if (rc <= 0) continue;
        char chunk[65536];
        const ssize_t n = ::read(from_browser_.get(), chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_errno("read from chromium");
        if (n == 0) fail("chromium closed the pipe (its log: " + read_file(profile_ / "chromium.log") + ")");
        buffered_.append(chunk, size_t(n));
    }
}

json::value DevTools::call(const std::string& method, json::object params, bool to_page) {
    const uint64_t id = next_id_++;
    json::object message{{"id", id}, {"method", method}, {"params", std::move(params)}};
    if (to_page) message["sessionId"] = session_;
    send(json::serialize(message));
    const auto deadline = std::chrono::steady_clock::now() + kReplyTimeout;
    for (;;) {
        const json::value reply = json::parse(receive(deadline));
        const json::object& o = reply.as_object();
        const json::value* got = o.if_contains("id");
        if (!got || got->to_number<uint64_t>() != id) continue;  // an event, or another reply
        if (const json::value* err = o.if_contains("error")) fail(method + ": " + json::serialize(*err));
        return o.at("result");
    }
}

json::value DevTools::eval(const std::string& expression) {
    const json::value r =
        call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
    if (const json::value* ex = r.as_object().if_contains("exceptionDetails")) fail(expression + " threw: " + json::serialize(*ex));
    const json::object& result = r.at("result").as_object();
    const json::value* value = result.if_contains("value");
    return value ? *value : json::value(nullptr);
}

void DevTools::wait_for(const std::string& expression, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (eval(expression) != json::value(true)) {
        if (std::chrono::steady_clock::now() >= deadline) fail("timed out waiting for " + expression);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

void DevTools::click(double x, double y) {
    call("Input.dispatchMouseEvent", {{"type", "mouseMoved"}, {"x", x}, {"y", y}});
    for (const char* type : {"mousePressed", "mouseReleased"})
        call("Input.dispatchMouseEvent",
             {{"type", type}, {"x", x}, {"y", y}, {"button", "left"}, {"buttons", 1}, {"clickCount", 1}});
}

std::pair<double, double> DevTools::centre(const std::string& expression) {
    const json::value r = eval("(() => { const e = " + expression +
                               "; e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                               "return [r.left + r.width / 2, r.top + r.height / 2]; })()");
    return {r.at(0).to_number<double>(), r.at(1).to_number<double>()};
}

void DevTools::click_element(const std::string& expression) {
    const auto [x, y] = centre(expression);
    click(x, y);
}

void DevTools::move(double x, double y) { call("Input.dispatchMouseEvent", {{"type", "mouseMoved"}, {"x", x}, {"y", y}}); }

void DevTools::drag(double x0, double y0, double x1, double y1) {
    move(x0, y0);
    call("Input.dispatchMouseEvent",
         {{"type", "mousePressed"}, {"x", x0}, {"y", y0}, {"button", "left"}, {"buttons", 1}, {"clickCount", 1}});
    constexpr int kSteps = 4;
    for (int i = 1; i <= kSteps; ++i) {
        const double x = x0 + (x1 - x0) * i / kSteps, y = y0 + (y1 - y0) * i / kSteps;
        call("Input.dispatchMouseEvent", {{"type", "mouseMoved"}, {"x", x}, {"y", y}, {"button", "left"}, {"buttons", 1}});
    }
    call("Input.dispatchMouseEvent",
         {{"type", "mouseReleased"}, {"x", x1}, {"y", y1}, {"button", "left"}, {"buttons", 0}, {"clickCount", 1}});
}

void DevTools::type(const std::string& text) { call("Input.insertText", {{"text", text}}); }

}  // namespace memtrack::roottest
