// --format pprof: a gzipped profile (src/report/pprof/profile.proto, our own description of the
// wire format `go tool pprof` reads), with the sample types alloc_objects, alloc_space,
// inuse_objects and inuse_space; in use means live at the end. One sample per site.
#include <zlib.h>

#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "report/FrameNames.hpp"
#include "report/Output.hpp"
#include "profile.pb.h"

namespace memtrack::report {
namespace {

namespace pb = memtrack::pprof;

class ProfileBuilder {
public:
    ProfileBuilder() { str(""); }

    int64_t str(const std::string& s) {
        auto [it, fresh] = strings_.try_emplace(s, int64_t(strings_.size()));
        if (fresh) p_.add_strings(s);
        return it->second;
    }

    void value_type(const char* type, const char* unit) {
        pb::ValueType* v = p_.add_sample_type();
        v->set_type(str(type));
        v->set_unit(str(unit));
    }

    // The location of one captured address: its frames (inlined first) share `ip`.
    uint64_t location(const StackFrames& frames, size_t first, size_t last) {
        const Frame& outer = *frames[last - 1];
        auto key = std::make_tuple(outer.ip, outer.module, outer.function);
        auto [it, fresh] = locations_.try_emplace(key, uint64_t(locations_.size() + 1));
        if (!fresh) return it->second;
        pb::Location* loc = p_.add_location();
        loc->set_id(it->second);
        loc->set_address(outer.ip);
        loc->set_mapping_id(mapping(outer));
        for (size_t i = first; i < last; ++i) {
            pb::Line* line = loc->add_line();
            line->set_function_id(function(*frames[i]));
            line->set_line(frames[i]->line);
        }
        return it->second;
    }

    uint64_t unknown_location(const std::string& name) {
        Frame f;
        f.function = name;
        return location({&f}, 0, 1);
    }

    pb::Profile& profile() { return p_; }

    // The program's module gets mapping 1: pprof calls the first mapping the main binary
    // ("File:" in its header) and names the profile after it.
    void main_mapping(const Frame& f) { mapping(f); }

    // Mapping ranges are the lowest and highest addresses seen in each module; in id order.
    void finish_mappings() {
        std::vector<const pb::Mapping*> by_id(mappings_.size());
        for (auto& [key, m] : mappings_) by_id[m.id() - 1] = &m;
        for (const pb::Mapping* m : by_id) *p_.add_mapping() = *m;
    }

private:
    // 0 (no mapping) for an address no module holds.
    uint64_t mapping(const Frame& f) {
        if (f.module.empty()) return 0;
        auto key = std::make_pair(f.module, f.build_id);
        auto [it, fresh] = mappings_.try_emplace(key);
        pb::Mapping& m = it->second;
        if (fresh) {
            m.set_id(mappings_.size());
            m.set_filename(str(f.module));
            m.set_build_id(str(f.build_id));
            m.set_has_functions(true);
            m.set_has_filenames(true);
            m.set_has_line_numbers(true);
            m.set_has_inline_frames(true);
            m.set_memory_start(f.ip);
            m.set_memory_limit(f.ip + 1);
        }
        m.set_memory_start(std::min(m.memory_start(), f.ip));
        m.set_memory_limit(std::max(m.memory_limit(), f.ip + 1));
        return m.id();
    }

    uint64_t function(const Frame& f) {
        const std::string name = frame_name(f);
        auto key = std::make_pair(name, f.file);
        auto [it, fresh] = functions_.try_emplace(key, uint64_t(functions_.size() + 1));
        if (fresh) {
            pb::Function* fn = p_.add_function();
            fn->set_id(it->second);
            fn->set_name(str(name));
            fn->set_system_name(str(name));
            fn->set_filename(str(f.file));
        }
        return it->second;
    }

    pb::Profile p_;
    std::map<std::string, int64_t> strings_;
    std::map<std::tuple<uint64_t, std::string, std::string>, uint64_t> locations_;
    std::map<std::pair<std::string, std::string>, pb::Mapping> mappings_;
    std::map<std::pair<std::string, std::string>, uint64_t> functions_;
};

// A frame of the program's own module: its `main` if a stack has one, else the outermost
// frame of the first stack (the thread's entry, or `_start`).
const Frame* main_frame(const Analysis& a) {
    const Frame* outermost = nullptr;
    for (const Site& s : a.sites) {
        if (!s.frames) continue;
        for (const Frame* f : *s.frames)
            if (f->function == "main" && !f->module.empty()) return f;
        if (!outermost && !s.frames->empty() && !s.frames->back()->module.empty()) outermost = s.frames->back();
    }
    return outermost;
}

std::string gzip(const std::string& raw) {
    z_stream z{};
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("pprof: deflateInit2 failed");
    std::string out(deflateBound(&z, uLong(raw.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    z.avail_in = uInt(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = uInt(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) throw std::runtime_error("pprof: deflate failed");
    return out;
}

}  // namespace

std::string pprof_report(const Analysis& a, const OutputOptions& o) {
    ProfileBuilder b;
    b.value_type("alloc_objects", "count");
    b.value_type("alloc_space", "bytes");
    b.value_type("inuse_objects", "count");
    b.value_type("inuse_space", "bytes");
    pb::Profile& p = b.profile();
    if (const Frame* main = main_frame(a)) b.main_mapping(*main);
    for (const Site& s : a.sites) {
        if (s.calls == 0) continue;
        pb::Sample* sample = p.add_sample();
        if (s.frames && !s.frames->empty()) {
            const StackFrames& f = *s.frames;
            // Frames of one captured address are consecutive and share its ip; the last of them
            // is the function containing the code, the others were inlined into it.
            size_t first = 0;
            for (size_t i = 0; i < f.size(); ++i) {
                if (f[i]->inlined && i + 1 < f.size() && f[i + 1]->ip == f[i]->ip) continue;
                sample->add_location_id(b.location(f, first, i + 1));
                first = i + 1;
            }
        } else {
            sample->add_location_id(b.unknown_location(s.hash == 0 ? "[no stack]" : "[stack missing]"));
        }
        sample->add_value(int64_t(s.calls));
        sample->add_value(int64_t(s.bytes));
        sample->add_value(int64_t(s.live_blocks));
        sample->add_value(int64_t(s.live_bytes));
    }
    b.finish_mappings();
    p.set_time_nanos(0);
    p.set_duration_nanos(int64_t(a.duration_ns));
    pb::ValueType* period = p.mutable_period_type();
    period->set_type(b.str("space"));
    period->set_unit(b.str("bytes"));
    p.set_period(1);
    p.add_comment(b.str("memtrack report of " + o.title));
    p.set_default_sample_type(b.str("inuse_space"));
    std::string raw;
    if (!p.SerializeToString(&raw)) throw std::runtime_error("pprof: cannot serialize the profile");
    return gzip(raw);
}

}  // namespace memtrack::report
