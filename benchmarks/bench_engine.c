/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Throughput of the discrete-event engine (emu/ssemu_engine.c) on two mixes:
 * "hold" (pop the next event, schedule one at now + a random delay, with a
 * large constant number pending; no ids, as the model schedules) and
 * "cancel" (three of four operations cancel a random pending event and
 * reschedule it, as retry timers do; every event with an id).  The
 * same mixes run on a naive O(N)-scan timer list (the ae.c design that the
 * style guide rules out) at a smaller size; the ratio and an identical fired
 * sequence are reported.  See benchmarks/README.md for the columns.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ssemu_compiler.h"
#include "ssemu_engine.h"

#define BENCH_MAX_DELAY 1000000ULL	/* ps: delays are 1 ps .. 1 us */

enum bench_mix { BENCH_HOLD, BENCH_CANCEL };

static const char *const bench_mix_name[] = {
	[BENCH_HOLD] = "hold",
	[BENCH_CANCEL] = "cancel",
};

struct bench_result {
	uint64_t ops;
	uint64_t fired;
	double seconds;
	uint64_t checksum;	/* over the fired (time, a) sequence */
};

static inline uint64_t bench_rng(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t bench_delay(uint64_t r)
{
	return 1 + (r >> 24) % BENCH_MAX_DELAY;
}

static inline uint64_t bench_mixin(uint64_t h, ssemu_time_t t, uint32_t a)
{
	return (h ^ t ^ ((uint64_t)a << 40)) * 0x100000001B3ULL;
}

static double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Cancelled events stay in the heap until reaped: leave room for them. */
static uint32_t engine_cap(enum bench_mix mix, uint32_t pending)
{
	return mix == BENCH_HOLD ? pending + 1 : pending * 3 + 4096;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "bench_engine: %s: %s\n", what, strerror(-ret));
	exit(1);
}

static struct bench_result run_engine(enum bench_mix mix, uint32_t pending,
				      uint64_t iterations, uint64_t seed)
{
	uint32_t cap = engine_cap(mix, pending);
	struct bench_result res = { 0 };
	struct ssemu_engine *e;
	ssemu_evid_t *ids;
	struct ssemu_fired f;
	uint64_t s = seed, it;
	double t0;
	uint32_t k;
	int ret;

	e = malloc(ssemu_engine_bytes(cap));
	ids = calloc(pending, sizeof(*ids));
	if (!e || !ids)
		die("allocating the engine", -ENOMEM);
	ssemu_engine_init(e, cap);
	/* (only the cancel mix asks for ids: an event with one keeps its
	 * arguments apart, for its cancellation) */
	for (k = 0; k < pending; k++) {
		ret = ssemu_engine_schedule(e, bench_delay(bench_rng(&s)), 0, k,
					    0, 0,
					    mix == BENCH_CANCEL ? &ids[k] : NULL);
		if (ret)
			die("prefill", ret);
	}

	t0 = bench_now();
	for (it = 0; it < iterations; it++) {
		uint64_t r = bench_rng(&s);

		if (mix == BENCH_CANCEL && (r & 3)) {
			k = (uint32_t)((r >> 8) % pending);
			ret = ssemu_engine_cancel(e, ids[k]);
			if (ret)
				die("cancel", ret);
		} else {
			if (unlikely(!ssemu_engine_pop(e, UINT64_MAX, &f)))
				die("pop", -ENOENT);
			res.checksum = bench_mixin(res.checksum, f.time, f.a);
			res.fired++;
			k = f.a;
		}
		ret = ssemu_engine_schedule(e, e->now + bench_delay(r), 0, k,
					    0, 0,
					    mix == BENCH_CANCEL ? &ids[k] : NULL);
		if (unlikely(ret))
			die("schedule (pool too small?)", ret);
	}
	res.seconds = bench_now() - t0;
	res.ops = iterations;
	free(ids);
	free(e);
	return res;
}

/*
 * Baseline: an unsorted array scanned in full for the minimum (time, seq) on
 * every pop; cancel is an O(1) swap-remove through a position index.
 */
struct list_ent {
	ssemu_time_t time;
	uint64_t seq;
	uint32_t a;
};

struct list_timer {
	struct list_ent *ent;
	uint32_t *pos;		/* pos[a]: index of the event carrying a */
	uint32_t n;
	uint64_t seq;
	ssemu_time_t now;
};

static void list_add(struct list_timer *l, ssemu_time_t t, uint32_t a)
{
	l->ent[l->n] = (struct list_ent){ t, l->seq++, a };
	l->pos[a] = l->n++;
}

static void list_remove_at(struct list_timer *l, uint32_t i)
{
	l->ent[i] = l->ent[--l->n];
	l->pos[l->ent[i].a] = i;
}

static struct list_ent list_pop(struct list_timer *l)
{
	struct list_ent v;
	uint32_t i, m = 0;

	for (i = 1; i < l->n; i++)
		if (l->ent[i].time < l->ent[m].time ||
		    (l->ent[i].time == l->ent[m].time &&
		     l->ent[i].seq < l->ent[m].seq))
			m = i;
	v = l->ent[m];
	list_remove_at(l, m);
	l->now = v.time;
	return v;
}

static struct bench_result run_list(enum bench_mix mix, uint32_t pending,
				    uint64_t iterations, uint64_t seed)
{
	struct bench_result res = { 0 };
	struct list_timer l = { 0 };
	uint64_t s = seed, it;
	struct list_ent v;
	double t0;
	uint32_t k;

	l.ent = calloc(pending, sizeof(*l.ent));
	l.pos = calloc(pending, sizeof(*l.pos));
	if (!l.ent || !l.pos)
		die("allocating the list", -ENOMEM);
	for (k = 0; k < pending; k++)
		list_add(&l, bench_delay(bench_rng(&s)), k);

	t0 = bench_now();
	for (it = 0; it < iterations; it++) {
		uint64_t r = bench_rng(&s);

		if (mix == BENCH_CANCEL && (r & 3)) {
			k = (uint32_t)((r >> 8) % pending);
			list_remove_at(&l, l.pos[k]);
		} else {
			v = list_pop(&l);
			res.checksum = bench_mixin(res.checksum, v.time, v.a);
			res.fired++;
			k = v.a;
		}
		list_add(&l, l.now + bench_delay(r), k);
	}
	res.seconds = bench_now() - t0;
	res.ops = iterations;
	free(l.ent);
	free(l.pos);
	return res;
}

static double mops(const struct bench_result *r)
{
	return r->seconds > 0 ? r->ops / r->seconds / 1e6 : 0;
}

static void print_row(enum bench_mix mix, const char *impl, uint32_t pending,
		      const struct bench_result *r, const char *ratio)
{
	printf("%-7s %-7s %9" PRIu32 " %11" PRIu64 " %8.3f %9.2f %9s\n",
	       bench_mix_name[mix], impl, pending, r->ops, r->seconds, mops(r),
	       ratio);
}

static void usage(FILE *out)
{
	fputs("usage: bench_engine [--iterations N] [--pending P] [--seed S]\n"
	      "                    [--baseline-pending B]\n"
	      "  --iterations N   operations per engine run (2000000)\n"
	      "  --pending P      events pending in the large run (1048576)\n"
	      "  --seed S         RNG seed (1)\n"
	      "  --baseline-pending B\n"
	      "                   size of the engine-vs-list runs (4096)\n",
	      out);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *s == '\0' || *end != '\0' || v > max) {
		fprintf(stderr, "bench_engine: bad value for %s: %s\n", opt, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iterations", required_argument, NULL, 'i' },
		{ "pending", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 's' },
		{ "baseline-pending", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t iterations = 2000000, seed = 1, base_iters;
	uint32_t pending = 1u << 20, base_pending = 4096;
	enum bench_mix mix;
	bool ok = true;
	int c;

	while ((c = getopt_long(argc, argv, "i:p:s:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			iterations = parse_u64("--iterations", optarg,
					       UINT64_MAX);
			break;
		case 'p':
			pending = parse_u64("--pending", optarg,
					    (UINT32_MAX - 4096) / 3);
			break;
		case 's':
			seed = parse_u64("--seed", optarg, UINT64_MAX);
			break;
		case 'b':
			base_pending = parse_u64("--baseline-pending", optarg,
						 (UINT32_MAX - 4096) / 3);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !pending || !base_pending || !iterations) {
		usage(stderr);
		return 2;
	}
	if (!seed)
		seed = 1;	/* xorshift has a fixed point at zero */

	/* keep the O(N) baseline to a fraction of a second per mix */
	base_iters = SSEMU_MAX(20000000000ULL / ((uint64_t)base_pending * 50),
			       1000ULL);
	base_iters = SSEMU_MIN(base_iters, iterations);

	printf("bench_engine: seed %" PRIu64 ", delays 1..%llu ps\n", seed,
	       BENCH_MAX_DELAY);
	printf("%-7s %-7s %9s %11s %8s %9s %9s\n", "mix", "impl", "pending",
	       "ops", "seconds", "Mops/s", "vs_list");
	for (mix = BENCH_HOLD; mix <= BENCH_CANCEL; mix++) {
		struct bench_result big, small, list, check;
		char ratio[32];

		big = run_engine(mix, pending, iterations, seed);
		small = run_engine(mix, base_pending, iterations, seed);
		list = run_list(mix, base_pending, base_iters, seed);
		check = run_engine(mix, base_pending, base_iters, seed);

		print_row(mix, "engine", pending, &big, "-");
		snprintf(ratio, sizeof(ratio), "%.1fx",
			 mops(&list) > 0 ? mops(&small) / mops(&list) : 0);
		print_row(mix, "engine", base_pending, &small, ratio);
		print_row(mix, "list", base_pending, &list, "1.0x");
		if (check.checksum != list.checksum ||
		    check.fired != list.fired) {
			printf("%-7s MISMATCH: engine and list fired different "
			       "sequences over %" PRIu64 " ops\n",
			       bench_mix_name[mix], base_iters);
			ok = false;
		}
	}
	printf("fired sequences of engine and list: %s\n",
	       ok ? "identical" : "DIFFERENT");
	return ok ? 0 : 1;
}
