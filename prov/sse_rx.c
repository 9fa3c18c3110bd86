/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_rx.c: receive.  The first piece of a message (EAGER or RTS) is
 * matched against the posted receives; an unmatched one is copied out of
 * the emulator's slot into provider memory at once and the slot released,
 * so senders never stall on unmatched messages.  Later pieces (FRAG) are
 * found by (source, message id).  A rendezvous RTS waits, data-less, until
 * a receive matches it (sse_rndv.c then reads or asks for the data).
 * Placement (multi-recv slices), truncation and receive completions are
 * here too.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

void __sse_msg_free(struct sse_msg *msg)
{
	sse_dlist_remove(&msg->entry);
	sse_dlist_remove(&msg->active);
	sse_dlist_remove(&msg->rdq);
	free(msg->buf);
	free(msg);
}

/* Reserve room for a message in @rx (the next slice of a multi-recv). */
SSEMU_HOT
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

void __sse_rx_free(struct sse_ep *ep, struct sse_rx *rx)
{
	assert(ep->rx_count > 0);
	ep->rx_count--;
	sse_pool_put(&ep->rx_pool, rx);
}

/*
 * A message landed (len bytes of total) in @rx at @off: report it.
 * Truncation and an unknown source under FI_SOURCE_ERR are error entries,
 * and so is a message that could not be fetched (@err: positive FI_E*,
 * @prov_errno the emulator's errno).
 */
SSEMU_HOT
void __sse_rx_complete(struct sse_ep *ep, struct sse_rx *rx,
		       const struct sse_rx_done *d)
{
	ssemu_addr_t src = d->src;
	uint64_t tag = d->tag, data = d->data;
	size_t total = d->total, off = d->off, room = d->room;
	int err = d->err, prov_errno = d->prov_errno;
	uint64_t flags = FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG);
	size_t len = SSEMU_MIN(total, room);
	fi_addr_t fsrc = FI_ADDR_NOTAVAIL;
	bool multi = rx->flags & FI_MULTI_RECV;
	bool last = true;
	void *buf;

	if (d->hflags & SSE_HF_DATA)
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
			__sse_cq_write_err(ep->rx_cq, &(struct fi_cq_err_entry){
				.op_context = rx->context, .flags = flags,
				.buf = buf, .data = data, .tag = tag,
				.err = err, .prov_errno = prov_errno,
			});
		sse_cntr_inc_err(ep->recv_cntr);
	} else if (total > room) {
		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, &(struct fi_cq_err_entry){
				.op_context = rx->context, .flags = flags,
				.len = len, .buf = buf, .data = data,
				.tag = tag, .olen = total - room,
				.err = FI_ETRUNC, .prov_errno = FI_ETRUNC,
			});
		sse_cntr_inc_err(ep->recv_cntr);
	} else if (fsrc == FI_ADDR_NOTAVAIL && (ep->caps & FI_SOURCE_ERR) &&
		   (ep->caps & FI_SOURCE)) {
		struct fi_sse_addr a = { ep->fabric_id, src };

		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, &(struct fi_cq_err_entry){
				.op_context = rx->context, .flags = flags,
				.len = len, .buf = buf, .data = data,
				.tag = tag, .err = FI_EADDRNOTAVAIL,
				.prov_errno = FI_EADDRNOTAVAIL, .err_data = &a,
				.err_data_size = sizeof(a),
			});
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

/* Complete the receive @msg was placed in (msg->rx), as @msg says. */
void __sse_msg_complete(struct sse_ep *ep, struct sse_msg *msg, int err,
			int prov_errno)
{
	__sse_rx_complete(ep, msg->rx, &(struct sse_rx_done){
		.src = msg->src, .hflags = msg->hflags, .tag = msg->tag,
		.data = msg->data, .total = msg->total, .off = msg->rx_off,
		.room = msg->rx_len, .err = err, .prov_errno = prov_errno,
	});
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
int __sse_rx_fault(struct sse_ep *ep, ssemu_addr_t src)
{
	SSE_EP_WARN(ep, "message from %u:%u: the receive buffer is not writable memory: the receive fails with FI_EFAULT\n",
		    SSEMU_ADDR_PORT(src), SSEMU_ADDR_PID(src));
	return FI_EFAULT;
}

/* Every expected byte of @msg is here. */
void __sse_msg_done(struct sse_ep *ep, struct sse_msg *msg)
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
	__sse_msg_complete(ep, msg, msg->err,
			   msg->prov_errno ? msg->prov_errno : msg->err);
	__sse_msg_free(msg);
}

/*
 * A piece of a message from @src failed its CRC (ssemu_event_data: its
 * payload changed in shared memory after it was posted): the receive the
 * message goes to fails with this, FI_EIO (prov_errno EBADMSG).
 */
static int __sse_rx_crc_failed(struct sse_ep *ep, ssemu_addr_t src,
			       const struct ssemu_event *ev)
{
	SSE_EP_WARN(ep, "message from %u:%u: a %u-byte piece failed its CRC (changed after it was posted): the receive fails with FI_EIO\n",
		    SSEMU_ADDR_PORT(src), SSEMU_ADDR_PID(src),
		    (unsigned)ev->len);
	return FI_EIO;
}

/*
 * The first @len bytes of @ev's payload into @iov from byte @off, and the
 * whole message (header and payload) checked against its CRC from the
 * same read (ssemu_event_copy_iov).  A message with no payload is checked
 * too: its header, the tag and CQ data, is what it carries.
 * @return 0; -EFAULT: the receive buffer could not be written (not
 * checked); -EBADMSG: the message failed its CRC, what was copied is not
 * to be used.
 */
static int __sse_rx_copy(struct sse_ep *ep, const struct ssemu_event *ev,
			 const struct iovec *iov, size_t count, size_t off,
			 size_t len)
{
	ssize_t n;

	if (!ev->len)
		return ssemu_event_verify(ep->emu, ev) == -EBADMSG ?
			       -EBADMSG : 0;
	n = ssemu_event_copy_iov(ep->emu, ev, iov, count, off, len);
	if (n >= 0)
		return 0;
	return n == -EFAULT ? -EFAULT : -EBADMSG;
}

/* What the receive of @ev fails with for __sse_rx_copy's @ret (not 0). */
static int __sse_rx_copy_err(struct sse_ep *ep, const struct ssemu_event *ev,
			     int ret)
{
	return ret == -EFAULT ? __sse_rx_fault(ep, ev->src) :
				__sse_rx_crc_failed(ep, ev->src, ev);
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
		if (sse_match(rx->src, tagged, rx->tag, rx->ignore, src,
			      tag))
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
	bool rread = op == SSE_OP_RTS && (hflags & SSE_HF_RNDV_READ);
	struct sse_rndv_desc desc = { 0, 0 };
	struct sse_rx *rx;
	struct sse_msg *msg;
	int crc_err = 0, ret;

	if (payload > total || (rread && ev->len != sizeof(desc)))
		goto malformed;
	if (rread) {
		/* the descriptor is used from a copy the CRC checked */
		if (!ssemu_event_payload(ep->emu, ev))
			goto malformed;
		if (ssemu_event_copy(ep->emu, ev, 0, &desc, sizeof(desc)) !=
		    sizeof(desc))
			crc_err = __sse_rx_crc_failed(ep, ev->src, ev);
	} else if (payload && !ssemu_event_payload(ep->emu, ev)) {
		/* (there to copy: checked as it is copied, __sse_rx_copy) */
		goto malformed;
	}

	rx = __sse_find_posted(ep, ev->src, tagged, ev->hdr[1]);
	if (rx && op == SSE_OP_EAGER &&
	    (payload == total || (hflags & SSE_HF_FAULT))) {
		size_t off, room;
		int err = 0;

		/* The common case: all of it, straight into the buffer. */
		__sse_rx_place(ep, rx, total, &off, &room);
		if (hflags & SSE_HF_FAULT) {	/* its sender could not read */
			err = FI_EFAULT;
		} else if ((ret = __sse_rx_copy(ep, ev, rx->iov, rx->iov_count,
						off, SSEMU_MIN(total, room)))) {
			err = __sse_rx_copy_err(ep, ev, ret);
			if (ret == -EBADMSG)
				crc_err = err;
		}
		__sse_rx_complete(ep, rx, &(struct sse_rx_done){
			.src = ev->src, .hflags = hflags, .tag = ev->hdr[1],
			.data = ev->hdr[2], .total = total, .off = off,
			.room = room, .err = err,
			.prov_errno = err && err == crc_err ? EBADMSG : err,
		});
		return;
	}

	msg = sse_msg_new(ev);
	if (!msg)
		goto nomem;
	if (crc_err) {
		/* whichever receive takes it fails */
		msg->err = crc_err;
		msg->prov_errno = EBADMSG;
	}
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
		ret = __sse_rx_copy(ep, ev, rx->iov, rx->iov_count, msg->rx_off,
				    SSEMU_MIN(payload, msg->rx_len));
		if (ret) {
			msg->err = __sse_rx_copy_err(ep, ev, ret);
			if (ret == -EBADMSG)
				msg->prov_errno = EBADMSG;
		}
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
			/* (failed its CRC: nothing of it is kept, and
			 * whichever receive takes it fails) */
			if (__sse_rx_copy(ep, ev, &(struct iovec){
						  msg->buf, payload },
					  1, 0, payload)) {
				free(msg->buf);
				msg->buf = NULL;
				msg->err = __sse_rx_crc_failed(ep, ev->src, ev);
				msg->prov_errno = EBADMSG;
			}
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
malformed:
	SSE_EP_WARN(ep, "malformed message from %u:%u dropped\n",
		    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
	return;
nomem:
	SSE_EP_WARN(ep, "out of memory: message of %zu bytes from %u:%u dropped\n",
		    total, SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
}

static void __sse_handle_frag(struct sse_ep *ep, const struct ssemu_event *ev)
{
	uint64_t id = SSE_HDR_ID(ev->hdr[0]);
	size_t off = ev->hdr[1];
	/* (there to copy: checked as it is copied, __sse_rx_copy) */
	bool payload = ssemu_event_payload(ep->emu, ev) != NULL;
	struct sse_msg *msg;
	int ret;

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
	if (off + ev->len > msg->total || !payload || msg->rread) {
		SSE_EP_WARN(ep, "malformed fragment from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}
	/* copied out and checked from one read (__sse_rx_copy); a piece
	 * that goes nowhere is checked alone */
	if (msg->buf)
		ret = __sse_rx_copy(ep, ev, &(struct iovec){
					    (char *)msg->buf + off, ev->len },
				    1, 0, ev->len);
	else if (msg->rx && !msg->discard && !msg->err && off < msg->rx_len)
		ret = __sse_rx_copy(ep, ev, msg->rx->iov, msg->rx->iov_count,
				    msg->rx_off + off,
				    SSEMU_MIN((size_t)ev->len,
					      msg->rx_len - off));
	else
		ret = __sse_rx_copy(ep, ev, NULL, 0, 0, 0);
	if (ret == -EFAULT && !msg->err) {
		msg->err = __sse_rx_fault(ep, ev->src);
	} else if (ret == -EBADMSG) {
		/* counted, not kept: the receive fails once all is in */
		if (!msg->err) {
			msg->err = __sse_rx_crc_failed(ep, ev->src, ev);
			msg->prov_errno = EBADMSG;
		}
		free(msg->buf);
		msg->buf = NULL;
	}
	msg->received += ev->len;
	if (msg->received >= msg->expect)
		__sse_msg_done(ep, msg);
}

SSEMU_HOT
void __sse_handle_recv(struct sse_ep *ep, const struct ssemu_event *ev)
{
	unsigned op = SSE_HDR_OP(ev->hdr[0]);

	/* A control message (a CTS, a FIN, a fragment without data) is all
	 * header: checked before it is acted on.  (A first piece is checked
	 * when it is matched, and its receive fails if it does not pass.) */
	if (!ev->len && op != SSE_OP_EAGER && op != SSE_OP_RTS &&
	    ssemu_event_verify(ep->emu, ev) == -EBADMSG) {
		SSE_EP_WARN(ep, "a control message from %u:%u failed its CRC (changed after it was posted): dropped\n",
			    SSEMU_ADDR_PORT(ev->src),
			    SSEMU_ADDR_PID(ev->src));
		goto out;
	}
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
out:
	/* Everything needed was copied out: give the slot back now. */
	ssemu_event_release(ep->emu, ev);
}
