#pragma once
// Where CPython 3.10-3.13 keep what a stack walk and a frame's name need: the BPF walk's offsets
// (bpf/python.h) and the code and string objects' fields, per minor version. The version is
// read from the runtime's file name (`python3.N`, `libpython3.N.so...`), the file that defines
// `_PyRuntime`.
#include <cstddef>
#include <optional>
#include <string_view>

#include "bpf/python.h"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

struct PythonLayout {
    int minor = 0;
    mt_python_proc walk{};  // runtime left 0
    // PyCodeObject
    uint16_t co_filename = 0, co_name = 0, co_qualname = 0 /* 0: none (3.10) */, co_firstlineno = 0,
             co_linetable = 0;
    // PyASCIIObject's size (where an ASCII string's characters start), PyCompactUnicodeObject's
    // (a compact non-ASCII one's), and its utf8 pointer (utf8_length is the word before).
    uint16_t ascii_size = 0, compact_size = 0, compact_utf8 = 0;

    // The name a frame shows: the qualified one where code objects have it (3.11+).
    uint16_t co_shown_name() const { return co_qualname ? co_qualname : co_name; }

    // What the BPF walk is given (python_procs): `walk` with the code object's fields that tell
    // one object from another (mt_python_proc.code_*) taken from co_*, and the spans it reads
    // (mt_py_set_spans; every layout python_layout and python_layout_from_debug_offsets give
    // has them).
    mt_python_proc proc_value() const {
        mt_python_proc p = walk;
        p.code_filename = co_filename;
        p.code_name = co_shown_name();
        p.code_linetable = co_linetable;
        p.code_firstlineno = co_firstlineno;
        mt_py_set_spans(&p);
        return p;
    }
};

// The layout of CPython 3.`minor`; nullptr for a version memtrack does not walk.
const PythonLayout* python_layout(int minor);

// 3.13+ publishes its own offsets: _Py_DebugOffsets, the first member of _PyRuntime
// (Include/internal/pycore_runtime.h), statically initialized, so readable before the runtime
// starts. kPythonDebugOffsetsBytes of it, from its "xdebugpy" cookie to the code object's
// co_code_adaptive, are what the walk and the names need. Returns `table` with every field
// _Py_DebugOffsets gives replaced by its value; nullopt when `bytes` do not start with the
// cookie, name another minor version, give an offset past what a field can hold, or fields
// the walk cannot read in its spans (mt_py_set_spans).
inline constexpr size_t kPythonDebugOffsetsBytes = 352;
std::optional<PythonLayout> python_layout_from_debug_offsets(const PythonLayout& table, const unsigned char* bytes,
                                                             size_t size);
// CPython's perf trampoline (Python/asm_trampoline.S; 3.12+ copies it for every code object
// under -X perf) has no CFI: its unwind rule at the return address of its one call, from its
// code (`code`, from _Py_trampoline_func_start to _Py_trampoline_func_end), into t.
// Knows the forms the x86-64 file has had: an optional endbr64, then `sub $N, %rsp` (3.12,
// 3.13) or `push %rbp; mov %rsp, %rbp` (with frame pointers), then `call *%rcx`. False (t
// unchanged) for any other code: the walk then stops at a trampoline, as before.
bool python_trampoline_rule(const unsigned char* code, size_t size, mt_python_trampoline& t);
// The minor version of a CPython runtime file named `path`; nullopt when the name is not one.
std::optional<int> python_minor_from_path(std::string_view path);
// The layout of the CPython runtime `m` maps: an executable mapping of a file named as one
// (python_minor_from_path) of a version memtrack walks; nullptr for any other mapping.
const PythonLayout* python_runtime_layout(const Mapping& m);

}  // namespace memtrack
