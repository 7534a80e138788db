#pragma once
// The executor every actor and connection runs its handlers on, and the plain completion
// callback: below the actors (src/control and src/process use them), so no lower floor
// includes actors/ for them.
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

namespace memtrack {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using Done = std::function<void()>;

}  // namespace memtrack
