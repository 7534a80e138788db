#pragma once
// The root suite's harness: runs memtrack and the fixtures as child processes, reads back what
// memtrack wrote (`memtrack dump` as JSON lines, the --stats file) and checks it against the
// format's rules. Test cases (test_*.cpp) only say what each fixture must have produced.
//
// Where things come from (set by tests/root/meson.build):
//   MEMTRACK_BIN   the memtrack executable under test
//   FIXTURE_DIR    the directory holding the tests/progs fixtures
// Other environment:
//   MEMTRACK_REQUIRE_BPF=1  fail instead of skipping when not root
//   MEMTRACK_KEEP_TMP=1     keep each test's temporary directory (its path is printed)
//   MEMTRACK_TIME_FACTOR=N  multiplies run()'s hang bound, and the bounds and delays of the tests
//                           that use time_factor(), for a memtrack built with sanitizers
//                           (scripts/test.sh sets 3 then) or a slow guest (scripts/kernels.sh,
//                           10); no assertion is scaled by it
#include <chrono>
#include <cstdint>
#include <optional>
#include <spawn.h>

#include <string>
#include <vector>

#include "../common/TempDir.hpp"

namespace memtrack::roottest {

// ---- environment ----

// True when the whole suite is skipped: not root, and MEMTRACK_REQUIRE_BPF=1 not set. test_main
// then exits 77 (meson's SKIP) before any case runs.
bool root_suite_skipped();
// Fails the current case when it cannot run (not root, or the meson environment missing).
void root_suite_check();

// Every root test case starts with this.
#define ROOT_SUITE_GUARD() ::memtrack::roottest::root_suite_check()

std::string memtrack_bin();                       // $MEMTRACK_BIN, must be set
int time_factor();                                // $MEMTRACK_TIME_FACTOR, at least 1
std::string fixture(const std::string& name);     // $FIXTURE_DIR/name, must exist
// Whether memtrack gives each tracked process probes of its own on this kernel: `memtrack doctor`
// found bpf_send_signal_task (asked once). Without it the probes are shared, and a new process
// is never held for its own.
bool kernel_has_per_process_probes();

// ---- running processes ----

struct RunResult {
    int status = -1;         // exit code, or 128 + N when killed by signal N
    bool signaled = false;   // killed by a signal (status is then 128 + signal)
    bool timed_out = false;  // the harness had to kill it
    bool strays = false;     // descendants still held its stdout/stderr after it exited
    std::string out;
    std::string err;
    std::string hang_report;  // when timed out: the state of each process in its group


    // "exit 3" / "killed by signal 15" and the stderr, for failure messages.
    std::string describe() const;
};

// Runs argv[0] (PATH lookup when it has no slash) with stdin from /dev/null, stdout and stderr
// captured, no other fd open, default signal dispositions and an empty signal mask, in its own
// process group.
// Always reaps the child by its pid before returning. Past the timeout, or when descendants
// outlive it holding the pipes, the whole process group is SIGKILLed (after noting in
// hang_report what each of its processes was doing). The fixtures run in well under a second
// and a tracked run in a few: a minute means something is stuck.
RunResult run(const std::vector<std::string>& argv,
              std::chrono::seconds timeout = std::chrono::seconds(60));

// ---- files ----

using memtrack::testsupport::TempDir;  // tests/common/TempDir.hpp

// posix_spawn's attribute and file-action objects, destroyed on every path.
struct SpawnSetup {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    SpawnSetup();
    ~SpawnSetup();
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// Throws "what: strerror(rc)" unless rc (a posix_spawn* result) is 0.
void check_spawn(int rc, const char* what);

// Makes a posix_spawn'ed command start as from a shell: no signal blocked, every signal at its
// default disposition; sets those flags plus `extra_flags`. Returns 0 or the first error number.
int spawn_default_signals(posix_spawnattr_t& attr, short extra_flags);

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);

// Names (not paths) in `dir` whose name contains "MemtrackArtifact", sorted.
std::vector<std::string> artifact_names(const std::string& dir);

// True when `s` is exactly one non-empty line (a trailing newline allowed).
bool is_one_line(const std::string& s);

// ---- memtrack track ----

struct Stats {
    uint64_t records = 0;
    uint64_t bytes = 0;
    uint64_t dropped = 0;
    double duration_s = 0;
    std::string raw;
};

struct TrackResult {
    RunResult run;
    std::string out_dir;      // what -o named
    std::string artifact;     // its single <root-pid>.MemtrackArtifact.msgpack
    int root_pid = 0;         // from the artifact's name
    Stats stats;              // the --stats file
    uint64_t t_begin = 0;     // CLOCK_MONOTONIC ns just before starting memtrack
    uint64_t t_end = 0;       // ... and just after it was reaped
};

// `memtrack track -o DIR/out --stats DIR/stats.json [extra...] -- command...`.
// Throws (failing the test with the reason) unless memtrack ended by itself, the output
// directory holds exactly one artifact with a well-formed name, and the stats file parses.
// The exit status is left to the caller.
TrackResult track(const TempDir& dir, const std::vector<std::string>& command,
                  const std::vector<std::string>& extra = {});

// Same, with memtrack started by `wrapper` (e.g. unshare's arguments, ending in its command
// position): `wrapper... memtrack track -o ... [extra...] -- command...`.
TrackResult track_wrapped(const TempDir& dir, const std::vector<std::string>& wrapper,
                          const std::vector<std::string>& command, const std::vector<std::string>& extra = {});

// Same, with `args` placed verbatim after the -o/--stats options (no "--" added): for the
// single-string form `memtrack track -o DIR "prog arg"`.
TrackResult track_args(const TempDir& dir, const std::vector<std::string>& args);

// `memtrack track -o DIR/out [args...]` with nothing checked: for the error paths.
RunResult track_raw(const TempDir& dir, const std::vector<std::string>& args);

Stats parse_stats(const std::string& json_text);
// A non-negative integer field of the --stats JSON (s.raw); throws when missing or not one.
uint64_t stats_u64(const Stats& s, const char* key);
// A number of the --stats JSON (s.raw); throws when missing or not one.
double stats_double(const Stats& s, const char* key);

// ---- memtrack dump ----

struct Event {
    size_t line = 0;  // 1-based line in the dump output (the artifact's order)
    int pid = 0;
    int tid = 0;
    uint64_t timestamp = 0;
    uint64_t addr = 0;
    std::string type;
    std::optional<uint64_t> old_addr;
    std::optional<uint64_t> size;
    std::optional<uint64_t> stack_hash;

    std::string describe() const;  // one line, for failure messages
};

// Parses one line of `memtrack dump`, enforcing the keys each kind must and must not carry.
// Throws std::runtime_error saying what is wrong.
Event parse_event(const std::string& line, size_t line_no);

// Runs `memtrack dump artifact`; throws unless it exits 0 and every line parses.
std::vector<Event> dump(const std::string& artifact);

uint64_t monotonic_ns();

}  // namespace memtrack::roottest
