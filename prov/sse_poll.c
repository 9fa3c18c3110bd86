/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_poll.c: poll sets (fi_poll_open, fi_poll(3)).  A poll set holds CQs,
 * counters and EQs (fi_poll_add, fi_poll_del); while a member, an object
 * cannot close (-FI_EBUSY), nor can the set while it has members.
 * fi_poll progresses the endpoints reporting to each member and returns
 * the contexts (fid->context) of the members with news: a CQ or EQ holding
 * entries, a counter whose value or error count moved since the last
 * fi_poll that returned it (or since it joined).  It never blocks; 0 means
 * nothing is new.
 */
#include <stdlib.h>

#include "sse.h"

static int sse_poll_poll(struct fid_poll *pollset, void **context, int count)
{
	struct sse_poll *ps = container_of(pollset, struct sse_poll, poll_fid);
	struct sse_set_member *m;
	int n = 0, err = 0, ret;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	pthread_mutex_lock(&ps->lock);
	sse_dlist_foreach(&ps->members, m, struct sse_set_member, entry) {
		if (n == count)
			break;
		ret = sse_set_member_news(m, true, true);
		if (ret > 0)
			context[n++] = m->fid->context;
		else if (ret < 0)
			err = ret;
	}
	pthread_mutex_unlock(&ps->lock);
	return n ? n : err;
}

static int sse_poll_add(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct sse_poll *ps = container_of(pollset, struct sse_poll, poll_fid);
	struct sse_set_member *m;
	struct sse_cntr *cntr;
	int ret = 0;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (event_fid->fclass != FI_CLASS_CQ &&
	    event_fid->fclass != FI_CLASS_CNTR &&
	    event_fid->fclass != FI_CLASS_EQ) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_poll_add: class %zu is not a CQ, counter or EQ\n",
			 event_fid->fclass);
		return -FI_EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	m->fid = event_fid;
	if (event_fid->fclass == FI_CLASS_CNTR) {
		cntr = container_of(event_fid, struct sse_cntr, cntr_fid.fid);
		m->val = __atomic_load_n(&cntr->val, __ATOMIC_ACQUIRE);
		m->err = __atomic_load_n(&cntr->err, __ATOMIC_ACQUIRE);
	}
	pthread_mutex_lock(&ps->lock);
	{
		struct sse_set_member *it;

		sse_dlist_foreach(&ps->members, it, struct sse_set_member,
				  entry) {
			if (it->fid == event_fid) {
				ret = -FI_EALREADY;
				break;
			}
		}
	}
	if (!ret) {
		sse_set_member_ref(event_fid, 1);
		sse_dlist_insert_tail(&m->entry, &ps->members);
	}
	pthread_mutex_unlock(&ps->lock);
	if (ret)
		free(m);
	return ret;
}

static int sse_poll_del(struct fid_poll *pollset, struct fid *event_fid,
			uint64_t flags)
{
	struct sse_poll *ps = container_of(pollset, struct sse_poll, poll_fid);
	struct sse_set_member *m;
	int ret = -FI_ENOENT;

	if (!event_fid)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	pthread_mutex_lock(&ps->lock);
	sse_dlist_foreach(&ps->members, m, struct sse_set_member, entry) {
		if (m->fid == event_fid) {
			sse_dlist_remove(&m->entry);
			sse_set_member_ref(event_fid, -1);
			free(m);
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&ps->lock);
	return ret;
}

static struct fi_ops_poll sse_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = sse_poll_poll,
	.poll_add = sse_poll_add,
	.poll_del = sse_poll_del,
};

static int sse_poll_close(struct fid *fid)
{
	struct sse_poll *ps = container_of(fid, struct sse_poll, poll_fid.fid);

	if (!sse_dlist_empty(&ps->members)) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_close(poll set): members left (fi_poll_del them first)\n");
		return -FI_EBUSY;
	}
	sse_domain_ref(ps->domain, -1);
	pthread_mutex_destroy(&ps->lock);
	free(ps);
	return 0;
}

static struct fi_ops sse_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_poll_close,
	.bind = sse_no_bind,
	.control = sse_no_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

int sse_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct sse_domain *dom = sse_dom(domain);
	struct sse_poll *ps;

	if (!attr || !pollset)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	if (pthread_mutex_init(&ps->lock, NULL)) {
		free(ps);
		return -FI_ENOMEM;
	}
	ps->domain = dom;
	sse_dlist_init(&ps->members);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = &sse_poll_fi_ops;
	ps->poll_fid.ops = &sse_poll_ops;
	sse_domain_ref(dom, 1);
	*pollset = &ps->poll_fid;
	return 0;
}
