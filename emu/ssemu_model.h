/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's interface to the rest of the emulator: its event kinds, its
 * pluggable policies and the calls the store and the runner make into it.
 */
#ifndef SSEMU_MODEL_H
#define SSEMU_MODEL_H

#include "ssemu_region.h"

/* Event types of the model (engine event type field). */
enum ssemu_model_ev {
	SSEMU_MEV_NIC_TX_DONE = 1,	/* a: nic slot */
	SSEMU_MEV_NIC_CREDIT,		/* a: nic slot, b: tclass */
	SSEMU_MEV_NIC_ARRIVE,		/* a: nic slot, c: pkt */
	SSEMU_MEV_SW_READY,		/* a: switch inst, b: in port, c: pkt */
	SSEMU_MEV_SW_OUT_DONE,		/* a: switch inst, b: out port */
	SSEMU_MEV_SW_CREDIT,		/* a: switch inst, b: port | vclass << 8 */
	SSEMU_MEV_NIC_KICK,		/* a: nic slot: packets are free again */
	SSEMU_MEV_ACK_TIMER,		/* a: nic slot, b: msg, c: msg gen */
	SSEMU_MEV_FGFC,			/* a: nic slot, b: dest nic, c: pause ns */
	SSEMU_MEV_RTO,			/* a: nic slot, b: msg, c: msg gen */
	SSEMU_MEV_RESEND,		/* a: nic slot, b: pkt, c: nic gen */
	SSEMU_MEV_MAX,
};

/* Pluggable policies, chosen by name from the configuration. */
struct ssemu_route_ops {
	const char *name;
	/* Non-minimal candidates weighed against the minimal path when a
	 * packet is injected (0: always minimal). */
	uint32_t ncand;
	/* Weigh each candidate by its next switch's queue too, as that
	 * switch published it (nb_load), not only by the source switch's. */
	bool neighbours;
	/* Output port for @pkt at switch @sw. */
	uint32_t (*select)(struct ssemu_region *r, uint32_t sw,
			   struct ssemu_pkt *pkt);
};

struct ssemu_arb_ops {
	const char *name;
	/* Pick the (input, vclass) to send next on @out, or false.  Only
	 * vclasses with a downstream credit may be picked.  When something
	 * waits but may not go before a later time (a bandwidth cap), set
	 * *@retry to that time. */
	bool (*pick)(struct ssemu_region *r, struct ssemu_switch_sh *s,
		     uint32_t out, uint32_t *in, uint32_t *vcl,
		     ssemu_time_t *retry);
};

struct ssemu_cc_ops {
	const char *name;
	/* Packets @nic may have in flight to NIC @dnic now (the NIC's window
	 * caps it too; 0 while the pair is paused, and the NIC is kicked
	 * again when the pause ends). */
	uint32_t (*window)(struct ssemu_region *r, uint32_t nic, uint32_t dnic);
	/* Is class @tc congested at edge output @op: mark its packet? */
	bool (*mark)(struct ssemu_region *r, const struct ssemu_swport *op,
		     uint32_t tc);
	/* @count packets of @nic to @dnic acknowledged, @marked if any of
	 * them was marked on the way. */
	void (*on_ack)(struct ssemu_region *r, uint32_t nic, uint32_t dnic,
		       uint32_t count, bool marked);
	/* Data packet @pkt joined the queues of edge output @op (toward its
	 * destination endpoint) at switch @s; NULL: nothing to do. */
	void (*on_queue)(struct ssemu_region *r, struct ssemu_switch_sh *s,
			 const struct ssemu_swport *op,
			 const struct ssemu_pkt *pkt);
	/* @nic put a data packet for @dnic on the wire; NULL: nothing. */
	void (*on_send)(struct ssemu_region *r, uint32_t nic, uint32_t dnic);
};

/* Index of a policy by name in its registry, or -1. */
int ssemu_route_index(const char *name);
int ssemu_arb_index(const char *name);
int ssemu_cc_index(const char *name);

/* ssemu_model.c */
void ssemu_model_dispatch(struct ssemu_region *r, const struct ssemu_fired *f);
void ssemu_model_enqueue_msg(struct ssemu_region *r, uint32_t nic,
			     uint32_t msg);
void ssemu_model_nic_kick(struct ssemu_region *r, uint32_t nic);
void ssemu_model_flush_overflow(struct ssemu_region *r, uint32_t ep);
void ssemu_model_nic_reset(struct ssemu_region *r, uint32_t nic);
void ssemu_model_ep_close(struct ssemu_region *r, uint32_t ep);
int ssemu_model_recover(struct ssemu_region *r);

#endif
