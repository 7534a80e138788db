#pragma once
// Names of the Python frames a stack carries (bpf/python.h): a code object's qualified name,
// file and the line of an instruction, read from the process's memory (process_vm_readv) with
// the layout of the CPython version it maps (PythonLayout).
//
// Read while the process is held at the stack that names the code object (Symbolizer::
// read_new_maps): once it runs on, the object may be freed (a module's body, an exec'd string)
// and another one made at its address, so a frame is named once, then, and never read again.
// Cached by (pid, code object address): each lookup reads the object's header again (one read)
// and uses the cache only when its type and the name, file and line-table pointers are the ones
// cached; a new object is accepted only when its type is named "code".
//
// What it read is also entered in BPF's python_codes map (bpf/python.h), with those fields: a
// new stack whose code objects all still hold them is not held (MT_STACK_PY_KNOWN), and its
// frames are named from the cache, without reading the objects again (they may be gone by then).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "format/StacksFile.hpp"  // Frame
#include "symbols/PythonLayout.hpp"
#include "symbols/ProcessMaps.hpp"

namespace memtrack {

inline constexpr const char* kPythonUnnamed = "?";  // no Python identifier is "?"

// The line of code unit `index` in a line table: 3.10's co_linetable (pairs of byte-offset and
// line deltas) when `minor` is 10, PEP 657's location table (3.11+) otherwise. 0 when it has none.
uint32_t python_line(int minor, const std::string& table, int32_t first_line, uint64_t index);

class PythonCode {
public:
    // The frame of Python slot `slot` of a stack of maps.pid(). Never empty-handed: a frame that
    // cannot be read keeps its module and ip, with function "?".
    // The process's CPython version comes from the mappings last noted for it (note_maps).
    // `known` (the stack's MT_STACK_PY_KNOWN): BPF found the object as cached when it took the
    // stack; the cache names it, unread. Thread-safe.
    Frame resolve(int pid, uint64_t slot, bool known = false);
    // The python_codes map (bpf/python.h) every code object read is entered in; -1: none.
    void share_reads(int codes_fd) { codes_fd_ = codes_fd; }
    // The frame of a slot that was not (or could not be) read, and whether a frame is named.
    static Frame unnamed(uint64_t slot);
    static bool named(const Frame& f) { return f.function != kPythonUnnamed; }
    // pid's mappings (a new image, new code): which CPython layout its frames have. With
    // `added_only` (what a dlopen added, AddedCode) a layout found is noted, none found changes
    // nothing: the interpreter was mapped before.
    void note_maps(const ProcessMaps& maps, bool added_only = false);
    // The layout a runtime file (dev, inode) publishes itself (3.13+'s _Py_DebugOffsets, read by
    // PythonProcs): its code-object fields name the frames of every process that maps the
    // file from then on, in place of the table's (python_layout).
    void publish(uint64_t dev, uint64_t inode, const PythonLayout& layout);

private:
    struct Code {
        uint64_t type = 0, filename = 0, name = 0, linetable = 0;
        int32_t first_line = 0;
        std::string function, file, table;
        bool same_object(const Code& o) const {
            return type == o.type && filename == o.filename && name == o.name && linetable == o.linetable &&
                   first_line == o.first_line;
        }
    };
    // Enters what was read of pid's code object at addr in codes_fd_.
    void share(int pid, uint64_t addr, const Code& code) const;
    std::mutex mu_;
    int codes_fd_ = -1;
    std::map<std::pair<int, uint64_t>, Code> cache_;
    // The layout of the CPython runtime `maps` map: the file's published one, else the table's.
    const PythonLayout* layout_of(const ProcessMaps& maps) const;
    std::map<int, const PythonLayout*> layouts_;  // nullptr: no CPython runtime mapped
    // By runtime file (dev, inode); never erased (layouts_ points into it).
    std::map<std::pair<uint64_t, uint64_t>, PythonLayout> published_;
};

}  // namespace memtrack
