// walk_record RAW OUT COMMENT: turns a raw capture (record_walk.py's, written by
// scripts/record-walk.sh) into a compact one for tests/replay/: builds each mapped object's unwind
// rows as memtrack does (build_cfi_table), walks the capture through the harness, and keeps only
// the stack words that walk depended on and the rows in force at its frames and gdb's. The compact
// capture is replayed before it is written and must give the same frames as the whole one.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "WalkCapture.hpp"
#include "unwind/CfiTable.hpp"
#include "walk_harness.h"

using namespace memtrack;
using namespace memtrack::replay;

namespace {

// The rows of `rows` (sorted) in force at each pc - 1 of `pcs` inside the object.
std::vector<mt_unwind_row> rows_at(const CapturedObject& o, const std::vector<uint64_t>& pcs) {
    std::vector<mt_unwind_row> out;
    for (uint64_t pc : pcs) {
        if (pc <= o.start || pc > o.end) continue;
        const uint64_t vaddr = pc - 1 - o.bias;
        auto it = std::upper_bound(o.rows.begin(), o.rows.end(), vaddr,
                                   [](uint64_t v, const mt_unwind_row& r) { return v < r.pc; });
        if (it == o.rows.begin()) continue;
        --it;
        if (std::none_of(out.begin(), out.end(), [&](const mt_unwind_row& r) { return r.pc == it->pc; }))
            out.push_back(*it);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pc < b.pc; });
    return out;
}

}  // namespace

int main(int argc, char** argv) try {
    if (argc != 4) {
        std::fprintf(stderr, "usage: walk_record RAW OUT COMMENT\n");
        return 2;
    }
    WalkCapture whole = read_capture(argv[1]);
    for (auto& o : whole.objects) {
        auto table = build_cfi_table(o.name);
        if (!table) {
            std::fprintf(stderr, "walk_record: %s: no unwind rows (%s)\n", o.name.c_str(), table.error().message().c_str());
            continue;
        }
        const auto bias = table->bias(o.start, o.offset);
        if (!bias) continue;
        o.bias = *bias;
        o.rows = std::move(table->rows);
    }
    mt_replay_reset();
    ReplayTables tables = load_capture(whole, 1, 1);
    const std::vector<uint64_t> frames = replay_walk(whole);
    const __u64* noted_words = nullptr;
    const uint32_t n_noted = mt_replay_noted(&noted_words);
    const uint64_t* noted = reinterpret_cast<const uint64_t*>(noted_words);
    std::vector<uint64_t> keep(noted, noted + n_noted);

    WalkCapture compact = whole;
    std::vector<uint64_t> pcs = frames;
    for (const auto& f : whole.gdb) pcs.push_back(f.pc);
    compact.objects.clear();
    for (const auto& o : whole.objects) {
        CapturedObject c = o;
        c.rows = rows_at(o, pcs);
        if (c.rows.empty()) continue;
        c.name = c.name.substr(c.name.rfind('/') + 1);
        compact.objects.push_back(std::move(c));
    }
    std::string text = format_capture(compact, keep, argv[3]);
    WalkCapture check = parse_capture(text);
    mt_replay_reset();
    ReplayTables check_tables = load_capture(check, 1, 1);
    if (replay_walk(check) != frames) {
        // The walk read words it did not note (a saved rbp no rule used): keep the words it spanned.
        keep.clear();
        const uint64_t top = *std::max_element(noted, noted + std::max(n_noted, 1u));
        for (uint64_t a = compact.sp & ~7ull; a <= top; a += 8) keep.push_back(a);
        text = format_capture(compact, keep, argv[3]);
        check = parse_capture(text);
        mt_replay_reset();
        check_tables = load_capture(check, 1, 1);
        if (replay_walk(check) != frames) throw std::runtime_error("the compact capture walks differently");
    }
    std::ofstream(argv[2]) << text;
    for (size_t i = 0; i < std::max(frames.size(), whole.gdb.size()); ++i)
        std::printf("%3zu  walk %-18s gdb %-18s %s\n", i, i < frames.size() ? fmt::format("{:#x}", frames[i]).c_str() : "-",
                    i < whole.gdb.size() ? fmt::format("{:#x}", whole.gdb[i].pc).c_str() : "-",
                    i < whole.gdb.size() ? whole.gdb[i].function.c_str() : "");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "walk_record: %s\n", e.what());
    return 1;
}
