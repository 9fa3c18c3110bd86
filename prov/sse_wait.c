/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_wait.c: wait sets (fi_wait_open, fi_poll(3)), and what poll and wait
 * sets share: how to tell whether a member (CQ, counter, EQ) has news.
 *
 * CQs, counters and EQs opened with wait_obj FI_WAIT_SET and a wait set
 * join it for their lifetime (their fi_close leaves it); the set cannot
 * close while it has members (-FI_EBUSY).  fi_wait drives progress on the
 * members' domains and returns 0 as soon as one has news (a CQ or EQ with
 * entries, a counter that moved since the set last returned for it), or
 * -FI_ETIMEDOUT.  Between looks it sleeps in the emulator on a member
 * domain's NIC, waking for any of its events, or at the latest after
 * SSE_WAIT_SLICE_MS for news that comes another way (an EQ event, an
 * fi_cntr_add from another thread, another domain).
 *
 * FI_WAIT_FD: the set also has an eventfd (fi_control FI_GETWAIT) that
 * every member event makes readable, and a progress thread runs in each
 * member's domain (as for an FI_WAIT_FD CQ) so that events come while the
 * application sleeps in poll(2) or epoll.  fi_trywait on the set returns
 * -FI_EAGAIN while a member has news; otherwise it resets the descriptor
 * (not readable until the next event) and returns 0: then it is safe to
 * block on it.  fi_wait resets it too before it sleeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sse.h"

#define SSE_WAIT_SLICE_MS 20

/* ------------------------------------------------------------------ */
/* Members (poll and wait sets)                                         */
/* ------------------------------------------------------------------ */

static struct sse_domain *sse_member_domain(struct fid *fid)
{
	switch (fid->fclass) {
	case FI_CLASS_CQ:
		return container_of(fid, struct sse_cq, cq_fid.fid)->domain;
	case FI_CLASS_CNTR:
		return container_of(fid, struct sse_cntr, cntr_fid.fid)->domain;
	default:
		return NULL;
	}
}

/*
 * Does @m have news?  With @progress, the endpoints reporting to it
 * progress first (sse_cq_progress, sse_cntr_progress); with @update, a
 * counter's news counts as reported.  @return 1, 0, or
 * -FI_EINVAL for an object that cannot be a member.
 */
int sse_set_member_news(struct sse_set_member *m, bool progress, bool update)
{
	struct sse_cntr *cntr;
	struct sse_cq *cq;
	struct sse_eq *eq;
	uint64_t val, err;
	int news;

	switch (m->fid->fclass) {
	case FI_CLASS_CQ:
		cq = container_of(m->fid, struct sse_cq, cq_fid.fid);
		if (progress)
			sse_cq_progress(cq);
		pthread_mutex_lock(&cq->domain->lock);
		news = cq->count > 0;
		pthread_mutex_unlock(&cq->domain->lock);
		return news;
	case FI_CLASS_CNTR:
		cntr = container_of(m->fid, struct sse_cntr, cntr_fid.fid);
		if (progress)
			sse_cntr_progress(cntr);
		val = __atomic_load_n(&cntr->val, __ATOMIC_ACQUIRE);
		err = __atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE);
		news = val != m->val || err != m->err;
		if (news && update) {
			m->val = val;
			m->err = err;
		}
		return news;
	case FI_CLASS_EQ:
		eq = container_of(m->fid, struct sse_eq, eq_fid.fid);
		pthread_mutex_lock(&eq->lock);
		news = !sse_dlist_empty(&eq->events);
		pthread_mutex_unlock(&eq->lock);
		return news;
	default:
		return -FI_EINVAL;
	}
}

/* Hold (+1) or release (-1) @fid for a poll set: it cannot close then. */
int sse_set_member_ref(struct fid *fid, int delta)
{
	int *ref;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		ref = &container_of(fid, struct sse_cq, cq_fid.fid)->ref;
		break;
	case FI_CLASS_CNTR:
		ref = &container_of(fid, struct sse_cntr, cntr_fid.fid)->ref;
		break;
	case FI_CLASS_EQ:
		ref = &container_of(fid, struct sse_eq, eq_fid.fid)->ref;
		break;
	default:
		return -FI_EINVAL;
	}
	__atomic_add_fetch(ref, delta, __ATOMIC_ACQ_REL);
	return 0;
}

static struct sse_set_member *sse_member_new(struct fid *fid)
{
	struct sse_set_member *m = calloc(1, sizeof(*m));
	struct sse_cntr *cntr;

	if (!m)
		return NULL;
	m->fid = fid;
	if (fid->fclass == FI_CLASS_CNTR) {
		/* news: what comes after joining */
		cntr = container_of(fid, struct sse_cntr, cntr_fid.fid);
		m->val = __atomic_load_n(&cntr->val, __ATOMIC_ACQUIRE);
		m->err = __atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE);
	}
	return m;
}

/* ------------------------------------------------------------------ */
/* The wait set                                                         */
/* ------------------------------------------------------------------ */

void sse_wait_signal(struct sse_wait *w)
{
	uint64_t one = 1;

	pthread_mutex_lock(&w->lock);
	w->signals++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->fd >= 0 && !__atomic_exchange_n(&w->fd_armed, true,
					       __ATOMIC_ACQ_REL) &&
	    write(w->fd, &one, sizeof(one)) < 0)
		SSE_WARN(FI_LOG_CORE, "wait set eventfd write: %s\n",
			 strerror(errno));
}

/* The descriptor stops being readable (until the next signal). */
static void sse_wait_reset(struct sse_wait *w)
{
	uint64_t val;

	if (w->fd < 0)
		return;
	if (read(w->fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
		SSE_WARN(FI_LOG_CORE, "wait set eventfd read: %s\n",
			 strerror(errno));
	/* after the read: a signal in between leaves it armed, and the
	 * caller's next look at the members finds its news */
	__atomic_store_n(&w->fd_armed, false, __ATOMIC_RELEASE);
}

/*
 * Look at every member once.  @return 1 news (counters' news then counts
 * as reported), 0 none, negative error; *@dom: a member's domain to sleep
 * on, *@several: members in more than one place.
 */
static int sse_wait_scan(struct sse_wait *w, bool progress,
			 struct sse_domain **dom, bool *several)
{
	struct sse_set_member **v, *m;
	struct sse_domain *d;
	int n = 0, i, ret = 0;

	pthread_mutex_lock(&w->lock);
	v = malloc((size_t)(w->ref ? w->ref : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&w->lock);
		return -FI_ENOMEM;
	}
	sse_dlist_foreach(&w->members, m, struct sse_set_member, entry)
		v[n++] = m;
	pthread_mutex_unlock(&w->lock);

	if (dom)
		*dom = NULL;
	if (several)
		*several = false;
	/* no lock of the set while members' locks are taken */
	for (i = 0; i < n; i++) {
		d = sse_member_domain(v[i]->fid);
		if (dom && several) {
			if (!d || (*dom && *dom != d))
				*several = true;
			if (d && !*dom)
				*dom = d;
		}
		if (!ret)
			ret = sse_set_member_news(v[i], progress, true);
	}
	free(v);
	return ret;
}

static int sse_wait_wait(struct fid_wait *waitset, int timeout)
{
	struct sse_wait *w = container_of(waitset, struct sse_wait, wait_fid);
	uint64_t deadline = timeout >= 0 ? sse_now_ms() + timeout : 0;
	struct sse_domain *dom;
	struct timespec ts;
	uint64_t sig;
	bool several;
	int ret, slice;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		sig = w->signals;
		pthread_mutex_unlock(&w->lock);
		ret = sse_wait_scan(w, true, &dom, &several);
		if (ret)
			return ret < 0 ? ret : 0;
		sse_wait_reset(w);
		slice = SSE_WAIT_SLICE_MS;
		if (timeout >= 0) {
			uint64_t now = sse_now_ms();

			if (now >= deadline)
				return -FI_ETIMEDOUT;
			slice = (int)SSEMU_MIN((uint64_t)slice, deadline - now);
		}
		if (dom) {
			/* its NIC's events wake us at once */
			sse_domain_wait(dom, slice);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)slice * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock(&w->lock);
		if (w->signals == sig)
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		pthread_mutex_unlock(&w->lock);
	}
}

int sse_wait_trywait(struct sse_wait *w)
{
	int ret;

	ret = sse_wait_scan(w, true, NULL, NULL);
	if (ret)
		return ret < 0 ? ret : -FI_EAGAIN;
	sse_wait_reset(w);
	ret = sse_wait_scan(w, false, NULL, NULL);
	if (ret)
		return ret < 0 ? ret : -FI_EAGAIN;
	return 0;
}

static struct fi_ops_wait sse_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = sse_wait_wait,
};

static int sse_wait_close(struct fid *fid)
{
	struct sse_wait *w = container_of(fid, struct sse_wait, wait_fid.fid);

	pthread_mutex_lock(&w->lock);
	if (w->ref) {
		pthread_mutex_unlock(&w->lock);
		SSE_WARN(FI_LOG_CORE, "fi_close(wait set): %d members still open\n",
			 w->ref);
		return -FI_EBUSY;
	}
	pthread_mutex_unlock(&w->lock);
	if (w->fd >= 0)
		close(w->fd);
	__atomic_sub_fetch(&w->fabric->ref, 1, __ATOMIC_ACQ_REL);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return 0;
}

static int sse_waitset_control(struct fid *fid, int command, void *arg)
{
	struct sse_wait *w = container_of(fid, struct sse_wait, wait_fid.fid);

	return sse_wait_control(command, arg, w->wait_obj, w->fd);
}

static struct fi_ops sse_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_wait_close,
	.bind = sse_no_bind,
	.control = sse_waitset_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

/*
 * @fid (a CQ, counter or EQ being opened with FI_WAIT_SET) joins
 * @waitset.  @dom: its domain (NULL for an EQ).  @return 0 with the set
 * in *@wp, -FI_EINVAL for something that is not one of our wait sets.
 */
int sse_wait_attach(struct fid_wait *waitset, struct fid *fid,
		    struct sse_domain *dom, struct sse_wait **wp)
{
	struct sse_set_member *m;
	struct sse_wait *w;

	if (!waitset || waitset->fid.fclass != FI_CLASS_WAIT ||
	    waitset->fid.ops != &sse_wait_fi_ops) {
		SSE_WARN(FI_LOG_CORE, "FI_WAIT_SET without a wait set of this provider\n");
		return -FI_EINVAL;
	}
	w = container_of(waitset, struct sse_wait, wait_fid);
	if (dom && dom->fabric != w->fabric) {
		SSE_WARN(FI_LOG_CORE, "FI_WAIT_SET: the wait set belongs to another fabric\n");
		return -FI_EINVAL;
	}
	/* events must come while the application sleeps on the fd */
	if (dom && w->fd >= 0 && !dom->thread_running &&
	    sse_progress_thread_start(dom))
		return -FI_ENOMEM;
	m = sse_member_new(fid);
	if (!m)
		return -FI_ENOMEM;
	pthread_mutex_lock(&w->lock);
	sse_dlist_insert_tail(&m->entry, &w->members);
	w->ref++;
	pthread_mutex_unlock(&w->lock);
	*wp = w;
	return 0;
}

void sse_wait_detach(struct sse_wait *w, struct fid *fid)
{
	struct sse_set_member *m, *tmp;

	pthread_mutex_lock(&w->lock);
	sse_dlist_foreach_safe(&w->members, m, tmp, struct sse_set_member,
			       entry) {
		if (m->fid == fid) {
			sse_dlist_remove(&m->entry);
			free(m);
			w->ref--;
			break;
		}
	}
	pthread_mutex_unlock(&w->lock);
}

int sse_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		  struct fid_wait **waitset)
{
	struct sse_fabric *fab = container_of(fabric, struct sse_fabric,
					      fabric_fid);
	pthread_condattr_t cattr;
	struct sse_wait *w;
	int ret;

	if (!attr || !waitset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	if (attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD) {
		SSE_WARN(FI_LOG_CORE, "fi_wait_open: wait object %d: only FI_WAIT_FD and FI_WAIT_UNSPEC are supported\n",
			 (int)attr->wait_obj);
		return -FI_ENOSYS;
	}

	w = calloc(1, sizeof(*w));
	if (!w)
		return -FI_ENOMEM;
	w->fabric = fab;
	w->wait_obj = attr->wait_obj;
	w->fd = -1;
	sse_dlist_init(&w->members);
	if (attr->wait_obj == FI_WAIT_FD) {
		w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (w->fd < 0) {
			ret = -FI_EMFILE;
			goto err_free;
		}
	}
	ret = pthread_mutex_init(&w->lock, NULL);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_close_fd;
	}
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&w->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_destroy_lock;
	}

	w->wait_fid.fid.fclass = FI_CLASS_WAIT;
	w->wait_fid.fid.ops = &sse_wait_fi_ops;
	w->wait_fid.ops = &sse_wait_ops;
	__atomic_add_fetch(&fab->ref, 1, __ATOMIC_ACQ_REL);
	*waitset = &w->wait_fid;
	return 0;

err_destroy_lock:
	pthread_mutex_destroy(&w->lock);
err_close_fd:
	if (w->fd >= 0)
		close(w->fd);
err_free:
	free(w);
	return ret;
}
