/*
 * cross_free [N]: blocks allocated by one thread and freed by another, N times (default 100).
 *
 * A producer thread mallocs FX_CROSS_FREE bytes and hands the block to the main thread, which
 * frees it at one call site and lets the producer make the next. The main thread allocates
 * nothing between its frees, so the same address, handed out again by the producer, is freed
 * again by the same function at the same stack pointer of the same thread: what fd-find's
 * receiver thread does with its walker's buffers. The size is above glibc's tcache limit, so the
 * freed block goes back to the producer's arena and the producer's next malloc returns it; the
 * fixture fails (FX_FIXTURE_BROKEN) unless that happened at least N / 2 times.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

static pthread_barrier_t handed, freed;
static void *volatile block;
static unsigned times;
static unsigned same_address;

static void hand_over(void)
{
	int rc = pthread_barrier_wait(&handed);
	FX_REQUIRE(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void wait_freed(void)
{
	int rc = pthread_barrier_wait(&freed);
	FX_REQUIRE(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

static void *producer(void *arg)
{
	(void)arg;
	uintptr_t last = 0;
	for (unsigned i = 0; i < times; i++) {
		void *p = malloc(fx_size(FX_CROSS_FREE));
		FX_REQUIRE(p != NULL);
		if ((uintptr_t)p == last)
			same_address++;
		last = (uintptr_t)p;
		block = p;
		hand_over();
		wait_freed();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	times = fx_count(argc, argv, 100);
	FX_REQUIRE(pthread_barrier_init(&handed, NULL, 2) == 0);
	FX_REQUIRE(pthread_barrier_init(&freed, NULL, 2) == 0);
	pthread_t thread;
	FX_REQUIRE(pthread_create(&thread, NULL, producer, NULL) == 0);
	for (unsigned i = 0; i < times; i++) {
		hand_over();
		free(fx_launder(block));
		wait_freed();
	}
	FX_REQUIRE(pthread_join(thread, NULL) == 0);
	if (same_address < times / 2) {
		fprintf(stderr, "cross_free: the producer got the freed address back %u of %u times\n", same_address, times);
		return FX_FIXTURE_BROKEN;
	}
	return 0;
}
