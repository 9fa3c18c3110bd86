/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the switch model (emu/ssemu_switch.c) through the public
 * API on in-process fabrics: the per-hop latency histogram under
 * light load (350 ns +- 15, p99 under 400 ns), virtual output queues (a
 * congested output does not hold back an input's traffic to an idle one),
 * credit flow control (one-packet buffers stall and resume without losing
 * anything), strict priority between traffic classes, round-robin fairness
 * between inputs, freedom from routing deadlock across Dragonfly groups,
 * the count of hops on which a packet follows its message's previous one
 * with nothing else waiting (what a packet train would carry), and a lone
 * message's delivery and completion times against lone.c's recurrence
 * (what a packet train would compute).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "lone.h"
#include "ssemu_compiler.h"
#include "ssemu_priv.h"	/* ssemu_model_trains_sent */
#include "tf.h"

/* ------------------------------------------------------------------ */
/* Harness: an in-process fabric with NICs, one endpoint each           */
/* ------------------------------------------------------------------ */

/* Running latency sums per (sender, receiver), from hdr[0] = post time. */
struct lat_acc {
	double sum[TF_MAX][TF_MAX];
	uint64_t n[TF_MAX][TF_MAX];
	uint64_t bytes[TF_MAX];		/* received per sender */
};

static unsigned ep_of_port(struct tf *t, uint32_t port)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (ssemu_nic_port(t->nic[i]) == port)
			return i;
	fail_msg("no endpoint at port %u", port);
	return 0;
}

static void acc_latency(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct lat_acc *a = t->priv;
	unsigned src = ep_of_port(t, SSEMU_ADDR_PORT(ev->src));

	assert_true(ev->time >= ev->hdr[0]);
	a->sum[src][ep] += (double)(ev->time - ev->hdr[0]);
	a->n[src][ep]++;
	a->bytes[src] += ev->len;
}

static double mean_ns(const struct lat_acc *a, unsigned s, unsigned d)
{
	assert_true(a->n[s][d] > 0);
	return a->sum[s][d] / (double)a->n[s][d] / SSEMU_PS_PER_NS;
}

/* ------------------------------------------------------------------ */
/* Pipeline latency                                                     */
/* ------------------------------------------------------------------ */

/* Random small messages between random endpoints, one every @gap_ps. */
static void light_traffic(struct tf *t, unsigned nmsg, ssemu_time_t gap_ps,
			  uint64_t seed)
{
	static uint8_t buf[256];
	uint64_t rng = seed;
	unsigned k, s, d;

	for (k = 0; k < nmsg; k++) {
		assert_int_equal(ssemu_fabric_run_until(t->fab,
			ssemu_fabric_now(t->fab) + gap_ps), 0);
		tf_pump(t);
		s = (unsigned)(tf_rng_next(&rng) % t->n);
		d = (unsigned)(tf_rng_next(&rng) % (t->n - 1));
		if (d >= s)
			d++;
		tf_send(t, s, d, buf, tf_rng_next(&rng) % sizeof(buf),
			t->cfg.default_tclass, k, k);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV), nmsg);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE), nmsg);
}

static void test_switch_latency_light_load(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric_stats fs;
	struct ssemu_latency lat;
	struct tf *t;
	unsigned i;

	/* the default preset: normal(350, 15) clipped to [300, 400] */
	tf_config(&c, "switch");
	t = tf_open(&c);
	assert_int_equal(ssemu_fabric_switch_latency(t->fab, &lat), 0);
	assert_true(lat.count == 0);
	for (i = 0; i < 16; i++)
		tf_add(t, i);
	light_traffic(t, 5000, 400 * SSEMU_PS_PER_NS, 1);
	assert_int_equal(ssemu_fabric_switch_latency(t->fab, &lat), 0);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	/* one data and one ack hop per message, all counted */
	assert_true(lat.count == 10000);
	assert_true(fs.pkt_hops == lat.count);
	assert_true(fs.pkts_delivered == 5000);
	assert_true(fabs(lat.mean_ns - (double)fs.switch_lat_sum /
				       (double)fs.pkt_hops / 1000.0) < 1e-6);
	if (lat.mean_ns < 335 || lat.mean_ns > 365)
		fail_msg("mean switch latency %.2f ns, want 350 +- 15",
			 lat.mean_ns);
	if (lat.p99_ns >= 400)
		fail_msg("p99 switch latency %.0f ns, want < 400", lat.p99_ns);
	assert_true(lat.p50_ns >= 340 && lat.p50_ns <= 360);
	assert_true(lat.p99_ns > lat.p50_ns);
	/* clipped at min; the rare slow path stays under 2 x max - min */
	assert_true(lat.max_ns >= lat.p99_ns && lat.max_ns <= 500);
	tf_close(t);
}

static void test_switch_latency_fixed_pipeline(void **state)
{
	struct ssemu_config c;
	struct ssemu_latency lat;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	c.sw_lat_mean = c.sw_lat_min = c.sw_lat_max = 275 * SSEMU_PS_PER_NS;
	t = tf_open(&c);
	for (i = 0; i < 8; i++)
		tf_add(t, i);
	/* far apart: no two packets ever meet in the switch */
	light_traffic(t, 300, 2000 * SSEMU_PS_PER_NS, 2);
	assert_int_equal(ssemu_fabric_switch_latency(t->fab, &lat), 0);
	assert_true(lat.count == 600);
	assert_true(lat.mean_ns == 275.0);
	assert_true(lat.p50_ns == 275.0 && lat.p99_ns == 275.0 &&
		    lat.max_ns == 275.0);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Virtual output queues                                                */
/* ------------------------------------------------------------------ */

enum { HOL_A, HOL_D, HOL_E, HOL_B, HOL_C, HOL_F };

/*
 * A sends an 8-packet message to D and then a 1-packet message to E every
 * 4 us (A's share of D stays under a quarter).  With @incast, B, C and F
 * keep D's output saturated, so A's packets to D wait in the switch behind
 * theirs.  Returns the mean latencies A->E and A->D.
 */
static void hol_run(bool incast, double *lat_e, double *lat_d)
{
	static uint8_t buf[16384];
	struct lat_acc *acc = calloc(1, sizeof(*acc));
	struct ssemu_config c;
	struct tf *t;
	unsigned r, i, src;
	ssemu_time_t next = 0;

	assert_non_null(acc);
	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	c.bufs_per_ep = 32;
	c.msgs_per_ep = 128;
	t = tf_open(&c);
	for (i = 0; i < 6; i++)
		assert_int_equal(tf_add(t, i), i);
	t->priv = acc;
	t->on_recv = acc_latency;
	for (r = 0; r < 40; r++) {
		next += 4 * SSEMU_PS_PER_US;
		/* advance in small steps, keeping the incast sources full */
		while (ssemu_fabric_now(t->fab) < next) {
			for (src = HOL_B; incast && src <= HOL_F; src++) {
				struct iovec iov = { buf, 2048 };
				struct ssemu_send s = {
					.dest = ssemu_ep_addr(t->ep[HOL_D]),
					.tclass = c.default_tclass,
					.iov = &iov,
					.iov_count = 1,
				};

				s.hdr[0] = ssemu_fabric_now(t->fab);
				while (!ssemu_ep_send(t->ep[src], &s))
					;
			}
			assert_int_equal(ssemu_fabric_run_until(t->fab,
				ssemu_fabric_now(t->fab) +
				200 * SSEMU_PS_PER_NS), 0);
			tf_pump(t);
		}
		tf_send(t, HOL_A, HOL_D, buf, 8 * 2048, c.default_tclass, r, 0);
		tf_send(t, HOL_A, HOL_E, buf, 2048, c.default_tclass, r, 0);
	}
	tf_run_idle(t, 1000000);
	assert_true(acc->n[HOL_A][HOL_E] == 40 && acc->n[HOL_A][HOL_D] == 40);
	if (incast)
		for (src = HOL_B; src <= HOL_F; src++)
			assert_true(acc->n[src][HOL_D] > 100);
	*lat_e = mean_ns(acc, HOL_A, HOL_E);
	*lat_d = mean_ns(acc, HOL_A, HOL_D);
	free(acc);
	tf_close(t);
}

static void test_switch_voq_no_head_of_line_blocking(void **state)
{
	double e0, d0, e1, d1;

	hol_run(false, &e0, &d0);
	hol_run(true, &e1, &d1);
	/* the incast really congests D: A's messages to D wait */
	if (d1 < 2 * d0)
		fail_msg("incast did not congest D: A->D %.0f ns alone, "
			 "%.0f ns with incast", d0, d1);
	/* ... but A's packets to E do not wait behind them */
	if (e1 > e0 * 1.02 + 1.0)
		fail_msg("head-of-line blocking: A->E %.1f ns alone, %.1f ns "
			 "while A->D is congested (A->D %.0f ns)", e0, e1, d1);
}

/* ------------------------------------------------------------------ */
/* Credits                                                              */
/* ------------------------------------------------------------------ */

struct incast_check {
	uint64_t msgs, bytes;
	ssemu_time_t last;
};

static uint8_t pattern_byte(uint64_t src, uint64_t seq, size_t off)
{
	return (uint8_t)(src * 131 + seq * 7 + off * 13 + (off >> 8));
}

static void check_incast_data(struct tf *t, unsigned ep,
			      const struct ssemu_event *ev)
{
	struct incast_check *ic = t->priv;
	const uint8_t *p = ssemu_event_data(t->ep[ep], ev);
	size_t off;

	assert_int_equal(ep, 0);
	assert_non_null(p);
	for (off = 0; off < ev->len; off++)
		if (p[off] != pattern_byte(ev->hdr[1] >> 32,
					   ev->hdr[1] & 0xffffffff, off))
			fail_msg("corrupt byte %zu of message %llx", off,
				 (unsigned long long)ev->hdr[1]);
	ic->msgs++;
	ic->bytes += ev->len;
	ic->last = ev->time;
}

/* Four sources send 16 x 8 KiB each to endpoint 0; returns the time the
 * last message lands and the sources' credit stalls. */
static ssemu_time_t incast_run(uint32_t buf_pkts, uint64_t *credit_stalls)
{
	struct incast_check ic = { 0 };
	struct ssemu_nic_stats st;
	struct ssemu_config c;
	static uint8_t buf[8192];
	struct tf *t;
	unsigned i, k, src;
	size_t off;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	c.port_buf_pkts = buf_pkts;
	t = tf_open(&c);
	for (i = 0; i < 5; i++)
		tf_add(t, i);
	t->priv = &ic;
	t->on_recv = check_incast_data;
	for (k = 0; k < 16; k++) {
		for (src = 1; src <= 4; src++) {
			for (off = 0; off < sizeof(buf); off++)
				buf[off] = pattern_byte(src, k, off);
			tf_send(t, src, 0, buf, sizeof(buf), c.default_tclass,
				k, (uint64_t)src << 32 | k);
		}
	}
	tf_run_idle(t, 1000000);
	/* nothing lost, nothing duplicated, every send acknowledged */
	assert_true(ic.msgs == 64);
	assert_true(ic.bytes == 64 * sizeof(buf));
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE), 64);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[i].ev.status, 0);
	assert_int_equal(ssemu_nic_stats(t->nic[0], &st), 0);
	assert_true(st.rx_pkts == 64 * 4);
	*credit_stalls = 0;
	for (src = 1; src <= 4; src++) {
		assert_int_equal(ssemu_nic_stats(t->nic[src], &st), 0);
		assert_true(st.acks == 16 * 4);
		*credit_stalls += st.credit_stalls;
	}
	tf_close(t);
	return ic.last;
}

static void test_switch_credit_stall_and_resume(void **state)
{
	uint64_t stalls1, stalls32;
	ssemu_time_t t1, t32, wire;

	t32 = incast_run(32, &stalls32);
	t1 = incast_run(1, &stalls1);
	/* with deep buffers the output is the bottleneck: 256 packets */
	wire = 256 * ((2048 + 64) * 8 * SSEMU_PS_PER_S / 200000000000ULL);
	assert_true(t32 >= wire);
	assert_true(t32 < wire + wire / 20 + 2 * SSEMU_PS_PER_US);
	/* one credit per input: each source waits a credit round trip per
	 * packet, which the incast cannot hide */
	if (t1 < t32 + t32 / 5)
		fail_msg("1-packet buffers: %llu ps, 32-packet: %llu ps",
			 (unsigned long long)t1, (unsigned long long)t32);
	assert_true(stalls1 > 0);
	assert_true(stalls1 > stalls32);
}

/* The time the last message landed, and how many did. */
static void note_recv(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct incast_check *ic = t->priv;

	ic->msgs++;
	ic->bytes += ev->len;
	ic->last = ev->time;
}

/* Endpoint 0 (switch 0) sends @n messages of @size bytes (at most 8 KiB)
 * to endpoint @dst (16: on switch 1, over one local link); returns when the
 * last one landed. */
static ssemu_time_t stream_run(uint32_t buf_pkts, uint32_t dst, unsigned n,
			       size_t size, const struct ssemu_config **cfg)
{
	static struct ssemu_config c;
	static uint8_t buf[8192];
	struct incast_check ic = { 0 };
	struct tf *t;
	unsigned k;

	assert_true(size <= sizeof(buf));
	tf_config(&c, "2switch");
	tf_fixed_pipeline(&c);
	c.port_buf_pkts = buf_pkts;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, dst);
	t->priv = &ic;
	t->on_recv = note_recv;
	for (k = 0; k < n; k++)
		tf_send(t, 0, 1, buf, size, c.default_tclass, k, k);
	tf_run_idle(t, 1000000);
	assert_true(ic.msgs == n);
	assert_true(ic.bytes == n * size);
	tf_close(t);
	*cfg = &c;
	return ic.last;
}

/* 16 x 8 KiB: 64 full packets. */
static ssemu_time_t local_stream_run(uint32_t buf_pkts, uint32_t dst,
				     const struct ssemu_config **cfg)
{
	return stream_run(buf_pkts, dst, 16, 8192, cfg);
}

/*
 * Credits between two switches, and from a switch to a NIC (they come back
 * without an event of their own, and wake the output they free).  With one packet of buffer, the
 * local link carries a packet per credit round trip: serialisation, the
 * link delay, the next switch's pipeline (the packet leaves its buffer
 * then), the delay back.  Slower would mean an output not woken when its
 * credit came back; faster, a credit counted before it was back.
 */
static void test_switch_credit_round_trip_between_switches(void **state)
{
	const struct ssemu_config *c;
	ssemu_time_t t1, t32, cycle, ser, ser_e, want;

	t32 = local_stream_run(32, 16, &c);
	t1 = local_stream_run(1, 16, &c);
	/* serialisation times, rounded up as the model does */
	ser = (((ssemu_time_t)c->mtu + c->pkt_overhead) * 8 * SSEMU_PS_PER_S +
	       c->local.rate_bps - 1) / c->local.rate_bps;
	ser_e = (((ssemu_time_t)c->mtu + c->pkt_overhead) * 8 * SSEMU_PS_PER_S +
		 c->edge.rate_bps - 1) / c->edge.rate_bps;
	cycle = ser + 2 * c->local.delay + c->sw_lat_mean;
	/* the first packet to switch 0's output, 63 round trips, the last
	 * packet on to its NIC */
	want = ser_e + c->edge.delay + c->sw_lat_mean + 63 * cycle +
	       ser + c->local.delay + c->sw_lat_mean + ser_e + c->edge.delay;
	if (t1 != want)
		fail_msg("1-packet buffers: last message at %llu ps, want "
			 "%llu (a credit round trip is %llu ps)",
			 (unsigned long long)t1, (unsigned long long)want,
			 (unsigned long long)cycle);
	/* deep buffers: the link's own rate */
	assert_true(t32 < 64 * ser + 5 * SSEMU_PS_PER_US);

	/* the same between a NIC and its switch: to endpoint 1, same switch */
	t1 = local_stream_run(1, 1, &c);
	cycle = ser_e + 2 * c->edge.delay + c->sw_lat_mean;
	want = ser_e + c->edge.delay + c->sw_lat_mean + 63 * cycle + ser_e +
	       c->edge.delay;
	if (t1 != want)
		fail_msg("1-packet buffers, NIC to switch: last message at "
			 "%llu ps, want %llu (a credit round trip is %llu ps)",
			 (unsigned long long)t1, (unsigned long long)want,
			 (unsigned long long)cycle);
}

/*
 * Credits count cells (64 bytes), not packets: a buffer of one full packet
 * (33 cells) holds 16 packets of an 8-byte message (72 bytes, 2 cells).
 * Endpoint 0 sends 64 such messages over the local link with one-packet
 * buffers: they need at least 3 and at most 5 credit round trips, where
 * one credit per packet would take 63.
 */
static void test_switch_credits_count_cells(void **state)
{
	const struct ssemu_config *c;
	ssemu_time_t last, ser, cycle, first;

	(void)state;
	last = stream_run(1, 16, 64, 8, &c);
	ser = (((ssemu_time_t)c->mtu + c->pkt_overhead) * 8 * SSEMU_PS_PER_S +
	       c->local.rate_bps - 1) / c->local.rate_bps;
	cycle = 2 * c->local.delay + c->sw_lat_mean;
	/* the first message crosses both switches' pipelines */
	first = 2 * c->sw_lat_mean;
	print_message("64 small messages over 1-packet buffers: last at "
		      "%.3f us (a credit round trip %.3f us)\n",
		      (double)last / SSEMU_PS_PER_US,
		      (double)cycle / SSEMU_PS_PER_US);
	assert_true(last > 3 * cycle + first);
	assert_true(last < 5 * cycle + 4 * ser + 2 * c->sw_lat_mean);
}

/* ------------------------------------------------------------------ */
/* Traffic classes and arbitration                                      */
/* ------------------------------------------------------------------ */

static unsigned check_send(int ret)
{
	if (ret != -EAGAIN)
		assert_int_equal(ret, 0);
	return ret == 0;
}

/*
 * B and C each offer 87% of a link to D (1 KiB every 50 ns), B in class
 * @tc_b and C in @tc_c, under strict-priority arbitration.  Returns their
 * mean latencies.
 */
static void two_flows(uint32_t tc_b, uint32_t tc_c, double *lat_b,
		      double *lat_c)
{
	static uint8_t buf[1024];
	struct lat_acc *acc = calloc(1, sizeof(*acc));
	struct ssemu_config c;
	struct tf *t;
	unsigned k, posted_b = 0, posted_c = 0;

	assert_non_null(acc);
	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	/* strict priority alone: HPE's profile would also cap LOW_LATENCY
	 * at 30% (test_tclass covers the shares) */
	snprintf(c.arb, sizeof(c.arb), "priority-rr");
	snprintf(c.cc, sizeof(c.cc), "none");
	c.msgs_per_ep = 512;
	c.bufs_per_ep = 64;
	t = tf_open(&c);
	tf_add(t, 0);	/* D */
	tf_add(t, 1);	/* B */
	tf_add(t, 2);	/* C */
	t->priv = acc;
	t->on_recv = acc_latency;
	for (k = 0; k < 300; k++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[0]),
			.iov = &iov,
			.iov_count = 1,
		};

		assert_int_equal(ssemu_fabric_run_until(t->fab,
			(ssemu_time_t)k * 50 * SSEMU_PS_PER_NS), 0);
		tf_pump(t);
		s.hdr[0] = ssemu_fabric_now(t->fab);
		/* a source that is backed up (-EAGAIN) offers less */
		s.tclass = tc_b;
		posted_b += check_send(ssemu_ep_send(t->ep[1], &s));
		s.tclass = tc_c;
		posted_c += check_send(ssemu_ep_send(t->ep[2], &s));
	}
	tf_run_idle(t, 1000000);
	assert_true(acc->n[1][0] == posted_b && posted_b >= 64);
	assert_true(acc->n[2][0] == posted_c && posted_c >= 64);
	/* LOW_LATENCY (class 1) never backs up */
	if (tc_b != tc_c)
		assert_int_equal(tc_b == 1 ? posted_b : posted_c, 300);
	*lat_b = mean_ns(acc, 1, 0);
	*lat_c = mean_ns(acc, 2, 0);
	free(acc);
	tf_close(t);
}

static void test_switch_tclass_priority(void **state)
{
	double ll, be, b2, c2;
	/* 1 KiB + 64: 43.52 ns per link; 2 links, 2 delays, pipeline */
	const double base = 2 * 43.52 + 2 * 5 + 350;

	/* LOW_LATENCY (priority 2) against BEST_EFFORT (priority 1) */
	two_flows(1, 3, &ll, &be);
	if (!(ll < base + 50))
		fail_msg("LOW_LATENCY mean %.1f ns, unqueued %.1f ns", ll,
			 base);
	if (!(be > 5 * ll))
		fail_msg("BEST_EFFORT mean %.1f ns is not far above "
			 "LOW_LATENCY %.1f ns", be, ll);
	/* the same two flows in one class share the output: the priority
	 * made the difference, not the order of the ports */
	two_flows(3, 3, &b2, &c2);
	assert_true(b2 > 5 * ll);
	assert_true(b2 < 3 * c2 && c2 < 3 * b2);
	/* and the other way round: C's class wins */
	two_flows(3, 1, &b2, &c2);
	assert_true(c2 < base + 50);
	assert_true(b2 > 5 * c2);
}

/* Four saturating inputs into one output get a quarter each. */
static void test_switch_round_robin_fairness(void **state)
{
	static uint8_t buf[2048];
	struct lat_acc *acc = calloc(1, sizeof(*acc));
	struct ssemu_config c;
	struct tf *t;
	unsigned i, src;
	uint64_t total = 0;

	assert_non_null(acc);
	tf_config(&c, "switch");
	c.bufs_per_ep = 32;
	t = tf_open(&c);
	for (i = 0; i < 5; i++)
		tf_add(t, i);
	t->priv = acc;
	t->on_recv = acc_latency;
	while (ssemu_fabric_now(t->fab) < 100 * SSEMU_PS_PER_US) {
		for (src = 1; src <= 4; src++) {
			struct iovec iov = { buf, sizeof(buf) };
			struct ssemu_send s = {
				.dest = ssemu_ep_addr(t->ep[0]),
				.tclass = c.default_tclass,
				.iov = &iov,
				.iov_count = 1,
			};

			s.hdr[0] = ssemu_fabric_now(t->fab);
			while (!ssemu_ep_send(t->ep[src], &s))
				;
		}
		assert_int_equal(ssemu_fabric_run_until(t->fab,
			ssemu_fabric_now(t->fab) + 100 * SSEMU_PS_PER_NS), 0);
		tf_pump(t);
	}
	for (src = 1; src <= 4; src++)
		total += acc->bytes[src];
	/* the output ran flat out: ~1180 packets in 100 us */
	assert_true(total / 2048 > 1100);
	for (src = 1; src <= 4; src++)
		if (acc->bytes[src] * 4 < total * 95 / 100 ||
		    acc->bytes[src] * 4 > total * 105 / 100)
			fail_msg("input %u got %llu of %llu bytes", src,
				 (unsigned long long)acc->bytes[src],
				 (unsigned long long)total);
	tf_run_idle(t, 1000000);
	free(acc);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Deadlock freedom                                                     */
/* ------------------------------------------------------------------ */

/*
 * Every endpoint of "2group" (default buffers) sends 40 messages of 8 KiB to
 * endpoints of the other group.  Minimal Dragonfly routing has a cyclic
 * channel dependency (local -> global -> local -> global ...) that real
 * switches break with virtual channels per hop; whatever the model does,
 * everything must be delivered.
 */
static void test_switch_no_deadlock_across_groups(void **state)
{
	static uint8_t buf[8192];
	struct ssemu_config c;
	struct tf *t;
	unsigned i, sent[64] = { 0 }, want = 40, rounds = 0;
	size_t rx, done;
	int ret;

	tf_config(&c, "2group");
	c.max_nics = 64;
	c.eps_per_nic = 1;
	c.max_pkts = 65536;
	c.max_events = 262144;
	t = tf_open(&c);
	for (i = 0; i < 64; i++)
		tf_add(t, i);
	for (;;) {
		bool more = false;

		for (i = 0; i < 64; i++) {
			while (sent[i] < want) {
				struct iovec iov = { buf, sizeof(buf) };
				unsigned d = (i + 32 + sent[i]) % 64;
				struct ssemu_send s = {
					.dest = ssemu_ep_addr(t->ep[d]),
					.tclass = c.default_tclass,
					.iov = &iov,
					.iov_count = 1,
				};

				if (ssemu_ep_send(t->ep[i], &s))
					break;
				sent[i]++;
			}
			more |= sent[i] < want;
		}
		ret = ssemu_fabric_progress(t->fab, 1000);
		assert_true(ret >= 0);
		tf_pump(t);
		rx = tf_count(t, UINT32_MAX, SSEMU_EV_RECV);
		done = tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE);
		if (!more && rx == 64 * want && done == 64 * want)
			break;
		if (!ret && ssemu_fabric_idle(t->fab))
			fail_msg("deadlock: the fabric is idle at %.3f us with "
				 "%zu of %u messages delivered and %zu "
				 "acknowledged (packets stuck in switch "
				 "queues with no credits)",
				 (double)ssemu_fabric_now(t->fab) / 1e6, rx,
				 64 * want, done);
		if (++rounds > 2000000)
			fail_msg("no completion after %u rounds", rounds);
	}
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Train hops: packets following their message's previous one           */
/* ------------------------------------------------------------------ */

static uint64_t train_hops(struct tf *t)
{
	struct ssemu_fabric_stats fs;

	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	return fs.train_hops;
}

/*
 * A message alone through a switch: every packet but the first follows
 * the one before it (one hop each).  Two messages into one output at
 * once: each input's packets wait beside the other's, so hardly any
 * follows its predecessor with nothing else queued.  And alone again:
 * the count is as the first time.
 */
static void test_switch_train_hops(void **state)
{
	static uint8_t buf[32768];
	const uint64_t pkts = sizeof(buf) / 2048;
	struct ssemu_config c;
	uint64_t before;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	assert_int_equal(c.mtu, 2048);
	t = tf_open(&c);
	for (i = 0; i < 4; i++)
		tf_add(t, i);
	assert_true(train_hops(t) == 0);

	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 1, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_true(train_hops(t) == pkts - 1);

	before = train_hops(t);
	tf_send(t, 2, 1, buf, sizeof(buf), c.default_tclass, 2, 0);
	tf_send(t, 3, 1, buf, sizeof(buf), c.default_tclass, 3, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 3);
	if (train_hops(t) - before >= pkts - 1)
		fail_msg("two messages into one output: %llu train hops, "
			 "want fewer than one message alone (%llu)",
			 (unsigned long long)(train_hops(t) - before),
			 (unsigned long long)(pkts - 1));

	before = train_hops(t);
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 4, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 4);
	assert_true(train_hops(t) - before == pkts - 1);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* A lone message, packet by packet                                     */
/* ------------------------------------------------------------------ */

/* The latency (event - post) of the one event of @type endpoint @ep
 * logged. */
static ssemu_time_t event_latency(const struct tf *t, unsigned ep,
				  uint32_t type)
{
	size_t i;

	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ep == ep && t->log[i].ev.type == type)
			return t->log[i].ev.time - t->log[i].ev.posted;
	fail_msg("no event of type %u at endpoint %u", type, ep);
	return 0;
}

/*
 * Lone messages of random lengths between random endpoints, each on a
 * fabric of its own: the model delivers and completes each at the
 * picosecond the recurrence gives (lone_send), with as many
 * acknowledgements, packet-hops and picoseconds spent in switches,
 * through one switch, within a group and across groups.  The messages of
 * more than one packet go as packet trains (ssemu_train_send.c): the
 * recurrence, made apart from the model, checks those too.
 */
static void test_switch_lone_message_recurrence(void **state)
{
	static const char *const presets[] = { "switch", "2switch", "2group",
					       "shandy" };
	uint64_t rng = 42, len, src, dst, trains0 = ssemu_model_trains_sent;
	unsigned multi = 0;
	struct ssemu_nic_stats st;
	struct ssemu_config c;
	struct ssemu_topo topo;
	struct ssemu_fabric_stats fs;
	ssemu_time_t got, got_done;
	unsigned p, round, cross = 0;
	struct lone_out o;
	struct tf *t;

	for (p = 0; p < ARRAY_SIZE(presets); p++) {
		for (round = 0; round < 16; round++) {
			lone_case(presets[p], &rng, round, &c, &topo, &src,
				  &dst, &len);
			len++;	/* (one packet to 1 MiB, the last often short) */
			/* half-size packets every other round within one
			 * group: 16 of them arrive within an
			 * acknowledgement's delay, so the count acknowledges
			 * them as well as the timer (and on those short paths
			 * their window never fills) */
			if (round % 2 && p < 2)
				c.mtu = 1024;
			if (ssemu_topo_ep_switch(&topo, src) / topo.a !=
			    ssemu_topo_ep_switch(&topo, dst) / topo.a)
				cross++;
			multi += len > c.mtu;
			t = tf_open(&c);
			tf_add(t, (uint32_t)src);
			tf_add(t, (uint32_t)dst);
			{
				struct iovec iov = { NULL, len };
				struct ssemu_send s = {
					.dest = ssemu_ep_addr(t->ep[1]),
					.flags = SSEMU_SEND_NO_DATA,
					.iov = &iov, .iov_count = 1,
				};

				assert_int_equal(ssemu_ep_send(t->ep[0], &s),
						 0);
			}
			tf_run_idle(t, 100000);
			assert_int_equal(ssemu_nic_stats(t->nic[1], &st), 0);
			assert_int_equal(st.credit_stalls, 0);
			assert_int_equal(ssemu_nic_stats(t->nic[0], &st), 0);
			assert_int_equal(st.window_stalls + st.credit_stalls,
					 0);
			assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
			lone_send(&c, &topo, src, dst, len, &o);
			assert_int_equal(st.ack_pkts, o.acks);
			assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
			assert_int_equal(fs.pkt_hops, o.hops);
			assert_int_equal(fs.switch_lat_sum, o.lat_sum);
			got = event_latency(t, 1, SSEMU_EV_RECV);
			got_done = event_latency(t, 0, SSEMU_EV_SEND_DONE);
			if (got != o.delivery || got_done != o.completion)
				fail_msg("%s, seed %llu, %llu bytes from port "
					 "%llu to %llu: delivered after %llu ps "
					 "and complete after %llu, the recurrence "
					 "gives %llu and %llu", presets[p],
					 (unsigned long long)c.seed,
					 (unsigned long long)len,
					 (unsigned long long)src,
					 (unsigned long long)dst,
					 (unsigned long long)got,
					 (unsigned long long)got_done,
					 (unsigned long long)o.delivery,
					 (unsigned long long)o.completion);
			tf_close(t);
		}
	}
	assert_true(cross > 0);
	/* (every message of more than one packet a train) */
	assert_true(multi > 0);
	assert_int_equal(ssemu_model_trains_sent - trains0, multi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_latency_light_load),
		cmocka_unit_test(test_switch_latency_fixed_pipeline),
		cmocka_unit_test(test_switch_voq_no_head_of_line_blocking),
		cmocka_unit_test(test_switch_credit_stall_and_resume),
		cmocka_unit_test(test_switch_credit_round_trip_between_switches),
		cmocka_unit_test(test_switch_credits_count_cells),
		cmocka_unit_test(test_switch_tclass_priority),
		cmocka_unit_test(test_switch_round_robin_fairness),
		cmocka_unit_test(test_switch_no_deadlock_across_groups),
		cmocka_unit_test(test_switch_train_hops),
		cmocka_unit_test(test_switch_lone_message_recurrence),
	};

	return cmocka_run_group_tests_name("switch", tests, NULL, NULL);
}
