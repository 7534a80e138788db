#pragma once
// The reading half of the MemtrackArtifact codec, for `memtrack dump` and the tests.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "core/Result.hpp"
#include "format/Record.hpp"

namespace memtrack {

// Streams the artifact at `path`, calling `on_event` for each event in file order, and returns
// how many there were. Memory stays bounded by zstd's window plus one event, whatever the size.
//
// Accepted like the runner accepts it: keys in any order, unknown keys ignored, keys that do not
// belong to the event's kind (size on Free, old_addr off Realloc, stack_hash off allocations)
// ignored. Rejected: a non-map value, a missing required key, a known key with the wrong value
// type or range, a duplicate key, an unknown `type`.
//
// On a problem the events before it have already been delivered, and the Error's message()
// says where:
//   "corrupt event at decompressed offset N: <reason>"
//   "corrupt zstd stream at compressed offset N: <zstd's reason>"
//   "truncated artifact: unfinished zstd frame at compressed offset N: file ends at byte M"
//     (N is where that frame starts)
//   "empty artifact (0 bytes)"
// and open/read failures carry their errno.
Result<uint64_t> read_artifact(const std::string& path, const std::function<void(const Event&)>& on_event);

// The same read, decompressing and decoding on a thread of its own while `on_events` takes the
// events on the caller's thread, in file order, in batches of at most kReadAheadBatch: the
// report's analysis of one event and the decoding of the next then run on two cores. At most
// kReadAheadSlots batches wait decoded (1 MiB), so memory stays bounded as read_artifact's does.
// Same answer and errors as read_artifact, given after every event before the problem has been
// taken. An exception from `on_events` stops the reading thread and propagates; one on the
// reading thread propagates from here once the batches before it are taken.
inline constexpr size_t kReadAheadBatch = 1024;
inline constexpr size_t kReadAheadSlots = 16;
Result<uint64_t> read_artifact_ahead(const std::string& path,
                                     const std::function<void(std::span<const Event>)>& on_events);

}  // namespace memtrack
