#pragma once
// Scanners for the line formats the kernel and runtimes write (/proc/PID/maps, perf maps): each
// consumes a field from the front of a view, or leaves the view as it was and says no.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memtrack::text {

inline std::optional<uint64_t> take_number(std::string_view& s, int base) {
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p == s.data()) return std::nullopt;
    s.remove_prefix(size_t(p - s.data()));
    return v;
}

inline std::optional<uint64_t> take_hex(std::string_view& s) { return take_number(s, 16); }
inline std::optional<uint64_t> take_dec(std::string_view& s) { return take_number(s, 10); }

inline bool take_char(std::string_view& s, char c) {
    if (s.empty() || s.front() != c) return false;
    s.remove_prefix(1);
    return true;
}

inline void skip_spaces(std::string_view& s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
}

}  // namespace memtrack::text
