#pragma once
// A headless Chromium driven over the DevTools protocol, for tests that click and type in a
// page and read back what it shows. The protocol runs over --remote-debugging-pipe (commands
// on the browser's fd 3, replies and events on its fd 4, each message a JSON text ended by a
// NUL byte), so no port and no websocket are needed.
//
// The browser runs in a process group of its own (its renderers and helpers join it) and a
// new empty profile; the destructor asks it to close, then SIGKILLs that group if it has not
// exited within a few seconds, and always reaps it by its pid.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>

#include <boost/json/value.hpp>

#include "Harness.hpp"
#include "core/Fd.hpp"

namespace memtrack::roottest {

class DevTools {
public:
    // Starts `chromium` (a path) and opens `url` in a tab of 1200x900 CSS pixels.
    DevTools(const std::string& chromium, const std::string& url);
    ~DevTools();
    DevTools(const DevTools&) = delete;
    DevTools& operator=(const DevTools&) = delete;

    // Evaluates `expression` in the page (awaiting it if it is a promise) and returns its value
    // as JSON; throws with the page's exception text if it throws.
    boost::json::value eval(const std::string& expression);
    // Waits until `expression` evaluates to true; throws past `timeout`.
    void wait_for(const std::string& expression, std::chrono::seconds timeout = std::chrono::seconds(60));
    // A left click with the mouse at (x, y), CSS pixels from the viewport's top left.
    void click(double x, double y);
    // The viewport coordinates of the centre of the element `expression` evaluates to, after
    // scrolling it into view; and a real mouse click there.
    std::pair<double, double> centre(const std::string& expression);
    void click_element(const std::string& expression);
    // The mouse moved to (x, y) with no button down (hover).
    void move(double x, double y);
    // A left-button drag from (x0, y0) to (x1, y1), through a few points between.
    void drag(double x0, double y0, double x1, double y1);
    // Text typed into the focused element, as the keyboard would deliver it (input events).
    void type(const std::string& text);

private:
    // Closes the browser and reaps it (see the class comment).
    void stop() noexcept;
    // Sends a command (to the page when `to_page`, else to the browser) and returns its result;
    // throws on an error reply or when no reply comes in time.
    boost::json::value call(const std::string& method, boost::json::object params, bool to_page = true);
    void send(const std::string& message);
    std::string receive(std::chrono::steady_clock::time_point deadline);

    TempDir profile_;
    pid_t pid_ = -1;
    Fd to_browser_;    // the browser's fd 3
    Fd from_browser_;  // the browser's fd 4
    std::string buffered_;
    uint64_t next_id_ = 1;
    std::string session_;  // the tab's flat session
};

}  // namespace memtrack::roottest
