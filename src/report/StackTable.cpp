#include "report/StackTable.hpp"

#include <algorithm>

#include <boost/container_hash/hash.hpp>
#include <fmt/format.h>

namespace memtrack::report {

size_t StackTable::FrameHash::operator()(const Frame* f) const {
    size_t h = 0;
    boost::hash_combine(h, f->ip);
    boost::hash_combine(h, f->module);
    boost::hash_combine(h, f->build_id);
    boost::hash_combine(h, f->function);
    boost::hash_combine(h, f->file);
    boost::hash_combine(h, f->line);
    boost::hash_combine(h, f->inlined);
    return h;
}

// What site_key used to print per frame: function, file, line, module, inlining, and the
// address only for a frame without a function.
size_t StackTable::SymbolHash::operator()(const Frame* f) const {
    size_t h = 0;
    boost::hash_combine(h, f->function);
    boost::hash_combine(h, f->file);
    boost::hash_combine(h, f->line);
    boost::hash_combine(h, f->module);
    boost::hash_combine(h, f->inlined);
    boost::hash_combine(h, f->function.empty() ? f->ip : 0);
    return h;
}

bool StackTable::SymbolEq::operator()(const Frame* a, const Frame* b) const {
    return a->function == b->function && a->file == b->file && a->line == b->line && a->module == b->module &&
           a->inlined == b->inlined && (a->function.empty() ? a->ip : 0) == (b->function.empty() ? b->ip : 0);
}

size_t StackTable::IdsHash::operator()(const std::vector<uint32_t>* s) const { return boost::hash_range(s->begin(), s->end()); }

size_t StackTable::SequenceHash::operator()(const StackFrames* s) const {
    // Frames are interned: a frame's address is its identity.
    return boost::hash_range(s->begin(), s->end());
}

std::string StackTable::add(uint64_t hash, const std::vector<Frame>& frames) {
    StackFrames seq;
    seq.reserve(frames.size());
    for (const Frame& f : frames) {
        auto it = frame_index_.find(&f);
        if (it == frame_index_.end()) {
            frames_.push_back(f);
            it = frame_index_.emplace(&frames_.back(), true).first;
            auto sym = symbol_index_.try_emplace(it->first, uint32_t(symbol_index_.size())).first;
            symbol_of_.emplace(it->first, sym->second);
        }
        seq.push_back(it->first);
    }
    auto it = sequence_index_.find(&seq);
    if (it == sequence_index_.end()) {
        if (frame_refs_ + seq.size() > kMaxFrameRefs)
            return fmt::format("more than {} frames in distinct stacks; not holding them", kMaxFrameRefs);
        std::vector<uint32_t> ids;
        ids.reserve(seq.size());
        for (const Frame* f : seq) ids.push_back(symbol_of_.at(f));
        auto known = symbolic_index_.find(&ids);
        if (known == symbolic_index_.end()) {
            frame_refs_ += ids.size() / 2;  // 4 bytes each: half a pointer
            symbolic_sequences_.push_back(std::move(ids));
            known = symbolic_index_.emplace(&symbolic_sequences_.back(), uint32_t(symbolic_index_.size())).first;
        }
        frame_refs_ += seq.size();
        sequences_.push_back(std::move(seq));
        it = sequence_index_.emplace(&sequences_.back(), true).first;
        symbolic_.emplace(it->first, known->second);
    }
    by_hash_[hash] = it->first;
    return {};
}

std::vector<Frame> python_only(std::vector<Frame> frames) {
    auto native = [](const Frame& f) { return f.module != kPythonModule; };
    if (std::all_of(frames.begin(), frames.end(), native)) return frames;
    frames.erase(std::remove_if(frames.begin(), frames.end(), native), frames.end());
    return frames;
}

Result<StackTable> StackTable::load(const std::string& path, bool python_only) {
    StackTable table;
    std::string refused;
    auto read = read_stacks(path, [&](uint64_t hash, int32_t, std::vector<Frame>&& frames) {
        if (!refused.empty()) return;
        refused = table.add(hash, python_only ? report::python_only(std::move(frames)) : frames);
    });
    if (!read) return read.error();
    if (!refused.empty()) return Error{"read", path, 0, refused};
    return table;
}

const StackFrames* StackTable::find(uint64_t hash) const {
    auto it = by_hash_.find(hash);
    return it == by_hash_.end() ? nullptr : it->second;
}

}  // namespace memtrack::report
