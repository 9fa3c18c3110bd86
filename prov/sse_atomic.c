/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_atomic.c: fi_ops_atomic and fi_query_atomic.  The target NIC applies
 * the operation (ssemu_atomic_apply, one operation at a time, so atomics
 * from any number of initiators on one target are atomic with respect to
 * each other); this file turns fi_ioc/fi_rma_ioc lists into byte ranges
 * and hands them to the RMA engine in sse_rma.c.  Which (operation,
 * datatype) pairs are valid is the emulator's table (ssemu_atomic_valid),
 * so the provider never advertises a pair the target NIC would refuse.
 */
#include <stdlib.h>

#include "sse.h"

/* The emulator numbers operations and datatypes as libfabric does. */
#define SSE_SAME_NUM(e, f) \
	_Static_assert((int)(e) == (int)(f), #e " is not " #f)
SSE_SAME_NUM(SSEMU_AOP_MIN, FI_MIN);
SSE_SAME_NUM(SSEMU_AOP_MAX, FI_MAX);
SSE_SAME_NUM(SSEMU_AOP_SUM, FI_SUM);
SSE_SAME_NUM(SSEMU_AOP_PROD, FI_PROD);
SSE_SAME_NUM(SSEMU_AOP_LOR, FI_LOR);
SSE_SAME_NUM(SSEMU_AOP_LAND, FI_LAND);
SSE_SAME_NUM(SSEMU_AOP_BOR, FI_BOR);
SSE_SAME_NUM(SSEMU_AOP_BAND, FI_BAND);
SSE_SAME_NUM(SSEMU_AOP_LXOR, FI_LXOR);
SSE_SAME_NUM(SSEMU_AOP_BXOR, FI_BXOR);
SSE_SAME_NUM(SSEMU_AOP_READ, FI_ATOMIC_READ);
SSE_SAME_NUM(SSEMU_AOP_WRITE, FI_ATOMIC_WRITE);
SSE_SAME_NUM(SSEMU_AOP_CSWAP, FI_CSWAP);
SSE_SAME_NUM(SSEMU_AOP_CSWAP_NE, FI_CSWAP_NE);
SSE_SAME_NUM(SSEMU_AOP_CSWAP_LE, FI_CSWAP_LE);
SSE_SAME_NUM(SSEMU_AOP_CSWAP_LT, FI_CSWAP_LT);
SSE_SAME_NUM(SSEMU_AOP_CSWAP_GE, FI_CSWAP_GE);
SSE_SAME_NUM(SSEMU_AOP_CSWAP_GT, FI_CSWAP_GT);
SSE_SAME_NUM(SSEMU_AOP_MSWAP, FI_MSWAP);
SSE_SAME_NUM(SSEMU_AOP_COUNT, FI_ATOMIC_OP_LAST);
SSE_SAME_NUM(SSEMU_INT8, FI_INT8);
SSE_SAME_NUM(SSEMU_UINT8, FI_UINT8);
SSE_SAME_NUM(SSEMU_INT16, FI_INT16);
SSE_SAME_NUM(SSEMU_UINT16, FI_UINT16);
SSE_SAME_NUM(SSEMU_INT32, FI_INT32);
SSE_SAME_NUM(SSEMU_UINT32, FI_UINT32);
SSE_SAME_NUM(SSEMU_INT64, FI_INT64);
SSE_SAME_NUM(SSEMU_UINT64, FI_UINT64);
SSE_SAME_NUM(SSEMU_FLOAT, FI_FLOAT);
SSE_SAME_NUM(SSEMU_DOUBLE, FI_DOUBLE);
SSE_SAME_NUM(SSEMU_FLOAT_COMPLEX, FI_FLOAT_COMPLEX);
SSE_SAME_NUM(SSEMU_DOUBLE_COMPLEX, FI_DOUBLE_COMPLEX);
SSE_SAME_NUM(SSEMU_LONG_DOUBLE, FI_LONG_DOUBLE);
SSE_SAME_NUM(SSEMU_LONG_DOUBLE_COMPLEX, FI_LONG_DOUBLE_COMPLEX);
SSE_SAME_NUM(SSEMU_INT128, FI_INT128);
SSE_SAME_NUM(SSEMU_UINT128, FI_UINT128);

/*
 * Elements of @dtype one operation may carry: what fits in one piece, so
 * that an operation is one request at the target.  0 if @op is not
 * defined on @dtype for this kind of call.
 */
static size_t sse_atomic_count(size_t max_frag, uint32_t kind,
			       enum fi_datatype dtype, enum fi_op op)
{
	size_t size, max = max_frag;

	if ((unsigned)dtype >= SSEMU_DATATYPE_COUNT ||
	    (unsigned)op >= SSEMU_AOP_COUNT ||
	    !ssemu_atomic_valid(kind, op, dtype))
		return 0;
	size = ssemu_datatype_size(dtype);
	if (!size)
		return 0;
	if (kind == SSEMU_RMA_COMPARE)
		max /= 2;
	return max / size;
}

static int sse_atomic_valid_common(struct fid_ep *ep_fid, uint32_t kind,
				   enum fi_datatype dtype, enum fi_op op,
				   size_t *count)
{
	struct sse_ep *ep = sse_ep_of(ep_fid);
	size_t n;

	if (!(ep->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	n = sse_atomic_count(ep->max_frag, kind, dtype, op);
	if (!n)
		return -FI_EOPNOTSUPP;
	/* a supported pair's answer is the count */
	if (!count)
		return -FI_EINVAL;
	*count = n;
	return 0;
}

static int sse_atomic_writevalid(struct fid_ep *ep, enum fi_datatype dtype,
				 enum fi_op op, size_t *count)
{
	return sse_atomic_valid_common(ep, SSEMU_RMA_ATOMIC, dtype, op,
				       count);
}

static int sse_atomic_readwritevalid(struct fid_ep *ep,
				     enum fi_datatype dtype, enum fi_op op,
				     size_t *count)
{
	return sse_atomic_valid_common(ep, SSEMU_RMA_FETCH, dtype, op, count);
}

static int sse_atomic_compwritevalid(struct fid_ep *ep,
				     enum fi_datatype dtype, enum fi_op op,
				     size_t *count)
{
	return sse_atomic_valid_common(ep, SSEMU_RMA_COMPARE, dtype, op,
				       count);
}

/*
 * fi_query_atomic: the same table, per domain.  The piece size is the same
 * for every endpoint of the fabric: take it from an open endpoint, or, with
 * none, from the configuration as ssemu_ep_max_msg computes it.
 */
int sse_query_atomic(struct fid_domain *domain, enum fi_datatype dtype,
		     enum fi_op op, struct fi_atomic_attr *attr,
		     uint64_t flags)
{
	struct sse_domain *dom = sse_dom(domain);
	uint32_t kind = SSEMU_RMA_ATOMIC;
	size_t max_frag;
	struct sse_ep *ep;
	size_t n;

	if (!attr)
		return -FI_EINVAL;
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
		return -FI_EBADFLAGS;
	if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
		return -FI_EINVAL;
	/* Atomics into tagged receive buffers are not a thing here. */
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;
	if (flags & FI_FETCH_ATOMIC)
		kind = SSEMU_RMA_FETCH;
	else if (flags & FI_COMPARE_ATOMIC)
		kind = SSEMU_RMA_COMPARE;

	pthread_mutex_lock(&dom->lock);
	ep = sse_dlist_first(&dom->eps, struct sse_ep, entry);
	if (ep)
		max_frag = ep->max_frag;
	else
		max_frag = dom->emu->cfg->bufs_per_ep ?
			   dom->emu->cfg->buf_size : SSEMU_INLINE_MAX;
	pthread_mutex_unlock(&dom->lock);

	n = sse_atomic_count(max_frag, kind, dtype, op);
	if (!n)
		return -FI_EOPNOTSUPP;
	attr->count = n;
	attr->size = ssemu_datatype_size(dtype);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Operations                                                           */
/* ------------------------------------------------------------------ */

/* fi_ioc lists in elements -> iovecs in bytes. */
static int sse_ioc_to_iov(const struct fi_ioc *ioc, size_t count,
			  size_t size, struct iovec *iov)
{
	size_t i;

	if (count > SSE_IOV_LIMIT || (count && !ioc))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (ioc[i].count > SIZE_MAX / size)
			return -FI_EINVAL;
		iov[i].iov_base = ioc[i].addr;
		iov[i].iov_len = ioc[i].count * size;
	}
	return 0;
}

static int sse_rma_ioc_to_rma(const struct fi_rma_ioc *ioc, size_t count,
			      size_t size, struct fi_rma_iov *rma)
{
	size_t i;

	if (count > SSE_IOV_LIMIT || (count && !ioc))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (ioc[i].count > SIZE_MAX / size)
			return -FI_EINVAL;
		rma[i].addr = ioc[i].addr;
		rma[i].len = ioc[i].count * size;
		rma[i].key = ioc[i].key;
	}
	return 0;
}

/* One atomic call: operand, compare and result lists in elements, the
 * target as an fi_rma_ioc list (sse_atomic_common). */
struct sse_atomic_call {
	uint32_t kind;		/* SSEMU_RMA_ATOMIC, _FETCH or _COMPARE */
	const struct fi_ioc *iov, *cmp, *res;
	size_t count, cmp_count, res_count;
	const struct fi_rma_ioc *rma;
	size_t rma_count;
	fi_addr_t dest;
	enum fi_datatype dtype;
	enum fi_op op;
	uint64_t data;		/* with FI_REMOTE_CQ_DATA */
	uint64_t flags;
	void *context;
	bool no_comp;		/* fi_inject_atomic */
};

/* The general form of every atomic call. */
static ssize_t sse_atomic_common(struct fid_ep *ep_fid,
				 const struct sse_atomic_call *c)
{
	struct sse_ep *ep = sse_ep_of(ep_fid);
	struct iovec liov[SSE_IOV_LIMIT], lcmp[SSE_IOV_LIMIT],
		     lres[SSE_IOV_LIMIT];
	struct fi_rma_iov lrma[SSE_IOV_LIMIT];
	struct sse_rma_req req = {
		.op = c->kind,
		.aop = c->op,
		.dtype = c->dtype,
		.flags = c->flags,
		.context = c->context,
		.data = c->data,
		.dest = c->dest,
		.no_comp = c->no_comp,
	};
	size_t count = c->count, max, i, total = 0;
	int ret;

	if (!(ep->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	max = sse_atomic_count(ep->max_frag, c->kind, c->dtype, c->op);
	if (!max)
		return -FI_EOPNOTSUPP;
	req.elem = ssemu_datatype_size(c->dtype);

	/* FI_ATOMIC_READ takes no operands: the buffer is ignored. */
	if (c->kind == SSEMU_RMA_FETCH && c->op == FI_ATOMIC_READ)
		count = 0;
	if ((ret = sse_ioc_to_iov(c->iov, count, req.elem, liov)) ||
	    (ret = sse_ioc_to_iov(c->cmp, c->cmp_count, req.elem, lcmp)) ||
	    (ret = sse_ioc_to_iov(c->res, c->res_count, req.elem, lres)) ||
	    (ret = sse_rma_ioc_to_rma(c->rma, c->rma_count, req.elem, lrma)))
		return ret;
	/* One operation is one request at the target (see *valid). */
	for (i = 0; i < c->rma_count; i++) {
		if (c->rma[i].count > max - total)
			return -FI_EINVAL;
		total += c->rma[i].count;
	}

	req.iov = liov;
	req.iov_count = count;
	req.cmp = lcmp;
	req.cmp_count = c->cmp_count;
	req.res = lres;
	req.res_count = c->res_count;
	req.rma = lrma;
	req.rma_count = c->rma_count;
	return sse_rma_submit(ep, &req);
}

/* Elements in an fi_ioc list; SIZE_MAX (refused later) if that wraps. */
static size_t sse_ioc_count(const struct fi_ioc *ioc, size_t count)
{
	size_t i, n = 0;

	if (!ioc || count > SSE_IOV_LIMIT)
		return 0;
	for (i = 0; i < count; i++) {
		if (ioc[i].count > SIZE_MAX - n)
			return SIZE_MAX;
		n += ioc[i].count;
	}
	return n;
}

static ssize_t sse_atomic_write(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key,
				enum fi_datatype dtype, enum fi_op op,
				void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = count, .key = key };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_ATOMIC, .iov = &ioc, .count = 1,
		.rma = &rma, .rma_count = 1, .dest = dest_addr,
		.dtype = dtype, .op = op, .flags = sse_tx_flags(ep),
		.context = context,
	});
}

static ssize_t sse_atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count,
				 fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, enum fi_datatype dtype,
				 enum fi_op op, void *context)
{
	struct fi_rma_ioc rma = { .addr = addr, .key = key,
				  .count = sse_ioc_count(iov, count) };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_ATOMIC, .iov = iov, .count = count,
		.rma = &rma, .rma_count = 1, .dest = dest_addr,
		.dtype = dtype, .op = op, .flags = sse_tx_flags(ep),
		.context = context,
	});
}

static ssize_t sse_atomic_writemsg(struct fid_ep *ep,
				   const struct fi_msg_atomic *msg,
				   uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_ATOMIC, .iov = msg->msg_iov,
		.count = msg->iov_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .dest = msg->addr,
		.dtype = msg->datatype, .op = msg->op, .data = msg->data,
		.flags = flags, .context = msg->context,
	});
}

static ssize_t sse_atomic_inject(struct fid_ep *ep, const void *buf,
				 size_t count, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key,
				 enum fi_datatype dtype, enum fi_op op)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = count, .key = key };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_ATOMIC, .iov = &ioc, .count = 1,
		.rma = &rma, .rma_count = 1, .dest = dest_addr,
		.dtype = dtype, .op = op,
		.flags = sse_tx_flags(ep) | FI_INJECT, .no_comp = true,
	});
}

static ssize_t sse_atomic_readwrite(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t dest_addr,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype dtype, enum fi_op op,
				    void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = count, .key = key };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_FETCH, .iov = &ioc, .count = 1,
		.res = &res, .res_count = 1, .rma = &rma, .rma_count = 1,
		.dest = dest_addr, .dtype = dtype, .op = op,
		.flags = sse_tx_flags(ep), .context = context,
	});
}

static ssize_t sse_atomic_readwritev(struct fid_ep *ep,
				     const struct fi_ioc *iov, void **desc,
				     size_t count, struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest_addr, uint64_t addr,
				     uint64_t key, enum fi_datatype dtype,
				     enum fi_op op, void *context)
{
	/* ATOMIC_READ has no operands: the results give the count. */
	struct fi_rma_ioc rma = {
		.addr = addr, .key = key,
		.count = op == FI_ATOMIC_READ ?
			 sse_ioc_count(resultv, result_count) :
			 sse_ioc_count(iov, count),
	};

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_FETCH, .iov = iov, .count = count,
		.res = resultv, .res_count = result_count, .rma = &rma,
		.rma_count = 1, .dest = dest_addr, .dtype = dtype, .op = op,
		.flags = sse_tx_flags(ep), .context = context,
	});
}

static ssize_t sse_atomic_readwritemsg(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg,
				       struct fi_ioc *resultv,
				       void **result_desc,
				       size_t result_count, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_FETCH, .iov = msg->msg_iov,
		.count = msg->iov_count, .res = resultv,
		.res_count = result_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .dest = msg->addr,
		.dtype = msg->datatype, .op = msg->op, .data = msg->data,
		.flags = flags, .context = msg->context,
	});
}

static ssize_t sse_atomic_compwrite(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc,
				    const void *compare, void *compare_desc,
				    void *result, void *result_desc,
				    fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key, enum fi_datatype dtype,
				    enum fi_op op, void *context)
{
	struct fi_ioc ioc = { .addr = (void *)buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *)compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };
	struct fi_rma_ioc rma = { .addr = addr, .count = count, .key = key };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_COMPARE, .iov = &ioc, .count = 1,
		.cmp = &cmp, .cmp_count = 1, .res = &res, .res_count = 1,
		.rma = &rma, .rma_count = 1, .dest = dest_addr,
		.dtype = dtype, .op = op, .flags = sse_tx_flags(ep),
		.context = context,
	});
}

static ssize_t sse_atomic_compwritev(struct fid_ep *ep,
				     const struct fi_ioc *iov, void **desc,
				     size_t count,
				     const struct fi_ioc *comparev,
				     void **compare_desc,
				     size_t compare_count,
				     struct fi_ioc *resultv,
				     void **result_desc, size_t result_count,
				     fi_addr_t dest_addr, uint64_t addr,
				     uint64_t key, enum fi_datatype dtype,
				     enum fi_op op, void *context)
{
	struct fi_rma_ioc rma = { .addr = addr, .key = key,
				  .count = sse_ioc_count(iov, count) };

	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_COMPARE, .iov = iov, .count = count,
		.cmp = comparev, .cmp_count = compare_count, .res = resultv,
		.res_count = result_count, .rma = &rma, .rma_count = 1,
		.dest = dest_addr, .dtype = dtype, .op = op,
		.flags = sse_tx_flags(ep), .context = context,
	});
}

static ssize_t sse_atomic_compwritemsg(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev,
				       void **compare_desc,
				       size_t compare_count,
				       struct fi_ioc *resultv,
				       void **result_desc,
				       size_t result_count, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return sse_atomic_common(ep, &(struct sse_atomic_call){
		.kind = SSEMU_RMA_COMPARE, .iov = msg->msg_iov,
		.count = msg->iov_count, .cmp = comparev,
		.cmp_count = compare_count, .res = resultv,
		.res_count = result_count, .rma = msg->rma_iov,
		.rma_count = msg->rma_iov_count, .dest = msg->addr,
		.dtype = msg->datatype, .op = msg->op, .data = msg->data,
		.flags = flags, .context = msg->context,
	});
}

struct fi_ops_atomic sse_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = sse_atomic_write,
	.writev = sse_atomic_writev,
	.writemsg = sse_atomic_writemsg,
	.inject = sse_atomic_inject,
	.readwrite = sse_atomic_readwrite,
	.readwritev = sse_atomic_readwritev,
	.readwritemsg = sse_atomic_readwritemsg,
	.compwrite = sse_atomic_compwrite,
	.compwritev = sse_atomic_compwritev,
	.compwritemsg = sse_atomic_compwritemsg,
	.writevalid = sse_atomic_writevalid,
	.readwritevalid = sse_atomic_readwritevalid,
	.compwritevalid = sse_atomic_compwritevalid,
};
