#pragma once
// The writing half of the MemtrackArtifact codec (docs: shared/formats/memtrack-artifact.md).
#include <cstddef>
#include <string>

#include "format/Record.hpp"

namespace memtrack {

// The most bytes one event takes: a Realloc with every key and every integer in its widest form.
inline constexpr size_t kMaxEncodedEventBytes = 128;

// Writes `e` as one MessagePack map at `out`, which must have room for kMaxEncodedEventBytes,
// and returns the end of what it wrote: byte for byte what the benchmark runner expects.
// Only artifact kinds (is_artifact_kind) belong in the artifact: passing any other kind is a
// programming error, caught by an assert in debug builds; release builds write nothing, because
// one undecodable value would make the runner drop every event after it.
char* encode_event(const Event& e, char* out);

// The same, appended to `out`.
void encode_event(const Event& e, std::string& out);

// encode_event(*decode_record(r), out) without building the Event: the Writer's path for the
// artifact kinds.
char* encode_record(const mt_record& r, char* out);

}  // namespace memtrack
