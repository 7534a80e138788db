#include "report/FlameTree.hpp"

#include <algorithm>
#include <vector>

#include <boost/json/array.hpp>

#include "report/FrameNames.hpp"

namespace memtrack::report {
namespace {

size_t prune_below(FlameNode& node, uint64_t min_value, size_t depth_left) {
    if (depth_left == 0) {
        node.children.clear();
        return 1;
    }
    uint64_t other = 0;
    for (auto it = node.children.begin(); it != node.children.end();) {
        if (it->second.value < min_value && it->first != "other") {
            other += it->second.value;
            it = node.children.erase(it);
        } else {
            ++it;
        }
    }
    if (other) node.children["other"].value += other;
    size_t n = 1;
    for (auto& [name, child] : node.children) n += prune_below(child, min_value, depth_left - 1);
    return n;
}

}  // namespace

FlameNode flame_tree(const Analysis& a, Cost c) {
    FlameNode root;
    for (const Site& s : a.sites) {
        const uint64_t v = cost_value(s, c);
        if (v == 0) continue;
        root.value += v;
        FlameNode* node = &root;
        if (!s.frames || s.frames->empty()) {
            node->children[std::string(unknown_stack_name(s))].value += v;
            continue;
        }
        for (auto it = s.frames->rbegin(); it != s.frames->rend(); ++it) {
            node = &node->children[frame_name(**it)];
            node->value += v;
        }
    }
    return root;
}

size_t prune(FlameNode& root, double min_share, size_t max_depth) {
    const auto min_value = uint64_t(double(root.value) * min_share);
    return prune_below(root, std::max<uint64_t>(min_value, 1), max_depth);
}

boost::json::object flame_json(const std::string& name, const FlameNode& node) {
    // Template-heavy C++ names can run to kilobytes; the page shows the start.
    constexpr size_t kMaxName = 400;
    const std::string shown = name.size() > kMaxName ? name.substr(0, kMaxName) + "..." : name;
    boost::json::object o{{"n", boost::json::string_view(shown.data(), shown.size())}, {"v", node.value}};
    if (node.children.empty()) return o;
    std::vector<const std::pair<const std::string, FlameNode>*> kids;
    for (const auto& kv : node.children) kids.push_back(&kv);
    std::stable_sort(kids.begin(), kids.end(), [](auto* x, auto* y) { return x->second.value > y->second.value; });
    boost::json::array c;
    for (auto* kv : kids) c.push_back(flame_json(kv->first, kv->second));
    o["c"] = std::move(c);
    return o;
}

}  // namespace memtrack::report
