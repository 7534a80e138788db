/*
 * The shared library of stack_cfi, -O2 -fomit-frame-pointer: cfi_lib_outer -> cfi_lib_inner ->
 * malloc, rbp clobbered in cfi_lib_outer so only the CFI finds the frames past the library.
 * Self-contained like libstacklib: fixture.h's inline helpers only.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_cfi_lib.h"

__attribute__((noipa)) static void *cfi_lib_inner(size_t size)
{
	size_t n = fx_size(size);
	void *p = malloc(n); /* STACK_MARK(cfi-lib-inner-malloc) */
	FX_REQUIRE(p != NULL);
	return fx_launder(p);
}

void *cfi_lib_outer(size_t size)
{
	/* rbp holds no frame: a frame-pointer walk from below cannot get past here. */
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_lib_inner(size); /* STACK_MARK(cfi-lib-outer-calls-inner) */
	p[0] = (char)size;
	return fx_launder(p);
}
