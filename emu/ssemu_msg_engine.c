/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's side of a message slot: what the model does with a message
 * once it is delivered or done -- its RECV (or RMA_REMOTE) event to the
 * receiving endpoint, its SEND_DONE (or RMA_DONE) to the sender, the
 * overflow lists that hold events while a ring is full, the futex wake-ups
 * -- and the slot state bits (RXDONE, TXDONE) that give the slot back.
 * Whatever crosses to another process goes through the event rings and the
 * state word, in the order ssemu_msg_state's readers expect.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ssemu_priv.h"
#include "ssemu_msg_engine.h"

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
		.time = ssemu_r_engine(r)->now,
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
		.time = ssemu_r_engine(r)->now,
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
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
	return true;
}

/* The receiving endpoint of @m (its index in @epi), or an error. */
int recv_ep(struct ssemu_region *r, struct ssemu_msg *m, uint32_t *epi)
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
void rma_rx_done(struct ssemu_region *r, struct ssemu_msg *m)
{
	if (m->rma_op &&
	    !(m->mflags & (SSEMU_MSGF_RXOVF | SSEMU_MSGF_RESPQ)))
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
}

/* Hand a RECV (or RMA_REMOTE) event to endpoint @epi now, or queue it for
 * ring space. */
void recv_event(struct ssemu_region *r, uint32_t epi, uint32_t mi)
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

int recv_target(struct ssemu_region *r, uint32_t mi, uint32_t *epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	int ret;

	ret = m->status ? m->status : recv_ep(r, m, epi);
	if (ret) {
		/* (a packet that failed its CRC failed the message: it is
		 * never delivered, its sender gets the error; otherwise
		 * nobody is at the destination any more) */
		if (!m->status)
			r->msgs_unreachable++;
		m->status = ret;
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	}
	return ret;
}

void deliver_recv(struct ssemu_region *r, uint32_t mi, uint32_t epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_nic_sh *n;

	n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	n->stats.rx_msgs++;
	n->stats.rx_bytes += m->len;
	ssemu_tel_deliver(r, mi);
	ssemu_fetch_add(&ssemu_r_ep(r, epi)->unreleased, 1);
	recv_event(r, epi, mi);
}

void complete_tx(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t epi = ssemu_msg_ep(r, mi);
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);

	/* the endpoint that sent it is gone (maybe reopened by someone else) */
	if (!ep->open || ep->gen != m->ep_gen) {
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
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
		if (SSEMU_BAD(r, mi >= r->nmsgs, "a receive overflow list: "
			      "message slot %u of %u", mi, r->nmsgs))
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
		if (SSEMU_BAD(r, mi >= r->nmsgs, "a send overflow list: "
			      "message slot %u of %u", mi, r->nmsgs))
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

/* Fail a queued message that cannot be sent at all. */
void fail_queued(struct ssemu_region *r, uint32_t mi, int32_t status)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->status = status;
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	complete_tx(r, mi);
}
