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

int sse_no_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			enum fi_op op, struct fi_atomic_attr *attr,
			uint64_t flags)
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
int sse_no_av_insertsvc(struct fid_av *av, const char *node,
			const char *service, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

int sse_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

/* RMA: not implemented yet; FI_RMA is not advertised. */
static ssize_t sse_no_rma_read(struct fid_ep *ep, void *buf, size_t len,
			       void *desc, fi_addr_t src_addr, uint64_t addr,
			       uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_readv(struct fid_ep *ep, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src_addr,
				uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_msg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_write(struct fid_ep *ep, const void *buf,
				size_t len, void *desc, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_writev(struct fid_ep *ep, const struct iovec *iov,
				 void **desc, size_t count,
				 fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_inject(struct fid_ep *ep, const void *buf,
				 size_t len, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_writedata(struct fid_ep *ep, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest_addr, uint64_t addr,
				    uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_rma_injectdata(struct fid_ep *ep, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest_addr, uint64_t addr,
				     uint64_t key)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma sse_no_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = sse_no_rma_read,
	.readv = sse_no_rma_readv,
	.readmsg = sse_no_rma_msg,
	.write = sse_no_rma_write,
	.writev = sse_no_rma_writev,
	.writemsg = sse_no_rma_msg,
	.inject = sse_no_rma_inject,
	.writedata = sse_no_rma_writedata,
	.injectdata = sse_no_rma_injectdata,
};

/* Atomics: not implemented yet; FI_ATOMIC is not advertised. */
static ssize_t sse_no_atomic_write(struct fid_ep *ep, const void *buf,
				   size_t count, void *desc,
				   fi_addr_t dest_addr, uint64_t addr,
				   uint64_t key, enum fi_datatype datatype,
				   enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_writev(struct fid_ep *ep,
				    const struct fi_ioc *iov, void **desc,
				    size_t count, fi_addr_t dest_addr,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op,
				    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_writemsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_inject(struct fid_ep *ep, const void *buf,
				    size_t count, fi_addr_t dest_addr,
				    uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_readwrite(struct fid_ep *ep, const void *buf,
				       size_t count, void *desc, void *result,
				       void *result_desc, fi_addr_t dest_addr,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype datatype,
				       enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_readwritev(struct fid_ep *ep,
					const struct fi_ioc *iov, void **desc,
					size_t count, struct fi_ioc *resultv,
					void **result_desc,
					size_t result_count,
					fi_addr_t dest_addr, uint64_t addr,
					uint64_t key,
					enum fi_datatype datatype,
					enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_readwritemsg(struct fid_ep *ep,
					  const struct fi_msg_atomic *msg,
					  struct fi_ioc *resultv,
					  void **result_desc,
					  size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_compwrite(struct fid_ep *ep, const void *buf,
				       size_t count, void *desc,
				       const void *compare,
				       void *compare_desc, void *result,
				       void *result_desc,
				       fi_addr_t dest_addr, uint64_t addr,
				       uint64_t key,
				       enum fi_datatype datatype,
				       enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_compwritev(struct fid_ep *ep,
					const struct fi_ioc *iov, void **desc,
					size_t count,
					const struct fi_ioc *comparev,
					void **compare_desc,
					size_t compare_count,
					struct fi_ioc *resultv,
					void **result_desc,
					size_t result_count,
					fi_addr_t dest_addr, uint64_t addr,
					uint64_t key,
					enum fi_datatype datatype,
					enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t sse_no_atomic_compwritemsg(struct fid_ep *ep,
					  const struct fi_msg_atomic *msg,
					  const struct fi_ioc *comparev,
					  void **compare_desc,
					  size_t compare_count,
					  struct fi_ioc *resultv,
					  void **result_desc,
					  size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int sse_no_atomic_valid(struct fid_ep *ep, enum fi_datatype datatype,
			       enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic sse_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = sse_no_atomic_write,
	.writev = sse_no_atomic_writev,
	.writemsg = sse_no_atomic_writemsg,
	.inject = sse_no_atomic_inject,
	.readwrite = sse_no_atomic_readwrite,
	.readwritev = sse_no_atomic_readwritev,
	.readwritemsg = sse_no_atomic_readwritemsg,
	.compwrite = sse_no_atomic_compwrite,
	.compwritev = sse_no_atomic_compwritev,
	.compwritemsg = sse_no_atomic_compwritemsg,
	.writevalid = sse_no_atomic_valid,
	.readwritevalid = sse_no_atomic_valid,
	.compwritevalid = sse_no_atomic_valid,
};

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
