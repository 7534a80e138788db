/*
 * inherit: checks what the tracked command inherits from memtrack. The root suite starts memtrack
 * with default signal dispositions, an empty signal mask and only fds 0-2 open, so the command
 * must start the same way: anything else leaked from memtrack itself (a SIGPIPE it ignores, a
 * BPF map or ring fd, a socket, an eventfd...). Silent with exit 0 when clean; otherwise one line
 * per finding on stderr and exit 1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

int main(void)
{
	int findings = 0;

	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &sa) != 0)
			continue; /* glibc refuses its internal signals: not ours to check */
		if (sa.sa_handler != SIG_DFL) {
			fprintf(stderr, "inherit: signal %d (%s) has disposition %s\n", sig, strsignal(sig),
				sa.sa_handler == SIG_IGN ? "SIG_IGN" : "a handler");
			findings++;
		}
	}

	sigset_t mask;
	FX_REQUIRE(sigprocmask(SIG_BLOCK, NULL, &mask) == 0);
	for (int sig = 1; sig < NSIG; sig++) {
		if (sigismember(&mask, sig) == 1) {
			fprintf(stderr, "inherit: signal %d (%s) is blocked\n", sig, strsignal(sig));
			findings++;
		}
	}

	DIR *dir = opendir("/proc/self/fd");
	FX_REQUIRE(dir != NULL);
	struct dirent *entry;
	while ((entry = readdir(dir)) != NULL) {
		if (entry->d_name[0] == '.')
			continue;
		int fd = atoi(entry->d_name);
		if (fd <= 2 || fd == dirfd(dir))
			continue;
		char link[64];
		char target[PATH_MAX];
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof target - 1);
		target[n > 0 ? n : 0] = '\0';
		fprintf(stderr, "inherit: fd %d is open: %s\n", fd, target);
		findings++;
	}
	closedir(dir);

	return findings == 0 ? 0 : 1;
}
