#pragma once
// The call tree a flamegraph draws: sites merged by frame names from the root down, each node
// the sum of its sites' cost. Nodes under a share of the total are folded into one "other" node
// per parent, so the tree stays small whatever the input.
#include <cstdint>
#include <map>
#include <string>

#include <boost/json/object.hpp>

#include "report/Analysis.hpp"
#include "report/Ranking.hpp"

namespace memtrack::report {

struct FlameNode {
    uint64_t value = 0;
    std::map<std::string, FlameNode> children;
};

// The root ("all") holds every site with a non-zero cost.
FlameNode flame_tree(const Analysis& a, Cost c);

// Folds, under every node, the children below `min_share` of the root's value into one child
// named "other"; also cuts the tree below `max_depth`. Returns the number of nodes left.
size_t prune(FlameNode& root, double min_share, size_t max_depth);

// {"n": name, "v": value, "c": [children, largest first]}; "c" left out for a leaf.
boost::json::object flame_json(const std::string& name, const FlameNode& node);

}  // namespace memtrack::report
