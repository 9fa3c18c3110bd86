/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_rma.c: fi_ops_rma, and the engine every RMA and atomic operation goes
 * through (sse_atomic.c builds its requests the same way).
 *
 * The target NIC does the target's side (ssemu_ep_rma): nothing here runs
 * in the target process except the optional remote event.  An operation is
 * cut into pieces of at most ssemu_ep_max_msg bytes (half of it for
 * compares, whose pieces carry operands and compare values), each lying in
 * one remote segment; pieces are posted ordered from a FIFO per endpoint,
 * and whatever the emulator cannot take now (-EAGAIN) waits there and is
 * retried on every progress call.  The operation completes when the last
 * piece's RMA_DONE is in; that is delivery complete, since the emulator
 * reports a piece done only once the target executed it.
 *
 * Remote events.  Only the last piece of an operation asks the target NIC
 * for an RMA_REMOTE event, and only when the target has a use for it:
 * remote CQ data (writedata), or an initiating endpoint opened with
 * FI_RMA_EVENT (the capability is symmetric in practice: both sides open
 * their endpoints from the same fi_info).  The target then counts the
 * operation on its FI_REMOTE_READ/FI_REMOTE_WRITE counters and the MR's
 * bound counters once, after all of its data landed (ordered pieces
 * execute in order).  Without FI_RMA_EVENT nothing at all happens in the
 * target process, which is what passive-target MPI needs.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

/* FI_* flags an RMA or atomic call may carry. */
#define SSE_RMA_FLAGS_OK (SSE_TX_OP_FLAGS | FI_REMOTE_CQ_DATA | FI_FENCE | \
			  FI_MORE | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE)

/* The emulator's RMA status as a libfabric error. */
static int sse_rma_errno(int status)
{
	switch (status) {
	case -ENOKEY:
	case -ERANGE:
	case -EACCES:
		return FI_EACCES;	/* the target refused it */
	case -ESRCH:
	case -EHOSTUNREACH:
		return FI_EHOSTUNREACH;
	case -ECONNREFUSED:
		return FI_ECONNREFUSED;
	case -EMSGSIZE:
		return FI_EMSGSIZE;
	case -EINVAL:
		return FI_EINVAL;
	case -ENOMEM:
		return FI_ENOMEM;
	default:
		return status < 0 ? -status : FI_EIO;
	}
}

size_t sse_rma_piece_max(struct sse_ep *ep, uint32_t op, size_t elem)
{
	size_t max = ep->max_frag;

	if (op == SSEMU_RMA_COMPARE)
		max /= 2;
	if (elem > 1)
		max -= max % elem;
	return max;
}

/* ------------------------------------------------------------------ */
/* Completion                                                           */
/* ------------------------------------------------------------------ */

static void __sse_rma_free(struct sse_rma_op *op)
{
	sse_dlist_remove(&op->entry);
	sse_dlist_remove(&op->all);
	__sse_rma_op_free(op);
}

static void __sse_rma_report(struct sse_ep *ep, struct sse_rma_op *op)
{
	struct sse_cntr *cntr = (op->cq_flags & FI_READ) ? ep->read_cntr :
							   ep->write_cntr;

	if (op->err) {
		SSE_EP_WARN(ep, "%s to %u:%u failed: %s (%d)\n",
			    (op->cq_flags & FI_ATOMIC) ? "atomic" :
			    (op->cq_flags & FI_READ) ? "RMA read" :
						       "RMA write",
			    SSEMU_ADDR_PORT(op->dest), SSEMU_ADDR_PID(op->dest),
			    fi_strerror(op->err), op->prov_errno);
		/* An injected operation has no context to report. */
		if (ep->tx_cq && !op->no_comp)
			__sse_cq_write_err(ep->tx_cq, &(struct fi_cq_err_entry){
				.op_context = op->context,
				.flags = op->cq_flags, .err = op->err,
				.prov_errno = op->prov_errno,
			});
		sse_cntr_inc_err(cntr);
		return;
	}
	if (op->completion && ep->tx_cq)
		__sse_cq_write(ep->tx_cq, op->context, op->cq_flags, 0, NULL,
			       0, 0, FI_ADDR_NOTAVAIL);
	sse_cntr_inc(cntr);
}

static void __sse_rma_check_done(struct sse_ep *ep, struct sse_rma_op *op)
{
	if (!op->posting_done || op->done != op->posted)
		return;
	__sse_rma_report(ep, op);
	if (op->active) {
		assert(ep->rma_active > 0);
		ep->rma_active--;
	}
	assert(ep->tx_count > 0);
	ep->tx_count--;
	__sse_rma_free(op);
}

/* ------------------------------------------------------------------ */
/* Posting                                                              */
/* ------------------------------------------------------------------ */

/*
 * Post what can be posted of @op.  @return 0 when every piece is posted
 * (or the operation failed), -FI_EAGAIN when the emulator is full or a
 * fence holds it back.
 */
static int __sse_rma_post(struct sse_ep *ep, struct sse_rma_op *op)
{
	struct iovec iov[SSE_IOV_LIMIT], cmp[SSE_IOV_LIMIT];

	while (!op->posting_done) {
		struct ssemu_rma r = {
			.dest = op->dest,
			.tclass = op->tclass,
			.flags = SSEMU_SEND_ORDERED,
			.op = op->op,
			.aop = op->aop,
			.dtype = op->dtype,
		};
		const struct fi_rma_iov *seg;
		struct sse_rma_piece *p;
		size_t n;
		int ret;

		/* FI_FENCE: every earlier operation completes first. */
		if (op->fence && !op->posted && ep->rma_active)
			return -FI_EAGAIN;

		/*
		 * Zero bytes: no piece at all, unless the target must hear of
		 * it (CQ data, a remote event): then one empty piece, whose
		 * key and address the target NIC checks like any other.
		 */
		if (!op->len && op->rflags && op->rma_count) {
			seg = &op->rma[0];
		} else {
			while (op->rma_idx < op->rma_count &&
			       op->rma_off == op->rma[op->rma_idx].len) {
				op->rma_idx++;
				op->rma_off = 0;
			}
			if (op->rma_idx == op->rma_count) {
				/* validated: local and remote lengths agree */
				op->posting_done = true;
				break;
			}
			seg = &op->rma[op->rma_idx];
		}
		n = SSEMU_MIN(op->len - op->next_off,
			      SSEMU_MIN(seg->len - op->rma_off,
					op->piece_max));

		r.key = seg->key;
		r.addr = seg->addr + op->rma_off;
		r.len = n;
		if (op->op != SSEMU_RMA_READ &&
		    !(op->op == SSEMU_RMA_FETCH && op->aop == FI_ATOMIC_READ)) {
			r.iov = iov;
			r.iov_count = sse_iov_slice(op->iov, op->iov_count,
						    op->next_off, n, iov,
						    SSE_IOV_LIMIT);
		}
		if (op->op == SSEMU_RMA_COMPARE) {
			r.cmp = cmp;
			r.cmp_count = sse_iov_slice(op->cmp, op->cmp_count,
						    op->next_off, n, cmp,
						    SSE_IOV_LIMIT);
		}
		if (op->next_off + n == op->len) {
			r.flags |= op->rflags;
			r.hdr[0] = SSE_HDR0(SSE_OP_RMA, op->hflags, 0);
			r.hdr[1] = seg->key;
			r.hdr[2] = op->data;
			r.hdr[3] = op->len;
		}

		p = sse_pool_get(&ep->piece_pool);
		if (!p)
			return -FI_EAGAIN;	/* retried later */
		p->op = op;
		p->msg = NULL;
		p->off = op->next_off;
		p->len = n;
		r.cookie = (uint64_t)(uintptr_t)p;

		ret = ssemu_ep_rma(ep->emu, &r);
		if (ret == -EAGAIN) {
			sse_pool_put(&ep->piece_pool, p);
			return -FI_EAGAIN;
		}
		if (ret) {
			/* Fail the operation: nothing more is posted. */
			sse_pool_put(&ep->piece_pool, p);
			if (!op->err) {
				op->err = sse_rma_errno(ret);
				op->prov_errno = -ret;
			}
			op->posting_done = true;
			break;
		}
		sse_dlist_insert_tail(&p->entry, &ep->rma_pieces);
		if (!op->active) {
			op->active = true;
			ep->rma_active++;
		}
		op->posted++;
		op->next_off += n;
		op->rma_off += n;
		/* (an empty piece is all there is) */
		if (op->next_off == op->len)
			op->posting_done = true;
	}
	return 0;
}

SSEMU_HOT
void __sse_rma_progress(struct sse_ep *ep)
{
	struct sse_rma_op *op;

	while ((op = sse_dlist_first(&ep->rma_queue, struct sse_rma_op,
				     entry))) {
		if (__sse_rma_post(ep, op) == -FI_EAGAIN)
			break;
		sse_dlist_remove(&op->entry);
		__sse_rma_check_done(ep, op);
	}
}

/* ------------------------------------------------------------------ */
/* Events                                                               */
/* ------------------------------------------------------------------ */

void __sse_rma_handle_done(struct sse_ep *ep, const struct ssemu_event *ev)
{
	struct sse_rma_piece *p = (struct sse_rma_piece *)(uintptr_t)ev->cookie;
	struct sse_rma_op *op;

	if (!p) {
		ssemu_event_release(ep->emu, ev);
		return;
	}
	if (p->msg) {
		/* a rendezvous read (sse_rndv.c) */
		__sse_rndv_read_done(ep, p, ev);
		return;
	}
	op = p->op;
	if (ev->status) {
		if (!op->err) {
			op->err = sse_rma_errno(ev->status);
			op->prov_errno = -ev->status;
		}
	} else if (op->op == SSEMU_RMA_READ || op->op == SSEMU_RMA_FETCH ||
		   op->op == SSEMU_RMA_COMPARE) {
		/* results: read data, or the target's old values (checked
		 * against their CRC once copied out) */
		const void *data = ssemu_event_payload(ep->emu, ev);
		bool rd = op->op == SSEMU_RMA_READ;
		ssize_t ret;

		if (data && p->len) {
			/* copied and checked from one read */
			ret = ssemu_event_copy_iov(ep->emu, ev,
					rd ? op->iov : op->res,
					rd ? op->iov_count : op->res_count,
					p->off, p->len);
			if (ret == -EFAULT) {
				if (!op->err) {
					op->err = FI_EFAULT;
					op->prov_errno = EFAULT;
				}
			} else if (ret < 0) {
				data = NULL;
				errno = (int)-ret;
			}
		}
		if (!data) {
			if (p->len && !op->err) {
				SSE_EP_WARN(ep, "RMA results from %u:%u could not be read (%s): the operation fails with FI_EIO\n",
					    SSEMU_ADDR_PORT(op->dest),
					    SSEMU_ADDR_PID(op->dest),
					    strerror(errno));
				op->err = FI_EIO;
				op->prov_errno = errno;
			}
		}
	}
	ssemu_event_release(ep->emu, ev);
	sse_dlist_remove(&p->entry);
	sse_pool_put(&ep->piece_pool, p);
	op->done++;
	/* Still on rma_queue: its posting finishes first. */
	if (op->posting_done)
		__sse_rma_check_done(ep, op);
}

/*
 * Target side: an operation that asked for it was done to this process's
 * memory.  hdr = { SSE_OP_RMA | flags, key, CQ data, total length }.
 */
void __sse_rma_handle_remote(struct sse_ep *ep, const struct ssemu_event *ev)
{
	uint8_t hflags = (uint8_t)SSE_HDR_FLAGS(ev->hdr[0]);
	bool rread = hflags & SSE_HF_RREAD;
	struct sse_mr *mr;

	if (SSE_HDR_OP(ev->hdr[0]) != SSE_OP_RMA) {
		SSE_EP_WARN(ep, "malformed RMA event from %u:%u dropped\n",
			    SSEMU_ADDR_PORT(ev->src), SSEMU_ADDR_PID(ev->src));
		return;
	}
	if ((hflags & SSE_HF_DATA) && ep->rx_cq) {
		fi_addr_t src = FI_ADDR_NOTAVAIL;

		if ((ep->caps & FI_SOURCE) && ep->av)
			src = __sse_av_reverse(ep->av, ev->src);
		__sse_cq_write(ep->rx_cq, NULL, FI_REMOTE_CQ_DATA |
			       ((hflags & SSE_HF_ATOMIC) ? FI_ATOMIC : FI_RMA) |
			       (rread ? FI_REMOTE_READ : FI_REMOTE_WRITE),
			       ev->hdr[3], NULL, ev->hdr[2], 0, src);
	}
	if (ep->caps & FI_RMA_EVENT)
		sse_cntr_inc(rread ? ep->rread_cntr : ep->rwrite_cntr);
	mr = __sse_mr_find(ep->domain, ev->hdr[1]);
	if (mr)
		sse_cntr_inc(rread ? mr->rread_cntr : mr->rwrite_cntr);
}

/* Free everything an endpoint still holds (fi_close). */
void __sse_rma_flush(struct sse_ep *ep)
{
	struct sse_rma_piece *p, *ptmp;
	struct sse_rma_op *op, *otmp;

	sse_dlist_foreach_safe(&ep->rma_pieces, p, ptmp, struct sse_rma_piece,
			       entry) {
		sse_dlist_remove(&p->entry);
		sse_pool_put(&ep->piece_pool, p);
	}
	sse_dlist_foreach_safe(&ep->rma_all, op, otmp, struct sse_rma_op, all)
		__sse_rma_free(op);
	ep->rma_active = 0;
}

/* ------------------------------------------------------------------ */
/* Submission                                                           */
/* ------------------------------------------------------------------ */

/* A valid iov list, and its total length (which must not wrap). */
static int sse_rma_check_iov(const struct iovec *iov, size_t count,
			     size_t limit, size_t *len)
{
	size_t i;

	*len = 0;
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
		if (iov[i].iov_len > SIZE_MAX - *len)
			goto wrap;
		*len += iov[i].iov_len;
	}
	return 0;
wrap:
	SSE_WARN(FI_LOG_EP_DATA, "iov lengths add up to more than SIZE_MAX\n");
	return -FI_EINVAL;
}

/* Give a built operation back to its endpoint's pools (NULL: nothing). */
void __sse_rma_op_free(struct sse_rma_op *op)
{
	if (op) {
		__sse_bounce_put(op->ep, op->bounce);
		sse_pool_put(&op->ep->rma_pool, op);
	}
}

/*
 * Validate and build one operation (domain lock held: it comes from the
 * endpoint's pool).  @return 0 with the operation in *@opp, or an
 * argument error.
 */
int __sse_rma_build(struct sse_ep *ep, const struct sse_rma_req *req,
		  struct sse_rma_op **opp)
{
	bool is_atomic = req->op != SSEMU_RMA_WRITE &&
			 req->op != SSEMU_RMA_READ;
	bool inject = req->flags & FI_INJECT;
	bool has_src = req->op != SSEMU_RMA_READ &&
		       !(req->op == SSEMU_RMA_FETCH &&
			 req->aop == FI_ATOMIC_READ);
	struct sse_rma_op *op;
	size_t len, rlen = 0, clen, reslen, i;
	int ret;

	if (!(ep->caps & (is_atomic ? FI_ATOMIC : FI_RMA)))
		return -FI_EOPNOTSUPP;
	if (req->flags & ~SSE_RMA_FLAGS_OK)
		return -FI_EBADFLAGS;
	if (req->rma_count > SSE_IOV_LIMIT || (req->rma_count && !req->rma))
		return -FI_EINVAL;
	if ((ret = sse_rma_check_iov(req->iov, req->iov_count,
				     ep->tx_iov_limit, &len)) ||
	    (ret = sse_rma_check_iov(req->cmp, req->cmp_count,
				     ep->tx_iov_limit, &clen)) ||
	    (ret = sse_rma_check_iov(req->res, req->res_count,
				     ep->tx_iov_limit, &reslen)))
		return ret;
	for (i = 0; i < req->rma_count; i++) {
		if (req->rma[i].len % req->elem ||
		    req->rma[i].len > SIZE_MAX - rlen) {
			SSE_WARN(FI_LOG_EP_DATA, "remote iov lengths add up to more than SIZE_MAX\n");
			return -FI_EINVAL;
		}
		rlen += req->rma[i].len;
	}
	if (has_src || req->op == SSEMU_RMA_READ) {
		if (len != rlen)
			return -FI_EINVAL;
	} else {
		/* ATOMIC_READ: no operands, the results name the length. */
		len = rlen;
	}
	if (len % req->elem || len > SSE_MAX_MSG_SIZE)
		return -FI_EINVAL;
	if ((req->op == SSEMU_RMA_FETCH || req->op == SSEMU_RMA_COMPARE) &&
	    reslen != len)
		return -FI_EINVAL;
	if (req->op == SSEMU_RMA_COMPARE && clen != len)
		return -FI_EINVAL;
	if (inject && len > ep->inject_size)
		return -FI_EINVAL;
	if ((req->flags & FI_REMOTE_CQ_DATA) && req->op == SSEMU_RMA_READ)
		return -FI_EINVAL;

	op = __sse_rma_op_get(ep);
	if (!op)
		return -FI_ENOMEM;
	sse_dlist_init(&op->entry);
	sse_dlist_init(&op->all);
	op->ep = ep;
	op->dest = SSEMU_ADDR_INVALID;
	op->cq_flags = 0;
	op->data = 0;
	op->rflags = 0;
	op->hflags = 0;
	op->bounce = NULL;
	op->iov_count = op->cmp_count = op->res_count = op->rma_count = 0;
	op->context = req->context;
	op->op = req->op;
	op->aop = req->aop;
	op->dtype = req->dtype;
	op->len = len;
	op->piece_max = sse_rma_piece_max(ep, req->op, req->elem);
	op->tclass = ep->emu_tclass;
	op->fence = req->flags & FI_FENCE;
	switch (req->op) {
	case SSEMU_RMA_WRITE:
		op->cq_flags = FI_RMA | FI_WRITE;
		break;
	case SSEMU_RMA_READ:
		op->cq_flags = FI_RMA | FI_READ;
		op->hflags = SSE_HF_RREAD;
		break;
	case SSEMU_RMA_ATOMIC:
		op->cq_flags = FI_ATOMIC | FI_WRITE;
		op->hflags = SSE_HF_ATOMIC;
		break;
	default:
		op->cq_flags = FI_ATOMIC | FI_READ;
		op->hflags = SSE_HF_ATOMIC;
		if (req->aop == FI_ATOMIC_READ)
			op->hflags |= SSE_HF_RREAD;
		break;
	}
	if (req->flags & FI_REMOTE_CQ_DATA) {
		op->hflags |= SSE_HF_DATA;
		op->data = req->data;
	}
	if ((op->hflags & SSE_HF_DATA) || (ep->caps & FI_RMA_EVENT))
		op->rflags = SSEMU_RMA_REMOTE_EVENT;
	/* fi_inject_* have no completion; counters still count them. */
	op->no_comp = req->no_comp;
	op->completion = !req->no_comp &&
			 (!ep->tx_selective || (req->flags & FI_COMPLETION));

	if (inject && len) {
		/* The caller may reuse its buffer as soon as we return. */
		op->bounce = __sse_bounce_get(ep, len);
		if (!op->bounce) {
			__sse_rma_op_free(op);
			return -FI_ENOMEM;
		}
		if (sse_copy_from_iov(op->bounce, req->iov, req->iov_count, 0,
				      len)) {
			SSE_EP_WARN(ep, "inject of %zu bytes from memory that is not readable refused\n",
				    len);
			__sse_rma_op_free(op);
			return -FI_EFAULT;
		}
		op->iov[0].iov_base = op->bounce;
		op->iov[0].iov_len = len;
		op->iov_count = 1;
	} else if (req->iov_count) {
		memcpy(op->iov, req->iov, req->iov_count * sizeof(*req->iov));
		op->iov_count = req->iov_count;
	}
	if (req->cmp_count) {
		memcpy(op->cmp, req->cmp, req->cmp_count * sizeof(*req->cmp));
		op->cmp_count = req->cmp_count;
	}
	if (req->res_count) {
		memcpy(op->res, req->res, req->res_count * sizeof(*req->res));
		op->res_count = req->res_count;
	}
	if (req->rma_count) {
		memcpy(op->rma, req->rma, req->rma_count * sizeof(*req->rma));
		op->rma_count = req->rma_count;
	}
	*opp = op;
	return 0;
}

/*
 * Start a built operation (domain lock held).  @return 0; -FI_EAGAIN
 * (tx_size operations outstanding) or another error, with @op still the
 * caller's.
 */
ssize_t __sse_rma_start(struct sse_ep *ep, struct sse_rma_op *op,
			fi_addr_t dest)
{
	ssemu_addr_t daddr;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	ret = __sse_av_lookup(ep->av, dest, &daddr);
	if (ret) {
		SSE_EP_WARN(ep, "RMA to unknown fi_addr %llu\n",
			    (unsigned long long)dest);
		return ret;
	}
	op->dest = daddr;
	if (ep->tx_count >= ep->tx_size) {
		__sse_ep_progress(ep);
		if (ep->tx_count >= ep->tx_size)
			return -FI_EAGAIN;
	}
	ep->tx_count++;
	if (op->cq_flags & FI_ATOMIC)
		ep->rma_atomics++;
	else if (op->op == SSEMU_RMA_READ)
		ep->rma_reads++;
	else
		ep->rma_writes++;
	ep->rma_bytes += op->len;
	sse_dlist_insert_tail(&op->all, &ep->rma_all);
	/* Zero bytes keep their place in the queue and their fence. */
	if (sse_dlist_empty(&ep->rma_queue) &&
		   __sse_rma_post(ep, op) != -FI_EAGAIN) {
		if (op->err && !op->posted) {
			/* Refused at once (bad arguments): not started. */
			ret = -op->err;
			ep->tx_count--;
			sse_dlist_remove(&op->all);
			return ret;
		}
		__sse_rma_check_done(ep, op);
	} else {
		sse_dlist_insert_tail(&op->entry, &ep->rma_queue);
	}
	return 0;
}

/*
 * Validate, build and start one operation.  Every RMA and atomic call ends
 * here.  @return 0, -FI_EAGAIN (tx_size operations outstanding), or an
 * argument error.
 */
ssize_t sse_rma_submit(struct sse_ep *ep, const struct sse_rma_req *req)
{
	struct sse_domain *dom = ep->domain;
	struct sse_rma_op *op;
	ssize_t ret;

	if (req->flags & FI_TRIGGER)
		return sse_trigger_rma(ep, req);
	pthread_mutex_lock(&dom->lock);
	ret = __sse_rma_build(ep, req, &op);
	if (ret)
		goto unlock;
	ret = __sse_rma_start(ep, op, req->dest);
	if (ret)
		__sse_rma_op_free(op);
	/* one that completed at once counted: triggered operations due */
	if (!sse_dlist_empty(&dom->trig_cntrs))
		__sse_trigger_progress(dom);
unlock:
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* fi_ops_rma                                                           */
/* ------------------------------------------------------------------ */

static ssize_t sse_rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
			    void *desc, fi_addr_t src_addr, uint64_t addr,
			    uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };
	struct sse_rma_req req = {
		.op = SSEMU_RMA_READ, .flags = sse_tx_flags(ep_fid),
		.context = context, .dest = src_addr, .elem = 1,
		.iov = &iov, .iov_count = 1, .rma = &rma, .rma_count = 1,
	};

	return sse_rma_submit(sse_ep_of(ep_fid), &req);
}

/* fi_readv and fi_writev: one remote segment as long as the local ones. */
static ssize_t sse_rma_vec(struct fid_ep *ep_fid, uint32_t op,
			   const struct iovec *iov, size_t count,
			   fi_addr_t peer, uint64_t addr, uint64_t key,
			   void *context)
{
	struct fi_rma_iov rma = { .addr = addr, .key = key };
	struct sse_rma_req req = {
		.op = op, .flags = sse_tx_flags(ep_fid), .context = context,
		.dest = peer, .elem = 1, .iov = iov, .iov_count = count,
		.rma = &rma, .rma_count = 1,
	};

	if (count && iov)
		rma.len = sse_iov_len(iov, SSEMU_MIN(count, SSE_IOV_LIMIT));
	return sse_rma_submit(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			     void **desc, size_t count, fi_addr_t src_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	return sse_rma_vec(ep_fid, SSEMU_RMA_READ, iov, count, src_addr, addr,
			   key, context);
}

/* fi_readmsg and fi_writemsg. */
static ssize_t sse_rma_msg(struct fid_ep *ep_fid, uint32_t op,
			   const struct fi_msg_rma *msg, uint64_t flags)
{
	struct sse_rma_req req;

	if (!msg)
		return -FI_EINVAL;
	req = (struct sse_rma_req){
		.op = op, .flags = flags, .context = msg->context,
		.data = op == SSEMU_RMA_WRITE ? msg->data : 0,
		.dest = msg->addr, .elem = 1, .iov = msg->msg_iov,
		.iov_count = msg->iov_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count,
	};
	return sse_rma_submit(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_rma_readmsg(struct fid_ep *ep_fid,
			       const struct fi_msg_rma *msg, uint64_t flags)
{
	return sse_rma_msg(ep_fid, SSEMU_RMA_READ, msg, flags);
}

/* Every write call but fi_writev and fi_writemsg: one buffer. */
static ssize_t sse_rma_write_buf(struct fid_ep *ep_fid, fi_addr_t dest,
				 const struct fi_rma_iov *rma, const void *buf,
				 uint64_t data, uint64_t flags, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = rma->len };
	struct sse_rma_req req = {
		.op = SSEMU_RMA_WRITE, .flags = sse_tx_flags(ep_fid) | flags,
		.context = context, .data = data, .dest = dest, .elem = 1,
		.iov = &iov, .iov_count = 1, .rma = rma, .rma_count = 1,
		.no_comp = flags & FI_INJECT,
	};

	return sse_rma_submit(sse_ep_of(ep_fid), &req);
}

static ssize_t sse_rma_write(struct fid_ep *ep_fid, const void *buf,
			     size_t len, void *desc, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };

	return sse_rma_write_buf(ep_fid, dest_addr, &rma, buf, 0, 0, context);
}

static ssize_t sse_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key, void *context)
{
	return sse_rma_vec(ep_fid, SSEMU_RMA_WRITE, iov, count, dest_addr,
			   addr, key, context);
}

static ssize_t sse_rma_writemsg(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	return sse_rma_msg(ep_fid, SSEMU_RMA_WRITE, msg, flags);
}

static ssize_t sse_rma_inject(struct fid_ep *ep_fid, const void *buf,
			      size_t len, fi_addr_t dest_addr, uint64_t addr,
			      uint64_t key)
{
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };

	return sse_rma_write_buf(ep_fid, dest_addr, &rma, buf, 0, FI_INJECT,
				 NULL);
}

static ssize_t sse_rma_writedata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, void *context)
{
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };

	return sse_rma_write_buf(ep_fid, dest_addr, &rma, buf, data,
				 FI_REMOTE_CQ_DATA, context);
}

static ssize_t sse_rma_injectdata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key)
{
	struct fi_rma_iov rma = { .addr = addr, .len = len, .key = key };

	return sse_rma_write_buf(ep_fid, dest_addr, &rma, buf, data,
				 FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}
struct fi_ops_rma sse_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = sse_rma_read,
	.readv = sse_rma_readv,
	.readmsg = sse_rma_readmsg,
	.write = sse_rma_write,
	.writev = sse_rma_writev,
	.writemsg = sse_rma_writemsg,
	.inject = sse_rma_inject,
	.writedata = sse_rma_writedata,
	.injectdata = sse_rma_injectdata,
};
