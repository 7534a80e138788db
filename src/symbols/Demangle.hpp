#pragma once
// Symbol names for people: C++ through the runtime's demangler, Rust (legacy "_ZN...17h<hash>E"
// and v0 "_R...") through libiberty's, which also drops the hash and LLVM's ".llvm.NNN" suffix.
#include <string>

namespace memtrack {

// `name` demangled when it is a mangled Rust or C++ name, as it is otherwise (C, or a name every
// demangler rejects).
std::string demangle(const char* name);

}  // namespace memtrack
