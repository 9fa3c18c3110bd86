/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Links: their timing (serialisation in cells and bytes), the virtual
 * channel a packet takes on the far side of a port, and the credit return
 * path -- one ring of credits on their way back, kept by every switch
 * output and every NIC, that settles when its owner next looks and costs
 * no event.
 */
#ifndef SSEMU_LINK_H
#define SSEMU_LINK_H

#include <assert.h>

#include "ssemu_model_int.h"

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

static inline const struct ssemu_link_params *link_of(struct ssemu_region *r,
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
 * A credit-return ring: credits on their way back from downstream, oldest
 * first (one link delay each, so in time order).  They count from their
 * time on, settled when the owner next looks (cr_settle).  A switch
 * output keeps one, by vclass (cr_of_port), a NIC one, by class
 * (cr_of_nic): the view below is of either.
 */
struct ssemu_cr {
	ssemu_time_t *time;
	uint8_t *key;		/* the vclass or class credited */
	uint16_t *cells;	/* credit returned, in cells */
	uint8_t *head, *n;
	uint32_t *credits;	/* key k's counter: credits[k * stride] */
	uint32_t stride, nkeys;
	const char *what;	/* whose ring, for a bad one's message */
};

static inline struct ssemu_cr cr_of_port(const struct ssemu_region *r,
					struct ssemu_swport *op)
{
	static_assert(sizeof(op->vq[0]) % sizeof(uint32_t) == 0,
		      "a VOQ entry is whole 32-bit words");
	return (struct ssemu_cr){
		.time = op->cr_time, .key = op->cr_vcl, .cells = op->cr_cells,
		.head = &op->cr_head, .n = &op->cr_n,
		.credits = &op->vq[0].credits,
		.stride = sizeof(op->vq[0]) / sizeof(uint32_t),
		.nkeys = r->config.ntclass * SSEMU_NVC,
		.what = "a switch output",
	};
}

static inline struct ssemu_cr cr_of_nic(struct ssemu_nic_sh *n)
{
	return (struct ssemu_cr){
		.time = n->cr_time, .key = n->cr_tc, .cells = n->cr_cells,
		.head = &n->cr_head, .n = &n->cr_n, .credits = n->credits,
		.stride = 1, .nkeys = SSEMU_MAX_TCLASS, .what = "a NIC",
	};
}

/* The credits of @c that have reached its owner by @now count now. */
static inline void cr_settle(struct ssemu_region *r, const struct ssemu_cr *c,
			     ssemu_time_t now)
{
	uint32_t head = *c->head, n = *c->n, k;

	if (SSEMU_BAD(r, n > SSEMU_CR_RING || head >= SSEMU_CR_RING,
		      "%s's credit ring: %u from %u", c->what, n, head))
		return;
	while (n && c->time[head] <= now) {
		k = c->key[head];
		if (SSEMU_BAD(r, k >= c->nkeys, "%s: a credit for vclass or "
			      "class %u", c->what, k))
			break;
		c->credits[k * c->stride] += c->cells[head];
		head = (head + 1) % SSEMU_CR_RING;
		n--;
	}
	*c->head = (uint8_t)head;
	*c->n = (uint8_t)n;
}

/* Queue @cells of credit for @key, due at @t: false if it cannot wait in
 * the ring (full, or due before the last one), and takes an event. */
static inline bool cr_put(const struct ssemu_cr *c, uint32_t key,
			  uint32_t cells, ssemu_time_t t)
{
	uint32_t n = *c->n, i = (*c->head + n) % SSEMU_CR_RING;

	if (n >= SSEMU_CR_RING || key >= c->nkeys ||
	    (n && c->time[(i + SSEMU_CR_RING - 1) % SSEMU_CR_RING] > t))
		return false;
	c->time[i] = t;
	c->key[i] = (uint8_t)key;
	c->cells[i] = (uint16_t)cells;
	*c->n = (uint8_t)(n + 1);
	return true;
}

/* Are credits on their way (then *@t: when the first is in)? */
static inline bool cr_pending(const struct ssemu_cr *c, ssemu_time_t *t)
{
	if (!*c->n || *c->head >= SSEMU_CR_RING)
		return false;
	*t = c->time[*c->head];
	return true;
}

static inline void cr_clear(const struct ssemu_cr *c)
{
	*c->n = 0;
}

/*
 * Output @out of switch model @inst looks again at @t (OUT_DONE), unless
 * it is due to look by then anyway.  An earlier look than the one due
 * takes a second event: a credit on its way must not wait for a cap.
 */
SSEMU_HOT
static inline void sw_wake(struct ssemu_region *r, uint32_t inst,
			   uint32_t out, ssemu_time_t t)
{
	struct ssemu_swport *op = ssemu_r_port(r, inst, out);

	if (op->done_pending && op->wake_at <= t)
		return;
	op->done_pending = 1;
	op->wake_at = t;
	schedule(r, t, SSEMU_MEV_SW_OUT_DONE, inst, out, 0);
}

/*
 * A credit for @vcl of the buffer downstream of output @port of switch
 * model @inst reaches it at @t.  It waits in the output's ring and counts
 * from @t on (cr_settle), so it costs no event unless packets wait
 * there with nobody due to look by then: then the output looks at @t.  A
 * full ring (or a return out of order) takes the event instead.
 */
static inline void credit_to_switch(struct ssemu_region *r, uint32_t inst,
				    uint32_t port, uint32_t vcl,
				    uint32_t cells, ssemu_time_t t)
{
	struct ssemu_swport *op = ssemu_r_port(r, inst, port);
	struct ssemu_cr cr = cr_of_port(r, op);

	if (unlikely(ssemu_model_credit_events) ||
	    !cr_put(&cr, vcl, cells, t)) {
		schedule(r, t, SSEMU_MEV_SW_CREDIT, inst, port | vcl << 8,
			 cells);
		return;
	}
	/* (a busy output looks when the link is free) */
	if (op->nqueued && op->busy_until <= t)
		sw_wake(r, inst, port, t);
}

/* NIC @nic looks for a packet to send at @t (NIC_KICK), unless a look for
 * a credit is due by then. */
static inline void nic_wake(struct ssemu_region *r, uint32_t nic,
			    ssemu_time_t t)
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
static inline void credit_to_nic(struct ssemu_region *r, uint32_t nic,
				 uint32_t tc, uint32_t cells, ssemu_time_t t)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_cr cr = cr_of_nic(n);

	if (unlikely(ssemu_model_credit_events) ||
	    !cr_put(&cr, tc, cells, t)) {
		schedule(r, t, SSEMU_MEV_NIC_CREDIT, nic, tc, cells);
		return;
	}
	if (n->busy_until <= t && nic_has_work(n))
		nic_wake(r, nic, t);
}

#endif
