/*
 * big_alloc [N]: N rounds (default 3) of malloc(FX_BIG_SIZE) + free, between two markers.
 *
 *   malloc(FX_BIG_START_MARK), free          the window opens after this Free
 *   N x { malloc(1 MiB), free }              exactly Malloc + Free each, nothing else
 *   malloc(FX_BIG_END_MARK), free            the window closes at this Malloc
 *
 * The first 1 MiB malloc is above glibc's mmap threshold, so malloc mmaps and free munmaps;
 * freeing it raises the threshold, so the later ones grow the heap with brk instead. Neither the
 * mmap/munmap nor the brk made inside malloc/free may be recorded: between the markers the
 * process records exactly N Malloc and N Free.
 */
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

static void alloc_free(size_t size)
{
	void *p = malloc(fx_size(size));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	((volatile char *)p)[size - 1] = 1;
	free(fx_launder(p));
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 3);
	alloc_free(FX_BIG_START_MARK);
	for (unsigned i = 0; i < n; i++)
		alloc_free(FX_BIG_SIZE);
	alloc_free(FX_BIG_END_MARK);
	return 0;
}
