/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A lone stream's recurrence, for the unit tests: what the model does with
 * a message or an RMA read alone on its path, derived packet by packet from
 * the links, the switches' keyed pipeline draws, the FIFO pipelines, the
 * outputs' serialisation and the acknowledgement rules, apart from the
 * model's code (what an exact packet train would compute instead of one
 * event per packet per hop).  Every link is at one rate, routing minimal,
 * and nothing else moves in the fabric.
 */
#ifndef SSEMU_LONE_H
#define SSEMU_LONE_H

#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_topo.h"

#define LONE_HOPS 8

/*
 * A minimal path as a train of packets sees it: the switches, the VC a
 * packet arrives on at each, the link after each, and what each input's
 * FIFO pipeline and each output's serialisation have let through so far.
 */
struct lone_path {
	const struct ssemu_config *c;
	uint64_t src;			/* endpoint ports */
	uint32_t nsw, sw[LONE_HOPS], vc[LONE_HOPS];
	ssemu_time_t delay[LONE_HOPS];	/* of the link after each switch */
	ssemu_time_t ready[LONE_HOPS], free_at[LONE_HOPS];
	ssemu_time_t nic_free;		/* the source NIC's link */
	ssemu_time_t ps_per_byte;
	uint32_t seq;			/* the source NIC's next packet */
	/* what the fabric counts of the packets so far: their hops, and
	 * their time in the switches (arrival to departure) */
	uint64_t hops, lat_sum;
};

/* The minimal path from endpoint port @src to @dst, nothing on it yet
 * (the source NIC fresh: its packets numbered from 0). */
void lone_path(struct lone_path *lp, const struct ssemu_config *c,
	       const struct ssemu_topo *t, uint64_t src, uint64_t dst);

/* The next packet of @bytes (its header too) the source NIC puts on
 * @lp's path, when it has it at @t: the time it arrives at the far
 * endpoint. */
ssemu_time_t lone_packet(struct lone_path *lp, ssemu_time_t t,
			 uint64_t bytes);

/* What lone_send and lone_read derive of an operation. */
struct lone_out {
	ssemu_time_t delivery;		/* its last packet's arrival */
	ssemu_time_t completion;	/* its initiator's completion */
	uint32_t acks;			/* acknowledgements sent */
	uint64_t hops, lat_sum;		/* as struct ssemu_fabric_stats */
};

/*
 * A random case for the tests of a lone operation: @c, the unit tests'
 * configuration of @preset with a seed from @rng and room for a 1 MiB
 * message, its topology into @t, two distinct endpoint ports, and a
 * length below 2^5, 2^10, 2^15 or 2^20 as @round goes.
 */
void lone_case(const char *preset, uint64_t *rng, unsigned round,
	       struct ssemu_config *c, struct ssemu_topo *t, uint64_t *src,
	       uint64_t *dst, uint64_t *len);

/* A lone @len-byte message from endpoint port @src to @dst, posted at 0
 * on a fresh fabric (lone.c says how the receiver acknowledges it). */
void lone_send(const struct ssemu_config *c, const struct ssemu_topo *t,
	       uint64_t src, uint64_t dst, uint64_t len, struct lone_out *o);

/* A lone @len-byte RMA read by endpoint port @src of @dst's memory,
 * posted at 0 on a fresh fabric (delivery: the request's arrival). */
void lone_read(const struct ssemu_config *c, const struct ssemu_topo *t,
	       uint64_t src, uint64_t dst, uint64_t len, struct lone_out *o);

#endif
