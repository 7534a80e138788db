#pragma once
// The html report's page: its style and script, inlined (the page loads nothing from anywhere).
// The data goes into <script type="application/json" id="memtrack-data"> between the two halves.
#include <string_view>

namespace memtrack::report {

extern const std::string_view kHtmlHead;  // up to and including the data element's opening tag
extern const std::string_view kHtmlTail;  // from the data element's closing tag to the end

}  // namespace memtrack::report
