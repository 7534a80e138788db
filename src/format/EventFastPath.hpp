#pragma once
// The artifact reader's fast path: decodes an event map in the form memtrack's own encoder
// (ArtifactEncoder.cpp) writes it, straight from the bytes, with no msgpack::object built.
//
// It only ever says "this is the event" or "not mine": anything else (another integer or map
// form, an unknown or repeated key, a missing key, a bad value, bytes that end early) is left
// to the generic msgpack-cxx path, which then decodes it or words the error. So what the fast
// path accepts is exactly what the generic path would make of those bytes, and every error
// message stays the generic path's.
#include <cstddef>

#include "format/Record.hpp"

namespace memtrack {

// The length of the event at data[0, len) after filling `e` (a default Event on entry), or 0
// when the generic path has to look at it.
size_t decode_event_fast(const char* data, size_t len, Event& e);

}  // namespace memtrack
