#pragma once
// Owns: the control socket (listening fd, its path) and every client connection.
// Accepts: start(), stop(); from clients, newline-delimited JSON requests (docs/PROTOCOL.md).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/json/object.hpp>

#include "actors/Messages.hpp"
#include "core/Result.hpp"

namespace memtrack {

// What the control socket can ask of the rest of memtrack. Each handler may be called from
// the Control strand and must not block: it posts onwards and replies through `reply`.
struct ControlHandlers {
    using Reply = std::function<void(Result<boost::json::object>)>;
    std::function<void(bool on, Reply)> set_recording;
    std::function<void(Reply)> drain;               // reply carries "records"
    std::function<boost::json::object()> stats;     // the live stats object
    std::function<void(int32_t pid, Reply)> attach;
    std::function<void(Reply)> shutdown;            // reply before memtrack exits
};

class Control {
public:
    // Binds and listens at once (mode 0600), before the slow start-up: a client may connect as
    // soon as the path exists. A stale socket is replaced; any other existing file is refused.
    static Result<std::unique_ptr<Control>> bind(boost::asio::io_context& io, const std::string& path);
    ~Control();

    void set_handlers(ControlHandlers h);
    void start();  // begin accepting and answering
    void stop();   // close the listener and every connection, remove the path

private:
    struct Impl;
    explicit Control(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace memtrack
