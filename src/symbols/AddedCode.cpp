#include "symbols/AddedCode.hpp"

namespace memtrack {

void AddedCode::snapshot_started(int32_t pid) {
    std::lock_guard lock(mu_);
    since_snapshot_[pid].clear();
}

void AddedCode::added(int32_t pid, const std::vector<Mapping>& code) {
    std::lock_guard lock(mu_);
    auto it = since_snapshot_.find(pid);
    if (it != since_snapshot_.end()) it->second.insert(it->second.end(), code.begin(), code.end());
}

void AddedCode::reset(int32_t pid) {
    std::lock_guard lock(mu_);
    since_snapshot_.erase(pid);
}

std::optional<std::vector<Mapping>> AddedCode::take(int32_t pid) {
    std::lock_guard lock(mu_);
    auto it = since_snapshot_.find(pid);
    if (it == since_snapshot_.end() || it->second.empty()) return std::nullopt;
    std::vector<Mapping> out = std::move(it->second);
    it->second.clear();
    return out;
}

}  // namespace memtrack
