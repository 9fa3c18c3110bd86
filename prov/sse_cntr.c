/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_cntr.c: completion counters.  The values are atomics, so the data
 * path bumps them under the domain lock while readers need none; reading
 * drives progress of the endpoints the counter counts for (all of the
 * domain's when it is bound to a memory region: sse_cntr_progress),
 * waiting sleeps in the emulator like fi_cq_sread.
 */
#include <stdlib.h>

#include "sse.h"

#define SSE_CNTR_WAIT_SLICE_MS 50

void sse_cntr_inc(struct sse_cntr *cntr)
{
	if (!cntr)
		return;
	__atomic_add_fetch(&cntr->val, 1, __ATOMIC_RELEASE);
	if (cntr->wait)
		sse_wait_signal(cntr->wait);
}

void sse_cntr_inc_err(struct sse_cntr *cntr)
{
	if (!cntr)
		return;
	__atomic_add_fetch(&cntr->err, 1, __ATOMIC_RELEASE);
	if (cntr->wait)
		sse_wait_signal(cntr->wait);
}

static uint64_t sse_cntr_read(struct fid_cntr *cntr_fid)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	sse_cntr_progress(cntr);
	return __atomic_load_n(&cntr->val, __ATOMIC_ACQUIRE);
}

static uint64_t sse_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	sse_cntr_progress(cntr);
	return __atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE);
}

/* After the application moved the value: run triggered operations due. */
static void sse_cntr_moved(struct sse_cntr *cntr)
{
	struct sse_domain *dom = cntr->domain;

	if (cntr->wait)
		sse_wait_signal(cntr->wait);
	pthread_mutex_lock(&dom->lock);
	if (!sse_dlist_empty(&cntr->trigs))
		__sse_trigger_progress(dom);
	pthread_mutex_unlock(&dom->lock);
}

static int sse_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	__atomic_add_fetch(&cntr->val, value, __ATOMIC_RELEASE);
	sse_cntr_moved(cntr);
	return 0;
}

static int sse_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	__atomic_store_n(&cntr->val, value, __ATOMIC_RELEASE);
	sse_cntr_moved(cntr);
	return 0;
}

static int sse_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	__atomic_add_fetch(&cntr->err, value, __ATOMIC_RELEASE);
	return 0;
}

static int sse_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);

	__atomic_store_n(&cntr->err, value, __ATOMIC_RELEASE);
	return 0;
}

/*
 * Wait until the counter reaches @threshold.  Returns -FI_EAVAIL as soon
 * as the error count changes, -FI_ETIMEDOUT when @timeout ms pass.
 */
static int sse_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			 int timeout)
{
	struct sse_cntr *cntr = container_of(cntr_fid, struct sse_cntr,
					     cntr_fid);
	uint64_t deadline = timeout >= 0 ? sse_now_ms() + timeout : 0;
	uint64_t err0 = __atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE);

	for (;;) {
		int slice = SSE_CNTR_WAIT_SLICE_MS;

		sse_cntr_progress(cntr);
		if (__atomic_load_n(&cntr->val, __ATOMIC_ACQUIRE) >= threshold)
			return 0;
		if (__atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE) != err0)
			return -FI_EAVAIL;
		if (timeout >= 0) {
			uint64_t now = sse_now_ms();

			if (now >= deadline)
				return -FI_ETIMEDOUT;
			slice = (int)SSEMU_MIN((uint64_t)slice, deadline - now);
		}
		sse_domain_wait(cntr->domain, slice);
	}
}

static struct fi_ops_cntr sse_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = sse_cntr_read,
	.readerr = sse_cntr_readerr,
	.add = sse_cntr_add,
	.set = sse_cntr_set,
	.wait = sse_cntr_wait,
	.adderr = sse_cntr_adderr,
	.seterr = sse_cntr_seterr,
};

static int sse_cntr_close(struct fid *fid)
{
	struct sse_cntr *cntr = container_of(fid, struct sse_cntr,
					     cntr_fid.fid);

	if (__atomic_load_n(&cntr->ref, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	if (cntr->wait)
		sse_wait_detach(cntr->wait, &cntr->cntr_fid.fid);
	sse_domain_ref(cntr->domain, -1);
	free(cntr);
	return 0;
}

static int sse_cntr_control(struct fid *fid, int command, void *arg)
{
	struct sse_cntr *cntr = container_of(fid, struct sse_cntr,
					     cntr_fid.fid);

	/* (no file descriptor of its own: FI_GETWAIT is -FI_ENOSYS) */
	if (command == FI_GETWAIT)
		return -FI_ENOSYS;
	return sse_wait_control(command, arg, cntr->wait_obj, -1);
}

static struct fi_ops sse_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_cntr_close,
	.bind = sse_no_bind,
	.control = sse_cntr_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

int sse_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntrp, void *context)
{
	struct sse_domain *dom = sse_dom(domain);
	struct sse_cntr *cntr;
	enum fi_wait_obj wait_obj = FI_WAIT_UNSPEC;

	if (!cntrp)
		return -FI_EINVAL;
	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP)
			return -FI_ENOSYS;
		if (attr->flags)
			return -FI_EBADFLAGS;
		switch (attr->wait_obj) {
		case FI_WAIT_NONE:
		case FI_WAIT_UNSPEC:
		case FI_WAIT_YIELD:
		case FI_WAIT_SET:
			wait_obj = attr->wait_obj;
			break;
		default:
			return -FI_ENOSYS;
		}
	}

	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->domain = dom;
	sse_dlist_init(&cntr->trigs);
	sse_dlist_init(&cntr->trig_entry);
	if (wait_obj == FI_WAIT_SET) {
		int ret = sse_wait_attach(attr->wait_set, &cntr->cntr_fid.fid,
					  dom, &cntr->wait);

		if (ret) {
			free(cntr);
			return ret;
		}
	}
	cntr->domain = dom;
	cntr->wait_obj = wait_obj;
	sse_dlist_init(&cntr->trigs);
	sse_dlist_init(&cntr->trig_entry);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &sse_cntr_fi_ops;
	cntr->cntr_fid.ops = &sse_cntr_ops;
	sse_domain_ref(dom, 1);
	*cntrp = &cntr->cntr_fid;
	return 0;
}
