#include "cli/ReportCommand.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "report/Diff.hpp"
#include "report/FailIf.hpp"
#include "report/FrameNames.hpp"
#include "report/Functions.hpp"
#include "report/Owners.hpp"
#include "report/Load.hpp"
#include "report/Output.hpp"
#include "report/Units.hpp"

namespace memtrack {
namespace {

using namespace report;

// A problem with the options: reported as one line, exit code 2.
struct BadOption {
    std::string message;
};

std::regex regex_option(const char* name, const std::string& text) {
    try {
        return std::regex(text, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
        throw BadOption{fmt::format("{} '{}': not a regular expression: {}", name, text, e.what())};
    }
}

uint64_t size_option(const char* name, const std::string& text) {
    const auto v = parse_quantity(text);
    if (!v || *v < 0) throw BadOption{fmt::format("{} '{}': not a size (e.g. 4096, 64KiB, 1MiB)", name, text)};
    return uint64_t(*v);
}

uint64_t duration_option(const char* name, const std::string& text) {
    const auto v = parse_duration_ns(text);
    if (!v) throw BadOption{fmt::format("{} '{}': not a duration (e.g. 1.5s, 200ms, 30us)", name, text)};
    return *v;
}

// The function view the options ask for (Functions.hpp); Sites for none. run() refuses more than one.
OutputOptions::View view_of(const ReportOptions& opt) {
    using View = OutputOptions::View;
    return opt.by == "function"         ? View::Functions
           : opt.bottom_up              ? View::BottomUp
           : opt.top_down               ? View::TopDown
           : !opt.caller_callee.empty() ? View::CallerCallee
                                        : View::Sites;
}

LoadOptions load_options(const ReportOptions& opt) {
    LoadOptions l;
    l.stacks_file = opt.stacks_file;
    l.python_only = opt.python_only;
    l.temporary_threshold = opt.temporary_threshold;
    l.progress = true;
    l.site_timeline = opt.format == "html" && opt.diff_base.empty();  // --diff's page has no time
    FilterOptions& f = l.filter;
    f.pids.insert(opt.pids.begin(), opt.pids.end());
    if (!opt.from.empty()) f.from_ns = duration_option("--from", opt.from);
    if (!opt.to.empty()) f.to_ns = duration_option("--to", opt.to);
    if (f.from_ns && f.to_ns && *f.from_ns > *f.to_ns) throw BadOption{"--from is after --to"};
    if (!opt.focus.empty()) f.focus = regex_option("--focus", opt.focus);
    if (!opt.command.empty()) f.command = regex_option("--command", opt.command);
    l.window = opt.window;
    l.windows = opt.windows;
    if (!opt.ignore.empty()) f.ignore = regex_option("--ignore", opt.ignore);
    if (!opt.min_size.empty()) f.min_size = size_option("--min-size", opt.min_size);
    if (!opt.max_size.empty()) f.max_size = size_option("--max-size", opt.max_size);
    if (f.min_size > f.max_size) throw BadOption{"--min-size is above --max-size"};
    if (!opt.hide_frames.empty()) l.fold.hide = regex_option("--hide-frames", opt.hide_frames);
    l.fold.keep_frames = opt.keep_frames;
    l.fold.full_names = opt.full_names;
    l.debug_packages = opt.format == "text";
    // Shown stacks for the formats and views that name frames as folding shows them; json's
    // sites, pprof and speedscope carry raw frames.
    const bool view = view_of(opt) != OutputOptions::View::Sites;
    l.shown_stacks = opt.format == "text" || opt.format == "folded" || opt.format == "html" || view || !opt.diff_base.empty();
    return l;
}

std::optional<std::string> write_to(std::FILE* f, const std::string& name, const std::string& data) {
    if (std::fwrite(data.data(), 1, data.size(), f) != data.size() || std::fflush(f) != 0)
        return fmt::format("writing to {} failed: {}", name, std::strerror(errno));
    return std::nullopt;
}

// A regular file is written next to its place and renamed into it, so a failed report never
// leaves a partial file; anything else (/dev/null, a fifo) is written in place.
std::optional<std::string> write_output(const std::string& path, const std::string& data) {
    if (path.empty()) return write_to(stdout, "stdout", data);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
        std::FILE* f = std::fopen(path.c_str(), "wb");
        if (!f) return fmt::format("cannot open {}: {}", path, std::strerror(errno));
        auto err = write_to(f, path, data);
        std::fclose(f);
        return err;
    }
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) return fmt::format("cannot create {}: {}", tmp, std::strerror(errno));
        f.write(data.data(), std::streamsize(data.size()));
        f.close();
        if (!f) {
            std::filesystem::remove(tmp);
            return fmt::format("writing {} failed", tmp);
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        std::filesystem::remove(tmp);
        return fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(err));
    }
    return std::nullopt;
}

std::string render(const std::string& format, const Analysis& a, const OutputOptions& o) {
    if (format == "text") return text_report(a, o);
    if (format == "json") return json_report(a, o);
    if (format == "folded") return folded_report(a, o);
    if (format == "pprof") return pprof_report(a, o);
    if (format == "speedscope") return speedscope_report(a, o);
    return html_report(a, o);
}

std::string render_diff(const std::string& format, const Analysis& base, const Analysis& now,
                        const OutputOptions& o) {
    if (format == "json") return diff_json(diff(base, now), o);
    if (format == "folded") return diff_folded(base, now, o);
    if (format == "html") return diff_html(diff(base, now), o);
    return diff_text(diff(base, now), o);
}

int fail(const std::string& message) {
    fmt::print(stderr, "memtrack: report: {}\n", message);
    return 1;
}

int run(const ReportOptions& opt) {
    static const std::vector<std::string> kFormats{"text", "json", "folded", "pprof", "speedscope", "html"};
    if (std::find(kFormats.begin(), kFormats.end(), opt.format) == kFormats.end())
        throw BadOption{fmt::format("--format '{}': one of text, json, folded, pprof, speedscope, html", opt.format)};
    const auto cost = cost_from_name(opt.cost);
    if (!cost) throw BadOption{fmt::format("--cost '{}': one of peak, leaked, allocated, allocations, temporary", opt.cost)};
    if (opt.format == "pprof" && opt.output.empty())
        throw BadOption{"--format pprof writes a binary file: name it with -o FILE"};
    if (!opt.diff_base.empty() && opt.format != "text" && opt.format != "json" && opt.format != "folded" &&
        opt.format != "html")
        throw BadOption{"--diff prints text, json, folded or html"};
    std::vector<Condition> conditions;
    for (const std::string& expr : opt.fail_if) {
        auto parsed = parse_fail_if(expr);
        if (!parsed) throw BadOption{parsed.error().message()};
        conditions.insert(conditions.end(), parsed->begin(), parsed->end());
    }
    {
        // Unknown metrics are refused before any work, with the metrics' values all zero.
        // Windows are known only then: their conditions' metrics are checked alone.
        const Analysis none;
        std::vector<Condition> whole;
        std::copy_if(conditions.begin(), conditions.end(), std::back_inserter(whole),
                     [](const Condition& c) { return c.window.empty(); });
        auto check = evaluate(whole, metrics(none, opt.diff_base.empty() ? nullptr : &none));
        if (!check) throw BadOption{check.error().message()};
        if (auto windows = check_window_metrics(conditions); !windows) throw BadOption{windows.error().message()};
    }
    if (opt.by != "site" && opt.by != "function") throw BadOption{fmt::format("--by '{}': site or function", opt.by)};
    const int views = int(opt.by == "function") + int(opt.bottom_up) + int(opt.top_down) + int(!opt.caller_callee.empty());
    if (views > 1) throw BadOption{"--by function, --bottom-up, --top-down and --caller-callee are one view each: choose one"};
    if (views == 1 && opt.format != "text" && opt.format != "json")
        throw BadOption{"--by function, --bottom-up, --top-down and --caller-callee print text or json"};
    if (views == 1 && !opt.diff_base.empty()) throw BadOption{"--diff compares sites: it has no function views"};
    LoadOptions lo = load_options(opt);
    if (!opt.suppressions.empty()) {
        auto patterns = load_suppressions(opt.suppressions);
        if (!patterns) return fail(patterns.error().message());
        lo.suppressions = std::move(patterns).value();
    }

    auto loaded = load(opt.artifact, lo);
    if (!loaded) return fail(loaded.error().message());
    if (!loaded->warning.empty()) fmt::print(stderr, "memtrack: report: {}\n", loaded->warning);
    std::optional<Loaded> base;
    if (!opt.diff_base.empty()) {
        LoadOptions blo = lo;
        blo.stacks_file.clear();  // --stacks names ARTIFACT's; BASE's is beside it
        auto b = load(opt.diff_base, blo);
        if (!b) return fail(b.error().message());
        if (!b->warning.empty()) fmt::print(stderr, "memtrack: report: --diff: {}\n", b->warning);
        base = std::move(b).value();
    }

    OutputOptions o;
    o.limit = opt.limit;
    o.cost = *cost;
    o.colour = opt.output.empty() && opt.format == "text" && ::isatty(STDOUT_FILENO) == 1;
    o.title = std::string(base_name(opt.artifact));
    o.base_title = std::string(base_name(opt.diff_base));
    o.windows = opt.windows || !opt.window.empty();
    using View = OutputOptions::View;
    o.view = view_of(opt);
    const Analysis& a = loaded->analysis;
    std::optional<CallerCallee> rows;
    if (o.view == View::CallerCallee) {
        auto found = caller_callee(a, opt.caller_callee, o.cost);
        if (!found) return fail(found.error().message());
        rows = std::move(found).value();
        o.caller_callee = &*rows;
    }
    const std::string out = base ? render_diff(opt.format, base->analysis, a, o) : render(opt.format, a, o);
    if (auto err = write_output(opt.output, out)) return fail(*err);

    auto verdict = evaluate(conditions, metrics(a, base ? &base->analysis : nullptr));
    if (!verdict) return fail(verdict.error().message());  // a window the recording does not have
    if (*verdict) {
        fmt::print(stderr, "memtrack: report: fail-if: {}\n", **verdict);
        return 3;
    }
    return 0;
}

}  // namespace

int run_report(const ReportOptions& opt) {
    try {
        return run(opt);
    } catch (const BadOption& e) {
        fmt::print(stderr, "memtrack: report: {}\n", e.message);
        return 2;
    }
}

}  // namespace memtrack
