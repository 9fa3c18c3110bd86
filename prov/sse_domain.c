/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_domain.c: fi_domain.  A domain is this process's NIC on the fabric.
 * The NIC is attached once per process and fabric and shared, refcounted,
 * by every domain; each endpoint then opens its own pid on it.
 */
#include <stdlib.h>

#include "sse.h"

void sse_domain_ref(struct sse_domain *dom, int delta)
{
	__atomic_add_fetch(&dom->ref, delta, __ATOMIC_ACQ_REL);
}

static int sse_domain_close(struct fid *fid)
{
	struct sse_domain *dom = container_of(fid, struct sse_domain,
					      domain_fid.fid);

	if (__atomic_load_n(&dom->ref, __ATOMIC_ACQUIRE)) {
		SSE_DOM_WARN(dom, "fi_close(domain): %d objects still open\n",
			     dom->ref);
		return -FI_EBUSY;
	}
	sse_progress_thread_stop(dom);
	sse_model_report(dom);
	sse_emu_nic_put(dom->emu);
	__atomic_sub_fetch(&dom->fabric->ref, 1, __ATOMIC_ACQ_REL);
	pthread_cond_destroy(&dom->cond);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static struct fi_ops sse_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_domain_close,
	.bind = sse_no_bind,
	.control = sse_no_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

static int sse_endpoint2(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return sse_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain sse_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = sse_av_open,
	.cq_open = sse_cq_open,
	.endpoint = sse_ep_open,
	.scalable_ep = sse_no_scalable_ep,
	.cntr_open = sse_cntr_open,
	.poll_open = sse_poll_open,
	.stx_ctx = sse_no_stx_ctx,
	.srx_ctx = sse_no_srx_ctx,
	.query_atomic = sse_query_atomic,
	.query_collective = sse_no_query_collective,
	.endpoint2 = sse_endpoint2,
};

static int sse_domain_check(struct sse_fabric *fab, const struct fi_info *info,
			    uint32_t *port)
{
	const struct fi_domain_attr *da = info->domain_attr;

	*port = SSEMU_PORT_ANY;
	if (da->name && strcmp(da->name, SSE_DOMAIN_NAME)) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_domain: unknown domain %s\n",
			 da->name);
		return -FI_EINVAL;
	}
	if (info->fabric_attr && info->fabric_attr->name &&
	    strcmp(info->fabric_attr->name, fab->name)) {
		SSE_WARN(FI_LOG_DOMAIN,
			 "fi_domain: info is for fabric %s, not %s\n",
			 info->fabric_attr->name, fab->name);
		return -FI_EINVAL;
	}
	if (info->ep_attr && info->ep_attr->type != FI_EP_UNSPEC &&
	    info->ep_attr->type != FI_EP_RDM &&
	    info->ep_attr->type != FI_EP_DGRAM)
		return -FI_EINVAL;
	if (info->src_addr) {
		struct fi_sse_addr a;

		if (info->src_addrlen != sizeof(a))
			return -FI_EINVAL;
		memcpy(&a, info->src_addr, sizeof(a));
		if (sse_addr_check(&a, fab->emu->fabric_id,
				   ssemu_config_nports(fab->emu->cfg)))
			return -FI_EADDRNOTAVAIL;
		/* a service's address leaves the port to placement */
		if (a.addr != FI_SSE_ADDR_ANY && !FI_SSE_ADDR_IS_SVC(&a))
			*port = FI_SSE_ADDR_PORT(&a);
	}
	return 0;
}

int sse_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	struct sse_fabric *fab = container_of(fabric, struct sse_fabric,
					      fabric_fid);
	const struct fi_domain_attr *da;
	struct sse_domain *dom;
	pthread_condattr_t cattr;
	uint32_t port;
	int ret;

	if (!info || !info->domain_attr || !domain)
		return -FI_EINVAL;
	da = info->domain_attr;
	ret = sse_domain_check(fab, info, &port);
	if (ret)
		return ret;

	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	dom->fabric = fab;
	dom->emu = fab->emu;
	dom->threading = da->threading ? da->threading : FI_THREAD_SAFE;
	dom->data_progress = da->data_progress == FI_PROGRESS_AUTO ?
			     FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
	dom->av_type = da->av_type;
	dom->mr_mode = da->mr_mode;
	dom->tclass = da->tclass;
	dom->next_key = 1;
	ret = sse_auth_domain_init(dom, info);
	if (ret)
		goto err_free;
	sse_dlist_init(&dom->eps);
	sse_dlist_init(&dom->mrs);
	sse_dlist_init(&dom->trig_cntrs);

	ret = sse_tclass_resolve(dom->emu->cfg, dom->tclass, &dom->emu_tclass);
	if (ret) {
		SSE_WARN(FI_LOG_DOMAIN,
			 "fi_domain: traffic class 0x%x is not in the fabric's class table\n",
			 dom->tclass);
		goto err_free;
	}

	ret = pthread_mutex_init(&dom->lock, NULL);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_free;
	}
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&dom->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_destroy_lock;
	}

	ret = sse_emu_nic_get(dom->emu, port);
	if (ret)
		goto err_destroy_cond;
	dom->nic_port = ssemu_nic_port(dom->emu->nic);

	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &sse_domain_fi_ops;
	dom->domain_fid.ops = &sse_domain_ops;
	dom->domain_fid.mr = &sse_mr_ops;

	if (dom->data_progress == FI_PROGRESS_AUTO) {
		ret = sse_progress_thread_start(dom);
		if (ret)
			goto err_nic_put;
	}

	__atomic_add_fetch(&fab->ref, 1, __ATOMIC_ACQ_REL);
	*domain = &dom->domain_fid;
	SSE_DOM_INFO(dom, "domain open: %s progress, threading %d\n",
		     dom->data_progress == FI_PROGRESS_AUTO ? "auto" : "manual",
		     dom->threading);
	return 0;

err_nic_put:
	sse_emu_nic_put(dom->emu);
err_destroy_cond:
	pthread_cond_destroy(&dom->cond);
err_destroy_lock:
	pthread_mutex_destroy(&dom->lock);
err_free:
	free(dom);
	return ret;
}
