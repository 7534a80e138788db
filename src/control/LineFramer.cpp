#include "control/LineFramer.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace memtrack {

std::span<char> LineFramer::space() {
    if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    if (buf_.size() < kMaxLine + 1) buf_.resize(kMaxLine + 1);
    return {buf_.data() + end_, std::min(kMaxRead, buf_.size() - end_)};
}

void LineFramer::commit(size_t n) { end_ += std::min(n, buf_.size() - end_); }

LineFramer::Kind LineFramer::peek() {
    const char* from = buf_.data() + begin_;
    const size_t size = end_ - begin_;
    const void* nl = size > scanned_ ? std::memchr(from + scanned_, '\n', size - scanned_) : nullptr;
    if (nl) {
        newline_ = size_t(static_cast<const char*>(nl) - from);
        scanned_ = newline_;
        return Kind::Line;
    }
    scanned_ = size;
    return size > kMaxLine ? Kind::TooLong : Kind::NeedMore;
}

LineFramer::Frame LineFramer::next() {
    const Kind kind = peek();
    if (kind != Kind::Line) return {kind, {}};
    std::string_view line(buf_.data() + begin_, newline_);
    begin_ += newline_ + 1;
    scanned_ = 0;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return {Kind::Line, line};
}

std::optional<std::string_view> LineFramer::finish() {
    std::string_view rest(buf_.data() + begin_, end_ - begin_);
    begin_ = end_ = scanned_ = 0;
    if (rest.find_first_not_of(" \t\r") == std::string_view::npos) return std::nullopt;
    if (rest.back() == '\r') rest.remove_suffix(1);
    return rest;
}

std::string LineFramer::too_long_error() { return fmt::format("request line longer than {} bytes", kMaxLine); }

}  // namespace memtrack
