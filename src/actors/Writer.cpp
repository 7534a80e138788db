#include "actors/Writer.hpp"

#include <boost/asio/post.hpp>

#include "core/Clock.hpp"
#include "core/Log.hpp"
#include "format/ArtifactEncoder.hpp"

namespace memtrack {

namespace asio = boost::asio;

Writer::Writer(asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact, std::optional<ZstdFileWriter> timeline)
    : BatchSink(io, in), artifact_(std::move(artifact)), timeline_(std::move(timeline)) {}

void Writer::add_root_process(TimelineEvent start) {
    asio::post(strand(), [this, start = std::move(start)] {
        live_processes_.emplace(start.pid, start.time);
        on_timeline_event(start);
        write_timeline();
    });
}

void Writer::note(TimelineEvent e) {
    asio::post(strand(), [this, e = std::move(e)] {
        on_timeline_event(e);
        write_timeline();
    });
}

void Writer::on_timeline_event(const TimelineEvent& e) {
    switch (e.type) {
    case TimelineEvent::Type::Fork:
        live_processes_.emplace(e.pid, e.time);
        break;
    case TimelineEvent::Type::Exit:
        if (auto it = live_processes_.find(e.pid); it != live_processes_.end()) {
            counters_.process_lifetime_ns.add(e.time - it->second);
            live_processes_.erase(it);
        }
        break;
    default:
        break;
    }
    if (timeline_) encode_timeline_event(e, tbuf_);
}

void Writer::write_timeline() {
    if (tbuf_.empty() || !timeline_ || failed()) return tbuf_.clear();
    if (auto r = timeline_->write(tbuf_); !r) fail(r.error());
    tbuf_.clear();
}

void Writer::write_batch(const RecordBatch& b) {
    // Room for the whole batch up front, so each event is encoded straight into place. The
    // buffer only grows: after the first batches it is never allocated or cleared again.
    if (buf_.size() < b.records.size() * kMaxEncodedEventBytes) buf_.resize(b.records.size() * kMaxEncodedEventBytes);
    char* const begin = buf_.data();
    char* end = begin;
    uint64_t artifact_events = 0, allocations = 0;
    for (const mt_record& r : b.records) {
        const auto kind = EventKind(mt_record_kind(&r));
        if (is_artifact_kind(kind)) {
            end = encode_record(r, end);
            ++artifact_events;
            allocations += is_allocation(kind);
            continue;
        }
        timeline_records_.add(r, [this](const TimelineEvent& e) { on_timeline_event(e); });
    }
    write_timeline();
    if (failed()) return counters_.unwritten.add(b.records.size());
    unflushed_records_ += b.records.size();
    unflushed_events_ += artifact_events;
    unflushed_allocations_ += allocations;
    if (end != begin) {
        if (auto r = artifact_.write({begin, size_t(end - begin)}); !r) {
            fail(r.error());
            lose_unwritten();
            return;
        }
    }
    // Every kCreditEvery bytes, the stream is flushed so that what the stats call written is
    // what the file holds, give or take that much: a disk that fills later leaves stats that
    // say how much of the file can be read, not `written 0`.
    if (artifact_.raw_bytes() - credited_raw_ >= kCreditEvery) {
        if (auto r = flush_file(); !r) fail(r.error());
    }
}

Result<void> Writer::flush_file() {
    auto r = artifact_.flush();
    credited_raw_ = artifact_.raw_bytes();
    if (r) credit_written();
    else lose_unwritten();
    if (r && timeline_) r = timeline_->flush();
    return r;
}

Result<void> Writer::finish_file() {
    const uint64_t now = monotonic_ns();
    for (auto& [pid, start] : live_processes_) {
        counters_.process_lifetime_ns.add(now - start);
        TimelineEvent detach;
        detach.type = TimelineEvent::Type::Detach;
        detach.time = now;
        detach.pid = pid;
        if (timeline_) encode_timeline_event(detach, tbuf_);
    }
    live_processes_.clear();
    if (timeline_records_.unfinished_execs() || timeline_records_.unexpected())
        log::warn("timeline: {} exec(s) without all their arguments, {} unexpected record(s)",
                  timeline_records_.unfinished_execs(), timeline_records_.unexpected());
    write_timeline();
    auto r = artifact_.finish();
    if (r) credit_written();
    else lose_unwritten();
    if (r && timeline_) r = timeline_->finish();
    return r;
}

void Writer::credit_written() {
    counters_.written.add(unflushed_records_);
    counters_.artifact_events.add(unflushed_events_);
    counters_.allocations.add(unflushed_allocations_);
    unflushed_records_ = unflushed_events_ = unflushed_allocations_ = 0;
}

void Writer::lose_unwritten() {
    counters_.unwritten.add(unflushed_records_);
    unflushed_records_ = unflushed_events_ = unflushed_allocations_ = 0;
}

}  // namespace memtrack
