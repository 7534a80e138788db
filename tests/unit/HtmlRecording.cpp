#include "HtmlRecording.hpp"

#include <vector>

#include "ReportScenario.hpp"
#include "report/Processes.hpp"

namespace memtrack::unittest {
using namespace memtrack::report;
using Type = TimelineEvent::Type;

namespace {

// One event of pid's main thread, `t` after the first.
Event event(EventKind kind, int32_t pid, uint64_t t, uint64_t addr, uint64_t size, uint64_t hash) {
    return make_event(kind, pid, pid, kHtmlStart + t, addr, size, hash);
}

TimelineEvent tl(Type type, uint64_t t, int32_t pid, int32_t parent = 0) {
    TimelineEvent e;
    e.type = type;
    e.time = kHtmlStart + t;
    e.pid = pid;
    e.parent = parent;
    return e;
}

Frame frame(const char* function, const char* file, uint32_t line) {
    return Frame{0x1000 + line, "/usr/bin/app", "", function, file, line, false};
}

}  // namespace

Analysis html_recording(StackTable& stacks) {
    enum : uint64_t { kEarly = 1, kLate, kTemp, kBeta };
    // Innermost first.
    stacks.add(kEarly, {frame("early_build", "app.c", 31), frame("build", "app.c", 20), frame("main", "app.c", 5)});
    stacks.add(kLate, {frame("late_build", "app.c", 42), frame("build", "app.c", 20), frame("main", "app.c", 5)});
    stacks.add(kTemp, {frame("temp_loop", "app.c", 50), frame("main", "app.c", 5)});
    stacks.add(kBeta, {frame("beta_cache", "beta.c", 9), frame("beta_main", "beta.c", 3)});

    std::vector<Event> events;
    for (uint64_t i = 0; i < 10; ++i) events.push_back(event(EventKind::Malloc, 100, html_ms(10 * i), 0x10000 + 0x1000 * i, 1000, kEarly));
    // Last made, first freed: that free follows its own allocation, a temporary by heaptrack's
    // rule (the Analyzer's); the other nine are not.
    for (uint64_t i = 10; i-- > 0;) events.push_back(event(EventKind::Free, 100, html_ms(150), 0x10000 + 0x1000 * i, 0, 0));
    for (uint64_t i = 0; i < 20; ++i) events.push_back(event(EventKind::Malloc, 100, html_ms(200 + 5 * i), 0x40000 + 0x1000 * i, 500, kLate));
    for (uint64_t i = 0; i < 50; ++i) {
        events.push_back(event(EventKind::Malloc, 100, html_ms(400 + i), 0x80000, 64, kTemp));
        events.push_back(event(EventKind::Free, 100, html_ms(400 + i) + 1000, 0x80000, 0, 0));
    }
    for (uint64_t i = 0; i < 4; ++i) events.push_back(event(EventKind::Malloc, 200, html_ms(500), 0x90000 + 0x2000 * i, 4096, kBeta));

    TimelineEvent alpha = tl(Type::Exec, 0, 100);
    alpha.argv = {"alpha", "--run"};
    TimelineEvent beta = tl(Type::Exec, html_ms(450), 200);
    beta.argv = {"beta"};
    TimelineEvent exit = tl(Type::Exit, html_ms(900), 100);
    exit.code = 0;
    TimelineEvent rss = tl(Type::Rss, html_ms(100), 100);
    rss.anon = 3 << 20;
    TimelineEvent rss2 = tl(Type::Rss, html_ms(600), 200);
    rss2.anon = 1 << 20;
    Analyzer a(stacks, {}, 1);
    a.set_processes(build_process_model({tl(Type::Start, 0, 100), alpha, rss, tl(Type::Fork, html_ms(450), 200, 100), beta,
                                         rss2, exit, tl(Type::Detach, html_ms(1000), 200)}));
    a.record_site_timeline();
    for (const Event& e : events) a.add(e);
    return std::move(a).finish();
}

Analysis html_recording_after(StackTable& stacks) {
    enum : uint64_t { kEarly = 11, kLate, kVector };
    const Frame malloc_frame{0x7000, "/usr/lib/x86_64-linux-gnu/libc.so.6", "", "malloc", "", 0, false};
    const Frame new_frame{0x8000, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "", "operator new(unsigned long)", "", 0, false};
    const Frame allocate_frame = frame("std::__new_allocator<int>::allocate(unsigned long, void const*)", "new_allocator.h", 137);
    stacks.add(kEarly, {malloc_frame, frame("early_build", "app.c", 31), frame("build", "app.c", 20), frame("main", "app.c", 5)});
    stacks.add(kLate, {malloc_frame, frame("late_build", "app.c", 42), frame("build", "app.c", 20), frame("main", "app.c", 5)});
    stacks.add(kVector, {malloc_frame, new_frame, allocate_frame,
                         frame("std::vector<int, std::allocator<int> >::push_back(int const&)", "vec.cc", 12),
                         frame("main", "app.c", 5)});
    Analyzer a(stacks, {}, 1);
    a.record_site_timeline();
    for (uint64_t i = 0; i < 10; ++i) a.add(event(EventKind::Malloc, 100, html_ms(10 * i), 0x10000 + 0x1000 * i, 1000, kEarly));
    for (uint64_t i = 10; i-- > 0;) a.add(event(EventKind::Free, 100, html_ms(150), 0x10000 + 0x1000 * i, 0, 0));
    for (uint64_t i = 0; i < 30; ++i) a.add(event(EventKind::Malloc, 100, html_ms(200 + 5 * i), 0x40000 + 0x1000 * i, 500, kLate));
    for (uint64_t i = 0; i < 8; ++i) a.add(event(EventKind::Malloc, 100, html_ms(600), 0x90000 + 0x2000 * i, 3000, kVector));
    return std::move(a).finish();
}

}  // namespace memtrack::unittest
