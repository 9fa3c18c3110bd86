/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the emulator's files share besides the region layout
 * (ssemu_region.h) and the model's interface (ssemu_model.h): this
 * process's handles on a fabric, the telemetry hooks, the lock, and the
 * helpers (placement, the fault guard, the log).
 */
#ifndef SSEMU_PRIV_H
#define SSEMU_PRIV_H

#include <signal.h>

#include "ssemu_region.h"
#include "ssemu_model.h"

/* Per-process handles. */
struct ssemu_fabric {
	struct ssemu_region *r;
	size_t map_size;
	enum ssemu_store store;
	uint32_t flags;		/* SSEMU_OPEN_* */
	char shm_name[64];
	unsigned progress_calls;
	/* this process's mapping of the segment was cut short under it
	 * (the segment truncated, a SIGBUS caught): set by the signal
	 * handler, never cleared */
	volatile uint32_t gone;
	/* this process's checked copies of the configuration and counts
	 * (set at open): the owner's calls size their loops and bounds by
	 * them, never by the segment's */
	const struct ssemu_config *cfg;
	uint32_t neps, nmsgs, nbufs;
	uint64_t nendpoints;
};

struct ssemu_nic {
	struct ssemu_fabric *fab;
	uint32_t slot;
};

struct ssemu_ep {
	struct ssemu_nic *nic;
	uint32_t index;		/* global ep index */
	uint32_t pid;
	/* in this process's mapping, once: polling an endpoint then reads
	 * its ring and nothing else */
	struct ssemu_region *r;
	struct ssemu_ring *ev_ring;
	uint32_t tc_mask;	/* classes its service allows */
};


/* ssemu_telemetry.c: the section's size and set-up, and the model's
 * counting hooks (each brings the samples up to the current time first). */
uint64_t ssemu_tel_bytes(const struct ssemu_config *c);
void ssemu_tel_init(struct ssemu_region *r, uint64_t off);
void ssemu_tel_post(struct ssemu_region *r, uint32_t nic, uint32_t tc);
/* NIC slot @nic is attached again (a new generation, maybe another job). */
void ssemu_tel_nic_attach(struct ssemu_region *r, uint32_t nic);
void ssemu_tel_tx(struct ssemu_region *r, uint32_t nic, uint32_t tc,
		  uint32_t bytes);
void ssemu_tel_rx(struct ssemu_region *r, uint32_t src_nic, uint32_t tc,
		  uint32_t bytes);
void ssemu_tel_deliver(struct ssemu_region *r, uint32_t msg);
/* A packet of @type (enum ssemu_pkt_type) lost in the fabric. */
void ssemu_tel_drop(struct ssemu_region *r, uint32_t tc, uint32_t type);
void ssemu_tel_retry(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_throttle(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_mark(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_queue(struct ssemu_region *r, uint32_t tc, uint32_t depth);

/* ssemu_fabric.c: the fabric lock, for readers outside the engine. */
int ssemu_region_lock(struct ssemu_region *r);
void ssemu_region_unlock(struct ssemu_region *r);
/* ssemu_fabric.c: is @pid a running process (not a zombie)? */
bool ssemu_pid_alive(int32_t pid);
/* ssemu_svc.c: release the services bound to endpoint @epi (it closes);
 * @return how many. */
int ssemu_svc_ep_closed_locked(struct ssemu_region *r, uint32_t epi);
/* ssemu_place.c: the policies, pure functions (tests/unit/test_place.c) */
struct ssemu_place_req {
	const struct ssemu_topo *topo;
	uint32_t policy;	/* enum ssemu_place_policy */
	uint32_t nranks;	/* ports to choose, > 0 */
	uint64_t seed;		/* SSEMU_PLACE_RANDOM */
	const uint32_t *map;	/* SSEMU_PLACE_MAP: nranks ports */
	/* May @port be given to this job (neither taken nor reserved)? */
	bool (*usable)(void *arg, uint32_t port);
	void *arg;
};

/*
 * Choose a port for each rank of a job, into @out[nranks]: distinct,
 * usable ports.  @return 0; 1 (linear only) no block of consecutive
 * usable ports was left and the lowest usable ports were taken instead;
 * -ENOSPC fewer usable ports than ranks; -EADDRINUSE a map port that is
 * not usable; -EINVAL a bad request or map (message in @err); -ENOMEM.
 */
int ssemu_place_choose(const struct ssemu_place_req *req, uint32_t *out,
		       char *err, size_t errlen);

/* ssemu_log.c */
/* Run @fn(@arg) under the fault guard (ssemu_guard.c): 0, or -EFAULT if it
 * touched memory that is not mapped (or not writable) and was cut short. */
int ssemu_guarded(void (*fn)(void *), void *arg);
/* (Re)install the fault guard's signal handlers if they are not in. */
void ssemu_guard_arm(void);
/* The check asked first about every SIGBUS (the shared segments'
 * truncation guard): true if it dealt with it. */
void ssemu_guard_set_bus_hook(bool (*hook)(const siginfo_t *si));

void ssemu_log(enum ssemu_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
