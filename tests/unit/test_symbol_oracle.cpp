// The Resolver against libdwfl's own per-address answers, the way memtrack resolved before its
// indexes (issue 16): dwfl_module_addrinfo for the symbol, dwfl_module_getsrc for the line,
// dwarf_getscopes for the inlined calls. Same frames (function, file, line, inlined) for random
// code addresses of the C library (with its separate debug info when installed) and of this test.
#include <doctest/doctest.h>

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "symbols/FileMaps.hpp"
#include "symbols/Resolver.hpp"

using namespace memtrack;

namespace {

std::string demangled(const char* name) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
    return status == 0 && out ? std::string(out.get()) : std::string(name);
}

std::string die_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        if (const char* s = dwarf_formstring(&attr)) return demangled(s);
    if (dwarf_attr_integrate(die, DW_AT_name, &attr))
        if (const char* s = dwarf_formstring(&attr)) return s;
    return {};
}

// libdwfl on one file at bias 0, as the Resolver opens it.
struct Oracle {
    char* debuginfo_path = nullptr;
    Dwfl_Callbacks callbacks{dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, dwfl_offline_section_address,
                             &debuginfo_path};
    std::unique_ptr<Dwfl, decltype(&dwfl_end)> dwfl{dwfl_begin(&callbacks), &dwfl_end};
    Dwfl_Module* mod = nullptr;

    explicit Oracle(const std::string& path) {
        dwfl_report_begin(dwfl.get());
        mod = dwfl_report_elf(dwfl.get(), path.c_str(), path.c_str(), -1, 0, true);
        dwfl_report_end(dwfl.get(), nullptr, nullptr);
    }

    std::vector<Frame> frames(uint64_t addr) {
        std::string symbol;
        GElf_Off off = 0;
        GElf_Sym sym;
        GElf_Word shndx = 0;
        Elf* elf = nullptr;
        Dwarf_Addr bias = 0;
        if (const char* name = dwfl_module_addrinfo(mod, addr, &off, &sym, &shndx, &elf, &bias)) {
            const int type = GELF_ST_TYPE(sym.st_info);
            if (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE) symbol = demangled(name);
        }
        std::string file;
        uint32_t line = 0;
        if (Dwfl_Line* l = dwfl_module_getsrc(mod, addr)) {
            int lineno = 0;
            if (const char* src = dwfl_lineinfo(l, nullptr, &lineno, nullptr, nullptr, nullptr)) file = src;
            if (lineno > 0) line = uint32_t(lineno);
        }
        std::vector<Frame> out;
        std::string container;
        if (Dwarf_Die* cu = dwfl_module_addrdie(mod, addr, &bias)) {
            Dwarf_Die* scopes = nullptr;
            int n = dwarf_getscopes(cu, addr - bias, &scopes);
            if (n > 0) {
                Dwarf_Die innermost = scopes[0];
                std::free(scopes);
                scopes = nullptr;
                n = dwarf_getscopes_die(&innermost, &scopes);
            }
            for (int i = 0; i < n; ++i) {
                const int tag = dwarf_tag(&scopes[i]);
                if (tag == DW_TAG_subprogram) {
                    container = die_name(&scopes[i]);
                    break;
                }
                if (tag != DW_TAG_inlined_subroutine) continue;
                Frame f;
                f.function = die_name(&scopes[i]);
                f.file = file;
                f.line = line;
                f.inlined = true;
                out.push_back(f);
                // The call site becomes the outer frame's location.
                file.clear();
                line = 0;
                Dwarf_Attribute attr;
                Dwarf_Word v = 0;
                Dwarf_Die cudie;
                Dwarf_Files* files = nullptr;
                size_t nfiles = 0;
                if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &v) == 0 &&
                    dwarf_diecu(&scopes[i], &cudie, nullptr, nullptr) && dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0 &&
                    v < nfiles)
                    if (const char* s = dwarf_filesrc(files, v, nullptr, nullptr)) file = s;
                if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &v) == 0) line = uint32_t(v);
            }
            std::free(scopes);
        }
        Frame outer;
        outer.function = !container.empty() ? container : symbol;
        outer.file = file;
        outer.line = line;
        if (out.empty() && outer.function.empty() && outer.file.empty()) return out;
        out.push_back(outer);
        return out;
    }
};

std::string show(const std::vector<Frame>& frames) {
    std::string s;
    for (const Frame& f : frames)
        s += (f.inlined ? "[inlined] " : "") + f.function + " " + f.file + ":" + std::to_string(f.line) + "; ";
    return s;
}

std::string loaded_libc() {
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (std::string_view(info->dlpi_name).find("/libc.so") != std::string_view::npos)
                *static_cast<std::string*>(out) = std::filesystem::canonical(info->dlpi_name).string();
            return 0;
        },
        &path);
    return path;
}

}  // namespace

TEST_CASE("Resolver frames are libdwfl's per-address answers, on libc and on this test") {
    for (const std::string& path : {loaded_libc(), std::filesystem::canonical("/proc/self/exe").string()}) {
        REQUIRE(!path.empty());
        auto mapped = map_file(path);
        REQUIRE(mapped.ok());
        REQUIRE(!mapped->code.empty());
        Oracle oracle(path);
        REQUIRE(oracle.mod != nullptr);
        Resolver resolver;
        std::mt19937_64 rng(3);
        size_t named = 0;
        const auto [lo, hi] = mapped->code.front();
        for (int i = 0; i < 2000; ++i) {
            const uint64_t addr = lo + rng() % (hi - lo);
            std::vector<Frame> want = oracle.frames(addr);
            std::vector<Frame> got = resolver.resolve(mapped->maps, mapped->base + addr + 1);
            if (want.empty()) {  // nothing known: one frame with only the address and module
                REQUIRE(got.size() == 1);
                CHECK_MESSAGE(got[0].function.empty(), path, " +", addr, ": ", show(got));
                continue;
            }
            for (Frame& f : got) f.ip = 0, f.module.clear(), f.build_id.clear();
            CHECK_MESSAGE(got == want, path, " +", addr, ": got ", show(got), " want ", show(want));
            named += !want.back().function.empty();
        }
        CHECK(named > 1000);
    }
}
