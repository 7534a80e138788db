#pragma once
// Owns: one control client: its socket and strand, its line framer, its replies in request order
// and its output queue (with the limits docs/PROTOCOL.md promises for them).
// Accepts: start(), stop(), reply(seq, answer) from any thread; request lines from its client.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/object.hpp>

#include "control/ControlHandlers.hpp"
#include "control/LineFramer.hpp"
#include "core/Result.hpp"
#include "core/Strand.hpp"

namespace memtrack {

using ControlSocket = boost::asio::local::stream_protocol::socket::rebind_executor<Strand>::other;

// What Control and every connection share. `handlers` may be replaced at any time (under `mu`);
// each request takes a snapshot. `stopped` is set once, by Control::stop().
struct ControlShared {
    std::mutex mu;
    std::shared_ptr<const ControlHandlers> handlers = std::make_shared<const ControlHandlers>();
    std::atomic<bool> stopped{false};
    // A connection with no request in progress that sends nothing for this long is closed, so
    // that idle clients cannot hold every slot (docs/PROTOCOL.md); 0: never. Set before start.
    std::chrono::milliseconds idle_timeout{0};

    std::shared_ptr<const ControlHandlers> snapshot() {
        std::lock_guard lock(mu);
        return handlers;
    }
};

// Kept alive by its pending operations and by Control's table until it closes; handlers only
// ever hold a weak_ptr to it, so a client that leaves costs nothing later.
class ControlConnection : public std::enable_shared_from_this<ControlConnection> {
public:
    // `on_closed` runs once, on this connection's strand, when it has closed.
    ControlConnection(ControlSocket socket, std::shared_ptr<ControlShared> shared, std::function<void()> on_closed,
                      uint64_t id);

    void start();
    // Answer what is pending with an error, send what is queued (for at most a grace period), close.
    void stop();
    // From any thread: the answer to request `seq`.
    void reply(uint64_t seq, Result<boost::json::object> answer);

    // A client over the connection limit: one error line into its fresh socket, then closed.
    static void turn_away(ControlSocket& socket, std::string_view error);

private:
    // A request's place in the reply order. `line` is set once its reply is known.
    struct Slot {
        std::optional<std::string> id;  // the request's id as the client wrote it (JSON text)
        std::optional<std::string> line;
    };

    // Everything below runs on strand_ only.
    void read_next();
    void on_read(boost::system::error_code ec, size_t n);
    void on_frame();
    bool take_frame();
    uint64_t open_slot(std::optional<std::string> id = std::nullopt);
    void handle_line(std::string_view line);
    ControlHandlers::Reply make_reply(uint64_t seq);
    void complete(uint64_t seq, Result<boost::json::object> answer);
    void pump();
    void enqueue(std::string line);
    void write_next();
    void on_written(boost::system::error_code ec);
    void finish_if_done();
    void on_stop();
    void answer_sent_before_stop();
    void close();
    void arm_idle(std::chrono::steady_clock::duration after);
    void on_idle_check();
    bool stopped() const { return shared_->stopped.load(); }

    ControlSocket socket_;
    Strand strand_;
    boost::asio::steady_timer grace_timer_;
    boost::asio::steady_timer idle_timer_;
    std::shared_ptr<ControlShared> shared_;
    std::function<void()> on_closed_;
    const uint64_t id_;

    // Touched only on strand_.
    LineFramer framer_;
    std::deque<Slot> slots_;       // unsent replies, in request order
    uint64_t head_seq_ = 0;        // the request number of slots_.front()
    std::deque<std::string> out_;  // reply lines to send; the first writing_ are in flight
    size_t out_bytes_ = 0;
    size_t writing_ = 0;
    bool reading_ = false;    // a read, or the handling of a buffered line, is under way
    bool socket_read_pending_ = false;  // an async_read_some has not completed yet
    bool read_done_ = false;  // EOF, or a line too long: no more requests from this client
    bool stopping_ = false;   // stop(): send what is queued, then close
    bool closed_ = false;
    std::chrono::steady_clock::time_point last_activity_{};  // a byte received or a reply sent
};

}  // namespace memtrack
