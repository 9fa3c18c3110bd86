/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Jobs and their port reservations, under the fabric lock: the first rank
 * of a job placed by policy reserves a port for each of its ranks (the
 * policies themselves are ssemu_place.c's pure functions); each rank that
 * attaches takes its reserved port; the reservation ends when the job's
 * last NIC detaches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssemu_priv.h"

/* End the reservation of job @slot. */
static void job_release_locked(struct ssemu_region *r, uint32_t slot)
{
	uint32_t *resv = ssemu_r_resv(r);
	uint64_t p;

	for (p = 0; p < r->topo.nendpoints; p++)
		if (resv[p] != SSEMU_NONE && SSEMU_RESV_SLOT(resv[p]) == slot)
			resv[p] = SSEMU_NONE;
	ssemu_log(SSEMU_LOG_INFO, "job %u: last NIC detached, its ports "
		  "are free again", r->jobs[slot].id);
	memset(&r->jobs[slot], 0, sizeof(r->jobs[slot]));
}

/* A NIC of job @slot detached (or its process died). */
void ssemu_job_nic_gone_locked(struct ssemu_region *r, uint32_t slot)
{
	struct ssemu_job_sh *j;

	if (slot >= SSEMU_MAX_JOBS)
		return;
	j = &r->jobs[slot];
	if (j->active && j->nics && --j->nics == 0)
		job_release_locked(r, slot);
}

/*
 * After a process died holding the lock: a job it was placing may be left
 * active with no NIC, or ports reserved for a slot that never became
 * active.  Outside the lock neither state exists, so both are garbage.
 */
void ssemu_jobs_sweep_locked(struct ssemu_region *r)
{
	uint32_t *resv = ssemu_r_resv(r), slot, nics[SSEMU_MAX_JOBS] = { 0 };
	uint32_t i;
	uint64_t p;

	for (i = 0; i < r->config.max_nics; i++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, i);

		if (n->state == SSEMU_NIC_ATTACHED &&
		    n->jobslot < SSEMU_MAX_JOBS)
			nics[n->jobslot]++;
	}
	for (slot = 0; slot < SSEMU_MAX_JOBS; slot++) {
		r->jobs[slot].nics = nics[slot];
		if (r->jobs[slot].active && !nics[slot])
			job_release_locked(r, slot);
	}
	for (p = 0; p < r->topo.nendpoints; p++) {
		slot = resv[p] == SSEMU_NONE ? 0 : SSEMU_RESV_SLOT(resv[p]);
		if (resv[p] != SSEMU_NONE &&
		    (slot >= SSEMU_MAX_JOBS || !r->jobs[slot].active))
			resv[p] = SSEMU_NONE;
	}
}

/* Neither taken by a NIC nor reserved for a job. */
bool ssemu_port_usable(void *arg, uint32_t port)
{
	struct ssemu_region *r = arg;

	return ssemu_r_portmap(r)[port] == SSEMU_NONE &&
	       ssemu_r_resv(r)[port] == SSEMU_NONE;
}

/* Reserve ports for every rank of job @o->job in free job slot @slot
 * (a failure is explained in @why). */
static int job_reserve_locked(struct ssemu_region *r, uint32_t slot,
			      const struct ssemu_nic_opts *o, char *why,
			      size_t whylen)
{
	struct ssemu_place_req q = {
		.topo = &r->topo, .policy = o->policy, .nranks = o->nranks,
		.seed = o->seed, .map = o->map, .usable = ssemu_port_usable, .arg = r,
	};
	struct ssemu_job_sh *j = &r->jobs[slot];
	uint32_t *ports, i;
	char err[200];
	int ret;

	ports = malloc((size_t)o->nranks * sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	ret = ssemu_place_choose(&q, ports, err, sizeof(err));
	if (ret < 0) {
		snprintf(why, whylen, "job %u (%u ranks, placement %s): %s",
			 o->job, o->nranks, ssemu_place_policy_name(o->policy),
			 err[0] ? err : strerror(-ret));
		free(ports);
		return ret;
	}
	if (ret == 1)
		ssemu_log(SSEMU_LOG_WARN, "job %u: no block of %u "
			  "consecutive free ports is left: linear placement "
			  "takes the lowest free ports instead", o->job,
			  o->nranks);
	for (i = 0; i < o->nranks; i++)
		ssemu_r_resv(r)[ports[i]] = SSEMU_RESV(slot, i);
	j->id = o->job;
	j->active = 1;
	j->nranks = o->nranks;
	j->policy = o->policy;
	j->nics = 0;
	ssemu_log(SSEMU_LOG_INFO, "job %u: %u ports reserved by %s placement "
		  "(rank 0 at port %u)", o->job, o->nranks,
		  ssemu_place_policy_name(o->policy), ports[0]);
	free(ports);
	return 0;
}

/*
 * The port of rank @o->rank of job @o->job, reserving ports for the whole
 * job when it is the job's first rank here.  @return 0 with the port and
 * the job slot, or a negative errno (explained in @why).
 */
int ssemu_place_locked(struct ssemu_region *r,
		       const struct ssemu_nic_opts *o, uint32_t *portp,
		       uint32_t *slotp, char *why, size_t whylen)
{
	uint32_t slot, free_slot = SSEMU_NONE, want, *resv = ssemu_r_resv(r);
	struct ssemu_job_sh *j;
	uint64_t p;
	int ret;

	if (o->policy >= SSEMU_PLACE_COUNT) {
		snprintf(why, whylen, "job %u: unknown placement policy %u",
			 o->job, o->policy);
		return -EINVAL;
	}
	if ((uint32_t)o->rank >= o->nranks) {
		snprintf(why, whylen, "job %u: rank %d is not below the job "
			 "size %u", o->job, o->rank, o->nranks);
		return -EINVAL;
	}
	if (o->nranks > r->config.max_nics ||
	    o->nranks > SSEMU_RESV_MAX_RANKS) {
		snprintf(why, whylen, "job %u: %u ranks, but the fabric "
			 "attaches at most %u NICs (resources.max_nics)",
			 o->job, o->nranks, r->config.max_nics);
		return -ENOSPC;
	}
	for (slot = 0; slot < SSEMU_MAX_JOBS; slot++) {
		if (!r->jobs[slot].active) {
			if (free_slot == SSEMU_NONE)
				free_slot = slot;
		} else if (r->jobs[slot].id == o->job) {
			break;
		}
	}
	if (slot < SSEMU_MAX_JOBS) {
		j = &r->jobs[slot];
		if (j->nranks != o->nranks || j->policy != o->policy) {
			snprintf(why, whylen, "job %u rank %d asks for %u "
				 "ranks placed %s; the job was placed as %u "
				 "ranks %s", o->job, o->rank, o->nranks,
				 ssemu_place_policy_name(o->policy),
				 j->nranks,
				 ssemu_place_policy_name(j->policy));
			return -EINVAL;
		}
	} else if (free_slot == SSEMU_NONE) {
		snprintf(why, whylen, "job %u: %d jobs are placed on the "
			 "fabric already, no more", o->job, SSEMU_MAX_JOBS);
		return -ENOSPC;
	} else {
		slot = free_slot;
		ret = job_reserve_locked(r, slot, o, why, whylen);
		if (ret)
			return ret;
	}
	want = SSEMU_RESV(slot, o->rank);
	for (p = 0; p < r->topo.nendpoints; p++)
		if (resv[p] == want)
			break;
	if (p == r->topo.nendpoints) {
		snprintf(why, whylen, "job %u: rank %d has no reserved port "
			 "(corrupt reservation table)", o->job, o->rank);
		return -EPROTO;
	}
	if (ssemu_r_portmap(r)[p] != SSEMU_NONE) {
		snprintf(why, whylen, "job %u: rank %d is attached already "
			 "(port %llu, pid %d)", o->job, o->rank,
			 (unsigned long long)p,
			 ssemu_r_nic(r, ssemu_r_portmap(r)[p] %
					r->config.max_nics)->owner_pid);
		if (!r->jobs[slot].nics)
			job_release_locked(r, slot);
		return -EADDRINUSE;
	}
	*portp = (uint32_t)p;
	*slotp = slot;
	return 0;
}
