/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_rndv.c: rendezvous, both sides.
 *
 * Above FI_SLINGSHOT_EMU_EAGER_MAX the receiver pulls the data, as cxi's
 * rendezvous get does: the sender enters its buffer in its NIC's region
 * table, read-only, under an internal key, and names key and address in
 * the RTS.  Once a receive matches the RTS (in order, like any message),
 * the receiver reads min(buffer, total) bytes with one SSEMU_RMA_READ
 * (reads of at most SSEMU_RMA_DIRECT_MAX bytes, SSE_RNDV_READS of them in
 * flight, beyond that), as cxi's NIC does one get; then it sends a FIN
 * and completes.  The sender NIC serves the reads itself
 * (modelled read traffic, request and response packets), so the sender
 * process need not progress meanwhile; the send completes when the FIN
 * arrives, the data having been read at the target (delivery complete),
 * and its region is withdrawn or kept in the endpoint's registration
 * cache.  The reads are direct (SSEMU_RMA_DIRECT): the target NIC checks
 * each and the model carries its response, but the bytes stay in the
 * sender's buffer, from where the receiver copies them into the receive
 * buffer itself (a plain copy in one process, cross-memory attach across
 * two): each byte is copied once.  It copies them as soon as the read is
 * posted (ssemu_ep_read_early, the region checked as the target NIC will
 * check it), so that the copy goes on while the engine models the read,
 * in the sender's process if that one is waiting in progress; if that
 * copy fails, at the read's RMA_DONE (ssemu_event_read).  The receive
 * completes when the modelled read does, never before.  That is safe
 * because the sender's buffer stays as it was, and registered, until the
 * FIN.  A receive whose reads fail completes in error (FI_EHOSTUNREACH if
 * the sender is gone, FI_EFAULT if either buffer is not mapped, else
 * FI_EIO) and its FIN says so; what its buffer holds then is undefined,
 * as for any receive that fails.
 *
 * The push protocol remains for the rest: sends of several segments, no
 * room in the region table, FI_SLINGSHOT_EMU_RNDV_READ=0, and receivers
 * whose kernel refuses them the cross-memory attach a read needs
 * (-EACCES).  There the receiver answers the RTS with a CTS naming how
 * many bytes it wants and the sender posts them as FRAG messages; the
 * send completes when they are all acknowledged.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

/* ------------------------------------------------------------------ */
/* Sender: the buffer's region, and the registration cache             */
/* ------------------------------------------------------------------ */

static void __sse_rndv_dereg(struct sse_ep *ep, uint64_t key)
{
	struct sse_emu *emu = ep->domain->emu;
	int ret;

	ret = ssemu_mr_dereg(emu->nic, key);
	if (ret)
		SSE_EP_WARN(ep, "rendezvous region 0x%llx was not in the NIC's table: %s\n",
			    (unsigned long long)key, strerror(-ret));
	__atomic_sub_fetch(&emu->rndv_keys, 1, __ATOMIC_ACQ_REL);
}

/*
 * A read rendezvous send is done with its region: withdraw it, or leave
 * it in the endpoint's cache for the next send from the same buffer.
 */
SSEMU_HOT
void __sse_tx_unreg(struct sse_ep *ep, struct sse_tx *tx)
{
	if (!tx->rkey_reg)
		return;
	tx->rkey_reg = false;
	if (tx->rreg) {
		assert(tx->rreg->users > 0);
		tx->rreg->users--;
		tx->rreg = NULL;
		return;
	}
	__sse_rndv_dereg(ep, tx->rkey);
}

/* A cached region holding [addr, addr + len), or NULL. */
static struct sse_rndv_reg *__sse_rndv_cache_find(struct sse_ep *ep,
						  uintptr_t addr, size_t len)
{
	struct sse_rndv_reg *c;

	for (c = ep->rndv_cache; c < ep->rndv_cache + SSE_RNDV_CACHE; c++) {
		if (c->valid && addr >= c->addr &&
		    addr - c->addr <= c->len && len <= c->len - (addr - c->addr))
			return c;
	}
	return NULL;
}

/* Room in the cache: a free entry or the least recently used idle one. */
static struct sse_rndv_reg *__sse_rndv_cache_slot(struct sse_ep *ep)
{
	struct sse_rndv_reg *c, *lru = NULL;

	for (c = ep->rndv_cache; c < ep->rndv_cache + SSE_RNDV_CACHE; c++) {
		if (!c->valid)
			return c;
		if (!c->users && (!lru || c->used < lru->used))
			lru = c;
	}
	if (lru) {
		__sse_rndv_dereg(ep, lru->key);
		lru->valid = false;
	}
	return lru;
}

/* Withdraw every cached region (endpoint close). */
void __sse_rndv_cache_flush(struct sse_ep *ep)
{
	struct sse_rndv_reg *c;

	for (c = ep->rndv_cache; c < ep->rndv_cache + SSE_RNDV_CACHE; c++) {
		if (c->valid)
			__sse_rndv_dereg(ep, c->key);
		c->valid = false;
	}
}

/*
 * Make a rendezvous send's buffer readable by its receiver, if it can be:
 * one segment, and room in the NIC's table for internal regions.  Else
 * the send falls back to the push protocol, silently.
 */
void __sse_tx_reg(struct sse_ep *ep, struct sse_tx *tx)
{
	struct sse_emu *emu = ep->domain->emu;
	struct ssemu_mr_desc d = {
		.addr = tx->iov[0].iov_base,
		.len = tx->len,
		.base = (uint64_t)(uintptr_t)tx->iov[0].iov_base,
		.access = SSEMU_MR_READ,
	};
	struct sse_rndv_reg *c;
	int ret, tries;

	tx->rkey_tried = true;
	if (!sse_env.rndv_read || tx->iov_count != 1 || !tx->len)
		return;
	c = __sse_rndv_cache_find(ep, (uintptr_t)d.addr, d.len);
	if (c) {
		d.key = c->key;
		goto found;
	}
	if (__atomic_add_fetch(&emu->rndv_keys, 1, __ATOMIC_ACQ_REL) >
	    SSE_RNDV_KEYS_MAX)
		goto full;
	for (tries = 0; tries < 16; tries++) {
		d.key = SSE_RNDV_KEY_BIT |
			__atomic_fetch_add(&emu->rndv_key_seq, 1,
					   __ATOMIC_RELAXED);
		ret = ssemu_mr_reg(emu->nic, &d);
		if (ret != -EEXIST)
			break;
	}
	if (ret) {
		SSE_DBG(FI_LOG_EP_DATA, "rendezvous region not registered (%s): the data is pushed\n",
			strerror(-ret));
		goto full;
	}
	c = __sse_rndv_cache_slot(ep);
	if (c) {
		c->key = d.key;
		c->addr = (uintptr_t)d.addr;
		c->len = d.len;
		c->users = 0;
		c->valid = true;
	}
found:
	if (c) {
		c->users++;
		c->used = ++ep->rndv_cache_clock;
	}
	tx->rreg = c;
	tx->rkey = d.key;
	tx->rkey_reg = true;
	tx->rts_desc.key = d.key;
	tx->rts_desc.addr = d.base;
	return;
full:
	__atomic_sub_fetch(&emu->rndv_keys, 1, __ATOMIC_ACQ_REL);
}

/* ------------------------------------------------------------------ */
/* Control messages, and the sender's side of them                     */
/* ------------------------------------------------------------------ */

/* A rendezvous answer (CTS or FIN) to @msg's sender. */
static int __sse_send_ctrl(struct sse_ep *ep, struct sse_msg *msg,
			   unsigned op, uint64_t arg)
{
	struct sse_tx *tx = __sse_tx_get(ep);

	if (!tx) {
		SSE_EP_WARN(ep, "out of memory: rendezvous reply lost\n");
		return -FI_ENOMEM;
	}
	tx->context = NULL;
	tx->cq_flags = 0;
	tx->msg_id = msg->msg_id;
	tx->dest = msg->src;
	tx->tag = tx->data = 0;
	tx->hflags = 0;
	tx->op = (uint8_t)op;
	tx->user = tx->completion = tx->reported = false;
	tx->data_ready = true;
	tx->tclass = ep->emu_tclass;
	tx->len = tx->send_len = 0;
	tx->iov_count = 0;
	tx->ctrl_hdr[0] = SSE_HDR0(op, 0, msg->msg_id);
	tx->ctrl_hdr[1] = arg;
	tx->ctrl_hdr[2] = 0;
	tx->ctrl_hdr[3] = msg->total;
	tx->bounce = NULL;
	/* Control messages do not take part in matching: let them overtake
	 * queued sends. */
	sse_dlist_insert_tail(&tx->all, &ep->tx_all);
	sse_dlist_init(&tx->entry);
	if (__sse_tx_post(ep, tx) == -FI_EAGAIN) {
		sse_dlist_insert_head(&tx->entry, &ep->tx_queue);
		return 0;
	}
	__sse_tx_posted(ep, tx);
	return 0;
}

int __sse_send_cts(struct sse_ep *ep, struct sse_msg *msg, size_t wanted)
{
	return __sse_send_ctrl(ep, msg, SSE_OP_CTS, wanted);
}

/* @err: 0, or the positive FI_E* the receive failed with. */
int __sse_send_fin(struct sse_ep *ep, struct sse_msg *msg, int err)
{
	return __sse_send_ctrl(ep, msg, SSE_OP_FIN, (uint64_t)err);
}

/* The parked rendezvous send @ev (a CTS or FIN) answers, or NULL. */
static struct sse_tx *__sse_find_rndv(struct sse_ep *ep,
				      const struct ssemu_event *ev)
{
	uint64_t id = SSE_HDR_ID(ev->hdr[0]);
	struct sse_tx *tx;

	sse_dlist_foreach(&ep->tx_rndv, tx, struct sse_tx, entry) {
		if (tx->msg_id == id && tx->dest == ev->src)
			return tx;
	}
	SSE_EP_WARN(ep, "%s from %u:%u for unknown message %llu\n",
		    SSE_HDR_OP(ev->hdr[0]) == SSE_OP_FIN ? "FIN" : "CTS",
		    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src),
		    (unsigned long long)id);
	return NULL;
}

/*
 * The receiver read what it wanted of a read rendezvous send (or dropped
 * it, or failed): the region goes, and the send completes.
 */
void __sse_handle_fin(struct sse_ep *ep, const struct ssemu_event *ev)
{
	struct sse_tx *tx = __sse_find_rndv(ep, ev);
	uint64_t err = ev->hdr[1];

	if (!tx)
		return;
	if (!tx->rkey_reg) {
		/* Only a send that offered reads waits for a FIN. */
		SSE_EP_WARN(ep, "FIN from %u:%u for a pushed message dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}
	sse_dlist_remove(&tx->entry);
	__sse_tx_unreg(ep, tx);
	if (err && !tx->err)
		tx->err = err < 4096 ? (int)err : FI_EIO;
	tx->send_len = 0;
	tx->data_ready = true;
	__sse_tx_check_done(ep, tx);
}

void __sse_handle_cts(struct sse_ep *ep, const struct ssemu_event *ev)
{
	struct sse_tx *tx = __sse_find_rndv(ep, ev);

	if (!tx)
		return;
	sse_dlist_remove(&tx->entry);
	/* A read rendezvous the receiver could not read: push it. */
	__sse_tx_unreg(ep, tx);
	tx->send_len = SSEMU_MIN((size_t)ev->hdr[1], tx->len);
	tx->data_ready = true;
	if (tx->next_off >= tx->send_len) {
		__sse_tx_check_done(ep, tx);
		return;
	}
	if (sse_dlist_empty(&ep->tx_queue) &&
	    __sse_tx_post(ep, tx) != -FI_EAGAIN) {
		__sse_tx_posted(ep, tx);
		return;
	}
	sse_dlist_insert_tail(&tx->entry, &ep->tx_queue);
}

/* ------------------------------------------------------------------ */
/* Read rendezvous, receiver side                                      */
/* ------------------------------------------------------------------ */

/* A failed read as the receive's error. */
static int sse_rndv_read_errno(int status)
{
	switch (status) {
	case -ESRCH:		/* its process died */
	case -EHOSTUNREACH:	/* its NIC is gone */
	case -ECONNREFUSED:	/* its endpoint is closed */
		return FI_EHOSTUNREACH;
	case -EFAULT:		/* a buffer not mapped (either side) */
		return FI_EFAULT;
	default:
		return FI_EIO;
	}
}

/*
 * Every read of @msg is in (or it failed and none is out any more):
 * finish the receive and tell the sender.  Frees @msg, unless the reads
 * were refused and the sender is asked to push instead.
 */
static void __sse_rndv_read_finish(struct sse_ep *ep, struct sse_msg *msg)
{
	int err;

	sse_dlist_remove(&msg->rdq);
	if (!msg->read_err) {
		__sse_send_fin(ep, msg, 0);
		__sse_msg_done(ep, msg);
		return;
	}
	if (msg->read_err == -EACCES &&
	    ssemu_ep_peer_alive(ep->emu, msg->src)) {
		/* The kernel refused the cross-memory attach a read needs
		 * (ptrace restrictions): let senders push. */
		if (!ep->rndv_cma_refused)
			SSE_EP_WARN(ep, "rendezvous reads of %u:%u's memory refused: asking senders to push the data instead\n",
				    SSEMU_ADDR_PORT(msg->src),
				    SSEMU_ADDR_PID(msg->src));
		ep->rndv_cma_refused = true;
		msg->rread = false;
		msg->read_err = 0;
		msg->received = 0;
		ep->rndv_reads--;
		ep->rndv_pushes++;
		__sse_send_cts(ep, msg, msg->expect);
		return;
	}
	err = sse_rndv_read_errno(msg->read_err);
	/* (a region withdrawn before our copy of it: its sender closed) */
	if (msg->read_err == -ENOKEY &&
	    !ssemu_ep_peer_alive(ep->emu, msg->src))
		err = FI_EHOSTUNREACH;
	SSE_EP_WARN(ep, "rendezvous read of %zu bytes from %u:%u failed: %s\n",
		    msg->expect, SSEMU_ADDR_PORT(msg->src),
		    SSEMU_ADDR_PID(msg->src), strerror(-msg->read_err));
	if (ssemu_ep_peer_alive(ep->emu, msg->src))
		__sse_send_fin(ep, msg, err);
	sse_dlist_remove(&msg->active);
	__sse_msg_complete(ep, msg, err, -msg->read_err);
	__sse_msg_free(msg);
}

/*
 * The bytes of read @p, which the target NIC leaves in the sender's
 * buffer (SSEMU_RMA_DIRECT), from there into the receive buffer: their
 * one copy.  The sender keeps its buffer, unchanged and registered,
 * until our FIN (or until it gives the send up: the emulator then finds
 * the region withdrawn, or the process gone), so reading it at any time
 * before the FIN gives what the response carries.  At the read's post
 * (@rma, its request: ssemu_ep_read_early, the region checked as the
 * target will check it), so that the copy goes on while the engine
 * models the read; or at its RMA_DONE (@ev: ssemu_event_read), if the
 * early copy failed.  @return 0 or -errno.
 */
static int __sse_rndv_read_copy(struct sse_ep *ep, struct sse_msg *msg,
				struct sse_rma_piece *p,
				const struct ssemu_rma *rma,
				const struct ssemu_event *ev)
{
	struct sse_rx *rx = msg->rx;
	size_t off = msg->rx_off + p->off, done = 0, i;
	int ret;

	for (i = 0; i < rx->iov_count && done < p->len; i++) {
		size_t seg = rx->iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = SSEMU_MIN(seg - off, p->len - done);
		ret = rma ? ssemu_ep_read_early(ep->emu, rma, done,
						(char *)rx->iov[i].iov_base +
							off, n) :
			    ssemu_event_read(ep->emu, ev, done,
					     (char *)rx->iov[i].iov_base + off,
					     n);
		if (ret)
			return ret;
		done += n;
		off = 0;
	}
	return 0;
}

/*
 * Post what may be posted of @msg's reads: up to SSE_RNDV_READS in
 * flight.  Whatever the emulator cannot take now waits on ep->rx_reads.
 * @return -FI_EAGAIN if the emulator is full, else 0 (@msg may have been
 * finished and freed).
 */
static int __sse_rndv_read_post(struct sse_ep *ep, struct sse_msg *msg)
{
	int full = 0;

	while (!msg->read_err && msg->read_next < msg->expect &&
	       msg->reads_out < SSE_RNDV_READS) {
		size_t n = SSEMU_MIN(msg->expect - msg->read_next,
				     (size_t)SSEMU_RMA_DIRECT_MAX);
		struct sse_rma_piece *p = sse_pool_get(&ep->piece_pool);
		struct ssemu_rma r = {
			.dest = msg->src,
			.tclass = msg->tclass,
			.flags = SSEMU_RMA_DIRECT,
			.op = SSEMU_RMA_READ,
			.key = msg->rkey,
			.addr = msg->raddr + msg->read_next,
			.len = n,
		};
		int ret;

		if (!p)
			return -FI_EAGAIN;	/* retried on progress */
		r.cookie = (uint64_t)(uintptr_t)p;
		ret = ssemu_ep_rma(ep->emu, &r);
		if (ret) {
			sse_pool_put(&ep->piece_pool, p);
			if (ret == -EAGAIN) {
				full = -FI_EAGAIN;
				break;
			}
			msg->read_err = ret;
			break;
		}
		p->op = NULL;
		p->msg = msg;
		p->off = msg->read_next;
		p->len = n;
		/* the bytes now, while the engine models the read (another
		 * process's run, or ours later); at RMA_DONE if not */
		p->early = !__sse_rndv_read_copy(ep, msg, p, &r, NULL);
		ep->rndv_early += p->early;
		sse_dlist_insert_tail(&p->entry, &ep->rma_pieces);
		msg->read_next += n;
		msg->reads_out++;
	}
	if (msg->read_err || msg->read_next >= msg->expect)
		sse_dlist_remove(&msg->rdq);
	if (msg->read_err && !msg->reads_out)
		__sse_rndv_read_finish(ep, msg);
	return full;
}

/* A read of a rendezvous receive completed (sse_rma.c dispatches it). */
void __sse_rndv_read_done(struct sse_ep *ep, struct sse_rma_piece *p,
			  const struct ssemu_event *ev)
{
	struct sse_msg *msg = p->msg;
	int ret;

	if (ev->status) {
		if (!msg->read_err)
			msg->read_err = ev->status;
	} else if (!msg->read_err) {
		ret = p->early ? 0 : __sse_rndv_read_copy(ep, msg, p, NULL, ev);
		if (ret)
			msg->read_err = ret;
		else
			msg->received += p->len;
	}
	ssemu_event_release(ep->emu, ev);
	sse_dlist_remove(&p->entry);
	sse_pool_put(&ep->piece_pool, p);
	assert(msg->reads_out > 0);
	msg->reads_out--;
	if (msg->read_err) {
		sse_dlist_remove(&msg->rdq);
		if (!msg->reads_out)
			__sse_rndv_read_finish(ep, msg);
		return;
	}
	if (msg->received >= msg->expect)
		__sse_rndv_read_finish(ep, msg);
	/* else more reads go out after this batch of events, in order */
}

/* Receives' reads in matching order, until the emulator is full. */
SSEMU_HOT
void __sse_rndv_read_progress(struct sse_ep *ep)
{
	struct sse_msg *msg, *tmp;

	sse_dlist_foreach_safe(&ep->rx_reads, msg, tmp, struct sse_msg, rdq) {
		if (__sse_rndv_read_post(ep, msg) == -FI_EAGAIN)
			break;
	}
}

/*
 * A receive matched the rendezvous @msg (placed: rx, rx_off, rx_len set):
 * read the data, or ask the sender for it (CTS).
 */
void __sse_rndv_start(struct sse_ep *ep, struct sse_msg *msg)
{
	msg->rndv = true;
	msg->expect = SSEMU_MIN(msg->total, msg->rx_len);
	if (msg->err) {
		/* Its RTS failed its CRC: nothing to read.  The receive
		 * fails, and the send with it (the FIN says so). */
		if (msg->rread)
			__sse_send_fin(ep, msg, msg->err);
		else
			__sse_send_cts(ep, msg, 0);
		__sse_msg_done(ep, msg);
		return;
	}
	/* The sender pushes on a CTS instead (and withdraws its region). */
	if (msg->rread && (ep->rndv_cma_refused || !sse_env.rndv_read))
		msg->rread = false;
	if (!msg->rread) {
		ep->rndv_pushes++;
		__sse_send_cts(ep, msg, msg->expect);
		if (!msg->expect)
			__sse_msg_done(ep, msg);
		else
			sse_dlist_insert_tail(&msg->active, &ep->rx_active);
		return;
	}
	ep->rndv_reads++;
	SSE_DBG(FI_LOG_EP_DATA, "ep %u:%u: reading %zu of %zu bytes from %u:%u\n",
		SSEMU_ADDR_PORT(ep->addr), SSEMU_ADDR_PID(ep->addr),
		msg->expect, msg->total, SSEMU_ADDR_PORT(msg->src),
		SSEMU_ADDR_PID(msg->src));
	if (!msg->expect) {
		__sse_send_fin(ep, msg, 0);
		__sse_msg_done(ep, msg);
		return;
	}
	sse_dlist_insert_tail(&msg->active, &ep->rx_active);
	/* Earlier receives' reads go first. */
	if (sse_dlist_empty(&ep->rx_reads)) {
		sse_dlist_insert_tail(&msg->rdq, &ep->rx_reads);
		__sse_rndv_read_post(ep, msg);
	} else {
		sse_dlist_insert_tail(&msg->rdq, &ep->rx_reads);
	}
}

/* Nobody will receive the rendezvous @msg: release its sender. */
void __sse_rndv_decline(struct sse_ep *ep, struct sse_msg *msg)
{
	if (msg->rread)
		__sse_send_fin(ep, msg, 0);
	else
		__sse_send_cts(ep, msg, 0);
}

/*
 * A rendezvous send waits for its receiver's CTS or FIN; if the receiver's
 * process died meanwhile none will ever come, so now and then (every
 * SSE_PEER_CHECK_PERIOD domain progress calls) look whether the peers of
 * parked sends are still there and fail the sends whose peer is gone (as
 * a failed RTS would), withdrawing their regions.
 */
void __sse_rndv_check_peers(struct sse_ep *ep)
{
	struct sse_tx *tx, *tmp;

	sse_dlist_foreach_safe(&ep->tx_rndv, tx, tmp, struct sse_tx, entry) {
		if (ssemu_ep_peer_alive(ep->emu, tx->dest))
			continue;
		SSE_EP_WARN(ep, "peer %u:%u is gone: failing a rendezvous "
			    "send waiting for it\n", SSEMU_ADDR_PORT(tx->dest),
			    SSEMU_ADDR_PID(tx->dest));
		sse_dlist_remove(&tx->entry);
		__sse_tx_unreg(ep, tx);
		if (!tx->err)
			tx->err = FI_EHOSTUNREACH;
		tx->data_ready = true;
		tx->send_len = 0;
		if (tx->hdr_posted)
			__sse_tx_check_done(ep, tx);
	}
}
