#pragma once
// `memtrack track`: runs a command under tracking and writes its artifact.
#include <string>
#include <vector>

#include "cli/TrackOptions.hpp"

namespace memtrack {

// Returns memtrack's exit status: the command's, or non-zero when records were dropped.
// Throws FatalError for start-up failures.
int run_track(const TrackOptions& opt);

// The argv to exec: a single string with shell syntax runs through `bash -c`.
std::vector<std::string> command_argv(const std::vector<std::string>& command);

}  // namespace memtrack
