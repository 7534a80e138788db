/*
 * The sizes of report_known (tests/progs/report_known.c), shared with the root suite's
 * tests/root/test_report.cpp. Odd values in 12 KiB, clear of fixture_sizes.h's and
 * stack_sizes.h's ranges, so `memtrack report --min-size 12000 --max-size 12999` sees only them.
 */
#ifndef MEMTRACK_REPORT_SIZES_H
#define MEMTRACK_REPORT_SIZES_H

#define RPT_MIN 12000u
#define RPT_MAX 12999u

/* main -> leak_outer -> leak_inner -> malloc, RPT_LEAK_N times, never freed. */
#define RPT_LEAK_SIZE 12011u
#define RPT_LEAK_N 3u
/* main -> peak_build -> malloc, RPT_PEAK_N blocks live together (with the leaks: the peak), then freed. */
#define RPT_PEAK_SIZE 12101u
#define RPT_PEAK_N 4u
/* main -> temp_loop -> malloc then free at once, RPT_TEMP_N times: temporary allocations. */
#define RPT_TEMP_SIZE 12203u
#define RPT_TEMP_N 10u

#endif
