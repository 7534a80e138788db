#pragma once
// Every distinct stack of a stacks file, by hash: what report sites and `dump --resolve` show as
// their frames.
//
// Memory follows what the stacks hold, not how often the file repeats it: each distinct frame is
// kept once (frames_), each distinct sequence of frames once, as pointers to those frames, and a
// hash costs one slot pointing at its sequence. 200000 stacks of 127 identical frames are one
// sequence, not 25 M Frame copies (docs/BENCHMARKS.md, "Stacks file readers"). Past kMaxFrameRefs
// pointers in distinct sequences the file is refused with one line instead of exhausting memory.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "core/Result.hpp"
#include "format/StacksFile.hpp"

namespace memtrack::report {

// A stack's frames, innermost first; each points into its StackTable, which outlives it.
using StackFrames = std::vector<const Frame*>;

// `report --python-only`: a stack with Python frames (module kPythonModule) keeps only those,
// the native code above, between and below them (the interpreter's, extensions') folded away;
// a stack without any is kept whole, so that no allocation loses its site.
std::vector<Frame> python_only(std::vector<Frame> frames);

class StackTable {
public:
    // Reads `path`; a hash written twice keeps the later stack, as docs/FORMATS.md says. With
    // `python_only`, each stack is what python_only() keeps of it.
    static Result<StackTable> load(const std::string& path, bool python_only = false);
    // An empty table, for a report without a stacks file.
    StackTable() = default;
    StackTable(StackTable&&) = default;
    StackTable& operator=(StackTable&&) = default;

    // The frames of `hash`, innermost first; nullptr when the file does not have it.
    const StackFrames* find(uint64_t hash) const;
    size_t size() const { return by_hash_.size(); }
    // Stacks whose frames all name the same function, file, line, module and inlining (frames
    // without a function: the same address) have one symbolic id: one report site (Sites.hpp).
    uint32_t symbolic_id(const StackFrames* frames) const { return symbolic_.at(frames); }
    // Distinct frames and distinct sequences held, for tests and the bound above.
    size_t distinct_frames() const { return frames_.size(); }
    size_t distinct_stacks() const { return sequences_.size(); }

    // For tests and generated inputs; "" when kept, else why not (the bound).
    std::string add(uint64_t hash, const std::vector<Frame>& frames);

    // 2^27 pointers (1 GiB) in distinct sequences: far above any real recording (a large one
    // holds tens of thousands of stacks of tens of frames).
    static constexpr size_t kMaxFrameRefs = size_t(1) << 27;

private:
    struct FrameHash {
        size_t operator()(const Frame* f) const;
    };
    struct FrameEq {
        bool operator()(const Frame* a, const Frame* b) const { return *a == *b; }
    };
    // A frame as a site tells frames apart (symbolic_id).
    struct SymbolHash {
        size_t operator()(const Frame* f) const;
    };
    struct SymbolEq {
        bool operator()(const Frame* a, const Frame* b) const;
    };
    struct IdsHash {
        size_t operator()(const std::vector<uint32_t>* s) const;
    };
    struct IdsEq {
        bool operator()(const std::vector<uint32_t>* a, const std::vector<uint32_t>* b) const { return *a == *b; }
    };
    struct SequenceHash {
        size_t operator()(const StackFrames* s) const;
    };
    struct SequenceEq {
        bool operator()(const StackFrames* a, const StackFrames* b) const { return *a == *b; }
    };

    std::deque<Frame> frames_;                                         // stable addresses
    boost::unordered_flat_map<const Frame*, bool, FrameHash, FrameEq> frame_index_;  // set of frames_
    std::deque<StackFrames> sequences_;                                // stable addresses
    boost::unordered_flat_map<const StackFrames*, bool, SequenceHash, SequenceEq> sequence_index_;
    boost::unordered_flat_map<uint64_t, const StackFrames*> by_hash_;
    // Symbolic ids: of each distinct frame's symbol, and of each sequence of them.
    boost::unordered_flat_map<const Frame*, uint32_t, SymbolHash, SymbolEq> symbol_index_;
    boost::unordered_flat_map<const Frame*, uint32_t> symbol_of_;
    std::deque<std::vector<uint32_t>> symbolic_sequences_;
    boost::unordered_flat_map<const std::vector<uint32_t>*, uint32_t, IdsHash, IdsEq> symbolic_index_;
    boost::unordered_flat_map<const StackFrames*, uint32_t> symbolic_;
    size_t frame_refs_ = 0;  // sum of sequences_' sizes
};

}  // namespace memtrack::report
