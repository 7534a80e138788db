#include "report/Units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace memtrack::report {
namespace {

// Splits "12.5MiB" into 12.5 and "MiB"; nothing when no number starts the text.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
    double v = 0;
    const char* begin = text.data();
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, v);
    if (ec != std::errc() || !std::isfinite(v)) return std::nullopt;
    return std::pair{v, std::string_view(ptr, size_t(end - ptr))};
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
    static constexpr std::array<const char*, 5> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) return fmt::format("{} B", bytes);
    double v = double(bytes) / 1024;
    size_t unit = 0;
    while (v >= 1024 && unit + 1 < kUnits.size()) {
        v /= 1024;
        ++unit;
    }
    return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string human_duration(uint64_t ns) {
    if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", double(ns) / 1e9);
    if (ns >= 1'000'000) return fmt::format("{:.1f} ms", double(ns) / 1e6);
    if (ns >= 1'000) return fmt::format("{:.1f} us", double(ns) / 1e3);
    return fmt::format("{} ns", ns);
}

std::optional<double> parse_quantity(std::string_view text) {
    auto split = split_number(text);
    if (!split) return std::nullopt;
    auto [v, unit] = *split;
    static constexpr std::array<std::pair<std::string_view, double>, 14> kUnits{{
        {"", 1},
        {"B", 1},
        {"K", 0x1p10},
        {"KB", 0x1p10},
        {"KiB", 0x1p10},
        {"M", 0x1p20},
        {"MB", 0x1p20},
        {"MiB", 0x1p20},
        {"G", 0x1p30},
        {"GB", 0x1p30},
        {"GiB", 0x1p30},
        {"T", 0x1p40},
        {"TB", 0x1p40},
        {"TiB", 0x1p40},
    }};
    for (auto& [name, mult] : kUnits)
        if (unit == name) return v * mult;
    return std::nullopt;
}

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
    auto split = split_number(text);
    if (!split || split->first < 0) return std::nullopt;
    auto [v, unit] = *split;
    static constexpr std::array<std::pair<std::string_view, double>, 6> kUnits{{
        {"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"min", 60e9}}};
    for (auto& [name, mult] : kUnits)
        if (unit == name) return uint64_t(std::llround(v * mult));
    return std::nullopt;
}

}  // namespace memtrack::report
