#include "report/StackTable.hpp"

#include <string_view>

namespace memtrack::report {

Result<StackTable> StackTable::load(const std::string& path) {
    StackTable table;
    auto read = read_stacks(path, [&](uint64_t hash, int32_t, std::vector<Frame>&& frames) {
        table.stacks_[hash] = std::move(frames);
    });
    if (!read) return read.error();
    return table;
}

const std::vector<Frame>* StackTable::find(uint64_t hash) const {
    auto it = stacks_.find(hash);
    return it == stacks_.end() ? nullptr : &it->second;
}

std::string stacks_path_for(const std::string& artifact) {
    constexpr std::string_view kArtifact = ".MemtrackArtifact.msgpack";
    if (!artifact.ends_with(kArtifact)) return {};
    return artifact.substr(0, artifact.size() - kArtifact.size()) + ".MemtrackStacks.msgpack";
}

}  // namespace memtrack::report
