#pragma once
// Leaks that are not the program's own (docs/REPORT.md, "Runtime-owned blocks and
// suppressions"): one-time blocks the C and C++ runtimes make and keep for the life of the
// process (libstdc++'s emergency exception pool, stdio's buffers, thread-local storage, the
// dynamic loader's link maps), and the user's suppressions. They are reported apart; the leak
// total leaves them out and says so.
#include <string>
#include <string_view>
#include <vector>

#include "core/Result.hpp"
#include "report/Analysis.hpp"

namespace memtrack::report {

// The runtime rule a stack matches, "" for none. Only the innermost frames that belong to the
// runtimes (libc, the loader, libstdc++, libgcc_s, libm, and allocator entry points) are looked
// at: a block the program's own code asked for is never the runtime's, whoever called that code.
std::string_view runtime_rule(const StackFrames& frames);

// A suppressions file: one `leak:PATTERN` per line; blank lines and lines starting with '#'
// are skipped. PATTERN is a glob (fnmatch(3): `*`, `?`, `[...]`) matched against the whole of
// each frame's function, source file and module path; a stack any of whose frames matches is
// suppressed. Anything else is an error naming the file and line.
Result<std::vector<std::string>> load_suppressions(const std::string& path);

// The first pattern a stack matches, or nullptr.
const std::string* suppressed_by(const StackFrames& frames, const std::vector<std::string>& patterns);

// Sets Site::owner and owner_rule, and moves the leaked blocks of runtime-owned and suppressed
// sites out of leaked_* into runtime_leaked_* and suppressed_leaked_*.
void classify_owners(Analysis& a, const std::vector<std::string>& suppressions);

// The sites whose leaked blocks are not counted as leaks (runtime-owned, suppressed), most
// bytes first (then by stack hash): what the printers list apart.
std::vector<const Site*> not_leak_sites(const Analysis& a);

// What the leak total leaves out, said beside it: "; not counted: 72704 B (71.0 KiB) in 1 block
// the runtimes keep{where}, 40 B in 1 block suppressed"; "" when nothing is left out. `where`
// says where they are listed (the text report's " (below)").
std::string leak_exclusions(const Analysis& a, std::string_view where);

}  // namespace memtrack::report
