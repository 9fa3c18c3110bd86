/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_progress.c: endpoint and domain progress (polling the emulator and
 * dispatching its events to sse_tx.c, sse_rx.c, sse_rndv.c and sse_rma.c),
 * waiting, the FI_PROGRESS_AUTO thread, the iov helpers of the data path,
 * and what an endpoint's close frees.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "sse.h"

uint64_t sse_now_ms(void)
{
	return sse_now_ns() / 1000000;
}

uint64_t sse_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* iov helpers                                                          */
/* ------------------------------------------------------------------ */

SSEMU_HOT
size_t sse_iov_len(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/* The bytes [off, off + len) of @iov as at most @max_out segments. */
SSEMU_HOT
size_t sse_iov_slice(const struct iovec *iov, size_t count, size_t off,
		     size_t len, struct iovec *out, size_t max_out)
{
	size_t i, n = 0;

	for (i = 0; i < count && len && n < max_out; i++) {
		size_t seg = iov[i].iov_len;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		out[n].iov_base = (char *)iov[i].iov_base + off;
		out[n].iov_len = SSEMU_MIN(seg - off, len);
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

int sse_copy_to_iov(const struct iovec *iov, size_t count, size_t off,
		    const void *src, size_t len)
{
	const char *s = src;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t seg = iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = SSEMU_MIN(seg - off, len - done);
		if (ssemu_copy_user((char *)iov[i].iov_base + off, s + done,
				    n))
			return -FI_EFAULT;
		done += n;
		off = 0;
	}
	return 0;
}

SSEMU_HOT
int sse_copy_from_iov(void *dst, const struct iovec *iov, size_t count,
		      size_t off, size_t len)
{
	char *d = dst;
	size_t i, done = 0;

	for (i = 0; i < count && done < len; i++) {
		size_t seg = iov[i].iov_len, n;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		n = SSEMU_MIN(seg - off, len - done);
		if (ssemu_copy_user(d + done,
				    (const char *)iov[i].iov_base + off, n))
			return -FI_EFAULT;
		done += n;
		off = 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Progress                                                             */
/* ------------------------------------------------------------------ */

SSEMU_HOT
void __sse_ep_progress(struct sse_ep *ep)
{
	struct ssemu_event ev[SSE_POLL_BATCH];
	int i, n, rounds = 0;

	__sse_ep_tx_progress(ep);
	__sse_rma_progress(ep);
	__sse_rndv_read_progress(ep);
	do {
		n = ssemu_ep_poll(ep->emu, ev, SSE_POLL_BATCH);
		for (i = 0; i < n; i++) {
			switch (ev[i].type) {
			case SSEMU_EV_RECV:
				__sse_handle_recv(ep, &ev[i]);
				break;
			case SSEMU_EV_SEND_DONE:
				__sse_handle_send_done(ep, &ev[i]);
				break;
			case SSEMU_EV_RMA_DONE:
				__sse_rma_handle_done(ep, &ev[i]);
				break;
			case SSEMU_EV_RMA_REMOTE:
				__sse_rma_handle_remote(ep, &ev[i]);
				break;
			}
		}
		if (n > 0) {
			__sse_ep_tx_progress(ep);
			__sse_rma_progress(ep);
			__sse_rndv_read_progress(ep);
		}
	} while (n == SSE_POLL_BATCH && ++rounds < 8);
}

/*
 * Does a read of @cq or @cntr complete something of @ep's?  (Both NULL:
 * the whole domain.)  FI_PROGRESS_MANUAL: an endpoint progresses when the
 * application reads a CQ or counter it is bound to, so a CQ read touches
 * only those.  A counter bound to a memory region counts accesses that
 * any endpoint of the domain may receive: its reads progress them all.
 */
static bool sse_ep_reports_to(const struct sse_ep *ep, const struct sse_cq *cq,
			      const struct sse_cntr *cntr)
{
	if (cq)
		return ep->tx_cq == cq || ep->rx_cq == cq;
	if (!cntr || __atomic_load_n(&cntr->mr_ref, __ATOMIC_RELAXED))
		return true;
	return ep->send_cntr == cntr || ep->recv_cntr == cntr ||
	       ep->read_cntr == cntr || ep->write_cntr == cntr ||
	       ep->rread_cntr == cntr || ep->rwrite_cntr == cntr;
}

SSEMU_HOT
static void __sse_progress_bound(struct sse_domain *dom,
				 const struct sse_cq *cq,
				 const struct sse_cntr *cntr)
{
	bool check = ++dom->progress_calls % SSE_PEER_CHECK_PERIOD == 0;
	struct sse_ep *ep;

	sse_dlist_foreach(&dom->eps, ep, struct sse_ep, entry) {
		if (!sse_ep_reports_to(ep, cq, cntr))
			continue;
		__sse_ep_progress(ep);
		if (check && !sse_dlist_empty(&ep->tx_rndv))
			__sse_rndv_check_peers(ep);
	}
	/* counters may have moved: triggered operations that are due */
	if (!sse_dlist_empty(&dom->trig_cntrs))
		__sse_trigger_progress(dom);
}

void __sse_domain_progress(struct sse_domain *dom)
{
	__sse_progress_bound(dom, NULL, NULL);
}

/* Progress the endpoints bound to @cq. */
SSEMU_HOT
void __sse_cq_progress(struct sse_cq *cq)
{
	__sse_progress_bound(cq->domain, cq, NULL);
}

/* Run the engine, then progress the endpoints bound to @cq. */
void sse_cq_progress(struct sse_cq *cq)
{
	sse_engine_progress(cq->domain);
	pthread_mutex_lock(&cq->domain->lock);
	__sse_cq_progress(cq);
	pthread_mutex_unlock(&cq->domain->lock);
}

/* Run the engine, then progress the endpoints @cntr counts for. */
void sse_cntr_progress(struct sse_cntr *cntr)
{
	sse_engine_progress(cntr->domain);
	pthread_mutex_lock(&cntr->domain->lock);
	__sse_progress_bound(cntr->domain, NULL, cntr);
	pthread_mutex_unlock(&cntr->domain->lock);
}

/* Run the fabric's engine (a no-op when another process runs it).
 * @return 0, or -FI_EIO: the fabric is broken (its segment was found
 * corrupt or cut short), no completion will ever come. */
SSEMU_HOT
int sse_engine_progress(struct sse_domain *dom)
{
	uint64_t t0 = 0;
	int ret;

	if (unlikely(sse_env.model_stats))
		t0 = sse_now_ns();
	ret = ssemu_fabric_progress(dom->emu->fabric,
				    (unsigned)sse_env.progress_budget);
	if (unlikely(sse_env.model_stats) && ret > 0)
		sse_model_account(dom, sse_now_ns() - t0, (unsigned)ret);
	return ret == -EIO ? -FI_EIO : 0;
}

/* FI_SLINGSHOT_EMU_MODEL_STATS: a run of @events engine events took @ns. */
void sse_model_account(struct sse_domain *dom, uint64_t ns, unsigned events)
{
	__atomic_add_fetch(&dom->model_ns, ns, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dom->model_events, events, __ATOMIC_RELAXED);
	__atomic_add_fetch(&dom->model_runs, 1, __ATOMIC_RELAXED);
}

/*
 * FI_SLINGSHOT_EMU_MODEL_STATS, at domain close: the engine runs this
 * domain made (events, wall ns), its NIC's messages and the fabric's
 * events so far, as one line for scripts (benchmarks/bench_provider.sh).
 */
void sse_model_report(struct sse_domain *dom)
{
	struct ssemu_fabric_stats fs = { 0 };
	struct ssemu_nic_stats ns = { 0 };

	if (!sse_env.model_stats)
		return;
	(void)ssemu_nic_stats(dom->emu->nic, &ns);
	(void)ssemu_fabric_stats(dom->emu->fabric, &fs);
	fprintf(stderr, "slingshot_emu model_stats: pid=%d port=%u "
		"runs=%llu events=%llu model_ns=%llu tx_msgs=%llu "
		"rx_msgs=%llu fabric_events=%llu\n", (int)getpid(),
		dom->nic_port,
		(unsigned long long)dom->model_runs,
		(unsigned long long)dom->model_events,
		(unsigned long long)dom->model_ns,
		(unsigned long long)ns.tx_msgs,
		(unsigned long long)ns.rx_msgs,
		(unsigned long long)fs.events);
}

void sse_domain_progress(struct sse_domain *dom)
{
	sse_engine_progress(dom);
	pthread_mutex_lock(&dom->lock);
	__sse_domain_progress(dom);
	pthread_mutex_unlock(&dom->lock);
}

/*
 * Sleep until the domain may have something new, at most @timeout_ms.
 * With endpoints, sleep in the emulator on the NIC they share (any event
 * for any of them wakes us); with none, on the domain's condition variable.
 */
int sse_domain_wait(struct sse_domain *dom, int timeout_ms)
{
	struct sse_ep *ep, *it;
	struct timespec ts;
	int neps = 0, ret;

	pthread_mutex_lock(&dom->lock);
	ep = sse_dlist_first(&dom->eps, struct sse_ep, entry);
	if (!ep) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&dom->cond, &dom->lock, &ts);
		pthread_mutex_unlock(&dom->lock);
		return 0;
	}
	sse_dlist_foreach(&dom->eps, it, struct sse_ep, entry)
		neps++;
	ep->waiters++;
	pthread_mutex_unlock(&dom->lock);

	/* one sleep for all the domain's endpoints: they share the NIC */
	ret = ssemu_nic_wait(dom->emu->nic, timeout_ms);

	pthread_mutex_lock(&dom->lock);
	if (--ep->waiters == 0)
		pthread_cond_broadcast(&dom->cond);
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static void *sse_progress_thread(void *arg)
{
	struct sse_domain *dom = arg;

	for (;;) {
		sse_engine_progress(dom);
		pthread_mutex_lock(&dom->lock);
		if (dom->thread_stop) {
			pthread_mutex_unlock(&dom->lock);
			break;
		}
		__sse_domain_progress(dom);
		pthread_mutex_unlock(&dom->lock);
		sse_domain_wait(dom, 10);
	}
	return NULL;
}

int sse_progress_thread_start(struct sse_domain *dom)
{
	int ret;

	dom->thread_stop = false;
	ret = pthread_create(&dom->thread, NULL, sse_progress_thread, dom);
	if (ret) {
		SSE_DOM_WARN(dom, "cannot start the progress thread: %s\n",
			     strerror(ret));
		return -FI_ENOMEM;
	}
	dom->thread_running = true;
	return 0;
}

void sse_progress_thread_stop(struct sse_domain *dom)
{
	if (!dom->thread_running)
		return;
	pthread_mutex_lock(&dom->lock);
	dom->thread_stop = true;
	pthread_cond_broadcast(&dom->cond);
	pthread_mutex_unlock(&dom->lock);
	pthread_join(dom->thread, NULL);
	dom->thread_running = false;
}

/* Free everything an endpoint still holds (fi_close). */
void __sse_ep_flush(struct sse_ep *ep)
{
	struct sse_msg *msg, *mtmp;
	struct sse_rx *rx, *rtmp;
	struct sse_tx *tx, *ttmp;
	int q;

	sse_dlist_foreach_safe(&ep->rx_active, msg, mtmp, struct sse_msg,
			       active) {
		rx = msg->rx;
		if (rx) {
			if (rx->flags & FI_MULTI_RECV)
				rx->mr_pending--;
			if (!rx->posted && !rx->mr_pending)
				__sse_rx_free(ep, rx);
		}
		__sse_msg_free(msg);
	}
	for (q = 0; q < 2; q++) {
		sse_dlist_foreach_safe(&ep->rx_unexp[q], msg, mtmp,
				       struct sse_msg, entry)
			__sse_msg_free(msg);
		sse_dlist_foreach_safe(&ep->rx_posted[q], rx, rtmp,
				       struct sse_rx, entry) {
			sse_dlist_remove(&rx->entry);
			__sse_rx_free(ep, rx);
		}
	}
	sse_dlist_foreach_safe(&ep->rx_claimed, msg, mtmp, struct sse_msg,
			       entry)
		__sse_msg_free(msg);
	sse_dlist_foreach_safe(&ep->tx_all, tx, ttmp, struct sse_tx, all)
		__sse_tx_free(ep, tx);
	__sse_rndv_cache_flush(ep);
	__sse_rma_flush(ep);
}
