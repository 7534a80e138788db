#pragma once
// C++ symbol names for people: the runtime's demangler (libiberty's, inside libstdc++).
#include <string>

namespace memtrack {

// `name` demangled when it is a mangled C++ name ("_Z..."), as it is otherwise (C, or a name the
// demangler rejects).
std::string demangle(const char* name);

}  // namespace memtrack
