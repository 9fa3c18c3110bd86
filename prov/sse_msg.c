/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_msg.c: fi_ops_msg and the send/receive code shared with fi_tagged.
 * Posting only validates, builds the operation and hands it to the engine
 * in sse_tx.c and sse_rx.c; a receive first looks for an unexpected message.
 */
#include <stdlib.h>

#include "sse.h"

#define SSE_TX_FLAGS_OK (SSE_TX_OP_FLAGS | FI_REMOTE_CQ_DATA | FI_MORE | \
			 FI_MATCH_COMPLETE | FI_MSG | FI_TAGGED | FI_SEND)
#define SSE_RX_FLAGS_OK (SSE_RX_OP_FLAGS | FI_MORE | FI_MSG | FI_TAGGED | \
			 FI_RECV)

/*
 * A valid iov list, and its total length (which must not wrap).
 * @null_ok: a send may name address 0 with a length (MPI_BOTTOM as Open
 * MPI's MTL passes it): to the NIC that is memory it cannot read, and the
 * send fails with FI_EFAULT at both ends, as from any unmapped buffer.
 */
SSEMU_HOT
static int sse_check_iov(const struct iovec *iov, size_t count, size_t limit,
			 bool null_ok, size_t *len)
{
	size_t i;

	*len = 0;
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!null_ok && !iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
		if (iov[i].iov_len > SIZE_MAX - *len) {
			SSE_WARN(FI_LOG_EP_DATA, "iov lengths add up to more than SIZE_MAX\n");
			return -FI_EINVAL;
		}
		*len += iov[i].iov_len;
	}
	return 0;
}

/* The checks a send passes before anything is queued. */
SSEMU_HOT
int sse_send_check(struct sse_ep *ep, const struct sse_send_req *req)
{
	size_t len;
	int ret;

	if (!(ep->caps & (req->tagged ? FI_TAGGED : FI_MSG)))
		return -FI_EOPNOTSUPP;
	if (req->flags & ~SSE_TX_FLAGS_OK)
		return -FI_EBADFLAGS;
	ret = sse_check_iov(req->iov, req->count, ep->tx_iov_limit, true,
			    &len);
	if (ret)
		return ret;
	if (len > ep->max_msg_size)
		return -FI_EMSGSIZE;
	if ((req->flags & FI_INJECT) && len > ep->inject_size)
		return -FI_EINVAL;
	return 0;
}

SSEMU_HOT
ssize_t sse_send_common(struct sse_ep *ep, const struct sse_send_req *req)
{
	struct sse_domain *dom = ep->domain;
	ssize_t ret;

	if (req->flags & FI_TRIGGER)
		return sse_trigger_send(ep, req);
	ret = sse_send_check(ep, req);
	if (ret)
		return ret;
	pthread_mutex_lock(&dom->lock);
	ret = __sse_send(ep, req);
	/* an inject counts at once: triggered operations may be due */
	if (!sse_dlist_empty(&dom->trig_cntrs))
		__sse_trigger_progress(dom);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/* Start a checked send (sse_send_check); the domain lock is held. */
SSEMU_HOT
ssize_t __sse_send(struct sse_ep *ep, const struct sse_send_req *req)
{
	const struct iovec *iov = req->iov;
	size_t count = req->count;
	uint64_t flags = req->flags;
	bool tagged = req->tagged;
	size_t len = sse_iov_len(iov, count);
	ssemu_addr_t daddr;
	struct sse_tx *tx;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	ret = __sse_av_lookup(ep->av, req->dest, &daddr);
	if (ret) {
		SSE_EP_WARN(ep, "send to unknown fi_addr %llu\n",
			    (unsigned long long)req->dest);
		return ret;
	}
	if (ep->tx_count >= ep->tx_size) {
		__sse_ep_progress(ep);
		if (ep->tx_count >= ep->tx_size)
			return -FI_EAGAIN;
	}

	tx = __sse_tx_get(ep);
	if (!tx)
		return -FI_ENOMEM;
	tx->user = true;
	tx->reported = false;
	tx->bounce = NULL;
	tx->iov_count = 0;
	tx->context = req->context;
	tx->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	tx->msg_id = ep->next_msg_id++;
	tx->dest = daddr;
	tx->tag = tagged ? req->tag : 0;
	tx->data = (flags & FI_REMOTE_CQ_DATA) ? req->data : 0;
	tx->hflags = (tagged ? SSE_HF_TAGGED : 0) |
		     ((flags & FI_REMOTE_CQ_DATA) ? SSE_HF_DATA : 0);
	tx->tclass = ep->emu_tclass;
	tx->len = len;
	tx->completion = !req->no_comp &&
			 (!ep->tx_selective || (flags & FI_COMPLETION));

	if (flags & FI_INJECT) {
		/* The caller may reuse its buffer as soon as we return. */
		if (len) {
			tx->bounce = __sse_bounce_get(ep, len);
			if (!tx->bounce) {
				sse_pool_put(&ep->tx_pool, tx);
				return -FI_ENOMEM;
			}
			if (sse_copy_from_iov(tx->bounce, iov, count, 0,
					      len)) {
				SSE_EP_WARN(ep, "inject of %zu bytes from memory that is not readable refused\n",
					    len);
				__sse_bounce_put(ep, tx->bounce);
				sse_pool_put(&ep->tx_pool, tx);
				return -FI_EFAULT;
			}
			tx->iov[0].iov_base = tx->bounce;
			tx->iov[0].iov_len = len;
			tx->iov_count = 1;
		}
	} else if (count) {
		memcpy(tx->iov, iov, count * sizeof(*iov));
		tx->iov_count = count;
	}

	if (!(flags & FI_INJECT) && len > ep->eager_max) {
		tx->op = SSE_OP_RTS;
		tx->send_len = 0;
		tx->data_ready = false;
	} else {
		tx->op = SSE_OP_EAGER;
		tx->send_len = len;
		tx->data_ready = true;
	}

	ep->tx_count++;
	if (flags & FI_INJECT) {
		/* Injected data is ours now: the send is complete for the
		 * application (FI_INJECT_COMPLETE). */
		tx->reported = true;
		if (tx->completion && ep->tx_cq)
			__sse_cq_write(ep->tx_cq, req->context, tx->cq_flags, 0,
				       NULL, 0, 0, FI_ADDR_NOTAVAIL);
		sse_cntr_inc(ep->send_cntr);
	}
	return __sse_tx_start(ep, tx);
}

SSEMU_HOT
ssize_t sse_recv_common(struct sse_ep *ep, const struct sse_recv_req *req)
{
	const struct iovec *iov = req->iov;
	size_t count = req->count;
	uint64_t flags = req->flags;
	bool tagged = req->tagged;
	struct sse_domain *dom = ep->domain;
	struct sse_dlist *unexp;
	struct sse_msg *msg, *tmp;
	ssemu_addr_t saddr = SSEMU_ADDR_INVALID;
	struct sse_rx *rx;
	size_t len;
	int ret;

	if (!(ep->caps & (tagged ? FI_TAGGED : FI_MSG)))
		return -FI_EOPNOTSUPP;
	if (flags & ~SSE_RX_FLAGS_OK)
		return -FI_EBADFLAGS;
	ret = sse_check_iov(iov, count, ep->rx_iov_limit, false, &len);
	if (ret)
		return ret;
	if (flags & FI_MULTI_RECV) {
		if (tagged || count != 1 || !(ep->caps & FI_MULTI_RECV))
			return -FI_EINVAL;
	}

	pthread_mutex_lock(&dom->lock);
	if (!ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto unlock;
	}
	if ((ep->caps & FI_DIRECTED_RECV) && req->src != FI_ADDR_UNSPEC) {
		ret = __sse_av_lookup(ep->av, req->src, &saddr);
		if (ret) {
			SSE_EP_WARN(ep, "receive from unknown fi_addr %llu\n",
				    (unsigned long long)req->src);
			goto unlock;
		}
	}
	if (ep->rx_count >= ep->rx_size) {
		__sse_ep_progress(ep);
		if (ep->rx_count >= ep->rx_size) {
			ret = -FI_EAGAIN;
			goto unlock;
		}
	}

	rx = __sse_rx_get(ep);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto unlock;
	}
	sse_dlist_init(&rx->entry);
	rx->context = req->context;
	rx->flags = flags;
	rx->tagged = tagged;
	rx->completion = !ep->rx_selective || (flags & FI_COMPLETION);
	rx->src = saddr;
	rx->tag = tagged ? req->tag : 0;
	rx->ignore = tagged ? req->ignore : 0;
	rx->iov_count = count;
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->len = len;
	ep->rx_count++;

	/* Unexpected messages first, in arrival order. */
	rx->posted = true;
	sse_dlist_insert_tail(&rx->entry,
			      &ep->rx_posted[tagged ? SSE_Q_TAG : SSE_Q_MSG]);
	unexp = &ep->rx_unexp[tagged ? SSE_Q_TAG : SSE_Q_MSG];
	sse_dlist_foreach_safe(unexp, msg, tmp, struct sse_msg, entry) {
		if (!sse_match(rx->src, tagged, rx->tag, rx->ignore,
			       msg->src, msg->tag))
			continue;
		if (!__sse_rx_match_unexp(ep, rx, msg))
			break;	/* consumed (and maybe already freed) */
	}
	ret = 0;
unlock:
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/* ------------------------------------------------------------------ */

SSEMU_HOT
static ssize_t sse_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct sse_recv_req req = {
		.iov = &iov, .count = 1, .src = src_addr,
		.flags = sse_rx_flags(ep_fid), .context = context,
	};

	return sse_recv_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 void *context)
{
	struct sse_recv_req req = {
		.iov = iov, .count = count, .src = src_addr,
		.flags = sse_rx_flags(ep_fid), .context = context,
	};

	return sse_recv_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	struct sse_recv_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct sse_recv_req){
		.iov = msg->msg_iov, .count = msg->iov_count,
		.src = msg->addr, .flags = flags, .context = msg->context,
	};
	return sse_recv_common(sse_ep_of(ep_fid), &req);
}

/* Every send call but fi_sendmsg: one buffer, the fid's op flags. */
SSEMU_HOT
static ssize_t sse_send_buf(struct fid_ep *ep_fid, const void *buf,
			    size_t len, fi_addr_t dest, uint64_t data,
			    uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct sse_send_req req = {
		.iov = &iov, .count = 1, .dest = dest, .data = data,
		.flags = sse_tx_flags(ep_fid) | flags, .context = context,
		.no_comp = flags & FI_INJECT,
	};

	return sse_send_common(sse_ep_of(ep_fid), &req);
}

SSEMU_HOT
static ssize_t sse_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, void *context)
{
	return sse_send_buf(ep_fid, buf, len, dest_addr, 0, 0, context);
}

static ssize_t sse_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 void *context)
{
	struct sse_send_req req = {
		.iov = iov, .count = count, .dest = dest_addr,
		.flags = sse_tx_flags(ep_fid), .context = context,
	};

	return sse_send_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			   uint64_t flags)
{
	struct sse_send_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct sse_send_req){
		.iov = msg->msg_iov, .count = msg->iov_count,
		.dest = msg->addr, .data = msg->data, .flags = flags,
		.context = msg->context,
	};
	return sse_send_common(sse_ep_of(ep_fid), &req);
}

SSEMU_HOT
static ssize_t sse_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			  fi_addr_t dest_addr)
{
	return sse_send_buf(ep_fid, buf, len, dest_addr, 0, FI_INJECT, NULL);
}

SSEMU_HOT
static ssize_t sse_senddata(struct fid_ep *ep_fid, const void *buf,
			    size_t len, void *desc, uint64_t data,
			    fi_addr_t dest_addr, void *context)
{
	return sse_send_buf(ep_fid, buf, len, dest_addr, data,
			    FI_REMOTE_CQ_DATA, context);
}

SSEMU_HOT
static ssize_t sse_injectdata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, uint64_t data, fi_addr_t dest_addr)
{
	return sse_send_buf(ep_fid, buf, len, dest_addr, data,
			    FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_msg sse_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = sse_recv,
	.recvv = sse_recvv,
	.recvmsg = sse_recvmsg,
	.send = sse_send,
	.sendv = sse_sendv,
	.sendmsg = sse_sendmsg,
	.inject = sse_inject,
	.senddata = sse_senddata,
	.injectdata = sse_injectdata,
};
