#pragma once
// Request lines cut out of one client's byte stream. The socket reads into space() and commits
// what it got; next() hands out one line at a time. It holds at most one line and its newline
// (kMaxLine + 1 bytes): a longer line is reported as too long before more is read, so a client
// cannot make memtrack buffer without bound, and lines before it still come out first, in
// order. Bytes are not interpreted here (bad UTF-8 or JSON is the parser's to refuse), except
// that a \r before the newline is dropped. Pure code, so the limits are tested without a socket.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memtrack {

class LineFramer {
public:
    static constexpr size_t kMaxLine = 64 * 1024;  // bytes of one line, without its newline
    static constexpr size_t kMaxRead = 64 * 1024;  // bytes space() offers at once

    enum class Kind {
        Line,      // `line` is the next request line, without "\n" or "\r\n"
        TooLong,   // no newline within kMaxLine + 1 bytes: nothing more comes out
        NeedMore,  // no complete line buffered: read into space() and commit()
    };
    struct Frame {
        Kind kind;
        std::string_view line;  // valid until the next call on the framer
    };

    // Where the next read may go: at most kMaxRead bytes, never past kMaxLine + 1 buffered.
    // Only after next() said NeedMore.
    std::span<char> space();
    void commit(size_t n);  // n bytes of space() now hold data
    Frame next();
    Kind peek();  // what next() would say, taking nothing
    // At end of input, after next() said NeedMore: the last line, which had no newline, unless it
    // is only blanks (" \t\r"); its trailing \r is dropped. Empties the buffer.
    std::optional<std::string_view> finish();

    static std::string too_long_error();  // the reply's error text for TooLong

private:
    std::vector<char> buf_;  // unread bytes are [begin_, end_)
    size_t begin_ = 0;
    size_t end_ = 0;
    size_t scanned_ = 0;  // bytes from begin_ known to hold no newline
    size_t newline_ = 0;  // when peek() said Line: the newline's offset from begin_
};

}  // namespace memtrack
