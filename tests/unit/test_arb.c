/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Output arbiters (emu/ssemu_arb.c) on their own: a switch output, its
 * VOQs and packets built by hand (no fabric), packets granted one after
 * another as the switch would send them, and the grant order checked:
 * round robin among inputs, strict priority between classes, credits
 * downstream, "shares" guarantees and caps, and that a look granting
 * nothing changes nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ssemu_policy.h"

#define RADIX 8
#define NPKT 512
#define MTU 2048
#define OVH 64

/* One output of a switch, as the arbiter sees it. */
struct fx {
	struct ssemu_config c;
	/* (room for every vclass: a port is sized by its fabric's classes) */
	struct ssemu_swport_img opi;
	struct ssemu_voq voq[SSEMU_MAX_VCLASS * RADIX];
	struct ssemu_pkt pkt[NPKT];
	uint32_t npkt;
	struct ssemu_arb_view v;
	const struct ssemu_arb_ops *arb;
};

static struct fx *fx_new(const char *arb, uint32_t ntclass, bool edge)
{
	struct fx *f = calloc(1, sizeof(*f));
	int i = ssemu_arb_index(arb);
	uint32_t tc, vcl;

	assert_non_null(f);
	assert_true(i >= 0);
	f->arb = &ssemu_arb_table[i];
	assert_string_equal(f->arb->name, arb);
	f->c.ntclass = ntclass;
	f->c.mtu = MTU;
	f->c.pkt_overhead = OVH;
	for (tc = 0; tc < ntclass; tc++)
		f->c.tclass[tc].max_pct = 100;
	/* plenty of credit downstream for every vclass */
	for (vcl = 0; vcl < SSEMU_MAX_VCLASS; vcl++)
		f->opi.port.vq[vcl].credits = 1000;
	f->opi.port.bytes_per_ps = 200e9 / 8e12;	/* 200 Gb/s */
	f->v = (struct ssemu_arb_view){
		.op = &f->opi.port, .voq = f->voq, .radix = RADIX,
		.pkt = f->pkt,
		.c = &f->c, .now = 0, .edge = edge,
	};
	return f;
}

/* Queue a packet of @bytes at input @in, vclass @vcl (as voq_push). */
static void q_push(struct fx *f, uint32_t in, uint32_t vcl, uint32_t bytes)
{
	struct ssemu_voq *q = &f->voq[vcl * RADIX + in];
	uint32_t pi = f->npkt++;

	assert_true(pi < NPKT);
	f->pkt[pi].bytes = bytes;
	f->pkt[pi].tclass = (uint8_t)(vcl / SSEMU_NVC);
	f->pkt[pi].next = SSEMU_NONE;
	if (f->opi.port.vq[vcl].inmask & (1ULL << in))
		f->pkt[q->tail].next = pi;
	else
		q->head = pi;
	q->tail = pi;
	f->opi.port.vq[vcl].inmask |= 1ULL << in;
	if (!f->opi.port.vq[vcl].queued++)
		f->opi.port.vclmask |= 1ULL << vcl;
	f->opi.port.queued_tc[vcl / SSEMU_NVC]++;
	f->opi.port.nqueued++;
}

/* Take the granted packet off its VOQ and its credit from downstream (as
 * the switch does), and let its serialisation time pass. */
static uint32_t q_send(struct fx *f, uint32_t in, uint32_t vcl)
{
	struct ssemu_voq *q = &f->voq[vcl * RADIX + in];
	uint32_t pi = q->head, dvcl;

	assert_true(f->opi.port.vq[vcl].inmask & (1ULL << in));
	q->head = f->pkt[pi].next;
	if (q->head == SSEMU_NONE)
		f->opi.port.vq[vcl].inmask &= ~(1ULL << in);
	if (!--f->opi.port.vq[vcl].queued)
		f->opi.port.vclmask &= ~(1ULL << vcl);
	f->opi.port.queued_tc[vcl / SSEMU_NVC]--;
	f->opi.port.nqueued--;
	dvcl = f->v.edge ? vcl - vcl % SSEMU_NVC : vcl + 1;
	assert_true(f->opi.port.vq[dvcl].credits >=
		    (f->pkt[pi].bytes + 63) / 64);
	f->opi.port.vq[dvcl].credits -= (f->pkt[pi].bytes + 63) / 64;
	f->v.now += (ssemu_time_t)(f->pkt[pi].bytes / f->opi.port.bytes_per_ps);
	return pi;
}

/* Grant and send: the input granted, or -1 if nothing may go. */
static int grant(struct fx *f, uint32_t *vcl_out)
{
	ssemu_time_t retry = UINT64_MAX;
	uint32_t in, vcl;

	if (!f->arb->pick(&f->v, &in, &vcl, &retry))
		return -1;
	assert_true(in < RADIX);
	q_send(f, in, vcl);
	if (vcl_out)
		*vcl_out = vcl;
	return (int)in;
}

/* Inputs 0, 1, 2 with two packets each: turns after the pointer. */
static void round_robin(const char *arb)
{
	static const int want[] = { 1, 2, 0, 1, 2, 0 };
	struct fx *f = fx_new(arb, 1, false);
	uint32_t in, k;

	for (k = 0; k < 2; k++)
		for (in = 0; in < 3; in++)
			q_push(f, in, 0, MTU + OVH);
	for (k = 0; k < 6; k++)
		assert_int_equal(grant(f, NULL), want[k]);
	assert_int_equal(grant(f, NULL), -1);
	assert_int_equal(f->opi.port.nqueued, 0);
	free(f);
}

static void test_rr_priority_rr(void **state)
{
	(void)state;
	round_robin("priority-rr");
}

static void test_rr_shares(void **state)
{
	(void)state;
	round_robin("shares");
}

/* Class 1 outranks class 0: all of it goes first, whatever the inputs. */
static void test_strict_priority(void **state)
{
	struct fx *f = fx_new("priority-rr", 2, false);
	uint32_t vcl, k;

	(void)state;
	f->c.tclass[1].priority = 5;
	for (k = 0; k < 4; k++) {
		q_push(f, 0, 0 * SSEMU_NVC, 256);
		q_push(f, 1, 1 * SSEMU_NVC, 256);
	}
	for (k = 0; k < 4; k++) {
		assert_int_equal(grant(f, &vcl), 1);
		assert_int_equal(vcl / SSEMU_NVC, 1);
	}
	for (k = 0; k < 4; k++) {
		assert_int_equal(grant(f, &vcl), 0);
		assert_int_equal(vcl / SSEMU_NVC, 0);
	}
	assert_int_equal(grant(f, NULL), -1);
	free(f);
}

/* A head packet larger than the credit downstream waits (the smaller one
 * behind another input goes); no credit at all: nothing goes. */
static void test_credits(void **state)
{
	struct fx *f = fx_new("shares", 1, false);
	ssemu_time_t retry = UINT64_MAX;
	uint32_t in, vcl;

	(void)state;
	q_push(f, 1, 0, MTU + OVH);	/* 33 cells */
	q_push(f, 2, 0, 64);		/* 1 cell */
	f->opi.port.vq[1].credits = 10;
	assert_int_equal(grant(f, NULL), 2);
	assert_int_equal(grant(f, NULL), -1);
	f->opi.port.vq[1].credits = 0;
	assert_false(f->arb->pick(&f->v, &in, &vcl, &retry));
	assert_int_equal(retry, UINT64_MAX);
	f->opi.port.vq[1].credits = 33;
	assert_int_equal(grant(f, NULL), 1);
	free(f);
}

/* At an edge output (toward a NIC) VC 1 packets fill the NIC's buffer,
 * VC 0's credits. */
static void test_edge_credits(void **state)
{
	struct fx *f = fx_new("priority-rr", 1, true);
	uint32_t vcl;

	(void)state;
	q_push(f, 3, 1, 64);
	f->opi.port.vq[0].credits = 1;
	f->opi.port.vq[2].credits = 0;
	assert_int_equal(grant(f, &vcl), 3);
	assert_int_equal(vcl, 1);
	assert_int_equal(f->opi.port.vq[0].credits, 0);
	free(f);
}

/* Two backlogged classes of one priority, guaranteed 80% and 20%: the
 * grants follow the guarantees. */
static void test_shares_guarantee(void **state)
{
	struct fx *f = fx_new("shares", 2, false);
	uint32_t vcl, k, n[2] = { 0, 0 };

	(void)state;
	f->c.tclass[0].min_pct = 80;
	f->c.tclass[1].min_pct = 20;
	for (k = 0; k < 200; k++) {
		q_push(f, 0, 0 * SSEMU_NVC, MTU + OVH);
		q_push(f, 1, 1 * SSEMU_NVC, MTU + OVH);
	}
	f->opi.port.vq[1].credits = 100000;
	f->opi.port.vq[SSEMU_NVC + 1].credits = 100000;
	for (k = 0; k < 200; k++) {
		assert_true(grant(f, &vcl) >= 0);
		n[vcl / SSEMU_NVC]++;
	}
	assert_true(n[0] >= 150 && n[0] <= 170);
	assert_int_equal(n[0] + n[1], 200);
	free(f);
}

/* A class capped at 25% alone on the output: it sends its bucket's depth,
 * then waits, with a retry time when it may go again -- and the grants
 * keep to a quarter of the link over time. */
static void test_shares_cap(void **state)
{
	struct fx *f = fx_new("shares", 1, false);
	ssemu_time_t retry, start;
	uint32_t in, vcl, sent = 0, k;

	(void)state;
	f->c.tclass[0].max_pct = 25;
	for (k = 0; k < 64; k++)
		q_push(f, 0, 0, MTU + OVH);
	f->opi.port.vq[1].credits = 100000;
	start = f->v.now;
	while (f->v.now < start + 2000000) {	/* 2 us */
		retry = UINT64_MAX;
		if (f->arb->pick(&f->v, &in, &vcl, &retry)) {
			q_send(f, in, vcl);
			sent++;
			continue;
		}
		/* held back by the cap: told when to look again, the first
		 * picosecond it may go (a look just before is still held
		 * back, and names the same time) */
		assert_true(retry != UINT64_MAX);
		assert_true(retry > f->v.now);
		if (retry - 1 > f->v.now) {
			ssemu_time_t again = UINT64_MAX;

			f->v.now = retry - 1;
			assert_false(f->arb->pick(&f->v, &in, &vcl, &again));
			assert_true(again == retry);
		}
		f->v.now = retry;
		assert_true(f->arb->pick(&f->v, &in, &vcl, &retry));
		q_send(f, in, vcl);
		sent++;
	}
	/* 200 Gb/s for 2 us is 50000 bytes, a quarter 12500: about 6
	 * packets of 2112 bytes, plus the bucket's depth at the start */
	assert_true(sent >= 6 && sent <= 6 + 4 + 1);
	free(f);
}

/*
 * A look that grants nothing leaves the buckets as they were: two classes
 * with guarantees and caps, backlogged, granted on two copies of the same
 * output at the same times, one of which also looks (with no credit
 * downstream, so nothing may go) at a few times in between each grant.
 * The grants, the retry times and the buckets stay the same as the
 * other's, to the bit: what a send sees does not depend on how often the
 * output looked before it.
 */
static void test_shares_look_pure(void **state)
{
	struct fx *a = fx_new("shares", 2, false), *b = fx_new("shares", 2,
							       false);
	struct fx *fs[2] = { a, b };
	ssemu_time_t ra, rb, t;
	uint32_t ia, ib, va, vb, k, j, n;
	bool ga, gb;

	(void)state;
	for (n = 0; n < 2; n++) {
		fs[n]->c.tclass[0].min_pct = 70;
		fs[n]->c.tclass[0].max_pct = 90;
		fs[n]->c.tclass[1].min_pct = 30;
		fs[n]->c.tclass[1].max_pct = 60;
		for (k = 0; k < 100; k++) {
			q_push(fs[n], 0, 0 * SSEMU_NVC, MTU + OVH);
			q_push(fs[n], 1, 1 * SSEMU_NVC, 700 + 13 * k);
		}
		fs[n]->opi.port.vq[1].credits = 100000;
		fs[n]->opi.port.vq[SSEMU_NVC + 1].credits = 100000;
	}
	for (k = 0; k < 120; k++) {
		t = a->v.now;
		assert_true(t == b->v.now);
		a->opi.port.vq[1].credits = 0;
		a->opi.port.vq[SSEMU_NVC + 1].credits = 0;
		for (j = 1; j <= 5; j++) {
			ra = UINT64_MAX;
			a->v.now = t + j * 997;
			assert_false(a->arb->pick(&a->v, &ia, &va, &ra));
			assert_true(ra == UINT64_MAX);
		}
		a->opi.port.vq[1].credits = b->opi.port.vq[1].credits;
		a->opi.port.vq[SSEMU_NVC + 1].credits =
			b->opi.port.vq[SSEMU_NVC + 1].credits;
		a->v.now = b->v.now = t + 5 * 997 + 13;
		ra = rb = UINT64_MAX;
		ga = a->arb->pick(&a->v, &ia, &va, &ra);
		gb = b->arb->pick(&b->v, &ib, &vb, &rb);
		assert_true(ga == gb);
		if (!ga) {
			/* both capped: the same retry time */
			assert_true(ra == rb && ra != UINT64_MAX);
			a->v.now = b->v.now = ra;
			continue;
		}
		assert_int_equal(ia, ib);
		assert_int_equal(va, vb);
		q_send(a, ia, va);
		q_send(b, ib, vb);
	}
	assert_true(a->opi.port.tok_time == b->opi.port.tok_time);
	assert_int_equal(a->opi.port.tok_full, b->opi.port.tok_full);
	assert_int_equal(a->opi.port.tc_rr, b->opi.port.tc_rr);
	assert_memory_equal(a->opi.port.cls, b->opi.port.cls,
			    sizeof(a->opi.port.cls));
	free(a);
	free(b);
}

static void test_registry(void **state)
{
	(void)state;
	assert_int_equal(ssemu_arb_index("shares"), 0);
	assert_true(ssemu_arb_index("priority-rr") > 0);
	assert_int_equal(ssemu_arb_index("fifo"), -1);
	assert_int_equal(ssemu_arb_index(NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rr_priority_rr),
		cmocka_unit_test(test_rr_shares),
		cmocka_unit_test(test_strict_priority),
		cmocka_unit_test(test_credits),
		cmocka_unit_test(test_edge_credits),
		cmocka_unit_test(test_shares_guarantee),
		cmocka_unit_test(test_shares_cap),
		cmocka_unit_test(test_shares_look_pure),
		cmocka_unit_test(test_registry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
