/*
 * fork_tree [N]: a process tree, each member allocating its own size (default N = 5).
 *
 *   parent       FX_FORK_PARENT      N times, before forking
 *   child 0      FX_FORK_CHILD0    1*N times
 *   child 1      FX_FORK_CHILD1    2*N times
 *   child 2      FX_FORK_CHILD2    3*N times, then forks the grandchild and waits for it
 *   grandchild   FX_FORK_GRANDCHILD 4*N times
 *
 * Every allocation is a malloc followed by its free. Children leave with _exit(0); each parent
 * waits for its own children by pid and fails (FX_FIXTURE_BROKEN) unless they exited 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

static void wait_ok(pid_t pid)
{
	int status = fx_wait(pid);
	FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void grandchild(unsigned n)
{
	fx_alloc_free(FX_FORK_GRANDCHILD, 4 * n);
	_exit(0);
}

static void child(unsigned index, unsigned n)
{
	static const size_t sizes[3] = {FX_FORK_CHILD0, FX_FORK_CHILD1, FX_FORK_CHILD2};
	fx_alloc_free(sizes[index], (index + 1) * n);
	if (index == 2) {
		pid_t pid = fork();
		FX_REQUIRE(pid >= 0);
		if (pid == 0)
			grandchild(n);
		wait_ok(pid);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 5);
	fx_alloc_free(FX_FORK_PARENT, n);

	pid_t pids[3];
	for (unsigned i = 0; i < 3; i++) {
		pids[i] = fork();
		FX_REQUIRE(pids[i] >= 0);
		if (pids[i] == 0)
			child(i, n);
	}
	for (unsigned i = 0; i < 3; i++)
		wait_ok(pids[i]);
	return 0;
}
