/*
 * The signal-frame capture's program (tests/replay/README.md): main -> raise(SIGUSR1) -> the
 * handler -> alloc_in_handler -> malloc, so the walk meets libc's sigreturn trampoline.
 *   cc -O2 -g -fomit-frame-pointer -o /tmp/signal_alloc tests/replay/signal_alloc.c
 */
#include <signal.h>
#include <stdlib.h>

static void *volatile kept;

__attribute__((noinline)) static void alloc_in_handler(int sig)
{
	kept = malloc(4096 + (size_t)sig);
}

static void on_signal(int sig)
{
	alloc_in_handler(sig);
	__asm__ volatile("" ::: "memory"); /* not a tail call: the handler keeps its frame */
}

int main(void)
{
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);
	free(kept);
	return 0;
}
