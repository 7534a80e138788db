#pragma once
// A folder memtrack keeps for itself (the unwind table cache), opened so that no other user can
// steer what root writes there or deletes from it. The path is walked one component at a time
// by descriptor, never following a symbolic link that a user other than us or root could have
// planted: a link is followed only when the folder holding it is writable by us or root alone.
// The folder reached must be ours and writable by nobody else (unlike OutputDir, a sticky
// shared folder is refused too: the cache is listed and pruned).
#include <sys/types.h>

#include <string>

#include "core/Fd.hpp"
#include "core/Result.hpp"

namespace memtrack {

// Opens the folder at `path` (O_RDONLY | O_DIRECTORY), creating missing components (the last
// with mode 0700) when `create`. Errors say which component and why, in one line.
Result<Fd> open_private_dir(const std::string& path, bool create);

}  // namespace memtrack
