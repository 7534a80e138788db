// The resolver on a binary of thousands of functions (tests/unit/gen_functions.py, built by
// meson): right frames, and a new address costs about what it costs in a 32-function binary
// from the same generator. A lookup that scans the symbol table, the compile unit's DIEs or its
// lines per address is some hundred times slower in the big one, and fails the time budget,
// which is a ratio measured in the same run, so a slow or loaded machine slows both alike.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/Clock.hpp"
#include "symbols/FileMaps.hpp"
#include "symbols/Resolver.hpp"

using namespace memtrack;

namespace {

// Where meson put the generated binary: $GEN_SMALL_BIN / $GEN_BIG_BIN, else beside this test.
std::string generated(const char* env, const char* name) {
    if (const char* p = std::getenv(env)) return p;
    return (std::filesystem::canonical("/proc/self/exe").parent_path() / name).string();
}

struct Function {
    std::string name;
    uint64_t start = 0;
    uint64_t size = 0;
};

// The generated functions (gen_fn_*) of an ELF file, from its .symtab.
std::vector<Function> generated_functions(const std::string& path) {
    std::vector<Function> out;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    REQUIRE(elf != nullptr);
    Elf_Scn* scn = nullptr;
    while ((scn = elf_nextscn(elf, scn)) != nullptr) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        for (size_t i = 0; data != nullptr && i < sh.sh_size / sh.sh_entsize; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, int(i), &sym) == nullptr || sym.st_size == 0) continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name != nullptr && std::string_view(name).starts_with("gen_fn_"))
                out.push_back({name, sym.st_value, sym.st_size});
        }
    }
    elf_end(elf);
    ::close(fd);
    return out;
}


// `count` distinct return addresses inside the functions, spread over as many of them as the
// count allows. resolve() looks at ip - 1, so ip - 1 stays inside the function.
std::vector<uint64_t> return_addresses(const FileMaps& mapped, const std::vector<Function>& fns, size_t count) {
    std::vector<uint64_t> ips;
    std::mt19937_64 rng(42);
    std::vector<size_t> order(fns.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (uint64_t offset = 0; ips.size() < count; ++offset) {
        bool any = false;
        for (size_t i : order) {
            if (offset >= fns[i].size) continue;
            any = true;
            ips.push_back(mapped.base + fns[i].start + offset + 1);
            if (ips.size() == count) break;
        }
        if (!any) break;
    }
    return ips;
}

// CPU ns per new address, the best of several runs, each with a fresh Resolver whose module is
// loaded (and its compile unit indexed) by one lookup before the clock starts.
double ns_per_new_address(const FileMaps& mapped, uint64_t warm_ip, const std::vector<uint64_t>& ips) {
    double best = 1e18;
    for (int run = 0; run < 5; ++run) {
        Resolver r;
        (void)r.resolve(mapped.maps, warm_ip);
        const uint64_t t0 = thread_cpu_ns();
        for (uint64_t ip : ips) (void)r.resolve(mapped.maps, ip);
        best = std::min(best, double(thread_cpu_ns() - t0) / double(ips.size()));
        CHECK(r.cache_misses() == ips.size() + 1);
    }
    return best;
}

}  // namespace

TEST_CASE("Resolver on a generated binary of 8000 functions: right frames, and a new address costs what it costs in 32") {
    const std::string small_path = generated("GEN_SMALL_BIN", "gen_small");
    const std::string big_path = generated("GEN_BIG_BIN", "gen_big");
    const std::vector<Function> small_fns = generated_functions(small_path);
    const std::vector<Function> big_fns = generated_functions(big_path);
    REQUIRE(small_fns.size() == 32);
    REQUIRE(big_fns.size() == 8000);
    auto small = map_file(small_path);
    auto big = map_file(big_path);
    REQUIRE(small.ok());
    REQUIRE(big.ok());

    // Frames first: every function named, with its file and a line, and the inlined helper seen.
    {
        Resolver r;
        size_t inlined = 0;
        for (size_t i = 0; i < big_fns.size(); i += 97) {
            const Function& f = big_fns[i];
            const uint64_t ip = big->base + f.start + f.size / 2 + 1;
            const std::vector<Frame> frames = r.resolve(big->maps, ip);
            REQUIRE(!frames.empty());
            CHECK(frames.back().function == f.name);
            CHECK_FALSE(frames.back().inlined);
            CHECK(frames.back().file.ends_with("gen_big.c"));
            CHECK(frames.back().line > 0);
            CHECK(frames.back().module == big_path);
            for (const Frame& fr : frames) CHECK(fr.ip == ip);
            if (frames.size() > 1) {
                CHECK(frames.front().inlined);
                CHECK(frames.front().function == "mix");
                ++inlined;
            }
        }
        CHECK(inlined > 0);
        CHECK(r.modules_loaded() == 1);
    }

    // The same number of new addresses in each: all of the small binary's code, one or two per
    // function in the big one. The warm-up address is in another function of the same binary.
    const size_t count = 600;
    const std::vector<uint64_t> small_ips = return_addresses(*small, small_fns, count);
    const std::vector<uint64_t> big_ips = return_addresses(*big, big_fns, count);
    REQUIRE(small_ips.size() == count);
    REQUIRE(big_ips.size() == count);
    const uint64_t small_warm = small->base + small_fns.front().start;  // ip - 1 is before it: main or padding
    const uint64_t big_warm = big->base + big_fns.front().start;
    const double small_ns = ns_per_new_address(*small, small_warm, small_ips);
    const double big_ns = ns_per_new_address(*big, big_warm, big_ips);
    MESSAGE("new address: ", small_ns, " ns in 32 functions, ", big_ns, " ns in 8000 (", big_ns / small_ns, "x)");
    // 250x more functions: a scan per address would cost ~100x and more. Binary searches and one
    // small scope tree per function met cost a few times more (cache misses in bigger tables).
    CHECK(big_ns < 8 * small_ns);
}
