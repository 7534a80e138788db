/*
 * libstacklib.so: see stack_lib.h. Self-contained (it does not link fixture.c, whose fx_sink
 * lives in the executable), so it keeps its own sink for the pointers it allocates.
 */
#include "stack_lib.h"

#include "fixture.h"

void *volatile stacklib_sink;

__attribute__((noinline)) static void *stacklib_leaf(size_t size)
{
	void *p = malloc(fx_size(size)); /* STACK_MARK(stacklib-leaf-malloc) */
	FX_REQUIRE(p != NULL);
	stacklib_sink = p;
	return fx_launder(p);
}

void *stacklib_alloc(size_t size)
{
	void *p = stacklib_leaf(size); /* STACK_MARK(stacklib-alloc-calls-leaf) */
	stacklib_sink = p;
	return fx_launder(p);
}
