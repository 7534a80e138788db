/*
 * timeline_tree EXIT3 [MIB]: the process tree tests/root/test_timeline.cpp reads from the
 * timeline. One child at a time, each waited for before the next is forked, so the timeline's
 * order is fixed:
 *
 *   child 0   _exit(FX_TIMELINE_CODE)
 *   child 1   killed by its own SIGKILL
 *   child 2   mallocs FX_TIMELINE_EXEC_DROP bytes, then execs EXIT3 with the arguments "exit3",
 *             "one two" (exit3 mallocs FX_EXIT3_SIZE and exits 3 without freeing it)
 *   child 3   maps MIB MiB (default FX_TIMELINE_TOUCH_MIB) of anonymous memory, writes a byte
 *             in every page, exits 0
 *
 * The parent exits 0 once each child ended as stated, FX_FIXTURE_BROKEN otherwise.
 *
 * timeline_tree touch-exec MIB PROGRAM [ARGS...]: no tree; maps MIB MiB of anonymous memory,
 * writes a byte in every page, then execs PROGRAM (the old image's memory goes at the exec).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

static void touch(size_t mib)
{
	const size_t len = mib << 20;
	volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FX_REQUIRE(p != MAP_FAILED);
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
}

int main(int argc, char **argv)
{
	FX_REQUIRE(argc >= 2);
	if (strcmp(argv[1], "touch-exec") == 0) {
		FX_REQUIRE(argc >= 4);
		touch((size_t)atoi(argv[2]));
		execv(argv[3], argv + 3);
		_exit(FX_FIXTURE_BROKEN);
	}
	const size_t mib = argc >= 3 ? (size_t)atoi(argv[2]) : FX_TIMELINE_TOUCH_MIB;
	pid_t pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(FX_TIMELINE_CODE);
	int status = fx_wait(pid);
	FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == FX_TIMELINE_CODE);

	pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		kill(getpid(), SIGKILL);
		_exit(FX_FIXTURE_BROKEN);
	}
	status = fx_wait(pid);
	FX_REQUIRE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		void *dropped = malloc(fx_size(FX_TIMELINE_EXEC_DROP));
		FX_REQUIRE(dropped != NULL);
		fx_escape(dropped);
		char *args[] = {"exit3", "one two", NULL};
		execv(argv[1], args);
		_exit(FX_FIXTURE_BROKEN);
	}
	status = fx_wait(pid);
	FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 3);

	pid = fork();
	FX_REQUIRE(pid >= 0);
	if (pid == 0) {
		touch(mib);
		_exit(0);
	}
	status = fx_wait(pid);
	FX_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return 0;
}
