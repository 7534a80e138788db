// libFuzzer target: the control request parser (parse_request), on any line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <boost/json.hpp>

#include "actors/Request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    const memtrack::Request r = memtrack::parse_request(line);
    // An echoed id must itself be JSON: the reply carries it verbatim.
    if (r.id) {
        boost::system::error_code ec;
        boost::json::parse(*r.id, ec);
        if (ec) __builtin_trap();
    }
    if (!r.error && r.cmd.empty()) __builtin_trap();
    if (r.cmd == "attach" && !r.error && (!r.pid || *r.pid <= 0)) __builtin_trap();
    return 0;
}
