#include "symbols/PythonLayout.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <cstdint>
#include <cstring>

namespace memtrack {

namespace {

// Offsets read from the DWARF of the interpreters pyenv built on this project's machines
// (3.10.13, 3.11.7, 3.12.1, 3.13.0: `gdb -batch -ex 'print/d (long)&((PyThreadState*)0)->next'
// libpython3.N.so` and so on), the x86-64 layouts of CPython's Include/cpython/pystate.h,
// Include/internal/pycore_{runtime,interp,frame}.h, Include/cpython/code.h and
// Include/cpython/unicodeobject.h of those releases. Within a minor version these structures do
// not change (CPython's ABI rules for a release series); Debian's 3.11.2 is checked by the root
// suite's Python test.
constexpr PythonLayout kLayouts[] = {
    {10,
     {0, MT_PY_FRAMES_310, /*interp_head*/ 32, /*threads_head*/ 8, /*next*/ 8, /*thread_id*/ 176,
      /*frame*/ 24, /*cframe_current*/ 0, /*f_code*/ 32, /*f_back*/ 24, /*f_lasti*/ 96, /*owner*/ 0,
      /*adaptive*/ 0, /*code_*, spans: proc_value*/ 0, 0, 0, 0,
      0, 0, 0, 0, /*frame_read: proc_value*/ 0, {}, /*perf trampoline: per file*/ {}},
     104, 112, 0, 40, 120, 48, 72, 56},
    {11,
     {0, MT_PY_FRAMES_311, 40, 16, 8, 152, /*cframe*/ 56, /*current_frame*/ 8, /*f_code*/ 32,
      /*previous*/ 48, /*prev_instr*/ 56, /*is_entry*/ 68, /*co_code_adaptive*/ 184, /*code_*, spans: proc_value*/ 0, 0, 0, 0,
      0, 0, 0, 0, /*frame_read: proc_value*/ 0, {}, /*perf trampoline: per file*/ {}},
     112, 120, 128, 72, 136, 48, 72, 56},
    {12,
     {0, MT_PY_FRAMES_312, 40, 72, 8, 136, /*cframe*/ 56, /*current_frame*/ 0, /*f_code*/ 0,
      /*previous*/ 8, /*prev_instr*/ 56, /*owner*/ 70, /*co_code_adaptive*/ 192, /*code_*, spans: proc_value*/ 0, 0, 0, 0,
      0, 0, 0, 0, /*frame_read: proc_value*/ 0, {}, /*perf trampoline: per file*/ {}},
     112, 120, 128, 68, 136, 40, 56, 48},
    {13,
     {0, MT_PY_FRAMES_313, 632, 7344, 8, 152, /*current_frame*/ 72, 0, /*f_executable*/ 0,
      /*previous*/ 8, /*instr_ptr*/ 56, /*owner*/ 70, /*co_code_adaptive*/ 200, /*code_*, spans: proc_value*/ 0, 0, 0, 0,
      0, 0, 0, 0, /*frame_read: proc_value*/ 0, {}, /*perf trampoline: per file*/ {}},
     112, 120, 128, 68, 136, 40, 56, 48},
};

}  // namespace

const PythonLayout* python_layout(int minor) {
    for (const PythonLayout& l : kLayouts)
        if (l.minor == minor) return &l;
    return nullptr;
}

std::optional<PythonLayout> python_layout_from_debug_offsets(const PythonLayout& table, const unsigned char* bytes,
                                                             size_t size) {
    if (size < kPythonDebugOffsetsBytes || std::memcmp(bytes, "xdebugpy", 8) != 0) return std::nullopt;
    auto at = [&](size_t off) {
        uint64_t v;
        std::memcpy(&v, bytes + off, 8);
        return v;
    };
    // version is PY_VERSION_HEX: 0x030d00f0 for 3.13.0.
    if ((at(8) >> 24) != 3 || int((at(8) >> 16) & 0xff) != table.minor) return std::nullopt;
    PythonLayout l = table;
    bool fits = true;
    auto set = [&](uint16_t& field, size_t off) {
        const uint64_t v = at(off);
        fits = fits && v <= UINT16_MAX;
        field = uint16_t(v);
    };
    // Offsets within _Py_DebugOffsets of 3.13.0 (`ptype /o struct _Py_DebugOffsets`, gdb).
    set(l.walk.interp_head, 40);      // runtime_state.interpreters_head
    set(l.walk.threads_head, 72);     // interpreter_state.threads_head
    set(l.walk.tstate_next, 168);     // thread_state.next
    set(l.walk.tstate_frame, 184);    // thread_state.current_frame
    set(l.walk.tstate_thread, 192);   // thread_state.thread_id
    set(l.walk.frame_previous, 232);  // interpreter_frame.previous
    set(l.walk.frame_code, 240);      // interpreter_frame.executable
    set(l.walk.frame_instr, 248);     // interpreter_frame.instr_ptr
    set(l.walk.frame_owner, 264);     // interpreter_frame.owner
    set(l.co_filename, 280);          // code_object.filename
    set(l.co_name, 288);
    set(l.co_qualname, 296);
    set(l.co_linetable, 304);
    set(l.co_firstlineno, 312);
    set(l.walk.code_adaptive, 344);   // code_object.co_code_adaptive
    mt_python_proc spans = l.walk;
    if (!fits || !mt_py_set_spans(&spans)) return std::nullopt;
    return l;
}

bool python_trampoline_rule(const unsigned char* code, size_t size, mt_python_trampoline& t) {
    size_t i = 0;
    auto take = [&](std::initializer_list<unsigned char> bytes) {
        if (i + bytes.size() > size || !std::equal(bytes.begin(), bytes.end(), code + i)) return false;
        i += bytes.size();
        return true;
    };
    take({0xf3, 0x0f, 0x1e, 0xfa});  // endbr64
    unsigned pushed = 0;             // bytes below the return address into the caller
    int8_t rbp8 = 0;
    if (take({0x48, 0x83, 0xec})) {  // sub $imm8, %rsp
        if (i >= size || code[i] > 0x7f) return false;
        pushed = code[i++];
    } else if (take({0x55})) {  // push %rbp: saved at CFA - 16
        pushed = 8;
        rbp8 = -2;
        take({0x48, 0x89, 0xe5});  // mov %rsp, %rbp
    } else {
        return false;
    }
    if (!take({0xff, 0xd1}) || i > sizeof(t.code)) return false;  // call *%rcx
    t = {};
    t.call = uint8_t(i);
    t.cfa = uint8_t(pushed + 8);  // CFA: the stack pointer before the call into it
    t.rbp8 = rbp8;
    std::memcpy(t.code, code, i);
    return true;
}

std::optional<int> python_minor_from_path(std::string_view path) {
    const size_t slash = path.rfind('/');
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (name.starts_with("lib")) name.remove_prefix(3);
    if (!name.starts_with("python3.")) return std::nullopt;
    name.remove_prefix(8);
    int minor = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), minor);
    if (ec != std::errc() || end == name.data()) return std::nullopt;
    std::string_view rest(end, name.data() + name.size() - end);
    // python3.11, python3.11d, libpython3.11.so.1.0: nothing else after the number
    if (!rest.empty() && !rest.starts_with(".so") && rest != "d" && !rest.starts_with("d.so")) return std::nullopt;
    return minor;
}

const PythonLayout* python_runtime_layout(const Mapping& m) {
    if (!m.executable || m.anonymous()) return nullptr;
    const auto minor = python_minor_from_path(m.path);
    return minor ? python_layout(*minor) : nullptr;
}

}  // namespace memtrack
