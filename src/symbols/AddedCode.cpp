#include "symbols/AddedCode.hpp"

namespace memtrack {

void AddedCode::publish(int32_t pid, std::vector<Mapping> code) {
    std::lock_guard lock(mutex_);
    Process& p = processes_[pid];
    p.code.insert(p.code.end(), std::make_move_iterator(code.begin()), std::make_move_iterator(code.end()));
}

void AddedCode::lose_track(int32_t pid) {
    std::lock_guard lock(mutex_);
    processes_[pid].followed = false;
}

std::optional<std::vector<Mapping>> AddedCode::take(int32_t pid) {
    std::lock_guard lock(mutex_);
    auto it = processes_.find(pid);
    // Never published: the first hook of this image read all mappings, or none ran yet.
    if (it == processes_.end() || !it->second.followed) return std::nullopt;
    Process& p = it->second;
    std::vector<Mapping> out(p.code.begin() + std::ptrdiff_t(p.taken), p.code.end());
    p.taken = p.code.size();
    return out;
}

void AddedCode::covered(int32_t pid) {
    std::lock_guard lock(mutex_);
    auto it = processes_.find(pid);
    if (it == processes_.end()) return;
    it->second = Process{};
}

std::optional<Mapping> AddedCode::find(int32_t pid, uint64_t addr) const {
    std::lock_guard lock(mutex_);
    auto it = processes_.find(pid);
    if (it == processes_.end()) return std::nullopt;
    const std::vector<Mapping>& code = it->second.code;
    // The newest first: an address reused after a dlclose belongs to what was mapped last.
    for (auto m = code.rbegin(); m != code.rend(); ++m)
        if (m->start <= addr && addr < m->end) return *m;
    return std::nullopt;
}

void AddedCode::forget(int32_t pid) {
    std::lock_guard lock(mutex_);
    processes_.erase(pid);
}

}  // namespace memtrack
