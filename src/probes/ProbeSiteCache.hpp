#pragma once
// The probe sites of each object file, resolved once per file (device, inode) for every
// process that maps it, from the file as ObjectFiles read it; thread-safe. An object that cannot
// be read has none (logged once).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "probes/AllocatorProbes.hpp"
#include "symbols/MappedObjects.hpp"
#include "symbols/ObjectFiles.hpp"

namespace memtrack {

// An object a process maps, with its probe sites (shared by every process mapping the file).
struct ProbedObject {
    MappedObject object;
    std::shared_ptr<const ObjectProbes> probes;
};

class ProbeSiteCache {
public:
    // place: ProbePlacement; off, every probe at its function's entry. `files` outlives this.
    ProbeSiteCache(bool place, ObjectFiles& files) : place_(place), files_(files) {}
    ProbedObject get(const MappedObject& object);

private:
    bool place_;
    ObjectFiles& files_;
    std::mutex mu_;  // guards sites_
    std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const ObjectProbes>> sites_;
};

}  // namespace memtrack
