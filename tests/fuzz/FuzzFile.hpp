#pragma once
// What the file readers' fuzz targets share: the input as a file the reader can open by path.
// The first byte chooses how: 0, the rest is the file itself (zstd framing fuzzed too);
// otherwise the rest is the decompressed stream, put in one zstd frame (the MessagePack fuzzed).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <zstd.h>

namespace memtrack::fuzz {

class FuzzFile {
public:
    FuzzFile(const uint8_t* data, size_t size) {
        fd_ = ::memfd_create("fuzz", MFD_CLOEXEC);
        path_ = "/proc/self/fd/" + std::to_string(fd_);
        if (size == 0) return;
        const char* body = reinterpret_cast<const char*>(data + 1);
        const size_t len = size - 1;
        if (data[0] == 0) {
            write_all(body, len);
            return;
        }
        std::vector<char> out(ZSTD_compressBound(len));
        const size_t n = ZSTD_compress(out.data(), out.size(), body, len, 1);
        if (!ZSTD_isError(n)) write_all(out.data(), n);
    }
    ~FuzzFile() { ::close(fd_); }
    FuzzFile(const FuzzFile&) = delete;
    FuzzFile& operator=(const FuzzFile&) = delete;
    const std::string& path() const { return path_; }

private:
    void write_all(const char* p, size_t n) {
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w <= 0) return;
            p += w;
            n -= size_t(w);
        }
    }
    int fd_ = -1;
    std::string path_;
};

}  // namespace memtrack::fuzz
