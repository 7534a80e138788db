#pragma once
// A file written as one zstd stream, with control over where blocks and frames end: the artifact
// must stay decodable up to the last flush() even if memtrack is killed right after it.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <zstd.h>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

class ZstdFileWriter {
public:
    // memtrack's artifact and stacks file level: a negative ("fast") level, because compression
    // is most of the Writer's time. Measured on a real churn_c artifact (34.8 MB of MessagePack)
    // with zstd -b: level 3 7.27x at 230 MB/s, level 1 7.95x at 359 MB/s, -1 7.69x at 554 MB/s,
    // -2 7.41x at 866 MB/s; events compress better at the fast levels than at 3. Still a
    // standard zstd stream: any reader decodes it.
    static constexpr int kDefaultLevel = -2;

    // Creates `path`, or truncates it when it may be reused (open_output_file, OutputFiles.hpp).
    static Result<ZstdFileWriter> create(const std::string& path, int level = kDefaultLevel);
    // Writes into `fd`, opened by OutputDir::create; `path` names it in errors.
    static Result<ZstdFileWriter> create(Fd fd, const std::string& path, int level = kDefaultLevel);

    ZstdFileWriter(ZstdFileWriter&&) noexcept = default;
    ZstdFileWriter& operator=(ZstdFileWriter&&) noexcept = default;
    ZstdFileWriter(const ZstdFileWriter&) = delete;
    ZstdFileWriter& operator=(const ZstdFileWriter&) = delete;
    // Releases the fd and the context without writing: a destructor cannot report a failed
    // write, so closing the frame is finish()'s job on every clean stop. Whatever was not
    // finished is lost past the last flush(), which is what a crash would lose anyway.
    ~ZstdFileWriter() = default;

    // Compresses `bytes`; zstd may keep them buffered until a block fills or flush()/finish().
    Result<void> write(std::string_view bytes);
    // Ends the current block and writes it out, so a streaming reader can decode everything
    // written so far even though the frame is still open.
    Result<void> flush();
    // Closes the current frame (epilogue and checksum). Writing afterwards starts a new frame in
    // the same file, which zstd readers treat as one continuing stream. Finishing twice in a row
    // writes nothing the second time; finishing before any write leaves one empty frame, because
    // a 0-byte file is not a valid artifact.
    Result<void> finish();

    // Bytes written to the file so far.
    uint64_t compressed_bytes() const { return compressed_bytes_; }
    // Bytes handed to write() so far.
    uint64_t raw_bytes() const { return raw_bytes_; }
    const std::string& path() const { return path_; }

private:
    struct CCtxDeleter {
        void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
    };

    ZstdFileWriter(std::string path, Fd fd, std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx);
    // Feeds `in` through the compressor with `mode` until zstd has nothing left to emit for it.
    Result<void> compress(std::string_view in, ZSTD_EndDirective mode);
    Result<void> write_all(const char* data, size_t len);

    std::string path_;
    Fd fd_;
    std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx_;
    std::unique_ptr<char[]> out_;
    size_t out_cap_ = 0;
    uint64_t compressed_bytes_ = 0;
    uint64_t raw_bytes_ = 0;
    bool frame_open_ = true;
};

}  // namespace memtrack
