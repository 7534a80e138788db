// The root suite's main: doctest with its usual command line (e.g. -tc="libc*", -s).
//
// Every test case runs memtrack for real on a fixture of tests/progs and needs root for the BPF
// programs; without it the suite exits 77, which meson reports as SKIP, unless
// MEMTRACK_REQUIRE_BPF=1, which makes every case fail instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <csignal>
#include <cstdio>

#include "Harness.hpp"

namespace {
constexpr int kMesonSkip = 77;
}

int main(int argc, char** argv) {
    if (memtrack::roottest::root_suite_skipped()) {
        std::puts("SKIP: root suite needs root (CAP_BPF, CAP_PERFMON)");
        return kMesonSkip;
    }
    // A child dying while we write to it must be an error value, not the end of the suite.
    std::signal(SIGPIPE, SIG_IGN);
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    return context.run();
}
