#include "probes/ProbeSiteCache.hpp"

#include "core/Log.hpp"

namespace memtrack {

ProbedObject ProbeSiteCache::get(const MappedObject& object) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = sites_.try_emplace({object.dev, object.ino});
    if (fresh) {
        auto probes = resolve_object_probes(object.path, place_);
        if (!probes) log::error("cannot read {} for its allocator functions: {}", object.path, probes.error().message());
        it->second = std::make_shared<const ObjectProbes>(probes ? std::move(probes).value() : ObjectProbes{});
    }
    return {object, it->second};
}

}  // namespace memtrack
