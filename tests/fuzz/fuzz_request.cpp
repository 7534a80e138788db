// libFuzzer target: the control protocol's pure parts, on any input: cut into request lines by
// LineFramer, each line parsed (parse_request) and answered (reply_line).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "control/LineFramer.hpp"
#include "control/Request.hpp"

namespace {

void check_line(std::string_view line) {
    if (line.size() > memtrack::LineFramer::kMaxLine || line.find('\n') != std::string_view::npos) __builtin_trap();
    const memtrack::Request r = memtrack::parse_request(line);
    // An echoed id must itself be JSON: the reply carries it verbatim.
    if (r.id) {
        boost::system::error_code ec;
        boost::json::parse(*r.id, ec);
        if (ec) __builtin_trap();
    }
    if (!r.error && !r.command) __builtin_trap();
    if (r.command) {
        // Every argument the command takes was given and is within its kind's range.
        for (const auto& arg : r.command->arguments) {
            if (arg.kind == memtrack::CommandArgument::Kind::Pid) {
                if (!r.args.pid || *r.args.pid <= 0) __builtin_trap();
            } else {
                if (!r.args.name || r.args.name->empty() || r.args.name->size() > memtrack::kMaxNameBytes) __builtin_trap();
            }
        }
    }
    // Whatever the request, its reply is one line of JSON.
    const std::string reply = memtrack::reply_line(r.id, memtrack::Error{r.error.value_or("refused"), {}, 0, {}});
    boost::system::error_code ec;
    boost::json::parse(reply, ec);
    if (ec || reply.find('\n') != reply.size() - 1) __builtin_trap();
}

// The input cut into lines, read `step(i)` bytes at a time (never more than space() offers): the
// lines, then "TOO LONG" when a line was over the limit, or the last line without its newline.
template <typename Step>
std::vector<std::string> frame(const uint8_t* data, size_t size, Step step) {
    std::vector<std::string> lines;
    memtrack::LineFramer framer;
    size_t pos = 0;
    for (size_t i = 0;; ++i) {
        const memtrack::LineFramer::Frame f = framer.next();
        if (f.kind == memtrack::LineFramer::Kind::Line) {
            lines.emplace_back(f.line);
            continue;
        }
        if (f.kind == memtrack::LineFramer::Kind::TooLong) return lines.emplace_back("TOO LONG"), lines;
        if (pos == size) break;
        const auto space = framer.space();
        if (space.empty()) __builtin_trap();
        const size_t n = std::min({step(i), space.size(), size - pos});
        std::memcpy(space.data(), data + pos, n);
        framer.commit(n);
        pos += n;
    }
    if (auto rest = framer.finish()) lines.emplace_back(*rest);
    return lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // How the bytes arrive must not change the lines.
    const auto whole = frame(data, size, [](size_t) { return size_t(-1); });
    const auto small = frame(data, size, [](size_t i) { return i % 13 + 1; });
    if (whole != small) __builtin_trap();
    for (const auto& line : whole)
        if (line != "TOO LONG") check_line(line);
    return 0;
}
