#include "symbols/Demangle.hpp"

#include <cxxabi.h>
#include <libiberty/demangle.h>

#include <cstdlib>
#include <memory>

namespace memtrack {
namespace {

using Owned = std::unique_ptr<char, decltype(&std::free)>;

// Rust first: a legacy Rust name is also a valid Itanium C++ name, which the C++ demangler would
// render with the hash as a path element ("...::reserve_rehash::h0123456789abcdef"). libiberty
// answers nullptr for anything that is not Rust, C++ names included.
Owned rust(const char* name) { return Owned(cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST), &std::free); }

}  // namespace

std::string demangle(const char* name) {
    if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R')) return name;
    if (Owned out = rust(name)) return out.get();
    if (name[1] == 'Z') {
        int status = 0;
        Owned out(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
        if (status == 0 && out) return out.get();
    }
    return name;
}

}  // namespace memtrack
