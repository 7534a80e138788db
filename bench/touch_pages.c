/*
 * touch_pages [MIB] [ROUNDS]: maps MIB MiB of anonymous memory (default 4096), writes one byte to
 * each 4 KiB page so the kernel faults it in, unmaps it; ROUNDS times (default 1). Every page
 * fault moves the process's RSS counters: scripts/bench.sh --rss times it untracked and under
 * memtrack with and without RSS records (issue 29: what the rss_stat tracepoint costs).
 * One mmap and one munmap a round, no heap allocation: what is measured is the fault path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	const size_t page = 4096;
	const size_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 4096;
	const unsigned rounds = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1;
	if (mib == 0 || rounds == 0) {
		fprintf(stderr, "usage: touch_pages [MIB] [ROUNDS]\n");
		return 2;
	}
	const size_t bytes = mib << 20;
	for (unsigned r = 0; r < rounds; r++) {
		volatile char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == (volatile char *)MAP_FAILED) {
			perror("touch_pages: mmap");
			return 1;
		}
		/* No transparent huge pages: 4 KiB faults, one rss_stat move each. */
		if (madvise((void *)p, bytes, MADV_NOHUGEPAGE) != 0) {
			perror("touch_pages: madvise");
			return 1;
		}
		for (size_t off = 0; off < bytes; off += page)
			p[off] = 1;
		munmap((void *)p, bytes);
	}
	return 0;
}
