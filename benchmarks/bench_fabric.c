/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric benchmarks, each measured against a baseline in the same run:
 *
 *  model    uniform random traffic at a given load on a preset (default
 *           "shandy", 1024 endpoints, 50% load) with a given routing:
 *           packet-hops per CPU second and per wall second, events per
 *           hop, peak RSS, then, apart, the bare engine's events/s
 *           (schedule + pop at the model's mean pending depth); with
 *           --callgrind, instructions per hop from a smaller rerun under
 *           callgrind.  --message BYTES: one message across the fabric,
 *           nothing else in flight: its events and delivery time.
 *  latency  one-way 8-byte message latency between two processes through
 *           one emulated switch on a shared fabric (virtual clock), against
 *           a plain shared-memory SPSC ring ping-pong between two processes;
 *           the floor (both endpoints in one process), warm and with the
 *           caches evicted before each message; also the store bytes each
 *           attached NIC costs.
 *  pages    the shared fabric's 4 KiB pages that 8-byte messages touch
 *           (two endpoints of one process ping-ponging through one switch,
 *           after a warm-up), by section: on small pages each is a TLB
 *           entry an engine run needs, and after a context switch on a
 *           CPU without PCID a miss each.  Counted, not timed: every page
 *           is made inaccessible and counted at its first fault.
 *  lines    the cache lines an 8-byte message moves between the two
 *           processes of a ping-pong on a shared fabric, by section: the
 *           ping-pong in one process under valgrind's lackey, each access
 *           given to the process that makes it, through a model of two
 *           caches; and the distinct lines a message touches.  Counted,
 *           not timed.
 *  switched the floor's 8-byte message after a context switch: N processes
 *           on one CPU, each with its own private fabric and pair, each
 *           yielding the CPU before each message, against the same
 *           yields without the messages; and the floor with no switch.
 *           What a message pays for the address translations and cache
 *           lines another process's turn on the CPU leaves it (what an
 *           oversubscribed job pays a message).
 *
 * Every figure is one "key value" line (benchmarks/README.md lists them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_compiler.h"
#include "ssemu_engine.h"
#include "ssemu_priv.h"
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
/* options and output                                                   */
/* ------------------------------------------------------------------ */

#define BENCH_MAX_MESSAGE (16u << 20)	/* the store's largest buffer */

struct bench_opts {
	const char *preset, *routing;
	double load, warm_us, time_us;
	uint32_t size;
	uint64_t message;	/* model --message: one message, these bytes */
	bool read;		/* --read: an RMA read of them instead */
	bool no_trains;		/* --no-trains: every packet its events */
	int64_t dst;		/* its destination port (-1: the last) */
	uint64_t engine_pending;	/* baseline depth (0: the model's) */
	bool baseline;		/* run the bare engine baseline */
	bool callgrind;		/* and rerun under callgrind */
	double cg_time_us;	/* model time of the callgrind run */
	uint64_t iters;
	uint64_t messages;	/* pages: the messages traced (0: 1) */
	uint64_t evict_mib;	/* latency: the cold floor's walk (0: none) */
	bool evict_set;		/* (given on the command line) */
	const char *timeline;	/* latency: SSEMU_TIMELINE for its pair */
	uint64_t procs;		/* switched: processes on the CPU */
	bool procs_set;		/* (given on the command line) */
};

static const char *const routings[] = {
	"minimal", "adaptive", "ugal", "adaptive-nb", NULL,
};

/* One figure a line, "key value": awk '$1 == "key" { print $2 }'. */
static void kv_u64(const char *key, uint64_t v)
{
	printf("%s %" PRIu64 "\n", key, v);
}

static void kv_f(const char *key, double v, int prec)
{
	printf("%s %.*f\n", key, prec, v);
}

static void kv_s(const char *key, const char *v)
{
	printf("%s %s\n", key, v);
}

/* Peak resident set of this process so far, KiB. */
static uint64_t rss_peak_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)ru.ru_maxrss;
}

/* ------------------------------------------------------------------ */
/* the bare engine baseline                                             */
/* ------------------------------------------------------------------ */

struct engine_rate {
	double per_wall_s, per_cpu_s;
};

/* Schedule one, pop one, @ops times, with @pending events pending. */
static struct engine_rate bare_engine_rate(uint32_t pending, uint64_t ops)
{
	size_t bytes = ssemu_engine_bytes(pending + 16);
	struct ssemu_engine *e = malloc(bytes);
	struct engine_rate rate;
	struct ssemu_rng rng;
	struct ssemu_fired f;
	double t0, t1, c0, c1;
	uint64_t i;

	if (!e)
		die("malloc", -ENOMEM);
	ssemu_engine_init(e, pending + 16);
	ssemu_rng_seed(&rng, 7, 0);
	for (i = 0; i < pending; i++)
		ssemu_engine_schedule(e, ssemu_rng_below(&rng, 1000000), 1, 0,
				      0, 0, NULL);
	t0 = wall();
	c0 = cpu();
	for (i = 0; i < ops; i++) {
		ssemu_engine_pop(e, UINT64_MAX, &f);
		ssemu_engine_schedule(e, f.time + 1 +
					      ssemu_rng_below(&rng, 1000000),
				      1, 0, 0, 0, NULL);
	}
	t1 = wall();
	c1 = cpu();
	free(e);
	rate.per_wall_s = (double)ops / (t1 - t0);
	rate.per_cpu_s = (double)ops / SSEMU_MAX(c1 - c0, 1e-9);
	return rate;
}

/* ------------------------------------------------------------------ */
/* model throughput                                                     */
/* ------------------------------------------------------------------ */

/* Take endpoint @ep's events; release and count what arrived. */
static uint64_t drain_ep(struct ssemu_ep *ep)
{
	struct ssemu_event ev[64];
	uint64_t got = 0;
	int k, m;

	while ((m = ssemu_ep_poll(ep, ev, 64)) > 0)
		for (k = 0; k < m; k++)
			if (ev[k].type == SSEMU_EV_RECV) {
				got++;
				ssemu_event_release(ep, &ev[k]);
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

/* A preset's configuration with @o's routing, sized for @nics NICs of one
 * endpoint, each with @msgs message slots and @bufs buffers of @buf_bytes. */
static int model_config(const struct bench_opts *o, struct ssemu_config *cfg,
			uint32_t nics, uint32_t msgs, uint32_t bufs,
			uint64_t buf_bytes, uint64_t pkts)
{
	if (ssemu_config_preset(o->preset, cfg)) {
		fprintf(stderr, "bench_fabric: unknown preset '%s'\n",
			o->preset);
		return -EINVAL;
	}
	if (o->routing)
		snprintf(cfg->routing, sizeof(cfg->routing), "%s", o->routing);
	cfg->max_nics = nics;
	cfg->eps_per_nic = 1;
	cfg->max_eps = nics;	/* one endpoint per NIC */
	cfg->msgs_per_ep = msgs;
	cfg->bufs_per_ep = bufs;
	if (buf_bytes > cfg->buf_size)
		cfg->buf_size = (uint32_t)buf_bytes;
	cfg->max_switches = cfg->topo.groups * cfg->topo.switches_per_group;
	cfg->max_pkts = (uint32_t)SSEMU_MIN(pkts, 1u << 24);
	cfg->max_events = cfg->max_pkts < (1u << 22) ? cfg->max_pkts * 4 :
						      1u << 24;
	return 0;
}

static struct ssemu_fabric *fabric_open(struct ssemu_config *cfg)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE,
					.config = cfg };
	struct ssemu_fabric *fab;
	char err[256];

	if (ssemu_fabric_open(&fo, &fab, err, sizeof(err))) {
		fprintf(stderr, "bench_fabric: %s\n", err);
		return NULL;
	}
	return fab;
}

/* The model run: uniform random traffic, each endpoint's next send drawn
 * from an exponential gap that offers the load asked for. */
struct model {
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic **nics;
	struct ssemu_ep **eps;
	struct ssemu_rng rng;
	ssemu_time_t *next;
	uint64_t *heap, *due, nheap;
	uint32_t size;
	double mean_gap;	/* ps between one endpoint's sends */
	uint64_t n, sent, recvd, drained;
	/* the engine's pending events, once a step while timed */
	bool sample;
	uint64_t pend_sum, pend_steps;
	/* endpoint slot -> index: the drains take the endpoints the
	 * fabric pushed events to (ssemu_fabric_ready), as the tools do */
	uint32_t *slot_ep, nslots;
};

/* Take the events of the endpoints that have any; release and count what
 * arrived. */
static uint64_t drain_all(struct model *m)
{
	uint32_t slots[4096];
	uint64_t got = 0;
	int k, n;

	do {
		n = ssemu_fabric_ready(m->fab, slots, 4096);
		if (n < 0)
			die("ready endpoints", n);
		for (k = 0; k < n; k++)
			if (slots[k] < m->nslots &&
			    m->slot_ep[slots[k]] < m->n)
				got += drain_ep(m->eps[m->slot_ep[slots[k]]]);
	} while (n == 4096);
	return got;
}

/* A message's bytes on the wire: its payload and each packet's header. */
static double wire_bytes(const struct ssemu_config *cfg, uint32_t size)
{
	return (double)size + cfg->pkt_overhead * ceil((double)size / cfg->mtu);
}

/* An exponential gap (ps) of the mean that offers the load asked for. */
static ssemu_time_t next_gap(struct model *m)
{
	return (ssemu_time_t)(-log(1 - ssemu_rng_double(&m->rng)) *
			      m->mean_gap);
}

static int model_open(struct model *m, const struct bench_opts *o)
{
	struct ssemu_config *cfg = &m->cfg;
	uint64_t i;
	int ret;

	memset(m, 0, sizeof(*m));
	if (ssemu_config_preset(o->preset, cfg)) {
		fprintf(stderr, "bench_fabric: unknown preset '%s'\n",
			o->preset);
		return -EINVAL;
	}
	m->n = ssemu_config_nports(cfg);
	m->size = o->size;
	ret = model_config(o, cfg, (uint32_t)m->n, 64,
			   o->size > SSEMU_INLINE_MAX ? 64 : 0, o->size,
			   m->n * 256 + 4096);
	if (ret)
		return ret;
	m->fab = fabric_open(cfg);
	if (!m->fab)
		return -EINVAL;
	m->nics = calloc(m->n, sizeof(*m->nics));
	m->eps = calloc(m->n, sizeof(*m->eps));
	m->next = calloc(m->n, sizeof(*m->next));
	m->heap = calloc(m->n, sizeof(*m->heap));
	m->due = calloc(m->n, sizeof(*m->due));
	if (!m->nics || !m->eps || !m->next || !m->heap || !m->due)
		die("calloc", -ENOMEM);
	for (i = 0; i < m->n; i++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)i, .rank = -1 };

		ret = ssemu_nic_attach(m->fab, &no, &m->nics[i]);
		if (!ret)
			ret = ssemu_ep_open(m->nics[i], &m->eps[i]);
		if (ret)
			die("attach", ret);
	}
	for (i = 0; i < m->n; i++)
		m->nslots = SSEMU_MAX(m->nslots, ssemu_ep_slot(m->eps[i]) + 1);
	m->slot_ep = malloc(m->nslots * sizeof(*m->slot_ep));
	if (!m->slot_ep)
		die("malloc", -ENOMEM);
	memset(m->slot_ep, 0xff, m->nslots * sizeof(*m->slot_ep));
	for (i = 0; i < m->n; i++)
		m->slot_ep[ssemu_ep_slot(m->eps[i])] = (uint32_t)i;
	ssemu_rng_seed(&m->rng, 1, 2);
	m->mean_gap = wire_bytes(cfg, o->size) * 8e12 /
		      (double)cfg->edge.rate_bps / o->load;
	for (i = 0; i < m->n; i++) {
		m->next[i] = next_gap(m);
		heap_push(m->heap, &m->nheap, m->next, i);
	}
	return 0;
}

static void model_close(struct model *m)
{
	uint64_t i;

	for (i = 0; i < m->n; i++) {
		ssemu_ep_close(m->eps[i]);
		ssemu_nic_detach(m->nics[i]);
	}
	ssemu_fabric_close(m->fab);
	free(m->nics);
	free(m->eps);
	free(m->next);
	free(m->heap);
	free(m->due);
	free(m->slot_ep);
}

/* Endpoint @i sends to another endpoint drawn uniformly. */
static void model_send(struct model *m, uint64_t i, ssemu_time_t t)
{
	/* (a length, no bytes: the model never reads them) */
	struct iovec iov = { NULL, m->size };
	struct ssemu_send s = { .tclass = m->cfg.default_tclass,
				.flags = SSEMU_SEND_NO_DATA,
				.iov = &iov,
				.iov_count = 1 };
	uint64_t d = ssemu_rng_below(&m->rng, m->n - 1);
	int ret;

	s.dest = ssemu_ep_addr(m->eps[d >= i ? d + 1 : d]);
	/* out of slots: let 100 ns of model time go by (not a number of
	 * events: the traffic offered must not depend on how many events
	 * the model takes) */
	while ((ret = ssemu_ep_send(m->eps[i], &s)) == -EAGAIN) {
		ssemu_fabric_run_until(m->fab, ssemu_fabric_now(m->fab) +
						       SSEMU_PS_PER_US / 10);
		m->recvd += drain_all(m);
	}
	if (ret)
		die("send", ret);
	m->sent++;
	m->next[i] = t + 1 + next_gap(m);
	heap_push(m->heap, &m->nheap, m->next, i);
}

/* Offer traffic until the next send is due at @end or later. */
static void model_traffic(struct model *m, ssemu_time_t end)
{
	struct ssemu_engine *e = ssemu_r_engine(m->fab->r);
	ssemu_time_t tmin, t;
	uint64_t k, ndue;

	while ((tmin = m->next[m->heap[0]]) < end) {
		ssemu_fabric_run_until(m->fab, tmin);
		t = ssemu_fabric_now(m->fab);
		if (m->sample) {
			m->pend_sum += ssemu_engine_pending(e);
			m->pend_steps++;
		}
		/* the endpoints due by t, in index order (as a scan of all
		 * of them would take them: the same draws, the same traffic)
		 * without a scan of all of them per step */
		for (ndue = 0; m->nheap && m->next[m->heap[0]] <= t;)
			m->due[ndue++] = heap_pop(m->heap, &m->nheap, m->next);
		sort_u64(m->due, ndue);
		for (k = 0; k < ndue; k++)
			model_send(m, m->due[k], t);
		if (m->sent - m->drained >= 512) {
			m->recvd += drain_all(m);
			m->drained = m->sent;
		}
	}
}

/*
 * The timed part: traffic up to @end, then until everything sent is
 * delivered.  Its own (external) function so that the callgrind run
 * collects it alone (--toggle-collect=bench_timed_run).
 */
void bench_timed_run(struct model *m, ssemu_time_t end);

__attribute__((noinline, noclone))
void bench_timed_run(struct model *m, ssemu_time_t end)
{
	m->sample = true;
	model_traffic(m, end);
	m->sample = false;
	while (!ssemu_fabric_idle(m->fab)) {
		ssemu_fabric_progress(m->fab, 1 << 20);
		m->recvd += drain_all(m);
	}
	m->recvd += drain_all(m);
}

static int callgrind_rerun(const struct bench_opts *o);

static void model_report(const struct bench_opts *o, struct model *m,
			 const struct ssemu_fabric_stats *st0,
			 const struct ssemu_fabric_stats *st,
			 uint64_t sent0, ssemu_time_t end, double wall_s,
			 double cpu_s)
{
	const struct ssemu_config *cfg = &m->cfg;
	uint64_t hops = st->pkt_hops - st0->pkt_hops;
	uint64_t events = st->events - st0->events;
	ssemu_time_t span = end - SSEMU_MIN(end, st0->now);
	double wire = wire_bytes(cfg, o->size);

	kv_s("preset", o->preset);
	kv_u64("endpoints", m->n);
	kv_s("pattern", "uniform");
	kv_s("routing", cfg->routing);
	kv_f("load_offered", o->load, 3);
	kv_u64("message_bytes", o->size);
	kv_f("warmup_us", (double)st0->now / SSEMU_PS_PER_US, 3);
	kv_f("model_time_us", (double)st->now / SSEMU_PS_PER_US, 3);
	kv_u64("messages_sent", m->sent);
	kv_u64("messages_received", m->recvd);
	/* what the sources got in while timed: more than the fabric
	 * carries backs up into them (-EAGAIN) */
	if (span)
		kv_f("load_sent", (double)(m->sent - sent0) * wire * 8e12 /
					  ((double)cfg->edge.rate_bps *
					   (double)m->n * (double)span), 3);
	kv_u64("packet_hops", hops);
	kv_u64("train_hops", st->train_hops - st0->train_hops);
	kv_u64("trains", ssemu_model_trains_run);
	kv_u64("events", events);
	kv_f("wall_s", wall_s, 3);
	kv_f("cpu_s", cpu_s, 3);
	kv_f("hops_per_wall_s", (double)hops / wall_s, 0);
	kv_f("hops_per_cpu_s", (double)hops / cpu_s, 0);
	kv_f("events_per_wall_s", (double)events / wall_s, 0);
	kv_f("events_per_cpu_s", (double)events / cpu_s, 0);
	kv_f("events_per_hop", (double)events / (double)SSEMU_MAX(hops, 1),
	     3);
	kv_f("engine_pending_mean", m->pend_steps ?
		     (double)m->pend_sum / (double)m->pend_steps : 0.0, 0);
	kv_u64("rss_peak_kib", rss_peak_kib());
}

static int bench_model(const struct bench_opts *o)
{
	struct ssemu_fabric_stats st, st0;
	ssemu_time_t warm_end, end;
	struct engine_rate erate;
	double t0, t1, c0, c1;
	uint64_t sent0, events, pending;
	struct model m;
	int ret = 0;

	if (model_open(&m, o))
		return 1;
	warm_end = (ssemu_time_t)(o->warm_us * SSEMU_PS_PER_US);
	end = warm_end + (ssemu_time_t)(o->time_us * SSEMU_PS_PER_US);
	/* the warm-up is not timed: switches are instantiated and memory
	 * first touched on first use, and the fabric fills */
	model_traffic(&m, warm_end);
	ssemu_fabric_stats(m.fab, &st0);
	sent0 = m.sent;
	t0 = wall();
	c0 = cpu();
	bench_timed_run(&m, end);
	t1 = wall();
	c1 = cpu();
	ssemu_fabric_stats(m.fab, &st);
	model_report(o, &m, &st0, &st, sent0, end, t1 - t0,
		     SSEMU_MAX(c1 - c0, 1e-9));
	if (m.recvd != m.sent) {
		fprintf(stderr, "bench_fabric: %" PRIu64 " messages sent, "
			"%" PRIu64 " received\n", m.sent, m.recvd);
		ret = 1;
	}
	events = st.events - st0.events;
	pending = o->engine_pending ? o->engine_pending :
		  m.pend_steps ? (m.pend_sum + m.pend_steps / 2) /
					 m.pend_steps : 0;
	model_close(&m);
	/* the baseline runs after the model's fabric is gone, outside the
	 * timed run (and outside what the callgrind run collects) */
	if (o->baseline) {
		pending = SSEMU_MAX(pending, 16);
		erate = bare_engine_rate((uint32_t)pending,
					 SSEMU_MAX(events, 1000000));
		kv_u64("baseline_engine_pending", pending);
		kv_f("baseline_engine_events_per_wall_s", erate.per_wall_s, 0);
		kv_f("baseline_engine_events_per_cpu_s", erate.per_cpu_s, 0);
		kv_f("ratio_model_events_per_engine_events",
		     (double)events / SSEMU_MAX(c1 - c0, 1e-9) /
			     erate.per_cpu_s, 3);
	}
	if (o->callgrind)
		ret |= callgrind_rerun(o);
	return ret;
}

/* ------------------------------------------------------------------ */
/* one message, nothing else in flight                                  */
/* ------------------------------------------------------------------ */

/*
 * Endpoint 0 sends one message of o->message bytes to the last endpoint
 * (on a Dragonfly, in the last group) on an idle fabric, or (--read)
 * reads as many bytes of its memory (the provider's rendezvous moves bulk
 * data so); the engine's events from the post until the fabric is idle
 * again (the acknowledgements too) and the operation's model times.  Its
 * own (external) function for the callgrind run
 * (--toggle-collect=bench_message_run).
 */
struct one_msg {
	struct ssemu_fabric *fab;
	struct ssemu_ep *src, *dst;
	uint64_t bytes;
	bool read;		/* an RMA read of region 1 at dst */
	ssemu_time_t delivery, completion;	/* ps after the post */
	int status;
};

int bench_message_run(struct one_msg *om);

__attribute__((noinline, noclone))
int bench_message_run(struct one_msg *om)
{
	struct iovec iov = { NULL, om->bytes };
	struct ssemu_send s = { .dest = ssemu_ep_addr(om->dst),
				.flags = SSEMU_SEND_NO_DATA, .iov = &iov,
				.iov_count = 1 };
	/* (direct, as the provider's rendezvous reads: the model moves no
	 * bytes, the initiator would copy them from the target's memory) */
	struct ssemu_rma rd = { .dest = ssemu_ep_addr(om->dst),
				.flags = SSEMU_RMA_DIRECT,
				.op = SSEMU_RMA_READ, .key = 1,
				.len = om->bytes };
	bool got = om->read, done = false;
	struct ssemu_event ev;
	int ret;

	ret = om->read ? ssemu_ep_rma(om->src, &rd) :
			 ssemu_ep_send(om->src, &s);
	if (ret)
		return ret;
	while (!got || !done || !ssemu_fabric_idle(om->fab)) {
		ret = ssemu_fabric_progress(om->fab, 1 << 16);
		if (ret < 0)
			return ret;
		while (ssemu_ep_poll(om->dst, &ev, 1) == 1) {
			if (ev.type != SSEMU_EV_RECV)
				continue;
			om->delivery = ev.time - ev.posted;
			ssemu_event_release(om->dst, &ev);
			got = true;
		}
		while (ssemu_ep_poll(om->src, &ev, 1) == 1) {
			if (ev.type != SSEMU_EV_SEND_DONE &&
			    ev.type != SSEMU_EV_RMA_DONE)
				continue;
			om->completion = ev.time - ev.posted;
			om->status = ev.status;
			if (ev.type == SSEMU_EV_RMA_DONE)
				ssemu_event_release(om->src, &ev);
			done = true;
		}
		if (!ret && ssemu_fabric_idle(om->fab) && (!got || !done))
			return -EIO;	/* idle with the message not done */
	}
	return 0;
}

static int bench_message(const struct bench_opts *o)
{
	struct ssemu_fabric_stats st0, st;
	struct ssemu_config cfg;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct one_msg om = { .bytes = o->message, .read = o->read };
	uint64_t n, npkts, hops, events, port[2];
	double t0, t1, c0, c1;
	uint8_t *mem = NULL;
	int k, ret;

	if (ssemu_config_preset(o->preset, &cfg)) {
		fprintf(stderr, "bench_fabric: unknown preset '%s'\n",
			o->preset);
		return 1;
	}
	n = ssemu_config_nports(&cfg);
	npkts = (o->message + cfg.mtu - 1) / cfg.mtu;
	if (model_config(o, &cfg, 2, 4, 4, o->message, 2 * npkts + 4096))
		return 1;
	om.fab = fabric_open(&cfg);
	if (!om.fab)
		return 1;
	port[0] = 0;
	port[1] = o->dst < 0 ? n - 1 : (uint64_t)o->dst;
	if (port[1] == 0 || port[1] >= n) {
		fprintf(stderr, "bench_fabric: --dst: port %" PRIu64 " is not "
			"another endpoint of preset %s (1..%" PRIu64 ")\n",
			port[1], o->preset, n - 1);
		return 2;
	}
	for (k = 0; k < 2; k++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)port[k],
					     .rank = -1 };

		ret = ssemu_nic_attach(om.fab, &no, &nic[k]);
		if (!ret)
			ret = ssemu_ep_open(nic[k], &ep[k]);
		if (ret)
			die("attach", ret);
	}
	om.src = ep[0];
	om.dst = ep[1];
	if (o->read) {
		struct ssemu_mr_desc md = { .key = 1, .len = o->message,
					    .access = SSEMU_MR_READ };

		mem = calloc(1, o->message);
		if (!mem)
			die("calloc", -ENOMEM);
		md.addr = mem;
		ret = ssemu_mr_reg(nic[1], &md);
		if (ret)
			die("ssemu_mr_reg", ret);
	}
	ssemu_fabric_stats(om.fab, &st0);
	t0 = wall();
	c0 = cpu();
	ret = bench_message_run(&om);
	t1 = wall();
	c1 = cpu();
	if (ret || om.status) {
		fprintf(stderr, "bench_fabric: the %s of %" PRIu64
			" bytes failed: %s\n", o->read ? "read" : "message",
			o->message, strerror(-(ret ? ret : om.status)));
		return 1;
	}
	ssemu_fabric_stats(om.fab, &st);
	hops = st.pkt_hops - st0.pkt_hops;
	events = st.events - st0.events;
	kv_s("preset", o->preset);
	kv_s("routing", cfg.routing);
	kv_s("operation", o->read ? "read" : "send");
	kv_u64("message_bytes", o->message);
	kv_u64("src_port", port[0]);
	kv_u64("dst_port", port[1]);
	kv_u64("packets", npkts ? npkts : 1);
	kv_u64("packet_hops", hops);
	kv_u64("train_hops", st.train_hops - st0.train_hops);
	kv_u64("trains", ssemu_model_trains_run);
	kv_u64("events", events);
	kv_f("events_per_packet", (double)events / (double)SSEMU_MAX(npkts, 1),
	     3);
	/* (a read's bytes arrive at its initiator: completion) */
	if (!o->read)
		kv_f("delivery_ns", (double)om.delivery / SSEMU_PS_PER_NS, 3);
	kv_f("completion_ns", (double)om.completion / SSEMU_PS_PER_NS, 3);
	kv_f("wall_s", t1 - t0, 6);
	kv_f("cpu_s", c1 - c0, 6);
	kv_u64("rss_peak_kib", rss_peak_kib());
	for (k = 0; k < 2; k++) {
		ssemu_ep_close(ep[k]);
		ssemu_nic_detach(nic[k]);
	}
	ssemu_fabric_close(om.fab);
	free(mem);
	return o->callgrind ? callgrind_rerun(o) : 0;
}

/* ------------------------------------------------------------------ */
/* instructions, by rerunning under callgrind                           */
/* ------------------------------------------------------------------ */

static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[4096];
	size_t len;

	while (path && *path) {
		len = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, prog);
		if (len && access(buf, X_OK) == 0)
			return true;
		path += len + (path[len] == ':');
	}
	return false;
}

/* The value of "key value" line @key in @text, or -1. */
static double kv_find(const char *text, const char *key)
{
	size_t k = strlen(key);
	const char *p;

	for (p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, k) && p[k] == ' ')
			return strtod(p + k + 1, NULL);
	return -1;
}

/* The instructions callgrind counted ("totals:" of its output file). */
static double callgrind_totals(const char *file)
{
	char line[512];
	double v = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "totals: ", 8) ||
		    (v < 0 && !strncmp(line, "summary: ", 9)))
			v = strtod(strchr(line, ' ') + 1, NULL);
	fclose(f);
	return v;
}

/* Run @argv with its stdout into @out (at most @len - 1 bytes). */
static int run_capture(char *const *argv, char *out, size_t len)
{
	size_t got = 0;
	ssize_t r;
	int fds[2], st;
	pid_t pid;

	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	while (got + 1 < len && (r = read(fds[0], out + got,
					  len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(fds[0]);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return -ECHILD;
	return 0;
}

/* For a rerun of this program under valgrind: its path into @exe, and a
 * new empty file /tmp/bench_fabric-@tag-XXXXXX for valgrind's output,
 * named in @file. */
static void rerun_prepare(char *exe, size_t exesz, char *file, size_t filesz,
			  const char *tag)
{
	ssize_t len = readlink("/proc/self/exe", exe, exesz - 1);
	int fd;

	if (len <= 0)
		die("readlink /proc/self/exe", -errno);
	exe[len] = 0;
	snprintf(file, filesz, "/tmp/bench_fabric-%s-XXXXXX", tag);
	fd = mkstemp(file);
	if (fd < 0)
		die("mkstemp", -errno);
	close(fd);
}

/*
 * Rerun this benchmark, smaller, under callgrind, collecting only its timed
 * function: instructions per packet-hop (model) or per message (--message).
 * No valgrind: a message on stderr, and no figure.
 */
static int callgrind_rerun(const struct bench_opts *o)
{
	char exe[4096], out[64], outopt[96], num[4][32], cap[8192];
	char *argv[40];
	double ir, per;
	int argc = 0, ret;

	if (!in_path("valgrind")) {
		fprintf(stderr, "bench_fabric: --callgrind: valgrind is not "
			"installed (not found in PATH): no instruction "
			"counts\n");
		return 0;
	}
	rerun_prepare(exe, sizeof(exe), out, sizeof(out), "cg");
	snprintf(outopt, sizeof(outopt), "--callgrind-out-file=%s", out);
	argv[argc++] = "valgrind";
	argv[argc++] = "-q";
	argv[argc++] = "--tool=callgrind";
	argv[argc++] = "--collect-atstart=no";
	argv[argc++] = o->message ? "--toggle-collect=bench_message_run" :
				    "--toggle-collect=bench_timed_run";
	argv[argc++] = outopt;
	argv[argc++] = exe;
	argv[argc++] = "model";
	argv[argc++] = "--no-baseline";
	argv[argc++] = "--preset";
	argv[argc++] = (char *)o->preset;
	if (o->no_trains)
		argv[argc++] = "--no-trains";
	if (o->routing) {
		argv[argc++] = "--routing";
		argv[argc++] = (char *)o->routing;
	}
	if (o->message) {
		snprintf(num[0], sizeof(num[0]), "%" PRIu64, o->message);
		argv[argc++] = "--message";
		argv[argc++] = num[0];
		if (o->read)
			argv[argc++] = "--read";
		if (o->dst >= 0) {
			snprintf(num[1], sizeof(num[1]), "%" PRId64, o->dst);
			argv[argc++] = "--dst";
			argv[argc++] = num[1];
		}
	} else {
		snprintf(num[0], sizeof(num[0]), "%.17g", o->load);
		snprintf(num[1], sizeof(num[1]), "%u", o->size);
		snprintf(num[2], sizeof(num[2]), "%.17g", o->cg_time_us);
		snprintf(num[3], sizeof(num[3]), "%.17g",
			 SSEMU_MIN(o->warm_us, o->cg_time_us));
		argv[argc++] = "--load";
		argv[argc++] = num[0];
		argv[argc++] = "--size";
		argv[argc++] = num[1];
		argv[argc++] = "--time";
		argv[argc++] = num[2];
		argv[argc++] = "--warmup";
		argv[argc++] = num[3];
	}
	argv[argc] = NULL;
	ret = run_capture(argv, cap, sizeof(cap));
	ir = ret ? -1 : callgrind_totals(out);
	unlink(out);
	if (ir < 0) {
		fprintf(stderr, "bench_fabric: --callgrind: the run under "
			"valgrind failed or left no totals\n");
		return 1;
	}
	per = kv_find(cap, o->message ? "events" : "packet_hops");
	if (per <= 0) {
		fprintf(stderr, "bench_fabric: --callgrind: the run under "
			"valgrind reported no %s\n",
			o->message ? "events" : "packet-hops");
		return 1;
	}
	kv_f("callgrind_instructions", ir, 0);
	if (o->message) {
		kv_f("callgrind_events", per, 0);
		kv_f("instructions_per_event", ir / per, 1);
	} else {
		kv_f("callgrind_model_time_us", o->cg_time_us, 3);
		kv_f("callgrind_packet_hops", per, 0);
		kv_f("instructions_per_hop", ir / per, 1);
	}
	return 0;
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

/* One side of the fabric ping-pong; returns 0 on success.  The first
 * side's @peer is the other's process: killed if this side fails (it
 * would wait for this one forever), before this one lets go of the fabric
 * (whose last process out removes it). */
static int fabric_side(const char *name, bool first, uint64_t iters,
		       double *oneway_ns, double *model_ns, pid_t peer)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM, .name = name };
	struct ssemu_nic_opts no = { .rank = -1 };
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic = NULL;
	struct ssemu_ep *ep = NULL;
	struct ssemu_event ev;
	ssemu_time_t msum = 0;
	uint64_t i, val = 0, polls = 0;
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
		goto out;
	/* Rendezvous: wait until the peer's endpoint is open (its NIC
	 * attached is not enough: a message that arrives before the
	 * endpoint opens finds nobody there and fails, and the ping-pong
	 * would wait for its reply forever). */
	for (i = 0; i < 10000000; i++) {
		struct ssemu_nic_info info[4];
		int k, n = ssemu_fabric_nics(fab, info, 4), open = 0;

		for (k = 0; k < n; k++)
			open += info[k].eps_open > 0;
		if (open >= 2)
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
				goto out;
		}
		while (!got) {
			/* (nor is one to a process that has exited) */
			if (peer > 0 && !(++polls % 4096) &&
			    waitpid(peer, NULL, WNOHANG) == peer) {
				peer = 0;
				ret = -ECONNRESET;
				goto out;
			}
			ssemu_fabric_progress(fab, 256);
			while (ssemu_ep_poll(ep, &ev, 1) == 1) {
				/* (a send that failed is never answered) */
				if (ev.type == SSEMU_EV_SEND_DONE &&
				    ev.status) {
					ret = ev.status;
					goto out;
				}
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
				goto out;
		} else if (val != i) {
			ret = -EIO;
			goto out;
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
out:
	if (ret && peer > 0) {
		kill(peer, SIGKILL);
		waitpid(peer, NULL, 0);
	}
	if (ep)
		ssemu_ep_close(ep);
	if (nic)
		ssemu_nic_detach(nic);
	ssemu_fabric_close(fab);
	return ret;
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

/* Ports 0 and 1 of @fab attached, an endpoint open on each. */
static void local_pair_open(struct ssemu_fabric *fab, struct ssemu_nic **nic,
			    struct ssemu_ep **ep)
{
	struct ssemu_nic_opts no[2] = { { .port = 0, .rank = -1 },
					{ .port = 1, .rank = -1 } };
	int k, ret;

	for (k = 0; k < 2; k++) {
		ret = ssemu_nic_attach(fab, &no[k], &nic[k]);
		if (!ret)
			ret = ssemu_ep_open(nic[k], &ep[k]);
		if (ret)
			die("fabric endpoint", ret);
	}
}

/* A new shared fabric named for this process and @what (its last
 * process out removes it), with local_pair_open's pair; NULL if it could
 * not be made (said on stderr). */
static struct ssemu_fabric *shared_pair_open(const char *what,
					     struct ssemu_nic **nic,
					     struct ssemu_ep **ep)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM };
	struct ssemu_fabric *fab;
	char name[64], err[256];

	snprintf(name, sizeof(name), "bench-%s-%d", what, (int)getpid());
	fo.name = name;
	if (ssemu_fabric_open(&fo, &fab, err, sizeof(err))) {
		fprintf(stderr, "bench_fabric: %s\n", err);
		return NULL;
	}
	local_pair_open(fab, nic, ep);
	return fab;
}

/* The pair closed and @fab let go. */
static void pair_close(struct ssemu_fabric *fab, struct ssemu_nic **nic,
		       struct ssemu_ep **ep)
{
	int k;

	for (k = 0; k < 2; k++) {
		ssemu_ep_close(ep[k]);
		ssemu_nic_detach(nic[k]);
	}
	ssemu_fabric_close(fab);
}

/* Message @i of a ping-pong between @ep[0] and @ep[1] of this process:
 * from ep[i % 2] to the other, received, and the sender's SEND_DONE
 * taken. */
static void local_message(struct ssemu_fabric *fab, struct ssemu_ep **ep,
			  uint64_t i)
{
	struct ssemu_event ev[8];
	uint64_t val = i;
	struct iovec iov = { &val, sizeof(val) };
	struct ssemu_send s = {
		.dest = ssemu_ep_addr(ep[(i + 1) % 2]),
		.iov = &iov,
		.iov_count = 1,
	};
	int ret;

	while ((ret = ssemu_ep_send(ep[i % 2], &s)) == -EAGAIN)
		ssemu_fabric_progress(fab, 256);
	if (ret)
		die("send", ret);
	local_recv(fab, ep[(i + 1) % 2]);
	while (ssemu_ep_poll(ep[i % 2], ev, 8) > 0)
		;
}

/*
 * The floor: the same ping-pong through the same model, both endpoints in
 * this one process (a private store), so nothing crosses between cores:
 * what the model and the API cost per message on their own.
 */
static double local_oneway_ns(uint64_t iters)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	double t0, t1;
	uint64_t i;
	int ret;

	ret = ssemu_fabric_open(&fo, &fab, NULL, 0);
	if (ret)
		die("private fabric", ret);
	local_pair_open(fab, nic, ep);
	t0 = wall();
	for (i = 0; i < 2 * iters; i++)
		local_message(fab, ep, i);
	t1 = wall();
	ssemu_fabric_close(fab);
	return (t1 - t0) / (double)(2 * iters) * 1e9;
}

/* @n bytes at @p read a cache line at a time (volatile: every read is
 * made): what was in the caches before is not now. */
static void evict_walk(const volatile uint64_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n / sizeof(*p); i += 64 / sizeof(*p))
		(void)p[i];
}

/*
 * The floor with cold caches: the same one-process ping-pong, with
 * @evict_mib MiB read before each message, so that the message finds
 * none of its lines (code or data) in the caches, as an engine run does
 * when other processes ran on its CPU since its last (more ranks than
 * CPUs).  Only the messages are timed, each between two clock reads.
 * The baseline, into *@ring_ns, the same way: an 8-byte value through
 * the ring baseline's two rings, pushed and popped in this process after
 * the same walk: the least a message can touch.
 */
static double cold_oneway_ns(uint64_t msgs, uint64_t evict_mib,
			     double *ring_ns)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	size_t n = (size_t)evict_mib << 20;
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct shm_pair p;
	double t0, sum = 0, rsum = 0;
	uint64_t *buf, v, i;
	int ret;

	buf = mmap(NULL, n, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap", -errno);
	memset(buf, 1, n);
	ret = ssemu_fabric_open(&fo, &fab, NULL, 0);
	if (ret)
		die("private fabric", ret);
	local_pair_open(fab, nic, ep);
	/* (warm: the same messages as the floor's first) */
	for (i = 0; i < 64; i++)
		local_message(fab, ep, i);
	pair_make(&p);
	for (i = 0; i < msgs; i++) {
		evict_walk(buf, n);
		t0 = wall();
		local_message(fab, ep, 64 + i);
		sum += wall() - t0;
		evict_walk(buf, n);
		t0 = wall();
		v = i;
		if (ssemu_ring_push(p.ab, &v) || ssemu_ring_pop(p.ab, &v) ||
		    ssemu_ring_push(p.ba, &v) || ssemu_ring_pop(p.ba, &v) ||
		    v != i)
			die("ring baseline data", -EIO);
		rsum += wall() - t0;
	}
	munmap(p.mem, p.bytes);
	ssemu_fabric_close(fab);
	munmap(buf, n);
	*ring_ns = rsum / (double)msgs / 2 * 1e9;
	return sum / (double)msgs * 1e9;
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

static int bench_latency(uint64_t iters, const char *timeline,
			 uint64_t evict_mib)
{
	char name[64];
	double base, fab, model, local, cold = 0, ring_cold = 0;
	uint64_t cold_msgs = SSEMU_MIN(iters, (uint64_t)1000);
	pid_t child;
	int st, ret;

	snprintf(name, sizeof(name), "ssemu-bench-%d", (int)getpid());
	base = ring_oneway_ns(iters);
	local = local_oneway_ns(iters);
	if (evict_mib)
		cold = cold_oneway_ns(cold_msgs, evict_mib, &ring_cold);
	/* (the two processes' fabric opens read it: the floor's, in one
	 * process, is not recorded) */
	if (timeline && setenv("SSEMU_TIMELINE", timeline, 1))
		die("setenv", -errno);
	child = fork();
	if (child == 0)
		_exit(fabric_side(name, false, iters, NULL, NULL, 0) ? 1 : 0);
	ret = fabric_side(name, true, iters, &fab, &model, child);
	if (!ret)
		waitpid(child, &st, 0);
	if (timeline)
		unsetenv("SSEMU_TIMELINE");
	if (ret || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "bench_fabric: latency run failed (%d)\n", ret);
		return 1;
	}
	kv_u64("round_trips", iters);
	kv_f("ring_oneway_ns", base, 0);
	kv_f("fabric_oneway_ns", fab, 0);
	kv_f("floor_oneway_ns", local, 0);
	kv_f("ratio_fabric_ring", fab / base, 2);
	kv_f("ratio_floor_ring", local / base, 2);
	kv_f("model_oneway_ns", model, 1);
	kv_u64("store_bytes_per_nic", nic_store_bytes());
	if (!evict_mib)
		return 0;
	kv_u64("evict_mib", evict_mib);
	kv_u64("cold_messages", cold_msgs);
	kv_f("ring_cold_oneway_ns", ring_cold, 0);
	kv_f("floor_cold_oneway_ns", cold, 0);
	kv_f("ratio_cold_floor", cold / local, 2);
	return 0;
}

/* ------------------------------------------------------------------ */
/* pages: the fabric's pages a message touches                          */
/* ------------------------------------------------------------------ */

#define TRACE_PAGE 4096u
#define TRACE_MAPS 64
#define PAGES_WARMUP 2000	/* messages before the traced ones */

/*
 * The fabric file's mappings in this process and the pages touched so
 * far.  Written by the fault handler: every access to a page of the file
 * faults once, is counted, and the page is given its protection back.
 */
static struct page_trace {
	struct {
		char *lo, *hi;
		uint64_t off;	/* file offset of lo */
		int prot;
		bool shared;	/* not a private (copy on write) mapping */
	} map[TRACE_MAPS];
	unsigned nmaps;
	uint8_t *seen;		/* a byte a page of the file */
	uint64_t npages;
	uint64_t ntouched;
} trace;

static void trace_fault(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr, *pa;
	uint64_t pg;
	unsigned m;

	(void)sig;
	(void)uc;
	for (m = 0; m < trace.nmaps; m++) {
		if (a < trace.map[m].lo || a >= trace.map[m].hi)
			continue;
		pa = trace.map[m].lo +
		     (uintptr_t)(a - trace.map[m].lo) / TRACE_PAGE * TRACE_PAGE;
		pg = (trace.map[m].off + (uint64_t)(pa - trace.map[m].lo)) /
		     TRACE_PAGE;
		if (pg < trace.npages && !trace.seen[pg]) {
			trace.seen[pg] = 1;
			trace.ntouched++;
		}
		if (!mprotect(pa, TRACE_PAGE, trace.map[m].prot))
			return;
		break;
	}
	/* not a page of the fabric's (or it cannot be given back): a real
	 * fault, which faults again with the default action */
	signal(SIGSEGV, SIG_DFL);
}

/* ------------------------------------------------------------------ */
/* switched: a message after a context switch                           */
/* ------------------------------------------------------------------ */

#define SWITCHED_MAX_PROCS 64
#define SWITCHED_WARMUP 2000

/*
 * What the switched mode's processes share (an anonymous shared mapping):
 * a barrier between the passes, and each one's time an iteration in each
 * pass.
 */
struct switched_share {
	uint32_t arrived;		/* at the barrier, all passes */
	uint32_t failed;
	double ns[2][SWITCHED_MAX_PROCS];	/* [pass][process] */
};

/* Wait (yielding) until all @procs processes have arrived @gen times. */
static void switched_barrier(struct switched_share *sh, uint32_t procs,
			     uint32_t gen)
{
	__atomic_add_fetch(&sh->arrived, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&sh->arrived, __ATOMIC_ACQUIRE) < procs * gen &&
	       !__atomic_load_n(&sh->failed, __ATOMIC_RELAXED))
		sched_yield();
}

/* Process @k of the switched mode: its own private fabric and pair; pass
 * 0 yields the CPU @iters times, pass 1 yields and sends a message @iters
 * times; each pass's wall time an iteration into @sh. */
static void __attribute__((noreturn))
switched_child(struct switched_share *sh, uint32_t k, uint32_t procs,
	       uint64_t iters)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	uint64_t i;
	double t0;
	int pass, ret;

	ret = ssemu_fabric_open(&fo, &fab, NULL, 0);
	if (ret) {
		__atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
		die("private fabric", ret);
	}
	local_pair_open(fab, nic, ep);
	for (i = 0; i < SWITCHED_WARMUP; i++)
		local_message(fab, ep, i);
	for (pass = 0; pass < 2; pass++) {
		switched_barrier(sh, procs, (uint32_t)pass + 1);
		t0 = wall();
		for (i = 0; i < iters; i++) {
			sched_yield();
			if (pass)
				local_message(fab, ep, i);
		}
		sh->ns[pass][k] = (wall() - t0) / (double)iters * 1e9;
	}
	ssemu_fabric_close(fab);
	_exit(0);
}

/*
 * The floor's message after a context switch: @procs processes on this
 * CPU take turns (each yields before each message), against the same
 * turns without the messages; the difference over the processes is what
 * a message costs where another process ran just before, beside the
 * floor with no switch (this process alone on the same CPU).
 */
static int bench_switched(uint64_t procs, uint64_t iters)
{
	struct switched_share *sh;
	double round[2] = { 0, 0 }, floor, msg;
	uint32_t k, started = 0;
	int cpu = sched_getcpu(), st, ret = 0;
	cpu_set_t set;
	pid_t pid;

	if (cpu < 0) {
		fprintf(stderr, "bench_fabric: switched: sched_getcpu: %s\n",
			strerror(errno));
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "bench_fabric: switched: cannot pin to CPU "
			"%d: %s\n", cpu, strerror(errno));
		return 1;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "bench_fabric: switched: %s\n",
			strerror(errno));
		return 1;
	}
	fflush(stdout);
	for (k = 0; k < procs; k++) {
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "bench_fabric: switched: fork: %s\n",
				strerror(errno));
			__atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
			ret = 1;
			break;
		}
		if (!pid)
			switched_child(sh, k, (uint32_t)procs, iters);
		started++;
	}
	/* (one that fails lets the others through the barriers, where they
	 * would wait for it for good: their figures are not used then) */
	for (k = 0; k < started; k++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			__atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
			ret = 1;
		}
	if (ret || sh->failed) {
		fprintf(stderr, "bench_fabric: switched: a process failed\n");
		munmap(sh, sizeof(*sh));
		return 1;
	}
	for (k = 0; k < procs; k++) {
		round[0] += sh->ns[0][k] / (double)procs;
		round[1] += sh->ns[1][k] / (double)procs;
	}
	munmap(sh, sizeof(*sh));
	floor = local_oneway_ns(iters);
	/* (a round is every process's turn: each sent one message in it) */
	msg = (round[1] - round[0]) / (double)procs;
	kv_u64("procs", procs);
	kv_u64("cpu", (uint64_t)cpu);
	kv_u64("iters", iters);
	kv_f("round_yields_ns", round[0], 0);
	kv_f("round_messages_ns", round[1], 0);
	kv_f("switched_oneway_ns", msg, 0);
	kv_f("floor_oneway_ns", floor, 0);
	kv_f("ratio_switched_floor", msg / floor, 2);
	return 0;
}

/* Find the mappings of file @path (from /proc/self/maps); false if none
 * or too many. */
static bool trace_find(const char *path)
{
	char line[4096 + 256], perm[8], file[4096];
	unsigned long lo, hi, off;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return false;
	trace.nmaps = 0;
	while (fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &lo, &hi,
			   perm, &off, file) < 4 || strcmp(file, path))
			continue;
		if (trace.nmaps == TRACE_MAPS) {
			fclose(f);
			return false;
		}
		trace.map[trace.nmaps].lo = (char *)lo;
		trace.map[trace.nmaps].hi = (char *)hi;
		trace.map[trace.nmaps].off = off;
		trace.map[trace.nmaps].prot =
			(perm[0] == 'r' ? PROT_READ : 0) |
			(perm[1] == 'w' ? PROT_WRITE : 0);
		trace.map[trace.nmaps].shared = perm[3] == 's';
		trace.nmaps++;
	}
	fclose(f);
	return trace.nmaps > 0;
}

static void trace_protect(bool on)
{
	unsigned m;

	for (m = 0; m < trace.nmaps; m++)
		if (mprotect(trace.map[m].lo,
			     (size_t)(trace.map[m].hi - trace.map[m].lo),
			     on ? PROT_NONE : trace.map[m].prot))
			die("mprotect", -errno);
}

static int bench_pages(uint64_t messages)
{
	struct sigaction sa = { 0 }, old;
	uint64_t per[SSEMU_SEC_COUNT] = { 0 }, header = 0, pg, lo, hi, i;
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct ssemu_layout l;
	unsigned s;
	int ret = 0;

	fab = shared_pair_open("pages", nic, ep);
	if (!fab)
		return 1;
	for (i = 0; i < PAGES_WARMUP; i++)
		local_message(fab, ep, i);
	while (!ssemu_fabric_idle(fab))
		ssemu_fabric_progress(fab, 256);

	ssemu_layout_compute(&fab->r->config, &fab->r->topo, &l);
	trace.npages = (l.total + TRACE_PAGE - 1) / TRACE_PAGE;
	trace.seen = calloc(trace.npages, 1);
	if (!trace.seen)
		die("calloc", -ENOMEM);
	if (!trace_find(fab->shm_path)) {
		fprintf(stderr, "bench_fabric: pages: the fabric's mappings "
			"of %s not found in /proc/self/maps\n", fab->shm_path);
		ret = 1;
		goto out;
	}
	sa.sa_sigaction = trace_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	trace_protect(true);
	for (i = 0; i < messages; i++)
		local_message(fab, ep, PAGES_WARMUP + i);
	trace_protect(false);
	sigaction(SIGSEGV, &old, NULL);

	/* by section: a page counts for every section it holds part of */
	for (pg = 0; pg < trace.npages; pg++) {
		if (!trace.seen[pg])
			continue;
		lo = pg * TRACE_PAGE;
		hi = lo + TRACE_PAGE;
		if (lo < sizeof(struct ssemu_region))
			header++;
		for (s = 0; s < SSEMU_SEC_COUNT; s++)
			if (l.sec[s].size && lo < l.sec[s].off + l.sec[s].size &&
			    hi > l.sec[s].off)
				per[s]++;
	}
	kv_u64("messages", messages);
	kv_u64("fabric_pages", trace.npages);
	kv_u64("pages_touched", trace.ntouched);
	kv_f("pages_per_message", (double)trace.ntouched / (double)messages,
	     2);
	kv_u64("pages_header", header);
	for (s = 0; s < SSEMU_SEC_COUNT; s++) {
		char key[64];

		snprintf(key, sizeof(key), "pages_%s", l.sec[s].name);
		kv_u64(key, per[s]);
	}
out:
	free(trace.seen);
	pair_close(fab, nic, ep);
	return ret;
}

/* ------------------------------------------------------------------ */
/* lines: the cache lines a message moves between two processes         */
/* ------------------------------------------------------------------ */

/*
 * The two-process ping-pong, in one process traced by valgrind's lackey
 * (every load and store, with its address), each call given to the
 * process that makes it in the two-process run: ep[k]'s sends, polls and
 * releases to process k, every engine run to process 0 (the runner,
 * which stays the same one: benchmarks/README.md, "The runner on a
 * shared fabric").  A store to lines_mark[k] says process k makes the
 * accesses that follow (k 0 or 1); to lines_mark[2], the counted
 * messages start; [3]: end; [4]: a message starts.
 * The accesses to the fabric's shared mappings then go through a model of
 * two private caches: a line one process reads or writes that the other
 * holds moves (a transfer); a write to a line both hold invalidates the
 * other's copy (an upgrade).  What the waiting process reads while it
 * polls, and the kernel's side of a futex, are not in it.
 */
#define LINES_WARMUP 64
#define LINES_CHILD_ENV "SSEMU_BENCH_LINES_CHILD"

static volatile uint64_t lines_mark[5];

static void lines_message(struct ssemu_fabric *fab, struct ssemu_ep **ep,
			  uint64_t i)
{
	unsigned snd = (unsigned)(i % 2), rcv = 1 - snd;
	struct ssemu_event ev[8];
	uint64_t val = i;
	struct iovec iov = { &val, sizeof(val) };
	struct ssemu_send s = {
		.dest = ssemu_ep_addr(ep[rcv]),
		.iov = &iov,
		.iov_count = 1,
	};
	bool got = false;
	int ret, k, n;

	lines_mark[4] = i;
	for (;;) {
		lines_mark[snd] = i;
		ret = ssemu_ep_send(ep[snd], &s);
		if (ret != -EAGAIN)
			break;
		lines_mark[0] = i;
		ssemu_fabric_progress(fab, 256);
	}
	if (ret)
		die("send", ret);
	while (!got) {
		lines_mark[0] = i;
		ssemu_fabric_progress(fab, 256);
		lines_mark[rcv] = i;
		n = ssemu_ep_poll(ep[rcv], ev, 8);
		for (k = 0; k < n; k++) {
			if (ev[k].type != SSEMU_EV_RECV)
				continue;
			ssemu_event_release(ep[rcv], &ev[k]);
			got = true;
		}
	}
	lines_mark[snd] = i;
	while (ssemu_ep_poll(ep[snd], ev, 8) > 0)
		;
}

/* The traced run: what the count needs on stdout, then the ping-pong. */
static int lines_child(uint64_t messages)
{
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct ssemu_layout l;
	uint64_t i;
	unsigned m, s;
	int ret = 0;

	fab = shared_pair_open("lines", nic, ep);
	if (!fab)
		return 1;
	for (i = 0; i < LINES_WARMUP; i++)
		lines_message(fab, ep, i);
	ssemu_layout_compute(&fab->r->config, &fab->r->topo, &l);
	if (!trace_find(fab->shm_path)) {
		fprintf(stderr, "bench_fabric: lines: the fabric's mappings of "
			"%s not found in /proc/self/maps\n", fab->shm_path);
		ret = 1;
		goto out;
	}
	printf("mark %p\n", (void *)lines_mark);
	printf("bytes %" PRIu64 "\n", l.total);
	for (m = 0; m < trace.nmaps; m++)
		if (trace.map[m].shared)
			printf("map %p %p %" PRIu64 "\n",
			       (void *)trace.map[m].lo, (void *)trace.map[m].hi,
			       trace.map[m].off);
	for (s = 0; s < SSEMU_SEC_COUNT; s++)
		if (l.sec[s].size)
			printf("sec %s %" PRIu64 " %" PRIu64 "\n",
			       l.sec[s].name, l.sec[s].off, l.sec[s].size);
	fflush(stdout);
	lines_mark[2] = 1;
	for (i = 0; i < messages; i++)
		lines_message(fab, ep, LINES_WARMUP + i);
	lines_mark[3] = 1;
out:
	pair_close(fab, nic, ep);
	return ret;
}

#define LINES_MAPS 16
#define LINES_SECS (SSEMU_SEC_COUNT + 1)	/* the sections, the header */

struct lines_count {
	struct { uint64_t lo, hi, off; } map[LINES_MAPS];
	unsigned nmaps;
	struct { char name[32]; uint64_t off, size; } sec[LINES_SECS];
	unsigned nsecs;
	uint64_t mark, bytes;
	uint8_t *held;		/* a line: bit k, process k has it */
	uint32_t *moved;	/* a line: its transfers and upgrades */
	uint32_t *seen;		/* a line: the last message touching it */
	uint32_t msg;		/* the message now, from 1 */
	uint64_t xfer[LINES_SECS], upg[LINES_SECS], touched[LINES_SECS];
	/* what else a counted message touches, each counted once a message:
	 * its code's lines and pages, and the lines of the process's own
	 * memory (heap, stack, globals) */
	uint64_t code_lines, code_pages, own_lines;
};

/*
 * Addresses a message touched (lines or pages, outside the fabric's
 * maps), for counting each once a message: open addressing over
 * LINES_SEEN_SLOTS slots, each with the message it was last seen in, so
 * that a new message starts afresh without clearing.  @return true the
 * first time @key is seen in message @msg.
 */
#define LINES_SEEN_SLOTS (1u << 16)

struct lines_seen {
	uint64_t key[LINES_SEEN_SLOTS];
	uint32_t msg[LINES_SEEN_SLOTS];
};

static bool lines_first(struct lines_seen *t, uint64_t key, uint32_t msg)
{
	uint32_t i = (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 48), n;

	for (n = 0; n < LINES_SEEN_SLOTS; n++, i = (i + 1) &
						   (LINES_SEEN_SLOTS - 1)) {
		if (t->msg[i] != msg) {
			/* free in this message: the key is new to it */
			t->key[i] = key;
			t->msg[i] = msg;
			return true;
		}
		if (t->key[i] == key)
			return false;
	}
	/* (a message touching more than the table holds: counted as seen) */
	return false;
}

/* The section holding file offset @off (the header's last). */
static unsigned lines_sec(const struct lines_count *c, uint64_t off)
{
	unsigned s;

	for (s = 0; s + 1 < c->nsecs; s++)
		if (off >= c->sec[s].off && off < c->sec[s].off + c->sec[s].size)
			return s;
	return c->nsecs - 1;
}

/* An access by process @p to the line at file offset @off. */
static void lines_access(struct lines_count *c, unsigned p, uint64_t off,
			 bool write, bool counting)
{
	uint64_t ln = off / 64;
	uint8_t me = (uint8_t)(1u << p), h = c->held[ln];
	bool xfer = !(h & me) && h, upg = write && (h & me) && (h & ~me);

	c->held[ln] = write ? me : (uint8_t)(h | me);
	if (counting && c->seen[ln] != c->msg) {
		c->seen[ln] = c->msg;
		c->touched[lines_sec(c, off)]++;
	}
	if (!counting || !(xfer || upg))
		return;
	c->moved[ln]++;
	if (xfer)
		c->xfer[lines_sec(c, off)]++;
	else
		c->upg[lines_sec(c, off)]++;
}

/* Read the traced run's description (@info) into @c. */
static int lines_info(struct lines_count *c, char *info)
{
	char *line, *save = NULL, name[32];
	unsigned long long a = 0, b = 0, d = 0;
	void *pa, *pb;

	for (line = strtok_r(info, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "mark %p", &pa) == 1) {
			c->mark = (uint64_t)(uintptr_t)pa;
		} else if (sscanf(line, "bytes %llu", &a) == 1) {
			c->bytes = a;
		} else if (sscanf(line, "map %p %p %llu", &pa, &pb, &d) == 3 &&
			   c->nmaps < LINES_MAPS) {
			c->map[c->nmaps].lo = (uint64_t)(uintptr_t)pa;
			c->map[c->nmaps].hi = (uint64_t)(uintptr_t)pb;
			c->map[c->nmaps++].off = d;
		} else if (sscanf(line, "sec %31s %llu %llu", name, &a, &b) ==
				   3 && c->nsecs < LINES_SECS - 1) {
			snprintf(c->sec[c->nsecs].name,
				 sizeof(c->sec[0].name), "%s", name);
			c->sec[c->nsecs].off = a;
			c->sec[c->nsecs++].size = b;
		}
	}
	/* the header last: what no section holds */
	snprintf(c->sec[c->nsecs].name, sizeof(c->sec[0].name), "header");
	c->sec[c->nsecs].off = 0;
	c->sec[c->nsecs].size = c->bytes;
	c->nsecs++;
	return c->mark && c->bytes && c->nmaps ? 0 : -EINVAL;
}

/* Go through lackey's trace @log: every load, store and modify. */
static int lines_replay(struct lines_count *c, const char *log,
			uint64_t messages)
{
	char line[256];
	unsigned p = 0, m, s, top;
	bool counting = false, done = false;
	uint64_t addr, off, end, ln, t, sum_x = 0, sum_u = 0, sum_t = 0;
	unsigned size;
	struct lines_seen *code, *pages, *own;
	FILE *f = fopen(log, "r");

	if (!f)
		return -errno;
	code = calloc(1, sizeof(*code));
	pages = calloc(1, sizeof(*pages));
	own = calloc(1, sizeof(*own));
	if (!code || !pages || !own)
		die("calloc", -ENOMEM);
	c->held = calloc(c->bytes / 64 + 1, 1);
	c->moved = calloc(c->bytes / 64 + 1, sizeof(uint32_t));
	c->seen = calloc(c->bytes / 64 + 1, sizeof(uint32_t));
	if (!c->held || !c->moved || !c->seen)
		die("calloc", -ENOMEM);
	while (!done && fgets(line, sizeof(line), f)) {
		char op = line[1];

		if (line[0] == 'I' &&
		    sscanf(line + 1, "%" SCNx64 ",%u", &addr, &size) == 2) {
			/* an instruction fetched (message 0: before the
			 * first counted one) */
			if (!counting || !c->msg)
				continue;
			for (ln = addr / 64; ln * 64 < addr + SSEMU_MAX(size, 1u);
			     ln++)
				c->code_lines += lines_first(code, ln, c->msg);
			c->code_pages += lines_first(pages, addr / 4096,
						     c->msg);
			continue;
		}
		if (line[0] != ' ' || (op != 'L' && op != 'S' && op != 'M') ||
		    sscanf(line + 2, "%" SCNx64 ",%u", &addr, &size) != 2)
			continue;
		if (addr >= c->mark && addr < c->mark + sizeof(lines_mark)) {
			if (op == 'L')
				continue;
			t = (addr - c->mark) / sizeof(lines_mark[0]);
			if (t < 2)
				p = (unsigned)t;
			else if (t == 2)
				counting = true;
			else if (t == 3)
				done = true;
			else
				c->msg++;
			continue;
		}
		for (m = 0; m < c->nmaps; m++)
			if (addr >= c->map[m].lo && addr < c->map[m].hi)
				break;
		if (m == c->nmaps) {
			if (counting && c->msg)
				for (ln = addr / 64;
				     ln * 64 < addr + SSEMU_MAX(size, 1u); ln++)
					c->own_lines += lines_first(own, ln,
								    c->msg);
			continue;
		}
		off = c->map[m].off + (addr - c->map[m].lo);
		end = off + (size ? size : 1);
		for (ln = off / 64; ln * 64 < end && ln * 64 < c->bytes; ln++)
			lines_access(c, p, ln * 64, op != 'L', counting);
	}
	fclose(f);
	free(code);
	free(pages);
	free(own);
	if (!done)
		return -EIO;
	kv_u64("messages", messages);
	for (s = 0; s < c->nsecs; s++) {
		sum_x += c->xfer[s];
		sum_u += c->upg[s];
		sum_t += c->touched[s];
	}
	kv_f("transfers_per_message", (double)sum_x / (double)messages, 2);
	kv_f("upgrades_per_message", (double)sum_u / (double)messages, 2);
	kv_f("touched_per_message", (double)sum_t / (double)messages, 2);
	kv_f("code_lines_per_message", (double)c->code_lines /
		(double)messages, 2);
	kv_f("code_pages_per_message", (double)c->code_pages /
		(double)messages, 2);
	kv_f("own_lines_per_message", (double)c->own_lines /
		(double)messages, 2);
	for (s = 0; s < c->nsecs; s++) {
		char key[64];

		if (!c->xfer[s] && !c->upg[s])
			continue;
		snprintf(key, sizeof(key), "transfers_%s", c->sec[s].name);
		kv_f(key, (double)c->xfer[s] / (double)messages, 2);
		snprintf(key, sizeof(key), "upgrades_%s", c->sec[s].name);
		kv_f(key, (double)c->upg[s] / (double)messages, 2);
	}
	for (s = 0; s < c->nsecs; s++) {
		char key[64];

		if (!c->touched[s])
			continue;
		snprintf(key, sizeof(key), "touched_%s", c->sec[s].name);
		kv_f(key, (double)c->touched[s] / (double)messages, 2);
	}
	/* the lines that move most: section, offset in it, moves a message */
	for (top = 0; top < 12; top++) {
		uint64_t best = 0, bl = 0;

		for (ln = 0; ln < c->bytes / 64; ln++)
			if (c->moved[ln] > best) {
				best = c->moved[ln];
				bl = ln;
			}
		if (!best)
			break;
		s = lines_sec(c, bl * 64);
		printf("line_%s+%" PRIu64 " %.2f\n", c->sec[s].name,
		       bl * 64 - c->sec[s].off, (double)best / (double)messages);
		c->moved[bl] = 0;
	}
	return 0;
}

/* Rerun this benchmark's ping-pong under lackey and count its lines. */
static int bench_lines(uint64_t messages)
{
	static struct lines_count c;
	char exe[4096], log[64], logopt[96], num[32], info[16384];
	char *argv[12];
	int argc = 0, ret;

	if (getenv(LINES_CHILD_ENV))
		return lines_child(messages);
	if (!in_path("valgrind")) {
		fprintf(stderr, "bench_fabric: lines: valgrind is not installed "
			"(not found in PATH): no count\n");
		return 0;
	}
	rerun_prepare(exe, sizeof(exe), log, sizeof(log), "lk");
	snprintf(logopt, sizeof(logopt), "--log-file=%s", log);
	snprintf(num, sizeof(num), "%" PRIu64, messages);
	argv[argc++] = "valgrind";
	argv[argc++] = "--tool=lackey";
	argv[argc++] = "--trace-mem=yes";
	argv[argc++] = logopt;
	argv[argc++] = exe;
	argv[argc++] = "lines";
	argv[argc++] = "--messages";
	argv[argc++] = num;
	argv[argc] = NULL;
	setenv(LINES_CHILD_ENV, "1", 1);
	ret = run_capture(argv, info, sizeof(info));
	unsetenv(LINES_CHILD_ENV);
	if (!ret)
		ret = lines_info(&c, info);
	if (!ret)
		ret = lines_replay(&c, log, messages);
	unlink(log);
	free(c.held);
	free(c.moved);
	if (ret) {
		fprintf(stderr, "bench_fabric: lines: the run under valgrind "
			"failed or its trace is incomplete (%d)\n", ret);
		return 1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_fabric [model|latency|pages|lines|all] [options]\n"
		"  model:\n"
		"  --preset P           fabric preset (default shandy)\n"
		"  --routing R          minimal | adaptive | ugal |\n"
		"                       adaptive-nb (default: the preset's)\n"
		"  --load F             offered load, (0, 1] (default 0.5)\n"
		"  --size B             message bytes (default 2048, <= 64K)\n"
		"  --time US            model us timed (default 20)\n"
		"  --warmup US          model us first, untimed (default 5)\n"
		"  --engine-pending N   the bare engine baseline's pending\n"
		"                       events (default: the model's mean)\n"
		"  --no-baseline        no bare engine baseline\n"
		"  --message BYTES      instead: one message (K, M: KiB, MiB;\n"
		"                       up to 16M) from the first endpoint to\n"
		"                       the last, nothing else in flight\n"
		"  --read               that many bytes read (a direct RMA\n"
		"                       read, the provider's rendezvous) from\n"
		"                       the last endpoint's memory instead\n"
		"  --dst PORT           that message's destination port\n"
		"  --no-trains          no packet trains: every packet its\n"
		"                       events (the per-packet baseline)\n"
		"  --callgrind          also rerun, smaller, under callgrind:\n"
		"                       instructions per hop (per message)\n"
		"  --callgrind-time US  model us of that run (default 2)\n"
		"  latency:\n"
		"  --iters N            round trips (default 20000)\n"
		"  --timeline PREFIX    the two processes' timelines to\n"
		"                       PREFIX.PID (bench_timeline reads\n"
		"                       them)\n"
		"  --evict MIB          the cold floor: MIB read before each\n"
		"                       message (default 8; 0: no cold floor)\n"
		"  pages (not in all; the library's default fabric):\n"
		"  --messages N         messages traced (default 1, <= 1000)\n"
		"  lines (not in all; under valgrind's lackey):\n"
		"  --messages N         messages counted (default 200)\n"
		"  switched (not in all; on the CPU it starts on):\n"
		"  --procs N            processes taking turns (default 8)\n"
		"  --iters N            messages each (default 20000)\n");
}

static bool bad_value(const char *opt, const char *s, const char *why)
{
	fprintf(stderr, "bench_fabric: --%s: '%s' %s\n", opt, s, why);
	return false;
}

/* @s as a number in [@lo, @hi] (@lo excluded when @lo_open). */
static bool parse_num(const char *opt, const char *s, double lo, double hi,
		      bool lo_open, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (end == s || *end || errno || isnan(*v))
		return bad_value(opt, s, "is not a number");
	if (*v < lo || *v > hi || (lo_open && *v == lo)) {
		fprintf(stderr, "bench_fabric: --%s: %s out of range %s%g, "
			"%g]\n", opt, s, lo_open ? "(" : "[", lo, hi);
		return false;
	}
	return true;
}

/* @s as an integer in [@lo, @hi]; with @units, a K or M suffix (KiB,
 * MiB). */
static bool parse_int(const char *opt, const char *s, uint64_t lo,
		      uint64_t hi, bool units, uint64_t *v)
{
	uint64_t mul = 1;
	char *end;

	errno = 0;
	if (*s < '0' || *s > '9')
		return bad_value(opt, s, "is not a non-negative integer");
	*v = strtoull(s, &end, 10);
	if (units && (*end == 'K' || *end == 'k'))
		mul = 1024, end++;
	else if (units && (*end == 'M' || *end == 'm'))
		mul = 1024 * 1024, end++;
	if (*end || errno)
		return bad_value(opt, s, "is not a non-negative integer");
	if (*v > hi / mul || *v * mul < lo) {
		fprintf(stderr, "bench_fabric: --%s: %s out of range [%" PRIu64
			", %" PRIu64 "]\n", opt, s, lo, hi);
		return false;
	}
	*v *= mul;
	return true;
}

static bool parse_routing(const char *s)
{
	int i;

	for (i = 0; routings[i]; i++)
		if (!strcmp(s, routings[i]))
			return true;
	fprintf(stderr, "bench_fabric: --routing: unknown routing '%s' "
		"(minimal, adaptive, ugal, adaptive-nb)\n", s);
	return false;
}

enum {
	OPT_PRESET = 256, OPT_ROUTING, OPT_LOAD, OPT_TIME, OPT_WARMUP,
	OPT_SIZE, OPT_ITERS, OPT_MESSAGE, OPT_PENDING, OPT_NO_BASELINE,
	OPT_CALLGRIND, OPT_CG_TIME, OPT_DST, OPT_MESSAGES, OPT_TIMELINE,
	OPT_EVICT, OPT_READ, OPT_NO_TRAINS, OPT_PROCS,
};

/* One option's value into @o; false (a message said why) if it is bad. */
static bool set_opt(struct bench_opts *o, int c, const char *name,
		    const char *arg)
{
	uint64_t u;

	switch (c) {
	case OPT_PRESET:
		o->preset = arg;
		return true;
	case OPT_ROUTING:
		o->routing = arg;
		return parse_routing(arg);
	case OPT_LOAD:
		return parse_num(name, arg, 0, 1, true, &o->load);
	case OPT_TIME:
		return parse_num(name, arg, 0, 1e6, true, &o->time_us);
	case OPT_WARMUP:
		return parse_num(name, arg, 0, 1e6, false, &o->warm_us);
	case OPT_CG_TIME:
		return parse_num(name, arg, 0, 1e4, true, &o->cg_time_us);
	case OPT_SIZE:
		if (!parse_int(name, arg, 0, 65536, true, &u))
			return false;
		o->size = (uint32_t)u;
		return true;
	case OPT_ITERS:
		return parse_int(name, arg, 1, UINT32_MAX, false, &o->iters);
	case OPT_MESSAGE:
		return parse_int(name, arg, 1, BENCH_MAX_MESSAGE, true,
				 &o->message);
	case OPT_PENDING:
		return parse_int(name, arg, 1, 1u << 24, false,
				 &o->engine_pending);
	case OPT_MESSAGES:
		return parse_int(name, arg, 1, 1000, false, &o->messages);
	case OPT_EVICT:
		o->evict_set = true;
		return parse_int(name, arg, 0, 4096, false, &o->evict_mib);
	case OPT_TIMELINE:
		if (!*arg) {
			fprintf(stderr, "bench_fabric: --timeline: give a path "
				"prefix\n");
			return false;
		}
		o->timeline = arg;
		return true;
	case OPT_DST:
		if (!parse_int(name, arg, 0, UINT32_MAX, false, &u))
			return false;
		o->dst = (int64_t)u;
		return true;
	case OPT_NO_BASELINE:
		o->baseline = false;
		return true;
	case OPT_READ:
		o->read = true;
		return true;
	case OPT_PROCS:
		o->procs_set = true;
		return parse_int(name, arg, 2, SWITCHED_MAX_PROCS, false,
				 &o->procs);
	case OPT_NO_TRAINS:
		o->no_trains = true;
		ssemu_model_trains = 0;
		return true;
	case OPT_CALLGRIND:
		o->callgrind = true;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "preset", required_argument, NULL, OPT_PRESET },
		{ "routing", required_argument, NULL, OPT_ROUTING },
		{ "load", required_argument, NULL, OPT_LOAD },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "message", required_argument, NULL, OPT_MESSAGE },
		{ "engine-pending", required_argument, NULL, OPT_PENDING },
		{ "no-baseline", no_argument, NULL, OPT_NO_BASELINE },
		{ "callgrind", no_argument, NULL, OPT_CALLGRIND },
		{ "callgrind-time", required_argument, NULL, OPT_CG_TIME },
		{ "dst", required_argument, NULL, OPT_DST },
		{ "read", no_argument, NULL, OPT_READ },
		{ "no-trains", no_argument, NULL, OPT_NO_TRAINS },
		{ "messages", required_argument, NULL, OPT_MESSAGES },
		{ "timeline", required_argument, NULL, OPT_TIMELINE },
		{ "evict", required_argument, NULL, OPT_EVICT },
		{ "procs", required_argument, NULL, OPT_PROCS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct bench_opts o = {
		.preset = "shandy", .load = 0.5, .time_us = 20, .warm_us = 5,
		.size = 2048, .iters = 20000, .baseline = true,
		.cg_time_us = 2, .dst = -1, .evict_mib = 8, .procs = 8,
	};
	const char *what = "all";
	bool model, latency, pages, lines, switched;
	int c, idx, ret = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == '?') {
			if (optopt)
				fprintf(stderr, "bench_fabric: option %s "
					"needs a value\n", argv[optind - 1]);
			else
				fprintf(stderr, "bench_fabric: unknown option "
					"%s\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
		if (!set_opt(&o, c, lo[idx].name, optarg))
			return 2;
	}
	if (optind < argc)
		what = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "bench_fabric: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	model = !strcmp(what, "model") || !strcmp(what, "all");
	latency = !strcmp(what, "latency") || !strcmp(what, "all");
	pages = !strcmp(what, "pages");
	lines = !strcmp(what, "lines");
	switched = !strcmp(what, "switched");
	if (!model && !latency && !pages && !lines && !switched) {
		fprintf(stderr, "bench_fabric: unknown mode '%s' (model, "
			"latency, pages, lines, switched, all)\n", what);
		return 2;
	}
	if (!switched && o.procs_set) {
		fprintf(stderr, "bench_fabric: --procs: only with the switched "
			"mode\n");
		return 2;
	}
	if (!pages && !lines && o.messages) {
		fprintf(stderr, "bench_fabric: --messages: only with the pages "
			"and lines modes\n");
		return 2;
	}
	if (pages)
		return bench_pages(o.messages ? o.messages : 1);
	if (lines)
		return bench_lines(o.messages ? o.messages : 200);
	if (switched && (o.message || o.callgrind || o.routing ||
			 o.timeline || o.evict_set || o.dst >= 0 || o.read)) {
		fprintf(stderr, "bench_fabric: the switched mode takes --procs "
			"and --iters alone\n");
		return 2;
	}
	if (switched)
		return bench_switched(o.procs, o.iters);
	if (latency && model && (o.message || o.callgrind)) {
		fprintf(stderr, "bench_fabric: --%s: only with the model "
			"mode\n", o.message ? "message" : "callgrind");
		return 2;
	}
	if (!model && (o.message || o.callgrind || o.routing)) {
		fprintf(stderr, "bench_fabric: --%s: only with the model "
			"mode\n", o.message ? "message" :
				  o.callgrind ? "callgrind" : "routing");
		return 2;
	}
	if (o.timeline && (!latency || model)) {
		fprintf(stderr, "bench_fabric: --timeline: only with the "
			"latency mode\n");
		return 2;
	}
	if (o.evict_set && !latency) {
		fprintf(stderr, "bench_fabric: --evict: only with the latency "
			"mode\n");
		return 2;
	}
	if (o.dst >= 0 && !o.message) {
		fprintf(stderr, "bench_fabric: --dst: only with --message\n");
		return 2;
	}
	if (o.read && !o.message) {
		fprintf(stderr, "bench_fabric: --read: only with --message\n");
		return 2;
	}
	if (model)
		ret |= o.message ? bench_message(&o) : bench_model(&o);
	if (latency)
		ret |= bench_latency(o.iters, o.timeline, o.evict_mib);
	return ret;
}
