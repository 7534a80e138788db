#include "symbols/ProcessMaps.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "core/ProcMaps.hpp"
#include "core/Fd.hpp"
#include "symbols/TextFields.hpp"

namespace memtrack {
namespace {

using text::skip_spaces;
using text::take_char;
using text::take_dec;
using text::take_hex;

// "start-end perms offset major:minor inode   path"; the path runs to the end of the line and
// may hold spaces.
std::optional<Mapping> parse_line(std::string_view s) {
    Mapping m;
    const auto start = take_hex(s);
    if (!start || !take_char(s, '-')) return std::nullopt;
    const auto end = take_hex(s);
    if (!end || !take_char(s, ' ') || s.size() < 4) return std::nullopt;
    m.executable = s[2] == 'x';
    s.remove_prefix(4);
    if (!take_char(s, ' ')) return std::nullopt;
    const auto offset = take_hex(s);
    if (!offset || !take_char(s, ' ')) return std::nullopt;
    const auto major = take_hex(s);
    if (!major || !take_char(s, ':')) return std::nullopt;
    const auto minor = take_hex(s);
    if (!minor || !take_char(s, ' ')) return std::nullopt;
    const auto inode = take_dec(s);
    if (!inode) return std::nullopt;
    skip_spaces(s);
    if (*end <= *start) return std::nullopt;
    m.start = *start;
    m.end = *end;
    m.offset = *offset;
    m.dev = makedev(unsigned(*major), unsigned(*minor));
    m.inode = *inode;
    m.path.assign(s);
    return m;
}

}  // namespace

ProcessMaps ProcessMaps::parse(std::string_view text) {
    ProcessMaps maps;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        auto m = parse_line(line);
        // Data (anonymous memory, heap, stack, [vvar] and the like) has no symbols to offer.
        if (m && (m->path.starts_with('/') || m->path == "[vdso]" || (m->executable && m->anonymous())))
            maps.mappings_.push_back(std::move(*m));
    }
    std::sort(maps.mappings_.begin(), maps.mappings_.end(),
              [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
    return maps;
}

ProcessMaps ProcessMaps::of(int pid, std::vector<Mapping> mappings) {
    ProcessMaps maps;
    maps.pid_ = pid;
    maps.add(std::move(mappings));
    return maps;
}

void ProcessMaps::add(std::vector<Mapping> more) {
    for (Mapping& m : more) {
        // The known mappings overlapping [m.start, m.end): from the last one starting before
        // m.end back while they still end after m.start (they never overlap each other).
        auto last = std::lower_bound(mappings_.begin(), mappings_.end(), m.end,
                                     [](const Mapping& k, uint64_t end) { return k.start < end; });
        auto first = last;
        while (first != mappings_.begin() && std::prev(first)->end > m.start) --first;
        auto at = mappings_.erase(first, last);
        mappings_.insert(at, std::move(m));
    }
}

Result<ProcessMaps> ProcessMaps::read(int pid) {
    auto text = read_proc_maps(pid);
    if (!text) return text.error();
    ProcessMaps maps = parse(*text);
    maps.pid_ = pid;
    return maps;
}

const Mapping* ProcessMaps::find(uint64_t addr) const {
    auto it = std::upper_bound(mappings_.begin(), mappings_.end(), addr,
                               [](uint64_t a, const Mapping& m) { return a < m.start; });
    if (it == mappings_.begin()) return nullptr;
    --it;
    return addr < it->end ? &*it : nullptr;
}

}  // namespace memtrack
