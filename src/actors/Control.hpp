#pragma once
// Owns: the control socket (listening fd, its path) and the set of open client connections
// (each a ControlConnection, src/control/, which reads, dispatches and answers its requests).
// Accepts: start(), stop(), set_handlers(); from clients, connections (at most 64 at once).
#include <chrono>
#include <memory>
#include <string>

#include "actors/Messages.hpp"
#include "control/ControlHandlers.hpp"
#include "core/Result.hpp"

namespace memtrack {

class Control {
public:
    // Binds and listens at once (mode 0600), before the slow start-up: a client may connect as
    // soon as the path exists. A stale socket is replaced; any other existing file is refused.
    // A client idle for `idle_timeout` (nothing in progress, nothing sent) is closed; 0: never.
    static Result<std::unique_ptr<Control>> bind(boost::asio::io_context& io, const std::string& path,
                                                 std::chrono::milliseconds idle_timeout = {});
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
