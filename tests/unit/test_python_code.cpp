// CPython's line tables and runtime file names, as symbols/PythonCode and PythonLayout read them.
// The tables are those of one function compiled by each interpreter (tests/progs has none to
// run here): co_linetable, and the line of every code unit as the interpreter itself gives it
// (co_positions() in 3.11+, co_lines() in 3.10).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "symbols/PythonCode.hpp"
#include "symbols/PythonLayout.hpp"

using namespace memtrack;

namespace {

std::string unhex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
}

// def f(a):            # line 2
//     b = a + 1
//
//     if b:
//         c = [a,
//              b]
//     return c
void check_lines(int minor, const std::string& table_hex, const std::vector<uint32_t>& want) {
    const std::string table = unhex(table_hex);
    for (size_t i = 0; i < want.size(); i++) {
        CAPTURE(minor);
        CAPTURE(i);
        CHECK(python_line(minor, table, 2, i) == want[i]);
    }
    CHECK(python_line(minor, table, 2, want.size() + 40) == 0);  // past the code: no line
}

}  // namespace

TEST_CASE("python: the line of each code unit, from 3.10's and PEP 657's line tables") {
    check_lines(10, "080104020201020104ff0402", {3, 3, 3, 3, 5, 5, 6, 7, 6, 6, 8, 8});
    check_lines(11, "8000d80809884189058041e00708f000020510d80d0ed80d0ef003010d108801e00b0c8048",
                {2, 3, 3, 3, 3, 3, 5, 5, 6, 7, 6, 6, 8, 8});
    check_lines(13, "8000d80809884189058041e60708d80d0ed80d0ef003010d108801e00b0c8048",
                {2, 3, 3, 3, 3, 3, 5, 5, 5, 5, 5, 5, 5, 6, 7, 6, 6, 8, 8});
    // A truncated table ends the lookup with no line rather than reading past it.
    CHECK(python_line(11, unhex("f0"), 2, 5) == 0);
}

TEST_CASE("python: runtime files are named python3.N or libpython3.N") {
    CHECK(python_minor_from_path("/usr/bin/python3.11") == 11);
    CHECK(python_minor_from_path("/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0") == 12);
    CHECK(python_minor_from_path("/usr/lib/libpython3.13d.so.1.0") == 13);
    CHECK(python_minor_from_path("/usr/bin/python3.10-config") == std::nullopt);
    CHECK(python_minor_from_path("/usr/bin/python3") == std::nullopt);
    CHECK(python_minor_from_path("/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so") ==
          std::nullopt);
    CHECK(python_layout(11) != nullptr);
    CHECK(python_layout(9) == nullptr);  // not walked: no table for it
}
