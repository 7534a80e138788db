#include "unwind/FdeRanges.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace memtrack {
namespace {

// Reads the DW_EH_PE-encoded value at `p` (advancing it) in a section whose bytes start at
// `base` and which is loaded at `vaddr`. Only the applications an x86-64 FDE can use are read:
// absolute and pc-relative; the rest (textrel, datarel, funcrel, indirect) answer nullopt.
class EncodedReader {
public:
    EncodedReader(const uint8_t* base, const uint8_t* end, uint64_t vaddr, unsigned address_size)
        : base_(base), end_(end), vaddr_(vaddr), address_size_(address_size) {}

    std::optional<uint64_t> read(uint8_t enc, const uint8_t*& p) const {
        const uint8_t* field = nullptr;
        const std::optional<uint64_t> v = raw(enc, p, field);
        if (!v || (enc & DW_EH_PE_indirect)) return std::nullopt;
        switch (enc & 0x70) {
            case DW_EH_PE_absptr:
            case DW_EH_PE_aligned: return *v;
            case DW_EH_PE_pcrel: return *v + vaddr_ + uint64_t(field - base_);
            default: return std::nullopt;
        }
    }

    // Steps over an encoded value whatever it is relative to (a personality pointer).
    bool skip(uint8_t enc, const uint8_t*& p) const {
        const uint8_t* field = nullptr;
        return raw(enc, p, field).has_value();
    }

private:
    // The stored value, before its application; `field` is where it starts.
    std::optional<uint64_t> raw(uint8_t enc, const uint8_t*& p, const uint8_t*& field) const {
        if (enc == DW_EH_PE_omit) return std::nullopt;
        if ((enc & 0x70) == DW_EH_PE_aligned) {
            const auto off = uint64_t(p - base_);
            p = base_ + ((off + address_size_ - 1) / address_size_) * address_size_;
        }
        field = p;
        uint64_t v = 0;
        bool ok = false;
        switch (enc & 0x0f) {
            case DW_EH_PE_absptr:
                ok = fixed(p, address_size_, v);
                break;
            case DW_EH_PE_uleb128: ok = leb(p, false, v); break;
            case DW_EH_PE_udata2: ok = fixed(p, 2, v); break;
            case DW_EH_PE_udata4: ok = fixed(p, 4, v); break;
            case DW_EH_PE_udata8: ok = fixed(p, 8, v); break;
            case DW_EH_PE_sleb128: ok = leb(p, true, v); break;
            case DW_EH_PE_sdata2:
                ok = fixed(p, 2, v);
                v = uint64_t(int64_t(int16_t(v)));
                break;
            case DW_EH_PE_sdata4:
                ok = fixed(p, 4, v);
                v = uint64_t(int64_t(int32_t(v)));
                break;
            case DW_EH_PE_sdata8: ok = fixed(p, 8, v); break;
            default: break;
        }
        if (!ok) return std::nullopt;
        return v;
    }

    bool fixed(const uint8_t*& p, unsigned size, uint64_t& v) const {
        if (size_t(end_ - p) < size) return false;
        v = 0;
        std::memcpy(&v, p, size);  // x86-64 only: the file's byte order is the host's
        p += size;
        return true;
    }
    bool leb(const uint8_t*& p, bool is_signed, uint64_t& v) const {
        v = 0;
        unsigned shift = 0;
        uint8_t byte = 0;
        do {
            if (p >= end_ || shift >= 64) return false;
            byte = *p++;
            v |= uint64_t(byte & 0x7f) << shift;
            shift += 7;
        } while (byte & 0x80);
        if (is_signed && shift < 64 && (byte & 0x40)) v |= ~uint64_t(0) << shift;
        return true;
    }

    const uint8_t* base_;
    const uint8_t* end_;
    uint64_t vaddr_;
    unsigned address_size_;
};

// The encoding of a CIE's FDE pointers: its 'R' augmentation, absolute otherwise. nullopt when
// the augmentation cannot be read far enough to know.
std::optional<uint8_t> fde_encoding(const Dwarf_CIE& cie, const EncodedReader& reader, const uint8_t* limit) {
    const char* aug = cie.augmentation;
    if (aug[0] == '\0') return uint8_t(DW_EH_PE_absptr);
    if (aug[0] != 'z') return std::nullopt;
    const uint8_t* p = cie.augmentation_data;
    for (const char* a = aug + 1; *a; ++a) {
        switch (*a) {
            case 'R':
                if (p >= limit) return std::nullopt;
                return *p;
            case 'L':
                if (p >= limit) return std::nullopt;
                ++p;
                break;
            case 'P': {
                if (p >= limit) return std::nullopt;
                const uint8_t enc = *p++;
                if (!reader.skip(enc, p)) return std::nullopt;
                break;
            }
            case 'S':
            case 'B':
            case 'G': break;
            default: return std::nullopt;
        }
    }
    return uint8_t(DW_EH_PE_absptr);
}

}  // namespace

FdeList list_fdes(Elf* elf, Elf_Data* data, uint64_t section_vaddr, bool eh_frame) {
    FdeList out;
    const unsigned char* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
    if (!ident || !data || !data->d_buf) return out;
    const auto* base = static_cast<const uint8_t*>(data->d_buf);
    const uint8_t* end = base + data->d_size;
    const EncodedReader reader(base, end, section_vaddr, ident[EI_CLASS] == ELFCLASS32 ? 4 : 8);

    std::unordered_map<Dwarf_Off, std::optional<uint8_t>> encodings;  // by CIE offset
    Dwarf_Off off = 0;
    while (true) {
        Dwarf_Off next = 0;
        Dwarf_CFI_Entry entry;
        const int r = dwarf_next_cfi(ident, data, eh_frame, off, &next, &entry);
        if (r > 0) break;
        if (r < 0) {
            out.truncated = true;
            break;
        }
        const uint8_t* entry_end = next <= data->d_size ? base + next : end;
        if (dwarf_cfi_cie_p(&entry)) {
            encodings[off] = fde_encoding(entry.cie, reader, entry_end);
        } else {
            std::optional<uint8_t> enc;
            if (auto it = encodings.find(entry.fde.CIE_pointer); it != encodings.end()) {
                enc = it->second;
            } else {  // a CIE after its FDEs (legal in .debug_frame)
                Dwarf_Off cie_next = 0;
                Dwarf_CFI_Entry cie;
                if (dwarf_next_cfi(ident, data, eh_frame, entry.fde.CIE_pointer, &cie_next, &cie) == 0 &&
                    dwarf_cfi_cie_p(&cie))
                    enc = fde_encoding(cie.cie, reader, cie_next <= data->d_size ? base + cie_next : end);
                encodings[entry.fde.CIE_pointer] = enc;
            }
            const uint8_t* p = entry.fde.start;
            std::optional<uint64_t> lo, len;
            if (enc) lo = reader.read(*enc, p);
            // The range is a length: the same format without the application.
            if (lo) len = reader.read(uint8_t(*enc & 0x0f), p);
            if (!lo || !len) {
                ++out.undecodable;
            } else if (*len > 0 && *lo + *len > *lo) {
                out.ranges.push_back({*lo, *lo + *len});
            }
        }
        off = next;
    }
    std::sort(out.ranges.begin(), out.ranges.end(),
              [](const FdeRange& a, const FdeRange& b) { return a.lo < b.lo || (a.lo == b.lo && a.hi < b.hi); });
    return out;
}

}  // namespace memtrack
