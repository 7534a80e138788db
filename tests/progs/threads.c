/*
 * threads [N]: four threads, each allocating its own size N times (default 10).
 *
 * Thread i mallocs and frees FX_THREADi N times. A barrier holds all four until every one of them
 * has started, so they are alive together and have four distinct tids; the main thread allocates
 * none of these sizes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#include "fixture.h"
#include "fixture_sizes.h"

struct job {
	size_t size;
	unsigned times;
};

static pthread_barrier_t all_started;

static void *worker(void *arg)
{
	const struct job *job = arg;
	int rc = pthread_barrier_wait(&all_started);
	FX_REQUIRE(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
	for (unsigned i = 0; i < job->times; i++) {
		void *p = malloc(fx_size(job->size));
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		free(fx_launder(p));
	}
	/* Stay alive until every thread is done, so no tid can be reused. */
	rc = pthread_barrier_wait(&all_started);
	FX_REQUIRE(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned n = fx_count(argc, argv, 10);
	struct job jobs[4] = {
		{FX_THREAD0, n}, {FX_THREAD1, n}, {FX_THREAD2, n}, {FX_THREAD3, n},
	};
	pthread_t threads[4];

	FX_REQUIRE(pthread_barrier_init(&all_started, NULL, 4) == 0);
	for (int i = 0; i < 4; i++)
		FX_REQUIRE(pthread_create(&threads[i], NULL, worker, &jobs[i]) == 0);
	for (int i = 0; i < 4; i++)
		FX_REQUIRE(pthread_join(threads[i], NULL) == 0);
	pthread_barrier_destroy(&all_started);
	return 0;
}
