#include "actors/BatchSink.hpp"

#include <boost/asio/post.hpp>

#include "actors/RingConsumer.hpp"
#include "core/Log.hpp"

namespace memtrack {

namespace asio = boost::asio;

namespace {
constexpr size_t kBatchesPerTurn = 8;  // then yield the strand
}

BatchSink::BatchSink(asio::io_context& io, BatchQueue& in) : strand_(asio::make_strand(io)), in_(in) {}

void BatchSink::notify() {
    if (notify_pending_.exchange(true)) return;
    asio::post(strand_, [this] { on_notify(); });
}

bool BatchSink::pop(RecordBatch*& raw) {
    waiting_at_pop_ = in_.read_available();
    return in_.pop(raw);
}

void BatchSink::handle(RecordBatch* raw) {
    std::unique_ptr<RecordBatch> batch(raw);
    write_batch(*batch);
    records_ += batch->records.size() + batch->stacks.size();
    written_pos_ = batch->end_pos;
    if (pool_) pool_->give_back(std::move(batch));  // outside a Lane (unit tests) it is freed
}

void BatchSink::on_notify() {
    notify_pending_ = false;
    size_t n = 0;
    RecordBatch* raw = nullptr;
    while (n < kBatchesPerTurn && pop(raw)) {
        handle(raw);
        ++n;
    }
    if (n > 0 && consumer_) consumer_->on_queue_space();
    if (in_.read_available() > 0) notify();
    complete_flushes();
}

void BatchSink::flush_through(uint64_t pos, DrainDone done) {
    asio::post(strand_, [this, pos, done = std::move(done)]() mutable {
        flushes_.emplace_back(pos, std::move(done));
        on_notify();
    });
}

void BatchSink::complete_flushes() {
    bool any = false;
    for (auto& f : flushes_) any |= written_pos_ >= f.first;
    if (!any) return;
    if (!error_ && !finished_) {
        if (auto r = flush_file(); !r) fail(r.error());
    }
    for (auto it = flushes_.begin(); it != flushes_.end();) {
        if (written_pos_ < it->first) {
            ++it;
            continue;
        }
        auto done = std::move(it->second);
        it = flushes_.erase(it);
        if (error_) done(*error_);
        else done(records_);
    }
}

void BatchSink::finish(DrainDone done) {
    asio::post(strand_, [this, done = std::move(done)] {
        RecordBatch* raw = nullptr;
        while (pop(raw)) handle(raw);
        if (!error_ && !finished_) {
            if (auto r = finish_file(); !r) fail(r.error());
        }
        finished_ = true;
        // A drain asked for before the close is answered by it: its records are all handled.
        complete_flushes();
        if (error_) done(*error_);
        else done(records_);
    });
}

void BatchSink::fail(Error e) {
    // The file can no longer be trusted: say so once, answer every later drain with it.
    if (error_) return;
    log::error("write failed: {}", e.message());
    error_ = std::move(e);
}

}  // namespace memtrack
