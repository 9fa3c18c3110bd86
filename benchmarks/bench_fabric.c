/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric benchmarks, each measured against a baseline in the same run:
 *
 *  model    uniform random traffic at a given load on a preset (default
 *           "shandy", 1024 endpoints, 50% load): wall-clock packet-hops/s
 *           and model events/s on one core, against the bare engine's
 *           events/s (schedule + pop at the same pending depth).
 *  latency  one-way 8-byte message latency between two processes through
 *           one emulated switch on a shared fabric (virtual clock), against
 *           a plain shared-memory SPSC ring ping-pong between two processes;
 *           also reports the store bytes each attached NIC costs.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_compiler.h"
#include "ssemu_engine.h"
#include "ssemu_ring.h"
#include <slingshot_emu/ssemu_rng.h>

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's CPU time: steadier than the wall clock on a shared box. */
static double cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "bench_fabric: %s: %s\n", what, strerror(-ret));
	exit(1);
}

/* ------------------------------------------------------------------ */
/* model throughput                                                     */
/* ------------------------------------------------------------------ */

static double bare_engine_rate(uint32_t pending, uint64_t ops)
{
	size_t bytes = ssemu_engine_bytes(pending + 16);
	struct ssemu_engine *e = malloc(bytes);
	struct ssemu_rng rng;
	struct ssemu_fired f;
	double t0, t1;
	uint64_t i;

	if (!e)
		die("malloc", -ENOMEM);
	ssemu_engine_init(e, pending + 16);
	ssemu_rng_seed(&rng, 7, 0);
	for (i = 0; i < pending; i++)
		ssemu_engine_schedule(e, ssemu_rng_below(&rng, 1000000), 1, 0,
				      0, 0, NULL);
	t0 = wall();
	for (i = 0; i < ops; i++) {
		ssemu_engine_pop(e, UINT64_MAX, &f);
		ssemu_engine_schedule(e, f.time + 1 +
					      ssemu_rng_below(&rng, 1000000),
				      1, 0, 0, 0, NULL);
	}
	t1 = wall();
	free(e);
	return (double)ops / (t1 - t0);
}

/* Take every endpoint's events; release and count what arrived. */
static uint64_t drain_all(struct ssemu_ep **eps, uint64_t n)
{
	struct ssemu_event ev[64];
	uint64_t i, got = 0;
	int k, m;

	for (i = 0; i < n; i++)
		while ((m = ssemu_ep_poll(eps[i], ev, 64)) > 0)
			for (k = 0; k < m; k++)
				if (ev[k].type == SSEMU_EV_RECV) {
					got++;
					ssemu_event_release(eps[i], &ev[k]);
				}
	return got;
}

/* The benchmark's own clock: endpoints by their next send time (then
 * index), a binary heap, so a step costs the harness O(log n), not O(n). */
static bool due_before(const ssemu_time_t *next, uint64_t a, uint64_t b)
{
	return next[a] < next[b] || (next[a] == next[b] && a < b);
}

static void heap_push(uint64_t *h, uint64_t *nh, const ssemu_time_t *next,
		      uint64_t v)
{
	uint64_t i = (*nh)++;

	while (i && due_before(next, v, h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, uint64_t *nh, const ssemu_time_t *next)
{
	uint64_t top = h[0], v = h[--(*nh)], i = 0, c;

	while ((c = 2 * i + 1) < *nh) {
		if (c + 1 < *nh && due_before(next, h[c + 1], h[c]))
			c++;
		if (!due_before(next, h[c], v))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
	return top;
}

/* Few are due at a time: an insertion sort beats qsort's set-up. */
static void sort_u64(uint64_t *v, uint64_t n)
{
	uint64_t i, j, x;

	for (i = 1; i < n; i++) {
		x = v[i];
		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static int bench_model(const char *preset, double load, double warm_us,
		       double time_us, uint32_t size)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric_stats st, st0;
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic **nics;
	struct ssemu_ep **eps;
	struct ssemu_rng rng;
	ssemu_time_t *next, warm_end, end, tmin, t, span;
	double mean_gap, t0, t1, c0, c1, erate, hops_s, ev_s;
	char err[256];
	uint64_t n, i, k, sent = 0, recvd = 0, drained = 0, hops, events;
	uint64_t sent0 = 0;
	bool timing = false;
	uint64_t *heap, *due, nheap = 0, ndue;
	void *payload;
	int ret;

	if (ssemu_config_preset(preset, &cfg)) {
		fprintf(stderr, "bench_fabric: unknown preset %s\n", preset);
		return 1;
	}
	n = ssemu_config_nports(&cfg);
	cfg.max_nics = (uint32_t)n;
	cfg.eps_per_nic = 1;
	cfg.max_eps = (uint32_t)n;	/* one endpoint per NIC */
	cfg.msgs_per_ep = 64;
	cfg.bufs_per_ep = size > SSEMU_INLINE_MAX ? 64 : 0;
	cfg.max_switches = cfg.topo.groups * cfg.topo.switches_per_group;
	cfg.max_pkts = (uint32_t)(n * 256 + 4096);
	cfg.max_events = cfg.max_pkts * 4;
	fo.config = &cfg;
	ret = ssemu_fabric_open(&fo, &fab, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bench_fabric: %s\n", err);
		return 1;
	}
	nics = calloc(n, sizeof(*nics));
	eps = calloc(n, sizeof(*eps));
	next = calloc(n, sizeof(*next));
	heap = calloc(n, sizeof(*heap));
	due = calloc(n, sizeof(*due));
	payload = calloc(1, size + 1);
	if (!nics || !eps || !next || !heap || !due || !payload)
		die("calloc", -ENOMEM);
	for (i = 0; i < n; i++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)i, .rank = -1 };

		ret = ssemu_nic_attach(fab, &no, &nics[i]);
		if (!ret)
			ret = ssemu_ep_open(nics[i], &eps[i]);
		if (ret)
			die("attach", ret);
	}
	ssemu_rng_seed(&rng, 1, 2);
	mean_gap = ((double)size + cfg.pkt_overhead *
					   ceil((double)size / cfg.mtu)) *
		   8e12 / (double)cfg.edge.rate_bps / load;
	for (i = 0; i < n; i++)
		next[i] = (ssemu_time_t)(-log(1 - ssemu_rng_double(&rng)) *
					 mean_gap);
	warm_end = (ssemu_time_t)(warm_us * SSEMU_PS_PER_US);
	end = warm_end + (ssemu_time_t)(time_us * SSEMU_PS_PER_US);

	for (i = 0; i < n; i++)
		heap_push(heap, &nheap, next, i);

	memset(&st0, 0, sizeof(st0));
	t0 = wall();
	c0 = cpu();
	for (;;) {
		tmin = next[heap[0]];
		if (tmin >= end)
			break;
		/* the warm-up is not timed: switches are instantiated and
		 * memory first touched on first use, and the fabric fills */
		if (!timing && tmin >= warm_end) {
			ssemu_fabric_stats(fab, &st0);
			sent0 = sent;
			t0 = wall();
			c0 = cpu();
			timing = true;
		}
		ssemu_fabric_run_until(fab, tmin);
		t = ssemu_fabric_now(fab);
		/* the endpoints due by t, in index order (as a scan of all
		 * of them would take them: the same draws, the same traffic)
		 * without a scan of all of them per step */
		for (ndue = 0; nheap && next[heap[0]] <= t;)
			due[ndue++] = heap_pop(heap, &nheap, next);
		sort_u64(due, ndue);
		for (k = 0; k < ndue; k++) {
			struct iovec iov = { payload, size };
			struct ssemu_send s = { .tclass = cfg.default_tclass,
						.iov = &iov,
						.iov_count = 1 };
			uint64_t d;

			i = due[k];
			d = ssemu_rng_below(&rng, n - 1);
			s.dest = ssemu_ep_addr(eps[d >= i ? d + 1 : d]);
			/* out of slots: let 100 ns of model time go by (not a
			 * number of events: the traffic offered must not
			 * depend on how many events the model takes) */
			while ((ret = ssemu_ep_send(eps[i], &s)) == -EAGAIN) {
				ssemu_fabric_run_until(fab, ssemu_fabric_now(fab) +
							    SSEMU_PS_PER_US / 10);
				recvd += drain_all(eps, n);
			}
			if (ret)
				die("send", ret);
			sent++;
			next[i] = t + 1 + (ssemu_time_t)(-log(1 - ssemu_rng_double(&rng)) *
							  mean_gap);
			heap_push(heap, &nheap, next, i);
		}
		if (sent - drained >= 512) {
			recvd += drain_all(eps, n);
			drained = sent;
		}
	}
	while (!ssemu_fabric_idle(fab)) {
		ssemu_fabric_progress(fab, 1 << 20);
		recvd += drain_all(eps, n);
	}
	recvd += drain_all(eps, n);
	t1 = wall();
	c1 = cpu();
	ssemu_fabric_stats(fab, &st);
	hops = st.pkt_hops - st0.pkt_hops;
	events = st.events - st0.events;
	hops_s = (double)hops / (t1 - t0);
	ev_s = (double)events / (t1 - t0);
	erate = bare_engine_rate(65536, events);

	printf("model: preset %s, %" PRIu64 " endpoints, uniform, load %.2f, "
	       "%u B messages, %.1f us of model time (%.1f us of it warm-up, "
	       "not timed)\n",
	       preset, n, load, size, (double)st.now / SSEMU_PS_PER_US,
	       timing ? (double)st0.now / SSEMU_PS_PER_US : 0.0);
	printf("  messages %" PRIu64 " sent, %" PRIu64 " received; timed: "
	       "packet-hops %" PRIu64 ", events %" PRIu64 ", wall %.3f s\n",
	       sent, recvd, hops, events, t1 - t0);
	/* what the sources got in: more than the fabric carries backs up
	 * into them (-EAGAIN: the bounded buffers of a real NIC) */
	span = end - SSEMU_MIN(end, st0.now);
	if (span)
		printf("  offered load %.2f, sent %.2f of the injection "
		       "bandwidth while timed\n", load,
		       (double)(sent - sent0) *
			       ((double)size + cfg.pkt_overhead *
						       ceil((double)size /
							    cfg.mtu)) *
			       8e12 /
			       ((double)cfg.edge.rate_bps * (double)n *
				(double)span));
	else
		printf("  offered load %.2f (the fabric ran past the end "
		       "during the warm-up: no sent load to report)\n",
		       load);
	printf("  %-32s %14s\n", "measure", "per second");
	printf("  %-32s %14.0f\n", "packet-hops (model)", hops_s);
	printf("  %-32s %14.0f\n", "events (model)", ev_s);
	printf("  %-32s %14.0f\n", "events (bare engine baseline)", erate);
	printf("  ratio model events / bare engine events: %.3f\n",
	       ev_s / erate);
	printf("  events per packet-hop %.2f; packet-hops per CPU second "
	       "%.0f (cpu %.3f s)\n",
	       (double)events / (double)SSEMU_MAX(hops, 1),
	       (double)hops / (c1 - c0), c1 - c0);
	for (i = 0; i < n; i++) {
		ssemu_ep_close(eps[i]);
		ssemu_nic_detach(nics[i]);
	}
	ssemu_fabric_close(fab);
	free(nics);
	free(eps);
	free(next);
	free(heap);
	free(due);
	free(payload);
	return recvd == sent ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* two-process latency                                                  */
/* ------------------------------------------------------------------ */

struct shm_pair {
	struct ssemu_ring *ab, *ba;
	void *mem;
	size_t bytes;
};

static void pair_make(struct shm_pair *p)
{
	size_t rb = SSEMU_ALIGN_UP(ssemu_ring_bytes(64, 8), 64);

	p->bytes = 2 * rb;
	p->mem = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->mem == MAP_FAILED)
		die("mmap", -errno);
	p->ab = p->mem;
	p->ba = (struct ssemu_ring *)((char *)p->mem + rb);
	ssemu_ring_init(p->ab, 64, 8);
	ssemu_ring_init(p->ba, 64, 8);
}

/* Baseline: the round trip of an 8-byte value through two SPSC rings. */
static double ring_oneway_ns(uint64_t iters)
{
	struct shm_pair p;
	uint64_t v, i;
	double t0, t1;
	pid_t child;
	int st;

	pair_make(&p);
	child = fork();
	if (child == 0) {
		for (i = 0; i < iters; i++) {
			while (ssemu_ring_pop(p.ab, &v))
				ssemu_cpu_relax();
			while (ssemu_ring_push(p.ba, &v))
				ssemu_cpu_relax();
		}
		_exit(0);
	}
	t0 = wall();
	for (i = 0; i < iters; i++) {
		v = i;
		while (ssemu_ring_push(p.ab, &v))
			ssemu_cpu_relax();
		while (ssemu_ring_pop(p.ba, &v))
			ssemu_cpu_relax();
		if (v != i)
			die("ring baseline data", -EIO);
	}
	t1 = wall();
	waitpid(child, &st, 0);
	munmap(p.mem, p.bytes);
	return (t1 - t0) / (double)iters / 2 * 1e9;
}

/* One side of the fabric ping-pong; returns 0 on success. */
static int fabric_side(const char *name, bool first, uint64_t iters,
		       double *oneway_ns, double *model_ns)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM, .name = name };
	struct ssemu_nic_opts no = { .rank = -1 };
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	struct ssemu_event ev;
	ssemu_time_t msum = 0;
	uint64_t i, val = 0;
	char err[256];
	double t0, t1;
	int ret;

	no.port = first ? 0 : 1;
	ret = ssemu_fabric_open(&fo, &fab, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bench_fabric: %s\n", err);
		return ret;
	}
	ret = ssemu_nic_attach(fab, &no, &nic);
	if (!ret)
		ret = ssemu_ep_open(nic, &ep);
	if (ret)
		return ret;
	/* Rendezvous: wait until the peer's NIC is there. */
	for (i = 0; i < 10000000; i++) {
		struct ssemu_nic_info info[4];

		if (ssemu_fabric_nics(fab, info, 4) >= 2)
			break;
		usleep(100);
	}
	t0 = wall();
	for (i = 0; i < iters; i++) {
		struct iovec iov = { &val, sizeof(val) };
		struct ssemu_send s = {
			.dest = SSEMU_ADDR(first ? 1 : 0, 0),
			.iov = &iov,
			.iov_count = 1,
		};
		bool got = false;

		if (first) {
			val = i;
			while ((ret = ssemu_ep_send(ep, &s)) == -EAGAIN)
				ssemu_fabric_progress(fab, 256);
			if (ret)
				return ret;
		}
		while (!got) {
			ssemu_fabric_progress(fab, 256);
			while (ssemu_ep_poll(ep, &ev, 1) == 1) {
				if (ev.type != SSEMU_EV_RECV)
					continue;
				ssemu_event_copy(ep, &ev, 0, &val, sizeof(val));
				if (first)
					msum += ev.time - ev.posted;
				ssemu_event_release(ep, &ev);
				got = true;
			}
		}
		if (!first) {
			while ((ret = ssemu_ep_send(ep, &s)) == -EAGAIN)
				ssemu_fabric_progress(fab, 256);
			if (ret)
				return ret;
		} else if (val != i) {
			return -EIO;
		}
	}
	t1 = wall();
	/* Let the last acknowledgements drain before leaving. */
	for (i = 0; i < 1000; i++)
		ssemu_fabric_progress(fab, 256);
	if (oneway_ns)
		*oneway_ns = (t1 - t0) / (double)iters / 2 * 1e9;
	if (model_ns)
		*model_ns = (double)msum / (double)iters / SSEMU_PS_PER_NS;
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(fab);
	return 0;
}

/* Take @ep's events until a RECV came; release it. */
static void local_recv(struct ssemu_fabric *fab, struct ssemu_ep *ep)
{
	struct ssemu_event ev[8];
	bool got = false;
	int i, n;

	while (!got) {
		ssemu_fabric_progress(fab, 256);
		n = ssemu_ep_poll(ep, ev, 8);
		for (i = 0; i < n; i++) {
			if (ev[i].type != SSEMU_EV_RECV)
				continue;
			ssemu_event_release(ep, &ev[i]);
			got = true;
		}
	}
}

/*
 * The floor: the same ping-pong through the same model, both endpoints in
 * this one process (a private store), so nothing crosses between cores:
 * what the model and the API cost per message on their own.
 */
static double local_oneway_ns(uint64_t iters)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_nic_opts no[2] = { { .port = 0, .rank = -1 },
					{ .port = 1, .rank = -1 } };
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct ssemu_event ev[8];
	uint64_t i, val = 0;
	double t0, t1;
	int k, ret;

	ret = ssemu_fabric_open(&fo, &fab, NULL, 0);
	if (ret)
		die("private fabric", ret);
	for (k = 0; k < 2; k++) {
		ret = ssemu_nic_attach(fab, &no[k], &nic[k]);
		if (!ret)
			ret = ssemu_ep_open(nic[k], &ep[k]);
		if (ret)
			die("private fabric endpoint", ret);
	}
	t0 = wall();
	for (i = 0; i < 2 * iters; i++) {
		struct iovec iov = { &val, sizeof(val) };
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(ep[(i + 1) % 2]),
			.iov = &iov,
			.iov_count = 1,
		};

		val = i;
		while ((ret = ssemu_ep_send(ep[i % 2], &s)) == -EAGAIN)
			ssemu_fabric_progress(fab, 256);
		if (ret)
			die("send", ret);
		local_recv(fab, ep[(i + 1) % 2]);
		/* the sender's SEND_DONE */
		while (ssemu_ep_poll(ep[i % 2], ev, 8) > 0)
			;
	}
	t1 = wall();
	ssemu_fabric_close(fab);
	return (t1 - t0) / (double)(2 * iters) * 1e9;
}

static size_t nic_store_bytes(void)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric_info a, b;
	struct ssemu_config cfg;
	struct ssemu_fabric *f;

	ssemu_config_preset("switch", &cfg);
	fo.config = &cfg;
	cfg.max_nics = 1;
	if (ssemu_fabric_open(&fo, &f, NULL, 0))
		return 0;
	ssemu_fabric_info(f, &a);
	ssemu_fabric_close(f);
	cfg.max_nics = 2;
	if (ssemu_fabric_open(&fo, &f, NULL, 0))
		return 0;
	ssemu_fabric_info(f, &b);
	ssemu_fabric_close(f);
	return b.size - a.size;
}

static int bench_latency(uint64_t iters)
{
	char name[64];
	double base, fab, model, local;
	pid_t child;
	int st, ret;

	snprintf(name, sizeof(name), "ssemu-bench-%d", (int)getpid());
	base = ring_oneway_ns(iters);
	local = local_oneway_ns(iters);
	child = fork();
	if (child == 0)
		_exit(fabric_side(name, false, iters, NULL, NULL) ? 1 : 0);
	ret = fabric_side(name, true, iters, &fab, &model);
	waitpid(child, &st, 0);
	if (ret || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "bench_fabric: latency run failed (%d)\n", ret);
		return 1;
	}
	printf("latency: 8-byte one-way, two processes, one switch, virtual "
	       "clock, %" PRIu64 " round trips\n", iters);
	printf("  %-36s %12s\n", "path", "one-way ns");
	printf("  %-36s %12.0f\n", "plain shm SPSC ring (baseline)", base);
	printf("  %-36s %12.0f\n", "slingshot-emu shared fabric", fab);
	printf("  %-36s %12.0f\n", "same model, one process (floor)", local);
	printf("  ratio fabric / baseline: %.2f (goal <= 2)\n", fab / base);
	printf("  ratio floor / baseline: %.2f (the model's own cost per "
	       "message)\n", local / base);
	printf("  modelled one-way latency: %.1f ns\n", model);
	printf("  store per attached NIC: %zu bytes (reserved; touched on "
	       "use)\n", nic_store_bytes());
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_fabric [model|latency|all] [--preset P] "
		   "[--load F] [--warmup US] [--time US] [--size B] "
		   "[--iters N]\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "preset", required_argument, NULL, 'p' },
		{ "load", required_argument, NULL, 'l' },
		{ "time", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *preset = "shandy", *what = "all";
	double load = 0.5, time_us = 20, warm_us = 5;
	uint32_t size = 2048;
	uint64_t iters = 20000;
	int c, ret = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			preset = optarg;
			break;
		case 'l':
			load = atof(optarg);
			break;
		case 't':
			time_us = atof(optarg);
			break;
		case 'w':
			warm_us = atof(optarg);
			break;
		case 's':
			size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			iters = strtoull(optarg, NULL, 0);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		what = argv[optind];
	if (load <= 0 || load > 1 || time_us <= 0 || warm_us < 0 || !iters ||
	    size > 65536) {
		fprintf(stderr, "bench_fabric: bad option value\n");
		return 2;
	}
	if (!strcmp(what, "model") || !strcmp(what, "all"))
		ret |= bench_model(preset, load, warm_us, time_us, size);
	if (!strcmp(what, "latency") || !strcmp(what, "all"))
		ret |= bench_latency(iters);
	return ret;
}
