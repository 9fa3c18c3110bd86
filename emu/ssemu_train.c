/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet trains: a NIC's queued RMA results, with the acknowledgement of
 * their request ahead of them, taken through the fabric in one step
 * instead of one event per packet per hop, when nothing else is in the
 * fabric to meet them.  The bulk of a read (the provider's rendezvous
 * too) flows this way.
 *
 * It forms where the per-packet model would put the acknowledgement on
 * the wire (the target NIC's kick, the request just arrived), only when
 * the engine holds no event at all: then, until the engine's current run
 * reaches its limit, nothing can happen in the fabric but these packets
 * (what is posted enters at the next run).  Two passes:
 *
 *  1. the plan, without a write: each packet's times, from its injection
 *     at the NIC (back to back) through each switch of the path (the
 *     keyed pipeline draw, the input's FIFO, the output's serialisation)
 *     to its arrival at the initiator; and the checks that nothing would
 *     hold one back or do other than a lone packet does -- the NIC's and
 *     every output's credits at each send (with those coming back), the
 *     credit rings never full, the packet pool never empty, the edge
 *     queue below congestion control's threshold, the results' pair
 *     neither paused nor paced, the run's limit past the last arrival.
 *     A check that fails: no train, the per-packet model goes on as ever.
 *  2. the step: the packets' actions in the order the engine would run
 *     them (time; at one instant arrivals, then pipelines' ends, then
 *     outputs' looks, then the NIC; per stream in packet order), the
 *     model clock at each, doing what the per-packet handlers do that
 *     outlives the instant -- through the model's own functions where
 *     they exist (the NIC's taking of the last result, the arrivals of
 *     the acknowledgement and the last result, the arbiter's sole send,
 *     the telemetry, the credit rings, the pair table's look at the last
 *     result's dequeue) and by the same writes elsewhere (counts, busy
 *     times, the pipeline's FIFO times, the other results' making and
 *     arrival, with what the plan checked left out).  What only lives
 *     between events (VOQ links, a look scheduled) is left out: every
 *     packet leaves each output at the time it would have.
 *
 * Times, completions, counters, telemetry and the state left behind are
 * those of the per-packet model (tests/unit/test_train.c runs both and
 * compares them byte for byte); the engine runs one event for the whole
 * train.
 *
 * A lone message's train (ssemu_train_send.c) takes its data and its
 * acknowledgements as two legs with the same parts: a leg's path, times,
 * credit checks, and its packets' sends and pipelines' ends in the
 * switches (ssemu_train_int.h).
 */
#include <stdlib.h>

#include "ssemu_train_int.h"

uint32_t ssemu_model_trains = 1;
uint64_t ssemu_model_trains_run;

/*
 * The engine run in progress in this process: its fabric and limit.  Not
 * thread-local (a library loaded with dlopen has little static TLS room,
 * and LeakSanitizer fails on the rest); a thread running another
 * fabric's engine may overwrite it, so a train reads fabric, limit,
 * fabric, and takes the limit only if both reads name its own fabric
 * (the runner writes the fabric first: a limit read between two reads
 * of one fabric is that fabric's).
 */
static const struct ssemu_region *run_r;
static ssemu_time_t run_limit;

SSEMU_HOT
void ssemu_model_run_begin(const struct ssemu_region *r, ssemu_time_t limit)
{
	__atomic_store_n(&run_r, r, __ATOMIC_SEQ_CST);
	__atomic_store_n(&run_limit, limit, __ATOMIC_SEQ_CST);
}

SSEMU_HOT
void ssemu_model_run_end(const struct ssemu_region *r)
{
	const struct ssemu_region *mine = r;

	__atomic_compare_exchange_n(&run_r, &mine, NULL, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	/* (what is delivered outside a run has no event) */
	ssemu_gw_ev_r = NULL;
}

ssemu_time_t train_run_limit(const struct ssemu_region *r)
{
	const struct ssemu_region *a = __atomic_load_n(&run_r,
						       __ATOMIC_SEQ_CST);
	ssemu_time_t t = __atomic_load_n(&run_limit, __ATOMIC_SEQ_CST);

	return a == r && __atomic_load_n(&run_r, __ATOMIC_SEQ_CST) == r ? t :
									 0;
}

bool train_model_usual(struct ssemu_region *r)
{
	return !ssemu_broken(r) && !ssemu_model_perturb &&
	       !ssemu_load_relaxed(&ssemu_model_deferring) &&
	       !ssemu_model_credit_events && !ssemu_model_extra_looks &&
	       !ssemu_model_fresh_places &&
	       ssemu_model_shortcut == SSEMU_SHORTCUT_ON && !r->gen_neps &&
	       !r->config.group_windows &&
	       !r->nparked && !r->pkt_waiters &&
	       (!model_cc(r)->on_queue ||
		!strcmp(model_cc(r)->name, "endpoint-pair"));
}

void *train_buf(struct train_buf *b, size_t bytes)
{
	if (bytes > b->cap) {
		free(b->p);
		b->cap = SSEMU_MAX(bytes, 2 * b->cap);
		b->p = malloc(b->cap);
		if (!b->p)
			b->cap = 0;
	}
	return b->p;
}

void train_buf_trim(struct train_buf *b)
{
	if (b->cap > TRAIN_BUF_KEEP) {
		free(b->p);
		b->p = NULL;
		b->cap = 0;
	}
}

bool train_alloc(struct train *tr, struct train_buf *b)
{
	size_t rows = (size_t)tr->npkts * tr->w * sizeof(ssemu_time_t);
	void *p = train_buf(b, rows + (size_t)tr->npkts *
					      (3 * sizeof(uint32_t) +
					       sizeof(ssemu_time_t)));

	if (!p)
		return false;
	tr->t = p;
	tr->wake = (ssemu_time_t *)((char *)p + rows);
	tr->bytes = (uint32_t *)(tr->wake + tr->npkts);
	tr->cells = tr->bytes + tr->npkts;
	tr->pi = tr->cells + tr->npkts;
	return true;
}

/*
 * Is packet @k lean: a result but the last?  A lean result takes a
 * packet of the pool from its send to its arrival, as any, but nothing
 * reads what it would hold (its size, class, VNI and path are the
 * plan's; it arrives with no status, on its message's VNI), so it is
 * neither made nor written: only the last result and the
 * acknowledgement, which the model's functions take at their arrival.
 */
static inline bool tr_lean(const struct train *tr, uint32_t k)
{
	return tr->kind == TK_RESP && k && k + 1 < tr->npkts;
}

/* Is switch @sw on @tr's path? */
static bool on_path(const struct train *tr, uint32_t sw)
{
	uint32_t h;

	for (h = 0; tr && h < tr->nhops; h++)
		if (tr->hop[h].sw == sw)
			return true;
	return false;
}

/*
 * The path from the edge switch of @tr's NIC to port @dport, as an
 * acknowledgement's routing takes it (minimal; a read's results go the
 * same way, from the same NIC to the same port).  Every output on it
 * idle, with nothing queued and no look due; every link with a delay (so
 * a credit put back never counts at the instant it is put); hop 0's input
 * with no packet in its pipeline past @ready0 (a send's first packet is
 * there already).  A switch on it not modelled yet is made where the first
 * packet reaches it, as the per-packet model makes it, if there is room
 * for it (room for those of @other, the send's other leg, too: a switch
 * both legs cross is made by @other's packets, which come first).
 */
bool train_path(struct train *tr, uint32_t dport, uint16_t copy,
		ssemu_time_t ready0, const struct train *other)
{
	struct ssemu_region *r = tr->r;
	struct ssemu_pkt sp;
	struct ssemu_switch_sh *s;
	struct ssemu_peer peer;
	struct train_hop *h;
	uint32_t inst, in, out, next, sw, fresh = other ? other->nfresh : 0;

	memset(&sp, 0, sizeof(sp));
	sp.tclass = (uint8_t)tr->tc;
	sp.dst_port = dport;
	sp.copy = copy;
	tr->nfresh = 0;
	sw = edge_switch(r, tr->n->port, &in);
	inst = ssemu_sw_inst(r, sw);
	if (inst == SSEMU_NONE ? !on_path(other, sw) : inst >= r->sw_used)
		return false;
	for (tr->nhops = 0;; tr->nhops++) {
		if (tr->nhops == TRAIN_HOPS || in >= r->topo.radix)
			return false;
		h = &tr->hop[tr->nhops];
		h->sw = sw;
		h->inst = inst;
		h->in = in;
		s = inst != SSEMU_NONE ? ssemu_r_switch(r, inst) : NULL;
		h->s = s;
		out = model_route(r)->select(&r->topo, sw, &sp);
		if (out >= r->topo.radix)
			return false;
		h->out = out;
		if (s) {
			h->op = ssemu_sw_port(r, s, out);
			h->in_delay = ssemu_sw_port(r, s, in)->delay;
			h->last_ready = ssemu_sw_port(r, s, in)->last_ready;
		} else {
			memset(&h->fresh, 0, sizeof(h->fresh));
			sw_port_init(r, sw, out, &h->fresh.port);
			h->op = &h->fresh.port;
			h->in_delay = link_of(r, in)->delay;
			h->last_ready = 0;
		}
		h->edge = port_is_edge(r, out);
		h->vcl = tr->tc * SSEMU_NVC + sp.vc;
		if (!h->edge && sp.vc + 1 >= SSEMU_NVC)
			return false;
		h->dvcl = next_vcl_at(h->edge, h->vcl);
		if (h->op->nqueued || h->op->done_pending || !h->op->delay ||
		    !h->in_delay || h->op->busy_until > now_of(r) ||
		    h->last_ready > (tr->nhops ? now_of(r) : ready0))
			return false;
		peer = h->op->peer;
		if (h->edge) {
			tr->nhops++;
			return peer.kind == SSEMU_PORT_ENDPOINT &&
			       peer.ep == dport;
		}
		if ((peer.kind != SSEMU_PORT_LOCAL &&
		     peer.kind != SSEMU_PORT_GLOBAL) ||
		    peer.sw >= r->topo.nswitches || peer.port >= r->topo.radix)
			return false;
		next = h->op->peer_inst ? h->op->peer_inst - 1 :
					  ssemu_sw_inst(r, peer.sw);
		if (next == SSEMU_NONE) {
			/* (room for every model the train makes) */
			if (!on_path(other, peer.sw)) {
				tr->nfresh++;
				if (r->sw_used + ++fresh >
				    r->config.max_switches)
					return false;
			}
		} else if (next >= r->sw_used) {
			return false;
		}
		sp.vc = (uint8_t)(h->dvcl % SSEMU_NVC);
		sw = peer.sw;
		inst = next;
		in = peer.port;
	}
}

/* Each packet's times at the NIC, the switches and the initiator. */
static void train_times(struct train *tr, const struct ssemu_pkt *ack)
{
	struct ssemu_region *r = tr->r;
	const struct ssemu_config *c = &r->config;
	struct ssemu_swport *eport =
		ssemu_sw_port(r, tr->hop[0].s, tr->hop[0].in);
	ssemu_time_t last_ready[TRAIN_HOPS], free_at[TRAIN_HOPS];
	ssemu_time_t nic_free = now_of(r), at, ser, rdy;
	uint32_t k, h, vc;
	uint64_t uid;

	for (h = 0; h < tr->nhops; h++) {
		last_ready[h] = tr->hop[h].last_ready;
		free_at[h] = tr->hop[h].op->busy_until;
	}
	for (k = 0; k < tr->npkts; k++) {
		uid = k ? pkt_uid_of(tr->n->port, tr->n->pkt_seq + k - 1, 0) :
			  pkt_uid(ack);
		/* the NIC: back to back on the edge link */
		*T(tr, k, T_INJ) = nic_free;
		ser = port_ser_time(r, eport, tr->hop[0].in, tr->bytes[k]);
		nic_free += ser;
		at = nic_free + c->edge.delay;
		vc = 0;
		for (h = 0; h < tr->nhops; h++) {
			const struct train_hop *hp = &tr->hop[h];

			*T(tr, k, T_ARR(h)) = at;
			rdy = at + sw_pipeline(r, hp->sw, uid, vc);
			last_ready[h] = rdy = SSEMU_MAX(rdy, last_ready[h]);
			*T(tr, k, T_READY(h)) = rdy;
			at = SSEMU_MAX(rdy, free_at[h]);
			*T(tr, k, T_DEP(h)) = at;
			ser = port_ser_time(r, hp->op, hp->out, tr->bytes[k]);
			free_at[h] = at + ser;
			at += ser + hp->op->delay;
			vc = hp->dvcl % SSEMU_NVC;
		}
		*T(tr, k, T_FIN) = at;
	}
}

/*
 * The credits' check of train_credits_hold by a bound, without
 * simulating the ring.  A credit comes back at most D after its packet's
 * send (D the largest put + @delay - send of the train); the packets'
 * sends are at least g apart.  So at the send of packet k, or at its put
 * (the last send before it settled every credit due by k's own send: a
 * packet is put after it is sent), the results j < k with credits out
 * have (k - j) g < D: at most (D - 1) / g of them, and the
 * acknowledgement ahead of them one more.  If that many of the largest
 * packets and one more fit the credits the ring's owner holds now, and
 * that many and the ring's entries fit the ring, every send finds its
 * cells and every put its room.  False: the bound says nothing
 * (simulate).
 */
static bool credits_bound(struct train *tr, int64_t avail, uint32_t n0,
			  uint32_t send, uint32_t put, ssemu_time_t delay)
{
	ssemu_time_t d = 0, g = UINT64_MAX, s, prev = 0, x;
	uint32_t k, cmax = 0;
	uint64_t out;

	if (tr->npkts < 3)
		return false;
	for (k = 0; k < tr->npkts; k++) {
		s = *T(tr, k, send);
		x = *T(tr, k, put) + delay;
		if (x <= s || (k && s <= prev))
			return false;
		d = SSEMU_MAX(d, x - s);
		if (k > 1)
			g = SSEMU_MIN(g, s - prev);
		prev = s;
		cmax = SSEMU_MAX(cmax, tr->cells[k]);
	}
	out = 1 + (d - 1) / g;
	return out < SSEMU_CR_RING - n0 &&
	       avail >= (int64_t)((out + 1) * cmax);
}

/*
 * Do the credits of @key in ring @cr hold?  Its owner sends packet k at
 * time T(k, @send), taking cells(k); the credit for packet k comes back
 * into the ring, put there at T(k, @put) and due @delay later.  A send
 * settles the ring (every credit due by then counts); nothing else does.
 * Every send must find its cells, and the ring must have room at every
 * put counting every credit not settled by a send strictly before it.
 */
bool train_credits_hold(struct train *tr, const struct ssemu_cr *cr,
			uint32_t key, uint32_t send, uint32_t put,
			ssemu_time_t delay, uint32_t first, bool room)
{
	uint32_t head = *cr->head, n0 = *cr->n, k, i, j, x;
	int64_t avail = cr->credits[key * cr->stride];
	ssemu_time_t last = 0, settled = 0;
	bool any = false;

	if (n0 > SSEMU_CR_RING || head >= SSEMU_CR_RING)
		return false;
	if (n0)
		last = cr->time[(head + n0 - 1) % SSEMU_CR_RING];
	/* (the ring keeps its credits in time order) */
	if (n0 && last > *T(tr, 0, put) + delay)
		return false;
	if (credits_bound(tr, avail, room ? n0 : 0, send, put, delay))
		return true;
	/* the sends, each with the credits due by its time */
	for (k = first, i = 0, j = 0; k < tr->npkts; k++) {
		ssemu_time_t s = *T(tr, k, send);

		for (; i < n0; i++) {
			x = (head + i) % SSEMU_CR_RING;
			if (cr->time[x] > s)
				break;
			if (cr->key[x] == key)
				avail += cr->cells[x];
		}
		for (; j < k && *T(tr, j, put) + delay <= s; j++)
			avail += tr->cells[j];
		if (avail < tr->cells[k])
			return false;
		avail -= tr->cells[k];
	}
	if (!room)
		return true;
	/* the ring's room at each put (x, i: the first credit there before
	 * and the first earlier put not settled yet; dues rise in both) */
	for (j = 0, k = 0, i = 0, x = 0; j < tr->npkts; j++) {
		ssemu_time_t p = *T(tr, j, put);

		for (; k < tr->npkts && *T(tr, k, send) < p; k++) {
			if (k < first)
				continue;	/* (before the plan: in n0) */
			settled = *T(tr, k, send);
			any = true;
		}
		if (any) {
			while (x < n0 &&
			       cr->time[(head + x) % SSEMU_CR_RING] <= settled)
				x++;
			while (i < j && *T(tr, i, put) + delay <= settled)
				i++;
		}
		if (n0 - x + j - i >= SSEMU_CR_RING)
			return false;
	}
	return true;
}

bool train_leg_credits_hold(struct train *tr, bool room)
{
	const struct ssemu_config *c = &tr->r->config;
	struct ssemu_cr cr = cr_of_nic(tr->n);
	uint32_t h;

	/* the NIC's (back from the edge switch as each packet leaves it),
	 * then each output's (back from the next switch as the packet
	 * leaves that, or from the NIC at the leg's end as it arrives) */
	if (!train_credits_hold(tr, &cr, tr->tc, T_INJ, T_DEP(0),
				tr->hop[0].in_delay, tr->first, room))
		return false;
	for (h = 0; h < tr->nhops; h++) {
		cr = cr_of_port(tr->r, tr->hop[h].op);
		if (h + 1 < tr->nhops ?
			    !train_credits_hold(tr, &cr, tr->hop[h].dvcl,
						T_DEP(h), T_DEP(h + 1),
						tr->hop[h + 1].in_delay, 0,
						room) :
			    !train_credits_hold(tr, &cr, tr->hop[h].dvcl,
						T_DEP(h), T_FIN, c->edge.delay,
						0, room))
			return false;
	}
	return true;
}

/*
 * The packet pool's room: the acknowledgement holds its packet already;
 * the NIC takes one for each result at its send and the initiator gives
 * each back on arrival (an arrival at the instant of a send first).
 */
static bool pool_holds(struct train *tr)
{
	struct ssemu_region *r = tr->r;
	int64_t free0 = (int64_t)r->config.max_pkts - r->pkts_used;
	uint32_t k, back = 0;

	for (k = 1; k < tr->npkts; k++) {
		while (back < k && *T(tr, back, T_FIN) <= *T(tr, k, T_INJ))
			back++;
		if (free0 + back - (k - 1) < 1)
			return false;
	}
	return true;
}

/*
 * What the initiator's edge output would queue: no depth at which
 * congestion control sends a flow-control frame (an arrival counts
 * itself and the packets before it not yet gone; at one instant an
 * arrival comes before a look, and a packet sent as it arrives is gone
 * for the arrivals after it).
 */
bool train_edge_queue_holds(struct train *tr)
{
	uint32_t h = tr->nhops - 1, k, gone = 0;

	if (!model_cc(tr->r)->on_queue)
		return true;
	for (k = 0; k < tr->npkts; k++) {
		ssemu_time_t rk = *T(tr, k, T_READY(h));

		while (gone < k &&
		       (*T(tr, gone, T_DEP(h)) < rk ||
			(*T(tr, gone, T_DEP(h)) == rk &&
			 *T(tr, gone, T_READY(h)) == rk)))
			gone++;
		if (k - gone + 1 >= SSEMU_CC_MARK_QUEUE)
			return false;
	}
	return true;
}

/* Pass 1: may the train go?  Fills @tr, its rows in @b. */
static bool train_plan(struct train *tr, uint32_t nic,
		       struct train_buf *b)
{
	struct ssemu_region *r = tr->r;
	const struct ssemu_config *c = &r->config;
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic), *in;
	const struct ssemu_pkt *ack;
	const struct ssemu_msg *m;
	struct ssemu_pair *pr;
	uint32_t k, h, last;

	/* nothing else in the fabric, now or until the run's end; the
	 * model in its usual form (the order tests' variants run it per
	 * packet) */
	if (ssemu_engine_pending(e) || e->held || e->nnear || e->nwheel ||
	    e->nfar || (tr->limit = train_run_limit(r)) <= e->now ||
	    !train_model_usual(r))
		return false;
	tr->r = r;
	tr->n = n;
	tr->nic = nic;
	/* the target's NIC: the acknowledgement alone in its queue, this
	 * read's results alone in theirs, nothing else to send */
	if (n->state != SSEMU_NIC_ATTACHED || n->busy_until > e->now ||
	    n->done_pending || n->wait_pkt || n->inj_head != SSEMU_NONE ||
	    n->ack_head >= c->max_pkts || n->resp_head >= r->nmsgs)
		return false;
	/* (what the model reads of a packet from the segment, checked as
	 * its arrival's event would be) */
	if (pkt_bad(r, n->ack_head))
		return false;
	tr->ack = n->ack_head;
	ack = ssemu_r_pkt(r, tr->ack);
	tr->mi = n->resp_head;
	m = ssemu_r_msg(r, tr->mi);
	tr->tc = m->tclass;
	tr->vni = m->vni;
	if (ack->type != SSEMU_PKT_ACK || ack->next != SSEMU_NONE ||
	    ack->via || ack->phase || ack->vc || ack->trip ||
	    ack->src_port != n->port || ack->tclass != tr->tc ||
	    ack->dst_port != SSEMU_ADDR_PORT(m->src) ||
	    !m->rma_op || !(m->mflags & SSEMU_MSGF_RESPQ) ||
	    m->resp_next != SSEMU_NONE || m->resp_sent ||
	    !m->resp_npkts || m->resp_npkts >= TRAIN_MAX_PKTS ||
	    tr->tc >= c->ntclass || c->tclass[tr->tc].lossy ||
	    c->tclass[tr->tc].max_pct < 100 || !c->edge.delay)
		return false;
	/* the initiator: attached, with nothing of its own to send */
	tr->inic = ssemu_port_nic(r, ack->dst_port);
	if (tr->inic >= c->max_nics || tr->inic == nic ||
	    tr->inic != ssemu_ep_nic(r, ssemu_msg_ep(r, tr->mi)))
		return false;
	in = ssemu_r_nic(r, tr->inic);
	if (in->state != SSEMU_NIC_ATTACHED || in->ack_head != SSEMU_NONE ||
	    in->inj_head != SSEMU_NONE || in->resp_head != SSEMU_NONE ||
	    m->resp_arrived)
		return false;
	tr->in = in;
	tr->dport = ack->dst_port;
	/* congestion control: the results' pair neither paused nor paced
	 * (a pause or a gap to come would hold a result back); at the edge
	 * output only the count of the pair's queued packets (an entry
	 * made for it if it has none: room for one) */
	pr = ssemu_pair_find(r, nic, tr->inic);
	if (pr ? pr->pause > e->now || pr->slow > e->now :
		 model_cc(r)->on_queue && r->pairs_used >= r->max_pairs)
		return false;
	tr->npkts = 1 + m->resp_npkts;
	tr->kind = TK_RESP;
	tr->first = 0;
	if (!train_path(tr, ack->dst_port, ack->copy, now_of(r), NULL) ||
	    !tr->hop[tr->nhops - 1].s)
		return false;
	/* its last output is the initiator's edge port, where the
	 * initiator hands its credits back */
	h = ssemu_sw_inst(r, edge_switch(r, ack->dst_port, &last));
	if (h != tr->hop[tr->nhops - 1].inst ||
	    last != tr->hop[tr->nhops - 1].out)
		return false;
	tr->w = T_HOP + 3 * tr->nhops;
	if (!train_alloc(tr, b))
		return false;
	tr->bytes[0] = ack->bytes;
	tr->cells[0] = pkt_cells(ack->bytes);
	for (k = 1; k < tr->npkts; k++) {
		tr->bytes[k] = pkt_chunk(m->rma_len, (uint64_t)(k - 1) * c->mtu,
					 c->mtu) + c->pkt_overhead;
		tr->cells[k] = pkt_cells(tr->bytes[k]);
	}
	train_times(tr, ack);
	/* (and within the actions' keys: time << 8) */
	if (*T(tr, tr->npkts - 1, T_FIN) > tr->limit ||
	    *T(tr, tr->npkts - 1, T_FIN) >> 55)
		return false;
	/* (the credit rings' room too: a read's step cannot have a credit
	 * come as an event) */
	return train_leg_credits_hold(tr, true) && pool_holds(tr) &&
	       train_edge_queue_holds(tr);
}

/* ------------------------------------------------------------------ */
/* Pass 2: the step                                                    */
/* ------------------------------------------------------------------ */

/* The engine's order of a train's actions at one instant (ev_key's). */
enum { A_ARRIVE, A_READY, A_DEP, A_KICK, A_TAIL, A_WAKE };
static const uint8_t act_prio[] = {
	[A_ARRIVE] = 3, [A_READY] = 4, [A_DEP] = 5, [A_KICK] = 6,
	[A_TAIL] = 6, [A_WAKE] = 7,
};

/* Hop @h's views for pass 2, once its switch is modelled. */
void train_hop_views(struct train *tr, uint32_t h)
{
	struct ssemu_region *r = tr->r;
	struct train_hop *hp = &tr->hop[h];

	hp->cr = cr_of_port(r, hp->op);
	hp->up = h ? cr_of_port(r, tr->hop[h - 1].op) : cr_of_nic(tr->n);
	hp->av = (struct ssemu_arb_view){
		.op = hp->op, .voq = ssemu_r_voq_at(r, 0, 0),
		.row = ssemu_r_voq_row(r, hp->inst, hp->out, 0),
		.radix = r->topo.radix, .pkt = ssemu_r_pkt(r, 0),
		.c = &r->config, .edge = hp->edge,
	};
}

/* The model of hop @h's switch, made as the train's first packet is sent
 * toward it (sw_send's sw_get). */
static bool train_make(struct train *tr, uint32_t h)
{
	struct train_hop *hp = &tr->hop[h];

	hp->s = sw_get(tr->r, hp->sw, &hp->inst);
	if (!hp->s) {
		ssemu_fail(tr->r, "a packet train found no room to model "
			   "switch %u", hp->sw);
		return false;
	}
	hp->op = ssemu_sw_port(tr->r, hp->s, hp->out);
	train_hop_views(tr, h);
	/* (the next hop's credits come back to this output) */
	if (h + 1 < tr->nhops)
		tr->hop[h + 1].up = hp->cr;
	return true;
}

/* Packet @k leaves output @h at @now. */
void train_act_dep(struct train *tr, uint32_t h, uint32_t k,
		    ssemu_time_t now)
{
	struct ssemu_region *r = tr->r;
	struct train_hop *hp = &tr->hop[h];
	struct ssemu_swport *op = hp->op;
	const struct ssemu_cc_ops *cc = model_cc(r);
	struct ssemu_pkt *pkt = NULL;
	uint32_t bytes = tr->bytes[k], cells = tr->cells[k], tc = tr->tc;
	ssemu_time_t ser, t, lat = now - *T(tr, k, T_ARR(h));

	/* the acknowledgement and the last result are packets of the
	 * segment, which the model's functions read on their arrival
	 * (checked as a hop checks them: another process may have written
	 * them); the others are the plan's alone (tr_lean) */
	if (!tr_lean(tr, k)) {
		if (pkt_hop_bad(r, tr->pi[k]))
			return;
		pkt = ssemu_r_pkt(r, tr->pi[k]);
		bytes = pkt->bytes;
		cells = pkt_cells(bytes);
	}

	/* the output's look: its ring settled, the arbiter's turn taken
	 * (what its pick does for a lone candidate) */
	cr_settle(r, &hp->cr, now);
	hp->av.now = now;
	if (!model_arb(r)->sole(&hp->av, hp->in, hp->vcl, bytes)) {
		ssemu_fail(r, "a packet train's send found no credit at "
			   "switch %u output %u", hp->s->sw, hp->out);
		return;
	}
	if (hp->edge)
		op->queued_tc[tc]--;	/* (act_ready counted it in) */
	/* sw_send */
	ssemu_auth_port_count(hp->s, op, pkt ? pkt->vni : tr->vni, bytes);
	/* congestion control's count of the pair's packets at the edge
	 * output goes up and down with each result (train_plan: no frame);
	 * what outlives the train is its last dequeue's look at the pair,
	 * which gives a fresh pair's entry back (a pair fresh at an earlier
	 * dequeue is fresh at the last: pacing only runs out) */
	/* (a send's data: its pair's window is open until the packet's
	 * acknowledgement is in, so no dequeue gives its entry back) */
	if (tr->kind == TK_RESP && k == tr->npkts - 1 && cc->on_dequeue &&
	    hp->edge)
		ssemu_pair_put(r, ssemu_pair_find(r, tr->nic, tr->inic), now);
	op->vq[hp->dvcl].credits -= cells;
	op->cls[tc].pkts++;
	op->cls[tc].bytes += bytes;
	r->pkt_hops++;
	if (tr->kind == TK_DATA) {
		/* (sw_send's train_count: nothing else at the output, and
		 * the packet before it the previous one of its message from
		 * the same input, but for the first) */
		if (op->last.in == hp->in && op->last.msg == pkt->msg &&
		    op->last.msg_gen == pkt->msg_gen &&
		    op->last.idx + 1 == pkt->idx)
			r->train_hops++;
		op->last.msg = pkt->msg;
		op->last.msg_gen = pkt->msg_gen;
		op->last.idx = pkt->idx;
		op->last.in = hp->in;
	} else {
		op->last.in = UINT32_MAX;	/* (not a data packet) */
	}
	r->switch_lat_sum += lat;
	r->swlat_hist[SSEMU_MIN(lat / SSEMU_PS_PER_NS,
				(uint64_t)SSEMU_SWLAT_BINS - 1)]++;
	/* the input's credit, back upstream (return_credit; the look a
	 * credit asks for at the NIC, nic_wake's, kept as it would be: a
	 * send's step runs the NIC's own, ssemu_train_send.c) */
	t = now + hp->in_delay;
	if (tr->kind != TK_RESP) {
		/* (a credit the ring has no room for comes as an event,
		 * which the send's step runs in its place) */
		if (!h)
			credit_to_nic(r, tr->nic, tc, cells, t);
		else
			credit_to_switch(r, tr->hop[h - 1].inst,
					 tr->hop[h - 1].out, hp->vcl, cells, t);
	} else if (!cr_put(&hp->up, h ? hp->vcl : tc, cells, t)) {
		goto ring;
	} else if (!h) {
		struct ssemu_nic_sh *n = tr->n;

		if (n->busy_until <= t && nic_has_work(n) &&
		    !(n->kick_at > now && n->kick_at <= t)) {
			n->kick_at = t;
			tr->wake[tr->nwake++] = t;
		}
	}
	ser = port_ser_time(r, op, hp->out, bytes);
	op->busy_until = now + ser;
	if (pkt)
		pkt->vc = (uint8_t)(hp->dvcl % SSEMU_NVC);
	if (hp->edge) {
		if (pkt)	/* (the peer's NIC: the plan's) */
			pkt->to_gen = tr->in->gen;
		return;
	}
	if (!tr->hop[h + 1].s && !train_make(tr, h + 1))
		return;
	if (!op->peer_inst)
		op->peer_inst = tr->hop[h + 1].inst + 1;
	if (pkt) {
		pkt->sw_arrive = *T(tr, k, T_ARR(h + 1));
		pkt->in_port = tr->hop[h + 1].in;
	}
	ssemu_sw_port(r, tr->hop[h + 1].s, tr->hop[h + 1].in)->last_ready =
		*T(tr, k, T_READY(h + 1));
	return;
ring:
	ssemu_fail(r, "a packet train found a credit ring full at switch %u "
		   "input %u", hp->s->sw, hp->in);
}

/* Packet @k's pipeline at switch @h, the initiator's edge switch, ends
 * at @now: it joins the output's queue (or leaves at once, as the output
 * is free). */
void train_act_ready(struct train *tr, uint32_t h, uint32_t k,
		      ssemu_time_t now)
{
	struct ssemu_region *r = tr->r;
	const struct train_hop *hp = &tr->hop[h];
	struct ssemu_swport *op = hp->op;
	uint32_t tc = tr->tc;

	op->queued_tc[tc]++;
	ssemu_tel_queue(r, tc, op->queued_tc[tc]);
	if (*T(tr, k, T_DEP(h)) == now)
		train_act_dep(tr, h, k, now);
}

/* The NIC puts packet @k on its edge link at @now. */
static void act_kick(struct train *tr, uint32_t k, ssemu_time_t now)
{
	struct ssemu_region *r = tr->r;
	struct ssemu_nic_sh *n = tr->n;
	struct train_hop *h0 = &tr->hop[0];
	struct ssemu_swport *ep0;	/* the edge link, its switch's end */
	struct ssemu_pkt *pkt;
	uint32_t pi;

	cr_settle(r, &h0->up, now);	/* (hop 0's upstream: the NIC's ring) */
	if (!k) {
		pi = tr->ack;
		n->ack_head = ssemu_r_pkt(r, pi)->next;
	} else if (k + 1 < tr->npkts) {
		/* what nic_next_resp does for a result but the last, with
		 * what train_plan checked left out (the queue, the credits,
		 * the pool; the pair neither paused nor paced: congestion
		 * control does nothing at the send) */
		struct ssemu_msg *m = ssemu_r_msg(r, tr->mi);

		pi = pkt_alloc(r);
		if (pi == SSEMU_NONE)
			goto fail;
		n->pkt_seq++;	/* (pkt_init's numbering) */
		m->resp_sent++;
	} else {
		/* the last: the queue moves on, the target's side is done */
		pi = nic_next_resp(r, tr->nic, NULL);
		if (pi == SSEMU_NONE)
			goto fail;
	}
	tr->pi[k] = pi;
	/* (the class and size the plan took: the packet's as made, which
	 * another process may write over in the segment meanwhile) */
	n->credits[tr->tc] -= tr->cells[k];
	n->stats.tx_pkts++;
	if (k)
		ssemu_tel_tx(r, tr->nic, tr->tc,
			     tr->bytes[k] - r->config.pkt_overhead);
	ep0 = ssemu_sw_port(r, h0->s, h0->in);
	n->busy_until = now + port_ser_time(r, ep0, h0->in, tr->bytes[k]);
	if (!tr_lean(tr, k)) {
		pkt = ssemu_r_pkt(r, pi);
		pkt->sw_arrive = *T(tr, k, T_ARR(0));
		pkt->in_port = h0->in;
	}
	ep0->last_ready = *T(tr, k, T_READY(0));
	return;
fail:
	ssemu_fail(r, "a packet train's NIC %u could not send result %u",
		   tr->nic, k);
}

/*
 * Result @k (not the last) arrives at the initiator at @now: what
 * nic_arrive does for it, with what train_plan checked left out (the
 * initiator attached, the result its operation's, the edge switch's
 * credit ring with room and no packet waiting at its output) and what
 * a lean result has not (tr_lean).
 */
static void act_arrive(struct train *tr, uint32_t k, ssemu_time_t now)
{
	struct ssemu_region *r = tr->r;
	struct ssemu_msg *m = ssemu_r_msg(r, tr->mi);
	struct ssemu_nic_sh *in = tr->in;
	uint32_t payload = tr->bytes[k] - r->config.pkt_overhead;

	if (!cr_put(&tr->hop[tr->nhops - 1].cr, tr->tc * SSEMU_NVC,
		    tr->cells[k], now + r->config.edge.delay)) {
		ssemu_fail(r, "a packet train found the initiator's edge "
			   "credit ring full");
		return;
	}
	in->stats.rx_pkts++;
	in->stats.rx_bytes += payload;
	r->pkts_delivered++;
	/* (on its message's VNI, as made: ssemu_auth_reply_refused has
	 * nothing to refuse, and its status is none) */
	ssemu_tel_rx(r, tr->inic, tr->tc, payload);
	m->resp_arrived++;
	pkt_free(r, tr->pi[k]);
}

/*
 * A look of the NIC's that a credit asked for (nic_wake).  It finds the
 * link busy, with more to send (a look is due when the link is free: it
 * does nothing), or with nothing more (it asks for that look, once: the
 * tail, which settles the ring then), or the link free and nothing to
 * send (a link free with something to send has sent it, at the instant
 * it was free): the ring settles.
 */
static void act_wake(struct train *tr, ssemu_time_t now)
{
	struct ssemu_nic_sh *n = tr->n;

	if (n->busy_until <= now) {
		cr_settle(tr->r, &tr->hop[0].up, now);
	} else if (!nic_has_work(n) && !tr->tail) {
		tr->tail = 1;
		tr->tail_at = n->busy_until;
	}
}

/*
 * The actions' streams: the NIC's sends, the initiator's arrivals, each
 * switch's sends, and the initiator's edge switch's pipeline ends (a
 * send at the pipeline's end is done by its arrival); and the NIC's
 * looks for credits and the one those may ask for after its last send.
 * A stream's next action is keyed by its time and its kind's order (time
 * << 3 | order); the smallest key goes first (streams with equal keys
 * touch nothing of one another's that depends on their order).
 *
 * Pipelines' ends elsewhere are no actions: all one does is count the
 * packet in its output's queue, which its send counts out, and only the
 * edge output's count is read meanwhile (its telemetry; congestion
 * control's marks and frames, which the plan found none of, look there
 * alone).
 */
enum { S_KICK, S_ARRIVE, S_HOP };
#define STREAMS (S_HOP + TRAIN_HOPS + 1)
#define KEY(t, a) ((t) << 3 | act_prio[a])

/* Each stream's times (a column of the plan's rows), kind and hop. */
struct streams {
	uint32_t n, next[STREAMS], col[STREAMS], hop[STREAMS];
	uint8_t act[STREAMS], prio[STREAMS], skip[STREAMS];
	uint64_t key[STREAMS];
};

/* Stream @s's next key (the edge output's sends skip those done at
 * their pipelines' ends). */
static inline uint64_t stream_key(struct train *tr, struct streams *st,
				  uint32_t s)
{
	uint32_t k = st->next[s], c = st->col[s];

	if (st->skip[s]) {
		/* (c - 1: the same hop's T_READY) */
		while (k < tr->npkts && *T(tr, k, c) == *T(tr, k, c - 1))
			k++;
		st->next[s] = k;
	}
	return k < tr->npkts ? *T(tr, k, c) << 3 | st->prio[s] : UINT64_MAX;
}

static void stream_add(struct train *tr, struct streams *st, uint32_t act,
		       uint32_t col, uint32_t hop)
{
	st->act[st->n] = (uint8_t)act;
	st->prio[st->n] = act_prio[act];
	st->skip[st->n] = act == A_DEP && tr->hop[hop].edge;
	st->col[st->n] = col;
	st->hop[st->n++] = hop;
}

/*
 * Pass 2: the actions, smallest key first: the next keys of the NIC's
 * sends, the arrivals and the switches' streams (a handful) scanned for
 * the smallest; the NIC's looks, rare, beside it.
 */
static void train_run(struct train *tr)
{
	struct ssemu_region *r = tr->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	uint32_t nwk = 0, ntail = 0, s, k, h, best;
	struct streams st;
	uint64_t bk, wk, tk;
	ssemu_time_t t;

	tr->nwake = 0;
	tr->tail = 0;
	for (h = 0; h < tr->nhops; h++)
		if (tr->hop[h].s)
			train_hop_views(tr, h);
	st.n = 0;
	stream_add(tr, &st, A_KICK, T_INJ, 0);
	stream_add(tr, &st, A_ARRIVE, T_FIN, 0);
	for (h = 0; h < tr->nhops; h++) {
		if (tr->hop[h].edge)
			stream_add(tr, &st, A_READY, T_READY(h), h);
		stream_add(tr, &st, A_DEP, T_DEP(h), h);
	}
	for (s = 0; s < st.n; s++) {
		st.next[s] = 0;
		st.key[s] = stream_key(tr, &st, s);
	}
	for (;;) {
		best = 0;
		for (s = 1; s < st.n; s++)
			if (st.key[s] < st.key[best])
				best = s;
		bk = st.key[best];
		/* (the looks' streams grow as the train goes) */
		wk = nwk < tr->nwake ? KEY(tr->wake[nwk], A_WAKE) : UINT64_MAX;
		tk = ntail < tr->tail ? KEY(tr->tail_at, A_TAIL) : UINT64_MAX;
		if (wk < bk || tk < bk) {
			if (wk < tk) {
				e->now = t = wk >> 3;
				nwk++;
				act_wake(tr, t);
			} else {
				/* the NIC's look when its link is free
				 * (TX_DONE), with nothing to send: its ring
				 * settles */
				e->now = t = tk >> 3;
				ntail++;
				cr_settle(r, &tr->hop[0].up, t);
			}
		} else if (bk == UINT64_MAX) {
			break;
		} else {
			k = st.next[best];
			e->now = t = bk >> 3;
			switch (best) {
			case S_KICK:
				act_kick(tr, k, t);
				break;
			case S_ARRIVE:
				/* (the acknowledgement and the last result
				 * as any arrival, checked as its event's
				 * packet: the operation completes there) */
				if (tr_lean(tr, k))
					act_arrive(tr, k, t);
				else if (!pkt_bad(r, tr->pi[k]))
					nic_arrive(r, tr->inic, 0, tr->pi[k]);
				break;
			default:
				if (st.act[best] == A_DEP)
					train_act_dep(tr, st.hop[best], k, t);
				else
					train_act_ready(tr, st.hop[best], k, t);
				break;
			}
			st.next[best]++;
			st.key[best] = stream_key(tr, &st, best);
		}
		/* the plan says nothing else happens meanwhile: an event
		 * now would run after what follows it */
		if (unlikely(ssemu_broken(r)))
			return;
		if (unlikely(ssemu_engine_pending(e))) {
			ssemu_fail(r, "a packet train scheduled an event at "
				   "model time %llu", (unsigned long long)t);
			return;
		}
	}
}

bool ssemu_train_resp(struct ssemu_region *r, uint32_t nic)
{
	struct train_buf b = { NULL, 0 };
	struct train tr;

	tr.r = r;
	if (!train_plan(&tr, nic, &b)) {
		free(b.p);
		return false;
	}
	__atomic_add_fetch(&ssemu_model_trains_run, 1, __ATOMIC_RELAXED);
	train_run(&tr);
	free(b.p);
	return true;
}
