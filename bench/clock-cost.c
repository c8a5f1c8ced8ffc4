/* What one timestamp costs here: CLOCK_MONOTONIC through the vDSO (candor's clock),
 * CLOCK_MONOTONIC_RAW, and a bare RDTSC (what a calibrated TSC clock would read).
 * Timed in thread CPU time, so that time spent preempted by other work is not counted.
 * Build and run: cc -O2 -o /tmp/clock-cost bench/clock-cost.c && /tmp/clock-cost */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static uint64_t ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	const int n = 20000000;
	volatile uint64_t sink = 0;
	for (int round = 0; round < 3; round++) {
		uint64_t t0 = ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < n; i++)
			sink += ns(CLOCK_MONOTONIC);
		uint64_t t1 = ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < n; i++)
			sink += ns(CLOCK_MONOTONIC_RAW);
		uint64_t t2 = ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < n; i++)
			sink += __rdtsc();
		uint64_t t3 = ns(CLOCK_THREAD_CPUTIME_ID);
		unsigned aux;
		for (int i = 0; i < n; i++)
			sink += __rdtscp(&aux);
		uint64_t t4 = ns(CLOCK_THREAD_CPUTIME_ID);
		printf("clock_gettime(MONOTONIC) %.1f ns  (MONOTONIC_RAW) %.1f ns  rdtsc %.1f ns  rdtscp %.1f ns\n",
		       (double)(t1 - t0) / n, (double)(t2 - t1) / n, (double)(t3 - t2) / n,
		       (double)(t4 - t3) / n);
	}
	return (int)(sink & 0);
}
