// The BPF stack walks (src/bpf/cfi_walk.h, chain_cache.h, python_walk.h) replayed without root
// over captured stacks (tests/replay/README.md): each capture's frames are the ones gdb unwound
// from the same registers and stack (and a Python capture's Python frames the script's
// functions), and the kept-walk cache answers a changed stack word with the new frames.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "bpf/python.h"
#include "bpf/record.h"
#include "replay/WalkCapture.hpp"
#include "replay/walk_harness.h"

using namespace memtrack::replay;

namespace {

WalkCapture capture(const std::string& name) {
    const char* dir = std::getenv("WALK_CAPTURES");
    REQUIRE_MESSAGE(dir != nullptr, "WALK_CAPTURES names the captures' folder (replay/as_nobody.sh sets it)");
    return read_capture(std::string(dir) + "/" + name + ".walk");
}

std::vector<uint64_t> gdb_pcs(const WalkCapture& c, size_t n) {
    std::vector<uint64_t> pcs;
    for (size_t i = 0; i < n && i < c.gdb.size(); ++i) pcs.push_back(c.gdb[i].pc);
    return pcs;
}

// gdb's frames up to (not including) the first it could not name: past it, gdb is lost.
size_t named_frames(const WalkCapture& c) {
    size_t n = 0;
    while (n < c.gdb.size() && c.gdb[n].function != "??") ++n;
    return n;
}

std::vector<uint64_t> walk(const WalkCapture& c, ReplayTables& tables, uint32_t generation = 1) {
    tables = load_capture(c, 100, generation);
    return replay_walk(c);
}

}  // namespace

TEST_CASE("replay: walks of captured stacks give gdb's frames") {
    for (const char* name : {"c_nofp", "twin_x", "twin_y", "rust"}) {
        CAPTURE(name);
        const WalkCapture c = capture(name);
        mt_replay_reset();
        ReplayTables tables;
        const auto frames = walk(c, tables);
        CHECK(frames.size() >= 6);
        CHECK(frames == gdb_pcs(c, c.gdb.size()));
        CHECK(mt_replay_counter(MT_COUNTER_UNWIND_COMPLETE) == 1);
        CHECK(mt_replay_counter(MT_COUNTER_UNWIND_FP_FRAMES) == 0);
    }
}

TEST_CASE("replay: python3's native frames are gdb's, its Python frames the script's functions") {
    // The script: def f(n): return "x" * n; def g(): return [f(1 << 20)]; g()
    const WalkCapture c = capture("python3");
    REQUIRE(c.python.runtime != 0);
    mt_replay_reset();
    ReplayTables tables;
    for (int pass = 0; pass < 2; ++pass) {  // the second finds the thread state it kept
        CAPTURE(pass);
        const auto frames = walk(c, tables);
        REQUIRE(frames.size() == c.gdb.size() + 3);
        CHECK(std::vector<uint64_t>(frames.begin(), frames.begin() + long(c.gdb.size())) == gdb_pcs(c, c.gdb.size()));
        std::vector<std::string> names;
        for (size_t i = c.gdb.size(); i < frames.size(); ++i) {
            CHECK((frames[i] & MT_PY_FRAME) != 0);
            CHECK(((frames[i] >> MT_PY_INDEX_SHIFT) & MT_PY_INDEX_MASK) != MT_PY_INDEX_MASK);  // an instruction known
            CHECK(((frames[i] & MT_PY_ENTRY) != 0) == (i + 1 == frames.size()));  // one eval call ran all three
            const auto name = c.code_names.find(frames[i] & MT_PY_ADDR_MASK);
            names.push_back(name == c.code_names.end() ? "?" : name->second);
        }
        CHECK(names == std::vector<std::string>{"f", "g", "<module>"});
        // Reads: the thread state (found from _PyRuntime's interpreter and its thread list the
        // first time, 2 more), its cframe's current frame, and the three frames in one read (3.11
        // stacked them on the data stack, f's caller below it).
        CHECK(mt_replay_python_reads() == (pass == 0 ? 5u : 3u));
    }
}

TEST_CASE("replay: node's JIT frames are walked by frame pointer past where gdb stops") {
    const WalkCapture c = capture("node");
    mt_replay_reset();
    ReplayTables tables;
    const auto frames = walk(c, tables);
    const size_t named = named_frames(c);
    REQUIRE(named >= 10);  // node's C++ frames, then gdb loses its way in the interpreter's
    REQUIRE(frames.size() > named);
    CHECK(std::vector<uint64_t>(frames.begin(), frames.begin() + long(named)) == gdb_pcs(c, named));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_FP_FRAMES) > 0);
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_COMPLETE) == 1);
}

TEST_CASE("replay: a signal frame ends the walk at libc's sigreturn trampoline") {
    // The trampoline's CFA is a DWARF expression (unwind.h: MT_CFA_UNSUPPORTED): the walk gives
    // gdb's frames up to it, then stops, counted; gdb goes on into the interrupted code.
    const WalkCapture c = capture("signal");
    mt_replay_reset();
    ReplayTables tables;
    const auto frames = walk(c, tables);
    const auto trampoline = std::find_if(c.gdb.begin(), c.gdb.end(), [](const auto& f) { return f.function == "<signal>"; });
    REQUIRE(trampoline != c.gdb.end());
    CHECK(frames == gdb_pcs(c, size_t(trampoline - c.gdb.begin()) + 1));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_UNSUPPORTED) == 1);
}

TEST_CASE("replay: the twins, from the same registers with one stack word changed") {
    // cfi_twin_x and cfi_twin_y call cfi_twin_leaf from the same sp, so both captures start
    // with the same registers; their stacks differ in the return address into the twin.
    const WalkCapture x = capture("twin_x"), y = capture("twin_y");
    REQUIRE((x.pc == y.pc && x.sp == y.sp && x.bp == y.bp));
    REQUIRE(x.gdb[1].pc != y.gdb[1].pc);
    // One process: its rows are both captures' (each holds the rows its own walk needed).
    WalkCapture both = x;
    for (const auto& o : y.objects)
        for (auto& mine : both.objects)
            if (mine.start == o.start) {
                for (const auto& r : o.rows)
                    if (std::none_of(mine.rows.begin(), mine.rows.end(), [&](const auto& m) { return m.pc == r.pc; }))
                        mine.rows.push_back(r);
                std::sort(mine.rows.begin(), mine.rows.end(), [](const auto& a, const auto& b) { return a.pc < b.pc; });
            }
    WalkCapture on_y = both;
    on_y.words = y.words;
    REQUIRE((x.lo == y.lo && x.hi == y.hi));
    mt_replay_reset();
    ReplayTables tables = load_capture(both, 100, 7);

    // x walked, and kept; again, answered by the kept walk.
    CHECK(replay_walk(both) == gdb_pcs(x, x.gdb.size()));
    CHECK(replay_walk(both) == gdb_pcs(x, x.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_CHAINS_MATCHED) == 1);

    // y: the kept walk's word changed, so it does not answer; the new walk meets it in main
    // and takes the rest of its frames from it (a splice), giving y's frames.
    tables = load_capture(on_y, 100, 7);
    CHECK(replay_walk(on_y) == gdb_pcs(y, y.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_CHAINS_CHANGED) == 1);
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_SPLICED) == 1);
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_SPLICED_FRAMES) == y.gdb.size() - 2);

    // The spliced walk was not kept: x is answered by its kept walk again, and y spliced again.
    tables = load_capture(both, 100, 7);
    CHECK(replay_walk(both) == gdb_pcs(x, x.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_CHAINS_MATCHED) == 2);
    tables = load_capture(on_y, 100, 7);
    CHECK(replay_walk(on_y) == gdb_pcs(y, y.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_SPLICED) == 2);

    // Without a kept walk to splice into (a new description: kept walks of the old one do not
    // count), y is walked whole to the same frames.
    tables = load_capture(on_y, 100, 8);
    CHECK(replay_walk(on_y) == gdb_pcs(y, y.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_SPLICED) == 2);
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_COMPLETE) == 6);  // every walk above
}

TEST_CASE("replay: a pending uretprobe's trampoline in a return slot is read as the address it replaced") {
    // cfi_twin_x's return address into main replaced by a trampoline (an address no mapping
    // holds), as a uretprobe on cfi_twin_x would leave it; the thread's return instance names it.
    WalkCapture c = capture("twin_x");
    const uint64_t slot = 0x7fffffffe478, trampoline = 0x7fffffffe000;  // the slot twin_x's walk reads main's address from
    REQUIRE(c.words[(slot - c.lo) / 8] == c.gdb[2].pc);
    c.words[(slot - c.lo) / 8] = trampoline;
    const __u64 stack[] = {slot}, orig[] = {c.gdb[2].pc};
    mt_replay_reset();
    ReplayTables tables;
    tables = load_capture(c, 100, 1);
    CHECK(replay_walk(c) != gdb_pcs(c, c.gdb.size()));  // without the instance, the trampoline is a frame
    mt_replay_returns(stack, orig, 1);
    CHECK(replay_walk(c) == gdb_pcs(c, c.gdb.size()));
    CHECK(replay_walk(c) == gdb_pcs(c, c.gdb.size()));
    // Kept with the instance it started with: the second was the kept walk's answer.
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_CHAINS_MATCHED) == 1);
    // The instance gone (the probed function returned): the kept walk no longer answers.
    mt_replay_returns(stack, orig, 0);
    CHECK(replay_walk(c) != gdb_pcs(c, c.gdb.size()));
    CHECK(mt_replay_counter(MT_COUNTER_UNWIND_CHAINS_MATCHED) == 1);
}

TEST_CASE("replay: a capture file that is not one is refused by line") {
    CHECK_THROWS_WITH(parse_capture("registers 0x1 0x2\n"), doctest::Contains("line 1"));
    CHECK_THROWS_WITH(parse_capture("stack 0x1000 0x2000\nword 0x1001 0x1\n"), doctest::Contains("line 2"));
    CHECK_THROWS_WITH(parse_capture("bogus\n"), doctest::Contains("unknown 'bogus'"));
}
