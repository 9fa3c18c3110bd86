/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet trains' shared parts (ssemu_train.c, ssemu_train_send.c): a leg
 * is one NIC's packets to another along one path, planned packet by
 * packet (each packet's times at the NIC and every hop) and stepped
 * through the switches in the engine's order.  A read's train is one leg
 * (the target's results); a send's is two (the data, and the
 * acknowledgements coming back).
 */
#ifndef SSEMU_TRAIN_INT_H
#define SSEMU_TRAIN_INT_H

#include "ssemu_link.h"

#define TRAIN_HOPS 8
/* the most packets a leg takes (a read of 128 MiB at a 2 KiB MTU; its
 * plan takes about 200 bytes a packet) */
#define TRAIN_MAX_PKTS (1u << 16)

/* What a leg carries. */
enum train_kind {
	TK_RESP,	/* a read's acknowledgement, then its results */
	TK_DATA,	/* a send's data packets */
	TK_ACK,		/* their acknowledgements, back */
};

struct train_hop {
	struct ssemu_switch_sh *s;	/* NULL: not modelled yet */
	struct ssemu_swport *op;	/* the output taken */
	uint32_t sw, inst, in, out, vcl, dvcl;
	bool edge;			/* the output leads to the leg's end */
	ssemu_time_t in_delay;		/* the input's link (credits back) */
	ssemu_time_t last_ready;	/* the input's FIFO, as found */
	/* a switch not modelled yet: its output as its model will have it
	 * when the train's first packet makes it */
	struct ssemu_swport_img fresh;
	/* pass 2: the output's credit ring, the ring of whoever feeds the
	 * input (the NIC's, or the previous hop's output's), the arbiter's
	 * view of the output (train_hop_views) */
	struct ssemu_cr cr, up;
	struct ssemu_arb_view av;
};

/* A packet's times: where each is in its row of struct train's t. */
enum { T_INJ, T_FIN, T_HOP };
#define T_ARR(h) (T_HOP + 3 * (h))
#define T_READY(h) (T_HOP + 3 * (h) + 1)
#define T_DEP(h) (T_HOP + 3 * (h) + 2)

struct train {
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;		/* the NIC sending */
	struct ssemu_nic_sh *in;	/* the one at the leg's end */
	uint32_t nic, inic, mi, tc, dport, ack;
	uint16_t vni;			/* the results' (their message's) */
	uint8_t kind;			/* enum train_kind */
	uint32_t first;			/* packets sent before the plan */
	uint32_t npkts;
	uint32_t nhops, w;		/* w: times a packet */
	uint32_t nfresh;		/* switches the leg models first */
	ssemu_time_t limit;		/* the run's (ssemu_model_run_begin) */
	ssemu_time_t *t;		/* npkts rows of w */
	uint32_t *bytes, *cells, *pi;	/* size, cells, pool packet */
	ssemu_time_t *wake;		/* the NIC's looks for a credit */
	uint32_t nwake;
	uint32_t tail;			/* such a look asked for another */
	ssemu_time_t tail_at;
	uint32_t ninj;			/* pass 2: packets put on the wire */
	/* (last: train_path fills what a train reads of it, and the rest,
	 * large, need not be cleared) */
	struct train_hop hop[TRAIN_HOPS];
};

/* Memory a train's plan reuses from one train to the next: at least
 * @bytes of it (its contents not kept); NULL: no memory.  What is more
 * than TRAIN_BUF_KEEP is given back when the train is done (train_buf_trim)
 * so that one long train does not hold its plan's rows for good. */
struct train_buf {
	void *p;
	size_t cap;
};
#define TRAIN_BUF_KEEP (64 * 1024)
void *train_buf(struct train_buf *b, size_t bytes);
void train_buf_trim(struct train_buf *b);

static inline ssemu_time_t *T(const struct train *tr, uint32_t k,
			      uint32_t j)
{
	return &tr->t[(size_t)k * tr->w + j];
}

/* The latest model time @r's run in progress may reach; 0: none. */
ssemu_time_t train_run_limit(const struct ssemu_region *r);
/* Is the model in its usual form, as trains take it: no test's variant
 * of it (test_order's), no modelled jobs, no RMA request waiting for its
 * memory's owner, no NIC waiting for a packet, congestion control none or
 * the endpoint pairs' (whose state at edge outputs a train keeps)? */
bool train_model_usual(struct ssemu_region *r);
/* The plan's rows of @tr (npkts, w set), in @b. */
bool train_alloc(struct train *tr, struct train_buf *b);
/* The path from the edge switch of @tr's NIC to port @dport, as a packet
 * of class tc with @copy takes it minimally; every output idle, hop 0's
 * input not busy past @ready0.  Switches @other models first are not
 * counted as @tr's (NULL: none). */
bool train_path(struct train *tr, uint32_t dport, uint16_t copy,
		ssemu_time_t ready0, const struct train *other);
/* Do the credits of @key in ring @cr hold through @tr's packets (those
 * before @first sent, their cells taken, before the plan): every send
 * finds its cells, and with @room every put finds room in the ring (else
 * a credit comes as an event, SW_CREDIT or NIC_CREDIT)? */
bool train_credits_hold(struct train *tr, const struct ssemu_cr *cr,
			uint32_t key, uint32_t send, uint32_t put,
			ssemu_time_t delay, uint32_t first, bool room);
/* Do the credits of every ring @tr's packets take hold: its NIC's, then
 * each output's (@room: see train_credits_hold)? */
bool train_leg_credits_hold(struct train *tr, bool room);
/* No flow-control frame at the leg's edge output. */
bool train_edge_queue_holds(struct train *tr);
/* Pass 2: hop @h's views once its switch is modelled. */
void train_hop_views(struct train *tr, uint32_t h);
/* Pass 2: packet @k leaves hop @h's output at @now; its pipeline ends
 * at the leg's last switch at @now. */
void train_act_dep(struct train *tr, uint32_t h, uint32_t k,
		   ssemu_time_t now);
void train_act_ready(struct train *tr, uint32_t h, uint32_t k,
		     ssemu_time_t now);

#endif
