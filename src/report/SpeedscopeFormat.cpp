// --format speedscope: speedscope's file format (https://www.speedscope.app/file-format-schema.json),
// one sampled profile per cost: bytes live at the peak, leaked, allocated, and allocation counts.
// Each site is one sample, its frames root first, weighted by the cost.
#include <map>
#include <tuple>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "report/FrameNames.hpp"
#include "report/Output.hpp"

namespace memtrack::report {
namespace json = boost::json;
namespace {

json::string_view js(std::string_view s) { return json::string_view(s.data(), s.size()); }

// speedscope's shared frame list: one entry per (name, file, line).
class FrameList {
public:
    size_t index(const Frame& f) {
        std::string name = frame_name(f);
        auto key = std::make_tuple(name, f.file, f.line);
        auto [it, fresh] = index_.try_emplace(key, frames_.size());
        if (fresh) {
            json::object o{{"name", js(name)}};
            if (!f.file.empty()) {
                o["file"] = js(f.file);
                o["line"] = f.line;
            }
            frames_.push_back(std::move(o));
        }
        return it->second;
    }
    size_t index_of_name(std::string_view name) {
        Frame f;
        f.function = std::string(name);
        return index(f);
    }
    json::array take() { return std::move(frames_); }

private:
    std::map<std::tuple<std::string, std::string, uint32_t>, size_t> index_;
    json::array frames_;
};

json::object profile(const Analysis& a, Cost c, FrameList& frames) {
    json::array samples, weights;
    uint64_t total = 0;
    for (const Site& s : a.sites) {
        const uint64_t v = cost_value(s, c);
        if (v == 0) continue;
        json::array stack;
        if (s.frames && !s.frames->empty())
            for (auto it = s.frames->rbegin(); it != s.frames->rend(); ++it) stack.push_back(frames.index(**it));
        else
            stack.push_back(frames.index_of_name(unknown_stack_name(s)));
        samples.push_back(std::move(stack));
        weights.push_back(v);
        total += v;
    }
    const bool counts = c == Cost::Allocations;
    return json::object{{"type", "sampled"},
                        {"name", js(cost_name(c))},
                        {"unit", counts ? "none" : "bytes"},
                        {"startValue", 0},
                        {"endValue", total},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}};
}

}  // namespace

std::string speedscope_report(const Analysis& a, const OutputOptions& o) {
    FrameList frames;
    json::array profiles;
    for (Cost c : {Cost::Peak, Cost::Leaked, Cost::Allocated, Cost::Allocations}) profiles.push_back(profile(a, c, frames));
    json::object out{{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                     {"name", js(o.title)},
                     {"exporter", "memtrack " MEMTRACK_VERSION},
                     {"activeProfileIndex", 0}};
    out["shared"] = json::object{{"frames", frames.take()}};
    out["profiles"] = std::move(profiles);
    std::string s = json::serialize(out);
    s += '\n';
    return s;
}

}  // namespace memtrack::report
