/*
 * Shared helpers for the root suite's fixture programs.
 *
 * Every fixture makes a known set of allocations with distinctive sizes, prints nothing on
 * success and exits 0 (or the status its test expects). When a libc call does not behave as the
 * fixture assumes, it says so on stderr and exits with FX_FIXTURE_BROKEN, so a test can tell a
 * broken fixture from a memtrack bug.
 *
 * The compiler must not elide or merge any allocation: pointers escape through an opaque asm
 * into a volatile global, and come back laundered (the compiler cannot prove it is the pointer it
 * allocated), so malloc/free pairs are never removed. Fixtures are also built with -fno-builtin.
 */
#ifndef MEMTRACK_FIXTURE_H
#define MEMTRACK_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>

#define FX_FIXTURE_BROKEN 86

#ifdef __cplusplus
#define FX_INLINE inline
#else
#define FX_INLINE static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One slot per fixture; only the stores matter. */
extern void *volatile fx_sink;

/* Makes `p` escape: the compiler must assume anyone may read it from here on. */
__attribute__((noinline)) void fx_escape(void *p);

#ifdef __cplusplus
}
#endif

/* Returns `p`, hiding its provenance from the optimiser. */
FX_INLINE void *fx_launder(void *p)
{
	__asm__ volatile("" : "+r"(p) : : "memory");
	return p;
}

/* Returns `n`, hiding its value from the optimiser (no constant folding of sizes). */
FX_INLINE size_t fx_size(size_t n)
{
	__asm__ volatile("" : "+r"(n) : : "memory");
	return n;
}

/* argv[1] as a positive count, `dflt` when absent; exits FX_FIXTURE_BROKEN when malformed. */
FX_INLINE unsigned fx_count(int argc, char **argv, unsigned dflt)
{
	if (argc < 2)
		return dflt;
	char *end = NULL;
	unsigned long v = strtoul(argv[1], &end, 10);
	if (end == argv[1] || *end != '\0' || v == 0 || v > 100000) {
		fprintf(stderr, "%s: bad count '%s'\n", argv[0], argv[1]);
		exit(FX_FIXTURE_BROKEN);
	}
	return (unsigned)v;
}

/* Reports a broken assumption about libc and exits. */
#define FX_REQUIRE(cond)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: fixture assumption failed: %s\n", __FILE__, \
				__LINE__, #cond);                                          \
			exit(FX_FIXTURE_BROKEN);                                           \
		}                                                                          \
	} while (0)


/* mallocs and frees `size` `n` times, each block escaping (nothing elided). */
FX_INLINE void fx_alloc_free(size_t size, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		void *p = malloc(fx_size(size));
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		free(fx_launder(p));
	}
}

/* Waits for child `pid` (through EINTR) and returns its wait status. */
FX_INLINE int fx_wait(pid_t pid)
{
	int status = 0;
	pid_t got;
	do
		got = waitpid(pid, &status, 0);
	while (got < 0 && errno == EINTR);
	FX_REQUIRE(got == pid);
	return status;
}

#endif
