/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Placement policies: which endpoint ports the ranks of a job get.  Pure
 * functions of the topology, the ports still usable and the policy's
 * parameters; the fabric calls them under its lock when a job's first rank
 * attaches and records the answer as the job's reservation
 * (ssemu_fabric.c).  The paper's three policies (linear, interleaved,
 * random) plus an explicit map.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssemu_priv.h"

/* Component id of the placement random stream ("PLACE"). */
#define PLACE_RNG_COMPONENT 0x504c414345ULL

static const char *const policy_names[SSEMU_PLACE_COUNT] = {
	[SSEMU_PLACE_FIRST_FREE] = "first-free",
	[SSEMU_PLACE_LINEAR] = "linear",
	[SSEMU_PLACE_INTERLEAVED] = "interleaved",
	[SSEMU_PLACE_RANDOM] = "random",
	[SSEMU_PLACE_MAP] = "map",
};

int ssemu_place_policy_index(const char *name)
{
	int i;

	for (i = 0; name && i < SSEMU_PLACE_COUNT; i++)
		if (!strcmp(name, policy_names[i]))
			return i;
	return -1;
}

const char *ssemu_place_policy_name(uint32_t policy)
{
	return policy < SSEMU_PLACE_COUNT ? policy_names[policy] : "?";
}

static bool bit_get(const uint64_t *b, uint64_t i)
{
	return b[i / 64] >> (i % 64) & 1;
}

static void bit_set(uint64_t *b, uint64_t i)
{
	b[i / 64] |= 1ULL << (i % 64);
}

/* Usable and not chosen yet for an earlier rank. */
static bool avail(const struct ssemu_place_req *q, const uint64_t *chosen,
		  uint64_t port)
{
	return !bit_get(chosen, port) && q->usable(q->arg, (uint32_t)port);
}

/* The lowest usable ports, in port order. */
static void place_lowest(const struct ssemu_place_req *q, uint32_t *out)
{
	uint64_t p;
	uint32_t r = 0;

	for (p = 0; p < q->topo->nendpoints && r < q->nranks; p++)
		if (q->usable(q->arg, (uint32_t)p))
			out[r++] = (uint32_t)p;
}

/* The lowest block of nranks consecutive usable ports; 1 if there is
 * none (fragmented) and the lowest usable ports were taken instead. */
static int place_linear(const struct ssemu_place_req *q, uint32_t *out)
{
	uint64_t p, run = 0;
	uint32_t r;

	for (p = 0; p < q->topo->nendpoints; p++) {
		run = q->usable(q->arg, (uint32_t)p) ? run + 1 : 0;
		if (run == q->nranks) {
			for (r = 0; r < q->nranks; r++)
				out[r] = (uint32_t)(p + 1 - q->nranks + r);
			return 0;
		}
	}
	place_lowest(q, out);
	return 1;
}

/*
 * Round robin over switches in an order that visits every group before
 * coming back to one (k-th switch visited: group k mod g, index k div g
 * in it), each rank taking the lowest usable port of the next switch that
 * has one: consecutive ranks land on different switches, and in different
 * groups while there are groups to spread over.
 */
static int place_interleaved(const struct ssemu_place_req *q,
			     uint64_t *chosen, uint32_t *out)
{
	const struct ssemu_topo *t = q->topo;
	uint32_t r, k = 0, tries, sw, i;
	uint64_t port;
	bool found;

	for (r = 0; r < q->nranks; r++) {
		found = false;
		for (tries = 0; tries < t->nswitches && !found; tries++) {
			sw = (k % t->g) * t->a + (k / t->g) % t->a;
			k = (k + 1) % t->nswitches;
			for (i = 0; i < t->p; i++) {
				port = (uint64_t)sw * t->p + i;
				if (avail(q, chosen, port)) {
					bit_set(chosen, port);
					out[r] = (uint32_t)port;
					found = true;
					break;
				}
			}
		}
		if (!found)
			return -ENOSPC;	/* counted beforehand */
	}
	return 0;
}

/* A seeded partial Fisher-Yates shuffle of the usable ports. */
static int place_random(const struct ssemu_place_req *q, uint64_t navail,
			uint32_t *out)
{
	struct ssemu_rng rng;
	uint32_t *pool, tmp;
	uint64_t p, n = 0, j;
	uint32_t r;

	pool = malloc(navail * sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	for (p = 0; p < q->topo->nendpoints && n < navail; p++)
		if (q->usable(q->arg, (uint32_t)p))
			pool[n++] = (uint32_t)p;
	ssemu_rng_seed(&rng, q->seed, PLACE_RNG_COMPONENT);
	for (r = 0; r < q->nranks; r++) {
		j = r + ssemu_rng_below(&rng, n - r);
		tmp = pool[r];
		pool[r] = pool[j];
		pool[j] = tmp;
		out[r] = pool[r];
	}
	free(pool);
	return 0;
}

static int place_map(const struct ssemu_place_req *q, uint64_t *chosen,
		     uint32_t *out, char *err, size_t errlen)
{
	uint32_t r, port;

	if (!q->map) {
		snprintf(err, errlen, "placement map: no map given");
		return -EINVAL;
	}
	for (r = 0; r < q->nranks; r++) {
		port = q->map[r];
		if (port >= q->topo->nendpoints) {
			snprintf(err, errlen, "placement map: rank %u: port %u "
				 "out of range (the fabric has %llu ports)", r,
				 port, (unsigned long long)q->topo->nendpoints);
			return -EINVAL;
		}
		if (bit_get(chosen, port)) {
			snprintf(err, errlen, "placement map: rank %u: port %u "
				 "is given to an earlier rank too", r, port);
			return -EINVAL;
		}
		if (!q->usable(q->arg, port)) {
			snprintf(err, errlen, "placement map: rank %u: port %u "
				 "is taken or reserved by another job", r,
				 port);
			return -EADDRINUSE;
		}
		bit_set(chosen, port);
		out[r] = port;
	}
	return 0;
}

int ssemu_place_choose(const struct ssemu_place_req *q, uint32_t *out,
		       char *err, size_t errlen)
{
	uint64_t navail = 0, p, *chosen = NULL;
	char dummy[8];
	int ret;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!q || !q->topo || !q->usable || !out || !q->nranks ||
	    q->policy >= SSEMU_PLACE_COUNT) {
		snprintf(err, errlen, "placement: bad request");
		return -EINVAL;
	}
	if (q->nranks > q->topo->nendpoints) {
		snprintf(err, errlen, "placement: a job of %u ranks does not "
			 "fit the fabric's %llu ports", q->nranks,
			 (unsigned long long)q->topo->nendpoints);
		return -ENOSPC;
	}
	if (q->policy != SSEMU_PLACE_MAP) {
		for (p = 0; p < q->topo->nendpoints && navail < q->nranks; p++)
			navail += q->usable(q->arg, (uint32_t)p);
		if (navail < q->nranks) {
			snprintf(err, errlen, "placement %s: a job of %u ranks "
				 "needs %u free ports, the fabric has %llu "
				 "free", policy_names[q->policy], q->nranks,
				 q->nranks, (unsigned long long)navail);
			return -ENOSPC;
		}
		if (q->policy == SSEMU_PLACE_RANDOM) {
			/* count them all: the draw is over every free port */
			for (; p < q->topo->nendpoints; p++)
				navail += q->usable(q->arg, (uint32_t)p);
		}
	}
	if (q->policy == SSEMU_PLACE_INTERLEAVED ||
	    q->policy == SSEMU_PLACE_MAP) {
		chosen = calloc((q->topo->nendpoints + 63) / 64,
				sizeof(*chosen));
		if (!chosen)
			return -ENOMEM;
	}
	switch (q->policy) {
	case SSEMU_PLACE_FIRST_FREE:
		place_lowest(q, out);
		ret = 0;
		break;
	case SSEMU_PLACE_LINEAR:
		ret = place_linear(q, out);
		break;
	case SSEMU_PLACE_INTERLEAVED:
		ret = place_interleaved(q, chosen, out);
		break;
	case SSEMU_PLACE_RANDOM:
		ret = place_random(q, navail, out);
		break;
	default:
		ret = place_map(q, chosen, out, err, errlen);
		break;
	}
	free(chosen);
	return ret;
}
