/*
 * stack_stripped [N]: main -> strip_outer -> strip_inner -> malloc(STK_STRIP_SIZE), N times
 * (default 3), every block freed. tests/progs/meson.build installs it with `strip --strip-all`
 * applied: no symbol table, no DWARF, so memtrack has only the module to report for its frames.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_sizes.h"

__attribute__((noinline)) static void *strip_inner(size_t size)
{
	void *p = malloc(fx_size(size));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noinline)) static void *strip_outer(size_t size)
{
	void *p = strip_inner(size);
	fx_escape(p);
	return p;
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 3);
	for (unsigned i = 0; i < n; i++)
		free(fx_launder(strip_outer(STK_STRIP_SIZE)));
	return 0;
}
