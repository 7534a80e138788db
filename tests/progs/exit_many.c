/*
 * exit_many [K]: K children (default 200) started at once, each exec'ing this program again as
 * `exit_many child I`, which exits with status I (K <= 256). They all wait on one pipe the parent
 * closes once all K exist, so their execs and exits come together. The parent waits for each
 * and exits 0 when every child exited with its own code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "child") == 0)
		return atoi(argv[2]);
	unsigned k = fx_count(argc, argv, 200);
	FX_REQUIRE(k <= 256);
	int go[2];
	FX_REQUIRE(pipe(go) == 0);
	static pid_t pids[256];
	for (unsigned i = 0; i < k; i++) {
		pids[i] = fork();
		FX_REQUIRE(pids[i] >= 0);
		if (pids[i] == 0) {
			char c, code[16];
			close(go[1]);
			while (read(go[0], &c, 1) < 0 && errno == EINTR)
				;
			snprintf(code, sizeof code, "%u", i);
			execl("/proc/self/exe", "exit_many", "child", code, (char *)NULL);
			_exit(FX_FIXTURE_BROKEN);
		}
	}
	close(go[1]);
	for (unsigned i = 0; i < k; i++) {
		int st = fx_wait(pids[i]);
		FX_REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == (int)(i & 255));
	}
	return 0;
}
