#include "cli/CtlCommand.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include <boost/json.hpp>
#include <fmt/format.h>

#include "core/Fd.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace json = boost::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxReply = 64 * 1024 * 1024;  // a reply longer than this is not from memtrack

struct CtlError {
    std::string reason;
};

// The one deadline for the whole exchange; none when the timeout is <= 0 or not finite.
class Deadline {
public:
    explicit Deadline(double seconds) {
        if (seconds > 0 && std::isfinite(seconds)) {
            at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        }
    }
    // Milliseconds for poll(): -1 for no limit, 0 once passed; rounded up so we never spin.
    int poll_ms() const {
        if (!at_) return -1;
        const auto left = *at_ - Clock::now();
        if (left <= Clock::duration::zero()) return 0;
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        return ms > 1'000'000 ? 1'000'000 : static_cast<int>(ms);
    }
    bool passed() const { return at_ && Clock::now() >= *at_; }

private:
    std::optional<Clock::time_point> at_;
};

// Waits for `events` on fd. Returns false when the deadline passed first.
bool wait_for(int fd, short events, const Deadline& deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, deadline.poll_ms());
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) throw CtlError{fmt::format("poll: {}", std::strerror(errno))};
    }
}

Fd connect_to(const std::string& path, const Deadline& deadline) {
    if (path.empty()) throw CtlError{"no socket path given (--socket PATH)"};
    sockaddr_un addr{};
    if (path.size() >= sizeof(addr.sun_path)) throw CtlError{fmt::format("socket path too long: {}", path)};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);

    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw CtlError{fmt::format("socket: {}", std::strerror(errno))};
    for (;;) {
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EINPROGRESS) {
            if (!wait_for(fd.get(), POLLOUT, deadline)) break;
            int so_error = 0;
            socklen_t len = sizeof(so_error);
            ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len);
            if (so_error == 0) return fd;
            throw CtlError{fmt::format("cannot connect to {}: {}", path, std::strerror(so_error))};
        }
        if (err == EAGAIN) {
            // The listener's backlog is full: it is alive but busy; try again shortly.
            if (deadline.passed()) break;
            ::poll(nullptr, 0, 10);
            continue;
        }
        std::string why = fmt::format("cannot connect to {}: {}", path, std::strerror(err));
        if (err == ENOENT || err == ECONNREFUSED) why += " (is `memtrack track --socket` running?)";
        throw CtlError{why};
    }
    throw CtlError{fmt::format("cannot connect to {}: timed out", path)};
}

void send_all(int fd, const std::string& data, const Deadline& deadline) {
    size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n >= 0) {
            sent += static_cast<size_t>(n);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd, POLLOUT, deadline)) throw CtlError{"timed out sending the request"};
        } else if (errno != EINTR) {
            throw CtlError{fmt::format("sending the request: {}", std::strerror(errno))};
        }
    }
}

// Reads up to the first newline; the newline is not returned.
std::string read_line(int fd, const Deadline& deadline, double timeout_s) {
    std::string buf;
    char chunk[65536];
    for (;;) {
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n > 0) {
            const size_t old = buf.size();
            buf.append(chunk, static_cast<size_t>(n));
            if (const auto nl = buf.find('\n', old); nl != std::string::npos) {
                buf.resize(nl);
                return buf;
            }
            if (buf.size() > kMaxReply) throw CtlError{"reply too long"};
        } else if (n == 0) {
            throw CtlError{buf.empty() ? "connection closed without a reply"
                                       : "connection closed in the middle of the reply"};
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_for(fd, POLLIN, deadline)) throw CtlError{fmt::format("no reply within {} s", timeout_s)};
        } else if (errno != EINTR) {
            throw CtlError{fmt::format("reading the reply: {}", std::strerror(errno))};
        }
    }
}

}  // namespace

int run_ctl(const CtlOptions& opts) {
    try {
        const Deadline deadline(opts.timeout_s);
        json::object request{{"cmd", opts.cmd}, {"id", 1}};
        if (opts.pid) request["pid"] = *opts.pid;
        if (opts.name) request["name"] = *opts.name;
        std::string line = json::serialize(request);
        line += '\n';

        Fd fd = connect_to(opts.socket, deadline);
        send_all(fd.get(), line, deadline);
        const std::string reply = read_line(fd.get(), deadline, opts.timeout_s);

        boost::system::error_code ec;
        const json::value v = json::parse(reply, ec);
        const json::object* obj = ec ? nullptr : v.if_object();
        const json::value* ok = obj ? obj->if_contains("ok") : nullptr;
        if (!ok || !ok->is_bool()) throw CtlError{"malformed reply (not a JSON object with a boolean \"ok\")"};

        std::fwrite(reply.data(), 1, reply.size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
        return ok->get_bool() ? 0 : 1;
    } catch (const CtlError& e) {
        log::error("ctl: {}", e.reason);
        return 2;
    }
}

}  // namespace memtrack
