#pragma once
// Files for unit tests: a temporary folder, whole-file reads and writes, and a function's
// stdout and stderr captured the way a shell redirect would.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "../common/TempDir.hpp"

namespace memtrack::unittest {

using memtrack::testsupport::TempDir;

std::string read_file(const std::string& path);
void write_file(const std::string& path, std::string_view bytes);
// One zstd frame holding `raw`, for files whose decompressed bytes a test crafts by hand.
void write_zstd_file(const std::string& path, std::string_view raw);

struct Captured {
    int rc = -1;
    std::string out;
    std::string err;
};

// Runs `fn` with stdout and stderr sent to files in `dir`; its return value and what it printed.
Captured capture_output(const TempDir& dir, const std::function<int()>& fn);

}  // namespace memtrack::unittest
