// LineFramer: request lines cut out of a byte stream, and the line limit, without a socket.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "control/LineFramer.hpp"

using memtrack::LineFramer;
using Kind = LineFramer::Kind;

namespace {

// What a framer gives for `input` read `step` bytes at a time: each line, "<too long>" when the
// limit was hit (then nothing more is read), and "<eof:...>" for what finish() returns at the end.
std::vector<std::string> frames(const std::string& input, size_t step = LineFramer::kMaxRead) {
    std::vector<std::string> out;
    LineFramer f;
    size_t pos = 0;
    for (;;) {
        const auto frame = f.next();
        if (frame.kind == Kind::Line) {
            out.emplace_back(frame.line);
            continue;
        }
        if (frame.kind == Kind::TooLong) {
            out.emplace_back("<too long>");
            return out;
        }
        if (pos == input.size()) break;
        const auto space = f.space();
        REQUIRE(!space.empty());
        REQUIRE(space.size() <= LineFramer::kMaxRead);
        const size_t n = std::min({step, space.size(), input.size() - pos});
        std::memcpy(space.data(), input.data() + pos, n);
        f.commit(n);
        pos += n;
    }
    if (auto rest = f.finish()) out.push_back("<eof:" + std::string(*rest) + ">");
    return out;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("line framer: lines in order, however the bytes arrive") {
    const std::string input = "{\"cmd\":\"ping\"}\n\n  \nabc\r\n\r\nx\ry\nlast";
    const Lines expected = {"{\"cmd\":\"ping\"}", "", "  ", "abc", "", "x\ry", "<eof:last>"};
    CHECK(frames(input) == expected);
    for (size_t step : {1, 2, 3, 7, 16}) {
        CAPTURE(step);
        CHECK(frames(input, step) == expected);
    }
}

TEST_CASE("line framer: at end of input a last line without newline counts unless it is blank") {
    CHECK(frames("a\nb") == Lines{"a", "<eof:b>"});
    CHECK(frames("a\nb\r") == Lines{"a", "<eof:b>"});
    CHECK(frames("a\n \t\r") == Lines{"a"});
    CHECK(frames("a\n") == Lines{"a"});
    CHECK(frames("") == Lines{});
    CHECK(frames(" \r x") == Lines{"<eof: \r x>"});
}

TEST_CASE("line framer: a line of 65536 bytes passes, one byte more is too long") {
    REQUIRE(LineFramer::kMaxLine == 65536);
    const std::string max(LineFramer::kMaxLine, 'y');
    CHECK(frames(max + "\nz\n") == Lines{max, "z"});
    CHECK(frames(max.substr(1) + "\r\n") == Lines{max.substr(1)});
    CHECK(frames(max + "\r\n") == Lines{"<too long>"});  // a \r before the newline counts
    CHECK(frames(max) == Lines{"<eof:" + max + ">"});
    // One byte over: reported as soon as kMaxLine + 1 bytes hold no newline, lines before it first.
    CHECK(frames("a\n" + max + "yy\nb\n") == Lines{"a", "<too long>"});
    CHECK(frames("a\n" + max + "y", 1000) == Lines{"a", "<too long>"});
    CHECK(frames(std::string(3 * LineFramer::kMaxLine, 'q'), 4096) == Lines{"<too long>"});
    CHECK(LineFramer::too_long_error() == "request line longer than 65536 bytes");
}

TEST_CASE("line framer: it never buffers more than one line and its newline") {
    LineFramer f;
    size_t buffered = 0;
    while (f.peek() == Kind::NeedMore) {
        const auto space = f.space();
        REQUIRE(!space.empty());
        std::fill(space.begin(), space.end(), 'x');
        f.commit(space.size());
        buffered += space.size();
    }
    CHECK(f.peek() == Kind::TooLong);
    CHECK(buffered == LineFramer::kMaxLine + 1);
    CHECK(f.next().kind == Kind::TooLong);  // and stays so
}

TEST_CASE("line framer: peek takes nothing; a line's bytes stay put until the next call") {
    LineFramer f;
    const std::string data = "one\ntwo\n";
    auto space = f.space();
    std::memcpy(space.data(), data.data(), data.size());
    f.commit(data.size());
    CHECK(f.peek() == Kind::Line);
    CHECK(f.peek() == Kind::Line);
    auto first = f.next();
    REQUIRE(first.kind == Kind::Line);
    CHECK(first.line == "one");
    CHECK(f.next().line == "two");
    CHECK(f.peek() == Kind::NeedMore);
    CHECK_FALSE(f.finish().has_value());
}
