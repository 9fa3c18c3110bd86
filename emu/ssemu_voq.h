/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Virtual output queues: voq[out][vclass][in], FIFO lists of packets
 * through their next links (the inputs' queues of one output and vclass
 * are a row of the VOQ pool, taken while any holds a packet), and the masks an output's arbitration looks
 * at instead of the queues (vclmask: the vclasses with packets queued;
 * vq[vcl].inmask: the inputs with packets of that vclass queued).
 */
#ifndef SSEMU_VOQ_H
#define SSEMU_VOQ_H

#include "ssemu_link.h"

/*
 * The vclasses that may send on output @op now (@edge: it leads to a
 * NIC), as a mask (bit vcl): a packet queued with a credit ahead.  Only
 * the vclasses with packets queued are looked at (vclmask, kept by
 * voq_push and voq_pop).
 */
static inline uint64_t ready_vcls(const struct ssemu_swport *op, bool edge,
				  uint32_t ntclass)
{
	uint32_t nvcl = ntclass * SSEMU_NVC, vcl;
	uint64_t m, rv = 0;

	m = op->vclmask;
	if (nvcl < 64)
		m &= (1ULL << nvcl) - 1;
	for (; m; m &= m - 1) {
		vcl = (uint32_t)__builtin_ctzll(m);
		if (op->vq[next_vcl_at(edge, vcl)].credits)
			rv |= 1ULL << vcl;
	}
	return rv;
}

/* The ready VCs of class @tc in @rv (ready_vcls), bit vc. */
static inline uint32_t class_vcs(uint64_t rv, uint32_t tc)
{
	return (uint32_t)(rv >> (tc * SSEMU_NVC)) & ((1u << SSEMU_NVC) - 1);
}

/* A row of the VOQ pool for an output and vclass that had no packet
 * queued, or NONE (the fabric is broken: there is a row per packet). */
static inline uint32_t voq_row_take(struct ssemu_region *r)
{
	uint32_t row = r->voq_free;

	if (row != SSEMU_NONE &&
	    !(unlikely(ssemu_model_fresh_places) && r->voq_hwm < r->voq_rows)) {
		if (SSEMU_BAD(r, row >= r->voq_rows, "the VOQ pool's free "
			      "list: row %u of %u", row, r->voq_rows))
			return SSEMU_NONE;
		r->voq_free = ssemu_r_voq_at(r, row, 0)->head;
		return row;
	}
	if (SSEMU_BAD(r, r->voq_hwm >= r->voq_rows, "the VOQ pool: all %u "
		      "rows taken", r->voq_rows))
		return SSEMU_NONE;
	return r->voq_hwm++;
}

static inline void voq_row_give(struct ssemu_region *r, uint32_t row)
{
	ssemu_r_voq_at(r, row, 0)->head = r->voq_free;
	r->voq_free = row;
}

/* Packet @pi joins VOQ (@in, @out, @vcl) of switch model @inst. */
static inline void voq_push(struct ssemu_region *r, uint32_t inst,
			    uint32_t in, uint32_t out, uint32_t vcl,
			    uint32_t pi)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	uint32_t *row = ssemu_r_voq_row(r, inst, out, vcl);
	struct ssemu_swport *op = ssemu_sw_port(r, s, out);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	struct ssemu_voq *q;

	if (!op->vq[vcl].queued) {
		*row = voq_row_take(r);
		if (*row == SSEMU_NONE)
			return;
	} else if (SSEMU_BAD(r, *row >= r->voq_rows, "switch %u output %u "
			     "vclass %u: VOQ row %u of %u", s->sw, out, vcl,
			     *row, r->voq_rows)) {
		return;
	}
	q = ssemu_r_voq_at(r, *row, in);
	pkt->next = SSEMU_NONE;
	if (!(op->vq[vcl].inmask & (1ULL << in))) {
		q->head = pi;
		op->vq[vcl].inmask |= 1ULL << in;
	} else if (!pkt_link_bad(r, q->tail, "a VOQ's tail") &&
		   q->tail != SSEMU_NONE) {
		ssemu_r_pkt(r, q->tail)->next = pi;
	} else {
		ssemu_fail(r, "a VOQ with packets has no tail");
		return;
	}
	q->tail = pi;
	if (!op->vq[vcl].queued++)
		op->vclmask |= 1ULL << vcl;
	op->queued_tc[vcl / SSEMU_NVC]++;
	op->nqueued++;
}

/* The head of VOQ (@in, @out, @vcl), taken off it (NONE: a bad link). */
static inline uint32_t voq_pop(struct ssemu_region *r, uint32_t inst,
			       uint32_t in, uint32_t out, uint32_t vcl)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	uint32_t *row = ssemu_r_voq_row(r, inst, out, vcl);
	struct ssemu_swport *op = ssemu_sw_port(r, s, out);
	struct ssemu_voq *q;
	struct ssemu_pkt *pkt;
	uint32_t pi;

	if (SSEMU_BAD(r, !op->vq[vcl].queued || *row >= r->voq_rows,
		      "switch %u output %u vclass %u: VOQ row %u of %u, %u "
		      "packets queued", s->sw, out, vcl, *row, r->voq_rows,
		      op->vq[vcl].queued))
		return SSEMU_NONE;
	q = ssemu_r_voq_at(r, *row, in);
	pi = q->head;
	if (SSEMU_BAD(r, pi >= r->config.max_pkts, "a VOQ's head: packet "
		      "index %u of %u", pi, r->config.max_pkts) ||
	    pkt_link_bad(r, ssemu_r_pkt(r, pi)->next, "a VOQ link"))
		return SSEMU_NONE;
	pkt = ssemu_r_pkt(r, pi);
	q->head = pkt->next;
	if (q->head == SSEMU_NONE)
		op->vq[vcl].inmask &= ~(1ULL << in);
	if (!--op->vq[vcl].queued) {
		op->vclmask &= ~(1ULL << vcl);
		voq_row_give(r, *row);
	}
	op->queued_tc[vcl / SSEMU_NVC]--;
	op->nqueued--;
	return pi;
}

#endif
