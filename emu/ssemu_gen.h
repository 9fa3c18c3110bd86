/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Modelled jobs (ssemu_gen.c): what the store, the runner and the model
 * call.  Rank k of modelled job j is generator gi (the jobs' ranks in
 * declaration order), and NIC slot gi and endpoint slot gi are its own:
 * so a NIC, an endpoint or a message slot is a modelled job's exactly
 * when its index (the message's endpoint) is below r->gen_neps.
 */
#ifndef SSEMU_GEN_H
#define SSEMU_GEN_H

#include "ssemu_region.h"

/* Largest message of a modelled job (it has no payload to copy). */
#define SSEMU_GEN_MAX_SIZE (1ULL << 30)
/* Allreduce by recursive doubling: steps of an operation at most. */
#define SSEMU_GEN_AR_STEPS 16

/* ssemu_config.c: modelled job @j of @c, NULL if sound, else the problem
 * (in @buf) and the configuration key it is about (*@key). */
const char *ssemu_mjob_problem(const struct ssemu_config *c, uint32_t j,
			       const char **key, char *buf, size_t len);
/* The ranks the configuration's modelled jobs have, together. */
uint32_t ssemu_gen_neps(const struct ssemu_config *c);
/* Bytes of the generator section. */
uint64_t ssemu_gen_bytes(const struct ssemu_config *c);
/*
 * The port of every rank of every modelled job of @c on topology @t, into
 * @ports[ssemu_gen_neps(c)]: explicit placements first, then the others
 * in declaration order on the ports left.  @return 0, or -EINVAL with the
 * job and the problem in @err.
 */
int ssemu_gen_place(const struct ssemu_config *c, const struct ssemu_topo *t,
		    uint32_t *ports, char *err, size_t errlen);
/* A new region (ssemu_store.c): the jobs' NICs attached, their endpoints
 * open, their first events scheduled; the section at @off. */
int ssemu_gen_init(struct ssemu_region *r, uint64_t off);

/* The model's calls (under the fabric lock). */
void ssemu_gen_tick(struct ssemu_region *r, uint32_t gi);
/* The port of generator @gi's endpoint (0 if there is no such one). */
uint32_t ssemu_gen_port(struct ssemu_region *r, uint32_t gi);
/* The last packet of modelled message @mi arrived at its target. */
void ssemu_gen_deliver(struct ssemu_region *r, uint32_t mi);
/* A real endpoint's message @mi reached a modelled job's rank: counted
 * and given back (nobody reads that rank's events). */
void ssemu_gen_sink(struct ssemu_region *r, uint32_t mi);
/* Modelled message @mi is acknowledged (or failed) at its source. */
void ssemu_gen_complete(struct ssemu_region *r, uint32_t mi);
/* Congestion control held back NIC @nic (counted if it is modelled). */
void ssemu_gen_throttle(struct ssemu_region *r, uint32_t nic);
/* A real endpoint's message @m enters the model / is done with it. */
void ssemu_gen_real_in(struct ssemu_region *r, struct ssemu_msg *m);
void ssemu_gen_real_done(struct ssemu_region *r, struct ssemu_msg *m);
/* Count the real messages in flight again (after a reset or recovery). */
void ssemu_gen_recount(struct ssemu_region *r);
/* ssemu_gen_hold of a fabric with modelled jobs: no real message in
 * flight. */
bool ssemu_gen_held(struct ssemu_region *r);

/*
 * Virtual clock: does model time stand still now?  Modelled traffic
 * advances only while real traffic is in flight (or when a tool drives
 * the engine: ssemu_fabric_run_until), so real computation takes no
 * model time.  Inline: the engine's loop asks before every event, and a
 * fabric without modelled jobs answers from one field.
 */
static inline bool ssemu_gen_hold(struct ssemu_region *r)
{
	return r->gen_neps && ssemu_gen_held(r);
}

static inline bool ssemu_gen_msg(const struct ssemu_region *r, uint32_t mi)
{
	return mi / r->config.msgs_per_ep < r->gen_neps;
}

#endif
