/*
 * report_known: allocations whose report is known exactly (report_sizes.h).
 *   1. main -> leak_outer -> leak_inner -> malloc(RPT_LEAK_SIZE), RPT_LEAK_N times, left live.
 *   2. main -> peak_build -> malloc(RPT_PEAK_SIZE), RPT_PEAK_N blocks live at once: with the
 *      leaks, the peak of RPT_LEAK_N * RPT_LEAK_SIZE + RPT_PEAK_N * RPT_PEAK_SIZE bytes; then freed.
 *   3. main -> temp_loop -> malloc(RPT_TEMP_SIZE) and free at once, RPT_TEMP_N times.
 */
#include <stdlib.h>

#include "fixture.h"
#include "report_sizes.h"

static void *leaks[RPT_LEAK_N];
static void *peak[RPT_PEAK_N];

__attribute__((noinline)) static void *leak_inner(void)
{
	void *p = malloc(fx_size(RPT_LEAK_SIZE));
	FX_REQUIRE(p != NULL);
	fx_escape(p);
	return fx_launder(p);
}

__attribute__((noinline)) static void leak_outer(unsigned i)
{
	leaks[i] = leak_inner();
	fx_escape(leaks[i]);
}

__attribute__((noinline)) static void peak_build(void)
{
	for (unsigned i = 0; i < RPT_PEAK_N; i++) {
		peak[i] = malloc(fx_size(RPT_PEAK_SIZE));
		FX_REQUIRE(peak[i] != NULL);
		fx_escape(peak[i]);
	}
}

__attribute__((noinline)) static void temp_loop(void)
{
	for (unsigned i = 0; i < RPT_TEMP_N; i++) {
		void *p = malloc(fx_size(RPT_TEMP_SIZE));
		FX_REQUIRE(p != NULL);
		fx_escape(p);
		free(fx_launder(p));
	}
}

int main(void)
{
	for (unsigned i = 0; i < RPT_LEAK_N; i++)
		leak_outer(i);
	peak_build();
	for (unsigned i = 0; i < RPT_PEAK_N; i++)
		free(fx_launder(peak[i]));
	temp_loop();
	return 0;
}
