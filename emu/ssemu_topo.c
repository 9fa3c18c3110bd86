/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Dragonfly topology arithmetic.  The port numbering and the global link
 * arrangement are documented in ssemu_topo.h.
 */
#include <errno.h>
#include <stdio.h>

#include "ssemu_compiler.h"
#include "ssemu_topo.h"

int ssemu_topo_init(struct ssemu_topo *t, const struct ssemu_topo_params *p,
		    char *err, size_t errlen)
{
	uint64_t radix, nsw, neps;
	uint32_t l = p->local_links_per_pair ? p->local_links_per_pair : 1;

	if (!p->groups || !p->switches_per_group || !p->endpoints_per_switch) {
		snprintf(err, errlen, "topology: groups, switches_per_group "
			 "and endpoints_per_switch must be at least 1");
		return -EINVAL;
	}
	/* one group has no global links, whatever h says */
	radix = (uint64_t)p->endpoints_per_switch +
		(uint64_t)l * (p->switches_per_group - 1) +
		(p->groups > 1 ? p->globals_per_switch : 0);
	if (radix > SSEMU_RADIX) {
		snprintf(err, errlen, "topology: %u endpoint + %llu local + %u "
			 "global ports = %llu exceeds the switch radix %d",
			 p->endpoints_per_switch,
			 (unsigned long long)l * (p->switches_per_group - 1),
			 p->groups > 1 ? p->globals_per_switch : 0,
			 (unsigned long long)radix, SSEMU_RADIX);
		return -EINVAL;
	}
	if (p->groups > 1 &&
	    (uint64_t)p->switches_per_group * p->globals_per_switch <
		    p->groups - 1) {
		snprintf(err, errlen, "topology: %u groups need at least %u "
			 "global links per group, have %u x %u",
			 p->groups, p->groups - 1, p->switches_per_group,
			 p->globals_per_switch);
		return -EINVAL;
	}
	nsw = (uint64_t)p->groups * p->switches_per_group;
	neps = nsw * p->endpoints_per_switch;
	if (nsw > UINT32_MAX || neps >= SSEMU_MAX_PORTS) {
		snprintf(err, errlen, "topology: %llu endpoints exceed the "
			 "address space (%u)", (unsigned long long)neps,
			 SSEMU_MAX_PORTS);
		return -EINVAL;
	}
	t->g = p->groups;
	t->a = p->switches_per_group;
	t->p = p->endpoints_per_switch;
	t->h = p->groups > 1 ? p->globals_per_switch : 0;
	t->l = l;
	t->gbase = t->p + l * (t->a - 1);
	t->radix = t->gbase + t->h;
	t->nswitches = (uint32_t)nsw;
	t->nendpoints = neps;
	return 0;
}

/* Port on switch index @self of link @c (< l) to switch index @to. */
static inline uint32_t local_port(const struct ssemu_topo *t, uint32_t self,
				  uint32_t to, uint32_t c)
{
	return t->p + c * (t->a - 1) + (to < self ? to : to - 1);
}

/* Global link j of a group: its partner link index, or UINT32_MAX. */
static uint32_t global_partner(const struct ssemu_topo *t, uint32_t j,
			       uint32_t *dgroup_off)
{
	uint32_t d = j % (t->g - 1) + 1, c = j / (t->g - 1);
	uint32_t jp = c * (t->g - 1) + (t->g - 1 - d);

	*dgroup_off = d;
	return jp < t->a * t->h ? jp : UINT32_MAX;
}

void ssemu_topo_peer(const struct ssemu_topo *t, uint32_t sw, uint32_t port,
		     struct ssemu_peer *peer)
{
	uint32_t grp = sw / t->a, idx = sw % t->a, k, c, j, jp, d, tg;

	peer->kind = SSEMU_PORT_NONE;
	peer->sw = peer->port = 0;
	peer->ep = 0;
	switch (ssemu_topo_port_kind(t, port)) {
	case SSEMU_PORT_ENDPOINT:
		peer->kind = SSEMU_PORT_ENDPOINT;
		peer->ep = sw * t->p + port;
		break;
	case SSEMU_PORT_LOCAL:
		k = (port - t->p) % (t->a - 1);
		c = (port - t->p) / (t->a - 1);
		if (k >= idx)
			k++;
		peer->kind = SSEMU_PORT_LOCAL;
		peer->sw = grp * t->a + k;
		peer->port = local_port(t, k, idx, c);
		break;
	case SSEMU_PORT_GLOBAL:
		j = idx * t->h + (port - t->gbase);
		jp = global_partner(t, j, &d);
		if (jp == UINT32_MAX)
			break;
		tg = (grp + d) % t->g;
		peer->kind = SSEMU_PORT_GLOBAL;
		peer->sw = tg * t->a + jp / t->h;
		peer->port = t->gbase + jp % t->h;
		break;
	default:
		break;
	}
}

/*
 * Links from a group to the group @d ahead: global link j goes there as
 * copy c when j = c * (g - 1) + (d - 1) < a*h, and is connected when its
 * far end c * (g - 1) + (g - 1 - d) < a*h too.  Both hold for the copies
 * c below a bound each (they grow with c), so the connected copies are
 * 0 .. n-1, n the smaller bound.  With a*h = q * (g - 1) + rem, the
 * bounds are q + (d <= rem) and q + (rem > g - 1 - d) for 0 < d < g.
 */
static inline uint32_t copies_ahead(const struct ssemu_topo *t, uint32_t d)
{
	uint32_t k = t->g - 1, links = t->a * t->h, q, rem;

	if (!d || d > k)	/* (no group is 0 or g ahead) */
		return 0;
	q = links / k;
	rem = links % k;
	return q + (d <= rem && rem > k - d);
}

uint32_t ssemu_topo_ncopies(const struct ssemu_topo *t, uint32_t g1,
			    uint32_t g2)
{
	if (t->g < 2 || g1 == g2)
		return 0;
	return copies_ahead(t, (g2 + t->g - g1) % t->g);
}

SSEMU_HOT
uint32_t ssemu_topo_min_port(const struct ssemu_topo *t, uint32_t sw,
			     uint64_t dst, uint32_t copy)
{
	uint32_t dsw, grp = sw / t->a, idx = sw % t->a, dgrp, d, j, owner;

	/* (as few divisions as may be, 32-bit when the index fits: the model
	 * routes every packet at every hop) */
	if (dst <= UINT32_MAX) {
		dsw = (uint32_t)dst / t->p;
		if (dsw == sw)
			return (uint32_t)dst % t->p;
	} else {
		dsw = (uint32_t)(dst / t->p);
		if (dsw == sw)
			return (uint32_t)(dst % t->p);
	}
	dgrp = dsw / t->a;
	if (dgrp == grp)
		return local_port(t, idx, dsw % t->a, t->l > 1 ? copy % t->l : 0);
	/* Leave the group on global link copy (copy mod n) toward dgrp: the
	 * copy-th connected link with offset d is copy (copies_ahead). */
	if (dgrp < t->g && grp < t->g)
		d = dgrp >= grp ? dgrp - grp : dgrp + t->g - grp;
	else
		d = (dgrp + t->g - grp) % t->g;
	copy %= copies_ahead(t, d);
	j = copy * (t->g - 1) + (d - 1);
	owner = j / t->h;
	if (owner == idx)
		return t->gbase + j % t->h;
	return local_port(t, idx, owner, t->l > 1 ? copy % t->l : 0);
}

/*
 * The minimal path in closed form, as ssemu_topo_min_port takes it hop by
 * hop: inside a group the direct local link; between groups a local hop
 * to the switch that owns the chosen copy of the global link (none if it
 * is the source's own), the global link, and a local hop from the switch
 * it lands on to the destination's (none if that is it).
 */
uint32_t ssemu_topo_min_hops(const struct ssemu_topo *t, uint64_t src,
			     uint64_t dst, uint32_t copy)
{
	uint32_t sw = (uint32_t)(src / t->p), dsw = (uint32_t)(dst / t->p);
	uint32_t grp = sw / t->a, dgrp = dsw / t->a, d, n, c, j, jp, land;

	if (dsw == sw)
		return 0;
	if (dgrp == grp)
		return 1;
	if (dgrp < t->g && grp < t->g)
		d = dgrp >= grp ? dgrp - grp : dgrp + t->g - grp;
	else
		d = (dgrp + t->g - grp) % t->g;
	n = copies_ahead(t, d);
	if (!n)		/* (no link that way: not a switch of the fabric) */
		return 0;
	c = copy % n;
	j = c * (t->g - 1) + (d - 1);
	jp = c * (t->g - 1) + (t->g - 1 - d);
	land = (grp + d) % t->g * t->a + jp / t->h;
	return (j / t->h != sw % t->a) + 1 + (land != dsw);
}
