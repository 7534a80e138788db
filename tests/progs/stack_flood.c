/*
 * stack_flood [DEPTH [PASSES]]: 2^DEPTH (default STK_FLOOD_DEPTH) distinct call stacks in a
 * burst, one allocation of STK_FLOOD_SIZE each, PASSES times over (default 1): the path from main
 * to leaf() goes through left() or right() at each of DEPTH levels, chosen by the bits of the
 * stack's number. Far more new stacks, far faster, than a slowed symbolizer keeps up with; with
 * DEPTH 17, more than an LRU hash of 64k stacks held (tests/root/test_stacks.cpp).
 */
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

int main(int argc, char **argv)
{
	unsigned depth = fx_count(argc, argv, STK_FLOOD_DEPTH);
	unsigned passes = fx_count(argc - 1, argv + 1, 1); /* argv[2], as stack_dlopen reads its count */
	FX_REQUIRE(depth <= 20);
	for (unsigned pass = 0; pass < passes; pass++)
		for (unsigned bits = 0; bits < (1u << depth); bits++)
			step(depth, bits);
	return 0;
}
