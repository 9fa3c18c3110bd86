/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's invariants (emu/ssemu_invariant.h).  This program is linked
 * against its own copy of the emulator built with -DSSEMU_DEBUG, so the
 * model checks them as it runs: loaded scenarios (an all-to-all under
 * adaptive routing, an incast under congestion control, a lossy class
 * dropping, RMA, endpoints closing and NICs detaching under traffic) must
 * end with the fabric sound.  Then each invariant is broken on purpose
 * and the check is seen to fail, and the event pool running dry is seen
 * to stop the model with an error.
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

#include "ssemu_priv.h"
#include "ssemu_invariant.h"
#include "ssemu_msg.h"
#include "tf.h"

#ifndef SSEMU_DEBUG
#error "test_invariants is built with -DSSEMU_DEBUG"
#endif

static struct ssemu_region *region(struct tf *t)
{
	return t->fab->r;
}

/* Sound, and the whole check agrees. */
static void assert_sound(struct tf *t)
{
	struct ssemu_region *r = region(t);

	if (ssemu_broken(r))
		fail_msg("the fabric is broken: %s", r->verdict.why);
	assert_true(ssemu_model_check(r));
}

/* Broken, for a reason that mentions @what. */
static void assert_broken(struct tf *t, const char *what)
{
	struct ssemu_region *r = region(t);

	assert_true(ssemu_broken(r));
	if (!strstr(r->verdict.why, what))
		fail_msg("broken for another reason: %s", r->verdict.why);
}

static struct tf *open_with(const char *preset, const char *routing,
			    const char *cc, struct ssemu_config *out)
{
	struct ssemu_config c;

	tf_config(&c, preset);
	if (routing)
		snprintf(c.routing, sizeof(c.routing), "%s", routing);
	if (cc)
		snprintf(c.cc, sizeof(c.cc), "%s", cc);
	if (out)
		*out = c;
	return tf_open(&c);
}

/* @n NICs spread over the ports of @c. */
static void add_spread(struct tf *t, const struct ssemu_config *c,
		       unsigned n)
{
	uint64_t ports = ssemu_config_nports(c);
	unsigned i;

	for (i = 0; i < n; i++)
		tf_add(t, (uint32_t)(i * ports / n));
}

/* Close a broken fabric: what the endpoints posted will never be
 * delivered, so no close waits for it. */
static void close_now(struct tf *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++) {
		if (t->ep[i])
			ssemu_ep_close_timeout(t->ep[i], 0);
		t->ep[i] = NULL;
	}
	tf_close(t);
}

static uint8_t payload[65536];

/* ------------------------------------------------------------------ */
/* Loaded scenarios: the invariants hold throughout                     */
/* ------------------------------------------------------------------ */

static void test_alltoall_adaptive(void **state)
{
	struct ssemu_config c;
	struct tf *t = open_with("2group", "adaptive", "none", &c);
	unsigned n = 16, i, j, k;

	(void)state;
	add_spread(t, &c, n);
	for (k = 0; k < 3; k++)
		for (i = 0; i < n; i++)
			for (j = 1; j < n; j++)
				tf_send(t, i, (i + j + k) % n, payload,
					1000 + 1500 * k, 0, 0, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV),
			 3 * n * (n - 1));
	assert_sound(t);
	tf_close(t);
}

/* Endpoints on ports 0..@nsrc-1 send @rounds messages of @len bytes in
 * class @tc each to the one on port @dport; all arrive, the fabric sound. */
static void incast(struct tf *t, unsigned nsrc, uint32_t dport,
		   unsigned rounds, size_t len, uint32_t tc)
{
	unsigned i, k, d;

	for (i = 0; i < nsrc; i++)
		tf_add(t, i);
	d = tf_add(t, dport);
	for (k = 0; k < rounds; k++)
		for (i = 0; i < nsrc; i++)
			tf_send(t, i, d, payload, len, tc, 0, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, d, SSEMU_EV_RECV), nsrc * rounds);
	assert_sound(t);
	tf_close(t);
}

static void test_incast_cc(void **state)
{
	(void)state;
	incast(open_with("2switch", NULL, "endpoint-pair", NULL), 9, 16, 8,
	       16384, 0);
}

/* A lossy class through 4-packet buffers: drops, and retries. */
static void test_lossy_incast(void **state)
{
	struct ssemu_config c;

	(void)state;
	tf_config(&c, "switch");
	c.tclass[1].lossy = true;
	c.port_buf_pkts = 4;
	snprintf(c.cc, sizeof(c.cc), "none");
	incast(tf_open(&c), 6, 8, 6, 20000, 1);
}

/* Pump, and release the RMA_DONE events logged since *@from (their
 * slots hold the results until then). */
static void pump_rma(struct tf *t, size_t *from)
{
	tf_pump(t);
	for (; *from < t->nlog; (*from)++)
		if (t->log[*from].ev.type == SSEMU_EV_RMA_DONE)
			ssemu_event_release(t->ep[t->log[*from].ep],
					    &t->log[*from].ev);
}

static void test_rma(void **state)
{
	static uint8_t mem[4][65536];
	struct tf *t = open_with("2switch", "adaptive", "endpoint-pair",
				 NULL);
	struct iovec iov = { payload, 8192 };
	unsigned i, k, a, spins;
	size_t seen = 0;

	(void)state;
	a = tf_add(t, 0);
	for (i = 0; i < 4; i++) {
		struct ssemu_mr_desc d = {
			.key = 10 + i, .addr = mem[i], .len = sizeof(mem[i]),
			.access = SSEMU_MR_READ | SSEMU_MR_WRITE,
		};

		tf_add(t, 16 + i);
		assert_int_equal(ssemu_mr_reg(t->nic[1 + i], &d), 0);
	}
	for (k = 0; k < 6; k++) {
		for (i = 0; i < 4; i++) {
			struct ssemu_rma r = {
				.dest = ssemu_ep_addr(t->ep[1 + i]),
				.op = k % 2 ? SSEMU_RMA_READ : SSEMU_RMA_WRITE,
				.key = 10 + i,
				.addr = 8192 * k,
				.len = 8192,
				.iov = k % 2 ? NULL : &iov,
				.iov_count = k % 2 ? 0 : 1,
				.cookie = k * 10 + i,
			};
			int ret;

			spins = 0;
			while ((ret = ssemu_ep_rma(t->ep[a], &r)) == -EAGAIN) {
				assert_true(ssemu_fabric_progress(t->fab, 64) >=
					    0);
				pump_rma(t, &seen);
				assert_true(++spins < 1000000);
			}
			assert_int_equal(ret, 0);
		}
	}
	for (spins = 0; !ssemu_fabric_idle(t->fab) && spins < 100000;
	     spins++) {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		pump_rma(t, &seen);
	}
	tf_run_idle(t, 100000);
	pump_rma(t, &seen);
	assert_int_equal(tf_count(t, a, SSEMU_EV_RMA_DONE), 24);
	assert_sound(t);
	tf_close(t);
}

/* Endpoints close and NICs detach with traffic to and from them in the
 * fabric; the others' traffic goes on. */
static void test_close_and_reset(void **state)
{
	struct ssemu_config c;
	struct tf *t = open_with("2group", "adaptive", "endpoint-pair", &c);
	unsigned n = 12, i, k;

	(void)state;
	add_spread(t, &c, n);
	for (k = 0; k < 4; k++)
		for (i = 0; i < n; i++)
			tf_send(t, i, (i + 1 + k) % n, payload, 12000, 0, 0,
				0);
	/* a little way in: closes and detaches */
	for (k = 0; k < 20; k++) {
		assert_true(ssemu_fabric_progress(t->fab, 16) >= 0);
		tf_pump(t);
	}
	for (i = 0; i < 3; i++) {
		ssemu_ep_close(t->ep[i]);
		t->ep[i] = NULL;
		assert_sound(t);
	}
	for (i = 0; i < 2; i++) {
		ssemu_nic_detach(t->nic[i]);
		t->nic[i] = NULL;
		assert_sound(t);
	}
	for (i = 3; i < n; i++)
		tf_send(t, i, 3 + (i + 1) % (n - 3), payload, 5000, 0, 0, 0);
	tf_run_idle(t, 100000);
	assert_sound(t);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Each invariant broken on purpose                                     */
/* ------------------------------------------------------------------ */

/* A small fabric with traffic done: sound. */
static struct tf *quiet(void)
{
	struct tf *t = open_with("2switch", NULL, NULL, NULL);
	unsigned i;

	for (i = 0; i < 4; i++)
		tf_add(t, i * 8);
	for (i = 0; i < 4; i++)
		tf_send(t, i, (i + 1) % 4, payload, 9000, 0, 0, 0);
	tf_run_idle(t, 100000);
	assert_sound(t);
	return t;
}

/* A packet taken from the pool (a freed one, else the first never used)
 * and put nowhere: leaked. */
static void leak_one(struct ssemu_region *r)
{
	uint32_t pi = r->pkt_free;

	if (pi != SSEMU_NONE) {
		r->pkt_free = ssemu_r_pkt(r, pi)->next;
	} else {
		assert_true(r->pkt_hwm < r->config.max_pkts);
		r->pkt_hwm++;
	}
	r->pkts_used++;
}

/* A packet counted as used from the pool, and in no list: the census of
 * free, in use and never used is one short of the pool. */
static void hwm_one_more(struct ssemu_region *r)
{
	assert_true(r->pkt_hwm < r->config.max_pkts);
	r->pkt_hwm++;
}

/* The high-water mark beyond the pool. */
static void hwm_beyond(struct ssemu_region *r)
{
	r->pkt_hwm = r->config.max_pkts + 1;
}

/* The high-water mark below the freed packets. */
static void hwm_below_free(struct ssemu_region *r)
{
	assert_true(r->pkt_free != SSEMU_NONE);
	r->pkt_hwm = 0;
}

static void count_one_more(struct ssemu_region *r)
{
	r->pkts_used++;
}

/* A packet both free and queued at a NIC. */
static void free_and_queued(struct ssemu_region *r)
{
	assert_true(ssemu_r_nic(r, 0)->ack_head == SSEMU_NONE);
	ssemu_r_nic(r, 0)->ack_head = r->pkt_free;
}

static void free_and_queued_undo(struct ssemu_region *r)
{
	ssemu_r_nic(r, 0)->ack_head = SSEMU_NONE;
}

/* The first switch-to-switch output of the first switch model. */
static struct ssemu_swport *link_port(struct ssemu_region *r, uint32_t *out)
{
	struct ssemu_switch_sh *s;
	uint32_t p;

	assert_true(r->sw_used > 0);
	s = ssemu_r_switch(r, 0);
	for (p = 0; p < r->topo.radix; p++)
		if (ssemu_sw_port(r, s, p)->peer.kind == SSEMU_PORT_LOCAL ||
		    ssemu_sw_port(r, s, p)->peer.kind == SSEMU_PORT_GLOBAL)
			break;
	assert_true(p < r->topo.radix);
	if (out)
		*out = p;
	return ssemu_sw_port(r, s, p);
}

static void credit_above(struct ssemu_region *r)
{
	link_port(r, NULL)->vq[1].credits++;
}

static void credit_negative(struct ssemu_region *r)
{
	ssemu_r_nic(r, 1)->credits[0] = (uint32_t)-1;
}

/* Queued counted, no list behind it. */
static void counted_not_queued(struct ssemu_region *r)
{
	struct ssemu_swport *op = link_port(r, NULL);

	op->vq[0].queued = 1;
	op->vclmask |= 1;
	op->queued_tc[0] = 1;
	op->nqueued = 1;
}

static void vclmask_bit(struct ssemu_region *r)
{
	link_port(r, NULL)->vclmask |= 1ULL << 2;
}

static void inmask_bit_empty(struct ssemu_region *r)
{
	uint32_t out;
	struct ssemu_swport *op = link_port(r, &out);

	op->vq[0].inmask |= 1ULL << 3;
	ssemu_r_voq(r, 0, 3, out, 0)->head = SSEMU_NONE;
}

/* A switch model's topology id in the table after the map, not its own. */
static void sw_id_other(struct ssemu_region *r)
{
	assert_true(r->sw_used >= 1);
	ssemu_r_swmap(r)[r->topo.nswitches + 0] ^= 1;
}

/* Each invariant broken in a sound fabric, and the check's verdict. */
static void test_each_invariant_caught(void **state)
{
	static const struct {
		void (*brk)(struct ssemu_region *r);
		void (*undo)(struct ssemu_region *r);
		const char *why;
	} cases[] = {
		{ leak_one, NULL, "packets in use" },
		{ count_one_more, NULL, "packets free" },
		{ hwm_one_more, NULL, "never used" },
		{ hwm_beyond, NULL, "high-water mark is" },
		{ hwm_below_free, NULL, "the free list holds packet index" },
		{ free_and_queued, free_and_queued_undo,
		  "in the free list and in a NIC's ack queue" },
		{ credit_above, NULL, "credits" },
		{ credit_negative, NULL, "NIC/class 1/0" },
		{ counted_not_queued, NULL, "packets in its VOQs, 1 counted" },
		{ vclmask_bit, NULL, "vclmask" },
		{ inmask_bit_empty, NULL, "its VOQ empty" },
		{ sw_id_other, NULL, "topology id" },
	};
	unsigned k;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		struct tf *t = quiet();

		cases[k].brk(region(t));
		assert_false(ssemu_model_check(region(t)));
		assert_broken(t, cases[k].why);
		if (cases[k].undo)
			cases[k].undo(region(t));
		tf_close(t);
	}
}

/* The engine gives back a message slot its owner does not hold. */
static void test_msg_state_caught(void **state)
{
	struct tf *t = quiet();
	struct ssemu_region *r = region(t);
	uint32_t mi;

	(void)state;
	for (mi = 0; mi < r->nmsgs; mi++)
		if (!*ssemu_r_mstate(r, mi))
			break;
	assert_true(mi < r->nmsgs);
	msg_state_or(r, ssemu_r_mstate(r, mi), SSEMU_MSG_TXDONE);
	assert_broken(t, "not busy");
	tf_close(t);
}

/*
 * A packet on its last VC routed on to another switch: a port has no
 * vclass past its classes' last, so the hop is refused (the fabric
 * broken, naming the VC) rather than counted beyond the port.
 */
static void test_last_vc_onward_caught(void **state)
{
	struct tf *t = open_with("2group", NULL, NULL, NULL);
	struct ssemu_region *r = region(t);
	struct ssemu_pkt *pkt = NULL;
	uint32_t pi;

	(void)state;
	tf_add(t, 0);
	tf_add(t, 32);	/* the other group: out through a switch port */
	tf_send(t, 0, 1, payload, 8, 0, 0, 0);
	/* on the edge link or in the first switch's pipeline (its
	 * arrival at the queues is 300 ns away at least) */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 100 * SSEMU_PS_PER_NS),
			 0);
	for (pi = 0; pi < r->pkt_hwm; pi++)
		if (ssemu_r_pkt(r, pi)->type == SSEMU_PKT_DATA)
			pkt = ssemu_r_pkt(r, pi);
	assert_non_null(pkt);
	assert_int_equal(pkt->vc, 0);
	pkt->vc = SSEMU_NVC - 1;
	assert_int_equal(ssemu_fabric_run_until(t->fab,
						10 * SSEMU_PS_PER_US),
			 -EIO);
	assert_broken(t, "(VC 5)");
	close_now(t);
}

/* Broken while traffic is in flight: the check on a sample of the events
 * finds it, and the fabric stops with -EIO.  (The sample is one event in
 * so many, counted across the process's fabrics: the traffic goes on,
 * round after round, until the check comes.) */
static void test_break_found_while_running(void **state)
{
	struct tf *t = open_with("2switch", NULL, NULL, NULL);
	struct iovec iov = { payload, 60000 };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	unsigned i, k, round;
	int ret = 0;

	(void)state;
	for (i = 0; i < 4; i++)
		tf_add(t, i * 8);
	/* (traffic enough for several periods of the check, whatever
	 * earlier tests left of its count) */
	for (i = 0; i < 16; i++)
		tf_send(t, i % 4, (i + 1) % 4, payload, 60000, 0, 0, 0);
	leak_one(region(t));
	for (round = 0; round < 200 && ret >= 0; round++) {
		for (k = 0; k < 100000 && ret >= 0 &&
			    !ssemu_fabric_idle(t->fab); k++) {
			ret = ssemu_fabric_progress(t->fab, 64);
			tf_pump(t);
		}
		/* (a send may find no room: the round is smaller) */
		for (i = 0; i < 4 && ret >= 0; i++) {
			s.dest = ssemu_ep_addr(t->ep[(i + 1) % 4]);
			ssemu_ep_send(t->ep[i], &s);
		}
	}
	assert_int_equal(ret, -EIO);
	assert_broken(t, "packets in use");
	close_now(t);
}

/* The engine running full stops the model with an error: a lossy
 * class's messages each hold a retry timer while in flight, more than 64
 * of them. */
static void test_engine_full(void **state)
{
	struct ssemu_config c;
	struct tf *t;
	unsigned i, k, sent = 0;
	struct iovec iov = { payload, 1000 };
	int ret = 0;

	(void)state;
	tf_config(&c, "2switch");
	c.max_events = 64;
	c.tclass[1].lossy = true;
	t = tf_open(&c);
	for (i = 0; i < 12; i++)
		tf_add(t, i < 6 ? i : 10 + i);
	for (k = 0; k < 200 && ret >= 0; k++) {
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[6 + k % 6]),
			.tclass = 1, .iov = &iov, .iov_count = 1,
		};

		ret = ssemu_ep_send(t->ep[k % 6], &s);
		if (ret == -EAGAIN)
			ret = 0;
		else if (!ret)
			sent++;
		if (ret >= 0 && k % 8 == 7)
			ret = ssemu_fabric_progress(t->fab, 16);
		tf_pump(t);
	}
	assert_true(sent > 0);
	assert_int_equal(ret, -EIO);
	assert_broken(t, "the event engine is full");
	/* every call fails from then on */
	{
		struct ssemu_send s = { .dest = ssemu_ep_addr(t->ep[6]),
					.iov = &iov, .iov_count = 1 };

		assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EIO);
	}
	close_now(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alltoall_adaptive),
		cmocka_unit_test(test_incast_cc),
		cmocka_unit_test(test_lossy_incast),
		cmocka_unit_test(test_rma),
		cmocka_unit_test(test_close_and_reset),
		cmocka_unit_test(test_each_invariant_caught),
		cmocka_unit_test(test_msg_state_caught),
		cmocka_unit_test(test_last_vc_onward_caught),
		cmocka_unit_test(test_break_found_while_running),
		cmocka_unit_test(test_engine_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
