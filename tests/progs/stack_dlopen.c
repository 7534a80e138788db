/*
 * stack_dlopen LIB [N]: mallocs and frees STK_DLOPEN_FIRST_SIZE once (so memtrack reads this
 * process's mappings before the library exists), then dlopen()s LIB (libstacklib.so) and calls
 * its stacklib_alloc(STK_SHLIB_SIZE) N times (default 3): stacks whose inner frames lie in code
 * mapped after that first read. Every block is freed.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"
#include "stack_sizes.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stack_dlopen LIB [N]\n");
		return FX_FIXTURE_BROKEN;
	}
	unsigned n = fx_count(argc - 1, argv + 1, 3);
	void *first = malloc(STK_DLOPEN_FIRST_SIZE);
	FX_REQUIRE(first != NULL);
	fx_escape(first);
	free(fx_launder(first));

	void *lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "stack_dlopen: %s\n", dlerror());
		return FX_FIXTURE_BROKEN;
	}
	void *(*stacklib_alloc)(size_t) = (void *(*)(size_t))dlsym(lib, "stacklib_alloc");
	FX_REQUIRE(stacklib_alloc != NULL);
	for (unsigned i = 0; i < n; i++) {
		void *p = stacklib_alloc(STK_SHLIB_SIZE);
		fx_escape(p);
		free(fx_launder(p));
	}
	return 0;
}
