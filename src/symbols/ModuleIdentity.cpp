#include "symbols/ModuleIdentity.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace memtrack {

std::string file_key(const Mapping& m) { return fmt::format("{}\n{}:{}", m.path, m.dev, m.inode); }

std::string module_identity(std::string_view build_id, std::string_view path, const struct stat& st) {
    if (!build_id.empty()) return std::string(build_id);
    return fmt::format("{}\n{}:{}:{}.{}", path, uint64_t(st.st_dev), uint64_t(st.st_ino), int64_t(st.st_mtim.tv_sec),
                       int64_t(st.st_mtim.tv_nsec));
}

std::string hex_bytes(const unsigned char* bits, int len) {
    std::string out;
    out.reserve(size_t(len) * 2);
    for (int i = 0; i < len; ++i) {
        out += "0123456789abcdef"[bits[i] >> 4];
        out += "0123456789abcdef"[bits[i] & 15];
    }
    return out;
}

}  // namespace memtrack
