#include "ReportPage.hpp"

#include <boost/json.hpp>

namespace memtrack::roottest {

std::vector<FlameBox> flame_boxes(DevTools& browser) {
    const boost::json::value v = browser.eval(
        "Array.from(document.querySelectorAll('#flame .fg')).map((d) => [d.textContent, parseFloat(d.style.left), "
        "parseFloat(d.style.width), parseFloat(d.style.top), d.classList.contains('dim'), d.classList.contains('match')])");
    std::vector<FlameBox> out;
    for (const boost::json::value& x : v.as_array()) {
        const boost::json::array& a = x.as_array();
        out.push_back({std::string(a[0].as_string()), a[1].to_number<double>(), a[2].to_number<double>(),
                       a[3].to_number<double>(), a[4].as_bool(), a[5].as_bool()});
    }
    return out;
}

const FlameBox* flame_box(const std::vector<FlameBox>& boxes, const std::string& name) {
    for (const FlameBox& b : boxes)
        if (b.name == name) return &b;
    return nullptr;
}

std::string flame_box_expr(const std::string& name) {
    return "Array.from(document.querySelectorAll('#flame .fg')).find((d) => d.textContent === '" + name + "')";
}

}  // namespace memtrack::roottest
