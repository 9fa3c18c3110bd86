/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the NIC model and the endpoint data path (emu/ssemu_model.c,
 * emu/ssemu_fabric.c) through the public API on in-process fabrics:
 * packetisation (k*MTU+1 bytes make k+1 packets) and the counters, in-order
 * delivery of mixed sizes with intact data and header words, the
 * per-destination window, -EAGAIN when slots or buffers run out and recovery
 * once they come back, -EMSGSIZE, -EINVAL, unreachable ports and closed
 * pids, zero-length and gathered messages, event-ring overflow, several
 * endpoints per NIC, closing an endpoint with traffic in flight, running
 * out of model packets, a message whose slot names another
 * destination after its post (delivered to nobody, failed), and
 * completions whose cookie comes from the poster, not the slot.
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

#include "ssemu_priv.h"	/* a message slot, to change it in flight */
#include "tf.h"

/* ------------------------------------------------------------------ */
/* Harness: an in-process fabric with NICs, one endpoint each           */
/* ------------------------------------------------------------------ */

static uint8_t pattern_byte(uint64_t a, uint64_t b, size_t off)
{
	return (uint8_t)(a * 131 + b * 7 + off * 13 + (off >> 8) + (off >> 16));
}

static void fill(uint8_t *buf, size_t len, uint64_t a, uint64_t b)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern_byte(a, b, i);
}

static struct ssemu_nic_stats stats_of(struct tf *t, unsigned i)
{
	struct ssemu_nic_stats st;

	assert_int_equal(ssemu_nic_stats(t->nic[i], &st), 0);
	return st;
}

/* ------------------------------------------------------------------ */
/* Packetisation                                                        */
/* ------------------------------------------------------------------ */

static void check_packets(struct tf *t, unsigned a, unsigned b, size_t len,
			  uint64_t npkts)
{
	static uint8_t buf[65536];
	struct ssemu_nic_stats sa0 = stats_of(t, a), sb0 = stats_of(t, b);
	struct ssemu_nic_stats sa1, sb1;

	tf_send(t, a, b, buf, len, t->cfg.default_tclass, len, 0);
	tf_run_idle(t, 100000);
	sa1 = stats_of(t, a);
	sb1 = stats_of(t, b);
	if (sa1.tx_pkts - sa0.tx_pkts != npkts ||
	    sb1.rx_pkts - sb0.rx_pkts != npkts)
		fail_msg("%zu bytes (mtu %u): %llu packets out, %llu in, want "
			 "%llu", len, t->cfg.mtu,
			 (unsigned long long)(sa1.tx_pkts - sa0.tx_pkts),
			 (unsigned long long)(sb1.rx_pkts - sb0.rx_pkts),
			 (unsigned long long)npkts);
	/* one acknowledgement per packet */
	assert_true(sa1.acks - sa0.acks == npkts);
	assert_true(sa1.tx_msgs - sa0.tx_msgs == 1);
	assert_true(sa1.tx_bytes - sa0.tx_bytes == len);
	assert_true(sb1.rx_msgs - sb0.rx_msgs == 1);
	assert_true(sb1.rx_bytes - sb0.rx_bytes == len);
	/* the receiver sent nothing but acknowledgements */
	assert_true(sb1.tx_msgs == sb0.tx_msgs);
	assert_true(sb1.acks == sb0.acks);
}

static void packetisation(uint32_t mtu, unsigned kmax)
{
	struct ssemu_config c;
	struct tf *t;
	unsigned a, b, k;

	tf_config(&c, "switch");
	c.mtu = mtu;
	t = tf_open(&c);
	a = tf_add(t, 0);
	b = tf_add(t, 1);
	check_packets(t, a, b, 0, 1);
	check_packets(t, a, b, 1, 1);
	check_packets(t, a, b, mtu - 1, 1);
	for (k = 1; k <= kmax && (size_t)k * mtu + 1 <= 65536; k++) {
		check_packets(t, a, b, (size_t)k * mtu, k);
		check_packets(t, a, b, (size_t)k * mtu + 1, k + 1);
	}
	check_packets(t, a, b, 65536, (65536 + mtu - 1) / mtu);
	tf_close(t);
}

static void test_nic_packetisation(void **state)
{
	packetisation(2048, 8);
	packetisation(256, 40);
	packetisation(4000, 16);	/* not a power of two */
	packetisation(65536, 0);	/* every message is one packet */
}

/* ------------------------------------------------------------------ */
/* Ordering and data                                                    */
/* ------------------------------------------------------------------ */

#define ORD_N 1000

struct order_state {
	uint64_t next[TF_MAX][TF_MAX];	/* expected seq per (src, dst) */
	size_t len[TF_MAX][ORD_N];	/* size of each seq per src */
	uint64_t received;
};

static void check_order(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct order_state *os = t->priv;
	uint64_t src = ev->hdr[1] >> 32, seq = ev->hdr[1] & 0xffffffff;
	uint8_t *copy;
	const uint8_t *p;
	size_t off;

	assert_true(src < t->n && seq < ORD_N);
	assert_true(ev->src == ssemu_ep_addr(t->ep[src]));
	if (seq != os->next[src][ep])
		fail_msg("%llu -> %u: message %llu arrived, expected %llu",
			 (unsigned long long)src, ep, (unsigned long long)seq,
			 (unsigned long long)os->next[src][ep]);
	os->next[src][ep]++;
	assert_true(ev->len == os->len[src][seq]);
	assert_true(ev->hdr[2] == ~ev->hdr[1]);
	assert_true(ev->hdr[3] == seq * 0x9e3779b97f4a7c15ULL);
	assert_int_equal(ev->tclass, t->cfg.default_tclass);
	p = ssemu_event_data(t->ep[ep], ev);
	assert_non_null(p);
	for (off = 0; off < ev->len; off++)
		if (p[off] != pattern_byte(src, seq, off))
			fail_msg("%llu -> %u message %llu: byte %zu corrupt",
				 (unsigned long long)src, ep,
				 (unsigned long long)seq, off);
	/* ssemu_event_copy agrees, from an offset, clipped at the end */
	if (ev->len > 10) {
		copy = malloc(ev->len);
		assert_non_null(copy);
		assert_true(ssemu_event_copy(t->ep[ep], ev, 10, copy,
					     ev->len) == ev->len - 10);
		assert_memory_equal(copy, p + 10, ev->len - 10);
		free(copy);
	}
	assert_true(ssemu_event_copy(t->ep[ep], ev, ev->len, &off, 1) == 0);
	os->received++;
}

static size_t mixed_size(uint64_t *rng, uint32_t mtu)
{
	switch (tf_rng_next(rng) % 4) {
	case 0:
		return 0;
	case 1:
		return tf_rng_next(rng) % (SSEMU_INLINE_MAX + 1);
	case 2:
		return SSEMU_INLINE_MAX + 1 + tf_rng_next(rng) % mtu;
	default:
		return tf_rng_next(rng) % (3 * mtu + 6);
	}
}

static void test_nic_in_order_mixed_sizes(void **state)
{
	static const unsigned flows[][2] = { { 0, 1 }, { 2, 1 }, { 1, 0 } };
	struct order_state *os = calloc(1, sizeof(*os));
	static uint8_t buf[3 * 2048 + 6];
	struct ssemu_config c;
	uint64_t rng = 12345;
	struct tf *t;
	unsigned k, f, i;
	uint32_t src, dst;
	bool *done;

	assert_non_null(os);
	tf_config(&c, "2switch");
	t = tf_open(&c);
	tf_add(t, 0);	/* switch 0 */
	tf_add(t, 20);	/* switch 1 */
	tf_add(t, 5);	/* switch 0 */
	t->priv = os;
	t->on_recv = check_order;
	for (f = 0; f < 3; f++)
		for (k = 0; k < ORD_N; k++)
			os->len[flows[f][0]][k] = mixed_size(&rng, c.mtu);
	for (k = 0; k < ORD_N; k++) {
		for (f = 0; f < 3; f++) {
			struct iovec iov;
			struct ssemu_send s = { .tclass = c.default_tclass };
			int ret;

			src = flows[f][0];
			dst = flows[f][1];
			iov.iov_base = buf;
			iov.iov_len = os->len[src][k];
			fill(buf, iov.iov_len, src, k);
			s.dest = ssemu_ep_addr(t->ep[dst]);
			s.iov = &iov;
			s.iov_count = 1;
			s.flags = SSEMU_SEND_ORDERED;
			s.cookie = (uint64_t)src << 32 | k;
			s.hdr[0] = ssemu_fabric_now(t->fab);
			s.hdr[1] = (uint64_t)src << 32 | k;
			s.hdr[2] = ~s.hdr[1];
			s.hdr[3] = k * 0x9e3779b97f4a7c15ULL;
			while ((ret = ssemu_ep_send(t->ep[src], &s)) ==
			       -EAGAIN) {
				assert_true(ssemu_fabric_progress(t->fab, 7) >=
					    0);
				tf_pump(t);
			}
			assert_int_equal(ret, 0);
		}
		/* let the model run a little between bursts */
		if (k % 17 == 0)
			assert_true(ssemu_fabric_progress(t->fab, 50) >= 0);
	}
	tf_run_idle(t, 1000000);
	assert_true(os->received == 3 * ORD_N);
	for (f = 0; f < 3; f++)
		assert_true(os->next[flows[f][0]][flows[f][1]] == ORD_N);
	/* every send completes exactly once, successfully */
	done = calloc(3 * ORD_N, sizeof(*done));
	assert_non_null(done);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;
		uint64_t idx;

		if (ev->type != SSEMU_EV_SEND_DONE)
			continue;
		assert_int_equal(ev->status, 0);
		assert_true((ev->cookie >> 32) == t->log[i].ep);
		idx = (ev->cookie >> 32) * ORD_N + (ev->cookie & 0xffffffff);
		assert_true(idx < 3 * ORD_N);
		assert_false(done[idx]);
		done[idx] = true;
	}
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE),
			 3 * ORD_N);
	free(done);
	free(os);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Window                                                               */
/* ------------------------------------------------------------------ */

/* Latency of one 64 KiB message with @window packets in flight. */
static ssemu_time_t big_message(uint32_t window, uint64_t *stalls)
{
	static uint8_t buf[65536];
	struct ssemu_config c;
	ssemu_time_t lat = 0;
	struct tf *t;
	size_t i;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	c.nic_window = window;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 1, 0);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_RECV)
			lat = t->log[i].ev.time - t->log[i].ev.hdr[0];
	assert_true(lat > 0);
	*stalls = stats_of(t, 0).window_stalls;
	/* the window is only a pace: everything still arrives */
	assert_true(stats_of(t, 1).rx_pkts == 32);
	assert_true(stats_of(t, 0).acks == 32);
	tf_close(t);
	return lat;
}

static void test_nic_window_limits_packets_in_flight(void **state)
{
	/* one packet's round trip: data 2112 B + ack 64 B, 2 links each */
	const ssemu_time_t rtt = 2 * (84480 + 5000) + 350000 +
				 2 * (2560 + 5000) + 350000;
	uint64_t st1, st4, st64;
	ssemu_time_t t1, t4, t64;

	t64 = big_message(64, &st64);
	t4 = big_message(4, &st4);
	t1 = big_message(1, &st1);
	assert_true(st64 == 0);
	assert_true(st4 > 0 && st1 > 0);
	/* one packet per round trip */
	if (t1 < 31 * rtt)
		fail_msg("window 1: 32 packets in %llu ps, a round trip is "
			 "%llu ps", (unsigned long long)t1,
			 (unsigned long long)rtt);
	assert_true(t1 > 5 * t64);
	assert_true(t4 < t1 && t4 > t64);
}

/*
 * The window is per destination: a destination whose window is full must
 * not hold back packets to another one.  A sends 64 KiB to B with a
 * one-packet window (~29 us), then one small message to C.
 */
static void test_nic_window_is_per_destination(void **state)
{
	static uint8_t buf[65536];
	struct ssemu_config c;
	ssemu_time_t lat_b = 0, lat_c = 0;
	struct tf *t;
	size_t i;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	c.nic_window = 1;
	t = tf_open(&c);
	tf_add(t, 0);	/* A */
	tf_add(t, 1);	/* B */
	tf_add(t, 2);	/* C */
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 1, 0);
	tf_send(t, 0, 2, buf, 100, c.default_tclass, 2, 0);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type != SSEMU_EV_RECV)
			continue;
		if (t->log[i].ep == 1)
			lat_b = ev->time - ev->hdr[0];
		else
			lat_c = ev->time - ev->hdr[0];
	}
	assert_true(lat_b > 20 * SSEMU_PS_PER_US);
	if (lat_c > 5 * SSEMU_PS_PER_US)
		fail_msg("100 bytes to C took %.1f us behind a windowed "
			 "64 KiB message to B (%.1f us): the injection queue "
			 "blocks on B's window", (double)lat_c / 1e6,
			 (double)lat_b / 1e6);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Resources and errors                                                 */
/* ------------------------------------------------------------------ */

static int send_raw(struct tf *t, unsigned from, ssemu_addr_t dest,
		    const void *buf, size_t len, uint64_t cookie)
{
	struct iovec iov = { (void *)buf, len };
	struct ssemu_send s = {
		.dest = dest,
		.tclass = t->cfg.default_tclass,
		.iov = &iov,
		.iov_count = 1,
		.cookie = cookie,
	};

	s.hdr[1] = cookie;
	return ssemu_ep_send(t->ep[from], &s);
}

/* Run until idle and take the events of @ep without releasing RECVs. */
static int run_and_poll(struct tf *t, unsigned ep, struct ssemu_event *ev,
			int max)
{
	int n = 0, k;

	do {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		k = ssemu_ep_poll(t->ep[ep], ev + n, max - n);
		n += k;
	} while (k || !ssemu_fabric_idle(t->fab));
	return n;
}

/* (longer than an event carries: each message holds its slot until the
 * receiver releases it) */
#define HELD (SSEMU_EV_CARRY + 8)

static void test_nic_eagain_and_recovery(void **state)
{
	static uint8_t buf[4096];
	struct ssemu_event rx[16], tx[16];
	struct ssemu_config c;
	struct tf *t;
	ssemu_addr_t b;
	int i, nrx, ntx;

	tf_config(&c, "switch");
	c.msgs_per_ep = 4;
	c.bufs_per_ep = 2;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	b = ssemu_ep_addr(t->ep[1]);

	/* four slots */
	for (i = 0; i < 4; i++)
		assert_int_equal(send_raw(t, 0, b, buf, HELD, i), 0);
	assert_int_equal(send_raw(t, 0, b, buf, HELD, 4), -EAGAIN);
	/* sent and acknowledged, but the receiver still holds them */
	nrx = run_and_poll(t, 1, rx, 16);
	ntx = run_and_poll(t, 0, tx, 16);
	assert_int_equal(nrx, 4);
	assert_int_equal(ntx, 4);
	assert_int_equal(send_raw(t, 0, b, buf, HELD, 4), -EAGAIN);
	/* give one back: one more send */
	ssemu_event_release(t->ep[1], &rx[2]);
	assert_int_equal(send_raw(t, 0, b, buf, HELD, 4), 0);
	assert_int_equal(send_raw(t, 0, b, buf, HELD, 5), -EAGAIN);
	for (i = 0; i < 4; i++)
		if (i != 2)
			ssemu_event_release(t->ep[1], &rx[i]);
	assert_int_equal(send_raw(t, 0, b, buf, HELD, 5), 0);
	nrx = run_and_poll(t, 1, rx, 16);
	assert_int_equal(nrx, 2);
	/* nothing refused was sent, nothing accepted was lost */
	assert_true(rx[0].hdr[1] == 4 && rx[1].hdr[1] == 5);
	for (i = 0; i < nrx; i++)
		ssemu_event_release(t->ep[1], &rx[i]);
	ntx = run_and_poll(t, 0, tx, 16);
	assert_int_equal(ntx, 2);

	/* two large buffers: a third large message waits, inline ones not */
	fill(buf, sizeof(buf), 1, 1);
	assert_int_equal(send_raw(t, 0, b, buf, 1000, 10), 0);
	assert_int_equal(send_raw(t, 0, b, buf, 4096, 11), 0);
	assert_int_equal(send_raw(t, 0, b, buf, 193, 12), -EAGAIN);
	assert_int_equal(send_raw(t, 0, b, buf, 192, 13), 0);
	nrx = run_and_poll(t, 1, rx, 16);
	assert_int_equal(nrx, 3);
	assert_int_equal(send_raw(t, 0, b, buf, 193, 12), -EAGAIN);
	for (i = 0; i < nrx; i++) {
		assert_memory_equal(ssemu_event_data(t->ep[1], &rx[i]), buf,
				    rx[i].len);
		ssemu_event_release(t->ep[1], &rx[i]);
	}
	run_and_poll(t, 0, tx, 16);
	assert_int_equal(send_raw(t, 0, b, buf, 193, 12), 0);
	nrx = run_and_poll(t, 1, rx, 16);
	assert_int_equal(nrx, 1);
	assert_true(rx[0].hdr[1] == 12 && rx[0].len == 193);
	assert_memory_equal(ssemu_event_data(t->ep[1], &rx[0]), buf, 193);
	ssemu_event_release(t->ep[1], &rx[0]);
	tf_close(t);
}

static void test_nic_emsgsize(void **state)
{
	static uint8_t buf[70000];
	struct iovec iov[2] = { { buf, 40000 }, { buf + 40000, 30000 } };
	struct ssemu_send s = { .iov = iov, .iov_count = 2 };
	struct ssemu_config c;
	struct tf *t;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.tclass = c.default_tclass;
	assert_true(ssemu_ep_max_msg(t->ep[0]) == 65536);
	assert_int_equal(send_raw(t, 0, s.dest, buf, 65537, 0), -EMSGSIZE);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EMSGSIZE);
	iov[1].iov_len = 65536 - 40000;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	assert_int_equal(send_raw(t, 0, s.dest, buf, 65536, 1), 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 2);
	tf_close(t);

	/* no large buffers: inline only */
	tf_config(&c, "switch");
	c.bufs_per_ep = 0;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_true(ssemu_ep_max_msg(t->ep[0]) == SSEMU_INLINE_MAX);
	assert_int_equal(send_raw(t, 0, ssemu_ep_addr(t->ep[1]), buf,
				  SSEMU_INLINE_MAX + 1, 0), -EMSGSIZE);
	assert_int_equal(send_raw(t, 0, ssemu_ep_addr(t->ep[1]), buf,
				  SSEMU_INLINE_MAX, 0), 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	tf_close(t);

	/* small buffers */
	tf_config(&c, "switch");
	c.buf_size = 4096;
	t = tf_open(&c);
	tf_add(t, 0);
	assert_true(ssemu_ep_max_msg(t->ep[0]) == 4096);
	assert_int_equal(send_raw(t, 0, ssemu_ep_addr(t->ep[0]), buf, 4097,
				  0), -EMSGSIZE);
	tf_close(t);
}

static void test_nic_einval(void **state)
{
	static uint8_t buf[64];
	struct iovec iov = { buf, 8 }, nulliov = { NULL, 8 };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_config c;
	struct tf *t;
	int i;

	tf_config(&c, "switch");
	c.msgs_per_ep = 4;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	s.tclass = c.default_tclass;
	/* a port beyond the topology, a pid beyond eps_per_nic */
	s.dest = SSEMU_ADDR(16, 0);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.dest = SSEMU_ADDR_INVALID;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.dest = SSEMU_ADDR(1, c.eps_per_nic);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.dest = SSEMU_ADDR(1, 255);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	/* a class beyond ntclass */
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.tclass = c.ntclass;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.tclass = UINT32_MAX;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.tclass = 0;
	/* bad vectors */
	s.iov = NULL;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	/* address 0 with a length: memory the NIC cannot read */
	s.iov = &nulliov;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EFAULT);
	s.iov = &iov;
	assert_int_equal(ssemu_ep_send(t->ep[0], NULL), -EINVAL);
	assert_int_equal(ssemu_ep_send(NULL, &s), -EINVAL);
	/* none of it used a slot: four sends still fit, in every class */
	for (i = 0; i < 4; i++) {
		s.tclass = (uint32_t)i;
		assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 4);
	for (i = 0; i < (int)t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_RECV)
			assert_true(t->log[i].ev.tclass < 4);
	tf_close(t);
}

static void test_nic_unreachable_port(void **state)
{
	static uint8_t buf[8192];
	struct ssemu_config c;
	struct tf *t;
	unsigned k;
	size_t i;

	tf_config(&c, "switch");
	c.msgs_per_ep = 8;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	/* nobody at port 5: more sends than slots, so slots come back */
	for (k = 0; k < 20; k++) {
		int ret;

		while ((ret = send_raw(t, 0, SSEMU_ADDR(5, 0), buf,
				       k % 2 ? 8192 : 0, 100 + k)) == -EAGAIN) {
			assert_true(ssemu_fabric_progress(t->fab, 16) >= 0);
			tf_pump(t);
		}
		assert_int_equal(ret, 0);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV), 0);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 20);
	for (i = 0; i < t->nlog; i++)
		assert_int_equal(t->log[i].ev.status, -EHOSTUNREACH);
	/* refused at the source: nothing went on the wire */
	assert_true(stats_of(t, 0).tx_pkts == 0);
	/* the completions are those of the 20 sends, each once */
	{
		unsigned seen = 0;

		for (i = 0; i < t->nlog; i++) {
			uint64_t ck = t->log[i].ev.cookie - 100;

			assert_true(ck < 20 && !(seen & (1u << ck)));
			seen |= 1u << ck;
		}
		assert_int_equal(seen, (1u << 20) - 1);
	}
	tf_close(t);
}

/* A NIC is there but the pid is not open: the send fails, nothing hangs. */
static void test_nic_closed_pid(void **state)
{
	static uint8_t buf[5000];
	struct ssemu_config c;
	struct tf *t;
	size_t i;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);	/* pid 0 open, pid 1 not */
	assert_int_equal(send_raw(t, 0, SSEMU_ADDR(1, 1), buf, 0, 1), 0);
	assert_int_equal(send_raw(t, 0, SSEMU_ADDR(1, 1), buf, 5000, 2), 0);
	assert_int_equal(send_raw(t, 0, SSEMU_ADDR(1, 0), buf, 10, 3), 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 3);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type != SSEMU_EV_SEND_DONE)
			continue;
		if (ev->cookie == 3)
			assert_int_equal(ev->status, 0);
		else
			assert_int_equal(ev->status, -ECONNREFUSED);
	}
	tf_close(t);
}

static void test_nic_zero_length(void **state)
{
	struct ssemu_send s = { 0 };
	struct ssemu_config c;
	struct tf *t;
	char byte = 'x';
	size_t i;

	tf_config(&c, "2switch");
	t = tf_open(&c);
	tf_add(t, 3);
	tf_add(t, 30);
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.tclass = 1;
	s.cookie = 0xc0ffee;
	s.hdr[0] = 1;
	s.hdr[1] = UINT64_MAX;
	s.hdr[2] = 0x0123456789abcdefULL;
	s.hdr[3] = 42;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);	/* no iov */
	tf_run_idle(t, 100000);
	assert_int_equal(t->nlog, 2);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type == SSEMU_EV_RECV) {
			assert_int_equal(t->log[i].ep, 1);
			assert_true(ev->len == 0);
			assert_int_equal(ev->tclass, 1);
			assert_true(ev->src == ssemu_ep_addr(t->ep[0]));
			assert_true(SSEMU_ADDR_PORT(ev->src) == 3);
			assert_memory_equal(ev->hdr, s.hdr, sizeof(s.hdr));
		} else {
			assert_int_equal(t->log[i].ep, 0);
			assert_int_equal(ev->type, SSEMU_EV_SEND_DONE);
			assert_int_equal(ev->status, 0);
			assert_true(ev->cookie == 0xc0ffee);
		}
	}
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	/* with a zero-length iov too; nothing to copy either way */
	{
		struct iovec iov = { &byte, 0 };
		struct ssemu_event ev[4];
		int n;

		s.iov = &iov;
		s.iov_count = 1;
		assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
		n = run_and_poll(t, 1, ev, 4);
		assert_int_equal(n, 1);
		assert_true(ev[0].len == 0);
		assert_true(ssemu_event_copy(t->ep[1], &ev[0], 0, &byte, 1) ==
			    0);
		assert_int_equal(byte, 'x');
		ssemu_event_release(t->ep[1], &ev[0]);
	}
	assert_true(stats_of(t, 0).tx_pkts == 2);
	assert_true(stats_of(t, 1).rx_bytes == 0);
	tf_close(t);
}

static void test_nic_iov_gather(void **state)
{
	static uint8_t src[8192], out[8192];
	struct iovec iov[5] = {
		{ src, 100 }, { src + 100, 0 }, { src + 100, 150 },
		{ src + 250, 3000 }, { src + 3250, 1 },
	};
	struct ssemu_send s = { .iov = iov, .iov_count = 5 };
	struct ssemu_event ev[4];
	struct ssemu_config c;
	struct tf *t;
	size_t off;

	fill(src, sizeof(src), 9, 9);
	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.tclass = c.default_tclass;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	/* the iovs may be reused at once */
	memset(src, 0, 4000);
	assert_int_equal(run_and_poll(t, 1, ev, 4), 1);
	assert_true(ev[0].len == 3251);
	fill(src, sizeof(src), 9, 9);
	assert_memory_equal(ssemu_event_data(t->ep[1], &ev[0]), src, 3251);
	/* piecewise copies reassemble it */
	memset(out, 0, sizeof(out));
	for (off = 0; off < 3251; off += 97)
		assert_true(ssemu_event_copy(t->ep[1], &ev[0], off, out + off,
					     97) ==
			    (off + 97 <= 3251 ? 97 : 3251 - off));
	assert_memory_equal(out, src, 3251);
	assert_true(ssemu_event_copy(t->ep[1], &ev[0], 5000, out, 10) == 0);
	ssemu_event_release(t->ep[1], &ev[0]);
	tf_close(t);
}

/* More events than the 1024-entry ring: they wait in the model, in order. */
static void test_nic_event_ring_overflow(void **state)
{
	struct ssemu_config c;
	struct ssemu_event ev[256];
	struct tf *t;
	unsigned k, nrx = 0, ntx = 0, rounds = 0;
	int n, i;

	tf_config(&c, "switch");
	c.max_nics = 4;
	c.msgs_per_ep = 4096;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (k = 0; k < 3000; k++) {
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[1]),
			.tclass = c.default_tclass,
			.cookie = k,
		};

		s.hdr[1] = k;
		assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	}
	/* nobody polls while all of it is delivered */
	assert_int_equal(ssemu_fabric_run_until(t->fab, SSEMU_PS_PER_MS), 0);
	assert_false(ssemu_fabric_idle(t->fab));	/* events held back */
	while (nrx < 3000 || ntx < 3000) {
		assert_true(ssemu_fabric_progress(t->fab, 64) >= 0);
		while ((n = ssemu_ep_poll(t->ep[1], ev, 256)) > 0) {
			for (i = 0; i < n; i++) {
				assert_int_equal(ev[i].type, SSEMU_EV_RECV);
				assert_true(ev[i].hdr[1] == nrx);
				nrx++;
				ssemu_event_release(t->ep[1], &ev[i]);
			}
		}
		while ((n = ssemu_ep_poll(t->ep[0], ev, 256)) > 0) {
			for (i = 0; i < n; i++) {
				assert_int_equal(ev[i].type,
						 SSEMU_EV_SEND_DONE);
				assert_int_equal(ev[i].status, 0);
				ntx++;
			}
		}
		assert_true(++rounds < 100000);
	}
	assert_int_equal(nrx, 3000);
	assert_int_equal(ntx, 3000);
	tf_run_idle(t, 1000);
	assert_true(ssemu_fabric_idle(t->fab));
	tf_close(t);
}

static void test_nic_several_endpoints(void **state)
{
	struct ssemu_config c;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep[5];
	struct ssemu_event ev[8];
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	c.eps_per_nic = 4;
	t = tf_open(&c);
	tf_add(t, 0);
	{
		struct ssemu_nic_opts no = { .port = 9, .rank = -1 };

		assert_int_equal(ssemu_nic_attach(t->fab, &no, &nic), 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(ssemu_ep_open(nic, &ep[i]), 0);
		assert_true(ssemu_ep_addr(ep[i]) == SSEMU_ADDR(9, i));
		assert_ptr_equal(ssemu_ep_fabric(ep[i]), t->fab);
	}
	assert_int_equal(ssemu_ep_open(nic, &ep[4]), -ENOSPC);
	/* each pid gets its own messages */
	for (i = 0; i < 4; i++)
		assert_int_equal(send_raw(t, 0, SSEMU_ADDR(9, i), &i,
					  sizeof(i), 50 + i), 0);
	tf_run_idle(t, 100000);
	for (i = 0; i < 4; i++) {
		unsigned got;

		assert_int_equal(ssemu_ep_poll(ep[i], ev, 8), 1);
		assert_true(ev[0].hdr[1] == 50 + i);
		assert_true(ssemu_event_copy(ep[i], &ev[0], 0, &got,
					     sizeof(got)) == sizeof(got));
		assert_int_equal(got, i);
		ssemu_event_release(ep[i], &ev[0]);
	}
	/* and can answer from its own address */
	{
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[0]),
			.tclass = 0,
		};

		assert_int_equal(ssemu_ep_send(ep[3], &s), 0);
		assert_int_equal(run_and_poll(t, 0, ev, 8), 1);
		assert_true(ev[0].src == SSEMU_ADDR(9, 3));
		ssemu_event_release(t->ep[0], &ev[0]);
		assert_int_equal(ssemu_ep_poll(ep[3], ev, 8), 1);
		assert_int_equal(ev[0].type, SSEMU_EV_SEND_DONE);
	}
	/* a closed pid's slot is reused by the next open */
	ssemu_ep_close(ep[2]);
	assert_int_equal(ssemu_ep_open(nic, &ep[2]), 0);
	assert_true(ssemu_ep_addr(ep[2]) == SSEMU_ADDR(9, 2));
	for (i = 0; i < 4; i++)
		ssemu_ep_close(ep[i]);
	ssemu_nic_detach(nic);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Closing with traffic in flight; running out of packets               */
/* ------------------------------------------------------------------ */

/*
 * A's endpoint is closed while its packet to B is in flight, and a new
 * endpoint on the same NIC sends to B.  The old packet is fenced off by the
 * slot generation, but the NIC's window toward B must not lose the packet's
 * place: with a one-packet window the new message must still go.
 */
static void test_nic_ep_close_in_flight_keeps_window(void **state)
{
	static uint8_t buf[2048];
	struct ssemu_config c;
	struct tf *t;
	size_t i;
	bool got_new = false;

	tf_config(&c, "switch");
	c.nic_window = 1;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 1, 1);
	/* the packet is on its way (serialised in 84 ns, lands ~440 ns) */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 200 * SSEMU_PS_PER_NS),
			 0);
	assert_true(stats_of(t, 0).tx_pkts == 1);
	assert_true(stats_of(t, 1).rx_pkts == 0);
	ssemu_ep_close(t->ep[0]);
	assert_int_equal(ssemu_ep_open(t->nic[0], &t->ep[0]), 0);
	tf_send(t, 0, 1, buf, 100, c.default_tclass, 2, 2);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_RECV &&
		    t->log[i].ev.hdr[1] == 2)
			got_new = true;
	if (!got_new || tf_count(t, 0, SSEMU_EV_SEND_DONE) != 1)
		fail_msg("after closing an endpoint with a packet in flight, "
			 "the new endpoint's message to the same NIC is %s, "
			 "its completion %s (window slot leaked)",
			 got_new ? "delivered" : "never delivered",
			 tf_count(t, 0, SSEMU_EV_SEND_DONE) ? "arrived" :
							       "never came");
	tf_close(t);
}

/*
 * A's endpoint is closed with messages still queued in its NIC (60 inline
 * messages take 614 ns to serialise) and a new endpoint on the NIC reuses
 * the slots: each of the new endpoint's six messages must be delivered
 * exactly once and completed once, and it must not see completions of
 * messages it never sent.  The window (64) is large enough that packets
 * lost at the close cannot close it.  @close_at: model time of the close
 * (0: right after the first packet left, so the reused slots are the ones
 * still queued).
 */
static void close_with_queue(ssemu_time_t close_at)
{
	static uint8_t buf[SSEMU_INLINE_MAX];
	struct ssemu_config c;
	unsigned seen[8] = { 0 }, done[8] = { 0 }, k, spurious = 0;
	unsigned old_rx = 0;
	struct tf *t;
	size_t i;

	tf_config(&c, "switch");
	c.msgs_per_ep = 64;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (k = 0; k < 60; k++)
		tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, k,
			100 + k);
	assert_int_equal(ssemu_fabric_run_until(t->fab, close_at), 0);
	assert_true(stats_of(t, 0).tx_pkts >= 1 &&
		    stats_of(t, 0).tx_pkts < 20);
	ssemu_ep_close(t->ep[0]);
	assert_int_equal(ssemu_ep_open(t->nic[0], &t->ep[0]), 0);
	for (k = 0; k < 6; k++)
		tf_send(t, 0, 1, buf, 0, c.default_tclass, k, k);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type == SSEMU_EV_RECV && ev->hdr[1] < 6)
			seen[ev->hdr[1]]++;
		else if (ev->type == SSEMU_EV_RECV)
			old_rx++;
		else if (ev->cookie < 6)
			done[ev->cookie]++;
		else
			spurious++;
	}
	for (k = 0; k < 6; k++)
		if (seen[k] != 1 || done[k] != 1)
			fail_msg("close at %llu ps: new message %u delivered "
				 "%u times, completed %u times (%u old "
				 "messages delivered after the close)",
				 (unsigned long long)close_at, k, seen[k],
				 done[k], old_rx);
	if (spurious)
		fail_msg("close at %llu ps: the new endpoint got %u "
			 "completions for messages it never sent (the closed "
			 "endpoint's queued messages, %u of which were "
			 "delivered after the close)",
			 (unsigned long long)close_at, spurious, old_rx);
	tf_close(t);
}

static void test_nic_ep_close_with_queued_messages(void **state)
{
	close_with_queue(0);
	close_with_queue(100 * SSEMU_PS_PER_NS);
}



/* Send 64 KiB from port 0 to port 1 and change the slot's destination to
 * port 2 once @pkts of its packets are out (0: while it waits in the
 * NIC's queue). */
static void dst_changed(unsigned pkts)
{
	static uint8_t buf[65536];
	struct ssemu_fabric_stats st;
	struct ssemu_region *r;
	struct ssemu_config c;
	struct ssemu_msg *m = NULL;
	struct tf *t;
	uint32_t i;
	size_t k;

	tf_config(&c, "switch");
	/* (a shared store: the one that takes CRCs) */
	t = tf_open_shared(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_add(t, 2);
	r = t->fab->r;
	/* (the change lands between two of its packets' events: per
	 * packet, as a train carries all but the first in one event) */
	ssemu_model_trains = 0;
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 7, 0);
	for (k = 0; k < 100000 && stats_of(t, 0).tx_pkts < pkts; k++)
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
	assert_true(stats_of(t, 0).tx_pkts == pkts);
	assert_true(stats_of(t, 1).rx_msgs == 0);
	for (i = 0; i < r->nmsgs; i++)
		if ((*ssemu_r_mstate(r, i) & SSEMU_MSG_BUSY) &&
		    ssemu_r_msg(r, i)->cookie == 7)
			m = ssemu_r_msg(r, i);
	assert_non_null(m);
	assert_int_equal(m->dst, SSEMU_ADDR(1, 0));
	m->dst = SSEMU_ADDR(2, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV), 0);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	for (k = 0; k < t->nlog; k++)
		if (t->log[k].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[k].ev.status, -EIO);
	assert_int_equal(ssemu_fabric_stats(t->fab, &st), 0);
	assert_int_equal(st.crc_errors, 1);
	assert_int_equal(st.msgs_unreachable, 0);
	/* and the next message goes where it is sent (as a train) */
	ssemu_model_trains = 1;
	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 8, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	tf_close(t);
}

/*
 * The slot of a message is changed to name another port (a write into a
 * shared segment), before any of its packets left or once some had: it
 * is delivered to nobody (neither the port it was sent to nor the one
 * the slot names sees a RECV), its sender gets -EIO, counted in
 * crc_errors.
 */
static void test_nic_dst_changed(void **state)
{
	(void)state;
	dst_changed(0);
	dst_changed(3);
}

/* The busy slot of a message posted with @cookie (the segment's copy). */
static struct ssemu_msg *posted_slot(struct tf *t, uint64_t cookie)
{
	struct ssemu_region *r = t->fab->r;
	struct ssemu_msg *m = NULL;
	uint32_t i;

	for (i = 0; i < r->nmsgs; i++)
		if ((*ssemu_r_mstate(r, i) & SSEMU_MSG_BUSY) &&
		    ssemu_r_msg(r, i)->cookie == cookie)
			m = ssemu_r_msg(r, i);
	assert_non_null(m);
	return m;
}

/* Poll and release @t's endpoint @i into @ev; @return how many. */
static int poll_release(struct tf *t, unsigned i, struct ssemu_event *ev,
			int max)
{
	int n = ssemu_ep_poll(t->ep[i], ev, max), k;

	for (k = 0; k < n; k++)
		ssemu_event_release(t->ep[i], &ev[k]);
	return n;
}

/*
 * A shared store: the completion of a send carries the cookie it was
 * posted with even when the slot's cookie changed in the segment after
 * the post (the provider takes it for a pointer); with the slot posted
 * again before the first completion was polled, each completion has its
 * own; and a completion for a post the endpoint never made (the slot's
 * generation changed in the segment) breaks the fabric (-EIO) rather
 * than hand out a cookie nobody gave.
 */
static void test_nic_completion_cookie_from_poster(void **state)
{
	static uint8_t buf[64];
	struct ssemu_event ev[128];
	struct ssemu_config c;
	struct ssemu_msg *m;
	struct tf *t;
	uint32_t k, per;
	int n;

	(void)state;
	tf_config(&c, "switch");
	t = tf_open_shared(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	per = c.msgs_per_ep;

	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 7, 0);
	posted_slot(t, 7)->cookie = 0xbad0c0de;
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	for (k = 0; k < t->nlog; k++)
		if (t->log[k].ev.type == SSEMU_EV_SEND_DONE)
			assert_true(t->log[k].ev.cookie == 7);

	/* every slot of the sender used once more than it has, its
	 * completions left unpolled: the first slot is posted again */
	for (k = 0; k <= per; k++) {
		tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 100 + k,
			0);
		while (!ssemu_fabric_idle(t->fab))
			assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		assert_int_equal(poll_release(t, 1, ev, 128), 1);
	}
	n = poll_release(t, 0, ev, 128);
	assert_int_equal(n, per + 1);
	for (k = 0; k <= per; k++) {
		assert_int_equal(ev[k].type, SSEMU_EV_SEND_DONE);
		assert_true(ev[k].cookie == 100 + k);
	}

	tf_send(t, 0, 1, buf, sizeof(buf), c.default_tclass, 9, 0);
	m = posted_slot(t, 9);
	m->gen += 5;
	while (!ssemu_fabric_idle(t->fab) &&
	       ssemu_fabric_progress(t->fab, 4096) >= 0)
		;
	assert_int_equal(ssemu_ep_poll(t->ep[0], ev, 128), -EIO);
	tf_close(t);
}

/*
 * max_pkts = 16 (the smallest valid pool): three NICs stream 32 KiB each
 * and hold the pool; a fourth NIC posts a small message meanwhile.  When
 * packets come back, it must get its turn.
 */
static void test_nic_packet_pool_exhaustion_recovers(void **state)
{
	static uint8_t buf[32768];
	struct ssemu_config c;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	c.max_pkts = 16;
	t = tf_open(&c);
	for (i = 0; i < 8; i++)
		tf_add(t, i);
	for (i = 0; i < 3; i++)
		tf_send(t, i, i + 4, buf, sizeof(buf), c.default_tclass, i, i);
	assert_int_equal(ssemu_fabric_run_until(t->fab, SSEMU_PS_PER_US), 0);
	tf_send(t, 3, 7, buf, 100, c.default_tclass, 3, 3);
	tf_run_idle(t, 100000);
	if (tf_count(t, UINT32_MAX, SSEMU_EV_RECV) != 4 ||
	    tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE) != 4)
		fail_msg("packet pool ran dry: %zu of 4 messages delivered, "
			 "%zu completed, and the fabric is idle",
			 tf_count(t, UINT32_MAX, SSEMU_EV_RECV),
			 tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE));
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nic_packetisation),
		cmocka_unit_test(test_nic_in_order_mixed_sizes),
		cmocka_unit_test(test_nic_window_limits_packets_in_flight),
		cmocka_unit_test(test_nic_window_is_per_destination),
		cmocka_unit_test(test_nic_eagain_and_recovery),
		cmocka_unit_test(test_nic_emsgsize),
		cmocka_unit_test(test_nic_einval),
		cmocka_unit_test(test_nic_unreachable_port),
		cmocka_unit_test(test_nic_closed_pid),
		cmocka_unit_test(test_nic_zero_length),
		cmocka_unit_test(test_nic_iov_gather),
		cmocka_unit_test(test_nic_event_ring_overflow),
		cmocka_unit_test(test_nic_several_endpoints),
		cmocka_unit_test(test_nic_ep_close_in_flight_keeps_window),
		cmocka_unit_test(test_nic_ep_close_with_queued_messages),
		cmocka_unit_test(test_nic_packet_pool_exhaustion_recovers),
		cmocka_unit_test(test_nic_dst_changed),
		cmocka_unit_test(test_nic_completion_cookie_from_poster),
	};

	return cmocka_run_group_tests_name("nic", tests, NULL, NULL);
}
