#include "report/Functions.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/FrameNames.hpp"

namespace memtrack::report {
namespace {

// A site's function names, innermost first, as named_frames() gives them; one "[no stack]" /
// "[stack missing]" name without frames.
std::vector<std::string> names_of(const Site& s) {
    std::vector<std::string> out;
    for (NamedFrame& f : named_frames(s)) out.push_back(std::move(f.name));
    if (out.empty()) out.emplace_back(unknown_stack_name(s));
    return out;
}

// Where the site's frame `i` (innermost first, as names_of counts) is: the row's first site
// says it for the row.
void locate(FunctionRow& row, const Site& s, size_t i) {
    const std::vector<NamedFrame> frames = named_frames(s);
    if (i >= frames.size()) return;
    row.file = frames[i].file;
    row.line = frames[i].line;
    row.module = frames[i].module;
}

template <typename T>
bool before(const T& x, const T& y, Cost c) {
    const uint64_t a = cost_of(x.costs, c), b = cost_of(y.costs, c);
    return a != b ? a > b : x.name < y.name;
}

struct Building {
    Costs costs;
    std::map<std::string, Building> children;
};

std::vector<CallNode> finish(std::map<std::string, Building>& level, Cost c, size_t limit) {
    std::vector<CallNode> out;
    for (auto& [name, b] : level) out.push_back(CallNode{name, b.costs, {}, 0});
    std::sort(out.begin(), out.end(), [&](const CallNode& x, const CallNode& y) { return before(x, y, c); });
    if (out.size() > limit) out.resize(limit);
    for (CallNode& n : out) {
        auto& children = level.at(n.name).children;
        n.other_children = children.size() > limit ? children.size() - limit : 0;
        n.children = finish(children, c, limit);
    }
    return out;
}

std::vector<FunctionRow> sorted_rows(std::map<std::string, FunctionRow>& rows, Cost c) {
    std::vector<FunctionRow> out;
    for (auto& [name, row] : rows) out.push_back(std::move(row));
    std::sort(out.begin(), out.end(), [&](const FunctionRow& x, const FunctionRow& y) { return before(x, y, c); });
    return out;
}

}  // namespace

void Costs::add(const Site& s) {
    calls += s.calls;
    bytes += s.bytes;
    peak_bytes += s.peak_bytes;
    const Amount leaked = amount(s, Cost::Leaked);
    leaked_bytes += leaked.bytes;
    leaked_blocks += leaked.blocks;
    temporary_calls += s.temporary_calls;
}

uint64_t cost_of(const Costs& k, Cost c) {
    switch (c) {
        case Cost::Peak: return k.peak_bytes;
        case Cost::Leaked: return k.leaked_bytes;
        case Cost::Allocated: return k.bytes;
        case Cost::Allocations: return k.calls;
        case Cost::Temporary: return k.temporary_calls;
    }
    return 0;
}

FunctionTable by_function(const Analysis& a, Cost c, size_t limit) {
    std::map<std::string, FunctionRow> rows;
    for (const Site& s : a.sites) {
        if (s.calls == 0) continue;
        const std::string name = names_of(s).front();
        auto [it, fresh] = rows.try_emplace(name);
        if (fresh) {
            it->second.name = name;
            locate(it->second, s, 0);
        }
        it->second.costs.add(s);
    }
    FunctionTable t;
    t.rows = sorted_rows(rows, c);
    for (size_t i = limit; i < t.rows.size(); ++i) {
        ++t.other_rows;
        const Costs& k = t.rows[i].costs;
        t.other.calls += k.calls;
        t.other.bytes += k.bytes;
        t.other.peak_bytes += k.peak_bytes;
        t.other.leaked_bytes += k.leaked_bytes;
        t.other.leaked_blocks += k.leaked_blocks;
        t.other.temporary_calls += k.temporary_calls;
    }
    if (t.rows.size() > limit) t.rows.resize(limit);
    return t;
}

std::vector<CallNode> call_tree(const Analysis& a, bool bottom_up, Cost c, size_t limit, size_t depth) {
    std::map<std::string, Building> roots;
    for (const Site& s : a.sites) {
        if (s.calls == 0) continue;
        std::vector<std::string> path = names_of(s);
        if (!bottom_up) std::reverse(path.begin(), path.end());
        std::map<std::string, Building>* level = &roots;
        for (size_t i = 0; i < path.size() && i < depth; ++i) {
            Building& b = (*level)[path[i]];
            b.costs.add(s);
            level = &b.children;
        }
    }
    return finish(roots, c, limit);
}

Result<CallerCallee> caller_callee(const Analysis& a, const std::string& name, Cost c) {
    // Every site's names, named once: each stack as the distinct names it holds (nodes of
    // `all`, whose addresses stay), read again below once the function is known.
    std::set<std::string> all;
    std::vector<std::vector<const std::string*>> stacks;
    stacks.reserve(a.sites.size());
    for (const Site& s : a.sites) {
        std::vector<const std::string*>& stack = stacks.emplace_back();
        for (std::string& n : names_of(s)) stack.push_back(&*all.insert(std::move(n)).first);
    }
    std::string function;
    if (all.contains(name)) {
        function = name;
    } else {
        std::vector<std::string> matches;
        for (const std::string& n : all)
            if (n.find(name) != std::string::npos) matches.push_back(n);
        if (matches.size() != 1) {
            constexpr size_t kNamed = 5;
            std::string listed;
            for (size_t i = 0; i < matches.size() && i < kNamed; ++i) listed += fmt::format("{}'{}'", i ? ", " : "", matches[i]);
            if (matches.size() > kNamed) listed += fmt::format(" and {} more", matches.size() - kNamed);
            return Error{"--caller-callee", name, 0,
                         matches.empty() ? std::string("no function of the report has this name or contains it")
                                         : fmt::format("{} functions contain it: {}", matches.size(), listed)};
        }
        function = matches.front();
    }
    CallerCallee out;
    out.function = function;
    const std::string* const wanted = &*all.find(function);
    std::map<std::string, FunctionRow> callers, callees;
    for (size_t k = 0; k < a.sites.size(); ++k) {
        const Site& s = a.sites[k];
        const std::vector<const std::string*>& names = stacks[k];
        // Name -> its frame in this stack (the first one, when it recurs).
        std::map<std::string, size_t> site_callers, site_callees;
        bool in = false;
        for (size_t i = 0; i < names.size(); ++i) {
            if (names[i] != wanted) continue;
            in = true;
            if (i + 1 < names.size()) site_callers.try_emplace(*names[i + 1], i + 1);
            if (i > 0) site_callees.try_emplace(*names[i - 1], i - 1);
        }
        if (!in) continue;
        out.total.add(s);
        if (names.front() == wanted) out.self.add(s);
        for (auto [set, rows] : {std::pair{&site_callers, &callers}, std::pair{&site_callees, &callees}})
            for (const auto& [n, i] : *set) {
                auto [it, fresh] = rows->try_emplace(n);
                if (fresh) {
                    it->second.name = n;
                    locate(it->second, s, i);
                }
                it->second.costs.add(s);
            }
    }
    out.callers = sorted_rows(callers, c);
    out.callees = sorted_rows(callees, c);
    return out;
}

}  // namespace memtrack::report
