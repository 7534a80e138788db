/*
 * wide_tree [K]: K children (default 8) alive at once: each waits until all K exist (a pipe the
 * parent closes), then child i mallocs and frees FX_WIDE_BASE + i exactly i + 1 times, says so
 * (a byte on the done pipe) and exits only once all K have (a second pipe the parent closes).
 * The parent waits for each. More live processes than memtrack gives links of their own, so
 * some children are served by the shared probes; since none exits before every child has run
 * (a child runs once memtrack decided its probes), the split is exact: the command and the
 * first children up to ProcessLinks::kMaxOwnLinked get links of their own, the rest the shared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

int main(int argc, char **argv)
{
	unsigned k = fx_count(argc, argv, 8);
	int go[2], done[2], leave[2];
	FX_REQUIRE(pipe(go) == 0 && pipe(done) == 0 && pipe(leave) == 0);
	pid_t pids[64];
	FX_REQUIRE(k <= 64);
	for (unsigned i = 0; i < k; i++) {
		pids[i] = fork();
		FX_REQUIRE(pids[i] >= 0);
		if (pids[i] == 0) {
			close(go[1]);
			close(done[0]);
			close(leave[1]);
			char c = 0;
			while (read(go[0], &c, 1) < 0 && errno == EINTR) {}
			for (unsigned j = 0; j <= i; j++) {
				void *p = malloc(fx_size(FX_WIDE_BASE + i));
				FX_REQUIRE(p != NULL);
				fx_escape(p);
				free(fx_launder(p));
			}
			ssize_t w;
			do
				w = write(done[1], &c, 1);
			while (w < 0 && errno == EINTR);
			FX_REQUIRE(w == 1);
			while (read(leave[0], &c, 1) < 0 && errno == EINTR) {}
			_exit(0);
		}
	}
	close(go[1]); /* every child is alive: let them go */
	close(done[1]);
	for (unsigned i = 0; i < k; i++) { /* every child has allocated: let them exit */
		char c;
		ssize_t r;
		do
			r = read(done[0], &c, 1);
		while (r < 0 && errno == EINTR);
		FX_REQUIRE(r == 1);
	}
	close(leave[1]);
	for (unsigned i = 0; i < k; i++) {
		int status = 0;
		pid_t got;
		do
			got = waitpid(pids[i], &status, 0);
		while (got < 0 && errno == EINTR);
		FX_REQUIRE(got == pids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	return 0;
}
