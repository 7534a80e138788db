/*
 * killed: one malloc of FX_KILLED_SIZE, never freed, then SIGTERM to itself, expecting the default
 * disposition to kill it (so `memtrack track` exits 128 + 15). The fixture does not reset the
 * disposition or the mask: if it survives the signal, SIGTERM was ignored or blocked in what it
 * inherited from memtrack, and it exits FX_KILLED_SURVIVED to say so.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "fixture_sizes.h"

#define FX_KILLED_SURVIVED 87

int main(void)
{
	void *p = malloc(fx_size(FX_KILLED_SIZE));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	kill(getpid(), SIGTERM);
	/* A pending unblocked signal is delivered before kill() returns; give a blocked one no
	 * chance either. */
	sleep(1);
	return FX_KILLED_SURVIVED;
}
