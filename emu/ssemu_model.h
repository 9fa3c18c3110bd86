/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's interface to the rest of the emulator: its event kinds, its
 * pluggable policies and the calls the store and the runner make into it.
 */
#ifndef SSEMU_MODEL_H
#define SSEMU_MODEL_H

#include "ssemu_region.h"
#include "ssemu_policy.h"

/* Event types of the model (engine event type field). */
enum ssemu_model_ev {
	SSEMU_MEV_NIC_TX_DONE = 1,	/* a: nic slot */
	SSEMU_MEV_NIC_CREDIT,		/* a: nic slot, b: tclass */
	SSEMU_MEV_NIC_ARRIVE,		/* a: nic slot, c: pkt */
	SSEMU_MEV_SW_READY,		/* a: switch inst, b: in port | out
					 * port << 8 (ssemu_ready_b), c: pkt */
	SSEMU_MEV_SW_OUT_DONE,		/* a: switch inst, b: out port */
	SSEMU_MEV_SW_CREDIT,		/* a: switch inst, b: port | vclass << 8 */
	SSEMU_MEV_NIC_KICK,		/* a: nic slot: packets are free again */
	SSEMU_MEV_ACK_TIMER,		/* a: nic slot, b: msg, c: msg gen */
	SSEMU_MEV_FGFC,			/* a: nic slot, b: dest nic, c: pause ns */
	SSEMU_MEV_RTO,			/* a: nic slot, b: msg, c: msg gen */
	SSEMU_MEV_RESEND,		/* a: nic slot, b: pkt, c: nic gen */
	SSEMU_MEV_GEN,			/* a: modelled job generator */
	SSEMU_MEV_POST,			/* a: nic slot, b: msg, c: msg gen */
	SSEMU_MEV_MAX,
};

/* ssemu_model.c */
void ssemu_model_dispatch(struct ssemu_region *r, const struct ssemu_fired *f);
/*
 * Packet trains (ssemu_train.c): the RMA results a NIC has queued, with
 * the acknowledgement of their request ahead of them, go through the
 * fabric in one event when nothing else is in it, with the times, counts
 * and state one event per packet per hop gives.  ssemu_model_trains
 * allows them (on; a test or benchmark turns it off to compare).  A
 * train forms only inside an engine run, which the runner brackets with
 * ssemu_model_run_begin (its fabric, and the latest model time the run
 * may reach) and ssemu_model_run_end.  A train is one event to the run's
 * budget: what is posted while it would be in flight enters after it,
 * as with a budget that covered its packets' events.
 */
extern uint32_t ssemu_model_trains;
void ssemu_model_run_begin(const struct ssemu_region *r, ssemu_time_t limit);
void ssemu_model_run_end(const struct ssemu_region *r);
/* Trains run by this process (for tests and benchmarks); of them, a
 * send's data and acknowledgements (ssemu_train_send.c). */
extern uint64_t ssemu_model_trains_run, ssemu_model_trains_sent;
/* ssemu_nic.c */
void ssemu_model_enqueue_msg(struct ssemu_region *r, uint32_t nic,
			     uint32_t msg);
void ssemu_model_nic_kick(struct ssemu_region *r, uint32_t nic);
/*
 * Message @msg of NIC @nic, filled and busy, enters the NIC at model time
 * @t, later than now, by an engine event (SSEMU_MEV_POST), after every
 * other event of that time.  Private store, virtual clock.
 * @return 0, or -EINVAL: @t is not later than now, or (group windows) in
 * a window the NIC's group has run or past what they encode.
 */
int ssemu_model_post_at(struct ssemu_region *r, uint32_t nic, uint32_t msg,
			ssemu_time_t t);
/* May NIC @nic's endpoints post into the model now (group windows: is now
 * in a window the NIC's group has not run)? */
bool ssemu_model_post_now_ok(struct ssemu_region *r, uint32_t nic);
/* ssemu_msg.c */
void ssemu_model_flush_overflow(struct ssemu_region *r, uint32_t ep);
/* ssemu_recover.c */
void ssemu_model_nic_reset(struct ssemu_region *r, uint32_t nic);
void ssemu_model_ep_close(struct ssemu_region *r, uint32_t ep);
/* Endpoint @ep's messages posted for a later time (ssemu_ep_send_at) whose
 * POST has not come: discarded, counted in msgs_discarded (its close, when
 * its bound gives up on them; only a process that posted so calls it). */
void ssemu_model_ep_drop_due(struct ssemu_region *r, uint32_t ep);
int ssemu_model_recover(struct ssemu_region *r);
/* ssemu_xuid.c: RMA requests that wait for their target memory's owner */
void ssemu_xuid_run_locked(struct ssemu_region *r);

#endif
