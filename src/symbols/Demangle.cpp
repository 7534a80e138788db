#include "symbols/Demangle.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace memtrack {

std::string demangle(const char* name) {
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                                        &std::free);
        if (status == 0 && out) return out.get();
    }
    return name;
}

}  // namespace memtrack
