/*
 * stack_cfi: built -O2 -fomit-frame-pointer, and rbp is loaded with a value that is no frame
 * address before each chain goes deeper, so a frame-pointer walk cannot get past the first
 * frame: only the CFI (.eh_frame) finds the callers. Each malloc once, each block freed.
 *
 *   STK_CFI_CHAIN  main -> cfi_a -> cfi_b -> cfi_c -> malloc
 *   STK_CFI_QSORT  main -> qsort (glibc, no frame pointers) -> cfi_compare -> malloc, once
 *   STK_CFI_SHLIB  main -> cfi_lib_outer -> cfi_lib_inner -> malloc, in libstackcfi.so
 *   STK_CFI_REPEAT main -> cfi_repeat -> the chain, STK_CFI_REPEATS times in a row from one call
 *                  site: the same walk each time (a frame deeper than STK_CFI_CHAIN's, so that
 *                  no walk but these starts where these do)
 *   STK_CFI_TWIN_X/Y main -> cfi_twin_x or cfi_twin_y -> cfi_twin_leaf -> malloc, alternating,
 *                  STK_CFI_TWINS times each, from one call site through a pointer: the twins have
 *                  one frame size, so every walk starts at the same pc, sp and rbp, and the
 *                  stacks differ only in the return address into the twin.
 *   STK_CFI_FORK_P/Q main -> cfi_fork_x -> cfi_fork_c -> cfi_fork_m -> cfi_fork_leaf -> malloc,
 *                  or main -> cfi_fork_y -> cfi_fork_c -> cfi_fork_n -> cfi_fork_leaf -> malloc,
 *                  alternating, STK_CFI_FORKS times each, from one call site through a pointer
 *                  (and cfi_fork_c calls m or n through one too): x and y have one frame size,
 *                  as have m and n, so the two walks start at the same pc and sp and meet again
 *                  at cfi_fork_c's frame, whose callers differ (x or y), and at main's.
 */
#include <stdlib.h>

#include "fixture.h"
#include "stack_cfi_lib.h"
#include "stack_sizes.h"

__attribute__((noipa)) static char *cfi_c(size_t size)
{
	size_t n = fx_size(size);
	char *p = malloc(n); /* STACK_MARK(cfi-c-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noipa)) static char *cfi_b(size_t size)
{
	char *p = cfi_c(size); /* STACK_MARK(cfi-b-calls-c) */
	p[1] = (char)(size >> 8);
	fx_escape(p);
	return p;
}

__attribute__((noipa)) static char *cfi_a(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_b(size); /* STACK_MARK(cfi-a-calls-b) */
	p[2] = (char)(size >> 16);
	fx_escape(p);
	return p;
}

__attribute__((noipa)) static char *cfi_twin_leaf(size_t size)
{
	char *p = malloc(fx_size(size)); /* STACK_MARK(cfi-twin-leaf-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noipa)) static char *cfi_twin_x(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_twin_leaf(size); /* STACK_MARK(cfi-twin-x-calls-leaf) */
	p[1] = 'x';
	return p;
}

__attribute__((noipa)) static char *cfi_twin_y(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_twin_leaf(size); /* STACK_MARK(cfi-twin-y-calls-leaf) */
	p[1] = 'y';
	return p;
}

__attribute__((noipa)) static char *cfi_fork_leaf(size_t size)
{
	char *p = malloc(fx_size(size)); /* STACK_MARK(cfi-fork-leaf-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noipa)) static char *cfi_fork_m(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_fork_leaf(size); /* STACK_MARK(cfi-fork-m-calls-leaf) */
	p[1] = 'm';
	return p;
}

__attribute__((noipa)) static char *cfi_fork_n(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_fork_leaf(size); /* STACK_MARK(cfi-fork-n-calls-leaf) */
	p[1] = 'n';
	return p;
}

__attribute__((noipa)) static char *cfi_fork_c(char *(*inner)(size_t), size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = inner(size); /* STACK_MARK(cfi-fork-c-calls-inner) */
	p[2] = 'c';
	return p;
}

__attribute__((noipa)) static char *cfi_fork_x(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_fork_c(cfi_fork_m, size); /* STACK_MARK(cfi-fork-x-calls-c) */
	p[3] = 'x';
	return p;
}

__attribute__((noipa)) static char *cfi_fork_y(size_t size)
{
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	char *p = cfi_fork_c(cfi_fork_n, size); /* STACK_MARK(cfi-fork-y-calls-c) */
	p[3] = 'y';
	return p;
}

__attribute__((noipa)) static void cfi_repeat(void)
{
	for (unsigned i = 0; i < STK_CFI_REPEATS; i++)
		free(fx_launder(cfi_a(STK_CFI_REPEAT))); /* STACK_MARK(cfi-repeat-calls-a) */
}

static int compared;

__attribute__((noipa)) static int cfi_compare(const void *a, const void *b)
{
	if (!compared++) {
		size_t n = fx_size(STK_CFI_QSORT);
		char *p = malloc(n); /* STACK_MARK(cfi-compare-malloc) */
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		free(fx_launder(p));
	}
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	char *chain = cfi_a(STK_CFI_CHAIN); /* STACK_MARK(cfi-main-calls-a) */
	free(fx_launder(chain));

	int values[64];
	for (int i = 0; i < 64; i++)
		values[i] = (i * 37) % 64;
	__asm__ volatile("movq $0x40, %%rbp" ::: "rbp");
	qsort(values, 64, sizeof values[0], cfi_compare); /* STACK_MARK(cfi-main-calls-qsort) */
	FX_REQUIRE(compared > 0);

	void *lib = cfi_lib_outer(STK_CFI_SHLIB); /* STACK_MARK(cfi-main-calls-lib) */
	free(fx_launder(lib));

	cfi_repeat(); /* STACK_MARK(cfi-main-calls-repeat) */

	char *(*volatile twins[2])(size_t) = {cfi_twin_x, cfi_twin_y};
	for (unsigned i = 0; i < 2 * STK_CFI_TWINS; i++)
		free(fx_launder(twins[i & 1](i & 1 ? STK_CFI_TWIN_Y : STK_CFI_TWIN_X))); /* STACK_MARK(cfi-main-calls-twin) */

	char *(*volatile forks[2])(size_t) = {cfi_fork_x, cfi_fork_y};
	for (unsigned i = 0; i < 2 * STK_CFI_FORKS; i++)
		free(fx_launder(forks[i & 1](i & 1 ? STK_CFI_FORK_Q : STK_CFI_FORK_P))); /* STACK_MARK(cfi-main-calls-fork) */
	return 0;
}
