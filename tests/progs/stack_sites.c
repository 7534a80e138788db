/*
 * stack_sites [N]: STK_SITES_COUNT call sites, site_i -> malloc(STK_SITES_FIRST + i *
 * STK_SITES_STEP) then free, each called N times (default STK_SITES_CALLS) from one loop in main:
 * 10 x 10,000 = 100,000 allocations through exactly 10 distinct call stacks, so the stacks ring
 * must carry about 10 stacks, not 100,000.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_sizes.h"

#define SITE(i)                                                                  \
	__attribute__((noinline)) static void site_##i(void)                     \
	{                                                                        \
		void *p = malloc(fx_size(STK_SITES_FIRST + (i) * STK_SITES_STEP)); \
		FX_REQUIRE(p != NULL);                                           \
		fx_escape(p);                                                    \
		free(fx_launder(p));                                             \
	}

SITE(0)
SITE(1)
SITE(2)
SITE(3)
SITE(4)
SITE(5)
SITE(6)
SITE(7)
SITE(8)
SITE(9)

_Static_assert(STK_SITES_COUNT == 10, "one SITE() per call site");

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, STK_SITES_CALLS);
	for (unsigned j = 0; j < n; j++) {
		site_0();
		site_1();
		site_2();
		site_3();
		site_4();
		site_5();
		site_6();
		site_7();
		site_8();
		site_9();
	}
	return 0;
}
