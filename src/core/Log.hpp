#pragma once
// One place for diagnostics: errors always, details only at -v.
#include <fmt/format.h>

#include <cstdio>

namespace memtrack::log {

void set_verbose(bool on);
bool verbose();

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    if (verbose()) fmt::print(stderr, "memtrack: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
    fmt::print(stderr, "memtrack: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

// Something the user should know although nothing failed: always printed.
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
    fmt::print(stderr, "memtrack: warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace memtrack::log
