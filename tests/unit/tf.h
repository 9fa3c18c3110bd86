/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The unit tests' fabric harness: an in-process fabric with NICs, one
 * endpoint each, a log of every event polled, and helpers to send, pump
 * and run the model until it is idle.
 */
#ifndef SSEMU_TF_H
#define SSEMU_TF_H

#include <stddef.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#define TF_MAX 64

struct tf_rec {
	unsigned ep;			/* index in tf.ep[] */
	struct ssemu_event ev;
};

struct tf {
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic *nic[TF_MAX];
	struct ssemu_ep *ep[TF_MAX];
	unsigned n;
	/* every event polled, in order */
	struct tf_rec *log;
	size_t nlog, cap;
	/* called on a RECV before it is released */
	void (*on_recv)(struct tf *t, unsigned ep,
			const struct ssemu_event *ev);
	void *priv;
};

/* A preset with resources small enough for a unit test. */
void tf_config(struct ssemu_config *c, const char *preset);
/* Switch pipeline latency fixed at its mean (no jitter, no slow path). */
void tf_fixed_pipeline(struct ssemu_config *c);
struct tf *tf_open(const struct ssemu_config *c);
/* The same in a shared segment of its own (its name already unlinked):
 * a shared store takes the CRCs that catch writes into the segment. */
struct tf *tf_open_shared(const struct ssemu_config *c);
/* Attach a NIC at @port with one endpoint; returns its index. */
unsigned tf_add(struct tf *t, uint32_t port);
void tf_close(struct tf *t);
/* Poll every endpoint, log and release; returns the events taken. */
size_t tf_pump(struct tf *t);
/* Progress and pump until the fabric is idle (fails after @max_rounds). */
void tf_run_idle(struct tf *t, unsigned max_rounds);
/* The same, each round's 4096 events in engine runs of @run events. */
void tf_run_idle_runs(struct tf *t, unsigned max_rounds, unsigned run);

void tf_send(struct tf *t, unsigned from, unsigned to, const void *buf,
	     size_t len, uint32_t tclass, uint64_t cookie, uint64_t hdr1);

/* Logged events of @type at endpoint @ep (UINT32_MAX: every endpoint). */
size_t tf_count(const struct tf *t, unsigned ep, uint32_t type);

/* Small deterministic PRNG (xorshift64*) for test traffic. */
uint64_t tf_rng_next(uint64_t *s);

#endif
