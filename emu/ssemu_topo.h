/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Dragonfly topology, computed arithmetically: nothing here allocates, so a
 * full-scale 279,040-endpoint description costs a few words.  Switches are
 * numbered group-major (sw = group * a + index); endpoint ports likewise
 * (ep = sw * p + local port).
 *
 * Port numbering on every switch (the one place it is written down), with
 * l parallel links between every two switches of a group:
 *   [0, p)               endpoint ports, port i -> endpoint sw * p + i
 *   [p, L), L = p + l(a-1)  local links: port p + c(a-1) + k is link c of
 *                         the pair with switch index k of the group if
 *                         k < self, k + 1 otherwise (it lands on the
 *                         other switch's port of link c)
 *   [L, R)                global links, R = L + h; global port k of
 *                         switch index i carries the group's global link
 *                         j = i * h + k
 * Global link j of group G (0 <= j < a*h) goes to group (G + d) mod g with
 * d = j mod (g - 1) + 1, as copy c = j div (g - 1); it lands on link
 * j' = c * (g - 1) + (g - 1 - d) of that group.  A link whose j' would be
 * >= a*h is left unconnected.  Minimal paths are at most local, global,
 * local: three switch-to-switch hops.
 */
#ifndef SSEMU_TOPO_H
#define SSEMU_TOPO_H

#include <stdbool.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#define SSEMU_RADIX 64

enum ssemu_port_kind {
	SSEMU_PORT_NONE = 0,	/* unconnected */
	SSEMU_PORT_ENDPOINT,	/* to a NIC */
	SSEMU_PORT_LOCAL,	/* to a switch in the same group */
	SSEMU_PORT_GLOBAL,	/* to a switch in another group */
};

struct ssemu_topo {
	uint32_t g, a, p, h;
	uint32_t l;		/* links per pair of switches of a group */
	uint32_t gbase;		/* first global port: p + l(a-1) */
	uint32_t radix;		/* ports used per switch */
	uint32_t nswitches;
	uint64_t nendpoints;
};

struct ssemu_peer {
	enum ssemu_port_kind kind;
	uint32_t sw;		/* LOCAL/GLOBAL: peer switch */
	uint32_t port;		/* LOCAL/GLOBAL: peer's port */
	uint32_t ep;		/* ENDPOINT: endpoint index (< SSEMU_MAX_PORTS) */
};

/** @return 0 or -EINVAL (message in @err) for a shape that cannot be built. */
int ssemu_topo_init(struct ssemu_topo *t, const struct ssemu_topo_params *p,
		    char *err, size_t errlen);

static inline uint32_t ssemu_topo_group(const struct ssemu_topo *t, uint32_t sw)
{
	return sw / t->a;
}

static inline uint32_t ssemu_topo_ep_switch(const struct ssemu_topo *t,
					    uint64_t ep)
{
	return (uint32_t)(ep / t->p);
}

/* Inline: the model asks it for every packet at every hop. */
static inline enum ssemu_port_kind
ssemu_topo_port_kind(const struct ssemu_topo *t, uint32_t port)
{
	if (port < t->p)
		return SSEMU_PORT_ENDPOINT;
	if (port < t->gbase)
		return SSEMU_PORT_LOCAL;
	if (port < t->radix)
		return SSEMU_PORT_GLOBAL;
	return SSEMU_PORT_NONE;
}

/** What is at the far end of (sw, port). */
void ssemu_topo_peer(const struct ssemu_topo *t, uint32_t sw, uint32_t port,
		     struct ssemu_peer *peer);

/** Number of global links between two distinct groups. */
uint32_t ssemu_topo_ncopies(const struct ssemu_topo *t, uint32_t g1,
			    uint32_t g2);

/**
 * Output port on @sw of the minimal path toward endpoint @dst, using global
 * link copy @copy (taken modulo the number of copies) when the path leaves
 * the group, and local link @copy modulo l on a hop inside it.
 */
uint32_t ssemu_topo_min_port(const struct ssemu_topo *t, uint32_t sw,
			     uint64_t dst, uint32_t copy);

/** Switch-to-switch hops of the minimal path between two endpoints. */
uint32_t ssemu_topo_min_hops(const struct ssemu_topo *t, uint64_t src,
			     uint64_t dst, uint32_t copy);

#endif
