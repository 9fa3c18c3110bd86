/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the link model (emu/ssemu_model.c) through the public API on
 * in-process fabrics: a back-to-back flow saturates the edge link at exactly
 * rate x payload / (payload + packet overhead); a message's latency is
 * serialisation plus propagation on every link plus the switch pipeline
 * (store and forward, so a multi-packet message pays its first packet twice);
 * and across a Dragonfly each link kind (edge, local, global) serialises at
 * its own rate and adds its own delay.
 */
#include <errno.h>
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

#include "ssemu_topo.h"

/* ------------------------------------------------------------------ */
/* Harness: an in-process fabric with NICs, one endpoint each           */
/* ------------------------------------------------------------------ */

/* Serialisation time exactly as a link computes it (rounded up to 1 ps). */
static ssemu_time_t ser_ps(uint64_t bytes, uint64_t rate_bps)
{
	return (bytes * 8 * SSEMU_PS_PER_S + rate_bps - 1) / rate_bps;
}

/* ------------------------------------------------------------------ */
/* Goodput                                                              */
/* ------------------------------------------------------------------ */

struct rx_times {
	ssemu_time_t *t;
	size_t n, cap;
	size_t len;		/* expected RECV length */
};

static void record_rx(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct rx_times *rt = t->priv;

	assert_true(ev->len == rt->len);
	assert_true(rt->n < rt->cap);
	/* in order: hdr[1] carries the sequence number */
	assert_true(ev->hdr[1] == rt->n);
	rt->t[rt->n++] = ev->time;
}

/*
 * One source posts @nmsg messages of @size bytes back to back (the engine
 * runs one event at a time and the source refills as soon as it may), and
 * the goodput over the middle 80% of the arrivals is compared with what the
 * edge link can carry.
 */
static void check_goodput(struct ssemu_config *c, size_t size, unsigned nmsg)
{
	struct rx_times rt = { .cap = nmsg, .len = size };
	uint64_t npkts = size ? (size + c->mtu - 1) / c->mtu : 1;
	double expect, got, bits;
	unsigned a, b, posted = 0, lo = nmsg / 10, hi = nmsg - nmsg / 10;
	struct ssemu_nic_stats st;
	uint8_t *buf;
	struct tf *t;
	int ret;

	c->bufs_per_ep = 64;
	c->msgs_per_ep = 256;
	t = tf_open(c);
	a = tf_add(t, 0);
	b = tf_add(t, 1);
	rt.t = calloc(nmsg, sizeof(*rt.t));
	buf = calloc(1, size + 1);
	assert_non_null(rt.t);
	assert_non_null(buf);
	t->priv = &rt;
	t->on_recv = record_rx;
	while (rt.n < nmsg) {
		while (posted < nmsg) {
			struct iovec iov = { buf, size };
			struct ssemu_send s = {
				.dest = ssemu_ep_addr(t->ep[b]),
				.tclass = c->default_tclass,
				.iov = &iov,
				.iov_count = 1,
				.cookie = posted,
			};

			s.hdr[1] = posted;
			ret = ssemu_ep_send(t->ep[a], &s);
			if (ret == -EAGAIN)
				break;
			assert_int_equal(ret, 0);
			posted++;
		}
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
		tf_pump(t);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, a, SSEMU_EV_SEND_DONE), nmsg);
	for (size_t i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[i].ev.status, 0);

	bits = (double)(hi - lo) * (double)size * 8.0;
	got = bits / ((double)(rt.t[hi] - rt.t[lo]) / (double)SSEMU_PS_PER_S);
	expect = (double)c->edge.rate_bps * (double)size /
		 (double)(size + npkts * c->pkt_overhead);
	if (got < expect * 0.99 || got > expect * 1.01)
		fail_msg("size %zu: goodput %.4g b/s, expected %.4g b/s "
			 "(rate %.4g, %llu packets of overhead %u)", size, got,
			 expect, (double)c->edge.rate_bps,
			 (unsigned long long)npkts, c->pkt_overhead);
	/* the counters agree with what was sent */
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st), 0);
	assert_true(st.tx_msgs == nmsg);
	assert_true(st.tx_bytes == (uint64_t)nmsg * size);
	assert_true(st.acks == (uint64_t)nmsg * npkts);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st), 0);
	assert_true(st.rx_msgs == nmsg);
	assert_true(st.rx_pkts == (uint64_t)nmsg * npkts);
	assert_true(st.rx_bytes == (uint64_t)nmsg * size);
	free(rt.t);
	free(buf);
	tf_close(t);
}

static void test_link_saturation_goodput_mtu(void **state)
{
	struct ssemu_config c;

	/* 2048 + 64 bytes a packet at 200 Gb/s: 193.9 Gb/s of payload */
	tf_config(&c, "switch");
	check_goodput(&c, 2048, 1000);
}

static void test_link_saturation_goodput_multi_packet(void **state)
{
	struct ssemu_config c;

	/* 3000 bytes in 1024 + 1024 + 952, 40 bytes overhead each, 100 Gb/s */
	tf_config(&c, "switch");
	c.mtu = 1024;
	c.pkt_overhead = 40;
	c.edge.rate_bps = 100000000000ULL;
	c.edge.delay = 20 * SSEMU_PS_PER_NS;
	check_goodput(&c, 3000, 600);
}

static void test_link_saturation_goodput_small(void **state)
{
	struct ssemu_config c;

	/*
	 * Inline messages: overhead is a quarter of the wire.  A 256-byte
	 * packet takes 10.24 ns, so the ~370 ns credit loop and ~745 ns
	 * round trip need more than the preset's 32 credits and 64-packet
	 * window to keep the link busy.
	 */
	tf_config(&c, "switch");
	c.port_buf_pkts = 64;
	c.nic_window = 128;
	check_goodput(&c, SSEMU_INLINE_MAX, 2000);
}

/* ------------------------------------------------------------------ */
/* Latency                                                              */
/* ------------------------------------------------------------------ */

/* Latency of one message of @len bytes from @a to @b on an idle fabric
 * (RECV time minus post time), and of its SEND_DONE. */
static void one_message(struct tf *t, unsigned a, unsigned b, size_t len,
			ssemu_time_t *lat, ssemu_time_t *done)
{
	static uint8_t buf[65536];
	ssemu_time_t t0;
	size_t first = t->nlog, i;
	bool rx = false, tx = false;

	/* start from a time that is not a round number */
	assert_int_equal(ssemu_fabric_run_until(t->fab, ssemu_fabric_now(
						  t->fab) + 1234567), 0);
	assert_true(ssemu_fabric_idle(t->fab));
	t0 = ssemu_fabric_now(t->fab);
	tf_send(t, a, b, buf, len, t->cfg.default_tclass, 7, 0);
	tf_run_idle(t, 100000);
	for (i = first; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type == SSEMU_EV_RECV) {
			assert_int_equal(t->log[i].ep, b);
			assert_true(ev->len == len);
			assert_true(ev->hdr[0] == t0);
			*lat = ev->time - t0;
			rx = true;
		} else {
			assert_int_equal(t->log[i].ep, a);
			assert_int_equal(ev->status, 0);
			assert_true(ev->cookie == 7);
			*done = ev->time - t0;
			tx = true;
		}
	}
	assert_true(rx && tx);
}

static void check_zero_byte(struct ssemu_config *c)
{
	ssemu_time_t lat = 0, done = 0, expect;
	struct tf *t;
	unsigned a, b;

	tf_fixed_pipeline(c);
	t = tf_open(c);
	a = tf_add(t, 0);
	b = tf_add(t, 1);
	one_message(t, a, b, 0, &lat, &done);
	expect = 2 * (ser_ps(c->pkt_overhead, c->edge.rate_bps) +
		      c->edge.delay) + c->sw_lat_mean;
	if (lat != expect)
		fail_msg("0-byte latency %llu ps, expected 2 x (%llu + %llu) + "
			 "%llu = %llu ps", (unsigned long long)lat,
			 (unsigned long long)ser_ps(c->pkt_overhead,
						    c->edge.rate_bps),
			 (unsigned long long)c->edge.delay,
			 (unsigned long long)c->sw_lat_mean,
			 (unsigned long long)expect);
	/* the acknowledgement is another 0-byte packet back */
	assert_true(done == 2 * expect);
	/* and again, the other way, later: nothing accumulates */
	one_message(t, b, a, 0, &lat, &done);
	assert_true(lat == expect);
	tf_close(t);
}

static void test_link_zero_byte_latency(void **state)
{
	struct ssemu_config c;

	/* 2 x (2.56 ns + 5 ns) + 350 ns = 365.12 ns */
	tf_config(&c, "switch");
	check_zero_byte(&c);
	/* and with other link parameters: 2 x (3.2 + 20) + 500 ns */
	tf_config(&c, "switch");
	c.edge.rate_bps = 100000000000ULL;
	c.edge.delay = 20 * SSEMU_PS_PER_NS;
	c.pkt_overhead = 40;
	c.sw_lat_mean = 500 * SSEMU_PS_PER_NS;
	c.sw_lat_min = c.sw_lat_max = c.sw_lat_mean;
	check_zero_byte(&c);
	/* a rate that does not divide evenly: rounded up per link */
	tf_config(&c, "switch");
	c.edge.rate_bps = 3000000000ULL;
	c.pkt_overhead = 1;
	check_zero_byte(&c);
}

/*
 * Store and forward through one switch: the NIC serialises every packet,
 * the switch forwards each after the pipeline and its output streams them
 * back to back, so the last byte lands ser(first) + sum(ser) + 2 delays +
 * pipeline after the post.
 */
static void test_link_store_and_forward_latency(void **state)
{
	static const size_t sizes[] = {
		1, 191, 192, 193, 2047, 2048, 2049, 4096, 10000, 65535, 65536,
	};
	struct ssemu_config c;
	ssemu_time_t lat = 0, done = 0, expect, sum;
	struct tf *t;
	unsigned a, b;
	size_t i, left, first;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	t = tf_open(&c);
	a = tf_add(t, 3);
	b = tf_add(t, 12);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one_message(t, a, b, sizes[i], &lat, &done);
		sum = 0;
		first = sizes[i] < c.mtu ? sizes[i] : c.mtu;
		for (left = sizes[i]; left; left -= left < c.mtu ? left : c.mtu)
			sum += ser_ps((left < c.mtu ? left : c.mtu) +
				      c.pkt_overhead, c.edge.rate_bps);
		expect = ser_ps(first + c.pkt_overhead, c.edge.rate_bps) + sum +
			 2 * c.edge.delay + c.sw_lat_mean;
		if (lat != expect)
			fail_msg("%zu bytes: latency %llu ps, expected %llu ps",
				 sizes[i], (unsigned long long)lat,
				 (unsigned long long)expect);
		assert_true(done > lat);
	}
	tf_close(t);
}

/*
 * Across the Dragonfly: the 0-byte latency between two endpoints is the sum
 * over the links of the path (ser at the link's rate + its delay) plus one
 * pipeline per switch.  The path depends on the global-link copy the model
 * picks, so the measured latency must be the one of some copy's path.  The
 * three link kinds get different rates and delays to tell them apart.
 */
static ssemu_time_t path_latency(const struct ssemu_config *c,
				 const struct ssemu_topo *topo, uint64_t src,
				 uint64_t dst, uint32_t copy, uint32_t *nsw)
{
	uint32_t sw = ssemu_topo_ep_switch(topo, src), port;
	ssemu_time_t lat = ser_ps(c->pkt_overhead, c->edge.rate_bps) +
			   c->edge.delay;
	struct ssemu_peer peer;

	*nsw = 0;
	for (;;) {
		const struct ssemu_link_params *lp;

		lat += c->sw_lat_mean;
		(*nsw)++;
		port = ssemu_topo_min_port(topo, sw, dst, copy);
		ssemu_topo_peer(topo, sw, port, &peer);
		lp = peer.kind == SSEMU_PORT_LOCAL ? &c->local :
		     peer.kind == SSEMU_PORT_GLOBAL ? &c->global : &c->edge;
		lat += ser_ps(c->pkt_overhead, lp->rate_bps) + lp->delay;
		if (peer.kind == SSEMU_PORT_ENDPOINT)
			return lat;
		assert_true(peer.kind != SSEMU_PORT_NONE && *nsw < 5);
		sw = peer.sw;
	}
}

static void test_link_multihop_latency(void **state)
{
	static const uint32_t pairs[][2] = {
		{ 0, 1 },	/* same switch */
		{ 0, 17 },	/* same group, other switch */
		{ 5, 40 },	/* other group */
		{ 20, 63 },
		{ 63, 0 },
		{ 33, 2 },
	};
	struct ssemu_config c;
	struct ssemu_topo topo;
	struct ssemu_fabric_stats fs0, fs1;
	ssemu_time_t lat = 0, done = 0, want[8];
	struct tf *t;
	uint32_t ncopies, copy, nsw[8];
	unsigned ep[64] = { 0 }, i;
	bool seen_port[64] = { false }, match;
	char err[256];

	tf_config(&c, "2group");
	tf_fixed_pipeline(&c);
	c.edge.rate_bps = 200000000000ULL;
	c.edge.delay = 5 * SSEMU_PS_PER_NS;
	c.local.rate_bps = 100000000000ULL;
	c.local.delay = 12 * SSEMU_PS_PER_NS;
	c.global.rate_bps = 50000000000ULL;
	c.global.delay = 150 * SSEMU_PS_PER_NS;
	assert_int_equal(ssemu_topo_init(&topo, &c.topo, err, sizeof(err)), 0);
	t = tf_open(&c);
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		for (int k = 0; k < 2; k++) {
			if (!seen_port[pairs[i][k]]) {
				ep[pairs[i][k]] = tf_add(t, pairs[i][k]);
				seen_port[pairs[i][k]] = true;
			}
		}
	}
	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		uint32_t gs = pairs[i][0] / 32, gd = pairs[i][1] / 32;

		ncopies = gs == gd ? 1 : ssemu_topo_ncopies(&topo, gs, gd);
		assert_true(ncopies >= 1 && ncopies <= 8);
		for (copy = 0; copy < ncopies; copy++)
			want[copy] = path_latency(&c, &topo, pairs[i][0],
						  pairs[i][1], copy,
						  &nsw[copy]);
		assert_int_equal(ssemu_fabric_stats(t->fab, &fs0), 0);
		one_message(t, ep[pairs[i][0]], ep[pairs[i][1]], 0, &lat,
			    &done);
		assert_int_equal(ssemu_fabric_stats(t->fab, &fs1), 0);
		match = false;
		for (copy = 0; copy < ncopies; copy++) {
			if (lat == want[copy]) {
				match = true;
				/* every switch of the data path counted a
				 * hop, and the ack took some path back */
				assert_true(fs1.pkt_hops - fs0.pkt_hops >=
					    nsw[copy] + 1);
			}
		}
		if (!match)
			fail_msg("%u -> %u: latency %llu ps matches none of "
				 "the %u paths (first %llu ps, %u switches)",
				 pairs[i][0], pairs[i][1],
				 (unsigned long long)lat, ncopies,
				 (unsigned long long)want[0], nsw[0]);
		assert_true(fs1.pkts_delivered - fs0.pkts_delivered == 1);
	}
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_saturation_goodput_mtu),
		cmocka_unit_test(test_link_saturation_goodput_multi_packet),
		cmocka_unit_test(test_link_saturation_goodput_small),
		cmocka_unit_test(test_link_zero_byte_latency),
		cmocka_unit_test(test_link_store_and_forward_latency),
		cmocka_unit_test(test_link_multihop_latency),
	};

	return cmocka_run_group_tests_name("link", tests, NULL, NULL);
}
