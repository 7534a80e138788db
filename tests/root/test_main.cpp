// The root suite's main: doctest with its usual command line (e.g. -tc="libc*", -s).
//
// Every test case runs memtrack for real on a fixture of tests/progs and needs root for the BPF
// programs; without it each case prints a SKIP line and passes, unless MEMTRACK_REQUIRE_BPF=1.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <csignal>

int main(int argc, char** argv) {
    // A child dying while we write to it must be an error value, not the end of the suite.
    std::signal(SIGPIPE, SIG_IGN);
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    return context.run();
}
