// C allocator churn for scripts/bench.sh: N allocation calls (malloc, calloc, realloc, malloc in
// turn) over 64 live blocks of 16..2063 bytes, each malloc/calloc replacing (freeing) the block
// in its slot, each realloc growing or shrinking it. So N allocation calls and about 3N/4 frees.
//
//   churn_c [N [DEPTH]]   (default 1000000 calls, made DEPTH (default 0) calls below main)
//
// DEPTH puts the loop under that many frames of a recursion, so a stack walk has real work: a
// program's allocations are rarely made from main itself.
#include <stdio.h>
#include <stdlib.h>

#define SLOTS 64

static void *volatile slots[SLOTS];

__attribute__((noinline)) static int churn(long n, int depth)
{
	if (depth > 0) {
		int r = churn(n, depth - 1);
		slots[0] = slots[0]; /* work after the call: no tail call, the frame stays */
		return r;
	}
	for (long i = 0; i < n; ++i) {
		const unsigned s = (unsigned)i % SLOTS;
		const size_t size = 16 + (size_t)(i * 37) % 2048;
		char *p;
		switch (i % 4) {
		case 0:
		case 3:
			free(slots[s]);
			p = malloc(size);
			break;
		case 1:
			free(slots[s]);
			p = calloc(1, size);
			break;
		default:
			p = realloc(slots[s], size);
			break;
		}
		if (!p)
			return 1;
		p[0] = (char)i; /* touch the block */
		slots[s] = p;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const long n = argc > 1 ? atol(argv[1]) : 1000000;
	const int depth = argc > 2 ? atoi(argv[2]) : 0;
	if (n < 0 || depth < 0 || depth > 1000) {
		fprintf(stderr, "usage: churn_c [N [DEPTH]]\n");
		return 2;
	}
	int r = churn(n, depth);
	for (unsigned s = 0; s < SLOTS; ++s)
		free(slots[s]);
	return r;
}
