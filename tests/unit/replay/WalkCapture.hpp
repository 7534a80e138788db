#pragma once
// A captured stack walk (tests/replay/README.md): the registers at an allocator's return, the
// process's stack words, the unwind rows of its objects, and the frames gdb unwound from the same
// registers. A raw capture (record_walk.py's) holds the whole stack and the mappings' paths; a
// compact one (walk_record's, stored under tests/replay/) only the words and rows the walk needs.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpf/python.h"
#include "bpf/unwind.h"

namespace memtrack::replay {

struct CapturedObject {
    uint64_t start = 0, end = 0, bias = 0;
    uint64_t offset = 0;               // raw: the mapping's file offset
    std::string name;                  // raw: the file's path; compact: its base name
    std::vector<mt_unwind_row> rows;   // compact: sorted by pc
};

struct GdbFrame {
    uint64_t pc = 0;
    std::string function;
};

// Memory besides the stack: a raw capture's writable mappings.
struct CapturedRegion {
    uint64_t lo = 0, hi = 0;
    std::vector<uint64_t> words;
};

struct WalkCapture {
    uint64_t pc = 0, sp = 0, bp = 0;
    uint64_t lo = 0, hi = 0;            // readable stack memory [lo, hi)
    std::vector<uint64_t> words;        // (hi - lo) / 8 words; unknown ones 0
    std::vector<CapturedRegion> regions;  // raw
    std::map<uint64_t, uint64_t> extra;   // compact: words outside the stack, readable one by one
    std::vector<CapturedObject> objects;
    std::vector<GdbFrame> gdb;
    // A CPython process: its description for python_walk.h (runtime 0: none), the thread's fs
    // base, and the names of the code objects its Python frames name (read when recorded).
    mt_python_proc python{};
    uint64_t fsbase = 0;
    std::map<uint64_t, std::string> code_names;
};

// Throws std::runtime_error naming the line on anything malformed.
WalkCapture parse_capture(const std::string& text);
// The capture in file `path`; throws std::runtime_error when it cannot be read or parsed.
WalkCapture read_capture(const std::string& path);

// The word at addr in c's memory (stack, regions, extra); false where none is.
bool captured_word(const WalkCapture& c, uint64_t addr, uint64_t& out);

// The compact text: of the stack's words only those in `keep` (addresses), every extra word,
// rows as in objects.
std::string format_capture(const WalkCapture& c, const std::vector<uint64_t>& keep, const std::string& comment);

// The capture's process and memory, given to the harness (after mt_replay_reset, or replacing the
// process's description and memory but keeping kept walks and counters). The harness reads the
// returned rows and c's words: both must outlive the replays.
struct ReplayTables {
    std::vector<mt_unwind_mapping> maps;
    std::vector<mt_unwind_row> rows;
    std::vector<uint64_t> extra_words;  // what the extra words' regions point at
};
[[nodiscard]] ReplayTables load_capture(const WalkCapture& c, uint32_t tgid, uint32_t generation);

// The frames the walk gives for the capture's registers (mt_replay_capture, thread 1).
std::vector<uint64_t> replay_walk(const WalkCapture& c, uint32_t max = 127);

}  // namespace memtrack::replay
