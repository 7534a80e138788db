/*
 * stack_flood [DEPTH [PASSES [THREADS]]]: 2^DEPTH (default STK_FLOOD_DEPTH) distinct call stacks
 * in a burst, one allocation of STK_FLOOD_SIZE each, PASSES times over (default 1): the path to
 * leaf() goes through left() or right() at each of DEPTH levels, chosen by the bits of the
 * stack's number. Far more new stacks, far faster, than a slowed symbolizer keeps up with; with
 * DEPTH 17, more than an LRU hash of 64k stacks held (tests/root/test_stacks.cpp).
 * With THREADS (at most STK_FLOOD_MAX_THREADS), that many threads make the same stacks in step,
 * all waiting for each other before each stack: every new stack is met by each at once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fixture.h"
#include "stack_sizes.h"

__attribute__((noinline)) static void step(unsigned depth, unsigned bits);

__attribute__((noinline)) static void leaf(void)
{
	void *p = malloc(fx_size(STK_FLOOD_SIZE));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	free(fx_launder(p));
}

__attribute__((noinline)) static void left(unsigned depth, unsigned bits)
{
	step(depth - 1, bits);
	fx_escape(NULL); /* not a tail call: the return address stays in the stack */
}

__attribute__((noinline)) static void right(unsigned depth, unsigned bits)
{
	step(depth - 1, bits);
	fx_escape(NULL);
}

__attribute__((noinline)) static void step(unsigned depth, unsigned bits)
{
	if (depth == 0)
		leaf();
	else if ((bits >> (depth - 1)) & 1)
		left(depth, bits);
	else
		right(depth, bits);
	fx_escape(NULL);
}

static unsigned depth, passes, threads;
static atomic_uint arrived; /* threads that have come to the current stack, summed over stacks */

static void *flood(void *arg)
{
	(void)arg;
	unsigned met = 0;
	for (unsigned pass = 0; pass < passes; pass++)
		for (unsigned bits = 0; bits < (1u << depth); bits++) {
			met += threads;
			atomic_fetch_add(&arrived, 1);
			while (atomic_load(&arrived) < met)
				;
			step(depth, bits);
		}
	return NULL;
}

int main(int argc, char **argv)
{
	depth = fx_count(argc, argv, STK_FLOOD_DEPTH);
	passes = fx_count(argc - 1, argv + 1, 1); /* argv[2], as stack_dlopen reads its count */
	threads = fx_count(argc - 2, argv + 2, 0);
	FX_REQUIRE(depth <= 20 && threads <= STK_FLOOD_MAX_THREADS);
	if (!threads) { /* main alone: it waits for nobody */
		threads = 1;
		flood(NULL);
		return 0;
	}
	pthread_t id[STK_FLOOD_MAX_THREADS];
	for (unsigned i = 0; i < threads; i++)
		FX_REQUIRE(pthread_create(&id[i], NULL, flood, NULL) == 0);
	for (unsigned i = 0; i < threads; i++)
		FX_REQUIRE(pthread_join(id[i], NULL) == 0);
	return 0;
}
