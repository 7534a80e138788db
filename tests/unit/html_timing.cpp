// scripts/bench.sh --html: how long a `memtrack report --format html` page takes to load and to
// answer, in headless Chromium driven over the DevTools protocol (tests/root/DevTools.hpp).
//   html_timing PAGE
// Prints one line of `name ms` pairs: load (the navigation's start to the page drawn, as the
// page itself tells it), then the wall time of each action until the page has laid itself out
// again: a range dragged on the chart, each view, the inverted toggle, a process, a search.
#define DOCTEST_CONFIG_IMPLEMENT  // tests/root/Harness.cpp's checks, with no test run here
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include <boost/json.hpp>

#include "../root/DevTools.hpp"

using memtrack::roottest::DevTools;

namespace {

double timed(DevTools& b, const std::function<void()>& action) {
    const auto t0 = std::chrono::steady_clock::now();
    action();
    b.eval("document.body.offsetHeight");  // the layout the action caused
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void click(DevTools& b, const std::string& selector) { b.click_element("document.querySelector(\"" + selector + "\")"); }

}  // namespace

int main(int argc, char** argv) try {
    if (argc != 2) {
        std::fprintf(stderr, "usage: html_timing PAGE\n");
        return 2;
    }
    DevTools b("/usr/bin/chromium", std::string("file://") + argv[1]);
    b.wait_for("document.readyState === 'complete' && document.body.getAttribute('data-rendered') === 'yes'");
    std::printf("load %s", std::string(b.eval("document.body.getAttribute('data-rendered-ms')").as_string()).c_str());
    const boost::json::value r = b.eval(
        "(() => { const s = document.getElementById('chart'); s.scrollIntoView({block: 'center'}); "
        "const r = s.getBoundingClientRect(); return [r.left + r.width * 0.3, r.left + r.width * 0.6, r.top + r.height / 2]; })()");
    const double x0 = r.at(0).to_number<double>(), x1 = r.at(1).to_number<double>(), y = r.at(2).to_number<double>();
    std::printf(" range %.0f", timed(b, [&] { b.drag(x0, y, x1, y); }));
    for (const char* view : {"leaked", "allocated", "allocations", "temporary", "peak"})
        std::printf(" %s %.0f", view, timed(b, [&] { click(b, std::string("button[data-view=") + view + "]"); }));
    std::printf(" inverted %.0f", timed(b, [&] { click(b, "#inverted"); }));
    std::printf(" process %.0f", timed(b, [&] {
                    b.eval("(() => { const s = document.getElementById('process'); s.selectedIndex = 1; "
                           "s.dispatchEvent(new Event('change')); })()");
                }));
    std::printf(" search %.0f", timed(b, [&] {
                    click(b, "#search");
                    b.type("1");
                }));
    std::printf(" whole %.0f\n", timed(b, [&] { click(b, "#clear-range"); }));
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "html_timing: %s\n", e.what());
    return 1;
}
