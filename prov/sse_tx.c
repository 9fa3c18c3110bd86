/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_tx.c: transmit.  A send becomes one or more ssemu messages of at
 * most ssemu_ep_max_msg bytes: an EAGER message carrying the first piece
 * (or an RTS carrying none, above FI_SLINGSHOT_EMU_EAGER_MAX), then FRAG
 * messages (sse_proto.h).  Whatever the emulator cannot take now (-EAGAIN)
 * waits on the endpoint's FIFO tx_queue and is retried on every progress
 * call, so nothing is lost and order is kept.  A send completes when every
 * message it posted has its SEND_DONE (and, for rendezvous, the receiver's
 * CTS or FIN came back, sse_rndv.c).  Control messages (CTS, FIN) are
 * transfer objects too, with no completion of their own.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

static int sse_errno_to_fi(int err)
{
	/* FI_E* values are errno values for everything the emulator uses. */
	return err < 0 ? -err : err;
}

SSEMU_HOT
void __sse_tx_free(struct sse_ep *ep, struct sse_tx *tx)
{
	__sse_tx_unreg(ep, tx);
	sse_dlist_remove(&tx->entry);
	sse_dlist_remove(&tx->all);
	__sse_bounce_put(ep, tx->bounce);
	sse_pool_put(&ep->tx_pool, tx);
}

static void __sse_tx_report(struct sse_ep *ep, struct sse_tx *tx)
{
	if (tx->err) {
		SSE_EP_WARN(ep, "send to %u:%u failed: %s\n",
			    SSEMU_ADDR_PORT(tx->dest), SSEMU_ADDR_PID(tx->dest),
			    fi_strerror(tx->err));
		if (ep->tx_cq)
			__sse_cq_write_err(ep->tx_cq, &(struct fi_cq_err_entry){
				.op_context = tx->context,
				.flags = tx->cq_flags, .tag = tx->tag,
				.err = tx->err, .prov_errno = tx->err,
			});
		sse_cntr_inc_err(ep->send_cntr);
		return;
	}
	if (tx->completion && ep->tx_cq)
		__sse_cq_write(ep->tx_cq, tx->context, tx->cq_flags, 0, NULL,
			       0, 0, FI_ADDR_NOTAVAIL);
	sse_cntr_inc(ep->send_cntr);
}

/* Complete @tx if nothing of it is outstanding any more. */
SSEMU_HOT
void __sse_tx_check_done(struct sse_ep *ep, struct sse_tx *tx)
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

/* Post one message of @tx with the header in @s, carrying @iov. */
SSEMU_HOT
static int __sse_post_iov(struct sse_ep *ep, struct sse_tx *tx,
			  struct ssemu_send *s, const struct iovec *iov,
			  size_t iov_count)
{
	int ret;

	s->dest = tx->dest;
	s->tclass = tx->tclass;
	s->flags = SSEMU_SEND_ORDERED;
	s->iov = iov;
	s->iov_count = iov_count;
	s->cookie = (uint64_t)(uintptr_t)tx;
	ret = ssemu_ep_send(ep->emu, s);
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
		      struct ssemu_send *s, size_t off, size_t len)
{
	struct iovec iov[SSE_IOV_LIMIT];
	size_t n = 0;

	if (len)
		n = sse_iov_slice(tx->iov, tx->iov_count, off, len, iov,
				  SSE_IOV_LIMIT);
	return __sse_post_iov(ep, tx, s, n ? iov : NULL, n);
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
SSEMU_HOT
int __sse_tx_post(struct sse_ep *ep, struct sse_tx *tx)
{
	/* the header is built where the emulator reads it */
	struct ssemu_send s;
	uint64_t *hdr = s.hdr;
	int ret;

	if (!tx->hdr_posted) {
		size_t first = 0;

		if (tx->op == SSE_OP_CTS || tx->op == SSE_OP_FIN) {
			memcpy(hdr, tx->ctrl_hdr, sizeof(s.hdr));
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
			ret = __sse_post_iov(ep, tx, &s, &desc, 1);
		} else if (tx->fault) {
			ret = __sse_post_iov(ep, tx, &s, NULL, 0);
		} else {
			ret = __sse_post(ep, tx, &s, 0, first);
			if (ret == -FI_EFAULT) {
				__sse_tx_fault(ep, tx, 0);
				hdr[0] |= (uint64_t)SSE_HF_FAULT << 48;
				ret = __sse_post_iov(ep, tx, &s, NULL, 0);
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
			ret = __sse_post_iov(ep, tx, &s, NULL, 0);
		} else {
			ret = __sse_post(ep, tx, &s, tx->next_off, n);
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
SSEMU_HOT
void __sse_tx_posted(struct sse_ep *ep, struct sse_tx *tx)
{
	sse_dlist_remove(&tx->entry);
	if (!tx->data_ready)
		sse_dlist_insert_tail(&tx->entry, &ep->tx_rndv);
	else
		__sse_tx_check_done(ep, tx);
}

/* Start a new send or control message, keeping FIFO order. */
SSEMU_HOT
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

SSEMU_HOT
void __sse_ep_tx_progress(struct sse_ep *ep)
{
	struct sse_tx *tx;

	while ((tx = sse_dlist_first(&ep->tx_queue, struct sse_tx, entry))) {
		if (__sse_tx_post(ep, tx) == -FI_EAGAIN)
			break;
		__sse_tx_posted(ep, tx);
	}
}

SSEMU_HOT
void __sse_handle_send_done(struct sse_ep *ep,
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
