/*
 * stack_chain [N]: main -> alpha -> beta -> gamma -> malloc, N times (default
 * STK_CHAIN_DEFAULT_N), the i-th with size STK_CHAIN_FIRST + i * STK_CHAIN_STEP. Every block is
 * freed again.
 *
 * Each call the stack test checks carries a marker comment, STACK_MARK(name), on its own line:
 * the test finds the line by the marker, so editing this file cannot silently shift it.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_sizes.h"

__attribute__((noinline)) static void *gamma(size_t size)
{
	void *p = malloc(fx_size(size)); /* STACK_MARK(gamma-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noinline)) static void *beta(size_t size)
{
	void *p = gamma(size); /* STACK_MARK(beta-calls-gamma) */
	fx_escape(p);
	return p;
}

__attribute__((noinline)) static void *alpha(size_t size)
{
	void *p = beta(size); /* STACK_MARK(alpha-calls-beta) */
	fx_escape(p);
	return p;
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, STK_CHAIN_DEFAULT_N);
	for (unsigned i = 0; i < n; i++) {
		void *p = alpha(STK_CHAIN_FIRST + i * STK_CHAIN_STEP); /* STACK_MARK(main-calls-alpha) */
		free(fx_launder(p));
	}
	return 0;
}
