/*
 * phases: a long-running process driven one letter at a time over stdin, for the control-socket
 * tests (tests/root/test_control.cpp), which play a benchmark runner: they switch recording on
 * and off, drain and attach between phases, and need to know when each phase has finished.
 *
 *   phases [COUNTER_FILE]
 *
 * At start it writes "ready <pid>\n" to stdout. Then, for each byte read from stdin:
 *   'a'  phase A: PHASES_ROUNDS x (malloc(PHASES_SIZE_A), free), then "done\n"
 *   'b'  phase B: the same with PHASES_SIZE_B, then "done\n"
 *   'c'  phase C: the same with PHASES_SIZE_C, then "done\n"
 *   'k'  keep: one malloc(PHASES_SIZE_KEEP) left live, then "done\n"
 *   'f'  free the block 'k' kept (the last one), then "done\n"
 *   'l'  loop: malloc(PHASES_SIZE_LOOP), free, over and over, until the next byte arrives on
 *        stdin (it is left there, to be read as the next command) or stdin is closed; then
 *        "looped <n>\n" with n the number of loop allocations made by this loop
 *   'p'  paced loop: the same as 'l', with a 1 ms sleep after every 16 allocations (a steady
 *        load of at most 16000 allocations a second, for tests that decode all of it)
 *   'q'  exit 0
 *   ' ', '\t', '\r', '\n'  ignored
 * End of stdin exits 0 as well, so a test that dies leaves no fixture behind waiting on it.
 *
 * COUNTER_FILE, when given, is created (or truncated) and mapped shared: its first 8 bytes hold
 * a uint64_t (native order) counting every loop allocation since the start, stored after
 * malloc() returned and before free(). A reader that sees the value n knows that n loop
 * allocations have happened.
 *
 * Output goes through write(2), never stdio, so the fixture's only heap use is its phases.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

/* The sizes tests/root/test_control.cpp expects (it keeps its own copy). */
#define PHASES_ROUNDS 100u
#define PHASES_SIZE_A 11111u
#define PHASES_SIZE_B 22222u
#define PHASES_SIZE_C 33333u
#define PHASES_SIZE_LOOP 44444u
#define PHASES_SIZE_KEEP 55555u

static volatile uint64_t local_counter;
static void *kept;

static void say(const char *text)
{
	size_t len = strlen(text);
	while (len > 0) {
		ssize_t n = write(1, text, len);
		if (n < 0 && errno == EINTR)
			continue;
		FX_REQUIRE(n > 0);
		text += n;
		len -= (size_t)n;
	}
}

static volatile uint64_t *map_counter(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FX_REQUIRE(fd >= 0);
	FX_REQUIRE(ftruncate(fd, 4096) == 0);
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FX_REQUIRE(m != MAP_FAILED);
	close(fd);
	return (volatile uint64_t *)m;
}

static void phase(size_t size)
{
	for (unsigned i = 0; i < PHASES_ROUNDS; i++) {
		void *p = malloc(fx_size(size));
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		free(fx_launder(p));
	}
	say("done\n");
}

/* True when stdin has a byte to read, or is closed. */
static int input_waiting(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	int n;
	do
		n = poll(&p, 1, 0);
	while (n < 0 && errno == EINTR);
	FX_REQUIRE(n >= 0);
	return n > 0;
}

static void loop(volatile uint64_t *counter, int paced)
{
	const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
	uint64_t made = 0;
	for (;;) {
		void *p = malloc(fx_size(PHASES_SIZE_LOOP));
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		made++;
		__atomic_store_n(counter, *counter + 1, __ATOMIC_RELEASE);
		free(fx_launder(p));
		if ((made & 15) != 0)
			continue;
		if (input_waiting())
			break;
		if (paced)
			nanosleep(&pause, NULL);
	}
	char line[64];
	snprintf(line, sizeof line, "looped %llu\n", (unsigned long long)made);
	say(line);
}

int main(int argc, char **argv)
{
	volatile uint64_t *counter = argc > 1 ? map_counter(argv[1]) : &local_counter;
	char line[64];
	snprintf(line, sizeof line, "ready %ld\n", (long)getpid());
	say(line);

	for (;;) {
		char c;
		ssize_t n = read(0, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		FX_REQUIRE(n >= 0);
		if (n == 0)
			return 0;
		switch (c) {
		case 'a':
			phase(PHASES_SIZE_A);
			break;
		case 'b':
			phase(PHASES_SIZE_B);
			break;
		case 'c':
			phase(PHASES_SIZE_C);
			break;
		case 'k':
			kept = malloc(fx_size(PHASES_SIZE_KEEP));
			FX_REQUIRE(kept != NULL);
			fx_escape(kept);
			say("done\n");
			break;
		case 'f':
			free(fx_launder(kept));
			kept = NULL;
			say("done\n");
			break;
		case 'l':
		case 'p':
			loop(counter, c == 'p');
			break;
		case 'q':
			return 0;
		case ' ':
		case '\t':
		case '\r':
		case '\n':
			break;
		default:
			fprintf(stderr, "phases: unknown command '%c'\n", c);
			return FX_FIXTURE_BROKEN;
		}
	}
}
