/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu sim`: synthetic traffic on an in-process fabric.  Every
 * endpoint taking part gets a NIC; open-loop sources inject messages with
 * exponential gaps at the requested load (uniform random, permutation and
 * incast patterns), or two endpoints play ping-pong.  Everything reported is
 * in model time, so the same seed gives byte-identical output.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"
#include "ssemu_compiler.h"
#include "ssemu_driver.h"
#include <slingshot_emu/ssemu_rng.h>
#include "ssemu_samples.h"

struct sim;

/* A traffic pattern: where each source's next message goes, and how the
 * run goes (open-loop sources, or one message back and forth). */
struct sim_pattern {
	const char *name;
	uint64_t (*dest)(struct sim *s, uint64_t src);
	int (*run)(struct sim *s);
	void (*setup)(struct sim *s);	/* NULL: nothing of its own */
	uint64_t first_source;	/* the ports below it only receive */
	uint64_t endpoints;	/* 0: as many as asked */
	bool one_sink;		/* every message to one endpoint */
};

struct sim_opts {
	struct ssemu_cli_fabric fab;
	char line[SSEMU_CLI_LINE_MAX];	/* --scenario words */
	int pattern;		/* index into sim_patterns */
	uint64_t nendpoints;	/* 0: every endpoint of the topology */
	uint64_t sources;	/* 0: every endpoint sends */
	uint64_t size;		/* message bytes */
	double load;		/* fraction of injection bandwidth */
	double time_us;		/* model time to generate traffic for */
	uint64_t messages;	/* or: total messages to send */
	uint32_t tclass;
	const char *csv;
	const char *versus;	/* --versus-routing: a second run */
	const char *telemetry;	/* trace file to save */
	double tel_interval_us;	/* < 0: the fabric's */
	bool progress;
	bool speed;		/* report the set-up's and the run's cost */
	/* the engine a Dragonfly group at a time: asked for, or not at all
	 * (neither: where SIM_GW_AUTO endpoints or more take part and the
	 * run allows it) */
	bool group_windows, no_group_windows;
};

struct sim {
	struct ssemu_drv d;
	struct sim_opts o;
	const struct sim_pattern *pat;
	struct ssemu_rng rng;
	uint64_t *dest;		/* permutation; alltoall: next shift */
	ssemu_time_t *next;	/* next injection per source */
	/* the sources by next injection, a binary heap (nheap of them, each
	 * entry with its time: a comparison reads no source's own state), and
	 * room for the ones due at once */
	struct sim_due {
		ssemu_time_t t;
		uint64_t src;
	} *heap;
	uint64_t *due, nheap;
	uint64_t sent, received, rx_bytes;
	ssemu_time_t first_rx, last_rx;
	uint64_t first_bytes;	/* the earliest arrival opens the window */
	uint64_t drained_at;
	uint64_t drawn;		/* messages due so far (sent or waiting) */
	/* Messages due at a source out of slots wait in its queue (a list
	 * through the wait pool, wq_head/wq_tail per source, NONE: empty),
	 * the sources with any in blk, in index order (nblk of them).
	 * Group windows: the sources post a window's messages ahead, for
	 * their times (ssemu_ep_send_at). */
	struct sim_wait {
		uint64_t dst, next;
		ssemu_time_t t;	/* when it was due */
	} *wait;
	uint64_t nwait, wait_cap, wait_free;
	uint64_t *wq_head, *wq_tail, *blk, nblk;
	struct ssemu_samples lat;
	FILE *csv;
	double prog_last;	/* wall clock of the last progress line */
};

/* Injection time of one message at the edge rate, ps. */
static double msg_wire_ps(const struct sim *s)
{
	const struct ssemu_config *c = &s->d.cfg;
	uint64_t pkts = s->o.size ? (s->o.size + c->mtu - 1) / c->mtu : 1;
	double bytes = (double)s->o.size + (double)pkts * c->pkt_overhead;

	return bytes * 8.0 * 1e12 / (double)c->edge.rate_bps;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ssemu_time_t gap(struct sim *s)
{
	double mean = msg_wire_ps(s) / s->o.load;
	double u = ssemu_rng_double(&s->rng);

	return (ssemu_time_t)(-log(1.0 - u) * mean) + 1;
}

static uint64_t dest_uniform(struct sim *s, uint64_t src)
{
	uint64_t d = ssemu_rng_below(&s->rng, s->d.n - 1);

	return d >= src ? d + 1 : d;
}

static uint64_t dest_permutation(struct sim *s, uint64_t src)
{
	return s->dest[src];
}

static uint64_t dest_incast(struct sim *s, uint64_t src)
{
	(void)s;
	(void)src;
	return 0;
}

static uint64_t dest_pingpong(struct sim *s, uint64_t src)
{
	(void)s;
	return src ^ 1;
}

/* Each endpoint to its peer in the next group. */
static uint64_t dest_groups(struct sim *s, uint64_t src)
{
	const struct ssemu_config *c = &s->d.cfg;

	return (src + (uint64_t)c->topo.switches_per_group *
			      c->topo.endpoints_per_switch) % s->d.n;
}

/* MPI's pairwise exchange: shifts 1, 2, ..., n-1, again. */
static uint64_t dest_alltoall(struct sim *s, uint64_t src)
{
	uint64_t d = (src + 1 + s->dest[src]) % s->d.n;

	s->dest[src] = (s->dest[src] + 1) % (s->d.n - 1);
	return d;
}

/* Every source starts at shift 1. */
static void setup_alltoall(struct sim *s)
{
	memset(s->dest, 0, s->d.n * sizeof(*s->dest));
}

/* A message from @src to @dst, due at @t: posted now, or with group
 * windows for @t or now, whichever is later. */
static int post(struct sim *s, uint64_t src, uint64_t dst, ssemu_time_t t)
{
	ssemu_time_t at = s->o.group_windows ?
				  SSEMU_MAX(t, ssemu_fabric_now(s->d.fab)) :
				  0;

	return ssemu_drv_post_at(&s->d, src, dst, s->o.size, s->o.tclass, 0,
				 0, src, at);
}

static void sim_recv(struct ssemu_drv *d, uint64_t port,
		     const struct ssemu_event *ev)
{
	struct sim *s = container_of(d, struct sim, d);
	double l = (double)(ev->time - ev->hdr[0]) / SSEMU_PS_PER_NS;

	ssemu_samples_add(&s->lat, l);
	/* (endpoints' events are read in turn, not in model time order:
	 * the window is from the earliest arrival to the latest) */
	if (!s->received || ev->time < s->first_rx) {
		s->first_rx = ev->time;
		s->first_bytes = ev->len;
	}
	if (!s->received || ev->time > s->last_rx)
		s->last_rx = ev->time;
	s->received++;
	s->rx_bytes += ev->len;
	if (s->csv)
		fprintf(s->csv,
			"%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%.3f\n",
			ev->hdr[1], port, ev->len, ev->hdr[0], ev->time, l);
}

static const struct ssemu_drv_ops sim_drv_ops = {
	.recv = sim_recv,
};

/* A progress line on stderr at most twice a second (model time, share of
 * the run), rewritten in place; @done writes the final one. */
static void progress(struct sim *s, double frac, bool done)
{
	double w;

	if (!s->o.progress)
		return;
	w = wall_s();
	if (!done && w - s->prog_last < 0.5)
		return;
	s->prog_last = w;
	fprintf(stderr, "\rsim: model time %.3f us, %5.1f%% of the run, "
		"%" PRIu64 " messages sent ",
		(double)ssemu_fabric_now(s->d.fab) / SSEMU_PS_PER_US,
		100.0 * (frac < 0 ? 0 : frac > 1 ? 1 : frac), s->sent);
	if (done)	/* the last line stays */
		fprintf(stderr, "\n");
	fflush(stderr);
}

/* Does entry @a inject before entry @b (ties: the lower index)? */
static inline bool heap_before(const struct sim_due *a,
			       const struct sim_due *b)
{
	return a->t < b->t || (a->t == b->t && a->src < b->src);
}

/* Source @src joins the heap, at its next injection. */
static void heap_push(struct sim *s, uint64_t src)
{
	struct sim_due v = { s->next[src], src };
	uint64_t k = s->nheap++, up;

	for (; k; k = up) {
		up = (k - 1) / 2;
		if (!heap_before(&v, &s->heap[up]))
			break;
		s->heap[k] = s->heap[up];
	}
	s->heap[k] = v;
}

/* The source that injects first, taken off the heap. */
static uint64_t heap_pop(struct sim *s)
{
	uint64_t top = s->heap[0].src, k = 0, c;
	struct sim_due last = s->heap[--s->nheap];

	for (;;) {
		c = 2 * k + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && heap_before(&s->heap[c + 1],
						    &s->heap[c]))
			c++;
		if (!heap_before(&s->heap[c], &last))
			break;
		s->heap[k] = s->heap[c];
		k = c;
	}
	if (s->nheap)
		s->heap[k] = last;
	return top;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define WAIT_NONE UINT64_MAX

/* A message of source @src to @dst joins its queue; a source that had
 * none joins blk, and its slots are watched. */
static int wait_push(struct sim *s, uint64_t src, uint64_t dst,
		     ssemu_time_t t)
{
	struct sim_wait *w;
	uint64_t x, k;
	int ret;

	if (s->wait_free != WAIT_NONE) {
		x = s->wait_free;
		s->wait_free = s->wait[x].next;
	} else {
		if (s->nwait == s->wait_cap) {
			uint64_t cap = s->wait_cap ? 2 * s->wait_cap : 1024;

			w = realloc(s->wait, cap * sizeof(*w));
			if (!w)
				return -ENOMEM;
			s->wait = w;
			s->wait_cap = cap;
		}
		x = s->nwait++;
	}
	s->wait[x] = (struct sim_wait){ dst, WAIT_NONE, t };
	if (s->wq_head[src] != WAIT_NONE) {
		s->wait[s->wq_tail[src]].next = x;
		s->wq_tail[src] = x;
		return 0;
	}
	s->wq_head[src] = s->wq_tail[src] = x;
	ret = ssemu_ep_watch(s->d.eps[src], true);
	if (ret)
		return ret;
	for (k = s->nblk++; k && s->blk[k - 1] > src; k--)
		s->blk[k] = s->blk[k - 1];
	s->blk[k] = src;
	return 0;
}

/* Source @src's waiting messages that its slots take now, in order.
 * @return 1 if none waits any more (it is no longer watched), 0 if some
 * still do, or a negative error. */
static int post_source(struct sim *s, uint64_t src)
{
	uint64_t x;
	int ret;

	while ((x = s->wq_head[src]) != WAIT_NONE) {
		ret = post(s, src, s->wait[x].dst, s->wait[x].t);
		if (ret == -EAGAIN)
			return 0;
		if (ret)
			return ret;
		s->sent++;
		s->wq_head[src] = s->wait[x].next;
		s->wait[x].next = s->wait_free;
		s->wait_free = x;
	}
	ret = ssemu_ep_watch(s->d.eps[src], false);
	return ret ? ret : 1;
}

/* Every waiting source's messages that its slots take, source by source
 * in index order. */
static int post_waiting(struct sim *s)
{
	uint64_t k, n = 0;
	int ret;

	for (k = 0; k < s->nblk; k++) {
		ret = post_source(s, s->blk[k]);
		if (ret < 0)
			return ret;
		if (!ret)
			s->blk[n++] = s->blk[k];
	}
	s->nblk = n;
	return 0;
}

/* The same for the sources @ports (@n of them, in index order) alone. */
static int post_waiting_of(struct sim *s, const uint64_t *ports, int n)
{
	uint64_t lo, hi, mid;
	int j, ret;

	for (j = 0; j < n; j++) {
		for (lo = 0, hi = s->nblk; lo < hi;) {
			mid = (lo + hi) / 2;
			if (s->blk[mid] < ports[j])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == s->nblk || s->blk[lo] != ports[j])
			continue;
		ret = post_source(s, ports[j]);
		if (ret < 0)
			return ret;
		if (ret) {
			memmove(&s->blk[lo], &s->blk[lo + 1],
				(s->nblk - lo - 1) * sizeof(*s->blk));
			s->nblk--;
		}
	}
	return 0;
}

/*
 * A watched run stopped: the sources whose slots it freed post what waits
 * (the fabric names them; if it cannot, every waiting source tries).  A
 * stop that freed none found a ring full: the endpoints are polled (what
 * waits for room goes in as the next run starts, at this model time).
 */
static int freed_post(struct sim *s)
{
	uint32_t slots[SSEMU_FABRIC_WATCHED_MAX];
	uint64_t ports[SSEMU_FABRIC_WATCHED_MAX], p;
	int n, k, j;

	n = ssemu_fabric_watched(s->d.fab, slots, ARRAY_SIZE(slots));
	if (n == -ENOSPC)
		return post_waiting(s);
	if (n < 0)
		return n;
	if (!n) {
		ssemu_drv_drain(&s->d);
		return 0;
	}
	/* (their ports, in index order) */
	for (k = 0; k < n; k++) {
		p = slots[k] < s->d.nslots ? s->d.slot_port[slots[k]] :
					     UINT64_MAX;
		for (j = k; j > 0 && ports[j - 1] > p; j--)
			ports[j] = ports[j - 1];
		ports[j] = p;
	}
	return post_waiting_of(s, ports, n);
}

/* Source @i, due now (at next[i]), draws its message's destination and
 * posts it, or queues it behind what it has waiting; then its next
 * injection time. */
static int due_one(struct sim *s, uint64_t i)
{
	uint64_t dst = s->pat->dest(s, i);
	int ret;

	s->drawn++;
	ret = s->wq_head[i] == WAIT_NONE ? post(s, i, dst, s->next[i]) :
					   -EAGAIN;
	if (ret == -EAGAIN)
		ret = wait_push(s, i, dst, s->next[i]);
	else if (!ret)
		s->sent++;
	if (ret)
		return ret;
	s->next[i] += gap(s);
	heap_push(s, i);
	return 0;
}

/*
 * Group windows: the messages due at or before @until, drawn in the order
 * the sources come due (time, then index: the order of the draws without
 * group windows) and posted for their times.  A source due again before
 * @until draws again.
 */
static int due_ahead(struct sim *s, ssemu_time_t until)
{
	int ret;

	while (s->nheap && s->heap[0].t <= until) {
		ret = due_one(s, heap_pop(s));
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Open-loop sources: each has a message due at its next injection time,
 * then draws the next.  The sources due at a time draw their destinations
 * in index order (the pattern's stream gives them in that order) and post.
 * A source out of message slots keeps its due messages in a queue of its
 * own, in order, and posts them at the model time a slot frees: the run of
 * the engine stops after the event that frees one (a watched endpoint,
 * ssemu_fabric_run_until_watched).  The other sources post on time
 * meanwhile, so what a source injects depends on its own slots alone, and
 * not on how many events the model takes.  A heap finds the sources due.
 * With group windows, where the engine's clock is one group's at a time,
 * the sources draw a window's messages before the engine runs it and post
 * them for their times (what waits for a slot, for its time or the time
 * the slot frees, whichever is later): the same draws and the same posts
 * at the same model times.
 */
static int run_open_loop(struct sim *s)
{
	ssemu_time_t end = (ssemu_time_t)(s->o.time_us * SSEMU_PS_PER_US);
	ssemu_time_t t, tmin, w = ssemu_config_group_window(&s->d.cfg);
	uint64_t i, k, ndue, first = s->pat->first_source;
	uint64_t nsrc = s->o.sources ? SSEMU_MIN(s->o.sources + first, s->d.n) :
				       s->d.n;
	bool more;
	int ret;

	s->nheap = 0;
	for (i = first; i < nsrc; i++) {
		s->next[i] = gap(s);
		heap_push(s, i);
	}
	for (;;) {
		tmin = s->nheap ? s->heap[0].t : UINT64_MAX;
		more = s->o.messages ? s->drawn < s->o.messages : tmin < end;
		if (s->o.group_windows && more) {
			/* on to the end of the window the clock is in */
			tmin = (ssemu_fabric_now(s->d.fab) / w + 1) * w;
			ret = due_ahead(s, SSEMU_MIN(tmin, end - 1));
			if (ret)
				return ret;
		}
		if (!more) {
			/* all due: on until the waiting ones are posted */
			if (!s->nblk)
				break;
			tmin = UINT64_MAX;
		}
		ret = ssemu_fabric_run_until_watched(s->d.fab, tmin);
		if (ret < 0)
			return ret;
		/* (nothing left to run, and a source still waits for a slot
		 * that no event will free) */
		if (!ret && !more)
			return -EDEADLK;
		progress(s, s->o.messages ? (double)s->drawn / s->o.messages :
					    (double)SSEMU_MIN(tmin, end) /
						    (double)end, false);
		/* Event times are stamped by the model, so draining now and
		 * then loses nothing; every 256 messages, or one in eight
		 * sources' worth on a larger fabric, so that a drain's cost,
		 * which grows with the endpoints owed events, stays small
		 * beside the model's; and when the run stopped at a full ring
		 * (freed_post).  (The messages carry no bytes: a slot is
		 * given back by the engine alone, never by the drain's
		 * release of an event.) */
		if (ret == 1) {
			ret = freed_post(s);
			if (ret)
				return ret;
		}
		if (s->sent - s->drained_at >= SSEMU_MAX(256, s->d.n / 8)) {
			ssemu_drv_drain(&s->d);
			s->drained_at = s->sent;
		}
		if (!more || s->o.group_windows)
			continue;
		/* (the clock may be past the end when the last sources wait
		 * for slots; injections after the end are not due) */
		t = ssemu_fabric_now(s->d.fab);
		if (!s->o.messages && end && t >= end)
			t = end - 1;
		for (ndue = 0; s->nheap && s->heap[0].t <= t;)
			s->due[ndue++] = heap_pop(s);
		qsort(s->due, ndue, sizeof(*s->due), cmp_u64);
		for (k = 0; k < ndue; k++) {
			ret = due_one(s, s->due[k]);
			if (ret)
				return ret;
		}
	}
	return ssemu_drv_finish(&s->d);
}

static int run_pingpong(struct sim *s)
{
	uint64_t iters = s->o.messages ? s->o.messages : 1000, k;
	uint64_t before;
	int ret;

	for (k = 0; k < iters; k++) {
		uint64_t src = k & 1;

		if (!(k & 255))
			progress(s, (double)k / (double)iters, false);
		ret = post(s, src, s->pat->dest(s, src), 0);
		if (ret)
			return ret;
		s->sent++;
		before = s->received;
		/* the reply goes at the model time the message arrives:
		 * one event at a time, not past it */
		while (s->received == before) {
			ret = ssemu_drv_progress(&s->d, 1);
			if (ret < 0)
				return ret;
			if (ret == 0 && s->received == before &&
			    ssemu_fabric_idle(s->d.fab))
				return -EIO;
		}
	}
	return ssemu_drv_finish(&s->d);
}

/* Pattern none: the configuration's modelled jobs alone, for --time. */
static int run_none(struct sim *s)
{
	ssemu_time_t end = (ssemu_time_t)(s->o.time_us * SSEMU_PS_PER_US);
	ssemu_time_t t, step = SSEMU_MAX(end / 100, (ssemu_time_t)1);
	int ret;

	for (t = step;; t += step) {
		ret = ssemu_fabric_run_until(s->d.fab, SSEMU_MIN(t, end));
		if (ret || t >= end)
			return ret;
		progress(s, (double)t / (double)end, false);
	}
}

static const struct sim_pattern sim_patterns[] = {
	{ .name = "uniform", .dest = dest_uniform, .run = run_open_loop },
	{ .name = "permutation", .dest = dest_permutation,
	  .run = run_open_loop },
	{ .name = "incast", .dest = dest_incast, .run = run_open_loop,
	  .first_source = 1, .one_sink = true },
	{ .name = "pingpong", .dest = dest_pingpong, .run = run_pingpong,
	  .endpoints = 2 },
	{ .name = "groups", .dest = dest_groups, .run = run_open_loop },
	{ .name = "alltoall", .dest = dest_alltoall, .run = run_open_loop,
	  .setup = setup_alltoall },
	{ .name = "none", .run = run_none },
};
#define SIM_NONE (ARRAY_SIZE(sim_patterns) - 1)

/* Payload delivered from the first arrival to the last, in Gb/s. */
static double sim_gbps(const struct sim *s, double *span_ns)
{
	double span = (double)(s->last_rx - s->first_rx) / SSEMU_PS_PER_NS;

	if (span_ns)
		*span_ns = span;
	return span > 0 ? (double)(s->rx_bytes - s->first_bytes) * 8.0 / span :
			  0;
}

static void report(struct sim *s)
{
	const struct ssemu_config *c = &s->d.cfg;
	struct ssemu_fabric_stats st;
	struct ssemu_latency sl;
	double span, gbps, mean;
	char note[64];

	ssemu_fabric_stats(s->d.fab, &st);
	ssemu_fabric_switch_latency(s->d.fab, &sl);
	ssemu_samples_sort(&s->lat);
	gbps = sim_gbps(s, &span);

	printf("fabric: preset %s, %u groups x %u switches x %u endpoints "
	       "(+%u global%s), %" PRIu64 " endpoints used\n",
	       c->preset[0] ? c->preset : "(file)",
	       c->topo.groups, c->topo.switches_per_group,
	       c->topo.endpoints_per_switch,
	       c->topo.globals_per_switch,
	       ssemu_cli_links_note(c, note, sizeof(note)), s->d.n);
	printf("traffic: pattern %s, %" PRIu64 " B messages, load %.3f, "
	       "class %s, seed %" PRIu64 "\n",
	       s->pat->name, s->o.size, s->o.load,
	       c->tclass[s->o.tclass].name, c->seed);
	printf("policies: routing %s, congestion control %s, arbitration "
	       "%s\n", c->routing, c->cc, c->arb);
	printf("messages: sent %" PRIu64 ", received %" PRIu64
	       ", failed %" PRIu64 "\n",
	       s->sent, s->received, s->d.failed);
	mean = ssemu_samples_mean(&s->lat);
	printf("latency_ns: mean %.1f p50 %.1f p99 %.1f max %.1f\n", mean,
	       ssemu_samples_pct(&s->lat, 50), ssemu_samples_pct(&s->lat, 99),
	       s->lat.n ? s->lat.v[s->lat.n - 1] : 0.0);
	printf("throughput: %.3f Gb/s delivered over %.3f us "
	       "(%.3f Gb/s per receiving endpoint)\n",
	       gbps, span / 1000.0,
	       s->pat->one_sink ? gbps : gbps / (double)(s->d.n ? s->d.n : 1));
	/* (the histogram's last bin holds every longer hop: ">=") */
	printf("switch_latency_ns: hops %" PRIu64 " mean %.1f p50 %s%.0f "
	       "p99 %s%.0f max %s%.0f\n", sl.count, sl.mean_ns,
	       sl.p50_ns >= SSEMU_SWLAT_MAX_NS ? ">=" : "", sl.p50_ns,
	       sl.p99_ns >= SSEMU_SWLAT_MAX_NS ? ">=" : "", sl.p99_ns,
	       sl.max_ns >= SSEMU_SWLAT_MAX_NS ? ">=" : "", sl.max_ns);
	printf("model: time %.3f us, events %" PRIu64 ", switches modelled %"
	       PRIu64 ", train hops %" PRIu64 "%s\n",
	       (double)st.now / SSEMU_PS_PER_US, st.events,
	       st.switches_instantiated, st.train_hops,
	       c->group_windows ? ", group windows" : "");
	if (c->nmjobs) {
		struct ssemu_mjob_stats mj[SSEMU_CONFIG_MJOBS];
		int nj = ssemu_fabric_mjobs(s->d.fab, mj, SSEMU_CONFIG_MJOBS);

		if (nj > 0)
			ssemu_mjob_print(stdout, c, mj, (uint32_t)nj, st.now);
	}
}

/* Endpoints taking part from which group windows are on unless asked off
 * (benchmarks/README.md): uniform 2 KiB 1.25-1.36x at 32,768 endpoints and
 * 1.4-1.7x on the full system, 1 MiB permutations (whose packet trains the
 * mode gives up) 1.16x at 32,768; at 8,192 uniform 1.06-1.16x but the
 * permutations 0.81x. */
#define SIM_GW_AUTO 32768

/*
 * --group-windows: what the mode needs of the run (ssemu_config's
 * group_windows), then the configuration asks for it.  The traffic comes
 * from open-loop sources, which post each window's messages for their
 * times before the engine runs it (run_open_loop), or from modelled jobs,
 * which post from the engine's own events; not from a ping-pong, whose
 * every message waits for the one before.  The run ends where a window
 * does, and so does every telemetry sample.  @quiet: nothing said of a
 * run that does not allow it (the mode taken by itself where it does).
 */
static int group_windows_check(struct sim *s, bool quiet)
{
	struct ssemu_config *c = &s->d.cfg;
	ssemu_time_t end = (ssemu_time_t)(s->o.time_us * SSEMU_PS_PER_US + 0.5);
	const char *why = NULL;

	if (s->o.pattern == (int)SIM_NONE ? !c->nmjobs :
					     s->pat->run != run_open_loop)
		why = "the traffic must come from open-loop sources (not "
		      "--pattern pingpong) or modelled jobs (a configuration "
		      "that declares them, --pattern none)";
	else if (s->o.messages)
		why = "the run is bounded by --time, not --messages";
	else if (!ssemu_config_group_window(c) ||
		 end % ssemu_config_group_window(c))
		why = "--time must be a whole number of windows (the global "
		      "links' delay, or less where congestion control's "
		      "frames come back sooner)";
	else if (c->tel_interval && c->tel_interval % ssemu_config_group_window(c))
		why = "the telemetry interval must be a whole number of "
		      "windows";
	if (why) {
		if (!quiet)
			fprintf(stderr, "sim: --group-windows: %s\n", why);
		return -EINVAL;
	}
	c->group_windows = 1;
	s->o.group_windows = true;
	return 0;
}

static int sim_setup(struct sim *s)
{
	struct ssemu_config *c = &s->d.cfg;
	uint64_t nports, n, i, j, tmp;
	int ret;

	s->d.tool = "sim";
	s->d.ops = &sim_drv_ops;
	ret = ssemu_drv_config(&s->d, &s->o.fab);
	if (ret)
		return ret;
	/* modelled jobs in the configuration: they run alone (their ports
	 * are not the sim's to take) */
	if (s->o.pattern < 0)
		s->o.pattern = c->nmjobs ? (int)SIM_NONE : 0;
	if (c->nmjobs && s->o.pattern != (int)SIM_NONE) {
		fprintf(stderr, "sim: the configuration declares modelled "
			"jobs: they run alone, with --pattern none\n");
		return -EINVAL;
	}
	s->pat = &sim_patterns[s->o.pattern];
	if (s->o.tel_interval_us >= 0)
		c->tel_interval = (ssemu_time_t)(s->o.tel_interval_us *
						 SSEMU_PS_PER_US + 0.5);
	if (s->o.tclass == UINT32_MAX)
		s->o.tclass = c->default_tclass;
	if (s->o.tclass >= c->ntclass) {
		fprintf(stderr, "sim: --tclass %u: the fabric has %u classes\n",
			s->o.tclass, c->ntclass);
		return -EINVAL;
	}
	nports = ssemu_config_nports(c);
	n = s->o.nendpoints ? s->o.nendpoints : nports;
	if (s->pat->endpoints)
		n = s->pat->endpoints;
	if (s->o.pattern == (int)SIM_NONE)
		n = 0;
	if (n > nports) {
		fprintf(stderr, "sim: --endpoints %" PRIu64 ": the fabric has "
			"%" PRIu64 "\n", n, nports);
		return -EINVAL;
	}
	if (s->o.group_windows && s->o.no_group_windows) {
		fprintf(stderr, "sim: --group-windows or --no-group-windows, not both\n");
		return -EINVAL;
	}
	if (s->o.group_windows) {
		ret = group_windows_check(s, false);
		if (ret)
			return ret;
	} else if (!s->o.no_group_windows) {
		/* (the same results: where the fabric is far larger than the
		 * caches, and the run allows it) */
		for (tmp = n, j = 0; j < c->nmjobs; j++)
			tmp += c->mjobs[j].endpoints;
		if (tmp >= SIM_GW_AUTO)
			(void)group_windows_check(s, true);
	}
	/* (the sources are the first ones after the pattern's receivers:
	 * more than there are asks for what the run cannot make) */
	if (s->o.sources && s->pat->run == run_open_loop &&
	    s->o.sources > n - SSEMU_MIN(s->pat->first_source, n)) {
		fprintf(stderr, "sim: --sources %" PRIu64 ": %" PRIu64
			" endpoints take part, %" PRIu64 " of them can send "
			"with --pattern %s\n", s->o.sources, n,
			n - SSEMU_MIN(s->pat->first_source, n), s->pat->name);
		return -EINVAL;
	}
	ret = ssemu_drv_open(&s->d, n, s->o.size, 256, NULL);
	if (ret)
		return ret;
	s->next = calloc(n, sizeof(*s->next));
	s->heap = calloc(n, sizeof(*s->heap));
	s->due = calloc(n, sizeof(*s->due));
	s->dest = calloc(n, sizeof(*s->dest));
	s->wq_head = malloc(n * sizeof(*s->wq_head));
	s->wq_tail = calloc(n, sizeof(*s->wq_tail));
	s->blk = calloc(n, sizeof(*s->blk));
	if (!s->next || !s->heap || !s->due || !s->dest || !s->wq_head ||
	    !s->wq_tail || !s->blk)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		s->wq_head[i] = WAIT_NONE;
	s->wait_free = WAIT_NONE;
	ssemu_rng_seed(&s->rng, c->seed, 0x51);
	s->prog_last = wall_s();	/* the first line after half a second */
	/* A random derangement for the permutation pattern (drawn for every
	 * pattern, so that each sees the same stream after it). */
	for (i = 0; i < n; i++)
		s->dest[i] = i;
	for (i = n ? n - 1 : 0; i > 0; i--) {
		j = ssemu_rng_below(&s->rng, i);	/* Sattolo: one cycle */
		tmp = s->dest[i];
		s->dest[i] = s->dest[j];
		s->dest[j] = tmp;
	}
	if (s->pat->setup)
		s->pat->setup(s);
	if (s->o.csv) {
		s->csv = fopen(s->o.csv, "w");
		if (!s->csv) {
			fprintf(stderr, "sim: %s: %s\n", s->o.csv,
				strerror(errno));
			return -errno;
		}
		fprintf(s->csv, "src,dst,bytes,post_ps,recv_ps,latency_ns\n");
	}
	return 0;
}

static void sim_teardown(struct sim *s)
{
	if (s->csv)
		fclose(s->csv);
	ssemu_drv_close(&s->d);
	free(s->next);
	free(s->heap);
	free(s->due);
	free(s->dest);
	free(s->wq_head);
	free(s->wq_tail);
	free(s->blk);
	free(s->wait);
	ssemu_samples_free(&s->lat);
}

/* The run's telemetry as a trace file for `slingshot-emu report`. */
static int save_telemetry(struct sim *s)
{
	struct ssemu_telemetry *t;
	char err[512];
	int ret;

	ret = ssemu_telemetry_read(s->d.fab, &t);
	if (ret)
		return ret;
	ret = ssemu_telemetry_save(t, s->o.telemetry, err, sizeof(err));
	if (ret)
		fprintf(stderr, "sim: %s\n", err);
	ssemu_telemetry_free(t);
	return ret;
}

static void usage_sim(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu sim [options]\n"
		"  --preset NAME        fabric preset (default switch):");
	for (const char *const *p = ssemu_config_preset_names(); *p; p++)
		fprintf(f, " %s", *p);
	fprintf(f,
		"\n"
		"  --config FILE        fabric configuration file instead of a preset\n"
		"  --scenario FILE      read options from the file's `# sim:`\n"
		"                       line and use the file as --config\n"
		"  --pattern P          uniform | permutation | incast | pingpong |\n"
		"                       groups (each endpoint to its peer in the\n"
		"                       next group: adversarial) | alltoall\n"
		"                       (each endpoint to every other in turn,\n"
		"                       MPI's pairwise shifts) | none (the\n"
		"                       configuration's modelled jobs alone: the\n"
		"                       default when it declares any; else uniform)\n"
		SSEMU_CLI_POLICY_HELP
		"  --versus-routing R   run the same traffic again with routing R\n"
		"                       and report the throughput ratio\n"
		"  --endpoints N        endpoints taking part (default: all,\n"
		"                       at most 1048576)\n"
		"  --sources N          only the first N of them send, at most\n"
		"                       all (the default; incast: all but the\n"
		"                       target)\n"
		"  --size BYTES         message size (default 2048)\n"
		"  --load F             offered load per source, 0 < F <= 1, as a\n"
		"                       fraction of the injection rate (default 0.5);\n"
		"                       a source out of message slots keeps its\n"
		"                       messages, in order, until slots free\n"
		"  --time US            model microseconds of traffic (default 100)\n"
		"  --messages N         stop after N messages instead\n"
		"  --tclass N           traffic class index (default: the fabric's)\n"
		"  --seed N             random seed (default: the fabric's)\n"
		"  --csv FILE           per-message records: src,dst,bytes,post_ps,\n"
		"                       recv_ps,latency_ns\n"
		"  --telemetry FILE     save the run's telemetry as a trace for\n"
		"                       `slingshot-emu report FILE`\n"
		"  --telemetry-interval US\n"
		"                       sample period of the time series (default:\n"
		"                       the fabric's, 10 us in the presets; 0: none)\n"
		"  --progress           model time reached on stderr as it runs\n"
		"                       (the default when stderr is a terminal)\n"
		"  --speed              also report what the simulation cost: CPU\n"
		"                       and wall seconds of the set-up and of the\n"
		"                       run, packet-hops per CPU second of the\n"
		"                       run, the peak resident memory, the run's\n"
		"                       system CPU and page faults\n"
		"  --group-windows      run the model's events a window (a global\n"
		"                       link's delay, or less) at a time, each\n"
		"                       window a Dragonfly group after another (the\n"
		"                       same results; faster on fabrics far larger\n"
		"                       than the caches): open-loop sources or\n"
		"                       modelled jobs, --time and the telemetry\n"
		"                       interval whole numbers of windows; on by\n"
		"                       itself where 32,768 endpoints or more take\n"
		"                       part and the run allows it\n"
		"  --no-group-windows   the engine's usual order in any case\n");
}

static int parse_sim(int argc, char **argv, struct sim_opts *o)
{
	const struct ssemu_cli_opt opts[] = {
		SSEMU_CLI_OPT_NAME("pattern", &o->pattern, sim_patterns,
				   "pattern"),
		SSEMU_CLI_OPT_U64("endpoints", &o->nendpoints, 2,
				  SSEMU_DRV_MAX_ENDPOINTS),
		SSEMU_CLI_OPT_U64("size", &o->size, 0, 1u << 24),
		SSEMU_CLI_OPT_DOUBLE("load", &o->load, 1e-6, 1.0),
		SSEMU_CLI_OPT_DOUBLE("time", &o->time_us, 0.001, 1e9),
		SSEMU_CLI_OPT_U64("messages", &o->messages, 1, 1ULL << 40),
		SSEMU_CLI_OPT_U32("tclass", &o->tclass, 0,
				  SSEMU_MAX_TCLASS - 1),
		SSEMU_CLI_OPT_STR("csv", &o->csv),
		SSEMU_CLI_OPT_STR("telemetry", &o->telemetry),
		SSEMU_CLI_OPT_DOUBLE("telemetry-interval", &o->tel_interval_us,
				     0, 1e6),
		SSEMU_CLI_OPT_FLAG("progress", &o->progress),
		SSEMU_CLI_OPT_FLAG("speed", &o->speed),
		SSEMU_CLI_OPT_FLAG("group-windows", &o->group_windows),
		SSEMU_CLI_OPT_FLAG("no-group-windows", &o->no_group_windows),
		SSEMU_CLI_OPT_STR("versus-routing", &o->versus),
		SSEMU_CLI_OPT_U64("sources", &o->sources, 1, SSEMU_MAX_PORTS),
		{ 0 },
	};
	const struct ssemu_cli_cmd cmd = {
		.tool = "sim", .fab = &o->fab, .opts = opts,
		.usage = usage_sim, .line = o->line,
		.line_len = sizeof(o->line),
	};

	memset(o, 0, sizeof(*o));
	o->fab.preset = "switch";
	o->pattern = -1;	/* uniform, or none with modelled jobs */
	o->size = 2048;
	o->load = 0.5;
	o->time_us = 100;
	o->tclass = UINT32_MAX;
	o->tel_interval_us = -1;
	o->progress = isatty(STDERR_FILENO);
	return ssemu_cli_parse(&cmd, argc, argv);
}

/* The process's clocks at one moment: wall and CPU (user and system)
 * seconds, the system's part of the CPU seconds, and the page faults so
 * far (first touches of memory: the kernel's time, in the system's
 * part). */
struct sim_clock {
	double wall, cpu, sys;
	long faults;
};

static struct sim_clock sim_clock(void)
{
	struct timespec ts;
	struct rusage ru;
	struct sim_clock c = { 0, 0, 0, 0 };

	if (!clock_gettime(CLOCK_MONOTONIC, &ts))
		c.wall = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
	if (!getrusage(RUSAGE_SELF, &ru)) {
		c.sys = (double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec * 1e-6;
		c.cpu = (double)ru.ru_utime.tv_sec +
			(double)ru.ru_utime.tv_usec * 1e-6 + c.sys;
		c.faults = ru.ru_minflt + ru.ru_majflt;
	}
	return c;
}

/*
 * --speed: what the simulation cost, the set-up (the fabric's store, every
 * endpoint attached, the traffic's state) apart from the run (the
 * traffic's generation and the model), as a simulator's user compares
 * runs and simulators: packet-hops per CPU second of the run.
 */
static void report_speed(struct sim *s, struct sim_clock t0,
			 struct sim_clock t1, struct sim_clock t2)
{
	double run_cpu = t2.cpu - t1.cpu, run_wall = t2.wall - t1.wall;
	struct ssemu_fabric_stats st;
	struct rusage ru;
	long rss_kib = 0;

	ssemu_fabric_stats(s->d.fab, &st);
	if (!getrusage(RUSAGE_SELF, &ru))
		rss_kib = ru.ru_maxrss;
	printf("speed: setup %.2f s CPU, %.2f s wall; run %.2f s CPU, %.2f s "
	       "wall; %" PRIu64 " packet-hops, %.0f a CPU second (%.0f a "
	       "wall second); peak RSS %ld MiB; in the run, system CPU %.2f s "
	       "and %ld page faults\n",
	       t1.cpu - t0.cpu, t1.wall - t0.wall, run_cpu, run_wall,
	       st.pkt_hops, (double)st.pkt_hops / SSEMU_MAX(run_cpu, 1e-6),
	       (double)st.pkt_hops / SSEMU_MAX(run_wall, 1e-6),
	       rss_kib / 1024, t2.sys - t1.sys, t2.faults - t1.faults);
}

/* One run of @o: its report printed if @print; its throughput in @gbps. */
static int sim_once(const struct sim_opts *o, bool print, double *gbps)
{
	struct sim_clock t0, t1, t2;
	struct sim s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.o = *o;
	t0 = sim_clock();
	ret = sim_setup(&s);
	if (!ret) {
		t1 = sim_clock();
		ret = s.pat->run(&s);
		t2 = sim_clock();
		progress(&s, 1, true);
		if (!ret && s.o.telemetry)
			ret = save_telemetry(&s);
		if (ret) {
			fprintf(stderr, "sim: the run failed: %s\n",
				strerror(-ret));
		} else if (print) {
			report(&s);
			if (s.o.speed)
				report_speed(&s, t0, t1, t2);
		}
		*gbps = sim_gbps(&s, NULL);
	}
	sim_teardown(&s);
	return ret;
}

int ssemu_cmd_sim(int argc, char **argv)
{
	struct sim_opts o, ov;
	double g1 = 0, g2 = 0;
	int ret;

	ret = parse_sim(argc, argv, &o);
	if (ret != SSEMU_CLI_RUN)
		return ret;
	if (o.versus) {
		struct ssemu_config c;
		char err[256];

		ssemu_config_preset("switch", &c);
		snprintf(c.routing, sizeof(c.routing), "%s", o.versus);
		if (ssemu_config_validate(&c, err, sizeof(err))) {
			fprintf(stderr, "sim: --versus-routing: %s\n", err);
			return 2;
		}
	}
	ret = sim_once(&o, true, &g1);
	if (!ret && o.versus) {
		ov = o;
		ov.fab.routing = o.versus;
		ov.csv = NULL;
		ov.telemetry = NULL;
		ret = sim_once(&ov, false, &g2);
		if (!ret) {
			printf("versus: routing %s, throughput %.3f Gb/s\n",
			       o.versus, g2);
			printf("throughput_ratio: %.3f\n", g2 > 0 ? g1 / g2 : 0);
		}
	}
	return ret ? 1 : 0;
}
