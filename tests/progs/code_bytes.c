/*
 * code_bytes ADDR_FILE STOP_FILE: writes "PID MALLOC FREE\n" (its pid and the addresses of the C
 * library's malloc and free, in hex) to ADDR_FILE, then waits until STOP_FILE exists (60 s at
 * most). The isolation test reads the code at those addresses through /proc/PID/mem, tracked and
 * untracked, to see where uprobes are installed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#include "fixture.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: code_bytes ADDR_FILE STOP_FILE\n");
		return FX_FIXTURE_BROKEN;
	}
	void *m = dlsym(RTLD_DEFAULT, "malloc");
	void *f = dlsym(RTLD_DEFAULT, "free");
	if (!m || !f) {
		fprintf(stderr, "code_bytes: dlsym failed\n");
		return FX_FIXTURE_BROKEN;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	FILE *out = fopen(tmp, "w");
	if (!out || fprintf(out, "%d %p %p\n", (int)getpid(), m, f) < 0 || fclose(out) != 0 || rename(tmp, argv[1]) != 0) {
		perror("code_bytes: write");
		return FX_FIXTURE_BROKEN;
	}
	for (int i = 0; i < 6000 && access(argv[2], F_OK) != 0; i++)
		usleep(10000);
	return 0;
}
