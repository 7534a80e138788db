#pragma once
// Every distinct stack of a stacks file, by hash: what report sites show as their frames.
// Memory is the stacks file's decompressed size, whatever the artifact's.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/Result.hpp"
#include "format/StacksFile.hpp"

namespace memtrack::report {

class StackTable {
public:
    // Reads `path`; a hash written twice keeps the later stack, as docs/FORMATS.md says.
    static Result<StackTable> load(const std::string& path);
    // An empty table, for a report without a stacks file.
    StackTable() = default;

    // The frames of `hash`, innermost first; nullptr when the file does not have it.
    const std::vector<Frame>* find(uint64_t hash) const;
    size_t size() const { return stacks_.size(); }

    // For tests and generated inputs.
    void add(uint64_t hash, std::vector<Frame> frames) { stacks_[hash] = std::move(frames); }

private:
    std::unordered_map<uint64_t, std::vector<Frame>> stacks_;
};

}  // namespace memtrack::report
