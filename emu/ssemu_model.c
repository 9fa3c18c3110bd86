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
 *
 * This file is the model's entry from the engine: each event kind's
 * handler, in a table indexed by the kind (the components and their order:
 * ssemu_model_int.h).
 */
#include "ssemu_link.h"
#include "ssemu_gen.h"

void __attribute__((cold)) schedule_failed(struct ssemu_region *r, int ret)
{
	struct ssemu_engine *e = ssemu_r_engine(r);

	/* (an event the model needs and cannot have would leave it
	 * inconsistent: a packet lost in flight, a NIC never woken) */
	if (ret == -EIO)
		ssemu_fail(r, "the event engine's memory is corrupt (%s)",
			   ssemu_engine_why(e->bad));
	else
		ssemu_fail(r, "the event engine is full "
			   "(max_events %u): the model cannot go on; "
			   "resources.max_events in the fabric configuration "
			   "raises it", r->config.max_events);
}

/* The order test's hook (ssemu_model_int.h): one handler's events, held. */
#define DEFER_MAX 256
uint32_t ssemu_model_perturb;
const struct ssemu_region *ssemu_gw_ev_r;
uint64_t ssemu_gw_ev_key;
uint32_t ssemu_model_credit_events;
uint32_t ssemu_model_extra_looks;
uint32_t ssemu_model_fresh_places;
uint32_t ssemu_model_shortcut;
uint64_t ssemu_model_shortcuts;
uint32_t ssemu_model_deferring;
static struct deferred {
	ssemu_time_t t;
	uint64_t key;
	uint32_t type, a, b, c;
} deferred[DEFER_MAX];
static uint32_t ndeferred;

struct ssemu_capture *ssemu_model_capture;

void ssemu_model_defer(struct ssemu_region *r, ssemu_time_t t, uint64_t key,
		       uint32_t type, uint32_t a, uint32_t b, uint32_t c)
{
	struct ssemu_capture *cap = __atomic_load_n(&ssemu_model_capture,
						    __ATOMIC_RELAXED);
	int ret;

	if (cap && cap->r == r) {
		cap->take(cap, t, key, type, a, b, c);
		return;
	}
	/* (another fabric's events while a train captures, or events
	 * scheduled as a capture ends, in another thread: to the engine as
	 * ever; only the test's perturbation holds them) */
	if (!ssemu_model_perturb)
		goto now;
	if (ndeferred < DEFER_MAX) {
		deferred[ndeferred++] = (struct deferred){ t, key, type,
							   a, b, c };
		return;
	}
now:
	ret = ssemu_engine_schedule_key(ssemu_r_engine(r), t, key, type, a, b,
					c, NULL);
	if (ret)
		schedule_failed(r, ret);
}

/* The held events go to the engine, last first. */
static void defer_flush(struct ssemu_region *r)
{
	struct deferred *d;
	int ret;

	ssemu_store_relaxed(&ssemu_model_deferring, 0);
	while (ndeferred) {
		d = &deferred[--ndeferred];
		ret = ssemu_engine_schedule_key(ssemu_r_engine(r), d->t,
						d->key, d->type, d->a, d->b,
						d->c, NULL);
		if (ret)
			schedule_failed(r, ret);
	}
}

/* The Dragonfly group of the NIC or switch event @type, @a is for. */
static uint32_t gw_group(struct ssemu_region *r, uint32_t type, uint32_t a)
{
	uint64_t port = 0, per = (uint64_t)r->topo.p * r->topo.a;

	switch (type) {
	case SSEMU_MEV_SW_READY:
	case SSEMU_MEV_SW_OUT_DONE:
	case SSEMU_MEV_SW_CREDIT:
		return a < r->sw_used ?
			       ssemu_topo_group(&r->topo, ssemu_sw_id(r, a)) %
				       r->topo.g :
			       0;
	case SSEMU_MEV_GEN:
		port = ssemu_gen_port(r, a);
		break;
	default:
		if (a < r->config.max_nics)
			port = ssemu_r_nic(r, a)->port;
		break;
	}
	return per ? (uint32_t)(port / per % r->topo.g) : 0;
}

ssemu_time_t __attribute__((noinline))
ssemu_gw_now(const struct ssemu_region *r)
{
	return ssemu_gw_dec(r, ((const struct ssemu_engine *)SSEMU_AT(
					r, r->engine_off))->now);
}

bool gw_schedulable(struct ssemu_region *r, ssemu_time_t t, uint32_t type,
		    uint32_t a)
{
	return t < ssemu_gw_max(r) &&
	       ssemu_gw_enc(r, t, gw_group(r, type, a)) >=
		       ssemu_r_engine(r)->now;
}

ssemu_time_t gw_schedule_time(struct ssemu_region *r, ssemu_time_t t,
			      uint32_t type, uint32_t a)
{
	const struct ssemu_engine *e = ssemu_r_engine(r);
	uint32_t g = gw_group(r, type, a);
	ssemu_time_t s;

	if (t >= ssemu_gw_max(r)) {
		ssemu_fail(r, "group windows: model time %llu ps is past what "
			   "they can encode", (unsigned long long)t);
		return UINT64_MAX;
	}
	s = ssemu_gw_enc(r, t, g);
	if (s < e->now) {
		ssemu_fail(r, "group windows: event %u (%u) at %llu ps for "
			   "group %u falls in a window that group has run "
			   "(at %llu ps): the groups are not independent over "
			   "%llu ps", type, a, (unsigned long long)t, g,
			   (unsigned long long)ssemu_gw_dec(r, e->now),
			   (unsigned long long)ssemu_config_group_window(
				   &r->config));
		return UINT64_MAX;
	}
	return s;
}

/* Are the arguments of event @f in range (else the fabric is marked
 * broken)? */
SSEMU_HOT
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
		bad = f->a >= r->sw_used ||
		      ssemu_ready_in(f->b) >= r->topo.radix ||
		      ssemu_ready_out(f->b) >= r->topo.radix ||
		      pkt_hop_bad(r, f->c);
		break;
	case SSEMU_MEV_SW_OUT_DONE:
		bad = f->a >= r->sw_used || f->b >= r->topo.radix;
		break;
	case SSEMU_MEV_SW_CREDIT:
		bad = f->a >= r->sw_used || (f->b & 0xff) >= r->topo.radix ||
		      (f->b >> 8) >= c->ntclass * SSEMU_NVC;
		break;
	case SSEMU_MEV_ACK_TIMER:
	case SSEMU_MEV_RTO:
		bad = f->a >= c->max_nics || f->b >= r->nmsgs;
		break;
	case SSEMU_MEV_FGFC:
		bad = f->a >= c->max_nics || f->b >= c->max_nics;
		break;
	case SSEMU_MEV_GEN:
		bad = f->a >= r->gen_neps;
		break;
	case SSEMU_MEV_POST:
		bad = f->a >= c->max_nics || f->b >= r->nmsgs;
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

static void ev_nic_tx_done(struct ssemu_region *r, const struct ssemu_fired *f)
{
	ssemu_r_nic(r, f->a)->done_pending = 0;
	ssemu_model_nic_kick(r, f->a);
}

/*
 * A credit that could not wait in its owner's ring (full, or out of time
 * order) is in now; the owner looks as it would for one from the ring
 * (credit_to_nic, credit_to_switch): with the kick or the output's look,
 * in their places among the events of this instant, and only if something
 * waits for it and the link is free.  (A look of its own here, first of
 * the instant, would come before arrivals of the same time that the
 * ring's look sees: results would depend on the ring's size.)
 */
static void ev_nic_credit(struct ssemu_region *r, const struct ssemu_fired *f)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, f->a);

	n->credits[f->b] += f->c;
	if (n->busy_until <= f->time && nic_has_work(n))
		nic_wake(r, f->a, f->time);
}

SSEMU_HOT
static void ev_nic_arrive(struct ssemu_region *r, const struct ssemu_fired *f)
{
	nic_arrive(r, f->a, f->b, f->c);
	if (unlikely(ssemu_model_extra_looks))
		schedule(r, f->time + SSEMU_PS_PER_NS, SSEMU_MEV_NIC_KICK, f->a,
			 0, 0);
}

SSEMU_HOT
static void ev_sw_ready(struct ssemu_region *r, const struct ssemu_fired *f)
{
	sw_ready(r, f->a, ssemu_ready_in(f->b), ssemu_ready_out(f->b), f->c);
	/* (the input's own port, as an output: any would do) */
	if (unlikely(ssemu_model_extra_looks))
		schedule(r, f->time + SSEMU_PS_PER_NS, SSEMU_MEV_SW_OUT_DONE,
			 f->a, ssemu_ready_in(f->b), 0);
}

SSEMU_HOT
static void ev_sw_out_done(struct ssemu_region *r, const struct ssemu_fired *f)
{
	struct ssemu_swport *op = ssemu_r_port(r, f->a, f->b);

	/* (one overtaken by an earlier look, sw_wake, is not the one due:
	 * it must not start a second chain of looks) */
	if (f->time >= op->wake_at)
		op->done_pending = 0;
	sw_try_send(r, f->a, f->b);
}

static void ev_sw_credit(struct ssemu_region *r, const struct ssemu_fired *f)
{
	struct ssemu_swport *op = ssemu_r_port(r, f->a, f->b & 0xff);

	op->vq[f->b >> 8].credits += f->c;
	if (op->nqueued && op->busy_until <= f->time)
		sw_wake(r, f->a, f->b & 0xff, f->time);
}

static void ev_nic_kick(struct ssemu_region *r, const struct ssemu_fired *f)
{
	ssemu_model_nic_kick(r, f->a);
}

static void ev_ack_timer(struct ssemu_region *r, const struct ssemu_fired *f)
{
	nic_ack_timer(r, f->a, f->b, f->c);
}

static void ev_fgfc(struct ssemu_region *r, const struct ssemu_fired *f)
{
	nic_fgfc_arrive(r, f->a, f->b, f->c);
}

static void ev_rto(struct ssemu_region *r, const struct ssemu_fired *f)
{
	nic_rto_fire(r, f->a, f->b, f->c);
}

static void ev_resend(struct ssemu_region *r, const struct ssemu_fired *f)
{
	nic_resend_fire(r, f->a, f->b, f->c);
}

static void ev_gen(struct ssemu_region *r, const struct ssemu_fired *f)
{
	ssemu_gen_tick(r, f->a);
}

static void ev_post(struct ssemu_region *r, const struct ssemu_fired *f)
{
	ssemu_model_post_fire(r, f->a, f->b, f->c);
}

/* Each event kind's handler (event_bad has checked its arguments). */
static void (*const ev_handler[SSEMU_MEV_MAX])(struct ssemu_region *r,
					       const struct ssemu_fired *f) = {
	[SSEMU_MEV_NIC_TX_DONE] = ev_nic_tx_done,
	[SSEMU_MEV_NIC_CREDIT] = ev_nic_credit,
	[SSEMU_MEV_NIC_ARRIVE] = ev_nic_arrive,
	[SSEMU_MEV_SW_READY] = ev_sw_ready,
	[SSEMU_MEV_SW_OUT_DONE] = ev_sw_out_done,
	[SSEMU_MEV_SW_CREDIT] = ev_sw_credit,
	[SSEMU_MEV_NIC_KICK] = ev_nic_kick,
	[SSEMU_MEV_ACK_TIMER] = ev_ack_timer,
	[SSEMU_MEV_FGFC] = ev_fgfc,
	[SSEMU_MEV_RTO] = ev_rto,
	[SSEMU_MEV_RESEND] = ev_resend,
	[SSEMU_MEV_GEN] = ev_gen,
	[SSEMU_MEV_POST] = ev_post,
};

#ifdef SSEMU_DEBUG
/* Events between two whole-model checks: the check reads every packet,
 * event and VOQ, so it runs about once per as many events as those. */
static uint32_t check_period(const struct ssemu_region *r)
{
	return 256 + (r->config.max_events + r->config.max_pkts) / 64;
}
#endif

/*
 * Ask for the lines the next event (the hint in @f, from the pop that took
 * it) will touch first (its packet, the switch port or NIC it is for)
 * while this one is handled: on a large fabric they are far from the
 * caches, and a handler's own misses come one after the other.  Only a
 * hint: an index out of range asks for nothing.
 */
static SSEMU_PREFETCH_FN void prefetch_next(struct ssemu_region *r,
					   const struct ssemu_fired *f)
{
	uint32_t a = f->next_a, b = f->next_b, c = f->next_c, in, out;
	struct ssemu_switch_sh *s;
	const char *op;

	switch (f->next_type) {
	case SSEMU_MEV_SW_OUT_DONE:
		if (a >= r->sw_used || b >= r->topo.radix)
			return;
		s = ssemu_r_switch(r, a);
		__builtin_prefetch(s);
		__builtin_prefetch(ssemu_sw_port(r, s, b));
		return;
	case SSEMU_MEV_SW_READY:
		in = ssemu_ready_in(b);
		out = ssemu_ready_out(b);
		if (a >= r->sw_used || in >= r->topo.radix ||
		    out >= r->topo.radix)
			return;
		s = ssemu_r_switch(r, a);
		__builtin_prefetch(s);
		/* a packet ready at input in: of that port it reads who
		 * feeds it (for the credit it hands back), not the first
		 * line, which is the port's as an output */
		__builtin_prefetch(&ssemu_sw_port(r, s, in)->peer);
		if (c < r->config.max_pkts)
			__builtin_prefetch(ssemu_r_pkt(r, c));
		/* of its output, the lines every packet through it reads:
		 * the queue counts and the time it is free, the credits on
		 * their way back, the link's parameters */
		op = (const char *)ssemu_sw_port(r, s, out);
		__builtin_prefetch(op);
		__builtin_prefetch(op + SSEMU_CACHELINE);
		__builtin_prefetch(op + 2 * SSEMU_CACHELINE);
		__builtin_prefetch(op + 3 * SSEMU_CACHELINE);
		return;
	case SSEMU_MEV_NIC_ARRIVE:
		if (c < r->config.max_pkts)
			__builtin_prefetch(ssemu_r_pkt(r, c));
		/* fall through */
	case SSEMU_MEV_NIC_TX_DONE:
		if (a < r->config.max_nics)
			__builtin_prefetch(ssemu_r_nic(r, a));
		return;
	default:
		return;
	}
}

void ssemu_model_handle(struct ssemu_region *r, const struct ssemu_fired *f)
{
	if (!event_bad(r, f))
		ev_handler[f->type](r, f);
}

SSEMU_HOT
void ssemu_model_dispatch(struct ssemu_region *r, const struct ssemu_fired *f)
{
#ifdef SSEMU_DEBUG
	static __thread uint32_t since_check;
#endif
	struct ssemu_fired g;

	if (event_bad(r, f))
		return;
	prefetch_next(r, f);
	if (unlikely(r->config.group_windows)) {
		/* (the handlers see model time) */
		g = *f;
		g.time = ssemu_gw_dec(r, f->time);
		f = &g;
		if (f->type == SSEMU_MEV_NIC_ARRIVE) {
			ssemu_gw_ev_r = r;
			ssemu_gw_ev_key = ev_key(r, f->time, f->type, f->a,
						 f->b, f->c);
		}
	}
	if (unlikely(ssemu_model_perturb)) {
		ssemu_store_relaxed(&ssemu_model_deferring, 1);
		ev_handler[f->type](r, f);
		defer_flush(r);
	} else {
		ev_handler[f->type](r, f);
	}
#ifdef SSEMU_DEBUG
	if (++since_check >= check_period(r)) {
		since_check = 0;
		ssemu_model_check(r);
	}
#endif
}
