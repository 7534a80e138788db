#include "actors/Control.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include "actors/Request.hpp"
#include "core/Fd.hpp"
#include "core/Log.hpp"

#ifndef MEMTRACK_VERSION
#define MEMTRACK_VERSION "unknown"
#endif

namespace memtrack {

namespace asio = boost::asio;
namespace json = boost::json;
using stream_protocol = asio::local::stream_protocol;

namespace {

// The limits docs/PROTOCOL.md promises.
constexpr size_t kMaxLine = 64 * 1024;             // bytes of one request, without its newline
constexpr size_t kMaxConnections = 64;             // open at once; the next one is turned away
constexpr size_t kMaxQueuedOutput = 1024 * 1024;   // unsent reply bytes before a client is dropped
constexpr size_t kMaxInFlight = 256;               // unanswered requests before reading pauses
constexpr auto kFlushGrace = std::chrono::seconds(1);  // how long stop() lets replies drain out
constexpr size_t kMaxDiscard = 1024 * 1024;        // unread input thrown away at close
constexpr int kProtocolVersion = 1;

using Socket = stream_protocol::socket::rebind_executor<Strand>::other;

void set_cloexec(int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Throw away what the peer sent and we will never read. Linux resets a Unix stream connection
// closed with unread input (the peer reads ECONNRESET instead of EOF after our last reply).
void discard_input(Socket& s) {
    boost::system::error_code ec;
    s.non_blocking(true, ec);
    std::array<char, 16384> scratch;
    size_t total = 0;
    while (!ec && total < kMaxDiscard) total += s.read_some(asio::buffer(scratch), ec);
}

std::string to_line(const json::object& o) {
    std::string line = json::serialize(o);
    line += '\n';
    return line;
}

json::object error_fields(std::string_view message) { return json::object{{"error", message}}; }

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

// What the listener and every connection share. `handlers` may be replaced at any time (under
// `mu`); each request takes a snapshot. `stopped` is set once, by Control::stop().
struct Shared {
    std::mutex mu;
    std::shared_ptr<const ControlHandlers> handlers = std::make_shared<const ControlHandlers>();
    std::atomic<bool> stopped{false};

    std::shared_ptr<const ControlHandlers> snapshot() {
        std::lock_guard lock(mu);
        return handlers;
    }
};

class Listener;

// One client. Owns its socket, its strand, the replies in request order and the output queue.
// Kept alive by its pending operations and by the listener's table until it closes; handlers
// only ever hold a weak_ptr to it, so a client that leaves costs nothing later.
class Connection : public std::enable_shared_from_this<Connection> {
public:
    Connection(Socket socket, std::shared_ptr<Shared> shared, std::weak_ptr<Listener> listener, uint64_t id)
        : socket_(std::move(socket)), strand_(socket_.get_executor()), grace_timer_(strand_),
          shared_(std::move(shared)), listener_(std::move(listener)), id_(id) {}

    void start() {
        asio::post(strand_, [self = shared_from_this()] { self->read_next(); });
    }
    // Answer what is pending with an error, send what is queued (for at most kFlushGrace), close.
    void stop() {
        asio::post(strand_, [self = shared_from_this()] { self->on_stop(); });
    }
    // From any thread: the reply to request `seq`.
    void reply(uint64_t seq, Result<json::object> r) {
        asio::post(strand_, [self = shared_from_this(), seq, r = std::move(r)]() mutable {
            if (r.ok()) self->complete(seq, true, std::move(r).value());
            else self->complete(seq, false, error_fields(r.error().message()));
        });
    }
    bool stopped() const { return shared_->stopped.load(); }

private:
    // A request's place in the reply order. `line` is set once its reply is known.
    struct Slot {
        std::optional<std::string> id;  // the request's id as the client wrote it (JSON text)
        std::optional<std::string> line;
    };

    // Everything below runs on strand_ only.
    void read_next() {
        if (reading_ || read_done_ || stopping_ || closed_ || slots_.size() >= kMaxInFlight) return;
        reading_ = true;
        asio::async_read_until(socket_, in_, '\n',
                               [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                                   self->on_read(ec, n);
                               });
    }

    void on_read(boost::system::error_code ec, size_t n) {
        reading_ = false;
        if (closed_ || stopping_) return;
        if (!ec) {
            std::string line(asio::buffers_begin(in_.data()), asio::buffers_begin(in_.data()) + (n - 1));
            in_.consume(n);
            handle_line(line);
            read_next();
            return;
        }
        if (ec == asio::error::not_found) {
            // The buffer filled up without a newline: answer, then hang up once earlier replies
            // are out; the rest of the line is never read.
            const uint64_t seq = open_slot();
            read_done_ = true;
            complete(seq, false, error_fields(fmt::format("request line longer than {} bytes", kMaxLine)));
            return;
        }
        if (ec == asio::error::eof) {
            // The client sent all it will send (perhaps only half-closed): a last request without
            // its newline still counts, and every reply still goes out before we close.
            read_done_ = true;
            std::string rest(asio::buffers_begin(in_.data()), asio::buffers_end(in_.data()));
            in_.consume(in_.size());
            if (rest.find_first_not_of(" \t\r") != std::string::npos) handle_line(rest);
            finish_if_done();
            return;
        }
        if (ec != asio::error::operation_aborted) log::info("control: client {}: read: {}", id_, ec.message());
        close();
    }

    uint64_t open_slot(std::optional<std::string> id = std::nullopt) {
        slots_.push_back(Slot{std::move(id), std::nullopt});
        return head_seq_ + slots_.size() - 1;
    }

    void handle_line(std::string_view line) {
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // tolerate CRLF
        if (line.find_first_not_of(" \t") == std::string_view::npos) {
            return complete(open_slot(), false, error_fields("empty request"));
        }
        Request request = parse_request(line);
        const uint64_t seq = open_slot(std::move(request.id));
        if (request.error) return complete(seq, false, error_fields(*request.error));
        dispatch(seq, request);
    }

    void dispatch(uint64_t seq, const Request& request) {
        if (stopped()) return complete(seq, false, error_fields("memtrack is shutting down"));
        const std::string_view cmd = request.cmd;
        if (cmd == "ping") {
            return complete(seq, true, json::object{{"protocol", kProtocolVersion}, {"version", MEMTRACK_VERSION}});
        }

        const auto handlers = shared_->snapshot();
        const auto not_available = [&] { complete(seq, false, error_fields("not available")); };
        try {
            if (cmd == "enable" || cmd == "disable") {
                if (!handlers->set_recording) return not_available();
                handlers->set_recording(cmd == "enable", make_reply(seq));
            } else if (cmd == "drain") {
                if (!handlers->drain) return not_available();
                handlers->drain(make_reply(seq));
            } else if (cmd == "stats") {
                if (!handlers->stats) return not_available();
                complete(seq, true, json::object{{"stats", handlers->stats()}});
            } else if (cmd == "attach") {
                if (!handlers->attach) return not_available();
                handlers->attach(*request.pid, make_reply(seq));
            } else if (cmd == "shutdown") {
                if (!handlers->shutdown) return not_available();
                handlers->shutdown(make_reply(seq));
            }
        } catch (const std::exception& e) {
            // The slot may already hold the handler's reply; complete() ignores a second one.
            complete(seq, false, error_fields(fmt::format("internal error: {}", e.what())));
        }
    }

    // The callback a handler answers through, from any thread, at most once. If every copy of
    // it is dropped unanswered, the request gets an error so later replies are not held back.
    ControlHandlers::Reply make_reply(uint64_t seq) {
        struct Pending {
            std::weak_ptr<Connection> conn;
            uint64_t seq;
            std::atomic<bool> answered{false};
            Pending(std::weak_ptr<Connection> c, uint64_t s) : conn(std::move(c)), seq(s) {}
            ~Pending() {
                if (answered.load()) return;
                if (auto c = conn.lock(); c && !c->stopped()) {
                    c->reply(seq, Error{"request dropped without a reply", {}, 0, {}});
                }
            }
            void deliver(Result<json::object> r) {
                if (answered.exchange(true)) return;
                if (auto c = conn.lock()) c->reply(seq, std::move(r));
            }
        };
        auto pending = std::make_shared<Pending>(weak_from_this(), seq);
        return [pending](Result<json::object> r) { pending->deliver(std::move(r)); };
    }

    void complete(uint64_t seq, bool ok, json::object fields) {
        if (closed_ || seq < head_seq_ || seq - head_seq_ >= slots_.size()) return;
        Slot& slot = slots_[seq - head_seq_];
        if (slot.line) return;
        json::object out;
        out["ok"] = ok;
        for (auto& kv : fields) {
            if (kv.key() != "ok" && kv.key() != "id") out[kv.key()] = std::move(kv.value());
        }
        std::string line = to_line(out);
        // The id's own text goes in after "ok", as the client wrote it.
        if (slot.id) line.insert(ok ? 10 : 11, fmt::format(",\"id\":{}", *slot.id));  // after {"ok":true
        slot.line = std::move(line);
        pump();
    }

    // Move the replies at the head that are complete to the output queue, in request order.
    void pump() {
        while (!closed_ && !slots_.empty() && slots_.front().line) {
            std::string line = std::move(*slots_.front().line);
            slots_.pop_front();
            ++head_seq_;
            enqueue(std::move(line));  // may close(), which empties slots_
        }
        if (closed_) return;
        write_next();
        read_next();  // reading may have paused on kMaxInFlight
        finish_if_done();
    }

    void enqueue(std::string line) {
        if (!out_.empty() && out_bytes_ + line.size() > kMaxQueuedOutput) {
            log::info("control: client {} does not read its replies; closing it", id_);
            return close();
        }
        out_bytes_ += line.size();
        out_.push_back(std::move(line));
    }

    void write_next() {
        if (writing_ > 0 || out_.empty() || closed_) return;
        std::vector<asio::const_buffer> buffers;
        buffers.reserve(out_.size());
        for (const auto& s : out_) buffers.push_back(asio::buffer(s));
        writing_ = out_.size();
        asio::async_write(socket_, buffers, [self = shared_from_this()](boost::system::error_code ec, size_t) {
            self->on_written(ec);
        });
    }

    void on_written(boost::system::error_code ec) {
        if (closed_) return;
        if (ec) {
            // EPIPE / ECONNRESET: the client left. Nothing to tell anyone.
            return close();
        }
        for (; writing_ > 0; --writing_) {
            out_bytes_ -= out_.front().size();
            out_.pop_front();
        }
        write_next();
        finish_if_done();
    }

    // After EOF, an over-long line or stop(): close once every reply is out.
    void finish_if_done() {
        if (closed_ || !(read_done_ || stopping_)) return;
        if (slots_.empty() && out_.empty() && writing_ == 0) close();
    }

    void on_stop() {
        if (closed_ || stopping_) return;
        stopping_ = true;
        for (uint64_t seq = head_seq_; seq < head_seq_ + slots_.size(); ++seq) {
            complete(seq, false, error_fields("memtrack is shutting down"));
            if (closed_) return;
        }
        finish_if_done();
        if (closed_) return;
        // A client that does not read must not hold up the exit.
        grace_timer_.expires_after(kFlushGrace);
        grace_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
            if (!ec) self->close();
        });
    }

    void close();

    Socket socket_;
    Strand strand_;
    asio::steady_timer grace_timer_;
    std::shared_ptr<Shared> shared_;
    std::weak_ptr<Listener> listener_;
    const uint64_t id_;

    // Touched only on strand_.
    asio::streambuf in_{kMaxLine + 1};  // one line and its newline; a longer one is not_found
    std::deque<Slot> slots_;             // unsent replies, in request order
    uint64_t head_seq_ = 0;              // the request number of slots_.front()
    std::deque<std::string> out_;        // reply lines to send; the first writing_ are in flight
    size_t out_bytes_ = 0;
    size_t writing_ = 0;
    bool reading_ = false;
    bool read_done_ = false;  // EOF, or a line too long: no more requests from this client
    bool stopping_ = false;   // stop(): send what is queued, then close
    bool closed_ = false;
};

// The listening socket and the table of open connections, on its own strand.
class Listener : public std::enable_shared_from_this<Listener> {
public:
    Listener(asio::io_context& io, std::shared_ptr<Shared> shared)
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
    void closed(uint64_t id) {
        asio::post(strand_, [self = shared_from_this(), id] { self->connections_.erase(id); });
    }

private:
    // Everything below runs on strand_ only.
    void accept_next() {
        if (stopped_) return;
        acceptor_.async_accept(asio::make_strand(io_), [self = shared_from_this()](boost::system::error_code ec,
                                                                                   Socket socket) {
            self->on_accept(ec, std::move(socket));
        });
    }

    void on_accept(boost::system::error_code ec, Socket socket) {
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
            turn_away(socket);
        } else {
            const uint64_t id = next_id_++;
            auto conn = std::make_shared<Connection>(std::move(socket), shared_, weak_from_this(), id);
            connections_.emplace(id, conn);
            conn->start();
        }
        accept_next();
    }

    // One short line into a fresh socket's empty buffer never blocks.
    static void turn_away(Socket& socket) {
        boost::system::error_code ec;
        socket.non_blocking(true, ec);
        static const std::string line = to_line(json::object{{"ok", false}, {"error", "too many connections"}});
        socket.write_some(asio::buffer(line), ec);
        discard_input(socket);
        socket.shutdown(Socket::shutdown_both, ec);
        socket.close(ec);
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
    std::shared_ptr<Shared> shared_;
    // Touched only on strand_.
    std::unordered_map<uint64_t, std::shared_ptr<Connection>> connections_;
    uint64_t next_id_ = 0;
    bool started_ = false;
    bool stopped_ = false;
};

void Connection::close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    grace_timer_.cancel();
    discard_input(socket_);
    socket_.shutdown(Socket::shutdown_both, ec);
    socket_.close(ec);  // pending operations end with operation_aborted
    slots_.clear();     // out_ stays: an aborted write may still refer to it
    if (auto l = listener_.lock()) l->closed(id_);
}

}  // namespace

struct Control::Impl {
    std::shared_ptr<Shared> shared;
    std::shared_ptr<Listener> listener;
    std::string path;  // absolute
    dev_t dev = 0;  // the socket file we created: stop() removes only that one
    ino_t ino = 0;
    std::atomic<bool> stopped{false};
};

Result<std::unique_ptr<Control>> Control::bind(asio::io_context& io, const std::string& path) {
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
    impl->shared = std::make_shared<Shared>();
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
