#include "report/FrameFold.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "report/FrameNames.hpp"

namespace memtrack::report {
namespace {

constexpr std::string_view kEllipsis = "\u2026";

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
    for (std::string_view p : prefixes)
        if (s.starts_with(p)) return true;
    return false;
}

// The function's qualified name without its parameters: "a::b<…>::c(int)" -> "a::b<…>::c".
std::string_view without_parameters(std::string_view elided) {
    const size_t paren = elided.find('(');
    // "(anonymous namespace)::f" starts with a parenthesis that is not a parameter list.
    if (paren == std::string_view::npos || paren == 0) return elided;
    return elided.substr(0, paren);
}

bool is_startup(std::string_view f) {
    static constexpr std::string_view kNames[] = {
        "_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_main_alias_2",
        "__libc_start_call_main", "_dl_start_user", "_dl_start", "start_thread", "clone", "clone3",
        "__clone", "__clone3", "__clone_internal", "__GI___clone3", "__GI___clone",
    };
    for (std::string_view n : kNames)
        if (f == n) return true;
    return false;
}

bool is_allocator_entry(std::string_view f) {
    static constexpr std::string_view kNames[] = {
        "malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "posix_memalign", "memalign",
        "valloc", "pvalloc", "__libc_malloc", "__libc_calloc", "__libc_realloc", "__libc_memalign",
        "_mid_memalign", "__posix_memalign", "__libc_reallocarray", "__GI___libc_malloc",
        "__GI___libc_realloc", "tcache_init", "_int_malloc", "_int_realloc", "sysmalloc",
        // CPython's allocator API and pymalloc: every object's allocation goes through them, so
        // left in they were the one allocating function of a Python program (--by function).
        "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc",
        "_PyObject_Realloc", "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc",
        "PyMem_RawCalloc", "PyMem_RawRealloc", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc",
        "pymalloc_alloc", "pymalloc_realloc", "allocate_from_new_pool", "_PyMem_DebugMalloc",
        "_PyMem_DebugCalloc", "_PyMem_DebugRealloc", "_PyMem_DebugRawAlloc", "_PyMem_DebugRawMalloc",
        "_PyMem_DebugRawCalloc", "_PyMem_DebugRawRealloc",
    };
    for (std::string_view n : kNames)
        if (f == n) return true;
    return f.starts_with("operator new");
}

// The standard library's allocation plumbing, judged on the name without template arguments
// or parameters (template arguments name std::allocator in nearly every container's frames).
bool is_std_allocation(std::string_view qualified) {
    // A function template's name starts with its return type: "void std::...::_M_construct<…>".
    if (const size_t space = qualified.rfind(' '); space != std::string_view::npos) qualified.remove_prefix(space + 1);
    if (!starts_with_any(qualified, {"std::", "__gnu_cxx::"})) return false;
    if (qualified.find("allocat") != std::string_view::npos) return true;  // allocator, allocate, __allocated_ptr
    for (std::string_view base : {"_Vector_base", "_Deque_base", "_List_base", "_Hashtable_alloc", "_Sp_counted_ptr_inplace"})
        if (qualified.find(base) != std::string_view::npos) return true;
    const size_t last = qualified.rfind("::");
    std::string_view member = last == std::string_view::npos ? qualified : qualified.substr(last + 2);
    member = member.substr(0, member.find('<'));  // basic_string<…>::_M_construct<…>
    for (std::string_view m : {"_M_create", "_M_create_storage", "_M_get_node", "_M_create_node", "_M_construct"})
        if (member == m) return true;
    return false;
}

bool hidden(const Frame& f, const std::regex& re) {
    return std::regex_search(f.function, re) || std::regex_search(f.file, re) || std::regex_search(f.module, re);
}

}  // namespace

std::string shown_name_with_run(const ShownFrame& f) {
    return f.run > 1 ? fmt::format("{} x{}", f.name, f.run) : std::string(f.name);
}

std::string elide_templates(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    int depth = 0;
    bool after_operator = false;  // just after "operator<" and the like (then "<" opens arguments)
    for (size_t i = 0; i < name.size(); ++i) {
        if (depth == 0 && name.substr(i).starts_with("operator")) {
            // operator<, operator<<, operator<=>, operator->, operator>>, operator>= ... are
            // names, not brackets.
            size_t j = i + 8;
            while (j < name.size() && (name[j] == '<' || name[j] == '>' || name[j] == '=' || name[j] == '-')) ++j;
            out.append(name.substr(i, j - i));
            i = j - 1;
            after_operator = true;
            continue;
        }
        const char c = name[i];
        // At the top level, '<' opens template arguments only right after a name ("vector<",
        // "operator< <"); Python's "<module>", "<lambda>" and "f.<locals>.g" are names themselves.
        const bool after_name =
            i > 0 && (std::isalnum(static_cast<unsigned char>(name[i - 1])) || name[i - 1] == '_');
        const bool opens = c == '<' && (depth > 0 || after_name || after_operator);
        if (c != ' ') after_operator = false;
        if (c == '<' && !opens) {
            out += c;
        } else if (c == '<') {
            if (depth++ == 0) {
                out += '<';
                out += kEllipsis;
            }
        } else if (c == '>') {
            if (depth == 0) return std::string(name);
            if (--depth == 0) out += '>';
        } else if (depth == 0) {
            out += c;
        }
    }
    return depth == 0 ? out : std::string(name);
}

std::string trim_build_path(std::string_view file) {
    // Each root is followed by one folder of the build's own (Debian's package-version, pyenv's
    // python-build.<stamp>), then the sources' own folder for pyenv (Python-3.11.7).
    for (auto [root, folders] : {std::pair<std::string_view, int>{"/build/", 1}, {"/builddir/build/BUILD/", 1},
                                 {"/tmp/python-build.", 2}}) {
        if (!file.starts_with(root)) continue;
        size_t at = root.size();
        for (int i = 0; i < folders && at != std::string_view::npos; ++i) {
            at = file.find('/', at);
            if (at != std::string_view::npos) ++at;
        }
        if (at != std::string_view::npos) file.remove_prefix(at);
        break;
    }
    for (;;) {
        if (file.starts_with("./")) file.remove_prefix(2);
        else if (file.starts_with("../")) file.remove_prefix(3);
        else break;
    }
    return std::string(file);
}

bool folded_by_default(const Frame& f) {
    if (f.function.empty()) return false;
    if (is_startup(f.function) || is_allocator_entry(f.function)) return true;
    return is_std_allocation(without_parameters(elide_templates(f.function)));
}

const FrameFolder::FrameView& FrameFolder::view(const Frame* f) const {
    auto [it, fresh] = frames_.try_emplace(f);
    if (!fresh) return it->second;
    FrameView& v = it->second;
    v.fold = (!opt_.keep_frames && folded_by_default(*f)) || (opt_.hide && hidden(*f, *opt_.hide));
    // An unresolved frame is "[module]" as everywhere (frame_name).
    v.name = f->function.empty() || opt_.full_names ? frame_name(*f) : elide_templates(f->function);
    v.file = trim_build_path(f->file);
    return v;
}

void FrameFolder::fold_into(const StackFrames& frames, ShownStack& s) const {
    s.frames.clear();
    s.folded = 0;
    for (const Frame* f : frames) {
        const FrameView& v = view(f);
        if (v.fold) {
            ++s.folded;
            continue;
        }
        if (f->function.empty() && !opt_.keep_frames && !s.frames.empty()) {
            ShownFrame& last = s.frames.back();
            if (last.run > 0 && last.module == f->module) {
                ++last.run;
                continue;
            }
        }
        ShownFrame shown;
        shown.name = v.name;
        shown.module = f->module;
        shown.inlined = f->inlined;
        if (f->function.empty()) {
            shown.run = 1;
        } else {
            shown.file = v.file;
            shown.line = f->line;
        }
        s.frames.push_back(std::move(shown));
    }
    if (s.frames.empty() && !frames.empty()) {
        // Everything folded: the innermost frame stays, so the stack still names its allocator.
        const Frame* f = frames.front();
        const FrameView& v = view(f);
        s.frames.push_back(ShownFrame{v.name, v.file, f->line, f->module, f->inlined, 0});
        --s.folded;
    }
}

std::string debian_package_of(const std::string& path) {
    std::vector<std::string> candidates{path};
    std::error_code ec;
    const auto real = std::filesystem::canonical(path, ec);
    if (!ec && real.string() != path) candidates.push_back(real.string());
    // Debian 12's merged /usr: packages list /lib/..., processes often map /usr/lib/...
    for (size_t i = 0, n = candidates.size(); i < n; ++i) {
        const std::string& c = candidates[i];
        candidates.push_back(c.starts_with("/usr/") ? c.substr(4) : "/usr" + c);
    }
    for (const std::string& p : candidates) {
        // Paths come from the recording; quoted for the shell, with any quote in them refused.
        if (p.find('\'') != std::string::npos) continue;
        const std::string cmd = fmt::format("dpkg-query -S '{}' 2>/dev/null", p);
        std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(cmd.c_str(), "r"), ::pclose);
        if (!pipe) continue;
        char line[512];
        if (!std::fgets(line, sizeof line, pipe.get())) continue;
        // "libc6:amd64: /usr/lib/x86_64-linux-gnu/libc.so.6"
        std::string_view l(line);
        const size_t colon = l.find(": ");
        if (colon == std::string_view::npos) continue;
        std::string_view package = l.substr(0, colon);
        if (const size_t arch = package.find(':'); arch != std::string_view::npos) package = package.substr(0, arch);
        if (package.find(',') != std::string_view::npos) continue;  // a diversion line
        return std::string(package);
    }
    return {};
}

}  // namespace memtrack::report
