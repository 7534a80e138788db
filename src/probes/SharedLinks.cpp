#include "probes/SharedLinks.hpp"

namespace memtrack {

Result<void> SharedLinks::attach(const ProbedObject& o) {
    std::lock_guard lock(mu_);
    if (o.probes->empty() || !objects_.insert({o.object.dev, o.object.ino}).second) return {};
    auto links = attach_(o);
    if (!links) {
        objects_.erase({o.object.dev, o.object.ino});
        return links.error();
    }
    for (auto& l : *links) links_.push_back(std::move(l));
    return {};
}

Result<void> SharedLinks::attach(const std::vector<ProbedObject>& objects) {
    for (const ProbedObject& o : objects)
        if (auto r = attach(o); !r) return r;
    return {};
}

void SharedLinks::detach() {
    std::lock_guard lock(mu_);
    closer_.close(std::move(links_));
    links_.clear();
    objects_.clear();
}

}  // namespace memtrack
