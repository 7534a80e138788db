#include "symbols/MappedObjects.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdio>
#include <sstream>
#include <set>
#include <utility>

#include "core/ProcMaps.hpp"

namespace memtrack {

std::string openable_path(pid_t pid, const std::string& path, uint64_t dev, uint64_t ino) {
    // The path as the process sees it; another mount namespace's file through its root.
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) return path;
    return fmt::format("/proc/{}/root{}", pid, path);
}

Result<std::vector<MappedObject>> executable_objects(pid_t pid) {
    auto text = read_proc_maps(pid);
    if (!text) return text.error();
    std::vector<MappedObject> out;
    std::set<std::pair<uint64_t, uint64_t>> seen;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
        // start-end perms offset major:minor inode path
        char perms[8] = {};
        unsigned major = 0, minor = 0;
        unsigned long long ino = 0;
        int path_at = 0;
        if (std::sscanf(line.c_str(), "%*x-%*x %7s %*x %x:%x %llu %n", perms, &major, &minor, &ino, &path_at) < 4)
            continue;
        if (perms[2] != 'x' || ino == 0 || path_at <= 0 || size_t(path_at) >= line.size() || line[size_t(path_at)] != '/')
            continue;
        std::string path = line.substr(size_t(path_at));
        if (path.size() > 10 && path.compare(path.size() - 10, 10, " (deleted)") == 0) continue;
        const uint64_t dev = makedev(major, minor);
        if (!seen.insert({dev, ino}).second) continue;
        out.push_back({openable_path(pid, path, dev, ino), dev, uint64_t(ino)});
    }
    return out;
}

}  // namespace memtrack
