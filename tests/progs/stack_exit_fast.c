/*
 * stack_exit_fast: forks STK_EXIT_CHILDREN children at once; child i calls
 * exit_child -> exit_child_alloc -> malloc(STK_EXIT_FIRST + i) a single time and leaves with
 * _exit(0) right after, without freeing. Each of those processes lives for a few microseconds
 * after its only allocation: its stack must be symbolized all the same. The parent allocates
 * nothing itself and waits for every child, failing (FX_FIXTURE_BROKEN) unless all exited 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "stack_sizes.h"

__attribute__((noinline)) static void *exit_child_alloc(size_t size)
{
	void *p = malloc(fx_size(size)); /* STACK_MARK(exit-child-malloc) */
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noinline, noreturn)) static void exit_child(unsigned index)
{
	void *p = exit_child_alloc(STK_EXIT_FIRST + index); /* STACK_MARK(exit-child-calls-alloc) */
	fx_escape(p);
	_exit(0);
}

int main(void)
{
	pid_t pids[STK_EXIT_CHILDREN];
	for (unsigned i = 0; i < STK_EXIT_CHILDREN; i++) {
		pids[i] = fork();
		FX_REQUIRE(pids[i] >= 0);
		if (pids[i] == 0)
			exit_child(i); /* STACK_MARK(main-calls-exit-child) */
	}
	for (unsigned i = 0; i < STK_EXIT_CHILDREN; i++) {
		int status = 0;
		pid_t got;
		do
			got = waitpid(pids[i], &status, 0);
		while (got < 0 && errno == EINTR);
		FX_REQUIRE(got == pids[i]);
		FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	return 0;
}
