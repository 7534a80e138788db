/*
 * stack_cfi_cxx, C++ at -O2 -fomit-frame-pointer: a std::vector grown by push_back until it holds
 * STK_CFI_CXX_ELEMS ints (operator new from libstdc++'s growth code, inlined or not), in
 * cfi_grow, called from main with rbp clobbered.
 */
#include <cstdlib>
#include <vector>

#include "fixture.h"
#include "stack_sizes.h"

__attribute__((noipa)) static size_t cfi_grow(unsigned n)
{
	std::vector<unsigned> v;
	for (unsigned i = 0; i < n; i++)
		v.push_back(i); /* STACK_MARK(cfi-grow-push-back) */
	fx_escape(v.data());
	return v.size();
}

int main()
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	size_t n = cfi_grow(STK_CFI_CXX_ELEMS); /* STACK_MARK(cfi-main-calls-grow) */
	FX_REQUIRE(n == STK_CFI_CXX_ELEMS);
	return 0;
}
