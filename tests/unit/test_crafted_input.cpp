// The readers against crafted files built to cost as much as possible (docs/SECURITY.md): a value
// that never ends, a value that arrives in many pieces, a stack longer than any captured one.
// They assert the work done and what was held, never the time taken.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <msgpack.hpp>
#include <zstd.h>

#include "TestFiles.hpp"
#include "bpf/record.h"
#include "format/ArtifactReader.hpp"
#include "format/MsgpackStream.hpp"
#include "format/StacksFile.hpp"

using namespace memtrack;
using namespace memtrack::unittest;

namespace {

// An array of 64 arrays of 64 strings of 4096 bytes (16 MiB, within the artifact reader's
// per-header limits), cut before its last byte: on its own it compresses to a few KiB.
std::string unfinished_value() {
    std::string raw;
    const std::string str_header("\xda\x10\x00", 3);  // str16 of 4096 bytes
    raw += std::string("\xdc\x00\x40", 3);            // array16 of 64
    for (int i = 0; i < 64; ++i) {
        raw += std::string("\xdc\x00\x40", 3);
        for (int j = 0; j < 64; ++j) raw += str_header + std::string(4096, 'a');
    }
    raw.pop_back();
    return raw;
}

}  // namespace

TEST_CASE("crafted input: a value that never ends is rejected at the bound, not read to the end") {
    TempDir dir;
    const std::string path = dir / "1.MemtrackArtifact.msgpack";
    write_zstd_file(path, unfinished_value());
    uint64_t events = 0;
    auto r = read_artifact(path, [&](const Event&) { ++events; });
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == "corrupt event at decompressed offset 0: value longer than 65536 bytes");
    CHECK(events == 0);
}

TEST_CASE("crafted input: a value arriving in many chunks is parsed in linear work and bounded memory") {
    TempDir dir;
    const std::string path = dir / "x";
    const std::string raw = unfinished_value();
    write_zstd_file(path, raw);
    const msgpack::unpack_limit limits(64, 64, 4096, 4096, 4096, 4);
    msgpack_stream::Work work;
    uint64_t values = 0;
    auto on_value = [&](const msgpack::object&, uint64_t) -> std::optional<std::string> {
        ++values;
        return std::nullopt;
    };
    // Room for the whole value: it is cut short by the end of the stream, after work linear in its
    // size (re-parsing it at every 128 KiB chunk, as before, cost about 64 times its size).
    auto r = msgpack_stream::read_stream(path, limits, 32 << 20, {.value = "v", .file = "f"}, on_value, {}, &work);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() ==
          fmt::format("corrupt v at decompressed offset 0: value cut short by the end of the stream ({} bytes left)",
                      raw.size()));
    CHECK(values == 0);
    CHECK_MESSAGE(work.parsed_bytes <= 3 * raw.size(), work.parsed_bytes, " bytes parsed for ", raw.size());

    // A bound of 1 MiB: the reader holds little more than that before rejecting the value.
    msgpack_stream::Work bounded;
    r = msgpack_stream::read_stream(path, limits, 1 << 20, {.value = "v", .file = "f"}, on_value, {}, &bounded);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == "corrupt v at decompressed offset 0: value longer than 1048576 bytes");
    CHECK_MESSAGE(bounded.max_pending <= (1 << 20) + (256 << 10), bounded.max_pending, " bytes held");
    CHECK(bounded.parsed_bytes <= 3 * ((1 << 20) + 1));
}

namespace {

std::vector<Frame> frames_of(uint32_t addresses, uint32_t inlined_each) {
    std::vector<Frame> frames;
    for (uint32_t a = 0; a < addresses; ++a) {
        Frame f;
        f.ip = a;
        f.inlined = true;
        for (uint32_t i = 0; i < inlined_each; ++i) frames.push_back(f);
        f.inlined = false;
        frames.push_back(f);
    }
    return frames;
}

Result<uint64_t> read_one_stack(const std::string& path, const std::vector<Frame>& frames, size_t& delivered) {
    std::string raw;
    encode_stack(7, 1, frames, raw);
    write_zstd_file(path, raw);
    delivered = 0;
    return read_stacks(path, [&](uint64_t, int32_t, std::vector<Frame>&& f) { delivered = f.size(); });
}

}  // namespace

TEST_CASE("crafted input: a stack beyond what memtrack can capture is rejected") {
    TempDir dir;
    const std::string path = dir / "1.MemtrackStacks.msgpack";
    size_t delivered = 0;

    // The largest stack memtrack can write: every address of --max-frames' limit, deeply inlined.
    auto ok = read_one_stack(path, frames_of(MT_MAX_FRAMES, 63), delivered);
    REQUIRE_MESSAGE(ok.ok(), (ok.ok() ? "" : ok.error().message()));
    CHECK(delivered == MT_MAX_FRAMES * 64);

    auto more = read_one_stack(path, frames_of(MT_MAX_FRAMES + 1, 0), delivered);
    REQUIRE_FALSE(more.ok());
    CHECK(more.error().message() ==
          "corrupt stack at decompressed offset 0: frame 127: more than 127 addresses, the most a captured stack holds");
    CHECK(delivered == 0);

    auto deep = read_one_stack(path, frames_of(1, 64), delivered);
    REQUIRE_FALSE(deep.ok());
    CHECK(deep.error().message() ==
          "corrupt stack at decompressed offset 0: frame 63: more than 63 inlined frames at one address");
    CHECK(delivered == 0);
}

TEST_CASE("crafted input: a frame asking for a 128 MiB window is refused before it is allocated") {
    TempDir dir;
    const std::string path = dir / "1.MemtrackArtifact.msgpack";
    // A streamed frame (no content size) with windowLog 27: its header tells the decoder to hold
    // 128 MiB, whatever the content.
    ZSTD_CCtx* c = ZSTD_createCCtx();
    REQUIRE(c != nullptr);
    ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 27);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    const std::string raw(1000, '\xc0');  // nils: not events, but never reached
    std::string out(ZSTD_compressBound(raw.size()) + 64, '\0');
    ZSTD_inBuffer in{raw.data(), raw.size(), 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    REQUIRE_FALSE(ZSTD_isError(ZSTD_compressStream2(c, &o, &in, ZSTD_e_continue)));  // streamed: no size known
    REQUIRE(ZSTD_compressStream2(c, &o, &in, ZSTD_e_end) == 0);
    ZSTD_freeCCtx(c);
    out.resize(o.pos);
    write_file(path, out);
    auto r = read_artifact(path, [](const Event&) {});
    REQUIRE_FALSE(r.ok());
    const std::string m = r.error().message();
    CHECK_MESSAGE(m.starts_with("corrupt zstd stream at compressed offset "), m);
    CHECK_MESSAGE(m.ends_with(": Frame requires too much memory for decoding"), m);
}
