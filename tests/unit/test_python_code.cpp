// CPython's line tables and runtime file names, as symbols/PythonCode and PythonLayout read them.
// The tables are those of one function compiled by each interpreter (tests/progs has none to
// run here): co_linetable, and the line of every code unit as the interpreter itself gives it
// (co_positions() in 3.11+, co_lines() in 3.10).
#include <doctest/doctest.h>

#include <unistd.h>

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

TEST_CASE("python: the walk reads each version's thread state and frame in one span") {
    // [base, base + span): thread state from next (8) to the end of thread_id or the frame field;
    // frame from its first field to the end of its last (3.10: f_back to f_lasti, an int; 3.11:
    // f_code to is_entry; 3.12+: f_code to owner, one byte).
    struct Want {
        int minor;
        uint16_t tstate_base, tstate_span, frame_base, frame_span;
    };
    for (const Want& w : {Want{10, 8, 176, 24, 76}, Want{11, 8, 152, 32, 37}, Want{12, 8, 136, 0, 71},
                          Want{13, 8, 152, 0, 71}}) {
        CAPTURE(w.minor);
        const PythonLayout* l = python_layout(w.minor);
        REQUIRE(l);
        const mt_python_proc p = l->proc_value();
        CHECK(p.tstate_base == w.tstate_base);
        CHECK(p.tstate_span == w.tstate_span);
        CHECK(p.frame_base == w.frame_base);
        CHECK(p.frame_span == w.frame_span);
        // 3.11+ reads a frame with what lies below it (its callers); 3.10 its span, to 8 bytes.
        CHECK(p.frame_read == (w.minor == 10 ? 80 : MT_PY_WINDOW));
    }
    // Fields further apart than one read, or not aligned to their size, are not walked.
    mt_python_proc far = python_layout(13)->walk;
    far.tstate_thread = far.tstate_next + MT_PY_SPAN;
    CHECK_FALSE(mt_py_set_spans(&far));
    mt_python_proc odd = python_layout(12)->walk;
    odd.frame_instr = 57;
    CHECK_FALSE(mt_py_set_spans(&odd));
    mt_python_proc fits = python_layout(12)->walk;
    fits.frame_owner = MT_PY_SPAN - 1;  // a byte field at the span's last byte
    CHECK(mt_py_set_spans(&fits));
    CHECK(fits.frame_span == MT_PY_SPAN);
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
    // Nor offsets the walk cannot read in one span: thread_id (at 192) far from next.
    std::vector<unsigned char> far = bytes;
    const uint64_t thread_id = r.tstate_next + MT_PY_SPAN;
    std::memcpy(far.data() + 192, &thread_id, sizeof(thread_id));
    CHECK_FALSE(python_layout_from_debug_offsets(*table, far.data(), far.size()));
}

TEST_CASE("python: the perf trampoline's unwind rule, from its code") {
    // 3.12.1 and 3.13.0 (pyenv): sub $8,%rsp; call *%rcx; add $8,%rsp; ret
    const unsigned char plain[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3};
    mt_python_trampoline p{};
    REQUIRE(python_trampoline_rule(plain, sizeof(plain), p));
    CHECK(p.call == 6);
    CHECK(p.cfa == 16);  // the return address into the trampoline's caller at sp + 8
    CHECK(p.rbp8 == 0);
    CHECK(std::memcmp(p.code, plain, 6) == 0);
    CHECK(reinterpret_cast<const unsigned char*>(p.code)[6] == 0);
    // Built for CET, with frame pointers: endbr64; push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret
    const unsigned char framed[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3};
    mt_python_trampoline q{};
    REQUIRE(python_trampoline_rule(framed, sizeof(framed), q));
    CHECK(q.call == 10);
    CHECK(q.cfa == 16);
    CHECK(q.rbp8 == -2);  // rbp saved at CFA - 16
    // Anything else is not taken: no rule rather than a wrong one.
    const unsigned char other[] = {0x48, 0x83, 0xec, 0x08, 0xff, 0xd0, 0xc3};  // call *%rax
    mt_python_trampoline r{};
    CHECK_FALSE(python_trampoline_rule(other, sizeof(other), r));
    CHECK(r.call == 0);
    CHECK_FALSE(python_trampoline_rule(plain, 5, r));  // cut before the call
    // pyenv's 3.12 where the machine has it: its file's trampoline is the plain one.
    const char* home = std::getenv("HOME");
    const std::string lib = std::string(home ? home : "/root") + "/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0";
    if (!std::filesystem::exists(lib)) {
        MESSAGE("SKIP: no ", lib);
        return;
    }
    auto symbols = ElfSymbols::load(lib, {"_Py_trampoline_func_start", "_Py_trampoline_func_end"});
    REQUIRE(symbols);
    auto start = symbols->find("_Py_trampoline_func_start");
    auto end = symbols->find("_Py_trampoline_func_end");
    REQUIRE(start);  // an assembly label (NOTYPE), found when asked for by name
    REQUIRE(end);
    start->size = end->vaddr - start->vaddr;
    auto code = symbols->code(*start, 64);
    REQUIRE(code);
    mt_python_trampoline f{};
    REQUIRE(python_trampoline_rule(code->data(), code->size(), f));
    CHECK(f.call == 6);
    CHECK(f.cfa == 16);
}

namespace {

// A compact ASCII str object as PythonCode reads it: length at 16, state at 32 (compact, ascii),
// the characters from `ascii_size` on.
std::vector<uint64_t> fake_str(const std::string& text, uint16_t ascii_size) {
    std::vector<uint64_t> words((ascii_size + text.size() + 8) / 8 + 1, 0);
    auto* bytes = reinterpret_cast<unsigned char*>(words.data());
    const int64_t n = int64_t(text.size());
    std::memcpy(bytes + 16, &n, 8);
    const uint32_t state = (1u << 5) | (1u << 6) | (1u << 2);  // compact, ascii, kind 1
    std::memcpy(bytes + 32, &state, 4);
    std::memcpy(bytes + ascii_size, text.data(), text.size());
    return words;
}

}  // namespace

TEST_CASE("python: a code object's fields are read where the runtime file's published layout says") {
    // A code object of this process, laid out for 3.13's table, with a second name where a
    // published layout (as _Py_DebugOffsets would give it) puts co_qualname instead.
    const PythonLayout* table = python_layout(13);
    REQUIRE(table);
    PythonLayout published = *table;
    published.co_qualname = 144;  // past every field the table uses
    const auto qualname = fake_str("Table.name", table->ascii_size), moved = fake_str("Published.name", table->ascii_size),
               file = fake_str("f.py", table->ascii_size);
    std::vector<uint64_t> linetable(8, 0);  // a bytes object of size 0
    const char type_name[] = "code";
    std::vector<uint64_t> type(8, 0);
    type[3] = uint64_t(type_name);  // tp_name
    std::vector<uint64_t> code(160 / 8 + 1, 0);
    auto put = [&](uint16_t off, uint64_t v) { std::memcpy(reinterpret_cast<char*>(code.data()) + off, &v, 8); };
    put(8, uint64_t(type.data()));
    put(table->co_filename, uint64_t(file.data()));
    put(table->co_name, uint64_t(qualname.data()));
    put(table->co_qualname, uint64_t(qualname.data()));
    put(table->co_linetable, uint64_t(linetable.data()));
    put(published.co_qualname, uint64_t(moved.data()));
    Mapping runtime;
    runtime.start = 0x1000;
    runtime.end = 0x2000;
    runtime.path = "/opt/python/lib/libpython3.13.so.1.0";
    runtime.executable = true;
    runtime.dev = 7;
    runtime.inode = 42;
    const int self = int(::getpid());
    const uint64_t slot = mt_py_slot(uint64_t(code.data()), MT_PY_INDEX_MASK, 1);
    {
        PythonCode names;
        names.note_maps(ProcessMaps::of(self, {runtime}));
        CHECK(names.resolve(self, slot).function == "Table.name");
    }
    {
        PythonCode names;
        names.publish(7, 42, published);
        names.note_maps(ProcessMaps::of(self, {runtime}));
        const Frame f = names.resolve(self, slot);
        CHECK(f.function == "Published.name");
        CHECK(f.file == "f.py");
        // Another file (inode) than the one that published keeps the table's.
        PythonCode other;
        other.publish(7, 43, published);
        other.note_maps(ProcessMaps::of(self, {runtime}));
        CHECK(other.resolve(self, slot).function == "Table.name");
    }
}

TEST_CASE("python: a stack BPF found all read before (PY_KNOWN) is named from the cache, any other reads again") {
    // One code object of this process (3.11's layout), named, then changed in place as if freed
    // and another made at its address: a stack held for it reads the new name; a stack BPF took
    // while the old fields were still there (MT_STACK_PY_KNOWN) keeps the name read before.
    const PythonLayout* l = python_layout(11);
    REQUIRE(l);
    const auto first = fake_str("First.name", l->ascii_size), second = fake_str("Second.name", l->ascii_size),
               file = fake_str("f.py", l->ascii_size);
    std::vector<uint64_t> linetable(8, 0);
    const char type_name[] = "code";
    std::vector<uint64_t> type(8, 0);
    type[3] = uint64_t(type_name);
    std::vector<uint64_t> code(160 / 8 + 1, 0);
    auto put = [&](uint16_t off, uint64_t v) { std::memcpy(reinterpret_cast<char*>(code.data()) + off, &v, 8); };
    put(8, uint64_t(type.data()));
    put(l->co_filename, uint64_t(file.data()));
    put(l->co_qualname, uint64_t(first.data()));
    put(l->co_linetable, uint64_t(linetable.data()));
    Mapping runtime;
    runtime.start = 0x1000;
    runtime.end = 0x2000;
    runtime.path = "/usr/bin/python3.11";
    runtime.executable = true;
    const int self = int(::getpid());
    const uint64_t slot = mt_py_slot(uint64_t(code.data()), MT_PY_INDEX_MASK, 1);
    PythonCode names;
    names.note_maps(ProcessMaps::of(self, {runtime}));
    // Not known yet: read, whatever the flag says.
    CHECK(names.resolve(self, slot, true).function == "First.name");
    put(l->co_qualname, uint64_t(second.data()));
    CHECK(names.resolve(self, slot, true).function == "First.name");
    CHECK(names.resolve(self, slot).function == "Second.name");
    CHECK(names.resolve(self, slot, true).function == "Second.name");
    // What BPF checks by are the fields the cache is checked by: 3.11's qualified name, 3.10's name.
    const mt_python_proc p = l->proc_value();
    CHECK(p.code_filename == l->co_filename);
    CHECK(p.code_name == l->co_qualname);
    CHECK(p.code_linetable == l->co_linetable);
    CHECK(p.code_firstlineno == l->co_firstlineno);
    CHECK(python_layout(10)->proc_value().code_name == python_layout(10)->co_name);
}
