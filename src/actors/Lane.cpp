#include "actors/Lane.hpp"

namespace memtrack {

Lane::Lane(boost::asio::io_context& io, RingView ring, RingConsumer::Options opt)
    : ring_(std::move(ring)), consumer_(io, ring_, queue_, opt) {}

void Lane::connect(BatchSink& sink) {
    sink_ = &sink;
    consumer_.connect(sink, pool_);
    sink.connect(consumer_, pool_);
}

}  // namespace memtrack
