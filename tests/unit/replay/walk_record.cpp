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
#include "symbols/PythonLayout.hpp"
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
    const PythonLayout* layout = nullptr;
    if (whole.python.runtime) {
        // The layout of the CPython whose runtime file is mapped (python3.N, libpython3.N).
        for (const auto& o : whole.objects)
            if (const auto minor = python_minor_from_path(o.name)) layout = python_layout(*minor);
        if (!layout) throw std::runtime_error("_PyRuntime, but no CPython memtrack walks is mapped");
        const uint64_t runtime = whole.python.runtime;
        whole.python = layout->proc_value();
        whole.python.runtime = runtime;
    }
    mt_replay_reset();
    ReplayTables tables = load_capture(whole, 1, 1);
    std::vector<__u64> logged(1 << 16);
    mt_replay_log_reads(logged.data(), uint32_t(logged.size()));
    const std::vector<uint64_t> frames = replay_walk(whole);
    logged.resize(mt_replay_logged());
    const __u64* noted_words = nullptr;
    const uint32_t n_noted = mt_replay_noted(&noted_words);
    const uint64_t* noted = reinterpret_cast<const uint64_t*>(noted_words);
    std::vector<uint64_t> keep(noted, noted + n_noted);
    keep.insert(keep.end(), logged.begin(), logged.end());
    // The names of the code objects the Python frames name (read as symbols/PythonCode does not:
    // only for the test's eyes, ASCII names).
    if (layout) {
        for (uint64_t ip : frames) {
            if (!(ip & MT_PY_FRAME)) continue;
            const uint64_t code = ip & MT_PY_ADDR_MASK;
            uint64_t name = 0, length = 0;
            if (!captured_word(whole, code + layout->co_name, name) || !captured_word(whole, name + 16, length)) continue;
            std::string text;
            for (uint64_t i = 0; i < length && i < 256; i += 8) {
                uint64_t w = 0;
                if (!captured_word(whole, (name + layout->ascii_size + i) & ~7ull, w)) break;
                for (int b = 0; b < 8; ++b) text += char(w >> (8 * b));
            }
            whole.code_names[code] = text.substr(0, std::min<uint64_t>(length, text.size()));
        }
    }

    WalkCapture compact = whole;
    compact.regions.clear();
    for (uint64_t a : keep)
        if (uint64_t v = 0; (a < whole.lo || a >= whole.hi) && captured_word(whole, a, v)) compact.extra[a] = v;
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
        if (const auto again = replay_walk(check); again != frames) {
            for (size_t i = 0; i < std::max(frames.size(), again.size()); ++i)
                std::fprintf(stderr, "%3zu  whole %#18llx  compact %#18llx\n", i,
                             (unsigned long long)(i < frames.size() ? frames[i] : 0),
                             (unsigned long long)(i < again.size() ? again[i] : 0));
            std::ofstream(std::string(argv[2]) + ".failed") << text;
            throw std::runtime_error("the compact capture walks differently (its text: OUT.failed)");
        }
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
