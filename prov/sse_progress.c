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
 * SEND_DONE (and, for rendezvous, the receiver's CTS came back).
 *
 * Receive.  The first piece of a message is matched against the posted
 * receives; an unmatched one is copied out of the emulator's slot into
 * provider memory at once and the slot released, so senders never stall on
 * unmatched messages.  Later pieces are found by (source, message id).
 * A rendezvous RTS waits, data-less, until a receive matches it; the
 * receiver then sends a CTS naming how many bytes it wants.
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

size_t sse_copy_to_iov(const struct iovec *iov, size_t count, size_t off,
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
		memcpy((char *)iov[i].iov_base + off, s + done, n);
		done += n;
		off = 0;
	}
	return done;
}

size_t sse_copy_from_iov(void *dst, const struct iovec *iov, size_t count,
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
		memcpy(d + done, (const char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

static int sse_errno_to_fi(int err)
{
	/* FI_E* values are errno values for everything the emulator uses. */
	return err < 0 ? -err : err;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                             */
/* ------------------------------------------------------------------ */

static void __sse_tx_free(struct sse_tx *tx)
{
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
	__sse_tx_free(tx);
}

static int __sse_post(struct sse_ep *ep, struct sse_tx *tx,
		      const uint64_t *hdr, size_t off, size_t len)
{
	struct iovec iov[SSE_IOV_LIMIT];
	struct ssemu_send s = {
		.dest = tx->dest,
		.tclass = tx->tclass,
		.flags = SSEMU_SEND_ORDERED,
		.cookie = (uint64_t)(uintptr_t)tx,
	};
	int ret;

	memcpy(s.hdr, hdr, sizeof(s.hdr));
	if (len) {
		s.iov = iov;
		s.iov_count = sse_iov_slice(tx->iov, tx->iov_count, off, len,
					    iov, SSE_IOV_LIMIT);
	}
	ret = ssemu_ep_send(ep->emu, &s);
	if (ret == -EAGAIN)
		return -FI_EAGAIN;
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

/*
 * Post what can be posted of @tx.  @return 0 when nothing more is to be
 * posted now (all of it, or the rest waits for a CTS), -FI_EAGAIN when the
 * emulator is full.
 */
static int __sse_tx_post(struct sse_ep *ep, struct sse_tx *tx)
{
	uint64_t hdr[SSEMU_HDR_WORDS];
	int ret;

	if (!tx->hdr_posted) {
		size_t first = 0;

		if (tx->op == SSE_OP_CTS) {
			memcpy(hdr, tx->ctrl_hdr, sizeof(hdr));
		} else {
			hdr[0] = SSE_HDR0(tx->op, tx->hflags, tx->msg_id);
			hdr[1] = tx->tag;
			hdr[2] = tx->data;
			hdr[3] = tx->len;
			if (tx->op == SSE_OP_EAGER)
				first = SSEMU_MIN(tx->len, ep->max_frag);
		}
		ret = __sse_post(ep, tx, hdr, 0, first);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			tx->hdr_posted = true;
			tx->next_off = first;
		}
	}
	while (tx->data_ready && tx->next_off < tx->send_len) {
		size_t n = SSEMU_MIN(tx->send_len - tx->next_off,
				     ep->max_frag);

		hdr[0] = SSE_HDR0(SSE_OP_FRAG, tx->hflags, tx->msg_id);
		hdr[1] = tx->next_off;
		hdr[2] = 0;
		hdr[3] = tx->len;
		ret = __sse_post(ep, tx, hdr, tx->next_off, n);
		if (ret < 0)
			return ret;
		if (ret > 0)
			tx->next_off += n;
	}
	return 0;
}

/* After a successful post: park a rendezvous send until its CTS. */
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

int __sse_send_cts(struct sse_ep *ep, struct sse_msg *msg, size_t wanted)
{
	struct sse_tx *tx = calloc(1, sizeof(*tx));

	if (!tx) {
		SSE_EP_WARN(ep, "out of memory: rendezvous reply lost\n");
		return -FI_ENOMEM;
	}
	tx->dest = msg->src;
	tx->tclass = ep->emu_tclass;
	tx->op = SSE_OP_CTS;
	tx->data_ready = true;
	tx->ctrl_hdr[0] = SSE_HDR0(SSE_OP_CTS, 0, msg->msg_id);
	tx->ctrl_hdr[1] = wanted;
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
		/* The RTS failed: no CTS will come. */
		sse_dlist_remove(&tx->entry);
		tx->data_ready = true;
		tx->send_len = 0;
	}
	/* Still on tx_queue: finish posting first. */
	if (tx->hdr_posted && tx->data_ready && tx->next_off >= tx->send_len)
		__sse_tx_check_done(ep, tx);
}

static void __sse_handle_cts(struct sse_ep *ep, const struct ssemu_event *ev)
{
	uint64_t id = SSE_HDR_ID(ev->hdr[0]);
	struct sse_tx *tx;

	sse_dlist_foreach(&ep->tx_rndv, tx, struct sse_tx, entry) {
		if (tx->msg_id == id && tx->dest == ev->src)
			goto found;
	}
	SSE_EP_WARN(ep, "CTS from %u:%u for unknown message %llu\n",
		    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src),
		    (unsigned long long)id);
	return;
found:
	sse_dlist_remove(&tx->entry);
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
 * Truncation and an unknown source under FI_SOURCE_ERR are error entries.
 */
static void __sse_rx_complete(struct sse_ep *ep, struct sse_rx *rx,
			      ssemu_addr_t src, uint8_t hflags, uint64_t tag,
			      uint64_t data, size_t total, size_t off,
			      size_t room)
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

	if (total > room) {
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
	struct sse_msg *msg = calloc(1, sizeof(*msg));

	if (!msg)
		return NULL;
	sse_dlist_init(&msg->entry);
	sse_dlist_init(&msg->active);
	msg->src = ev->src;
	msg->msg_id = SSE_HDR_ID(ev->hdr[0]);
	msg->hflags = (uint8_t)SSE_HDR_FLAGS(ev->hdr[0]);
	msg->tagged = msg->hflags & SSE_HF_TAGGED;
	msg->tag = ev->hdr[1];
	msg->data = ev->hdr[2];
	msg->total = ev->hdr[3];
	return msg;
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
	if (msg->buf)
		sse_copy_to_iov(rx->iov, rx->iov_count, msg->rx_off, msg->buf,
				SSEMU_MIN(msg->total, msg->rx_len));
	__sse_rx_complete(ep, rx, msg->src, msg->hflags, msg->tag, msg->data,
			  msg->total, msg->rx_off, msg->rx_len);
	__sse_msg_free(msg);
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
		size_t wanted = SSEMU_MIN(msg->total, msg->rx_len);

		msg->expect = wanted;
		__sse_send_cts(ep, msg, wanted);
		if (!wanted)
			__sse_msg_done(ep, msg);
		else
			sse_dlist_insert_tail(&msg->active, &ep->rx_active);
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
	struct sse_rx *rx;
	struct sse_msg *msg;

	if (payload > total || (payload && !data)) {
		SSE_EP_WARN(ep, "malformed message from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}

	rx = __sse_find_posted(ep, ev->src, tagged, ev->hdr[1]);
	if (rx && op == SSE_OP_EAGER && payload == total) {
		size_t off, room;

		/* The common case: all of it, straight into the buffer. */
		__sse_rx_place(ep, rx, total, &off, &room);
		sse_copy_to_iov(rx->iov, rx->iov_count, off, data,
				SSEMU_MIN(total, room));
		__sse_rx_complete(ep, rx, ev->src, hflags, ev->hdr[1],
				  ev->hdr[2], total, off, room);
		return;
	}

	msg = sse_msg_new(ev);
	if (!msg)
		goto nomem;
	if (rx) {
		__sse_rx_place(ep, rx, total, &msg->rx_off, &msg->rx_len);
		msg->rx = rx;
		if (op == SSE_OP_RTS) {
			msg->rndv = true;
			msg->expect = SSEMU_MIN(total, msg->rx_len);
			__sse_send_cts(ep, msg, msg->expect);
			if (!msg->expect) {
				__sse_msg_done(ep, msg);
				return;
			}
		} else {
			msg->expect = total;
			msg->received = payload;
			sse_copy_to_iov(rx->iov, rx->iov_count, msg->rx_off,
					data, SSEMU_MIN(payload, msg->rx_len));
		}
		sse_dlist_insert_tail(&msg->active, &ep->rx_active);
		return;
	}

	/* Unexpected. */
	if (op == SSE_OP_RTS) {
		msg->rndv = true;
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
	if (off + ev->len > msg->total || !data) {
		SSE_EP_WARN(ep, "malformed fragment from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}
	if (msg->buf) {
		memcpy((char *)msg->buf + off, data, ev->len);
	} else if (msg->rx && !msg->discard && off < msg->rx_len) {
		sse_copy_to_iov(msg->rx->iov, msg->rx->iov_count,
				msg->rx_off + off, data,
				SSEMU_MIN((size_t)ev->len, msg->rx_len - off));
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
		}
	} while (n == SSE_POLL_BATCH && ++rounds < 8);
}

/*
 * A rendezvous send waits for its receiver's CTS; if the receiver's process
 * died meanwhile no CTS will ever come, so now and then look whether the
 * peers of parked sends are still there and fail the sends whose peer is
 * gone (as a failed RTS would).
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
}

/* Run the fabric's engine (a no-op when another process runs it). */
void sse_engine_progress(struct sse_domain *dom)
{
	ssemu_fabric_progress(dom->emu->fabric,
			      (unsigned)sse_env.progress_budget);
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
		__sse_tx_free(tx);
	__sse_rma_flush(ep);
}
