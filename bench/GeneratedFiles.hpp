#pragma once
// What the synthetic-recording generators (report_artifact, deep_stacks) share: files opened
// through memtrack's own ZstdFileWriter, and the first error ending the tool with one line.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "format/ZstdFileWriter.hpp"

namespace memtrack::bench {

inline void check(const char* tool, const Result<void>& r) {
    if (!r) {
        fmt::print(stderr, "{}: {}\n", tool, r.error().message());
        std::exit(1);
    }
}

inline ZstdFileWriter open_or_exit(const char* tool, const std::string& path) {
    auto w = ZstdFileWriter::create(path);
    if (!w) {
        fmt::print(stderr, "{}: {}\n", tool, w.error().message());
        std::exit(1);
    }
    return std::move(w).value();
}

// Hands `buf` to `w` once it passes 1 MiB (or always, with `last`), then empties it.
inline void write_some(const char* tool, ZstdFileWriter& w, std::string& buf, bool last = false) {
    if (!last && buf.size() <= (1 << 20)) return;
    check(tool, w.write(buf));
    buf.clear();
}

}  // namespace memtrack::bench
