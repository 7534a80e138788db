#include "probes/LibbpfLog.hpp"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "core/Log.hpp"
#include "core/Result.hpp"
#include "probes/VerifierLog.hpp"

namespace memtrack {
namespace {

std::mutex g_libbpf_mu;
std::string g_libbpf_last;
std::string g_verifier_log;

int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
    // Sized to the message: a verifier log comes as one message of up to megabytes.
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, again);
    va_end(again);
    std::string line(n > 0 ? size_t(n) : 0, '\0');
    if (n > 0) std::vsnprintf(line.data(), line.size() + 1, format, args);
    while (!line.empty() && line.back() == '\n') line.pop_back();
    if (level != LIBBPF_DEBUG) {
        std::lock_guard lock(g_libbpf_mu);
        if (is_verifier_log(line)) g_verifier_log = line;
        else g_libbpf_last = line;
    }
    if (log::verbose() && level != LIBBPF_DEBUG) log::info("libbpf: {}", line);
    return 0;
}

std::string libbpf_last_message() {
    std::lock_guard lock(g_libbpf_mu);
    return g_libbpf_last;
}

}  // namespace

void capture_libbpf_log() { libbpf_set_print(libbpf_print); }

void fail_bpf(const std::string& what, int err) {
    std::string msg = fmt::format("BPF {} failed: {}", what, std::strerror(err < 0 ? -err : err));
    if (auto last = libbpf_last_message(); !last.empty()) msg += fmt::format(" (libbpf: {})", last);
    throw FatalError(msg);
}

void fail_bpf_load(int err) {
    std::optional<VerifierRefusal> refusal;
    {
        std::lock_guard lock(g_libbpf_mu);
        refusal = parse_verifier_log(g_verifier_log);
    }
    if (!refusal) fail_bpf("load", err);
    throw FatalError(fmt::format("BPF load failed: the kernel's verifier refused program '{}': {} (memtrack -v "
                                 "prints the whole log)",
                                 refusal->program, refusal->last_lines));
}

}  // namespace memtrack
