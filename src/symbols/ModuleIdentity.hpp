#pragma once
// What makes two mapped files one module, so a module is loaded and indexed once and shared by
// every process (and every path) that maps it.
#include <sys/stat.h>

#include <string>
#include <string_view>

#include "symbols/ProcessMaps.hpp"

namespace memtrack {

// The key of a file as a process's maps show it: path, device and inode. Cheap, known before
// the file is opened: the first lookup of a mapping goes by it.
std::string file_key(const Mapping& m);

// The module's identity once opened: its GNU build-id (lowercase hex) when it has one, else
// the file's path, device, inode and modification time (a rebuilt file is another module).
std::string module_identity(std::string_view build_id, std::string_view path, const struct stat& st);

// Lowercase hex of `len` bytes.
std::string hex_bytes(const unsigned char* bits, int len);

}  // namespace memtrack
