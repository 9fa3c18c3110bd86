/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Virtual output queues: voq[out][vclass][in], FIFO lists of packets
 * through their next links, and the masks an output's arbitration looks
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

/* Packet @pi joins VOQ (@in, @out, @vcl) of switch @s. */
static inline void voq_push(struct ssemu_region *r,
			    struct ssemu_switch_sh *s, uint32_t in,
			    uint32_t out, uint32_t vcl, uint32_t pi)
{
	struct ssemu_voq *q = ssemu_r_voq(r, s, in, out, vcl);
	struct ssemu_swport *op = &s->port[out];
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);

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
static inline uint32_t voq_pop(struct ssemu_region *r,
			       struct ssemu_switch_sh *s, uint32_t in,
			       uint32_t out, uint32_t vcl)
{
	struct ssemu_voq *q = ssemu_r_voq(r, s, in, out, vcl);
	struct ssemu_swport *op = &s->port[out];
	uint32_t pi = q->head;
	struct ssemu_pkt *pkt;

	if (SSEMU_BAD(r, pi >= r->config.max_pkts, "a VOQ's head: packet "
		      "index %u of %u", pi, r->config.max_pkts) ||
	    pkt_link_bad(r, ssemu_r_pkt(r, pi)->next, "a VOQ link"))
		return SSEMU_NONE;
	pkt = ssemu_r_pkt(r, pi);
	q->head = pkt->next;
	if (q->head == SSEMU_NONE)
		op->vq[vcl].inmask &= ~(1ULL << in);
	if (!--op->vq[vcl].queued)
		op->vclmask &= ~(1ULL << vcl);
	op->queued_tc[vcl / SSEMU_NVC]--;
	op->nqueued--;
	return pi;
}

#endif
