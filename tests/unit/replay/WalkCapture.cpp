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
        } else if (key == "bytes") {
            const std::string hex = rest(in);
            if (hex.size() != c.words.size() * 16)
                throw std::runtime_error(fmt::format("capture line {}: bytes do not fill the stack range", at));
            for (size_t i = 0; i < c.words.size(); ++i) {
                uint64_t w = 0;
                for (int b = 7; b >= 0; --b) w = w << 8 | std::stoul(hex.substr(i * 16 + b * 2, 2), nullptr, 16);
                c.words[i] = w;
            }
        } else if (key == "word") {
            const uint64_t addr = number(in, at), value = number(in, at);
            if (addr < c.lo || addr >= c.hi || (addr & 7))
                throw std::runtime_error(fmt::format("capture line {}: a word outside the stack", at));
            c.words[(addr - c.lo) / 8] = value;
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
    mt_replay_memory(c.lo, c.hi, reinterpret_cast<const __u64*>(c.words.data()));
    return t;
}

std::vector<uint64_t> replay_walk(const WalkCapture& c, uint32_t max) {
    std::vector<uint64_t> ips(MT_MAX_FRAMES);
    ips.resize(mt_replay_capture(1, c.pc, c.sp, c.bp, max, reinterpret_cast<__u64*>(ips.data())));
    return ips;
}

}  // namespace memtrack::replay
