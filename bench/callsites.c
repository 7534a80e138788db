// Allocations from many distinct call stacks, for scripts/bench.sh's stack-deduplication
// measurements: N malloc+free pairs, allocation i made from call stack i % K.
//
//   callsites [N] [K]   (defaults 200000, 1; K at most 64 * 64 = 4096)
//
// Stack k is leaf function k % 64 (64 distinct noinline functions calling malloc) reached
// through a recursion of depth k / 64, so every k in 0..K-1 has a call stack of its own.
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

#define LEAF(n) \
	static NOINLINE void *leaf##n(size_t size) \
	{ \
		void *p = malloc(size + n); \
		__asm__ volatile("" ::: "memory"); \
		return p; \
	}
#define LEAF8(a) LEAF(a##0) LEAF(a##1) LEAF(a##2) LEAF(a##3) LEAF(a##4) LEAF(a##5) LEAF(a##6) LEAF(a##7)
LEAF8(1) LEAF8(2) LEAF8(3) LEAF8(4) LEAF8(5) LEAF8(6) LEAF8(7) LEAF8(8)

typedef void *(*leaf_fn)(size_t);
#define REF8(a) leaf##a##0, leaf##a##1, leaf##a##2, leaf##a##3, leaf##a##4, leaf##a##5, leaf##a##6, leaf##a##7
static leaf_fn const leaves[64] = {REF8(1), REF8(2), REF8(3), REF8(4), REF8(5), REF8(6), REF8(7), REF8(8)};

/* Not a tail call (built with -fno-optimize-sibling-calls): each level is a frame. */
static NOINLINE void *descend(unsigned depth, leaf_fn leaf)
{
	void *p = depth ? descend(depth - 1, leaf) : leaf(32);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(int argc, char **argv)
{
	const long n = argc > 1 ? atol(argv[1]) : 200000;
	const long k = argc > 2 ? atol(argv[2]) : 1;
	if (n < 0 || k < 1 || k > 64 * 64) {
		fprintf(stderr, "usage: callsites [N] [K <= 4096]\n");
		return 2;
	}
	for (long i = 0; i < n; ++i) {
		const unsigned site = (unsigned)(i % k);
		sink = descend(site / 64, leaves[site % 64]);
		free(sink);
	}
	return 0;
}
