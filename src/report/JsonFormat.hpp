#pragma once
// --format json as a value, for the html page, which embeds it.
#include <boost/json/object.hpp>

#include "report/Output.hpp"

namespace memtrack::report {

boost::json::object json_model(const Analysis& a, const OutputOptions& o);
boost::json::array frames_json(const Site& s);

}  // namespace memtrack::report
