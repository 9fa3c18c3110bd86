/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_enosys.c: -FI_ENOSYS stubs for every ops slot the provider does not
 * implement.  libfabric keeps its fi_no_* helpers private, so an
 * out-of-tree provider needs its own; no ops table may hold a NULL.
 */
#include "sse.h"

int sse_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int sse_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int sse_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int sse_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context)
{
	return -FI_ENOSYS;
}

/* fabric */
int sse_no_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_pep **pep, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		     struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

/* domain */
int sse_no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
		       struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		     struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

int sse_no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_query_collective(struct fid_domain *domain,
			    enum fi_collective_op coll,
			    struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

/* endpoint */
int sse_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

/* av */
int sse_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

/* Collectives: not offered. */
static ssize_t sse_no_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
			      void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_broadcast(struct fid_ep *ep, void *buf, size_t count,
				void *desc, fi_addr_t coll_addr,
				fi_addr_t root_addr,
				enum fi_datatype datatype, uint64_t flags,
				void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_alltoall(struct fid_ep *ep, const void *buf,
			       size_t count, void *desc, void *result,
			       void *result_desc, fi_addr_t coll_addr,
			       enum fi_datatype datatype, uint64_t flags,
			       void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_allreduce(struct fid_ep *ep, const void *buf,
				size_t count, void *desc, void *result,
				void *result_desc, fi_addr_t coll_addr,
				enum fi_datatype datatype, enum fi_op op,
				uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_reduce(struct fid_ep *ep, const void *buf,
			     size_t count, void *desc, void *result,
			     void *result_desc, fi_addr_t coll_addr,
			     fi_addr_t root_addr, enum fi_datatype datatype,
			     enum fi_op op, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_scatter(struct fid_ep *ep, const void *buf,
			      size_t count, void *desc, void *result,
			      void *result_desc, fi_addr_t coll_addr,
			      fi_addr_t root_addr, enum fi_datatype datatype,
			      uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_coll_msg(struct fid_ep *ep,
			       const struct fi_msg_collective *msg,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			       uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective sse_no_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = sse_no_barrier,
	.broadcast = sse_no_broadcast,
	.alltoall = sse_no_alltoall,
	.allreduce = sse_no_allreduce,
	.allgather = sse_no_alltoall,
	.reduce_scatter = sse_no_allreduce,
	.reduce = sse_no_reduce,
	.scatter = sse_no_scatter,
	.gather = sse_no_scatter,
	.msg = sse_no_coll_msg,
	.barrier2 = sse_no_barrier2,
};
