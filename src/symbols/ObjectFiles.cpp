#include "symbols/ObjectFiles.hpp"

#include <sys/stat.h>

#include <utility>

#include "symbols/MappedObjects.hpp"

namespace memtrack {

Result<std::shared_ptr<OpenObject>> ObjectFile::open_handles(const std::string& path, std::string* build_id) {
    auto file = open_elf(path);
    if (!file) return file.error();
    auto o = std::make_shared<OpenObject>();
    o->file = std::move(file).value();
    const std::string id = gnu_build_id(o->file.elf.get());
    // Read by the probes' symbols (its .symtab) and by the unwind table (its .debug_frame): opened
    // with the file, at most once. Absent (the usual case): one failed stat.
    const std::string debug = debug_file_path(id);
    struct stat st {};
    if (!debug.empty() && ::stat(debug.c_str(), &st) == 0) {
        if (auto d = open_elf(debug)) {
            o->debug.emplace(std::move(d).value());
            o->debug_path = debug;
        }
    }
    if (build_id) *build_id = id;
    return o;
}

Result<std::shared_ptr<const ObjectFile>> ObjectFile::open(const std::string& path) {
    auto f = read(path, nullptr);
    if (!f) return f.error();
    return std::shared_ptr<const ObjectFile>(std::move(f).value());
}

Result<std::shared_ptr<ObjectFile>> ObjectFile::read(const std::string& path, Reopened* reopened) {
    std::shared_ptr<ObjectFile> f(new ObjectFile);
    auto handles = open_handles(path, &f->build_id_);
    if (!handles) return handles.error();
    f->path_ = path;
    Elf* elf = (*handles)->file.elf.get();
    f->st_ = (*handles)->file.st;
    auto segments = load_segments(elf, path);
    if (!segments) return segments.error();
    f->segments_ = std::move(segments).value();
    f->open_ = std::move(handles).value();
    f->reopened_ = reopened;
    return f;
}

Result<std::shared_ptr<const OpenObject>> ObjectFile::handles() const { return handles(&Reopened::by_stages); }

Result<std::shared_ptr<const OpenObject>> ObjectFile::handles_for_symbols() const {
    return handles(&Reopened::by_symbols);
}

Result<std::shared_ptr<const OpenObject>> ObjectFile::handles(std::atomic<uint64_t> Reopened::*counter) const {
    std::lock_guard lock(mu_);
    if (open_) return open_;
    auto again = open_handles(path_);
    if (!again) return again.error();
    // Another file under the name now: what was read of it no longer describes this one.
    const struct stat& st = (*again)->file.st;
    if (st.st_dev != st_.st_dev || st.st_ino != st_.st_ino)
        return Error{"open", path_, ESTALE, "no longer the file first read"};
    if (reopened_) (reopened_->*counter).fetch_add(1, std::memory_order_relaxed);
    open_ = std::move(again).value();
    return open_;
}

std::shared_ptr<const OpenObject> ObjectFile::close() const {
    std::lock_guard lock(mu_);
    return std::exchange(open_, nullptr);
}

Result<std::shared_ptr<const ObjectFile>> ObjectFiles::get(pid_t pid, const std::string& path, uint64_t dev,
                                                           uint64_t ino) {
    std::lock_guard lock(mu_);
    ++counters_.lookups;
    const Key key{dev, ino};
    if (auto it = files_.find(key); it != files_.end()) return it->second;
    // Memtrack's own view (pid 0) needs no other path: the identity is checked below anyway.
    const std::string openable = pid ? openable_path(pid, path, dev, ino) : path;
    auto opened = ObjectFile::read(openable, &reopened_);
    if (opened && (uint64_t((*opened)->stat().st_dev) != dev || uint64_t((*opened)->stat().st_ino) != ino))
        opened = Error{"open", openable, ESTALE, "not the file the process maps"};
    if (!opened) {
        ++counters_.failed;
        return files_.emplace(key, opened.error()).first->second;
    }
    ++counters_.parsed;
    std::shared_ptr<const ObjectFile> f = std::move(opened).value();
    recent_.push_back(f);
    if (recent_.size() > kKeepOpen) {
        if (released_.size() >= kKeepOpen) released_.clear();
        if (auto handles = recent_.front()->close()) released_.push_back(std::move(handles));
        recent_.pop_front();
    }
    return files_.emplace(key, std::move(f)).first->second;
}

void ObjectFiles::close_released() {
    std::vector<std::shared_ptr<const OpenObject>> closing;
    {
        std::lock_guard lock(mu_);
        closing.swap(released_);
    }
    // Closed here, outside the lock: the stages may go on reading other files meanwhile.
}

ObjectFileCounters ObjectFiles::counters() const {
    std::lock_guard lock(mu_);
    ObjectFileCounters c = counters_;
    c.reopened = reopened_.by_stages.load(std::memory_order_relaxed);
    c.reopened_for_symbols = reopened_.by_symbols.load(std::memory_order_relaxed);
    return c;
}

}  // namespace memtrack
