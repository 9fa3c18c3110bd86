/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Routing: the output a packet takes at each switch (select), and the path
 * it is given when injected (choose).  "minimal" always goes minimally.
 * The adaptive algorithms weigh, at injection, the minimal path against
 * non-minimal ones through random intermediate groups (inside a group:
 * through a random third switch) by the queue depth of their first output
 * at the source switch (waiting packets and used credits) times their
 * length in hops, the class's routing bias favouring minimal paths; the
 * cheapest wins:
 *	"ugal"		one non-minimal candidate, the source switch's queues;
 *	"adaptive"	three candidates, the source switch's queues;
 *	"adaptive-nb"	three candidates, and each candidate's next switch's
 *			queue too, as that switch published it (sw_nb_load).
 * Ordered traffic changes path only when the pair has nothing in flight
 * (the model's caller keeps the path then).  A chooser sees the switch
 * through struct ssemu_route_view only.
 */
#include "ssemu_policy.h"

SSEMU_HOT
static uint32_t route_minimal(const struct ssemu_topo *t, uint32_t sw,
			      struct ssemu_pkt *pkt)
{
	return ssemu_topo_min_port(t, sw, pkt->dst_port, pkt->copy);
}

/* First endpoint of group @g: minimal routing toward it leads into @g. */
static inline uint64_t group_rep(const struct ssemu_topo *t, uint32_t g)
{
	return (uint64_t)g * t->a * t->p;
}

/*
 * A packet on a non-minimal path goes minimally to its intermediate group
 * first (phase 0), then minimally to its destination (phase 1): at most
 * local, global, local, global, local, within the VCs.  Inside a group the
 * intermediate is a switch (via has SSEMU_VIA_SWITCH set): local, local.
 */
SSEMU_HOT
static uint32_t route_follow(const struct ssemu_topo *t, uint32_t sw,
			     struct ssemu_pkt *pkt)
{
	if ((pkt->via & SSEMU_VIA_SWITCH) && !pkt->phase) {
		uint32_t isw = pkt->via & ~SSEMU_VIA_SWITCH;

		if (sw == isw || isw >= t->nswitches)
			pkt->phase = 1;
		else
			return ssemu_topo_min_port(t, sw, (uint64_t)isw * t->p,
						   pkt->copy);
	} else if (pkt->via && !pkt->phase) {
		if (ssemu_topo_group(t, sw) == pkt->via - 1u)
			pkt->phase = 1;
		else
			return ssemu_topo_min_port(t, sw,
						   group_rep(t, pkt->via - 1u),
						   pkt->copy);
	}
	return ssemu_topo_min_port(t, sw, pkt->dst_port, pkt->copy);
}

/* The neighbour's queue through @port toward @target, if the chooser
 * weighs neighbours (@nb). */
static inline uint32_t nb_of(const struct ssemu_route_view *v, bool nb,
			     uint32_t port, uint64_t target, uint16_t copy)
{
	return nb ? v->nb_load(v->arg, port, target, copy) : 0;
}

/*
 * Inside a group: the direct local link, or two local hops through another
 * switch of the group (the group is all-to-all, one link per pair, so
 * traffic from one switch to another -- an all-to-all's shift -- has one
 * link minimally and a-2 more through the others).
 */
static void choose_local(const struct ssemu_route_view *v,
			 struct ssemu_pkt *pkt, uint16_t *path, uint32_t ncand,
			 bool nb)
{
	const struct ssemu_topo *t = v->topo;
	uint32_t dsw = ssemu_topo_ep_switch(t, pkt->dst_port);
	uint32_t base = ssemu_topo_group(t, v->sw) * t->a, k, li, isw, port;
	uint64_t cost, best;
	uint16_t best_via = 0;

	if (dsw == v->sw || t->a < 3 || t->nswitches > SSEMU_VIA_SWITCH) {
		*path = 0;
		return;
	}
	port = ssemu_topo_min_port(t, v->sw, pkt->dst_port, pkt->copy);
	best = (uint64_t)(v->load(v->arg, port) + 1) * 2 * 8;
	/* (the direct link's neighbour is the destination's switch: its
	 * edge output counts nothing) */
	for (k = 0; k < ncand; k++) {
		/* a random switch of the group other than both ends */
		li = (uint32_t)ssemu_rng_below(v->rng, t->a - 2);
		if (li >= SSEMU_MIN(v->sw, dsw) - base)
			li++;
		if (li >= SSEMU_MAX(v->sw, dsw) - base)
			li++;
		isw = base + li;
		port = ssemu_topo_min_port(t, v->sw, (uint64_t)isw * t->p,
					   pkt->copy);
		cost = (uint64_t)(v->load(v->arg, port) +
				  nb_of(v, nb, port, pkt->dst_port, pkt->copy) +
				  1) * 3 * (uint64_t)(8 + v->bias);
		if (cost < best) {
			best = cost;
			best_via = (uint16_t)(SSEMU_VIA_SWITCH | isw);
		}
	}
	pkt->via = best_via;
	*path = best_via;
}

/* Between groups @sg and @dg: the minimal path or up to @ncand through
 * random intermediate groups. */
static void choose_global(const struct ssemu_route_view *v,
			  struct ssemu_pkt *pkt, uint16_t *path,
			  uint32_t ncand, bool nb, uint32_t sg, uint32_t dg)
{
	const struct ssemu_topo *t = v->topo;
	uint32_t g, k, port, hmin, nbq, best_via = 0;
	uint16_t copy, best_copy = pkt->copy;
	struct ssemu_peer pe;
	uint64_t cost, best;

	hmin = ssemu_topo_min_hops(t, v->src_port, pkt->dst_port, pkt->copy);
	port = ssemu_topo_min_port(t, v->sw, pkt->dst_port, pkt->copy);
	best = (uint64_t)(v->load(v->arg, port) +
			  nb_of(v, nb, port, pkt->dst_port, pkt->copy) + 1) *
	       (hmin + 1) * 8;
	for (k = 0; k < ncand; k++) {
		/* a random group other than the source's and the destination's */
		g = (uint32_t)ssemu_rng_below(v->rng, t->g - 2);
		if (g >= SSEMU_MIN(sg, dg))
			g++;
		if (g >= SSEMU_MAX(sg, dg))
			g++;
		/* unordered traffic may spread over every global link
		 * toward the intermediate group, not just its pair's copy */
		copy = v->ordered ? pkt->copy :
				    (uint16_t)ssemu_rng_below(v->rng, 65536);
		port = ssemu_topo_min_port(t, v->sw, group_rep(t, g), copy);
		/* past the global link into g, the neighbour heads for the
		 * destination */
		nbq = 0;
		if (nb) {
			ssemu_topo_peer(t, v->sw, port, &pe);
			nbq = pe.kind == SSEMU_PORT_GLOBAL &&
			      ssemu_topo_group(t, pe.sw) == g ?
				      nb_of(v, nb, port, pkt->dst_port,
					    pkt->copy) :
				      nb_of(v, nb, port, group_rep(t, g), copy);
		}
		cost = (uint64_t)(v->load(v->arg, port) + nbq + 1) *
		       (hmin + 3) * (uint64_t)(8 + v->bias);
		if (cost < best) {
			best = cost;
			best_via = g + 1;
			best_copy = copy;
		}
	}
	pkt->via = (uint16_t)best_via;
	if (best_via)
		pkt->copy = best_copy;
	*path = (uint16_t)best_via;
}

/* Weigh the minimal path against @ncand non-minimal ones. */
static void choose_nonmin(const struct ssemu_route_view *v,
			  struct ssemu_pkt *pkt, uint16_t *path,
			  uint32_t ncand, bool nb)
{
	const struct ssemu_topo *t = v->topo;
	uint32_t sg = ssemu_topo_group(t, v->sw);
	uint32_t dg = ssemu_topo_group(t, ssemu_topo_ep_switch(t,
							       pkt->dst_port));

	if (sg == dg)
		choose_local(v, pkt, path, ncand, nb);
	else if (t->g < 3)
		*path = 0;
	else
		choose_global(v, pkt, path, ncand, nb, sg, dg);
}

static void route_ugal(const struct ssemu_route_view *v, struct ssemu_pkt *pkt,
		       uint16_t *path)
{
	choose_nonmin(v, pkt, path, 1, false);
}

static void route_adaptive(const struct ssemu_route_view *v,
			   struct ssemu_pkt *pkt, uint16_t *path)
{
	choose_nonmin(v, pkt, path, 3, false);
}

static void route_adaptive_nb(const struct ssemu_route_view *v,
			      struct ssemu_pkt *pkt, uint16_t *path)
{
	choose_nonmin(v, pkt, path, 3, true);
}

const struct ssemu_route_ops ssemu_route_table[] = {
	{ .name = "minimal", .select = route_minimal },
	{ .name = "adaptive", .select = route_follow,
	  .choose = route_adaptive },
	{ .name = "ugal", .select = route_follow, .choose = route_ugal },
	{ .name = "adaptive-nb", .select = route_follow,
	  .choose = route_adaptive_nb },
};

int ssemu_route_index(const char *name)
{
	return ssemu_policy_find(ssemu_route_table,
				 ARRAY_SIZE(ssemu_route_table),
				 sizeof(ssemu_route_table[0]), name);
}
