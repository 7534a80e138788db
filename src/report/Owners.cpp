#include "report/Owners.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include <fmt/format.h>

#include "report/FrameNames.hpp"
#include "report/Units.hpp"

namespace memtrack::report {
namespace {

bool named(std::string_view f, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (f == n) return true;
    return false;
}

bool module_is(const Frame& f, std::string_view prefix) { return base_name(f.module).starts_with(prefix); }

bool runtime_module(const Frame& f) {
    for (std::string_view m : {"libc.so", "ld-linux", "ld64.so", "libstdc++.so", "libgcc_s.so", "libm.so", "libpthread.so", "libdl.so"})
        if (module_is(f, m)) return true;
    return false;
}

bool glob(const std::string& pattern, const std::string& text) {
    return !text.empty() && ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

}  // namespace

std::string_view runtime_rule(const StackFrames& frames) {
    size_t n = 0;
    while (n < frames.size() && (runtime_module(*frames[n]) || folded_by_default(*frames[n]))) ++n;
    bool libstdcxx = false, loader_init = false, loader = false;
    for (size_t i = 0; i < n; ++i) {
        const Frame& f = *frames[i];
        if (named(f.function, {"_IO_file_doallocate", "__GI__IO_file_doallocate", "_IO_doallocbuf", "__GI__IO_doallocbuf"}))
            return "stdio buffer";
        if (named(f.function, {"_dl_allocate_tls", "_dl_allocate_tls_storage", "allocate_dtv", "__tls_get_addr",
                               "_dl_resize_dtv", "update_get_addr", "tls_get_addr_tail", "_dl_update_slotinfo"}))
            return "thread-local storage";
        if (module_is(f, "libstdc++.so")) {
            if (f.function.find("pool::pool") != std::string::npos) return "libstdc++ emergency exception pool";
            libstdcxx = true;
        }
        if (named(f.function, {"_dl_init", "call_init"})) loader_init = true;
        if (module_is(f, "ld-linux") || module_is(f, "ld64.so")) loader = true;
    }
    // libstdc++ without its debug info: its start-up, run by the loader, makes the pool.
    if (libstdcxx && loader_init) return "libstdc++ emergency exception pool";
    if (loader) return "dynamic loader";
    return {};
}

Result<std::vector<std::string>> load_suppressions(const std::string& path) {
    std::ifstream in(path);
    if (!in) return Error{"open", path, errno, "cannot read the suppressions file"};
    std::vector<std::string> patterns;
    std::string line;
    for (size_t number = 1; std::getline(in, line); ++number) {
        const size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#') continue;
        const size_t end = line.find_last_not_of(" \t\r");
        const std::string_view rule = std::string_view(line).substr(start, end - start + 1);
        if (!rule.starts_with("leak:") || rule.size() == 5)
            return Error{"read", path, 0, fmt::format("line {}: '{}' is not leak:PATTERN", number, rule)};
        patterns.emplace_back(rule.substr(5));
    }
    if (in.bad()) return Error{"read", path, errno, "cannot read the suppressions file"};
    return patterns;
}

const std::string* suppressed_by(const StackFrames& frames, const std::vector<std::string>& patterns) {
    for (const std::string& p : patterns)
        for (const Frame* f : frames)
            if (glob(p, f->function) || glob(p, f->file) || glob(p, f->module)) return &p;
    return nullptr;
}

void classify_owners(Analysis& a, const std::vector<std::string>& suppressions) {
    for (Site& s : a.sites) {
        if (!s.frames || s.live_blocks == 0) continue;
        if (const std::string_view rule = runtime_rule(*s.frames); !rule.empty()) {
            s.owner = Site::Owner::Runtime;
            s.owner_rule = rule;
        } else if (const std::string* p = suppressed_by(*s.frames, suppressions)) {
            s.owner = Site::Owner::Suppressed;
            s.owner_rule = *p;
        } else {
            continue;
        }
        // What the leak total counted of the site: with a timeline, the blocks live at their
        // process's exit; without, every block live at the end.
        const uint64_t bytes = a.has_timeline ? s.exited_bytes : s.live_bytes;
        const uint64_t blocks = a.has_timeline ? s.exited_blocks : s.live_blocks;
        a.leaked_bytes -= bytes;
        a.leaked_blocks -= blocks;
        const bool runtime = s.owner == Site::Owner::Runtime;
        (runtime ? a.runtime_leaked_bytes : a.suppressed_leaked_bytes) += bytes;
        (runtime ? a.runtime_leaked_blocks : a.suppressed_leaked_blocks) += blocks;
    }
}

std::vector<const Site*> not_leak_sites(const Analysis& a) {
    std::vector<const Site*> sites;
    for (const Site& s : a.sites)
        if (s.owner != Site::Owner::Program && s.live_blocks) sites.push_back(&s);
    std::sort(sites.begin(), sites.end(), [](const Site* x, const Site* y) {
        return x->live_bytes != y->live_bytes ? x->live_bytes > y->live_bytes : x->hash < y->hash;
    });
    return sites;
}

std::string leak_exclusions(const Analysis& a, std::string_view where) {
    std::string out;
    if (a.runtime_leaked_blocks)
        out += fmt::format("; not counted: {} in {} the runtimes keep{}", bytes_and_human(a.runtime_leaked_bytes),
                           blocks(a.runtime_leaked_blocks), where);
    if (a.suppressed_leaked_blocks)
        out += fmt::format("{} {} in {} suppressed", out.empty() ? "; not counted:" : ",",
                           bytes_and_human(a.suppressed_leaked_bytes), blocks(a.suppressed_leaked_blocks));
    return out;
}

}  // namespace memtrack::report
