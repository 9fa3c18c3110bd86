/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_cq.c: completion queues.  Entries are kept in one internal format (a
 * tagged entry plus the source address) and cut to the CQ's format when
 * read: the four public formats are prefixes of one another.  The ring
 * grows when full, so no completion is ever lost whatever size was asked
 * for.  An error takes a placeholder slot in the ring, so normal entries
 * queued before it are read first, and its details wait on a list for
 * fi_cq_readerr.  Every read drives progress of the endpoints bound to the
 * CQ (sse_cq_progress; the others wait for their own CQ or counter to be
 * read, as FI_PROGRESS_MANUAL allows); blocking reads sleep in the
 * emulator (ssemu_ep_wait), never spin.  With FI_WAIT_FD the CQ has an
 * eventfd that is readable exactly while entries wait, and the domain
 * runs a progress thread, so that completions arrive (and the descriptor
 * wakes a poll()) while the application sleeps.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sse.h"

#define SSE_CQ_MIN_CAP 64
#define SSE_CQ_WAIT_SLICE_MS 50

static size_t sse_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

SSEMU_HOT
static struct sse_cq_slot *__sse_cq_push(struct sse_cq *cq)
{
	struct sse_cq_slot *slot;

	if (cq->count == cq->cap) {
		size_t ncap = cq->cap * 2, i;
		struct sse_cq_slot *ring = malloc(ncap * sizeof(*ring));

		if (!ring)
			return NULL;
		for (i = 0; i < cq->count; i++)
			ring[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = ring;
		cq->cap = ncap;
		cq->head = 0;
	}
	slot = &cq->ring[(cq->head + cq->count) % cq->cap];
	if (cq->wait)
		sse_wait_signal(cq->wait);
	/* the descriptor becomes readable with the first entry */
	if (!cq->count++ && cq->fd >= 0) {
		uint64_t one = 1;

		if (write(cq->fd, &one, sizeof(one)) < 0)
			SSE_WARN(FI_LOG_CQ, "eventfd write: %s\n",
				 strerror(errno));
	}
	return slot;
}

SSEMU_HOT
static void __sse_cq_pop(struct sse_cq *cq)
{
	cq->head = (cq->head + 1) % cq->cap;
	/* ... and stops being readable with the last */
	if (!--cq->count && cq->fd >= 0) {
		uint64_t val;

		if (read(cq->fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
			SSE_WARN(FI_LOG_CQ, "eventfd read: %s\n",
				 strerror(errno));
	}
}

/* Caller holds the domain lock. */
SSEMU_HOT
int __sse_cq_write(struct sse_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag,
		   fi_addr_t src)
{
	struct sse_cq_slot *slot = __sse_cq_push(cq);

	if (!slot) {
		SSE_WARN(FI_LOG_CQ, "out of memory: completion lost\n");
		return -FI_ENOMEM;
	}
	slot->e.op_context = context;
	slot->e.flags = flags;
	slot->e.len = len;
	slot->e.buf = buf;
	slot->e.data = data;
	slot->e.tag = tag;
	slot->src = src;
	slot->is_err = false;
	return 0;
}

int __sse_cq_write_err(struct sse_cq *cq, const struct fi_cq_err_entry *err)
{
	struct sse_cq_slot *slot;
	struct sse_cq_err *e;

	e = calloc(1, sizeof(*e));
	if (!e)
		goto nomem;
	slot = __sse_cq_push(cq);
	if (!slot) {
		free(e);
		goto nomem;
	}
	slot->is_err = true;
	e->err = *err;
	e->err.err_data = NULL;
	e->err.err_data_size = 0;
	e->data_len = SSEMU_MIN(err->err_data_size, sizeof(e->data));
	if (e->data_len)
		memcpy(e->data, err->err_data, e->data_len);
	sse_dlist_insert_tail(&e->entry, &cq->errs);
	return 0;
nomem:
	SSE_WARN(FI_LOG_CQ, "out of memory: error completion %d lost\n",
		 err->err);
	return -FI_ENOMEM;
}

SSEMU_HOT
static ssize_t __sse_cq_read(struct sse_cq *cq, void *buf, size_t count,
			     fi_addr_t *src_addr)
{
	uint8_t *out = buf;
	size_t n = 0;

	while (n < count && cq->count) {
		struct sse_cq_slot *slot = &cq->ring[cq->head];

		if (slot->is_err) {
			if (!cq->errs_taken)
				break;
			cq->errs_taken--;
			__sse_cq_pop(cq);
			continue;
		}
		memcpy(out + n * cq->entry_size, &slot->e, cq->entry_size);
		if (src_addr)
			src_addr[n] = slot->src;
		__sse_cq_pop(cq);
		n++;
	}
	if (n)
		return (ssize_t)n;
	/* Consumed placeholders at the head are gone by now. */
	while (cq->count && cq->ring[cq->head].is_err && cq->errs_taken) {
		cq->errs_taken--;
		__sse_cq_pop(cq);
	}
	return cq->count && cq->ring[cq->head].is_err ? -FI_EAVAIL :
							  -FI_EAGAIN;
}

SSEMU_HOT
static ssize_t sse_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	struct sse_cq *cq = container_of(cq_fid, struct sse_cq, cq_fid);
	struct sse_domain *dom = cq->domain;
	ssize_t ret;

	int broken;

	if (count && !buf)
		return -FI_EINVAL;
	broken = sse_engine_progress(dom);
	pthread_mutex_lock(&dom->lock);
	__sse_cq_progress(cq);
	ret = __sse_cq_read(cq, buf, count, src_addr);
	/* nothing will ever come: say so rather than "try again" */
	if (ret == -FI_EAGAIN && broken)
		ret = broken;
	/*
	 * A caller that polls an empty CQ in a loop (MPI does) waits for a
	 * peer process, which on an oversubscribed host may need this core:
	 * now and then give it up.
	 */
	if (ret == -FI_EAGAIN && ++cq->idle_reads >= SSE_IDLE_YIELD) {
		cq->idle_reads = 0;
		pthread_mutex_unlock(&dom->lock);
		sched_yield();
		return ret;
	}
	if (ret != -FI_EAGAIN)
		cq->idle_reads = 0;
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

SSEMU_HOT
static ssize_t sse_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return sse_cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t sse_cq_readerr(struct fid_cq *cq_fid,
			      struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct sse_cq *cq = container_of(cq_fid, struct sse_cq, cq_fid);
	struct sse_domain *dom = cq->domain;
	uint32_t api = dom->fabric->fabric_fid.api_version;
	struct sse_cq_err *e;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;

	pthread_mutex_lock(&dom->lock);
	e = sse_dlist_first(&cq->errs, struct sse_cq_err, entry);
	if (!e) {
		pthread_mutex_unlock(&dom->lock);
		return -FI_EAGAIN;
	}
	sse_dlist_remove(&e->entry);
	cq->errs_taken++;
	/* Drop placeholders at the head right away. */
	while (cq->count && cq->ring[cq->head].is_err && cq->errs_taken) {
		cq->errs_taken--;
		__sse_cq_pop(cq);
	}

	cq->last_err = e->err;
	memcpy(cq->last_err_data, e->data, e->data_len);
	if (FI_VERSION_GE(api, FI_VERSION(1, 5))) {
		void *user_data = buf->err_data;
		size_t user_size = buf->err_data_size;

		*buf = e->err;
		if (user_size) {
			size_t n = SSEMU_MIN(user_size, e->data_len);

			if (n && user_data)
				memcpy(user_data, e->data, n);
			buf->err_data = user_data;
			buf->err_data_size = n;
		} else {
			buf->err_data = e->data_len ? cq->last_err_data : NULL;
			buf->err_data_size = e->data_len;
		}
	} else {
		/* An API 1.0 entry ends before err_data_size. */
		struct fi_cq_err_entry tmp = e->err;

		tmp.err_data = e->data_len ? cq->last_err_data : NULL;
		memcpy(buf, &tmp,
		       offsetof(struct fi_cq_err_entry, err_data_size));
	}
	pthread_mutex_unlock(&dom->lock);
	free(e);
	return 1;
}

static ssize_t sse_cq_sreadfrom(struct fid_cq *cq_fid, void *buf,
				size_t count, fi_addr_t *src_addr,
				const void *cond, int timeout)
{
	struct sse_cq *cq = container_of(cq_fid, struct sse_cq, cq_fid);
	struct sse_domain *dom = cq->domain;
	uint64_t deadline = timeout >= 0 ? sse_now_ms() + timeout : 0;
	size_t threshold = 1;
	ssize_t ret;

	if (count && !buf)
		return -FI_EINVAL;
	if (cq->wait_cond == FI_CQ_COND_THRESHOLD && cond)
		threshold = *(const size_t *)cond;
	threshold = SSEMU_MAX(SSEMU_MIN(threshold, count), (size_t)1);

	for (;;) {
		int slice = SSE_CQ_WAIT_SLICE_MS, broken;

		broken = sse_engine_progress(dom);
		pthread_mutex_lock(&dom->lock);
		__sse_cq_progress(cq);
		if (broken && !cq->count) {
			pthread_mutex_unlock(&dom->lock);
			return broken;
		}
		if (cq->count >= threshold ||
		    (cq->count && cq->ring[cq->head].is_err) ||
		    (cq->count && (cq->signaled || (timeout >= 0 &&
				   sse_now_ms() >= deadline)))) {
			ret = __sse_cq_read(cq, buf, count, src_addr);
			if (ret != -FI_EAGAIN) {
				pthread_mutex_unlock(&dom->lock);
				return ret;
			}
		}
		if (cq->signaled) {
			cq->signaled = false;
			pthread_mutex_unlock(&dom->lock);
			return -FI_EAGAIN;
		}
		pthread_mutex_unlock(&dom->lock);

		if (timeout >= 0) {
			uint64_t now = sse_now_ms();

			if (now >= deadline)
				return -FI_EAGAIN;
			slice = (int)SSEMU_MIN((uint64_t)slice, deadline - now);
		}
		sse_domain_wait(dom, slice);
	}
}

static ssize_t sse_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return sse_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int sse_cq_signal(struct fid_cq *cq_fid)
{
	struct sse_cq *cq = container_of(cq_fid, struct sse_cq, cq_fid);

	pthread_mutex_lock(&cq->domain->lock);
	cq->signaled = true;
	pthread_cond_broadcast(&cq->domain->cond);
	pthread_mutex_unlock(&cq->domain->lock);
	return 0;
}

static const char *sse_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static struct fi_ops_cq sse_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = sse_cq_read,
	.readfrom = sse_cq_readfrom,
	.readerr = sse_cq_readerr,
	.sread = sse_cq_sread,
	.sreadfrom = sse_cq_sreadfrom,
	.signal = sse_cq_signal,
	.strerror = sse_cq_strerror,
};

static int sse_cq_close(struct fid *fid)
{
	struct sse_cq *cq = container_of(fid, struct sse_cq, cq_fid.fid);
	struct sse_cq_err *e, *tmp;

	if (__atomic_load_n(&cq->ref, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	if (cq->wait)
		sse_wait_detach(cq->wait, &cq->cq_fid.fid);
	sse_dlist_foreach_safe(&cq->errs, e, tmp, struct sse_cq_err, entry)
		free(e);
	sse_domain_ref(cq->domain, -1);
	if (cq->fd >= 0)
		close(cq->fd);
	free(cq->ring);
	free(cq);
	return 0;
}

static int sse_cq_control(struct fid *fid, int command, void *arg)
{
	struct sse_cq *cq = container_of(fid, struct sse_cq, cq_fid.fid);

	return sse_wait_control(command, arg, cq->wait_obj, cq->fd);
}

static struct fi_ops sse_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_cq_close,
	.bind = sse_no_bind,
	.control = sse_cq_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

int sse_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cqp, void *context)
{
	struct sse_domain *dom = sse_dom(domain);
	enum fi_cq_format format;
	struct sse_cq *cq;

	if (!attr || !cqp)
		return -FI_EINVAL;
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EBADFLAGS;
	format = attr->format ? attr->format : FI_CQ_FORMAT_CONTEXT;
	if (!sse_cq_entry_size(format))
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
	case FI_WAIT_FD:
	case FI_WAIT_SET:
		break;
	default:
		/* No mutex/condition pair can be offered. */
		return -FI_ENOSYS;
	}
	if (attr->wait_obj == FI_WAIT_SET && !attr->wait_set)
		return -FI_EINVAL;
	if (attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->cap = SSE_CQ_MIN_CAP;
	while (cq->cap < attr->size && cq->cap < 1024)
		cq->cap *= 2;
	cq->ring = malloc(cq->cap * sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->fd = -1;
	if (attr->wait_obj == FI_WAIT_FD) {
		cq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (cq->fd < 0) {
			free(cq->ring);
			free(cq);
			return -FI_ENOMEM;
		}
		/* completions must arrive while the application sleeps */
		if (!dom->thread_running && sse_progress_thread_start(dom)) {
			close(cq->fd);
			free(cq->ring);
			free(cq);
			return -FI_ENOMEM;
		}
	}
	cq->domain = dom;
	if (attr->wait_obj == FI_WAIT_SET) {
		int ret = sse_wait_attach(attr->wait_set, &cq->cq_fid.fid,
					  dom, &cq->wait);

		if (ret) {
			free(cq->ring);
			free(cq);
			return ret;
		}
	}
	cq->domain = dom;
	cq->format = format;
	cq->entry_size = sse_cq_entry_size(format);
	cq->wait_obj = attr->wait_obj;
	cq->wait_cond = attr->wait_cond;
	sse_dlist_init(&cq->errs);

	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &sse_cq_fi_ops;
	cq->cq_fid.ops = &sse_cq_ops;
	attr->format = format;
	sse_domain_ref(dom, 1);
	*cqp = &cq->cq_fid;
	return 0;
}
