#include "format/Record.hpp"

namespace memtrack {

std::optional<EventKind> kind_from_artifact_name(std::string_view name) {
    for (auto& [k, n] : kArtifactNames)
        if (n == name) return k;
    return std::nullopt;
}

}  // namespace memtrack
