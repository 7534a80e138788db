#include "format/ZstdFileWriter.hpp"

#include "core/OutputFiles.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace memtrack {
namespace {

Error zstd_error(const char* op, const std::string& path, size_t code) {
    return Error{op, path, 0, ZSTD_getErrorName(code)};
}

}  // namespace

ZstdFileWriter::ZstdFileWriter(std::string path, Fd fd, std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx)
    : path_(std::move(path)),
      fd_(std::move(fd)),
      cctx_(std::move(cctx)),
      out_(new char[ZSTD_CStreamOutSize()]),
      out_cap_(ZSTD_CStreamOutSize()) {}

Result<ZstdFileWriter> ZstdFileWriter::create(const std::string& path, int level) {
    auto fd = open_output_file(path);
    if (!fd) return fd.error();
    return create(std::move(fd).value(), path, level);
}

Result<ZstdFileWriter> ZstdFileWriter::create(Fd fd, const std::string& path, int level) {
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
    if (!cctx) return Error{"ZSTD_createCCtx", path, ENOMEM, {}};
    size_t rc = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
    if (ZSTD_isError(rc)) return zstd_error("ZSTD_c_compressionLevel", path, rc);
    // A frame checksum lets `memtrack dump` tell a damaged file from a merely odd one.
    rc = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
    if (ZSTD_isError(rc)) return zstd_error("ZSTD_c_checksumFlag", path, rc);
    return ZstdFileWriter(path, std::move(fd), std::move(cctx));
}

Result<void> ZstdFileWriter::write(std::string_view bytes) {
    if (bytes.empty()) return {};
    raw_bytes_ += bytes.size();
    frame_open_ = true;
    return compress(bytes, ZSTD_e_continue);
}

Result<void> ZstdFileWriter::flush() { return compress({}, ZSTD_e_flush); }

Result<void> ZstdFileWriter::finish() {
    if (!frame_open_) return {};
    auto r = compress({}, ZSTD_e_end);
    if (r) frame_open_ = false;
    return r;
}

Result<void> ZstdFileWriter::compress(std::string_view in, ZSTD_EndDirective mode) {
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    // e_continue is done once the input is consumed; e_flush and e_end are done when zstd
    // reports nothing left to write (return value 0).
    for (;;) {
        ZSTD_outBuffer output{out_.get(), out_cap_, 0};
        const size_t remaining = ZSTD_compressStream2(cctx_.get(), &output, &input, mode);
        if (ZSTD_isError(remaining)) return zstd_error("ZSTD_compressStream2", path_, remaining);
        if (output.pos > 0) {
            auto r = write_all(out_.get(), output.pos);
            if (!r) return r;
        }
        const bool done = mode == ZSTD_e_continue ? input.pos == input.size : remaining == 0;
        if (done) return {};
    }
}

Result<void> ZstdFileWriter::write_all(const char* data, size_t len) {
    while (len > 0) {
        const ssize_t n = ::write(fd_.get(), data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno_error("write", path_);
        }
        data += n;
        len -= size_t(n);
        compressed_bytes_ += uint64_t(n);
    }
    return {};
}

}  // namespace memtrack
