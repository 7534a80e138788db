#include "actors/Control.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <unordered_map>
#include <utility>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "control/ControlConnection.hpp"
#include "core/Fd.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;
using stream_protocol = asio::local::stream_protocol;

namespace {

constexpr size_t kMaxConnections = 64;  // open at once; the next one is turned away (docs/PROTOCOL.md)

void set_cloexec(int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

const char* file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a socket";
}

// 0 when something accepts connections at `path`, else connect()'s errno. Non-blocking, so a
// listener with a full backlog answers EAGAIN instead of making us wait.
int probe_socket(const std::string& path) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return errno;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return 0;
    return errno;
}

// The listening socket and the table of open connections, on its own strand.
class Listener : public std::enable_shared_from_this<Listener> {
public:
    Listener(asio::io_context& io, std::shared_ptr<ControlShared> shared)
        : io_(io), strand_(asio::make_strand(io)), acceptor_(strand_), retry_timer_(strand_),
          shared_(std::move(shared)) {}

    stream_protocol::acceptor& acceptor() { return acceptor_; }  // only before start()

    void start() {
        asio::post(strand_, [self = shared_from_this()] {
            if (self->stopped_ || self->started_) return;
            self->started_ = true;
            self->accept_next();
        });
    }
    void stop() {
        asio::post(strand_, [self = shared_from_this()] { self->on_stop(); });
    }

private:
    // Everything below runs on strand_ only.
    void accept_next() {
        if (stopped_) return;
        acceptor_.async_accept(asio::make_strand(io_), [self = shared_from_this()](boost::system::error_code ec,
                                                                                   ControlSocket socket) {
            self->on_accept(ec, std::move(socket));
        });
    }

    void on_accept(boost::system::error_code ec, ControlSocket socket) {
        if (stopped_ || ec == asio::error::operation_aborted) return;
        if (ec) {
            // Out of descriptors or memory: try again shortly rather than spin.
            log::error("control socket: accept: {}", ec.message());
            retry_timer_.expires_after(std::chrono::milliseconds(100));
            retry_timer_.async_wait([self = shared_from_this()](boost::system::error_code e) {
                if (!e) self->accept_next();
            });
            return;
        }
        set_cloexec(socket.native_handle());
        if (connections_.size() >= kMaxConnections) {
            ControlConnection::turn_away(socket, "too many connections");
        } else {
            const uint64_t id = next_id_++;
            auto closed = [listener = weak_from_this(), id] {
                if (auto l = listener.lock()) asio::post(l->strand_, [l, id] { l->connections_.erase(id); });
            };
            auto conn = std::make_shared<ControlConnection>(std::move(socket), shared_, std::move(closed), id);
            connections_.emplace(id, conn);
            conn->start();
        }
        accept_next();
    }

    void on_stop() {
        if (stopped_) return;
        stopped_ = true;
        boost::system::error_code ec;
        acceptor_.close(ec);
        retry_timer_.cancel();
        for (auto& [id, conn] : connections_) conn->stop();
        connections_.clear();  // each connection lives on until its last operation ends
    }

    asio::io_context& io_;
    Strand strand_;
    stream_protocol::acceptor acceptor_;
    asio::steady_timer retry_timer_;
    std::shared_ptr<ControlShared> shared_;
    // Touched only on strand_.
    std::unordered_map<uint64_t, std::shared_ptr<ControlConnection>> connections_;
    uint64_t next_id_ = 0;
    bool started_ = false;
    bool stopped_ = false;
};

}  // namespace

struct Control::Impl {
    std::shared_ptr<ControlShared> shared;
    std::shared_ptr<Listener> listener;
    std::string path;  // absolute
    dev_t dev = 0;  // the socket file we created: stop() removes only that one
    ino_t ino = 0;
    std::atomic<bool> stopped{false};
};

Result<std::unique_ptr<Control>> Control::bind(asio::io_context& io, const std::string& path,
                                               std::chrono::milliseconds idle_timeout) {
    const std::string op = "control socket";
    if (path.empty()) return Error{op, path, EINVAL, "empty path"};
    if (path.size() >= sizeof(sockaddr_un::sun_path)) {
        return Error{op, path, ENAMETOOLONG,
                     fmt::format("a socket path must be shorter than {} bytes", sizeof(sockaddr_un::sun_path))};
    }

    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            return Error{op, path, EEXIST, fmt::format("it is {}; not replacing it", file_kind(st.st_mode))};
        }
        const int probe = probe_socket(path);
        if (probe == 0 || probe == EAGAIN) return Error{op, path, EADDRINUSE, "another process is listening on it"};
        if (probe != ECONNREFUSED) return Error{op, path, probe, "cannot tell whether the existing socket is in use"};
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_error("remove stale socket", path);
        log::info("control socket: replaced the stale socket {}", path);
    } else if (errno != ENOENT) {
        return errno_error("stat", path);
    }

    auto impl = std::make_unique<Impl>();
    impl->shared = std::make_shared<ControlShared>();
    impl->shared->idle_timeout = idle_timeout;
    impl->listener = std::make_shared<Listener>(io, impl->shared);
    std::error_code fs_ec;
    const auto absolute = std::filesystem::absolute(path, fs_ec);  // stop() must not depend on the cwd
    impl->path = fs_ec ? path : absolute.string();
    auto& acceptor = impl->listener->acceptor();

    boost::system::error_code ec;
    acceptor.open(stream_protocol(), ec);
    if (ec) return Error{"socket", path, ec.value(), {}};
    set_cloexec(acceptor.native_handle());
    // Linux gives the new socket file the socket inode's mode less the umask, so the file is
    // born at most 0600. That is the only way its mode is set: after bind() the path is never
    // changed by name (a chmod() of it would follow whatever link was swapped in meanwhile).
    if (::fchmod(acceptor.native_handle(), 0600) != 0) return errno_error("fchmod", path);
    acceptor.bind(stream_protocol::endpoint(path), ec);
    if (ec) return Error{"bind", path, ec.value(), {}};
    const auto undo = [&](Error e) {
        ::unlink(path.c_str());
        return e;
    };
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return undo(Error{"listen", path, ec.value(), {}});
    if (::lstat(path.c_str(), &st) != 0) return undo(errno_error("stat", path));
    impl->dev = st.st_dev;
    impl->ino = st.st_ino;
    return std::unique_ptr<Control>(new Control(std::move(impl)));
}

Control::Control(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Control::~Control() {
    if (impl_) stop();
}

void Control::set_handlers(ControlHandlers h) {
    auto handlers = std::make_shared<const ControlHandlers>(std::move(h));
    std::lock_guard lock(impl_->shared->mu);
    impl_->shared->handlers = std::move(handlers);
}

void Control::start() {
    if (impl_->stopped.load()) return;
    impl_->listener->start();
}

void Control::stop() {
    if (impl_->stopped.exchange(true)) return;
    impl_->shared->stopped = true;
    // The path goes now, whether or not the io_context still runs; and only if it is still ours.
    struct stat st {};
    if (::lstat(impl_->path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == impl_->dev &&
        st.st_ino == impl_->ino) {
        ::unlink(impl_->path.c_str());
    }
    impl_->listener->stop();
}

}  // namespace memtrack
