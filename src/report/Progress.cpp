#include "report/Progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace memtrack::report {

Progress::Progress(std::string what)
    : what_(std::move(what)), enabled_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
    if (drawn_) fmt::print(stderr, "\r\033[K");
}

void Progress::draw() {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    if (elapsed < std::chrono::seconds(1)) return;
    const double s = std::chrono::duration<double>(elapsed).count();
    fmt::print(stderr, "\r\033[Kmemtrack: report: {}: {} M events read ({:.1f} M/s)", what_,
               events_ / 1'000'000, double(events_) / 1e6 / s);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace memtrack::report
