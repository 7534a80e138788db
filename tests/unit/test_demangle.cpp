// Names for people: C++ and Rust (legacy and v0) demangled, anything else kept as it is.
#include <doctest/doctest.h>

#include "symbols/Demangle.hpp"

using memtrack::demangle;

TEST_CASE("demangle: Rust legacy names lose their hash and LLVM's .llvm.NNN suffix") {
    CHECK(demangle("_ZN9hashbrown3raw21RawTable$LT$T$C$A$GT$14reserve_rehash17h0123456789abcdefE") ==
          "hashbrown::raw::RawTable<T,A>::reserve_rehash");
    CHECK(demangle("_ZN9hashbrown3raw21RawTable$LT$T$C$A$GT$14reserve_rehash17h0123456789abcdefE.llvm.4471382")
          == "hashbrown::raw::RawTable<T,A>::reserve_rehash");
    CHECK(demangle("_ZN4core3ptr13drop_in_place17h00112233aabbccddE") == "core::ptr::drop_in_place");
}

TEST_CASE("demangle: Rust v0 names") {
    CHECK(demangle("_RNvCskwGfYPst2Cb_3foo16example_function") == "foo::example_function");
    CHECK(demangle("_RINvNtCs1234_7mycrate3foo3barjEB4_") == "mycrate::foo::bar::<usize>");
}

TEST_CASE("demangle: C++ names as the C++ runtime writes them, clones included") {
    CHECK(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi") == "std::vector<int, std::allocator<int> >::push_back(int const&)");
    CHECK(demangle("_ZN3foo3barE") == "foo::bar");
    CHECK(demangle("_Z3fooi.cold") == "foo(int) [clone .cold]");
}

TEST_CASE("demangle: other names stay as they are") {
    CHECK(demangle("main") == "main");
    CHECK(demangle("_start") == "_start");
    CHECK(demangle("_Zgarbage") == "_Zgarbage");
    CHECK(demangle("_R") == "_R");
    CHECK(demangle("") == "");
}
