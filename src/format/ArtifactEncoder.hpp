#pragma once
// The writing half of the MemtrackArtifact codec (docs: shared/formats/memtrack-artifact.md).
#include <string>

#include "format/Record.hpp"

namespace memtrack {

// Appends `e` to `out` as one MessagePack map, byte for byte what the benchmark runner expects.
// Only artifact kinds (is_artifact_kind) belong in the artifact: passing any other kind is a
// programming error, caught by an assert in debug builds; release builds append nothing, because
// one undecodable value would make the runner drop every event after it.
void encode_event(const Event& e, std::string& out);

}  // namespace memtrack
