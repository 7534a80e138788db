// memtrack report's views for people (issue 32): folding (FrameFold), the function views
// (Functions), runtime-owned leaks and suppressions (Owners), heaptrack's temporaries. Synthetic
// stacks and events, every figure exact.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "TestFiles.hpp"
#include "ReportScenario.hpp"
#include "report/Analysis.hpp"
#include "report/FrameFold.hpp"
#include "report/FrameNames.hpp"
#include "report/Functions.hpp"
#include "report/Output.hpp"
#include "report/Owners.hpp"

using namespace memtrack;
using namespace memtrack::report;
using namespace memtrack::unittest;

namespace {

Frame fn(const char* function, const char* module = "/opt/app/bin/app", const char* file = "", uint32_t line = 0,
         bool inlined = false) {
    static uint64_t ip = 0x400000;
    return Frame{ip += 16, module, "", function, file, line, inlined};
}
Frame unresolved(const char* module) { return fn("", module); }

constexpr const char* kApp = "/opt/app/bin/app";
constexpr const char* kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
constexpr const char* kLd = "/usr/lib64/ld-linux-x86-64.so.2";
constexpr const char* kStdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";

// gcc's cc1 as the issue saw it: the allocator, six inlined std allocation frames, the user's
// function, a run of unresolved frames, start-up.
std::vector<Frame> noisy_stack() {
    return {fn("operator new(unsigned long)", kStdcxx),
            fn("std::__new_allocator<int>::allocate(unsigned long, void const*)", "/opt/app/bin/app", "", 0, true),
            fn("std::allocator_traits<std::allocator<int> >::allocate(std::allocator<int>&, unsigned long)", "/opt/app/bin/app", "", 0, true),
            fn("std::_Vector_base<int, std::allocator<int> >::_M_allocate(unsigned long)", "/opt/app/bin/app", "", 0, true),
            fn("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)"),
            fn("grow(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)", "/opt/app/bin/app",
               "/build/app-1.0/src/grow.cc", 12),
            unresolved("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"), unresolved("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"),
            unresolved("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"),
            fn("main", "/opt/app/bin/app", "../src/main.cc", 3),
            fn("__libc_start_call_main", kLibc, "../sysdeps/nptl/libc_start_call_main.h", 58),
            fn("__libc_start_main_impl", kLibc, "../csu/libc-start.c", 360),
            fn("_start")};
}

std::vector<std::string> names(const ShownStack& s) {
    std::vector<std::string> out;
    for (const ShownFrame& f : s.frames) out.push_back(shown_name_with_run(f));
    return out;
}

// An analysis of `stacks` (hash i+1 for stacks[i]) fed `events`, folded and classified.
struct Views {
    StackTable table;
    FrameFolder folder{FoldOptions{}};
    Analysis a;
    Views(const std::vector<std::vector<Frame>>& stacks, const std::vector<Event>& events,
          const std::vector<std::string>& suppressions = {}) {
        for (size_t i = 0; i < stacks.size(); ++i) table.add(i + 1, stacks[i]);
        Analyzer an(table, {}, 0);
        for (const Event& e : events) an.add(e);
        a = std::move(an).finish();
        fold_sites(a, folder, false);
        classify_owners(a, suppressions);
    }
};

Event at(EventKind k, uint64_t t, uint64_t addr, uint64_t size, uint64_t hash = 0, int32_t tid = 1,
         std::optional<uint64_t> old_addr = std::nullopt) {
    return make_event(k, 1, tid, kStart + t, addr, size, hash, old_addr);
}

}  // namespace

TEST_CASE("report folding: names, paths and the default set") {
    CHECK(elide_templates("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)") ==
          "std::__cxx11::basic_string<\u2026>::_M_create(unsigned long&, unsigned long)");
    CHECK(elide_templates("std::map<int, std::vector<int> >::operator[](int const&)") == "std::map<\u2026>::operator[](int const&)");
    CHECK(elide_templates("bool operator< <int>(a<int> const&, a<int> const&)") == "bool operator< <\u2026>(a<\u2026> const&, a<\u2026> const&)");
    CHECK(elide_templates("std::ostream::operator<<(int)") == "std::ostream::operator<<(int)");
    CHECK(elide_templates("X::operator->()") == "X::operator->()");
    CHECK(elide_templates("a<b") == "a<b");  // unbalanced: whole
    CHECK(trim_build_path("../sysdeps/nptl/libc_start_call_main.h") == "sysdeps/nptl/libc_start_call_main.h");
    CHECK(trim_build_path("./elf/dl-init.c") == "elf/dl-init.c");
    CHECK(trim_build_path("/build/gcc-12-abc/src/gcc/ggc-page.cc") == "src/gcc/ggc-page.cc");
    CHECK(trim_build_path("/builddir/build/BUILD/glibc-2.36/malloc/malloc.c") == "malloc/malloc.c");
    CHECK(trim_build_path("/tmp/python-build.20260509073455.222/Python-3.11.7/Modules/_json.c") == "Modules/_json.c");
    CHECK(trim_build_path("/tmp/python-build.x") == "/tmp/python-build.x");
    CHECK(trim_build_path("/home/me/src/app.c") == "/home/me/src/app.c");
    CHECK(folded_by_default(fn("malloc", kLibc)));
    CHECK(folded_by_default(fn("operator new[](unsigned long)", kStdcxx)));
    CHECK(folded_by_default(fn("_start")));
    CHECK(folded_by_default(fn("start_thread", kLibc)));
    // CPython's allocator (the frames above PyUnicode_New in a python3 recording).
    CHECK(folded_by_default(fn("_PyObject_Malloc", "/usr/lib/libpython3.11.so.1.0", "Objects/obmalloc.c", 2003, true)));
    CHECK(folded_by_default(fn("PyMem_RawMalloc", "/usr/lib/libpython3.11.so.1.0")));
    CHECK_FALSE(folded_by_default(fn("PyUnicode_New", "/usr/lib/libpython3.11.so.1.0")));
    CHECK(folded_by_default(fn("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)")));
    CHECK(folded_by_default(fn("std::_Hashtable_alloc<std::allocator<std::__detail::_Hash_node<int, false> > >::_M_allocate_buckets(unsigned long)")));
    CHECK(folded_by_default(fn("void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)")));
    // Containers name std::allocator in their template arguments: their own frames stay.
    CHECK_FALSE(folded_by_default(fn("std::vector<int, std::allocator<int> >::push_back(int const&)")));
    CHECK_FALSE(folded_by_default(fn("main")));
    CHECK_FALSE(folded_by_default(unresolved(kLibc)));
}

TEST_CASE("report folding: a stack as shown, with --keep-frames, --hide-frames and --full-names") {
    StackTable table;
    table.add(1, noisy_stack());
    const StackFrames& frames = *table.find(1);
    SUBCASE("default") {
        FrameFolder folder{FoldOptions{}};
        ShownStack s;
        folder.fold_into(frames, s);
        CHECK(names(s) == std::vector<std::string>{"std::vector<\u2026>::_M_realloc_insert<\u2026>(__gnu_cxx::__normal_iterator<\u2026>, int const&)",
                                                   "grow(std::__cxx11::basic_string<\u2026> const&)", "[cc1] x3", "main"});
        CHECK(s.folded == 7);
        CHECK(s.frames[1].file == "src/grow.cc");
        CHECK(s.frames[3].file == "src/main.cc");
        CHECK(s.frames[2].run == 3);
    }
    SUBCASE("--keep-frames --full-names: every frame, each unresolved one on its line") {
        FoldOptions o;
        o.keep_frames = true;
        o.full_names = true;
        FrameFolder folder{o};
        ShownStack s;
        folder.fold_into(frames, s);
        CHECK(s.frames.size() == 13);
        CHECK(s.folded == 0);
        CHECK(s.frames[0].name == "operator new(unsigned long)");
        CHECK(s.frames[6].name == "[cc1]");
        CHECK(s.frames[7].name == "[cc1]");
        CHECK(s.frames[5].name == noisy_stack()[5].function);
    }
    SUBCASE("--hide-frames adds to the default set") {
        FoldOptions o;
        o.hide = std::regex("_M_realloc_insert|^main$");
        FrameFolder folder{o};
        ShownStack s;
        folder.fold_into(frames, s);
        CHECK(names(s) == std::vector<std::string>{"grow(std::__cxx11::basic_string<\u2026> const&)", "[cc1] x3"});
        CHECK(s.folded == 9);
    }
    SUBCASE("a stack folded whole keeps its innermost frame") {
        StackTable t;
        t.add(2, {fn("malloc", kLibc), fn("_start")});
        FrameFolder folder{FoldOptions{}};
        ShownStack s;
        folder.fold_into(*t.find(2), s);
        CHECK(names(s) == std::vector<std::string>{"malloc"});
        CHECK(s.folded == 1);
    }
}

TEST_CASE("report folding: sites, folded stacks and the unresolved modules' hints") {
    // Two stacks that differ only in folded frames are one line of a flamegraph.
    std::vector<Frame> other = noisy_stack();
    other.erase(other.begin() + 1);
    const Views v({noisy_stack(), other},
                  {at(EventKind::Malloc, 0, 0x10, 8, 1), at(EventKind::Malloc, 1, 0x20, 16, 2)});
    REQUIRE(v.a.sites.size() == 2);
    CHECK(folded_stack(v.a.sites[0]) == folded_stack(v.a.sites[1]));
    CHECK(folded_stack(v.a.sites[0]) ==
          "main;[cc1];grow(std::__cxx11::basic_string<\u2026> const&);std::vector<\u2026>::_M_realloc_insert<\u2026>(__gnu_cxx::__normal_iterator<\u2026>, int const&)");
    const FoldedLines lines = folded_costs(v.a, Cost::Allocated);
    REQUIRE(lines.lines().size() == 1);
    CHECK(lines.lines()[0].value == 24);
    REQUIRE(v.a.unresolved.size() == 1);
    CHECK(v.a.unresolved[0].module == "/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
    CHECK(v.a.unresolved[0].frames == 6);  // 3 in each distinct shown stack
    CHECK(debian_package_of(kLibc) == "libc6");
    CHECK(debian_package_of("/nonexistent/lib.so") == "");
}

// A program of four functions: main -> parse -> (alloc_node | grow) and main -> grow; grow
// recursing once. Costs per site below.
TEST_CASE("report views: by function, bottom-up, top-down, caller/callee") {
    const std::vector<std::vector<Frame>> stacks{
        {fn("malloc", kLibc), fn("alloc_node"), fn("parse", kApp, "src/parse.c", 40), fn("main")},  // 1: 3 calls of 100, 1 leaked
        {fn("grow"), fn("parse", kApp, "src/parse.c", 41), fn("main")},  // 2: 2 calls of 1000, temporary
        {fn("grow"), fn("grow"), fn("main")},                               // 3: 1 call of 50, live at peak
    };
    using K = EventKind;
    const Views v(stacks, {at(K::Malloc, 0, 0x100, 100, 1), at(K::Malloc, 1, 0x200, 100, 1), at(K::Malloc, 2, 0x300, 100, 1),
                           at(K::Free, 3, 0x200, 0), at(K::Free, 4, 0x300, 0),
                           at(K::Malloc, 5, 0x400, 1000, 2), at(K::Free, 6, 0x400, 0),
                           at(K::Malloc, 7, 0x500, 1000, 2), at(K::Free, 8, 0x500, 0),
                           at(K::Malloc, 9, 0x600, 50, 3)});
    SUBCASE("by function: the allocating (innermost shown) frame") {
        const FunctionTable t = by_function(v.a, Cost::Allocated, 10);
        REQUIRE(t.rows.size() == 2);
        CHECK(t.rows[0].name == "grow");
        CHECK(t.rows[0].costs == Costs{3, 2050, 1000, 50, 1, 2});
        CHECK(t.rows[1].name == "alloc_node");
        CHECK(t.rows[1].costs == Costs{3, 300, 100, 100, 1, 0});
        const FunctionTable top = by_function(v.a, Cost::Temporary, 1);
        REQUIRE(top.rows.size() == 1);
        CHECK(top.rows[0].name == "grow");
        CHECK(top.other_rows == 1);
        CHECK(top.other.calls == 3);
    }
    SUBCASE("bottom-up and top-down") {
        const auto up = call_tree(v.a, true, Cost::Allocations, 10, 32);
        REQUIRE(up.size() == 2);
        CHECK(up[0].name == "alloc_node");  // 3 calls, then by name
        CHECK(up[1].name == "grow");
        REQUIRE(up[1].children.size() == 2);
        CHECK(up[1].children[0].name == "parse");
        CHECK(up[1].children[0].costs.calls == 2);
        CHECK(up[1].children[1].name == "grow");
        CHECK(up[1].children[1].children.at(0).name == "main");
        const auto down = call_tree(v.a, false, Cost::Allocated, 1, 32);
        REQUIRE(down.size() == 1);
        CHECK(down[0].name == "main");
        CHECK(down[0].costs == Costs{6, 2350, 1100, 150, 2, 2});
        REQUIRE(down[0].children.size() == 1);
        CHECK(down[0].children[0].name == "parse");
        CHECK(down[0].other_children == 1);
        CHECK(down[0].children[0].costs.bytes == 2300);
    }
    SUBCASE("caller/callee: a recursive function counts each stack once") {
        auto cc = caller_callee(v.a, "grow", Cost::Allocated);
        REQUIRE(cc);
        CHECK(cc->function == "grow");
        CHECK(cc->total == Costs{3, 2050, 1000, 50, 1, 2});
        CHECK(cc->self == cc->total);
        REQUIRE(cc->callers.size() == 3);
        CHECK(cc->callers[0].name == "parse");
        CHECK(cc->callers[0].costs.bytes == 2000);
        // Each caller and callee says where it is, from its frame in the first stack of its row.
        CHECK(cc->callers[0].file == "src/parse.c");
        CHECK(cc->callers[0].line == 41);
        CHECK(cc->callers[0].module == kApp);
        CHECK(cc->callers[1].name == "grow");
        CHECK(cc->callers[2].name == "main");
        CHECK(cc->callees.size() == 1);  // grow -> grow
        auto parse = caller_callee(v.a, "pars", Cost::Allocated);
        REQUIRE(parse);
        CHECK(parse->self.calls == 0);
        CHECK(parse->total.calls == 5);
        REQUIRE(parse->callees.size() == 2);
        CHECK(parse->callees[0].name == "grow");
        CHECK(parse->callees[1].name == "alloc_node");
        CHECK(parse->callees[1].module == kApp);
        CHECK(parse->callees[1].file == "");
        CHECK(caller_callee(v.a, "nothing", Cost::Peak).error().message() ==
              "--caller-callee nothing: no function of the report has this name or contains it");
        CHECK(caller_callee(v.a, "a", Cost::Peak).error().message() ==
              "--caller-callee a: 3 functions contain it: 'alloc_node', 'main', 'parse'");
    }
    SUBCASE("text and json print the view") {
        OutputOptions o;
        o.cost = Cost::Allocated;
        o.view = OutputOptions::View::Functions;
        const std::string text = text_report(v.a, o);
        CHECK(text.find("== allocating functions, by allocated ==\n"
                        "  allocations   allocated        peak      leaked temporary  function\n"
                        "            3     2.0 KiB      1000 B        50 B         2  grow  (app)\n"
                        "            3       300 B       100 B       100 B         0  alloc_node  (app)\n") != std::string::npos);
        CHECK(text.find("== sites at the peak ==") == std::string::npos);
        o.view = OutputOptions::View::CallerCallee;
        const CallerCallee grow = caller_callee(v.a, "grow", Cost::Allocated).value();
        o.caller_callee = &grow;
        CHECK(text_report(v.a, o).find("  callers:\n"
                                       "            2     2.0 KiB      1000 B         0 B         2    parse  src/parse.c:41  (app)\n") !=
              std::string::npos);
        o.view = OutputOptions::View::BottomUp;
        CHECK(json_report(v.a, o).find(R"({"calls":3,"bytes":300,"peak_bytes":100,"leaked_bytes":100,"leaked_blocks":1,"temporary_calls":0,"function":"alloc_node","callers":[{"calls":3,)") !=
              std::string::npos);
    }
}

TEST_CASE("report temporaries: heaptrack's definition and figure") {
    // The sequence of the program whose heaptrack figure docs/REPORT.md gives
    // (temporaries.c there): 100 blocks freed at once; 100000 pairs a, b freed a then b; a
    // block moved by realloc at once and the new one freed at once. heaptrack_print 1.4.0 on
    // the program: "temporary memory allocations: 103" of 200103 calls, one of each in its own
    // injected libstdc++'s start-up; memtrack records the program's 102 of 200102.
    StackTable table;
    table.add(1, {fn("get"), fn("main")});
    Analyzer an(table, {}, 0);
    uint64_t t = 0;
    using K = EventKind;
    for (int i = 0; i < 100; ++i) {
        an.add(at(K::Malloc, ++t, 0x1000, 16, 1));
        an.add(at(K::Free, ++t, 0x1000, 0));
    }
    for (int i = 0; i < 100000; ++i) {
        an.add(at(K::Malloc, ++t, 0x2000, 32, 1));
        an.add(at(K::Malloc, ++t, 0x3000, 48, 1, 2));  // another thread: the stream is the process's
        an.add(at(K::Free, ++t, 0x2000, 0));
        an.add(at(K::Free, ++t, 0x3000, 0));
    }
    an.add(at(K::Malloc, ++t, 0x4000, 64, 1));
    an.add(at(K::Realloc, ++t, 0x5000, 128, 1, 1, 0x4000));
    an.add(at(K::Free, ++t, 0x5000, 0));
    const Analysis a = std::move(an).finish();
    CHECK(a.calls == 200102);
    CHECK(a.temporary_calls == 102);
    CHECK(a.temporary_bytes == 100 * 16 + 64 + 128);
    // Ranked by count: 100 blocks of 16 B before one of 128 B.
    StackTable two;
    two.add(1, {fn("small")});
    two.add(2, {fn("big")});
    Analyzer b(two, {}, 0);
    for (int i = 0; i < 3; ++i) {
        b.add(at(K::Malloc, 2 * i, 0x10, 16, 1));
        b.add(at(K::Free, 2 * i + 1, 0x10, 0));
    }
    b.add(at(K::Malloc, 10, 0x20, 1 << 20, 2));
    b.add(at(K::Free, 11, 0x20, 0));
    const Analysis c = std::move(b).finish();
    const Ranked r = rank(c.sites, Cost::Temporary, 10);
    REQUIRE(r.top.size() == 2);
    CHECK(r.top[0]->hash == 1);
}

TEST_CASE("report owners: runtime-owned blocks and suppressions are not leaks") {
    const std::vector<std::vector<Frame>> stacks{
        {fn("malloc", kLibc), unresolved(kStdcxx), fn("call_init", kLd), fn("_dl_init", kLd), fn("_dl_start_user", kLd)},
        {fn("malloc", kLibc), fn("_IO_file_doallocate", kLibc), fn("_IO_doallocbuf", kLibc), fn("puts", kLibc), fn("main")},
        {fn("calloc", kLibc), fn("allocate_dtv", kLd), fn("_dl_allocate_tls", kLd), fn("pthread_create", kLibc), fn("main")},
        {fn("malloc", kLibc), fn("_dl_new_object", kLd), fn("dlopen", kLibc), fn("main")},
        {fn("malloc", kLibc), fn("cache_fill"), fn("main")},
        {fn("malloc", kLibc), fn("real_leak"), fn("main")},
        // The program's own constructor, run by the loader: the program's leak.
        {fn("malloc", kLibc), fn("my_constructor"), fn("call_init", kLd), fn("_dl_init", kLd)},
    };
    StackTable pool;
    pool.add(1, {fn("malloc", kLibc), fn("(anonymous namespace)::pool::pool()", kStdcxx), fn("_GLOBAL__sub_I_eh_alloc.cc", kStdcxx)});
    CHECK(runtime_rule(*pool.find(1)) == "libstdc++ emergency exception pool");
    std::vector<Event> events;
    for (uint64_t i = 0; i < stacks.size(); ++i) events.push_back(at(EventKind::Malloc, i, 0x100 * (i + 1), 1000 * (i + 1), i + 1));
    const Views v(stacks, events, {"cache_*"});
    const std::vector<std::pair<Site::Owner, std::string>> expected{
        {Site::Owner::Runtime, "libstdc++ emergency exception pool"},
        {Site::Owner::Runtime, "stdio buffer"},
        {Site::Owner::Runtime, "thread-local storage"},
        {Site::Owner::Runtime, "dynamic loader"},
        {Site::Owner::Suppressed, "cache_*"},
        {Site::Owner::Program, ""},
        {Site::Owner::Program, ""},
    };
    REQUIRE(v.a.sites.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        CAPTURE(i);
        CHECK((v.a.sites[i].owner == expected[i].first));
        CHECK(v.a.sites[i].owner_rule == expected[i].second);
    }
    CHECK(v.a.runtime_leaked_bytes == 1000 + 2000 + 3000 + 4000);
    CHECK(v.a.runtime_leaked_blocks == 4);
    CHECK(v.a.suppressed_leaked_bytes == 5000);
    CHECK(v.a.leaked_bytes == 6000 + 7000);
    CHECK(v.a.leaked_blocks == 2);
    const Ranked leaks = rank(v.a.sites, Cost::Leaked, 10);
    REQUIRE(leaks.top.size() == 2);
    CHECK(leaks.top[0]->hash == 7);
    const std::string text = text_report(v.a, OutputOptions{});
    CHECK(text.find("live at end (leaked): 13000 B (12.7 KiB) in 2 blocks; not counted: 10000 B (9.8 KiB) in 4 blocks "
                    "the runtimes keep (below), 5000 B (4.9 KiB) in 1 block suppressed\n") != std::string::npos);
    CHECK(text.find("  #1 5000 B (4.9 KiB) in 1 block: suppressed by leak:cache_*\n") != std::string::npos);
    CHECK(text.find("  #2 4000 B (3.9 KiB) in 1 block: dynamic loader\n") != std::string::npos);
}

TEST_CASE("report owners: the suppressions file") {
    TempDir dir;
    const std::string good = dir / "good.supp";
    write_file(good, "# ours\n\nleak:cache_*\n  leak:*/vendor/*  \n");
    auto p = load_suppressions(good);
    REQUIRE(p);
    CHECK(*p == std::vector<std::string>{"cache_*", "*/vendor/*"});
    const std::string bad = dir / "bad.supp";
    write_file(bad, "leak:a\ncache_*\n");
    CHECK(load_suppressions(bad).error().message() == "read " + bad + ": line 2: 'cache_*' is not leak:PATTERN");
    CHECK(load_suppressions(dir / "none").error().message() ==
          "open " + std::string(dir / "none") + ": No such file or directory: cannot read the suppressions file");
}
