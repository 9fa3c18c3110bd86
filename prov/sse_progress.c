/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_progress.c: the data-path engine.
 *
 * Transmit.  A send becomes one or more ssemu messages of at most
 * ssemu_ep_max_msg bytes: an EAGER message carrying the first piece (or an
 * RTS carrying none, above FI_SLINGSHOT_EMU_EAGER_MAX), then FRAG messages.
 * Whatever the emulator cannot take now (-EAGAIN) waits on the endpoint's
 * FIFO tx_queue and is retried on every progress call, so nothing is lost
 * and order is kept.  A send completes when every message it posted has its
 * SEND_DONE (and, for rendezvous, the receiver's CTS or FIN came back).
 *
 * Receive.  The first piece of a message is matched against the posted
 * receives; an unmatched one is copied out of the emulator's slot into
 * provider memory at once and the slot released, so senders never stall on
 * unmatched messages.  Later pieces are found by (source, message id).
 * A rendezvous RTS waits, data-less, until a receive matches it.
 *
 * Rendezvous.  Above FI_SLINGSHOT_EMU_EAGER_MAX the receiver pulls the
 * data, as cxi's rendezvous get does: the sender enters its buffer in its
 * NIC's region table, read-only, under an internal key, and names key and
 * address in the RTS.  Once a receive matches the RTS (in order, like any
 * message), the receiver reads min(buffer, total) bytes with
 * SSEMU_RMA_READs of at most ssemu_ep_max_msg bytes, SSE_RNDV_READS of
 * them in flight, each copied into the receive buffer as its RMA_DONE
 * comes; then it sends a FIN and completes.  The sender NIC serves the
 * reads itself (modelled read traffic, request and response packets), so
 * the sender process need not progress meanwhile; the send completes
 * when the FIN arrives, the data having been read at the target
 * (delivery complete), and its region is withdrawn.  A receive whose
 * reads fail completes in error (FI_EHOSTUNREACH if the sender is gone,
 * else FI_EIO) and its FIN says so.
 *
 * The push protocol remains for the rest: sends of several segments, no
 * room in the region table, FI_SLINGSHOT_EMU_RNDV_READ=0, and receivers
 * whose kernel refuses the engine the cross-memory attach a read needs
 * (-EACCES).  There the receiver answers the RTS with a CTS naming how
 * many bytes it wants and the sender posts them as FRAG messages; the
 * send completes when they are all acknowledged.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "sse.h"

uint64_t sse_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* iov helpers                                                          */
/* ------------------------------------------------------------------ */

size_t sse_iov_len(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/* The bytes [off, off + len) of @iov as at most @max_out segments. */
size_t sse_iov_slice(const struct iovec *iov, size_t count, size_t off,
		     size_t len, struct iovec *out, size_t max_out)
{
	size_t i, n = 0;

	for (i = 0; i < count && len && n < max_out; i++) {
		size_t seg = iov[i].iov_len;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		out[n].iov_base = (char *)iov[i].iov_base + off;
		out[n].iov_len = SSEMU_MIN(seg - off, len);
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

int sse_copy_to_iov(const struct iovec *iov, size_t count, size_t off,
		    const void *src, size_t len)
{
	const char *s = src;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t seg = iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = SSEMU_MIN(seg - off, len - done);
		if (ssemu_copy_user((char *)iov[i].iov_base + off, s + done,
				    n))
			return -FI_EFAULT;
		done += n;
		off = 0;
	}
	return 0;
}

int sse_copy_from_iov(void *dst, const struct iovec *iov, size_t count,
		      size_t off, size_t len)
{
	char *d = dst;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t seg = iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = SSEMU_MIN(seg - off, len - done);
		if (ssemu_copy_user(d + done,
				    (const char *)iov[i].iov_base + off, n))
			return -FI_EFAULT;
		done += n;
		off = 0;
	}
	return 0;
}

static int sse_errno_to_fi(int err)
{
	/* FI_E* values are errno values for everything the emulator uses. */
	return err < 0 ? -err : err;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                             */
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
static void __sse_tx_unreg(struct sse_ep *ep, struct sse_tx *tx)
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
static void __sse_rndv_cache_flush(struct sse_ep *ep)
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
static void __sse_tx_reg(struct sse_ep *ep, struct sse_tx *tx)
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

static void __sse_tx_free(struct sse_ep *ep, struct sse_tx *tx)
{
	__sse_tx_unreg(ep, tx);
	sse_dlist_remove(&tx->entry);
	sse_dlist_remove(&tx->all);
	free(tx->bounce);
	free(tx);
}

static void __sse_tx_report(struct sse_ep *ep, struct sse_tx *tx)
{
	if (tx->err) {
		SSE_EP_WARN(ep, "send to %u:%u failed: %s\n",
			    SSEMU_ADDR_PORT(tx->dest), SSEMU_ADDR_PID(tx->dest),
			    fi_strerror(tx->err));
		if (ep->tx_cq)
			__sse_cq_write_err(ep->tx_cq, tx->context,
					   tx->cq_flags, 0, NULL, 0, tx->tag,
					   0, tx->err, tx->err, NULL, 0);
		sse_cntr_inc_err(ep->send_cntr);
		return;
	}
	if (tx->completion && ep->tx_cq)
		__sse_cq_write(ep->tx_cq, tx->context, tx->cq_flags, 0, NULL,
			       0, 0, FI_ADDR_NOTAVAIL);
	sse_cntr_inc(ep->send_cntr);
}

/* Complete @tx if nothing of it is outstanding any more. */
static void __sse_tx_check_done(struct sse_ep *ep, struct sse_tx *tx)
{
	if (!tx->hdr_posted || !tx->data_ready ||
	    tx->next_off < tx->send_len || tx->done != tx->posted)
		return;
	if (tx->user) {
		if (!tx->reported)
			__sse_tx_report(ep, tx);
		else if (tx->err)
			SSE_EP_WARN(ep, "injected send to %u:%u failed: %s\n",
				    SSEMU_ADDR_PORT(tx->dest),
				    SSEMU_ADDR_PID(tx->dest),
				    fi_strerror(tx->err));
		assert(ep->tx_count > 0);
		ep->tx_count--;
	} else if (tx->err) {
		SSE_EP_WARN(ep, "control message to %u:%u failed: %s\n",
			    SSEMU_ADDR_PORT(tx->dest), SSEMU_ADDR_PID(tx->dest),
			    fi_strerror(tx->err));
	}
	__sse_tx_free(ep, tx);
}

/* Post one message of @tx carrying @iov. */
static int __sse_post_iov(struct sse_ep *ep, struct sse_tx *tx,
			  const uint64_t *hdr, const struct iovec *iov,
			  size_t iov_count)
{
	struct ssemu_send s = {
		.dest = tx->dest,
		.tclass = tx->tclass,
		.flags = SSEMU_SEND_ORDERED,
		.iov = iov,
		.iov_count = iov_count,
		.cookie = (uint64_t)(uintptr_t)tx,
	};
	int ret;

	memcpy(s.hdr, hdr, sizeof(s.hdr));
	ret = ssemu_ep_send(ep->emu, &s);
	if (ret == -EAGAIN)
		return -FI_EAGAIN;
	if (ret == -EFAULT)
		return -FI_EFAULT;	/* the caller sends SSE_HF_FAULT */
	if (ret) {
		/* Fail the whole operation: nothing more will be posted. */
		if (!tx->err)
			tx->err = sse_errno_to_fi(ret);
		tx->hdr_posted = true;
		tx->data_ready = true;
		tx->next_off = tx->send_len;
		return 0;
	}
	tx->posted++;
	return 1;
}

/* Post one message of @tx carrying its bytes [off, off + len). */
static int __sse_post(struct sse_ep *ep, struct sse_tx *tx,
		      const uint64_t *hdr, size_t off, size_t len)
{
	struct iovec iov[SSE_IOV_LIMIT];
	size_t n = 0;

	if (len)
		n = sse_iov_slice(tx->iov, tx->iov_count, off, len, iov,
				  SSE_IOV_LIMIT);
	return __sse_post_iov(ep, tx, hdr, n ? iov : NULL, n);
}

/*
 * The emulated NIC could not read @tx's data (part of the application's
 * buffer is not mapped): the send fails with FI_EFAULT, and in place of
 * the piece that failed its receiver gets a data-less one flagged
 * SSE_HF_FAULT, so that the receive fails too instead of waiting for
 * bytes that never come.
 */
static void __sse_tx_fault(struct sse_ep *ep, struct sse_tx *tx, size_t off)
{
	SSE_EP_WARN(ep, "send of %zu bytes to %u:%u: bytes from %zu are not readable: it fails with FI_EFAULT\n",
		    tx->len, SSEMU_ADDR_PORT(tx->dest),
		    SSEMU_ADDR_PID(tx->dest), off);
	tx->fault = true;
	if (!tx->err)
		tx->err = FI_EFAULT;
}

/*
 * Post what can be posted of @tx.  @return 0 when nothing more is to be
 * posted now (all of it, or the rest waits for a CTS or FIN), -FI_EAGAIN
 * when the emulator is full.
 */
static int __sse_tx_post(struct sse_ep *ep, struct sse_tx *tx)
{
	uint64_t hdr[SSEMU_HDR_WORDS];
	int ret;

	if (!tx->hdr_posted) {
		size_t first = 0;

		if (tx->op == SSE_OP_CTS || tx->op == SSE_OP_FIN) {
			memcpy(hdr, tx->ctrl_hdr, sizeof(hdr));
		} else {
			hdr[0] = SSE_HDR0(tx->op, tx->hflags |
					  (tx->fault ? SSE_HF_FAULT : 0),
					  tx->msg_id);
			hdr[1] = tx->tag;
			hdr[2] = tx->data;
			hdr[3] = tx->len;
			if (tx->op == SSE_OP_EAGER)
				first = SSEMU_MIN(tx->len, ep->max_frag);
		}
		if (tx->op == SSE_OP_RTS && !tx->rkey_tried)
			__sse_tx_reg(ep, tx);
		if (tx->rkey_reg) {
			struct iovec desc = {
				.iov_base = &tx->rts_desc,
				.iov_len = sizeof(tx->rts_desc),
			};

			hdr[0] = SSE_HDR0(tx->op,
					  tx->hflags | SSE_HF_RNDV_READ,
					  tx->msg_id);
			ret = __sse_post_iov(ep, tx, hdr, &desc, 1);
		} else if (tx->fault) {
			ret = __sse_post_iov(ep, tx, hdr, NULL, 0);
		} else {
			ret = __sse_post(ep, tx, hdr, 0, first);
			if (ret == -FI_EFAULT) {
				__sse_tx_fault(ep, tx, 0);
				hdr[0] |= (uint64_t)SSE_HF_FAULT << 48;
				ret = __sse_post_iov(ep, tx, hdr, NULL, 0);
			}
		}
		if (ret < 0)
			return ret;
		if (ret > 0) {
			tx->hdr_posted = true;
			tx->next_off = tx->fault ? tx->send_len : first;
		}
	}
	while (tx->data_ready && tx->next_off < tx->send_len) {
		size_t n = SSEMU_MIN(tx->send_len - tx->next_off,
				     ep->max_frag);

		hdr[0] = SSE_HDR0(SSE_OP_FRAG, tx->hflags |
				  (tx->fault ? SSE_HF_FAULT : 0), tx->msg_id);
		hdr[1] = tx->next_off;
		hdr[2] = 0;
		hdr[3] = tx->len;
		if (tx->fault) {
			ret = __sse_post_iov(ep, tx, hdr, NULL, 0);
		} else {
			ret = __sse_post(ep, tx, hdr, tx->next_off, n);
			if (ret == -FI_EFAULT) {
				__sse_tx_fault(ep, tx, tx->next_off);
				continue;	/* the flagged piece instead */
			}
		}
		if (ret < 0)
			return ret;
		if (ret > 0)
			tx->next_off = tx->fault ? tx->send_len :
						   tx->next_off + n;
	}
	return 0;
}

/* After a successful post: park a rendezvous send until its CTS (or FIN). */
static void __sse_tx_posted(struct sse_ep *ep, struct sse_tx *tx)
{
	sse_dlist_remove(&tx->entry);
	if (!tx->data_ready)
		sse_dlist_insert_tail(&tx->entry, &ep->tx_rndv);
	else
		__sse_tx_check_done(ep, tx);
}

/* Start a new send or control message, keeping FIFO order. */
int __sse_tx_start(struct sse_ep *ep, struct sse_tx *tx)
{
	sse_dlist_insert_tail(&tx->all, &ep->tx_all);
	sse_dlist_init(&tx->entry);
	if (sse_dlist_empty(&ep->tx_queue) &&
	    __sse_tx_post(ep, tx) != -FI_EAGAIN) {
		__sse_tx_posted(ep, tx);
		return 0;
	}
	sse_dlist_insert_tail(&tx->entry, &ep->tx_queue);
	return 0;
}

static void __sse_ep_tx_progress(struct sse_ep *ep)
{
	struct sse_tx *tx;

	while ((tx = sse_dlist_first(&ep->tx_queue, struct sse_tx, entry))) {
		if (__sse_tx_post(ep, tx) == -FI_EAGAIN)
			break;
		__sse_tx_posted(ep, tx);
	}
}

/* A rendezvous answer (CTS or FIN) to @msg's sender. */
static int __sse_send_ctrl(struct sse_ep *ep, struct sse_msg *msg,
			   unsigned op, uint64_t arg)
{
	struct sse_tx *tx = sse_zalloc(sizeof(*tx));

	if (!tx) {
		SSE_EP_WARN(ep, "out of memory: rendezvous reply lost\n");
		return -FI_ENOMEM;
	}
	tx->dest = msg->src;
	tx->tclass = ep->emu_tclass;
	tx->op = (uint8_t)op;
	tx->data_ready = true;
	tx->ctrl_hdr[0] = SSE_HDR0(op, 0, msg->msg_id);
	tx->ctrl_hdr[1] = arg;
	tx->ctrl_hdr[3] = msg->total;
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
static int __sse_send_fin(struct sse_ep *ep, struct sse_msg *msg, int err)
{
	return __sse_send_ctrl(ep, msg, SSE_OP_FIN, (uint64_t)err);
}

static void __sse_handle_send_done(struct sse_ep *ep,
				   const struct ssemu_event *ev)
{
	struct sse_tx *tx = (struct sse_tx *)(uintptr_t)ev->cookie;

	if (!tx)
		return;
	tx->done++;
	if (ev->status && !tx->err)
		tx->err = sse_errno_to_fi(ev->status);
	if (tx->err && !tx->data_ready) {
		/* The RTS failed: no CTS (or FIN) will come. */
		__sse_tx_unreg(ep, tx);
		sse_dlist_remove(&tx->entry);
		tx->data_ready = true;
		tx->send_len = 0;
	}
	/* Still on tx_queue: finish posting first. */
	if (tx->hdr_posted && tx->data_ready && tx->next_off >= tx->send_len)
		__sse_tx_check_done(ep, tx);
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
static void __sse_handle_fin(struct sse_ep *ep, const struct ssemu_event *ev)
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

static void __sse_handle_cts(struct sse_ep *ep, const struct ssemu_event *ev)
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
/* Receive                                                              */
/* ------------------------------------------------------------------ */

static inline bool sse_rx_matches(const struct sse_rx *rx, ssemu_addr_t src,
				  bool tagged, uint64_t tag)
{
	if (rx->src != SSEMU_ADDR_INVALID && rx->src != src)
		return false;
	return !tagged || !((tag ^ rx->tag) & ~rx->ignore);
}

void __sse_msg_free(struct sse_msg *msg)
{
	sse_dlist_remove(&msg->entry);
	sse_dlist_remove(&msg->active);
	sse_dlist_remove(&msg->rdq);
	free(msg->buf);
	free(msg);
}

/* Reserve room for a message in @rx (the next slice of a multi-recv). */
static void __sse_rx_place(struct sse_ep *ep, struct sse_rx *rx,
			   size_t total, size_t *off, size_t *len)
{
	if (!(rx->flags & FI_MULTI_RECV)) {
		*off = 0;
		*len = rx->len;
		if (rx->posted) {
			sse_dlist_remove(&rx->entry);
			rx->posted = false;
		}
		return;
	}
	*off = rx->mr_off;
	*len = SSEMU_MIN(total, rx->len - rx->mr_off);
	rx->mr_off += *len;
	rx->mr_pending++;
	if (rx->len - rx->mr_off < ep->min_multi_recv && !rx->mr_released) {
		rx->mr_released = true;
		if (rx->posted) {
			sse_dlist_remove(&rx->entry);
			rx->posted = false;
		}
	}
}

static void __sse_rx_free(struct sse_ep *ep, struct sse_rx *rx)
{
	assert(ep->rx_count > 0);
	ep->rx_count--;
	free(rx);
}

/*
 * A message landed (len bytes of total) in @rx at @off: report it.
 * Truncation and an unknown source under FI_SOURCE_ERR are error entries,
 * and so is a message that could not be fetched (@err: positive FI_E*,
 * @prov_errno the emulator's errno).
 */
static void __sse_rx_complete(struct sse_ep *ep, struct sse_rx *rx,
			      ssemu_addr_t src, uint8_t hflags, uint64_t tag,
			      uint64_t data, size_t total, size_t off,
			      size_t room, int err, int prov_errno)
{
	uint64_t flags = FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG);
	size_t len = SSEMU_MIN(total, room);
	fi_addr_t fsrc = FI_ADDR_NOTAVAIL;
	bool multi = rx->flags & FI_MULTI_RECV;
	bool last = true;
	void *buf;

	if (hflags & SSE_HF_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	else
		data = 0;
	if (multi) {
		rx->mr_pending--;
		last = rx->mr_released && !rx->mr_pending;
		if (last)
			flags |= FI_MULTI_RECV;
		buf = (char *)rx->iov[0].iov_base + off;
	} else {
		buf = rx->iov_count ? rx->iov[0].iov_base : NULL;
	}
	if (!rx->tagged)
		tag = 0;
	if ((ep->caps & FI_SOURCE) && ep->av)
		fsrc = __sse_av_reverse(ep->av, src);

	if (err) {
		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, rx->context, flags, 0,
					   buf, data, tag, 0, err, prov_errno,
					   NULL, 0);
		sse_cntr_inc_err(ep->recv_cntr);
	} else if (total > room) {
		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, rx->context, flags, len,
					   buf, data, tag, total - room,
					   FI_ETRUNC, FI_ETRUNC, NULL, 0);
		sse_cntr_inc_err(ep->recv_cntr);
	} else if (fsrc == FI_ADDR_NOTAVAIL && (ep->caps & FI_SOURCE_ERR) &&
		   (ep->caps & FI_SOURCE)) {
		struct fi_sse_addr a = { ep->fabric_id, src };

		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, rx->context, flags, len,
					   buf, data, tag, 0, FI_EADDRNOTAVAIL,
					   FI_EADDRNOTAVAIL, &a, sizeof(a));
		sse_cntr_inc_err(ep->recv_cntr);
	} else {
		if (ep->rx_cq && (rx->completion || (multi && last)))
			__sse_cq_write(ep->rx_cq, rx->context, flags, len, buf,
				       data, tag, fsrc);
		sse_cntr_inc(ep->recv_cntr);
	}
	if (last && !rx->posted)
		__sse_rx_free(ep, rx);
}

static struct sse_msg *sse_msg_new(const struct ssemu_event *ev)
{
	struct sse_msg *msg = sse_zalloc(sizeof(*msg));

	if (!msg)
		return NULL;
	sse_dlist_init(&msg->entry);
	sse_dlist_init(&msg->active);
	sse_dlist_init(&msg->rdq);
	msg->src = ev->src;
	msg->tclass = ev->tclass;
	msg->msg_id = SSE_HDR_ID(ev->hdr[0]);
	msg->hflags = (uint8_t)SSE_HDR_FLAGS(ev->hdr[0]);
	msg->tagged = msg->hflags & SSE_HF_TAGGED;
	msg->tag = ev->hdr[1];
	msg->data = ev->hdr[2];
	msg->total = ev->hdr[3];
	return msg;
}

/* A receive buffer the NIC cannot write: the receive fails with this. */
static int __sse_rx_fault(struct sse_ep *ep, ssemu_addr_t src)
{
	SSE_EP_WARN(ep, "message from %u:%u: the receive buffer is not writable memory: the receive fails with FI_EFAULT\n",
		    SSEMU_ADDR_PORT(src), SSEMU_ADDR_PID(src));
	return FI_EFAULT;
}

/* Every expected byte of @msg is here. */
static void __sse_msg_done(struct sse_ep *ep, struct sse_msg *msg)
{
	struct sse_rx *rx = msg->rx;

	sse_dlist_remove(&msg->active);
	msg->complete = true;
	if (msg->discard) {
		__sse_msg_free(msg);
		return;
	}
	if (!rx)
		return;		/* unexpected: waits for a receive */
	if (msg->buf && !msg->err &&
	    sse_copy_to_iov(rx->iov, rx->iov_count, msg->rx_off, msg->buf,
			    SSEMU_MIN(msg->total, msg->rx_len)))
		msg->err = __sse_rx_fault(ep, msg->src);
	__sse_rx_complete(ep, rx, msg->src, msg->hflags, msg->tag, msg->data,
			  msg->total, msg->rx_off, msg->rx_len, msg->err,
			  msg->err);
	__sse_msg_free(msg);
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
	struct sse_rx *rx = msg->rx;
	int err;

	sse_dlist_remove(&msg->rdq);
	if (!msg->read_err) {
		__sse_send_fin(ep, msg, 0);
		__sse_msg_done(ep, msg);
		return;
	}
	if (msg->read_err == -EACCES &&
	    ssemu_ep_peer_alive(ep->emu, msg->src)) {
		/* The kernel refused the engine the cross-memory attach a
		 * read needs (ptrace restrictions): let senders push. */
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
	SSE_EP_WARN(ep, "rendezvous read of %zu bytes from %u:%u failed: %s\n",
		    msg->expect, SSEMU_ADDR_PORT(msg->src),
		    SSEMU_ADDR_PID(msg->src), strerror(-msg->read_err));
	if (ssemu_ep_peer_alive(ep->emu, msg->src))
		__sse_send_fin(ep, msg, err);
	sse_dlist_remove(&msg->active);
	__sse_rx_complete(ep, rx, msg->src, msg->hflags, msg->tag, msg->data,
			  msg->total, msg->rx_off, msg->rx_len, err,
			  -msg->read_err);
	__sse_msg_free(msg);
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
				     ep->max_frag);
		struct sse_rma_piece *p = sse_zalloc(sizeof(*p));
		struct ssemu_rma r = {
			.dest = msg->src,
			.tclass = msg->tclass,
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
			free(p);
			if (ret == -EAGAIN) {
				full = -FI_EAGAIN;
				break;
			}
			msg->read_err = ret;
			break;
		}
		p->msg = msg;
		p->off = msg->read_next;
		p->len = n;
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
	struct sse_rx *rx = msg->rx;

	if (ev->status) {
		if (!msg->read_err)
			msg->read_err = ev->status;
	} else {
		const void *data = ssemu_event_data(ep->emu, ev);

		if (data) {
			if (sse_copy_to_iov(rx->iov, rx->iov_count,
					    msg->rx_off + p->off, data,
					    p->len) && !msg->read_err) {
				__sse_rx_fault(ep, msg->src);
				msg->read_err = -EFAULT;
			}
			msg->received += p->len;
		} else if (!msg->read_err) {
			msg->read_err = -EIO;
		}
	}
	ssemu_event_release(ep->emu, ev);
	sse_dlist_remove(&p->entry);
	free(p);
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
static void __sse_rndv_read_progress(struct sse_ep *ep)
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
static void __sse_rndv_start(struct sse_ep *ep, struct sse_msg *msg)
{
	msg->rndv = true;
	msg->expect = SSEMU_MIN(msg->total, msg->rx_len);
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
 * A receive met an unexpected (or claimed) message.  @return whether @rx is
 * still posted (a multi-recv buffer with room left); if not, @rx may have
 * been completed and freed.
 */
bool __sse_rx_match_unexp(struct sse_ep *ep, struct sse_rx *rx,
			  struct sse_msg *msg)
{
	bool still_posted;

	sse_dlist_remove(&msg->entry);
	__sse_rx_place(ep, rx, msg->total, &msg->rx_off, &msg->rx_len);
	still_posted = rx->posted;
	msg->rx = rx;
	if (msg->rndv) {
		__sse_rndv_start(ep, msg);
		return still_posted;
	}
	if (msg->complete)
		__sse_msg_done(ep, msg);
	/* else: still arriving into msg->buf; delivered when done */
	return still_posted;
}

static struct sse_rx *__sse_find_posted(struct sse_ep *ep, ssemu_addr_t src,
					bool tagged, uint64_t tag)
{
	struct sse_dlist *q = &ep->rx_posted[tagged ? SSE_Q_TAG : SSE_Q_MSG];
	struct sse_rx *rx;

	sse_dlist_foreach(q, rx, struct sse_rx, entry) {
		if (sse_rx_matches(rx, src, tagged, tag))
			return rx;
	}
	return NULL;
}

static void __sse_handle_first(struct sse_ep *ep, const struct ssemu_event *ev,
			       unsigned op)
{
	uint8_t hflags = (uint8_t)SSE_HDR_FLAGS(ev->hdr[0]);
	bool tagged = hflags & SSE_HF_TAGGED;
	size_t total = ev->hdr[3];
	size_t payload = op == SSE_OP_EAGER ? ev->len : 0;
	const void *data = payload ? ssemu_event_data(ep->emu, ev) : NULL;
	bool rread = op == SSE_OP_RTS && (hflags & SSE_HF_RNDV_READ);
	struct sse_rndv_desc desc = { 0, 0 };
	struct sse_rx *rx;
	struct sse_msg *msg;

	if (payload > total || (payload && !data) ||
	    (rread && ssemu_event_copy(ep->emu, ev, 0, &desc, sizeof(desc)) !=
		      sizeof(desc))) {
		SSE_EP_WARN(ep, "malformed message from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}

	rx = __sse_find_posted(ep, ev->src, tagged, ev->hdr[1]);
	if (rx && op == SSE_OP_EAGER &&
	    (payload == total || (hflags & SSE_HF_FAULT))) {
		size_t off, room;
		int err = 0;

		/* The common case: all of it, straight into the buffer. */
		__sse_rx_place(ep, rx, total, &off, &room);
		if (hflags & SSE_HF_FAULT)	/* its sender could not read */
			err = FI_EFAULT;
		else if (sse_copy_to_iov(rx->iov, rx->iov_count, off, data,
					 SSEMU_MIN(total, room)))
			err = __sse_rx_fault(ep, ev->src);
		__sse_rx_complete(ep, rx, ev->src, hflags, ev->hdr[1],
				  ev->hdr[2], total, off, room, err, err);
		return;
	}

	msg = sse_msg_new(ev);
	if (!msg)
		goto nomem;
	if (rread) {
		msg->rread = true;
		msg->rkey = desc.key;
		msg->raddr = desc.addr;
	}
	if (rx) {
		__sse_rx_place(ep, rx, total, &msg->rx_off, &msg->rx_len);
		msg->rx = rx;
		if (op == SSE_OP_RTS) {
			__sse_rndv_start(ep, msg);
			return;
		}
		msg->expect = total;
		msg->received = payload;
		if (sse_copy_to_iov(rx->iov, rx->iov_count, msg->rx_off, data,
				    SSEMU_MIN(payload, msg->rx_len)))
			msg->err = __sse_rx_fault(ep, ev->src);
		sse_dlist_insert_tail(&msg->active, &ep->rx_active);
		return;
	}

	/* Unexpected. */
	if (op == SSE_OP_RTS) {
		msg->rndv = true;
	} else if (hflags & SSE_HF_FAULT) {
		/* fails with FI_EFAULT when a receive matches it */
		msg->err = FI_EFAULT;
		msg->expect = msg->received = total;
		msg->complete = true;
	} else {
		if (total) {
			msg->buf = malloc(total);
			if (!msg->buf) {
				free(msg);
				goto nomem;
			}
			memcpy(msg->buf, data, payload);
		}
		msg->expect = total;
		msg->received = payload;
		if (payload == total)
			msg->complete = true;
		else
			sse_dlist_insert_tail(&msg->active, &ep->rx_active);
	}
	sse_dlist_insert_tail(&msg->entry,
			      &ep->rx_unexp[tagged ? SSE_Q_TAG : SSE_Q_MSG]);
	return;
nomem:
	SSE_EP_WARN(ep, "out of memory: message of %zu bytes from %u:%u dropped\n",
		    total, SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
}

static void __sse_handle_frag(struct sse_ep *ep, const struct ssemu_event *ev)
{
	uint64_t id = SSE_HDR_ID(ev->hdr[0]);
	size_t off = ev->hdr[1];
	const void *data = ssemu_event_data(ep->emu, ev);
	struct sse_msg *msg;

	sse_dlist_foreach(&ep->rx_active, msg, struct sse_msg, active) {
		if (msg->msg_id == id && msg->src == ev->src)
			goto found;
	}
	SSE_EP_WARN(ep, "fragment from %u:%u of unknown message %llu dropped\n",
		    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src),
		    (unsigned long long)id);
	return;
found:
	if (SSE_HDR_FLAGS(ev->hdr[0]) & SSE_HF_FAULT) {
		/* its sender could not read the rest: nothing more comes */
		msg->err = FI_EFAULT;
		free(msg->buf);
		msg->buf = NULL;
		__sse_msg_done(ep, msg);
		return;
	}
	if (off + ev->len > msg->total || !data || msg->rread) {
		SSE_EP_WARN(ep, "malformed fragment from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}
	if (msg->buf) {
		memcpy((char *)msg->buf + off, data, ev->len);
	} else if (msg->rx && !msg->discard && !msg->err &&
		   off < msg->rx_len &&
		   sse_copy_to_iov(msg->rx->iov, msg->rx->iov_count,
				   msg->rx_off + off, data,
				   SSEMU_MIN((size_t)ev->len,
					     msg->rx_len - off))) {
		msg->err = __sse_rx_fault(ep, ev->src);
	}
	msg->received += ev->len;
	if (msg->received >= msg->expect)
		__sse_msg_done(ep, msg);
}

static void __sse_handle_recv(struct sse_ep *ep, const struct ssemu_event *ev)
{
	unsigned op = SSE_HDR_OP(ev->hdr[0]);

	switch (op) {
	case SSE_OP_EAGER:
	case SSE_OP_RTS:
		__sse_handle_first(ep, ev, op);
		break;
	case SSE_OP_FRAG:
		__sse_handle_frag(ep, ev);
		break;
	case SSE_OP_CTS:
		__sse_handle_cts(ep, ev);
		break;
	case SSE_OP_FIN:
		__sse_handle_fin(ep, ev);
		break;
	default:
		SSE_EP_WARN(ep, "unknown message type %u from %u:%u dropped\n",
			    op, SSEMU_ADDR_PORT(ev->src),
			    SSEMU_ADDR_PID(ev->src));
		break;
	}
	/* Everything needed was copied out: give the slot back now. */
	ssemu_event_release(ep->emu, ev);
}

/* ------------------------------------------------------------------ */
/* Progress                                                             */
/* ------------------------------------------------------------------ */

void __sse_ep_progress(struct sse_ep *ep)
{
	struct ssemu_event ev[SSE_POLL_BATCH];
	int i, n, rounds = 0;

	__sse_ep_tx_progress(ep);
	__sse_rma_progress(ep);
	__sse_rndv_read_progress(ep);
	do {
		n = ssemu_ep_poll(ep->emu, ev, SSE_POLL_BATCH);
		for (i = 0; i < n; i++) {
			switch (ev[i].type) {
			case SSEMU_EV_RECV:
				__sse_handle_recv(ep, &ev[i]);
				break;
			case SSEMU_EV_SEND_DONE:
				__sse_handle_send_done(ep, &ev[i]);
				break;
			case SSEMU_EV_RMA_DONE:
				__sse_rma_handle_done(ep, &ev[i]);
				break;
			case SSEMU_EV_RMA_REMOTE:
				__sse_rma_handle_remote(ep, &ev[i]);
				break;
			}
		}
		if (n > 0) {
			__sse_ep_tx_progress(ep);
			__sse_rma_progress(ep);
			__sse_rndv_read_progress(ep);
		}
	} while (n == SSE_POLL_BATCH && ++rounds < 8);
}

/*
 * A rendezvous send waits for its receiver's CTS or FIN; if the receiver's
 * process died meanwhile none will ever come, so now and then look whether
 * the peers of parked sends are still there and fail the sends whose peer
 * is gone (as a failed RTS would), withdrawing their regions.
 */
#define SSE_PEER_CHECK_PERIOD 1024

static void __sse_ep_check_peers(struct sse_ep *ep)
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

void __sse_domain_progress(struct sse_domain *dom)
{
	bool check = ++dom->progress_calls % SSE_PEER_CHECK_PERIOD == 0;
	struct sse_ep *ep;

	sse_dlist_foreach(&dom->eps, ep, struct sse_ep, entry) {
		__sse_ep_progress(ep);
		if (check && !sse_dlist_empty(&ep->tx_rndv))
			__sse_ep_check_peers(ep);
	}
	/* counters may have moved: triggered operations that are due */
	if (!sse_dlist_empty(&dom->trig_cntrs))
		__sse_trigger_progress(dom);
}

/* Run the fabric's engine (a no-op when another process runs it).
 * @return 0, or -FI_EIO: the fabric is broken (its segment was found
 * corrupt or cut short), no completion will ever come. */
int sse_engine_progress(struct sse_domain *dom)
{
	int ret = ssemu_fabric_progress(dom->emu->fabric,
					(unsigned)sse_env.progress_budget);

	return ret == -EIO ? -FI_EIO : 0;
}

void sse_domain_progress(struct sse_domain *dom)
{
	sse_engine_progress(dom);
	pthread_mutex_lock(&dom->lock);
	__sse_domain_progress(dom);
	pthread_mutex_unlock(&dom->lock);
}

/*
 * Sleep until the domain may have something new, at most @timeout_ms.
 * With endpoints, sleep in the emulator on the NIC they share (any event
 * for any of them wakes us); with none, on the domain's condition variable.
 */
int sse_domain_wait(struct sse_domain *dom, int timeout_ms)
{
	struct sse_ep *ep, *it;
	struct timespec ts;
	int neps = 0, ret;

	pthread_mutex_lock(&dom->lock);
	ep = sse_dlist_first(&dom->eps, struct sse_ep, entry);
	if (!ep) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&dom->cond, &dom->lock, &ts);
		pthread_mutex_unlock(&dom->lock);
		return 0;
	}
	sse_dlist_foreach(&dom->eps, it, struct sse_ep, entry)
		neps++;
	ep->waiters++;
	pthread_mutex_unlock(&dom->lock);

	/* one sleep for all the domain's endpoints: they share the NIC */
	ret = ssemu_nic_wait(dom->emu->nic, timeout_ms);

	pthread_mutex_lock(&dom->lock);
	if (--ep->waiters == 0)
		pthread_cond_broadcast(&dom->cond);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static void *sse_progress_thread(void *arg)
{
	struct sse_domain *dom = arg;

	for (;;) {
		sse_engine_progress(dom);
		pthread_mutex_lock(&dom->lock);
		if (dom->thread_stop) {
			pthread_mutex_unlock(&dom->lock);
			break;
		}
		__sse_domain_progress(dom);
		pthread_mutex_unlock(&dom->lock);
		sse_domain_wait(dom, 10);
	}
	return NULL;
}

int sse_progress_thread_start(struct sse_domain *dom)
{
	int ret;

	dom->thread_stop = false;
	ret = pthread_create(&dom->thread, NULL, sse_progress_thread, dom);
	if (ret) {
		SSE_DOM_WARN(dom, "cannot start the progress thread: %s\n",
			     strerror(ret));
		return -FI_ENOMEM;
	}
	dom->thread_running = true;
	return 0;
}

void sse_progress_thread_stop(struct sse_domain *dom)
{
	if (!dom->thread_running)
		return;
	pthread_mutex_lock(&dom->lock);
	dom->thread_stop = true;
	pthread_cond_broadcast(&dom->cond);
	pthread_mutex_unlock(&dom->lock);
	pthread_join(dom->thread, NULL);
	dom->thread_running = false;
}

/* Free everything an endpoint still holds (fi_close). */
void __sse_ep_flush(struct sse_ep *ep)
{
	struct sse_msg *msg, *mtmp;
	struct sse_rx *rx, *rtmp;
	struct sse_tx *tx, *ttmp;
	int q;

	sse_dlist_foreach_safe(&ep->rx_active, msg, mtmp, struct sse_msg,
			       active) {
		rx = msg->rx;
		if (rx) {
			if (rx->flags & FI_MULTI_RECV)
				rx->mr_pending--;
			if (!rx->posted && !rx->mr_pending)
				__sse_rx_free(ep, rx);
		}
		__sse_msg_free(msg);
	}
	for (q = 0; q < 2; q++) {
		sse_dlist_foreach_safe(&ep->rx_unexp[q], msg, mtmp,
				       struct sse_msg, entry)
			__sse_msg_free(msg);
		sse_dlist_foreach_safe(&ep->rx_posted[q], rx, rtmp,
				       struct sse_rx, entry) {
			sse_dlist_remove(&rx->entry);
			__sse_rx_free(ep, rx);
		}
	}
	sse_dlist_foreach_safe(&ep->rx_claimed, msg, mtmp, struct sse_msg,
			       entry)
		__sse_msg_free(msg);
	sse_dlist_foreach_safe(&ep->tx_all, tx, ttmp, struct sse_tx, all)
		__sse_tx_free(ep, tx);
	__sse_rndv_cache_flush(ep);
	__sse_rma_flush(ep);
}
