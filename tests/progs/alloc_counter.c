/*
 * liballoc_counter.so: an LD_PRELOAD counter of the C library's allocation calls, per thread,
 * to compare memtrack's counts with on a real program (how fd-find's lost frees were found, #29).
 *
 *   COUNT_OUT=counts.txt [COUNT_LOG=frees.txt] LD_PRELOAD=build/tests/progs/liballoc_counter.so PROG
 *
 * At exit, one line per thread to COUNT_OUT (appended; stderr without it):
 *   pid P tid T malloc N calloc N realloc N free N free_null N posix_memalign N
 * With COUNT_LOG, every free of a non-null pointer is also written there as "TID ADDRESS", in the
 * order the thread made them, to find which free memtrack lacks. memtrack records realloc(NULL, n)
 * as a Malloc and realloc(p, 0) as a Free (docs/FORMATS.md); counts here are of the calls made.
 * Only the first 64 threads are counted: a program with more is not what this is for.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's own entry points: calling them needs no dlsym (which allocates) to find the next. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

enum { K_MALLOC, K_CALLOC, K_REALLOC, K_FREE, K_FREE_NULL, K_MEMALIGN, KINDS };
static const char *const kind_names[KINDS] = {"malloc", "calloc", "realloc", "free", "free_null", "posix_memalign"};

#define SLOTS 64
static _Atomic int slot_tid[SLOTS];
static _Atomic unsigned long slot_count[SLOTS][KINDS];
static int log_fd = -1;

static void count(int kind)
{
	int tid = (int)syscall(SYS_gettid);
	for (int i = 0; i < SLOTS; i++) {
		int t = atomic_load(&slot_tid[i]);
		if (t == 0) {
			int empty = 0;
			t = atomic_compare_exchange_strong(&slot_tid[i], &empty, tid) ? tid : atomic_load(&slot_tid[i]);
		}
		if (t == tid) {
			atomic_fetch_add(&slot_count[i][kind], 1);
			return;
		}
	}
}

void *malloc(size_t n)
{
	count(K_MALLOC);
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	count(K_CALLOC);
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	count(K_REALLOC);
	return __libc_realloc(p, n);
}

void free(void *p)
{
	count(p ? K_FREE : K_FREE_NULL);
	if (p && log_fd >= 0) {
		char line[64];
		int n = snprintf(line, sizeof line, "%ld %lu\n", syscall(SYS_gettid), (unsigned long)p);
		(void)!write(log_fd, line, (size_t)n);
	}
	__libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	static int (*next)(void **, size_t, size_t);
	if (!next)
		next = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
	count(K_MEMALIGN);
	return next(out, align, n);
}

__attribute__((constructor)) static void open_log(void)
{
	const char *path = getenv("COUNT_LOG");
	if (path)
		log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

__attribute__((destructor)) static void write_counts(void)
{
	const char *path = getenv("COUNT_OUT");
	int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
	if (fd < 0)
		return;
	for (int i = 0; i < SLOTS && atomic_load(&slot_tid[i]); i++) {
		char line[256];
		int n = snprintf(line, sizeof line, "pid %d tid %d", getpid(), atomic_load(&slot_tid[i]));
		for (int k = 0; k < KINDS; k++)
			n += snprintf(line + n, sizeof line - (size_t)n, " %s %lu", kind_names[k], atomic_load(&slot_count[i][k]));
		line[n++] = '\n';
		(void)!write(fd, line, (size_t)n);
	}
	if (path)
		close(fd);
}
