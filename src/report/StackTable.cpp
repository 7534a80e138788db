#include "report/StackTable.hpp"

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

}  // namespace memtrack::report
