/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_eq.c: event queues.  Events are produced inside this process only
 * (asynchronous AV insertion, errors, fi_eq_write), so a mutex, a condition
 * variable and, for FI_WAIT_FD, an eventfd that stays readable while the
 * queue is not empty, are all an EQ needs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "sse.h"

/*
 * Largest event fi_eq_write takes: far more than any libfabric event
 * (struct fi_eq_cm_entry plus connection data), and small enough that the
 * event's size and its copy never overflow.
 */
#define SSE_EQ_WRITE_MAX (64 * 1024)

static void __sse_eq_push(struct sse_eq *eq, struct sse_eq_ev *ev)
{
	bool was_empty = sse_dlist_empty(&eq->events);
	uint64_t one = 1;

	sse_dlist_insert_tail(&ev->entry, &eq->events);
	if (was_empty && eq->fd >= 0 && write(eq->fd, &one, sizeof(one)) < 0)
		SSE_WARN(FI_LOG_EQ, "eventfd write: %s\n", strerror(errno));
	pthread_cond_broadcast(&eq->cond);
	if (eq->wait)
		sse_wait_signal(eq->wait);
}

static void __sse_eq_pop(struct sse_eq *eq, struct sse_eq_ev *ev)
{
	uint64_t val;

	sse_dlist_remove(&ev->entry);
	if (sse_dlist_empty(&eq->events) && eq->fd >= 0 &&
	    read(eq->fd, &val, sizeof(val)) < 0 && errno != EAGAIN)
		SSE_WARN(FI_LOG_EQ, "eventfd read: %s\n", strerror(errno));
}

int sse_eq_report(struct sse_eq *eq, uint32_t event, const void *buf,
		  size_t len, uint64_t flags)
{
	struct sse_eq_ev *ev;

	if (len > SSE_EQ_WRITE_MAX)
		return -FI_EINVAL;
	ev = calloc(1, sizeof(*ev) + len);
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = len;
	if (len)
		memcpy(ev->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	__sse_eq_push(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

int sse_eq_report_err(struct sse_eq *eq, fid_t fid, void *context,
		      uint64_t data, int err)
{
	struct sse_eq_ev *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return -FI_ENOMEM;
	ev->is_err = true;
	ev->err.fid = fid;
	ev->err.context = context;
	ev->err.data = data;
	ev->err.err = err;
	ev->err.prov_errno = err;
	pthread_mutex_lock(&eq->lock);
	__sse_eq_push(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	return 0;
}

static ssize_t __sse_eq_read(struct sse_eq *eq, uint32_t *event, void *buf,
			     size_t len, uint64_t flags)
{
	struct sse_eq_ev *ev = sse_dlist_first(&eq->events, struct sse_eq_ev,
					       entry);

	if (!ev)
		return -FI_EAGAIN;
	if (ev->is_err)
		return -FI_EAVAIL;
	if (len < ev->len)
		return -FI_ETOOSMALL;
	if (event)
		*event = ev->event;
	if (ev->len)
		memcpy(buf, ev->data, ev->len);
	len = ev->len;
	if (!(flags & FI_PEEK)) {
		__sse_eq_pop(eq, ev);
		free(ev);
	}
	return (ssize_t)len;
}

static ssize_t sse_eq_read(struct fid_eq *eq_fid, uint32_t *event, void *buf,
			   size_t len, uint64_t flags)
{
	struct sse_eq *eq = container_of(eq_fid, struct sse_eq, eq_fid);
	ssize_t ret;

	if (len && !buf)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	ret = __sse_eq_read(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t sse_eq_readerr(struct fid_eq *eq_fid,
			      struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct sse_eq *eq = container_of(eq_fid, struct sse_eq, eq_fid);
	uint32_t api = eq->fabric->fabric_fid.api_version;
	struct sse_eq_ev *ev;

	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&eq->lock);
	ev = sse_dlist_first(&eq->events, struct sse_eq_ev, entry);
	if (!ev || !ev->is_err) {
		pthread_mutex_unlock(&eq->lock);
		return -FI_EAGAIN;
	}
	if (FI_VERSION_GE(api, FI_VERSION(1, 5))) {
		void *user_data = buf->err_data;
		size_t user_size = buf->err_data_size;

		*buf = ev->err;
		buf->err_data = user_size ? user_data : NULL;
		buf->err_data_size = 0;
	} else {
		memcpy(buf, &ev->err,
		       offsetof(struct fi_eq_err_entry, err_data_size));
	}
	__sse_eq_pop(eq, ev);
	pthread_mutex_unlock(&eq->lock);
	free(ev);
	return sizeof(*buf);
}

static ssize_t sse_eq_write(struct fid_eq *eq_fid, uint32_t event,
			    const void *buf, size_t len, uint64_t flags)
{
	struct sse_eq *eq = container_of(eq_fid, struct sse_eq, eq_fid);
	int ret;

	if (len && !buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (len > SSE_EQ_WRITE_MAX) {
		SSE_WARN(FI_LOG_EQ, "fi_eq_write: %zu bytes: an event is at most %d bytes\n",
			 len, SSE_EQ_WRITE_MAX);
		return -FI_EINVAL;
	}
	ret = sse_eq_report(eq, event, buf, len, flags);
	return ret ? ret : (ssize_t)len;
}

static ssize_t sse_eq_sread(struct fid_eq *eq_fid, uint32_t *event,
			    void *buf, size_t len, int timeout,
			    uint64_t flags)
{
	struct sse_eq *eq = container_of(eq_fid, struct sse_eq, eq_fid);
	struct timespec ts;
	ssize_t ret;

	if (len && !buf)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (eq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	if (timeout >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout / 1000;
		ts.tv_nsec += (long)(timeout % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&eq->lock);
	while (sse_dlist_empty(&eq->events)) {
		int r = timeout >= 0 ?
			pthread_cond_timedwait(&eq->cond, &eq->lock, &ts) :
			pthread_cond_wait(&eq->cond, &eq->lock);

		if (r == ETIMEDOUT && sse_dlist_empty(&eq->events)) {
			pthread_mutex_unlock(&eq->lock);
			return -FI_EAGAIN;
		}
	}
	ret = __sse_eq_read(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static const char *sse_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static struct fi_ops_eq sse_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = sse_eq_read,
	.readerr = sse_eq_readerr,
	.write = sse_eq_write,
	.sread = sse_eq_sread,
	.strerror = sse_eq_strerror,
};

static int sse_eq_close(struct fid *fid)
{
	struct sse_eq *eq = container_of(fid, struct sse_eq, eq_fid.fid);
	struct sse_eq_ev *ev, *tmp;

	if (__atomic_load_n(&eq->ref, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	if (eq->wait)
		sse_wait_detach(eq->wait, &eq->eq_fid.fid);
	sse_dlist_foreach_safe(&eq->events, ev, tmp, struct sse_eq_ev, entry)
		free(ev);
	if (eq->fd >= 0)
		close(eq->fd);
	__atomic_sub_fetch(&eq->fabric->ref, 1, __ATOMIC_ACQ_REL);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->lock);
	free(eq);
	return 0;
}

static int sse_eq_control(struct fid *fid, int command, void *arg)
{
	struct sse_eq *eq = container_of(fid, struct sse_eq, eq_fid.fid);

	return sse_wait_control(command, arg, eq->wait_obj, eq->fd);
}

static struct fi_ops sse_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_eq_close,
	.bind = sse_no_bind,
	.control = sse_eq_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

int sse_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eqp, void *context)
{
	struct sse_fabric *fab = container_of(fabric, struct sse_fabric,
					      fabric_fid);
	pthread_condattr_t cattr;
	struct sse_eq *eq;
	int ret;

	if (!attr || !eqp)
		return -FI_EINVAL;
	if (attr->flags & ~FI_WRITE)
		return -FI_EBADFLAGS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:
	case FI_WAIT_SET:
		break;
	default:
		return -FI_ENOSYS;
	}

	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->fabric = fab;
	eq->wait_obj = attr->wait_obj;
	eq->fd = -1;
	sse_dlist_init(&eq->events);
	if (attr->wait_obj == FI_WAIT_FD) {
		eq->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (eq->fd < 0) {
			ret = -FI_EMFILE;
			goto err_free;
		}
	}
	ret = pthread_mutex_init(&eq->lock, NULL);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_close_fd;
	}
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&eq->cond, &cattr);
	pthread_condattr_destroy(&cattr);
	if (ret) {
		ret = -FI_ENOMEM;
		goto err_destroy_lock;
	}

	if (attr->wait_obj == FI_WAIT_SET) {
		ret = sse_wait_attach(attr->wait_set, &eq->eq_fid.fid, NULL,
				      &eq->wait);
		if (ret)
			goto err_destroy_cond;
	}
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &sse_eq_fi_ops;
	eq->eq_fid.ops = &sse_eq_ops;
	__atomic_add_fetch(&fab->ref, 1, __ATOMIC_ACQ_REL);
	*eqp = &eq->eq_fid;
	return 0;

err_destroy_cond:
	pthread_cond_destroy(&eq->cond);
err_destroy_lock:
	pthread_mutex_destroy(&eq->lock);
err_close_fd:
	if (eq->fd >= 0)
		close(eq->fd);
err_free:
	free(eq);
	return ret;
}
