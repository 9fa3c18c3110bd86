/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_mr.c: memory registration.  Local access needs none (the provider
 * copies through the emulator), but applications that register get real
 * regions with unique keys, chosen by the provider under FI_MR_PROV_KEY (or
 * FI_MR_BASIC) or taken from the request (duplicates fail with
 * -FI_ENOKEY).  A region with FI_REMOTE_READ or FI_REMOTE_WRITE goes into
 * the NIC's region table (ssemu_mr_reg), where the target NIC checks key,
 * range and access of every remote operation; peers name it by virtual
 * address under FI_MR_VIRT_ADDR (or FI_MR_BASIC), else by offset.  The
 * table belongs to the NIC, which every domain of the process shares, so
 * provider keys skip keys another domain registered there.
 *
 * A region of several iovs is one address space, the segments one after
 * the other: peers name byte n of it by base + n (base: the address of
 * its first byte under FI_MR_VIRT_ADDR, else 0).  The NIC's table holds
 * one contiguous range per key, so a remotely accessible region's
 * segments must follow each other in memory (as fi_mr_regv callers that
 * split one buffer have it); then the range is their union and every RMA
 * and atomic may cross from one segment into the next.  Segments with
 * gaps between them are refused with -FI_EINVAL for remote access (local
 * access takes any).
 *
 * fi_mr_regattr's auth key (struct fi_sse_auth_key, a service and VNI
 * this user is entitled to) restricts remote access to operations on that
 * VNI: the target NIC refuses the others (the initiator's FI_EACCES) and
 * counts them among its VNI drops.
 *
 * Counters bound with fi_mr_bind count remote accesses to the region.
 * fi_mr(3) asks for FI_RMA_EVENT at registration only when the domain's
 * mr_mode has FI_MR_RMA_EVENT; such regions become accessible only at
 * fi_mr_enable, after the counters are bound, and take no bindings
 * after it.  Without FI_MR_RMA_EVENT any region takes counters, at any
 * time.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

#define SSE_MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
		       FI_REMOTE_READ | FI_REMOTE_WRITE)
#define SSE_MR_REMOTE (FI_REMOTE_READ | FI_REMOTE_WRITE)

static bool sse_mr_prov_key(const struct sse_domain *dom)
{
	return dom->mr_mode & (FI_MR_PROV_KEY | FI_MR_BASIC);
}

static bool sse_mr_virt_addr(const struct sse_domain *dom)
{
	return dom->mr_mode & (FI_MR_VIRT_ADDR | FI_MR_BASIC);
}

/* Does each (non-empty) segment start where the one before it ends? */
static bool sse_mr_iov_contiguous(const struct iovec *iov, size_t count)
{
	uintptr_t end = 0;
	bool first = true;
	size_t i;

	for (i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		if (!first && (uintptr_t)iov[i].iov_base != end)
			return false;
		first = false;
		end = (uintptr_t)iov[i].iov_base + iov[i].iov_len;
	}
	return true;
}

/* Where the region's bytes start: its first non-empty segment. */
static void *sse_mr_start(const struct iovec *iov, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (iov[i].iov_len)
			return iov[i].iov_base;
	}
	return count ? iov[0].iov_base : NULL;
}

/* The region behind @key, if this domain registered it (lock held). */
struct sse_mr *__sse_mr_find(struct sse_domain *dom, uint64_t key)
{
	struct sse_mr *mr;

	sse_dlist_foreach(&dom->mrs, mr, struct sse_mr, entry) {
		if (mr->mr_fid.key == key)
			return mr;
	}
	return NULL;
}

static void sse_mr_unref_cntr(struct sse_cntr *cntr)
{
	if (!cntr)
		return;
	__atomic_sub_fetch(&cntr->mr_ref, 1, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&cntr->ref, 1, __ATOMIC_ACQ_REL);
}

static int sse_mr_close(struct fid *fid)
{
	struct sse_mr *mr = container_of(fid, struct sse_mr, mr_fid.fid);
	struct sse_domain *dom = mr->domain;
	int ret;

	pthread_mutex_lock(&dom->lock);
	if (mr->nic_reg) {
		/* After this no operation touches the memory any more. */
		ret = ssemu_mr_dereg(dom->emu->nic, mr->mr_fid.key);
		if (ret)
			SSE_DOM_WARN(dom, "fi_close(mr): key 0x%llx was not in the NIC's table: %s\n",
				     (unsigned long long)mr->mr_fid.key,
				     strerror(-ret));
		mr->nic_reg = false;
	}
	sse_dlist_remove(&mr->entry);
	pthread_mutex_unlock(&dom->lock);
	sse_mr_unref_cntr(mr->rread_cntr);
	sse_mr_unref_cntr(mr->rwrite_cntr);
	sse_domain_ref(dom, -1);
	free(mr);
	return 0;
}

static int sse_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct sse_mr *mr = container_of(fid, struct sse_mr, mr_fid.fid);
	struct sse_domain *dom = mr->domain;
	struct sse_cntr *cntr;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	/* FI_MR_ENDPOINT is never required; binding is accepted for
	 * applications that always bind. */
	if (bfid->fclass == FI_CLASS_EP)
		return 0;
	if (bfid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;

	/* A counter of remote accesses to this region. */
	cntr = container_of(bfid, struct sse_cntr, cntr_fid.fid);
	if (cntr->domain != dom) {
		SSE_DOM_WARN(dom, "fi_mr_bind: counter of another domain\n");
		return -FI_EINVAL;
	}
	if (!flags || (flags & ~SSE_MR_REMOTE))
		return -FI_EBADFLAGS;
	if ((dom->mr_mode & FI_MR_RMA_EVENT) && !(mr->flags & FI_RMA_EVENT)) {
		SSE_DOM_WARN(dom, "fi_mr_bind: under FI_MR_RMA_EVENT a region takes counters only if registered with FI_RMA_EVENT\n");
		return -FI_EINVAL;
	}
	pthread_mutex_lock(&dom->lock);
	if ((dom->mr_mode & FI_MR_RMA_EVENT) && mr->nic_reg) {
		SSE_DOM_WARN(dom, "fi_mr_bind: region 0x%llx is enabled: bind counters before fi_mr_enable\n",
			     (unsigned long long)mr->mr_fid.key);
		ret = -FI_EINVAL;
	} else if (((flags & FI_REMOTE_READ) && mr->rread_cntr) ||
	    ((flags & FI_REMOTE_WRITE) && mr->rwrite_cntr)) {
		ret = -FI_EINVAL;
	} else {
		if (flags & FI_REMOTE_READ) {
			mr->rread_cntr = cntr;
			__atomic_add_fetch(&cntr->mr_ref, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&cntr->ref, 1, __ATOMIC_ACQ_REL);
		}
		if (flags & FI_REMOTE_WRITE) {
			mr->rwrite_cntr = cntr;
			__atomic_add_fetch(&cntr->mr_ref, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&cntr->ref, 1, __ATOMIC_ACQ_REL);
		}
	}
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

/*
 * Enter a remotely accessible region in the NIC's table.  Provider keys
 * that another domain of the process took there are skipped.
 */
static int __sse_mr_nic_reg(struct sse_domain *dom, struct sse_mr *mr)
{
	struct ssemu_mr_desc d = {
		.addr = sse_mr_start(mr->iov, mr->iov_count),
		.len = sse_iov_len(mr->iov, mr->iov_count),
		.base = mr->base,
		.access = ((mr->access & FI_REMOTE_READ) ? SSEMU_MR_READ : 0) |
			  ((mr->access & FI_REMOTE_WRITE) ?
			   SSEMU_MR_WRITE : 0),
		.vni = mr->vni,
	};
	int ret, tries = 0;

	for (;;) {
		d.key = mr->mr_fid.key;
		ret = ssemu_mr_reg(dom->emu->nic, &d);
		if (ret != -EEXIST || !sse_mr_prov_key(dom) ||
		    ++tries > SSEMU_MRS_PER_NIC)
			break;
		do {
			mr->mr_fid.key = dom->next_key++;
		} while (__sse_mr_find(dom, mr->mr_fid.key));
	}
	switch (ret) {
	case 0:
		mr->nic_reg = true;
		return 0;
	case -EEXIST:
		return -FI_ENOKEY;
	case -ENOSPC:
		SSE_DOM_WARN(dom, "fi_mr_reg: the NIC's table of %d remotely accessible regions is full\n",
			     SSEMU_MRS_PER_NIC);
		return -FI_ENOSPC;
	default:
		return -FI_EINVAL;
	}
}

static int sse_mr_control(struct fid *fid, int command, void *arg)
{
	struct sse_mr *mr = container_of(fid, struct sse_mr, mr_fid.fid);
	struct sse_domain *dom = mr->domain;
	int ret = 0;

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&dom->lock);
	if (mr->remote && !mr->nic_reg)
		ret = __sse_mr_nic_reg(dom, mr);
	pthread_mutex_unlock(&dom->lock);
	return ret;
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

static int sse_mr_reg_iov(struct fid *fid, const struct iovec *iov,
			  size_t count, uint64_t access, uint64_t offset,
			  uint64_t requested_key, uint64_t flags,
			  struct fid_mr **mrp, void *context, uint32_t vni)
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
	if (flags & ~FI_RMA_EVENT)
		return -FI_EBADFLAGS;
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
	}
	/* The NIC's table holds one contiguous range per key. */
	if ((access & SSE_MR_REMOTE) && !sse_mr_iov_contiguous(iov, count)) {
		SSE_DOM_WARN(dom, "fi_mr_regv: remote access to %zu segments with gaps between them: the NIC's table takes one contiguous range per key\n",
			     count);
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
	mr->remote = access & SSE_MR_REMOTE;
	mr->vni = vni;
	/* fi_mr_reg's offset is reserved (0); offset addressing starts at
	 * it all the same, as other providers do. */
	mr->base = sse_mr_virt_addr(dom) ?
		   (uint64_t)(uintptr_t)sse_mr_start(iov, count) : offset;

	pthread_mutex_lock(&dom->lock);
	if (sse_mr_prov_key(dom)) {
		do {
			mr->mr_fid.key = dom->next_key++;
		} while (__sse_mr_find(dom, mr->mr_fid.key));
	} else if (__sse_mr_find(dom, requested_key)) {
		ret = -FI_ENOKEY;
	} else {
		mr->mr_fid.key = requested_key;
	}
	/* Under FI_MR_RMA_EVENT, counters are bound before fi_mr_enable. */
	if (!ret && mr->remote &&
	    !((dom->mr_mode & FI_MR_RMA_EVENT) && (flags & FI_RMA_EVENT)))
		ret = __sse_mr_nic_reg(dom, mr);
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
			      flags, mr, context, 0);
}

static int sse_mr_regv(struct fid *fid, const struct iovec *iov,
		       size_t count, uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags,
		       struct fid_mr **mr, void *context)
{
	return sse_mr_reg_iov(fid, iov, count, access, offset, requested_key,
			      flags, mr, context, 0);
}

static int sse_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			  uint64_t flags, struct fid_mr **mr)
{
	struct sse_domain *dom;
	uint32_t vni = 0;
	int ret;

	if (!attr || !fid || fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	dom = container_of(fid, struct sse_domain, domain_fid.fid);
	ret = sse_auth_mr_vni(dom, attr->auth_key, attr->auth_key_size, &vni);
	if (ret)
		return ret;
	return sse_mr_reg_iov(fid, attr->mr_iov, attr->iov_count,
			      attr->access, attr->offset, attr->requested_key,
			      flags, mr, attr->context, vni);
}

struct fi_ops_mr sse_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = sse_mr_reg,
	.regv = sse_mr_regv,
	.regattr = sse_mr_regattr,
};
