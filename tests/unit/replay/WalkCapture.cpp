#include "WalkCapture.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bpf/record.h"
#include "walk_harness.h"

namespace memtrack::replay {

namespace {

uint64_t number(std::istringstream& in, size_t line) {
    std::string s;
    if (!(in >> s)) throw std::runtime_error(fmt::format("capture line {}: a number is missing", line));
    size_t used = 0;
    uint64_t v = 0;
    try {
        v = std::stoull(s, &used, 0);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size()) throw std::runtime_error(fmt::format("capture line {}: '{}' is not a number", line, s));
    return v;
}

int hex_digit(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

std::string rest(std::istringstream& in) {
    std::string s;
    std::getline(in >> std::ws, s);
    return s;
}

}  // namespace

WalkCapture parse_capture(const std::string& text) {
    WalkCapture c;
    std::istringstream lines(text);
    std::string line;
    size_t at = 0;
    while (std::getline(lines, line)) {
        ++at;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "registers") {
            c.pc = number(in, at);
            c.sp = number(in, at);
            c.bp = number(in, at);
        } else if (key == "stack") {
            c.lo = number(in, at);
            c.hi = number(in, at);
            if (c.hi < c.lo || (c.lo & 7) || (c.hi & 7) || c.hi - c.lo > (64u << 20))
                throw std::runtime_error(fmt::format("capture line {}: a bad stack range", at));
            c.words.assign((c.hi - c.lo) / 8, 0);
        } else if (key == "region") {
            CapturedRegion r;
            r.lo = number(in, at);
            r.hi = number(in, at);
            if (r.hi < r.lo || (r.lo & 7) || (r.hi & 7) || r.hi - r.lo > (1ull << 30))
                throw std::runtime_error(fmt::format("capture line {}: a bad region", at));
            r.words.assign((r.hi - r.lo) / 8, 0);
            c.regions.push_back(std::move(r));
        } else if (key == "bytes") {
            // The stack's, or the last region's.
            std::vector<uint64_t>& words = c.regions.empty() ? c.words : c.regions.back().words;
            const std::string hex = rest(in);
            if (hex.size() != words.size() * 16)
                throw std::runtime_error(fmt::format("capture line {}: bytes do not fill their range", at));
            for (size_t i = 0; i < words.size(); ++i) {
                uint64_t w = 0;
                for (int b = 7; b >= 0; --b) {
                    const int hi = hex_digit(hex[i * 16 + b * 2]), lo = hex_digit(hex[i * 16 + b * 2 + 1]);
                    if (hi < 0 || lo < 0) throw std::runtime_error(fmt::format("capture line {}: not hex", at));
                    w = w << 8 | uint64_t(hi << 4 | lo);
                }
                words[i] = w;
            }
        } else if (key == "word") {
            const uint64_t addr = number(in, at), value = number(in, at);
            if (addr & 7) throw std::runtime_error(fmt::format("capture line {}: an unaligned word", at));
            if (addr >= c.lo && addr < c.hi)
                c.words[(addr - c.lo) / 8] = value;
            else
                c.extra[addr] = value;
        } else if (key == "map" || key == "object") {
            CapturedObject o;
            o.start = number(in, at);
            o.end = number(in, at);
            (key == "map" ? o.offset : o.bias) = number(in, at);
            o.name = rest(in);
            c.objects.push_back(std::move(o));
        } else if (key == "row") {
            if (c.objects.empty()) throw std::runtime_error(fmt::format("capture line {}: a row before any object", at));
            mt_unwind_row r{};
            r.pc = uint32_t(number(in, at));
            r.cfa_off = uint16_t(number(in, at));
            r.kind = uint8_t(number(in, at));
            r.rbp_off8 = int8_t(int64_t(number(in, at) ^ 0x80) - 0x80);
            c.objects.back().rows.push_back(r);
        } else if (key == "python") {
            mt_python_proc& p = c.python;
            p.runtime = number(in, at);
            if ((in >> std::ws).eof()) continue;  // raw: the runtime only (walk_record adds the layout)
            p.frames = uint32_t(number(in, at));
            for (uint16_t* f : {&p.interp_head, &p.threads_head, &p.tstate_next, &p.tstate_thread, &p.tstate_frame,
                                &p.cframe_current, &p.frame_code, &p.frame_previous, &p.frame_instr, &p.frame_owner,
                                &p.code_adaptive})
                *f = uint16_t(number(in, at));
            if (!mt_py_set_spans(&p)) throw std::runtime_error(fmt::format("capture line {}: offsets the walk cannot read", at));
        } else if (key == "fsbase") {
            c.fsbase = number(in, at);
        } else if (key == "pyname") {
            const uint64_t code = number(in, at);
            c.code_names[code] = rest(in);
        } else if (key == "gdb") {
            GdbFrame f;
            f.pc = number(in, at);
            f.function = rest(in);
            c.gdb.push_back(std::move(f));
        } else {
            throw std::runtime_error(fmt::format("capture line {}: unknown '{}'", at, key));
        }
    }
    if (c.words.empty() || c.sp < c.lo || c.sp >= c.hi) throw std::runtime_error("capture: no stack holds sp");
    return c;
}

WalkCapture read_capture(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return parse_capture(text.str());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
    }
}

bool captured_word(const WalkCapture& c, uint64_t addr, uint64_t& out) {
    if (addr & 7) return false;
    if (addr >= c.lo && addr < c.hi) {
        out = c.words[(addr - c.lo) / 8];
        return true;
    }
    for (const auto& r : c.regions)
        if (addr >= r.lo && addr < r.hi) {
            out = r.words[(addr - r.lo) / 8];
            return true;
        }
    const auto it = c.extra.find(addr);
    if (it == c.extra.end()) return false;
    out = it->second;
    return true;
}

std::string format_capture(const WalkCapture& c, const std::vector<uint64_t>& keep, const std::string& comment) {
    std::string out;
    std::istringstream lines(comment);
    for (std::string line; std::getline(lines, line);) out += "# " + line + "\n";
    out += fmt::format("registers {:#x} {:#x} {:#x}\nstack {:#x} {:#x}\n", c.pc, c.sp, c.bp, c.lo, c.hi);
    std::vector<uint64_t> addrs = keep;
    std::sort(addrs.begin(), addrs.end());
    addrs.erase(std::unique(addrs.begin(), addrs.end()), addrs.end());
    for (uint64_t a : addrs)
        if (a >= c.lo && a < c.hi && !(a & 7)) out += fmt::format("word {:#x} {:#x}\n", a, c.words[(a - c.lo) / 8]);
    for (const auto& [a, v] : c.extra) out += fmt::format("word {:#x} {:#x}\n", a, v);
    if (c.python.runtime) {
        const mt_python_proc& p = c.python;
        out += fmt::format("python {:#x} {} {} {} {} {} {} {} {} {} {} {} {}\nfsbase {:#x}\n", p.runtime, p.frames,
                           p.interp_head, p.threads_head, p.tstate_next, p.tstate_thread, p.tstate_frame, p.cframe_current,
                           p.frame_code, p.frame_previous, p.frame_instr, p.frame_owner, p.code_adaptive, c.fsbase);
        for (const auto& [code, name] : c.code_names) out += fmt::format("pyname {:#x} {}\n", code, name);
    }
    for (const auto& o : c.objects) {
        out += fmt::format("object {:#x} {:#x} {:#x} {}\n", o.start, o.end, o.bias, o.name);
        for (const auto& r : o.rows)
            out += fmt::format("row {:#x} {} {:#x} {}\n", r.pc, r.cfa_off, r.kind, int(r.rbp_off8));
    }
    for (const auto& f : c.gdb) out += fmt::format("gdb {:#x} {}\n", f.pc, f.function);
    return out;
}

ReplayTables load_capture(const WalkCapture& c, uint32_t tgid, uint32_t generation) {
    ReplayTables t;
    for (const auto& o : c.objects) {
        mt_unwind_mapping m{};
        m.start = o.start;
        m.end = o.end;
        m.bias = o.bias;
        m.row_first = uint32_t(t.rows.size());
        m.row_count = uint32_t(o.rows.size());
        t.rows.insert(t.rows.end(), o.rows.begin(), o.rows.end());
        t.maps.push_back(m);
    }
    std::sort(t.maps.begin(), t.maps.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    mt_replay_process(tgid, generation, t.maps.data(), uint32_t(t.maps.size()), t.rows.data(), uint32_t(t.rows.size()));
    std::vector<mt_replay_region> regions{{c.lo, c.hi, reinterpret_cast<const __u64*>(c.words.data())}};
    for (const auto& r : c.regions) regions.push_back({r.lo, r.hi, reinterpret_cast<const __u64*>(r.words.data())});
    for (const auto& [addr, value] : c.extra) t.extra_words.push_back(value);
    size_t i = 0;
    for (const auto& [addr, value] : c.extra)
        regions.push_back({addr, addr + 8, reinterpret_cast<const __u64*>(&t.extra_words[i++])});
    mt_replay_memory(regions.data(), uint32_t(regions.size()));
    if (c.python.runtime) mt_replay_python(&c.python, c.fsbase);
    return t;
}

std::vector<uint64_t> replay_walk(const WalkCapture& c, uint32_t max) {
    std::vector<uint64_t> ips(MT_MAX_FRAMES);
    ips.resize(mt_replay_capture(1, c.pc, c.sp, c.bp, max, reinterpret_cast<__u64*>(ips.data())));
    return ips;
}

}  // namespace memtrack::replay
