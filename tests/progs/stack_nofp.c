/*
 * stack_nofp MAPS_OUT: built at -O2 -fomit-frame-pointer, so rbp is just another register and
 * the frame-pointer walk memtrack's BPF side does (bpf_get_stack) follows whatever it holds. Only
 * frame 0, the return address taken from the registers, is sure; past it each "frame" is
 * whatever two words rbp happens to point at.
 *
 *   STK_NOFP_CHAIN    main -> nofp_outer -> nofp_leaf -> malloc, rbp as the compiler left it
 *                     (nofp_outer keeps two values live across its call, so rbp holds data)
 *   STK_NOFP_LOWADDR  nofp_call_malloc_with_rbp with rbp -> {0, 0x10}: a "return address" that
 *                     no mapping covers
 *   STK_NOFP_DATA     ... with rbp -> {0, &nofp_data}: an address inside the binary, in its data
 *   STK_NOFP_BADRBP   ... with rbp = 8: the walk cannot read anything past frame 0
 *
 * Each once, each block freed. Then /proc/self/maps is copied to MAPS_OUT, so the test can tell
 * which addresses really were mapped, and how.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "stack_sizes.h"

/* Written so it lands in .data, not .rodata: an address in the binary that holds no code. */
volatile uintptr_t nofp_data[4] = {1, 2, 3, 4};

void *nofp_call_malloc_with_rbp(size_t size, void *rbp);

/*
 * malloc(size) with rbp = `rbp` for the duration of the call; frame 0 of its stack is the
 * return address inside this function. In assembly because C cannot pin rbp around a call.
 * On entry rsp is 8 mod 16; the push makes the call 16-byte aligned, as the ABI wants.
 */
__asm__(".text\n"
	".globl nofp_call_malloc_with_rbp\n"
	".type nofp_call_malloc_with_rbp, @function\n"
	"nofp_call_malloc_with_rbp:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsi, %rbp\n"
	"	call malloc@PLT\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size nofp_call_malloc_with_rbp, .-nofp_call_malloc_with_rbp\n");

__attribute__((noipa)) static char *nofp_leaf(size_t size)
{
	char *p = malloc(fx_size(size)); /* STACK_MARK(nofp-leaf-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noipa)) static char *nofp_outer(size_t size, unsigned tag)
{
	char *p = nofp_leaf(size);
	/* tag and size are live across the call: callee-saved registers, rbx and rbp. */
	p[0] = (char)tag;
	p[1] = (char)(size >> 8);
	p[2] = (char)(size >> 16);
	fx_escape(p);
	return p;
}

static void with_rbp(size_t size, void *rbp)
{
	void *p = nofp_call_malloc_with_rbp(fx_size(size), rbp);
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	free(fx_launder(p));
}

static void copy_maps(const char *to)
{
	int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	FX_REQUIRE(in >= 0);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FX_REQUIRE(out >= 0);
	char buf[4096];
	ssize_t n;
	while ((n = read(in, buf, sizeof buf)) > 0)
		FX_REQUIRE(write(out, buf, (size_t)n) == n);
	FX_REQUIRE(n == 0);
	close(in);
	FX_REQUIRE(close(out) == 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s MAPS_OUT\n", argv[0]);
		return FX_FIXTURE_BROKEN;
	}
	free(fx_launder(nofp_outer(fx_size(STK_NOFP_CHAIN), (unsigned)argc)));

	uintptr_t low[2] = {0, 0x10};
	with_rbp(STK_NOFP_LOWADDR, low);
	uintptr_t data[2] = {0, (uintptr_t)&nofp_data[2]};
	with_rbp(STK_NOFP_DATA, data);
	with_rbp(STK_NOFP_BADRBP, (void *)8);

	copy_maps(argv[1]);
	return 0;
}
