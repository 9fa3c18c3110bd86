/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the model's files share: the model clock, the checks of what the
 * model reads from the segment, event scheduling, the packet pool, the
 * policies in force and the calls that cross from one component to
 * another.  Included by the model's files only.
 *
 * The components, from the bottom up (each calls only those below it):
 *	ssemu_invariant.c  the invariants' checks (ssemu_invariant.h)
 *	ssemu_link.h	link timing, the credit-return ring
 *	ssemu_voq.h	virtual output queues
 *	ssemu_arb.c	output arbiters
 *	ssemu_route.c	routing
 *	ssemu_cc.c	congestion control
 *	ssemu_gen.c	modelled jobs: their traffic, counters, the clock's hold
 *	ssemu_msg.c	the engine's side of a message slot
 *	ssemu_rma.c	the RMA target side
 *	ssemu_switch.c	switches
 *	ssemu_nic.c	NICs
 *	ssemu_train.c	packet trains (a NIC's kick hands a lone read's
 *			results to it; it takes the NICs' and switches'
 *			own steps)
 *	ssemu_recover.c	endpoint close, NIC reset, crash recovery
 *	ssemu_model.c	event dispatch
 * The policies (arb, route, cc) see views of the model (ssemu_policy.h),
 * never the region.
 */
#ifndef SSEMU_MODEL_INT_H
#define SSEMU_MODEL_INT_H

#include <errno.h>
#include <string.h>

#include "ssemu_priv.h"
#include "ssemu_policy.h"
#include "ssemu_msg.h"
#include "ssemu_invariant.h"

/* Lossy classes: the source's end-to-end retry timer. */
#define SSEMU_RTO (100 * SSEMU_PS_PER_US)

static inline ssemu_time_t now_of(struct ssemu_region *r)
{
	return ssemu_r_now(r);
}

/*
 * Checks of what the model reads from the segment (ssemu_fail marks the
 * fabric broken; each returns true if what it looked at is bad).
 */

/*
 * A SW_READY event's b: the input the packet came in on and the output
 * its route takes.  The route is decided as the packet arrives, not when
 * it leaves the pipeline: what decides it (the topology and the packet's
 * destination, path and phase) does not change while the packet waits,
 * and the dispatch can then ask for the output's lines an event ahead.
 */
_Static_assert(SSEMU_RADIX <= 256, "a SW_READY event's ports fit 8 bits");

static inline uint32_t ssemu_ready_b(uint32_t in, uint32_t out)
{
	return in | out << 8;
}

static inline uint32_t ssemu_ready_in(uint32_t b)
{
	return b & 0xff;
}

static inline uint32_t ssemu_ready_out(uint32_t b)
{
	return b >> 8;
}

/*
 * Packet @pi as a switch sees it: its index, and the fields a hop uses as
 * an index or a size (all in its first 40 bytes, the line a hop touches
 * anyway).
 */
static inline bool pkt_hop_bad(struct ssemu_region *r, uint32_t pi)
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
SSEMU_HOT
static inline bool pkt_bad(struct ssemu_region *r, uint32_t pi)
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

/* The fields of a message slot the NIC sends it and checks its packets
 * by, read from the slot once: what msg_bad checked is what is used, a
 * write into the segment after the check notwithstanding. */
struct msg_snap {
	uint64_t len;
	uint32_t buf, sent, npkts, tclass;
};

/* Message @mi as the NIC injects it: where its payload lies and what it
 * is sent with, into @s. */
SSEMU_HOT
static inline bool msg_bad(struct ssemu_region *r, uint32_t mi,
			   struct msg_snap *s)
{
	const struct ssemu_config *c = &r->config;
	const struct ssemu_msg *m;
	uint32_t ep = ssemu_msg_ep(r, mi);
	ssemu_addr_t dst;
	uint8_t rma;

	if (SSEMU_BAD(r, mi >= r->nmsgs, "message slot %u of %u", mi,
		      r->nmsgs))
		return true;
	m = ssemu_r_msg(r, mi);
	s->len = ssemu_load_relaxed(&m->len);
	s->buf = ssemu_load_relaxed(&m->buf);
	s->sent = ssemu_load_relaxed(&m->sent);
	s->npkts = ssemu_load_relaxed(&m->npkts);
	s->tclass = ssemu_load_relaxed(&m->tclass);
	dst = ssemu_load_relaxed(&m->dst);
	rma = ssemu_load_relaxed(&m->rma_op);
	return SSEMU_BAD(r, s->tclass >= c->ntclass ||
			 SSEMU_ADDR_PORT(dst) >= r->topo.nendpoints ||
			 SSEMU_ADDR_PID(dst) >= c->eps_per_nic ||
			 (s->buf != SSEMU_NONE &&
			  s->buf / SSEMU_MAX(c->bufs_per_ep, 1u) != ep) ||
			 s->len > (s->buf != SSEMU_NONE ? c->buf_size :
				   ep < r->gen_neps ? SSEMU_GEN_MAX_SIZE :
						      SSEMU_INLINE_MAX) ||
			 s->sent > s->npkts ||
			 (!rma && s->npkts != (s->len ?
				(s->len + c->mtu - 1) / c->mtu : 1)),
			 "message slot %u: a field is out of range (class %u, "
			 "to port %u, buffer %u, %llu bytes in %u packets)", mi,
			 s->tclass, SSEMU_ADDR_PORT(dst), s->buf,
			 (unsigned long long)s->len, s->npkts);
}

/* The payload of message @m (checked by msg_bad into @s) from byte @off
 * on. */
static inline const uint8_t *msg_payload(struct ssemu_region *r,
					 const struct ssemu_msg *m,
					 const struct msg_snap *s,
					 uint64_t off)
{
	return (s->buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, s->buf)) +
	       off;
}

/*
 * Packet @p's identity: who made it, its number there and its trip, not
 * where it lies in the pool.  The same packet has the same identity
 * however the events before it were ordered.
 */
static inline uint64_t pkt_uid_of(uint32_t src_port, uint32_t seq,
				  uint16_t trip)
{
	return ((uint64_t)src_port << 32 | seq) ^ ((uint64_t)trip << 56);
}

static inline uint64_t pkt_uid(const struct ssemu_pkt *p)
{
	return pkt_uid_of(p->src_port, p->seq, p->trip);
}

/*
 * Output @op of switch @s sent a packet of @bytes on VNI @vni: counted in
 * the port's line, which the send writes anyway (the switch's per-VNI table
 * takes the count when the port's VNI changes or the count is full,
 * ssemu_auth_port_turn; ssemu_switch_vni_stats adds what the ports hold).
 */
static inline void ssemu_auth_port_count(struct ssemu_switch_sh *s,
					 struct ssemu_swport *op, uint16_t vni,
					 uint32_t bytes)
{
	struct ssemu_vni_acc *a = &op->vacc;

	if (likely(a->vni == vni && a->pkts && a->pkts < UINT16_MAX &&
		   bytes <= UINT32_MAX - a->bytes)) {
		a->pkts++;
		a->bytes += bytes;
		return;
	}
	ssemu_auth_port_turn(s, op, vni, bytes);
}

/* Payload bytes of the packet starting at byte @done of @len. */
static inline uint32_t pkt_chunk(uint64_t len, uint64_t done, uint32_t mtu)
{
	return len > done ? (uint32_t)SSEMU_MIN((uint64_t)mtu, len - done) : 0;
}

/*
 * The order of model events at equal times, by what they are: their kind
 * first (credits, then arrivals, then outputs and injection, then timers),
 * then a mix of their entity (the NIC or switch and port: 28 bits), then a
 * mix of the rest, with a packet named by its identity (pkt_uid), never by
 * its pool index.  A switch input's packets whose pipeline ends at the same
 * time leave it in the order they arrived (the one that waited longer
 * first), as the pipeline is FIFO.  No part of the key depends on when an
 * event was scheduled or how many others were, so the model's results do
 * not either (tests/unit/test_order.c).
 */
static inline uint64_t ev_key(struct ssemu_region *r, ssemu_time_t t,
			      uint32_t type, uint32_t a, uint32_t b,
			      uint32_t c)
{
	static const uint8_t prio[SSEMU_MEV_MAX] = {
		[SSEMU_MEV_SW_CREDIT] = 1,
		[SSEMU_MEV_NIC_CREDIT] = 2,
		[SSEMU_MEV_NIC_ARRIVE] = 3,
		[SSEMU_MEV_SW_READY] = 4,
		[SSEMU_MEV_SW_OUT_DONE] = 5,
		[SSEMU_MEV_NIC_TX_DONE] = 6,
		[SSEMU_MEV_NIC_KICK] = 7,
		[SSEMU_MEV_FGFC] = 8,
		[SSEMU_MEV_ACK_TIMER] = 9,
		[SSEMU_MEV_RTO] = 10,
		[SSEMU_MEV_RESEND] = 11,
		[SSEMU_MEV_GEN] = 12,
		[SSEMU_MEV_POST] = 13,
	};
	const struct ssemu_pkt *p;
	uint64_t h, x = c, low, wait;

	/* A message posted for a later time enters its NIC after everything
	 * else at that time, as a post between two runs does, and the posts
	 * of one time in the order of their slots, which is their
	 * endpoints' (the order the runner takes tx rings in). */
	if (type == SSEMU_MEV_POST)
		return (uint64_t)prio[type] << 60 | b;
	if (type == SSEMU_MEV_SW_READY) {
		/* entity: the input; then the earlier arrival */
		x = ssemu_ready_in(b);
	} else if (type == SSEMU_MEV_NIC_ARRIVE) {
		/* (the packet's pool index is no part of it: below, its
		 * identity is) */
		x = 0;
	}
	/* (a switch by its place in the topology, not by its model's index,
	 * which follows the order switches are first used in) */
	if ((type == SSEMU_MEV_SW_READY || type == SSEMU_MEV_SW_OUT_DONE ||
	     type == SSEMU_MEV_SW_CREDIT) && a < r->sw_used)
		a = ssemu_sw_id(r, a);
	h = ssemu_rng_mix64(((uint64_t)type << 32 | a) ^ x << 48 ^
			    0x9e3779b97f4a7c15ULL);
	/* (an index out of range stays as it is: the handler finds it) */
	if (type == SSEMU_MEV_SW_READY && c < r->config.max_pkts) {
		p = ssemu_r_pkt(r, c);
		wait = t >= p->sw_arrive ? t - p->sw_arrive : 0;
		low = UINT32_MAX - SSEMU_MIN(wait, (uint64_t)UINT32_MAX);
	} else {
		x = (uint64_t)b << 32 | c;
		if (type == SSEMU_MEV_NIC_ARRIVE && c < r->config.max_pkts)
			x = (uint64_t)b << 32 ^ pkt_uid(ssemu_r_pkt(r, c));
		else if (type == SSEMU_MEV_RESEND && b < r->config.max_pkts)
			x = (uint64_t)c << 32 ^ pkt_uid(ssemu_r_pkt(r, b));
		low = ssemu_rng_mix64(h ^ x) >> 32;
	}
	return (uint64_t)(type < SSEMU_MEV_MAX ? prio[type] : 15) << 60 |
	       (h >> 36) << 32 | low;
}

/*
 * A test's check that the model's results do not depend on the order in
 * which it schedules its events (tests/unit/test_order.c): while
 * ssemu_model_perturb is set, the events each handler schedules are held
 * and go to the engine in the reverse order once it returns (ssemu_model.c).
 * Never set outside tests.
 */
extern uint32_t ssemu_model_perturb;
extern uint32_t ssemu_model_deferring;
/*
 * And that they do not depend on how a credit comes back: while
 * ssemu_model_credit_events is set, every credit returned comes as an
 * event (SW_CREDIT, NIC_CREDIT) rather than waiting in its owner's credit
 * ring, as when the ring is full (tests/unit/test_order.c).  Never set
 * outside tests.
 */
extern uint32_t ssemu_model_credit_events;
/*
 * Nor on looks that find nothing to do: while ssemu_model_extra_looks is
 * set, every arrival at a switch's queues asks for a look at an output of
 * that switch a nanosecond later, and every arrival at a NIC for a kick of
 * it (tests/unit/test_order.c).  Never set outside tests.
 */
extern uint32_t ssemu_model_extra_looks;
/*
 * Nor on where its packets and VOQ rows lie in their pools: while
 * ssemu_model_fresh_places is set, they are taken from the never-used
 * ones while there are any, not the freed ones first
 * (tests/unit/test_order.c).  Never set outside tests.
 */
extern uint32_t ssemu_model_fresh_places;
/*
 * Nor on the shortcuts of a switch output's only candidate: a packet that
 * finds its output free with nothing queued is sent at once, without the
 * VOQs (sw_ready), and an output with one packet queued takes it without
 * the arbitration's search (sw_try_send).  While ssemu_model_shortcut is
 * SSEMU_SHORTCUT_OFF, every packet goes through the VOQs and every send
 * through the search; while it is SSEMU_SHORTCUT_COUNT, the sends that
 * take a shortcut are counted in ssemu_model_shortcuts
 * (tests/unit/test_order.c).  Never set outside tests.
 */
enum { SSEMU_SHORTCUT_ON, SSEMU_SHORTCUT_OFF, SSEMU_SHORTCUT_COUNT };
extern uint32_t ssemu_model_shortcut;
extern uint64_t ssemu_model_shortcuts;
void ssemu_model_defer(struct ssemu_region *r, ssemu_time_t t, uint64_t key,
		       uint32_t type, uint32_t a, uint32_t b, uint32_t c);
/* The fabric is broken: an event the model needs could not be had. */
void schedule_failed(struct ssemu_region *r, int ret);
/*
 * A send train's step (ssemu_train_send.c) runs the NICs' own handlers,
 * and the events they schedule go to it rather than to the engine: while
 * ssemu_model_capture is set (with ssemu_model_deferring), each event the
 * model schedules on fabric @r goes to its take.  One train at a time in
 * a process; another thread's fabric schedules as ever meanwhile.
 */
struct ssemu_capture {
	const struct ssemu_region *r;
	void (*take)(struct ssemu_capture *cap, ssemu_time_t t, uint64_t key,
		     uint32_t type, uint32_t a, uint32_t b, uint32_t c);
};
extern struct ssemu_capture *ssemu_model_capture;
/* Event @f's handler, run now, outside the engine (its arguments checked
 * as the engine's dispatch checks them). */
void ssemu_model_handle(struct ssemu_region *r, const struct ssemu_fired *f);

/* Group windows: event @t, @type, @a's time as the engine holds it, or
 * UINT64_MAX with the fabric failed (the event would fall in a window its
 * group has run: the groups are not independent over a window). */
ssemu_time_t gw_schedule_time(struct ssemu_region *r, ssemu_time_t t,
			      uint32_t type, uint32_t a);
/* Would it take event @t, @type, @a (the fabric left as it is)? */
bool gw_schedulable(struct ssemu_region *r, ssemu_time_t t, uint32_t type,
		    uint32_t a);
/* ssemu_nic.c: a message posted for a later time enters its NIC */
void ssemu_model_post_fire(struct ssemu_region *r, uint32_t nic, uint32_t mi,
			   uint32_t gen);

/* Event @type (enum ssemu_model_ev) with arguments @a, @b, @c at @t. */
static inline void schedule(struct ssemu_region *r, ssemu_time_t t,
			    uint32_t type, uint32_t a, uint32_t b, uint32_t c)
{
	struct ssemu_engine *e = ssemu_r_engine(r);
	uint64_t key;
	int ret;

	if (SSEMU_BAD(r, !ssemu_engine_cap_ok(e, r->config.max_events),
		      "the event engine's size changed"))
		return;
	key = ev_key(r, t, type, a, b, c);
	if (__builtin_expect(r->config.group_windows, 0)) {
		t = gw_schedule_time(r, t, type, a);
		if (t == UINT64_MAX)
			return;
	}
	if (__builtin_expect(ssemu_load_relaxed(&ssemu_model_deferring), 0)) {
		ssemu_model_defer(r, t, key, type, a, b, c);
		return;
	}
	ret = ssemu_engine_schedule_key(e, t, key, type, a, b, c, NULL);
	if (ret)
		schedule_failed(r, ret);
}

/*
 * The packet pool: the freed packets, a list through their next links,
 * then the never-used ones from the high-water mark up.  Freed first, most
 * recently freed first: the order a list made of the whole pool at the
 * start (0, 1, 2, ...) hands them out in, without a write to a packet
 * before its first use.
 */
static inline uint32_t pkt_alloc(struct ssemu_region *r)
{
	uint32_t i = r->pkt_free, hwm = r->pkt_hwm;

	if (SSEMU_BAD(r, hwm > r->config.max_pkts, "the packet pool's "
		      "high-water mark is %u of %u packets", hwm,
		      r->config.max_pkts))
		return SSEMU_NONE;
	if (i == SSEMU_NONE || unlikely(ssemu_model_fresh_places &&
					hwm < r->config.max_pkts)) {
		if (hwm < r->config.max_pkts) {
			r->pkt_hwm = hwm + 1;
			r->pkts_used++;
			return hwm;
		}
		/* (an empty pool with packets unaccounted for: the list is
		 * cut) */
		return SSEMU_BAD(r, r->pkts_used < r->config.max_pkts,
				 "the free packet list is empty with %u of %u "
				 "packets in use", r->pkts_used,
				 r->config.max_pkts), SSEMU_NONE;
	}
	/* (a freed packet is below the mark, and so is what it links to) */
	if (SSEMU_BAD(r, i >= hwm, "the free packet list: packet %u, the "
		      "high-water mark is %u", i, hwm))
		return SSEMU_NONE;
	if (SSEMU_BAD(r, ssemu_r_pkt(r, i)->next != SSEMU_NONE &&
			 ssemu_r_pkt(r, i)->next >= hwm,
		      "the free packet list: packet %u links to %u, the "
		      "high-water mark is %u", i, ssemu_r_pkt(r, i)->next,
		      hwm))
		return SSEMU_NONE;
	r->pkt_free = ssemu_r_pkt(r, i)->next;
	r->pkts_used++;
	return i;
}

SSEMU_HOT
static inline void pkt_free(struct ssemu_region *r, uint32_t i)
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

/* The policies in force (their registries: ssemu_route.c, ssemu_arb.c,
 * ssemu_cc.c; the indices are checked when the fabric is attached). */
static inline const struct ssemu_route_ops *model_route(struct ssemu_region *r)
{
	return &ssemu_route_table[r->route_idx];
}

static inline const struct ssemu_arb_ops *model_arb(struct ssemu_region *r)
{
	return &ssemu_arb_table[r->arb_idx];
}

static inline const struct ssemu_cc_ops *model_cc(struct ssemu_region *r)
{
	return &ssemu_cc_table[r->cc_idx];
}

/* NIC queues (ssemu_nic.c; a reset or recovery empties them) */
/* Packet @pi joins NIC @nic's (@n) acknowledgement queue, whose packets
 * go first: false if the queue is found bad. */
static inline bool ackq_push(struct ssemu_region *r, struct ssemu_nic_sh *n,
			     uint32_t nic, uint32_t pi)
{
	ssemu_r_pkt(r, pi)->next = SSEMU_NONE;
	if (n->ack_head == SSEMU_NONE)
		n->ack_head = pi;
	else if (SSEMU_BAD(r, n->ack_tail >= r->config.max_pkts,
			   "NIC %u: ack queue tail %u", nic, n->ack_tail))
		return false;
	else
		ssemu_r_pkt(r, n->ack_tail)->next = pi;
	n->ack_tail = pi;
	return true;
}

/* Message @mi joins the end of NIC @nic's (@n) injection queue: false if
 * the queue is found bad. */
static inline bool injq_push(struct ssemu_region *r, struct ssemu_nic_sh *n,
			     uint32_t nic, uint32_t mi)
{
	ssemu_r_msg(r, mi)->next = SSEMU_NONE;
	if (n->inj_head == SSEMU_NONE)
		n->inj_head = mi;
	else if (SSEMU_BAD(r, n->inj_tail >= r->nmsgs, "NIC %u: injection "
			   "queue tail %u", nic, n->inj_tail))
		return false;
	else
		ssemu_r_msg(r, n->inj_tail)->next = mi;
	n->inj_tail = mi;
	return true;
}

/* Message @mi leaves @n's injection queue, between @prev (NONE: it was
 * the head) and @next. */
static inline void injq_unlink(struct ssemu_region *r, struct ssemu_nic_sh *n,
			       uint32_t prev, uint32_t mi, uint32_t next)
{
	if (prev == SSEMU_NONE)
		n->inj_head = next;
	else
		ssemu_r_msg(r, prev)->next = next;
	if (n->inj_tail == mi)
		n->inj_tail = prev;
}

/* ssemu_switch.c */
/* The model of switch @sw (its index in *@inst), made on first use; NULL
 * if there is no room for it. */
struct ssemu_switch_sh *sw_get(struct ssemu_region *r, uint32_t sw,
			       uint32_t *inst);
void arrive_at_switch(struct ssemu_region *r, uint32_t inst, uint32_t in,
		      uint32_t pi, ssemu_time_t t);
void sw_ready(struct ssemu_region *r, uint32_t inst, uint32_t in,
	      uint32_t out, uint32_t pi);
ssemu_time_t sw_pipeline(struct ssemu_region *r, uint32_t sw, uint64_t uid,
			 uint32_t vc);
/* Port @p of switch @sw as a new model has it (@op zeroed before). */
void sw_port_init(struct ssemu_region *r, uint32_t sw, uint32_t p,
		  struct ssemu_swport *op);
void sw_try_send(struct ssemu_region *r, uint32_t inst, uint32_t out);
void lose_pkt(struct ssemu_region *r, uint32_t pi, int32_t status);
/* What adaptive routing at switch @s sees (struct ssemu_route_view). */
uint32_t sw_port_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
		      uint32_t port, uint32_t tc);
uint32_t sw_nb_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
		    uint32_t port, uint64_t target, uint16_t copy, uint32_t tc);

/* ssemu_rma.c */
bool rma_deliver(struct ssemu_region *r, uint32_t mi, uint32_t epi);
/* rma_execute: the engine's process may not touch the memory (EPERM) */
#define SSEMU_RMA_PARK 1

/* ssemu_xuid.c: RMA requests done by the target memory's owner */
bool ssemu_xuid_may_cma(struct ssemu_region *r, uint32_t nic);
void ssemu_xuid_park(struct ssemu_region *r, uint32_t pi);
/* ssemu_nic.c: a parked request's last packet, back at its NIC */
void nic_rma_resume(struct ssemu_region *r, uint32_t pi);

/* ssemu_nic.c (and ssemu_model_nic_kick, ssemu_model_enqueue_msg) */
void nic_arrive(struct ssemu_region *r, uint32_t nic, uint32_t direct,
		uint32_t pi);
void nic_ack_timer(struct ssemu_region *r, uint32_t nic, uint32_t mi,
		   uint32_t gen);
void nic_rto_fire(struct ssemu_region *r, uint32_t nic, uint32_t mi,
		  uint32_t gen);
void nic_resend_fire(struct ssemu_region *r, uint32_t nic, uint32_t pi,
		     uint32_t gen);
void nic_fgfc_arrive(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
		     uint32_t arg);
/* Packet @pi of message @mi, made by NIC @n at endpoint port @src, to
 * @dst, VC 0, with @payload bytes. */
struct ssemu_pkt *pkt_init(struct ssemu_region *r, uint32_t pi,
			   struct ssemu_nic_sh *n, uint8_t type, uint32_t mi,
			   uint32_t src, uint32_t dst, uint32_t payload);
uint32_t nic_next_resp(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_pair *pr);

/* ssemu_train.c: the results @nic has queued as a packet train, if the
 * fabric allows one now (ssemu_model.h). */
bool ssemu_train_resp(struct ssemu_region *r, uint32_t nic);
/* ssemu_train_send.c: the rest of the message whose first packet @nic
 * has sent, with its acknowledgements, as a packet train, if the fabric
 * allows one now. */
bool ssemu_train_send(struct ssemu_region *r, uint32_t nic);

#endif
