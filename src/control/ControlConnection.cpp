#include "control/ControlConnection.hpp"

#include <array>
#include <chrono>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "control/Commands.hpp"
#include "control/Request.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// The limits docs/PROTOCOL.md promises (the line limit is LineFramer's).
constexpr size_t kMaxQueuedOutput = 1024 * 1024;   // unsent reply bytes before a client is dropped
constexpr size_t kMaxInFlight = 256;               // unanswered requests before reading pauses
constexpr auto kFlushGrace = std::chrono::seconds(1);  // how long stop() lets replies drain out
constexpr size_t kMaxDiscard = 1024 * 1024;        // unread input thrown away at close

Error refusal(std::string text) { return Error{std::move(text), {}, 0, {}}; }

// Throw away what the peer sent and we will never read. Linux resets a Unix stream connection
// closed with unread input (the peer reads ECONNRESET instead of EOF after our last reply).
void discard_input(ControlSocket& s) {
    boost::system::error_code ec;
    s.non_blocking(true, ec);
    std::array<char, 16384> scratch;
    size_t total = 0;
    while (!ec && total < kMaxDiscard) total += s.read_some(asio::buffer(scratch), ec);
}

}  // namespace

ControlConnection::ControlConnection(ControlSocket socket, std::shared_ptr<ControlShared> shared,
                                     std::function<void()> on_closed, uint64_t id)
    : socket_(std::move(socket)), strand_(socket_.get_executor()), grace_timer_(strand_), idle_timer_(strand_),
      shared_(std::move(shared)), on_closed_(std::move(on_closed)), id_(id) {}

void ControlConnection::start() {
    asio::post(strand_, [self = shared_from_this()] {
        self->last_activity_ = std::chrono::steady_clock::now();
        if (self->shared_->idle_timeout.count() > 0) self->arm_idle(self->shared_->idle_timeout);
        self->read_next();
    });
}

void ControlConnection::arm_idle(std::chrono::steady_clock::duration after) {
    idle_timer_.expires_after(after);
    idle_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec) self->on_idle_check();
    });
}

// Idle: nothing received and nothing sent for idle_timeout, and no request in progress (a
// client waiting for a long `drain` is not idle).
void ControlConnection::on_idle_check() {
    if (closed_ || stopping_) return;
    const auto timeout = shared_->idle_timeout;
    const auto quiet = std::chrono::steady_clock::now() - last_activity_;
    if (!slots_.empty() || !out_.empty() || quiet < timeout)
        return arm_idle(slots_.empty() && out_.empty() ? timeout - quiet : timeout);
    log::info("control: client {} idle for {} ms; closing it", id_, timeout.count());
    close();
}

void ControlConnection::stop() {
    asio::post(strand_, [self = shared_from_this()] { self->on_stop(); });
}

void ControlConnection::reply(uint64_t seq, Result<json::object> answer) {
    asio::post(strand_, [self = shared_from_this(), seq, answer = std::move(answer)]() mutable {
        self->complete(seq, std::move(answer));
    });
}

// One short line into a fresh socket's empty buffer never blocks.
void ControlConnection::turn_away(ControlSocket& socket, std::string_view error) {
    boost::system::error_code ec;
    socket.non_blocking(true, ec);
    const std::string line = reply_line(std::nullopt, refusal(std::string(error)));
    socket.write_some(asio::buffer(line), ec);
    discard_input(socket);
    socket.shutdown(ControlSocket::shutdown_both, ec);
    socket.close(ec);
}

// One line per turn of the strand, read from the socket only when none is buffered, and not at
// all while kMaxInFlight requests wait for their answers.
void ControlConnection::read_next() {
    if (reading_ || read_done_ || stopping_ || closed_ || slots_.size() >= kMaxInFlight) return;
    reading_ = true;
    if (framer_.peek() != LineFramer::Kind::NeedMore) {
        asio::post(strand_, [self = shared_from_this()] { self->on_frame(); });
        return;
    }
    const std::span<char> space = framer_.space();
    socket_read_pending_ = true;
    socket_.async_read_some(asio::buffer(space.data(), space.size()),
                            [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                                self->on_read(ec, n);
                            });
}

void ControlConnection::on_read(boost::system::error_code ec, size_t n) {
    socket_read_pending_ = false;
    if (!ec) framer_.commit(n);
    if (!ec && n > 0) last_activity_ = std::chrono::steady_clock::now();
    if (stopping_ && !closed_) {
        // The read on_stop() cancelled, or one that had its bytes already.
        reading_ = false;
        answer_sent_before_stop();
        finish_if_done();
        return;
    }
    if (!ec) return on_frame();
    reading_ = false;
    if (closed_) return;
    if (ec == asio::error::eof) {
        // The client sent all it will send (perhaps only half-closed): a last request without
        // its newline still counts, and every reply still goes out before we close.
        read_done_ = true;
        if (auto rest = framer_.finish()) handle_line(*rest);
        finish_if_done();
        return;
    }
    if (ec != asio::error::operation_aborted) log::info("control: client {}: read: {}", id_, ec.message());
    close();
}

void ControlConnection::on_frame() {
    reading_ = false;
    if (closed_ || stopping_) return;
    take_frame();
    read_next();  // not after a line too long: reading has ended
}

// One frame out of the framer: a line is handled, a line too long answered and the reading
// ended. true: a line was handled (another may follow); false: none is complete yet, or the
// reading ended.
bool ControlConnection::take_frame() {
    const LineFramer::Frame frame = framer_.next();
    switch (frame.kind) {
    case LineFramer::Kind::Line:
        handle_line(frame.line);
        return true;
    case LineFramer::Kind::TooLong:
        // Answer, then hang up once earlier replies are out; the rest of the line is never read.
        read_done_ = true;
        complete(open_slot(), refusal(LineFramer::too_long_error()));
        return false;
    case LineFramer::Kind::NeedMore:
        break;
    }
    return false;
}

uint64_t ControlConnection::open_slot(std::optional<std::string> id) {
    slots_.push_back(Slot{std::move(id), std::nullopt});
    return head_seq_ + slots_.size() - 1;
}

void ControlConnection::handle_line(std::string_view line) {
    Request request = parse_request(line);
    const uint64_t seq = open_slot(std::move(request.id));
    if (request.error) return complete(seq, refusal(std::move(*request.error)));
    if (stopped()) return complete(seq, refusal("memtrack is shutting down"));
    const auto handlers = shared_->snapshot();
    if (auto answer = run_command(*request.command, request.args, *handlers, [&] { return make_reply(seq); }))
        complete(seq, std::move(*answer));
}

// The callback a handler answers through, from any thread, at most once. If every copy of it is
// dropped unanswered, the request gets an error so later replies are not held back.
ControlHandlers::Reply ControlConnection::make_reply(uint64_t seq) {
    struct Pending {
        std::weak_ptr<ControlConnection> conn;
        uint64_t seq;
        std::atomic<bool> answered{false};
        Pending(std::weak_ptr<ControlConnection> c, uint64_t s) : conn(std::move(c)), seq(s) {}
        ~Pending() {
            if (answered.load()) return;
            if (auto c = conn.lock(); c && !c->stopped()) c->reply(seq, refusal("request dropped without a reply"));
        }
        void deliver(Result<json::object> r) {
            if (answered.exchange(true)) return;
            if (auto c = conn.lock()) c->reply(seq, std::move(r));
        }
    };
    auto pending = std::make_shared<Pending>(weak_from_this(), seq);
    return [pending](Result<json::object> r) { pending->deliver(std::move(r)); };
}

// The first answer to a request counts; a later one (a handler that answered, then threw) is
// dropped.
void ControlConnection::complete(uint64_t seq, Result<json::object> answer) {
    if (closed_ || seq < head_seq_ || seq - head_seq_ >= slots_.size()) return;
    Slot& slot = slots_[seq - head_seq_];
    if (slot.line) return;
    slot.line = reply_line(slot.id, std::move(answer));
    pump();
}

// Move the replies at the head that are complete to the output queue, in request order.
void ControlConnection::pump() {
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

void ControlConnection::enqueue(std::string line) {
    if (!out_.empty() && out_bytes_ + line.size() > kMaxQueuedOutput) {
        log::info("control: client {} does not read its replies; closing it", id_);
        return close();
    }
    out_bytes_ += line.size();
    out_.push_back(std::move(line));
}

void ControlConnection::write_next() {
    if (writing_ > 0 || out_.empty() || closed_) return;
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(out_.size());
    for (const auto& s : out_) buffers.push_back(asio::buffer(s));
    writing_ = out_.size();
    asio::async_write(socket_, buffers, [self = shared_from_this()](boost::system::error_code ec, size_t) {
        self->on_written(ec);
    });
}

void ControlConnection::on_written(boost::system::error_code ec) {
    if (closed_) return;
    if (ec) {
        // EPIPE / ECONNRESET: the client left. Nothing to tell anyone.
        return close();
    }
    for (; writing_ > 0; --writing_) {
        out_bytes_ -= out_.front().size();
        out_.pop_front();
    }
    last_activity_ = std::chrono::steady_clock::now();
    write_next();
    finish_if_done();
}

// After EOF, an over-long line or stop(): close once every reply is out.
void ControlConnection::finish_if_done() {
    if (closed_ || !(read_done_ || stopping_)) return;
    if (slots_.empty() && out_.empty() && writing_ == 0) close();
}

void ControlConnection::on_stop() {
    if (closed_ || stopping_) return;
    stopping_ = true;
    if (socket_read_pending_) {
        // on_read() answers what the client sent once the read has ended: the socket's bytes
        // are read by one operation at a time.
        boost::system::error_code ec;
        socket_.cancel(ec);
    } else {
        answer_sent_before_stop();
    }
    for (uint64_t seq = head_seq_; seq < head_seq_ + slots_.size(); ++seq) {
        complete(seq, refusal("memtrack is shutting down"));
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

// Requests the client sent before the stop, buffered here or in the socket, are answered too
// (refused: memtrack is shutting down) rather than dropped unread: a client that pipelines
// `shutdown` and more gets a reply to each line.
void ControlConnection::answer_sent_before_stop() {
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    while (!closed_ && !read_done_ && slots_.size() < kMaxInFlight) {
        if (take_frame()) continue;
        if (read_done_ || closed_) return;
        const std::span<char> space = framer_.space();
        const size_t n = socket_.read_some(asio::buffer(space.data(), space.size()), ec);
        if (ec || n == 0) return;  // nothing more was sent (would block), or the client is gone
        framer_.commit(n);
    }
}

void ControlConnection::close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    grace_timer_.cancel();
    idle_timer_.cancel();
    discard_input(socket_);
    socket_.shutdown(ControlSocket::shutdown_both, ec);
    socket_.close(ec);  // pending operations end with operation_aborted
    slots_.clear();     // out_ stays: an aborted write may still refer to it
    if (on_closed_) std::exchange(on_closed_, nullptr)();
}

}  // namespace memtrack
