/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NICs and endpoints: attach and detach a NIC (a slot, a port, maybe a
 * job's reserved port), open an endpoint (a pid of its NIC and a slot of
 * the fabric's pool), and the reaper that detaches what processes that
 * died while attached held.
 *
 * Every claim that a dead process may hold up goes through
 * claim_reaping_locked; the repair after a process died holding the lock
 * (ssemu_repair_locked, which ssemu_lock.c runs) ends with the same reaper.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ssemu_priv.h"

/* Close pid @pid of NIC @nic if it is open: its endpoint slot goes back to
 * the pool (its messages in flight stay the NIC's until done). */
void ssemu_ep_close_locked(struct ssemu_region *r, uint32_t nic, uint32_t pid)
{
	uint32_t *tab = ssemu_r_nic_eps(r, nic), epi = tab[pid];

	if (epi >= r->neps)
		return;
	if (ssemu_r_ep(r, epi)->open) {
		ssemu_svc_ep_closed_locked(r, epi);
		ssemu_model_ep_close(r, epi);
	}
	/* (relaxed: ssemu_nic_wait and ssemu_ep_peer_alive read it
	 * without the lock) */
	ssemu_store_relaxed(&tab[pid], SSEMU_NONE);
}

static void nic_detach_locked(struct ssemu_region *r, uint32_t slot)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, slot);
	uint32_t e;

	if (n->state != SSEMU_NIC_ATTACHED)
		return;
	for (e = 0; e < r->config.eps_per_nic; e++)
		ssemu_ep_close_locked(r, slot, e);
	ssemu_model_nic_reset(r, slot);
	ssemu_gen_recount(r);	/* what the reset dropped */
	if (n->port < r->topo.nendpoints)
		ssemu_r_portmap(r)[n->port] = SSEMU_NONE;
	ssemu_job_nic_gone_locked(r, n->jobslot);
	n->jobslot = SSEMU_NONE;
	n->state = SSEMU_NIC_FREE;
	if (slot < r->nic_hint)
		r->nic_hint = slot;
	n->owner_pid = 0;
	r->nnics--;
}

/* What ssemu_nic_attach claims: a NIC slot, a port and a job slot. */
struct nic_claim {
	const struct ssemu_nic_opts *o;
	uint32_t slot, port, jobslot;
	char why[256];		/* why the claim failed */
};


/*
 * What one sweep of the reaper knows of the pids it asked about: each
 * distinct pid is asked once (ssemu_pid_alive reads its /proc entry), a
 * process's NICs usually one after another (last), and this process's own
 * pid not at all.  Past SSEMU_MAX_PROCS distinct pids (only NICs whose
 * owner holds no process slot) the rest are asked every time.
 */
struct pid_verdicts {
	int32_t self;
	uint32_t n, last;
	int32_t pid[SSEMU_MAX_PROCS];
	bool alive[SSEMU_MAX_PROCS];
};

static bool verdict_alive(struct pid_verdicts *v, int32_t pid)
{
	uint32_t i;
	bool alive;

	if (pid == v->self)
		return true;
	if (v->n && v->pid[v->last] == pid)
		return v->alive[v->last];
	for (i = 0; i < v->n; i++) {
		if (v->pid[i] == pid) {
			v->last = i;
			return v->alive[i];
		}
	}
	alive = ssemu_pid_alive(pid);
	if (v->n < SSEMU_MAX_PROCS) {
		v->pid[v->n] = pid;
		v->alive[v->n] = alive;
		v->last = v->n++;
	}
	return alive;
}

/*
 * Detach every NIC and free every process slot of processes that are gone
 * (with a NIC go its endpoints, memory regions, packets and its job's
 * reservation once the job has no NIC left).
 * @return how many NICs and process slots it freed.
 */
unsigned ssemu_reap_dead_locked(struct ssemu_region *r)
{
	struct pid_verdicts v = { .self = getpid() };
	unsigned freed = 0;
	uint32_t i;

	for (i = 0; i < r->config.max_nics; i++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, i);

		/* (a modelled job's NIC is the fabric's own) */
		if (n->state == SSEMU_NIC_ATTACHED && i >= r->gen_neps &&
		    !verdict_alive(&v, n->owner_pid)) {
			ssemu_log(SSEMU_LOG_WARN, "process %d died while "
				  "attached: detaching its NIC at port %u",
				  n->owner_pid, n->port);
			nic_detach_locked(r, i);
			freed++;
		}
	}
	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (r->procs[i] && !verdict_alive(&v, r->procs[i])) {
			r->procs[i] = 0;
			freed++;
		}
	}
	return freed;
}

/*
 * Every allocation that a dead process may hold up (process slots, NIC
 * slots, ports, job slots and port reservations) goes through here.
 * @claim takes what it needs under the lock, or fails with -ENOSPC or
 * -EADDRINUSE when nothing fits, leaving the region as it found it; then
 * what processes that died while attached held is freed and @claim runs
 * once more.  Liveness is checked only when something is short, so a busy
 * fabric pays for it only at the moment it matters.
 */
static int claim_reaping_locked(struct ssemu_region *r,
				int (*claim)(struct ssemu_region *r, void *arg),
				void *arg)
{
	int ret = claim(r, arg);

	if ((ret == -ENOSPC || ret == -EADDRINUSE) &&
	    ssemu_reap_dead_locked(r))
		ret = claim(r, arg);
	return ret;
}

int ssemu_proc_register_locked(struct ssemu_region *r)
{
	return claim_reaping_locked(r, ssemu_proc_claim_locked, NULL);
}

void ssemu_repair_locked(struct ssemu_region *r)
{
	if (ssemu_model_recover(r))
		ssemu_log(SSEMU_LOG_WARN, "out of memory while recovering: "
			  "traffic in flight may be lost");
	ssemu_reap_dead_locked(r);
	ssemu_jobs_sweep_locked(r);
	ssemu_gen_recount(r);
}

/* The first free NIC slot from @from on, or max_nics. */
static uint32_t nic_slot_free(struct ssemu_region *r, uint32_t from)
{
	uint32_t i;

	for (i = from; i < r->config.max_nics; i++)
		if (ssemu_r_nic(r, i)->state == SSEMU_NIC_FREE)
			break;
	return i;
}

/* A NIC slot and a port for @arg (struct nic_claim), or -ENOSPC,
 * -EADDRINUSE (worth another try once the dead are reaped) or another
 * error, explained in its why. */
static int nic_claim_locked(struct ssemu_region *r, void *arg)
{
	struct nic_claim *c = arg;
	const struct ssemu_nic_opts *o = c->o;
	uint32_t i, rv, port = o->port;
	uint64_t p;

	c->slot = c->jobslot = SSEMU_NONE;
	i = nic_slot_free(r, r->nic_hint < r->config.max_nics ? r->nic_hint :
								0);
	if (i == r->config.max_nics)
		i = nic_slot_free(r, 0);	/* (a hint gone wrong) */
	if (i == r->config.max_nics) {
		snprintf(c->why, sizeof(c->why), "all %u NIC slots of the "
			 "fabric are in use by live processes (the fabric "
			 "configuration's resources.max_nics)",
			 r->config.max_nics);
		return -ENOSPC;
	}
	c->slot = i;
	if (port == SSEMU_PORT_ANY && o->policy != SSEMU_PLACE_FIRST_FREE &&
	    o->rank >= 0 && o->nranks)
		return ssemu_place_locked(r, o, &c->port, &c->jobslot, c->why,
				    sizeof(c->why));
	if (port == SSEMU_PORT_ANY) {
		/* first free: neither taken nor reserved for a job */
		for (p = 0; p < r->topo.nendpoints; p++)
			if (ssemu_port_usable(r, (uint32_t)p))
				break;
		if (p == r->topo.nendpoints) {
			snprintf(c->why, sizeof(c->why), "no free port: all "
				 "%llu ports of the fabric are taken by live "
				 "processes' NICs or reserved for jobs",
				 (unsigned long long)r->topo.nendpoints);
			return -ENOSPC;
		}
		c->port = (uint32_t)p;
		return 0;
	}
	if (ssemu_r_portmap(r)[port] < r->gen_neps) {
		snprintf(c->why, sizeof(c->why), "port %u is taken by a "
			 "modelled job (the fabric configuration's "
			 "modelled_jobs)", port);
		return -EADDRINUSE;
	}
	if (ssemu_r_portmap(r)[port] != SSEMU_NONE) {
		snprintf(c->why, sizeof(c->why), "port %u is taken by the NIC "
			 "of process %d", port,
			 ssemu_r_nic(r, ssemu_r_portmap(r)[port] %
					r->config.max_nics)->owner_pid);
		return -EADDRINUSE;
	}
	/* reserved: only for that job's rank */
	rv = ssemu_r_resv(r)[port];
	if (rv != SSEMU_NONE) {
		if (SSEMU_RESV_SLOT(rv) >= SSEMU_MAX_JOBS ||
		    r->jobs[SSEMU_RESV_SLOT(rv)].id != o->job ||
		    rv != SSEMU_RESV(SSEMU_RESV_SLOT(rv), o->rank)) {
			snprintf(c->why, sizeof(c->why), "port %u is "
				 "reserved for rank %u of job %u", port,
				 rv & 0xffff,
				 SSEMU_RESV_SLOT(rv) < SSEMU_MAX_JOBS ?
				 r->jobs[SSEMU_RESV_SLOT(rv)].id : 0);
			return -EADDRINUSE;
		}
		c->jobslot = SSEMU_RESV_SLOT(rv);
	}
	c->port = port;
	return 0;
}

int ssemu_nic_attach(struct ssemu_fabric *f, const struct ssemu_nic_opts *o,
		     struct ssemu_nic **nicp)
{
	struct ssemu_region *r = f->r;
	struct ssemu_nic_opts defo = { .port = SSEMU_PORT_ANY, .rank = -1 };
	struct nic_claim c = { 0 };
	struct ssemu_nic_sh *n;
	struct ssemu_nic *nic;
	uint32_t slot, port, jobslot;
	int ret;

	if (!nicp)
		return -EINVAL;
	if (!o)
		o = &defo;
	ret = ssemu_fab_check(f);
	if (ret)
		return ret;
	if (o->port != SSEMU_PORT_ANY && o->port >= r->topo.nendpoints)
		return -EINVAL;
	if (o->policy >= SSEMU_PLACE_COUNT ||
	    (o->policy == SSEMU_PLACE_MAP && !o->map && o->nranks))
		return -EINVAL;
	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	ret = ssemu_region_lock(r);
	if (ret) {
		free(nic);
		return ret;
	}
	c.o = o;
	ret = claim_reaping_locked(r, nic_claim_locked, &c);
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "%s", c.why[0] ? c.why :
			  strerror(-ret));
		goto err_unlock;
	}
	slot = c.slot;
	port = c.port;
	jobslot = c.jobslot;
	n = ssemu_r_nic(r, slot);
	ssemu_model_nic_reset(r, slot);
	/* no stale window entries toward the new NIC either */
	ssemu_pair_reset_nic(r, slot, ssemu_r_now(r));
	n->owner_pid = getpid();
	n->owner_uid = (uint32_t)getuid();
	n->port = port;
	n->job = o->job;
	n->rank = o->rank;
	n->jobslot = jobslot;
	if (jobslot != SSEMU_NONE)
		r->jobs[jobslot].nics++;
	n->gen++;
	ssemu_tel_nic_attach(r, slot);
	n->state = SSEMU_NIC_ATTACHED;
	if (slot == r->nic_hint)
		r->nic_hint = slot + 1;
	ssemu_r_portmap(r)[port] = slot;
	r->nnics++;
	ssemu_region_unlock(r);
	nic->fab = f;
	nic->slot = slot;
	nic->port = port;
	*nicp = nic;
	return 0;

err_unlock:
	ssemu_region_unlock(r);
	free(nic);
	return ret;
}

void ssemu_nic_detach(struct ssemu_nic *nic)
{
	struct ssemu_region *r;

	if (!nic)
		return;
	r = nic->fab->r;
	if (!ssemu_region_lock(r)) {
		nic_detach_locked(r, nic->slot);
		ssemu_region_unlock(r);
	}
	free(nic);
}

/* ------------------------------------------------------------------ */
/* Endpoints                                                            */
/* ------------------------------------------------------------------ */

/* Is endpoint slot @epi free of messages (none in use or in flight)? */
static bool ep_slot_quiet(struct ssemu_region *r, uint32_t epi)
{
	uint32_t i, st, k = r->config.msgs_per_ep;

	for (i = epi * k; i < (epi + 1) * k; i++) {
		st = ssemu_load_acquire(ssemu_r_mstate(r, i));
		if (st && st != SSEMU_MSG_DONE)
			return false;
	}
	return true;
}

/*
 * A closed endpoint slot for NIC @nic, or SSEMU_NONE: one with no message
 * in use, or else one the NIC had before (its messages still in flight are
 * the NIC's own, and they keep their slots until they are done).
 */
static uint32_t ep_slot_scan(struct ssemu_region *r, uint32_t nic,
			     uint32_t from)
{
	uint32_t i, own = SSEMU_NONE;

	for (i = from; i < r->neps; i++) {
		struct ssemu_ep_sh *sh = ssemu_r_ep(r, i);

		if (sh->open)
			continue;
		if (ep_slot_quiet(r, i))
			return i;
		if (own == SSEMU_NONE && sh->nic == nic)
			own = i;
	}
	return own;
}

static uint32_t ep_slot_find(struct ssemu_region *r, uint32_t nic)
{
	/* every slot before the hint is open (a hint gone wrong only costs
	 * a second look) */
	uint32_t from = r->ep_hint < r->neps ? r->ep_hint : 0;
	uint32_t i = ep_slot_scan(r, nic, from);

	return i == SSEMU_NONE && from ? ep_slot_scan(r, nic, 0) : i;
}

/* What ssemu_ep_open claims: a pid of its NIC and an endpoint slot. */
struct ep_claim {
	uint32_t nic, pid, epi;
	char why[256];
};

static int ep_claim_locked(struct ssemu_region *r, void *arg)
{
	struct ep_claim *c = arg;
	uint32_t *tab = ssemu_r_nic_eps(r, c->nic), e;

	for (e = 0; e < r->config.eps_per_nic; e++)
		if (tab[e] == SSEMU_NONE)
			break;
	if (e == r->config.eps_per_nic) {
		snprintf(c->why, sizeof(c->why), "NIC at port %u: all %u of "
			 "its endpoints are open, the fabric's limit per NIC "
			 "(resources.eps_per_nic in the fabric configuration "
			 "raises it)", ssemu_r_nic(r, c->nic)->port,
			 r->config.eps_per_nic);
		return -ENOSPC;
	}
	c->pid = e;
	/* (slots of processes that died with endpoints open come back
	 * when claim_reaping_locked reaps them) */
	c->epi = ep_slot_find(r, c->nic);
	if (c->epi == SSEMU_NONE) {
		snprintf(c->why, sizeof(c->why), "NIC at port %u: all %u "
			 "endpoint slots of the fabric are in use by live "
			 "processes' NICs (resources.max_eps in the fabric "
			 "configuration raises it)",
			 ssemu_r_nic(r, c->nic)->port, r->neps);
		return -ENOSPC;
	}
	return 0;
}

/* Open an endpoint of @nic under service @id and VNI @vni. */
static int ep_open(struct ssemu_nic *nic, uint32_t id, uint32_t vni,
		   struct ssemu_ep **epp)
{
	struct ssemu_region *r = nic->fab->r;
	const struct ssemu_config *c = &r->config;
	struct ep_claim cl = { .nic = nic->slot };
	uint32_t e, epi;
	struct ssemu_ep_sh *sh;
	struct ssemu_ep *ep;
	int ret;

	if (!epp)
		return -EINVAL;
	/* the NIC accesses application memory under the fault guard */
	ssemu_guard_arm();
	ret = ssemu_fab_check(nic->fab);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	if (r->shm_mode) {
		ep->owed = calloc(c->msgs_per_ep, sizeof(*ep->owed));
		if (!ep->owed) {
			free(ep);
			return -ENOMEM;
		}
	}
	ret = ssemu_region_lock(r);
	if (ret) {
		ssemu_ep_free(ep);
		return ret;
	}
	ret = claim_reaping_locked(r, ep_claim_locked, &cl);
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "%s", cl.why);
		goto err_unlock;
	}
	e = cl.pid;
	epi = cl.epi;
	sh = ssemu_r_ep(r, epi);
	ret = ssemu_auth_ep_open_locked(r, sh, ep, id, vni);
	if (ret)
		goto err_unlock;
	ssemu_ring_init_tagged(ssemu_r_ring(r, sh->tx_ring_off),
			       c->msgs_per_ep);
	ssemu_ring_init(ssemu_r_ring(r, sh->ev_ring_off), r->config.ev_ring,
			sizeof(struct ssemu_event));
	sh->rx_head = sh->rx_tail = sh->tx_head = sh->tx_tail = SSEMU_NONE;
	sh->nic = nic->slot;
	sh->pid = e;
	/* (left by an endpoint never closed) */
	ssemu_ep_watch_set(r, sh, false);
	/* Message slots and buffers a previous owner left in flight stay
	 * taken until their traffic is done (ssemu_model_ep_close).
	 * Published last: eps_ready looks at it without the lock. */
	ssemu_store_relaxed(&ssemu_r_nic_eps(r, nic->slot)[e], epi);
	ssemu_store_release(&sh->open, 1);
	if (epi == r->ep_hint)
		r->ep_hint = epi + 1;
	ssemu_region_unlock(r);
	ep->nic = nic;
	ep->index = epi;
	ep->pid = e;
	ep->addr = SSEMU_ADDR(nic->port, e);
	ep->r = r;
	ep->ev_ring = ssemu_r_ring(r, sh->ev_ring_off);
	ep->tx_ring = ssemu_r_ring(r, ssemu_ep_tx_ring_off(r, epi));
	*epp = ep;
	return 0;

err_unlock:
	ssemu_region_unlock(r);
	ssemu_ep_free(ep);
	return ret;
}

int ssemu_ep_open(struct ssemu_nic *nic, struct ssemu_ep **epp)
{
	return ep_open(nic, SSEMU_SVC_ID_DEFAULT, SSEMU_VNI_DEFAULT, epp);
}

int ssemu_ep_open_auth(struct ssemu_nic *nic, uint32_t id, uint32_t vni,
		       struct ssemu_ep **ep)
{
	char why[128];
	int ret;

	if (!nic || !ep)
		return -EINVAL;
	ret = ssemu_auth_check(nic->fab, id, vni, why, sizeof(why));
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "endpoint refused: %s", why);
		return ret;
	}
	return ep_open(nic, id, vni, ep);
}


