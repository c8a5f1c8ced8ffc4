/* This machine's memory copy bandwidth: the ceiling of any read from or write into the page
 * cache, which is a copy between a cached page and the caller's buffer.
 *
 * Each of T threads owns a SIZE-byte area (far larger than the CPU caches, every page touched
 * before timing) and a CHUNK-byte buffer, and moves the whole area in CHUNK-byte memcpy
 * calls, ROUNDS times, as a cached read or write does:
 *   read   area -> buffer (the buffer is reused, so it stays in the CPU's cache)
 *   write  buffer -> area
 *   copy   area -> a second area of SIZE bytes (both sides in DRAM)
 * The best round's aggregate rate is printed as one line of JSON (MB/s = 10^6 bytes/s).
 *
 * Build and run: cc -O2 -pthread -o /tmp/memcpy-bw bench/memcpy-bw.c &&
 *   /tmp/memcpy-bw [read|write|copy [THREADS [SIZE_MIB [CHUNK_BYTES]]]] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5

static size_t size, chunk;
static int mode; /* 0 read, 1 write, 2 copy */
static pthread_barrier_t start, done;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	(void)arg;
	char *area = aligned_alloc(4096, size);
	char *other = mode == 2 ? aligned_alloc(4096, size) : aligned_alloc(4096, chunk);
	if (!area || !other) {
		fprintf(stderr, "memcpy-bw: cannot allocate %zu bytes\n", size);
		exit(1);
	}
	memset(area, 0x5a, size);
	memset(other, 0x5a, mode == 2 ? size : chunk);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&start);
		for (size_t off = 0; off < size; off += chunk) {
			if (mode == 0)
				memcpy(other, area + off, chunk);
			else if (mode == 1)
				memcpy(area + off, other, chunk);
			else
				memcpy(other + off, area + off, chunk);
			/* Keep the compiler from merging or dropping the copies. */
			__asm__ volatile("" ::: "memory");
		}
		pthread_barrier_wait(&done);
	}
	if (other[0] != 0x5a || area[size - 1] != 0x5a)
		exit(2);
	free(area);
	free(other);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "read";
	mode = !strcmp(m, "read") ? 0 : !strcmp(m, "write") ? 1 : !strcmp(m, "copy") ? 2 : -1;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	size = (size_t)(argc > 3 ? atol(argv[3]) : 1024) << 20;
	chunk = argc > 4 ? (size_t)atol(argv[4]) : 1048576;
	if (mode < 0 || threads < 1 || chunk == 0 || size < chunk || size % chunk) {
		fprintf(stderr, "usage: memcpy-bw [read|write|copy [THREADS [SIZE_MIB [CHUNK_BYTES]]]]\n");
		return 2;
	}
	pthread_t t[threads];
	pthread_barrier_init(&start, NULL, threads + 1);
	pthread_barrier_init(&done, NULL, threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	double best = 0;
	for (int r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&start);
		double t0 = now();
		pthread_barrier_wait(&done);
		double rate = (double)size * threads / (now() - t0) / 1e6;
		if (rate > best)
			best = rate;
	}
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("{\"mode\": \"%s\", \"threads\": %d, \"bytes_per_thread\": %zu, \"chunk\": %zu, "
	       "\"best_mb_s\": %.0f}\n", m, threads, size, chunk, best);
	return 0;
}
