#pragma once
// Where CPython 3.10-3.13 keep what a stack walk and a frame's name need: the BPF walk's offsets
// (bpf/python.h) and the code and string objects' fields, per minor version. The version is
// read from the runtime's file name (`python3.N`, `libpython3.N.so...`), the file that defines
// `_PyRuntime`.
#include <optional>
#include <string_view>

#include "bpf/python.h"

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
};

// The layout of CPython 3.`minor`; nullptr for a version memtrack does not walk.
const PythonLayout* python_layout(int minor);
// The minor version of a CPython runtime file named `path`; nullopt when the name is not one.
std::optional<int> python_minor_from_path(std::string_view path);

}  // namespace memtrack
