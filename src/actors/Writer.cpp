#include "actors/Writer.hpp"

#include <boost/asio/post.hpp>

#include "actors/Stats.hpp"
#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "format/ArtifactEncoder.hpp"

namespace memtrack {

namespace asio = boost::asio;

namespace {
constexpr size_t kBatchesPerTurn = 8;  // then yield the strand
}

Writer::Writer(asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact, Stats& stats)
    : strand_(asio::make_strand(io)), in_(in), artifact_(std::move(artifact)), stats_(stats) {}

void Writer::add_root_process(int32_t pid, uint64_t start_ns) {
    asio::post(strand_, [this, pid, start_ns] { live_processes_.emplace(pid, start_ns); });
}

void Writer::notify() {
    if (notify_pending_.exchange(true)) return;
    asio::post(strand_, [this] { on_notify(); });
}

void Writer::on_notify() {
    notify_pending_ = false;
    size_t n = 0;
    RecordBatch* raw = nullptr;
    while (n < kBatchesPerTurn && in_.pop(raw)) {
        std::unique_ptr<RecordBatch> batch(raw);
        write_batch(*batch);
        ++n;
    }
    if (n > 0 && queue_space_) queue_space_();
    if (in_.read_available() > 0) notify();
    complete_flushes();
}

void Writer::write_batch(const RecordBatch& b) {
    buf_.clear();
    uint64_t artifact_events = 0;
    for (const mt_record& r : b.records) {
        auto ev = decode_record(r);
        if (!ev) continue;
        switch (ev->kind) {
        case EventKind::Fork:
            live_processes_.emplace(int32_t(ev->addr), ev->timestamp);
            break;
        case EventKind::Exit:
            if (auto it = live_processes_.find(ev->pid); it != live_processes_.end()) {
                stats_.add_process_lifetime(ev->timestamp - it->second);
                live_processes_.erase(it);
            }
            break;
        case EventKind::Exec:
            break;
        default:
            encode_event(*ev, buf_);
            ++artifact_events;
        }
    }
    if (!error_ && !buf_.empty()) {
        if (auto r = artifact_.write(buf_); !r) fail(r.error());
    }
    records_ += b.records.size();
    written_pos_ = b.end_pos;
    stats_.on_written(b.records.size(), artifact_events);
}

void Writer::flush_through(uint64_t pos, DrainDone done) {
    asio::post(strand_, [this, pos, done = std::move(done)]() mutable {
        flushes_.emplace_back(pos, std::move(done));
        on_notify();
    });
}

void Writer::complete_flushes() {
    if (flushes_.empty()) return;
    bool any = false;
    for (auto& f : flushes_) any |= written_pos_ >= f.first;
    if (!any) return;
    if (!error_ && !finished_) {
        if (auto r = artifact_.flush(); !r) fail(r.error());
    }
    for (auto it = flushes_.begin(); it != flushes_.end();) {
        if (written_pos_ >= it->first) {
            auto done = std::move(it->second);
            it = flushes_.erase(it);
            if (error_) done(*error_);
            else done(records_);
        } else {
            ++it;
        }
    }
}

void Writer::finish(DrainDone done) {
    asio::post(strand_, [this, done = std::move(done)] {
        RecordBatch* raw = nullptr;
        while (in_.pop(raw)) {
            std::unique_ptr<RecordBatch> batch(raw);
            write_batch(*batch);
        }
        const uint64_t now = monotonic_ns();
        for (auto& [pid, start] : live_processes_) stats_.add_process_lifetime(now - start);
        live_processes_.clear();
        if (!error_ && !finished_) {
            if (auto r = artifact_.finish(); !r) fail(r.error());
        }
        finished_ = true;
        if (error_) done(*error_);
        else done(records_);
    });
}

void Writer::fail(Error e) {
    // The artifact can no longer be trusted: say so once, answer every later drain with it.
    log::error("artifact write failed: {}", e.message());
    error_ = std::move(e);
}

}  // namespace memtrack
