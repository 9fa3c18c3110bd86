/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet trains for a send: the data packets of a lone message and their
 * acknowledgements, taken through the fabric in one step instead of one
 * event per packet per hop, when nothing else is in the fabric to meet
 * them.
 *
 * It forms where the per-packet model's source NIC is about to send the
 * message's second packet (the first one's TX_DONE), when the engine holds
 * one event alone: the first packet's arrival at its edge switch, which
 * the train takes over.  Two legs (ssemu_train_int.h): the data, from the
 * source NIC through the switches to the destination, and the
 * acknowledgements, from the destination back to the source.
 *
 *  1. The plan, without a write, both ends in model time: the data's
 *     sends (when the link is free and the window open, else when the
 *     acknowledgement that opens it is in; the one that fills it asks for
 *     an acknowledgement at once) and their times at every hop; from
 *     their arrivals, the acknowledgements the destination makes (at the
 *     last packet, when asked, at every SSEMU_ACK_EVERY, and by the
 *     SSEMU_ACK_DELAY timer after the first one not acknowledged), their
 *     sends and their times back at the source, where congestion control
 *     takes them in (on a copy of the pair).  Then the checks that
 *     nothing holds a packet back or does other than the lone stream's
 *     packets do: the credits of every ring on both legs, the packet
 *     pool, the destination's edge queue below congestion control's
 *     threshold (no frame, no mark), minimal routing, a lossless class
 *     without a cap, the run's limit past the last arrival.  A check that
 *     fails: no train, the per-packet model goes on as ever.
 *  2. The step: at the NICs, the model's own handlers (the source's
 *     sends, the destination's arrivals and acknowledgements, the timer,
 *     the source's arrivals of acknowledgements and its completion), with
 *     the events they schedule taken by the train rather than the engine
 *     (ssemu_model_capture): a packet's arrival at its first switch is
 *     the plan's to carry from there (its time checked against the plan),
 *     the NICs' looks and the timers run at their times among the
 *     switches' actions.  In the switches, the legs' actions as a read's
 *     train takes them (ssemu_train.c), in the engine's order by time and
 *     kind.  Events still due when the last packet is in (timers that will
 *     find nothing to acknowledge, a NIC's look) go to the engine.
 *
 * Times, completions, counters, telemetry and the state left behind are
 * those of the per-packet model (tests/unit/test_train.c runs both and
 * compares them byte for byte); the engine runs no event for the train's
 * packets.
 */
#include <stddef.h>
#include <stdlib.h>

#include "ssemu_train_int.h"

uint64_t ssemu_model_trains_sent;

/* Room for the events the NICs have scheduled and the step not yet run
 * (looks, timers, credits with no room in their rings: a few), at first;
 * it grows. */
#define CAP_FIRST 64
#define CAP_KEEP 1024
#define CAP_NONE UINT32_MAX

struct strain {
	struct ssemu_capture cap;	/* (first: take finds the train) */
	struct ssemu_region *r;
	struct train d, a;		/* the data; the acknowledgements */
	uint32_t nic, inic, mi;
	struct ends *ends;		/* the plan's two ends */
	ssemu_time_t *made;		/* when each acknowledgement is made */
	uint32_t *count;		/* ... and the packets it covers */
	uint32_t ntimed;		/* ... made by a timer */
	struct cap_ev {
		ssemu_time_t t;
		uint64_t key;
		uint32_t type, a, b, c;
	} *ev;
	uint32_t nev, cap_ev;
	const char *bad;		/* what the step met off the plan */
	/* memory kept from one train to the next: the plan's per packet
	 * arrays (made, count, the ends' timer and ack_req), each leg's
	 * rows */
	struct train_buf mem, dmem, amem;
};

/* ------------------------------------------------------------------ */
/* Pass 1: the plan                                                    */
/* ------------------------------------------------------------------ */

/* A leg's recurrence as its packets are planned one by one: its NIC's
 * link, and each hop's input pipeline (FIFO) and output. */
struct leg_run {
	ssemu_time_t nic_free;
	ssemu_time_t last_ready[TRAIN_HOPS], free_at[TRAIN_HOPS];
	const struct ssemu_swport *eport;	/* the edge link, as its
						 * switch's end has it */
	struct ssemu_swport_img img;
	uint32_t sport, seq0;			/* the packets' identities */
};

/* @lr for leg @tr, whose NIC is at @sport and numbers its next packet
 * @seq0, its link free from @free0. */
static void leg_run_init(const struct train *tr, struct leg_run *lr,
			 uint32_t sport, uint32_t seq0, ssemu_time_t free0)
{
	const struct train_hop *h0 = &tr->hop[0];
	uint32_t h;

	if (h0->s) {
		lr->eport = ssemu_sw_port(tr->r, h0->s, h0->in);
	} else {
		memset(&lr->img, 0, sizeof(lr->img));
		sw_port_init(tr->r, h0->sw, h0->in, &lr->img.port);
		lr->eport = &lr->img.port;
	}
	for (h = 0; h < tr->nhops; h++) {
		lr->last_ready[h] = tr->hop[h].last_ready;
		lr->free_at[h] = tr->hop[h].op->busy_until;
	}
	lr->nic_free = free0;
	lr->sport = sport;
	lr->seq0 = seq0;
}

/*
 * Packet @k's times at its NIC and every hop of leg @tr: the NIC sends
 * it when its link is free, not before @at.  A packet before tr->first
 * was sent before the plan: its arrival and pipeline at hop 0 are given
 * in its row.  Returns its arrival at the leg's end.
 */
static ssemu_time_t leg_pkt(struct train *tr, struct leg_run *lr,
			    uint32_t k, ssemu_time_t at)
{
	struct ssemu_region *r = tr->r;
	uint64_t uid = pkt_uid_of(lr->sport, lr->seq0 + k, 0);
	ssemu_time_t ser, rdy;
	uint32_t h, vc = 0;

	if (k < tr->first) {
		at = *T(tr, k, T_ARR(0));
	} else {
		at = SSEMU_MAX(at, lr->nic_free);
		*T(tr, k, T_INJ) = at;
		lr->nic_free = at + port_ser_time(r, lr->eport, tr->hop[0].in,
						  tr->bytes[k]);
		at = lr->nic_free + r->config.edge.delay;
	}
	for (h = 0; h < tr->nhops; h++) {
		const struct train_hop *hp = &tr->hop[h];

		*T(tr, k, T_ARR(h)) = at;
		if (k < tr->first && !h) {
			rdy = *T(tr, k, T_READY(0));
		} else {
			rdy = at + sw_pipeline(r, hp->sw, uid, vc);
			rdy = SSEMU_MAX(rdy, lr->last_ready[h]);
		}
		lr->last_ready[h] = rdy;
		*T(tr, k, T_READY(h)) = rdy;
		at = SSEMU_MAX(rdy, lr->free_at[h]);
		*T(tr, k, T_DEP(h)) = at;
		ser = port_ser_time(r, hp->op, hp->out, tr->bytes[k]);
		lr->free_at[h] = at + ser;
		at += ser + hp->op->delay;
		vc = hp->dvcl % SSEMU_NVC;
	}
	*T(tr, k, T_FIN) = at;
	return at;
}

/*
 * The two ends of a send as the plan goes, in model time: the
 * destination making acknowledgements of the data's arrivals (as
 * nic_arrive and nic_ack_timer make them), the source taking them in
 * (its window, and congestion control's, on a copy of the pair).
 */
struct ends {
	/* the destination */
	ssemu_time_t *timer;		/* timers started (their times) */
	uint32_t nt, th;		/* started, fired */
	uint32_t nd;			/* data arrivals taken */
	uint32_t arrived, acked;
	uint8_t *ack_req;		/* each data packet asked for one */
	uint32_t na, ntimed;		/* acknowledgements made; by a timer */
	/* the source */
	uint32_t nin, back;		/* acknowledgements in; packets */
	struct ssemu_pair pc;		/* the pair as they come in */
	uint32_t allowed;		/* the window it allows now */
	/* (last: leg_run_init sets them, and the rest is cleared) */
	struct leg_run dr, ar;		/* the data's leg, the acks' */
};

/* The destination's next event among the data arrivals of packets
 * [e->nd, @ndata) and its timers (UINT64_MAX: none). */
static ssemu_time_t dest_next(const struct strain *st, const struct ends *e,
			      uint32_t ndata)
{
	ssemu_time_t at = e->nd < ndata ? *T(&st->d, e->nd, T_FIN) :
					  UINT64_MAX;

	return e->th < e->nt && e->timer[e->th] < at ? e->timer[e->th] : at;
}

/* The destination makes an acknowledgement of @count packets at @at; its
 * times back to the source. */
static void dest_ack(struct strain *st, struct ends *e, ssemu_time_t at,
		     uint32_t count, bool timed)
{
	st->made[e->na] = at;
	st->count[e->na] = count;
	leg_pkt(&st->a, &e->ar, e->na++, at);
	e->ntimed += timed;
}

/*
 * The destination's next event: a timer due before the next arrival (an
 * arrival at the timer's instant first) acknowledges what is not; an
 * arrival is acknowledged at once if it is the last, asked for one, or
 * makes SSEMU_ACK_EVERY not acknowledged, else the first of those starts
 * the SSEMU_ACK_DELAY timer.  (The plan has no packet marked.)
 */
static void dest_step(struct strain *st, struct ends *e, uint32_t ndata)
{
	ssemu_time_t at = e->nd < ndata ? *T(&st->d, e->nd, T_FIN) :
					  UINT64_MAX;
	uint32_t k;

	if (e->th < e->nt && e->timer[e->th] < at) {
		at = e->timer[e->th++];
		if (e->arrived > e->acked) {
			dest_ack(st, e, at, e->arrived - e->acked, true);
			e->acked = e->arrived;
		}
		return;
	}
	k = e->nd++;
	e->arrived++;
	if (e->arrived < st->d.npkts && !e->ack_req[k] &&
	    e->arrived - e->acked < SSEMU_ACK_EVERY) {
		if (e->arrived - e->acked == 1)
			e->timer[e->nt++] = at + SSEMU_ACK_DELAY;
		return;
	}
	dest_ack(st, e, at, e->arrived - e->acked, false);
	e->acked = e->arrived;
}

/* The source takes the next acknowledgement in: its window closes
 * nothing now, congestion control sees it unmarked. */
static void src_step(struct strain *st, struct ends *e)
{
	const struct ssemu_config *c = &st->r->config;
	struct ssemu_cc_pair_view v = {
		.pair = &e->pc, .now = *T(&st->a, e->nin, T_FIN),
		.nic_window = c->nic_window,
	};
	uint32_t count = st->count[e->nin++];

	e->back += count;
	model_cc(st->r)->on_ack(&v, count, false);
	e->allowed = SSEMU_MIN(c->nic_window, model_cc(st->r)->window(&v));
}

/* Both ends' events up to @t, in time order (the data known: packets
 * before @ndata). */
static void ends_until(struct strain *st, struct ends *e, ssemu_time_t t,
		       uint32_t ndata)
{
	ssemu_time_t td, ta;

	for (;;) {
		td = dest_next(st, e, ndata);
		ta = e->nin < e->na ? *T(&st->a, e->nin, T_FIN) : UINT64_MAX;
		if (SSEMU_MIN(td, ta) > t)
			return;
		if (td <= ta)
			dest_step(st, e, ndata);
		else
			src_step(st, e);
	}
}

/*
 * The data's sends: packet k when the link is free and the window open
 * (fewer than the pair allows out: at the send's instant an
 * acknowledgement in counts, as its arrival comes first), else when the
 * acknowledgement that opens it is in (whose arrival kicks the NIC); a
 * send that fills the window asks for an acknowledgement at once.  And
 * from the data's arrivals, the acknowledgements and their way back.
 * False: the plan cannot say (no memory, or a window that nothing
 * opens).
 */
static bool ends_plan(struct strain *st, const struct ssemu_pair *pr,
		      bool ack_req0, ssemu_time_t now)
{
	const struct ssemu_config *c = &st->r->config;
	struct train *d = &st->d, *a = &st->a;
	uint32_t n = d->npkts, k;
	struct ssemu_cc_pair_view v;
	struct ends *e;
	ssemu_time_t t;
	bool ok = false;

	e = st->ends;
	memset(e, 0, offsetof(struct ends, dr));
	/* (one piece: the acknowledgements' times and counts, the timers'
	 * times, each data packet's request) */
	st->made = train_buf(&st->mem, (size_t)n * (2 * sizeof(ssemu_time_t) +
						    sizeof(uint32_t) + 1));
	if (!st->made)
		goto out;
	e->timer = st->made + n;
	st->count = (uint32_t *)(e->timer + n);
	e->ack_req = (uint8_t *)(st->count + n);
	leg_run_init(d, &e->dr, d->n->port, d->n->pkt_seq - 1, now);
	leg_run_init(a, &e->ar, a->n->port, a->n->pkt_seq, now);
	e->pc = *pr;
	v = (struct ssemu_cc_pair_view){ .pair = &e->pc, .now = now,
					 .nic_window = c->nic_window };
	e->allowed = SSEMU_MIN(c->nic_window, model_cc(st->r)->window(&v));
	e->ack_req[0] = ack_req0;
	leg_pkt(d, &e->dr, 0, 0);
	for (k = 1; k < n; k++) {
		t = e->dr.nic_free;
		for (;;) {
			ends_until(st, e, t, k);
			if (k - e->back < e->allowed)
				break;
			/* closed: the next acknowledgement in opens it (the
			 * acknowledgements come in the order made) */
			while (e->nin == e->na) {
				if (dest_next(st, e, k) == UINT64_MAX)
					goto out;
				dest_step(st, e, k);
			}
			t = *T(a, e->nin, T_FIN);
		}
		e->ack_req[k] = k - e->back + 1 >= e->allowed;
		leg_pkt(d, &e->dr, k, t);
	}
	/* the rest of the destination's acknowledgements (timers due after
	 * the last arrival find nothing) */
	while (dest_next(st, e, n) != UINT64_MAX)
		dest_step(st, e, n);
	a->npkts = e->na;
	st->ntimed = e->ntimed;
	ok = e->na > 0;
out:
	return ok;
}

/* Do the legs use different switch ports, as outputs and as inputs?
 * (Minimal paths there and back do; a topology whose paths cross in one
 * direction would share a queue or a pipeline between them.) */
static bool legs_apart(const struct train *d, const struct train *a)
{
	uint32_t i, j;

	for (i = 0; i < d->nhops; i++)
		for (j = 0; j < a->nhops; j++)
			if (d->hop[i].sw == a->hop[j].sw &&
			    (d->hop[i].out == a->hop[j].out ||
			     d->hop[i].in == a->hop[j].in))
				return false;
	return true;
}

/* Leg @tr's rows, in @b: @npkts packets. */
static bool leg_rows(struct train *tr, uint32_t npkts, struct train_buf *b)
{
	tr->npkts = npkts;
	tr->w = T_HOP + 3 * tr->nhops;
	return train_alloc(tr, b);
}

/* Is model time @t inside the run, and far from the end of time? */
static inline bool in_run(const struct train *tr, ssemu_time_t t)
{
	return t <= tr->limit && !(t >> 58);
}

/*
 * Pass 1.  @f0: the one event the engine holds, which must be the first
 * data packet's arrival at its edge switch.
 */
static bool strain_plan(struct strain *st, uint32_t nic,
			const struct ssemu_fired *f0)
{
	struct ssemu_region *r = st->r;
	const struct ssemu_config *c = &r->config;
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic), *in;
	struct train *d = &st->d, *a = &st->a;
	const struct ssemu_pkt *p0;
	const struct ssemu_msg *m;
	struct ssemu_pair *pr;
	ssemu_time_t now = e->now;
	uint32_t k, tc, dport;

	st->mi = n->inj_head;
	m = ssemu_r_msg(r, st->mi);
	p0 = ssemu_r_pkt(r, f0->c);
	tc = m->tclass;
	/* the message: a send, alone in the source's queue, its first
	 * packet out and nothing else of it */
	if (m->next != SSEMU_NONE || m->mflags != SSEMU_MSGF_QUEUED ||
	    m->sent != 1 || m->npkts < 2 || m->npkts >= TRAIN_MAX_PKTS ||
	    m->acked || m->arrived || m->rx_acked || m->rx_marked ||
	    m->status || m->rma_op || ssemu_gen_msg(r, st->mi) ||
	    ssemu_ep_nic(r, ssemu_msg_ep(r, st->mi)) != nic ||
	    SSEMU_ADDR_PORT(m->src) != n->port ||
	    tc >= c->ntclass || c->tclass[tc].lossy ||
	    c->tclass[tc].max_pct < 100 || !c->edge.delay)
		return false;
	/* the destination: attached, with nothing of its own to send */
	dport = SSEMU_ADDR_PORT(m->dst);
	st->inic = ssemu_port_nic(r, dport);
	if (st->inic >= c->max_nics || st->inic == nic)
		return false;
	in = ssemu_r_nic(r, st->inic);
	if (in->state != SSEMU_NIC_ATTACHED || in->busy_until > now ||
	    in->done_pending || in->wait_pkt || nic_has_work(in))
		return false;
	/* the first packet, on its way to its edge switch's queues */
	if (p0->type != SSEMU_PKT_DATA || p0->msg != st->mi ||
	    p0->msg_gen != m->gen || p0->idx || p0->epoch != m->epoch ||
	    p0->src_nic != nic || p0->win != st->inic ||
	    p0->src_gen != n->gen || p0->src_port != n->port ||
	    p0->dst_port != dport || p0->tclass != tc || p0->vc || p0->via ||
	    p0->phase || p0->trip || p0->marked ||
	    p0->seq + 1 != n->pkt_seq || p0->sw_arrive > f0->time)
		return false;
	/* the pair: that packet alone in flight, neither paused nor paced
	 * (no frame comes: the window only widens, with acknowledgements) */
	pr = ssemu_pair_find(r, nic, st->inic);
	if (!pr || pr->window != 1 || pr->pause > now || pr->slow > now)
		return false;

	/* the data's leg */
	d->r = r;
	d->n = n;
	d->in = in;
	d->nic = nic;
	d->inic = st->inic;
	d->mi = st->mi;
	d->tc = tc;
	d->vni = m->vni;
	d->dport = dport;
	d->kind = TK_DATA;
	d->first = 1;
	d->limit = train_run_limit(r);
	if (d->limit <= now ||
	    !train_path(d, dport, p0->copy, f0->time, NULL) ||
	    d->hop[0].inst != f0->a ||
	    d->hop[0].in != ssemu_ready_in(f0->b) ||
	    !d->hop[0].s || !leg_rows(d, m->npkts, &st->dmem))
		return false;
	for (k = 0; k < d->npkts; k++) {
		d->bytes[k] = pkt_chunk(m->len, (uint64_t)k * c->mtu, c->mtu) +
			      c->pkt_overhead;
		d->cells[k] = pkt_cells(d->bytes[k]);
	}
	if (d->bytes[0] != p0->bytes)
		return false;
	*T(d, 0, T_INJ) = p0->inject_time;
	*T(d, 0, T_ARR(0)) = p0->sw_arrive;
	*T(d, 0, T_READY(0)) = f0->time;

	/* the acknowledgements' leg, back to the source (rows for one a
	 * data packet, the most there can be) */
	a->r = r;
	a->n = in;
	a->in = n;
	a->nic = st->inic;
	a->inic = nic;
	a->mi = st->mi;
	a->tc = tc;
	a->vni = m->vni;
	a->dport = n->port;
	a->kind = TK_ACK;
	a->first = 0;
	a->limit = d->limit;
	if (!train_path(a, n->port,
			(uint16_t)((dport * 2654435761u + n->port) >> 7), now,
			d) ||
	    !legs_apart(d, a) || !leg_rows(a, d->npkts, &st->amem))
		return false;
	for (k = 0; k < a->npkts; k++) {
		a->bytes[k] = c->pkt_overhead;
		a->cells[k] = pkt_cells(a->bytes[k]);
	}

	/* both legs' times, the window between them; then nothing waits
	 * for credits (a credit with no room in its ring comes as an
	 * event, which the step runs in its place) or packets, and no
	 * frame */
	return ends_plan(st, pr, p0->ack_req, now) &&
	       in_run(d, *T(d, d->npkts - 1, T_FIN)) &&
	       in_run(a, *T(a, a->npkts - 1, T_FIN)) &&
	       train_leg_credits_hold(d, false) &&
	       train_leg_credits_hold(a, false) &&
	       (int64_t)c->max_pkts - r->pkts_used >=
		       (int64_t)d->npkts - 1 + st->ntimed &&
	       train_edge_queue_holds(d);
}

/* ------------------------------------------------------------------ */
/* Pass 2: the step                                                    */
/* ------------------------------------------------------------------ */

/* Hop @h of @tr is modelled now, as switch model @inst (the other leg's
 * packets, or the NIC's injection, made it). */
static void leg_bind(struct train *tr, uint32_t h, uint32_t inst)
{
	struct train_hop *hp = &tr->hop[h];

	hp->inst = inst;
	hp->s = ssemu_r_switch(tr->r, inst);
	hp->op = ssemu_sw_port(tr->r, hp->s, hp->out);
	train_hop_views(tr, h);
	if (h + 1 < tr->nhops)
		tr->hop[h + 1].up = hp->cr;
}

/* The leg whose first switch input is (@inst, @in), or NULL. */
static struct train *leg_at(struct strain *st, uint32_t inst, uint32_t in)
{
	struct train *legs[2] = { &st->d, &st->a }, *tr;
	uint32_t i;

	if (inst >= st->r->sw_used)
		return NULL;
	for (i = 0; i < 2; i++) {
		tr = legs[i];
		if (tr->hop[0].in != in)
			continue;
		if (tr->hop[0].s ? tr->hop[0].inst == inst :
				   ssemu_r_switch(st->r, inst)->sw ==
					   tr->hop[0].sw)
			return tr;
	}
	return NULL;
}

/*
 * An event the model scheduled during the step.  A packet's arrival at
 * its leg's first switch: the leg's next packet, ready when the plan said
 * (its pool index noted: the plan carries it from there).  A NIC's look
 * or an acknowledgement's timer: kept for its time.  Anything else the
 * plan said would not happen.
 */
static void strain_take(struct ssemu_capture *cap, ssemu_time_t t,
			uint64_t key, uint32_t type, uint32_t a, uint32_t b,
			uint32_t c)
{
	struct strain *st = (struct strain *)cap;
	struct train *tr;

	if (type == SSEMU_MEV_SW_READY) {
		/* (its destination as planned: a slot changed in the
		 * segment meanwhile would send it elsewhere) */
		tr = leg_at(st, a, ssemu_ready_in(b));
		if (!tr || tr->ninj >= tr->npkts ||
		    c >= st->r->config.max_pkts ||
		    t != *T(tr, tr->ninj, T_READY(0)) ||
		    ssemu_r_pkt(st->r, c)->dst_port != tr->dport) {
			st->bad = "a packet off the plan";
			return;
		}
		if (!tr->hop[0].s)
			leg_bind(tr, 0, a);
		tr->pi[tr->ninj++] = c;
		return;
	}
	if (type != SSEMU_MEV_NIC_TX_DONE && type != SSEMU_MEV_NIC_KICK &&
	    type != SSEMU_MEV_ACK_TIMER && type != SSEMU_MEV_SW_CREDIT &&
	    type != SSEMU_MEV_NIC_CREDIT) {
		st->bad = "an event off the plan";
		return;
	}
	if (st->nev == st->cap_ev) {
		struct cap_ev *ev = st->nev < UINT32_MAX / 2 ?
			realloc(st->ev, 2 * (size_t)st->nev * sizeof(*ev)) :
			NULL;

		if (!ev) {
			st->bad = "no memory for its events";
			return;
		}
		st->ev = ev;
		st->cap_ev = 2 * st->nev;
	}
	st->ev[st->nev++] = (struct cap_ev){ t, key, type, a, b, c };
}

/* The legs' actions in the switches and at their ends. */
enum { SA_READY, SA_DEP, SA_ARRIVE };
static const uint8_t sa_prio[] = {
	[SA_ARRIVE] = 3, [SA_READY] = 4, [SA_DEP] = 5,
};
#define SSTREAMS (2 * (2 * TRAIN_HOPS + 1))

struct sstream {
	struct train *tr;
	uint32_t next, col, hop;
	uint8_t act, skip;
};

/* Stream @s's next packet's time (UINT64_MAX: none left); an edge
 * output's sends skip those made at their pipelines' ends. */
static inline ssemu_time_t sstream_time(struct sstream *s)
{
	struct train *tr = s->tr;
	uint32_t k = s->next;

	if (s->skip) {
		/* (col - 1: the same hop's T_READY) */
		while (k < tr->npkts && *T(tr, k, s->col) ==
						*T(tr, k, s->col - 1))
			k++;
		s->next = k;
	}
	return k < tr->npkts ? *T(tr, k, s->col) : UINT64_MAX;
}

static void sstream_add(struct sstream *ss, uint32_t *n, struct train *tr,
			uint32_t act, uint32_t col, uint32_t hop)
{
	ss[*n] = (struct sstream){
		.tr = tr, .next = 0, .col = col, .hop = hop,
		.act = (uint8_t)act,
		.skip = act == SA_DEP && tr->hop[hop].edge,
	};
	(*n)++;
}

/* The engine's key of stream @s's next action at @t (an arrival's:
 * ev_key's; the switches' by their kind alone: actions of one kind at
 * one instant touch nothing of one another's that their order changes). */
static uint64_t sstream_key(struct ssemu_region *r, const struct sstream *s,
			    ssemu_time_t t)
{
	const struct train *tr = s->tr;

	if (s->act == SA_ARRIVE && s->next < tr->ninj)
		return ev_key(r, t, SSEMU_MEV_NIC_ARRIVE, tr->inic, 0,
			      tr->pi[s->next]);
	return (uint64_t)sa_prio[s->act] << 60;
}

static void sstream_act(struct strain *st, struct sstream *s, ssemu_time_t t)
{
	struct ssemu_region *r = st->r;
	struct train *tr = s->tr;
	uint32_t k = s->next;

	if (k >= tr->ninj) {
		st->bad = "a packet not sent when the plan said";
		return;
	}
	switch (s->act) {
	case SA_READY:
		train_act_ready(tr, s->hop, k, t);
		break;
	case SA_DEP:
		train_act_dep(tr, s->hop, k, t);
		break;
	default:
		/* the NIC's own arrival: credits back, the data's
		 * acknowledgements and delivery, the window and completion
		 * at the source (checked as its event's packet) */
		if (!pkt_bad(r, tr->pi[k]))
			nic_arrive(r, tr->inic, 0, tr->pi[k]);
		break;
	}
	s->next++;
}

/*
 * Pass 2: the source NIC's send that formed the train, then the actions,
 * earliest first: the streams' next ones (a handful), the events the
 * NICs scheduled (as many), by (time, the engine's key).
 */
static void strain_run(struct strain *st)
{
	struct ssemu_region *r = st->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct sstream ss[SSTREAMS];
	struct train *legs[2] = { &st->d, &st->a }, *tr;
	ssemu_time_t tt[SSTREAMS], t, bt;
	uint32_t ns = 0, i, h, s, best, bev;
	int ret;

	for (i = 0; i < 2; i++) {
		tr = legs[i];
		for (h = 0; h < tr->nhops; h++) {
			if (tr->hop[h].s)
				train_hop_views(tr, h);
			if (tr->hop[h].edge)
				sstream_add(ss, &ns, tr, SA_READY,
					    T_READY(h), h);
			sstream_add(ss, &ns, tr, SA_DEP, T_DEP(h), h);
		}
		sstream_add(ss, &ns, tr, SA_ARRIVE, T_FIN, 0);
	}
	for (s = 0; s < ns; s++)
		tt[s] = sstream_time(&ss[s]);
	/* what the NIC was doing when the train formed */
	if (!st->bad)
		ssemu_model_nic_kick(r, st->nic);
	for (;;) {
		if (unlikely(st->bad || ssemu_broken(r)))
			break;
		/* the streams' earliest (at one instant, by kind; two
		 * arrivals by the engine's key) */
		best = 0;
		for (s = 1; s < ns; s++) {
			if (tt[s] > tt[best])
				continue;
			if (tt[s] < tt[best] ||
			    sa_prio[ss[s].act] < sa_prio[ss[best].act] ||
			    (ss[s].act == SA_ARRIVE &&
			     ss[best].act == SA_ARRIVE &&
			     sstream_key(r, &ss[s], tt[s]) <
				     sstream_key(r, &ss[best], tt[best])))
				best = s;
		}
		bt = tt[best];
		/* (the last packet in: what the NICs scheduled for later
		 * goes to the engine) */
		if (bt == UINT64_MAX)
			break;
		/* the events', by (time, key): kinds other than the
		 * streams' */
		bev = CAP_NONE;
		for (i = 0; i < st->nev; i++)
			if (bev == CAP_NONE || st->ev[i].t < st->ev[bev].t ||
			    (st->ev[i].t == st->ev[bev].t &&
			     st->ev[i].key < st->ev[bev].key))
				bev = i;
		/* (the events' kinds come at other places in an instant
		 * than the streams': their keys' kinds decide) */
		if (bev != CAP_NONE &&
		    (st->ev[bev].t < bt ||
		     (st->ev[bev].t == bt &&
		      st->ev[bev].key >> 60 < sa_prio[ss[best].act]))) {
			struct ssemu_fired f = {
				.time = st->ev[bev].t, .type = st->ev[bev].type,
				.a = st->ev[bev].a, .b = st->ev[bev].b,
				.c = st->ev[bev].c,
				.next_type = SSEMU_EV_NO_HINT,
			};

			st->ev[bev] = st->ev[--st->nev];
			e->now = f.time;
			ssemu_model_handle(r, &f);
			continue;
		}
		e->now = t = bt;
		sstream_act(st, &ss[best], t);
		tt[best] = sstream_time(&ss[best]);
	}
	if (st->bad && !ssemu_broken(r))
		ssemu_fail(r, "a send's packet train met %s at model time "
			   "%llu", st->bad, (unsigned long long)e->now);
	/* the model's events for later (all after the train's last action)
	 * to the engine */
	__atomic_store_n(&ssemu_model_capture, NULL, __ATOMIC_RELAXED);
	ssemu_store_relaxed(&ssemu_model_deferring, 0);
	for (i = 0; i < st->nev; i++) {
		ret = ssemu_engine_schedule_key(e, st->ev[i].t, st->ev[i].key,
						st->ev[i].type, st->ev[i].a,
						st->ev[i].b, st->ev[i].c, NULL);
		if (ret)
			schedule_failed(r, ret);
	}
}

/* Cheap checks before the plan's: a message of two packets or more whose
 * first alone is out, the engine holding one event, a packet's arrival at
 * a switch (@f0), no other train running in this process. */
static bool strain_may(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_fired *f0)
{
	const struct ssemu_msg *m;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_engine *e = ssemu_r_engine(r);

	if (n->inj_head >= r->nmsgs || n->ack_head != SSEMU_NONE ||
	    n->resp_head != SSEMU_NONE || n->wait_pkt ||
	    n->busy_until > e->now)
		return false;
	m = ssemu_r_msg(r, n->inj_head);
	if (m->sent != 1 || m->npkts < 2)
		return false;
	if (!train_model_usual(r) || model_route(r)->choose ||
	    __atomic_load_n(&ssemu_model_capture, __ATOMIC_RELAXED))
		return false;
	return ssemu_engine_pending(e) == 1 && ssemu_engine_peek(e, f0) &&
	       f0->type == SSEMU_MEV_SW_READY && f0->time > e->now &&
	       f0->c < r->config.max_pkts && !pkt_bad(r, f0->c);
}

/*
 * A send train's record (some 30 KB) and its plan's arrays are kept from
 * one train to the next: a train of a few packets costs about what their
 * events would, and allocating and clearing those anew each time was as
 * much again.  One is kept (trains run one at a time in a process; two
 * plans on two threads' fabrics may overlap, and the second makes its
 * own).
 */
static struct strain *strain_spare;

static void strain_free(struct strain *st)
{
	free(st->ev);
	free(st->ends);
	free(st->mem.p);
	free(st->dmem.p);
	free(st->amem.p);
	free(st);
}

static struct strain *strain_get(void)
{
	struct strain *st = __atomic_exchange_n(&strain_spare, NULL,
						__ATOMIC_ACQUIRE);

	if (st)
		return st;
	/* (what a train finds set; the rest each train sets) */
	st = malloc(sizeof(*st));
	if (!st)
		return NULL;
	st->mem = st->dmem = st->amem = (struct train_buf){ NULL, 0 };
	st->ends = malloc(sizeof(*st->ends));
	st->ev = malloc(CAP_FIRST * sizeof(*st->ev));
	st->cap_ev = CAP_FIRST;
	if (!st->ends || !st->ev) {
		strain_free(st);
		return NULL;
	}
	return st;
}

/* @st done with: kept, without what a long train grew. */
static void strain_put(struct strain *st)
{
	train_buf_trim(&st->mem);
	train_buf_trim(&st->dmem);
	train_buf_trim(&st->amem);
	if (st->cap_ev > CAP_KEEP) {
		struct cap_ev *ev = realloc(st->ev, CAP_FIRST * sizeof(*ev));

		if (ev) {
			st->ev = ev;
			st->cap_ev = CAP_FIRST;
		}
	}
	st = __atomic_exchange_n(&strain_spare, st, __ATOMIC_ACQ_REL);
	if (st)
		strain_free(st);
}

static void __attribute__((destructor)) strain_spare_free(void)
{
	struct strain *st = __atomic_exchange_n(&strain_spare, NULL,
						__ATOMIC_ACQUIRE);

	if (st)
		strain_free(st);
}

bool ssemu_train_send(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct ssemu_capture *none = NULL;
	struct ssemu_fired f0, f;
	struct strain *st;
	ssemu_time_t now;

	if (!strain_may(r, nic, &f0))
		return false;
	st = strain_get();
	if (!st)
		return false;
	/* (cleared but for the legs' hops, which their paths fill) */
	memset(&st->d, 0, offsetof(struct train, hop));
	memset(&st->a, 0, offsetof(struct train, hop));
	st->made = NULL;
	st->count = NULL;
	st->nev = 0;
	st->bad = NULL;
	st->r = r;
	st->nic = nic;
	st->cap.r = r;
	st->cap.take = strain_take;
	if (!strain_plan(st, nic, &f0) ||
	    !__atomic_compare_exchange_n(&ssemu_model_capture, &none,
					 &st->cap, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		strain_put(st);
		return false;
	}
	ssemu_store_relaxed(&ssemu_model_deferring, 1);
	/* the first packet's arrival at its switch is the train's now */
	now = e->now;
	if (!ssemu_engine_pop(e, UINT64_MAX, &f) || f.time != f0.time ||
	    f.type != f0.type || f.c != f0.c) {
		st->bad = "an engine that gave another event";
	} else {
		e->now = now;
		st->d.pi[0] = f0.c;
		st->d.ninj = 1;
	}
	__atomic_add_fetch(&ssemu_model_trains_run, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ssemu_model_trains_sent, 1, __ATOMIC_RELAXED);
	strain_run(st);
	strain_put(st);
	return true;
}
