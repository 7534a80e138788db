#include "report/Processes.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace memtrack::report {

namespace {

std::string join(const std::vector<std::string>& argv) {
    std::string out;
    for (const auto& a : argv) {
        if (!out.empty()) out += ' ';
        out += a;
    }
    return out;
}

}  // namespace

ProcessModel build_process_model(std::vector<TimelineEvent> events) {
    std::stable_sort(events.begin(), events.end(), [](const auto& x, const auto& y) { return x.time < y.time; });
    ProcessModel m;
    using Type = TimelineEvent::Type;
    for (const TimelineEvent& e : events) {
        ProcessInfo& p = m.processes[e.pid];
        p.pid = e.pid;
        switch (e.type) {
            case Type::Start:
            case Type::Attach:
            case Type::Fork:
                p = ProcessInfo{};  // a new life, even of a reused pid
                p.pid = e.pid;
                p.parent = e.parent;
                p.attached = e.type == Type::Attach;
                p.start_ns = e.time;
                if (e.type == Type::Attach) p.command = join(e.argv);
                // A forked child runs its parent's program until it execs.
                if (auto it = m.processes.find(e.parent); e.type == Type::Fork && it != m.processes.end())
                    p.command = it->second.command;
                break;
            case Type::Exec:
                p.command = join(e.argv);
                m.ends.push_back({e.time, e.pid, true});
                break;
            case Type::Exit:
                p.end_ns = e.time;
                p.status = e.signal ? fmt::format("signal {}{}", *e.signal, e.core ? " (core)" : "")
                                    : fmt::format("exit {}", e.code.value_or(0));
                m.ends.push_back({e.time, e.pid, false});
                break;
            case Type::Detach:
                p.end_ns = e.time;
                p.status = "running at the end";
                break;
            case Type::Rss: {
                const uint64_t bytes = e.anon + e.file + e.shmem;
                p.rss_peak = std::max(p.rss_peak, bytes);
                m.rss.push_back({e.time, e.pid, bytes});
                break;
            }
            case Type::RssPeak: p.rss_peak = std::max(p.rss_peak, e.peak); break;
            case Type::Enable:
            case Type::Disable:
            case Type::Mark:
                m.processes.erase(e.pid);  // not a process's
                m.session.push_back(e);
                break;
        }
    }
    return m;
}

Result<ProcessModel> load_process_model(const std::string& path) {
    std::vector<TimelineEvent> events;
    auto read = read_timeline(path, [&](TimelineEvent&& e) { events.push_back(std::move(e)); });
    if (!read) return read.error();
    return build_process_model(std::move(events));
}

}  // namespace memtrack::report
