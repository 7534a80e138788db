#include "probes/ProbeSiteCache.hpp"

#include "core/Log.hpp"

namespace memtrack {

ProbedObject ProbeSiteCache::get(const MappedObject& object) {
    std::lock_guard lock(mu_);
    auto [it, fresh] = sites_.try_emplace({object.dev, object.ino});
    if (fresh) {
        auto file = files_.get(0, object.path, object.dev, object.ino);
        auto probes = file ? resolve_object_probes(file.value(), place_) : Result<ObjectProbes>(file.error());
        if (!probes) log::error("cannot read {} for its allocator functions: {}", object.path, probes.error().message());
        it->second = std::make_shared<const ObjectProbes>(probes ? std::move(probes).value() : ObjectProbes{});
    }
    return {object, it->second};
}

}  // namespace memtrack
