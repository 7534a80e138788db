#pragma once
// Events as JSON, one object per line, for `memtrack dump` and anything that greps or pipes to jq.
#include <string>

#include <boost/json/object.hpp>

#include "format/Record.hpp"

namespace memtrack {

// The event's artifact map as a JSON object: same keys, same order, same omissions as
// encode_event, `type` as its artifact name. No trailing newline.
std::string event_to_json(const Event& e);
boost::json::object event_to_json_object(const Event& e);

}  // namespace memtrack
