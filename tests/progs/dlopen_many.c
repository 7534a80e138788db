/*
 * dlopen_many N DIR [COUNT_FILE]: dlopen()s DIR/libmany0.so .. DIR/libmany{N-1}.so in order, keeping each
 * open: N new objects, each mapped by a dlopen of its own (the loader's hook holds the process
 * each time). Each library's constructor makes one FX_MANY_LIB_ALLOC allocation (many_lib.c).
 * The copies are made by the caller (tests/root, scripts/bench.sh --dlopen): one file copied N
 * times, so every name is a distinct object. With COUNT_FILE, writes there how many distinct
 * files it maps executable at the end (what a tracer examining each new object once examines).
 * Prints on stdout how long the dlopens took ("dlopens SECONDS"): the cost a tracer adds to them,
 * apart from its own start-up (scripts/bench/dlopen.sh). Exits 0 when all opened.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"

/* Distinct (device, inode) pairs among this process's executable file mappings. */
static unsigned executable_files(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	FX_REQUIRE(maps != NULL);
	static unsigned long long seen[2 * 100010];
	unsigned count = 0;
	char line[4096];
	while (fgets(line, sizeof(line), maps)) {
		char perms[8];
		unsigned major, minor;
		unsigned long long ino;
		if (sscanf(line, "%*x-%*x %7s %*x %x:%x %llu", perms, &major, &minor, &ino) != 4 || perms[2] != 'x' ||
		    ino == 0)
			continue;
		const unsigned long long dev = ((unsigned long long)major << 32) | minor;
		unsigned i = 0;
		while (i < count && !(seen[2 * i] == dev && seen[2 * i + 1] == ino))
			i++;
		if (i < count)
			continue;
		FX_REQUIRE(count < 100010);
		seen[2 * count] = dev;
		seen[2 * count + 1] = ino;
		count++;
	}
	fclose(maps);
	return count;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: dlopen_many N DIR [COUNT_FILE]\n");
		return FX_FIXTURE_BROKEN;
	}
	unsigned n = fx_count(2, argv, 0);
	char path[4096];
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/libmany%u.so", argv[2], i);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "dlopen_many: %s\n", dlerror());
			return FX_FIXTURE_BROKEN;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("dlopens %.3f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (argc == 4) {
		FILE *out = fopen(argv[3], "w");
		FX_REQUIRE(out != NULL);
		fprintf(out, "%u\n", executable_files());
		FX_REQUIRE(fclose(out) == 0);
	}
	return 0;
}
