#pragma once
// Quantities as people write and read them: "256MiB", "1e6", "5%", "1.5s", and bytes printed
// as "5.0 KiB". Shared by the report's options, its --fail-if expressions and its printers.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace memtrack::report {

// "512 B", "5.0 KiB", "1.2 MiB", "3.4 GiB".
std::string human_bytes(uint64_t bytes);
// "5120 B (5.0 KiB)": the exact figure, then human_bytes() from 1 KiB on; "512 B" below. A
// --fail-if figure (a double) may be negative (a delta: "-5120 B (-5.0 KiB)") or fractional
// (an average); the count of bytes itself stays exact.
template <typename T>
std::string bytes_and_human(T b) {
    static_assert(std::is_floating_point_v<T> || std::is_unsigned_v<T>);
    if constexpr (std::is_floating_point_v<T>) {
        const double magnitude = std::fabs(b);
        if (magnitude < 1024) return fmt::format("{} B", b);
        return fmt::format("{} B ({}{})", b, b < 0 ? "-" : "", human_bytes(uint64_t(magnitude)));
    } else {
        return b < 1024 ? fmt::format("{} B", b) : fmt::format("{} B ({})", b, human_bytes(b));
    }
}
// "1 block", "3 blocks"; "1 call" with the words given.
inline std::string blocks(uint64_t n, std::string_view one = "block", std::string_view many = "blocks") {
    return fmt::format("{} {}", n, n == 1 ? one : many);
}
// "0.512 s", "15.3 ms", "120 us", "80 ns".
std::string human_duration(uint64_t ns);

// A number with an optional unit: B, K/KB/KiB (1024), M/MB/MiB, G/GB/GiB, T/TiB, or none;
// scientific notation allowed ("1e6"). Nothing when the text is not such a number.
std::optional<double> parse_quantity(std::string_view text);

// A duration: a number followed by ns, us, ms, s, min; a bare number is seconds.
std::optional<uint64_t> parse_duration_ns(std::string_view text);

}  // namespace memtrack::report
