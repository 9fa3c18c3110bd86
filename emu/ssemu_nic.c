/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NICs (Cassini-like): the injection queue, the choice of the next packet
 * to send (acknowledgements first, then RMA results, then the first queued
 * message whose destination's window is open and whose class has a credit
 * on the edge link), serialisation onto the edge link; on the receiving
 * side reassembly, acknowledgements (coalesced, with their timer), the
 * end-to-end retry of lossy classes (go-back-N, RTO) and the resending of
 * acknowledgements and results a lossy class dropped.
 */
#include "ssemu_link.h"

SSEMU_HOT
void ssemu_model_enqueue_msg(struct ssemu_region *r, uint32_t nic,
			     uint32_t mi)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->post_time = now_of(r);
	m->seq = ++r->msg_seq;
	m->mflags = SSEMU_MSGF_QUEUED;
	m->vni = ssemu_auth_ep_vni(r, ssemu_msg_ep(r, mi));
	/* (what the modelled jobs' clock hold counts: with none, their
	 * section's page is not touched) */
	if (r->gen_neps && !ssemu_gen_msg(r, mi))
		ssemu_gen_real_in(r, m);
	if (!injq_push(r, n, nic, mi))
		return;
	n->stats.tx_msgs++;
	n->stats.tx_bytes += m->len;
	ssemu_tel_post(r, nic, m->tclass);
}

int ssemu_model_post_at(struct ssemu_region *r, uint32_t nic, uint32_t mi,
			ssemu_time_t t)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	if (t <= now_of(r))
		return -EINVAL;
	/* (what gw_schedule_time would fail the fabric for is the
	 * caller's error here) */
	if (r->config.group_windows &&
	    !gw_schedulable(r, t, SSEMU_MEV_POST, nic))
		return -EINVAL;
	m->mflags = SSEMU_MSGF_DUE;
	schedule(r, t, SSEMU_MEV_POST, nic, mi, m->gen);
	return ssemu_broken(r) ? -EIO : 0;
}

bool ssemu_model_post_now_ok(struct ssemu_region *r, uint32_t nic)
{
	return !r->config.group_windows ||
	       gw_schedulable(r, now_of(r), SSEMU_MEV_NIC_KICK, nic);
}

/* The POST event of message @mi (generation @gen) of NIC @nic: it enters
 * the NIC now, which looks at once, unless its endpoint's close discarded
 * it meanwhile (ssemu_model_ep_drop_due, which moves its generation on). */
void ssemu_model_post_fire(struct ssemu_region *r, uint32_t nic, uint32_t mi,
			   uint32_t gen)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	if (m->gen != gen || !(m->mflags & SSEMU_MSGF_DUE) ||
	    ssemu_ep_nic(r, ssemu_msg_ep(r, mi)) != nic)
		return;
	/* (as the runner takes an endpoint's tx ring) */
	ssemu_model_enqueue_msg(r, nic, mi);
	ssemu_model_nic_kick(r, nic);
}

/* What routing at injection asks the source switch. */
struct route_ctx {
	struct ssemu_region *r;
	struct ssemu_switch_sh *s;
	uint32_t tc;
};

static uint32_t route_load(void *arg, uint32_t port)
{
	struct route_ctx *x = arg;

	return sw_port_load(x->r, x->s, port, x->tc);
}

static uint32_t route_nb_load(void *arg, uint32_t port, uint64_t target,
			      uint16_t copy)
{
	struct route_ctx *x = arg;

	return sw_nb_load(x->r, x->s, port, target, copy, x->tc);
}

/* The path of a packet of @m about to be injected by @nic on pair @pr
 * (the routing policy's choice).  An ordered flow keeps its path while
 * anything is in flight. */
static void nic_route(struct ssemu_region *r, uint32_t nic,
		      const struct ssemu_msg *m, struct ssemu_pkt *pkt,
		      struct ssemu_pair *pr)
{
	const struct ssemu_route_ops *ro = model_route(r);
	const struct ssemu_topo *t = &r->topo;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint16_t *path = &pr->path;
	uint32_t inflight = pr->window;
	bool ordered = (m->flags & SSEMU_SEND_ORDERED) ||
		       r->config.tclass[pkt->tclass].ordered;
	struct ssemu_route_view v;
	struct ssemu_rng g;
	struct route_ctx x;
	uint32_t inst, sw;

	pkt->via = 0;
	pkt->phase = 0;
	if (!ro->choose)
		return;
	if (ordered && inflight) {
		pkt->via = *path;
		return;
	}
	x.r = r;
	x.tc = pkt->tclass;
	sw = ssemu_topo_ep_switch(t, n->port);
	x.s = sw_get(r, sw, &inst);
	if (!x.s) {
		*path = 0;
		return;
	}
	/* the choice's draws: the packet's own, at its source switch */
	ssemu_rng_keyed(&g, r->config.seed, 0x200000000ULL + sw,
			pkt_uid(pkt));
	v = (struct ssemu_route_view){
		.topo = t, .rng = &g, .sw = sw,
		.src_port = n->port,
		.bias = SSEMU_MAX(r->config.tclass[pkt->tclass].route_bias, -7),
		.ordered = ordered, .load = route_load,
		.nb_load = route_nb_load, .arg = &x,
	};
	ro->choose(&v, pkt, path);
}

/* What congestion control sees of pair @pr. */
static inline struct ssemu_cc_pair_view pair_view(struct ssemu_region *r,
						  struct ssemu_pair *pr)
{
	return (struct ssemu_cc_pair_view){
		.pair = pr, .now = now_of(r),
		.nic_window = r->config.nic_window,
	};
}

/* Packets pair @pr (NULL: one without an entry, fresh) may have in
 * flight now (congestion control's say). */
static inline uint32_t cc_window_of(struct ssemu_region *r,
				    struct ssemu_pair *pr)
{
	struct ssemu_pair tmp;
	struct ssemu_cc_pair_view v;

	if (!pr) {
		ssemu_pair_fresh(&r->config, &tmp);
		pr = &tmp;
	}
	v = pair_view(r, pr);
	return model_cc(r)->window(&v);
}

/* @nic put a paced packet on the wire for the NIC its pair @pr (NULL:
 * one without an entry, which is not paced) goes to: congestion control
 * may pause the pair (the NIC looks again when the pause ends). */
SSEMU_HOT
static void cc_sent(struct ssemu_region *r, uint32_t nic,
		    struct ssemu_pair *pr)
{
	const struct ssemu_cc_ops *cc = model_cc(r);
	struct ssemu_cc_pair_view v;
	ssemu_time_t until;

	if (!cc->on_send || !pr)
		return;
	v = pair_view(r, pr);
	if (cc->on_send(&v, &until))
		schedule(r, until, SSEMU_MEV_NIC_KICK, nic, 0, 0);
}

/* A flow-control frame reached @nic: congestion control paces its
 * traffic to @dnic. */
void nic_fgfc_arrive(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
		     uint32_t arg)
{
	const struct ssemu_cc_ops *cc = model_cc(r);
	uint32_t tc = ssemu_cc_frame_tclass(arg);
	struct ssemu_cc_pair_view v;

	if (nic >= r->config.max_nics || dnic >= r->config.max_nics ||
	    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED || !cc->on_frame)
		return;
	v = pair_view(r, ssemu_pair_get(r, nic, dnic, now_of(r)));
	if (!v.pair)
		return;
	if (cc->on_frame(&v, arg) && tc < r->config.ntclass) {
		ssemu_tel_throttle(r, tc);
		ssemu_gen_throttle(r, nic);
	}
	ssemu_pair_put(r, v.pair, now_of(r));
}

/* The last packet of message @mi arrived: to its endpoint, or (an RMA
 * request) to the target side.  @return true if the RMA request waits for
 * the owner of the target memory (rma_deliver). */
SSEMU_HOT
static bool nic_deliver(struct ssemu_region *r, uint32_t mi)
{
	uint32_t epi;

	if (ssemu_gen_msg(r, mi)) {
		ssemu_gen_deliver(r, mi);	/* a modelled job's: counted */
		return false;
	}
	if (recv_target(r, mi, &epi))
		return false;
	if (epi < r->gen_neps && !ssemu_r_msg(r, mi)->rma_op) {
		ssemu_gen_sink(r, mi);	/* to a modelled rank: counted */
		return false;
	}
	if (ssemu_r_msg(r, mi)->rma_op)
		return rma_deliver(r, mi, epi);
	deliver_recv(r, mi, epi);
	return false;
}

/* Data packet @pi of @m, live, is acknowledged now: with every arrival
 * not acknowledged yet. */
static void data_ack_count(struct ssemu_nic_sh *n, struct ssemu_msg *m,
			   struct ssemu_pkt *pkt)
{
	pkt->count = (uint16_t)(m->arrived - m->rx_acked);
	pkt->marked = (uint8_t)m->rx_marked;
	m->rx_marked = 0;
	n->rx_unacked -= SSEMU_MIN(n->rx_unacked, pkt->count - 1u);
	m->rx_acked = m->arrived;
}

/* The data packet @pi that arrived at NIC @nic turns into its
 * acknowledgement (a stale one too: the source's window slot must close
 * either way). */
SSEMU_HOT
static void data_to_ack(struct ssemu_region *r, struct ssemu_nic_sh *n,
			uint32_t nic, uint32_t pi)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);

	pkt->type = SSEMU_PKT_ACK;
	pkt->vc = 0;
	pkt->via = 0;	/* acknowledgements go back minimally */
	pkt->phase = 0;
	pkt->bytes = r->config.pkt_overhead;
	pkt->dst_port = pkt->src_port;
	pkt->src_port = n->port;
	/* (a packet of this NIC's now: its identity too) */
	pkt->seq = n->pkt_seq++;
	pkt->trip = 0;
	pkt->copy = (uint16_t)((n->port * 2654435761u + pkt->dst_port) >> 7);
	if (ackq_push(r, n, nic, pi))
		ssemu_model_nic_kick(r, nic);
}

/*
 * The last packet @pi of an RMA request that waited for its target
 * memory's owner (ssemu_xuid.c), which runs this: the operation is done
 * now, at the model's time, and the packet goes on as nic_arrive would
 * have sent it on, into its acknowledgement.
 */
void nic_rma_resume(struct ssemu_region *r, uint32_t pi)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t nic = ssemu_port_nic(r, pkt->dst_port);
	struct ssemu_nic_sh *n;
	struct ssemu_msg *m;

	if (nic >= r->config.max_nics || pkt->msg >= r->nmsgs) {
		lose_pkt(r, pi, -EHOSTUNREACH);
		return;
	}
	n = ssemu_r_nic(r, nic);
	if (n->state != SSEMU_NIC_ATTACHED || n->gen != pkt->to_gen) {
		lose_pkt(r, pi, -EHOSTUNREACH);	/* the target went */
		return;
	}
	m = ssemu_r_msg(r, pkt->msg);
	if (m->gen == pkt->msg_gen) {
		nic_deliver(r, pkt->msg);	/* (parked once: never again) */
		pkt->status = m->status;
		data_ack_count(n, m, pkt);
	}
	data_to_ack(r, n, nic, pi);
}


#define SSEMU_INJ_LOOKAHEAD 64	/* queued messages scanned per injection */

/* Packet @pi of message @mi, made by NIC @n at endpoint port @src, to
 * @dst, VC 0. */
SSEMU_HOT
struct ssemu_pkt *pkt_init(struct ssemu_region *r, uint32_t pi,
			   struct ssemu_nic_sh *n, uint8_t type, uint32_t mi,
			   uint32_t src, uint32_t dst, uint32_t payload)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	const struct ssemu_msg *m = ssemu_r_msg(r, mi);

	memset(pkt, 0, sizeof(*pkt));
	pkt->seq = n->pkt_seq++;
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
 * The next packet of RMA results the NIC sends back, or NONE (@pr: the
 * pair entry of this NIC -> the initiator's, resp_pair's, or NULL).  Like
 * acknowledgements they are neither windowed nor acknowledged; they do take
 * the edge link, credits and packets like any other.
 */
uint32_t nic_next_resp(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_pair *pr)
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
	pkt = pkt_init(r, pi, n, SSEMU_PKT_RESP, mi, n->port,
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
	cc_sent(r, nic, pr);
	return pi;
}

/*
 * The pair entry of the first queued RMA result (this NIC -> the
 * initiator's NIC), or NULL: it has none, or the queue's head is out of
 * range (nic_next_resp finds it bad).  *@paused: congestion control holds
 * the pair back (FGFC pacing).  One look for the whole injection: nothing
 * between it and the packet's cc_sent adds or moves a pair entry.
 */
static struct ssemu_pair *resp_pair(struct ssemu_region *r, uint32_t nic,
				    bool *paused)
{
	uint32_t mi = ssemu_r_nic(r, nic)->resp_head, inic;
	struct ssemu_pair *pr;

	*paused = false;
	if (mi >= r->nmsgs)
		return NULL;
	inic = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
	if (inic >= r->config.max_nics)
		return NULL;
	pr = ssemu_pair_find(r, nic, inic);
	*paused = cc_window_of(r, pr) == 0;
	return pr;
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
	uint32_t nblocked = 0, pi, mi, prev, next, dnic, dport, chunk, k, i, tc;
	struct msg_snap snap;
	uint32_t allowed;
	struct ssemu_pair *pr;
	uint64_t at;
	struct ssemu_msg *m;
	struct ssemu_pkt *pkt;

	if (n->ack_head != SSEMU_NONE) {
		pi = n->ack_head;
		if (pkt_bad(r, pi) || pkt_link_bad(r, ssemu_r_pkt(r, pi)->next,
						   "a NIC's ack queue") ||
		    /* (acknowledgements, and RMA results sent again after
		     * a lossy class dropped them: nic_resend_fire) */
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
	if (n->resp_head != SSEMU_NONE) {
		bool paused;

		pr = resp_pair(r, nic, &paused);
		if (!paused)
			return nic_next_resp(r, nic, pr);
	}
	prev = SSEMU_NONE;
	for (mi = n->inj_head, k = 0; mi != SSEMU_NONE &&
				      k < SSEMU_INJ_LOOKAHEAD;
	     prev = mi, mi = next, k++) {
		if (msg_bad(r, mi, &snap) ||
		    SSEMU_BAD(r, ssemu_ep_nic(r, ssemu_msg_ep(r, mi)) != nic ||
			      !(ssemu_r_msg(r, mi)->mflags & SSEMU_MSGF_QUEUED),
			      "NIC %u: its injection queue holds slot %u, not "
			      "one of its own queued messages", nic, mi))
			return SSEMU_NONE;
		m = ssemu_r_msg(r, mi);
		next = m->next;
		if (msg_link_bad(r, next, "a NIC's injection queue"))
			return SSEMU_NONE;
		tc = snap.tclass;
		dport = SSEMU_ADDR_PORT(m->dst);
		dnic = ssemu_port_nic(r, dport);
		if (dnic == SSEMU_NONE) {
			/* Nobody attached there (any more): send no more of
			 * it.  It completes with an error now, or with the
			 * last acknowledgement of what already left. */
			injq_unlink(r, n, prev, mi, next);
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
		pr = ssemu_pair_lookup(r, nic, dnic, &at);
		allowed = SSEMU_MIN(r->config.nic_window, cc_window_of(r, pr));
		if (pr && pr->window >= allowed) {
			n->stats.window_stalls++;
			goto blocked;
		}
		chunk = pkt_chunk(snap.len,
				  (uint64_t)snap.sent * r->config.mtu,
				  r->config.mtu);
		if (n->credits[tc] <
		    pkt_cells(chunk + r->config.pkt_overhead)) {
			n->stats.credit_stalls++;
			goto blocked;
		}
		if (!pr)
			pr = ssemu_pair_make(r, nic, dnic, at, now_of(r));
		if (!pr) {
			/* no room for the pair's state (logged): the send
			 * fails as an unreachable one does */
			injq_unlink(r, n, prev, mi, next);
			m->npkts = m->sent;
			if (m->acked == m->sent)
				fail_queued(r, mi, -ENOSPC);
			else
				m->status = -ENOSPC;
			mi = prev;
			continue;
		}
		pi = nic_pkt_alloc(r, n);
		if (pi == SSEMU_NONE) {
			ssemu_pair_put(r, pr, now_of(r));
			return SSEMU_NONE;
		}
		pkt = pkt_init(r, pi, n, SSEMU_PKT_DATA, mi, n->port, dport,
			       chunk);
		pkt->tclass = (uint8_t)tc;
		pkt->win = dnic;
		pkt->src_nic = nic;
		pkt->src_gen = n->gen;
		nic_route(r, nic, m, pkt, pr);
		/* the window is full now: ask for an acknowledgement at once
		 * rather than at the next coalescing point */
		pkt->ack_req = ++pr->window >= allowed;
		pkt->idx = snap.sent;
		pkt->epoch = m->epoch;
		/* as a link does: the payload's CRC goes with it, checked
		 * where it arrives */
		pkt->crc = ssemu_gen_msg(r, mi) ? 0 :
			   ssemu_r_crc(r, 0,
				       msg_payload(r, m, &snap,
						   (uint64_t)snap.sent *
							   r->config.mtu),
				       chunk);
		if (r->config.tclass[tc].lossy &&
		    !(m->mflags & SSEMU_MSGF_RTO)) {
			m->mflags |= SSEMU_MSGF_RTO;
			schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RTO, nic,
				 mi, m->gen);
		}
		cc_sent(r, nic, pr);
		m->sent = snap.sent + 1;
		if (m->sent == snap.npkts)
			injq_unlink(r, n, prev, mi, next);
		return pi;
blocked:
		if (nblocked < SSEMU_INJ_LOOKAHEAD)
			blocked[nblocked++] = dnic;
	}
	return SSEMU_NONE;
}

SSEMU_HOT
void ssemu_model_nic_kick(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_switch_sh *s;
	struct ssemu_cr cr = cr_of_nic(n);
	struct ssemu_pkt *pkt;
	uint32_t pi, inst, esw, eport;
	ssemu_time_t ser, now = now_of(r), t;

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
	/* a lone read's results, with nothing else in the fabric: a train
	 * (ssemu_train.c) */
	if (unlikely(n->resp_head != SSEMU_NONE) &&
	    n->ack_head != SSEMU_NONE && ssemu_model_trains &&
	    !ssemu_engine_pending(ssemu_r_engine(r)) &&
	    ssemu_train_resp(r, nic))
		return;
	/* the rest of a lone message, its first packet out, with nothing
	 * else in the fabric: a train (ssemu_train_send.c) */
	if (n->inj_head != SSEMU_NONE && ssemu_model_trains &&
	    ssemu_engine_pending(ssemu_r_engine(r)) == 1 &&
	    ssemu_train_send(r, nic))
		return;
	cr_settle(r, &cr, now);
	pi = nic_next_pkt(r, nic);
	if (pi == SSEMU_NONE) {
		/* maybe waiting for a credit on its way: look when it is in */
		if (nic_has_work(n) && cr_pending(&cr, &t))
			nic_wake(r, nic, t);
		return;
	}
	esw = edge_switch(r, n->port, &eport);
	/* (the edge switch's model, made on its first packet) */
	inst = ssemu_sw_inst(r, esw);
	s = inst != SSEMU_NONE ? ssemu_r_switch(r, inst) :
				 sw_get(r, esw, &inst);
	if (!s) {
		lose_pkt(r, pi, -ENOSPC);
		return;
	}
	pkt = ssemu_r_pkt(r, pi);
	SSEMU_INVARIANT(r, n->credits[pkt->tclass] >= pkt_cells(pkt->bytes),
			"NIC %u class %u: %u cells sent on %u credits", nic,
			pkt->tclass, pkt_cells(pkt->bytes),
			n->credits[pkt->tclass]);
	n->credits[pkt->tclass] -= pkt_cells(pkt->bytes);
	n->stats.tx_pkts++;
	if (pkt->type == SSEMU_PKT_DATA || pkt->type == SSEMU_PKT_RESP)
		ssemu_tel_tx(r, nic, pkt->tclass,
			     pkt->bytes - r->config.pkt_overhead);
	/* (the edge link's, as the switch's end of it has it) */
	ser = port_ser_time(r, ssemu_sw_port(r, s, eport), eport, pkt->bytes);
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
	struct msg_snap snap;

	if (msg_bad(r, pkt->msg, &snap))
		return true;
	if (ssemu_gen_msg(r, pkt->msg))
		return false;	/* a modelled job's: no payload */
	if (off + chunk <= snap.len &&
	    ssemu_r_crc(r, 0, msg_payload(r, m, &snap, off), chunk) == pkt->crc)
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

SSEMU_HOT
void nic_arrive(struct ssemu_region *r, uint32_t nic, uint32_t direct,
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
				if (nic_deliver(r, pkt->msg)) {
					/* kept until the owner did it */
					ssemu_xuid_park(r, pi);
					return;
				}
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
			data_ack_count(n, m, pkt);
		}
		data_to_ack(r, n, nic, pi);
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
			if (ssemu_auth_reply_refused(r, nic, m, pkt))
				pkt->status = -EIO;
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
		struct ssemu_pair *pr = pkt->win < r->config.max_nics ?
			ssemu_pair_get(r, nic, pkt->win, now_of(r)) : NULL;

		if (pr) {
			struct ssemu_cc_pair_view v = pair_view(r, pr);
			uint32_t cw = pr->cwnd;

			pr->window -= SSEMU_MIN(pr->window, pkt->count);
			model_cc(r)->on_ack(&v, pkt->count, pkt->marked);
			if (pr->cwnd < cw) {
				ssemu_tel_throttle(r, tc);
				ssemu_gen_throttle(r, nic);
			}
			ssemu_pair_put(r, pr, now_of(r));
		}
		if (m->gen == pkt->msg_gen && m->acked < m->npkts) {
			if (ssemu_auth_reply_refused(r, nic, m, pkt))
				pkt->status = -EIO;
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
void nic_ack_timer(struct ssemu_region *r, uint32_t nic, uint32_t mi,
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
	pkt->seq = n->pkt_seq++;
	pkt->type = SSEMU_PKT_ACK;
	pkt->tclass = (uint8_t)m->tclass;
	pkt->vni = m->vni;
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
	if (ackq_push(r, n, nic, pi))
		ssemu_model_nic_kick(r, nic);
}

void nic_resend_fire(struct ssemu_region *r, uint32_t nic, uint32_t pi,
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
	pkt->trip++;
	pkt->vc = 0;
	pkt->via = 0;
	pkt->phase = 0;
	if (pkt->type == SSEMU_PKT_RESP)
		pkt->marked = 0;
	if (ackq_push(r, n, nic, pi))
		ssemu_model_nic_kick(r, nic);
}

/*
 * End-to-end retry of a lossy class's message (go-back-N): every
 * SSEMU_RTO while the message is not all delivered, the packets sent but
 * not arrived in order are taken as lost -- their window slots close, the
 * message's epoch moves on so that stragglers are dropped on arrival -- and
 * sent again from the first missing one.
 */
void nic_rto_fire(struct ssemu_region *r, uint32_t nic, uint32_t mi,
		  uint32_t gen)
{
	struct ssemu_nic_sh *n;
	struct ssemu_msg *m;
	uint32_t dnic, lost;
	struct ssemu_pair *pr;

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
		pr = ssemu_pair_find(r, nic, dnic);
		lost = m->sent - m->arrived;
		if (pr) {
			pr->window -= (uint16_t)SSEMU_MIN((uint32_t)pr->window,
							  lost);
			ssemu_pair_put(r, pr, now_of(r));
		}
		if (m->sent == m->npkts) {
			/* it had left the injection queue: back at its end */
			if (!injq_push(r, n, nic, mi))
				return;
		}
		m->sent = m->arrived;
		m->epoch++;
		ssemu_tel_retry(r, m->tclass);
		ssemu_model_nic_kick(r, nic);
	}
	schedule(r, now_of(r) + SSEMU_RTO, SSEMU_MEV_RTO, nic, mi, gen);
}
