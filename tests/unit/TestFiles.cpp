#include "TestFiles.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <zstd.h>

namespace memtrack::unittest {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    REQUIRE(out.good());
}

void write_zstd_file(const std::string& path, std::string_view raw) {
    std::string z(ZSTD_compressBound(raw.size()), '\0');
    const size_t n = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 3);
    REQUIRE(!ZSTD_isError(n));
    z.resize(n);
    write_file(path, z);
}

Captured capture_output(const TempDir& dir, const std::function<int()>& fn) {
    const std::string out_path = dir / "stdout";
    const std::string err_path = dir / "stderr";
    std::fflush(stdout);
    std::fflush(stderr);
    const int saved_out = ::dup(STDOUT_FILENO);
    const int saved_err = ::dup(STDERR_FILENO);
    const int out_fd = ::open(out_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    const int err_fd = ::open(err_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    REQUIRE((saved_out >= 0 && saved_err >= 0 && out_fd >= 0 && err_fd >= 0));
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    Captured c;
    c.rc = fn();
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out, STDOUT_FILENO);
    ::dup2(saved_err, STDERR_FILENO);
    for (int fd : {saved_out, saved_err, out_fd, err_fd}) ::close(fd);
    c.out = read_file(out_path);
    c.err = read_file(err_path);
    return c;
}

}  // namespace memtrack::unittest
