/*
 * heap_trim [N]: N rounds of two heap blocks of FX_TRIM_A and FX_TRIM_B bytes (below glibc's mmap
 * threshold, so they come from the brk heap) freed newest first: the second free leaves more than
 * glibc's trim threshold on top of the heap, and free() itself shrinks the heap with brk.
 * malloc() grows it again the next round, with brk too. The program calls brk itself never.
 */
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 10);
	for (unsigned i = 0; i < n; i++) {
		void *a = malloc(fx_size(FX_TRIM_A));
		void *b = malloc(fx_size(FX_TRIM_B));
		FX_REQUIRE(a != NULL && b != NULL);
		fx_escape(a);
		fx_escape(b);
		free(fx_launder(b));
		free(fx_launder(a));
	}
	return 0;
}
