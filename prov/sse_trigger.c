/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_trigger.c: triggered operations (fi_trigger(3), FI_TRIGGER with
 * FI_TRIGGER_THRESHOLD).  A send, tagged send, RMA or atomic posted with
 * FI_TRIGGER on an endpoint that has the capability is checked at once
 * (argument errors are returned then, as for any call), then waits on
 * its counter, ordered by threshold and, among equal thresholds, by
 * submission.  It runs when the counter's value reaches the threshold:
 * the check runs at the end of every progress pass of the domain (which
 * is where the data path bumps counters), after every send, RMA or
 * atomic call (an inject counts at once), after fi_cntr_add and
 * fi_cntr_set, and at submission, so an operation whose threshold is
 * already met runs at once.  A triggered operation counts against
 * tx_size only once it runs; if the endpoint is full then, it and every
 * later one on its counter wait for the next pass.
 *
 * The operation's context (the application's struct fi_triggered_context)
 * is what its completion reports.  fi_cancel of a waiting operation
 * completes it with FI_ECANCELED; closing its endpoint frees it silently.
 * A waiting operation holds a reference on its counter, so the counter
 * cannot close under it (-FI_EBUSY).
 *
 * The endpoint's lock is the domain lock; every function named __sse_*
 * here expects it held.
 */
#include <stdlib.h>

#include "sse.h"

/* The counter of a triggered context, checked; NULL with a log line. */
static struct sse_cntr *sse_trigger_cntr(struct sse_ep *ep, void *context,
					 uint64_t *threshold)
{
	struct fi_triggered_context *tc = context;
	struct fid_cntr *fc;
	struct sse_cntr *cntr;

	if (!(ep->caps & FI_TRIGGER)) {
		SSE_EP_WARN(ep, "FI_TRIGGER on an endpoint opened without the FI_TRIGGER capability\n");
		return NULL;
	}
	if (!tc) {
		SSE_EP_WARN(ep, "FI_TRIGGER without a struct fi_triggered_context\n");
		return NULL;
	}
	if (tc->event_type != FI_TRIGGER_THRESHOLD) {
		SSE_EP_WARN(ep, "FI_TRIGGER event type %d: only FI_TRIGGER_THRESHOLD is supported\n",
			    (int)tc->event_type);
		return NULL;
	}
	fc = tc->trigger.threshold.cntr;
	if (!fc || fc->fid.fclass != FI_CLASS_CNTR) {
		SSE_EP_WARN(ep, "FI_TRIGGER: the threshold names no counter\n");
		return NULL;
	}
	cntr = container_of(fc, struct sse_cntr, cntr_fid);
	if (cntr->domain != ep->domain) {
		SSE_EP_WARN(ep, "FI_TRIGGER: the counter belongs to another domain\n");
		return NULL;
	}
	*threshold = tc->trigger.threshold.threshold;
	return cntr;
}

static void __sse_trigger_free(struct sse_trig *t)
{
	sse_dlist_remove(&t->entry);
	sse_dlist_remove(&t->ep_entry);
	__atomic_sub_fetch(&t->cntr->ref, 1, __ATOMIC_ACQ_REL);
	if (sse_dlist_empty(&t->cntr->trigs))
		sse_dlist_remove(&t->cntr->trig_entry);
	__sse_rma_op_free(t->op);
	free(t->bounce);
	free(t);
}

/* Queue @t on its counter after every operation of a lower or equal
 * threshold, then run whatever is due. */
static int __sse_trigger_queue(struct sse_ep *ep, struct sse_trig *t)
{
	struct sse_domain *dom = ep->domain;
	struct sse_cntr *cntr = t->cntr;
	struct sse_trig *it;
	struct sse_dlist *pos = &cntr->trigs;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	sse_dlist_foreach(&cntr->trigs, it, struct sse_trig, entry) {
		if (it->threshold > t->threshold) {
			pos = &it->entry;
			break;
		}
	}
	/* before @pos (the list head: at the tail) */
	sse_dlist_insert_tail(&t->entry, pos);
	sse_dlist_insert_tail(&t->ep_entry, &ep->trigs);
	if (sse_dlist_empty(&cntr->trig_entry))
		sse_dlist_insert_tail(&cntr->trig_entry, &dom->trig_cntrs);
	__atomic_add_fetch(&cntr->ref, 1, __ATOMIC_ACQ_REL);
	t->ep = ep;
	__sse_trigger_progress(dom);
	return 0;
}

static struct sse_trig *sse_trig_new(struct sse_cntr *cntr,
				     uint64_t threshold, void *context,
				     uint64_t flags, fi_addr_t dest)
{
	struct sse_trig *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	sse_dlist_init(&t->entry);
	sse_dlist_init(&t->ep_entry);
	t->cntr = cntr;
	t->threshold = threshold;
	t->context = context;
	t->flags = flags & ~FI_TRIGGER;
	t->dest = dest;
	return t;
}

ssize_t sse_trigger_send(struct sse_ep *ep, const struct sse_send_req *req)
{
	struct sse_domain *dom = ep->domain;
	const struct iovec *iov = req->iov;
	size_t count = req->count;
	struct sse_cntr *cntr;
	struct sse_trig *t;
	uint64_t threshold;
	size_t len;
	ssize_t ret;

	cntr = sse_trigger_cntr(ep, req->context, &threshold);
	if (!cntr)
		return -FI_EINVAL;
	t = sse_trig_new(cntr, threshold, req->context, req->flags, req->dest);
	if (!t)
		return -FI_ENOMEM;
	t->kind = req->tagged ? SSE_TRIG_TAGGED : SSE_TRIG_MSG;
	t->send = *req;
	t->send.flags = t->flags;
	t->send.iov = t->iov;
	t->send.count = 0;
	ret = sse_send_check(ep, &(struct sse_send_req){
		.iov = iov, .count = count, .flags = t->flags,
		.tagged = req->tagged,
	});
	if (ret) {
		free(t);
		return ret;
	}
	len = sse_iov_len(iov, count);
	if ((req->flags & FI_INJECT) && len) {
		/* the caller may reuse its buffer at once */
		t->bounce = malloc(len);
		if (!t->bounce) {
			free(t);
			return -FI_ENOMEM;
		}
		sse_copy_from_iov(t->bounce, iov, count, 0, len);
		t->iov[0].iov_base = t->bounce;
		t->iov[0].iov_len = len;
		t->send.count = 1;
	} else if (count) {
		memcpy(t->iov, iov, count * sizeof(*iov));
		t->send.count = count;
	}
	pthread_mutex_lock(&dom->lock);
	ret = __sse_trigger_queue(ep, t);
	pthread_mutex_unlock(&dom->lock);
	if (ret) {
		free(t->bounce);
		free(t);
	}
	return ret;
}

ssize_t sse_trigger_rma(struct sse_ep *ep, const struct sse_rma_req *req)
{
	struct sse_domain *dom = ep->domain;
	struct sse_rma_req r = *req;
	struct sse_cntr *cntr;
	struct sse_trig *t;
	uint64_t threshold;
	ssize_t ret;

	cntr = sse_trigger_cntr(ep, req->context, &threshold);
	if (!cntr)
		return -FI_EINVAL;
	r.flags &= ~FI_TRIGGER;
	t = sse_trig_new(cntr, threshold, req->context, req->flags,
			 req->dest);
	if (!t)
		return -FI_ENOMEM;
	t->kind = SSE_TRIG_RMA;
	pthread_mutex_lock(&dom->lock);
	/* built now: the arguments are checked and FI_INJECT data copied */
	ret = __sse_rma_build(ep, &r, &t->op);
	if (!ret) {
		ret = __sse_trigger_queue(ep, t);
		if (ret)
			__sse_rma_op_free(t->op);
	}
	pthread_mutex_unlock(&dom->lock);
	if (ret)
		free(t);
	return ret;
}

/* The completion flags an operation of @t reports. */
static uint64_t sse_trig_cq_flags(const struct sse_trig *t)
{
	switch (t->kind) {
	case SSE_TRIG_MSG:
		return FI_SEND | FI_MSG;
	case SSE_TRIG_TAGGED:
		return FI_SEND | FI_TAGGED;
	default:
		return t->op->cq_flags;
	}
}

/* Complete @t with error @err (positive FI_E*) without running it. */
static void __sse_trigger_fail(struct sse_trig *t, int err)
{
	struct sse_ep *ep = t->ep;
	uint64_t flags = sse_trig_cq_flags(t);
	struct sse_cntr *cntr;

	if (flags & FI_SEND)
		cntr = ep->send_cntr;
	else
		cntr = (flags & FI_READ) ? ep->read_cntr : ep->write_cntr;
	if (ep->tx_cq && !t->send.no_comp && !(t->op && t->op->no_comp))
		__sse_cq_write_err(ep->tx_cq, &(struct fi_cq_err_entry){
			.op_context = t->context, .flags = flags,
			.tag = t->send.tag, .err = err, .prov_errno = err,
		});
	sse_cntr_inc_err(cntr);
}

/* Run @t.  @return 0 (started, or failed and reported) or -FI_EAGAIN. */
static ssize_t __sse_trigger_run(struct sse_trig *t)
{
	struct sse_ep *ep = t->ep;
	ssize_t ret;

	if (t->kind == SSE_TRIG_RMA) {
		ret = __sse_rma_start(ep, t->op, t->dest);
		if (!ret)
			t->op = NULL;	/* the endpoint's now */
	} else {
		ret = __sse_send(ep, &t->send);
	}
	if (ret == -FI_EAGAIN)
		return ret;
	if (ret) {
		SSE_EP_WARN(ep, "triggered operation (threshold %llu) failed to start: %s\n",
			    (unsigned long long)t->threshold,
			    fi_strerror((int)-ret));
		__sse_trigger_fail(t, (int)-ret);
	}
	return 0;
}

void __sse_trigger_progress(struct sse_domain *dom)
{
	struct sse_cntr *cntr, *ctmp;
	struct sse_trig *t;
	bool ran;

	do {
		ran = false;
		sse_dlist_foreach_safe(&dom->trig_cntrs, cntr, ctmp,
				       struct sse_cntr, trig_entry) {
			uint64_t val = __atomic_load_n(&cntr->val,
						       __ATOMIC_ACQUIRE);

			t = sse_dlist_first(&cntr->trigs, struct sse_trig,
					    entry);
			if (!t || t->threshold > val)
				continue;
			if (__sse_trigger_run(t) == -FI_EAGAIN)
				continue;	/* it and later ones wait */
			__sse_trigger_free(t);
			/* running it may have moved counters: look again */
			ran = true;
			break;
		}
	} while (ran);
}

int __sse_trigger_cancel(struct sse_ep *ep, void *context)
{
	struct sse_trig *t;

	sse_dlist_foreach(&ep->trigs, t, struct sse_trig, ep_entry) {
		if (t->context == context) {
			__sse_trigger_fail(t, FI_ECANCELED);
			__sse_trigger_free(t);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void __sse_trigger_ep_flush(struct sse_ep *ep)
{
	struct sse_trig *t, *tmp;

	sse_dlist_foreach_safe(&ep->trigs, t, tmp, struct sse_trig, ep_entry)
		__sse_trigger_free(t);
}
