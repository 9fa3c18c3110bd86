/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the emulator's files share besides the region layout
 * (ssemu_region.h) and the model's interface (ssemu_model.h): this
 * process's handles on a fabric, the telemetry hooks, and what the
 * store's files give each other: the layout table (ssemu_store.c), the
 * lock and process slots (ssemu_lock.c), placement (ssemu_job.c), NICs,
 * endpoints and the reaper (ssemu_attach.c); and the helpers (placement
 * policies, the fault guard).
 */
#ifndef SSEMU_PRIV_H
#define SSEMU_PRIV_H

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "ssemu_region.h"
#include "ssemu_model.h"
#include "ssemu_gen.h"

/*
 * What this process remembers about who runs the engine of a shared
 * fabric (ssemu_runner.c).  Touched by every thread of the process that
 * progresses the fabric, so with relaxed atomics: they are hints.
 */
struct ssemu_runner_local {
	uint64_t run_mark;	/* engine->executed after our last run */
	uint64_t seen;		/* engine->executed when we last looked */
	uint64_t defer_until;	/* wall ns: leave work to the runner until */
	uint32_t looks;		/* polls since we last looked at the engine */
	uint32_t runner;	/* we ran the engine last, as far as we know */
	uint32_t bulk;		/* a bulk transfer is on (BULK_EVENTS) */
	uint64_t look_exec;	/* engine->executed at our last look */
	uint32_t ncpus;		/* CPUs online (0: not counted yet) */
	uint32_t crowded;	/* more processes attached than ncpus */
	uint32_t aside;		/* run_pub.aside when we last looked */
};

/* Per-process handles. */
struct ssemu_fabric {
	struct ssemu_region *r;
	size_t map_size;
	enum ssemu_store store;
	uint32_t flags;		/* SSEMU_OPEN_* */
	char shm_name[64];	/* "/" and the fabric's name */
	/* shm: the segment's file, ssemu_shm_dir() and shm_name */
	char shm_path[SSEMU_SHM_DIR_MAX + 64];
	unsigned progress_calls;
	unsigned run_until_calls;	/* (under the fabric lock) */
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
	struct ssemu_runner_local run;
	/* shared store: the segment's own copy of the header's write-once
	 * page (read only), compared with ours before every run */
	const void *view;
};

struct ssemu_nic {
	struct ssemu_fabric *fab;
	uint32_t slot;
	uint32_t port;		/* its fabric port, from attach on */
};

struct ssemu_ep {
	struct ssemu_nic *nic;
	uint32_t index;		/* global ep index */
	uint32_t pid;
	ssemu_addr_t addr;	/* its address (port, pid), from open on */
	/* in this process's mapping, once: polling an endpoint then reads
	 * its ring and nothing else */
	struct ssemu_region *r;
	struct ssemu_ring *ev_ring;
	/* its tx ring, where the layout puts it, and what this process last
	 * read of the ring's head (ssemu_ring_push_cached); the message slot
	 * its next allocation looks at first */
	struct ssemu_ring *tx_ring;
	uint32_t tx_head_seen;
	uint32_t alloc_cursor;
	uint32_t tc_mask;	/* classes its service allows */
	bool sent_at;		/* posted for a later time (ssemu_ep_send_at) */
	/* the event event_msg last found good (ck_msg NULL: none) and its
	 * payload's address, from the one read of the slot's buffer index
	 * that was checked, until its release: the payload, the check of
	 * its CRC and the release do not check it again */
	struct ssemu_msg *ck_msg;
	const uint8_t *ck_data;
	uint32_t ck_slot, ck_gen, ck_type;
	/* A shared store: what each of its message slots was last posted
	 * with (its generation and cookie), kept in this process, and the
	 * posts whose slot was reused before their completion was polled.
	 * A completion's cookie comes from here, not from the segment's
	 * copy, which another process may have written (ssemu_msg.c). */
	struct ssemu_owed *owed;	/* msgs_per_ep entries; NULL: private */
	struct ssemu_owed *owed_old;
	uint32_t nowed_old, owed_old_cap;
};

struct ssemu_owed {
	uint64_t cookie;
	uint32_t gen;
	uint16_t local;		/* (owed_old) the slot, of the endpoint's */
	uint16_t live;		/* its completion is still to come */
};

/* Free @ep and what it keeps in this process (ssemu_msg.c). */
void ssemu_ep_free(struct ssemu_ep *ep);

/*
 * This process goes off to a long copy (ssemu_ep_read_early) and will
 * not poll for a while: if it ran the engine last, the processes that
 * leave new work to it (defer_to_runner, ssemu_runner.c) take it over at
 * once instead of after their deferral.
 */
void ssemu_runner_step_aside(struct ssemu_fabric *f);

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
/*
 * Under group windows, the NIC arrival the model is running (its fabric
 * and its event key, ev_key), set by ssemu_model_dispatch: where a
 * message delivered in it first brings its NIC pair, that pair's place
 * among the pairs its window first brings is that of the event in the
 * engine's usual order.  (Process-wide, as the run in ssemu_train.c: a
 * fabric of group windows has one process.)
 */
extern const struct ssemu_region *ssemu_gw_ev_r;
extern uint64_t ssemu_gw_ev_key;
/* The latency bin (struct ssemu_tel_counters' lat) of @ps. */
uint32_t ssemu_tel_bin(ssemu_time_t ps);
/* A packet of @type (enum ssemu_pkt_type) lost in the fabric. */
void ssemu_tel_drop(struct ssemu_region *r, uint32_t tc, uint32_t type);
void ssemu_tel_retry(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_throttle(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_mark(struct ssemu_region *r, uint32_t tc);
void ssemu_tel_queue(struct ssemu_region *r, uint32_t tc, uint32_t depth);

/*
 * May a call on @f go on: the segment neither cut short under this
 * process (SIGBUS) nor marked broken?  @return 0 or -EIO.
 */
static inline int ssemu_fab_check(struct ssemu_fabric *f)
{
	if (unlikely(f->gone)) {
		if (!ssemu_broken(f->r))
			ssemu_fail(f->r, "the segment was truncated under "
				   "process %d", (int)getpid());
		return -EIO;
	}
	return ssemu_broken(f->r) ? -EIO : 0;
}

/* ssemu_fabric.c: is the segment's header still what attach checked
 * (else the fabric is marked broken)? */
bool ssemu_fabric_image_bad(struct ssemu_fabric *f);

/* ssemu_store.c: the region's sections, in the order it holds them. */
enum ssemu_sec {
	SSEMU_SEC_ENGINE,
	SSEMU_SEC_NICS,
	SSEMU_SEC_EPS,
	SSEMU_SEC_MSGS,
	SSEMU_SEC_MSTATE,
	SSEMU_SEC_RINGS,
	SSEMU_SEC_PKTS,
	SSEMU_SEC_SWMAP,
	SSEMU_SEC_PORTMAP,
	SSEMU_SEC_PAIR,
	SSEMU_SEC_PAIRN,
	SSEMU_SEC_WORK,
	SSEMU_SEC_OVF,
	SSEMU_SEC_READY,
	SSEMU_SEC_RESV,
	SSEMU_SEC_NIC_EPS,
	SSEMU_SEC_SWITCHES,
	SSEMU_SEC_VOQROW,
	SSEMU_SEC_VOQS,
	SSEMU_SEC_MRS,
	SSEMU_SEC_TEL,
	SSEMU_SEC_GEN,
	SSEMU_SEC_BUFS,
	SSEMU_SEC_COUNT
};

/* A section: @count elements of @esize bytes, @size in all, at region
 * offset @off (its header field is @name with "_off"). */
struct ssemu_section {
	const char *name;
	uint64_t off, size, count, esize;
};

/* The layout of a region, from its configuration alone. */
struct ssemu_layout {
	struct ssemu_section sec[SSEMU_SEC_COUNT];
	uint64_t total;		/* bytes, page aligned */
	uint64_t ring_bytes;	/* an endpoint's two rings */
	uint32_t voq_per_switch;
	uint32_t voq_rows;
	uint32_t pair_bits;	/* the pair table: 1 << pair_bits entries */
};

void ssemu_layout_compute(const struct ssemu_config *c,
			  const struct ssemu_topo *t, struct ssemu_layout *l);
/* A new region in private memory for @f, of layout @l. */
int ssemu_store_private(struct ssemu_fabric *f, const struct ssemu_config *c,
			const struct ssemu_topo *t,
			const struct ssemu_layout *l, char *err, size_t errlen);
/* The shared segment @f->shm_name (as @f->flags say: created if it is not
 * there, or existing only), mapped and checked; *@view the segment's own
 * copy of the header's write-once page. */
int ssemu_store_shm(struct ssemu_fabric *f, const struct ssemu_config *c,
		    const struct ssemu_topo *t, const struct ssemu_layout *l,
		    const void **view, char *err, size_t errlen);

/* ssemu_lock.c: the fabric lock (0 or -errno; trylock: -EBUSY if held).
 * A lock whose holder died is made consistent and repaired first. */
int ssemu_lock_init(struct ssemu_region *r);
int ssemu_region_lock(struct ssemu_region *r);
int ssemu_region_trylock(struct ssemu_region *r);
/* This process's pid, without a system call (ssemu_lock.c) */
uint32_t ssemu_self_pid(void);
void ssemu_region_unlock(struct ssemu_region *r);
/* ... without publishing what the engine did (struct ssemu_run_pub): for
 * a holder that ran no event and scheduled none, and may not touch the
 * engine's pages (a closing handle, no longer guarded against a segment
 * cut short) */
void ssemu_region_release(struct ssemu_region *r);
/* What repairs the region after its lock's holder died, under the lock. */
void ssemu_lock_set_repair(void (*repair)(struct ssemu_region *r));
/* Is @pid a running process (not a zombie)? */
bool ssemu_pid_alive(int32_t pid);
/* Process slots: take one for this process (-ENOSPC: none free), give it
 * back (@return the live processes still attached), count the live ones
 * (the reaper, ssemu_attach.c, frees the slots of dead processes). */
int ssemu_proc_claim_locked(struct ssemu_region *r, void *arg);
int ssemu_proc_unregister_locked(struct ssemu_region *r);
uint32_t ssemu_procs_live(const struct ssemu_region *r);

/* ssemu_job.c: placement reservations, under the lock. */
/* A NIC of job @slot detached (or its process died). */
void ssemu_job_nic_gone_locked(struct ssemu_region *r, uint32_t slot);
/* After a process died holding the lock: drop half-made jobs. */
void ssemu_jobs_sweep_locked(struct ssemu_region *r);
/* Is endpoint port @port neither taken by a NIC nor reserved for a job
 * (@arg: the region)? */
bool ssemu_port_usable(void *arg, uint32_t port);
/*
 * The port of rank @o->rank of job @o->job, reserving ports for the whole
 * job when it is the job's first rank here.  @return 0 with the port and
 * the job slot, or a negative errno (explained in @why).
 */
int ssemu_place_locked(struct ssemu_region *r,
		       const struct ssemu_nic_opts *o, uint32_t *portp,
		       uint32_t *slotp, char *why, size_t whylen);

/* ssemu_attach.c: NICs, endpoints and the reaper, under the lock. */
/* The NIC pair table (ssemu_pair.c). */
/* A NIC pair's congestion state as a fresh pair has it. */
void ssemu_pair_cc_reset(const struct ssemu_config *c, struct ssemu_pair *pr);
/* ... and all of a fresh pair's state (what a pair without an entry has). */
void ssemu_pair_fresh(const struct ssemu_config *c, struct ssemu_pair *pr);
/* (ssemu_pair_find, in ssemu_region.h: the entry of a pair, or NULL) */
/* ... made (fresh) if need be; NULL: the table is full (logged). */
struct ssemu_pair *ssemu_pair_get(struct ssemu_region *r, uint32_t nic,
				  uint32_t dnic, ssemu_time_t now);
/* ... the same, for a pair that ssemu_pair_lookup found without an entry,
 * its probe ending at @at, the table unchanged since. */
struct ssemu_pair *ssemu_pair_make(struct ssemu_region *r, uint32_t nic,
				   uint32_t dnic, uint64_t at,
				   ssemu_time_t now);
/* Done with @pr (NULL: nothing) for now: its entry goes if its state is a
 * fresh pair's at @now.  Pointers to entries are good until the next put
 * or get. */
void ssemu_pair_put(struct ssemu_region *r, struct ssemu_pair *pr,
		    ssemu_time_t now);
/* A NIC attaches at slot @nic (see ssemu_pair.c). */
void ssemu_pair_reset_nic(struct ssemu_region *r, uint32_t nic,
			  ssemu_time_t now);
/* NIC @nic was reset: none of its packets are in flight. */
void ssemu_pair_nic_idle(struct ssemu_region *r, uint32_t nic,
			 ssemu_time_t now);
/* Every pair fresh (the model's reset). */
void ssemu_pair_clear(struct ssemu_region *r);
/* Pairs with state at once (max_pairs, or its default), the table's size
 * (log2) and a NIC's stretch of it (log2). */
uint32_t ssemu_config_pairs(const struct ssemu_config *c);
uint32_t ssemu_pair_bits(const struct ssemu_config *c);
uint32_t ssemu_pair_shift(const struct ssemu_config *c, uint32_t bits);
/* Close pid @pid of NIC @nic if it is open. */
void ssemu_ep_close_locked(struct ssemu_region *r, uint32_t nic, uint32_t pid);
/* Detach what dead processes held; @return how many NICs and slots. */
unsigned ssemu_reap_dead_locked(struct ssemu_region *r);
/* A process slot for this process, reaping the dead if none is free. */
int ssemu_proc_register_locked(struct ssemu_region *r);
/* The repair after a process died holding the lock (the model's crash
 * recovery, the reaper, the job sweep): ssemu_lock_set_repair's. */
void ssemu_repair_locked(struct ssemu_region *r);
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

#endif
