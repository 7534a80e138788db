// CPython's line tables and runtime file names, as symbols/PythonCode and PythonLayout read them.
// The tables are those of one function compiled by each interpreter (tests/progs has none to
// run here): co_linetable, and the line of every code unit as the interpreter itself gives it
// (co_positions() in 3.11+, co_lines() in 3.10).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "probes/ElfSymbols.hpp"
#include "symbols/ElfFile.hpp"
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

TEST_CASE("python: 3.13's _Py_DebugOffsets, read from _PyRuntime, agree with the table") {
    const PythonLayout* table = python_layout(13);
    REQUIRE(table);
    std::vector<unsigned char> bad(kPythonDebugOffsetsBytes, 0);
    CHECK_FALSE(python_layout_from_debug_offsets(*table, bad.data(), bad.size()));
    // pyenv's 3.13 where the machine has it: _PyRuntime's initial bytes, as the file maps them.
    const char* home = std::getenv("HOME");
    const std::string root = std::string(home ? home : "/root") + "/.pyenv/versions";
    std::string lib;
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator(root, ec))
        if (d.path().filename().string().starts_with("3.13.") && std::filesystem::exists(d.path() / "lib/libpython3.13.so.1.0"))
            lib = (d.path() / "lib/libpython3.13.so.1.0").string();
    if (lib.empty()) {
        MESSAGE("SKIP: no pyenv 3.13 (libpython3.13.so) under ", root);
        return;
    }
    CAPTURE(lib);
    auto symbols = ElfSymbols::load(lib, {"_PyRuntime"});
    REQUIRE(symbols);
    const auto vaddr = symbols->object_vaddr("_PyRuntime");
    REQUIRE(vaddr);
    auto file = open_elf(lib);
    REQUIRE(file);
    auto segments = load_segments(file->elf.get(), lib);
    REQUIRE(segments);
    std::optional<uint64_t> offset;
    for (const LoadSegment& s : *segments)
        if (*vaddr >= s.vaddr && *vaddr + kPythonDebugOffsetsBytes <= s.vaddr + s.filesz) offset = s.offset + (*vaddr - s.vaddr);
    REQUIRE(offset);
    std::ifstream in(lib, std::ios::binary);
    std::vector<unsigned char> bytes(kPythonDebugOffsetsBytes);
    in.seekg(std::streamoff(*offset));
    REQUIRE(in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size())));
    const auto read = python_layout_from_debug_offsets(*table, bytes.data(), bytes.size());
    REQUIRE(read);
    const mt_python_proc &r = read->walk, &t = table->walk;
    CHECK(r.interp_head == t.interp_head);
    CHECK(r.threads_head == t.threads_head);
    CHECK(r.tstate_next == t.tstate_next);
    CHECK(r.tstate_thread == t.tstate_thread);
    CHECK(r.tstate_frame == t.tstate_frame);
    CHECK(r.frame_code == t.frame_code);
    CHECK(r.frame_previous == t.frame_previous);
    CHECK(r.frame_instr == t.frame_instr);
    CHECK(r.frame_owner == t.frame_owner);
    CHECK(r.code_adaptive == t.code_adaptive);
    CHECK(read->co_filename == table->co_filename);
    CHECK(read->co_name == table->co_name);
    CHECK(read->co_qualname == table->co_qualname);
    CHECK(read->co_linetable == table->co_linetable);
    CHECK(read->co_firstlineno == table->co_firstlineno);
    // Another minor version's bytes are not taken for 3.13's.
    CHECK_FALSE(python_layout_from_debug_offsets(*python_layout(12), bytes.data(), bytes.size()));
}
