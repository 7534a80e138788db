#include "unwind/CfiTable.hpp"

#include <elfutils/libdw.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <system_error>
#include <thread>

#include "core/Clock.hpp"
#include "unwind/FdeRanges.hpp"

namespace memtrack {
namespace {

struct CfiCloser {
    void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct DwarfCloser {
    void operator()(Dwarf* d) const { dwarf_end(d); }
};
struct FrameFree {
    void operator()(Dwarf_Frame* f) const { std::free(f); }
};

// A named section's data and address; data is null when the file has no such section with
// contents (a debug file's NOBITS .eh_frame, for one).
struct Section {
    Elf_Data* data = nullptr;
    uint64_t vaddr = 0;
};

Section find_section(Elf* elf, const char* name) {
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS) continue;
        const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
        if (n && std::strcmp(n, name) == 0) return {elf_getdata(scn, nullptr), sh.sh_addr};
    }
    return {};
}

// .debug_frame as libdw reads it: through a Dwarf of the file that holds the section.
struct DebugFrame {
    ElfPtr own;  // a reader thread's own handle of the separate debug file, when it reads that
    std::unique_ptr<Dwarf, DwarfCloser> dwarf;
    Dwarf_CFI* cfi = nullptr;  // owned by `dwarf`
    FdeList fdes;
    std::string path;
};

// `elf`: the object's handle the caller reads. Without .debug_frame there, the separate debug
// file's (opened with the object, ObjectFiles); `own`: through a handle of the reader's own
// (libelf's and libdw's caches are not shared between threads), over the same descriptor.
std::optional<DebugFrame> open_debug_frame(Elf* elf, const std::string& path, const OpenObject& open, bool own) {
    DebugFrame d;
    Elf* holder = elf;
    Section sec = find_section(elf, ".debug_frame");
    if (!sec.data) {
        if (!open.debug) return std::nullopt;
        holder = open.debug->elf.get();
        if (own) {
            d.own.reset(elf_begin(open.debug->fd.get(), ELF_C_READ_MMAP, nullptr));
            if (!d.own) return std::nullopt;
            holder = d.own.get();
        }
        sec = find_section(holder, ".debug_frame");
        if (!sec.data) return std::nullopt;
        d.path = open.debug_path;
    } else {
        d.path = path;
    }
    d.dwarf.reset(dwarf_begin_elf(holder, DWARF_C_READ, nullptr));
    if (!d.dwarf) return std::nullopt;
    d.cfi = dwarf_getcfi(d.dwarf.get());
    if (!d.cfi) return std::nullopt;
    d.fdes = list_fdes(holder, sec.data, sec.vaddr, false);
    return d;
}

// One FDE's stretch of pcs (clipped where an earlier FDE already covers them) and the CFI
// that describes it.
struct Piece {
    uint64_t lo, hi;
    bool debug_frame;
};

// The rows of a run of pieces, as RowSink::add would be given them (pc set, nothing merged):
// what one thread read, replayed in order into the table's sink.
struct RawRows {
    std::vector<mt_unwind_row> adds;
    uint64_t covered_to = 0;  // past the last piece read
    CfiCounts counts;         // fdes_*, frames_*, unsupported, lookup_failures
};

// Reads the rows of `pieces` (sorted, with the pcs up to `covered_to` already described) through
// one thread's CFI handles: `eh` for .eh_frame pieces, `debug` for .debug_frame ones.
RawRows read_rows(std::span<const Piece> pieces, Dwarf_CFI* eh, Dwarf_CFI* debug, uint64_t covered_to) {
    RawRows out;
    CfiCounts& counts = out.counts;
    auto add = [&](uint64_t pc, mt_unwind_row row) {
        row.pc = uint32_t(pc);
        out.adds.push_back(row);
    };
    for (const Piece& p : pieces) {
        const uint64_t lo = std::max(p.lo, covered_to);
        if (lo >= p.hi) continue;
        if (lo > covered_to) add(covered_to, mt_unwind_row{});
        Dwarf_CFI* cfi = p.debug_frame ? debug : eh;
        ++(p.debug_frame ? counts.fdes_debug_frame : counts.fdes_eh_frame);
        // Each libdw frame is one row of the FDE's table, [start, end): the next starts at end.
        for (uint64_t pc = lo; pc < p.hi;) {
            Dwarf_Frame* raw = nullptr;
            if (dwarf_cfi_addrframe(cfi, pc, &raw) != 0) {
                ++counts.lookup_failures;
                add(pc, mt_unwind_row{});
                break;
            }
            const std::unique_ptr<Dwarf_Frame, FrameFree> frame(raw);
            Dwarf_Addr start = 0, end = 0;
            dwarf_frame_info(frame.get(), &start, &end, nullptr);
            const FrameRule rule = frame_rule(frame.get());
            ++(p.debug_frame ? counts.frames_debug_frame : counts.frames_eh_frame);
            if (rule.cause != Unsupported::none) ++counts.unsupported[size_t(rule.cause)];
            add(pc, rule.row);
            if (end <= pc) {  // cannot happen for a frame libdw found at pc; never loop on it
                ++counts.lookup_failures;
                break;
            }
            pc = std::min<uint64_t>(end, p.hi);
        }
        covered_to = p.hi;
    }
    out.covered_to = covered_to;
    return out;
}

void add_counts(CfiCounts& to, const CfiCounts& from) {
    to.fdes_eh_frame += from.fdes_eh_frame;
    to.fdes_debug_frame += from.fdes_debug_frame;
    to.frames_eh_frame += from.frames_eh_frame;
    to.frames_debug_frame += from.frames_debug_frame;
    to.lookup_failures += from.lookup_failures;
    for (size_t i = 0; i < to.unsupported.size(); ++i) to.unsupported[i] += from.unsupported[i];
}

// Appends rows keeping the table minimal: a row that repeats its predecessor's rule is dropped,
// and a row at the pc of the last one replaces it.
class RowSink {
public:
    explicit RowSink(std::vector<mt_unwind_row>& rows) : rows_(rows) {}

    void add(uint64_t pc, mt_unwind_row row) {
        row.pc = uint32_t(pc);
        if (!rows_.empty() && rows_.back().pc == row.pc) rows_.pop_back();
        if (rows_.empty() ? mt_unwind_cfa_type(&row) == MT_CFA_NONE : same_rule(rows_.back(), row)) return;
        rows_.push_back(row);
    }
    void none(uint64_t pc) { add(pc, mt_unwind_row{}); }

private:
    std::vector<mt_unwind_row>& rows_;
};

}  // namespace

mt_unwind_row CfiTable::row_at(uint64_t vaddr) const {
    if (vaddr > std::numeric_limits<uint32_t>::max()) return mt_unwind_row{};  // past the last row, NONE
    auto it = std::upper_bound(rows.begin(), rows.end(), uint32_t(vaddr),
                               [](uint32_t pc, const mt_unwind_row& r) { return pc < r.pc; });
    if (it == rows.begin()) return mt_unwind_row{};
    return *std::prev(it);
}

std::optional<uint64_t> CfiTable::bias(uint64_t start, uint64_t offset) const {
    return mapping_bias(segments, start, offset);
}

Result<CfiTable> build_cfi_table(const std::string& path, size_t two_threads_from) {
    auto file = ObjectFile::open(path);
    if (!file) return file.error();
    return build_cfi_table(**file, two_threads_from);
}

Result<CfiTable> build_cfi_table(const ObjectFile& file, size_t two_threads_from) {
    const uint64_t t0 = monotonic_ns();
    const std::string& path = file.path();
    auto open = file.handles();
    if (!open) return open.error();
    Elf* elf = (*open)->file.elf.get();
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh)) return Error{"read ELF header", path, 0, elf_errmsg(-1)};
    if (eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64)
        return Error{"build unwind table", path, 0, "not an x86-64 ELF64 object"};

    CfiTable table;
    table.build_id = file.build_id();
    table.segments = file.segments();
    CfiCounts& counts = table.counts;

    // libdw finds .eh_frame through PT_GNU_EH_FRAME and uses .eh_frame_hdr's sorted table for
    // each lookup; its FDE cache lives as long as this Dwarf_CFI, so one per object.
    std::unique_ptr<Dwarf_CFI, CfiCloser> eh_cfi;
    FdeList eh_fdes;
    if (const Section sec = find_section(elf, ".eh_frame"); sec.data) {
        eh_cfi.reset(dwarf_getcfi_elf(elf));
        if (eh_cfi)
            eh_fdes = list_fdes(elf, sec.data, sec.vaddr, true);
        else
            eh_fdes.truncated = true;  // libdw cannot read the section it has
    }
    std::optional<DebugFrame> debug = open_debug_frame(elf, path, **open, false);
    counts.undecodable_fdes = eh_fdes.undecodable + (debug ? debug->fdes.undecodable : 0);
    counts.truncated_cfi = eh_fdes.truncated || (debug && debug->fdes.truncated);

    std::vector<Piece> pieces;
    pieces.reserve(eh_fdes.ranges.size());
    for (const FdeRange& r : eh_fdes.ranges) pieces.push_back({r.lo, r.hi, false});
    if (debug) {
        // .debug_frame only where no .eh_frame FDE is: both ranges lists are sorted.
        std::vector<FdeRange> covered;
        for (const FdeRange& r : eh_fdes.ranges) {
            if (!covered.empty() && r.lo <= covered.back().hi)
                covered.back().hi = std::max(covered.back().hi, r.hi);
            else
                covered.push_back(r);
        }
        auto c = covered.begin();
        for (const FdeRange& r : debug->fdes.ranges) {
            uint64_t lo = r.lo;
            while (c != covered.end() && c->hi <= lo) ++c;
            for (auto k = c; k != covered.end() && k->lo < r.hi && lo < r.hi; ++k) {
                if (k->lo > lo) pieces.push_back({lo, k->lo, true});
                lo = std::max(lo, k->hi);
            }
            if (lo < r.hi) pieces.push_back({lo, r.hi, true});
        }
        std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.lo < b.lo; });
    }
    for (const Piece& p : pieces)
        if (p.hi > std::numeric_limits<uint32_t>::max())
            return Error{"build unwind table", path, EOVERFLOW, "CFI describes code at or above 4 GiB"};

    // The second half's reading starts where the first half's pieces end.
    const std::span<const Piece> all(pieces);
    size_t split = all.size() >= two_threads_from ? all.size() / 2 : all.size();
    uint64_t split_covered = 0;
    for (size_t i = 0; i < split; ++i) split_covered = std::max(split_covered, all[i].hi);
    // The second thread's own handles of the file, over the same descriptor (the file is not
    // opened again); without them, one thread reads it all.
    ElfPtr elf2;
    std::unique_ptr<Dwarf_CFI, CfiCloser> eh_cfi2;
    std::optional<DebugFrame> debug2;
    if (split < all.size()) {
        elf2.reset(elf_begin((*open)->file.fd.get(), ELF_C_READ_MMAP, nullptr));
        if (elf2 && eh_cfi) eh_cfi2.reset(dwarf_getcfi_elf(elf2.get()));
        if (elf2 && debug) debug2 = open_debug_frame(elf2.get(), path, **open, true);
        if (!elf2 || (eh_cfi && !eh_cfi2) || (debug && !debug2)) split = all.size();
    }
    RawRows second;
    std::thread reader;
    if (split < all.size()) {
        try {
            reader = std::thread([&] {
                second = read_rows(all.subspan(split), eh_cfi2.get(), debug2 ? debug2->cfi : nullptr, split_covered);
            });
        } catch (const std::system_error&) {
            split = all.size();  // no thread to be had: this one reads it all
        }
    }
    RawRows first = read_rows(all.first(split), eh_cfi.get(), debug ? debug->cfi : nullptr, 0);
    if (reader.joinable()) reader.join();

    RowSink sink(table.rows);
    for (const RawRows* part : {&first, &second}) {
        for (const mt_unwind_row& r : part->adds) sink.add(r.pc, r);
        add_counts(counts, part->counts);
    }
    if (!table.rows.empty()) sink.none(std::max(first.covered_to, second.covered_to));
    if (debug && counts.fdes_debug_frame) table.debug_frame_file = debug->path;

    counts.fdes = counts.fdes_eh_frame + counts.fdes_debug_frame;
    counts.rows = table.rows.size();
    for (const mt_unwind_row& r : table.rows) ++counts.rows_by_type[mt_unwind_cfa_type(&r)];
    counts.build_ns = monotonic_ns() - t0;
    return table;
}

}  // namespace memtrack
