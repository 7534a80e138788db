// cxx_ops [N]: every replaceable operator new and operator delete of libstdc++, N times each
// (default 10). Each allocation must be recorded once (Malloc, or AlignedAlloc for the
// std::align_val_t forms) with the size passed to operator new, and each delete as one Free,
// although libstdc++ implements them by calling one another and then malloc/aligned_alloc/free.
// Built with -fsized-deallocation so `delete` expressions use the sized forms where C++ says so.
#include <cstddef>
#include <cstdint>
#include <new>

#include "fixture.h"
#include "fixture_sizes.h"

namespace {

struct Obj {
    char bytes[FX_CXX_NEW_OBJ];
};
struct NothrowObj {
    char bytes[FX_CXX_NOTHROW_OBJ];
};
// A non-trivial destructor makes new[] store an element count (a cookie of sizeof(size_t)) in
// front of the array, and makes delete[] use the sized operator delete[].
struct WithDtor {
    char bytes[7];
    ~WithDtor() { fx_escape(this); }
};
constexpr std::size_t kDtorCount = 1163;
static_assert(sizeof(WithDtor) == 7);
static_assert(kDtorCount * sizeof(WithDtor) + sizeof(std::size_t) == FX_CXX_NEW_ARR_DTOR);

struct alignas(FX_CXX_ALIGNED_ALIGN) Aligned {
    char bytes[FX_CXX_ALIGNED_OBJ];
};
static_assert(sizeof(Aligned) == FX_CXX_ALIGNED_OBJ);
static_assert(3 * sizeof(Aligned) == FX_CXX_ALIGNED_ARR);
static_assert(alignof(Aligned) > __STDCPP_DEFAULT_NEW_ALIGNMENT__);

template <typename T>
T* keep(T* p, std::size_t align = alignof(std::max_align_t)) {
    FX_REQUIRE(p != nullptr);
    FX_REQUIRE(reinterpret_cast<std::uintptr_t>(p) % align == 0);
    fx_escape(p);
    return static_cast<T*>(fx_launder(p));
}

template <typename T>
T* launder(T* p) {
    return static_cast<T*>(fx_launder(p));
}

std::align_val_t al(std::size_t a) {
    return std::align_val_t(fx_size(a));
}

void one_round() {
    // new / delete expressions.
    Obj* obj = keep(new Obj);
    delete launder(obj);  // operator delete(void*, std::size_t)

    char* arr = keep(new char[fx_size(FX_CXX_NEW_ARR)]);
    delete[] launder(arr);  // operator delete[](void*)

    WithDtor* dtors = keep(new WithDtor[fx_size(kDtorCount)], alignof(WithDtor));
    delete[] launder(dtors);  // operator delete[](void*, std::size_t)

    NothrowObj* nt = keep(new (std::nothrow) NothrowObj);
    ::operator delete(launder(nt), std::nothrow);

    char* ntarr = keep(new (std::nothrow) char[fx_size(FX_CXX_NOTHROW_ARR)]);
    ::operator delete[](launder(ntarr), std::nothrow);

    Aligned* a = keep(new Aligned, alignof(Aligned));
    delete launder(a);  // operator delete(void*, std::size_t, std::align_val_t)

    Aligned* aarr = keep(new Aligned[fx_size(3)], alignof(Aligned));
    delete[] launder(aarr);  // operator delete[](void*, std::align_val_t)

    // The operator functions called directly.
    void* p = keep(::operator new(fx_size(FX_CXX_OPNEW_AL), al(FX_CXX_OPNEW_AL_ALIGN)), FX_CXX_OPNEW_AL_ALIGN);
    ::operator delete(launder(p), al(FX_CXX_OPNEW_AL_ALIGN));

    p = keep(::operator new[](fx_size(FX_CXX_OPNEW_ARR_AL), al(FX_CXX_OPNEW_ARR_AL_ALIGN)), FX_CXX_OPNEW_ARR_AL_ALIGN);
    ::operator delete[](launder(p), fx_size(FX_CXX_OPNEW_ARR_AL), al(FX_CXX_OPNEW_ARR_AL_ALIGN));

    p = keep(::operator new(fx_size(FX_CXX_OPNEW_AL_NT), al(FX_CXX_OPNEW_AL_NT_ALIGN), std::nothrow),
             FX_CXX_OPNEW_AL_NT_ALIGN);
    ::operator delete(launder(p), al(FX_CXX_OPNEW_AL_NT_ALIGN), std::nothrow);

    p = keep(::operator new[](fx_size(FX_CXX_OPNEW_ARR_AL_NT), al(FX_CXX_OPNEW_ARR_AL_NT_ALIGN), std::nothrow),
             FX_CXX_OPNEW_ARR_AL_NT_ALIGN);
    ::operator delete[](launder(p), al(FX_CXX_OPNEW_ARR_AL_NT_ALIGN), std::nothrow);

    p = keep(::operator new(fx_size(FX_CXX_OPNEW)));
    ::operator delete(launder(p));

    p = keep(::operator new[](fx_size(FX_CXX_OPNEW_ARR)));
    ::operator delete[](launder(p), fx_size(FX_CXX_OPNEW_ARR));

    p = keep(::operator new(fx_size(FX_CXX_OPNEW_SIZED)));
    ::operator delete(launder(p), fx_size(FX_CXX_OPNEW_SIZED));
}

}  // namespace

int main(int argc, char** argv) {
    unsigned n = fx_count(argc, argv, 10);
    for (unsigned i = 0; i < n; i++) one_round();
    return 0;
}
