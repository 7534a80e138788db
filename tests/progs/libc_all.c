/*
 * libc_all [N]: every glibc allocation entry point, N times each (default 10).
 *
 * First, while the heap has no free chunk yet, N pairs of a block p (FX_LIBC_GROW_FROM) and a
 * blocker allocated right after it (FX_LIBC_BLOCKER): [Malloc, Malloc] x N. As the chunk after p
 * stays in use, realloc cannot grow p in place and must move it.
 *
 * Then per iteration, with the sizes of fixture_sizes.h (expected records in brackets):
 *   malloc                        [Malloc]                       free   [Free]
 *   calloc(13, 541)               [Calloc 7033]                  free   [Free]
 *   realloc p to grow; it moves   [Realloc old_addr=p]           free it and p's blocker [Free x2]
 *   realloc(NULL, n)              [Malloc]                       free   [Free]
 *   malloc, realloc(p, 0)         [Malloc, Free p]
 *   malloc, realloc(p, huge)      [Malloc; nothing: it fails]    free p [Free]
 *   reallocarray(NULL, 17, 433)   [Malloc 7361]                  free   [Free]
 *   malloc, reallocarray(p,19,383)[Malloc, Realloc 7277 old_addr=p] free [Free]
 *   aligned_alloc, memalign, posix_memalign [AlignedAlloc each]  free   [Free each]
 *   valloc, pvalloc               [Malloc each, requested size]  free   [Free each]
 *   malloc(huge), calloc overflow [nothing: both fail]
 *   free(NULL)                    [nothing]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

#define MAX_ROUNDS 100000 /* fx_count's limit */
static void *grow_from[MAX_ROUNDS];
static void *blockers[MAX_ROUNDS];

/* Allocates and escapes, checking the result is usable. */
static void *keep(void *p, size_t align)
{
	FX_REQUIRE(p != NULL);
	FX_REQUIRE(((uintptr_t)p % align) == 0);
	fx_escape(p);
	return fx_launder(p);
}

static void release(void *p)
{
	free(fx_launder(p));
}

static void one_round(unsigned round)
{
	void *p;
	void *q;

	p = keep(malloc(fx_size(FX_LIBC_MALLOC)), 16);
	release(p);

	p = keep(calloc(fx_size(FX_LIBC_CALLOC_N), fx_size(FX_LIBC_CALLOC_S)), 16);
	FX_REQUIRE(((unsigned char *)p)[FX_LIBC_CALLOC - 1] == 0);
	release(p);

	/* The blocker sits right after p, so p cannot grow in place: the new block is elsewhere. */
	p = grow_from[round];
	q = keep(realloc(fx_launder(p), fx_size(FX_LIBC_GROW_TO)), 16);
	FX_REQUIRE(q != p);
	release(q);
	release(blockers[round]);

	p = keep(realloc(fx_launder(NULL), fx_size(FX_LIBC_REALLOC_NULL)), 16);
	release(p);

	/* glibc frees on realloc(p, 0) and returns NULL. */
	p = keep(malloc(fx_size(FX_LIBC_REALLOC_ZERO)), 16);
	q = realloc(fx_launder(p), fx_size(0));
	fx_escape(q);
	FX_REQUIRE(q == NULL);

	/* A realloc that cannot succeed leaves p allocated and untouched. */
	p = keep(malloc(fx_size(FX_LIBC_REALLOC_FAIL)), 16);
	((volatile unsigned char *)p)[0] = 0x5a;
	q = realloc(fx_launder(p), fx_size(SIZE_MAX / 2));
	fx_escape(q);
	FX_REQUIRE(q == NULL);
	FX_REQUIRE(((volatile unsigned char *)p)[0] == 0x5a);
	release(p);

	p = keep(reallocarray(fx_launder(NULL), fx_size(FX_LIBC_RA_NULL_N), fx_size(FX_LIBC_RA_NULL_S)), 16);
	release(p);

	p = keep(malloc(fx_size(FX_LIBC_RA_FROM)), 16);
	q = keep(reallocarray(fx_launder(p), fx_size(FX_LIBC_RA_N), fx_size(FX_LIBC_RA_S)), 16);
	release(q);

	p = keep(aligned_alloc(fx_size(64), fx_size(FX_LIBC_ALIGNED_ALLOC)), 64);
	release(p);

	p = keep(memalign(fx_size(128), fx_size(FX_LIBC_MEMALIGN)), 128);
	release(p);

	p = NULL;
	FX_REQUIRE(posix_memalign(&p, fx_size(256), fx_size(FX_LIBC_POSIX_MEMALIGN)) == 0);
	p = keep(p, 256);
	release(p);

	p = keep(valloc(fx_size(FX_LIBC_VALLOC)), 4096);
	release(p);

	p = keep(pvalloc(fx_size(FX_LIBC_PVALLOC)), 4096);
	release(p);

	/* Failed allocations record nothing. */
	q = malloc(fx_size(SIZE_MAX / 2));
	fx_escape(q);
	FX_REQUIRE(q == NULL);
	q = calloc(fx_size(SIZE_MAX / 2), fx_size(3));
	fx_escape(q);
	FX_REQUIRE(q == NULL);

	/* free(NULL) records nothing. */
	free(fx_launder(NULL));
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 10);
	for (unsigned i = 0; i < n; i++) {
		grow_from[i] = keep(malloc(fx_size(FX_LIBC_GROW_FROM)), 16);
		blockers[i] = keep(malloc(fx_size(FX_LIBC_BLOCKER)), 16);
	}
	for (unsigned i = 0; i < n; i++)
		one_round(i);
	return 0;
}
