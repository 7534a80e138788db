#include "format/TimelineRecords.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace memtrack {

namespace {

// Appends a piece at its offset; pieces of one text come in order, so this only ever appends.
void put_piece(std::string& text, const mt_record& r, uint32_t total, uint32_t offset) {
    char piece[MT_EXEC_TEXT_BYTES];
    std::memcpy(piece, &r.addr, 8);
    std::memcpy(piece + 8, &r.old_addr, 8);
    std::memcpy(piece + 16, &r.stack_hash, 8);
    if (offset >= total) return;
    const uint32_t n = std::min<uint32_t>(MT_EXEC_TEXT_BYTES, total - offset);
    if (text.size() < offset + n) text.resize(offset + n);
    std::memcpy(text.data() + offset, piece, n);
}

}  // namespace

void TimelineRecords::add(const mt_record& r, const std::function<void(const TimelineEvent&)>& out) {
    const uint32_t kind = mt_record_kind(&r);
    const int32_t pid = int32_t(r.pid);
    TimelineEvent e;
    e.time = r.timestamp;
    e.pid = pid;
    switch (kind) {
        case MT_KIND_FORK:
            e.type = TimelineEvent::Type::Fork;
            e.pid = int32_t(r.addr);
            e.parent = pid;
            return out(e);
        case MT_KIND_EXEC:
            execs_[pid] = Exec{r.timestamp, {}, {}, false};
            return;
        case MT_KIND_EXEC_TEXT: {
            auto it = execs_.find(pid);
            if (it == execs_.end()) {
                ++unexpected_;
                return;
            }
            const uint64_t size = mt_record_size(&r);
            const uint32_t part = MT_EXEC_TEXT_PART(size), total = MT_EXEC_TEXT_TOTAL(size);
            const uint32_t offset = MT_EXEC_TEXT_OFFSET(size);
            Exec& x = it->second;
            put_piece(part == MT_EXEC_PATH ? x.path : x.args, r, total, offset);
            if (part != MT_EXEC_ARGS) return;
            x.cut |= (mt_record_flags(&r) & MT_FLAG_TEXT_CUT) != 0;
            if (offset + MT_EXEC_TEXT_BYTES < total) return;
            e.type = TimelineEvent::Type::Exec;
            e.time = x.time;
            e.path = std::move(x.path);
            e.argv = split_argv(x.args);
            e.argv_cut = x.cut;
            execs_.erase(it);
            return out(e);
        }
        case MT_KIND_EXIT:
            e.type = TimelineEvent::Type::Exit;
            set_exit_status(e, uint32_t(mt_record_size(&r)));
            return out(e);
        case MT_KIND_RSS:
            e.type = TimelineEvent::Type::Rss;
            e.anon = r.addr;
            e.file = r.old_addr;
            e.shmem = r.stack_hash;
            e.swap = mt_record_size(&r);
            return out(e);
        case MT_KIND_RSS_PEAK:
            e.type = TimelineEvent::Type::RssPeak;
            e.peak = mt_record_size(&r);
            return out(e);
        default:
            ++unexpected_;
            return;
    }
}

}  // namespace memtrack
