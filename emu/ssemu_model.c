/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The packet-level model: Cassini-like NICs, Rosetta-like switches and the
 * links between them.  It runs single-threaded inside the engine, under the
 * fabric lock, and touches nothing outside the region.
 *
 * A packet's life: the source NIC serialises it onto its edge link (when the
 * link is free, the destination's window is open and the switch input buffer
 * has a credit for its class); it arrives at a switch input buffer, pays the
 * pipeline latency, is routed and joins the virtual output queue
 * voq[out][class, VC][in]; the output arbitrates among VOQs that have a credit
 * downstream (request/grant), serialises it onto the next link and returns
 * the input-buffer credit upstream.  The destination NIC takes every packet
 * (returning the credit), reassembles the message, delivers it to the
 * endpoint's event ring when the last packet is in, and answers each packet
 * with an acknowledgement that travels back through the fabric and closes
 * the source's window slot; the last acknowledgement completes the send.
 *
 * Queues are FIFO per (input, output, class) and the pipeline never lets a
 * packet overtake an earlier one from the same input, so with minimal
 * routing messages between two NICs in one class arrive in the order they
 * were posted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* process_vm_readv */
#endif
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ssemu_priv.h"

static inline ssemu_time_t now_of(struct ssemu_region *r)
{
	return ssemu_r_engine(r)->now;
}

/*
 * Checks of what the model reads from the segment (ssemu_fail marks the
 * fabric broken; each returns true if what it looked at is bad).
 */

/*
 * Packet @pi as a switch sees it: its index, and the fields a hop uses as
 * an index or a size (all in its first 40 bytes, the line a hop touches
 * anyway).
 */
static bool pkt_hop_bad(struct ssemu_region *r, uint32_t pi)
{
	const struct ssemu_config *c = &r->config;
	const struct ssemu_topo *t = &r->topo;
	const struct ssemu_pkt *p;

	if (SSEMU_BAD(r, pi >= c->max_pkts, "packet index %u of %u", pi,
		      c->max_pkts))
		return true;
	p = ssemu_r_pkt(r, pi);
	return SSEMU_BAD(r, p->type < SSEMU_PKT_DATA ||
			 p->type > SSEMU_PKT_RESP || p->tclass >= c->ntclass ||
			 p->vc >= SSEMU_NVC || p->dst_port >= t->nendpoints ||
			 p->in_port >= t->radix || p->phase > 1 ||
			 p->bytes > c->mtu + c->pkt_overhead ||
			 (!(p->via & 0x8000u) && p->via > t->g),
			 "packet %u: a field is out of range (type %u, class "
			 "%u, vc %u, to port %u, %u bytes)", pi, p->type,
			 p->tclass, p->vc, p->dst_port, p->bytes);
}

/* ... and as a NIC sees it: the rest too. */
static bool pkt_bad(struct ssemu_region *r, uint32_t pi)
{
	const struct ssemu_pkt *p;

	if (pkt_hop_bad(r, pi))
		return true;
	p = ssemu_r_pkt(r, pi);
	return SSEMU_BAD(r, p->msg >= r->nmsgs ||
			 p->src_port >= r->topo.nendpoints,
			 "packet %u: message %u, from port %u", pi, p->msg,
			 p->src_port);
}

/* A link to a packet (NONE ends a list). */
static inline bool pkt_link_bad(struct ssemu_region *r, uint32_t pi,
				const char *what)
{
	return SSEMU_BAD(r, pi != SSEMU_NONE && pi >= r->config.max_pkts,
			 "%s: packet index %u of %u", what, pi,
			 r->config.max_pkts);
}

/* A link to a message slot (NONE ends a list). */
static inline bool msg_link_bad(struct ssemu_region *r, uint32_t mi,
				const char *what)
{
	return SSEMU_BAD(r, mi != SSEMU_NONE && mi >= r->nmsgs,
			 "%s: message slot %u of %u", what, mi, r->nmsgs);
}

/* Message @mi as the NIC injects it: where its payload lies and what it
 * is sent with. */
static bool msg_bad(struct ssemu_region *r, uint32_t mi)
{
	const struct ssemu_config *c = &r->config;
	const struct ssemu_msg *m;
	uint32_t ep = ssemu_msg_ep(r, mi);

	if (SSEMU_BAD(r, mi >= r->nmsgs, "message slot %u of %u", mi,
		      r->nmsgs))
		return true;
	m = ssemu_r_msg(r, mi);
	return SSEMU_BAD(r, m->tclass >= c->ntclass ||
			 SSEMU_ADDR_PORT(m->dst) >= r->topo.nendpoints ||
			 SSEMU_ADDR_PID(m->dst) >= c->eps_per_nic ||
			 (m->buf != SSEMU_NONE &&
			  m->buf / SSEMU_MAX(c->bufs_per_ep, 1u) != ep) ||
			 m->len > (m->buf == SSEMU_NONE ? SSEMU_INLINE_MAX :
							 c->buf_size) ||
			 m->sent > m->npkts ||
			 (!m->rma_op && m->npkts != (m->len ?
				(m->len + c->mtu - 1) / c->mtu : 1)),
			 "message slot %u: a field is out of range (class %u, "
			 "to port %u, buffer %u, %llu bytes in %u packets)", mi,
			 m->tclass, SSEMU_ADDR_PORT(m->dst), m->buf,
			 (unsigned long long)m->len, m->npkts);
}

/* The payload of message @m (checked by msg_bad) from byte @off on. */
static inline const uint8_t *msg_payload(struct ssemu_region *r,
					 const struct ssemu_msg *m,
					 uint64_t off)
{
	return (m->buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, m->buf)) + off;
}

/*
 * Link-level credits count buffer space in cells of SSEMU_CELL_BYTES, as
 * Rosetta's count flits: a 64-byte acknowledgement takes one cell of an
 * input buffer, a full 2048-byte data packet 33.  A buffer holds
 * port_buf_pkts packets of the largest size.  (Counted in packets, a
 * burst of acknowledgements filled a buffer as full packets would and
 * idled the link before it.)
 */
#define SSEMU_CELL_BYTES 64

static inline uint32_t pkt_cells(uint32_t bytes)
{
	return (bytes + SSEMU_CELL_BYTES - 1) / SSEMU_CELL_BYTES;
}

static inline uint32_t buf_cells(const struct ssemu_config *c)
{
	return c->port_buf_pkts * pkt_cells(c->mtu + c->pkt_overhead);
}

static inline ssemu_time_t ser_time(uint64_t bytes, uint64_t rate_bps)
{
	return (ssemu_time_t)((bytes * 8 * SSEMU_PS_PER_S + rate_bps - 1) /
			      rate_bps);
}

static const struct ssemu_link_params *link_of(struct ssemu_region *r,
					       uint32_t port)
{
	switch (ssemu_topo_port_kind(&r->topo, port)) {
	case SSEMU_PORT_LOCAL:
		return &r->config.local;
	case SSEMU_PORT_GLOBAL:
		return &r->config.global;
	default:
		return &r->config.edge;
	}
}

/*
 * ser_time() on switch port @op's link, without the division when the
 * rate divides 8e12 (a whole number k of ps per byte, as with every preset
 * rate): bytes * 8e12 = bytes * k * rate, so the rounded-up quotient is
 * bytes * k exactly.
 */
static inline ssemu_time_t port_ser_time(struct ssemu_region *r,
					 const struct ssemu_swport *op,
					 uint32_t port, uint64_t bytes)
{
	if (op->ps_per_byte)
		return bytes * op->ps_per_byte;
	return ser_time(bytes, link_of(r, port)->rate_bps);
}

/* ------------------------------------------------------------------ */
/* Policies                                                             */
/* ------------------------------------------------------------------ */

static uint32_t route_minimal(struct ssemu_region *r, uint32_t sw,
			      struct ssemu_pkt *pkt)
{
	return ssemu_topo_min_port(&r->topo, sw, pkt->dst_port, pkt->copy);
}

/* First endpoint of group @g: minimal routing toward it leads into @g. */
static inline uint64_t group_rep(const struct ssemu_topo *t, uint32_t g)
{
	return (uint64_t)g * t->a * t->p;
}

/*
 * A packet on a non-minimal path goes minimally to its intermediate group
 * first (phase 0), then minimally to its destination (phase 1): at most
 * local, global, local, global, local, within the VCs.  Inside a group the
 * intermediate is a switch (via has SSEMU_VIA_SWITCH set): local, local.
 */
#define SSEMU_VIA_SWITCH 0x8000u

static uint32_t route_follow(struct ssemu_region *r, uint32_t sw,
			     struct ssemu_pkt *pkt)
{
	const struct ssemu_topo *t = &r->topo;

	if ((pkt->via & SSEMU_VIA_SWITCH) && !pkt->phase) {
		uint32_t isw = pkt->via & ~SSEMU_VIA_SWITCH;

		if (sw == isw || isw >= t->nswitches)
			pkt->phase = 1;
		else
			return ssemu_topo_min_port(t, sw, (uint64_t)isw * t->p,
						   pkt->copy);
	} else if (pkt->via && !pkt->phase) {
		if (ssemu_topo_group(t, sw) == pkt->via - 1u)
			pkt->phase = 1;
		else
			return ssemu_topo_min_port(t, sw,
						   group_rep(t, pkt->via - 1u),
						   pkt->copy);
	}
	return ssemu_topo_min_port(t, sw, pkt->dst_port, pkt->copy);
}

/*
 * "adaptive": at injection, the minimal path and up to three non-minimal
 * ones through random intermediate groups (inside a group: through a
 * random third switch) are weighed by the queue depth
 * (waiting packets and used credits) of their first output at the source
 * switch, times their length in hops, the class's routing bias favouring
 * minimal paths; the cheapest wins.  "ugal" weighs one non-minimal
 * candidate.  Ordered traffic changes path only when the pair has nothing
 * in flight.  Neighbouring switches' queues are not consulted.
 */
static const struct ssemu_route_ops route_ops[] = {
	{ .name = "minimal", .ncand = 0, .select = route_minimal },
	{ .name = "adaptive", .ncand = 3, .select = route_follow },
	{ .name = "ugal", .ncand = 1, .select = route_follow },
	{ .name = "adaptive-nb", .ncand = 3, .neighbours = true,
	  .select = route_follow },
};

/* The vclass a packet of vclass @vcl occupies downstream of an output,
 * @edge if the output leads to a NIC. */
static inline uint32_t next_vcl_at(bool edge, uint32_t vcl)
{
	uint32_t vc = vcl % SSEMU_NVC;

	if (edge)
		return vcl - vc;	/* the NIC's buffer: VC 0 */
	assert(vc + 1 < SSEMU_NVC);
	return vcl + 1;
}

/* The switch endpoint port @port hangs off, and (@eport) which of its
 * ports it is: ssemu_topo_ep_switch with one 32-bit division for both. */
static inline uint32_t edge_switch(const struct ssemu_region *r,
				   uint32_t port, uint32_t *eport)
{
	uint32_t sw = port / r->topo.p;

	*eport = port - sw * r->topo.p;
	return sw;
}

/* Does port @out lead to a NIC (ssemu_topo_port_kind: the first p)? */
static inline bool port_is_edge(const struct ssemu_region *r, uint32_t out)
{
	return out < r->topo.p;
}

/* The vclass a packet of vclass @vcl occupies downstream of @out. */
static inline uint32_t next_vcl(struct ssemu_region *r, uint32_t out,
				uint32_t vcl)
{
	return next_vcl_at(port_is_edge(r, out), vcl);
}

/*
 * The vclasses that may send on @out now, as a mask (bit vcl): a packet
 * queued with a credit ahead.  Only the vclasses with packets queued are
 * looked at (vclmask, kept by voq_push and voq_pop).
 */
static inline uint64_t ready_vcls(struct ssemu_region *r,
				  const struct ssemu_swport *op, uint32_t out)
{
	bool edge = port_is_edge(r, out);
	uint32_t nvcl = r->config.ntclass * SSEMU_NVC, vcl;
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

/*
 * pick_in_class when only vclass @vcl of the class may go (@cr credits
 * ahead of it), the usual case: the first input after rr, cyclically (rr
 * last), whose packet fits in the buffer downstream.
 */
static inline bool pick_one_vcl(struct ssemu_region *r,
				struct ssemu_switch_sh *s, uint32_t out,
				uint32_t vcl, uint32_t cr, uint32_t *in_out,
				uint32_t *pi_out)
{
	struct ssemu_swport *op = &s->port[out];
	uint64_t any = op->vq[vcl].inmask, later, m;
	uint32_t pass, in, head;

	later = op->rr + 1 < 64 ? any & (~0ULL << (op->rr + 1)) : 0;
	for (pass = 0; pass < 2; pass++) {
		for (m = pass ? any & ~later : later; m; m &= m - 1) {
			in = (uint32_t)__builtin_ctzll(m);
			head = ssemu_r_voq(r, s, in, out, vcl)->head;
			if (pkt_cells(ssemu_r_pkt(r, head)->bytes) > cr)
				continue;
			op->rr = in;
			op->vc_rr++;
			*in_out = in;
			*pi_out = head;
			return true;
		}
	}
	return false;
}

/*
 * Strict priority between classes; inside a class, pick_in_class (round
 * robin among inputs).  Bandwidth guarantees and caps per class come with the traffic-class
 * arbitration ("shares", a later addition).
 */
static inline bool pick_in_class(struct ssemu_region *r,
				 struct ssemu_switch_sh *s, uint32_t out,
				 uint32_t tc, uint32_t vcs, uint32_t *in_out,
				 uint32_t *vcl_out, uint32_t *pi_out);

static bool arb_priority_rr(struct ssemu_region *r, struct ssemu_switch_sh *s,
			    uint32_t out, uint32_t *in_out, uint32_t *vcl_out,
			    ssemu_time_t *retry)
{
	uint32_t T = r->config.ntclass, order[SSEMU_MAX_TCLASS], i, j, pi;
	uint64_t rv = ready_vcls(r, &s->port[out], out);

	/* classes by descending priority (stable: lower index first) */
	for (i = 0; i < T; i++) {
		for (j = i; j > 0 && r->config.tclass[order[j - 1]].priority <
					     r->config.tclass[i].priority; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < T; i++)
		if (pick_in_class(r, s, out, order[i], class_vcs(rv, order[i]),
				  in_out, vcl_out, &pi))
			return true;
	return false;
}

/*
 * Round robin over inputs, and over the VCs (with a credit) of an input.
 * Taking turns matters under saturation: a strict preference for higher
 * VCs (packets further along) starves every source whose packets are on
 * VC 0 -- the target's own group, under an incast -- for as long as remote
 * traffic keeps arriving.  @vcs: the class's VCs with a packet queued and
 * a credit ahead (class_vcs).
 */
static inline bool pick_in_class(struct ssemu_region *r,
				 struct ssemu_switch_sh *s, uint32_t out,
				 uint32_t tc, uint32_t vcs, uint32_t *in_out,
				 uint32_t *vcl_out, uint32_t *pi_out)
{
	struct ssemu_swport *op = &s->port[out];
	bool edge = port_is_edge(r, out);
	uint32_t vcls[SSEMU_NVC], cr[SSEMU_NVC], nv = 0, vc, vcl, j, k, in;
	uint32_t pass, head;
	uint64_t any = 0, later, m;

	/* highest VC first (next_vcl_at: VC 0 at a NIC, else the next) */
	while (vcs) {
		vc = 31 - (uint32_t)__builtin_clz(vcs);
		vcs &= ~(1u << vc);
		vcl = tc * SSEMU_NVC + vc;
		assert(edge || vc + 1 < SSEMU_NVC);
		vcls[nv] = vcl;
		cr[nv++] = op->vq[edge ? vcl - vc : vcl + 1].credits;
		any |= op->vq[vcl].inmask;
	}
	if (!any)
		return false;
	if (nv == 1) {
		*vcl_out = vcls[0];
		return pick_one_vcl(r, s, out, vcls[0], cr[0], in_out, pi_out);
	}
	/* the first input after rr, cyclically (rr last), whose packet fits
	 * in the buffer downstream */
	later = op->rr + 1 < 64 ? any & (~0ULL << (op->rr + 1)) : 0;
	for (pass = 0; pass < 2; pass++) {
		for (m = pass ? any & ~later : later; m; m &= m - 1) {
			in = (uint32_t)__builtin_ctzll(m);
			for (j = 0; j < nv; j++) {
				k = (op->vc_rr + j) % nv;
				vcl = vcls[k];
				if (!(op->vq[vcl].inmask & (1ULL << in)))
					continue;
				head = ssemu_r_voq(r, s, in, out, vcl)->head;
				if (pkt_cells(ssemu_r_pkt(r, head)->bytes) >
				    cr[k])
					continue;
				op->rr = in;
				op->vc_rr++;
				*in_out = in;
				*vcl_out = vcl;
				*pi_out = head;
				return true;
			}
		}
	}
	return false;
}

/*
 * HPE's traffic-class semantics (anchors.md 2.2), as Rosetta arbitrates
 * an output: every class has a guaranteed minimum share and a cap (a
 * percentage of the link), kept as two token buckets in bytes per output.
 * A class over its cap waits.  Among the classes that may go, those still
 * within their guarantee go first; then (or among those) the highest
 * priority; equal priorities take turns.  Guaranteed bandwidth a class
 * does not use is lent to the others: nothing idles while a class could go.
 */
#define SSEMU_TOKEN_DEPTH_PKTS 4	/* bucket depth, in MTU packets */

/* (inline: sw_try_send calls it directly for the default policy) */
static inline __attribute__((always_inline)) bool
arb_shares(struct ssemu_region *r, struct ssemu_switch_sh *s, uint32_t out,
	   uint32_t *in_out, uint32_t *vcl_out, ssemu_time_t *retry)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_swport *op = &s->port[out];
	double depth = SSEMU_TOKEN_DEPTH_PKTS *
		       (double)(c->mtu + c->pkt_overhead);
	ssemu_time_t now = now_of(r), wait = UINT64_MAX;
	uint32_t T = c->ntclass, tc, k, best = SSEMU_NONE, ready = 0, todo, pi;
	uint64_t rv, m;
	bool any_g = false;
	struct ssemu_pkt *pkt;
	double dt, need;

	/* refill both buckets of every class up to now (a class whose
	 * buckets are full stays as it is) */
	if (now != op->tok_time) {
		todo = ~op->tok_full & ((1u << T) - 1);
		dt = (double)(now - op->tok_time) * op->bytes_per_ps / 100.0;
		op->tok_time = now;
		for (; todo; todo &= todo - 1) {
			const struct ssemu_tclass_desc *d;

			tc = (uint32_t)__builtin_ctz(todo);
			d = &c->tclass[tc];
			op->tok[tc].g = SSEMU_MIN(depth, op->tok[tc].g +
							     dt * d->min_pct);
			op->tok[tc].c = SSEMU_MIN(depth, op->tok[tc].c +
							     dt * d->max_pct);
			if (op->tok[tc].g == depth &&
			    op->tok[tc].c == depth)
				op->tok_full |= 1u << tc;
		}
	}
	/* the classes with a packet queued and a credit ahead */
	rv = ready_vcls(r, op, out);
	/* the usual case: one class ready, and it has no cap (so no retry
	 * time): it goes if a packet of it fits downstream */
	best = rv ? (uint32_t)__builtin_ctzll(rv) / SSEMU_NVC : 0;
	if (rv && !(rv >> (best * SSEMU_NVC) >> SSEMU_NVC) &&
	    c->tclass[best].max_pct >= 100) {
		if (!(rv & (rv - 1))) {
			/* one vclass: pick_in_class would end up here too,
			 * after building its per-VC arrays (1.7% of the
			 * model's instructions) */
			*vcl_out = (uint32_t)__builtin_ctzll(rv);
			if (!pick_one_vcl(r, s, out, *vcl_out,
					  op->vq[next_vcl(r, out, *vcl_out)]
						  .credits,
					  in_out, &pi))
				return false;
		} else if (!pick_in_class(r, s, out, best, class_vcs(rv, best),
					  in_out, vcl_out, &pi)) {
			return false;
		}
		goto picked;
	}
	for (m = rv; m; m &= ~(((1ULL << SSEMU_NVC) - 1) << (tc * SSEMU_NVC))) {
		tc = (uint32_t)__builtin_ctzll(m) / SSEMU_NVC;
		if (c->tclass[tc].max_pct < 100 && op->tok[tc].c <= 0) {
			/* capped: when will it have a token again? */
			need = -op->tok[tc].c + 1.0;
			dt = need / (op->bytes_per_ps *
				     c->tclass[tc].max_pct / 100.0);
			wait = SSEMU_MIN(wait, now + (ssemu_time_t)dt + 1);
			continue;
		}
		ready |= 1u << tc;
		if (op->tok[tc].g > 0)
			any_g = true;
	}
	/* guaranteed first, then priority, then take turns; a class none of
	 * whose packets fits downstream yet makes way for the next.  (The
	 * last class left goes whatever its guarantee: passed over for
	 * having none, it would be taken once the guaranteed were out.) */
	while (ready) {
		if (!(ready & (ready - 1))) {
			best = (uint32_t)__builtin_ctz(ready);
		} else {
			best = SSEMU_NONE;
			for (k = 1; k <= T; k++) {
				tc = (op->tc_rr + k) % T;
				if (!(ready & 1u << tc) ||
				    (any_g && op->tok[tc].g <= 0))
					continue;
				if (best == SSEMU_NONE ||
				    c->tclass[tc].priority >
					    c->tclass[best].priority)
					best = tc;
			}
			if (best == SSEMU_NONE) {
				/* the guaranteed ones cannot go: the rest */
				any_g = false;
				continue;
			}
		}
		if (pick_in_class(r, s, out, best, class_vcs(rv, best),
				  in_out, vcl_out, &pi))
			goto picked;
		ready &= ~(1u << best);
	}
	if (wait != UINT64_MAX)
		*retry = wait;
	return false;
picked:
	op->tc_rr = best;
	pkt = ssemu_r_pkt(r, pi);
	op->tok[best].g -= pkt->bytes;
	op->tok[best].c -= pkt->bytes;
	if (op->tok[best].g < -depth)
		op->tok[best].g = -depth;
	op->tok_full &= ~(1u << best);
	return true;
}

static const struct ssemu_arb_ops arb_ops[] = {
	{ .name = "shares", .pick = arb_shares },
	{ .name = "priority-rr", .pick = arb_priority_rr },
};

/* No end-to-end congestion control: only the window and the link-level
 * credits hold a source back (the previous-generation behaviour: an incast
 * backs up through the credits into the network). */
static uint32_t cc_none_window(struct ssemu_region *r, uint32_t nic,
			       uint32_t dnic)
{
	return r->config.nic_window;
}

static bool cc_none_mark(struct ssemu_region *r, const struct ssemu_swport *op,
			 uint32_t tc)
{
	return false;
}

static void cc_none_on_ack(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
			   uint32_t count, bool marked)
{
}

/*
 * Endpoint-pair congestion control, after Slingshot's: a switch output
 * toward an endpoint where SSEMU_CC_MARK_QUEUE packets or more of a class
 * wait is congested for that class, and marks the class's packets it sends;
 * the destination NIC echoes the mark in its acknowledgement (at once); the
 * source keeps a congestion window per destination NIC (as many packets in
 * flight as it allows) that halves on a marked acknowledgement, at most
 * once per window's worth of acknowledgements (about a round trip), and
 * grows by one packet per window of unmarked ones, up to the NIC's window.
 * Only the pairs that feed the congested port slow down: the same source's
 * traffic to other destinations does not.
 */
#define SSEMU_CC_MARK_QUEUE 16

/*
 * Fine-grained flow control (FGFC), after HPE's patents (anchors.md 6).
 * An edge output knows the flows feeding it (Rosetta keeps per-flow state:
 * here, the source NICs with data packets queued for it, nflows).  When a
 * data packet joins the output's queue and SSEMU_CC_MARK_QUEUE or more
 * packets of its class wait there, the switch sends the packet's source a
 * flow-control frame for the pair: send one packet per gap, gap = nflows
 * packet times (the fair share) stretched by how far the class's queue is
 * over the threshold, for the next SSEMU_CC_PACE_GAPS gaps.  The frame
 * travels back over the hops the packet came (control frames go first),
 * so the source hears within a round trip of the egress port -- not of the
 * destination, whose acknowledgements (marks and the window, above) come
 * only once the queue has drained, which under a deep incast takes long.
 * Every packet that joins a congested queue renews its pair's pacing; once
 * the queue is short, the pacing runs out.  The queue settles near the
 * threshold however many sources there are; a window of one packet per
 * pair would still leave one packet per source queued, filling the
 * switch buffers that bystanders' packets need.
 */
#define SSEMU_CC_PACE_GAPS 8
#define FGFC_GAP_MAX ((1u << 24) - 1)	/* ns: the low 24 bits of a frame */

/* Lossy classes: the source's end-to-end retry timer. */
#define SSEMU_RTO (100 * SSEMU_PS_PER_US)

/* The packets congestion control paces: data, and RMA results (the bulk of
 * a read, the rendezvous's too, flows from the target NIC). */
static inline bool cc_paced(const struct ssemu_pkt *pkt)
{
	return pkt->type == SSEMU_PKT_DATA || pkt->type == SSEMU_PKT_RESP;
}

static void schedule(struct ssemu_region *r, ssemu_time_t t, uint32_t type,
		     uint32_t a, uint32_t b, uint32_t c);

static uint32_t cc_pair_window(struct ssemu_region *r, uint32_t nic,
			       uint32_t dnic)
{
	if (ssemu_r_pair(r, nic, dnic)->pause > now_of(r))
		return 0;
	return SSEMU_MAX(ssemu_r_pair(r, nic, dnic)->cwnd >> 8, 1u);
}

static void cc_pair_on_queue(struct ssemu_region *r, struct ssemu_switch_sh *s,
			     const struct ssemu_swport *op,
			     const struct ssemu_pkt *pkt)
{
	const struct ssemu_config *c = &r->config;
	uint32_t q = op->queued_tc[pkt->tclass];
	ssemu_time_t back, gap;

	(void)s;
	if (q < SSEMU_CC_MARK_QUEUE || pkt->src_nic >= c->max_nics ||
	    ssemu_r_nic(r, pkt->src_nic)->state != SSEMU_NIC_ATTACHED ||
	    (pkt->type == SSEMU_PKT_DATA &&
	     ssemu_r_nic(r, pkt->src_nic)->gen != pkt->src_gen))
		return;
	/* back over the switch-to-switch hops taken and the source's link */
	back = (ssemu_time_t)(pkt->vc + 1) * (c->sw_lat_mean + c->local.delay) +
	       c->edge.delay;
	gap = ser_time(c->mtu + c->pkt_overhead, c->edge.rate_bps) *
	      SSEMU_MAX(op->nflows, 1u) * q / SSEMU_CC_MARK_QUEUE;
	/* the frame carries the gap (ns, at most 2^24 - 1) and the class */
	schedule(r, now_of(r) + back, SSEMU_MEV_FGFC, pkt->src_nic, pkt->win,
		 (uint32_t)SSEMU_MIN(gap / SSEMU_PS_PER_NS, FGFC_GAP_MAX) |
		 (uint32_t)pkt->tclass << 24);
}

/* An FGFC frame reached @nic: pace its traffic to @dnic. */
static void fgfc_arrive(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
			uint32_t arg)
{
	const struct ssemu_config *c = &r->config;
	ssemu_time_t gap = (ssemu_time_t)(arg & FGFC_GAP_MAX) * SSEMU_PS_PER_NS;
	uint32_t tc = arg >> 24;

	if (nic >= c->max_nics || dnic >= c->max_nics ||
	    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED)
		return;
	/* a pair that was not paced is throttled now (telemetry counts the
	 * episodes, not every frame that prolongs one) */
	if (ssemu_r_pair(r, nic, dnic)->slow <= now_of(r) && tc < c->ntclass)
		ssemu_tel_throttle(r, tc);
	ssemu_r_pair(r, nic, dnic)->gap = (uint32_t)SSEMU_MIN(gap, UINT32_MAX);
	ssemu_r_pair(r, nic, dnic)->slow = now_of(r) + SSEMU_CC_PACE_GAPS * gap;
}

/* @nic put a data packet for @dnic on the wire: while paced, the next one
 * waits a gap. */
static void cc_pair_on_send(struct ssemu_region *r, uint32_t nic,
			    uint32_t dnic)
{
	ssemu_time_t now = now_of(r), t;

	if (ssemu_r_pair(r, nic, dnic)->slow <= now)
		return;
	t = now + ssemu_r_pair(r, nic, dnic)->gap;
	ssemu_r_pair(r, nic, dnic)->pause = t;
	schedule(r, t, SSEMU_MEV_NIC_KICK, nic, 0, 0);
}

/* Data packets queued per flow at edge outputs (the flows a port sees):
 * data, and RMA read results, whose source is the NIC sending them. */
static void egq_count(struct ssemu_region *r, struct ssemu_swport *op,
		      const struct ssemu_pkt *pkt, int d)
{
	uint16_t *e;

	if (pkt->src_nic >= r->config.max_nics ||
	    pkt->win >= r->config.max_nics)
		return;
	e = &ssemu_r_pair(r, pkt->src_nic, pkt->win)->egq;
	if (d > 0) {
		if ((*e)++ == 0)
			op->nflows++;
	} else if (*e && --(*e) == 0 && op->nflows) {
		op->nflows--;
	}
}

static bool cc_pair_mark(struct ssemu_region *r, const struct ssemu_swport *op,
			 uint32_t tc)
{
	/* per class, so that throttling respects the classes' shares */
	return op->queued_tc[tc] >= SSEMU_CC_MARK_QUEUE;
}

static void cc_pair_on_ack(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
			   uint32_t count, bool marked)
{
	uint32_t *w = &ssemu_r_pair(r, nic, dnic)->cwnd;
	uint32_t *since = &ssemu_r_pair(r, nic, dnic)->cc_acked;
	uint32_t max = r->config.nic_window << 8;

	if (*since < UINT32_MAX / 2)
		*since += count;
	if (marked) {
		/* at most one cut per window's worth of acknowledgements
		 * (about a round trip): the marks of one episode count once */
		if (*since >= (*w >> 8)) {
			*w = SSEMU_MAX(*w / 2, 256u);
			*since = 0;
		}
	} else {
		*w = SSEMU_MIN(max, *w + count * 65536u / SSEMU_MAX(*w, 256u));
	}
}

static const struct ssemu_cc_ops cc_ops[] = {
	{ .name = "none", .window = cc_none_window,
	  .mark = cc_none_mark, .on_ack = cc_none_on_ack },
	{ .name = "endpoint-pair", .window = cc_pair_window,
	  .mark = cc_pair_mark, .on_ack = cc_pair_on_ack,
	  .on_queue = cc_pair_on_queue, .on_send = cc_pair_on_send },
};


static void schedule(struct ssemu_region *r, ssemu_time_t t, uint32_t type,
		     uint32_t a, uint32_t b, uint32_t c)
{
	struct ssemu_engine *e = ssemu_r_engine(r);
	int ret;

	if (SSEMU_BAD(r, !ssemu_engine_cap_ok(e, r->config.max_events),
		      "the event engine's size changed"))
		return;
	ret = ssemu_engine_schedule(e, t, type, a, b, c, NULL);

	if (ret == -EIO)
		ssemu_fail(r, "the event engine's memory is corrupt (%s)",
			   ssemu_engine_why(e->bad));
	else if (ret)
		ssemu_log(SSEMU_LOG_WARN, "engine event pool exhausted "
			  "(max_events %u): the model is now inconsistent",
			  r->config.max_events);
}

/* ------------------------------------------------------------------ */
/* Packets                                                              */
/* ------------------------------------------------------------------ */

static uint32_t pkt_alloc(struct ssemu_region *r)
{
	uint32_t i = r->pkt_free;

	/* (an empty pool with packets unaccounted for: the list is cut) */
	if (i == SSEMU_NONE)
		return SSEMU_BAD(r, r->pkts_used < r->config.max_pkts,
				 "the free packet list is empty with %u of %u "
				 "packets in use", r->pkts_used,
				 r->config.max_pkts), SSEMU_NONE;
	if (pkt_link_bad(r, i, "the free packet list") ||
	    pkt_link_bad(r, ssemu_r_pkt(r, i)->next, "the free packet list"))
		return SSEMU_NONE;
	r->pkt_free = ssemu_r_pkt(r, i)->next;
	r->pkts_used++;
	return i;
}

static void pkt_free(struct ssemu_region *r, uint32_t i)
{
	uint32_t n;

	ssemu_r_pkt(r, i)->next = r->pkt_free;
	r->pkt_free = i;
	r->pkts_used--;
	/* NICs that found the pool empty get their turn now */
	for (n = 0; r->pkt_waiters && n < r->config.max_nics; n++) {
		if (ssemu_r_nic(r, n)->wait_pkt) {
			ssemu_r_nic(r, n)->wait_pkt = 0;
			r->pkt_waiters--;
			schedule(r, now_of(r), SSEMU_MEV_NIC_KICK, n, 0, 0);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Events to endpoints                                                  */
/* ------------------------------------------------------------------ */

static void futex_bump(uint32_t *word, uint32_t *waiters)
{
	/* pairs with the acquire of the word in ssemu_ep_wait/nic_wait */
	ssemu_fetch_add(word, 1);
	if (ssemu_load_acquire(waiters))
		syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void ep_wake(struct ssemu_region *r, struct ssemu_ep_sh *ep)
{
	struct ssemu_nic_sh *n;
	uint32_t epi = (uint32_t)(ep - ssemu_r_ep(r, 0));

	futex_bump(&ep->ev_futex, &ep->waiters);
	n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	futex_bump(&n->ev_futex, &n->waiters);
}

static bool push_recv(struct ssemu_region *r, struct ssemu_ep_sh *ep,
		      uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_event ev = {
		.type = SSEMU_EV_RECV,
		.src = m->src,
		.tclass = m->tclass,
		.len = m->len,
		.cookie = 0,
		.time = now_of(r),
		.posted = m->post_time,
		.slot = mi,
		.gen = m->gen,
	};
	if (m->rma_op) {
		/* an RMA done to this endpoint's memory: no slot to hold */
		ev.type = SSEMU_EV_RMA_REMOTE;
		ev.len = m->rma_len;
		ev.op = m->rma_op;
		ev.addr = m->raddr;
		ev.slot = SSEMU_NONE;
		ev.gen = 0;
	}

	struct ssemu_ring *ring = ssemu_r_ring(r, ep->ev_ring_off);

	memcpy(ev.hdr, m->hdr, sizeof(ev.hdr));
	/* Where it lands, so crash recovery can tell whether it did.  Not a
	 * word is written to the slot after the push: from then on the
	 * receiver may release it and its owner reuse it. */
	m->rx_pos = ssemu_load_relaxed(&ring->tail);
	m->mflags |= SSEMU_MSGF_RXPUSH;
	ev.crc = ssemu_event_crc(&ev);
	if (ssemu_ring_push(ring, &ev)) {
		m->mflags &= ~SSEMU_MSGF_RXPUSH;
		return false;
	}
	return true;
}

static bool push_send_done(struct ssemu_region *r, struct ssemu_ep_sh *ep,
			   uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_event ev = {
		.type = SSEMU_EV_SEND_DONE,
		.status = m->status,
		.src = m->src,
		.tclass = m->tclass,
		.len = m->len,
		.cookie = m->cookie,
		.time = now_of(r),
		.posted = m->post_time,
		.slot = mi,
		.gen = m->gen,
	};

	struct ssemu_ring *ring = ssemu_r_ring(r, ep->ev_ring_off);

	if (m->rma_op) {
		ev.type = SSEMU_EV_RMA_DONE;
		ev.len = m->rma_len;
		ev.op = m->rma_op;
		ev.addr = m->raddr;
	}
	m->tx_pos = ssemu_load_relaxed(&ring->tail);
	m->mflags |= SSEMU_MSGF_TXPUSH;
	ev.crc = ssemu_event_crc(&ev);
	if (ssemu_ring_push(ring, &ev)) {
		m->mflags &= ~SSEMU_MSGF_TXPUSH;
		return false;
	}
	/* an RMA's slot stays the initiator's until it releases the event
	 * (its results live there) */
	if (m->rma_op)
		return true;
	/* the slot may be reused once the receiver is done too */
	ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
	return true;
}

/* The receiving endpoint of @m (its index in @epi), or an error. */
static int recv_ep(struct ssemu_region *r, struct ssemu_msg *m, uint32_t *epi)
{
	uint32_t nic = ssemu_port_nic(r, SSEMU_ADDR_PORT(m->dst));

	if (nic == SSEMU_NONE ||
	    SSEMU_ADDR_PID(m->dst) >= r->config.eps_per_nic)
		return -EHOSTUNREACH;
	*epi = ssemu_r_nic_eps(r, nic)[SSEMU_ADDR_PID(m->dst)];
	return *epi < r->neps && ssemu_r_ep(r, *epi)->open ? 0 :
							       -ECONNREFUSED;
}

/*
 * The target side of an RMA is done with its slot once its RMA_REMOTE
 * event (if any) is out and its response packets are all injected: the
 * last of the two sets RXDONE, the slot's last write at the target.
 */
static void rma_rx_done(struct ssemu_region *r, struct ssemu_msg *m)
{
	if (m->rma_op &&
	    !(m->mflags & (SSEMU_MSGF_RXOVF | SSEMU_MSGF_RESPQ)))
		ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
}

/* Hand a RECV (or RMA_REMOTE) event to endpoint @epi now, or queue it for
 * ring space. */
static void recv_event(struct ssemu_region *r, uint32_t epi, uint32_t mi)
{
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	if (ssemu_ep_rings_bad(r, epi))
		return;
	m->rx_next = SSEMU_NONE;
	if (ep->rx_head == SSEMU_NONE && push_recv(r, ep, mi)) {
		ep_wake(r, ep);
		rma_rx_done(r, m);
		return;
	}
	ssemu_bit_set(ssemu_r_bits(r, r->ovf_off), epi);
	m->mflags |= SSEMU_MSGF_RXOVF;
	if (ep->rx_head == SSEMU_NONE)
		ep->rx_head = mi;
	else if (SSEMU_BAD(r, ep->rx_tail >= r->nmsgs, "endpoint %u: "
			   "receive overflow tail %u", epi, ep->rx_tail))
		return;
	else
		ssemu_r_msg(r, ep->rx_tail)->rx_next = mi;
	ep->rx_tail = mi;
}

/* ------------------------------------------------------------------ */
/* Remote memory access: the target NIC's side                          */
/* ------------------------------------------------------------------ */

static struct ssemu_mr_sh *mr_find(struct ssemu_region *r, uint32_t nic,
				   uint64_t key)
{
	struct ssemu_mr_sh *t = ssemu_r_mrs(r, nic);
	uint32_t i, hwm = SSEMU_MIN(ssemu_r_nic(r, nic)->mr_hwm,
				    (uint32_t)SSEMU_MRS_PER_NIC);

	for (i = 0; i < hwm; i++)
		if (t[i].in_use && t[i].key == key)
			return &t[i];
	return NULL;
}

/* Move @len bytes between another process's memory at @raddr and ours at
 * @local by cross-memory attach. */
static int cma(int32_t pid, bool write, uint64_t raddr, uint8_t *local,
	       size_t len)
{
	static bool warned;
	struct iovec l, rv;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		l.iov_base = local + done;
		l.iov_len = len - done;
		rv.iov_base = (void *)(uintptr_t)(raddr + done);
		rv.iov_len = len - done;
		n = write ? process_vm_writev(pid, &l, 1, &rv, 1, 0) :
			    process_vm_readv(pid, &l, 1, &rv, 1, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -EFAULT;
		if (errno == EPERM) {
			if (!warned) {
				warned = true;
				ssemu_log(SSEMU_LOG_WARN, "cross-memory attach "
					  "to process %d was refused (EPERM: "
					  "ptrace restrictions?): its RMA "
					  "operations fail with -EACCES", pid);
			}
			return -EACCES;
		}
		return -errno;
	}
	return 0;
}

/* The access an operation needs from the region. */
static uint32_t rma_access(const struct ssemu_msg *m)
{
	switch (m->rma_op) {
	case SSEMU_RMA_WRITE:
	case SSEMU_RMA_ATOMIC:
		return SSEMU_MR_WRITE;
	case SSEMU_RMA_READ:
		return SSEMU_MR_READ;
	case SSEMU_RMA_FETCH:
		if (m->aop == SSEMU_AOP_READ)
			return SSEMU_MR_READ;
		return SSEMU_MR_READ | SSEMU_MR_WRITE;
	default:
		return SSEMU_MR_READ | SSEMU_MR_WRITE;
	}
}

static bool rma_has_result(const struct ssemu_msg *m)
{
	return m->rma_op == SSEMU_RMA_READ || m->rma_op == SSEMU_RMA_FETCH ||
	       m->rma_op == SSEMU_RMA_COMPARE;
}

/*
 * Do @m's operation on the memory of the region it names in NIC @nic's
 * table: plainly if the region is this process's, else by cross-memory
 * attach (atomics read the target, apply into a copy and write it back;
 * the engine does one operation at a time, so that is atomic with respect
 * to every other fabric operation).  Results go into the message's
 * buffer, over its operands.  A refused operation touches nothing.
 * @return the operation's status.
 */
static int rma_execute(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_msg *m)
{
	const struct ssemu_config *c = &r->config;
	uint64_t off, len = m->rma_len, cap;
	struct ssemu_mr_sh *mr;
	uint8_t *buf, *tmp;
	const void *src, *cmp;
	size_t esize;
	bool local;
	int ret;

	mr = mr_find(r, nic, m->key);
	if (!mr)
		return -ENOKEY;
	if (m->raddr < mr->base || m->raddr - mr->base > mr->len ||
	    len > mr->len - (m->raddr - mr->base))
		return -ERANGE;
	if ((mr->access & rma_access(m)) != rma_access(m))
		return -EACCES;
	/* never trust the shared slot: the buffer must hold it all */
	if (m->buf != SSEMU_NONE && m->buf >= r->nbufs)
		return -EPROTO;
	cap = m->buf == SSEMU_NONE ? SSEMU_INLINE_MAX : c->buf_size;
	if (len > cap || m->len > cap)
		return -EPROTO;
	buf = m->buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, m->buf);
	off = mr->addr + (m->raddr - mr->base);
	local = mr->pid == getpid();
	if (!len)
		return 0;
	/* This process's memory is accessed under the fault guard: a region
	 * unmapped since it was registered (or registered longer than its
	 * mapping) fails the operation with -EFAULT, as cma() does for
	 * another process's. */
	switch (m->rma_op) {
	case SSEMU_RMA_WRITE:
		if (local)
			return ssemu_copy_user((void *)(uintptr_t)off, buf,
					       len);
		return cma(mr->pid, true, off, buf, len);
	case SSEMU_RMA_READ:
		if (local)
			return ssemu_copy_user(buf, (void *)(uintptr_t)off,
					       len);
		return cma(mr->pid, false, off, buf, len);
	case SSEMU_RMA_ATOMIC:
	case SSEMU_RMA_FETCH:
	case SSEMU_RMA_COMPARE:
		break;
	default:
		return -EPROTO;
	}
	if (!ssemu_atomic_valid(m->rma_op, m->aop, m->dtype))
		return -EPROTO;
	esize = ssemu_datatype_size(m->dtype);
	if (len % esize ||
	    (m->rma_op == SSEMU_RMA_COMPARE && 2 * len > cap))
		return -EPROTO;
	src = m->aop == SSEMU_AOP_READ ? NULL : buf;
	cmp = m->rma_op == SSEMU_RMA_COMPARE ? buf + len : NULL;
	/* applied to a copy, so that memory it cannot read is left as it
	 * was */
	tmp = malloc(len);
	if (!tmp)
		return -ENOMEM;
	ret = local ? ssemu_copy_user(tmp, (void *)(uintptr_t)off, len) :
		      cma(mr->pid, false, off, tmp, len);
	if (!ret)
		ret = ssemu_atomic_apply(m->aop, m->dtype, tmp, src, cmp,
					 m->rma_op == SSEMU_RMA_ATOMIC ? NULL :
									  buf,
					 len / esize);
	if (!ret && m->aop != SSEMU_AOP_READ)
		ret = local ? ssemu_copy_user((void *)(uintptr_t)off, tmp,
					      len) :
			      cma(mr->pid, true, off, tmp, len);
	free(tmp);
	return ret;
}

/*
 * The last packet of an RMA request reached the target endpoint @epi's
 * NIC: do the operation (once: recovery may send a request again), queue
 * its results for the way back, and tell the target endpoint if asked.
 * The status travels back in the acknowledgement.
 */
static void rma_deliver(struct ssemu_region *r, uint32_t mi, uint32_t epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t nic = ssemu_ep_nic(r, epi), mtu = r->config.mtu;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);

	n->stats.rx_msgs++;
	n->stats.rx_bytes += m->len;
	if (!(m->mflags & SSEMU_MSGF_RMAEXEC)) {
		/* a runner dying between the two flags leaves the memory in
		 * doubt: recovery fails the operation, never repeats it */
		m->mflags |= SSEMU_MSGF_RMABEGIN;
		m->status = rma_execute(r, nic, m);
		m->mflags |= SSEMU_MSGF_RMAEXEC;
	}
	if (!m->status && rma_has_result(m)) {
		m->resp_npkts = m->rma_len ?
			(uint32_t)((m->rma_len + mtu - 1) / mtu) : 1;
		m->resp_sent = m->resp_arrived = 0;
		m->resp_next = SSEMU_NONE;
		m->mflags |= SSEMU_MSGF_RESPQ;
		if (n->resp_head == SSEMU_NONE)
			n->resp_head = mi;
		else if (SSEMU_BAD(r, n->resp_tail >= r->nmsgs, "NIC %u: "
				   "response queue tail %u", nic,
				   n->resp_tail))
			return;
		else
			ssemu_r_msg(r, n->resp_tail)->resp_next = mi;
		n->resp_tail = mi;
		n->stats.tx_bytes += m->rma_len;
	}
	if (!m->status && (m->flags & SSEMU_RMA_REMOTE_EVENT))
		recv_event(r, epi, mi);	/* sets RXDONE when it may */
	else
		rma_rx_done(r, m);
}

static void deliver_recv(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_nic_sh *n;
	uint32_t epi;
	int ret;

	ret = m->status ? m->status : recv_ep(r, m, &epi);
	if (ret) {
		/* (a packet that failed its CRC failed the message: it is
		 * never delivered, its sender gets the error; otherwise
		 * nobody is at the destination any more) */
		if (!m->status)
			r->msgs_unreachable++;
		m->status = ret;
		ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
		return;
	}
	if (m->rma_op) {
		rma_deliver(r, mi, epi);
		return;
	}
	n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	n->stats.rx_msgs++;
	n->stats.rx_bytes += m->len;
	ssemu_tel_deliver(r, mi);
	ssemu_fetch_add(&ssemu_r_ep(r, epi)->unreleased, 1);
	recv_event(r, epi, mi);
}

static void complete_tx(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t epi = ssemu_msg_ep(r, mi);
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);

	/* the endpoint that sent it is gone (maybe reopened by someone else) */
	if (!ep->open || ep->gen != m->ep_gen) {
		ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
		return;
	}
	if (ssemu_ep_rings_bad(r, epi))
		return;
	m->tx_next = SSEMU_NONE;
	if (ep->tx_head == SSEMU_NONE && push_send_done(r, ep, mi)) {
		ep_wake(r, ep);
		return;
	}
	ssemu_bit_set(ssemu_r_bits(r, r->ovf_off), epi);
	m->mflags |= SSEMU_MSGF_TXOVF;
	if (ep->tx_head == SSEMU_NONE)
		ep->tx_head = mi;
	else if (SSEMU_BAD(r, ep->tx_tail >= r->nmsgs, "endpoint %u: send "
			   "overflow tail %u", epi, ep->tx_tail))
		return;
	else
		ssemu_r_msg(r, ep->tx_tail)->tx_next = mi;
	ep->tx_tail = mi;
}

void ssemu_model_flush_overflow(struct ssemu_region *r, uint32_t epi)
{
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);
	bool pushed = false;
	struct ssemu_msg *m;
	uint32_t mi, next;

	/* Read the links before pushing: once its event is out, a slot may
	 * be released and reused by its owner at any moment. */
	if (ssemu_ep_rings_bad(r, epi))
		return;
	while ((mi = ep->rx_head) != SSEMU_NONE) {
		if (msg_link_bad(r, mi, "a receive overflow list"))
			return;
		m = ssemu_r_msg(r, mi);
		next = m->rx_next;
		m->mflags &= ~SSEMU_MSGF_RXOVF;
		if (!push_recv(r, ep, mi)) {
			m->mflags |= SSEMU_MSGF_RXOVF;
			break;
		}
		ep->rx_head = next;
		pushed = true;
		rma_rx_done(r, m);
	}
	while ((mi = ep->tx_head) != SSEMU_NONE) {
		if (msg_link_bad(r, mi, "a send overflow list"))
			return;
		m = ssemu_r_msg(r, mi);
		next = m->tx_next;
		m->mflags &= ~SSEMU_MSGF_TXOVF;
		if (!push_send_done(r, ep, mi)) {
			m->mflags |= SSEMU_MSGF_TXOVF;
			break;
		}
		ep->tx_head = next;
		pushed = true;
	}
	if (pushed)
		ep_wake(r, ep);
}

/*
 * A packet that cannot reach its destination (the NIC detached, a switch on
 * the way cannot be modelled): a data packet goes straight back to its
 * source as an error acknowledgement, standing in for the NIC's end-to-end
 * retry giving up, so the window slot closes and the send completes with an
 * error; RMA results go straight to their initiator as failed; anything
 * else is dropped.
 */
static void lose_pkt(struct ssemu_region *r, uint32_t pi, int32_t status)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t src = ssemu_port_nic(r, pkt->type == SSEMU_PKT_DATA ?
						  pkt->src_port :
						  pkt->dst_port);
	struct ssemu_msg *m = ssemu_r_msg(r, pkt->msg);

	ssemu_tel_drop(r, pkt->tclass, pkt->type);
	if (pkt->type == SSEMU_PKT_RESP && src != SSEMU_NONE &&
	    ssemu_r_nic(r, src)->gen == pkt->src_gen) {
		/* results that cannot get through: the initiator counts them
		 * as arrived in error rather than wait for them forever */
		pkt->status = status;
		pkt->to_gen = pkt->src_gen;
		schedule(r, now_of(r), SSEMU_MEV_NIC_ARRIVE, src, 1, pi);
		return;
	}
	if (pkt->type != SSEMU_PKT_DATA || src == SSEMU_NONE ||
	    ssemu_r_nic(r, src)->gen != pkt->src_gen) {
		pkt_free(r, pi);
		return;
	}
	if (m->gen == pkt->msg_gen)
		ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	pkt->type = SSEMU_PKT_ACK;
	pkt->status = status;
	pkt->count = 1;
	pkt->to_gen = pkt->src_gen;
	schedule(r, now_of(r), SSEMU_MEV_NIC_ARRIVE, src, 1, pi);
}

/* ------------------------------------------------------------------ */
/* Switches                                                             */
/* ------------------------------------------------------------------ */

/* The model of switch @sw, instantiated on first use. */
static struct ssemu_switch_sh *sw_get(struct ssemu_region *r, uint32_t sw,
				      uint32_t *inst)
{
	uint32_t *map = ssemu_r_swmap(r), i, p, tc, vc;
	struct ssemu_switch_sh *s;
	struct ssemu_peer peer;

	i = ssemu_sw_inst(r, sw);
	if (i != SSEMU_NONE) {
		*inst = i;
		return ssemu_r_switch(r, i);
	}
	if (ssemu_broken(r))
		return NULL;
	if (r->sw_used >= r->config.max_switches) {
		ssemu_log(SSEMU_LOG_WARN, "switch %u: no room to model it "
			  "(max_switches %u)", sw, r->config.max_switches);
		return NULL;
	}
	i = r->sw_used++;
	s = ssemu_r_switch(r, i);
	/* (ports from the radix on are never used: not cleared) */
	memset(s, 0, offsetof(struct ssemu_switch_sh, port) +
		     (size_t)r->topo.radix * sizeof(struct ssemu_swport));
	s->sw = sw;
	/* (a VOQ is empty while its input's bit in inmask is clear: its
	 * head and tail are not read then, so they need no initialising) */
	s->voq_off = r->voqs_off +
		     (uint64_t)i * r->voq_per_switch * sizeof(struct ssemu_voq);
	ssemu_rng_seed(&s->rng, r->config.seed, 0x100000000ULL + sw);
	for (p = 0; p < r->topo.radix; p++) {
		const struct ssemu_link_params *lp = link_of(r, p);
		struct ssemu_swport *op = &s->port[p];

		op->delay = lp->delay;
		op->bytes_per_ps = (double)lp->rate_bps / 8e12;
		if (lp->rate_bps && 8 * SSEMU_PS_PER_S % lp->rate_bps == 0 &&
		    8 * SSEMU_PS_PER_S / lp->rate_bps <= UINT32_MAX)
			op->ps_per_byte =
				(uint32_t)(8 * SSEMU_PS_PER_S / lp->rate_bps);
		ssemu_topo_peer(&r->topo, sw, p, &peer);
		s->port[p].peer = peer;
		if (peer.kind == SSEMU_PORT_NONE)
			continue;
		/* a NIC has one buffer per class (VC 0); a switch input has
		 * one per class and VC 1.. (VC 0 is only ever fed by NICs) */
		for (tc = 0; tc < r->config.ntclass; tc++)
			for (vc = peer.kind == SSEMU_PORT_ENDPOINT ? 0 : 1;
			     vc < (peer.kind == SSEMU_PORT_ENDPOINT ?
					   1 : SSEMU_NVC);
			     vc++)
				s->port[p].vq[tc * SSEMU_NVC + vc].credits =
					buf_cells(&r->config);
	}
	map[sw] = i;
	*inst = i;
	return s;
}

static ssemu_time_t sw_pipeline(struct ssemu_region *r,
				struct ssemu_switch_sh *s)
{
	const struct ssemu_config *c = &r->config;
	double v;

	/* A rare slow path: about one packet in a thousand. */
	if (ssemu_rng_below(&s->rng, 1000) == 0)
		return c->sw_lat_max +
		       ssemu_rng_below(&s->rng, c->sw_lat_max - c->sw_lat_min + 1);
	v = (double)c->sw_lat_mean + ssemu_rng_normal(&s->rng) * c->sw_lat_sd;
	if (v < (double)c->sw_lat_min)
		v = (double)c->sw_lat_min;
	if (v > (double)c->sw_lat_max)
		v = (double)c->sw_lat_max;
	return (ssemu_time_t)v;
}

static void sw_try_send(struct ssemu_region *r, uint32_t inst, uint32_t out);

static void voq_push(struct ssemu_region *r, struct ssemu_switch_sh *s,
		     uint32_t in, uint32_t out, uint32_t vcl, uint32_t pi)
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
	if (cc_paced(pkt) && cc_ops[r->cc_idx].on_queue &&
	    port_is_edge(r, out))
		egq_count(r, op, pkt, 1);
	if (!op->vq[vcl].queued++)
		op->vclmask |= 1ULL << vcl;
	op->queued_tc[vcl / SSEMU_NVC]++;
	op->nqueued++;
}

static uint32_t voq_pop(struct ssemu_region *r, struct ssemu_switch_sh *s,
			uint32_t in, uint32_t out, uint32_t vcl)
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
	if (cc_paced(pkt) && cc_ops[r->cc_idx].on_queue &&
	    port_is_edge(r, out))
		egq_count(r, op, pkt, -1);
	if (!--op->vq[vcl].queued)
		op->vclmask &= ~(1ULL << vcl);
	op->queued_tc[vcl / SSEMU_NVC]--;
	op->nqueued--;
	return pi;
}

/*
 * A packet will arrive at input @in of switch model @inst at @t: it waits
 * out the pipeline there and joins a VOQ.  The sender computes this when it
 * puts the packet on the wire (one event per hop instead of two); the
 * pipeline never lets a packet overtake an earlier one from the same input.
 */
static void arrive_at_switch(struct ssemu_region *r, uint32_t inst,
			     uint32_t in, uint32_t pi, ssemu_time_t t)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	ssemu_time_t ready = t + sw_pipeline(r, s);

	pkt->sw_arrive = t;
	pkt->in_port = in;
	if (ready < s->port[in].last_ready)
		ready = s->port[in].last_ready;
	s->port[in].last_ready = ready;
	schedule(r, ready, SSEMU_MEV_SW_READY, inst, in, pi);
}

static inline void return_credit(struct ssemu_region *r,
				 struct ssemu_switch_sh *s, uint32_t port,
				 uint32_t vcl, uint32_t cells);

/*
 * Output @out of switch model @inst looks again at @t (OUT_DONE), unless
 * it is due to look by then anyway.  An earlier look than the one due
 * takes a second event: a credit on its way must not wait for a cap.
 */
static void sw_wake(struct ssemu_region *r, uint32_t inst, uint32_t out,
		    ssemu_time_t t)
{
	struct ssemu_swport *op = &ssemu_r_switch(r, inst)->port[out];

	if (op->done_pending && op->wake_at <= t)
		return;
	op->done_pending = 1;
	op->wake_at = t;
	schedule(r, t, SSEMU_MEV_SW_OUT_DONE, inst, out, 0);
}

/* The credit returns that have reached output @op by @now count now. */
static inline void credits_settle(struct ssemu_region *r,
				  struct ssemu_swport *op, ssemu_time_t now)
{
	if (SSEMU_BAD(r, op->cr_n > SSEMU_CR_RING ||
		      op->cr_head >= SSEMU_CR_RING, "a switch output's credit "
		      "ring: %u from %u", op->cr_n, op->cr_head))
		return;
	while (op->cr_n && op->cr_time[op->cr_head] <= now) {
		if (SSEMU_BAD(r, op->cr_vcl[op->cr_head] >= SSEMU_MAX_VCLASS,
			      "a credit for vclass %u",
			      op->cr_vcl[op->cr_head]))
			return;
		op->vq[op->cr_vcl[op->cr_head]].credits +=
			op->cr_cells[op->cr_head];
		op->cr_head = (uint8_t)((op->cr_head + 1) % SSEMU_CR_RING);
		op->cr_n--;
	}
}

/*
 * A credit for @vcl of the buffer downstream of output @port of switch
 * model @inst reaches it at @t.  It waits in the output's ring and counts
 * from @t on (credits_settle), so it costs no event unless packets wait
 * there with nobody due to look by then: then the output looks at @t.  A
 * full ring (or a return out of order) takes the event instead.
 */
static inline void credit_to_switch(struct ssemu_region *r, uint32_t inst,
				    uint32_t port, uint32_t vcl,
				    uint32_t cells, ssemu_time_t t)
{
	struct ssemu_swport *op = &ssemu_r_switch(r, inst)->port[port];
	uint32_t i = (op->cr_head + op->cr_n) % SSEMU_CR_RING;

	if (op->cr_n >= SSEMU_CR_RING || vcl >= SSEMU_MAX_VCLASS ||
	    (op->cr_n && op->cr_time[(i + SSEMU_CR_RING - 1) %
				     SSEMU_CR_RING] > t)) {
		schedule(r, t, SSEMU_MEV_SW_CREDIT, inst, port | vcl << 8,
			 cells);
		return;
	}
	op->cr_time[i] = t;
	op->cr_vcl[i] = (uint8_t)vcl;
	op->cr_cells[i] = (uint16_t)cells;
	op->cr_n++;
	/* (a busy output looks when the link is free) */
	if (op->nqueued && op->busy_until <= t)
		sw_wake(r, inst, port, t);
}

/*
 * A lossy class's acknowledgement or RMA result dropped in the fabric: its
 * sender's NIC sends it again after the end-to-end retry timeout, through
 * the fabric as before (where it may be dropped again).  On a NIC this is
 * the initiator's retry asking again (a read or fetching atomic's request,
 * a data packet whose acknowledgement never came) and the far end, which
 * has the operation done, answering again; the model keeps the packet and
 * leaves out the request that prompts it.
 */
static void resend_later(struct ssemu_region *r, uint32_t pi)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t nic = ssemu_r_portmap(r)[pkt->src_port];

	/* (a sender already gone is resend_fire's to sort out) */
	schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RESEND, nic, pi,
		 nic < r->config.max_nics ? ssemu_r_nic(r, nic)->gen : 0);
}

static void resend_fire(struct ssemu_region *r, uint32_t nic, uint32_t pi,
			uint32_t gen)
{
	struct ssemu_nic_sh *n;
	struct ssemu_pkt *pkt;
	uint32_t dst;

	pkt = ssemu_r_pkt(r, pi);
	n = nic < r->config.max_nics ? ssemu_r_nic(r, nic) : NULL;
	if (!n || n->state != SSEMU_NIC_ATTACHED || n->gen != gen) {
		/* The sender has gone.  An acknowledgement's packets did
		 * arrive: it still closes its source's window slots.
		 * Results fail at their initiator (lose_pkt). */
		dst = ssemu_port_nic(r, pkt->dst_port);
		if (pkt->type == SSEMU_PKT_ACK && dst < r->config.max_nics &&
		    ssemu_r_nic(r, dst)->gen == pkt->src_gen) {
			pkt->to_gen = pkt->src_gen;
			schedule(r, now_of(r), SSEMU_MEV_NIC_ARRIVE, dst, 1,
				 pi);
		} else {
			lose_pkt(r, pi, -EHOSTUNREACH);
		}
		return;
	}
	ssemu_tel_retry(r, pkt->tclass);
	/* a new trip from the sender's edge, minimal like the first */
	pkt->vc = 0;
	pkt->via = 0;
	pkt->phase = 0;
	if (pkt->type == SSEMU_PKT_RESP)
		pkt->marked = 0;
	pkt->next = SSEMU_NONE;
	if (n->ack_head == SSEMU_NONE)
		n->ack_head = pi;
	else if (SSEMU_BAD(r, n->ack_tail >= r->config.max_pkts, "NIC %u: "
			   "ack queue tail %u", nic, n->ack_tail))
		return;
	else
		ssemu_r_pkt(r, n->ack_tail)->next = pi;
	n->ack_tail = pi;
	ssemu_model_nic_kick(r, nic);
}

static void sw_ready(struct ssemu_region *r, uint32_t inst, uint32_t in,
		     uint32_t pi)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t out = route_ops[r->route_idx].select(r, s->sw, pkt);
	uint32_t vcl = pkt->tclass * SSEMU_NVC + pkt->vc;

	if (SSEMU_BAD(r, out >= r->topo.radix || in >= 64, "switch %u: "
		      "packet %u routed from port %u to port %u", s->sw, pi,
		      in, out))
		return;

	/* A lossy class drops rather than wait: a packet of any kind finding
	 * a full queue for its output goes (its input buffer slot with it);
	 * the end-to-end retry sends it again: a data packet from its
	 * message's go-back-N, an acknowledgement or RMA result by
	 * resend_later. */
	if (r->config.tclass[pkt->tclass].lossy &&
	    s->port[out].vq[vcl].queued >= r->config.port_buf_pkts) {
		s->port[out].drops++;
		ssemu_tel_drop(r, pkt->tclass, pkt->type);
		return_credit(r, s, in, vcl, pkt_cells(pkt->bytes));
		if (pkt->type == SSEMU_PKT_DATA)
			pkt_free(r, pi);
		else
			resend_later(r, pi);
		return;
	}
	voq_push(r, s, in, out, vcl, pi);
	if (cc_ops[r->cc_idx].on_queue && cc_paced(pkt) &&
	    port_is_edge(r, out))
		cc_ops[r->cc_idx].on_queue(r, s, &s->port[out], pkt);
	if (port_is_edge(r, out))
		ssemu_tel_queue(r, pkt->tclass,
				s->port[out].queued_tc[pkt->tclass]);
	sw_try_send(r, inst, out);
}

/* The credit returns that have reached NIC @n by @now count now. */
static inline void nic_credits_settle(struct ssemu_region *r,
				      struct ssemu_nic_sh *n, ssemu_time_t now)
{
	if (SSEMU_BAD(r, n->cr_n > SSEMU_CR_RING ||
		      n->cr_head >= SSEMU_CR_RING, "a NIC's credit ring: %u "
		      "from %u", n->cr_n, n->cr_head))
		return;
	while (n->cr_n && n->cr_time[n->cr_head] <= now) {
		if (SSEMU_BAD(r, n->cr_tc[n->cr_head] >= SSEMU_MAX_TCLASS,
			      "a NIC credit for class %u",
			      n->cr_tc[n->cr_head]))
			return;
		n->credits[n->cr_tc[n->cr_head]] += n->cr_cells[n->cr_head];
		n->cr_head = (uint8_t)((n->cr_head + 1) % SSEMU_CR_RING);
		n->cr_n--;
	}
}

/* NIC @nic looks for a packet to send at @t (NIC_KICK), unless a look for
 * a credit is due by then. */
static void nic_wake(struct ssemu_region *r, uint32_t nic, ssemu_time_t t)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);

	if (n->kick_at > now_of(r) && n->kick_at <= t)
		return;
	n->kick_at = t;
	schedule(r, t, SSEMU_MEV_NIC_KICK, nic, 0, 0);
}

static inline bool nic_has_work(const struct ssemu_nic_sh *n)
{
	return n->ack_head != SSEMU_NONE || n->inj_head != SSEMU_NONE ||
	       n->resp_head != SSEMU_NONE;
}

/*
 * A credit for class @tc of the edge switch's input buffer reaches NIC
 * @nic at @t: as at a switch output (credit_to_switch), it waits in the
 * NIC's ring, and the NIC looks at @t only if it has something to send and
 * its link is free then (a busy link looks when it is free).
 */
static void credit_to_nic(struct ssemu_region *r, uint32_t nic, uint32_t tc,
			  uint32_t cells, ssemu_time_t t)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint32_t i = (n->cr_head + n->cr_n) % SSEMU_CR_RING;

	if (n->cr_n >= SSEMU_CR_RING || tc >= SSEMU_MAX_TCLASS ||
	    (n->cr_n && n->cr_time[(i + SSEMU_CR_RING - 1) %
				    SSEMU_CR_RING] > t)) {
		schedule(r, t, SSEMU_MEV_NIC_CREDIT, nic, tc, cells);
		return;
	}
	n->cr_time[i] = t;
	n->cr_tc[i] = (uint8_t)tc;
	n->cr_cells[i] = (uint16_t)cells;
	n->cr_n++;
	if (n->busy_until <= t && nic_has_work(n))
		nic_wake(r, nic, t);
}

/* Hand a credit for (@port's input buffer, @vcl) back to whoever feeds
 * it. */
static inline void return_credit(struct ssemu_region *r,
				 struct ssemu_switch_sh *s, uint32_t port,
				 uint32_t vcl, uint32_t cells)
{
	const struct ssemu_peer *peer = &s->port[port].peer;
	ssemu_time_t t = now_of(r) + s->port[port].delay;
	uint32_t nic, pinst;

	if (peer->kind == SSEMU_PORT_ENDPOINT) {
		nic = ssemu_port_nic(r, peer->ep);
		if (nic != SSEMU_NONE)
			credit_to_nic(r, nic, vcl / SSEMU_NVC, cells, t);
		return;
	}
	if (peer->kind == SSEMU_PORT_NONE)
		return;
	pinst = ssemu_sw_inst(r, peer->sw);
	if (pinst != SSEMU_NONE)
		credit_to_switch(r, pinst, peer->port, vcl, cells, t);
}

static void sw_try_send(struct ssemu_region *r, uint32_t inst, uint32_t out)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_swport *op = &s->port[out];
	struct ssemu_pkt *pkt;
	struct ssemu_peer peer;
	uint32_t in, tc, vcl, dvcl, pi, nic, pinst, cells;
	ssemu_time_t ser, now = now_of(r), retry = UINT64_MAX;

	if (op->busy_until > now) {
		/* serialising: look again when the link is free */
		if (!op->done_pending)
			sw_wake(r, inst, out, op->busy_until);
		return;
	}
	credits_settle(r, op, now);
	/* ("shares", the default, without the indirect call) */
	if (!(r->arb_idx == 0 ? arb_shares(r, s, out, &in, &vcl, &retry) :
	      arb_ops[r->arb_idx].pick(r, s, out, &in, &vcl, &retry))) {
		/* held back by a cap: look again when it allows */
		if (retry != UINT64_MAX && !op->done_pending)
			sw_wake(r, inst, out, retry);
		/* or maybe waiting for a credit on its way: when it is in */
		if (op->nqueued && op->cr_n)
			sw_wake(r, inst, out, op->cr_time[op->cr_head]);
		return;
	}
	if (SSEMU_BAD(r, in >= r->topo.radix || vcl >= SSEMU_MAX_VCLASS,
		      "switch %u output %u: arbitration picked input %u, "
		      "vclass %u", s->sw, out, in, vcl))
		return;
	pi = voq_pop(r, s, in, out, vcl);
	if (pi == SSEMU_NONE || pkt_hop_bad(r, pi))
		return;
	pkt = ssemu_r_pkt(r, pi);
	ssemu_auth_sw_count(s, pkt);
	tc = pkt->tclass;
	cells = pkt_cells(pkt->bytes);
	dvcl = next_vcl(r, out, vcl);
	op->vq[dvcl].credits -= cells;
	op->tx[tc].pkts++;
	op->tx[tc].bytes += pkt->bytes;
	r->pkt_hops++;
	r->switch_lat_sum += now - pkt->sw_arrive;
	r->swlat_hist[SSEMU_MIN((now - pkt->sw_arrive) / SSEMU_PS_PER_NS,
				(uint64_t)SSEMU_SWLAT_BINS - 1)]++;
	return_credit(r, s, in, vcl, cells);
	pkt->vc = (uint8_t)(dvcl % SSEMU_NVC);

	ser = port_ser_time(r, op, out, pkt->bytes);
	op->busy_until = now + ser;
	/* only if something waits for this output; a later arrival looks
	 * at busy_until itself */
	if (op->nqueued && !op->done_pending)
		sw_wake(r, inst, out, now + ser);
	peer = op->peer;
	if (peer.kind == SSEMU_PORT_ENDPOINT) {
		if (pkt->type == SSEMU_PKT_DATA &&
		    cc_ops[r->cc_idx].mark(r, op, tc)) {
			pkt->marked = 1;
			ssemu_tel_mark(r, tc);
		}
		nic = ssemu_port_nic(r, peer.ep);
		if (nic != SSEMU_NONE) {
			pkt->to_gen = ssemu_r_nic(r, nic)->gen;
			schedule(r, now + ser + op->delay,
				 SSEMU_MEV_NIC_ARRIVE, nic, 0, pi);
			return;
		}
		/* Nobody there (the NIC detached): the port drops it. */
		op->vq[dvcl].credits += cells;
		op->drops++;
		lose_pkt(r, pi, -EHOSTUNREACH);
		return;
	}
	/* (the peer's model, once it is known, is kept by the port: a model
	 * stays until the switch models are all dropped, ports with them) */
	if (op->peer_inst) {
		pinst = op->peer_inst - 1;
		if (SSEMU_BAD(r, pinst >= r->sw_used, "switch %u output %u: "
			      "peer model %u of %u", s->sw, out, pinst,
			      r->sw_used))
			return;
	} else if (sw_get(r, peer.sw, &pinst)) {
		op->peer_inst = pinst + 1;
	} else {
		op->vq[dvcl].credits += cells;
		op->drops++;
		lose_pkt(r, pi, -ENOSPC);
		return;
	}
	arrive_at_switch(r, pinst, peer.port, pi, now + ser + op->delay);
}

/* ------------------------------------------------------------------ */
/* NICs                                                                 */
/* ------------------------------------------------------------------ */

void ssemu_model_enqueue_msg(struct ssemu_region *r, uint32_t nic,
			     uint32_t mi)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->next = SSEMU_NONE;
	m->post_time = now_of(r);
	m->seq = ++r->msg_seq;
	m->mflags = SSEMU_MSGF_QUEUED;
	m->vni = ssemu_auth_ep_vni(r, ssemu_msg_ep(r, mi));
	if (n->inj_head == SSEMU_NONE)
		n->inj_head = mi;
	else if (SSEMU_BAD(r, n->inj_tail >= r->nmsgs, "NIC %u: injection "
			   "queue tail %u", nic, n->inj_tail))
		return;
	else
		ssemu_r_msg(r, n->inj_tail)->next = mi;
	n->inj_tail = mi;
	n->stats.tx_msgs++;
	n->stats.tx_bytes += m->len;
	ssemu_tel_post(r, nic, m->tclass);
}

/* Fail a queued message that cannot be sent at all. */
static void fail_queued(struct ssemu_region *r, uint32_t mi, int32_t status)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->status = status;
	ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	complete_tx(r, mi);
}

/*
 * What a packet of class @tc would wait behind among per-class queue
 * depths @q: its own class and those at its priority or above (output
 * arbitration serves a higher priority first, so a long bulk queue does
 * not make a low-latency packet detour).
 */
static uint32_t waits_behind(const struct ssemu_region *r,
			     const uint32_t *q, uint32_t tc)
{
	uint8_t prio = r->config.tclass[tc].priority;
	uint32_t load = 0, c;

	for (c = 0; c < r->config.ntclass; c++)
		if (r->config.tclass[c].priority >= prio)
			load += q[c];
	return load;
}

/* What an adaptive decision sees of output @port at switch @s: packets
 * waiting for it, plus its downstream buffer in use for the class. */
static uint32_t port_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
			  uint32_t port, uint32_t tc)
{
	struct ssemu_swport *op = &s->port[port];
	uint32_t load = waits_behind(r, op->queued_tc, tc), cr;

	if (!port_is_edge(r, port)) {
		credits_settle(r, op, now_of(r));
		/* the downstream buffer's use, in full-size packets */
		cr = op->vq[tc * SSEMU_NVC + 1].credits;
		if (cr < buf_cells(&r->config))
			load += (buf_cells(&r->config) - cr) /
				pkt_cells(r->config.mtu +
					  r->config.pkt_overhead);
	}
	return load;
}

/*
 * Neighbours' congestion, with a delay: the queue that the neighbour
 * through @port would put a packet for @target (an endpoint) in, as it
 * published it, counting the classes a packet of class @tc waits behind.
 * A switch publishes an output's queues at most every SSEMU_NB_PERIOD and
 * they are seen one sample late: what a neighbour knows is at least one
 * period old.  An edge output counts nothing: every path to the endpoint
 * ends there, so it cannot tell them apart.
 */
#define SSEMU_NB_PERIOD (500 * SSEMU_PS_PER_NS)

static uint32_t nb_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
			uint32_t port, uint64_t target, uint16_t copy,
			uint32_t tc)
{
	const struct ssemu_peer *pe = &s->port[port].peer;
	ssemu_time_t now = now_of(r);
	struct ssemu_swport *np;
	uint32_t inst, q;

	if (!route_ops[r->route_idx].neighbours ||
	    (pe->kind != SSEMU_PORT_LOCAL && pe->kind != SSEMU_PORT_GLOBAL))
		return 0;
	inst = ssemu_sw_inst(r, pe->sw);
	if (inst == SSEMU_NONE)
		return 0;	/* never used: nothing queued there */
	q = ssemu_topo_min_port(&r->topo, pe->sw, target, copy);
	np = &ssemu_r_switch(r, inst)->port[q];
	if (np->peer.kind == SSEMU_PORT_ENDPOINT)
		return 0;
	if (now - np->nb_time >= SSEMU_NB_PERIOD) {
		memcpy(np->nb_seen, np->nb_next, sizeof(np->nb_seen));
		memcpy(np->nb_next, np->queued_tc, sizeof(np->nb_next));
		np->nb_time = now;
	}
	return waits_behind(r, np->nb_seen, tc);
}

/*
 * Inside a group: the direct local link, or two local hops through another
 * switch of the group (the group is all-to-all, one link per pair, so
 * traffic from one switch to another -- an all-to-all's shift -- has one
 * link minimally and a-2 more through the others).
 */
static void route_choose_local(struct ssemu_region *r,
			       struct ssemu_switch_sh *s, struct ssemu_pkt *pkt,
			       uint16_t *path, int bias)
{
	const struct ssemu_topo *t = &r->topo;
	const struct ssemu_route_ops *ro = &route_ops[r->route_idx];
	uint32_t dsw = ssemu_topo_ep_switch(t, pkt->dst_port);
	uint32_t base = ssemu_topo_group(t, s->sw) * t->a, k, li, isw, port;
	uint64_t cost, best;
	uint16_t best_via = 0;

	if (dsw == s->sw || t->a < 3 || t->nswitches > SSEMU_VIA_SWITCH) {
		*path = 0;
		return;
	}
	port = ssemu_topo_min_port(t, s->sw, pkt->dst_port, pkt->copy);
	best = (uint64_t)(port_load(r, s, port, pkt->tclass) + 1) * 2 * 8;
	/* (the direct link's neighbour is the destination's switch: its
	 * edge output counts nothing) */
	for (k = 0; k < ro->ncand; k++) {
		/* a random switch of the group other than both ends */
		li = (uint32_t)ssemu_rng_below(&s->rng, t->a - 2);
		if (li >= SSEMU_MIN(s->sw, dsw) - base)
			li++;
		if (li >= SSEMU_MAX(s->sw, dsw) - base)
			li++;
		isw = base + li;
		port = ssemu_topo_min_port(t, s->sw, (uint64_t)isw * t->p,
					   pkt->copy);
		cost = (uint64_t)(port_load(r, s, port, pkt->tclass) +
				  nb_load(r, s, port, pkt->dst_port, pkt->copy,
					  pkt->tclass) + 1) * 3 *
		       (uint64_t)(8 + bias);
		if (cost < best) {
			best = cost;
			best_via = (uint16_t)(SSEMU_VIA_SWITCH | isw);
		}
	}
	pkt->via = best_via;
	*path = best_via;
}

/* The path of a packet about to be injected (see route_ops). */
static void route_choose(struct ssemu_region *r, uint32_t nic,
			 const struct ssemu_msg *m, struct ssemu_pkt *pkt,
			 uint32_t dnic, uint32_t inflight)
{
	const struct ssemu_route_ops *ro = &route_ops[r->route_idx];
	const struct ssemu_topo *t = &r->topo;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint16_t *path = &ssemu_r_pair(r, nic, dnic)->path;
	int bias = r->config.tclass[m->tclass].route_bias;
	bool ordered = (m->flags & SSEMU_SEND_ORDERED) ||
		       r->config.tclass[m->tclass].ordered;
	uint32_t sg, dg, g, k, port, inst, hmin, nb, best_via = 0;
	uint16_t copy, best_copy = pkt->copy;
	struct ssemu_switch_sh *s;
	uint64_t cost, best;

	pkt->via = 0;
	pkt->phase = 0;
	if (!ro->ncand)
		return;
	if (ordered && inflight) {
		/* an ordered flow keeps its path while anything is in flight */
		pkt->via = *path;
		return;
	}
	sg = ssemu_topo_group(t, ssemu_topo_ep_switch(t, n->port));
	dg = ssemu_topo_group(t, ssemu_topo_ep_switch(t, pkt->dst_port));
	s = sw_get(r, ssemu_topo_ep_switch(t, n->port), &inst);
	if (bias < -7)
		bias = -7;
	if (sg == dg && s) {
		route_choose_local(r, s, pkt, path, bias);
		return;
	}
	if (t->g < 3 || !s) {
		*path = 0;
		return;
	}
	hmin = ssemu_topo_min_hops(t, n->port, pkt->dst_port, pkt->copy);
	port = ssemu_topo_min_port(t, s->sw, pkt->dst_port, pkt->copy);
	best = (uint64_t)(port_load(r, s, port, pkt->tclass) +
			  nb_load(r, s, port, pkt->dst_port, pkt->copy,
				  pkt->tclass) + 1) * (hmin + 1) * 8;
	for (k = 0; k < ro->ncand; k++) {
		/* a random group other than the source's and the destination's */
		g = (uint32_t)ssemu_rng_below(&s->rng, t->g - 2);
		if (g >= SSEMU_MIN(sg, dg))
			g++;
		if (g >= SSEMU_MAX(sg, dg))
			g++;
		/* unordered traffic may spread over every global link
		 * toward the intermediate group, not just its pair's copy */
		copy = ordered ? pkt->copy :
				 (uint16_t)ssemu_rng_below(&s->rng, 65536);
		port = ssemu_topo_min_port(t, s->sw, group_rep(t, g), copy);
		/* past the global link into g, the neighbour heads for the
		 * destination */
		nb = s->port[port].peer.kind == SSEMU_PORT_GLOBAL &&
		     ssemu_topo_group(t, s->port[port].peer.sw) == g ?
			     nb_load(r, s, port, pkt->dst_port, pkt->copy,
				     pkt->tclass) :
			     nb_load(r, s, port, group_rep(t, g), copy,
				     pkt->tclass);
		cost = (uint64_t)(port_load(r, s, port, pkt->tclass) + nb + 1) *
		       (hmin + 3) * (uint64_t)(8 + bias);
		if (cost < best) {
			best = cost;
			best_via = g + 1;
			best_copy = copy;
		}
	}
	pkt->via = (uint16_t)best_via;
	if (best_via)
		pkt->copy = best_copy;
	*path = (uint16_t)best_via;
}

#define SSEMU_INJ_LOOKAHEAD 64	/* queued messages scanned per injection */

/* Payload bytes of the packet starting at byte @done of @len. */
static inline uint32_t pkt_chunk(uint64_t len, uint64_t done, uint32_t mtu)
{
	return len > done ? (uint32_t)SSEMU_MIN((uint64_t)mtu, len - done) : 0;
}

/* Packet @pi of message @mi, from endpoint port @src to @dst, VC 0. */
static struct ssemu_pkt *pkt_init(struct ssemu_region *r, uint32_t pi,
				  uint8_t type, uint32_t mi, uint32_t src,
				  uint32_t dst, uint32_t payload)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	const struct ssemu_msg *m = ssemu_r_msg(r, mi);

	memset(pkt, 0, sizeof(*pkt));
	pkt->type = type;
	pkt->tclass = (uint8_t)m->tclass;
	pkt->msg = mi;
	pkt->msg_gen = m->gen;
	pkt->src_port = src;
	pkt->dst_port = dst;
	pkt->bytes = payload + r->config.pkt_overhead;
	/* one global-link copy per (src, dst) pair keeps it FIFO */
	pkt->copy = (uint16_t)((src * 2654435761u + dst) >> 7);
	pkt->inject_time = now_of(r);
	pkt->vni = m->vni;
	return pkt;
}

/* A packet for NIC @n to send, or NONE: then it waits for the pool (a
 * freed packet kicks it). */
static uint32_t nic_pkt_alloc(struct ssemu_region *r, struct ssemu_nic_sh *n)
{
	uint32_t pi = pkt_alloc(r);

	if (pi == SSEMU_NONE && !n->wait_pkt) {
		n->wait_pkt = 1;
		r->pkt_waiters++;
	}
	return pi;
}

/*
 * The next packet of RMA results the NIC sends back, or NONE.  Like
 * acknowledgements they are neither windowed nor acknowledged; they do take
 * the edge link, credits and packets like any other.
 */
static uint32_t nic_next_resp(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint32_t mi = n->resp_head, pi, chunk, inic, mtu = r->config.mtu;
	struct ssemu_msg *m;
	struct ssemu_pkt *pkt;

	if (msg_link_bad(r, mi, "a NIC's response queue"))
		return SSEMU_NONE;
	m = ssemu_r_msg(r, mi);
	/* (an RMA to this NIC, queued here) */
	if (SSEMU_BAD(r, !m->rma_op || !(m->mflags & SSEMU_MSGF_RESPQ) ||
		      SSEMU_ADDR_PORT(m->dst) != n->port ||
		      msg_link_bad(r, m->resp_next, "a NIC's response queue"),
		      "NIC %u: its response queue holds slot %u, not an RMA "
		      "to it", nic, mi))
		return SSEMU_NONE;
	chunk = pkt_chunk(m->rma_len, (uint64_t)m->resp_sent * mtu, mtu);
	if (m->tclass >= r->config.ntclass ||
	    n->credits[m->tclass] < pkt_cells(chunk + r->config.pkt_overhead)) {
		n->stats.credit_stalls++;
		return SSEMU_NONE;
	}
	pi = nic_pkt_alloc(r, n);
	if (pi == SSEMU_NONE)
		return SSEMU_NONE;
	inic = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
	pkt = pkt_init(r, pi, SSEMU_PKT_RESP, mi, n->port,
		       SSEMU_ADDR_PORT(m->src), chunk);
	/* the pair congestion control sees: this NIC -> the initiator's */
	pkt->src_nic = nic;
	pkt->win = inic;
	pkt->src_gen = ssemu_r_nic(r, inic)->gen;
	if (++m->resp_sent >= m->resp_npkts) {
		n->resp_head = m->resp_next;
		if (n->resp_head == SSEMU_NONE)
			n->resp_tail = SSEMU_NONE;
		m->mflags &= ~SSEMU_MSGF_RESPQ;
		rma_rx_done(r, m);	/* the slot's last write here */
	}
	if (cc_ops[r->cc_idx].on_send)
		cc_ops[r->cc_idx].on_send(r, nic, inic);
	return pi;
}

/* Is the pair of the first queued RMA result held back by congestion
 * control (FGFC pacing)? */
static bool resp_paused(struct ssemu_region *r, uint32_t nic)
{
	uint32_t mi = ssemu_r_nic(r, nic)->resp_head, inic;

	if (mi >= r->nmsgs)
		return false;	/* (nic_next_resp finds it bad) */
	inic = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
	return inic < r->config.max_nics &&
	       cc_ops[r->cc_idx].window(r, nic, inic) == 0;
}

/*
 * Next packet the NIC may inject now, or NONE.  Acknowledgements go first.
 * Then the first queued message that may go: a destination whose window is
 * full (or that congestion control holds back) or a class without credits
 * does not hold back messages to other destinations, but messages to one
 * destination always leave in the order they were posted.
 */
static uint32_t nic_next_pkt(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint32_t blocked[SSEMU_INJ_LOOKAHEAD];
	uint32_t nblocked = 0, pi, mi, prev, next, dnic, dport, chunk, k, i;
	uint32_t allowed;
	struct ssemu_pair *pr;
	struct ssemu_msg *m;
	struct ssemu_pkt *pkt;

	if (n->ack_head != SSEMU_NONE) {
		pi = n->ack_head;
		if (pkt_bad(r, pi) || pkt_link_bad(r, ssemu_r_pkt(r, pi)->next,
						   "a NIC's ack queue") ||
		    /* (acknowledgements, and RMA results sent again after
		     * a lossy class dropped them: resend_fire) */
		    SSEMU_BAD(r, ssemu_r_pkt(r, pi)->type != SSEMU_PKT_ACK &&
				 ssemu_r_pkt(r, pi)->type != SSEMU_PKT_RESP,
			      "NIC %u: its ack queue holds a packet of type %u",
			      nic, ssemu_r_pkt(r, pi)->type))
			return SSEMU_NONE;
		pkt = ssemu_r_pkt(r, pi);
		if (n->credits[pkt->tclass] < pkt_cells(pkt->bytes)) {
			n->stats.credit_stalls++;
			return SSEMU_NONE;
		}
		n->ack_head = pkt->next;
		return pi;
	}
	/* RMA results first, unless congestion control holds the pair at
	 * the head of the queue back: then data to others may go */
	if (n->resp_head != SSEMU_NONE && !resp_paused(r, nic))
		return nic_next_resp(r, nic);
	prev = SSEMU_NONE;
	for (mi = n->inj_head, k = 0; mi != SSEMU_NONE &&
				      k < SSEMU_INJ_LOOKAHEAD;
	     prev = mi, mi = next, k++) {
		if (msg_bad(r, mi) ||
		    SSEMU_BAD(r, ssemu_ep_nic(r, ssemu_msg_ep(r, mi)) != nic ||
			      !(ssemu_r_msg(r, mi)->mflags & SSEMU_MSGF_QUEUED),
			      "NIC %u: its injection queue holds slot %u, not "
			      "one of its own queued messages", nic, mi))
			return SSEMU_NONE;
		m = ssemu_r_msg(r, mi);
		next = m->next;
		if (msg_link_bad(r, next, "a NIC's injection queue"))
			return SSEMU_NONE;
		dport = SSEMU_ADDR_PORT(m->dst);
		dnic = ssemu_port_nic(r, dport);
		if (dnic == SSEMU_NONE) {
			/* Nobody attached there (any more): send no more of
			 * it.  It completes with an error now, or with the
			 * last acknowledgement of what already left. */
			if (prev == SSEMU_NONE)
				n->inj_head = next;
			else
				ssemu_r_msg(r, prev)->next = next;
			if (n->inj_tail == mi)
				n->inj_tail = prev;
			m->npkts = m->sent;
			r->msgs_unreachable++;
			if (m->acked == m->sent)
				fail_queued(r, mi, -EHOSTUNREACH);
			else
				m->status = -EHOSTUNREACH;
			mi = prev;	/* prev stays prev */
			continue;
		}
		for (i = 0; i < nblocked; i++)
			if (blocked[i] == dnic)
				break;
		if (i < nblocked)
			continue;	/* an earlier message to it waits */
		allowed = SSEMU_MIN(r->config.nic_window,
				    cc_ops[r->cc_idx].window(r, nic, dnic));
		pr = ssemu_r_pair(r, nic, dnic);
		if (pr->window >= allowed) {
			n->stats.window_stalls++;
			goto blocked;
		}
		chunk = pkt_chunk(m->len, (uint64_t)m->sent * r->config.mtu,
				  r->config.mtu);
		if (n->credits[m->tclass] <
		    pkt_cells(chunk + r->config.pkt_overhead)) {
			n->stats.credit_stalls++;
			goto blocked;
		}
		pi = nic_pkt_alloc(r, n);
		if (pi == SSEMU_NONE)
			return SSEMU_NONE;
		pkt = pkt_init(r, pi, SSEMU_PKT_DATA, mi, n->port, dport,
			       chunk);
		pkt->win = dnic;
		pkt->src_nic = nic;
		pkt->src_gen = n->gen;
		route_choose(r, nic, m, pkt, dnic, pr->window);
		/* the window is full now: ask for an acknowledgement at once
		 * rather than at the next coalescing point */
		pkt->ack_req = ++pr->window >= allowed;
		pkt->idx = m->sent;
		pkt->epoch = m->epoch;
		/* as a link does: the payload's CRC goes with it, checked
		 * where it arrives */
		pkt->crc = ssemu_crc(0, msg_payload(r, m, (uint64_t)m->sent *
						       r->config.mtu),
				     chunk);
		if (r->config.tclass[m->tclass].lossy &&
		    !(m->mflags & SSEMU_MSGF_RTO)) {
			m->mflags |= SSEMU_MSGF_RTO;
			schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RTO, nic,
				 mi, m->gen);
		}
		if (cc_ops[r->cc_idx].on_send)
			cc_ops[r->cc_idx].on_send(r, nic, dnic);
		if (++m->sent == m->npkts) {
			if (prev == SSEMU_NONE)
				n->inj_head = next;
			else
				ssemu_r_msg(r, prev)->next = next;
			if (n->inj_tail == mi)
				n->inj_tail = prev;
		}
		return pi;
blocked:
		if (nblocked < SSEMU_INJ_LOOKAHEAD)
			blocked[nblocked++] = dnic;
	}
	return SSEMU_NONE;
}

void ssemu_model_nic_kick(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_switch_sh *s;
	struct ssemu_pkt *pkt;
	uint32_t pi, inst, esw, eport;
	ssemu_time_t ser, now = now_of(r);

	if (n->state != SSEMU_NIC_ATTACHED)
		return;
	if (n->busy_until > now) {
		if (!n->done_pending) {
			n->done_pending = 1;
			schedule(r, n->busy_until, SSEMU_MEV_NIC_TX_DONE, nic,
				 0, 0);
		}
		return;
	}
	nic_credits_settle(r, n, now);
	pi = nic_next_pkt(r, nic);
	if (pi == SSEMU_NONE) {
		/* maybe waiting for a credit on its way: look when it is in */
		if (n->cr_n && nic_has_work(n))
			nic_wake(r, nic, n->cr_time[n->cr_head]);
		return;
	}
	esw = edge_switch(r, n->port, &eport);
	s = sw_get(r, esw, &inst);
	if (!s) {
		lose_pkt(r, pi, -ENOSPC);
		return;
	}
	pkt = ssemu_r_pkt(r, pi);
	n->credits[pkt->tclass] -= pkt_cells(pkt->bytes);
	n->stats.tx_pkts++;
	if (pkt->type == SSEMU_PKT_DATA || pkt->type == SSEMU_PKT_RESP)
		ssemu_tel_tx(r, nic, pkt->tclass,
			     pkt->bytes - r->config.pkt_overhead);
	/* (the edge link's, as the switch's end of it has it) */
	ser = port_ser_time(r, &s->port[eport], eport, pkt->bytes);
	n->busy_until = now + ser;
	if ((n->ack_head != SSEMU_NONE || n->inj_head != SSEMU_NONE ||
	     n->resp_head != SSEMU_NONE) && !n->done_pending) {
		n->done_pending = 1;
		schedule(r, now + ser, SSEMU_MEV_NIC_TX_DONE, nic, 0, 0);
	}
	arrive_at_switch(r, inst, eport, pi, now + ser + r->config.edge.delay);
}

/*
 * Does data packet @pkt of message @m fail its CRC?  A failure is counted
 * (the fabric's first one is logged as a warning, later ones at debug
 * level).
 */
static bool crc_bad(struct ssemu_region *r, struct ssemu_nic_sh *n,
		    struct ssemu_msg *m, struct ssemu_pkt *pkt)
{
	const struct ssemu_config *c = &r->config;
	uint64_t off = (uint64_t)pkt->idx * c->mtu;
	uint32_t chunk = pkt->bytes - SSEMU_MIN(pkt->bytes, c->pkt_overhead);

	if (msg_bad(r, pkt->msg))
		return true;
	if (off + chunk <= m->len &&
	    ssemu_crc(0, msg_payload(r, m, off), chunk) == pkt->crc)
		return false;
	n->stats.crc_errors++;
	ssemu_log(ssemu_fetch_add(&r->crc_errors, 1) ? SSEMU_LOG_DEBUG :
						      SSEMU_LOG_WARN,
		  "a packet of a message from port %u to port %u failed its "
		  "CRC: the payload changed in flight (further ones are "
		  "counted in crc_errors)", SSEMU_ADDR_PORT(m->src),
		  SSEMU_ADDR_PORT(m->dst));
	return true;
}

static void nic_arrive(struct ssemu_region *r, uint32_t nic, uint32_t direct,
		       uint32_t pi)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	struct ssemu_msg *m = ssemu_r_msg(r, pkt->msg);
	uint32_t inst, esw, eport, tc = pkt->tclass;
	bool live;

	/* The edge switch gets its credit back, whoever is (or is not) at
	 * the port now; a packet reported straight back took no credit. */
	if (!direct) {
		esw = edge_switch(r, n->port, &eport);
		inst = ssemu_sw_inst(r, esw);
		if (inst != SSEMU_NONE)
			credit_to_switch(r, inst, eport,
					 tc * SSEMU_NVC, pkt_cells(pkt->bytes),
					 now_of(r) + r->config.edge.delay);
	}
	if (n->state != SSEMU_NIC_ATTACHED || n->gen != pkt->to_gen) {
		/* the NIC it was sent to has gone */
		lose_pkt(r, pi, -EHOSTUNREACH);
		return;
	}
	if (pkt->type == SSEMU_PKT_DATA) {
		live = m->gen == pkt->msg_gen;
		n->stats.rx_pkts++;
		r->pkts_delivered++;
		pkt->status = 0;
		pkt->count = 1;	/* a stale packet is acknowledged alone */
		if (live && r->config.tclass[tc].lossy &&
		    (pkt->epoch != m->epoch || pkt->idx != m->arrived)) {
			/* lossy: after a drop, later packets are sent again
			 * (go-back-N); a stale or early one goes, unacked */
			pkt_free(r, pi);
			return;
		}
		if (live && crc_bad(r, n, m, pkt)) {
			/* lossy: lost, the source's go-back-N resends it;
			 * else the message fails (never delivered) */
			if (r->config.tclass[tc].lossy) {
				pkt_free(r, pi);
				return;
			}
			if (!m->status)
				m->status = -EIO;
		}
		if (live && ssemu_auth_rx_refused(r, nic, m, pkt) && !m->status)
			m->status = -ENOTCONN;	/* VNI_NOT_FOUND */
		if (live) {
			ssemu_tel_rx(r,
				     ssemu_ep_nic(r, ssemu_msg_ep(r, pkt->msg)),
				     tc, pkt->bytes - r->config.pkt_overhead);
			m->rx_marked |= pkt->marked;
			if (++m->arrived == m->npkts) {
				deliver_recv(r, pkt->msg);
				pkt->status = m->status;
			} else if (!pkt->ack_req && !pkt->marked &&
				   m->arrived - m->rx_acked < SSEMU_ACK_EVERY) {
				/* a later acknowledgement covers it, the
				 * timer's if nothing else comes */
				if (m->arrived - m->rx_acked == 1)
					schedule(r, now_of(r) + SSEMU_ACK_DELAY,
						 SSEMU_MEV_ACK_TIMER, nic,
						 pkt->msg, m->gen);
				n->rx_unacked++;
				pkt_free(r, pi);
				return;
			}
			pkt->count = (uint16_t)(m->arrived - m->rx_acked);
			pkt->marked = (uint8_t)m->rx_marked;
			m->rx_marked = 0;
			n->rx_unacked -= SSEMU_MIN(n->rx_unacked,
						   pkt->count - 1u);
			m->rx_acked = m->arrived;
		}
		/* The packet turns into its acknowledgement (a stale one too:
		 * the source's window slot must close either way). */
		pkt->type = SSEMU_PKT_ACK;
		pkt->vc = 0;
		pkt->via = 0;	/* acknowledgements go back minimally */
		pkt->phase = 0;
		pkt->bytes = r->config.pkt_overhead;
		pkt->dst_port = pkt->src_port;
		pkt->src_port = n->port;
		pkt->copy = (uint16_t)((n->port * 2654435761u + pkt->dst_port) >>
				       7);
		pkt->next = SSEMU_NONE;
		if (n->ack_head == SSEMU_NONE)
			n->ack_head = pi;
		else if (SSEMU_BAD(r, n->ack_tail >= r->config.max_pkts,
				   "NIC %u: ack queue tail %u", nic,
				   n->ack_tail))
			return;
		else
			ssemu_r_pkt(r, n->ack_tail)->next = pi;
		n->ack_tail = pi;
		ssemu_model_nic_kick(r, nic);
		return;
	}
	if (pkt->type == SSEMU_PKT_RESP) {
		/* results of one of our RMA operations */
		n->stats.rx_pkts++;
		n->stats.rx_bytes += pkt->bytes -
				     SSEMU_MIN(pkt->bytes,
					       r->config.pkt_overhead);
		r->pkts_delivered++;
		if (pkt->src_gen == n->gen && m->gen == pkt->msg_gen &&
		    m->rma_op && m->resp_arrived < m->resp_npkts) {
			ssemu_tel_rx(r, nic, tc, pkt->bytes -
				     SSEMU_MIN(pkt->bytes,
					       r->config.pkt_overhead));
			if (pkt->status && !m->status)
				m->status = pkt->status;
			if (++m->resp_arrived >= m->resp_npkts &&
			    m->acked >= m->npkts)
				complete_tx(r, pkt->msg);
		}
		pkt_free(r, pi);
		return;
	}
	/* An acknowledgement for one of our packets (or of this NIC slot's
	 * previous owner: then neither window nor message is ours). */
	n->stats.ack_pkts++;
	if (pkt->src_gen == n->gen) {
		n->stats.acks += pkt->count;
		if (pkt->win < r->config.max_nics) {
			struct ssemu_pair *pr = ssemu_r_pair(r, nic, pkt->win);
			uint32_t cw = pr->cwnd;

			pr->window -= SSEMU_MIN(pr->window, pkt->count);
			cc_ops[r->cc_idx].on_ack(r, nic, pkt->win, pkt->count,
						 pkt->marked);
			if (pr->cwnd < cw)
				ssemu_tel_throttle(r, tc);
		}
		if (m->gen == pkt->msg_gen && m->acked < m->npkts) {
			if (pkt->status && !m->status)
				m->status = pkt->status;
			m->acked += pkt->count;
			/* an RMA waits for its results as well */
			if (m->acked >= m->npkts &&
			    m->resp_arrived >= m->resp_npkts)
				complete_tx(r, pkt->msg);
		}
	}
	pkt_free(r, pi);
	ssemu_model_nic_kick(r, nic);
}

/* The delayed acknowledgement of packets no later one covered. */
static void ack_timer(struct ssemu_region *r, uint32_t nic, uint32_t mi,
		      uint32_t gen)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_msg *m;
	struct ssemu_pkt *pkt;
	uint32_t pi, src;

	if (mi >= r->nmsgs || n->state != SSEMU_NIC_ATTACHED)
		return;
	m = ssemu_r_msg(r, mi);
	if (m->gen != gen || m->arrived <= m->rx_acked ||
	    SSEMU_ADDR_PORT(m->dst) != n->port)
		return;
	pi = pkt_alloc(r);
	if (pi == SSEMU_NONE) {
		schedule(r, now_of(r) + SSEMU_ACK_DELAY, SSEMU_MEV_ACK_TIMER,
			 nic, mi, gen);
		return;
	}
	src = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
	pkt = ssemu_r_pkt(r, pi);
	memset(pkt, 0, sizeof(*pkt));
	pkt->type = SSEMU_PKT_ACK;
	pkt->tclass = (uint8_t)m->tclass;
	pkt->msg = mi;
	pkt->msg_gen = gen;
	pkt->win = nic;
	pkt->src_gen = ssemu_r_nic(r, src)->gen;
	pkt->src_port = n->port;
	pkt->dst_port = SSEMU_ADDR_PORT(m->src);
	pkt->bytes = r->config.pkt_overhead;
	pkt->copy = (uint16_t)((n->port * 2654435761u + pkt->dst_port) >> 7);
	pkt->count = (uint16_t)(m->arrived - m->rx_acked);
	pkt->marked = (uint8_t)m->rx_marked;
	n->rx_unacked -= SSEMU_MIN(n->rx_unacked, pkt->count);
	m->rx_acked = m->arrived;
	m->rx_marked = 0;
	pkt->next = SSEMU_NONE;
	if (n->ack_head == SSEMU_NONE)
		n->ack_head = pi;
	else if (SSEMU_BAD(r, n->ack_tail >= r->config.max_pkts,
			   "NIC %u: ack queue tail %u", nic, n->ack_tail))
		return;
	else
		ssemu_r_pkt(r, n->ack_tail)->next = pi;
	n->ack_tail = pi;
	ssemu_model_nic_kick(r, nic);
}

/*
 * An endpoint closes (or its process died): its queued messages leave the
 * NIC (packets already sent are fenced off by the slot generation, and
 * their acknowledgements still close the window), and the events it will
 * never read give their message slots back to the senders.
 */
void ssemu_model_ep_close(struct ssemu_region *r, uint32_t epi)
{
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);
	struct ssemu_nic_sh *n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	ssemu_addr_t self = SSEMU_ADDR(n->port, ep->pid);
	struct ssemu_ring *ring = ssemu_r_ring(r, ep->tx_ring_off);
	uint32_t mi, prev = SSEMU_NONE, next;
	struct ssemu_msg *m;

	/*
	 * Posted and not taken by the engine.  A close waits for those
	 * (ssemu_ep_close_timeout): any left here are the ones its bound
	 * gave up on, or their process died; they are discarded, counted.
	 */
	while (!ssemu_ep_rings_bad(r, epi) && !ssemu_ring_peek(ring, &mi)) {
		if (mi / r->config.msgs_per_ep == epi) {
			ssemu_fetch_or(ssemu_r_mstate(r, mi),
				       SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
			r->msgs_discarded++;
		}
		ssemu_ring_advance(ring);
	}
	for (mi = n->inj_head; mi != SSEMU_NONE; mi = next) {
		m = ssemu_r_msg(r, mi);
		next = m->next;
		if (ssemu_msg_ep(r, mi) != epi) {
			prev = mi;
			continue;
		}
		if (prev == SSEMU_NONE)
			n->inj_head = next;
		else
			ssemu_r_msg(r, prev)->next = next;
		if (n->inj_tail == mi)
			n->inj_tail = prev;
		m->gen++;
		ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
		r->msgs_discarded++;
	}
	/*
	 * Messages delivered to it and never released (in its event ring, on
	 * its overflow list, or taken and kept): only a scan of every slot
	 * finds the last kind, and closing is rare.
	 */
	for (mi = 0; ssemu_load_acquire(&ep->unreleased) && mi < r->nmsgs;
	     mi++) {
		m = ssemu_r_msg(r, mi);
		if (!m->rma_op && m->dst == self && m->npkts &&
		    m->arrived == m->npkts &&
		    (ssemu_load_acquire(ssemu_msg_state(r, m)) &
		     (SSEMU_MSG_BUSY | SSEMU_MSG_RXDONE)) == SSEMU_MSG_BUSY)
			ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	}
	/* RMA_REMOTE events it will never read: the target side of those
	 * operations is done (but for results still to send) */
	for (mi = ep->rx_head; mi < r->nmsgs; mi = next) {
		m = ssemu_r_msg(r, mi);
		next = m->rx_next;
		if (m->rma_op) {
			m->mflags &= ~SSEMU_MSGF_RXOVF;
			rma_rx_done(r, m);
		}
	}
	/* its own RMA operations: it will release no RMA_DONE event (the
	 * target side still holds those in flight until it is done) */
	for (mi = epi * r->config.msgs_per_ep;
	     mi < (epi + 1) * r->config.msgs_per_ep; mi++) {
		m = ssemu_r_msg(r, mi);
		if (m->rma_op &&
		    (ssemu_load_acquire(ssemu_msg_state(r, m)) & SSEMU_MSG_BUSY))
			ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
	}
	for (mi = ep->tx_head; mi != SSEMU_NONE; mi = ssemu_r_msg(r, mi)->tx_next)
		ssemu_fetch_or(ssemu_r_mstate(r, mi), SSEMU_MSG_TXDONE);
	ep->rx_head = ep->rx_tail = ep->tx_head = ep->tx_tail = SSEMU_NONE;
	/* (read without the lock by waiters, see eps_ready) */
	ssemu_store_release(&ep->open, 0);
	ep->gen++;
}

/*
 * A NIC detaches (its endpoints are closed already): acknowledgements it
 * still owed go straight back to their sources, so their windows close and
 * their sends complete; then its state is reset.
 */
void ssemu_model_nic_reset(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_pkt *pkt;
	uint32_t pi, src, tc, mi, count, k;
	struct ssemu_msg *m;
	uint16_t *win;

	/*
	 * Packets that arrived here and wait for a coalesced acknowledgement
	 * that will now never be sent: acknowledge them at their source
	 * directly (a message slot belongs to its sender's NIC).
	 */
	for (mi = 0; n->state == SSEMU_NIC_ATTACHED && n->rx_unacked &&
		     mi < r->nmsgs; mi++) {
		m = ssemu_r_msg(r, mi);
		if (SSEMU_ADDR_PORT(m->dst) != n->port ||
		    m->arrived <= m->rx_acked || m->acked >= m->npkts ||
		    !(ssemu_load_acquire(ssemu_msg_state(r, m)) & SSEMU_MSG_BUSY))
			continue;
		count = m->arrived - m->rx_acked;
		m->rx_acked = m->arrived;
		n->rx_unacked -= SSEMU_MIN(n->rx_unacked, count);
		src = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
		win = &ssemu_r_pair(r, src, nic)->window;
		*win -= SSEMU_MIN(*win, count);
		m->acked += count;
		if (m->acked >= m->npkts)
			complete_tx(r, mi);
		ssemu_model_nic_kick(r, src);
	}

	while ((pi = n->ack_head) != SSEMU_NONE) {
		pkt = ssemu_r_pkt(r, pi);
		n->ack_head = pkt->next;
		src = ssemu_port_nic(r, pkt->dst_port);
		if (src != SSEMU_NONE && ssemu_r_nic(r, src)->gen ==
		    pkt->src_gen) {
			pkt->to_gen = pkt->src_gen;
			schedule(r, now_of(r), SSEMU_MEV_NIC_ARRIVE, src, 1, pi);
		} else {
			pkt_free(r, pi);
		}
	}
	while ((pi = n->inj_head) != SSEMU_NONE) {
		n->inj_head = ssemu_r_msg(r, pi)->next;
		ssemu_fetch_or(ssemu_r_mstate(r, pi),
			       SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
	}
	/*
	 * RMA results it had still to send: the operations were done, but
	 * their initiators will not get all of the results; they complete
	 * with an error once what did leave has arrived.
	 */
	while ((mi = n->resp_head) < r->nmsgs) {
		m = ssemu_r_msg(r, mi);
		n->resp_head = m->resp_next;
		m->mflags &= ~SSEMU_MSGF_RESPQ;
		if (m->resp_sent < m->resp_npkts) {
			m->resp_npkts = m->resp_sent;
			if (!m->status)
				m->status = -EHOSTUNREACH;
			if (m->acked >= m->npkts &&
			    m->resp_arrived >= m->resp_npkts)
				complete_tx(r, mi);
		}
		rma_rx_done(r, m);
	}
	n->resp_head = n->resp_tail = SSEMU_NONE;
	/* its memory regions go with it */
	memset(ssemu_r_mrs(r, nic), 0,
	       SSEMU_MIN(n->mr_hwm, (uint32_t)SSEMU_MRS_PER_NIC) *
		       sizeof(struct ssemu_mr_sh));
	n->mr_hwm = 0;
	n->inj_tail = n->ack_tail = SSEMU_NONE;
	n->busy_until = 0;
	n->done_pending = 0;
	n->rx_unacked = 0;
	if (n->wait_pkt) {
		n->wait_pkt = 0;
		r->pkt_waiters--;
	}
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++)
		n->credits[tc] = tc < r->config.ntclass ?
					 buf_cells(&r->config) : 0;
	n->cr_n = 0;
	n->kick_at = 0;
	for (k = 0; k < r->config.max_nics; k++)
		ssemu_r_pair(r, nic, k)->window = 0;
	memset(&n->stats, 0, sizeof(n->stats));
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                             */
/* ------------------------------------------------------------------ */

/*
 * End-to-end retry of a lossy class's message (go-back-N): every
 * SSEMU_RTO while the message is not all delivered, the packets sent but
 * not arrived in order are taken as lost -- their window slots close, the
 * message's epoch moves on so that stragglers are dropped on arrival -- and
 * sent again from the first missing one.
 */
static void rto_fire(struct ssemu_region *r, uint32_t nic, uint32_t mi,
		     uint32_t gen)
{
	struct ssemu_nic_sh *n;
	struct ssemu_msg *m;
	uint32_t dnic, lost;
	uint16_t *win;

	if (nic >= r->config.max_nics || mi >= r->nmsgs)
		return;
	n = ssemu_r_nic(r, nic);
	m = ssemu_r_msg(r, mi);
	if (m->gen != gen || !(m->mflags & SSEMU_MSGF_RTO))
		return;
	if (n->state != SSEMU_NIC_ATTACHED || m->arrived >= m->npkts ||
	    m->status) {
		m->mflags &= ~SSEMU_MSGF_RTO;
		return;
	}
	dnic = ssemu_port_nic(r, SSEMU_ADDR_PORT(m->dst));
	if (m->sent > m->arrived && dnic < r->config.max_nics) {
		win = &ssemu_r_pair(r, nic, dnic)->window;
		lost = m->sent - m->arrived;
		*win -= (uint16_t)SSEMU_MIN((uint32_t)*win, lost);
		if (m->sent == m->npkts) {
			/* it had left the injection queue: back at its end */
			m->next = SSEMU_NONE;
			if (n->inj_head == SSEMU_NONE)
				n->inj_head = mi;
			else
				ssemu_r_msg(r, n->inj_tail)->next = mi;
			n->inj_tail = mi;
		}
		m->sent = m->arrived;
		m->epoch++;
		ssemu_tel_retry(r, m->tclass);
		ssemu_model_nic_kick(r, nic);
	}
	schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RTO, nic, mi, gen);
}

/* Are the arguments of event @f in range (else the fabric is marked
 * broken)? */
static bool event_bad(struct ssemu_region *r, const struct ssemu_fired *f)
{
	const struct ssemu_config *c = &r->config;
	bool bad;

	switch (f->type) {
	case SSEMU_MEV_NIC_TX_DONE:
	case SSEMU_MEV_NIC_KICK:
		bad = f->a >= c->max_nics;
		break;
	case SSEMU_MEV_NIC_CREDIT:
		bad = f->a >= c->max_nics || f->b >= c->ntclass;
		break;
	case SSEMU_MEV_NIC_ARRIVE:
		bad = f->a >= c->max_nics || f->b > 1 || pkt_bad(r, f->c);
		break;
	case SSEMU_MEV_SW_READY:
		bad = f->a >= r->sw_used || f->b >= r->topo.radix ||
		      pkt_hop_bad(r, f->c);
		break;
	case SSEMU_MEV_SW_OUT_DONE:
		bad = f->a >= r->sw_used || f->b >= r->topo.radix;
		break;
	case SSEMU_MEV_SW_CREDIT:
		bad = f->a >= r->sw_used || (f->b & 0xff) >= r->topo.radix ||
		      (f->b >> 8) >= SSEMU_MAX_VCLASS;
		break;
	case SSEMU_MEV_ACK_TIMER:
	case SSEMU_MEV_RTO:
		bad = f->a >= c->max_nics || f->b >= r->nmsgs;
		break;
	case SSEMU_MEV_FGFC:
		bad = f->a >= c->max_nics || f->b >= c->max_nics;
		break;
	case SSEMU_MEV_RESEND:
		/* (a: the sending NIC's slot, which may have gone since) */
		bad = pkt_bad(r, f->b);
		break;
	default:
		bad = true;
		break;
	}
	return SSEMU_BAD(r, bad, "model event %u (%u, %u, %u): an argument "
			 "is out of range", f->type, f->a, f->b, f->c);
}

void ssemu_model_dispatch(struct ssemu_region *r, const struct ssemu_fired *f)
{
	struct ssemu_switch_sh *s;

	if (event_bad(r, f))
		return;
	switch (f->type) {
	case SSEMU_MEV_NIC_TX_DONE:
		ssemu_r_nic(r, f->a)->done_pending = 0;
		ssemu_model_nic_kick(r, f->a);
		break;
	case SSEMU_MEV_NIC_CREDIT:
		ssemu_r_nic(r, f->a)->credits[f->b] += f->c;
		ssemu_model_nic_kick(r, f->a);
		break;
	case SSEMU_MEV_NIC_ARRIVE:
		nic_arrive(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_SW_READY:
		sw_ready(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_SW_OUT_DONE:
		/* (one overtaken by an earlier look, sw_wake, is not the
		 * one due: it must not start a second chain of looks) */
		s = ssemu_r_switch(r, f->a);
		if (f->time >= s->port[f->b].wake_at)
			s->port[f->b].done_pending = 0;
		sw_try_send(r, f->a, f->b);
		break;
	case SSEMU_MEV_NIC_KICK:
		ssemu_model_nic_kick(r, f->a);
		break;
	case SSEMU_MEV_ACK_TIMER:
		ack_timer(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_FGFC:
		fgfc_arrive(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_RTO:
		rto_fire(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_RESEND:
		resend_fire(r, f->a, f->b, f->c);
		break;
	case SSEMU_MEV_SW_CREDIT:
		s = ssemu_r_switch(r, f->a);
		s->port[f->b & 0xff].vq[f->b >> 8].credits += f->c;
		sw_try_send(r, f->a, f->b & 0xff);
		break;
	default:
		ssemu_log(SSEMU_LOG_WARN, "unknown model event %u", f->type);
		break;
	}
}

#define FIND(table, name)                                     \
	do {                                                  \
		size_t i;                                     \
		for (i = 0; i < ARRAY_SIZE(table); i++)       \
			if (name && !strcmp(table[i].name, name)) \
				return (int)i;                \
		return -1;                                    \
	} while (0)

int ssemu_route_index(const char *name)
{
	FIND(route_ops, name);
}

int ssemu_arb_index(const char *name)
{
	FIND(arb_ops, name);
}

int ssemu_cc_index(const char *name)
{
	FIND(cc_ops, name);
}

/* ------------------------------------------------------------------ */
/* Recovery after an engine runner died                                 */
/* ------------------------------------------------------------------ */

struct rec {
	uint64_t seq;
	uint32_t mi;
};

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * A process died holding the fabric lock, somewhere inside an engine step:
 * the event heap, the packets, the switch queues and credits may be half
 * updated and cannot be trusted.  Messages can: their slots and bookkeeping
 * flags say where each one stands.  So the transient model is rebuilt from
 * scratch, as after a fabric-wide link reset, and the NICs' end-to-end
 * retry takes over: every message not yet delivered is sent again from its
 * first packet, in the order the NICs took them (so ordered streams stay
 * ordered and nothing is lost); messages already delivered complete; event
 * overflow lists are rebuilt.  Model time goes on from where it was.
 * @return 0, or -ENOMEM (then the fabric cannot be trusted any more).
 */
/* Did the event flagged @flag, headed for position @pos of endpoint
 * @epi's event ring, get there? */
static bool pushed(struct ssemu_region *r, struct ssemu_msg *m, uint32_t flag,
		   uint32_t epi, uint32_t pos)
{
	struct ssemu_ring *ring;

	if (!(m->mflags & flag) || epi >= r->neps)
		return false;
	ring = ssemu_r_ring(r, ssemu_r_ep(r, epi)->ev_ring_off);
	return (int32_t)(ssemu_load_acquire(&ring->tail) - pos) > 0;
}

/* Has the receiver got (or finally failed) all of @m? */
static bool delivered(struct ssemu_region *r, struct ssemu_msg *m,
		      uint32_t state)
{
	uint32_t epi;

	if (!m->npkts || m->arrived != m->npkts)
		return false;
	if (state & SSEMU_MSG_RXDONE || m->mflags & SSEMU_MSGF_RXOVF)
		return true;
	if (recv_ep(r, m, &epi))
		return true;	/* nobody left to deliver to */
	return pushed(r, m, SSEMU_MSGF_RXPUSH, epi, m->rx_pos);
}

/*
 * The target side of an RMA operation whose slot the target has not let go
 * of.  Its results cannot be sent again (the response queues are gone);
 * they are in the initiator's buffer already, so it stops waiting for
 * them.  An operation the dead runner was in the middle of may have half
 * changed the memory: it fails (-EIO) rather than run twice.  One done but
 * whose RMA_REMOTE event never got out has it queued again.
 */
static void rma_recover_target(struct ssemu_region *r, struct ssemu_msg *m)
{
	uint32_t epi;

	if ((m->mflags & SSEMU_MSGF_RMABEGIN) &&
	    !(m->mflags & SSEMU_MSGF_RMAEXEC)) {
		m->status = -EIO;
		m->mflags |= SSEMU_MSGF_RMAEXEC;
		m->mflags &= ~(SSEMU_MSGF_RESPQ | SSEMU_MSGF_RXOVF);
	}
	if (!(m->mflags & SSEMU_MSGF_RMAEXEC))
		return;		/* not done: sent again, if at all */
	m->mflags &= ~SSEMU_MSGF_RESPQ;
	m->resp_npkts = SSEMU_MIN(m->resp_npkts, m->resp_arrived);
	if (!m->status && (m->flags & SSEMU_RMA_REMOTE_EVENT) &&
	    !(m->mflags & SSEMU_MSGF_RXOVF) && !recv_ep(r, m, &epi) &&
	    !pushed(r, m, SSEMU_MSGF_RXPUSH, epi, m->rx_pos))
		m->mflags |= SSEMU_MSGF_RXOVF;	/* queued again below */
	rma_rx_done(r, m);
}

int ssemu_model_recover(struct ssemu_region *r)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_engine *e = ssemu_r_engine(r);
	ssemu_time_t now = e->now;
	uint64_t eseq = e->seq, executed = e->executed;
	struct rec *requeue, *rxovf, *txovf, *done;
	uint8_t *in_ring;
	uint32_t nrq = 0, nrx = 0, ntx = 0, ndone = 0, i, k, mi, nic, epi;
	uint32_t tc, nwords = (r->neps + 63) / 64;
	struct ssemu_nic_sh *n;
	struct ssemu_ep_sh *ep;
	struct ssemu_msg *m;
	uint32_t st;

	requeue = calloc(r->nmsgs, sizeof(*requeue));
	rxovf = calloc(r->nmsgs, sizeof(*rxovf));
	txovf = calloc(r->nmsgs, sizeof(*txovf));
	done = calloc(r->nmsgs, sizeof(*done));
	in_ring = calloc(r->nmsgs, 1);
	if (!requeue || !rxovf || !txovf || !done || !in_ring) {
		free(in_ring);
		free(requeue);
		free(rxovf);
		free(txovf);
		free(done);
		return -ENOMEM;
	}

	/* Messages still waiting in tx rings are not the model's yet. */
	for (epi = 0; epi < r->neps; epi++) {
		struct ssemu_ring *ring;
		uint32_t idx, tail, v;

		ep = ssemu_r_ep(r, epi);
		if (!ep->open || ssemu_ep_rings_bad(r, epi))
			continue;
		ring = ssemu_r_ring(r, ep->tx_ring_off);
		tail = ssemu_load_acquire(&ring->tail);
		for (idx = ssemu_load_acquire(&ring->head); idx != tail; idx++) {
			memcpy(&v, ssemu_ring_slot(ring, idx), sizeof(v));
			if (v < r->nmsgs)
				in_ring[v] = 1;
		}
	}

	/* The transient model goes: events, packets, switches, NIC links. */
	ssemu_engine_init(e, c->max_events);
	e->now = now;
	e->seq = eseq;
	e->executed = executed;
	for (i = 0; i < c->max_pkts; i++)
		ssemu_r_pkt(r, i)->next = i + 1 < c->max_pkts ? i + 1 :
								SSEMU_NONE;
	r->pkt_free = 0;
	r->pkts_used = 0;
	r->pkt_waiters = 0;
	memset(ssemu_r_swmap(r), 0xff,
	       (size_t)r->topo.nswitches * sizeof(uint32_t));
	r->sw_used = 0;
	for (nic = 0; nic < c->max_nics; nic++) {
		n = ssemu_r_nic(r, nic);
		n->inj_head = n->inj_tail = SSEMU_NONE;
		n->ack_head = n->ack_tail = SSEMU_NONE;
		n->resp_head = n->resp_tail = SSEMU_NONE;
		n->busy_until = 0;
		n->done_pending = 0;
		n->wait_pkt = 0;
		n->rx_unacked = 0;
		for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++)
			n->credits[tc] = tc < c->ntclass ? buf_cells(c) : 0;
		n->cr_n = 0;
		n->kick_at = 0;
		for (k = 0; k < c->max_nics; k++) {
			struct ssemu_pair *pr = ssemu_r_pair(r, nic, k);

			pr->window = 0;
			pr->cwnd = c->nic_window << 8;
			pr->pause = 0;
			pr->gap = 0;
			pr->slow = 0;
			pr->egq = 0;
			pr->cc_acked = UINT32_MAX / 2;
			pr->path = 0;
		}
	}
	for (epi = 0; epi < r->neps; epi++) {
		ep = ssemu_r_ep(r, epi);
		ep->rx_head = ep->rx_tail = SSEMU_NONE;
		ep->tx_head = ep->tx_tail = SSEMU_NONE;
	}
	memset(ssemu_r_bits(r, r->ovf_off), 0, nwords * sizeof(uint64_t));
	/* a work bit taken by the dead runner must not strand a tx ring */
	memset(ssemu_r_bits(r, r->work_off), 0xff, nwords * sizeof(uint64_t));

	/* Where each message stands. */
	for (mi = 0; mi < r->nmsgs; mi++) {
		m = ssemu_r_msg(r, mi);
		st = ssemu_load_acquire(ssemu_msg_state(r, m));
		if (!(st & SSEMU_MSG_BUSY))
			continue;
		if (m->rma_op && !(st & SSEMU_MSG_RXDONE))
			rma_recover_target(r, m);
		if ((m->mflags & SSEMU_MSGF_RXOVF) && !(st & SSEMU_MSG_RXDONE))
			rxovf[nrx++] = (struct rec){ m->seq, mi };
		if (st & SSEMU_MSG_TXDONE || in_ring[mi] ||
		    !(m->mflags & SSEMU_MSGF_QUEUED))
			continue;	/* done, or still in its tx ring */
		if (m->rma_op && pushed(r, m, SSEMU_MSGF_TXPUSH,
					ssemu_msg_ep(r, mi), m->tx_pos)) {
			/* RMA_DONE is out: the initiator releases it */
		} else if (m->rma_op && (m->mflags & SSEMU_MSGF_RMAEXEC) &&
			   !(m->mflags & SSEMU_MSGF_TXOVF)) {
			/* done at the target, never again: complete it */
			done[ndone++] = (struct rec){ m->seq, mi };
		} else if (pushed(r, m, SSEMU_MSGF_TXPUSH, ssemu_msg_ep(r, mi),
			   m->tx_pos)) {
			/* its completion is out: the runner died just after */
			ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
		} else if (m->mflags & SSEMU_MSGF_TXOVF) {
			txovf[ntx++] = (struct rec){ m->seq, mi };
		} else if (m->status || delivered(r, m, st)) {
			done[ndone++] = (struct rec){ m->seq, mi };
		} else {
			m->sent = m->arrived = m->acked = m->rx_acked = 0;
			m->mflags &= ~SSEMU_MSGF_RTO;
			m->rx_marked = 0;
			m->resp_npkts = m->resp_sent = m->resp_arrived = 0;
			ssemu_tel_retry(r, m->tclass);
			requeue[nrq++] = (struct rec){ m->seq, mi };
		}
		m->mflags &= ~SSEMU_MSGF_TXOVF;
	}
	qsort(requeue, nrq, sizeof(*requeue), rec_cmp);
	qsort(rxovf, nrx, sizeof(*rxovf), rec_cmp);
	qsort(txovf, ntx, sizeof(*txovf), rec_cmp);
	qsort(done, ndone, sizeof(*done), rec_cmp);

	for (k = 0; k < nrq; k++) {
		mi = requeue[k].mi;
		m = ssemu_r_msg(r, mi);
		epi = ssemu_msg_ep(r, mi);
		nic = ssemu_ep_nic(r, epi);
		n = ssemu_r_nic(r, nic);
		if (n->state != SSEMU_NIC_ATTACHED || !ssemu_r_ep(r, epi)->open) {
			ssemu_fetch_or(ssemu_msg_state(r, m),
				       SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
			continue;
		}
		m->next = SSEMU_NONE;
		if (n->inj_head == SSEMU_NONE)
			n->inj_head = mi;
		else
			ssemu_r_msg(r, n->inj_tail)->next = mi;
		n->inj_tail = mi;
	}
	for (k = 0; k < nrx; k++) {
		m = ssemu_r_msg(r, rxovf[k].mi);
		m->mflags &= ~SSEMU_MSGF_RXOVF;
		if (recv_ep(r, m, &epi))
			ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
		else
			recv_event(r, epi, rxovf[k].mi);
	}
	for (k = 0; k < ntx; k++)
		complete_tx(r, txovf[k].mi);
	for (k = 0; k < ndone; k++) {
		m = ssemu_r_msg(r, done[k].mi);
		if (m->status && !m->rma_op)
			ssemu_fetch_or(ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
		complete_tx(r, done[k].mi);
	}
	for (nic = 0; nic < c->max_nics; nic++)
		if (ssemu_r_nic(r, nic)->state == SSEMU_NIC_ATTACHED)
			ssemu_model_nic_kick(r, nic);
	r->recoveries++;
	ssemu_log(SSEMU_LOG_WARN, "recovered the fabric after an engine "
		  "runner died: %u messages sent again, %u completed, %u "
		  "deliveries and %u completions re-queued", nrq, ndone, nrx,
		  ntx);
	free(in_ring);
	free(requeue);
	free(rxovf);
	free(txovf);
	free(done);
	return 0;
}
