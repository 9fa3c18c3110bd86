/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ssemu.h: the public API of the emulated Slingshot fabric (libssemu).
 *
 * This header is the only door between the libfabric provider (prov/) and the
 * emulator (emu/), the way libcxi is the only door between the cxi provider
 * and a Cassini NIC.  It has no libfabric types.  Every call returns 0 (or a
 * count) on success and a negative errno value on failure; none of them
 * blocks unless its name says "wait".
 *
 * Objects:
 *   ssemu_fabric  a process's handle on one fabric (in-process or shared)
 *   ssemu_nic     a Cassini-like NIC attached to one switch port
 *   ssemu_ep      an endpoint ("pid") on a NIC: a tx ring, an event ring,
 *                 message slots and data buffers of its own
 * Time is model time in integer picoseconds (ssemu_time_t).
 */
#ifndef SSEMU_H
#define SSEMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <slingshot_emu/ssemu_auth.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Everything declared here is libssemu's exported interface: the library is
 * built with hidden visibility, and only what this header (and
 * ssemu_rng.h) declares is visible outside the shared library.
 */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef uint64_t ssemu_time_t; /* picoseconds */

#define SSEMU_PS_PER_NS 1000ULL
#define SSEMU_PS_PER_US 1000000ULL
#define SSEMU_PS_PER_MS 1000000000ULL
#define SSEMU_PS_PER_S 1000000000000ULL

/*
 * Fabric address of an endpoint: the global endpoint port (the topology's
 * endpoint index, 24 bits) and the pid on that NIC (8 bits).
 */
typedef uint32_t ssemu_addr_t;
#define SSEMU_ADDR(port, pid) (((uint32_t)(port) << 8) | ((uint32_t)(pid) & 0xff))
#define SSEMU_ADDR_PORT(a) ((uint32_t)(a) >> 8)
#define SSEMU_ADDR_PID(a) ((uint32_t)(a) & 0xff)
#define SSEMU_ADDR_INVALID UINT32_MAX
/* Ports stay below 0xff0000: the provider's addresses use port values
 * from there up to name services (fi_slingshot_emu_ext.h). */
#define SSEMU_MAX_PORTS 0xff0000u

#define SSEMU_MAX_TCLASS 8
#define SSEMU_NAME_MAX 32

/* ------------------------------------------------------------------ */
/* Configuration                                                        */
/* ------------------------------------------------------------------ */

/* Dragonfly shape: g groups of a switches, p endpoints and h global links
 * per switch.  g == 1 and a == 1 is a single switch. */
struct ssemu_topo_params {
	uint32_t groups;		/* g */
	uint32_t switches_per_group;	/* a */
	uint32_t endpoints_per_switch;	/* p */
	uint32_t globals_per_switch;	/* h */
	uint32_t local_links_per_pair;	/* l: parallel links between two
					 * switches of a group (0 means 1) */
};

struct ssemu_link_params {
	uint64_t rate_bps;	/* bits per second */
	ssemu_time_t delay;	/* propagation delay, ps */
};

struct ssemu_tclass_desc {
	char name[SSEMU_NAME_MAX];
	uint8_t priority;	/* higher is served first */
	uint8_t min_pct;	/* guaranteed share of an output, percent */
	uint8_t max_pct;	/* cap on the share of an output, percent */
	bool ordered;		/* in-order delivery per (src, dst) */
	bool lossy;		/* drop when buffers are full (NIC retries) */
	int8_t route_bias;	/* adaptive routing: + favours minimal paths */
	/* Jobs may not use it (configuration "allowed = false"): kept
	 * negated so that a zeroed description is allowed. */
	bool denied;
};

/* What the provider does when a job asks for a class that is denied. */
enum ssemu_tclass_denied {
	SSEMU_TCLASS_DENIED_ERROR = 0,	/* the open fails (-FI_EINVAL) */
	SSEMU_TCLASS_DENIED_WARN = 1,	/* warn, use the default class */
};

enum ssemu_clock_mode {
	SSEMU_CLOCK_VIRTUAL = 0,	/* run the model as fast as possible */
	SSEMU_CLOCK_REALTIME = 1,	/* model ns = wall ns / dilation */
};

/*
 * Modelled jobs (emu/ssemu_gen.c): traffic the engine generates itself,
 * declared in the fabric configuration ("modelled_jobs", man page), sent
 * through the same NICs, windows, congestion control, routing and classes
 * as the traffic of real endpoints.
 */
#define SSEMU_CONFIG_MJOBS 8	/* modelled jobs a fabric declares */
#define SSEMU_MJOB_RUNS 8	/* explicit placement: runs of ports */

enum ssemu_mjob_pattern {
	SSEMU_MJOB_INCAST = 0,	/* ranks >= targets send to rank % targets */
	SSEMU_MJOB_ALLTOALL,	/* each rank to every other in turn */
	SSEMU_MJOB_BISECTION,	/* rank i to rank (i + n/2) % n */
	SSEMU_MJOB_UNIFORM,	/* seeded uniform random destinations */
	SSEMU_MJOB_BURSTY_INCAST,	/* incast in bursts, gap between */
	SSEMU_MJOB_RING,	/* rank i to rank i + 1 */
	SSEMU_MJOB_ALLREDUCE,	/* dependency chain: recursive doubling,
				 * or a ring when n is not a power of 2 */
	SSEMU_MJOB_PATTERNS
};

/* One modelled job as declared (no padding: it is hashed as bytes). */
struct ssemu_mjob_desc {
	char name[SSEMU_NAME_MAX];
	uint32_t endpoints;
	uint32_t placement;	/* enum ssemu_place_policy (MAP: the runs) */
	uint32_t pattern;	/* enum ssemu_mjob_pattern */
	uint32_t targets;	/* incast: receiving ranks */
	uint64_t size;		/* bytes per message */
	double load;		/* open loop: fraction of the injection rate;
				 * 0: closed loop (inflight) */
	uint32_t inflight;	/* closed loop: messages outstanding per rank */
	uint32_t burst;		/* bursty-incast: messages per burst */
	uint64_t count;		/* messages (allreduce: operations) per rank;
				 * 0: no limit */
	ssemu_time_t gap;	/* bursty-incast: idle between bursts;
				 * allreduce: between operations (ps) */
	ssemu_time_t start, stop;	/* ps; stop 0: no end */
	uint32_t tclass;
	uint32_t nruns;		/* explicit placement: runs of ports */
	uint32_t run_first[SSEMU_MJOB_RUNS];
	uint32_t run_len[SSEMU_MJOB_RUNS];
};

struct ssemu_config {
	char preset[SSEMU_NAME_MAX];
	struct ssemu_topo_params topo;
	struct ssemu_link_params edge;	 /* NIC <-> switch */
	struct ssemu_link_params local;	 /* switch <-> switch in a group (copper) */
	struct ssemu_link_params global; /* group <-> group (optical) */
	uint32_t mtu;			 /* payload bytes per packet */
	uint32_t pkt_overhead;		 /* header + framing bytes per packet */
	uint32_t port_buf_pkts;		 /* input buffer per port and class, packets */
	ssemu_time_t sw_lat_mean;	 /* switch pipeline latency, ps */
	ssemu_time_t sw_lat_sd;
	ssemu_time_t sw_lat_min;
	ssemu_time_t sw_lat_max;
	uint32_t nic_window;		 /* packets in flight per destination */
	uint32_t ntclass;
	struct ssemu_tclass_desc tclass[SSEMU_MAX_TCLASS];
	uint32_t default_tclass;
	uint32_t tclass_denied;		 /* enum ssemu_tclass_denied */
	char routing[SSEMU_NAME_MAX];	 /* routing ops by name: "minimal" */
	char cc[SSEMU_NAME_MAX];	 /* congestion control ops: "none" */
	char arb[SSEMU_NAME_MAX];	 /* output arbitration ops: "priority-rr" */
	uint64_t seed;
	enum ssemu_clock_mode clock;
	double dilation;		 /* realtime: wall ns per model ns */
	/* Resources of the fabric store. */
	uint32_t max_nics;		 /* NICs attached at once */
	uint32_t max_switches;		 /* switch models instantiated at once */
	uint32_t eps_per_nic;		 /* endpoints open at once on a NIC */
	/* endpoint slots of the fabric, shared by its NICs (each holds an
	 * endpoint's message slots, buffers and rings); 0: max_nics x
	 * eps_per_nic */
	uint32_t max_eps;
	uint32_t msgs_per_ep;		 /* message slots (also tx ring size) */
	uint32_t bufs_per_ep;		 /* large data buffers per endpoint */
	uint32_t buf_size;		 /* bytes per large data buffer */
	uint32_t max_pkts;		 /* packets in the model at once */
	uint32_t max_events;		 /* pending engine events */
	/* NIC pairs with state at once (traffic in flight, congestion
	 * state); 0: one per message slot (at least 4096, at most
	 * max_nics squared) */
	uint32_t max_pairs;
	uint32_t ev_ring;		 /* event ring entries per endpoint */
	/* Telemetry time series (docs/telemetry.md). */
	ssemu_time_t tel_interval;	 /* sample period, ps; 0: none */
	uint32_t tel_samples;		 /* samples the ring keeps */
	/* Services the fabric starts with, besides the default one
	 * (ssemu_auth.h). */
	uint32_t nservices;
	struct ssemu_service services[SSEMU_CONFIG_SERVICES];
	/* A shared segment for more than its creator (configuration
	 * "share_group", ssemu_share_group_parse): share_group 1 makes it
	 * mode 0660 with group share_gid, 0 mode 0600.  Not in the hash: it
	 * says who may attach, not what the fabric is (an attacher asking
	 * for a group gets -EEXIST from a segment not shared with it). */
	uint32_t share_group;
	uint32_t share_gid;
	/* Modelled jobs, placed when the fabric is created. */
	uint32_t nmjobs;
	/* The engine takes the events of each window of model time
	 * (ssemu_config_group_window long) a Dragonfly group at a time,
	 * each group's in (time, key) order, instead of all of them in that
	 * order (ssemu_region.h, ssemu_gw_enc): a private store, the
	 * virtual clock, and traffic from modelled jobs or posted for its
	 * time ahead of the engine (ssemu_ep_send_at); a send posted now
	 * goes in at the clock of the group whose event ran last.  Not in
	 * the hash (no shared fabric has it). */
	uint32_t group_windows;
	struct ssemu_mjob_desc mjobs[SSEMU_CONFIG_MJOBS];
};

/* Bytes a message may carry inline in its slot (no large buffer). */
#define SSEMU_INLINE_MAX 192
/* Event ring entries an endpoint may have (config ev_ring): powers of two
 * from, to. */
#define SSEMU_EV_RING_MIN 16
#define SSEMU_EV_RING_MAX 65536

/**
 * Fill @cfg with a named preset ("switch", "2switch", "2group", "crystal",
 * "malbec", "shandy", "full").
 * @return 0, or -ENOENT for an unknown name.
 */
int ssemu_config_preset(const char *name, struct ssemu_config *cfg);

/**
 * Load a fabric configuration file (libconfig syntax, keys documented in
 * docs/fabric-config.md).  It may start from a preset and override values.
 * @return 0; -EINVAL with "file:line: key: problem" in @err.
 */
int ssemu_config_load(const char *path, struct ssemu_config *cfg, char *err,
		      size_t errlen);

/**
 * The configuration a set of settings asks for, as the provider and the
 * command-line tool both read them (FI_SLINGSHOT_EMU_CONFIG, _PRESET,
 * _CLOCK, _DILATION): a file if @config_path is set, else @preset (NULL:
 * "switch"), then the clock mode ("virtual" | "realtime") and dilation on
 * top.  Any argument may be NULL.
 * @return 0; -EINVAL with the setting and the problem in @err.
 */
int ssemu_config_select(const char *config_path, const char *preset,
			const char *clock, const char *dilation,
			struct ssemu_config *cfg, char *err, size_t errlen);

/** Names of the presets, NULL-terminated. */
const char *const *ssemu_config_preset_names(void);

/**
 * Check a configuration for consistency and buildability.
 * @return 0, or -EINVAL with a message in @err.
 */
int ssemu_config_validate(const struct ssemu_config *cfg, char *err,
			  size_t errlen);

/** A hash of everything that shapes the fabric, clock mode included. */
uint64_t ssemu_config_hash(const struct ssemu_config *cfg);

/**
 * Name the first difference between two configurations in @buf.
 * @return 1 if they differ, 0 if they shape the same fabric.
 */
int ssemu_config_diff(const struct ssemu_config *a,
		      const struct ssemu_config *b, char *buf, size_t len);

/** Number of endpoint ports the topology has. */
uint64_t ssemu_config_nports(const struct ssemu_config *cfg);

/**
 * The window of group windows (ssemu_config.group_windows), ps: nothing one
 * Dragonfly group does reaches another sooner.  A packet or a credit
 * crosses a global link (its delay); a congestion-control frame goes back
 * to its source at least a switch's mean latency and a local and an edge
 * link's delay after the packet that prompted it.
 */
static inline ssemu_time_t ssemu_config_group_window(
	const struct ssemu_config *cfg)
{
	ssemu_time_t fgfc = cfg->sw_lat_mean + cfg->local.delay +
			    cfg->edge.delay;

	return cfg->global.delay < fgfc ? cfg->global.delay : fgfc;
}

/* ------------------------------------------------------------------ */
/* Fabric                                                               */
/* ------------------------------------------------------------------ */

struct ssemu_fabric;
struct ssemu_nic;
struct ssemu_ep;

enum ssemu_store {
	SSEMU_STORE_PRIVATE = 0,	/* this process's memory only */
	SSEMU_STORE_SHM = 1,		/* a named shared segment (ssemu_shm_dir) */
};

struct ssemu_fabric_opts {
	enum ssemu_store store;
	const char *name;	/* shm: segment name (no '/'); NULL: per user */
	const struct ssemu_config *config;	/* NULL: preset "switch" */
	uint32_t flags;		/* SSEMU_OPEN_* */
};

/*
 * A shared fabric is a file of its name in a directory: $SSEMU_SHM_DIR
 * when that is set and not empty, else /dev/shm (where shm_open puts
 * segments).  Every process of a fabric must see the same directory.  On
 * a tmpfs mounted with huge=advise the fabric is on 2 MiB pages but for
 * its large sparse sections, and the processes sharing it reach it with
 * a few TLB entries instead of hundreds: the engine's run after a context
 * switch is far cheaper (README, "Huge pages for a shared fabric").
 */
#define SSEMU_SHM_DIR_DEFAULT "/dev/shm"
#define SSEMU_SHM_DIR_MAX 190

/**
 * The directory of shared fabrics.  @return $SSEMU_SHM_DIR or
 * SSEMU_SHM_DIR_DEFAULT; NULL, with the reason in @err, when
 * SSEMU_SHM_DIR is not an absolute path of at most SSEMU_SHM_DIR_MAX
 * characters.
 */
const char *ssemu_shm_dir(char *err, size_t errlen);

/* Attach to an existing shared fabric only, taking its configuration. */
#define SSEMU_OPEN_EXISTING (1u << 0)
/* Look without taking part: not counted as a user, never removes the
 * segment (status and counter tools). Implies SSEMU_OPEN_EXISTING. */
#define SSEMU_OPEN_OBSERVER (1u << 1)

/**
 * Open (create or attach) a fabric.
 * @return 0; -EINVAL bad options; -EEXIST a segment of that name exists
 * with another configuration (message in @err); -EACCES owned by another
 * user; -EPROTO corrupt or incompatible segment; -ENOMEM.
 */
int ssemu_fabric_open(const struct ssemu_fabric_opts *opts,
		      struct ssemu_fabric **fabric, char *err, size_t errlen);

/** Detach; the last process out removes a shared segment. */
void ssemu_fabric_close(struct ssemu_fabric *fabric);

/** The configuration the fabric was built with. */
const struct ssemu_config *ssemu_fabric_config(struct ssemu_fabric *fabric);

/** Current model time. */
ssemu_time_t ssemu_fabric_now(struct ssemu_fabric *fabric);

/**
 * Run the engine if nobody else is: drain every endpoint's tx ring, advance
 * the model by at most @budget events (as far as the clock mode allows) and
 * deliver events.  Never blocks on the fabric lock.  With nothing to do
 * (virtual clock: nothing posted, no event pending) it returns 0 without
 * taking the lock.  On a shared virtual-clock fabric the engine stays with
 * the process that ran it last while that one keeps it going: another
 * process leaves new work to it for up to about 10 us before it runs the
 * engine itself (only which core does the work changes, not the model).
 * @return number of events processed (>= 0), or -EBUSY if another process
 * holds the engine or is left to run it, or a negative error.
 */
int ssemu_fabric_progress(struct ssemu_fabric *fabric, unsigned budget);

/**
 * Run the engine until model time @t (virtual clock; in-process tools and
 * tests), draining tx rings as it goes; the clock is then @t, or with @t
 * UINT64_MAX (until no event is left, or only modelled jobs' with no real
 * message in flight: they never end) the last event's time.  Blocks on
 * the fabric lock.
 * @return 0 or a negative error.
 */
int ssemu_fabric_run_until(struct ssemu_fabric *fabric, ssemu_time_t t);

/**
 * As ssemu_fabric_run_until, but the run stops after the first event that
 * frees a message slot of a watched endpoint (ssemu_ep_watch), or that
 * finds an endpoint's event ring full (a slot is given back only as its
 * events are pushed, and an event that waits for ring space is pushed
 * when the next run starts after a poll made room: poll the endpoints,
 * then run again); the clock is then that event's time, and events of
 * the same time may follow.  For a model-time tool whose results must not
 * depend on how the engine's runs are cut: a source, out of slots, posts
 * when a slot frees, and events wait for ring space only until the poll
 * at that instant, without stepping the engine an event at a time.
 * @return 1 if the run stopped so, 0 if it reached @t, or a negative
 * error.
 */
int ssemu_fabric_run_until_watched(struct ssemu_fabric *fabric,
				   ssemu_time_t t);

/* The most endpoints ssemu_fabric_watched names after one stop. */
#define SSEMU_FABRIC_WATCHED_MAX 16

/**
 * The watched endpoints (by slot, ssemu_ep_slot) whose message slots the
 * last run of ssemu_fabric_run_until_watched freed, at most @max of them
 * into @slots: what to try posting on after it stopped (a stop for a full
 * ring names none).
 * @return how many, -ENOSPC if more than @max or than the fabric keeps
 * (SSEMU_FABRIC_WATCHED_MAX) were freed (then any watched endpoint may
 * have a free slot), or
 * -EINVAL, -EIO.
 */
int ssemu_fabric_watched(struct ssemu_fabric *fabric, uint32_t *slots,
			 uint32_t max);

/** True if the model has no pending work at all (rings and events empty). */
bool ssemu_fabric_idle(struct ssemu_fabric *fabric);

/* ------------------------------------------------------------------ */
/* NICs and endpoints                                                   */
/* ------------------------------------------------------------------ */

#define SSEMU_PORT_ANY UINT32_MAX

/*
 * Placement: where a NIC attached with port SSEMU_PORT_ANY goes.  With a
 * job id, a rank and a job size, the first rank of the job to attach
 * reserves a port for every rank of the job at once (under the fabric
 * lock, among ports neither taken nor reserved by another job), and each
 * rank then attaches at its own port; the reservation ends when the job's
 * last NIC detaches (or its processes die).  Without them, or with
 * SSEMU_PLACE_FIRST_FREE, the NIC takes the first port that is neither
 * taken nor reserved.
 */
enum ssemu_place_policy {
	SSEMU_PLACE_FIRST_FREE = 0,
	SSEMU_PLACE_LINEAR,	 /* the lowest block of consecutive ports */
	SSEMU_PLACE_INTERLEAVED, /* round robin over switches and groups */
	SSEMU_PLACE_RANDOM,	 /* seeded random choice */
	SSEMU_PLACE_MAP,	 /* explicit: ssemu_nic_opts::map */
	SSEMU_PLACE_COUNT
};

/** Policy by name ("first-free", "linear", "interleaved", "random",
 * "map"), or -1. */
int ssemu_place_policy_index(const char *name);
/** Name of a policy, "?" if unknown. */
const char *ssemu_place_policy_name(uint32_t policy);

struct ssemu_nic_opts {
	uint32_t port;		/* SSEMU_PORT_ANY: placed by policy */
	uint32_t job;		/* job id: counters, reports, placement */
	int32_t rank;		/* launcher rank, -1 unknown */
	uint32_t nranks;	/* job size, 0 unknown */
	uint32_t policy;	/* enum ssemu_place_policy */
	uint32_t pad;
	uint64_t seed;		/* SSEMU_PLACE_RANDOM */
	const uint32_t *map;	/* SSEMU_PLACE_MAP: port of each rank,
				 * nranks entries */
};

/**
 * Attach a NIC to a free endpoint port (@opts NULL: first free port).
 * @return 0; -EADDRINUSE port taken, or reserved by another job, or the
 * job's rank already attached, or a map port taken; -ENOSPC no free port,
 * NIC slot or job slot, or a job larger than the free ports; -EINVAL port
 * out of range, rank >= nranks, unknown policy, a map without ports, or a
 * rank whose job was placed with another size or policy.  Failures are
 * explained through the log sink.
 */
int ssemu_nic_attach(struct ssemu_fabric *fabric,
		     const struct ssemu_nic_opts *opts, struct ssemu_nic **nic);
void ssemu_nic_detach(struct ssemu_nic *nic);
uint32_t ssemu_nic_port(struct ssemu_nic *nic);

/**
 * Open an endpoint (a pid) on a NIC.
 * @return 0; -ENOSPC all pids in use.
 */
int ssemu_ep_open(struct ssemu_nic *nic, struct ssemu_ep **ep);

/* How long ssemu_ep_close waits for what the endpoint posted. */
#define SSEMU_CLOSE_DRAIN_MS 5000

/**
 * Close an endpoint.  Messages and RMA operations it posted belong to the
 * NIC: the close drives the engine (or waits for the process that runs
 * it) until each of them has been delivered, or has failed at its
 * destination (nobody there: counted in msgs_unreachable), for at most
 * @timeout_ms of wall-clock time (0: not at all).  The destination NIC
 * takes every packet whether or not its application polls, so delivery
 * takes model time only; the bound is reached when the engine cannot run
 * (a realtime clock slowed far down, a runner stopped holding the fabric
 * lock), or for messages still waiting for a free message slot in the
 * provider, which a receiver that has not polled for msgs_per_ep of this
 * endpoint's messages holds.  What is left then is discarded, logged and
 * counted in msgs_discarded.  Its completion events, which nobody will
 * read, are dropped.
 * @return 0 all delivered (or failed at the destination); -ETIMEDOUT some
 * were discarded; another negative errno if the fabric lock is broken.
 */
int ssemu_ep_close_timeout(struct ssemu_ep *ep, int timeout_ms);
/** ssemu_ep_close_timeout(@ep, SSEMU_CLOSE_DRAIN_MS). */
void ssemu_ep_close(struct ssemu_ep *ep);
ssemu_addr_t ssemu_ep_addr(struct ssemu_ep *ep);
struct ssemu_fabric *ssemu_ep_fabric(struct ssemu_ep *ep);

/**
 * Copy @len bytes from @src to @dst, either of which may be application
 * memory that is not mapped or not writable: the copy then stops and
 * returns -EFAULT instead of faulting the process (the emulated NIC's DMA
 * error).  Costs a sigsetjmp over memcpy.
 * @return 0 or -EFAULT.
 */
int ssemu_copy_user(void *dst, const void *src, size_t len);

/** Largest message one ssemu_ep_send can carry. */
size_t ssemu_ep_max_msg(struct ssemu_ep *ep);

/* Send flags */
#define SSEMU_SEND_ORDERED (1u << 0)	/* in order with other ordered sends */
/*
 * The message is modelled as the iov's total length and carries none of
 * its bytes: nothing is read from the iov (its bases may be NULL) or
 * written to the segment, and the RECV says SSEMU_EV_NO_DATA (it has no
 * payload to read).  It takes a slot, and a large buffer if it is longer
 * than an inline payload, as one with its bytes would (they bound what
 * an endpoint has in flight).  For a tool that drives the model with
 * traffic it never looks at.  In a private store (SSEMU_STORE_PRIVATE)
 * only.
 */
#define SSEMU_SEND_NO_DATA (1u << 3)

/* Opaque header words the provider carries with every message. */
#define SSEMU_HDR_WORDS 4

struct ssemu_send {
	ssemu_addr_t dest;
	uint32_t tclass;
	uint32_t flags;
	uint64_t hdr[SSEMU_HDR_WORDS];
	const struct iovec *iov;
	size_t iov_count;
	uint64_t cookie;	/* returned in the SEND_DONE event */
};

/**
 * Post a message.  Data is copied before return; the iov may be reused.
 * @return 0; -EAGAIN no slot or ring space (progress and retry, nothing is
 * lost); -EMSGSIZE longer than ssemu_ep_max_msg; -EINVAL bad dest, class
 * or flags; -ENOTSUP SSEMU_SEND_NO_DATA in a shared store;
 * -EFAULT part of the iov is not readable memory, address 0 included
 * (nothing is posted); -EACCES the endpoint's service does not allow the
 * class.  With group windows (ssemu_config.group_windows), -EINVAL too
 * where now, the clock of the group whose event ran last, is in a window
 * the endpoint's group has run (so after a run to a window's end: post
 * for a later time with ssemu_ep_send_at); an RMA (ssemu_ep_rma) the same.
 */
int ssemu_ep_send(struct ssemu_ep *ep, const struct ssemu_send *send);

/**
 * Post a message that enters the model at model time @t, not now: its slot
 * is taken and filled now, and it goes to its NIC at @t after every other
 * event of that time, as a send posted between two runs of the engine
 * stopped at @t does (the posts of one time in the order of their
 * endpoints).  For a model-time tool that draws its traffic ahead of the
 * engine, as with group windows (ssemu_config.group_windows), where the
 * engine's clock is one group's.  @t equal to now is ssemu_ep_send.  A
 * private store on the virtual clock only.
 * @return as ssemu_ep_send, and -EINVAL @t earlier than now, or (group
 * windows) in a window the endpoint's group has run; -ENOTSUP a shared
 * store or the realtime clock.
 */
int ssemu_ep_send_at(struct ssemu_ep *ep, const struct ssemu_send *send,
		     ssemu_time_t t);

enum ssemu_event_type {
	SSEMU_EV_RECV = 1,	/* a message arrived (release it after use) */
	SSEMU_EV_SEND_DONE,	/* a message was acknowledged (or failed) */
	SSEMU_EV_RMA_DONE,	/* an RMA operation completed (or failed) at
				 * its target; release it after use */
	SSEMU_EV_RMA_REMOTE,	/* target side: an RMA operation that asked
				 * for it (SSEMU_RMA_REMOTE_EVENT) was done
				 * to this endpoint's memory */
};

/*
 * A RECV of at most SSEMU_EV_CARRY bytes carries its payload in the event
 * itself (private: read it with ssemu_event_payload, _copy or _data as any
 * other): the receiver never reads the sender's message slot, which the
 * engine gives back as it pushes the event.  Its CRC is checked then, and
 * ssemu_event_verify reports what that check found.
 */
#define SSEMU_EV_CARRY 16

/* Event flags */
#define SSEMU_EV_NO_DATA (1u << 0)	/* RECV: sent with SSEMU_SEND_NO_DATA:
					 * len bytes modelled, none to read */

struct ssemu_event {
	uint32_t type;		/* enum ssemu_event_type */
	int32_t status;		/* 0 or -errno (SEND_DONE) */
	ssemu_addr_t src;	/* RECV: sender */
	uint32_t tclass;
	uint64_t len;		/* RECV: payload bytes */
	uint64_t hdr[SSEMU_HDR_WORDS];	/* RECV */
	ssemu_time_t time;	/* model time of the event */
	ssemu_time_t posted;	/* model time the source NIC took the
				 * message (time - posted: its latency) */
	union {
		struct {
			uint64_t cookie;	/* SEND_DONE, RMA_DONE */
			uint64_t addr;		/* RMA_*: target address,
						 * as sent */
		};
		uint8_t data[SSEMU_EV_CARRY];	/* private: a RECV's
						 * payload, carried */
	};
	union {
		uint32_t op;	/* RMA_DONE, RMA_REMOTE: enum ssemu_rma_op */
		uint32_t flags;	/* RECV: SSEMU_EV_* */
	};
	uint32_t crc;		/* private: its CRC, checked at the poll */
	uint32_t slot;		/* private: message slot */
	uint32_t gen;		/* private */
};

/**
 * Take up to @max events off the endpoint's event ring.  Does not run the
 * engine.
 * @return number of events (>= 0), or -EIO: the fabric is broken (its
 * segment found corrupt or cut short); every call on it fails so.
 */
int ssemu_ep_poll(struct ssemu_ep *ep, struct ssemu_event *ev, int max);

/**
 * Watch @ep's message slots (@on true) or stop watching them: a run of
 * ssemu_fabric_run_until_watched stops after an event that frees one of
 * them (a message of @ep completed at both ends).  A slot its owner frees
 * (releasing a RECV) is not an event.  Closing the endpoint ends the watch.
 * @return 0, or -EINVAL, -EIO.
 */
int ssemu_ep_watch(struct ssemu_ep *ep, bool on);

/**
 * An in-process fabric (SSEMU_STORE_PRIVATE) only: the endpoints the
 * engine pushed events to since they were last returned here, by slot
 * (ssemu_ep_slot), in slot order, at most @max of them into @slots; the
 * rest are returned by the next call.  For a caller that polls many
 * endpoints (a model-time tool with one per NIC): it then polls those
 * alone, where a sweep reads every endpoint's ring.  An endpoint
 * returned may have nothing left (it was polled since the push); one
 * not returned has had nothing pushed.
 * @return how many (>= 0), -EINVAL, -ENOTSUP (a shared store), or -EIO
 * (the fabric is broken).
 */
int ssemu_fabric_ready(struct ssemu_fabric *fabric, uint32_t *slots,
		       uint32_t max);
/** Endpoint @ep's slot in its fabric: what ssemu_fabric_ready returns. */
uint32_t ssemu_ep_slot(struct ssemu_ep *ep);

/** Copy payload bytes [off, off+len) of a RECV event (or the result of an
 * RMA_DONE event) into @buf, checked against the message's CRC (which
 * covers its header too: src, hdr and len).
 * @return bytes copied; 0 if they failed the check (or there were none:
 * a message without payload is checked by ssemu_event_verify alone). */
size_t ssemu_event_copy(struct ssemu_ep *ep, const struct ssemu_event *ev,
			size_t off, void *buf, size_t len);

/**
 * Copy the first @len bytes of the payload of a RECV event (or the
 * results of an RMA_DONE event) into the application's @iov (@count
 * entries), starting @off bytes into it, as far as the iov reaches, and
 * check the whole payload against the message's CRC (which covers its
 * header too) from the same read: the bytes the caller received are
 * the bytes checked, whatever another process writes into the segment
 * meanwhile; the bytes not copied are checked in the segment.  The iov
 * may be memory that is not mapped or not writable (ssemu_copy_user).
 * @return the bytes copied (>= 0); -EBADMSG the payload failed its check
 * (counted in crc_errors; what was copied is not to be used); -EFAULT
 * the iov could not be written (nothing checked); -EINVAL no payload.
 */
ssize_t ssemu_event_copy_iov(struct ssemu_ep *ep, const struct ssemu_event *ev,
			     const struct iovec *iov, size_t count, size_t off,
			     size_t len);

/** Pointer to the payload of a RECV event or the result of an RMA_DONE
 * event (valid until release).  NULL with errno EBADMSG: a RECV whose
 * message fails its CRC (changed in shared memory after it was posted;
 * never handed out); NULL with errno EINVAL: no payload (an RMA_DONE
 * without results: a WRITE or ATOMIC, or one that failed; a RECV with
 * SSEMU_EV_NO_DATA).  The check is
 * made before the caller reads: a caller that copies the payload out of a
 * segment other processes write into closes the window between the two
 * with ssemu_event_payload, its copy, then ssemu_event_verify. */
const void *ssemu_event_data(struct ssemu_ep *ep, const struct ssemu_event *ev);

/** Pointer to the payload of a RECV event or the result of an RMA_DONE
 * event (valid until release), its CRC not checked yet; NULL with errno
 * EINVAL as ssemu_event_data. */
const void *ssemu_event_payload(struct ssemu_ep *ep,
				const struct ssemu_event *ev);

/** Check the payload of @ev against its CRC after it was copied out
 * (ssemu_event_payload): a write into the segment before or while it was
 * copied is still there, and fails the check.  The CRC covers the
 * header (src, hdr, len) too: a RECV without payload, all header, is
 * trusted once this passes.
 * @return 0; -EBADMSG it changed after the post (or after the RMA target
 * produced it): counted in crc_errors, what was copied is not to be
 * used; -EINVAL no payload. */
int ssemu_event_verify(struct ssemu_ep *ep, const struct ssemu_event *ev);

/**
 * Copy bytes [off, off+len) of the results of an RMA_DONE event of a
 * successful SSEMU_RMA_DIRECT read from the target's memory into @buf:
 * under the fault guard if the target memory is this process's, else by
 * cross-memory attach.  Before the event is released.
 * @return 0; -EINVAL not such an event, or a range outside its results;
 * -EBADMSG the target's answer in the slot changed after the target
 * wrote it (counted in crc_errors, nothing copied); -ENOKEY the region
 * was withdrawn before the copy finished (what @buf holds is not to be
 * trusted); -ESRCH the target process is gone; -EFAULT either side not
 * mapped; -EACCES the kernel refused this process cross-memory attach to
 * the target's (a warning is logged).
 */
int ssemu_event_read(struct ssemu_ep *ep, const struct ssemu_event *ev,
		     size_t off, void *buf, size_t len);

/** Give a RECV or RMA_DONE event's message slot back to its owner (an
 * RMA_DONE only by the endpoint that posted it).  RMA_REMOTE events hold
 * nothing: releasing one does nothing. */
void ssemu_event_release(struct ssemu_ep *ep, const struct ssemu_event *ev);

/**
 * Wait until the endpoint has an event, driving the engine when nobody else
 * is, sleeping (not spinning) when it cannot.
 * @return 1 events ready, 0 timeout, negative error.
 */
int ssemu_ep_wait(struct ssemu_ep *ep, int timeout_ms);

/**
 * Wait until any endpoint of the NIC has an event (a process with several
 * endpoints sleeps once), driving the engine when nobody else is.
 * @return 1 events ready, 0 timeout, negative error.
 */
int ssemu_nic_wait(struct ssemu_nic *nic, int timeout_ms);

/**
 * Is somebody at @peer: a NIC attached at its port and the endpoint open?
 * A process that died is detached within about 20 ms (the engine's
 * liveness check).  For protocols that wait on a peer's answer
 * (rendezvous); cheap.
 * @return 1 yes, 0 no.
 */
int ssemu_ep_peer_alive(struct ssemu_ep *ep, ssemu_addr_t peer);

/* ------------------------------------------------------------------ */
/* Service directory                                                    */
/* ------------------------------------------------------------------ */

/*
 * The fabric keeps a directory of service names (the "service" strings
 * applications pass to fi_getinfo, like sockets' port numbers), each bound
 * to one open endpoint.  A binding lasts until its endpoint closes, its NIC
 * detaches, or its process dies (checked by pid at every lookup and bind).
 * Names are 1 to SSEMU_SVC_NAME_MAX - 1 bytes; a name's 24-bit key is what
 * a fixed-size address can carry, so the directory keeps keys unique too.
 */
#define SSEMU_SVC_NAME_MAX 64
#define SSEMU_MAX_SVCS 256	/* bindings at once */
#define SSEMU_SVC_KEY_MASK 0xffffffu

/** The 24-bit key of a service name: never 0 or SSEMU_SVC_KEY_MASK. */
uint32_t ssemu_svc_key(const char *name);

struct ssemu_svc_info {
	char name[SSEMU_SVC_NAME_MAX];
	uint32_t key;
	ssemu_addr_t addr;	/* the endpoint it is bound to */
	int32_t pid;		/* the process that bound it */
};

/**
 * Bind the service @name to @ep.
 * @holder: if not NULL, filled with the binding that is in the way when
 *          the answer is -EADDRINUSE.
 * @return 0; -EADDRINUSE the name (or another name with the same key) is
 * bound to a live endpoint (this one included); -ENAMETOOLONG, -EINVAL bad
 * name; -ENOSPC SSEMU_MAX_SVCS live bindings.
 */
int ssemu_svc_bind(struct ssemu_ep *ep, const char *name,
		   struct ssemu_svc_info *holder);

/**
 * Release the services bound to @ep (ssemu_ep_close does it too).
 * @return the number released.
 */
int ssemu_svc_unbind(struct ssemu_ep *ep);

/**
 * Look up a live binding by @name, or by @key alone when @name is NULL.
 * @return 0 with @out filled; -ENOENT none.
 */
int ssemu_svc_lookup(struct ssemu_fabric *fabric, const char *name,
		     uint32_t key, struct ssemu_svc_info *out);

/**
 * The live bindings, up to @max of them in @out.
 * @return how many there are (may exceed @max), or a negative error.
 */
int ssemu_fabric_services(struct ssemu_fabric *fabric,
			  struct ssemu_svc_info *out, int max);

/* ------------------------------------------------------------------ */
/* Remote memory access: the target NIC does the work                   */
/* ------------------------------------------------------------------ */

/*
 * Each NIC keeps a table of memory regions that other NICs may access by
 * key, as a Cassini NIC does.  The target's side of a write, read or
 * atomic is done by the emulated target NIC (by the engine, in whichever
 * process runs it), which reads and writes the owning process's memory
 * itself: directly when that is its own process, by cross-memory attach
 * (process_vm_readv/writev) when it is another.  A target process that
 * computes and never calls in still serves puts, gets and atomics.  The
 * engine executes one operation at a time, so atomics from any number of
 * processes on the same target are atomic with respect to each other (not
 * to the target CPU's own plain accesses, as on real hardware).
 *
 * Requests travel as modelled packets (their class, routing and congestion
 * control apply); read, fetch and compare results travel back as response
 * packets of the same class.  The initiator's SSEMU_EV_RMA_DONE comes when
 * the operation has been done at the target (delivery complete) and, for
 * results, when they have arrived.
 */

#define SSEMU_MR_READ (1u << 0)		/* remote reads and fetches */
#define SSEMU_MR_WRITE (1u << 1)	/* remote writes and atomics */

/* Memory regions per NIC. */
#define SSEMU_MRS_PER_NIC 1024

struct ssemu_mr_desc {
	uint64_t key;		/* unique on the NIC */
	void *addr;		/* start, in the registering process */
	uint64_t len;
	/* The address remote peers name addr[0] by: (uintptr_t)addr for
	 * virtual addressing, 0 for offsets into the region. */
	uint64_t base;
	uint32_t access;	/* SSEMU_MR_* */
	/* Only operations on this VNI may use it (an auth key's); 0: any
	 * the target endpoint takes.  Others are refused with -EACCES and
	 * counted among the target NIC's VNI drops. */
	uint32_t vni;
};

/**
 * Make a memory region of this process remotely accessible through @nic.
 * @return 0; -EEXIST key in use; -ENOSPC table full; -EINVAL bad
 * arguments (NULL address with a length, unknown access bits, a range
 * that wraps, a VNI above SSEMU_VNI_MAX).
 */
int ssemu_mr_reg(struct ssemu_nic *nic, const struct ssemu_mr_desc *mr);

/**
 * Withdraw a region.  Operations the engine takes after this returns are
 * refused with -ENOKEY; none touches the memory any more.
 * @return 0; -ENOENT no such key.
 */
int ssemu_mr_dereg(struct ssemu_nic *nic, uint64_t key);

enum ssemu_rma_op {
	SSEMU_RMA_WRITE = 1,	/* iov -> target */
	SSEMU_RMA_READ,		/* target -> result (len bytes) */
	SSEMU_RMA_ATOMIC,	/* target = target aop operand */
	SSEMU_RMA_FETCH,	/* the same, result: the previous values */
	SSEMU_RMA_COMPARE,	/* CSWAP*, MSWAP: operand and compare (cmp),
				 * result: the previous values */
};

/* Atomic operations and datatypes, numbered as libfabric's enum fi_op and
 * enum fi_datatype (the provider checks this at compile time). */
enum ssemu_atomic_op {
	SSEMU_AOP_MIN = 0, SSEMU_AOP_MAX, SSEMU_AOP_SUM, SSEMU_AOP_PROD,
	SSEMU_AOP_LOR, SSEMU_AOP_LAND, SSEMU_AOP_BOR, SSEMU_AOP_BAND,
	SSEMU_AOP_LXOR, SSEMU_AOP_BXOR, SSEMU_AOP_READ, SSEMU_AOP_WRITE,
	SSEMU_AOP_CSWAP, SSEMU_AOP_CSWAP_NE, SSEMU_AOP_CSWAP_LE,
	SSEMU_AOP_CSWAP_LT, SSEMU_AOP_CSWAP_GE, SSEMU_AOP_CSWAP_GT,
	SSEMU_AOP_MSWAP,
	SSEMU_AOP_COUNT
};

enum ssemu_datatype {
	SSEMU_INT8 = 0, SSEMU_UINT8, SSEMU_INT16, SSEMU_UINT16,
	SSEMU_INT32, SSEMU_UINT32, SSEMU_INT64, SSEMU_UINT64,
	SSEMU_FLOAT, SSEMU_DOUBLE, SSEMU_FLOAT_COMPLEX, SSEMU_DOUBLE_COMPLEX,
	SSEMU_LONG_DOUBLE, SSEMU_LONG_DOUBLE_COMPLEX,
	SSEMU_INT128, SSEMU_UINT128,
	SSEMU_DATATYPE_COUNT
};

/** Bytes of one element of @dtype, 0 if unknown. */
size_t ssemu_datatype_size(uint32_t dtype);

/**
 * Is @aop defined on @dtype, and for which kind of call?  (The operation
 * table libfabric documents: no bitwise operations on floating point, no
 * ordering on complex types, and so on.)
 * @return true if @op (SSEMU_RMA_ATOMIC, _FETCH or _COMPARE) may carry it.
 */
bool ssemu_atomic_valid(uint32_t op, uint32_t aop, uint32_t dtype);

/**
 * Apply @aop element-wise: for each of @count elements, res[i] = dst[i]
 * (if @res), then dst[i] = dst[i] aop src[i] (with cmp[i] for compares).
 * The one definition of every atomic, used by the target NIC and by tests
 * as the reference.
 * @return 0; -EINVAL if the pair is not valid.
 */
int ssemu_atomic_apply(uint32_t aop, uint32_t dtype, void *dst,
		       const void *src, const void *cmp, void *res,
		       size_t count);

/* RMA flags (with SSEMU_SEND_ORDERED) */
#define SSEMU_RMA_REMOTE_EVENT (1u << 1)	/* RMA_REMOTE at the target ep */
/*
 * READ only: the results stay where they are.  The target NIC checks the
 * request (key, range, access, VNI) and the model sends the response
 * packets as for any read, but the bytes are not copied into the message
 * slot: once RMA_DONE comes, the initiator copies them straight from the
 * target's memory into its own buffer with ssemu_event_read, one copy in
 * all.  The bytes are those the target memory holds at that copy, not
 * when the request reached the target: for protocols that keep the
 * target memory unchanged until the initiator says it has read it (a
 * rendezvous, whose sender keeps its buffer until the FIN).  Takes no
 * large buffer, so it may be as long as SSEMU_RMA_DIRECT_MAX.
 */
#define SSEMU_RMA_DIRECT (1u << 2)
#define SSEMU_RMA_DIRECT_MAX (1ull << 30)

struct ssemu_rma {
	ssemu_addr_t dest;	/* target endpoint (its events) */
	uint32_t tclass;
	uint32_t flags;		/* SSEMU_SEND_ORDERED | SSEMU_RMA_* */
	uint32_t op;		/* enum ssemu_rma_op */
	uint32_t aop, dtype;	/* atomics */
	uint64_t key;		/* the target NIC's region */
	uint64_t addr;		/* target address, in the region's base */
	uint64_t len;		/* bytes at the target */
	/* WRITE, ATOMIC, FETCH, COMPARE: len bytes of data or operands
	 * (ATOMIC_READ: none) */
	const struct iovec *iov;
	size_t iov_count;
	/* COMPARE: len bytes of compare values */
	const struct iovec *cmp;
	size_t cmp_count;
	uint64_t hdr[SSEMU_HDR_WORDS];	/* for the RMA_REMOTE event */
	uint64_t cookie;	/* returned in RMA_DONE */
};

/**
 * Post an RMA operation.  Data and operands are copied before return.
 * Completion is an SSEMU_EV_RMA_DONE event with the cookie and a status:
 * 0; -ENOKEY no region with that key at the target; -ERANGE outside the
 * region; -EACCES the region does not allow it (or the kernel refused the
 * engine cross-memory attach to the region's process: a warning is
 * logged); -EHOSTUNREACH, -ECONNREFUSED nobody at @dest (or the target
 * went away before all results were sent back); -ESRCH the region's
 * process is gone; -EFAULT its memory there is not mapped any more; -EIO
 * the engine's runner died in the middle of the operation (the target
 * memory may be partly changed; it is never done twice).  A refused
 * operation never touches target memory.  READ, FETCH and COMPARE results
 * (len bytes) are read with ssemu_event_data/ssemu_event_copy (a
 * SSEMU_RMA_DIRECT read's with ssemu_event_read) until
 * ssemu_event_release, which every RMA_DONE event needs.
 * @return 0; -EAGAIN no resources (progress and retry); -EMSGSIZE len over
 * ssemu_ep_max_msg (COMPARE: half of it; a SSEMU_RMA_DIRECT read:
 * SSEMU_RMA_DIRECT_MAX); -EINVAL bad arguments (unknown
 * op or flag, an atomic not valid on its type, len not a multiple of the
 * element size, iov bytes not len, any iov on a READ, cmp bytes not len on
 * a COMPARE or any on another op, SSEMU_RMA_DIRECT on another op than
 * READ; a FETCH of SSEMU_AOP_READ may pass no iov or len ignored bytes);
 * -EFAULT data or operands not readable memory (nothing is posted).
 */
int ssemu_ep_rma(struct ssemu_ep *ep, const struct ssemu_rma *rma);

/**
 * Copy bytes [off, off+len) of a SSEMU_RMA_DIRECT read @rma, posted by
 * @ep, into @buf now, before the read completes: the target endpoint
 * and its region found and checked as the target NIC will check the
 * request (the endpoint open and on @ep's VNI; the region's key, VNI,
 * range and read access), the bytes copied as ssemu_event_read copies
 * them, and the region checked again after the copy.  For a
 * reader whose target keeps the bytes unchanged until the read completes
 * (a rendezvous), which may then copy while the engine models the read
 * (in another process, or after this call in this one) and need not
 * read the bytes at RMA_DONE.  The read's completion, its time and its
 * status are the model's as ever: a copy that succeeded says nothing of
 * them.
 * @return 0; -EINVAL not a direct read, or a range outside it;
 * -EHOSTUNREACH no NIC at the target's port; -ECONNREFUSED no endpoint
 * open there; -ENOTCONN the endpoint is on another VNI; -ENOKEY no such
 * region (or it was withdrawn or changed during the copy: what @buf
 * holds is not to be trusted); -ERANGE, -EACCES as the read's status
 * would say; -EACCES also when the kernel refuses cross-memory attach;
 * -ESRCH the region's process is gone; -EFAULT either side not mapped;
 * -EIO the fabric is broken.
 */
int ssemu_ep_read_early(struct ssemu_ep *ep, const struct ssemu_rma *rma,
			size_t off, void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

struct ssemu_nic_stats {
	uint64_t tx_msgs, tx_bytes, tx_pkts;
	uint64_t rx_msgs, rx_bytes, rx_pkts;
	uint64_t acks;		/* own packets acknowledged */
	uint64_t window_stalls;	/* packets held back by the window */
	uint64_t credit_stalls;
	uint64_t ack_pkts;	/* acknowledgement packets received (one
				 * covers up to 16 packets of a message) */
	uint64_t crc_errors;	/* data packets received whose payload
				 * failed its CRC (lost, or the message
				 * failed with -EIO) */
	/* packets refused for their VNI: data for an endpoint (or a memory
	 * region) on another VNI, or acknowledgements and RMA results on
	 * another VNI than their operation's */
	uint64_t vni_drops;
};

int ssemu_nic_stats(struct ssemu_nic *nic, struct ssemu_nic_stats *st);

struct ssemu_fabric_stats {
	ssemu_time_t now;
	uint64_t events;
	uint64_t pkts_delivered;
	uint64_t pkt_hops;
	uint64_t switch_lat_sum;	/* ps, over hops */
	uint64_t nics_attached;
	uint64_t switches_instantiated;
	/* messages failed because nobody was at their destination any more */
	uint64_t msgs_unreachable;
	/* messages discarded when their endpoint closed (not delivered
	 * within its bound) or their process died */
	uint64_t msgs_discarded;
	/* packets and messages whose payload failed its CRC: at a receiving
	 * NIC, or when its receiver read it (never delivered) */
	uint64_t crc_errors;
	/* data packet-hops that followed the previous packet of their own
	 * message out of the same switch input to the same output, with
	 * nothing else waiting for that output: the hops a train of
	 * packets, one event per hop for the lot, could have carried
	 * without changing what anything else sees */
	uint64_t train_hops;
};

int ssemu_fabric_stats(struct ssemu_fabric *fabric,
		       struct ssemu_fabric_stats *st);

struct ssemu_latency {
	uint64_t count;
	double mean_ns, p50_ns, p99_ns, max_ns;	/* 1 ns resolution */
};

/* The switch latency histogram's last bin: a hop that took longer counts
 * at it, so a percentile or max equal to it means at least that much
 * (the mean is of the exact latencies). */
#define SSEMU_SWLAT_MAX_NS 4095

/** Per-hop switch latency (input arrival to output departure, so it
 * includes queueing) over every hop so far. */
int ssemu_fabric_switch_latency(struct ssemu_fabric *fabric,
				struct ssemu_latency *lat);

/* What `slingshot-emu status` and `stat` show. */
struct ssemu_fabric_info {
	char name[64];		/* segment name, "" for a private store */
	uint64_t size;		/* bytes of store */
	uint32_t owner_uid;
	uint32_t nprocs;	/* processes attached and alive */
	uint32_t nnics;
	enum ssemu_clock_mode clock;
	double dilation;
	ssemu_time_t now;
	uint64_t lag_ps;	/* realtime: how far the model fell behind */
	uint64_t pkts_in_flight;
	uint64_t crc_errors;	/* as in struct ssemu_fabric_stats */
	/* the shared segment's mode and group: 0600, or 0660 and the share
	 * group, shared across users (0 for a private store) */
	uint32_t shm_mode, shm_gid;
	/* RMA requests waiting for their target memory's owner to do them
	 * (fi_slingshot_emu(7), JOB ISOLATION) */
	uint32_t rma_parked;
};

int ssemu_fabric_info(struct ssemu_fabric *fabric,
		      struct ssemu_fabric_info *info);

struct ssemu_nic_info {
	uint32_t port;
	int32_t pid;
	uint32_t job;
	int32_t rank;
	uint32_t eps_open;
	bool alive;
	struct ssemu_nic_stats stats;
	uint32_t uid;		/* its process's real uid */
};

/** Attached NICs, up to @max. @return how many were written. */
int ssemu_fabric_nics(struct ssemu_fabric *fabric, struct ssemu_nic_info *out,
		      int max);

/* A job placed by policy: its ports stay reserved while it has a NIC. */
struct ssemu_job_info {
	uint32_t job;
	uint32_t nranks;
	uint32_t policy;	/* enum ssemu_place_policy */
	uint32_t nics;		/* NICs of the job attached now */
	uint32_t ports;		/* ports reserved for it */
	uint32_t rank0_port;	/* where rank 0 is (to be) */
};

/** Jobs holding placement reservations, up to @max.
 * @return how many were written. */
int ssemu_fabric_jobs(struct ssemu_fabric *fabric, struct ssemu_job_info *out,
		      int max);

struct ssemu_port_info {
	uint32_t sw;		/* topology switch id */
	uint32_t port;
	uint32_t kind;		/* 1 endpoint, 2 local, 3 global */
	uint64_t tx_pkts[SSEMU_MAX_TCLASS];
	uint64_t tx_bytes[SSEMU_MAX_TCLASS];
	uint32_t queued[SSEMU_MAX_TCLASS];	/* packets in VOQs for it */
	uint64_t drops;
};

/** Ports of the switches modelled so far that carried traffic.
 * @return how many were written (up to @max). */
int ssemu_fabric_ports(struct ssemu_fabric *fabric, struct ssemu_port_info *out,
		       int max);

/* ------------------------------------------------------------------ */
/* Telemetry (docs/telemetry.md)                                        */
/* ------------------------------------------------------------------ */

/*
 * The model counts, in model time and inside the fabric (so any process,
 * an observer included, can read it): per (job, class) traffic and message
 * latency histograms, per class drops, congestion marks and window cuts and
 * edge queue depths, per NIC pair latency histograms, and a time series of
 * samples closed every tel_interval of model time, of which the fabric keeps
 * the last tel_samples.  Traffic counts for the job of the NIC that sent it.
 */
#define SSEMU_TEL_JOBS 16	/* job ids counted apart; slot 16: the rest */
#define SSEMU_TEL_JOB_SLOTS (SSEMU_TEL_JOBS + 1)
#define SSEMU_TEL_OTHER SSEMU_TEL_JOBS
/* Latency bins: [0] under 100 ns, then 4 per octave from 100 ns
 * (bin 1 + 4k + j starts at 100 ns * 2^k * (1 + j/4)), the last one from
 * 100 ns * 2^20 (104.9 ms) up. */
#define SSEMU_TEL_LAT_BINS 82
#define SSEMU_TEL_PAIRS 256	/* NIC pairs with their own histogram */
#define SSEMU_TEL_MAX_SAMPLES 65536

/* Per (job, class).  Bytes are payload bytes. */
struct ssemu_tel_counters {
	uint64_t tx_msgs;	/* messages the NICs took */
	uint64_t tx_pkts, tx_bytes;	/* data packets injected */
	uint64_t rx_pkts, rx_bytes;	/* data packets arrived */
	uint64_t rx_msgs;	/* messages delivered */
	uint64_t lat_sum;	/* ps: delivery time - post time, summed */
	uint64_t lat[SSEMU_TEL_LAT_BINS];	/* messages per latency bin */
};

/* Per class. */
struct ssemu_tel_class {
	uint64_t drops;		/* packets lost in the fabric */
	uint64_t drops_ack;	/* ... of which acknowledgements */
	uint64_t drops_resp;	/* ... of which RMA results */
	uint64_t retries;	/* messages sent again from the start, and
				 * acknowledgements and RMA results sent
				 * again after a drop */
	uint64_t throttles;	/* congestion window cuts */
	uint64_t marks;		/* packets marked congested */
	uint64_t q_max;		/* edge VOQ depth seen by arriving packets */
	uint64_t q_sum, q_n;	/* mean: q_sum / q_n */
};

struct ssemu_tel_pair {
	uint32_t src_port, dst_port;
	uint32_t src_job, dst_job;	/* job ids (not slots) */
	uint64_t msgs;
	uint64_t lat_sum;	/* ps */
	uint64_t lat[SSEMU_TEL_LAT_BINS];
};

/* Messages from one job to another (by job slot). */
struct ssemu_tel_jpair {
	uint64_t msgs;
	uint64_t lat_sum;	/* ps */
	uint64_t lat[SSEMU_TEL_LAT_BINS];
};

/* One interval of model time: [index, index + 1) * interval. */
struct ssemu_tel_sample {
	uint64_t index;
	uint64_t rx_bytes[SSEMU_TEL_JOB_SLOTS][SSEMU_MAX_TCLASS];
	uint64_t tx_bytes[SSEMU_MAX_TCLASS];
	uint64_t drops[SSEMU_MAX_TCLASS];
	uint64_t throttles[SSEMU_MAX_TCLASS];
	uint64_t marks[SSEMU_MAX_TCLASS];
	uint64_t q_max[SSEMU_MAX_TCLASS];
	uint64_t q_sum[SSEMU_MAX_TCLASS];
	uint64_t q_n[SSEMU_MAX_TCLASS];
};

struct ssemu_telemetry {
	struct ssemu_config config;	/* of the fabric: class names, rates */
	ssemu_time_t now;		/* model time of the snapshot */
	ssemu_time_t interval;		/* as config.tel_interval */
	uint32_t njobs;			/* job ids in job[] */
	uint32_t npairs;		/* entries in pair[] */
	uint32_t job[SSEMU_TEL_JOBS];	/* the job id of each slot */
	struct ssemu_tel_counters jc[SSEMU_TEL_JOB_SLOTS][SSEMU_MAX_TCLASS];
	struct ssemu_tel_class tc[SSEMU_MAX_TCLASS];
	struct ssemu_tel_pair pair[SSEMU_TEL_PAIRS];
	struct ssemu_tel_pair other_pairs;	/* pairs the table had no room
						 * for, together */
	/* every message by (source job slot, destination job slot) */
	struct ssemu_tel_jpair jpair[SSEMU_TEL_JOB_SLOTS][SSEMU_TEL_JOB_SLOTS];
	uint64_t samples_closed;	/* since model time 0 */
	uint64_t samples_lost;		/* overwritten before this snapshot */
	uint32_t nsamples;		/* in samples[], oldest first */
	uint32_t pad;
	/* the sample still open: [open.index * interval, now) */
	struct ssemu_tel_sample open;
	struct ssemu_tel_sample *samples;
};

/**
 * Snapshot the fabric's telemetry (closing the samples model time has
 * passed).  Free it with ssemu_telemetry_free.
 * @return 0; -EINVAL; -ENOMEM.
 */
int ssemu_telemetry_read(struct ssemu_fabric *fabric,
			 struct ssemu_telemetry **tel);
void ssemu_telemetry_free(struct ssemu_telemetry *tel);

/**
 * Save a snapshot as a trace file (format in docs/telemetry.md).
 * @return 0; a negative errno with the problem in @err.
 */
int ssemu_telemetry_save(const struct ssemu_telemetry *tel, const char *path,
			 char *err, size_t errlen);

/**
 * Read a trace file back.  A file that is not a trace, another version,
 * truncated or corrupt is refused with -EPROTO (-errno if unreadable) and
 * the reason in @err.
 */
int ssemu_telemetry_load(const char *path, struct ssemu_telemetry **tel,
			 char *err, size_t errlen);

/** Lower edge of latency bin @i in ps (bin 0: 0). */
ssemu_time_t ssemu_tel_bin_lo(uint32_t i);

/** Count, mean, p50, p99 and max (upper bin edge) of a latency histogram
 * (percentiles interpolated inside their bin); @sum in ps. */
void ssemu_tel_latency(const uint64_t *lat, uint64_t sum,
		       struct ssemu_latency *out);

/* ------------------------------------------------------------------ */
/* Modelled jobs (emu/ssemu_gen.c)                                      */
/* ------------------------------------------------------------------ */

/* The job id the NICs of modelled job @j carry (telemetry, status). */
#define SSEMU_MJOB_ID(j) (0x6d6a0000u | (uint32_t)(j))
#define SSEMU_MJOB_IS_ID(id) (((id) & 0xffff0000u) == 0x6d6a0000u)

/* What a modelled job did so far.  Latencies are in the telemetry's
 * bins (ssemu_tel_latency reads them). */
struct ssemu_mjob_stats {
	char name[SSEMU_NAME_MAX];
	uint32_t endpoints;
	uint32_t pattern;	/* enum ssemu_mjob_pattern */
	uint32_t tclass;
	uint32_t job;		/* SSEMU_MJOB_ID */
	uint64_t posted;	/* messages handed to the NICs */
	uint64_t delivered;	/* ... arrived whole at their target */
	uint64_t bytes;		/* payload bytes delivered */
	uint64_t completed;	/* ... acknowledged back at their source */
	uint64_t failed;	/* completed with an error (dropped) */
	uint64_t throttles;	/* congestion window cuts and FGFC pauses */
	uint64_t lat_sum;	/* ps: delivery - post, summed */
	uint64_t lat[SSEMU_TEL_LAT_BINS];
	uint64_t ops;		/* allreduce: operations done */
	uint64_t op_lat_sum;	/* ps: last receive - first send */
	uint64_t op_lat[SSEMU_TEL_LAT_BINS];
	ssemu_time_t first_post, last_post;	/* model time */
};

/* One rank of a modelled job. */
struct ssemu_mjob_rank {
	uint32_t port;
	uint32_t inflight;	/* its messages in the model now */
	uint64_t posted;
	uint64_t received;	/* messages delivered to it */
	ssemu_time_t first_post, last_post;
};

/** The fabric's modelled jobs, up to @max of them into @out.
 * @return how many it has (>= 0), or -EINVAL/-EIO. */
int ssemu_fabric_mjobs(struct ssemu_fabric *fabric,
		       struct ssemu_mjob_stats *out, uint32_t max);

/** Rank @rank of modelled job @job.  @return 0, -EINVAL or -EIO. */
int ssemu_fabric_mjob_rank(struct ssemu_fabric *fabric, uint32_t job,
			   uint32_t rank, struct ssemu_mjob_rank *out);

/** A pattern's configuration name ("incast", ...), "?" if unknown. */
const char *ssemu_mjob_pattern_name(uint32_t pattern);

/** The table `slingshot-emu sim` and `status` print: one line per job
 * (name, endpoints, pattern, class, messages, bytes, latency, drops,
 * throttles; allreduce operations).  @now: the model time it covers. */
void ssemu_mjob_print(FILE *out, const struct ssemu_config *cfg,
		      const struct ssemu_mjob_stats *st, uint32_t n,
		      ssemu_time_t now);

/* Logging sink: the provider routes emulator warnings into fi_log. */
enum ssemu_log_level { SSEMU_LOG_WARN, SSEMU_LOG_INFO, SSEMU_LOG_DEBUG };
typedef void (*ssemu_log_fn)(enum ssemu_log_level lvl, const char *msg);
void ssemu_log_set_sink(ssemu_log_fn fn);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* SSEMU_H */
