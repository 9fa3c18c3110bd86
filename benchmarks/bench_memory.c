/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a load that misses the caches costs on this machine, and how many
 * such loads it overlaps: the two figures a memory-bound model's speed
 * follows (a hop on the full system touches gigabytes of switch, packet
 * and event state; bench_fabric model).
 *
 * A random cyclic chain of 64-byte cells through a buffer of --size MiB
 * (each cell names the next, so every load waits for the one before it),
 * walked by --chains independent walkers at once, interleaved in one
 * loop: with one walker, ns per load is the miss latency; with k, the
 * time per load falls as far as the memory system overlaps k misses.
 * The buffer is on huge pages (madvise) unless --small-pages.
 *
 *   bench_memory [--size MIB] [--chains K] [--loads N] [--small-pages]
 *
 * Output: key value lines (size_mib, chains, huge_pages, loads,
 * ns_per_load, ns_per_chain_load, and sink: a bit of where the walkers
 * ended, so that the walk is not optimised away).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CELL 64
#define MAX_CHAINS 32

struct cell {
	uint64_t next;		/* index of the next cell of the chain */
	uint64_t pad[CELL / 8 - 1];
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* xorshift64*: the permutation's draws (fixed seed: the same chain every
 * run) */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static int usage(const char *bad)
{
	if (bad)
		fprintf(stderr, "bench_memory: bad argument '%s'\n", bad);
	fprintf(stderr, "usage: bench_memory [--size MIB (1-65536, default "
		"2048)] [--chains K (1-%d, default 1)]\n"
		"                    [--loads N (1000 or more, default 20000000)] "
		"[--small-pages]\n", MAX_CHAINS);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t size_mib = 2048, chains = 1, loads = 20000000, n, i, j, t;
	uint64_t pos[MAX_CHAINS], seed = 0x9e3779b97f4a7c15ULL, sink = 0;
	bool huge = true;
	struct cell *c;
	uint64_t *perm;
	double t0, t1;
	size_t bytes;
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--small-pages")) {
			huge = false;
		} else if (a + 1 < argc && !strcmp(argv[a], "--size")) {
			if (!parse_u64(argv[++a], 1, 65536, &size_mib))
				return usage(argv[a]);
		} else if (a + 1 < argc && !strcmp(argv[a], "--chains")) {
			if (!parse_u64(argv[++a], 1, MAX_CHAINS, &chains))
				return usage(argv[a]);
		} else if (a + 1 < argc && !strcmp(argv[a], "--loads")) {
			if (!parse_u64(argv[++a], 1000, UINT64_MAX / 2, &loads))
				return usage(argv[a]);
		} else {
			return usage(argv[a]);
		}
	}
	bytes = (size_t)size_mib << 20;
	n = bytes / CELL;
	c = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c == MAP_FAILED) {
		fprintf(stderr, "bench_memory: cannot map %llu MiB: %s\n",
			(unsigned long long)size_mib, strerror(errno));
		return 1;
	}
	(void)madvise(c, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	perm = malloc(n * sizeof(*perm));
	if (!perm) {
		fprintf(stderr, "bench_memory: out of memory\n");
		return 1;
	}
	/* one cycle through every cell, in a random order (Sattolo) */
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd(&seed) % i;
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < n; i++)
		c[perm[i]].next = perm[(i + 1) % n];
	/* the walkers start spread round the cycle */
	for (j = 0; j < chains; j++)
		pos[j] = perm[j * (n / chains)];
	free(perm);
	/* a first pass, untimed: the pages and the TLB as in steady state */
	for (i = 0; i < n / 8 && i < 1000000; i++)
		pos[0] = c[pos[0]].next;

	t0 = now_ns();
	for (i = 0; i < loads / chains; i++)
		for (j = 0; j < chains; j++)
			pos[j] = c[pos[j]].next;
	t1 = now_ns();
	for (j = 0; j < chains; j++)
		sink += pos[j];
	loads = loads / chains * chains;
	printf("size_mib %llu\nchains %llu\nhuge_pages %d\nloads %llu\n"
	       "ns_per_load %.2f\nns_per_chain_load %.2f\nsink %llu\n",
	       (unsigned long long)size_mib, (unsigned long long)chains,
	       huge, (unsigned long long)loads, (t1 - t0) / (double)loads,
	       (t1 - t0) / (double)(loads / chains),
	       (unsigned long long)(sink & 1));
	munmap(c, bytes);
	return 0;
}
