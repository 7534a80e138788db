#pragma once
// The tests' temporary folder, for every suite: one from mkdtemp under $TMPDIR, removed with its
// content when the object dies; with MEMTRACK_KEEP_TMP=1 it is kept and its path printed, to
// look at what a failed test left.
#include <stdlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace memtrack::testsupport {

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "memtrack-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
        path_ = tmpl;
    }
    ~TempDir() {
        const char* keep = std::getenv("MEMTRACK_KEEP_TMP");
        if (keep && std::string_view(keep) == "1") {
            std::printf("kept %s\n", path_.c_str());
            return;
        }
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    // The path of `name` in the folder.
    std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

private:
    std::string path_;
};

}  // namespace memtrack::testsupport
