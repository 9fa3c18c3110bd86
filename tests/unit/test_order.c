/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's results do not depend on the order in which it schedules
 * its events, on how a credit comes back, on how often an output or a
 * NIC looks for something to send, on where things lie in their pools,
 * on telemetry, on whether its store is private or shared, nor on how
 * its engine's runs are cut.  Random traffic in two classes (one
 * capped) over a small fabric with pipeline jitter and routing draws is
 * run once as it is, once with every handler's events handed to the
 * engine in the reverse order (ssemu_model_perturb, which also gives
 * them other pool indices), once with every credit returned as an event
 * rather than through the credit ring (ssemu_model_credit_events: as
 * when the ring is full), once with looks and kicks that find nothing
 * to do added at every arrival (ssemu_model_extra_looks), once with
 * packets and VOQ rows from other places in their pools
 * (ssemu_model_fresh_places), once with the telemetry's samples closed
 * every 137 ns, once in a shared segment, once with every event after
 * the posts a run of the engine of its own, and once with every packet
 * through the VOQs and every send through the arbitration's search (no
 * shortcut for an output's only candidate, ssemu_model_shortcut): every
 * run must give the same deliveries and completions, each at the same
 * model time, in the same order at every endpoint.  The traffic is messages on one
 * switch and on two groups (minimal, adaptive and UGAL routing), the
 * same with the second class lossy and buffers of two packets (drops,
 * retries and resends), with one operation in three an RMA write or
 * read, and three streams of long messages with short ones among them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "tf.h"
#include "ssemu_model_int.h"

#define NEPS 12
#define NMSG 160

/* The runs' fabrics: the second class lossy, with small buffers. */
static bool lossy;
/* The runs' traffic: one operation in three an RMA write or read. */
static bool with_rma;
/* The runs' traffic: seven messages in eight from one of three sources,
 * each to a destination of its own, of 16 to 32 packets (streams whose
 * packets follow each other through the same queues), the eighth a
 * random one among them. */
static bool streams;
/* The last check's packet-hops, and those a train could have carried
 * (ssemu_fabric_stats.train_hops), as-is run. */
static uint64_t last_hops, last_train_hops;
/* The as-is run's sends that took a shortcut for an output's only
 * candidate (ssemu_model_shortcuts). */
static uint64_t last_shortcuts;
static uint8_t rma_mem[NEPS][65536];

/* Post @r from endpoint @from, driving the engine while it has no room. */
static void post_rma(struct tf *t, unsigned from, const struct ssemu_rma *r)
{
	unsigned spins = 0;
	int ret;

	while ((ret = ssemu_ep_rma(t->ep[from], r)) == -EAGAIN) {
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
		tf_pump(t);
		if (++spins > 10000000)
			fail_msg("ssemu_ep_rma: -EAGAIN forever");
	}
	assert_int_equal(ret, 0);
}

enum variant {
	AS_IS, PERTURB, CREDIT_EVENTS, EXTRA_LOOKS, FRESH_PLACES, TELEMETRY,
	SHARED, SMALL_RUNS, NO_SHORTCUT
};

/* One run: @nmsg random messages (seeded by @seed) posted in waves,
 * every event polled logged in @t. */
static struct tf *run(const char *preset, const char *routing,
		      uint64_t seed, enum variant var)
{
	static uint8_t buf[65536];
	struct ssemu_config c;
	struct tf *t;
	uint64_t s = seed;
	unsigned i, from, to, port, step;
	size_t len;

	tf_config(&c, preset);
	snprintf(c.routing, sizeof(c.routing), "%s", routing);
	c.max_switches = 32;
	c.seed = seed;
	if (lossy) {
		/* the second class drops what finds a full queue, and queues
		 * fill: its NICs' retries and resends in the run too */
		c.tclass[1].lossy = true;
		c.port_buf_pkts = 2;
	}
	if (var == TELEMETRY) {
		/* samples closed every 137 ns, not every 10 us */
		c.tel_interval = 137 * SSEMU_PS_PER_NS;
		c.tel_samples = 64;
	}
	t = var == SHARED ? tf_open_shared(&c) : tf_open(&c);
	/* endpoints spread over the fabric's switches */
	step = (unsigned)(ssemu_config_nports(&c) / NEPS);
	for (i = 0; i < NEPS; i++) {
		port = i * (step ? step : 1);
		tf_add(t, port);
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	for (i = 0; with_rma && i < NEPS; i++) {
		struct ssemu_mr_desc d = {
			.key = 100 + i, .addr = rma_mem[i],
			.len = sizeof(rma_mem[i]),
			.access = SSEMU_MR_READ | SSEMU_MR_WRITE,
		};

		assert_int_equal(ssemu_mr_reg(t->nic[i], &d), 0);
	}
	ssemu_model_perturb = var == PERTURB;
	ssemu_model_credit_events = var == CREDIT_EVENTS;
	ssemu_model_extra_looks = var == EXTRA_LOOKS;
	ssemu_model_fresh_places = var == FRESH_PLACES;
	ssemu_model_shortcut = var == NO_SHORTCUT ? SSEMU_SHORTCUT_OFF :
			       var == AS_IS ? SSEMU_SHORTCUT_COUNT :
					      SSEMU_SHORTCUT_ON;
	if (var == AS_IS)
		ssemu_model_shortcuts = 0;
	for (i = 0; i < NMSG; i++) {
		from = (unsigned)(tf_rng_next(&s) % NEPS);
		to = (unsigned)(tf_rng_next(&s) % (NEPS - 1));
		to += to >= from;
		/* 1 to 64 packets, or a short one */
		len = tf_rng_next(&s) % 4 ? 1 + tf_rng_next(&s) % 65535 :
					    tf_rng_next(&s) % 64;
		if (streams && i % 8) {
			from = i % 3;
			to = NEPS - 1 - from;
			len = 32768 + tf_rng_next(&s) % 32768;
		}
		if (with_rma && i % 3 == 2) {
			struct iovec iov = { buf, len };
			struct ssemu_rma r = {
				.dest = ssemu_ep_addr(t->ep[to]),
				.tclass = (uint32_t)(i % 2),
				.op = i / 3 % 2 ? SSEMU_RMA_READ :
						  SSEMU_RMA_WRITE,
				.key = 100 + to, .len = len, .cookie = i,
			};

			if (r.op == SSEMU_RMA_WRITE && len) {
				r.iov = &iov;
				r.iov_count = 1;
			}
			post_rma(t, from, &r);
		} else {
			tf_send(t, from, to, buf, len, (uint32_t)(i % 2), i,
				i);
		}
		/* waves, 300 ns of model time apart: the next posts while
		 * these are in flight (by time, not by events run: the
		 * variants run different numbers of events) */
		if (i % 16 == 15)
			assert_int_equal(ssemu_fabric_run_until(t->fab,
					 (i / 16 + 1) * 300 * SSEMU_PS_PER_NS),
					 0);
	}
	/* (the same polls, after as many events, each event a run) */
	tf_run_idle_runs(t, 1000000, var == SMALL_RUNS ? 1 : 4096);
	ssemu_model_perturb = 0;
	ssemu_model_credit_events = 0;
	ssemu_model_extra_looks = 0;
	ssemu_model_fresh_places = 0;
	ssemu_model_shortcut = SSEMU_SHORTCUT_ON;
	if (var == AS_IS)
		last_shortcuts = ssemu_model_shortcuts;
	return t;
}

/*
 * @a's and @b's logs hold the same events for every endpoint, in the same
 * order there (an endpoint's events come in the order the model pushed
 * them).  How the polls interleave the endpoints is the harness's: it
 * polls after runs of a number of events, which the variants differ in.
 */
static void same_logs(const struct tf *a, const struct tf *b)
{
	size_t i, j;
	unsigned ep;

	assert_int_equal(a->nlog, b->nlog);
	for (ep = 0; ep < NEPS; ep++) {
		for (i = j = 0;; i++, j++) {
			const struct tf_rec *x, *y;

			while (i < a->nlog && a->log[i].ep != ep)
				i++;
			while (j < b->nlog && b->log[j].ep != ep)
				j++;
			if (i == a->nlog || j == b->nlog) {
				assert_true(i == a->nlog && j == b->nlog);
				break;
			}
			x = &a->log[i];
			y = &b->log[j];
			if (x->ev.type != y->ev.type ||
			    x->ev.time != y->ev.time ||
			    x->ev.cookie != y->ev.cookie ||
			    x->ev.hdr[1] != y->ev.hdr[1] ||
			    x->ev.len != y->ev.len ||
			    x->ev.status != y->ev.status)
				fail_msg("endpoint %u: event %zu (type %u at "
					 "%llu, message %llu) against event "
					 "%zu (type %u at %llu, message %llu)",
					 ep, i, x->ev.type,
					 (unsigned long long)x->ev.time,
					 (unsigned long long)(x->ev.type ==
							      SSEMU_EV_RECV ?
							      x->ev.hdr[1] :
							      x->ev.cookie),
					 j, y->ev.type,
					 (unsigned long long)y->ev.time,
					 (unsigned long long)(y->ev.type ==
							      SSEMU_EV_RECV ?
							      y->ev.hdr[1] :
							      y->ev.cookie));
		}
	}
}

static void check(const char *preset, const char *routing, uint64_t seed)
{
	struct tf *a = run(preset, routing, seed, AS_IS);
	struct tf *b = run(preset, routing, seed, PERTURB);
	struct tf *c = run(preset, routing, seed, CREDIT_EVENTS);
	struct tf *d = run(preset, routing, seed, EXTRA_LOOKS);
	struct tf *e = run(preset, routing, seed, FRESH_PLACES);
	struct tf *g = run(preset, routing, seed, TELEMETRY);
	struct tf *h = run(preset, routing, seed, SHARED);
	struct tf *k = run(preset, routing, seed, SMALL_RUNS);
	struct tf *n = run(preset, routing, seed, NO_SHORTCUT);
	struct ssemu_fabric_stats sa, sc, sd, sn;
	unsigned nrma = with_rma ? (NMSG + 1) / 3 : 0;
	size_t i;

	/* every message delivered and completed, every RMA done */
	assert_int_equal(tf_count(a, UINT32_MAX, SSEMU_EV_RECV), NMSG - nrma);
	assert_int_equal(tf_count(a, UINT32_MAX, SSEMU_EV_SEND_DONE),
			 NMSG - nrma);
	assert_int_equal(tf_count(a, UINT32_MAX, SSEMU_EV_RMA_DONE), nrma);
	for (i = 0; i < a->nlog; i++)
		assert_int_equal(a->log[i].ev.status, 0);
	same_logs(a, b);
	same_logs(a, c);
	same_logs(a, d);
	same_logs(a, e);
	same_logs(a, g);
	same_logs(a, h);
	same_logs(a, k);
	same_logs(a, n);
	/* the credits took events: more of them, the same hops */
	assert_int_equal(ssemu_fabric_stats(a->fab, &sa), 0);
	last_hops = sa.pkt_hops;
	last_train_hops = sa.train_hops;
	assert_int_equal(ssemu_fabric_stats(c->fab, &sc), 0);
	assert_true(sc.events > sa.events);
	assert_true(sc.pkt_hops == sa.pkt_hops);
	assert_true(sc.switch_lat_sum == sa.switch_lat_sum);
	/* so did the extra looks */
	assert_int_equal(ssemu_fabric_stats(d->fab, &sd), 0);
	assert_true(sd.events > sa.events);
	assert_true(sd.pkt_hops == sa.pkt_hops);
	assert_true(sd.switch_lat_sum == sa.switch_lat_sum);
	/* the shortcut: taken, and the same events as without it */
	assert_int_equal(ssemu_fabric_stats(n->fab, &sn), 0);
	assert_true(last_shortcuts > 0);
	assert_true(sn.events == sa.events);
	assert_true(sn.pkt_hops == sa.pkt_hops);
	assert_true(sn.switch_lat_sum == sa.switch_lat_sum);
	assert_true(sn.train_hops == sa.train_hops);
	tf_close(a);
	tf_close(b);
	tf_close(c);
	tf_close(d);
	tf_close(e);
	tf_close(g);
	tf_close(h);
	tf_close(k);
	tf_close(n);
}

static void order_one_switch(void **state)
{
	(void)state;
	check("switch", "minimal", 1);
	check("switch", "minimal", 2);
}

static void order_groups_minimal(void **state)
{
	(void)state;
	check("2group", "minimal", 3);
}

static void order_groups_adaptive(void **state)
{
	(void)state;
	check("2group", "adaptive", 4);
	check("2group", "ugal", 5);
}

static void order_rma(void **state)
{
	(void)state;
	with_rma = true;
	check("2group", "minimal", 8);
	lossy = true;
	check("2group", "adaptive", 9);
	lossy = false;
	with_rma = false;
}

/* (the streams are what they say: a packet following its message's
 * previous one through an output with nothing else waiting on a third of
 * the hops or more, against an eighth to a quarter in the traffic above) */
static void check_streams(const char *preset, const char *routing,
			  uint64_t seed)
{
	check(preset, routing, seed);
	assert_true(last_train_hops * 3 >= last_hops);
}

static void order_streams(void **state)
{
	(void)state;
	streams = true;
	check_streams("2group", "minimal", 10);
	check_streams("2group", "adaptive", 11);
	lossy = true;
	check_streams("2group", "minimal", 12);
	lossy = false;
	streams = false;
}

static void order_lossy(void **state)
{
	(void)state;
	lossy = true;
	check("2group", "minimal", 6);
	check("2group", "adaptive", 7);
	lossy = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(order_one_switch),
		cmocka_unit_test(order_groups_minimal),
		cmocka_unit_test(order_groups_adaptive),
		cmocka_unit_test(order_lossy),
		cmocka_unit_test(order_streams),
		cmocka_unit_test(order_rma),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
