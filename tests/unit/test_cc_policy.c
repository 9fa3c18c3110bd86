/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion control policies (emu/ssemu_cc.c) on their own: a pair's
 * state and an edge output's queues built by hand (no fabric), fed a trace
 * of acknowledgements, queue arrivals and flow-control frames; the window,
 * the marks and the pauses checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ssemu_policy.h"

#define WINDOW 32	/* the NIC's window, packets */

static const struct ssemu_cc_ops *cc(const char *name)
{
	int i = ssemu_cc_index(name);

	assert_true(i >= 0);
	assert_string_equal(ssemu_cc_table[i].name, name);
	return &ssemu_cc_table[i];
}

/* A pair as a fresh NIC has it: the full window, nothing acknowledged. */
static void pair_init(struct ssemu_pair *pr)
{
	memset(pr, 0, sizeof(*pr));
	pr->cwnd = WINDOW << 8;
	pr->cc_acked = UINT32_MAX / 2;
}

static void test_none(void **state)
{
	const struct ssemu_cc_ops *o = cc("none");
	uint32_t q[SSEMU_MAX_TCLASS] = { 1000 };
	struct ssemu_pair pr;
	struct ssemu_cc_pair_view v = { .pair = &pr, .now = 5,
					.nic_window = WINDOW };

	(void)state;
	pair_init(&pr);
	pr.pause = 1000;	/* (not its business) */
	assert_int_equal(o->window(&v), WINDOW);
	assert_false(o->mark(q, 0));
	o->on_ack(&v, 4, true);
	assert_int_equal(pr.cwnd, WINDOW << 8);
	assert_null(o->on_queue);
	assert_null(o->on_send);
	assert_null(o->on_frame);
}

/* Marks halve the window once per window's worth of acknowledgements;
 * unmarked ones grow it by a packet per window, up to the NIC's. */
static void test_pair_window_trace(void **state)
{
	const struct ssemu_cc_ops *o = cc("endpoint-pair");
	struct ssemu_pair pr;
	struct ssemu_cc_pair_view v = { .pair = &pr, .now = 0,
					.nic_window = WINDOW };
	unsigned k;

	(void)state;
	pair_init(&pr);
	assert_int_equal(o->window(&v), WINDOW);
	o->on_ack(&v, 1, true);
	assert_int_equal(o->window(&v), WINDOW / 2);
	/* the same episode's marks: no further cut within a window */
	for (k = 0; k < WINDOW / 2 - 1; k++) {
		o->on_ack(&v, 1, true);
		assert_int_equal(o->window(&v), WINDOW / 2);
	}
	/* a window's worth later: the next cut */
	o->on_ack(&v, 1, true);
	assert_int_equal(o->window(&v), WINDOW / 4);
	/* down to one packet, never below */
	for (k = 0; k < 200; k++)
		o->on_ack(&v, 8, true);
	assert_int_equal(pr.cwnd, 256);
	assert_int_equal(o->window(&v), 1);
	/* one window of unmarked acknowledgements: one packet more */
	o->on_ack(&v, 1, false);
	assert_int_equal(o->window(&v), 2);
	o->on_ack(&v, 2, false);
	assert_int_equal(o->window(&v), 3);
	for (k = 0; k < 10000; k++)
		o->on_ack(&v, 1, false);
	assert_int_equal(pr.cwnd, WINDOW << 8);
}

struct qfx {
	struct ssemu_config c;
	struct ssemu_pkt pkt;
	struct ssemu_nic_sh src;
	struct ssemu_pair pair;
	uint32_t queued[SSEMU_MAX_TCLASS];
	uint32_t nflows;
	struct ssemu_cc_queue_view v;
};

static void qfx_init(struct qfx *f)
{
	memset(f, 0, sizeof(*f));
	f->c.ntclass = 2;
	f->c.mtu = 2048;
	f->c.pkt_overhead = 64;
	f->c.edge.rate_bps = 200000000000ULL;
	f->c.edge.delay = 10000;
	f->c.local.delay = 20000;
	f->c.sw_lat_mean = 300000;
	f->src.state = SSEMU_NIC_ATTACHED;
	f->src.gen = 3;
	f->pkt.type = SSEMU_PKT_DATA;
	f->pkt.tclass = 1;
	f->pkt.src_gen = 3;
	f->pkt.vc = 1;
	pair_init(&f->pair);
	f->v = (struct ssemu_cc_queue_view){
		.c = &f->c, .pkt = &f->pkt, .queued_tc = f->queued,
		.nflows = &f->nflows, .pair = &f->pair, .src = &f->src,
	};
}

/* A queue of the packet's class at the threshold sends its source a frame
 * (back over its hops); shorter, or another NIC generation's packet,
 * none.  The output counts the flows feeding it either way. */
static void test_pair_queue_frames(void **state)
{
	const struct ssemu_cc_ops *o = cc("endpoint-pair");
	struct ssemu_cc_frame fr, fr2;
	struct qfx f;
	uint32_t gap1, gap2;

	(void)state;
	qfx_init(&f);
	f.queued[1] = SSEMU_CC_MARK_QUEUE - 1;
	f.queued[0] = 100;	/* another class's queue does not count */
	assert_false(o->on_queue(&f.v, &fr));
	assert_int_equal(f.nflows, 1);
	assert_int_equal(f.pair.egq, 1);
	assert_false(o->mark(f.queued, 1));
	assert_true(o->mark(f.queued, 0));

	f.queued[1] = SSEMU_CC_MARK_QUEUE;
	assert_true(o->on_queue(&f.v, &fr));
	assert_int_equal(f.nflows, 1);	/* the same flow */
	assert_int_equal(f.pair.egq, 2);
	assert_int_equal(fr.delay, 2 * (300000 + 20000) + 10000);
	assert_int_equal(ssemu_cc_frame_tclass(fr.arg), 1);
	gap1 = fr.arg & 0xffffff;
	/* 2112 bytes at 200 Gb/s: 84.48 ns, one flow, at the threshold */
	assert_int_equal(gap1, 84);

	/* twice the queue and a second flow: four times the gap */
	f.queued[1] = 2 * SSEMU_CC_MARK_QUEUE;
	f.nflows = 2;
	assert_true(o->on_queue(&f.v, &fr2));
	gap2 = fr2.arg & 0xffffff;
	assert_true(gap2 >= 4 * gap1 && gap2 <= 4 * gap1 + 4);

	/* the source NIC slot has a new owner: no frame for the old one */
	f.src.gen = 4;
	assert_false(o->on_queue(&f.v, &fr));
	f.src.gen = 3;
	f.src.state = 0;
	assert_false(o->on_queue(&f.v, &fr));
	/* no pair known: nothing counted, no crash */
	f.v.pair = NULL;
	f.v.src = NULL;
	f.nflows = 0;
	assert_false(o->on_queue(&f.v, &fr));
	assert_int_equal(f.nflows, 0);
}

/* The flow count follows the packets in and out. */
static void test_pair_flows(void **state)
{
	const struct ssemu_cc_ops *o = cc("endpoint-pair");
	struct ssemu_pair other;
	struct ssemu_cc_frame fr;
	struct qfx f;

	(void)state;
	qfx_init(&f);
	pair_init(&other);
	o->on_queue(&f.v, &fr);
	o->on_queue(&f.v, &fr);
	f.v.pair = &other;
	o->on_queue(&f.v, &fr);
	assert_int_equal(f.nflows, 2);
	o->on_dequeue(&f.v);
	assert_int_equal(f.nflows, 1);
	assert_int_equal(other.egq, 0);
	o->on_dequeue(&f.v);	/* (more out than in: never below 0) */
	assert_int_equal(f.nflows, 1);
	f.v.pair = &f.pair;
	o->on_dequeue(&f.v);
	assert_int_equal(f.nflows, 1);
	o->on_dequeue(&f.v);
	assert_int_equal(f.nflows, 0);
	assert_int_equal(f.pair.egq, 0);
}

/* A frame paces the pair: every packet sent then pauses it a gap (the
 * window is 0 meanwhile), for SSEMU_CC_PACE_GAPS gaps; a frame during
 * pacing prolongs it without a new episode. */
static void test_pair_pacing_trace(void **state)
{
	const struct ssemu_cc_ops *o = cc("endpoint-pair");
	struct ssemu_pair pr;
	struct ssemu_cc_pair_view v = { .pair = &pr, .now = 1000000,
					.nic_window = WINDOW };
	ssemu_time_t until = 0, gap = 50 * SSEMU_PS_PER_NS;
	uint32_t arg = 50 | 1u << 24;

	(void)state;
	pair_init(&pr);
	assert_false(o->on_send(&v, &until));
	assert_true(o->on_frame(&v, arg));
	assert_int_equal(pr.gap, gap);
	assert_int_equal(pr.slow, v.now + SSEMU_CC_PACE_GAPS * gap);
	v.now += 10;
	assert_false(o->on_frame(&v, arg));	/* the same episode */
	assert_true(o->on_send(&v, &until));
	assert_int_equal(until, v.now + gap);
	assert_int_equal(o->window(&v), 0);
	v.now = until - 1;
	assert_int_equal(o->window(&v), 0);
	v.now = until;
	assert_int_equal(o->window(&v), WINDOW);
	/* pacing runs out */
	v.now = pr.slow;
	assert_false(o->on_send(&v, &until));
	assert_true(o->on_frame(&v, arg));	/* a new episode */
}

static void test_registry(void **state)
{
	(void)state;
	assert_int_equal(ssemu_cc_index("none"), 0);
	assert_true(ssemu_cc_index("endpoint-pair") > 0);
	assert_int_equal(ssemu_cc_index("dctcp"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_pair_window_trace),
		cmocka_unit_test(test_pair_queue_frames),
		cmocka_unit_test(test_pair_flows),
		cmocka_unit_test(test_pair_pacing_trace),
		cmocka_unit_test(test_registry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
