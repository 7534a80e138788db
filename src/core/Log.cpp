#include "core/Log.hpp"

#include <atomic>

namespace memtrack::log {
namespace {
std::atomic<bool> g_verbose{false};
}
void set_verbose(bool on) { g_verbose.store(on, std::memory_order_relaxed); }
bool verbose() { return g_verbose.load(std::memory_order_relaxed); }
}  // namespace memtrack::log
