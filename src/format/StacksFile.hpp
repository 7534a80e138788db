#pragma once
// The stacks file, DIR/<root-pid>.MemtrackStacks.msgpack: every distinct call stack once, with
// its frames symbolized, so artifact events can name their stack by hash (docs/FORMATS.md).
//
// Its name must not contain "MemtrackArtifact": the benchmark runner reads every such file as
// an artifact.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/Result.hpp"

namespace memtrack {

// One symbolized frame. Every frame of a captured stack is a return address: `ip` is that
// address as captured, while function/file/line describe the call instruction just before it.
// One captured address becomes several frames when calls were inlined there: the inlined ones
// (inlined = true) come first, innermost first, then the function that really contains the code.
// The module of a Python frame (src/bpf/python.h): its function, file and line are the Python
// code's, its ip the slot BPF pushed.
inline constexpr const char* kPythonModule = "[python]";

struct Frame {
    uint64_t ip = 0;
    std::string module;    // the mapped file's path as the process saw it, or "[vdso]"; empty: unknown
    std::string build_id;  // lowercase hex of the module's GNU build-id; empty when it has none
    std::string function;  // demangled; empty when unknown (stripped module, garbage address)
    std::string file;      // source file; empty without line information
    uint32_t line = 0;     // 0 without line information
    bool inlined = false;

    bool operator==(const Frame&) const = default;
};

// Appends one stack to `out` as a MessagePack map: {"hash", "pid", "frames": [frame maps]},
// frames innermost first, every frame with all seven keys.
void encode_stack(uint64_t hash, int32_t pid, const std::vector<Frame>& frames, std::string& out);

// Streams the stacks file at `path`, calling `on_stack` for each stack in file order, and returns
// how many there were. A hash may occur more than once (the symbolizer may meet a stack again
// after its cache forgot it); every occurrence is delivered and readers let the later one win.
//
// Accepted: keys in any order, unknown keys ignored, frame keys other than `ip` missing (left at
// their defaults). Rejected: a non-map value, a missing hash/pid/frames/ip, a known key with the
// wrong type or range, a duplicate key.
//
// On a problem the stacks before it have already been delivered, and the Error's message() says
// where, in read_artifact's words:
//   "corrupt stack at decompressed offset N: <reason>"
//   "corrupt zstd stream at compressed offset N: <zstd's reason>"
//   "truncated stacks file: unfinished zstd frame at compressed offset N: file ends at byte M"
//   "empty stacks file (0 bytes)"
// and open/read failures carry their errno.
Result<uint64_t> read_stacks(const std::string& path,
                             const std::function<void(uint64_t hash, int32_t pid, std::vector<Frame>&&)>& on_stack);

}  // namespace memtrack
