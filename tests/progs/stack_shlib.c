/*
 * stack_shlib [N]: main -> stacklib_alloc -> stacklib_leaf -> malloc(STK_SHLIB_SIZE), N times
 * (default 3), the two inner frames in libstacklib.so (stack_lib.c). Every block is freed.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_lib.h"
#include "stack_sizes.h"

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 3);
	for (unsigned i = 0; i < n; i++) {
		void *p = stacklib_alloc(STK_SHLIB_SIZE); /* STACK_MARK(main-calls-stacklib) */
		fx_escape(p);
		free(fx_launder(p));
	}
	return 0;
}
