#pragma once
// The html report page (src/report/HtmlPage.cpp) as the browser tests read it: the boxes of its
// flamegraph, and the expression that names one (for DevTools::click_element, centre and eval).
// For the root suite's report test and the unit suite's page test alike.
#include <string>
#include <vector>

#include "DevTools.hpp"

namespace memtrack::roottest {

struct FlameBox {
    std::string name;
    double left = 0;  // CSS pixels, from the flamegraph's left edge
    double width = 0;
    double top = 0;      // CSS pixels, from its top edge: the row
    bool dim = false;    // a box above the zoomed one
    bool match = false;  // highlighted by the search
};

// Every box of the flamegraph, in the page's order: the dimmed ones above the zoomed box, then
// the rest depth first.
std::vector<FlameBox> flame_boxes(DevTools& browser);
// The first of `boxes` named `name`; null when none is.
const FlameBox* flame_box(const std::vector<FlameBox>& boxes, const std::string& name);
// The page's first box named `name`, as a JavaScript expression.
std::string flame_box_expr(const std::string& name);

}  // namespace memtrack::roottest
