/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric store and the public API around the model: create or attach
 * the region (private memory or a named POSIX shared-memory segment), attach
 * NICs and open endpoints, post messages, poll events, and run the engine.
 *
 * There is no daemon: whichever process calls progress and wins the fabric
 * lock runs the engine for everyone.  A process that dies holding the lock
 * is caught by the robust mutex (EOWNERDEAD); one that dies while attached
 * is caught by a pid liveness check; either way its NICs are detached and
 * everyone else carries on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>
#include <zlib.h>

#include "ssemu_priv.h"

#define LIVENESS_PERIOD_NS 20000000ULL	/* between pid checks: 20 ms */

/* ------------------------------------------------------------------ */
/* Layout                                                               */
/* ------------------------------------------------------------------ */

struct layout {
	uint64_t engine, nics, eps, msgs, mstate, bufs, rings, pkts, swmap,
		portmap,
		switches, voqs, pair, work, ovf, mrs, resv, nic_eps, total;
	uint32_t voq_per_switch;
	uint64_t ring_bytes;
	uint64_t tel;		/* telemetry section */
};

static uint64_t take(uint64_t *off, uint64_t bytes)
{
	uint64_t at = SSEMU_ALIGN_UP(*off, (uint64_t)SSEMU_CACHELINE);

	*off = at + bytes;
	return at;
}

static void compute_layout(const struct ssemu_config *c,
			   const struct ssemu_topo *t, struct layout *l)
{
	uint64_t off = sizeof(struct ssemu_region);
	uint64_t neps = ssemu_config_neps(c);

	l->voq_per_switch = t->radix * t->radix * c->ntclass * SSEMU_NVC;
	l->ring_bytes = SSEMU_ALIGN_UP(
		ssemu_ring_bytes(c->msgs_per_ep, sizeof(uint32_t)),
		(uint64_t)SSEMU_CACHELINE) +
			SSEMU_ALIGN_UP(ssemu_ring_bytes(SSEMU_EV_RING,
							sizeof(struct ssemu_event)),
				       (uint64_t)SSEMU_CACHELINE);
	l->engine = take(&off, ssemu_engine_bytes(c->max_events));
	l->nics = take(&off, c->max_nics * sizeof(struct ssemu_nic_sh));
	l->eps = take(&off, neps * sizeof(struct ssemu_ep_sh));
	l->msgs = take(&off, neps * c->msgs_per_ep * sizeof(struct ssemu_msg));
	l->mstate = take(&off, neps * c->msgs_per_ep * sizeof(uint32_t));
	l->rings = take(&off, neps * l->ring_bytes);
	l->pkts = take(&off, (uint64_t)c->max_pkts * sizeof(struct ssemu_pkt));
	l->swmap = take(&off, (uint64_t)t->nswitches * sizeof(uint32_t));
	l->portmap = take(&off, t->nendpoints * sizeof(uint32_t));
	l->pair = take(&off, (uint64_t)c->max_nics * c->max_nics *
				     sizeof(struct ssemu_pair));
	l->work = take(&off, (neps + 63) / 64 * sizeof(uint64_t));
	l->ovf = take(&off, (neps + 63) / 64 * sizeof(uint64_t));
	l->resv = take(&off, t->nendpoints * sizeof(uint32_t));
	l->nic_eps = take(&off, (uint64_t)c->max_nics * c->eps_per_nic *
					sizeof(uint32_t));
	l->switches = take(&off, (uint64_t)c->max_switches *
					 sizeof(struct ssemu_switch_sh));
	l->voqs = take(&off, (uint64_t)c->max_switches * l->voq_per_switch *
				     sizeof(struct ssemu_voq));
	/* memory region tables: zero (free) until used, page aligned so
	 * tables nobody registers in cost nothing */
	off = SSEMU_ALIGN_UP(off, (uint64_t)4096);
	l->mrs = take(&off, (uint64_t)c->max_nics * SSEMU_MRS_PER_NIC *
				    sizeof(struct ssemu_mr_sh));
	l->tel = take(&off, ssemu_tel_bytes(c));
	/* large buffers last, page aligned: untouched pages cost nothing */
	off = SSEMU_ALIGN_UP(off, (uint64_t)4096);
	l->bufs = take(&off, neps * c->bufs_per_ep * (uint64_t)c->buf_size);
	l->total = SSEMU_ALIGN_UP(off, (uint64_t)4096);
}

/*
 * The header fields every process derives from the configuration, by name:
 * an attach compares the segment's with the layout it computes itself, and
 * the engine compares them with what attach found before every run.  A new
 * section is one more line here (and in compute_layout).
 */
#define HDR_FIELD(f, v)                                                     \
	{ #f, offsetof(struct ssemu_region, f),                              \
	  sizeof(((struct ssemu_region *)0)->f), (v) }

struct hdr_field {
	const char *name;
	size_t off, size;
	uint64_t want;
};

static int check_layout(struct ssemu_region *r, char *err, size_t errlen)
{
	const struct ssemu_config *c = &r->config;
	uint64_t neps = ssemu_config_neps(c);
	struct ssemu_engine *e;
	struct ssemu_topo t;
	struct layout l;
	char why[200];
	size_t i;

	if (ssemu_config_validate(c, why, sizeof(why))) {
		snprintf(err, errlen, "fabric segment header is corrupt (its "
			 "configuration does not validate: %s): refused", why);
		return -EPROTO;
	}
	memset(&t, 0, sizeof(t));
	if (ssemu_topo_init(&t, &c->topo, why, sizeof(why)) ||
	    memcmp(&t, &r->topo, sizeof(t))) {
		snprintf(err, errlen, "fabric segment header is corrupt (its "
			 "topology is not the configuration's): refused");
		return -EPROTO;
	}
	compute_layout(c, &t, &l);

	const struct hdr_field fields[] = {
		HDR_FIELD(total_size, l.total),
		HDR_FIELD(neps, neps),
		HDR_FIELD(nmsgs, neps * c->msgs_per_ep),
		HDR_FIELD(nbufs, neps * c->bufs_per_ep),
		HDR_FIELD(voq_per_switch, l.voq_per_switch),
		HDR_FIELD(engine_off, l.engine),
		HDR_FIELD(nics_off, l.nics),
		HDR_FIELD(eps_off, l.eps),
		HDR_FIELD(msgs_off, l.msgs),
		HDR_FIELD(bufs_off, l.bufs),
		HDR_FIELD(rings_off, l.rings),
		HDR_FIELD(mstate_off, l.mstate),
		HDR_FIELD(pkts_off, l.pkts),
		HDR_FIELD(swmap_off, l.swmap),
		HDR_FIELD(portmap_off, l.portmap),
		HDR_FIELD(switches_off, l.switches),
		HDR_FIELD(voqs_off, l.voqs),
		HDR_FIELD(pair_off, l.pair),
		HDR_FIELD(work_off, l.work),
		HDR_FIELD(ovf_off, l.ovf),
		HDR_FIELD(mrs_off, l.mrs),
		HDR_FIELD(resv_off, l.resv),
		HDR_FIELD(nic_eps_off, l.nic_eps),
		HDR_FIELD(tel_off, l.tel),
		HDR_FIELD(route_idx, (uint64_t)ssemu_route_index(c->routing)),
		HDR_FIELD(arb_idx, (uint64_t)ssemu_arb_index(c->arb)),
		HDR_FIELD(cc_idx, (uint64_t)ssemu_cc_index(c->cc)),
	};

	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		const struct hdr_field *hf = &fields[i];
		uint64_t have = 0;

		if (hf->size == sizeof(uint32_t)) {
			uint32_t v;

			memcpy(&v, (char *)r + hf->off, sizeof(v));
			have = v;
		} else {
			memcpy(&have, (char *)r + hf->off, sizeof(have));
		}
		if (have == (hf->size == sizeof(uint32_t) ?
			     (uint32_t)hf->want : hf->want))
			continue;
		snprintf(err, errlen, "fabric segment header is corrupt (%s "
			 "is %#llx, the layout of its configuration has "
			 "%#llx): refused", hf->name, (unsigned long long)have,
			 (unsigned long long)hf->want);
		return -EPROTO;
	}
	e = SSEMU_AT(r, r->engine_off);
	if (!ssemu_engine_geometry_ok(e, c->max_events)) {
		snprintf(err, errlen, "fabric segment is corrupt (the event "
			 "engine's geometry is not that of %u events): refused",
			 c->max_events);
		return -EPROTO;
	}
	if (r->sw_used > c->max_switches ||
	    (r->pkt_free != SSEMU_NONE && r->pkt_free >= c->max_pkts)) {
		snprintf(err, errlen, "fabric segment is corrupt (model state: "
			 "%u switches modelled of %u, free packet %u of %u): "
			 "refused", r->sw_used, c->max_switches, r->pkt_free,
			 c->max_pkts);
		return -EPROTO;
	}
	return 0;
}

bool ssemu_fail(struct ssemu_region *r, const char *fmt, ...)
{
	uint32_t zero = 0;
	va_list ap;

	if (!ssemu_cas(&r->broken, &zero, 1))
		return true;	/* said once already */
	va_start(ap, fmt);
	vsnprintf(r->broken_why, sizeof(r->broken_why), fmt, ap);
	va_end(ap);
	r->broken_why[sizeof(r->broken_why) - 1] = 0;
	ssemu_log(SSEMU_LOG_WARN, "the fabric segment is corrupt (%s): the "
		  "fabric is marked broken, every call on it now fails with "
		  "EIO; `slingshot-emu clean` removes it", r->broken_why);
	return true;
}

#if defined(__x86_64__)
/* CRC-32C with the SSE4.2 instruction: several times zlib's speed. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t seed, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t crc = ~seed & 0xffffffffu, v;

	for (; n >= 8; n -= 8, b += 8) {
		memcpy(&v, b, sizeof(v));
		crc = __builtin_ia32_crc32di(crc, v);
	}
	for (; n; n--, b++)
		crc = __builtin_ia32_crc32qi((uint32_t)crc, *b);
	return ~(uint32_t)crc;
}
#endif

/*
 * Where the CPU has it (every process of a fabric runs on one host, so
 * all of them choose alike), CRC-32C in hardware; else zlib's CRC-32.
 */
uint32_t ssemu_crc(uint32_t seed, const void *p, size_t n)
{
	uLong crc = seed;

#if defined(__x86_64__)
	static int hw_cache = -1;
	int hw = ssemu_load_relaxed(&hw_cache);

	if (unlikely(hw < 0)) {
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		ssemu_store_relaxed(&hw_cache, hw);
	}
	if (hw)
		return crc32c_hw(seed, p, n);
#endif

	/* (zlib takes at most UINT_MAX bytes at a time) */
	while (n) {
		uInt k = n > UINT32_MAX ? UINT32_MAX : (uInt)n;

		crc = crc32(crc, p, k);
		p = (const char *)p + k;
		n -= k;
	}
	return (uint32_t)crc;
}

/* A message's end-to-end CRC: its source, header words, length and
 * payload, as the sender posted them. */
static uint32_t msg_crc(ssemu_addr_t src, const uint64_t *hdr, uint64_t len,
			const void *data)
{
	uint32_t crc = ssemu_crc(0, &src, sizeof(src));

	crc = ssemu_crc(crc, hdr, SSEMU_HDR_WORDS * sizeof(uint64_t));
	crc = ssemu_crc(crc, &len, sizeof(len));
	return ssemu_crc(crc, data, (size_t)len);
}

/* Initialise a zero-filled region. */
/* A NIC pair's congestion state as a fresh pair has it: a full window,
 * no pause or pacing, and the first mark cuts the window at once. */
static void pair_cc_reset(const struct ssemu_config *c, struct ssemu_pair *pr)
{
	pr->cwnd = c->nic_window << 8;
	pr->pause = 0;
	pr->gap = 0;
	pr->slow = 0;
	pr->cc_acked = UINT32_MAX / 2;
}

static int region_init(struct ssemu_region *r, const struct ssemu_config *c,
		       const struct ssemu_topo *t, const struct layout *l)
{
	pthread_mutexattr_t ma;
	uint32_t i, k, neps = ssemu_config_neps(c);
	uint64_t roff;
	int ret;

	r->version = SSEMU_LAYOUT_VERSION;
	r->hdr_size = sizeof(*r);
	r->total_size = l->total;
	r->config_hash = ssemu_config_hash(c);
	r->owner_uid = geteuid();
	r->config = *c;
	r->topo = *t;
	r->neps = neps;
	r->nmsgs = neps * c->msgs_per_ep;
	r->nbufs = neps * c->bufs_per_ep;
	r->voq_per_switch = l->voq_per_switch;
	r->engine_off = l->engine;
	r->nics_off = l->nics;
	r->eps_off = l->eps;
	r->msgs_off = l->msgs;
	r->mstate_off = l->mstate;
	r->bufs_off = l->bufs;
	r->rings_off = l->rings;
	r->pkts_off = l->pkts;
	r->swmap_off = l->swmap;
	r->portmap_off = l->portmap;
	r->switches_off = l->switches;
	r->voqs_off = l->voqs;
	r->pair_off = l->pair;
	r->work_off = l->work;
	r->ovf_off = l->ovf;
	r->mrs_off = l->mrs;
	r->resv_off = l->resv;
	r->nic_eps_off = l->nic_eps;
	r->route_idx = (uint32_t)ssemu_route_index(c->routing);
	r->arb_idx = (uint32_t)ssemu_arb_index(c->arb);
	r->cc_idx = (uint32_t)ssemu_cc_index(c->cc);
	ssemu_tel_init(r, l->tel);
	ssemu_auth_init(r, c);

	ret = pthread_mutexattr_init(&ma);
	if (!ret)
		ret = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (ret)
		return -ret;

	ssemu_engine_init(ssemu_r_engine(r), c->max_events);
	for (i = 0; i < c->max_pkts; i++)
		ssemu_r_pkt(r, i)->next = i + 1 < c->max_pkts ? i + 1 :
								SSEMU_NONE;
	r->pkt_free = 0;
	r->stall_mi = SSEMU_NONE;
	for (i = 0; i < c->max_nics * c->max_nics; i++) {
		pair_cc_reset(c, ssemu_r_pair(r, 0, i));
		ssemu_r_pair(r, 0, i)->egq = 0;
	}
	for (i = 0; i < c->max_nics; i++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, i);

		n->inj_head = n->inj_tail = SSEMU_NONE;
		n->ack_head = n->ack_tail = SSEMU_NONE;
		n->resp_head = n->resp_tail = SSEMU_NONE;
		n->jobslot = SSEMU_NONE;
	}
	memset(ssemu_r_swmap(r), 0xff, (size_t)t->nswitches * sizeof(uint32_t));
	memset(ssemu_r_portmap(r), 0xff,
	       (size_t)t->nendpoints * sizeof(uint32_t));
	memset(ssemu_r_resv(r), 0xff, (size_t)t->nendpoints * sizeof(uint32_t));
	memset(ssemu_r_nic_eps(r, 0), 0xff,
	       (size_t)c->max_nics * c->eps_per_nic * sizeof(uint32_t));
	for (i = 0; i < neps; i++) {
		struct ssemu_ep_sh *ep = ssemu_r_ep(r, i);

		roff = l->rings + (uint64_t)i * l->ring_bytes;
		ep->tx_ring_off = roff;
		ep->ev_ring_off = roff + SSEMU_ALIGN_UP(
			ssemu_ring_bytes(c->msgs_per_ep, sizeof(uint32_t)),
			(uint64_t)SSEMU_CACHELINE);
		ep->rx_head = ep->tx_head = SSEMU_NONE;
		for (k = 0; k < SSEMU_MAX_BUFS; k++)
			ep->buf_msg[k] = SSEMU_NONE;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Locking and liveness                                                 */
/* ------------------------------------------------------------------ */

/* A zombie still answers kill(0), so look at its state as well. */
static bool pid_alive(int32_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return true;	/* no procfs: trust kill() */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

bool ssemu_pid_alive(int32_t pid)
{
	return pid_alive(pid);
}

static void nic_detach_locked(struct ssemu_region *r, uint32_t slot);
static void jobs_sweep_locked(struct ssemu_region *r);

/*
 * Detach every NIC and free every process slot of processes that are gone
 * (with a NIC go its endpoints, memory regions, packets and its job's
 * reservation once the job has no NIC left).
 * @return how many NICs and process slots it freed.
 */
static unsigned reap_dead_locked(struct ssemu_region *r)
{
	unsigned freed = 0;
	uint32_t i;

	for (i = 0; i < r->config.max_nics; i++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, i);

		if (n->state == SSEMU_NIC_ATTACHED && !pid_alive(n->owner_pid)) {
			ssemu_log(SSEMU_LOG_WARN, "process %d died while "
				  "attached: detaching its NIC at port %u",
				  n->owner_pid, n->port);
			nic_detach_locked(r, i);
			freed++;
		}
	}
	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (r->procs[i] && !pid_alive(r->procs[i])) {
			r->procs[i] = 0;
			freed++;
		}
	}
	return freed;
}

/*
 * Every allocation that a dead process may hold up (process slots, NIC
 * slots, ports, job slots and port reservations) goes through here.
 * @claim takes what it needs under the lock, or fails with -ENOSPC or
 * -EADDRINUSE when nothing fits, leaving the region as it found it; then
 * what processes that died while attached held is freed and @claim runs
 * once more.  Liveness is checked only when something is short, so a busy
 * fabric pays for it only at the moment it matters.
 */
static int claim_reaping_locked(struct ssemu_region *r,
				int (*claim)(struct ssemu_region *r, void *arg),
				void *arg)
{
	int ret = claim(r, arg);

	if ((ret == -ENOSPC || ret == -EADDRINUSE) && reap_dead_locked(r))
		ret = claim(r, arg);
	return ret;
}

static int lock_region(struct ssemu_region *r, bool try)
{
	int ret = try ? pthread_mutex_trylock(&r->lock) :
			pthread_mutex_lock(&r->lock);

	if (ret == EOWNERDEAD) {
		ssemu_log(SSEMU_LOG_WARN, "a process died holding the fabric "
			  "lock: recovering");
		pthread_mutex_consistent(&r->lock);
		if (ssemu_model_recover(r))
			ssemu_log(SSEMU_LOG_WARN, "out of memory while "
				  "recovering: traffic in flight may be lost");
		reap_dead_locked(r);
		jobs_sweep_locked(r);
		return 0;
	}
	return -ret;
}

static void unlock_region(struct ssemu_region *r)
{
	pthread_mutex_unlock(&r->lock);
}

/* ------------------------------------------------------------------ */
/* Fabric open/close                                                    */
/* ------------------------------------------------------------------ */

static int check_header(struct ssemu_region *r, size_t size,
			const struct ssemu_config *want, char *err,
			size_t errlen)
{
	int ret;

	if (size < sizeof(*r) || r->magic != SSEMU_MAGIC) {
		snprintf(err, errlen, "not a slingshot-emu fabric segment "
			 "(bad magic)");
		return -EPROTO;
	}
	if (r->version != SSEMU_LAYOUT_VERSION || r->hdr_size != sizeof(*r)) {
		snprintf(err, errlen, "fabric segment layout version %u "
			 "(header %u bytes), this library speaks %u (%zu)",
			 r->version, r->hdr_size, SSEMU_LAYOUT_VERSION,
			 sizeof(*r));
		return -EPROTO;
	}
	if (r->total_size != size) {
		snprintf(err, errlen, "fabric segment is %zu bytes, its "
			 "header says %llu", size,
			 (unsigned long long)r->total_size);
		return -EPROTO;
	}
	if (r->config_hash != ssemu_config_hash(&r->config)) {
		snprintf(err, errlen, "fabric segment header is corrupt "
			 "(configuration hash mismatch)");
		return -EPROTO;
	}
	if (ssemu_load_relaxed(&r->broken)) {
		char why[sizeof(r->broken_why)];

		memcpy(why, r->broken_why, sizeof(why));
		why[sizeof(why) - 1] = 0;
		snprintf(err, errlen, "the fabric was marked broken (%s): "
			 "refused; `slingshot-emu clean` removes it", why);
		return -EIO;
	}
	ret = check_layout(r, err, errlen);
	if (ret)
		return ret;
	if (want && r->config_hash != ssemu_config_hash(want)) {
		char diff[200] = "another configuration";

		ssemu_config_diff(&r->config, want, diff, sizeof(diff));
		if (strcmp(r->config.preset, want->preset))
			snprintf(err, errlen, "fabric exists with a different "
				 "configuration (preset '%s', asked for '%s'): "
				 "%s", r->config.preset, want->preset, diff);
		else
			snprintf(err, errlen, "fabric exists with a different "
				 "configuration: %s", diff);
		return -EEXIST;
	}
	return 0;
}

static int proc_claim_locked(struct ssemu_region *r, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (!r->procs[i]) {
			r->procs[i] = getpid();
			return 0;
		}
	}
	return -ENOSPC;
}

static int proc_register_locked(struct ssemu_region *r)
{
	return claim_reaping_locked(r, proc_claim_locked, NULL);
}

/* Unregister; returns the number of processes still attached. */
static int proc_unregister_locked(struct ssemu_region *r)
{
	int i, n = 0;
	bool done = false;

	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (!done && r->procs[i] == getpid()) {
			r->procs[i] = 0;
			done = true;
		} else if (r->procs[i] && pid_alive(r->procs[i])) {
			n++;
		}
	}
	return n;
}

/*
 * This process's own copy of the header's write-once page, over the shared
 * mapping at @r (see struct ssemu_region), and a read-only view of the
 * segment's copy in *@view.  @return 0 or -errno.
 */
static int header_private(struct ssemu_region *r, int fd, const void **view)
{
	void *v;

	void *tmp;

	v = mmap(NULL, SSEMU_HDR_PRIVATE, PROT_READ, MAP_SHARED, fd, 0);
	if (v == MAP_FAILED)
		return -errno;
	/* anonymous memory, not a private mapping of the file: truncating
	 * the file takes even the copied pages of those away */
	tmp = malloc(SSEMU_HDR_PRIVATE);
	if (!tmp) {
		munmap(v, SSEMU_HDR_PRIVATE);
		return -ENOMEM;
	}
	memcpy(tmp, v, SSEMU_HDR_PRIVATE);
	if (mmap(r, SSEMU_HDR_PRIVATE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED) {
		free(tmp);
		munmap(v, SSEMU_HDR_PRIVATE);
		return -errno;
	}
	memcpy(r, tmp, SSEMU_HDR_PRIVATE);
	free(tmp);
	*view = v;
	return 0;
}

static int open_shm(struct ssemu_fabric *f, const struct ssemu_config *c,
		    const struct ssemu_topo *t, uint32_t flags,
		    const void **view, char *err, size_t errlen)
{
	bool existing = flags & (SSEMU_OPEN_EXISTING | SSEMU_OPEN_OBSERVER);
	struct layout l;
	struct ssemu_region *r;
	struct stat st;
	int fd, ret, tries;
	size_t size;
	void *p;

	if (!existing)
		compute_layout(c, t, &l);
	for (tries = 0; tries < 100; tries++) {
		fd = existing ? -1 :
				shm_open(f->shm_name, O_RDWR | O_CREAT | O_EXCL,
					 0600);
		if (fd >= 0) {
			/* We create it. */
			if (ftruncate(fd, (off_t)l.total)) {
				ret = -errno;
				snprintf(err, errlen, "%s: cannot size the "
					 "segment to %llu bytes: %s",
					 f->shm_name,
					 (unsigned long long)l.total,
					 strerror(errno));
				close(fd);
				shm_unlink(f->shm_name);
				return ret;
			}
			p = mmap(NULL, l.total, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
			if (p == MAP_FAILED) {
				ret = -errno;
				close(fd);
				shm_unlink(f->shm_name);
				snprintf(err, errlen, "mmap: %s",
					 strerror(errno));
				return ret;
			}
			r = p;
			ret = region_init(r, c, t, &l);
			if (!ret)
				ret = proc_register_locked(r);
			if (ret) {
				close(fd);
				munmap(p, l.total);
				shm_unlink(f->shm_name);
				snprintf(err, errlen, "cannot initialise the "
					 "fabric: %s", strerror(-ret));
				return ret;
			}
			r->magic = SSEMU_MAGIC;
			/* publish; pairs with the acquire of ready below */
			ssemu_store_release(&r->ready, 1);
			ret = header_private(r, fd, view);
			close(fd);
			if (ret) {
				munmap(p, l.total);
				shm_unlink(f->shm_name);
				snprintf(err, errlen, "cannot map the header: "
					 "%s", strerror(-ret));
				return ret;
			}
			f->r = r;
			f->map_size = l.total;
			return 0;
		}
		if (!existing && errno != EEXIST) {
			ret = -errno;
			snprintf(err, errlen, "shm_open %s: %s", f->shm_name,
				 strerror(errno));
			return ret;
		}
		fd = shm_open(f->shm_name, O_RDWR, 0);
		if (fd < 0) {
			if (errno == ENOENT && existing) {
				snprintf(err, errlen, "no fabric named %s",
					 f->shm_name + 1);
				return -ENOENT;
			}
			if (errno == ENOENT)
				continue; /* removed meanwhile: retry */
			ret = -errno;
			snprintf(err, errlen, "shm_open %s: %s", f->shm_name,
				 strerror(errno));
			return ret;
		}
		if (fstat(fd, &st)) {
			ret = -errno;
			close(fd);
			return ret;
		}
		if (st.st_uid != geteuid()) {
			close(fd);
			snprintf(err, errlen, "fabric segment %s belongs to "
				 "uid %u, not to you (uid %u): refused",
				 f->shm_name, (unsigned)st.st_uid,
				 (unsigned)geteuid());
			return -EACCES;
		}
		if (st.st_mode & 077) {
			close(fd);
			snprintf(err, errlen, "fabric segment %s has mode %o, "
				 "expected 0600: refused", f->shm_name,
				 (unsigned)(st.st_mode & 0777));
			return -EACCES;
		}
		size = (size_t)st.st_size;
		if (size < sizeof(*r)) {
			close(fd);
			/* being created: give the creator time */
			usleep(10000);
			continue;
		}
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			close(fd);
			return ret;
		}
		r = p;
		if (!ssemu_load_acquire(&r->ready)) {
			close(fd);
			munmap(p, size);
			usleep(10000);
			continue;
		}
		/* our copy of the header, checked: then used, whatever the
		 * segment's becomes */
		ret = header_private(r, fd, view);
		close(fd);
		if (ret) {
			munmap(p, size);
			return ret;
		}
		ret = check_header(r, size, existing ? NULL : c, err, errlen);
		if (ret) {
			munmap((void *)*view, SSEMU_HDR_PRIVATE);
			munmap(p, size);
			return ret;
		}
		ret = lock_region(r, false);
		if (ret) {
			munmap(p, size);
			return ret;
		}
		if (r->dead) {
			/* the last user is removing it: start over */
			unlock_region(r);
			munmap((void *)*view, SSEMU_HDR_PRIVATE);
			munmap(p, size);
			usleep(1000);
			continue;
		}
		ret = flags & SSEMU_OPEN_OBSERVER ? 0 : proc_register_locked(r);
		unlock_region(r);
		if (ret) {
			munmap((void *)*view, SSEMU_HDR_PRIVATE);
			munmap(p, size);
			snprintf(err, errlen, "%d live processes are attached "
				 "to fabric %s already, the most it takes",
				 SSEMU_MAX_PROCS, f->shm_name + 1);
			return ret;
		}
		f->r = r;
		f->map_size = size;
		return 0;
	}
	snprintf(err, errlen, "%s: the segment never became a valid fabric "
		 "(corrupt, or its creator died while building it; "
		 "`slingshot-emu clean` removes it)", f->shm_name + 1);
	return -EPROTO;
}

/*
 * What this process remembers about its handle on a shared fabric, next to
 * the handle: whether it runs the engine (see ssemu_fabric_progress).
 * Touched by every thread of the process that progresses the fabric, so
 * with relaxed atomics: they are hints.
 */
struct fabric_local {
	struct ssemu_fabric f;
	uint64_t run_mark;	/* engine->executed after our last run */
	uint64_t seen;		/* engine->executed when we last looked */
	uint64_t defer_until;	/* wall ns: leave work to the runner until */
	uint32_t looks;		/* polls since we last looked at the engine */
	uint32_t runner;	/* we ran the engine last, as far as we know */
	uint32_t bulk;		/* a bulk transfer is on: see BULK_EVENTS */
	uint64_t look_exec;	/* engine->executed at our last look */
	/* shared store: the segment's own copy of the header's write-once
	 * page (read only), compared with ours before every run */
	const void *view;
};

static struct fabric_local *fabric_local(struct ssemu_fabric *f)
{
	return container_of(f, struct fabric_local, f);
}

static void image_take(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;

	f->cfg = &r->config;
	f->neps = r->neps;
	f->nmsgs = r->nmsgs;
	f->nbufs = r->nbufs;
	f->nendpoints = r->topo.nendpoints;
}

/*
 * Is the segment's header still what attach checked (else the fabric is
 * marked broken)?  This process uses its own copy of it; the segment's is
 * compared with it (a page), with every liveness check of the engine's
 * runner (and every ssemu_fabric_run_until).
 */
static bool image_bad(struct ssemu_fabric *f)
{
	struct fabric_local *fl = fabric_local(f);
	struct ssemu_region *r = f->r;

	if (fl->view && memcmp(fl->view, r, SSEMU_HDR_PRIVATE))
		return ssemu_fail(r, "the segment's header changed under the "
				  "fabric (its configuration, a section "
				  "offset or a count)");
	return !ssemu_engine_geometry_ok(ssemu_r_engine(r),
					 r->config.max_events) &&
	       ssemu_fail(r, "the event engine's geometry changed");
}

/*
 * May a call go on: the segment neither cut short under this process
 * (SIGBUS) nor marked broken?  @return 0 or -EIO.
 */
static int fab_check(struct ssemu_fabric *f)
{
	if (unlikely(f->gone)) {
		if (!ssemu_broken(f->r))
			ssemu_fail(f->r, "the segment was truncated under "
				   "process %d", (int)getpid());
		return -EIO;
	}
	return ssemu_broken(f->r) ? -EIO : 0;
}

/* ------------------------------------------------------------------ */
/* The SIGBUS guard                                                     */
/* ------------------------------------------------------------------ */

/*
 * A POSIX shared-memory segment cannot be sealed against shrinking
 * (F_SEAL_SHRINK is for memfds), so anyone with the owner's rights may
 * truncate a fabric's segment under its users, whose next touch of a page
 * past the new end raises SIGBUS.  While a segment is mapped, the fault
 * guard's handler (ssemu_guard.c) asks segment_bus_fault about every
 * SIGBUS first, which looks at the fault address: inside a
 * mapped segment (the shared
 * part of its mapping, or the view of the segment's header; this process's
 * own copy of the header cannot fault), it maps anonymous zero pages from
 * the faulting page to the end of that range (MAP_FIXED), marks the handle
 * gone and returns, so the faulting access completes on a zero page; the
 * library checks the handle at its entry points and after every engine
 * event, so the call in progress and every later one fail with -EIO.  Any
 * other SIGBUS goes to the handler that was there before (or kills the
 * process, as it would have).  (mmap is a plain system call on Linux, safe here.)
 */
#define GUARD_MAX 64

static struct guard {
	uintptr_t base;		/* 0: slot free */
	size_t size;
	struct ssemu_fabric *f;
} guards[GUARD_MAX];
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static bool guard_on;
static uintptr_t guard_page;

/* Called by the fault guard's handler (ssemu_guard.c) for every SIGBUS:
 * true if it lay in a mapped segment. */
static bool segment_bus_fault(const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr, base, page, end;
	int saved = errno, i;

	for (i = 0; i < GUARD_MAX; i++) {
		base = ssemu_load_acquire(&guards[i].base);
		if (!base || a < base || a - base >= guards[i].size)
			continue;
		end = base + guards[i].size;
		page = a & ~(guard_page - 1);
		if (mmap((void *)page, end - page, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		    MAP_FAILED)
			break;
		guards[i].f->gone = 1;
		errno = saved;
		return true;
	}
	errno = saved;
	return false;
}

static void sigbus_guard_add(struct ssemu_fabric *f)
{
	int i, k;

	pthread_mutex_lock(&guard_lock);
	if (!guard_on) {
		guard_page = (uintptr_t)sysconf(_SC_PAGESIZE);
		ssemu_guard_set_bus_hook(segment_bus_fault);
		guard_on = true;
	}
	/* (again if someone replaced it since: the old one is chained) */
	ssemu_guard_arm();
	for (i = 0, k = 0; i < GUARD_MAX && k < 2; i++) {
		if (guards[i].base)
			continue;
		/* the shared part of the mapping, then the header's view */
		guards[i].size = k ? SSEMU_HDR_PRIVATE :
				     f->map_size - SSEMU_HDR_PRIVATE;
		guards[i].f = f;
		ssemu_store_release(&guards[i].base,
				    k ? (uintptr_t)fabric_local(f)->view :
					(uintptr_t)f->r + SSEMU_HDR_PRIVATE);
		k++;
	}
	if (k < 2)
		ssemu_log(SSEMU_LOG_WARN, "more than %d shared fabrics open: "
			  "this one is not guarded against truncation",
			  GUARD_MAX);
	pthread_mutex_unlock(&guard_lock);
}

static void sigbus_guard_remove(struct ssemu_fabric *f)
{
	int i;

	pthread_mutex_lock(&guard_lock);
	for (i = 0; i < GUARD_MAX; i++)
		if (guards[i].base && guards[i].f == f)
			ssemu_store_release(&guards[i].base, (uintptr_t)0);
	pthread_mutex_unlock(&guard_lock);
}

int ssemu_fabric_open(const struct ssemu_fabric_opts *opts,
		      struct ssemu_fabric **fabric, char *err, size_t errlen)
{
	struct ssemu_config defcfg;
	const struct ssemu_config *c;
	struct ssemu_fabric *f;
	struct ssemu_topo t;
	struct layout l;
	char dummy[8];
	int ret;
	void *p;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!opts || !fabric) {
		snprintf(err, errlen, "missing options or result pointer");
		return -EINVAL;
	}
	c = opts->config;
	if (!c) {
		ssemu_config_preset("switch", &defcfg);
		c = &defcfg;
	}
	if (opts->flags & (SSEMU_OPEN_EXISTING | SSEMU_OPEN_OBSERVER) &&
	    opts->store != SSEMU_STORE_SHM) {
		snprintf(err, errlen, "only a shared fabric can be attached "
			 "as existing");
		return -EINVAL;
	}
	ret = ssemu_config_validate(c, err, errlen);
	if (ret)
		return ret;
	/* (zeroed: the header's copy is compared byte for byte) */
	memset(&t, 0, sizeof(t));
	ret = ssemu_topo_init(&t, &c->topo, err, errlen);
	if (ret)
		return ret;
	compute_layout(c, &t, &l);
	if (l.total > (1ULL << 40)) {
		snprintf(err, errlen, "this fabric needs %llu GiB of store: "
			 "reduce max_nics/max_switches/bufs",
			 (unsigned long long)(l.total >> 30));
		return -ENOMEM;
	}

	f = calloc(1, sizeof(struct fabric_local));
	if (!f)
		return -ENOMEM;
	f->store = opts->store;
	if (opts->store == SSEMU_STORE_PRIVATE) {
		p = mmap(NULL, l.total, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map %llu bytes: %s",
				 (unsigned long long)l.total, strerror(errno));
			goto err_free;
		}
		f->r = p;
		f->map_size = l.total;
		ret = region_init(f->r, c, &t, &l);
		if (ret) {
			munmap(p, l.total);
			goto err_free;
		}
		f->r->magic = SSEMU_MAGIC;
		f->r->ready = 1;
	} else if (opts->store == SSEMU_STORE_SHM) {
		if (opts->name && (!opts->name[0] || strchr(opts->name, '/') ||
				   strlen(opts->name) > 48)) {
			snprintf(err, errlen, "bad fabric name '%s': 1-48 "
				 "characters, no '/'", opts->name);
			ret = -EINVAL;
			goto err_free;
		}
		if (opts->name)
			snprintf(f->shm_name, sizeof(f->shm_name), "/%s",
				 opts->name);
		else
			snprintf(f->shm_name, sizeof(f->shm_name),
				 "/ssemu-%u", (unsigned)geteuid());
		f->flags = opts->flags;
		ret = open_shm(f, c, &t, opts->flags,
			       &fabric_local(f)->view, err, errlen);
		if (ret)
			goto err_free;
		/*
		 * The emulated NIC serving an RMA to our memory may be the
		 * engine running in another process of ours: let it use
		 * cross-memory attach (process_vm_readv/writev) on us even
		 * under Yama's ptrace_scope 1.  EINVAL: no Yama, nothing to
		 * do.
		 */
		if (!(opts->flags & SSEMU_OPEN_OBSERVER) &&
		    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) &&
		    errno != EINVAL)
			ssemu_log(SSEMU_LOG_WARN, "prctl(PR_SET_PTRACER): %s: "
				  "other processes' RMA to this one may be "
				  "refused", strerror(errno));
	} else {
		snprintf(err, errlen, "unknown store %d", (int)opts->store);
		ret = -EINVAL;
		goto err_free;
	}
	if (f->r->config.clock == SSEMU_CLOCK_REALTIME && !f->r->wall_t0_ns) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* first process in sets the origin; the others keep it */
		uint64_t zero = 0, t0 = (uint64_t)ts.tv_sec * 1000000000ULL +
					(uint64_t)ts.tv_nsec;
		ssemu_cas(&f->r->wall_t0_ns, &zero, t0);
	}
	image_take(f);
	if (f->store == SSEMU_STORE_SHM)
		sigbus_guard_add(f);
	*fabric = f;
	return 0;

err_free:
	free(fabric_local(f));
	return ret;
}

void ssemu_fabric_close(struct ssemu_fabric *f)
{
	struct ssemu_region *r;
	int left;

	if (!f)
		return;
	r = f->r;
	if (f->store == SSEMU_STORE_SHM)
		sigbus_guard_remove(f);
	/* (a segment cut short under us is left to `slingshot-emu clean`) */
	if (f->store == SSEMU_STORE_SHM && !(f->flags & SSEMU_OPEN_OBSERVER) &&
	    !f->gone) {
		if (!lock_region(r, false)) {
			left = proc_unregister_locked(r);
			if (!left) {
				r->dead = 1;
				shm_unlink(f->shm_name);
			}
			unlock_region(r);
		}
	}
	if (fabric_local(f)->view)
		munmap((void *)fabric_local(f)->view, SSEMU_HDR_PRIVATE);
	munmap(r, f->map_size);
	free(fabric_local(f));
}

const struct ssemu_config *ssemu_fabric_config(struct ssemu_fabric *f)
{
	return &f->r->config;
}

ssemu_time_t ssemu_fabric_now(struct ssemu_fabric *f)
{
	return ssemu_load_relaxed(&ssemu_r_engine(f->r)->now);
}

/* ------------------------------------------------------------------ */
/* Placement: jobs and their port reservations                          */
/* ------------------------------------------------------------------ */

/* End the reservation of job @slot. */
static void job_release_locked(struct ssemu_region *r, uint32_t slot)
{
	uint32_t *resv = ssemu_r_resv(r);
	uint64_t p;

	for (p = 0; p < r->topo.nendpoints; p++)
		if (resv[p] != SSEMU_NONE && SSEMU_RESV_SLOT(resv[p]) == slot)
			resv[p] = SSEMU_NONE;
	ssemu_log(SSEMU_LOG_INFO, "job %u: last NIC detached, its ports "
		  "are free again", r->jobs[slot].id);
	memset(&r->jobs[slot], 0, sizeof(r->jobs[slot]));
}

/* A NIC of job @slot detached (or its process died). */
static void job_nic_gone_locked(struct ssemu_region *r, uint32_t slot)
{
	struct ssemu_job_sh *j;

	if (slot >= SSEMU_MAX_JOBS)
		return;
	j = &r->jobs[slot];
	if (j->active && j->nics && --j->nics == 0)
		job_release_locked(r, slot);
}

/*
 * After a process died holding the lock: a job it was placing may be left
 * active with no NIC, or ports reserved for a slot that never became
 * active.  Outside the lock neither state exists, so both are garbage.
 */
static void jobs_sweep_locked(struct ssemu_region *r)
{
	uint32_t *resv = ssemu_r_resv(r), slot, nics[SSEMU_MAX_JOBS] = { 0 };
	uint32_t i;
	uint64_t p;

	for (i = 0; i < r->config.max_nics; i++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, i);

		if (n->state == SSEMU_NIC_ATTACHED &&
		    n->jobslot < SSEMU_MAX_JOBS)
			nics[n->jobslot]++;
	}
	for (slot = 0; slot < SSEMU_MAX_JOBS; slot++) {
		r->jobs[slot].nics = nics[slot];
		if (r->jobs[slot].active && !nics[slot])
			job_release_locked(r, slot);
	}
	for (p = 0; p < r->topo.nendpoints; p++) {
		slot = resv[p] == SSEMU_NONE ? 0 : SSEMU_RESV_SLOT(resv[p]);
		if (resv[p] != SSEMU_NONE &&
		    (slot >= SSEMU_MAX_JOBS || !r->jobs[slot].active))
			resv[p] = SSEMU_NONE;
	}
}

/* Neither taken by a NIC nor reserved for a job. */
static bool port_usable(void *arg, uint32_t port)
{
	struct ssemu_region *r = arg;

	return ssemu_r_portmap(r)[port] == SSEMU_NONE &&
	       ssemu_r_resv(r)[port] == SSEMU_NONE;
}

/* Reserve ports for every rank of job @o->job in free job slot @slot
 * (a failure is explained in @why). */
static int job_reserve_locked(struct ssemu_region *r, uint32_t slot,
			      const struct ssemu_nic_opts *o, char *why,
			      size_t whylen)
{
	struct ssemu_place_req q = {
		.topo = &r->topo, .policy = o->policy, .nranks = o->nranks,
		.seed = o->seed, .map = o->map, .usable = port_usable, .arg = r,
	};
	struct ssemu_job_sh *j = &r->jobs[slot];
	uint32_t *ports, i;
	char err[200];
	int ret;

	ports = malloc((size_t)o->nranks * sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	ret = ssemu_place_choose(&q, ports, err, sizeof(err));
	if (ret < 0) {
		snprintf(why, whylen, "job %u (%u ranks, placement %s): %s",
			 o->job, o->nranks, ssemu_place_policy_name(o->policy),
			 err[0] ? err : strerror(-ret));
		free(ports);
		return ret;
	}
	if (ret == 1)
		ssemu_log(SSEMU_LOG_WARN, "job %u: no block of %u "
			  "consecutive free ports is left: linear placement "
			  "takes the lowest free ports instead", o->job,
			  o->nranks);
	for (i = 0; i < o->nranks; i++)
		ssemu_r_resv(r)[ports[i]] = SSEMU_RESV(slot, i);
	j->id = o->job;
	j->active = 1;
	j->nranks = o->nranks;
	j->policy = o->policy;
	j->nics = 0;
	ssemu_log(SSEMU_LOG_INFO, "job %u: %u ports reserved by %s placement "
		  "(rank 0 at port %u)", o->job, o->nranks,
		  ssemu_place_policy_name(o->policy), ports[0]);
	free(ports);
	return 0;
}

/*
 * The port of rank @o->rank of job @o->job, reserving ports for the whole
 * job when it is the job's first rank here.  @return 0 with the port and
 * the job slot, or a negative errno (explained in @why).
 */
static int place_locked(struct ssemu_region *r, const struct ssemu_nic_opts *o,
			uint32_t *portp, uint32_t *slotp, char *why,
			size_t whylen)
{
	uint32_t slot, free_slot = SSEMU_NONE, want, *resv = ssemu_r_resv(r);
	struct ssemu_job_sh *j;
	uint64_t p;
	int ret;

	if (o->policy >= SSEMU_PLACE_COUNT) {
		snprintf(why, whylen, "job %u: unknown placement policy %u",
			 o->job, o->policy);
		return -EINVAL;
	}
	if ((uint32_t)o->rank >= o->nranks) {
		snprintf(why, whylen, "job %u: rank %d is not below the job "
			 "size %u", o->job, o->rank, o->nranks);
		return -EINVAL;
	}
	if (o->nranks > r->config.max_nics ||
	    o->nranks > SSEMU_RESV_MAX_RANKS) {
		snprintf(why, whylen, "job %u: %u ranks, but the fabric "
			 "attaches at most %u NICs (resources.max_nics)",
			 o->job, o->nranks, r->config.max_nics);
		return -ENOSPC;
	}
	for (slot = 0; slot < SSEMU_MAX_JOBS; slot++) {
		if (!r->jobs[slot].active) {
			if (free_slot == SSEMU_NONE)
				free_slot = slot;
		} else if (r->jobs[slot].id == o->job) {
			break;
		}
	}
	if (slot < SSEMU_MAX_JOBS) {
		j = &r->jobs[slot];
		if (j->nranks != o->nranks || j->policy != o->policy) {
			snprintf(why, whylen, "job %u rank %d asks for %u "
				 "ranks placed %s; the job was placed as %u "
				 "ranks %s", o->job, o->rank, o->nranks,
				 ssemu_place_policy_name(o->policy),
				 j->nranks,
				 ssemu_place_policy_name(j->policy));
			return -EINVAL;
		}
	} else if (free_slot == SSEMU_NONE) {
		snprintf(why, whylen, "job %u: %d jobs are placed on the "
			 "fabric already, no more", o->job, SSEMU_MAX_JOBS);
		return -ENOSPC;
	} else {
		slot = free_slot;
		ret = job_reserve_locked(r, slot, o, why, whylen);
		if (ret)
			return ret;
	}
	want = SSEMU_RESV(slot, o->rank);
	for (p = 0; p < r->topo.nendpoints; p++)
		if (resv[p] == want)
			break;
	if (p == r->topo.nendpoints) {
		snprintf(why, whylen, "job %u: rank %d has no reserved port "
			 "(corrupt reservation table)", o->job, o->rank);
		return -EPROTO;
	}
	if (ssemu_r_portmap(r)[p] != SSEMU_NONE) {
		snprintf(why, whylen, "job %u: rank %d is attached already "
			 "(port %llu, pid %d)", o->job, o->rank,
			 (unsigned long long)p,
			 ssemu_r_nic(r, ssemu_r_portmap(r)[p] %
					r->config.max_nics)->owner_pid);
		if (!r->jobs[slot].nics)
			job_release_locked(r, slot);
		return -EADDRINUSE;
	}
	*portp = (uint32_t)p;
	*slotp = slot;
	return 0;
}

/* ------------------------------------------------------------------ */
/* NICs                                                                 */
/* ------------------------------------------------------------------ */

/* Close pid @pid of NIC @nic if it is open: its endpoint slot goes back to
 * the pool (its messages in flight stay the NIC's until done). */
static void ep_close_locked(struct ssemu_region *r, uint32_t nic, uint32_t pid)
{
	uint32_t *tab = ssemu_r_nic_eps(r, nic), epi = tab[pid];

	if (epi >= r->neps)
		return;
	if (ssemu_r_ep(r, epi)->open) {
		ssemu_svc_ep_closed_locked(r, epi);
		ssemu_model_ep_close(r, epi);
	}
	/* (relaxed: ssemu_nic_wait and ssemu_ep_peer_alive read it
	 * without the lock) */
	ssemu_store_relaxed(&tab[pid], SSEMU_NONE);
}

static void nic_detach_locked(struct ssemu_region *r, uint32_t slot)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, slot);
	uint32_t e;

	if (n->state != SSEMU_NIC_ATTACHED)
		return;
	for (e = 0; e < r->config.eps_per_nic; e++)
		ep_close_locked(r, slot, e);
	ssemu_model_nic_reset(r, slot);
	if (n->port < r->topo.nendpoints)
		ssemu_r_portmap(r)[n->port] = SSEMU_NONE;
	job_nic_gone_locked(r, n->jobslot);
	n->jobslot = SSEMU_NONE;
	n->state = SSEMU_NIC_FREE;
	n->owner_pid = 0;
	r->nnics--;
}

/* What ssemu_nic_attach claims: a NIC slot, a port and a job slot. */
struct nic_claim {
	const struct ssemu_nic_opts *o;
	uint32_t slot, port, jobslot;
	char why[256];		/* why the claim failed */
};

/* A NIC slot and a port for @arg (struct nic_claim), or -ENOSPC,
 * -EADDRINUSE (worth another try once the dead are reaped) or another
 * error, explained in its why. */
static int nic_claim_locked(struct ssemu_region *r, void *arg)
{
	struct nic_claim *c = arg;
	const struct ssemu_nic_opts *o = c->o;
	uint32_t i, rv, port = o->port;
	uint64_t p;

	c->slot = c->jobslot = SSEMU_NONE;
	for (i = 0; i < r->config.max_nics; i++)
		if (ssemu_r_nic(r, i)->state == SSEMU_NIC_FREE)
			break;
	if (i == r->config.max_nics) {
		snprintf(c->why, sizeof(c->why), "all %u NIC slots of the "
			 "fabric are in use by live processes (the fabric "
			 "configuration's resources.max_nics)",
			 r->config.max_nics);
		return -ENOSPC;
	}
	c->slot = i;
	if (port == SSEMU_PORT_ANY && o->policy != SSEMU_PLACE_FIRST_FREE &&
	    o->rank >= 0 && o->nranks)
		return place_locked(r, o, &c->port, &c->jobslot, c->why,
				    sizeof(c->why));
	if (port == SSEMU_PORT_ANY) {
		/* first free: neither taken nor reserved for a job */
		for (p = 0; p < r->topo.nendpoints; p++)
			if (port_usable(r, (uint32_t)p))
				break;
		if (p == r->topo.nendpoints) {
			snprintf(c->why, sizeof(c->why), "no free port: all "
				 "%llu ports of the fabric are taken by live "
				 "processes' NICs or reserved for jobs",
				 (unsigned long long)r->topo.nendpoints);
			return -ENOSPC;
		}
		c->port = (uint32_t)p;
		return 0;
	}
	if (ssemu_r_portmap(r)[port] != SSEMU_NONE) {
		snprintf(c->why, sizeof(c->why), "port %u is taken by the NIC "
			 "of process %d", port,
			 ssemu_r_nic(r, ssemu_r_portmap(r)[port] %
					r->config.max_nics)->owner_pid);
		return -EADDRINUSE;
	}
	/* reserved: only for that job's rank */
	rv = ssemu_r_resv(r)[port];
	if (rv != SSEMU_NONE) {
		if (SSEMU_RESV_SLOT(rv) >= SSEMU_MAX_JOBS ||
		    r->jobs[SSEMU_RESV_SLOT(rv)].id != o->job ||
		    rv != SSEMU_RESV(SSEMU_RESV_SLOT(rv), o->rank)) {
			snprintf(c->why, sizeof(c->why), "port %u is "
				 "reserved for rank %u of job %u", port,
				 rv & 0xffff,
				 SSEMU_RESV_SLOT(rv) < SSEMU_MAX_JOBS ?
				 r->jobs[SSEMU_RESV_SLOT(rv)].id : 0);
			return -EADDRINUSE;
		}
		c->jobslot = SSEMU_RESV_SLOT(rv);
	}
	c->port = port;
	return 0;
}

int ssemu_nic_attach(struct ssemu_fabric *f, const struct ssemu_nic_opts *o,
		     struct ssemu_nic **nicp)
{
	struct ssemu_region *r = f->r;
	struct ssemu_nic_opts defo = { .port = SSEMU_PORT_ANY, .rank = -1 };
	struct nic_claim c = { 0 };
	struct ssemu_nic_sh *n;
	struct ssemu_nic *nic;
	uint32_t slot, port, i, jobslot;
	int ret;

	if (!nicp)
		return -EINVAL;
	if (!o)
		o = &defo;
	ret = fab_check(f);
	if (ret)
		return ret;
	if (o->port != SSEMU_PORT_ANY && o->port >= r->topo.nendpoints)
		return -EINVAL;
	if (o->policy >= SSEMU_PLACE_COUNT ||
	    (o->policy == SSEMU_PLACE_MAP && !o->map && o->nranks))
		return -EINVAL;
	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	ret = lock_region(r, false);
	if (ret) {
		free(nic);
		return ret;
	}
	c.o = o;
	ret = claim_reaping_locked(r, nic_claim_locked, &c);
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "%s", c.why[0] ? c.why :
			  strerror(-ret));
		goto err_unlock;
	}
	slot = c.slot;
	port = c.port;
	jobslot = c.jobslot;
	n = ssemu_r_nic(r, slot);
	ssemu_model_nic_reset(r, slot);
	/* no stale window entries toward the new NIC either */
	for (i = 0; i < r->config.max_nics; i++) {
		ssemu_r_pair(r, i, slot)->window = 0;
		pair_cc_reset(&r->config, ssemu_r_pair(r, i, slot));
		pair_cc_reset(&r->config, ssemu_r_pair(r, slot, i));
	}
	n->owner_pid = getpid();
	n->port = port;
	n->job = o->job;
	n->rank = o->rank;
	n->jobslot = jobslot;
	if (jobslot != SSEMU_NONE)
		r->jobs[jobslot].nics++;
	n->gen++;
	ssemu_tel_nic_attach(r, slot);
	n->state = SSEMU_NIC_ATTACHED;
	ssemu_r_portmap(r)[port] = slot;
	r->nnics++;
	unlock_region(r);
	nic->fab = f;
	nic->slot = slot;
	*nicp = nic;
	return 0;

err_unlock:
	unlock_region(r);
	free(nic);
	return ret;
}

void ssemu_nic_detach(struct ssemu_nic *nic)
{
	struct ssemu_region *r;

	if (!nic)
		return;
	r = nic->fab->r;
	if (!lock_region(r, false)) {
		nic_detach_locked(r, nic->slot);
		unlock_region(r);
	}
	free(nic);
}

uint32_t ssemu_nic_port(struct ssemu_nic *nic)
{
	return ssemu_r_nic(nic->fab->r, nic->slot)->port;
}

int ssemu_nic_stats(struct ssemu_nic *nic, struct ssemu_nic_stats *st)
{
	if (!nic || !st)
		return -EINVAL;
	if (fab_check(nic->fab))
		return -EIO;
	*st = ssemu_r_nic(nic->fab->r, nic->slot)->stats;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Endpoints                                                            */
/* ------------------------------------------------------------------ */

/* Is endpoint slot @epi free of messages (none in use or in flight)? */
static bool ep_slot_quiet(struct ssemu_region *r, uint32_t epi)
{
	uint32_t i, st, k = r->config.msgs_per_ep;

	for (i = epi * k; i < (epi + 1) * k; i++) {
		st = ssemu_load_acquire(ssemu_r_mstate(r, i));
		if (st && st != SSEMU_MSG_DONE)
			return false;
	}
	return true;
}

/*
 * A closed endpoint slot for NIC @nic, or SSEMU_NONE: one with no message
 * in use, or else one the NIC had before (its messages still in flight are
 * the NIC's own, and they keep their slots until they are done).
 */
static uint32_t ep_slot_find(struct ssemu_region *r, uint32_t nic)
{
	uint32_t i, own = SSEMU_NONE;

	for (i = 0; i < r->neps; i++) {
		struct ssemu_ep_sh *sh = ssemu_r_ep(r, i);

		if (sh->open)
			continue;
		if (ep_slot_quiet(r, i))
			return i;
		if (own == SSEMU_NONE && sh->nic == nic)
			own = i;
	}
	return own;
}

/* What ssemu_ep_open claims: a pid of its NIC and an endpoint slot. */
struct ep_claim {
	uint32_t nic, pid, epi;
	char why[256];
};

static int ep_claim_locked(struct ssemu_region *r, void *arg)
{
	struct ep_claim *c = arg;
	uint32_t *tab = ssemu_r_nic_eps(r, c->nic), e;

	for (e = 0; e < r->config.eps_per_nic; e++)
		if (tab[e] == SSEMU_NONE)
			break;
	if (e == r->config.eps_per_nic) {
		snprintf(c->why, sizeof(c->why), "NIC at port %u: all %u of "
			 "its endpoints are open, the fabric's limit per NIC "
			 "(resources.eps_per_nic in the fabric configuration "
			 "raises it)", ssemu_r_nic(r, c->nic)->port,
			 r->config.eps_per_nic);
		return -ENOSPC;
	}
	c->pid = e;
	/* (slots of processes that died with endpoints open come back
	 * when claim_reaping_locked reaps them) */
	c->epi = ep_slot_find(r, c->nic);
	if (c->epi == SSEMU_NONE) {
		snprintf(c->why, sizeof(c->why), "NIC at port %u: all %u "
			 "endpoint slots of the fabric are in use by live "
			 "processes' NICs (resources.max_eps in the fabric "
			 "configuration raises it)",
			 ssemu_r_nic(r, c->nic)->port, r->neps);
		return -ENOSPC;
	}
	return 0;
}

int ssemu_ep_open(struct ssemu_nic *nic, struct ssemu_ep **epp)
{
	struct ssemu_region *r = nic->fab->r;
	const struct ssemu_config *c = &r->config;
	struct ep_claim cl = { .nic = nic->slot };
	uint32_t e, epi;
	struct ssemu_ep_sh *sh;
	struct ssemu_ep *ep;
	int ret;

	if (!epp)
		return -EINVAL;
	/* the NIC accesses application memory under the fault guard */
	ssemu_guard_arm();
	ret = fab_check(nic->fab);
	if (ret)
		return ret;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ret = lock_region(r, false);
	if (ret) {
		free(ep);
		return ret;
	}
	ret = claim_reaping_locked(r, ep_claim_locked, &cl);
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "%s", cl.why);
		goto err_unlock;
	}
	e = cl.pid;
	epi = cl.epi;
	sh = ssemu_r_ep(r, epi);
	ret = ssemu_auth_ep_open_locked(r, sh, ep);
	if (ret)
		goto err_unlock;
	ssemu_ring_init(ssemu_r_ring(r, sh->tx_ring_off), c->msgs_per_ep,
			sizeof(uint32_t));
	ssemu_ring_init(ssemu_r_ring(r, sh->ev_ring_off), SSEMU_EV_RING,
			sizeof(struct ssemu_event));
	sh->rx_head = sh->rx_tail = sh->tx_head = sh->tx_tail = SSEMU_NONE;
	sh->nic = nic->slot;
	sh->pid = e;
	/* Message slots and buffers a previous owner left in flight stay
	 * taken until their traffic is done (ssemu_model_ep_close).
	 * Published last: eps_ready looks at it without the lock. */
	ssemu_store_relaxed(&ssemu_r_nic_eps(r, nic->slot)[e], epi);
	ssemu_store_release(&sh->open, 1);
	unlock_region(r);
	ep->nic = nic;
	ep->index = epi;
	ep->pid = e;
	ep->r = r;
	ep->ev_ring = ssemu_r_ring(r, sh->ev_ring_off);
	*epp = ep;
	return 0;

err_unlock:
	unlock_region(r);
	free(ep);
	return ret;
}


ssemu_addr_t ssemu_ep_addr(struct ssemu_ep *ep)
{
	return SSEMU_ADDR(ssemu_nic_port(ep->nic), ep->pid);
}

struct ssemu_fabric *ssemu_ep_fabric(struct ssemu_ep *ep)
{
	return ep->nic->fab;
}

size_t ssemu_ep_max_msg(struct ssemu_ep *ep)
{
	const struct ssemu_config *c = ep->nic->fab->cfg;

	return c->bufs_per_ep ? c->buf_size : SSEMU_INLINE_MAX;
}

static inline bool slot_free(uint32_t state)
{
	return state == 0 || state == SSEMU_MSG_DONE;
}

/*
 * A free message slot of @ep and, if @bytes do not fit inline, one of its
 * large buffers; the slot's bookkeeping is reset for a new message (the
 * caller fills in the rest and posts it with msg_post).  The owner is the
 * only allocator of its slots and buffers.
 * @return the slot, or NULL (-EAGAIN: none free).
 */
static struct ssemu_msg *msg_alloc(struct ssemu_ep *ep, uint64_t bytes,
				   uint32_t *mip)
{
	struct ssemu_region *r = ep->r;
	const struct ssemu_config *c = ep->nic->fab->cfg;
	struct ssemu_ep_sh *sh = ssemu_r_ep(r, ep->index);
	uint32_t i, k, mi = SSEMU_NONE, buf = SSEMU_NONE, local = 0;
	/* (in locals: the acquire loads below would have them read again
	 * on every turn) */
	struct ssemu_msg *msgs = ssemu_r_msg(r, 0);
	uint32_t *mstate = ssemu_r_mstate(r, 0);
	uint32_t nmsgs = ep->nic->fab->nmsgs, nbufs = c->bufs_per_ep;
	uint32_t mask = c->msgs_per_ep - 1, cursor = sh->alloc_cursor;
	uint32_t first = ep->index * c->msgs_per_ep;
	struct ssemu_msg *m;

	for (k = 0; k <= mask; k++) {
		local = (cursor + k) & mask;
		i = first + local;
		/* pairs with the releases of TXDONE/RXDONE */
		if (slot_free(ssemu_load_acquire(&mstate[i]))) {
			mi = i;
			break;
		}
	}
	if (mi == SSEMU_NONE)
		return NULL;
	if (bytes > SSEMU_INLINE_MAX) {
		for (k = 0; k < nbufs; k++) {
			uint32_t owner = sh->buf_msg[k];

			/* free if its last owner is done, or went on to a
			 * message without this buffer (this process alone
			 * allocates the endpoint's slots and sets their buf:
			 * a busy slot's buf is stable); (SSEMU_NONE is >=
			 * nmsgs too) */
			if (owner >= nmsgs ||
			    slot_free(ssemu_load_acquire(&mstate[owner])) ||
			    msgs[owner].buf != ep->index * nbufs + k) {
				buf = k;
				break;
			}
		}
		if (buf == SSEMU_NONE)
			return NULL;
		sh->buf_msg[buf] = mi;
	}
	sh->alloc_cursor = (local + 1) & mask;

	m = &msgs[mi];
	m->gen++;
	m->src = ssemu_ep_addr(ep);
	m->buf = buf == SSEMU_NONE ? SSEMU_NONE :
				     ep->index * c->bufs_per_ep + buf;
	m->sent = m->arrived = m->acked = m->rx_acked = 0;
	m->rx_marked = 0;
	m->status = 0;
	m->ep_gen = sh->gen;
	/* the engine is done with a free slot: its bookkeeping restarts */
	m->mflags = 0;
	m->rma_op = 0;
	m->resp_npkts = m->resp_sent = m->resp_arrived = 0;
	m->rma_len = 0;
	*mip = mi;
	return m;
}

static uint8_t *msg_data(struct ssemu_region *r, struct ssemu_msg *m)
{
	return m->buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, m->buf);
}

/*
 * Copy the application's @iov to @dst (the NIC reading host memory): a
 * page that is not mapped fails the copy with -EFAULT, as a DMA read
 * error fails a real NIC's command, and never faults the process.
 * *@dstp advances past what was copied.
 */
static int copy_iov(uint8_t **dstp, const struct iovec *iov, size_t n)
{
	uint8_t *dst = *dstp;
	size_t v;
	int ret;

	for (v = 0; v < n; v++) {
		/* (address 0 with a length is one more unmapped address) */
		ret = ssemu_copy_user(dst, iov[v].iov_base, iov[v].iov_len);
		if (ret)
			return ret;
		dst += iov[v].iov_len;
	}
	*dstp = dst;
	return 0;
}

/* Bytes in @iov; -1 if there is none or they add up past INT64_MAX.  (An
 * entry with a length and no base fails in copy_iov, as any address the
 * NIC cannot read does.) */
static int64_t iov_bytes(const struct iovec *iov, size_t n)
{
	uint64_t len = 0;
	size_t v;

	if (n && !iov)
		return -1;
	for (v = 0; v < n; v++) {
		if (iov[v].iov_len > INT64_MAX)
			return -1;
		len += iov[v].iov_len;
		if (len > INT64_MAX)
			return -1;
	}
	return (int64_t)len;
}

/* Hand a filled slot to the engine. */
static int msg_post(struct ssemu_ep *ep, struct ssemu_msg *m, uint32_t mi)
{
	struct ssemu_region *r = ep->r;
	struct ssemu_ep_sh *sh = ssemu_r_ep(r, ep->index);

	/* (the ring's offset is read from the segment) */
	if (ssemu_ep_rings_bad(r, ep->index))
		return -EIO;
	ssemu_store_release(ssemu_r_mstate(r, mi), SSEMU_MSG_BUSY);
	/* The tx ring has a slot per message slot, so it cannot be full. */
	if (ssemu_ring_push(ssemu_r_ring(r, sh->tx_ring_off), &mi)) {
		ssemu_store_release(ssemu_r_mstate(r, mi), 0);
		return -EAGAIN;
	}
	/* tell the engine where to look; pairs with the exchange in
	 * drain_tx_locked */
	ssemu_bit_set(ssemu_r_bits(r, r->work_off), ep->index);
	return 0;
}

int ssemu_ep_send(struct ssemu_ep *ep, const struct ssemu_send *s)
{
	struct ssemu_region *r;
	const struct ssemu_config *c;
	struct ssemu_msg *m;
	uint32_t mi;
	int64_t len;
	uint8_t *p;
	int ret;

	if (!ep || !s || (s->iov_count && !s->iov))
		return -EINVAL;
	if (fab_check(ep->nic->fab))
		return -EIO;
	r = ep->r;
	c = ep->nic->fab->cfg;
	if (SSEMU_ADDR_PORT(s->dest) >= ep->nic->fab->nendpoints ||
	    SSEMU_ADDR_PID(s->dest) >= c->eps_per_nic ||
	    s->tclass >= c->ntclass)
		return -EINVAL;
	if (!ssemu_ep_tclass_allowed(ep, s->tclass))
		return -EACCES;
	len = iov_bytes(s->iov, s->iov_count);
	if (len < 0)
		return -EINVAL;
	if ((uint64_t)len > ssemu_ep_max_msg(ep))
		return -EMSGSIZE;

	m = msg_alloc(ep, (uint64_t)len, &mi);
	if (!m)
		return -EAGAIN;
	m->dst = s->dest;
	m->tclass = s->tclass;
	m->flags = s->flags;
	m->len = (uint64_t)len;
	memcpy(m->hdr, s->hdr, sizeof(m->hdr));
	m->cookie = s->cookie;
	m->npkts = len ? (uint32_t)((len + c->mtu - 1) / c->mtu) : 1;
	p = msg_data(r, m);
	/* a slot that is not posted stays free */
	ret = copy_iov(&p, s->iov, s->iov_count);
	if (ret)
		return ret;
	m->crc = msg_crc(m->src, m->hdr, m->len, msg_data(r, m));
	ret = msg_post(ep, m, mi);
	/* (the segment may have been cut short while we copied) */
	return ret ? ret : fab_check(ep->nic->fab);
}

/* ------------------------------------------------------------------ */
/* Remote memory access: the initiator's side and the region table     */
/* ------------------------------------------------------------------ */

int ssemu_mr_reg(struct ssemu_nic *nic, const struct ssemu_mr_desc *mr)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;
	struct ssemu_mr_sh *t, *e;
	uint32_t i, hwm, slot = SSEMU_NONE;
	int ret;

	if (!nic || !mr || (mr->len && !mr->addr) ||
	    (mr->access & ~(SSEMU_MR_READ | SSEMU_MR_WRITE)) ||
	    (uintptr_t)mr->addr + mr->len < (uintptr_t)mr->addr ||
	    mr->base + mr->len < mr->base)
		return -EINVAL;
	ssemu_guard_arm();
	r = nic->fab->r;
	ret = fab_check(nic->fab);
	if (ret)
		return ret;
	ret = lock_region(r, false);
	if (ret)
		return ret;
	n = ssemu_r_nic(r, nic->slot);
	t = ssemu_r_mrs(r, nic->slot);
	hwm = SSEMU_MIN(n->mr_hwm, (uint32_t)SSEMU_MRS_PER_NIC);
	for (i = 0; i < hwm; i++) {
		if (!t[i].in_use) {
			if (slot == SSEMU_NONE)
				slot = i;
		} else if (t[i].key == mr->key) {
			ret = -EEXIST;
			goto out;
		}
	}
	if (slot == SSEMU_NONE) {
		if (hwm == SSEMU_MRS_PER_NIC) {
			ret = -ENOSPC;
			goto out;
		}
		slot = hwm;
		n->mr_hwm = hwm + 1;
	}
	e = &t[slot];
	e->key = mr->key;
	e->addr = (uint64_t)(uintptr_t)mr->addr;
	e->len = mr->len;
	e->base = mr->base;
	e->pid = getpid();
	e->access = mr->access;
	e->in_use = 1;
out:
	unlock_region(r);
	return ret;
}

int ssemu_mr_dereg(struct ssemu_nic *nic, uint64_t key)
{
	struct ssemu_region *r;
	struct ssemu_mr_sh *t;
	uint32_t i, hwm;
	int ret;

	if (!nic)
		return -EINVAL;
	r = nic->fab->r;
	ret = fab_check(nic->fab);
	if (ret)
		return ret;
	ret = lock_region(r, false);
	if (ret)
		return ret;
	t = ssemu_r_mrs(r, nic->slot);
	hwm = SSEMU_MIN(ssemu_r_nic(r, nic->slot)->mr_hwm,
			(uint32_t)SSEMU_MRS_PER_NIC);
	ret = -ENOENT;
	for (i = 0; i < hwm; i++) {
		if (t[i].in_use && t[i].key == key) {
			/* the engine holds the lock while it works: no
			 * operation is using the entry now, none will */
			memset(&t[i], 0, sizeof(t[i]));
			ret = 0;
			break;
		}
	}
	unlock_region(r);
	return ret;
}

int ssemu_ep_rma(struct ssemu_ep *ep, const struct ssemu_rma *rma)
{
	struct ssemu_region *r;
	const struct ssemu_config *c;
	struct ssemu_msg *m;
	uint64_t payload, need, max;
	int64_t ilen, clen;
	uint32_t mi;
	size_t esize;
	uint8_t *p;
	int ret;

	if (!ep || !rma)
		return -EINVAL;
	if (fab_check(ep->nic->fab))
		return -EIO;
	r = ep->nic->fab->r;
	c = ep->nic->fab->cfg;
	if (SSEMU_ADDR_PORT(rma->dest) >= ep->nic->fab->nendpoints ||
	    SSEMU_ADDR_PID(rma->dest) >= c->eps_per_nic ||
	    rma->tclass >= c->ntclass ||
	    (rma->flags & ~(SSEMU_SEND_ORDERED | SSEMU_RMA_REMOTE_EVENT)))
		return -EINVAL;
	if (!ssemu_ep_tclass_allowed(ep, rma->tclass))
		return -EACCES;
	ilen = iov_bytes(rma->iov, rma->iov_count);
	clen = iov_bytes(rma->cmp, rma->cmp_count);
	if (ilen < 0 || clen < 0)
		return -EINVAL;
	max = ssemu_ep_max_msg(ep);
	switch (rma->op) {
	case SSEMU_RMA_WRITE:
		if ((uint64_t)ilen != rma->len || clen)
			return -EINVAL;
		payload = rma->len;
		break;
	case SSEMU_RMA_READ:
		if (ilen || clen)
			return -EINVAL;
		payload = 0;
		break;
	case SSEMU_RMA_ATOMIC:
	case SSEMU_RMA_FETCH:
	case SSEMU_RMA_COMPARE:
		if (!ssemu_atomic_valid(rma->op, rma->aop, rma->dtype))
			return -EINVAL;
		esize = ssemu_datatype_size(rma->dtype);
		if (rma->len % esize)
			return -EINVAL;
		if (rma->op == SSEMU_RMA_COMPARE) {
			if ((uint64_t)ilen != rma->len ||
			    (uint64_t)clen != rma->len)
				return -EINVAL;
			if (rma->len > max / 2)
				return -EMSGSIZE;
			payload = 2 * rma->len;
			break;
		}
		if (clen)
			return -EINVAL;
		if (rma->aop == SSEMU_AOP_READ) {
			/* no operands travel; a provider may hand us its
			 * (ignored) operand buffer all the same */
			if (ilen && (uint64_t)ilen != rma->len)
				return -EINVAL;
			payload = 0;
		} else {
			if ((uint64_t)ilen != rma->len)
				return -EINVAL;
			payload = rma->len;
		}
		break;
	default:
		return -EINVAL;
	}
	if (rma->len > max)
		return -EMSGSIZE;
	/* the buffer carries the request out and the results back */
	need = SSEMU_MAX(payload, rma->len);

	m = msg_alloc(ep, need, &mi);
	if (!m)
		return -EAGAIN;
	m->dst = rma->dest;
	m->tclass = rma->tclass;
	m->flags = rma->flags;
	m->len = payload;
	memcpy(m->hdr, rma->hdr, sizeof(m->hdr));
	m->cookie = rma->cookie;
	m->npkts = payload ? (uint32_t)((payload + c->mtu - 1) / c->mtu) : 1;
	m->rma_op = (uint8_t)rma->op;
	m->aop = (uint8_t)rma->aop;
	m->dtype = (uint8_t)rma->dtype;
	m->rma_len = rma->len;
	m->key = rma->key;
	m->raddr = rma->addr;
	p = msg_data(r, m);
	ret = 0;
	if (payload)
		ret = copy_iov(&p, rma->iov, rma->iov_count);
	if (!ret && rma->op == SSEMU_RMA_COMPARE)
		ret = copy_iov(&p, rma->cmp, rma->cmp_count);
	if (ret)
		return ret;
	return msg_post(ep, m, mi);
}

int ssemu_ep_poll(struct ssemu_ep *ep, struct ssemu_event *ev, int max)
{
	struct ssemu_ring *ring = ep->ev_ring;
	int n = 0;

	if (fab_check(ep->nic->fab))
		return -EIO;
	/* (the ring's geometry is checked here, its offset by the engine) */
	if (SSEMU_BAD(ep->r, !ssemu_ring_sane(ring, SSEMU_EV_RING,
					      sizeof(struct ssemu_event)),
		      "endpoint %u: its event ring's control block is corrupt",
		      ep->index))
		return -EIO;
	while (n < max && !ssemu_ring_pop(ring, &ev[n])) {
		/* (an event is the engine's word on a message: it must be
		 * what the engine pushed) */
		if (SSEMU_BAD(ep->r, ev[n].crc != ssemu_event_crc(&ev[n]),
			      "endpoint %u: an event in its ring changed "
			      "after it was pushed (its CRC fails)",
			      ep->index))
			return -EIO;
		n++;
	}
	return n;
}

/* The message behind a RECV or RMA_DONE event, after checking what the
 * ring said. */
static struct ssemu_msg *event_msg(struct ssemu_ep *ep,
				   const struct ssemu_event *ev)
{
	struct ssemu_region *r = ep->r;
	struct ssemu_msg *m;

	if (!ev || ev->slot >= ep->nic->fab->nmsgs || fab_check(ep->nic->fab))
		return NULL;
	m = ssemu_r_msg(r, ev->slot);
	if (m->gen != ev->gen)
		return NULL;
	if (ev->type == SSEMU_EV_RECV) {
		if (m->rma_op || m->len != ev->len)
			return NULL;
	} else if (ev->type == SSEMU_EV_RMA_DONE) {
		/* only the initiator's own slots */
		if (!m->rma_op || m->rma_len != ev->len ||
		    ssemu_msg_ep(r, ev->slot) != ep->index)
			return NULL;
	} else {
		return NULL;
	}
	if (m->buf != SSEMU_NONE && m->buf >= ep->nic->fab->nbufs)
		return NULL;
	return m;
}

static const uint8_t *event_payload(struct ssemu_ep *ep,
				    const struct ssemu_event *ev,
				    struct ssemu_msg **mp)
{
	struct ssemu_msg *m = event_msg(ep, ev);

	if (!m)
		return NULL;
	/* an RMA has data only if it brought results back */
	if (ev->type == SSEMU_EV_RMA_DONE &&
	    (ev->status || m->rma_op == SSEMU_RMA_WRITE ||
	     m->rma_op == SSEMU_RMA_ATOMIC))
		return NULL;
	*mp = m;
	return msg_data(ep->r, m);
}

/*
 * A received message whose header or payload is not what its sender
 * posted (its CRC, computed at the post, says so): counted, logged, never
 * handed out.
 */
static bool recv_crc_bad(struct ssemu_ep *ep, const struct ssemu_event *ev,
			 const struct ssemu_msg *m, const void *data)
{
	struct ssemu_region *r = ep->r;

	if (ev->type != SSEMU_EV_RECV ||
	    msg_crc(ev->src, ev->hdr, ev->len, data) == m->crc)
		return false;
	ssemu_fetch_add(&r->crc_errors, 1);
	ssemu_log(SSEMU_LOG_WARN, "endpoint %u: a %llu-byte message from "
		  "port %u failed its CRC: the payload changed after it was "
		  "posted; dropped", ep->index, (unsigned long long)ev->len,
		  SSEMU_ADDR_PORT(ev->src));
	return true;
}

const void *ssemu_event_data(struct ssemu_ep *ep, const struct ssemu_event *ev)
{
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);

	if (!data || recv_crc_bad(ep, ev, m, data))
		return NULL;
	return data;
}

size_t ssemu_event_copy(struct ssemu_ep *ep, const struct ssemu_event *ev,
			size_t off, void *buf, size_t len)
{
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);

	if (!data || off >= ev->len)
		return 0;
	if (len > ev->len - off)
		len = ev->len - off;
	/* the whole message: its CRC is checked on the copy, which nothing
	 * can change after the check; a part: on the shared payload */
	if (off || len < ev->len) {
		if (recv_crc_bad(ep, ev, m, data))
			return 0;
		memcpy(buf, data + off, len);
		return len;
	}
	memcpy(buf, data, len);
	return recv_crc_bad(ep, ev, m, buf) ? 0 : len;
}

void ssemu_event_release(struct ssemu_ep *ep, const struct ssemu_event *ev)
{
	struct ssemu_msg *m = event_msg(ep, ev);

	/* an RMA's initiator is done with its slot (the target side sets
	 * RXDONE); pairs with the acquire in msg_alloc */
	if (m && ev->type == SSEMU_EV_RMA_DONE) {
		ssemu_fetch_or(ssemu_msg_state(ep->r, m), SSEMU_MSG_TXDONE);
		return;
	}
	/* pairs with the acquire in the sender's slot allocation */
	if (m && !(ssemu_fetch_or(ssemu_msg_state(ep->r, m),
				  SSEMU_MSG_RXDONE) & SSEMU_MSG_RXDONE))
		ssemu_fetch_add(&ssemu_r_ep(ep->r, ep->index)->unreleased,
				(uint32_t)-1);
}

/* ------------------------------------------------------------------ */
/* Engine                                                               */
/* ------------------------------------------------------------------ */

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Latest model time the clock mode lets the engine reach now. */
static ssemu_time_t model_limit(struct ssemu_region *r)
{
	uint64_t w;

	if (r->config.clock == SSEMU_CLOCK_VIRTUAL)
		return UINT64_MAX;
	w = wall_ns() - r->wall_t0_ns;
	return (ssemu_time_t)((double)w * 1000.0 / r->config.dilation);
}

/*
 * With no event pending, nothing in the model moves until something is
 * posted; a message that was posted and has not completed then never
 * completes: the model's state is corrupt (an index, a count or a flag
 * changed under it), its sender would wait forever.  A slot found so
 * twice in a row, the engine idle both times and having run nothing in
 * between (a post caught between its two steps is drained and run by
 * then), marks the fabric broken.  Looked for now and then (with the
 * liveness check), over the slots of the open endpoints of attached NICs.
 */
static void stall_check_locked(struct ssemu_region *r)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_engine *e = ssemu_r_engine(r);
	uint32_t nic, k, epi, mi, st, fl;
	struct ssemu_ep_sh *sh;
	struct ssemu_msg *m;

	if (ssemu_engine_pending(e) || ssemu_broken(r))
		return;
	for (epi = 0; epi < r->neps; epi++) {
		sh = ssemu_r_ep(r, epi);
		if (!sh->open)
			continue;
		nic = sh->nic;
		/* (a NIC detaches after closing its endpoints) */
		if (nic >= c->max_nics ||
		    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED) {
			ssemu_fail(r, "endpoint %u is open on NIC slot %u, "
				   "which is not attached", epi, nic);
			return;
		}
		for (k = 0; k < c->msgs_per_ep; k++) {
			mi = epi * c->msgs_per_ep + k;
			st = ssemu_load_acquire(ssemu_r_mstate(r, mi));
			/* in flight: busy, not completed (only then are its
			 * fields the engine's to read: the owner fills a free
			 * slot without the fabric lock), and neither waiting
			 * for ring space (its endpoint has an overflow list)
			 * nor an RMA whose initiator holds its RMA_DONE */
			if (!(st & SSEMU_MSG_BUSY) || (st & SSEMU_MSG_TXDONE))
				continue;
			m = ssemu_r_msg(r, mi);
			fl = m->mflags;
			if (((fl & SSEMU_MSGF_TXOVF) &&
			     sh->tx_head != SSEMU_NONE) ||
			    (m->rma_op && (fl & SSEMU_MSGF_TXPUSH)))
				continue;
			if (r->stall_mi == mi && r->stall_gen == m->gen &&
			    r->stall_exec == e->executed) {
				ssemu_fail(r, "the model stalled: message slot "
					   "%u is in flight with no event "
					   "pending", mi);
				return;
			}
			r->stall_mi = mi;
			r->stall_gen = m->gen;
			r->stall_exec = e->executed;
			return;
		}
	}
	r->stall_mi = SSEMU_NONE;
}

/* Did the engine find its memory corrupt (then the fabric is marked
 * broken)? */
static bool engine_bad(struct ssemu_region *r)
{
	uint32_t bad = ssemu_load_relaxed(&ssemu_r_engine(r)->bad);

	return bad && ssemu_fail(r, "the event engine's memory is corrupt "
				 "(%s)", ssemu_engine_why(bad));
}

/* Move posted messages from the tx rings into the model, and retry event
 * deliveries that found a full ring. */
static void drain_tx_locked(struct ssemu_region *r)
{
	const struct ssemu_config *c = &r->config;
	uint64_t *work = ssemu_r_bits(r, r->work_off);
	uint64_t *ovf = ssemu_r_bits(r, r->ovf_off);
	uint32_t w, nwords = (r->neps + 63) / 64, epi, mi, lo, nic;
	struct ssemu_ring *ring;
	struct ssemu_ep_sh *sh;
	uint64_t bits;

	for (w = 0; w < nwords; w++) {
		if (!ovf[w])
			continue;
		bits = ovf[w];
		while (bits) {
			epi = w * 64 + (uint32_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			if (epi >= r->neps) {
				ovf[w] &= ~(1ULL << (epi % 64));
				continue;
			}
			sh = ssemu_r_ep(r, epi);
			if (sh->open)
				ssemu_model_flush_overflow(r, epi);
			if (!sh->open || (sh->rx_head == SSEMU_NONE &&
					  sh->tx_head == SSEMU_NONE))
				ovf[w] &= ~(1ULL << (epi % 64));
		}
	}
	for (w = 0; w < nwords; w++) {
		if (!ssemu_load_relaxed(&work[w]))
			continue;
		bits = __atomic_exchange_n(&work[w], 0, __ATOMIC_ACQ_REL);
		while (bits) {
			epi = w * 64 + (uint32_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			if (epi >= r->neps)
				continue;
			sh = ssemu_r_ep(r, epi);
			nic = ssemu_ep_nic(r, epi);
			if (!sh->open ||
			    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED)
				continue;
			if (ssemu_ep_rings_bad(r, epi))
				return;
			ring = ssemu_r_ring(r, sh->tx_ring_off);
			lo = epi * c->msgs_per_ep;
			/* take the message into the NIC, then off the ring:
			 * if we die in between, crash recovery finds it */
			while (!ssemu_ring_peek(ring, &mi)) {
				/* never trust an index from shared memory */
				if (SSEMU_BAD(r, mi < lo ||
					      mi >= lo + c->msgs_per_ep,
					      "endpoint %u: slot %u in its "
					      "tx ring", epi, mi))
					return;
				ssemu_model_enqueue_msg(r, nic, mi);
				ssemu_ring_advance(ring);
				if (ssemu_broken(r))
					return;
			}
			ssemu_model_nic_kick(r, nic);
		}
	}
}

/*
 * One turn of the engine.  Virtual clock: take what was posted and run as
 * far as the budget allows.  Realtime clock: first run everything that is
 * due by the wall clock, then move the model clock up to "now" (nothing
 * earlier is pending) so that what is posted now enters the model now.
 */
static int run_locked(struct ssemu_fabric *f, unsigned budget, bool reap)
{
	struct ssemu_region *r = f->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	bool realtime = r->config.clock == SSEMU_CLOCK_REALTIME;
	struct ssemu_fired fired;
	ssemu_time_t limit, next;
	bool reaped = false;
	unsigned n = 0;

	if (fab_check(f))
		return -EIO;
	/* Look for dead processes now and then (by the wall clock, so a
	 * busy fabric finds them as fast as an idle one), and at the
	 * segment's header (this process works from its own copy: the
	 * segment's matters to the processes that attach next). */
	if (reap) {
		uint64_t w = wall_ns();

		if (w - r->last_reap_ns > LIVENESS_PERIOD_NS) {
			r->last_reap_ns = w;
			if (image_bad(f))
				return -EIO;
			reap_dead_locked(r);
			reaped = true;
		}
	}
	if (!realtime)
		drain_tx_locked(r);
	limit = model_limit(r);
	/* (the engine's control block is shared: its size, which places
	 * everything in it, is checked before every event, against our own
	 * configuration; the rest of its geometry by image_bad) */
	while (n < budget && ssemu_engine_cap_ok(e, r->config.max_events) &&
	       ssemu_engine_pop(e, limit, &fired)) {
		ssemu_model_dispatch(r, &fired);
		n++;
		if (unlikely(ssemu_broken(r) || f->gone))
			break;
	}
	if (!ssemu_engine_cap_ok(e, r->config.max_events))
		ssemu_fail(r, "the event engine's size changed");
	if (engine_bad(r) || fab_check(f))
		return -EIO;
	/* (after the run: what was posted is in the model by now) */
	if (reaped)
		stall_check_locked(r);
	if (realtime) {
		next = ssemu_engine_next_time(e);
		if (next <= limit) {
			/* out of budget with work due: we are behind */
			r->lag_ps = limit - next;
		} else {
			r->lag_ps = 0;
			if (e->now < limit)
				e->now = limit;
		}
		drain_tx_locked(r);
	}
	return (int)n;
}

/* Anything posted, or a delivery to retry? */
static bool work_posted(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;
	const uint64_t *work = ssemu_r_bits(r, r->work_off);
	const uint64_t *ovf = ssemu_r_bits(r, r->ovf_off);
	uint32_t w, nwords = (f->neps + 63) / 64;

	for (w = 0; w < nwords; w++)
		if (ssemu_load_relaxed(&work[w]) ||
		    ssemu_load_relaxed(&ovf[w]))
			return true;
	return false;
}

/*
 * How long a process leaves new work to the process that ran the engine
 * last before it runs the engine itself, when that one does not come to it
 * (it computes, sleeps or died).  The runner normally comes within one of
 * its polls, well under this.
 */
#define DEFER_NS 10000ULL
/* A process that does not run the engine looks at it every this many
 * polls when nothing is posted. */
#define LOOK_EVERY 16
/*
 * Bulk: the engine ran BULK_EVENTS events or more between two looks of a
 * process that does not run it, or half that in one run of ours (a run
 * stops at its budget; a short message is 8 events).  A bulk transfer
 * keeps the engine busy for long batches, which amortise the cache misses
 * of moving it, and the process that receives spends long stretches copying
 * data out: then whoever is free runs the engine, as every poll used to.
 */
#define BULK_EVENTS 128

/*
 * Shared fabric, virtual clock: leave the engine to whoever ran it last?
 * The model's state (event heap, NICs, switches, packets, counters) is a
 * few dozen cache lines per message; when the processes that wait on each
 * other take turns running the engine, all of it moves between their cores
 * on every message, which costs more than the model's own work.  So a
 * process that sees another one ran the engine since it did leaves new work
 * to that one (every process polls the fabric while it waits, so the runner
 * finds the work within one of its polls) for DEFER_NS after it last saw
 * the engine move; then it takes over and becomes the runner.  Who runs
 * the engine changes nothing in the model, only which core does the work.
 * The clock is read only while deferring, that is while waiting anyway.
 */
static bool defer_to_runner(struct ssemu_fabric *f)
{
	struct fabric_local *fl = fabric_local(f);
	uint64_t exec, now, until;

	exec = ssemu_load_relaxed(&ssemu_r_engine(f->r)->executed);
	if (exec == ssemu_load_relaxed(&fl->run_mark))
		return false;	/* nobody ran it since we did: ours */
	ssemu_store_relaxed(&fl->runner, 0);
	now = wall_ns();
	until = ssemu_load_relaxed(&fl->defer_until);
	if (exec != ssemu_load_relaxed(&fl->seen) || !until) {
		/* new work, or the runner is going: give it time */
		ssemu_store_relaxed(&fl->seen, exec);
		until = now + DEFER_NS;
		ssemu_store_relaxed(&fl->defer_until, until);
	}
	return now < until;
}

/*
 * One poll of the engine.  It takes the fabric lock only if there is
 * something to do: with nothing posted and no event pending (virtual
 * clock; realtime also moves the model clock up to the wall clock when
 * idle, so it always runs), it returns at once.  Every 64th call takes the
 * lock anyway for the liveness check.  On a shared virtual-clock fabric a
 * process that does not run the engine (@defer, see defer_to_runner) reads
 * only the work bitmaps, and the engine's own header, which the runner
 * writes with every event, once in LOOK_EVERY polls: so waiting processes
 * take no cache lines away from the runner in the middle of its work.
 * During a bulk transfer (BULK_EVENTS) every poll tries the lock instead,
 * whoever holds the engine.
 */
static int progress(struct ssemu_fabric *f, unsigned budget, bool defer)
{
	struct fabric_local *fl = fabric_local(f);
	struct ssemu_region *r = f->r;
	bool reap, sticky;
	uint64_t exec;
	int ret;

	sticky = defer && f->store == SSEMU_STORE_SHM &&
		 r->config.clock == SSEMU_CLOCK_VIRTUAL &&
		 !ssemu_load_relaxed(&fl->bulk);
	/* several threads of the process may progress at once */
	reap = __atomic_add_fetch(&f->progress_calls, 1, __ATOMIC_RELAXED) %
	       64 == 0;
	if (!reap && sticky && !work_posted(f)) {
		uint32_t looks = ssemu_load_relaxed(&fl->looks) + 1;

		ssemu_store_relaxed(&fl->looks, looks);
		if (!ssemu_load_relaxed(&fl->runner) && looks % LOOK_EVERY)
			return 0;	/* the runner has it */
		if (!ssemu_load_relaxed(&ssemu_r_engine(r)->nlive)) {
			/* new work will give the runner a full DEFER_NS */
			if (ssemu_load_relaxed(&fl->defer_until))
				ssemu_store_relaxed(&fl->defer_until, 0);
			return 0;
		}
		exec = ssemu_load_relaxed(&ssemu_r_engine(r)->executed);
		if (exec - ssemu_load_relaxed(&fl->look_exec) >= BULK_EVENTS) {
			ssemu_store_relaxed(&fl->bulk, 1);
			sticky = false;
		}
		ssemu_store_relaxed(&fl->look_exec, exec);
	} else if (!reap && r->config.clock == SSEMU_CLOCK_VIRTUAL &&
		   /* bulk: straight to the lock, as every poll used to */
		   !ssemu_load_relaxed(&fl->bulk) && !work_posted(f) &&
		   !ssemu_load_relaxed(&ssemu_r_engine(r)->nlive)) {
		return 0;
	}
	/* (the runner looks for dead processes too) */
	if (sticky && defer_to_runner(f))
		return -EBUSY;
	ret = lock_region(r, true);
	if (ret)
		return ret;
	ret = run_locked(f, budget ? budget : 1, reap);
	ssemu_store_relaxed(&fl->bulk, ret >= BULK_EVENTS / 2);
	/* the runner is whoever executed the last event (one that ran
	 * none must not think it is) */
	if (ret > 0) {
		ssemu_store_relaxed(&fl->run_mark,
				    ssemu_r_engine(r)->executed);
		ssemu_store_relaxed(&fl->runner, 1);
	}
	unlock_region(r);
	return ret;
}

int ssemu_fabric_progress(struct ssemu_fabric *f, unsigned budget)
{
	int ret;

	if (!f)
		return -EINVAL;
	ret = fab_check(f);
	if (ret)
		return ret;
	ret = progress(f, budget, true);
	/* (the segment may have been cut short while we looked at it) */
	return unlikely(f->gone) ? fab_check(f) : ret;
}

/*
 * Messages and RMA operations endpoint @epi posted that are not done yet
 * at their destination: busy slots whose completion was neither reported
 * (pushed to the endpoint's event ring or queued for it) nor given up.
 * Under the lock.
 */
static uint32_t ep_undelivered_locked(struct ssemu_region *r, uint32_t epi)
{
	uint32_t i, lo = epi * r->config.msgs_per_ep, n = 0, st;
	struct ssemu_msg *m;

	for (i = lo; i < lo + r->config.msgs_per_ep; i++) {
		st = ssemu_load_acquire(ssemu_r_mstate(r, i));
		if (!(st & SSEMU_MSG_BUSY) || (st & SSEMU_MSG_TXDONE))
			continue;
		m = ssemu_r_msg(r, i);
		if (m->mflags & (SSEMU_MSGF_TXPUSH | SSEMU_MSGF_TXOVF))
			continue;
		n++;
	}
	return n;
}

/* Events per engine turn while a closing endpoint waits for its traffic. */
#define CLOSE_BUDGET 4096

/*
 * The NIC owns what an endpoint posted: the close runs the engine (taking
 * it over as any waiting process does) until all of it is delivered, for
 * at most @timeout_ms.  Realtime fabrics release events by the wall clock:
 * between turns that ran nothing, nap.
 */
int ssemu_ep_close_timeout(struct ssemu_ep *ep, int timeout_ms)
{
	struct ssemu_fabric *f;
	struct ssemu_region *r;
	struct ssemu_ep_sh *sh;
	uint64_t deadline;
	uint32_t left;
	int ret, ran;

	if (!ep)
		return -EINVAL;
	f = ep->nic->fab;
	r = f->r;
	deadline = wall_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) *
				1000000ULL;
	for (;;) {
		ret = lock_region(r, false);
		if (ret)
			break;
		sh = ssemu_r_ep(r, ep->index);
		if (ssemu_r_nic_eps(r, ep->nic->slot)[ep->pid] != ep->index ||
		    !sh->open) {
			unlock_region(r);
			break;
		}
		left = ep_undelivered_locked(r, ep->index);
		if (left && wall_ns() >= deadline) {
			ssemu_log(SSEMU_LOG_WARN, "endpoint %u:%u closes with "
				  "%u message%s it posted not delivered after "
				  "%d ms: discarded", ssemu_nic_port(ep->nic),
				  ep->pid, left, left == 1 ? "" : "s",
				  timeout_ms);
			ret = -ETIMEDOUT;
			left = 0;
		}
		if (!left) {
			ep_close_locked(r, ep->nic->slot, ep->pid);
			unlock_region(r);
			break;
		}
		ran = run_locked(f, CLOSE_BUDGET, true);
		unlock_region(r);
		if (ran <= 0) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
	free(ep);
	return ret;
}

void ssemu_ep_close(struct ssemu_ep *ep)
{
	ssemu_ep_close_timeout(ep, SSEMU_CLOSE_DRAIN_MS);
}

int ssemu_fabric_run_until(struct ssemu_fabric *f, ssemu_time_t t)
{
	struct ssemu_region *r = f->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct ssemu_fired fired;
	int ret;

	ret = fab_check(f);
	if (ret)
		return ret;
	ret = lock_region(r, false);
	if (ret)
		return ret;
	if (image_bad(f)) {
		unlock_region(r);
		return -EIO;
	}
	drain_tx_locked(r);
	while (!ssemu_broken(r) && !f->gone &&
	       ssemu_engine_cap_ok(e, r->config.max_events) &&
	       ssemu_engine_pop(e, t, &fired))
		ssemu_model_dispatch(r, &fired);
	if (!ssemu_engine_cap_ok(e, r->config.max_events))
		ssemu_fail(r, "the event engine's size changed");
	ret = engine_bad(r) || fab_check(f) ? -EIO : 0;
	if (!ret && e->now < t)
		e->now = t;
	unlock_region(r);
	return ret;
}

bool ssemu_fabric_idle(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;
	uint32_t epi;

	/* (broken: nothing will ever happen) */
	if (fab_check(f))
		return true;
	if (ssemu_engine_pending(ssemu_r_engine(r)))
		return false;
	for (epi = 0; epi < f->neps; epi++) {
		struct ssemu_ep_sh *sh = ssemu_r_ep(r, epi);

		if (!sh->open)
			continue;
		if (ssemu_ep_rings_bad(r, epi))
			return true;
		if (ssemu_ring_count(ssemu_r_ring(r, sh->tx_ring_off)) ||
		    sh->rx_head != SSEMU_NONE || sh->tx_head != SSEMU_NONE)
			return false;
	}
	return true;
}

/* Has one of the endpoint slots @eps[0, n) (SSEMU_NONE: none) an event? */
static bool eps_ready(struct ssemu_region *r, const uint32_t *eps, uint32_t n)
{
	uint32_t i, epi;

	for (i = 0; i < n; i++) {
		struct ssemu_ep_sh *sh;

		epi = ssemu_load_relaxed(&eps[i]);
		if (epi >= r->neps)
			continue;
		sh = ssemu_r_ep(r, epi);
		/* (a corrupt ring: "ready", and the poll says -EIO) */
		if (ssemu_load_acquire(&sh->open) &&
		    (ssemu_ep_rings_bad(r, epi) ||
		     ssemu_ring_count(ssemu_r_ring(r, sh->ev_ring_off))))
			return true;
	}
	return false;
}

/*
 * Wait until one of the endpoint slots @eps[0, n) has an event, driving
 * the engine when nobody else does, and otherwise sleeping on @word (bumped
 * with every event push) until woken, until the next model deadline
 * (realtime), or for a short nap that lets us take the engine over if its
 * runner stalls.
 */
static int wait_events(struct ssemu_fabric *f, const uint32_t *eps, uint32_t n,
		       uint32_t *word, uint32_t *waiters, int timeout_ms)
{
	struct ssemu_region *r = f->r;
	uint64_t start = wall_ns(), deadline, now, nap;
	struct timespec ts;
	uint32_t seq;
	int ret;

	deadline = timeout_ms < 0 ? UINT64_MAX :
				    start + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		ret = fab_check(f);
		if (ret)
			return ret;
		/* pairs with the release in futex_bump */
		seq = ssemu_load_acquire(word);
		if (eps_ready(r, eps, n))
			return 1;
		/* a waiter runs the engine itself: it may be the last one
		 * polling */
		ret = progress(f, 4096, false);
		if (eps_ready(r, eps, n))
			return 1;
		if (ret < 0 && ret != -EBUSY)
			return ret;
		now = wall_ns();
		if (now >= deadline)
			return 0;
		if (ret > 0)
			continue; /* the engine moved: look again */
		nap = 1000000ULL; /* 1 ms */
		if (ret == 0 && r->config.clock == SSEMU_CLOCK_REALTIME) {
			ssemu_time_t next;

			/* the engine is ours for a moment: peek at it */
			if (!lock_region(r, true)) {
				next = ssemu_engine_next_time(
					ssemu_r_engine(r));
				unlock_region(r);
			} else {
				next = UINT64_MAX;
			}
			if (next != UINT64_MAX) {
				uint64_t due = r->wall_t0_ns +
					       (uint64_t)((double)next / 1000.0 *
							  r->config.dilation);
				nap = due > now ? due - now : 0;
				if (nap > 1000000ULL)
					nap = 1000000ULL;
			}
		}
		if (now + nap > deadline)
			nap = deadline - now;
		if (!nap)
			continue;
		ts.tv_sec = (time_t)(nap / 1000000000ULL);
		ts.tv_nsec = (long)(nap % 1000000000ULL);
		ssemu_fetch_add(waiters, 1);
		syscall(SYS_futex, word, FUTEX_WAIT, seq, &ts, NULL, 0);
		ssemu_fetch_add(waiters, (uint32_t)-1);
	}
}

int ssemu_ep_wait(struct ssemu_ep *ep, int timeout_ms)
{
	struct ssemu_region *r;
	struct ssemu_ep_sh *sh;

	if (!ep)
		return -EINVAL;
	r = ep->nic->fab->r;
	sh = ssemu_r_ep(r, ep->index);
	return wait_events(ep->nic->fab, &ep->index, 1, &sh->ev_futex,
			   &sh->waiters, timeout_ms);
}

int ssemu_nic_wait(struct ssemu_nic *nic, int timeout_ms)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;

	if (!nic)
		return -EINVAL;
	r = nic->fab->r;
	n = ssemu_r_nic(r, nic->slot);
	return wait_events(nic->fab, ssemu_r_nic_eps(r, nic->slot),
			   nic->fab->cfg->eps_per_nic, &n->ev_futex,
			   &n->waiters, timeout_ms);
}

int ssemu_ep_peer_alive(struct ssemu_ep *ep, ssemu_addr_t peer)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;
	uint32_t port = SSEMU_ADDR_PORT(peer), pid = SSEMU_ADDR_PID(peer);
	uint32_t slot, epi;

	if (!ep || fab_check(ep->nic->fab))
		return 0;
	r = ep->nic->fab->r;
	if (port >= r->topo.nendpoints || pid >= r->config.eps_per_nic)
		return 0;
	slot = ssemu_load_relaxed(&ssemu_r_portmap(r)[port]);
	if (slot >= r->config.max_nics)
		return 0;
	n = ssemu_r_nic(r, slot);
	epi = ssemu_load_relaxed(&ssemu_r_nic_eps(r, slot)[pid]);
	if (ssemu_load_relaxed(&n->state) != SSEMU_NIC_ATTACHED ||
	    epi >= r->neps || !ssemu_load_relaxed(&ssemu_r_ep(r, epi)->open))
		return 0;
	/* a dead owner's NIC is detached by the liveness check every engine
	 * runner makes (every 20 ms): no /proc read per call here */
	return 1;
}

int ssemu_fabric_stats(struct ssemu_fabric *f, struct ssemu_fabric_stats *st)
{
	struct ssemu_region *r;

	if (!f || !st)
		return -EINVAL;
	r = f->r;
	memset(st, 0, sizeof(*st));
	st->now = ssemu_r_engine(r)->now;
	st->events = ssemu_r_engine(r)->executed;
	st->pkts_delivered = r->pkts_delivered;
	st->pkt_hops = r->pkt_hops;
	st->switch_lat_sum = r->switch_lat_sum;
	st->nics_attached = r->nnics;
	st->switches_instantiated = r->sw_used;
	st->msgs_unreachable = r->msgs_unreachable;
	st->msgs_discarded = r->msgs_discarded;
	st->crc_errors = ssemu_load_relaxed(&r->crc_errors);
	return 0;
}

int ssemu_fabric_switch_latency(struct ssemu_fabric *f,
				struct ssemu_latency *lat)
{
	const uint64_t *h;
	uint64_t n = 0, acc = 0;
	bool have_p50 = false;
	uint32_t i;

	if (!f || !lat)
		return -EINVAL;
	h = f->r->swlat_hist;
	memset(lat, 0, sizeof(*lat));
	for (i = 0; i < SSEMU_SWLAT_BINS; i++) {
		n += h[i];
		if (h[i])
			lat->max_ns = i;
	}
	lat->count = n;
	if (!n)
		return 0;
	lat->mean_ns = (double)f->r->switch_lat_sum / n / SSEMU_PS_PER_NS;
	for (i = 0; i < SSEMU_SWLAT_BINS; i++) {
		acc += h[i];
		if (!have_p50 && acc * 2 >= n) {
			lat->p50_ns = i;
			have_p50 = true;
		}
		if (acc * 100 >= n * 99) {
			lat->p99_ns = i;
			break;
		}
	}
	return 0;
}

int ssemu_fabric_info(struct ssemu_fabric *f, struct ssemu_fabric_info *info)
{
	struct ssemu_region *r;
	int i;

	if (!f || !info)
		return -EINVAL;
	r = f->r;
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s",
		 f->shm_name[0] ? f->shm_name + 1 : "");
	info->size = f->map_size;
	info->owner_uid = r->owner_uid;
	for (i = 0; i < SSEMU_MAX_PROCS; i++)
		if (r->procs[i] && pid_alive(r->procs[i]))
			info->nprocs++;
	info->nnics = r->nnics;
	info->clock = r->config.clock;
	info->dilation = r->config.dilation;
	info->now = ssemu_load_relaxed(&ssemu_r_engine(r)->now);
	info->lag_ps = ssemu_load_relaxed(&r->lag_ps);
	info->pkts_in_flight = ssemu_load_relaxed(&r->pkts_used);
	info->crc_errors = ssemu_load_relaxed(&r->crc_errors);
	return 0;
}

int ssemu_fabric_nics(struct ssemu_fabric *f, struct ssemu_nic_info *out,
		      int max)
{
	struct ssemu_region *r;
	uint32_t i, e;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	for (i = 0; i < r->config.max_nics && n < max; i++) {
		struct ssemu_nic_sh *nic = ssemu_r_nic(r, i);
		struct ssemu_nic_info *o = &out[n];

		if (ssemu_load_relaxed(&nic->state) != SSEMU_NIC_ATTACHED)
			continue;
		memset(o, 0, sizeof(*o));
		o->port = nic->port;
		o->pid = nic->owner_pid;
		o->job = nic->job;
		o->rank = nic->rank;
		o->alive = pid_alive(nic->owner_pid);
		for (e = 0; e < r->config.eps_per_nic; e++)
			o->eps_open += ssemu_r_nic_eps(r, i)[e] < r->neps;
		o->stats = nic->stats;
		n++;
	}
	return n;
}

int ssemu_fabric_jobs(struct ssemu_fabric *f, struct ssemu_job_info *out,
		      int max)
{
	struct ssemu_region *r;
	uint32_t slot, v, *resv;
	uint64_t p;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	resv = ssemu_r_resv(r);
	/* read without the lock, as the NIC list is: a snapshot for tools */
	for (slot = 0; slot < SSEMU_MAX_JOBS && n < max; slot++) {
		const struct ssemu_job_sh *j = &r->jobs[slot];
		struct ssemu_job_info *o = &out[n];

		if (!ssemu_load_relaxed(&j->active))
			continue;
		memset(o, 0, sizeof(*o));
		o->job = j->id;
		o->nranks = j->nranks;
		o->policy = j->policy;
		o->nics = j->nics;
		o->rank0_port = SSEMU_NONE;
		for (p = 0; p < r->topo.nendpoints; p++) {
			v = ssemu_load_relaxed(&resv[p]);
			if (v == SSEMU_NONE || SSEMU_RESV_SLOT(v) != slot)
				continue;
			o->ports++;
			if (v == SSEMU_RESV(slot, 0))
				o->rank0_port = (uint32_t)p;
		}
		n++;
	}
	return n;
}

int ssemu_fabric_ports(struct ssemu_fabric *f, struct ssemu_port_info *out,
		       int max)
{
	struct ssemu_region *r;
	uint32_t i, p, tc, used;
	int n = 0;

	if (!f || (!out && max))
		return -EINVAL;
	r = f->r;
	used = SSEMU_MIN(ssemu_load_relaxed(&r->sw_used),
			 r->config.max_switches);
	for (i = 0; i < used && n < max; i++) {
		struct ssemu_switch_sh *s = ssemu_r_switch(r, i);

		for (p = 0; p < r->topo.radix && n < max; p++) {
			struct ssemu_swport *sp = &s->port[p];
			struct ssemu_port_info *o = &out[n];
			uint64_t any = sp->drops;

			for (tc = 0; tc < r->config.ntclass; tc++)
				any += sp->tx[tc].pkts + sp->queued_tc[tc];
			if (!any)
				continue;
			memset(o, 0, sizeof(*o));
			o->sw = s->sw;
			o->port = p;
			o->kind = ssemu_topo_port_kind(&r->topo, p);
			for (tc = 0; tc < r->config.ntclass; tc++) {
				o->tx_pkts[tc] = sp->tx[tc].pkts;
				o->tx_bytes[tc] = sp->tx[tc].bytes;
				o->queued[tc] = sp->queued_tc[tc];
			}
			o->drops = sp->drops;
			n++;
		}
	}
	return n;
}

int ssemu_region_lock(struct ssemu_region *r)
{
	return lock_region(r, false);
}

void ssemu_region_unlock(struct ssemu_region *r)
{
	unlock_region(r);
}
