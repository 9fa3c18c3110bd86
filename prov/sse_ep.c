/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_ep.c: endpoints.  Each fi_endpoint opens one ssemu endpoint (a pid on
 * the process's NIC), so fi_getname works from the start; data transfer
 * needs fi_enable, which needs an AV and a CQ or counter.
 */
#include <errno.h>
#include <stdlib.h>

#include "sse.h"

#define SSE_CNTR_FLAGS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			FI_REMOTE_READ | FI_REMOTE_WRITE)

static int sse_ep_bind_cntr(struct sse_ep *ep, struct sse_cntr *cntr,
			    uint64_t flags)
{
	struct {
		uint64_t flag;
		struct sse_cntr **slot;
	} map[] = {
		{ FI_SEND, &ep->send_cntr },
		{ FI_RECV, &ep->recv_cntr },
		{ FI_READ, &ep->read_cntr },
		{ FI_WRITE, &ep->write_cntr },
		{ FI_REMOTE_READ, &ep->rread_cntr },
		{ FI_REMOTE_WRITE, &ep->rwrite_cntr },
	};
	size_t i;

	if (!flags || (flags & ~SSE_CNTR_FLAGS))
		return -FI_EBADFLAGS;
	for (i = 0; i < ARRAY_SIZE(map); i++) {
		if ((flags & map[i].flag) && *map[i].slot)
			return -FI_EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(map); i++) {
		if (flags & map[i].flag) {
			*map[i].slot = cntr;
			__atomic_add_fetch(&cntr->ref, 1, __ATOMIC_ACQ_REL);
		}
	}
	return 0;
}

static int sse_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct sse_ep *ep = container_of(fid, struct sse_ep, ep_fid.fid);
	struct sse_domain *dom = ep->domain;
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;

	pthread_mutex_lock(&dom->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct sse_av *av = container_of(bfid, struct sse_av,
						 av_fid.fid);

		if (flags) {
			ret = -FI_EBADFLAGS;
		} else if (ep->av || av->domain != dom) {
			ret = -FI_EINVAL;
		} else {
			ep->av = av;
			__atomic_add_fetch(&av->ref, 1, __ATOMIC_ACQ_REL);
		}
		break;
	}
	case FI_CLASS_CQ: {
		struct sse_cq *cq = container_of(bfid, struct sse_cq,
						 cq_fid.fid);

		if (flags & ~(FI_TRANSMIT | FI_RECV |
			      FI_SELECTIVE_COMPLETION)) {
			ret = -FI_EBADFLAGS;
		} else if (!(flags & (FI_TRANSMIT | FI_RECV)) ||
			   cq->domain != dom ||
			   ((flags & FI_TRANSMIT) && ep->tx_cq) ||
			   ((flags & FI_RECV) && ep->rx_cq)) {
			ret = -FI_EINVAL;
		} else {
			if (flags & FI_TRANSMIT) {
				ep->tx_cq = cq;
				ep->tx_selective =
					flags & FI_SELECTIVE_COMPLETION;
				__atomic_add_fetch(&cq->ref, 1,
						   __ATOMIC_ACQ_REL);
			}
			if (flags & FI_RECV) {
				ep->rx_cq = cq;
				ep->rx_selective =
					flags & FI_SELECTIVE_COMPLETION;
				__atomic_add_fetch(&cq->ref, 1,
						   __ATOMIC_ACQ_REL);
			}
		}
		break;
	}
	case FI_CLASS_CNTR: {
		struct sse_cntr *cntr = container_of(bfid, struct sse_cntr,
						     cntr_fid.fid);

		if (cntr->domain != dom)
			ret = -FI_EINVAL;
		else
			ret = sse_ep_bind_cntr(ep, cntr, flags);
		break;
	}
	case FI_CLASS_EQ: {
		struct sse_eq *eq = container_of(bfid, struct sse_eq,
						 eq_fid.fid);

		if (ep->eq || eq->fabric != dom->fabric) {
			ret = -FI_EINVAL;
		} else {
			ep->eq = eq;
			__atomic_add_fetch(&eq->ref, 1, __ATOMIC_ACQ_REL);
		}
		break;
	}
	default:
		ret = -FI_EINVAL;
		break;
	}
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static void sse_unref(int *ref)
{
	__atomic_sub_fetch(ref, 1, __ATOMIC_ACQ_REL);
}

/*
 * What the endpoint accepted belongs to the NIC: sends and RMA operations
 * still waiting in the endpoint's queues for room in the emulator (an
 * injected send is complete for the application already) are posted
 * before it closes, until @deadline (ms).  The emulator's close then waits
 * for them to be delivered.  Called with the domain lock held (dropped
 * while the engine runs).  @return whether some could not be posted.
 */
static bool __sse_ep_drain(struct sse_ep *ep, uint64_t deadline)
{
	struct sse_domain *dom = ep->domain;
	struct sse_tx *tx;
	size_t n = 0;

	for (;;) {
		__sse_ep_progress(ep);
		if (sse_dlist_empty(&ep->tx_queue) &&
		    sse_dlist_empty(&ep->rma_queue))
			return false;
		if (sse_now_ms() >= deadline)
			break;
		pthread_mutex_unlock(&dom->lock);
		sse_engine_progress(dom);
		pthread_mutex_lock(&dom->lock);
		/* receivers in this process free the slots we wait for */
		__sse_domain_progress(dom);
	}
	sse_dlist_foreach(&ep->tx_queue, tx, struct sse_tx, entry)
		n++;
	SSE_EP_WARN(ep, "closing: %zu sends and %s RMA operations it accepted could not be handed to the NIC within %d ms: discarded\n",
		    n, sse_dlist_empty(&ep->rma_queue) ? "no" : "some",
		    sse_env.close_timeout);
	return true;
}

static void sse_ep_pools_init(struct sse_ep *ep)
{
	sse_pool_init(&ep->tx_pool, sizeof(struct sse_tx));
	sse_pool_init(&ep->rx_pool, sizeof(struct sse_rx));
	sse_pool_init(&ep->rma_pool, sizeof(struct sse_rma_op));
	sse_pool_init(&ep->piece_pool, sizeof(struct sse_rma_piece));
	sse_pool_init(&ep->bounce_pool, SSE_INJECT_SIZE);
}

/* Free the pools' chunks; everything must be back in them by now. */
static void sse_ep_pools_fini(struct sse_ep *ep)
{
	struct {
		struct sse_pool *pool;
		const char *what;
	} p[] = {
		{ &ep->tx_pool, "transfer objects" },
		{ &ep->rx_pool, "receives" },
		{ &ep->rma_pool, "RMA operations" },
		{ &ep->piece_pool, "RMA pieces" },
		{ &ep->bounce_pool, "inject buffers" },
	};
	size_t i, left;

	for (i = 0; i < ARRAY_SIZE(p); i++) {
		left = sse_pool_fini(p[i].pool);
		if (left)
			SSE_EP_WARN(ep, "closing: %zu %s still in use\n",
				    left, p[i].what);
	}
}

static int sse_ep_close(struct fid *fid)
{
	struct sse_ep *ep = container_of(fid, struct sse_ep, ep_fid.fid);
	struct sse_domain *dom = ep->domain;
	struct sse_cntr **c[] = {
		&ep->send_cntr, &ep->recv_cntr, &ep->read_cntr,
		&ep->write_cntr, &ep->rread_cntr, &ep->rwrite_cntr,
	};
	uint64_t deadline = sse_now_ms() + (uint64_t)sse_env.close_timeout;
	uint64_t now;
	size_t i;
	bool left;

	if (ep->rma_reads || ep->rma_writes || ep->rma_atomics)
		SSE_EP_INFO(ep, "RMA initiated: %llu reads, %llu writes, %llu atomics, %llu bytes\n",
			    (unsigned long long)ep->rma_reads,
			    (unsigned long long)ep->rma_writes,
			    (unsigned long long)ep->rma_atomics,
			    (unsigned long long)ep->rma_bytes);
	if (ep->rndv_reads || ep->rndv_pushes)
		SSE_EP_INFO(ep, "rendezvous received: %llu read (%llu reads copied at their post), %llu pushed\n",
			    (unsigned long long)ep->rndv_reads,
			    (unsigned long long)ep->rndv_early,
			    (unsigned long long)ep->rndv_pushes);
	pthread_mutex_lock(&dom->lock);
	if (ep->aliases) {
		pthread_mutex_unlock(&dom->lock);
		SSE_EP_WARN(ep, "fi_close(ep): %d aliases still open\n",
			    ep->aliases);
		return -FI_EBUSY;
	}
	sse_dlist_remove(&ep->entry);
	/* Nobody may sleep on the ssemu endpoint we are about to close. */
	while (ep->waiters)
		pthread_cond_wait(&dom->cond, &dom->lock);
	/* triggered operations that never ran go with it; what the
	 * endpoint accepted goes to the NIC */
	__sse_trigger_ep_flush(ep);
	left = __sse_ep_drain(ep, deadline);
	__sse_ep_flush(ep);
	sse_ep_pools_fini(ep);
	pthread_mutex_unlock(&dom->lock);

	now = sse_now_ms();
	ssemu_ep_close_timeout(ep->emu, left ? 0 :
				   (int)(deadline > now ? deadline - now : 0));
	if (ep->av)
		sse_unref(&ep->av->ref);
	if (ep->tx_cq)
		sse_unref(&ep->tx_cq->ref);
	if (ep->rx_cq)
		sse_unref(&ep->rx_cq->ref);
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		if (*c[i])
			sse_unref(&(*c[i])->ref);
	}
	if (ep->eq)
		sse_unref(&ep->eq->ref);
	sse_domain_ref(dom, -1);
	free(ep);
	return 0;
}

/*
 * Op flags for one direction (FI_TRANSMIT or FI_RECV in @flags) that
 * fi_control(FI_SETOPSFLAG) and fi_ep_alias take.
 */
static bool sse_ep_op_flags_ok(const struct sse_ep *ep, uint64_t flags)
{
	uint64_t tx_ok = SSE_TX_OP_FLAGS |
			 ((ep->caps & FI_TRIGGER) ? FI_TRIGGER : 0);

	if (flags & FI_TRANSMIT)
		return !(flags & ~(FI_TRANSMIT | tx_ok));
	return !(flags & ~(FI_RECV | SSE_RX_OP_FLAGS));
}

/* ------------------------------------------------------------------ */
/* fi_ep_alias                                                          */
/* ------------------------------------------------------------------ */

static int sse_ep_alias_close(struct fid *fid)
{
	struct sse_ep_alias *a = container_of(fid, struct sse_ep_alias,
					      ep_fid.fid);
	struct sse_domain *dom = a->ep->domain;

	pthread_mutex_lock(&dom->lock);
	a->ep->aliases--;
	pthread_mutex_unlock(&dom->lock);
	free(a);
	return 0;
}

static int sse_ep_alias_control(struct fid *fid, int command, void *arg)
{
	struct sse_ep_alias *a = container_of(fid, struct sse_ep_alias,
					      ep_fid.fid);
	uint64_t *flags = arg;

	/* an alias has op flags of its own, and shares the rest */
	if (command != FI_GETOPSFLAG && command != FI_SETOPSFLAG)
		return a->ep->ep_fid.fid.ops->control(&a->ep->ep_fid.fid,
						      command, arg);
	if (!flags || !(*flags & (FI_TRANSMIT | FI_RECV)) ||
	    (*flags & FI_TRANSMIT && *flags & FI_RECV))
		return -FI_EINVAL;
	if (command == FI_GETOPSFLAG) {
		*flags = (*flags & FI_TRANSMIT) ? a->tx_op_flags :
						  a->rx_op_flags;
		return 0;
	}
	if (!sse_ep_op_flags_ok(a->ep, *flags))
		return -FI_EINVAL;
	if (*flags & FI_TRANSMIT)
		a->tx_op_flags = *flags & ~FI_TRANSMIT;
	else
		a->rx_op_flags = *flags & ~FI_RECV;
	return 0;
}

static int sse_ep_alias_bind(struct fid *fid, struct fid *bfid,
			     uint64_t flags)
{
	return -FI_EINVAL;	/* bind the endpoint itself */
}

struct fi_ops sse_ep_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_ep_alias_close,
	.bind = sse_ep_alias_bind,
	.control = sse_ep_alias_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

/*
 * FI_ALIAS: flags name the direction (FI_TRANSMIT and/or FI_RECV) and the
 * op flags the alias's calls in that direction carry (others keep the
 * endpoint's).  Lock held.
 */
static int __sse_ep_alias(struct sse_ep *ep, struct fi_alias *alias)
{
	uint64_t dir = FI_TRANSMIT | FI_RECV, of;
	struct sse_ep_alias *a;

	if (!alias || !alias->fid)
		return -FI_EINVAL;
	of = alias->flags & ~dir;
	if (!(alias->flags & dir))
		return -FI_EINVAL;
	if (((alias->flags & FI_TRANSMIT) &&
	     !sse_ep_op_flags_ok(ep, of | FI_TRANSMIT)) ||
	    ((alias->flags & FI_RECV) &&
	     !sse_ep_op_flags_ok(ep, of | FI_RECV))) {
		SSE_EP_WARN(ep, "fi_ep_alias: op flags 0x%llx not supported (FI_TRIGGER needs the capability)\n",
			    (unsigned long long)of);
		return -FI_EINVAL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->ep = ep;
	a->ep_fid = ep->ep_fid;
	a->ep_fid.fid.ops = &sse_ep_alias_fi_ops;
	a->tx_op_flags = (alias->flags & FI_TRANSMIT) ? of : ep->tx_op_flags;
	a->rx_op_flags = (alias->flags & FI_RECV) ? of : ep->rx_op_flags;
	ep->aliases++;
	*alias->fid = &a->ep_fid.fid;
	return 0;
}

static int sse_ep_control(struct fid *fid, int command, void *arg)
{
	struct sse_ep *ep = container_of(fid, struct sse_ep, ep_fid.fid);
	uint64_t *flags = arg;
	int ret = 0;

	pthread_mutex_lock(&ep->domain->lock);
	switch (command) {
	case FI_ENABLE:
		if (!ep->av) {
			ret = -FI_ENOAV;
		} else if (!ep->tx_cq && !ep->rx_cq && !ep->send_cntr &&
			   !ep->recv_cntr && !ep->read_cntr &&
			   !ep->write_cntr) {
			ret = -FI_ENOCQ;
		} else {
			ep->enabled = true;
		}
		break;
	case FI_ALIAS:
		ret = __sse_ep_alias(ep, arg);
		break;
	case FI_GETOPSFLAG:
		if (!flags || !(*flags & (FI_TRANSMIT | FI_RECV)) ||
		    (*flags & FI_TRANSMIT && *flags & FI_RECV)) {
			ret = -FI_EINVAL;
			break;
		}
		*flags = (*flags & FI_TRANSMIT) ? ep->tx_op_flags :
						  ep->rx_op_flags;
		break;
	case FI_SETOPSFLAG:
		if (!flags || !(*flags & (FI_TRANSMIT | FI_RECV)) ||
		    (*flags & FI_TRANSMIT && *flags & FI_RECV)) {
			ret = -FI_EINVAL;
		} else if (!sse_ep_op_flags_ok(ep, *flags)) {
			ret = -FI_EINVAL;
		} else if (*flags & FI_TRANSMIT) {
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		} else {
			ep->rx_op_flags = *flags & ~FI_RECV;
		}
		break;
	default:
		ret = -FI_ENOSYS;
		break;
	}
	pthread_mutex_unlock(&ep->domain->lock);
	return ret;
}

static struct fi_ops sse_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_ep_close,
	.bind = sse_ep_bind,
	.control = sse_ep_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

/* fi_cancel: an unmatched receive completes with FI_ECANCELED. */
static ssize_t sse_ep_cancel(fid_t fid, void *context)
{
	struct sse_ep *ep = sse_ep_of(container_of(fid, struct fid_ep, fid));
	struct sse_rx *rx;
	int q;

	if (fid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->domain->lock);
	for (q = 0; q < 2; q++) {
		sse_dlist_foreach(&ep->rx_posted[q], rx, struct sse_rx, entry) {
			if (rx->context == context)
				goto found;
		}
	}
	/* a triggered operation that has not run yet */
	if (!__sse_trigger_cancel(ep, context)) {
		pthread_mutex_unlock(&ep->domain->lock);
		return 0;
	}
	pthread_mutex_unlock(&ep->domain->lock);
	return -FI_ENOENT;
found:
	sse_dlist_remove(&rx->entry);
	rx->posted = false;
	if ((rx->flags & FI_MULTI_RECV) && rx->mr_pending) {
		/* Messages still land in it: the last one releases it. */
		rx->mr_released = true;
	} else {
		uint64_t flags = FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG) |
				 (rx->flags & FI_MULTI_RECV);

		if (ep->rx_cq)
			__sse_cq_write_err(ep->rx_cq, &(struct fi_cq_err_entry){
				.op_context = rx->context, .flags = flags,
				.tag = rx->tag, .err = FI_ECANCELED,
				.prov_errno = FI_ECANCELED,
			});
		sse_cntr_inc_err(ep->recv_cntr);
		__sse_rx_free(ep, rx);
	}
	pthread_mutex_unlock(&ep->domain->lock);
	return 0;
}

static int sse_ep_getopt(fid_t fid, int level, int optname, void *optval,
			 size_t *optlen)
{
	struct sse_ep *ep = sse_ep_of(container_of(fid, struct fid_ep, fid));

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen)
		return -FI_EINVAL;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	case FI_OPT_SSE_TCLASS:
		if (*optlen < sizeof(uint32_t))
			return -FI_ETOOSMALL;
		*(uint32_t *)optval = ep->tclass;
		*optlen = sizeof(uint32_t);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static int sse_ep_setopt(fid_t fid, int level, int optname,
			 const void *optval, size_t optlen)
{
	struct sse_ep *ep = sse_ep_of(container_of(fid, struct fid_ep, fid));
	uint32_t tc, emu_tc;
	int ret;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (!optval)
		return -FI_EINVAL;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (optlen != sizeof(size_t))
			return -FI_EINVAL;
		pthread_mutex_lock(&ep->domain->lock);
		ep->min_multi_recv = *(const size_t *)optval;
		pthread_mutex_unlock(&ep->domain->lock);
		return 0;
	case FI_OPT_SSE_TCLASS:
		if (optlen != sizeof(uint32_t))
			return -FI_EINVAL;
		tc = *(const uint32_t *)optval;
		ret = sse_tclass_resolve(ep->domain->emu->cfg,
					 tc ? tc : ep->domain->tclass, &emu_tc);
		if (ret)
			return ret;
		pthread_mutex_lock(&ep->domain->lock);
		ep->tclass = tc;
		ep->emu_tclass = emu_tc;
		pthread_mutex_unlock(&ep->domain->lock);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static ssize_t sse_ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct sse_ep *ep = sse_ep_of(ep_fid);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	return ep->rx_count < ep->rx_size ? ep->rx_size - ep->rx_count : 0;
}

static ssize_t sse_ep_tx_size_left(struct fid_ep *ep_fid)
{
	struct sse_ep *ep = sse_ep_of(ep_fid);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	return ep->tx_count < ep->tx_size ? ep->tx_size - ep->tx_count : 0;
}

static struct fi_ops_ep sse_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = sse_ep_cancel,
	.getopt = sse_ep_getopt,
	.setopt = sse_ep_setopt,
	.tx_ctx = sse_no_tx_ctx,
	.rx_ctx = sse_no_rx_ctx,
	.rx_size_left = sse_ep_rx_size_left,
	.tx_size_left = sse_ep_tx_size_left,
};

/* ------------------------------------------------------------------ */
/* Connection management: only getname makes sense for RDM.            */
/* ------------------------------------------------------------------ */

static int sse_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct sse_ep *ep = sse_ep_of(container_of(fid, struct fid_ep, fid));
	struct fi_sse_addr a = { .fabric_id = ep->fabric_id,
				 .addr = ep->addr };
	size_t have;

	if (!addrlen)
		return -FI_EINVAL;
	have = *addrlen;
	*addrlen = sizeof(a);
	if (have < sizeof(a))
		return -FI_ETOOSMALL;
	if (!addr)
		return -FI_EINVAL;
	memcpy(addr, &a, sizeof(a));
	return 0;
}

static int sse_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int sse_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int sse_no_connect(struct fid_ep *ep, const void *addr,
			  const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int sse_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int sse_no_accept(struct fid_ep *ep, const void *param,
			 size_t paramlen)
{
	return -FI_ENOSYS;
}

static int sse_no_reject(struct fid_pep *pep, fid_t handle,
			 const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int sse_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int sse_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		       struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_cm sse_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = sse_no_setname,
	.getname = sse_ep_getname,
	.getpeer = sse_no_getpeer,
	.connect = sse_no_connect,
	.listen = sse_no_listen,
	.accept = sse_no_accept,
	.reject = sse_no_reject,
	.shutdown = sse_no_shutdown,
	.join = sse_no_join,
};

/* ------------------------------------------------------------------ */

/*
 * A source address naming a service (fi_getinfo with FI_SOURCE and a
 * service) binds that service to the new endpoint in the fabric's
 * directory, until the endpoint closes or its process dies.
 */
static int sse_ep_bind_service(struct sse_ep *ep, const struct fi_info *info)
{
	struct ssemu_svc_info holder;
	struct fi_sse_addr a;
	char name[SSEMU_SVC_NAME_MAX + 8];
	int ret;

	if (!info->src_addr || info->src_addrlen != sizeof(a))
		return 0;
	memcpy(&a, info->src_addr, sizeof(a));
	if (!FI_SSE_ADDR_IS_SVC(&a))
		return 0;
	if (a.fabric_id != ep->fabric_id) {
		SSE_EP_WARN(ep, "fi_endpoint: source address is a service of fabric %08x, not of this one (%08x)\n",
			    a.fabric_id, ep->fabric_id);
		return -FI_EINVAL;
	}
	sse_svc_name(FI_SSE_ADDR_SVC_KEY(&a), name, sizeof(name));
	ret = ssemu_svc_bind(ep->emu, name, &holder);
	if (ret == -EADDRINUSE) {
		SSE_EP_WARN(ep, "fi_endpoint: service \"%s\" is already bound%s to endpoint %u:%u of process %d: one endpoint per service\n",
			    name, strcmp(name, holder.name) ?
			    " (a name with the same key)" : "",
			    SSEMU_ADDR_PORT(holder.addr),
			    SSEMU_ADDR_PID(holder.addr), holder.pid);
		return -FI_EADDRINUSE;
	}
	if (ret) {
		SSE_EP_WARN(ep, "fi_endpoint: cannot bind service \"%s\": %s\n",
			    name, ret == -ENOSPC ?
			    "the fabric's service directory is full" :
			    strerror(-ret));
		return ret == -ENOSPC ? -FI_ENOSPC : -FI_EINVAL;
	}
	SSE_EP_INFO(ep, "service \"%s\" bound to this endpoint\n", name);
	return 0;
}

int sse_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **epp, void *context)
{
	struct sse_domain *dom = sse_dom(domain);
	struct sse_ep *ep;
	enum fi_ep_type type;
	uint64_t caps;
	uint32_t tc;
	int ret, q;

	if (!info || !epp)
		return -FI_EINVAL;
	type = info->ep_attr && info->ep_attr->type != FI_EP_UNSPEC ?
	       info->ep_attr->type : FI_EP_RDM;
	if (type != FI_EP_RDM && type != FI_EP_DGRAM)
		return -FI_EINVAL;
	caps = type == FI_EP_DGRAM ? SSE_DGRAM_CAPS : SSE_CAPS;
	if (info->caps & ~caps) {
		SSE_DOM_WARN(dom, "fi_endpoint: unsupported caps 0x%llx\n",
			     (unsigned long long)(info->caps & ~caps));
		return -FI_EINVAL;
	}
	if (type == FI_EP_DGRAM && info->ep_attr &&
	    info->ep_attr->max_msg_size > sse_env.eager_max)
		return -FI_EINVAL;
	if (info->tx_attr && ((info->tx_attr->op_flags & ~SSE_TX_OP_FLAGS) ||
			      info->tx_attr->iov_limit > SSE_IOV_LIMIT ||
			      info->tx_attr->inject_size > SSE_INJECT_SIZE))
		return -FI_EINVAL;
	if (info->rx_attr && ((info->rx_attr->op_flags & ~SSE_RX_OP_FLAGS) ||
			      info->rx_attr->iov_limit > SSE_IOV_LIMIT))
		return -FI_EINVAL;
	if (info->ep_attr && (info->ep_attr->tx_ctx_cnt > 1 ||
			      info->ep_attr->rx_ctx_cnt > 1))
		return -FI_EINVAL;

	tc = info->tx_attr && info->tx_attr->tclass ? info->tx_attr->tclass :
						      dom->tclass;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = dom;
	ep->type = type;
	/* FI_RMA_EVENT is opt-in: it costs every RMA a remote event. */
	ep->caps = info->caps ? info->caps :
		   caps & ~(FI_RMA_EVENT | FI_TRIGGER);
	ep->max_msg_size = type == FI_EP_DGRAM ? sse_env.eager_max :
						 SSE_MAX_MSG_SIZE;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->tx_size = info->tx_attr && info->tx_attr->size ?
		      info->tx_attr->size : sse_env.tx_size;
	ep->rx_size = info->rx_attr && info->rx_attr->size ?
		      info->rx_attr->size : sse_env.rx_size;
	ep->inject_size = info->tx_attr && info->tx_attr->inject_size ?
			  info->tx_attr->inject_size : SSE_INJECT_SIZE;
	ep->tx_iov_limit = info->tx_attr && info->tx_attr->iov_limit ?
			   info->tx_attr->iov_limit : SSE_IOV_LIMIT;
	ep->rx_iov_limit = info->rx_attr && info->rx_attr->iov_limit ?
			   info->rx_attr->iov_limit : SSE_IOV_LIMIT;
	ep->eager_max = sse_env.eager_max;
	ep->min_multi_recv = SSE_MIN_MULTI_RECV;
	ep->tclass = tc;
	ep->fabric_id = dom->emu->fabric_id;
	ret = sse_tclass_resolve(dom->emu->cfg, tc, &ep->emu_tclass);
	if (ret) {
		SSE_DOM_WARN(dom,
			     "fi_endpoint: traffic class 0x%x is not in the fabric's class table\n",
			     tc);
		goto err_free;
	}
	sse_dlist_init(&ep->tx_queue);
	sse_dlist_init(&ep->tx_rndv);
	sse_dlist_init(&ep->tx_all);
	for (q = 0; q < 2; q++) {
		sse_dlist_init(&ep->rx_posted[q]);
		sse_dlist_init(&ep->rx_unexp[q]);
	}
	sse_dlist_init(&ep->rx_claimed);
	sse_dlist_init(&ep->rx_active);
	sse_dlist_init(&ep->rx_reads);
	sse_dlist_init(&ep->rma_queue);
	sse_dlist_init(&ep->rma_all);
	sse_dlist_init(&ep->trigs);
	sse_dlist_init(&ep->rma_pieces);
	sse_ep_pools_init(ep);

	pthread_mutex_lock(&dom->lock);
	ret = sse_auth_ep_open(ep, info);
	if (ret) {
		pthread_mutex_unlock(&dom->lock);
		SSE_DOM_WARN(dom, "fi_endpoint: %s%s\n",
			     ret == -ENOSPC ? "no endpoint left on the NIC "
			     "(resources.eps_per_nic, resources.max_eps of the "
			     "fabric configuration): " : "", strerror(-ret));
		ret = ret == -ENOSPC ? -FI_ENOSPC :
		      ret == -EACCES ? -FI_EACCES : -FI_EINVAL;
		goto err_free;
	}
	ep->addr = ssemu_ep_addr(ep->emu);
	ep->max_frag = ssemu_ep_max_msg(ep->emu);
	ret = sse_ep_bind_service(ep, info);
	if (ret) {
		ssemu_ep_close(ep->emu);
		pthread_mutex_unlock(&dom->lock);
		goto err_free;
	}
	sse_dlist_insert_tail(&ep->entry, &dom->eps);
	pthread_mutex_unlock(&dom->lock);

	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &sse_ep_fi_ops;
	ep->ep_fid.ops = &sse_ep_ops;
	ep->ep_fid.cm = &sse_cm_ops;
	ep->ep_fid.msg = &sse_msg_ops;
	ep->ep_fid.rma = &sse_rma_ops;
	ep->ep_fid.tagged = &sse_tagged_ops;
	ep->ep_fid.atomic = &sse_atomic_ops;
	ep->ep_fid.collective = &sse_no_coll_ops;
	sse_domain_ref(dom, 1);
	*epp = &ep->ep_fid;
	SSE_EP_INFO(ep, "endpoint open (max piece %zu bytes, class %u)\n",
		    ep->max_frag, ep->emu_tclass);
	return 0;

err_free:
	free(ep);
	return ret;
}
