#include "format/ArtifactReader.hpp"

#include <array>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <msgpack.hpp>

#include "format/EventFastPath.hpp"
#include "format/EventObject.hpp"
#include "format/MsgpackStream.hpp"

namespace memtrack {
namespace {

// msgpack allocates a map's or array's slots as soon as it reads the header, so a corrupt header
// claiming 2^32 entries would exhaust memory before any check of ours runs. An event has at most
// 8 keys; the rest is generous room for keys a newer writer might add.
const msgpack::unpack_limit kLimits(/*array=*/64, /*map=*/64, /*str=*/4096, /*bin=*/4096,
                                    /*ext=*/4096, /*depth=*/4);
// An event takes under 100 bytes; this leaves the same generous room, and bounds what a value
// that never ends can make the reader hold.
constexpr size_t kMaxEventBytes = 64 * 1024;

}  // namespace

Result<uint64_t> read_artifact(const std::string& path, const std::function<void(const Event&)>& on_event) {
    auto generic = [&](const msgpack::object& o, uint64_t) -> std::optional<std::string> {
        Event e;
        if (auto bad = event_from_object(o, e)) return bad;
        on_event(e);
        return std::nullopt;
    };
    // Every event memtrack writes takes this path; the generic one sees only what it cannot
    // vouch for (EventFastPath.hpp).
    auto fast = [&](const char* data, size_t len) {
        msgpack_stream::Taken taken;
        while (taken.bytes < len) {
            Event e;
            const size_t n = decode_event_fast(data + taken.bytes, len - taken.bytes, e);
            if (n == 0) break;
            on_event(e);
            taken.bytes += n;
            ++taken.values;
        }
        return taken;
    };
    return msgpack_stream::read_stream(path, kLimits, kMaxEventBytes, {.value = "event", .file = "artifact"}, generic, fast);
}

namespace {

// The batches between the reading thread and the caller's: a ring of kReadAheadSlots, filled in
// turn by the reader, taken in turn by the caller. A handoff is a batch of a thousand events, so
// a mutex and two condition variables cost nothing measurable (about 50000 handoffs for 50 M
// events) where a lock-free queue would add a wake-up scheme of its own.
class BatchRing {
public:
    struct Batch {
        std::array<Event, kReadAheadBatch> events;
        size_t size = 0;
    };
    struct Stopped {};  // thrown on the reading thread when the caller has gone

    // Reading thread: the next batch to fill, once the caller has taken what it held.
    Batch& free_slot() {
        std::unique_lock lock(mutex_);
        taken_cv_.wait(lock, [&] { return stopped_ || filled_ - taken_ < kReadAheadSlots; });
        if (stopped_) throw Stopped{};
        return slots_[filled_ % kReadAheadSlots];
    }
    void publish() {
        {
            std::lock_guard lock(mutex_);
            ++filled_;
        }
        filled_cv_.notify_one();
    }
    // Reading thread, last: the read's answer, or what it threw.
    void finish(std::optional<Result<uint64_t>> result, std::exception_ptr thrown) {
        {
            std::lock_guard lock(mutex_);
            result_ = std::move(result);
            thrown_ = thrown;
            done_ = true;
        }
        filled_cv_.notify_one();
    }

    // Caller: the next filled batch, or null once the reader is done and every batch taken.
    const Batch* next_filled() {
        std::unique_lock lock(mutex_);
        filled_cv_.wait(lock, [&] { return done_ || filled_ > taken_; });
        return filled_ > taken_ ? &slots_[taken_ % kReadAheadSlots] : nullptr;
    }
    void release() {
        {
            std::lock_guard lock(mutex_);
            ++taken_;
        }
        taken_cv_.notify_one();
    }
    // Caller, when it stops early (an exception): the reader throws Stopped at its next batch.
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
        }
        taken_cv_.notify_one();
    }
    Result<uint64_t> result() {
        if (thrown_) std::rethrow_exception(thrown_);
        return std::move(*result_);
    }

private:
    std::mutex mutex_;
    std::condition_variable filled_cv_, taken_cv_;
    std::vector<Batch> slots_ = std::vector<Batch>(kReadAheadSlots);
    uint64_t filled_ = 0, taken_ = 0;  // batches published and released, ever
    bool stopped_ = false, done_ = false;
    std::optional<Result<uint64_t>> result_;
    std::exception_ptr thrown_;
};

}  // namespace

Result<uint64_t> read_artifact_ahead(const std::string& path,
                                     const std::function<void(std::span<const Event>)>& on_events) {
    BatchRing ring;
    std::jthread reader([&] {
        try {
            BatchRing::Batch* batch = &ring.free_slot();
            batch->size = 0;
            auto result = read_artifact(path, [&](const Event& e) {
                batch->events[batch->size++] = e;
                if (batch->size < kReadAheadBatch) return;
                ring.publish();
                batch = &ring.free_slot();
                batch->size = 0;
            });
            if (batch->size > 0) ring.publish();
            ring.finish(std::move(result), nullptr);
        } catch (const BatchRing::Stopped&) {
            ring.finish(std::nullopt, nullptr);
        } catch (...) {
            ring.finish(std::nullopt, std::current_exception());
        }
    });
    // The reader must not wait forever on a caller that threw: stopped first, then joined.
    struct StopOnExit {
        BatchRing& ring;
        std::jthread& reader;
        ~StopOnExit() {
            ring.stop();
            reader.join();
        }
    } stop_on_exit{ring, reader};
    while (const BatchRing::Batch* batch = ring.next_filled()) {
        on_events(std::span<const Event>(batch->events.data(), batch->size));
        ring.release();
    }
    return ring.result();
}

}  // namespace memtrack
