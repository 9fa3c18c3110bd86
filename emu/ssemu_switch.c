/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Switches (Rosetta-like): a packet arrives at an input buffer, waits out
 * the pipeline, is routed and joins the virtual output queue
 * voq[out][class, VC][in]; the output arbitrates among the VOQs with a
 * credit downstream (the policy in force, ssemu_arb.c), serialises the
 * packet onto the next link and returns the input buffer's credit
 * upstream (an output's only candidate goes without the arbitration's
 * search, and a packet that finds its output free with nothing queued
 * without the VOQs: the arbitration's sole op).  Switch models are made
 * on first use.  A switch also reports what adaptive routing at injection
 * sees of its outputs (sw_port_load, sw_nb_load) and what congestion
 * control sees at its edge outputs.
 */
#include "ssemu_voq.h"

/* What congestion control sees of paced packet @pkt at edge output @op
 * (@make: its pair gets an entry if it has none; @known: its pair's
 * entry, or NULL, as the view before it found it, with no entry made or
 * given back since). */
SSEMU_HOT
static void cc_queue_view(struct ssemu_region *r, struct ssemu_swport *op,
			  const struct ssemu_pkt *pkt,
			  struct ssemu_cc_queue_view *v, bool make,
			  const struct ssemu_cc_queue_view *known)
{
	uint32_t N = r->config.max_nics;

	v->c = &r->config;
	v->pkt = pkt;
	v->queued_tc = op->queued_tc;
	v->nflows = &op->nflows;
	v->pair = NULL;
	if (known)
		v->pair = known->pair;
	else if (pkt->src_nic < N && pkt->win < N)
		v->pair = make ? ssemu_pair_get(r, pkt->src_nic, pkt->win,
						now_of(r)) :
				 ssemu_pair_find(r, pkt->src_nic, pkt->win);
	v->src = pkt->src_nic < N ? ssemu_r_nic(r, pkt->src_nic) : NULL;
}

/*
 * A packet that cannot reach its destination (the NIC detached, a switch on
 * the way cannot be modelled): a data packet goes straight back to its
 * source as an error acknowledgement, standing in for the NIC's end-to-end
 * retry giving up, so the window slot closes and the send completes with an
 * error; RMA results go straight to their initiator as failed; anything
 * else is dropped.
 */
void lose_pkt(struct ssemu_region *r, uint32_t pi, int32_t status)
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
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	pkt->type = SSEMU_PKT_ACK;
	pkt->status = status;
	pkt->count = 1;
	pkt->to_gen = pkt->src_gen;
	schedule(r, now_of(r), SSEMU_MEV_NIC_ARRIVE, src, 1, pi);
}


/* Port @p of switch @sw as a new model has it (@op zeroed before). */
void sw_port_init(struct ssemu_region *r, uint32_t sw, uint32_t p,
		  struct ssemu_swport *op)
{
	const struct ssemu_link_params *lp = link_of(r, p);
	uint32_t tc, vc;

	op->last.in = UINT32_MAX;
	op->delay = lp->delay;
	op->bytes_per_ps = (double)lp->rate_bps / 8e12;
	if (lp->rate_bps && 8 * SSEMU_PS_PER_S % lp->rate_bps == 0 &&
	    8 * SSEMU_PS_PER_S / lp->rate_bps <= UINT32_MAX)
		op->ps_per_byte = (uint32_t)(8 * SSEMU_PS_PER_S / lp->rate_bps);
	ssemu_topo_peer(&r->topo, sw, p, &op->peer);
	if (op->peer.kind == SSEMU_PORT_NONE)
		return;
	/* a NIC has one buffer per class (VC 0); a switch input has one per
	 * class and VC 1.. (VC 0 is only ever fed by NICs) */
	for (tc = 0; tc < r->config.ntclass; tc++)
		for (vc = op->peer.kind == SSEMU_PORT_ENDPOINT ? 0 : 1;
		     vc < (op->peer.kind == SSEMU_PORT_ENDPOINT ? 1 : SSEMU_NVC);
		     vc++)
			op->vq[tc * SSEMU_NVC + vc].credits =
				buf_cells(&r->config);
}

/* The model of switch @sw, instantiated on first use. */
struct ssemu_switch_sh *sw_get(struct ssemu_region *r, uint32_t sw,
			       uint32_t *inst)
{
	uint32_t *map = ssemu_r_swmap(r), i, p;
	struct ssemu_switch_sh *s;

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
	memset(s, 0, r->switch_bytes);
	s->sw = sw;
	ssemu_r_swmap(r)[r->topo.nswitches + i] = sw;
	/* (its VOQ rows are found from its index, ssemu_r_voq_row; a VOQ is
	 * empty while its input's bit in inmask is clear: its head and tail
	 * are not read then, so they need no initialising) */
	for (p = 0; p < r->topo.radix; p++)
		sw_port_init(r, sw, p, ssemu_sw_port(r, s, p));
	map[sw] = i;
	*inst = i;
	return s;
}

/* The pipeline latency at switch @sw of the packet of identity @uid
 * (pkt_uid) arriving on VC @vc: drawn from a stream of its own, keyed by
 * the switch, the packet and its hop (so the draw is the same whatever
 * else went through the switch before it). */
SSEMU_HOT
ssemu_time_t sw_pipeline(struct ssemu_region *r, uint32_t sw, uint64_t uid,
			 uint32_t vc)
{
	const struct ssemu_config *c = &r->config;
	uint64_t comp = 0x100000000ULL + sw, d0, d1;
	uint64_t key = uid ^ (uint64_t)vc << 48;
	struct ssemu_rng g;
	double v, z, u;
	uint32_t i;

	/* The usual case in two draws (the rare path's test, then a normal
	 * the ziggurat takes at once), without building the stream; the
	 * rest from the stream, from its start: the same values. */
	ssemu_rng_keyed2(c->seed, comp, key, &d0, &d1);
	ssemu_zig_ensure();
	if ((uint64_t)(((__uint128_t)d0 * 1000) >> 64) != 0 &&
	    ssemu_zig_try_draw(d1, &i, &u, &z)) {
		v = (double)c->sw_lat_mean + z * c->sw_lat_sd;
	} else {
		ssemu_rng_keyed(&g, c->seed, comp, key);
		/* A rare slow path: about one packet in a thousand. */
		if (ssemu_rng_below(&g, 1000) == 0)
			return c->sw_lat_max +
			       ssemu_rng_below(&g, c->sw_lat_max -
							   c->sw_lat_min + 1);
		v = (double)c->sw_lat_mean +
		    ssemu_rng_normal(&g) * c->sw_lat_sd;
	}
	if (v < (double)c->sw_lat_min)
		v = (double)c->sw_lat_min;
	if (v > (double)c->sw_lat_max)
		v = (double)c->sw_lat_max;
	return (ssemu_time_t)v;
}

/*
 * A packet will arrive at input @in of switch model @inst at @t: it waits
 * out the pipeline there and joins a VOQ.  The sender computes this when it
 * puts the packet on the wire (one event per hop instead of two); the
 * pipeline never lets a packet overtake an earlier one from the same input.
 * Its route through the switch is decided now (ssemu_ready_b).
 */
SSEMU_HOT
void arrive_at_switch(struct ssemu_region *r, uint32_t inst, uint32_t in,
		      uint32_t pi, ssemu_time_t t)
{
	struct ssemu_swport *ip = ssemu_r_port(r, inst, in);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t sw = ssemu_sw_id(r, inst);
	ssemu_time_t ready = t + sw_pipeline(r, sw, pkt_uid(pkt), pkt->vc);
	uint32_t out = model_route(r)->select(&r->topo, sw, pkt);

	if (SSEMU_BAD(r, out >= r->topo.radix, "switch %u: packet %u (VC %u) "
		      "routed from port %u to port %u", sw, pi, pkt->vc, in,
		      out))
		return;
	pkt->sw_arrive = t;
	pkt->in_port = in;
	if (ready < ip->last_ready)
		ready = ip->last_ready;
	ip->last_ready = ready;
	schedule(r, ready, SSEMU_MEV_SW_READY, inst, ssemu_ready_b(in, out),
		 pi);
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

	/* (a sender already gone is nic_resend_fire's to sort out) */
	schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RESEND, nic, pi,
		 nic < r->config.max_nics ? ssemu_r_nic(r, nic)->gen : 0);
}

/* Hand a credit for (@port's input buffer, @vcl) back to whoever feeds
 * it. */
SSEMU_HOT
static inline void return_credit(struct ssemu_region *r,
				 struct ssemu_switch_sh *s, uint32_t port,
				 uint32_t vcl, uint32_t cells)
{
	const struct ssemu_swport *ip = ssemu_sw_port(r, s, port);
	const struct ssemu_peer *peer = &ip->peer;
	ssemu_time_t t = now_of(r) + ip->delay;
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
	if (pinst == SSEMU_NONE)
		return;
	/* (group windows: a credit into another group joins its output's
	 * ring as any credit does, when that group has not run past the
	 * credit's time; else the event's schedule reports the windows
	 * too long) */
	if (unlikely(r->config.group_windows) &&
	    peer->kind == SSEMU_PORT_GLOBAL &&
	    !gw_schedulable(r, t, SSEMU_MEV_SW_CREDIT, pinst)) {
		schedule(r, t, SSEMU_MEV_SW_CREDIT, pinst,
			 peer->port | vcl << 8, cells);
		return;
	}
	credit_to_switch(r, pinst, peer->port, vcl, cells, t);
}

/*
 * The credit ring of whoever feeds input @in of switch @s, which
 * return_credit writes when the packet leaves: asked for now, while the
 * packet is routed and queued (on a large fabric it is far from the
 * caches: the upstream port last saw the packet a hop ago).
 */
static SSEMU_PREFETCH_FN void prefetch_upstream(struct ssemu_region *r,
					       const struct ssemu_switch_sh *s,
					       uint32_t in)
{
	const struct ssemu_peer *peer = &ssemu_sw_port(r, s, in)->peer;
	uint32_t pinst;

	if (peer->kind != SSEMU_PORT_LOCAL && peer->kind != SSEMU_PORT_GLOBAL)
		return;
	pinst = ssemu_sw_inst(r, peer->sw);
	if (pinst != SSEMU_NONE && peer->port < r->topo.radix)
		__builtin_prefetch(&ssemu_r_port(r, pinst, peer->port)->cr_head,
				   1);
}

/*
 * The input of the switch beyond output @op, where the packet's send
 * (arrive_at_switch) keeps the pipeline in order: asked for now, while the
 * packet is queued and arbitrated (on a large fabric it is far from the
 * caches).  Nothing is asked for before the peer's model is known.
 */
static SSEMU_PREFETCH_FN void
prefetch_downstream(struct ssemu_region *r, const struct ssemu_swport *op)
{
	uint32_t pinst = op->peer_inst;

	if (pinst && pinst - 1 < r->sw_used && op->peer.port < r->topo.radix)
		__builtin_prefetch(&ssemu_r_port(r, pinst - 1,
						 op->peer.port)->last_ready,
				   1);
}

/* The arbitration's view of output @out of switch model @inst at @now. */
static inline struct ssemu_arb_view arb_view(struct ssemu_region *r,
					     uint32_t inst, uint32_t out,
					     ssemu_time_t now)
{
	return (struct ssemu_arb_view){
		.op = ssemu_r_port(r, inst, out),
		.voq = ssemu_r_voq_at(r, 0, 0),
		.row = ssemu_r_voq_row(r, inst, out, 0),
		.radix = r->topo.radix, .pkt = ssemu_r_pkt(r, 0),
		.c = &r->config, .now = now, .edge = port_is_edge(r, out),
	};
}

static inline __attribute__((always_inline)) void
sw_send(struct ssemu_region *r, struct ssemu_switch_sh *s, uint32_t inst,
	uint32_t out, uint32_t in, uint32_t vcl, uint32_t pi,
	const struct ssemu_cc_queue_view *known);

SSEMU_HOT
void sw_ready(struct ssemu_region *r, uint32_t inst, uint32_t in,
	      uint32_t out, uint32_t pi)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t vcl = pkt->tclass * SSEMU_NVC + pkt->vc;
	const struct ssemu_cc_ops *cc = model_cc(r);
	ssemu_time_t now = now_of(r);
	struct ssemu_cc_queue_view v, *known = NULL;
	struct ssemu_swport *op;
	bool sole = false;

	if (in < r->topo.radix)
		prefetch_upstream(r, s, in);

	/* (a packet on its last VC goes to a NIC: a port has no vclass
	 * above its classes' last) */
	if (SSEMU_BAD(r, out >= r->topo.radix || in >= 64 ||
			 (pkt->vc + 1 >= SSEMU_NVC && !port_is_edge(r, out)),
		      "switch %u: packet %u (VC %u) routed from port %u to "
		      "port %u", s->sw, pi, pkt->vc, in, out))
		return;

	/* A lossy class drops rather than wait: a packet of any kind finding
	 * a full queue for its output goes (its input buffer slot with it);
	 * the end-to-end retry sends it again: a data packet from its
	 * message's go-back-N, an acknowledgement or RMA result by
	 * resend_later. */
	op = ssemu_sw_port(r, s, out);
	if (!port_is_edge(r, out))
		prefetch_downstream(r, op);
	if (r->config.tclass[pkt->tclass].lossy &&
	    op->vq[vcl].queued >= r->config.port_buf_pkts) {
		op->drops++;
		ssemu_tel_drop(r, pkt->tclass, pkt->type);
		return_credit(r, s, in, vcl, pkt_cells(pkt->bytes));
		if (pkt->type == SSEMU_PKT_DATA)
			pkt_free(r, pi);
		else
			resend_later(r, pi);
		return;
	}
	/* An output free with nothing queued sends the packet at once if
	 * its arbitration would pick it (the only candidate): what looks at
	 * the queues now sees it counted there, as if it had joined them
	 * and been taken off at once. */
	if (!op->nqueued && op->busy_until <= now && model_arb(r)->sole &&
	    likely(ssemu_model_shortcut != SSEMU_SHORTCUT_OFF)) {
		struct ssemu_cr cr = cr_of_port(r, op);
		struct ssemu_arb_view av;

		cr_settle(r, &cr, now);
		av = arb_view(r, inst, out, now);
		sole = model_arb(r)->sole(&av, in, vcl, pkt->bytes);
	}
	if (sole) {
		op->vq[vcl].queued++;
		op->queued_tc[pkt->tclass]++;
		op->nqueued++;
	} else {
		voq_push(r, inst, in, out, vcl, pi);
	}
	if (cc->on_queue && cc_paced(pkt) && port_is_edge(r, out)) {
		struct ssemu_cc_frame f;

		cc_queue_view(r, op, pkt, &v, true, NULL);
		if (cc->on_queue(&v, &f))
			schedule(r, now + f.delay, SSEMU_MEV_FGFC,
				 pkt->src_nic, pkt->win, f.arg);
		/* (the send below, at once, sees the same pair) */
		known = &v;
	}
	if (port_is_edge(r, out))
		ssemu_tel_queue(r, pkt->tclass, op->queued_tc[pkt->tclass]);
	if (!sole) {
		sw_try_send(r, inst, out);
		return;
	}
	op->vq[vcl].queued--;
	op->queued_tc[pkt->tclass]--;
	op->nqueued--;
	if (unlikely(ssemu_model_shortcut == SSEMU_SHORTCUT_COUNT))
		ssemu_model_shortcuts++;
	sw_send(r, s, inst, out, in, vcl, pi, known);
}

/*
 * Count a data packet @pkt sent on output @op that follows the previous
 * packet of its message from the same input @in, with nothing else queued
 * for the output (every vclass with packets is @vcl, and only @in has any
 * of it): a hop an exact packet train would have carried.  Then @pkt is
 * the one the next must follow (anything else sent breaks the run).
 */
static inline void train_count(struct ssemu_region *r,
			       struct ssemu_swport *op,
			       const struct ssemu_pkt *pkt, uint32_t in,
			       uint32_t vcl)
{
	if (pkt->type != SSEMU_PKT_DATA) {
		op->last.in = UINT32_MAX;
		return;
	}
	if (op->last.in == in && op->last.msg == pkt->msg &&
	    op->last.msg_gen == pkt->msg_gen && op->last.idx + 1 == pkt->idx &&
	    !(op->vclmask & ~(1ull << vcl)) &&
	    !(op->vq[vcl].inmask & ~(1ull << in)))
		r->train_hops++;
	op->last.msg = pkt->msg;
	op->last.msg_gen = pkt->msg_gen;
	op->last.idx = pkt->idx;
	op->last.in = in;
}

SSEMU_HOT
void sw_try_send(struct ssemu_region *r, uint32_t inst, uint32_t out)
{
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_swport *op = ssemu_sw_port(r, s, out);
	struct ssemu_cr cr = cr_of_port(r, op);
	struct ssemu_arb_view av;
	uint32_t in, vcl, pi;
	ssemu_time_t now = now_of(r), retry = UINT64_MAX, t;

	/* (sw_wake keeps a look due by then and adds an earlier one: a
	 * look due later, for a cap or a credit, must not hold back one
	 * the output needs sooner) */
	if (op->busy_until > now) {
		/* serialising: look again when the link is free */
		sw_wake(r, inst, out, op->busy_until);
		return;
	}
	cr_settle(r, &cr, now);
	av = arb_view(r, inst, out, now);
	/* one packet queued: the only candidate, if pick would take it */
	if (op->nqueued == 1 && op->vclmask && model_arb(r)->sole &&
	    likely(ssemu_model_shortcut != SSEMU_SHORTCUT_OFF)) {
		vcl = (uint32_t)__builtin_ctzll(op->vclmask);
		if (vcl < r->config.ntclass * SSEMU_NVC &&
		    op->vq[vcl].inmask) {
			in = (uint32_t)__builtin_ctzll(op->vq[vcl].inmask);
			pi = ssemu_r_voq_at(r,
					    *ssemu_r_voq_row(r, inst, out, vcl),
					    in)->head;
			if (pi < r->config.max_pkts &&
			    model_arb(r)->sole(&av, in, vcl,
					       ssemu_r_pkt(r, pi)->bytes)) {
				if (unlikely(ssemu_model_shortcut ==
					     SSEMU_SHORTCUT_COUNT))
					ssemu_model_shortcuts++;
				goto picked;
			}
		}
	}
	if (!model_arb(r)->pick(&av, &in, &vcl, &retry)) {
		/* held back by a cap: look again when it allows */
		if (retry != UINT64_MAX)
			sw_wake(r, inst, out, retry);
		/* or maybe waiting for a credit on its way: when it is in */
		if (op->nqueued && cr_pending(&cr, &t))
			sw_wake(r, inst, out, t);
		return;
	}
picked:
	if (SSEMU_BAD(r, in >= r->topo.radix ||
			 vcl >= r->config.ntclass * SSEMU_NVC ||
			 (vcl % SSEMU_NVC + 1 >= SSEMU_NVC &&
			  !port_is_edge(r, out)),
		      "switch %u output %u: arbitration picked input %u, "
		      "vclass %u", s->sw, out, in, vcl))
		return;
	pi = voq_pop(r, inst, in, out, vcl);
	if (pi == SSEMU_NONE || pkt_hop_bad(r, pi))
		return;
	sw_send(r, s, inst, out, in, vcl, pi, NULL);
}

/* Packet @pi, of (@in, @vcl), taken off output @out's queues: serialise
 * it onto the link, hand its input buffer back upstream, and have it
 * arrive at the far end (@known: congestion control's view of it as it
 * joined the queues, this instant; NULL: none). */
static inline __attribute__((always_inline)) void
sw_send(struct ssemu_region *r, struct ssemu_switch_sh *s, uint32_t inst,
	uint32_t out, uint32_t in, uint32_t vcl, uint32_t pi,
	const struct ssemu_cc_queue_view *known)
{
	struct ssemu_swport *op = ssemu_sw_port(r, s, out);
	const struct ssemu_cc_ops *cc = model_cc(r);
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	struct ssemu_peer peer;
	uint32_t tc, dvcl, nic, pinst, cells;
	ssemu_time_t ser, now = now_of(r);

	ssemu_auth_port_count(s, op, pkt->vni, pkt->bytes);
	if (cc->on_dequeue && cc_paced(pkt) && port_is_edge(r, out)) {
		struct ssemu_cc_queue_view v;

		cc_queue_view(r, op, pkt, &v, false, known);
		cc->on_dequeue(&v);
		ssemu_pair_put(r, v.pair, now);
	}
	tc = pkt->tclass;
	cells = pkt_cells(pkt->bytes);
	dvcl = next_vcl(r, out, vcl);
	SSEMU_INVARIANT(r, op->vq[dvcl].credits >= cells, "switch %u output "
			"%u vclass %u: %u cells sent on %u credits", s->sw, out,
			dvcl, cells, op->vq[dvcl].credits);
	op->vq[dvcl].credits -= cells;
	op->cls[tc].pkts++;
	op->cls[tc].bytes += pkt->bytes;
	r->pkt_hops++;
	train_count(r, op, pkt, in, vcl);
	r->switch_lat_sum += now - pkt->sw_arrive;
	r->swlat_hist[SSEMU_MIN((now - pkt->sw_arrive) / SSEMU_PS_PER_NS,
				(uint64_t)SSEMU_SWLAT_BINS - 1)]++;
	return_credit(r, s, in, vcl, cells);
	pkt->vc = (uint8_t)(dvcl % SSEMU_NVC);

	ser = port_ser_time(r, op, out, pkt->bytes);
	op->busy_until = now + ser;
	/* only if something waits for this output; a later arrival looks
	 * at busy_until itself */
	if (op->nqueued)
		sw_wake(r, inst, out, now + ser);
	peer = op->peer;
	if (peer.kind == SSEMU_PORT_ENDPOINT) {
		if (pkt->type == SSEMU_PKT_DATA &&
		    cc->mark(op->queued_tc, tc)) {
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
uint32_t sw_port_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
		      uint32_t port, uint32_t tc)
{
	struct ssemu_swport *op = ssemu_sw_port(r, s, port);
	uint32_t load = waits_behind(r, op->queued_tc, tc), cr;

	if (!port_is_edge(r, port)) {
		struct ssemu_cr ring = cr_of_port(r, op);

		cr_settle(r, &ring, now_of(r));
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

uint32_t sw_nb_load(struct ssemu_region *r, struct ssemu_switch_sh *s,
		    uint32_t port, uint64_t target, uint16_t copy, uint32_t tc)
{
	const struct ssemu_peer *pe = &ssemu_sw_port(r, s, port)->peer;
	ssemu_time_t now = now_of(r);
	struct ssemu_swport *np;
	uint32_t inst, q;

	if (pe->kind != SSEMU_PORT_LOCAL && pe->kind != SSEMU_PORT_GLOBAL)
		return 0;
	inst = ssemu_sw_inst(r, pe->sw);
	if (inst == SSEMU_NONE)
		return 0;	/* never used: nothing queued there */
	q = ssemu_topo_min_port(&r->topo, pe->sw, target, copy);
	np = ssemu_sw_port(r, ssemu_r_switch(r, inst), q);
	if (np->peer.kind == SSEMU_PORT_ENDPOINT)
		return 0;
	if (now - np->nb_time >= SSEMU_NB_PERIOD) {
		memcpy(np->nb_seen, np->nb_next, sizeof(np->nb_seen));
		memcpy(np->nb_next, np->queued_tc, sizeof(np->nb_next));
		np->nb_time = now;
	}
	return waits_behind(r, np->nb_seen, tc);
}
