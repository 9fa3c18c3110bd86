/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What tools and tests read of a fabric: its counters, its processes and
 * NICs, its jobs, its busy switch ports, the switch latency histogram,
 * whether a peer endpoint is open, and a NIC's and an endpoint's own
 * facts (port, address, largest message).  Read without the fabric lock, as
 * snapshots (each value is one the model held, the set of them may span
 * a few events).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ssemu_priv.h"

int ssemu_ep_peer_alive(struct ssemu_ep *ep, ssemu_addr_t peer)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;
	uint32_t port = SSEMU_ADDR_PORT(peer), pid = SSEMU_ADDR_PID(peer);
	uint32_t slot, epi;

	if (!ep || ssemu_fab_check(ep->nic->fab))
		return 0;
	r = ep->nic->fab->r;
	if (port >= r->topo.nendpoints || pid >= r->config.eps_per_nic)
		return 0;
	slot = ssemu_load_relaxed(&ssemu_r_portmap(r)[port]);
	if (slot >= r->config.max_nics)
		return 0;
	n = ssemu_r_nic(r, slot);
	epi = ssemu_load_relaxed(&ssemu_r_nic_eps(r, slot)[pid]);
	if (ssemu_load_relaxed(&n->state) != SSEMU_NIC_ATTACHED ||
	    epi >= r->neps || !ssemu_load_relaxed(&ssemu_r_ep(r, epi)->open))
		return 0;
	/* a dead owner's NIC is detached by the liveness check every engine
	 * runner makes (every 20 ms): no /proc read per call here */
	return 1;
}

int ssemu_fabric_stats(struct ssemu_fabric *f, struct ssemu_fabric_stats *st)
{
	struct ssemu_region *r;

	if (!f || !st)
		return -EINVAL;
	r = f->r;
	memset(st, 0, sizeof(*st));
	st->now = ssemu_r_now(r);
	st->events = ssemu_r_engine(r)->executed;
	st->pkts_delivered = r->pkts_delivered;
	st->pkt_hops = r->pkt_hops;
	st->train_hops = r->train_hops;
	st->switch_lat_sum = r->switch_lat_sum;
	st->nics_attached = r->nnics;
	st->switches_instantiated = r->sw_used;
	st->msgs_unreachable = r->msgs_unreachable;
	st->msgs_discarded = r->msgs_discarded;
	st->crc_errors = ssemu_load_relaxed(&r->crc_errors);
	return 0;
}

int ssemu_fabric_switch_latency(struct ssemu_fabric *f,
				struct ssemu_latency *lat)
{
	const uint64_t *h;
	uint64_t n = 0, acc = 0;
	bool have_p50 = false;
	uint32_t i;

	if (!f || !lat)
		return -EINVAL;
	h = f->r->swlat_hist;
	memset(lat, 0, sizeof(*lat));
	for (i = 0; i < SSEMU_SWLAT_BINS; i++) {
		n += h[i];
		if (h[i])
			lat->max_ns = i;
	}
	lat->count = n;
	if (!n)
		return 0;
	lat->mean_ns = (double)f->r->switch_lat_sum / n / SSEMU_PS_PER_NS;
	for (i = 0; i < SSEMU_SWLAT_BINS; i++) {
		acc += h[i];
		if (!have_p50 && acc * 2 >= n) {
			lat->p50_ns = i;
			have_p50 = true;
		}
		if (acc * 100 >= n * 99) {
			lat->p99_ns = i;
			break;
		}
	}
	return 0;
}

int ssemu_fabric_info(struct ssemu_fabric *f, struct ssemu_fabric_info *info)
{
	struct ssemu_region *r;

	if (!f || !info)
		return -EINVAL;
	r = f->r;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s",
		 f->shm_name[0] ? f->shm_name + 1 : "");
	info->size = f->map_size;
	info->owner_uid = r->owner_uid;
	info->nprocs = ssemu_procs_live(r);
	info->nnics = r->nnics;
	info->clock = r->config.clock;
	info->dilation = r->config.dilation;
	info->now = ssemu_load_relaxed(&ssemu_r_engine(r)->now);
	info->lag_ps = ssemu_load_relaxed(&r->lag_ps);
	info->pkts_in_flight = ssemu_load_relaxed(&r->pkts_used);
	info->crc_errors = ssemu_load_relaxed(&r->crc_errors);
	info->shm_mode = r->shm_mode;
	info->shm_gid = r->shm_gid;
	info->rma_parked = ssemu_load_relaxed(&r->nparked);
	return 0;
}

int ssemu_fabric_nics(struct ssemu_fabric *f, struct ssemu_nic_info *out,
		      int max)
{
	struct ssemu_region *r;
	uint32_t i, e;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	for (i = 0; i < r->config.max_nics && n < max; i++) {
		struct ssemu_nic_sh *nic = ssemu_r_nic(r, i);
		struct ssemu_nic_info *o = &out[n];

		if (ssemu_load_relaxed(&nic->state) != SSEMU_NIC_ATTACHED)
			continue;
		memset(o, 0, sizeof(*o));
		o->port = nic->port;
		o->pid = nic->owner_pid;
		o->uid = nic->owner_uid;
		o->job = nic->job;
		o->rank = nic->rank;
		o->alive = ssemu_pid_alive(nic->owner_pid);
		for (e = 0; e < r->config.eps_per_nic; e++)
			o->eps_open += ssemu_r_nic_eps(r, i)[e] < r->neps;
		o->stats = nic->stats;
		n++;
	}
	return n;
}

int ssemu_fabric_jobs(struct ssemu_fabric *f, struct ssemu_job_info *out,
		      int max)
{
	struct ssemu_region *r;
	uint32_t slot, v, *resv;
	uint64_t p;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	resv = ssemu_r_resv(r);
	/* read without the lock, as the NIC list is: a snapshot for tools */
	for (slot = 0; slot < SSEMU_MAX_JOBS && n < max; slot++) {
		const struct ssemu_job_sh *j = &r->jobs[slot];
		struct ssemu_job_info *o = &out[n];

		if (!ssemu_load_relaxed(&j->active))
			continue;
		memset(o, 0, sizeof(*o));
		o->job = j->id;
		o->nranks = j->nranks;
		o->policy = j->policy;
		o->nics = j->nics;
		o->rank0_port = SSEMU_NONE;
		for (p = 0; p < r->topo.nendpoints; p++) {
			v = ssemu_load_relaxed(&resv[p]);
			if (v == SSEMU_NONE || SSEMU_RESV_SLOT(v) != slot)
				continue;
			o->ports++;
			if (v == SSEMU_RESV(slot, 0))
				o->rank0_port = (uint32_t)p;
		}
		n++;
	}
	return n;
}

int ssemu_fabric_ports(struct ssemu_fabric *f, struct ssemu_port_info *out,
		       int max)
{
	struct ssemu_region *r;
	uint32_t i, p, tc, used;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	used = SSEMU_MIN(ssemu_load_relaxed(&r->sw_used),
			 r->config.max_switches);
	for (i = 0; i < used && n < max; i++) {
		struct ssemu_switch_sh *s = ssemu_r_switch(r, i);

		for (p = 0; p < r->topo.radix && n < max; p++) {
			struct ssemu_swport *sp = ssemu_sw_port(r, s, p);
			struct ssemu_port_info *o = &out[n];
			uint64_t any = sp->drops;

			for (tc = 0; tc < r->config.ntclass; tc++)
				any += sp->cls[tc].pkts + sp->queued_tc[tc];
			if (!any)
				continue;
			memset(o, 0, sizeof(*o));
			o->sw = s->sw;
			o->port = p;
			o->kind = ssemu_topo_port_kind(&r->topo, p);
			for (tc = 0; tc < r->config.ntclass; tc++) {
				o->tx_pkts[tc] = sp->cls[tc].pkts;
				o->tx_bytes[tc] = sp->cls[tc].bytes;
				o->queued[tc] = sp->queued_tc[tc];
			}
			o->drops = sp->drops;
			n++;
		}
	}
	return n;
}

/* A NIC's and an endpoint's own facts. */
/* (this process's copies, set at attach and open: the segment's need
 * not be read, nor trusted) */
uint32_t ssemu_nic_port(struct ssemu_nic *nic)
{
	return nic->port;
}

int ssemu_nic_stats(struct ssemu_nic *nic, struct ssemu_nic_stats *st)
{
	if (!nic || !st)
		return -EINVAL;
	if (ssemu_fab_check(nic->fab))
		return -EIO;
	*st = ssemu_r_nic(nic->fab->r, nic->slot)->stats;
	return 0;
}

SSEMU_HOT
ssemu_addr_t ssemu_ep_addr(struct ssemu_ep *ep)
{
	return ep->addr;
}

uint32_t ssemu_ep_slot(struct ssemu_ep *ep)
{
	return ep->index;
}

struct ssemu_fabric *ssemu_ep_fabric(struct ssemu_ep *ep)
{
	return ep->nic->fab;
}

SSEMU_HOT
size_t ssemu_ep_max_msg(struct ssemu_ep *ep)
{
	const struct ssemu_config *c = ep->nic->fab->cfg;

	return c->bufs_per_ep ? c->buf_size : SSEMU_INLINE_MAX;
}
