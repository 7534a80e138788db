#include "actors/Writer.hpp"

#include <boost/asio/post.hpp>

#include "core/Clock.hpp"
#include "format/ArtifactEncoder.hpp"

namespace memtrack {

namespace asio = boost::asio;

Writer::Writer(asio::io_context& io, BatchQueue& in, ZstdFileWriter artifact)
    : BatchSink(io, in), artifact_(std::move(artifact)) {}

void Writer::add_root_process(int32_t pid, uint64_t start_ns) {
    asio::post(strand(), [this, pid, start_ns] { live_processes_.emplace(pid, start_ns); });
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
        auto ev = decode_record(r);
        if (!ev) continue;
        switch (ev->kind) {
        case EventKind::Fork:
            live_processes_.emplace(int32_t(ev->addr), ev->timestamp);
            break;
        case EventKind::Exit:
            if (auto it = live_processes_.find(ev->pid); it != live_processes_.end()) {
                counters_.process_lifetime_ns.add(ev->timestamp - it->second);
                live_processes_.erase(it);
            }
            break;
        default:  // Exec
            break;
        }
    }
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
    return r;
}

Result<void> Writer::finish_file() {
    const uint64_t now = monotonic_ns();
    for (auto& [pid, start] : live_processes_) counters_.process_lifetime_ns.add(now - start);
    live_processes_.clear();
    auto r = artifact_.finish();
    if (r) credit_written();
    else lose_unwritten();
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
