/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_mr.c: memory registration.  Local only for now: the provider copies
 * through the emulator and needs no registration, but applications that
 * register (FI_MR_LOCAL users, fabtests, the future RMA path) get real
 * regions with unique keys, chosen by the provider under FI_MR_PROV_KEY or
 * taken from the request (duplicates fail with -FI_ENOKEY).  Remote access
 * comes with FI_RMA.
 */
#include <stdlib.h>

#include "sse.h"

#define SSE_MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
		       FI_REMOTE_READ | FI_REMOTE_WRITE)

static int sse_mr_close(struct fid *fid)
{
	struct sse_mr *mr = container_of(fid, struct sse_mr, mr_fid.fid);
	struct sse_domain *dom = mr->domain;

	pthread_mutex_lock(&dom->lock);
	sse_dlist_remove(&mr->entry);
	pthread_mutex_unlock(&dom->lock);
	sse_domain_ref(dom, -1);
	free(mr);
	return 0;
}

static int sse_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	/* FI_MR_ENDPOINT is never required; binding is accepted for
	 * applications that always bind. */
	if (!bfid || bfid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	return 0;
}

static int sse_mr_control(struct fid *fid, int command, void *arg)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops sse_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_mr_close,
	.bind = sse_mr_bind,
	.control = sse_mr_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

static bool __sse_mr_key_used(struct sse_domain *dom, uint64_t key)
{
	struct sse_mr *mr;

	sse_dlist_foreach(&dom->mrs, mr, struct sse_mr, entry) {
		if (mr->mr_fid.key == key)
			return true;
	}
	return false;
}

static int sse_mr_reg_iov(struct fid *fid, const struct iovec *iov,
			  size_t count, uint64_t access, uint64_t offset,
			  uint64_t requested_key, uint64_t flags,
			  struct fid_mr **mrp, void *context)
{
	struct sse_domain *dom;
	struct sse_mr *mr;
	size_t i;
	int ret = 0;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !mrp)
		return -FI_EINVAL;
	dom = container_of(fid, struct sse_domain, domain_fid.fid);
	if (count > SSE_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (access & ~SSE_MR_ACCESS)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
	}

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = dom;
	mr->access = access;
	mr->flags = flags;
	mr->offset = offset;
	mr->iov_count = count;
	if (count)
		memcpy(mr->iov, iov, count * sizeof(*iov));

	pthread_mutex_lock(&dom->lock);
	if (dom->mr_mode & FI_MR_PROV_KEY) {
		do {
			mr->mr_fid.key = dom->next_key++;
		} while (__sse_mr_key_used(dom, mr->mr_fid.key));
	} else if (__sse_mr_key_used(dom, requested_key)) {
		ret = -FI_ENOKEY;
	} else {
		mr->mr_fid.key = requested_key;
	}
	if (!ret)
		sse_dlist_insert_tail(&mr->entry, &dom->mrs);
	pthread_mutex_unlock(&dom->lock);
	if (ret) {
		free(mr);
		return ret;
	}

	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = context;
	mr->mr_fid.fid.ops = &sse_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	sse_domain_ref(dom, 1);
	*mrp = &mr->mr_fid;
	return 0;
}

static int sse_mr_reg(struct fid *fid, const void *buf, size_t len,
		      uint64_t access, uint64_t offset, uint64_t requested_key,
		      uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return sse_mr_reg_iov(fid, &iov, 1, access, offset, requested_key,
			      flags, mr, context);
}

static int sse_mr_regv(struct fid *fid, const struct iovec *iov,
		       size_t count, uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags,
		       struct fid_mr **mr, void *context)
{
	return sse_mr_reg_iov(fid, iov, count, access, offset, requested_key,
			      flags, mr, context);
}

static int sse_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			  uint64_t flags, struct fid_mr **mr)
{
	if (!attr)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return sse_mr_reg_iov(fid, attr->mr_iov, attr->iov_count,
			      attr->access, attr->offset, attr->requested_key,
			      flags, mr, attr->context);
}

struct fi_ops_mr sse_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = sse_mr_reg,
	.regv = sse_mr_regv,
	.regattr = sse_mr_regattr,
};
