#include "symbols/PythonCode.hpp"

#include <bpf/bpf.h>
#include <sys/uio.h>

#include <cstring>
#include <optional>

#include "bpf/python.h"
#include "symbols/PythonLayout.hpp"

namespace memtrack {

namespace {

constexpr size_t kMaxText = 4096;         // longer names and paths are cut
constexpr size_t kMaxTable = 1u << 20;    // a line table is far smaller
constexpr size_t kMaxCached = 1u << 16;   // code objects kept before the cache starts over

bool read_mem(int pid, uint64_t addr, void* out, size_t len) {
    iovec local{out, len};
    iovec remote{reinterpret_cast<void*>(addr), len};
    return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == ssize_t(len);
}

template <typename T>
std::optional<T> read_word(int pid, uint64_t addr) {
    T v{};
    if (!read_mem(pid, addr, &v, sizeof(v))) return std::nullopt;
    return v;
}

// A str object's text as UTF-8: compact ASCII and Latin-1 strings from their characters, others
// from their cached UTF-8 form.
std::optional<std::string> read_str(int pid, uint64_t obj, const PythonLayout& l) {
    auto length = read_word<int64_t>(pid, obj + 16);
    auto state = read_word<uint32_t>(pid, obj + 32);
    if (!length || !state || *length < 0) return std::nullopt;
    const uint32_t kind = (*state >> 2) & 7, compact = (*state >> 5) & 1, ascii = (*state >> 6) & 1;
    const size_t n = std::min<size_t>(size_t(*length), kMaxText);
    std::string s(n, '\0');
    if (compact && ascii) {
        if (!read_mem(pid, obj + l.ascii_size, s.data(), n)) return std::nullopt;
        return s;
    }
    if (compact && kind == 1) {
        if (!read_mem(pid, obj + l.compact_size, s.data(), n)) return std::nullopt;
        std::string utf8;
        for (unsigned char c : s) {
            if (c < 0x80) utf8 += char(c);
            else utf8 += {char(0xc0 | (c >> 6)), char(0x80 | (c & 0x3f))};
        }
        return utf8;
    }
    auto utf8 = read_word<uint64_t>(pid, obj + l.compact_utf8);
    auto utf8_length = read_word<int64_t>(pid, obj + l.compact_utf8 - 8);
    if (!utf8 || !*utf8 || !utf8_length || *utf8_length < 0) return std::nullopt;
    s.resize(std::min<size_t>(size_t(*utf8_length), kMaxText));
    if (!read_mem(pid, *utf8, s.data(), s.size())) return std::nullopt;
    return s;
}

std::optional<std::string> read_bytes(int pid, uint64_t obj) {
    auto size = read_word<int64_t>(pid, obj + 16);  // PyVarObject.ob_size
    if (!size || *size < 0 || size_t(*size) > kMaxTable) return std::nullopt;
    std::string b(size_t(*size), '\0');
    if (!read_mem(pid, obj + 32, b.data(), b.size())) return std::nullopt;  // PyBytesObject.ob_sval
    return b;
}

// Whether the type at `type` is named "code" (PyTypeObject.tp_name, after PyVarObject's head).
bool is_code_type(int pid, uint64_t type) {
    auto name = read_word<uint64_t>(pid, type + 24);
    char text[5] = {};
    return name && read_mem(pid, *name, text, sizeof(text)) && std::memcmp(text, "code", 5) == 0;
}

// PEP 657's varints: 6 bits a byte, low first, 0x40 when more follow.
uint64_t varint(const std::string& t, size_t& i) {
    uint64_t v = 0;
    for (unsigned shift = 0; i < t.size() && shift < 64; shift += 6) {
        const uint8_t b = uint8_t(t[i++]);
        v |= uint64_t(b & 0x3f) << shift;
        if (!(b & 0x40)) break;
    }
    return v;
}

int64_t svarint(const std::string& t, size_t& i) {
    const uint64_t v = varint(t, i);
    return (v & 1) ? -int64_t(v >> 1) : int64_t(v >> 1);
}

}  // namespace

uint32_t python_line(int minor, const std::string& t, int32_t first_line, uint64_t index) {
    int64_t line = first_line;
    if (minor == 10) {
        // (bytes covered, signed line delta) pairs; -128: no line.
        const uint64_t target = index * 2;
        uint64_t start = 0;
        for (size_t i = 0; i + 1 < t.size(); i += 2) {
            const uint64_t end = start + uint8_t(t[i]);
            const int8_t delta = int8_t(t[i + 1]);
            bool has_line = delta != -128;
            if (has_line) line += delta;
            if (target >= start && target < end) return has_line && line > 0 ? uint32_t(line) : 0;
            start = end;
        }
        return 0;
    }
    uint64_t start = 0;
    for (size_t i = 0; i < t.size();) {
        const uint8_t head = uint8_t(t[i++]);
        if (!(head & 0x80)) return 0;  // not an entry's first byte: a table misread
        const uint32_t code = (head >> 3) & 0xf;
        const uint64_t end = start + (head & 7) + 1;
        bool has_line = true;
        if (code == 15) {
            has_line = false;
        } else if (code == 14) {
            line += svarint(t, i);
            varint(t, i), varint(t, i), varint(t, i);  // end line, columns
        } else if (code == 13) {
            line += svarint(t, i);
        } else if (code >= 10) {
            line += code - 10;
            i += 2;
        } else {
            i += 1;
        }
        if (index >= start && index < end) return has_line && line > 0 ? uint32_t(line) : 0;
        start = end;
    }
    return 0;
}

const PythonLayout* PythonCode::layout_of(const ProcessMaps& maps) const {
    for (const Mapping& m : maps.mappings()) {
        const PythonLayout* table = python_runtime_layout(m);
        if (!table) continue;
        auto it = published_.find({m.dev, m.inode});
        return it != published_.end() && it->second.minor == table->minor ? &it->second : table;
    }
    return nullptr;
}

void PythonCode::publish(uint64_t dev, uint64_t inode, const PythonLayout& layout) {
    std::lock_guard lock(mu_);
    published_.insert_or_assign({dev, inode}, layout);
}

void PythonCode::note_maps(const ProcessMaps& maps, bool added_only) {
    std::lock_guard lock(mu_);
    const PythonLayout* layout = layout_of(maps);
    if (layout || !added_only) layouts_[maps.pid()] = layout;
}

Frame PythonCode::unnamed(uint64_t slot) {
    Frame f;
    f.ip = slot;
    f.module = kPythonModule;
    f.function = kPythonUnnamed;
    return f;
}

void PythonCode::share(int pid, uint64_t addr, const Code& code) const {
    if (codes_fd_ < 0) return;
    const mt_python_code_key key{uint32_t(pid), 0, addr};
    const mt_python_code value{code.type, code.filename, code.name, code.linetable, code.first_line, 0};
    // A full map evicts its oldest: that object's next new stack is held again.
    ::bpf_map_update_elem(codes_fd_, &key, &value, BPF_ANY);
}

Frame PythonCode::resolve(int pid, uint64_t slot, bool known) {
    Frame f = unnamed(slot);
    std::lock_guard lock(mu_);
    auto noted = layouts_.find(pid);
    const PythonLayout* l = noted == layouts_.end() ? nullptr : noted->second;
    if (!l) return f;
    const uint64_t addr = slot & MT_PY_ADDR_MASK;
    const uint64_t index = (slot >> MT_PY_INDEX_SHIFT) & MT_PY_INDEX_MASK;
    const auto key = std::make_pair(pid, addr);
    auto it = cache_.find(key);
    auto name = [&](const Code& code) {
        f.function = code.function;
        f.file = code.file;
        if (index != MT_PY_INDEX_MASK) f.line = python_line(l->minor, code.table, code.first_line, index);
        return f;
    };
    // Else read as any other (the cache started over since): right unless the object is gone.
    if (known && it != cache_.end()) return name(it->second);

    Code now;
    unsigned char head[160];
    const bool readable = read_mem(pid, addr, head, sizeof(head));
    if (readable) {
        auto at = [&](uint16_t off) { uint64_t v; std::memcpy(&v, head + off, 8); return v; };
        now.type = at(8);
        now.filename = at(l->co_filename);
        now.name = at(l->co_shown_name());
        now.linetable = at(l->co_linetable);
        std::memcpy(&now.first_line, head + l->co_firstlineno, 4);
    }
    const Code* code = nullptr;
    if (it != cache_.end() && (!readable || it->second.same_object(now))) {
        code = &it->second;
    } else if (readable && is_code_type(pid, now.type)) {
        auto function = read_str(pid, now.name, *l);
        auto file = read_str(pid, now.filename, *l);
        auto table = read_bytes(pid, now.linetable);
        if (function && file && table) {
            now.function = std::move(*function);
            now.file = std::move(*file);
            now.table = std::move(*table);
            if (cache_.size() >= kMaxCached) cache_.clear();
            code = &(cache_[key] = std::move(now));
        }
    }
    if (!code) return f;
    if (readable) share(pid, addr, *code);
    return name(*code);
}

}  // namespace memtrack
