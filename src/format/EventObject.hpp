#pragma once
// The artifact reader's generic path: one decoded MessagePack value to an Event, with the
// checks and the error wording ArtifactReader.hpp describes. Apart from the reader so the
// tests can hold its fast path (EventFastPath.hpp) against it.
#include <optional>
#include <string>

#include <msgpack.hpp>

#include "format/Record.hpp"

namespace memtrack {

// Fills `e` (a default Event on entry) from `o`; returns why `o` is not an event otherwise.
std::optional<std::string> event_from_object(const msgpack::object& o, Event& e);

}  // namespace memtrack
