#include "report/PeakTracker.hpp"

namespace memtrack::report {

void PeakTracker::finish(SiteTable& sites) const {
    for (uint32_t i = 0; i < sites.size(); ++i) touch(sites.counters(i), sites.peak(i));
}

}  // namespace memtrack::report
