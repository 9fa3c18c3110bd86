/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_tagged.c: fi_ops_tagged.  Matching is sse_match (sse.h):
 * ((tag ^ want) & ~ignore) == 0, against posted receives in posting order
 * and unexpected messages in arrival order.  FI_PEEK looks at the
 * unexpected queue (no match: an FI_ENOMSG error entry); FI_CLAIM sets a
 * message aside for a later receive carrying the same context; FI_DISCARD
 * drops it.
 */
#include <stdlib.h>

#include "sse.h"

static struct sse_msg *__sse_find_unexp(struct sse_ep *ep, ssemu_addr_t src,
					uint64_t tag, uint64_t ignore)
{
	struct sse_msg *msg;

	sse_dlist_foreach(&ep->rx_unexp[SSE_Q_TAG], msg, struct sse_msg,
			  entry) {
		if (sse_match(src, true, tag, ignore, msg->src, msg->tag))
			return msg;
	}
	return NULL;
}

/* Drop a message nobody will receive; a rendezvous sender is released. */
static void __sse_msg_discard(struct sse_ep *ep, struct sse_msg *msg)
{
	sse_dlist_remove(&msg->entry);
	msg->discard = true;
	if (msg->rndv) {
		__sse_rndv_decline(ep, msg);
		__sse_msg_free(msg);
	} else if (msg->complete) {
		__sse_msg_free(msg);
	} else {
		/* Pieces still arriving: they are counted, not kept. */
		free(msg->buf);
		msg->buf = NULL;
	}
}

static uint64_t sse_msg_cq_flags(const struct sse_msg *msg)
{
	return FI_RECV | FI_TAGGED |
	       ((msg->hflags & SSE_HF_DATA) ? FI_REMOTE_CQ_DATA : 0);
}

static fi_addr_t __sse_msg_src(struct sse_ep *ep, const struct sse_msg *msg)
{
	if ((ep->caps & FI_SOURCE) && ep->av)
		return __sse_av_reverse(ep->av, msg->src);
	return FI_ADDR_NOTAVAIL;
}

ssize_t sse_trecv_peek_claim(struct sse_ep *ep,
			     const struct sse_recv_req *req)
{
	const struct iovec *iov = req->iov;
	size_t count = req->count;
	uint64_t tag = req->tag, ignore = req->ignore, flags = req->flags;
	void *context = req->context;
	struct sse_domain *dom = ep->domain;
	ssemu_addr_t saddr = SSEMU_ADDR_INVALID;
	struct sse_msg *msg;
	struct sse_rx *rx;
	ssize_t ret = 0;

	if (!(ep->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	if (flags & ~(FI_PEEK | FI_CLAIM | FI_DISCARD | FI_COMPLETION |
		      FI_TAGGED | FI_RECV | FI_MORE))
		return -FI_EBADFLAGS;
	if (count > ep->rx_iov_limit || (count && !iov))
		return -FI_EINVAL;

	pthread_mutex_lock(&dom->lock);
	if (!ep->enabled || !ep->rx_cq) {
		ret = -FI_EOPBADSTATE;
		goto unlock;
	}

	if (flags & FI_PEEK) {
		if ((ep->caps & FI_DIRECTED_RECV) &&
		    req->src != FI_ADDR_UNSPEC &&
		    __sse_av_lookup(ep->av, req->src, &saddr)) {
			ret = -FI_EINVAL;
			goto unlock;
		}
		__sse_ep_progress(ep);
		msg = __sse_find_unexp(ep, saddr, tag, ignore);
		if (!msg) {
			__sse_cq_write_err(ep->rx_cq, &(struct fi_cq_err_entry){
				.op_context = context,
				.flags = FI_RECV | FI_TAGGED, .tag = tag,
				.err = FI_ENOMSG, .prov_errno = FI_ENOMSG,
			});
			goto unlock;
		}
		__sse_cq_write(ep->rx_cq, context, sse_msg_cq_flags(msg),
			       msg->total, NULL,
			       (msg->hflags & SSE_HF_DATA) ? msg->data : 0,
			       msg->tag, __sse_msg_src(ep, msg));
		if (flags & FI_CLAIM) {
			sse_dlist_remove(&msg->entry);
			msg->claim_ctx = context;
			sse_dlist_insert_tail(&msg->entry, &ep->rx_claimed);
		} else if (flags & FI_DISCARD) {
			__sse_msg_discard(ep, msg);
		}
		goto unlock;
	}

	/* FI_CLAIM: the message a FI_PEEK|FI_CLAIM set aside for context. */
	sse_dlist_foreach(&ep->rx_claimed, msg, struct sse_msg, entry) {
		if (msg->claim_ctx == context)
			goto claimed;
	}
	ret = -FI_EINVAL;
	goto unlock;
claimed:
	if (flags & FI_DISCARD) {
		__sse_cq_write(ep->rx_cq, context, sse_msg_cq_flags(msg), 0,
			       NULL, (msg->hflags & SSE_HF_DATA) ? msg->data : 0,
			       msg->tag, __sse_msg_src(ep, msg));
		__sse_msg_discard(ep, msg);
		goto unlock;
	}
	rx = __sse_rx_get(ep);
	if (!rx) {
		ret = -FI_ENOMEM;
		goto unlock;
	}
	sse_dlist_init(&rx->entry);
	rx->posted = false;
	rx->context = context;
	rx->flags = flags & FI_COMPLETION;
	rx->tagged = true;
	rx->completion = true;
	rx->src = SSEMU_ADDR_INVALID;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->iov_count = count;
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	rx->len = sse_iov_len(iov, count);
	ep->rx_count++;
	__sse_rx_match_unexp(ep, rx, msg);
unlock:
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

SSEMU_HOT
static ssize_t sse_trecv(struct fid_ep *ep_fid, void *buf, size_t len,
			 void *desc, fi_addr_t src_addr, uint64_t tag,
			 uint64_t ignore, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct sse_recv_req req = {
		.iov = &iov, .count = 1, .src = src_addr, .tag = tag,
		.ignore = ignore,
		.flags = sse_rx_flags(ep_fid) & ~FI_MULTI_RECV,
		.context = context, .tagged = true,
	};

	return sse_recv_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_trecvv(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src_addr,
			  uint64_t tag, uint64_t ignore, void *context)
{
	struct sse_recv_req req = {
		.iov = iov, .count = count, .src = src_addr, .tag = tag,
		.ignore = ignore,
		.flags = sse_rx_flags(ep_fid) & ~FI_MULTI_RECV,
		.context = context, .tagged = true,
	};

	return sse_recv_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_trecvmsg(struct fid_ep *ep_fid,
			    const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct sse_ep *ep = sse_ep_of(ep_fid);
	struct sse_recv_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct sse_recv_req){
		.iov = msg->msg_iov, .count = msg->iov_count,
		.src = msg->addr, .tag = msg->tag, .ignore = msg->ignore,
		.flags = flags, .context = msg->context, .tagged = true,
	};
	if (flags & (FI_PEEK | FI_CLAIM))
		return sse_trecv_peek_claim(ep, &req);
	if (flags & FI_DISCARD)
		return -FI_EINVAL;
	return sse_recv_common(ep, &req);
}

/* Every tagged send call but fi_tsendmsg: one buffer, the fid's flags. */
SSEMU_HOT
static ssize_t sse_tsend_buf(struct fid_ep *ep_fid, const void *buf,
			     size_t len, fi_addr_t dest, uint64_t tag,
			     uint64_t data, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct sse_send_req req = {
		.iov = &iov, .count = 1, .dest = dest, .tag = tag,
		.data = data, .flags = sse_tx_flags(ep_fid) | flags,
		.context = context, .tagged = true,
		.no_comp = flags & FI_INJECT,
	};

	return sse_send_common(sse_ep_of(ep_fid), &req);
}

SSEMU_HOT
static ssize_t sse_tsend(struct fid_ep *ep_fid, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t tag,
			 void *context)
{
	return sse_tsend_buf(ep_fid, buf, len, dest_addr, tag, 0, 0, context);
}

static ssize_t sse_tsendv(struct fid_ep *ep_fid, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t tag, void *context)
{
	struct sse_send_req req = {
		.iov = iov, .count = count, .dest = dest_addr, .tag = tag,
		.flags = sse_tx_flags(ep_fid), .context = context,
		.tagged = true,
	};

	return sse_send_common(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_tsendmsg(struct fid_ep *ep_fid,
			    const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct sse_send_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct sse_send_req){
		.iov = msg->msg_iov, .count = msg->iov_count,
		.dest = msg->addr, .tag = msg->tag, .data = msg->data,
		.flags = flags, .context = msg->context, .tagged = true,
	};
	return sse_send_common(sse_ep_of(ep_fid), &req);
}

SSEMU_HOT
static ssize_t sse_tinject(struct fid_ep *ep_fid, const void *buf,
			   size_t len, fi_addr_t dest_addr, uint64_t tag)
{
	return sse_tsend_buf(ep_fid, buf, len, dest_addr, tag, 0, FI_INJECT,
			     NULL);
}

SSEMU_HOT
static ssize_t sse_tsenddata(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, uint64_t data,
			     fi_addr_t dest_addr, uint64_t tag, void *context)
{
	return sse_tsend_buf(ep_fid, buf, len, dest_addr, tag, data,
			     FI_REMOTE_CQ_DATA, context);
}

SSEMU_HOT
static ssize_t sse_tinjectdata(struct fid_ep *ep_fid, const void *buf,
			       size_t len, uint64_t data, fi_addr_t dest_addr,
			       uint64_t tag)
{
	return sse_tsend_buf(ep_fid, buf, len, dest_addr, tag, data,
			     FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_tagged sse_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = sse_trecv,
	.recvv = sse_trecvv,
	.recvmsg = sse_trecvmsg,
	.send = sse_tsend,
	.sendv = sse_tsendv,
	.sendmsg = sse_tsendmsg,
	.inject = sse_tinject,
	.senddata = sse_tsenddata,
	.injectdata = sse_tinjectdata,
};
