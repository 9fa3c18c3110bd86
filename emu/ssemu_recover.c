/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's side of endpoints closing and NICs detaching, and recovery
 * after an engine runner died holding the fabric lock (the transient model
 * rebuilt from the message slots).
 */
#include <stdlib.h>

#include "ssemu_link.h"

/* After a whole-model change: the whole check, in a debug build. */
static inline void model_checked(struct ssemu_region *r)
{
#ifdef SSEMU_DEBUG
	ssemu_model_check(r);
#else
	(void)r;
#endif
}

/*
 * Endpoint @epi's messages posted for a later time (ssemu_ep_send_at)
 * whose POST has not come: given up (their close's bound ran out), their
 * slots done and their generation moved on so the POST finds nothing.
 */
void ssemu_model_ep_drop_due(struct ssemu_region *r, uint32_t epi)
{
	uint32_t k, mi;
	struct ssemu_msg *m;

	for (k = 0; k < r->config.msgs_per_ep; k++) {
		mi = epi * r->config.msgs_per_ep + k;
		/* (busy and not done, as one due is, before its slot is
		 * read) */
		if ((ssemu_load_acquire(ssemu_r_mstate(r, mi)) &
		     (SSEMU_MSG_BUSY | SSEMU_MSG_TXDONE)) != SSEMU_MSG_BUSY)
			continue;
		m = ssemu_r_msg(r, mi);
		if (!(m->mflags & SSEMU_MSGF_DUE))
			continue;
		m->mflags &= ~SSEMU_MSGF_DUE;
		m->gen++;
		msg_state_or(r, ssemu_r_mstate(r, mi),
			     SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
		r->msgs_discarded++;
	}
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
	uint32_t mi, prev = SSEMU_NONE, next, k;
	struct ssemu_msg *m;

	/*
	 * Posted and not taken by the engine.  A close waits for those
	 * (ssemu_ep_close_timeout): any left here are the ones its bound
	 * gave up on, or their process died; they are discarded, counted.
	 * By the tail: an entry whose lap tag was written over is still one
	 * of its messages.  A ring's worth at most, whatever the tail says.
	 */
	for (k = ssemu_ep_rings_bad(r, epi) ? 0 :
					       ssemu_ring_tagged_pending(ring);
	     k; k--) {
		mi = ssemu_ring_tagged_value(ring,
					     ssemu_load_relaxed(&ring->head));
		if (mi < r->config.msgs_per_ep) {
			mi += epi * r->config.msgs_per_ep;
			msg_state_or(r, ssemu_r_mstate(r, mi),
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
		injq_unlink(r, n, prev, mi, next);
		m->gen++;
		msg_state_or(r, ssemu_msg_state(r, m),
			     SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
		r->msgs_discarded++;
	}
	/*
	 * Messages delivered to it and never released (in its event ring, on
	 * its overflow list, or taken and kept): only a scan of every slot
	 * finds the last kind, and closing is rare.
	 */
	for (mi = 0; ssemu_load_relaxed(&ep->delivered) !=
			     ssemu_load_acquire(&ep->released) &&
		     mi < r->nmsgs;
	     mi++) {
		m = ssemu_r_msg(r, mi);
		if (!m->rma_op && m->dst == self && m->npkts &&
		    m->arrived == m->npkts &&
		    (ssemu_load_acquire(ssemu_msg_state(r, m)) &
		     (SSEMU_MSG_BUSY | SSEMU_MSG_RXDONE)) == SSEMU_MSG_BUSY)
			msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
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
	 * target side still holds those in flight until it is done).  (The
	 * dense state words first: the slots of an endpoint that never used
	 * them are never read, nor faulted in.) */
	for (mi = epi * r->config.msgs_per_ep;
	     mi < (epi + 1) * r->config.msgs_per_ep; mi++) {
		if (!(ssemu_load_acquire(ssemu_r_mstate(r, mi)) &
		      SSEMU_MSG_BUSY))
			continue;
		if (ssemu_r_msg(r, mi)->rma_op)
			msg_state_or(r, ssemu_r_mstate(r, mi), SSEMU_MSG_TXDONE);
	}
	for (mi = ep->tx_head; mi != SSEMU_NONE; mi = ssemu_r_msg(r, mi)->tx_next)
		msg_state_or(r, ssemu_r_mstate(r, mi), SSEMU_MSG_TXDONE);
	ep->rx_head = ep->rx_tail = ep->tx_head = ep->tx_tail = SSEMU_NONE;
	ssemu_ep_watch_set(r, ep, false);
	/* (read without the lock by waiters, see eps_ready) */
	ssemu_store_release(&ep->open, 0);
	if (epi < r->ep_hint)
		r->ep_hint = epi;
	ep->gen++;
	model_checked(r);
}

/*
 * A NIC detaches (its endpoints are closed already): acknowledgements it
 * still owed go straight back to their sources, so their windows close and
 * their sends complete; then its state is reset.
 */
void ssemu_model_nic_reset(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	struct ssemu_cr cr = cr_of_nic(n);
	struct ssemu_pkt *pkt;
	uint32_t pi, src, tc, mi, count;
	struct ssemu_msg *m;
	struct ssemu_pair *pr;

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
		pr = ssemu_pair_find(r, src, nic);
		if (pr) {
			pr->window -= SSEMU_MIN(pr->window, count);
			ssemu_pair_put(r, pr, now_of(r));
		}
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
		msg_state_or(r, ssemu_r_mstate(r, pi),
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
	cr_clear(&cr);
	n->kick_at = 0;
	ssemu_pair_nic_idle(r, nic, now_of(r));
	memset(&n->stats, 0, sizeof(n->stats));
	model_checked(r);
}

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
	uint32_t nrq = 0, nrx = 0, ntx = 0, ndone = 0, k, mi, nic, epi;
	uint32_t tc, nwords = ssemu_bm_words(r->neps), nsum;
	struct ssemu_nic_sh *n;
	struct ssemu_ep_sh *ep;
	struct ssemu_msg *m;
	struct ssemu_cr cr;
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
		uint32_t idx, n, v;

		ep = ssemu_r_ep(r, epi);
		if (!ep->open || ssemu_ep_rings_bad(r, epi))
			continue;
		ring = ssemu_r_ring(r, ep->tx_ring_off);
		n = ssemu_ring_tagged_pending(ring);
		for (idx = ssemu_load_acquire(&ring->head); n; idx++, n--) {
			v = ssemu_ring_tagged_value(ring, idx);
			if (v < r->config.msgs_per_ep)
				in_ring[epi * r->config.msgs_per_ep + v] = 1;
		}
	}

	/* The transient model goes: events, packets, switches, NIC links. */
	ssemu_engine_init(e, c->max_events);
	ssemu_engine_set_wide(e, c->group_windows);
	e->now = now;
	e->seq = eseq;
	e->executed = executed;
	/* (every packet as never used: the pool hands them out from 0
	 * again, as a new region's does) */
	r->pkt_free = SSEMU_NONE;
	r->pkt_hwm = 0;
	r->pkts_used = 0;
	r->pkt_waiters = 0;
	/* (parked requests are sent again below, as any not done) */
	r->park_head = r->park_tail = SSEMU_NONE;
	ssemu_store_relaxed(&r->nparked, 0);
	memset(ssemu_r_swmap(r), 0xff,
	       (size_t)r->topo.nswitches * sizeof(uint32_t));
	r->sw_used = 0;
	r->voq_free = SSEMU_NONE;
	r->voq_hwm = 0;
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
		cr = cr_of_nic(n);
		cr_clear(&cr);
		n->kick_at = 0;
	}
	ssemu_pair_clear(r);
	for (epi = 0; epi < r->neps; epi++) {
		ep = ssemu_r_ep(r, epi);
		ep->rx_head = ep->rx_tail = SSEMU_NONE;
		ep->tx_head = ep->tx_tail = SSEMU_NONE;
	}
	nsum = ssemu_bm_sum_words(nwords);
	memset(ssemu_r_bits(r, r->ovf_off), 0,
	       (nwords + nsum) * sizeof(uint64_t));
	/* a work bit taken by the dead runner must not strand a tx ring
	 * (nor its summary bit, cleared first) */
	memset(ssemu_r_bits(r, r->work_off), 0xff,
	       (nwords + nsum) * sizeof(uint64_t));

	/* Where each message stands. */
	for (mi = 0; mi < r->nmsgs; mi++) {
		m = ssemu_r_msg(r, mi);
		st = ssemu_load_acquire(ssemu_msg_state(r, m));
		if (!(st & SSEMU_MSG_BUSY))
			continue;
		/* a RECV that carried its payload got out, and the runner
		 * died before it gave the slot back (ssemu_msg.c) */
		if (!(st & SSEMU_MSG_RXDONE) && recv_carried(r, m) &&
		    !recv_ep(r, m, &epi) &&
		    pushed(r, m, SSEMU_MSGF_RXPUSH, epi, m->rx_pos)) {
			msg_state_or(r, ssemu_msg_state(r, m),
				     SSEMU_MSG_RXDONE);
			st |= SSEMU_MSG_RXDONE;
		}
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
			msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
		} else if (m->mflags & SSEMU_MSGF_TXOVF) {
			txovf[ntx++] = (struct rec){ m->seq, mi };
		} else if (m->status || delivered(r, m, st)) {
			done[ndone++] = (struct rec){ m->seq, mi };
		} else {
			m->sent = m->arrived = m->acked = m->rx_acked = 0;
			m->mflags &= ~(SSEMU_MSGF_RTO | SSEMU_MSGF_PARKED);
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
			msg_state_or(r, ssemu_msg_state(r, m),
				     SSEMU_MSG_TXDONE | SSEMU_MSG_RXDONE);
			continue;
		}
		injq_push(r, n, nic, mi);
	}
	for (k = 0; k < nrx; k++) {
		m = ssemu_r_msg(r, rxovf[k].mi);
		m->mflags &= ~SSEMU_MSGF_RXOVF;
		if (recv_ep(r, m, &epi))
			msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
		else
			recv_event(r, epi, rxovf[k].mi);
	}
	for (k = 0; k < ntx; k++)
		complete_tx(r, txovf[k].mi);
	for (k = 0; k < ndone; k++) {
		m = ssemu_r_msg(r, done[k].mi);
		if (m->status && !m->rma_op)
			msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
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
	model_checked(r);
	return 0;
}
