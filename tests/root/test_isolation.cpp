// Other processes: with per-process probes (the default where the kernel has them: memtrack doctor)
// the allocator uprobes are installed in the tracked processes only; a process memtrack does not
// track keeps its code untouched, so it pays no trap. Where the kernel has no per-process probes,
// the default is shared probes, which patch every process mapping the library: what that kernel
// promises (the README's Kernels table). Seen directly: the int3 (0xcc) a uprobe writes into a
// process's copy of the code.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>

#include "Harness.hpp"

using namespace memtrack::roottest;
using namespace std::chrono_literals;

namespace {

constexpr size_t kWindow = 16;  // bytes read at each function: its probe sits in the first few

struct Addresses {
    int pid = 0;
    uint64_t malloc_at = 0, free_at = 0;
};

// Waits (10 s at most, times time_factor(): a slow guest's memtrack starts in seconds) for
// code_bytes to write its address file.
Addresses read_addresses(const std::string& path) {
    for (int i = 0; i < 1000 * time_factor(); ++i) {
        std::ifstream in(path);
        Addresses a;
        if (in >> a.pid >> std::hex >> a.malloc_at >> a.free_at) return a;
        std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error("code_bytes never wrote " + path);
}

std::string code_at(int pid, uint64_t addr) {
    const std::string path = "/proc/" + std::to_string(pid) + "/mem";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
    std::string bytes(kWindow, '\0');
    const ssize_t n = ::pread(fd, bytes.data(), bytes.size(), off_t(addr));
    ::close(fd);
    if (n != ssize_t(kWindow)) throw std::runtime_error("read " + path + " failed");
    return bytes;
}

bool has_breakpoint(const std::string& code) { return code.find('\xcc') != std::string::npos; }

std::string hex_bytes(const std::string& code) {
    std::ostringstream s;
    for (unsigned char c : code) s << std::hex << (c < 16 ? "0" : "") << unsigned(c) << ' ';
    return s.str();
}

// An untracked code_bytes, started by the test itself; killed and reaped by pid at the end.
class Untracked {
public:
    Untracked(const std::string& addr_file, const std::string& stop_file) {
        std::string bin = fixture("code_bytes");
        std::string a = addr_file, s = stop_file;
        char* argv[] = {bin.data(), a.data(), s.data(), nullptr};
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        spawn_default_signals(attr, 0);
        const int rc = posix_spawn(&pid_, argv[0], nullptr, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) throw std::runtime_error(std::string("posix_spawn code_bytes: ") + std::strerror(rc));
    }
    ~Untracked() {
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
    }

private:
    pid_t pid_ = -1;
};

struct Seen {
    std::string untracked_before_malloc, untracked_before_free;
    std::string untracked_malloc, untracked_free;  // while memtrack runs
    std::string tracked_malloc, tracked_free;
    TrackResult result;
};

Seen look(const std::vector<std::string>& extra) {
    TempDir dir;
    Untracked other(dir / "untracked.addr", dir / "stop");
    const Addresses u = read_addresses(dir / "untracked.addr");
    Seen seen;
    seen.untracked_before_malloc = code_at(u.pid, u.malloc_at);
    seen.untracked_before_free = code_at(u.pid, u.free_at);

    std::thread runner([&] {
        try {
            seen.result = track(dir, {fixture("code_bytes"), dir / "tracked.addr", dir / "stop"}, extra);
        } catch (const std::exception& e) {
            seen.result.run.err = e.what();
        }
    });
    try {
        const Addresses t = read_addresses(dir / "tracked.addr");
        seen.tracked_malloc = code_at(t.pid, t.malloc_at);
        seen.tracked_free = code_at(t.pid, t.free_at);
        seen.untracked_malloc = code_at(u.pid, u.malloc_at);
        seen.untracked_free = code_at(u.pid, u.free_at);
    } catch (...) {
        write_file(dir / "stop", "");
        runner.join();
        throw;
    }
    write_file(dir / "stop", "");
    runner.join();
    return seen;
}

}  // namespace

TEST_CASE("isolation: the default probes leave an untracked process's malloc and free untouched where the kernel has per-process probes") {
    ROOT_SUITE_GUARD();
    const Seen s = look({});
    CHECK_MESSAGE(s.result.run.status == 0, "memtrack ", s.result.run.describe());
    INFO("tracked malloc: ", hex_bytes(s.tracked_malloc), " free: ", hex_bytes(s.tracked_free));
    INFO("untracked malloc: ", hex_bytes(s.untracked_malloc), " free: ", hex_bytes(s.untracked_free));
    CHECK_MESSAGE(!has_breakpoint(s.untracked_before_malloc), "libc's malloc holds 0xcc without any probe: test invalid");
    CHECK(has_breakpoint(s.tracked_malloc));
    CHECK(has_breakpoint(s.tracked_free));
    if (kernel_has_per_process_probes()) {
        CHECK(s.untracked_malloc == s.untracked_before_malloc);
        CHECK(s.untracked_free == s.untracked_before_free);
        CHECK(stats_u64(s.result.stats, "processes_probed") == 1);
    } else {
        // No per-process probes on this kernel: the default is the shared probes, which trap in
        // the untracked process too (its events are not recorded: the tracked-set check).
        MESSAGE("this kernel has no per-process probes: shared probes patch the untracked process too");
        CHECK(has_breakpoint(s.untracked_malloc));
        CHECK(has_breakpoint(s.untracked_free));
        CHECK(stats_u64(s.result.stats, "processes_probed") == 0);
    }
}

TEST_CASE("isolation: --system-wide-probes patches every process, which is what the default avoids") {
    ROOT_SUITE_GUARD();
    const Seen s = look({"--system-wide-probes"});
    CHECK_MESSAGE(s.result.run.status == 0, "memtrack ", s.result.run.describe());
    INFO("untracked malloc: ", hex_bytes(s.untracked_malloc), " free: ", hex_bytes(s.untracked_free));
    CHECK(has_breakpoint(s.tracked_malloc));
    CHECK(has_breakpoint(s.untracked_malloc));
    CHECK(has_breakpoint(s.untracked_free));
    CHECK(stats_u64(s.result.stats, "processes_probed") == 0);
}
