/*
 * stack_cfi: built -O2 -fomit-frame-pointer, and rbp is loaded with a value that is no frame
 * address before each chain goes deeper, so a frame-pointer walk cannot get past the first
 * frame: only the CFI (.eh_frame) finds the callers. Each malloc once, each block freed.
 *
 *   STK_CFI_CHAIN  main -> cfi_a -> cfi_b -> cfi_c -> malloc
 *   STK_CFI_QSORT  main -> qsort (glibc, no frame pointers) -> cfi_compare -> malloc, once
 *   STK_CFI_SHLIB  main -> cfi_lib_outer -> cfi_lib_inner -> malloc, in libstackcfi.so
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
	return 0;
}
