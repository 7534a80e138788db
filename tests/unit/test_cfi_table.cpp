// The unwind rows build_cfi_table makes against libdw's own answer at each pc (dwarf_cfi_addrframe),
// on the C and C++ libraries, Debian's python3, a program built -O2 -fomit-frame-pointer and the
// same program with its CFI in .debug_frame only; and exact rows for functions whose CFI is written by hand
// (cfi_rules.S), one per kind of row.
#include <doctest/doctest.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "probes/ElfSymbols.hpp"
#include "symbols/ElfFile.hpp"
#include "symbols/FileMaps.hpp"
#include "unwind/CfiTable.hpp"

using namespace memtrack;

namespace {

std::string env_path(const char* name) {
    const char* v = std::getenv(name);
    const std::string unset = std::string(name) + " is not set (meson test sets it)";
    REQUIRE_MESSAGE(v != nullptr, unset);
    return v;
}

std::string loaded_library(std::string_view name) {
    struct Search {
        std::string_view name;
        std::string path;
    } s{name, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            auto* s = static_cast<Search*>(out);
            if (std::string_view(info->dlpi_name).find(s->name) != std::string_view::npos)
                s->path = std::filesystem::canonical(info->dlpi_name).string();
            return 0;
        },
        &s);
    return s.path;
}

// doctest builds a message even when the check passes: only ask a failed result for its error.
template <typename T>
std::string why(const Result<T>& r) {
    return r.ok() ? std::string() : r.error().message();
}

// What a row tells the walker, in words.
std::string row_words(const mt_unwind_row& r) {
    std::string cfa;
    switch (mt_unwind_cfa_type(&r)) {
        case MT_CFA_NONE: return "none";
        case MT_CFA_END: return "end";
        case MT_CFA_UNSUPPORTED: return "unsupported";
        case MT_CFA_RSP: cfa = fmt::format("rsp+{}", r.cfa_off); break;
        case MT_CFA_RBP: cfa = fmt::format("rbp+{}", r.cfa_off); break;
        case MT_CFA_PLT: return fmt::format("plt rsp+{} +8 from {} rbp=same", r.cfa_off, r.rbp_off8);
        default: return fmt::format("bad type {}", r.kind);
    }
    switch (mt_unwind_rbp_rule(&r)) {
        case MT_RBP_SAME: return cfa + " rbp=same";
        case MT_RBP_UNDEFINED: return cfa + " rbp=undefined";
        case MT_RBP_AT_CFA: return cfa + fmt::format(" rbp=*(cfa{:+})", 8 * r.rbp_off8);
        default: return fmt::format("bad rbp rule {}", r.kind);
    }
}

struct FrameFree {
    void operator()(Dwarf_Frame* f) const { std::free(f); }
};

bool is_plt(const Dwarf_Op* ops, size_t n, int threshold) {
    const uint8_t want[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, uint8_t(DW_OP_lit0 + threshold),
                            DW_OP_ge,    DW_OP_lit3,   DW_OP_shl,   DW_OP_plus};
    if (n != std::size(want)) return false;
    for (size_t i = 0; i < n; ++i)
        if (ops[i].atom != want[i]) return false;
    return ops[0].number == 8 && ops[1].number == 0;
}

// The same words from libdw's answer at pc: .eh_frame first, then .debug_frame.
std::string libdw_words(Dwarf_CFI* eh, Dwarf_CFI* debug, uint64_t pc) {
    Dwarf_Frame* raw = nullptr;
    if (!(eh && dwarf_cfi_addrframe(eh, pc, &raw) == 0) && !(debug && dwarf_cfi_addrframe(debug, pc, &raw) == 0))
        return "none";
    std::unique_ptr<Dwarf_Frame, FrameFree> frame(raw);
    bool signal = false;
    if (dwarf_frame_info(raw, nullptr, nullptr, &signal) != 16 || signal) return "unsupported";
    Dwarf_Op mem[3];
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    REQUIRE(dwarf_frame_register(raw, 16, mem, &ops, &n) == 0);
    if (n == 0 && ops != nullptr) return "end";
    if (!(n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
          int64_t(ops[1].number) == -8))
        return "unsupported";

    std::string cfa;
    if (dwarf_frame_cfa(raw, &ops, &n) != 0 || n == 0) return "unsupported";
    const bool bregx = n == 1 && ops[0].atom == DW_OP_bregx;
    const bool breg = n == 1 && (ops[0].atom == DW_OP_breg6 || ops[0].atom == DW_OP_breg7);
    bool plt = false;
    if (bregx || breg) {
        const uint64_t reg = bregx ? ops[0].number : uint64_t(ops[0].atom - DW_OP_breg0);
        const auto off = int64_t(bregx ? ops[0].number2 : ops[0].number);
        if ((reg != 6 && reg != 7) || off < 0 || off > 65535) return "unsupported";
        cfa = fmt::format("{}+{}", reg == 7 ? "rsp" : "rbp", off);
    } else if (is_plt(ops, n, 11) || is_plt(ops, n, 10)) {
        cfa = fmt::format("plt rsp+8 +8 from {}", ops[4].atom - DW_OP_lit0);
        plt = true;
    } else {
        return "unsupported";
    }

    REQUIRE(dwarf_frame_register(raw, 6, mem, &ops, &n) == 0);
    if (n == 0) return cfa + (ops == nullptr ? " rbp=same" : plt ? " rbp=undefined-in-plt" : " rbp=undefined");
    if (plt || ops[0].atom != DW_OP_call_frame_cfa) return "unsupported";
    int64_t off = 0;
    if (n == 2 && ops[1].atom == DW_OP_plus_uconst)
        off = int64_t(ops[1].number);
    else if (n != 1)
        return "unsupported";
    if (off % 8 != 0 || off / 8 < -128 || off / 8 > 127) return "unsupported";
    return cfa + fmt::format(" rbp=*(cfa{:+})", off);
}

struct CfiCloser {
    void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct DwarfCloser {
    void operator()(Dwarf* d) const { dwarf_end(d); }
};

// Structural promises of every table: sorted, minimal, NONE at the end.
void check_shape(const CfiTable& t) {
    REQUIRE(!t.rows.empty());
    CHECK(mt_unwind_cfa_type(&t.rows.front()) != MT_CFA_NONE);
    CHECK(mt_unwind_cfa_type(&t.rows.back()) == MT_CFA_NONE);
    size_t unsorted = 0, repeated = 0;
    for (size_t i = 1; i < t.rows.size(); ++i) {
        unsorted += t.rows[i - 1].pc >= t.rows[i].pc;
        repeated += same_rule(t.rows[i - 1], t.rows[i]);
    }
    CHECK(unsorted == 0);
    CHECK(repeated == 0);
    CHECK(t.counts.rows == t.rows.size());
    size_t by_type = 0;
    for (size_t n : t.counts.rows_by_type) by_type += n;
    CHECK(by_type == t.rows.size());
}

// 5000 random pcs of the executable segments, and both sides of 1000 random row boundaries:
// the row in force says what libdw says there.
void check_against_libdw(const std::string& path, bool expect_debug_frame) {
    CAPTURE(path);
    auto table = build_cfi_table(path);
    REQUIRE_MESSAGE(table.ok(), why(table));
    check_shape(*table);
    CHECK(table->counts.lookup_failures == 0);
    CHECK(table->counts.undecodable_fdes == 0);
    CHECK(!table->counts.truncated_cfi);
    CHECK(table->build_id == gnu_build_id(open_elf(path).value().elf.get()));
    CHECK(table->build_id.size() == 40);
    CHECK((table->counts.fdes_debug_frame > 0) == expect_debug_frame);
    CHECK(table->debug_frame_file == (expect_debug_frame ? path : std::string()));

    auto file = open_elf(path);
    REQUIRE(file.ok());
    std::unique_ptr<Dwarf_CFI, CfiCloser> eh(dwarf_getcfi_elf(file->elf.get()));
    std::unique_ptr<Dwarf, DwarfCloser> dwarf(expect_debug_frame ? dwarf_begin_elf(file->elf.get(), DWARF_C_READ, nullptr)
                                                                  : nullptr);
    Dwarf_CFI* debug = dwarf ? dwarf_getcfi(dwarf.get()) : nullptr;
    REQUIRE(eh != nullptr);
    REQUIRE((debug != nullptr) == expect_debug_frame);

    std::vector<std::pair<uint64_t, uint64_t>> code;
    uint64_t code_bytes = 0;
    for (const LoadSegment& s : table->segments)
        if (s.executable) {
            code.emplace_back(s.vaddr, s.vaddr + s.filesz);
            code_bytes += s.filesz;
        }
    REQUIRE(code_bytes > 0);
    std::mt19937_64 rng(12);
    std::vector<uint64_t> pcs;
    for (int i = 0; i < 5000; ++i) {
        uint64_t at = rng() % code_bytes;
        for (auto [lo, hi] : code) {
            if (at < hi - lo) {
                pcs.push_back(lo + at);
                break;
            }
            at -= hi - lo;
        }
    }
    for (int i = 0; i < 1000; ++i) {
        const mt_unwind_row& r = table->rows[rng() % table->rows.size()];
        pcs.push_back(r.pc);
        pcs.push_back(r.pc - 1);
    }
    size_t mismatches = 0, none = 0, covered = 0;
    for (uint64_t pc : pcs) {
        const std::string want = libdw_words(eh.get(), debug, pc);
        const std::string got = row_words(table->row_at(pc));
        (want == "none" ? none : covered)++;
        if (want != got && ++mismatches <= 10) FAIL_CHECK(fmt::format("pc {:#x}: libdw says '{}', the row '{}'", pc, want, got));
    }
    CHECK(mismatches == 0);
    // Both kinds of pc were met, so both halves of the comparison ran.
    CHECK(none > 0);
    CHECK(covered > 1000);
    MESSAGE(fmt::format("{}: {} rows, {} FDEs; {} pcs in CFI, {} outside", path, table->rows.size(), table->counts.fdes,
                        covered, none));
}

mt_unwind_row row(uint64_t pc, uint32_t type, uint32_t rbp = MT_RBP_SAME, uint16_t cfa_off = 0, int8_t rbp_off8 = 0) {
    return mt_unwind_row{uint32_t(pc), cfa_off, mt_unwind_kind(type, rbp), rbp_off8};
}

std::string show(const std::vector<mt_unwind_row>& rows, uint64_t base) {
    std::string s;
    for (const mt_unwind_row& r : rows) s += fmt::format("+{}: {}; ", r.pc - base, row_words(r));
    return s;
}

}  // namespace

TEST_CASE("unwind rows are libdw's rule at every pc: the C library") {
    const std::string libc = loaded_library("/libc.so");
    REQUIRE(!libc.empty());
    check_against_libdw(libc, false);
}

TEST_CASE("unwind rows are libdw's rule at every pc: the C++ library") {
    const std::string libstdcxx = loaded_library("/libstdc++.so");
    REQUIRE(!libstdcxx.empty());
    check_against_libdw(libstdcxx, false);
}

TEST_CASE("unwind rows are libdw's rule at every pc: a program built -O2 -fomit-frame-pointer") {
    check_against_libdw(env_path("CFI_NOFP_BIN"), false);
}

TEST_CASE("unwind rows are libdw's rule at every pc: Debian's python3, an executable not built PIE") {
    check_against_libdw(std::filesystem::canonical("/usr/bin/python3").string(), false);
}

TEST_CASE("unwind rows read by two threads are the rows one thread reads, whole tables alike") {
    // python3 has more FDEs than kCfiTwoThreadsFrom; the others are split on purpose, the
    // .debug_frame program included (its second thread opens the CFI of that section too).
    for (const std::string& path : {std::filesystem::canonical("/usr/bin/python3").string(),
                                    loaded_library("/libc.so"), env_path("CFI_DEBUG_FRAME_BIN")}) {
        CAPTURE(path);
        auto one = build_cfi_table(path, std::numeric_limits<size_t>::max());
        auto two = build_cfi_table(path, 2);
        REQUIRE_MESSAGE(one.ok(), why(one));
        REQUIRE_MESSAGE(two.ok(), why(two));
        REQUIRE(one->rows.size() > 1);
        REQUIRE(one->rows.size() == two->rows.size());
        CHECK(std::memcmp(one->rows.data(), two->rows.data(), one->rows.size() * sizeof(mt_unwind_row)) == 0);
        CHECK(one->counts.fdes == two->counts.fdes);
        CHECK(one->counts.frames_eh_frame == two->counts.frames_eh_frame);
        CHECK(one->counts.frames_debug_frame == two->counts.frames_debug_frame);
        CHECK(one->counts.unsupported == two->counts.unsupported);
        CHECK(one->counts.lookup_failures == two->counts.lookup_failures);
        CHECK(one->debug_frame_file == two->debug_frame_file);
    }
    auto py = build_cfi_table(std::filesystem::canonical("/usr/bin/python3").string());
    REQUIRE(py.ok());
    CHECK(py->counts.fdes >= kCfiTwoThreadsFrom);  // the default splits it
}

TEST_CASE("unwind rows come from .debug_frame where .eh_frame does not cover the code") {
    const std::string path = env_path("CFI_DEBUG_FRAME_BIN");
    check_against_libdw(path, true);
    auto table = build_cfi_table(path);
    REQUIRE(table.ok());
    // crt1's _start is in .eh_frame, the program's own functions only in .debug_frame.
    CHECK(table->counts.fdes_eh_frame > 0);
    CHECK(table->counts.frames_debug_frame > 0);
    auto syms = ElfSymbols::load(path, {"nofp_leaf", "_start"});
    REQUIRE(syms.ok());
    const auto leaf = syms->find("nofp_leaf");
    REQUIRE(leaf.has_value());
    CHECK(row_words(table->row_at(leaf->vaddr)) == "rsp+8 rbp=same");
    const auto start = syms->find("_start");
    REQUIRE(start.has_value());
    CHECK(row_words(table->row_at(start->vaddr)) == "end");
}

TEST_CASE("hand-written CFI gives exactly its rows, one function per kind of row") {
    const std::string path = env_path("CFI_RULES_LIB");
    auto table = build_cfi_table(path);
    REQUIRE_MESSAGE(table.ok(), why(table));
    check_shape(*table);
    auto syms = ElfSymbols::load(path);
    REQUIRE(syms.ok());
    auto rows_of = [&](const char* fn) {
        const auto f = syms->find(fn);
        REQUIRE_MESSAGE(f.has_value(), fn);
        // Each function is 16-aligned and shorter than 16 bytes; the row in force at its first
        // byte must start there.
        CHECK(table->row_at(f->vaddr).pc == f->vaddr);
        std::vector<mt_unwind_row> out;
        for (const mt_unwind_row& r : table->rows)
            if (r.pc >= f->vaddr && r.pc < f->vaddr + 16) out.push_back(r);
        return std::pair(f->vaddr, out);
    };
    auto expect = [&](const char* fn, std::vector<mt_unwind_row> want_rel) {
        CAPTURE(fn);
        auto [base, got] = rows_of(fn);
        for (mt_unwind_row& r : want_rel) r.pc += uint32_t(base);
        CHECK_MESSAGE(show(got, base) == show(want_rel, base), fn);
        REQUIRE(got.size() == want_rel.size());
        for (size_t i = 0; i < got.size(); ++i) {
            CHECK(got[i].pc == want_rel[i].pc);
            CHECK(got[i].cfa_off == want_rel[i].cfa_off);
            CHECK(got[i].kind == want_rel[i].kind);
            CHECK(got[i].rbp_off8 == want_rel[i].rbp_off8);
        }
    };
    expect("cfi_rbp_frame", {row(0, MT_CFA_RSP, MT_RBP_SAME, 8), row(1, MT_CFA_RSP, MT_RBP_AT_CFA, 16, -2),
                             row(4, MT_CFA_RBP, MT_RBP_AT_CFA, 16, -2), row(10, MT_CFA_RSP, MT_RBP_SAME, 8),
                             row(11, MT_CFA_NONE)});
    expect("cfi_rsp_frame", {row(0, MT_CFA_RSP, MT_RBP_SAME, 8), row(1, MT_CFA_RSP, MT_RBP_SAME, 16),
                             row(5, MT_CFA_RSP, MT_RBP_SAME, 40), row(13, MT_CFA_RSP, MT_RBP_SAME, 16),
                             row(14, MT_CFA_RSP, MT_RBP_SAME, 8), row(15, MT_CFA_RSP, MT_RBP_SAME, 40)});
    // cfi_rsp_frame is 21 bytes: its last rows lie past the first 16.
    {
        const uint64_t base = syms->find("cfi_rsp_frame")->vaddr;
        CHECK(row_words(table->row_at(base + 18)) == "rsp+40 rbp=same");
        CHECK(table->row_at(base + 19).pc == base + 19);
        CHECK(row_words(table->row_at(base + 19)) == "rsp+16 rbp=same");
        CHECK(table->row_at(base + 20).pc == base + 20);
        CHECK(row_words(table->row_at(base + 20)) == "rsp+8 rbp=same");
        CHECK(table->row_at(base + 21).pc == base + 21);
        CHECK(mt_unwind_cfa_type(&table->rows[0]) != MT_CFA_NONE);
        CHECK(row_words(table->row_at(base + 21)) == "none");
    }
    expect("cfi_end_frame", {row(0, MT_CFA_END), row(4, MT_CFA_NONE)});
    expect("cfi_plt11", {row(0, MT_CFA_PLT, MT_RBP_SAME, 8, 11), row(3, MT_CFA_NONE)});
    expect("cfi_plt10", {row(0, MT_CFA_PLT, MT_RBP_SAME, 8, 10), row(1, MT_CFA_NONE)});
    expect("cfi_expr_rsp", {row(0, MT_CFA_RSP, MT_RBP_SAME, 8), row(1, MT_CFA_RSP, MT_RBP_SAME, 16),
                            row(2, MT_CFA_RSP, MT_RBP_UNDEFINED, 16), row(3, MT_CFA_RSP, MT_RBP_UNDEFINED, 8),
                            row(4, MT_CFA_NONE)});
    // Six unsupported rules in a row are one row; their causes are counted one by one.
    expect("cfi_unsupported", {row(0, MT_CFA_RSP, MT_RBP_SAME, 8), row(1, MT_CFA_UNSUPPORTED),
                               row(7, MT_CFA_RSP, MT_RBP_AT_CFA, 8, -128), row(8, MT_CFA_NONE)});
    expect("cfi_signal", {row(0, MT_CFA_UNSUPPORTED), row(2, MT_CFA_NONE)});

    const auto& u = table->counts.unsupported;
    CHECK(u[size_t(Unsupported::cfa_register)] == 1);
    CHECK(u[size_t(Unsupported::cfa_expression)] == 1);
    CHECK(u[size_t(Unsupported::cfa_offset)] == 1);
    CHECK(u[size_t(Unsupported::rbp_rule)] == 2);
    CHECK(u[size_t(Unsupported::ra_rule)] == 1);
    CHECK(u[size_t(Unsupported::signal_frame)] == 1);
    CHECK(u[size_t(Unsupported::frame_error)] == 0);
    CHECK(u[size_t(Unsupported::ra_column)] == 0);
    CHECK(u[size_t(Unsupported::cfa_undefined)] == 0);
    CHECK(table->counts.rows_by_type[MT_CFA_PLT] == 2);
    CHECK(table->counts.rows_by_type[MT_CFA_END] == 1);
    CHECK(table->counts.rows_by_type[MT_CFA_UNSUPPORTED] == 2);
}

TEST_CASE("row_at: NONE before the first row and past the last") {
    auto table = build_cfi_table(env_path("CFI_RULES_LIB"));
    REQUIRE(table.ok());
    REQUIRE(table->rows.front().pc > 0);
    CHECK(mt_unwind_cfa_type(&table->rows.front()) != MT_CFA_NONE);
    CHECK(row_words(table->row_at(table->rows.front().pc - 1)) == "none");
    CHECK(row_words(table->row_at(0)) == "none");
    CHECK(row_words(table->row_at(table->rows.back().pc + 100)) == "none");
    CHECK(row_words(table->row_at(uint64_t(1) << 40)) == "none");
}

TEST_CASE("build_cfi_table refuses what it cannot describe, with a reason") {
    auto missing = build_cfi_table("/nonexistent/libnothing.so");
    REQUIRE(!missing.ok());
    CHECK(missing.error().err == ENOENT);
    auto not_elf = build_cfi_table("/etc/hostname");
    REQUIRE(!not_elf.ok());
    CHECK(not_elf.error().message().find("/etc/hostname") != std::string::npos);
}

TEST_CASE("build_cfi_table refuses code at or above 4 GiB: rows hold 32-bit pcs") {
    auto high = build_cfi_table(env_path("CFI_HIGH_BIN"));
    REQUIRE(!high.ok());
    CHECK(high.error().err == EOVERFLOW);
}

TEST_CASE("bias: an executable mapping's load address minus vaddr, from its start and offset") {
    const std::string libc = loaded_library("/libc.so");
    REQUIRE(!libc.empty());
    auto table = build_cfi_table(libc);
    REQUIRE(table.ok());
    // The maps text map_file writes for a file mapped at a base, parsed as /proc/PID/maps is: libc
    // (vaddr = file offset) and Debian's python3.11 (not PIE: vaddr = file offset + 0x400000).
    for (const std::string& path : {libc, std::filesystem::canonical("/usr/bin/python3.11").string()}) {
        CAPTURE(path);
        auto t = build_cfi_table(path);
        REQUIRE(t.ok());
        constexpr uint64_t base = 0x7f1234560000;
        auto mapped = map_file(path, base);
        REQUIRE(mapped.ok());
        size_t executable = 0;
        for (const Mapping& m : mapped->maps.mappings()) {
            CAPTURE(m.offset);
            if (!m.executable) {
                CHECK(!t->bias(m.start, m.offset).has_value());
                continue;
            }
            ++executable;
            CHECK(t->bias(m.start, m.offset) == std::optional<uint64_t>(base));
        }
        CHECK(executable == 1);
    }
    // And in this process: libc's executable mapping gives the bias the dynamic loader chose.
    uint64_t loader_bias = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (std::string_view(info->dlpi_name).find("/libc.so") != std::string_view::npos)
                *static_cast<uint64_t*>(out) = info->dlpi_addr;
            return 0;
        },
        &loader_bias);
    REQUIRE(loader_bias != 0);
    auto maps = ProcessMaps::read(getpid());
    REQUIRE(maps.ok());
    size_t live = 0;
    for (const Mapping& m : maps->mappings()) {
        if (!m.executable || m.anonymous() || m.path.starts_with("[") || std::filesystem::canonical(m.path) != libc) continue;
        ++live;
        CHECK(table->bias(m.start, m.offset) == std::optional<uint64_t>(loader_bias));
    }
    CHECK(live == 1);
}
