#pragma once
// How a stack is shown to people (docs/REPORT.md, "Folding"): the frames nobody reads are left
// out and counted, runs of unresolved frames become one line, names and paths are shortened.
//
// Folded by default: process and thread start-up (`_start`, `__libc_start_main`, `start_thread`,
// `clone3`, ...), the allocator's entry points (`malloc`, `operator new`, CPython's
// `PyObject_Malloc`, ...) and the standard library's allocation plumbing (`std::allocator`,
// `allocator_traits`, `_Vector_base`, `_M_allocate`, `_M_create`, ...). --keep-frames keeps every
// frame (no default set, no runs); --hide-frames REGEX folds frames whose function, file or
// module matches as well. A stack is never folded to nothing: when every frame would go, its
// innermost stays.
//
// Every view that names functions (text, folded, --by function, the call trees, --diff's
// matching, html) folds a site's stack when it reads it, through the site's FrameFolder
// (Site::folder, shown_stack in FrameNames.hpp); machine formats that carry frames in full
// (json's "frames", pprof's locations) keep the raw ones.
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/StacksFile.hpp"
#include "report/StackTable.hpp"

namespace memtrack::report {

struct FoldOptions {
    bool keep_frames = false;         // --keep-frames: no default set, no runs of unresolved frames
    std::optional<std::regex> hide;   // --hide-frames REGEX (ECMAScript, searched anywhere)
    bool full_names = false;          // --full-names: template arguments kept
};

// One line of a shown stack. Its texts point into the FrameFolder, which holds them once per
// distinct frame (a copy per frame of every stack was 50 MiB more on the benchmark's 20000
// stacks); and into the StackTable for `module`. Shown stacks are made when read and not kept:
// keeping every site's was 20 MiB of a folded report on the benchmark (docs/BENCHMARKS.md,
// "Report"), and a printer reads each site's stack once or a few times.
struct ShownFrame {
    std::string_view name;    // the function, template arguments elided; "[cc1]" for unresolved frames
    std::string_view file;    // build-path prefix trimmed; empty without line information
    uint32_t line = 0;
    std::string_view module;  // the module's path, as recorded
    bool inlined = false;
    uint32_t run = 0;         // unresolved frames of `module` this line stands for; 0: a resolved frame
};

struct ShownStack {
    std::vector<ShownFrame> frames;  // innermost first; not empty
    uint32_t folded = 0;             // frames left out (default set and --hide-frames)
};

// "[cc1] x12" for a run of 12 unresolved frames, else the name.
std::string shown_name_with_run(const ShownFrame& f);

// `std::vector<int, std::allocator<int> >::push_back(int const&)` ->
// `std::vector<…>::push_back(int const&)`: every outermost <...> emptied, operator<, <<, <=>,
// -> and >> kept. A name whose brackets do not balance is returned whole.
std::string elide_templates(std::string_view name);
// Build-machine prefixes off a source path: leading "./" and "../" (glibc's
// `../sysdeps/nptl/x.c`), Debian's `/build/<package-version>/`, Fedora's
// `/builddir/build/BUILD/<package-version>/`, pyenv's `/tmp/python-build.<stamp>/Python-<version>/`.
std::string trim_build_path(std::string_view file);
// The default fold set on one frame (by its function; start-up, allocator, std allocation).
bool folded_by_default(const Frame& f);

class FrameFolder {
public:
    explicit FrameFolder(FoldOptions opt) : opt_(std::move(opt)) {}

    // The stack as shown, into `out` (cleared first; its texts live as long as the folder).
    void fold_into(const StackFrames& frames, ShownStack& out) const;

private:
    struct FrameView {
        bool fold = false;
        std::string name, file;  // name: "[module]" or "[unknown]" for an unresolved frame
    };
    const FrameView& view(const Frame* f) const;

    FoldOptions opt_;
    // Each distinct frame's view, made the first time a stack holding it is folded: a cache,
    // hence mutable (fold_sites fills it for every site's frames before any printer reads).
    // Node-based: ShownFrames point into it.
    mutable std::unordered_map<const Frame*, FrameView> frames_;
};

// Unresolved frames of one module in the shown stacks, and where its debug info can be had.
struct DebugHint {
    std::string module;
    uint64_t frames = 0;   // unresolved frames of it, over the distinct shown stacks
    std::string package;   // the Debian package holding it ("" when dpkg does not know it)
};

// Asks dpkg which package holds `path` (its real path as well); "" when none does or dpkg is
// absent. One `dpkg-query -S` per call: the report asks once per module with unresolved frames.
std::string debian_package_of(const std::string& path);

}  // namespace memtrack::report
