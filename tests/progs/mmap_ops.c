/*
 * mmap_ops [N]: the memory-mapping system calls, N rounds (default 3). Per round:
 *
 *   a = mmap(NULL, FX_MMAP_LEN)                     Mmap(a, FX_MMAP_LEN)
 *   munmap(a, FX_MMAP_LEN)                          Munmap(a, FX_MMAP_LEN)
 *   b = mmap(NULL, FX_MREMAP_FROM)                  Mmap(b, FX_MREMAP_FROM)
 *   c = mremap(b, FROM, FX_MREMAP_GROW, MAYMOVE)    Munmap(b, FROM), Mmap(c, GROW)
 *   c = mremap(c, GROW, FX_MREMAP_SHRINK, 0)        Munmap(c, GROW), Mmap(c, SHRINK)
 *   munmap(c, FX_MREMAP_SHRINK)                     Munmap(c, SHRINK)
 *   sbrk(+FX_SBRK_INC)                              Brk(base + FX_SBRK_INC)
 *   sbrk(-FX_SBRK_INC)                              Brk(base)
 *
 * The fixture never calls malloc itself, so these are the only Brk records the process makes
 * outside the allocator.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

static void *map(size_t len)
{
	void *p = mmap(NULL, fx_size(len), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FX_REQUIRE(p != MAP_FAILED);
	((volatile char *)p)[0] = 1;
	return p;
}

static void one_round(void)
{
	void *a = map(FX_MMAP_LEN);
	FX_REQUIRE(munmap(a, fx_size(FX_MMAP_LEN)) == 0);

	void *b = map(FX_MREMAP_FROM);
	void *c = mremap(b, fx_size(FX_MREMAP_FROM), fx_size(FX_MREMAP_GROW), MREMAP_MAYMOVE);
	FX_REQUIRE(c != MAP_FAILED);
	FX_REQUIRE(((volatile char *)c)[0] == 1);
	void *d = mremap(c, fx_size(FX_MREMAP_GROW), fx_size(FX_MREMAP_SHRINK), 0);
	FX_REQUIRE(d == c);
	FX_REQUIRE(munmap(d, fx_size(FX_MREMAP_SHRINK)) == 0);

	char *base = sbrk(0);
	FX_REQUIRE(base != (char *)-1);
	FX_REQUIRE(sbrk((intptr_t)fx_size(FX_SBRK_INC)) == base);
	FX_REQUIRE(sbrk(-(intptr_t)fx_size(FX_SBRK_INC)) == base + FX_SBRK_INC);
	FX_REQUIRE(sbrk(0) == base);
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 3);
	for (unsigned i = 0; i < n; i++)
		one_round();
	return 0;
}
