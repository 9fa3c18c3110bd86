/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's pluggable policies -- output arbitration, routing, congestion
 * control -- and the views of the model they are given.  A policy reads and
 * writes only what its view holds (never the region), so each one can be
 * driven on its own: tests/unit/test_arb.c, test_route_policy.c and
 * test_cc_policy.c build views by hand, without a fabric.  The model's
 * files build the views (ssemu_switch.c, ssemu_nic.c) and call the
 * policies through their tables only.
 */
#ifndef SSEMU_POLICY_H
#define SSEMU_POLICY_H

#include <string.h>

#include "ssemu_region.h"
#include "ssemu_topo.h"

/* ------------------------------------------------------------------ */
/* Output arbitration (ssemu_arb.c)                                     */
/* ------------------------------------------------------------------ */

/* What an arbiter sees of one switch output. */
struct ssemu_arb_view {
	/* the output: its VOQ masks and counts and the credits downstream
	 * (read), its round-robin pointers and token buckets (the
	 * arbiter's own: read and written) */
	struct ssemu_swport *op;
	/* its VOQs: vclass vcl's are voq[row[vcl] * radix + input] (row
	 * NULL: row[vcl] is vcl), read where the vclass's inmask is set */
	const struct ssemu_voq *voq;
	const uint32_t *row;
	uint32_t radix;
	/* the packet pool (a VOQ's head is an index into it) */
	const struct ssemu_pkt *pkt;
	/* the traffic classes (ntclass, tclass[], mtu, pkt_overhead) */
	const struct ssemu_config *c;
	ssemu_time_t now;
	bool edge;		/* the output leads to a NIC */
};

struct ssemu_arb_ops {
	const char *name;
	/* Pick the (input, vclass) to send next, or false.  Only vclasses
	 * with a downstream credit may be picked, and only a head packet
	 * that fits in it.  When something waits but may not go before a
	 * later time (a bandwidth cap), set *@retry to that time. */
	bool (*pick)(const struct ssemu_arb_view *v, uint32_t *in,
		     uint32_t *vcl, ssemu_time_t *retry);
	/* As pick, when the output's only packet is one of @bytes on (@in,
	 * @vcl), queued or about to be (sole reads no VOQ): true if pick
	 * would take it now (the arbiter's state then updated as pick
	 * updates it), false if pick would not (then pick decides).  Spares
	 * an output's only candidate the search, and a packet that finds
	 * its output free with nothing queued the VOQs too. */
	bool (*sole)(const struct ssemu_arb_view *v, uint32_t in,
		     uint32_t vcl, uint32_t bytes);
};

/* ------------------------------------------------------------------ */
/* Routing (ssemu_route.c)                                              */
/* ------------------------------------------------------------------ */

/*
 * What a routing choice at injection sees: the topology, the source
 * switch, the packet's own random draws there (keyed by the switch and
 * the packet, so they do not depend on what other packets drew) and the
 * loads of its outputs, as the switch reports them through @load and
 * @nb_load (ssemu_switch.c in the model, a table in a test).
 */
struct ssemu_route_view {
	const struct ssemu_topo *topo;
	struct ssemu_rng *rng;	/* the packet's draws at its source switch */
	uint32_t sw;		/* the source switch */
	uint64_t src_port;	/* the source endpoint */
	int bias;		/* the class's routing bias, at least -7 */
	bool ordered;		/* the flow must stay in order */
	/* Packets a packet of this class waits behind at output @port of
	 * the source switch (its queues and its downstream buffer). */
	uint32_t (*load)(void *arg, uint32_t port);
	/* The queue the neighbour through @port would put a packet for
	 * endpoint @target (global-link copy @copy) in, as it published it. */
	uint32_t (*nb_load)(void *arg, uint32_t port, uint64_t target,
			    uint16_t copy);
	void *arg;
};

struct ssemu_route_ops {
	const char *name;
	/* Output port for @pkt at switch @sw (every hop). */
	uint32_t (*select)(const struct ssemu_topo *t, uint32_t sw,
			   struct ssemu_pkt *pkt);
	/* The path of @pkt about to be injected: its via (and copy), which
	 * *@path keeps for the pair's ordered traffic.  NULL: always
	 * minimal. */
	void (*choose)(const struct ssemu_route_view *v, struct ssemu_pkt *pkt,
		       uint16_t *path);
};

/* A packet on a non-minimal path through a switch of its own group has
 * this bit in its via (else via is the intermediate group + 1). */
#define SSEMU_VIA_SWITCH 0x8000u

/* ------------------------------------------------------------------ */
/* Congestion control (ssemu_cc.c)                                      */
/* ------------------------------------------------------------------ */

/* "endpoint-pair" (ssemu_cc.c): an edge output where this many packets
 * of a class wait is congested for the class; a flow-control frame paces
 * its pair for this many gaps. */
#define SSEMU_CC_MARK_QUEUE 16
#define SSEMU_CC_PACE_GAPS 8

/* The packets congestion control paces: data, and RMA results (the bulk of
 * a read, the rendezvous's too, flows from the target NIC). */
static inline bool cc_paced(const struct ssemu_pkt *pkt)
{
	return pkt->type == SSEMU_PKT_DATA || pkt->type == SSEMU_PKT_RESP;
}

/* What congestion control sees of one source-destination NIC pair. */
struct ssemu_cc_pair_view {
	struct ssemu_pair *pair;	/* its state, the policy's to keep */
	ssemu_time_t now;
	uint32_t nic_window;		/* the NIC's own window, packets */
};

/* ... of a paced packet (data, RMA results) joining or leaving the queues
 * of an edge output (toward its destination endpoint). */
struct ssemu_cc_queue_view {
	const struct ssemu_config *c;
	const struct ssemu_pkt *pkt;
	/* the output's packets queued per class (the packet counted while
	 * it is queued) */
	const uint32_t *queued_tc;
	/* the output's flows (source NICs with packets queued there): the
	 * policy's to keep */
	uint32_t *nflows;
	/* the packet's pair (src_nic -> win), NULL if out of range */
	struct ssemu_pair *pair;
	/* its source NIC, NULL if out of range */
	const struct ssemu_nic_sh *src;
};

/* A flow-control frame for the model to send back to a packet's source. */
struct ssemu_cc_frame {
	ssemu_time_t delay;	/* its way back */
	uint32_t arg;		/* what it carries (the FGFC event's c) */
};

struct ssemu_cc_ops {
	const char *name;
	/* Packets the pair may have in flight now (the NIC's window caps
	 * it too; 0 while the pair is paused: the NIC is kicked again when
	 * the pause ends). */
	uint32_t (*window)(const struct ssemu_cc_pair_view *v);
	/* Is class @tc congested at an edge output whose queues per class
	 * are @queued_tc: mark its packet? */
	bool (*mark)(const uint32_t *queued_tc, uint32_t tc);
	/* @count packets of the pair acknowledged, @marked if any of them
	 * was marked on the way. */
	void (*on_ack)(const struct ssemu_cc_pair_view *v, uint32_t count,
		       bool marked);
	/* The packet of @v joined the output's queues: true if a frame is
	 * to go back to its source (into *@f).  NULL: nothing to do (nor in
	 * on_dequeue, on_send, on_frame). */
	bool (*on_queue)(const struct ssemu_cc_queue_view *v,
			 struct ssemu_cc_frame *f);
	/* The packet of @v left the output's queues. */
	void (*on_dequeue)(const struct ssemu_cc_queue_view *v);
	/* The source put a paced packet of the pair on the wire: true if
	 * the pair pauses now, until *@until. */
	bool (*on_send)(const struct ssemu_cc_pair_view *v,
			ssemu_time_t *until);
	/* A frame (on_queue's @arg) reached the pair's source: true if it
	 * starts an episode of throttling (telemetry counts those). */
	bool (*on_frame)(const struct ssemu_cc_pair_view *v, uint32_t arg);
};

/* The class a frame's argument carries. */
static inline uint32_t ssemu_cc_frame_tclass(uint32_t arg)
{
	return arg >> 24;
}

/* The index of the policy named @name in a registry of @n entries of
 * @size bytes, each beginning with its name, or -1. */
static inline int ssemu_policy_find(const void *table, size_t n, size_t size,
				    const char *name)
{
	size_t i;

	for (i = 0; name && i < n; i++)
		if (!strcmp(*(const char *const *)((const char *)table +
						   i * size), name))
			return (int)i;
	return -1;
}

/* The registries, and the index of a policy by name in its registry, or
 * -1 (the configuration names the policies, the region keeps indices). */
extern const struct ssemu_route_ops ssemu_route_table[];
extern const struct ssemu_arb_ops ssemu_arb_table[];
extern const struct ssemu_cc_ops ssemu_cc_table[];
int ssemu_route_index(const char *name);
int ssemu_arb_index(const char *name);
int ssemu_cc_index(const char *name);

#endif
