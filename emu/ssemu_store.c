/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric store: the region's layout as one table of sections, a new
 * region's set-up, and a shared segment's creation or attach with the
 * checks that come with it (the file's mode, owner and group against what
 * its header recorded: 0600, or 0660 with the configuration's share group;
 * the header against the layout its own configuration gives; and this
 * process's private copy of the header's write-once page).
 *
 * The layout: every section's offset, element count and element size in
 * one table (struct ssemu_layout), filled by ssemu_layout_compute from the
 * configuration alone.  region_init writes the offsets into a new
 * region's header from it; an attach computes it again from the
 * segment's configuration and walks the same table to compare each
 * header field, so a section added to the table is set and checked both.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ssemu_priv.h"

/* ------------------------------------------------------------------ */
/* Layout                                                               */
/* ------------------------------------------------------------------ */

#define PAGE SSEMU_PAGE

/* Each section's name, its offset's field in the header and the boundary
 * it starts on, in the order the region holds them. */
static const struct {
	const char *name;
	size_t field;
	uint64_t align;
} section_def[SSEMU_SEC_COUNT] = {
#define SEC(id, f, a) \
	[SSEMU_SEC_##id] = { #f, offsetof(struct ssemu_region, f##_off), (a) }
	SEC(ENGINE, engine, SSEMU_CACHELINE),
	SEC(NICS, nics, SSEMU_CACHELINE),
	SEC(EPS, eps, SSEMU_CACHELINE),
	/* an endpoint's slots from a page boundary: the low ones it takes
	 * first (msg_alloc) share a page */
	SEC(MSGS, msgs, PAGE),
	SEC(MSTATE, mstate, SSEMU_CACHELINE),
	SEC(RINGS, rings, PAGE),	/* (ssemu_rings_stride) */
	SEC(PKTS, pkts, SSEMU_CACHELINE),
	SEC(SWMAP, swmap, SSEMU_CACHELINE),
	SEC(PORTMAP, portmap, SSEMU_CACHELINE),
	/* the pair table: zero (free) until used */
	SEC(PAIR, pair, PAGE),
	SEC(PAIRN, pairn, SSEMU_CACHELINE),
	SEC(WORK, work, SSEMU_CACHELINE),
	SEC(OVF, ovf, SSEMU_CACHELINE),
	SEC(READY, ready, SSEMU_CACHELINE),
	SEC(RESV, resv, SSEMU_CACHELINE),
	SEC(NIC_EPS, nic_eps, SSEMU_CACHELINE),
	SEC(SWITCHES, switches, SSEMU_CACHELINE),
	SEC(VOQROW, voqrow, SSEMU_CACHELINE),
	/* the VOQ pool: rows taken from its start as needed */
	SEC(VOQS, voqs, PAGE),
	/* memory region tables: zero (free) until used, page aligned so
	 * tables nobody registers in cost nothing */
	SEC(MRS, mrs, PAGE),
	/* its first page is what every message touches */
	SEC(TEL, tel, PAGE),
	SEC(GEN, gen, SSEMU_CACHELINE),
	/* large buffers last, page aligned: untouched pages cost nothing */
	SEC(BUFS, bufs, PAGE),
#undef SEC
};

static void sec_set(struct ssemu_layout *l, enum ssemu_sec s, uint64_t count,
		    uint64_t esize)
{
	l->sec[s].count = count;
	l->sec[s].esize = esize;
}

void ssemu_layout_compute(const struct ssemu_config *c,
			  const struct ssemu_topo *t, struct ssemu_layout *l)
{
	uint64_t off = sizeof(struct ssemu_region), neps = ssemu_config_neps(c);
	uint64_t nmsgs = neps * c->msgs_per_ep, words = ssemu_bm_words(neps);
	uint32_t mb, hb, nb;
	unsigned s;

	l->voq_per_switch = t->radix * c->ntclass * SSEMU_NVC;
	/* a taken row holds a packet: no more rows than packets */
	l->voq_rows = (uint32_t)SSEMU_MIN((uint64_t)c->max_pkts,
					  (uint64_t)c->max_switches *
						  l->voq_per_switch);
	l->ring_bytes = ssemu_rings_stride(c);
	sec_set(l, SSEMU_SEC_ENGINE, 1, ssemu_engine_bytes(c->max_events));
	sec_set(l, SSEMU_SEC_NICS, c->max_nics, sizeof(struct ssemu_nic_sh));
	sec_set(l, SSEMU_SEC_EPS, neps, sizeof(struct ssemu_ep_sh));
	/* (in chunks, the endpoints' places a power of two: ssemu_msg_place) */
	ssemu_msg_bits(c, &mb, &hb, &nb);
	sec_set(l, SSEMU_SEC_MSGS,
		hb == mb ? nmsgs : (uint64_t)c->msgs_per_ep << nb,
		sizeof(struct ssemu_msg));
	sec_set(l, SSEMU_SEC_MSTATE, nmsgs, sizeof(uint32_t));
	sec_set(l, SSEMU_SEC_RINGS, neps, l->ring_bytes);
	sec_set(l, SSEMU_SEC_PKTS, c->max_pkts, sizeof(struct ssemu_pkt));
	/* (the map, then each switch model's topology id) */
	sec_set(l, SSEMU_SEC_SWMAP, t->nswitches + (uint64_t)c->max_switches,
		sizeof(uint32_t));
	sec_set(l, SSEMU_SEC_PORTMAP, t->nendpoints, sizeof(uint32_t));
	l->pair_bits = ssemu_pair_bits(c);
	sec_set(l, SSEMU_SEC_PAIR, 1ULL << l->pair_bits,
		sizeof(struct ssemu_pair));
	sec_set(l, SSEMU_SEC_PAIRN, c->max_nics,
		sizeof(struct ssemu_pair_count));
	/* (with their summaries, where they have them) */
	words += ssemu_bm_sum_words((uint32_t)words);
	sec_set(l, SSEMU_SEC_WORK, words, sizeof(uint64_t));
	sec_set(l, SSEMU_SEC_OVF, words, sizeof(uint64_t));
	sec_set(l, SSEMU_SEC_READY, words, sizeof(uint64_t));
	sec_set(l, SSEMU_SEC_RESV, t->nendpoints, sizeof(uint32_t));
	sec_set(l, SSEMU_SEC_NIC_EPS, (uint64_t)c->max_nics * c->eps_per_nic,
		sizeof(uint32_t));
	sec_set(l, SSEMU_SEC_SWITCHES, c->max_switches,
		ssemu_switch_bytes(t->radix, c->ntclass));
	sec_set(l, SSEMU_SEC_VOQROW, (uint64_t)c->max_switches *
					     l->voq_per_switch,
		sizeof(uint32_t));
	sec_set(l, SSEMU_SEC_VOQS, (uint64_t)l->voq_rows * t->radix,
		sizeof(struct ssemu_voq));
	sec_set(l, SSEMU_SEC_MRS, (uint64_t)c->max_nics * SSEMU_MRS_PER_NIC,
		sizeof(struct ssemu_mr_sh));
	sec_set(l, SSEMU_SEC_TEL, 1, ssemu_tel_bytes(c));
	sec_set(l, SSEMU_SEC_GEN, 1, ssemu_gen_bytes(c));
	sec_set(l, SSEMU_SEC_BUFS, neps * c->bufs_per_ep, c->buf_size);
	for (s = 0; s < SSEMU_SEC_COUNT; s++) {
		struct ssemu_section *sec = &l->sec[s];

		sec->name = section_def[s].name;
		sec->off = SSEMU_ALIGN_UP(off, section_def[s].align);
		sec->size = sec->count * sec->esize;
		off = sec->off + sec->size;
	}
	l->total = SSEMU_ALIGN_UP(off, PAGE);
}

/* A header field of @size bytes (4 or 8) at @off in @r. */
static uint64_t hdr_get(const struct ssemu_region *r, size_t off, size_t size)
{
	uint32_t v32;
	uint64_t v;

	if (size == sizeof(v32)) {
		memcpy(&v32, (const char *)r + off, sizeof(v32));
		return v32;
	}
	memcpy(&v, (const char *)r + off, sizeof(v));
	return v;
}

#define HDR_FIELD(f, v)                                                     \
	{ #f, offsetof(struct ssemu_region, f),                              \
	  sizeof(((struct ssemu_region *)0)->f), (v) }

static int check_layout(struct ssemu_region *r, char *err, size_t errlen)
{
	const struct ssemu_config *c = &r->config;
	uint64_t neps = ssemu_config_neps(c);
	struct ssemu_layout l;
	struct ssemu_topo t;
	uint32_t mb, hb, nb;
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
	ssemu_layout_compute(c, &t, &l);
	ssemu_msg_bits(c, &mb, &hb, &nb);

	/* the header's counts and indices, then every section's offset */
	const struct {
		const char *name;
		size_t off, size;
		uint64_t want;
	} fields[] = {
		HDR_FIELD(total_size, l.total),
		HDR_FIELD(neps, neps),
		HDR_FIELD(nmsgs, neps * c->msgs_per_ep),
		HDR_FIELD(nbufs, neps * c->bufs_per_ep),
		HDR_FIELD(gen_neps, ssemu_gen_neps(c)),
		HDR_FIELD(voq_per_switch, l.voq_per_switch),
		HDR_FIELD(switch_bytes,
			  ssemu_switch_bytes(t.radix, c->ntclass)),
		HDR_FIELD(port_bytes, ssemu_port_bytes(c->ntclass)),
		HDR_FIELD(msg_mb, mb),
		HDR_FIELD(msg_hb, hb),
		HDR_FIELD(msg_nb, nb),
		HDR_FIELD(voq_rows, l.voq_rows),
		HDR_FIELD(pair_bits, l.pair_bits),
		HDR_FIELD(pair_shift, ssemu_pair_shift(c, l.pair_bits)),
		HDR_FIELD(max_pairs, ssemu_config_pairs(c)),
		HDR_FIELD(route_idx, (uint64_t)ssemu_route_index(c->routing)),
		HDR_FIELD(arb_idx, (uint64_t)ssemu_arb_index(c->arb)),
		HDR_FIELD(cc_idx, (uint64_t)ssemu_cc_index(c->cc)),
	};
	const char *name = NULL, *suffix = "";
	uint64_t have = 0, want = 0;

	for (i = 0; i < ARRAY_SIZE(fields) && !name; i++) {
		have = hdr_get(r, fields[i].off, fields[i].size);
		want = fields[i].size == sizeof(uint32_t) ?
			       (uint32_t)fields[i].want : fields[i].want;
		if (have != want)
			name = fields[i].name;
	}
	for (i = 0; i < SSEMU_SEC_COUNT && !name; i++) {
		have = hdr_get(r, section_def[i].field, sizeof(uint64_t));
		want = l.sec[i].off;
		if (have != want) {
			name = l.sec[i].name;
			suffix = "_off";
		}
	}
	if (name) {
		snprintf(err, errlen, "fabric segment header is corrupt (%s%s "
			 "is %#llx, the layout of its configuration has "
			 "%#llx): refused", name, suffix,
			 (unsigned long long)have, (unsigned long long)want);
		return -EPROTO;
	}
	return 0;
}

/*
 * The model's own counts, which the engine's runs change: read under the
 * lock (after a dead holder's half-done run was recovered), never beside
 * a run, whose fields are consistent only between its steps.
 */
static int check_model_locked(struct ssemu_region *r, char *err,
			      size_t errlen)
{
	const struct ssemu_config *c = &r->config;

	if (!ssemu_engine_geometry_ok(ssemu_r_engine(r), c->max_events)) {
		snprintf(err, errlen, "fabric segment is corrupt (the event "
			 "engine's geometry is not that of %u events): refused",
			 c->max_events);
		return -EPROTO;
	}
	if (r->sw_used > c->max_switches || r->pkt_hwm > c->max_pkts ||
	    (r->pkt_free != SSEMU_NONE && r->pkt_free >= r->pkt_hwm)) {
		snprintf(err, errlen, "fabric segment is corrupt (model state: "
			 "%u switches modelled of %u, free packet %u, packets "
			 "used up to %u of %u): refused", r->sw_used,
			 c->max_switches, r->pkt_free, r->pkt_hwm,
			 c->max_pkts);
		return -EPROTO;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* A new region                                                         */
/* ------------------------------------------------------------------ */

/* Initialise a zero-filled region to layout @l. */
static int region_init(struct ssemu_region *r, const struct ssemu_config *c,
		       const struct ssemu_topo *t, const struct ssemu_layout *l)
{
	uint32_t i, k, neps = ssemu_config_neps(c);
	uint64_t roff;
	unsigned s;
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
	r->switch_bytes = ssemu_switch_bytes(t->radix, c->ntclass);
	r->port_bytes = ssemu_port_bytes(c->ntclass);
	ssemu_msg_bits(c, &r->msg_mb, &r->msg_hb, &r->msg_nb);
	r->voq_rows = l->voq_rows;
	r->voq_free = SSEMU_NONE;
	r->pair_bits = l->pair_bits;
	r->pair_shift = ssemu_pair_shift(c, l->pair_bits);
	r->max_pairs = ssemu_config_pairs(c);
	for (s = 0; s < SSEMU_SEC_COUNT; s++)
		memcpy((char *)r + section_def[s].field, &l->sec[s].off,
		       sizeof(uint64_t));
	r->route_idx = (uint32_t)ssemu_route_index(c->routing);
	r->arb_idx = (uint32_t)ssemu_arb_index(c->arb);
	r->cc_idx = (uint32_t)ssemu_cc_index(c->cc);
	ssemu_tel_init(r, l->sec[SSEMU_SEC_TEL].off);
	ssemu_auth_init(r, c);

	ret = ssemu_lock_init(r);
	if (ret)
		return ret;

	ssemu_engine_init(ssemu_r_engine(r), c->max_events);
	/* (group windows' encoded times put a window's groups one after the
	 * other, each a global link's delay of encoded time: buckets wide
	 * enough that the next windows are on the wheel, not in the far
	 * heap) */
	ssemu_engine_set_wide(ssemu_r_engine(r), c->group_windows);
	/* (the packet pool: none freed, none used; nothing written to it) */
	r->pkt_free = SSEMU_NONE;
	r->pkt_hwm = 0;
	r->park_head = r->park_tail = SSEMU_NONE;
	r->stall_mi = SSEMU_NONE;
	/* (the pair table is empty: zero) */
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

		roff = l->sec[SSEMU_SEC_RINGS].off + (uint64_t)i * l->ring_bytes;
		ep->tx_ring_off = roff;
		ep->ev_ring_off = roff + ssemu_txring_bytes(c);
		ep->rx_head = ep->tx_head = SSEMU_NONE;
		for (k = 0; k < SSEMU_MAX_BUFS; k++)
			ep->buf_msg[k] = SSEMU_NONE;
	}
	/* the modelled jobs' NICs and endpoints, before anyone attaches */
	return ssemu_gen_init(r, l->sec[SSEMU_SEC_GEN].off);
}

/*
 * Where a region asks for transparent huge pages: everywhere but its
 * sparse sections where those are large.  The rest is written densely
 * once used, or is small: the engine's event pool and the packet pool
 * (handed out from a high-water mark), the NIC, endpoint and slot-state
 * tables, the pair table's hot part (small_parts), the switch models
 * with their VOQs (each written in full when first used), the bitmaps and
 * maps.  At the full system's scale these are gigabytes touched at
 * random, and a job's engine runs after a context switch walk a hundred
 * or more of a small fabric's pages: on 4 KiB pages each costs a fault
 * and a TLB miss on most accesses.  The sparse sections are touched a
 * page or two an endpoint or a message (its message slots, its rings when
 * larger than a page, the memory region tables, the large buffers): on
 * huge pages all of such a section becomes resident.  So one gets them
 * only while that costs at most HUGE_SPARSE_MAX (a fabric of a thousand
 * endpoints' slots and rings), and small pages beyond, even where the
 * kernel gives huge pages unasked.  The endpoints' rings of a page an
 * endpoint are dense (every endpoint opened writes its page).  Advice
 * only: where the kernel has no THP, nothing changes; a shared segment's
 * file takes it where its file system gives huge pages on advice (a
 * tmpfs mounted with huge=advise: ssemu_shm_dir).
 */
#define HUGE_SPARSE_MAX ((uint64_t)128 << 20)

/* A huge page: x86-64's, the size a shmem THP comes in. */
#define HUGE_PAGE ((uint64_t)2 << 20)

/*
 * Map @size bytes of segment @fd, shared, at a 2 MiB boundary of the
 * address space (where a huge page of the file can be mapped with one
 * entry: huge_shared).  @return the mapping, or MAP_FAILED (errno set).
 */
static void *map_shared(size_t size, int fd)
{
	char *res, *a, *p;
	int e;

	/* an address range with room for the boundary, then the file in it
	 * and the rest of the range given back */
	res = mmap(NULL, size + HUGE_PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	a = (char *)SSEMU_ALIGN_UP((uintptr_t)res, HUGE_PAGE);
	p = mmap(a, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 0);
	if (p == MAP_FAILED) {
		e = errno;
		munmap(res, size + HUGE_PAGE);
		errno = e;
		return MAP_FAILED;
	}
	if (a > res)
		munmap(res, (size_t)(a - res));
	/* (a is less than a huge page past res: there is always a tail) */
	munmap(a + size, (size_t)(res + HUGE_PAGE - a));
	return p;
}

static void advise_range(void *p, uint64_t off, uint64_t size, int advice)
{
	const uintptr_t huge = HUGE_PAGE, base = (uintptr_t)p;
	uintptr_t lo = SSEMU_ALIGN_UP(base + off, huge);
	uintptr_t hi = (base + off + size) & ~(huge - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, advice);
}

/*
 * The parts of a region kept on small pages (advise_huge), into @lo/@hi:
 * the sparse sections while large (the message slots past their first
 * chunks), and the pair table past its hot part
 * (the first entries of every NIC's stretch, ssemu_pair_slot), whose
 * entries only a NIC with many pairs writes: a huge page for one would
 * make 2 MiB resident.  @return how many.
 */
#define SMALL_PARTS_MAX 5

static unsigned small_parts(const struct ssemu_layout *l,
			    const struct ssemu_config *c, uint64_t *lo,
			    uint64_t *hi)
{
	static const enum ssemu_sec sparse[] = {
		SSEMU_SEC_MSGS, SSEMU_SEC_RINGS, SSEMU_SEC_MRS, SSEMU_SEC_BUFS,
	};
	const struct ssemu_section *sec;
	unsigned i, n = 0;
	uint32_t sh, mb, hb, nb;
	uint64_t hot;

	for (i = 0; i < ARRAY_SIZE(sparse); i++) {
		sec = &l->sec[sparse[i]];
		if (sec->size <= HUGE_SPARSE_MAX ||
		    (sparse[i] == SSEMU_SEC_RINGS && l->ring_bytes <= PAGE))
			continue;
		lo[n] = sec->off;
		/* (the message slots' first chunks, every endpoint's
		 * together, are dense: ssemu_msg_place) */
		if (sparse[i] == SSEMU_SEC_MSGS) {
			ssemu_msg_bits(c, &mb, &hb, &nb);
			hot = (sizeof(struct ssemu_msg) << (nb + hb));
			lo[n] = sec->off + SSEMU_MIN(hot, sec->size);
		}
		hi[n++] = sec->off + sec->size;
	}
	sec = &l->sec[SSEMU_SEC_PAIR];
	sh = ssemu_pair_shift(c, l->pair_bits);
	hot = (1ULL << (l->pair_bits - sh + ssemu_pair_chunk_bits(sh))) *
	      sizeof(struct ssemu_pair);
	if (sec->size > hot) {
		lo[n] = sec->off + hot;
		hi[n++] = sec->off + sec->size;
	}
	return n;
}

static void advise_huge(void *p, const struct ssemu_layout *l,
			const struct ssemu_config *c)
{
	uint64_t lo[SMALL_PARTS_MAX], hi[SMALL_PARTS_MAX];
	unsigned i, n = small_parts(l, c, lo, hi);

	advise_range(p, 0, l->total, MADV_HUGEPAGE);
	for (i = 0; i < n; i++)
		advise_range(p, lo[i], hi[i] - lo[i], MADV_NOHUGEPAGE);
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

/* The most of a shared segment huge_shared makes huge. */
#define HUGE_SHARED_MAX ((uint64_t)128 << 20)

/*
 * What huge_shared may make resident of segment @fd: HUGE_SHARED_MAX, or
 * a quarter of what its tmpfs had free before the segment took any where
 * that is less (a container's /dev/shm may be 64 MiB, and the fabric's
 * own pages need room there); nothing off a tmpfs.  (So a process that
 * attaches, with the segment's pages in use, gets the creator's bound and
 * maps the ranges the creator made huge with 2 MiB entries.)
 */
static uint64_t huge_budget(int fd)
{
	struct statfs sf;
	struct stat st;
	uint64_t free_bytes;

	if (fstatfs(fd, &sf) || sf.f_type != TMPFS_MAGIC)
		return 0;
	if (!sf.f_blocks)	/* a tmpfs of no set size */
		return HUGE_SHARED_MAX;
	free_bytes = (uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize;
	if (!fstat(fd, &st))
		free_bytes += (uint64_t)st.st_blocks * 512;
	return SSEMU_MIN(HUGE_SHARED_MAX, free_bytes / 4);
}

/*
 * A shared segment's part on huge pages (what advise_huge asks for) even
 * where its file system gives none on advice, as /dev/shm is mounted on
 * most systems (shmem_enabled "never", the mount's huge=never).  A
 * collapse (MADV_COLLAPSE, Linux 6.1) is not bound by those settings:
 * the creator (@create) writes a page of each 2 MiB range of that part
 * and has the range collapsed into a huge page before anything else is
 * written; a process that attaches asks the same of the same ranges,
 * which maps them with 2 MiB entries (map_shared puts every mapping on a
 * 2 MiB boundary).  From the second range on: the first holds the
 * header's write-once page, which every process maps privately over the
 * segment (header_private), so no mapping of that range can be huge.  A
 * range with no page present is not collapsed, hence the write; ranges
 * collapsed only once used gave almost nothing (benchmarks/README.md).
 * Eight ranks on two cores yielding take 0.8x the time with it, as they
 * do with the segment on a tmpfs mounted huge=always.  At most @budget
 * (huge_budget) from the front of the region, resident from the start:
 * a small fabric's part is about 90 MiB, a large one's gigabytes.  Where
 * the kernel refuses (before 6.1, THP or shmem THP "never" or "deny", no
 * huge page to be had), the pages stay small.  (The segment is all
 * zeros when its creator writes them: the pages' contents do not
 * change.)
 */
static void huge_shared(void *p, const struct ssemu_layout *l,
			const struct ssemu_config *c, bool create,
			uint64_t budget)
{
	uint64_t lo[SMALL_PARTS_MAX], hi[SMALL_PARTS_MAX], a, done = 0;
	unsigned i, n = small_parts(l, c, lo, hi);

	for (a = HUGE_PAGE;
	     a + HUGE_PAGE <= l->total && done + HUGE_PAGE <= budget;
	     a += HUGE_PAGE) {
		for (i = 0; i < n && (a + HUGE_PAGE <= lo[i] || a >= hi[i]);
		     i++)
			;
		if (i < n)
			continue;
		if (create && madvise((char *)p + a, PAGE,
				      MADV_POPULATE_WRITE))
			return;	/* (before 5.14: no collapse either) */
		if (madvise((char *)p + a, HUGE_PAGE, MADV_COLLAPSE) &&
		    errno == EINVAL)
			return;	/* not this kernel, or THP off */
		done += HUGE_PAGE;
	}
}

/*
 * The telemetry section's pages mapped now, in one system call, rather
 * than each at its first touch: its sample ring is written a sample at a
 * time as model time passes (a page every few samples), by whichever
 * process runs the engine, so without this every process of a shared
 * fabric takes a page fault in the middle of a run for every page of the
 * ring, for as long as the ring takes to wrap (about 20 ms of model time
 * with the default 10 us samples).  On a virtual machine a fault is an
 * exit to the hypervisor: measured, an 8-byte fi_pingpong's transfer took
 * 5% longer and 8 ranks on 2 cores 17% (benchmarks/README.md).  The
 * section's size is fixed by the configuration (a few MiB).  A kernel
 * before 5.14 refuses the advice: its pages then fault in as before.
 */
static void prefault_telemetry(void *p, const struct ssemu_layout *l)
{
	const struct ssemu_section *sec = &l->sec[SSEMU_SEC_TEL];
	uint64_t lo = sec->off & ~(PAGE - 1);
	uint64_t hi = SSEMU_ALIGN_UP(sec->off + sec->size, PAGE);

	if (sec->size)
		(void)madvise((char *)p + lo, hi - lo, MADV_POPULATE_WRITE);
}

/* What every mapping of a region is advised: where huge pages go, and the
 * telemetry mapped now. */
static void advise_region(void *p, const struct ssemu_layout *l,
			  const struct ssemu_config *c)
{
	advise_huge(p, l, c);
	prefault_telemetry(p, l);
}

int ssemu_store_private(struct ssemu_fabric *f, const struct ssemu_config *c,
			const struct ssemu_topo *t,
			const struct ssemu_layout *l, char *err, size_t errlen)
{
	void *p;
	int ret;

	p = mmap(NULL, l->total, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map %llu bytes: %s",
			 (unsigned long long)l->total, strerror(errno));
		return ret;
	}
	f->r = p;
	f->map_size = l->total;
	advise_region(p, l, c);
	ret = region_init(f->r, c, t, l);
	if (ret) {
		munmap(p, l->total);
		return ret;
	}
	/* (its one process may poll only the endpoints with events) */
	f->r->ready_on = 1;
	f->r->magic = SSEMU_MAGIC;
	f->r->ready = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* A shared segment: create or attach                                   */
/* ------------------------------------------------------------------ */

const char *ssemu_shm_dir(char *err, size_t errlen)
{
	const char *d = getenv("SSEMU_SHM_DIR");

	if (!d || !*d)
		return SSEMU_SHM_DIR_DEFAULT;
	if (d[0] != '/' || strlen(d) > SSEMU_SHM_DIR_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "SSEMU_SHM_DIR '%.64s%s': not "
				 "an absolute path of at most %d characters",
				 d, strlen(d) > 64 ? "..." : "",
				 SSEMU_SHM_DIR_MAX);
		return NULL;
	}
	return d;
}

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
	/* (no shared segment is made with them: ssemu_store_shm) */
	if (r->config.group_windows) {
		snprintf(err, errlen, "fabric segment header is corrupt "
			 "(group windows in a shared segment)");
		return -EPROTO;
	}
	if (ssemu_broken(r)) {
		char why[sizeof(r->verdict.why)];

		memcpy(why, r->verdict.why, sizeof(why));
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

/*
 * This process's own copy of the header's write-once page, over the shared
 * mapping at @r (see struct ssemu_region), and a read-only view of the
 * segment's copy in *@view.  @return 0 or -errno.
 */
static int header_private(struct ssemu_region *r, int fd, const void **view)
{
	void *v, *tmp;

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

/*
 * Give the new segment @fd its mode and group (@c's share group: 0660 with
 * that group, else 0600, whatever the umask), before anyone can use it.
 * @return 0 or -errno (explained in @err).
 */
static int shm_protect(struct ssemu_fabric *f, int fd,
		       const struct ssemu_config *c, mode_t mode, char *err,
		       size_t errlen)
{
	int ret;

	if (c->share_group && fchown(fd, (uid_t)-1, (gid_t)c->share_gid)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot give the segment to group "
			 "%u (share_group): %s%s", f->shm_name, c->share_gid,
			 strerror(errno), errno == EPERM ? " (its creator "
			 "must belong to the group)" : "");
		return ret;
	}
	if (fchmod(fd, mode)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot set mode %o: %s",
			 f->shm_name, (unsigned)mode, strerror(errno));
		return ret;
	}
	return 0;
}

/*
 * A segment's file on a disk's file system works, but its pages are
 * written back to the disk as the model changes them: say so (a
 * directory named by SSEMU_SHM_DIR that is not a tmpfs is a mistake
 * more often than a choice).
 */
static void shm_dir_check(const struct ssemu_fabric *f, int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) || sf.f_type == TMPFS_MAGIC ||
	    sf.f_type == RAMFS_MAGIC || sf.f_type == HUGETLBFS_MAGIC)
		return;
	ssemu_log(SSEMU_LOG_WARN, "fabric %s: %s is not on a tmpfs: its "
		  "pages will be written back to the disk (SSEMU_SHM_DIR "
		  "names a tmpfs, such as /dev/shm)", f->shm_name + 1,
		  f->shm_path);
}

/*
 * Create segment @f->shm_name for layout @l and set it up as a new region.
 * @return 0, -EEXIST (it exists: attach it instead) or another -errno
 * (explained in @err).
 */
static int shm_create(struct ssemu_fabric *f, const struct ssemu_config *c,
		      const struct ssemu_topo *t, const struct ssemu_layout *l,
		      const void **view, char *err, size_t errlen)
{
	struct ssemu_region *r;
	mode_t mode = c->share_group ? 0660 : 0600;
	struct stat st;
	int fd, ret;
	void *p;

	fd = open(f->shm_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			return -EEXIST;
		ret = -errno;
		snprintf(err, errlen, "cannot create %s: %s", f->shm_path,
			 strerror(errno));
		return ret;
	}
	shm_dir_check(f, fd);
	/* (empty until sized: an attacher waits until then) */
	ret = shm_protect(f, fd, c, mode, err, errlen);
	if (!ret && fstat(fd, &st))
		ret = -errno;
	if (ret) {
		close(fd);
		unlink(f->shm_path);
		return ret;
	}
	if (ftruncate(fd, (off_t)l->total)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot size the segment to %llu "
			 "bytes: %s", f->shm_name,
			 (unsigned long long)l->total, strerror(errno));
		close(fd);
		unlink(f->shm_path);
		return ret;
	}
	p = map_shared(l->total, fd);
	if (p == MAP_FAILED) {
		ret = -errno;
		close(fd);
		unlink(f->shm_path);
		snprintf(err, errlen, "mmap: %s", strerror(errno));
		return ret;
	}
	/* (where the directory's file system gives huge pages on advice,
	 * as a tmpfs mounted with huge=advise: ssemu_shm_dir) */
	advise_region(p, l, c);
	huge_shared(p, l, c, true, huge_budget(fd));
	r = p;
	ret = region_init(r, c, t, l);
	r->shm_mode = (uint32_t)mode;
	r->shm_gid = (uint32_t)st.st_gid;
	if (!ret)
		ret = ssemu_proc_register_locked(r);
	if (ret) {
		close(fd);
		munmap(p, l->total);
		unlink(f->shm_path);
		snprintf(err, errlen, "cannot initialise the fabric: %s",
			 strerror(-ret));
		return ret;
	}
	r->magic = SSEMU_MAGIC;
	/* publish; pairs with the acquire of ready in shm_attach */
	ssemu_store_release(&r->ready, 1);
	ret = header_private(r, fd, view);
	close(fd);
	if (ret) {
		munmap(p, l->total);
		unlink(f->shm_path);
		snprintf(err, errlen, "cannot map the header: %s",
			 strerror(-ret));
		return ret;
	}
	f->r = r;
	f->map_size = l->total;
	return 0;
}

/*
 * May this process take segment @st (before its header is read)?  Mode
 * 0600 and ours, or 0660 (shared with a group: opening it read-write
 * took the group, or being its owner or root); anything else is refused.
 */
static int mode_check(struct ssemu_fabric *f, const struct stat *st,
		      char *err, size_t errlen)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);

	if (mode == 0600 && st->st_uid != geteuid()) {
		snprintf(err, errlen, "fabric segment %s belongs to uid %u, "
			 "not to you (uid %u), and is not shared: refused",
			 f->shm_name, (unsigned)st->st_uid,
			 (unsigned)geteuid());
		return -EACCES;
	}
	if (mode != 0600 && mode != 0660) {
		snprintf(err, errlen, "fabric segment %s has mode %o: a "
			 "fabric is 0600 (its creator's) or 0660 (shared with "
			 "a group, share_group), never more: refused",
			 f->shm_name, mode);
		return -EACCES;
	}
	return 0;
}

/*
 * Does segment @st's file say what its header @r (this process's checked
 * copy) recorded at its creation: mode, group if shared, owner?  And is
 * it shared as @want asks, if @want asks for a group?
 */
static int share_check(struct ssemu_fabric *f, const struct ssemu_region *r,
		       const struct stat *st, const struct ssemu_config *want,
		       char *err, size_t errlen)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);
	char grp[24] = "";

	if (r->shm_mode != mode || st->st_uid != r->owner_uid ||
	    (mode == 0660 && st->st_gid != r->shm_gid)) {
		if (r->shm_mode == 0660)
			snprintf(grp, sizeof(grp), ", group %u", r->shm_gid);
		snprintf(err, errlen, "fabric segment %s is mode %o, uid %u, "
			 "group %u; its header says it was created mode %o, "
			 "uid %u%s (changed since): refused", f->shm_name,
			 mode, (unsigned)st->st_uid, (unsigned)st->st_gid,
			 r->shm_mode, r->owner_uid, grp);
		return -EACCES;
	}
	if (want && want->share_group &&
	    (mode != 0660 || r->shm_gid != want->share_gid)) {
		if (mode != 0660)
			snprintf(err, errlen, "fabric %s exists, not shared "
				 "(mode 0600), asked for one shared with group "
				 "%u", f->shm_name + 1, want->share_gid);
		else
			snprintf(err, errlen, "fabric %s exists, shared with "
				 "group %u, asked for group %u",
				 f->shm_name + 1, r->shm_gid, want->share_gid);
		return -EEXIST;
	}
	return 0;
}

/*
 * Attach the existing segment @f->shm_name: its owner and mode, then this
 * process's copy of its header, checked (against @want too, unless NULL)
 * and against the file's mode, owner and group, then a process slot
 * (unless an observer).  @return 0, -EAGAIN (not
 * there, or not ready yet, or being removed: try again), -ENOENT (not
 * there, and @f->flags wants an existing one) or another -errno
 * (explained in @err).
 */
static int shm_attach(struct ssemu_fabric *f, const struct ssemu_config *want,
		      const void **view, char *err, size_t errlen)
{
	bool existing = f->flags & (SSEMU_OPEN_EXISTING | SSEMU_OPEN_OBSERVER);
	struct ssemu_region *r;
	struct stat st;
	uint64_t budget;
	size_t size;
	int fd, ret;
	void *p;

	fd = open(f->shm_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && existing) {
			snprintf(err, errlen, "no fabric named %s (in %.*s)",
				 f->shm_name + 1,
				 (int)(strlen(f->shm_path) -
				       strlen(f->shm_name)), f->shm_path);
			return -ENOENT;
		}
		if (errno == ENOENT)
			return -EAGAIN; /* removed meanwhile */
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", f->shm_path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	ret = mode_check(f, &st, err, errlen);
	if (ret) {
		close(fd);
		return ret;
	}
	size = (size_t)st.st_size;
	if (size < sizeof(*r)) {
		close(fd);
		/* being created: give the creator time */
		usleep(10000);
		return -EAGAIN;
	}
	p = map_shared(size, fd);
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
		return -EAGAIN;
	}
	budget = huge_budget(fd);
	/* our copy of the header, checked: then used, whatever the
	 * segment's becomes */
	ret = header_private(r, fd, view);
	close(fd);
	if (ret) {
		munmap(p, size);
		return ret;
	}
	ret = check_header(r, size, want, err, errlen);
	if (!ret) {
		struct ssemu_layout l;

		/* (the layout the header was just checked against) */
		ssemu_layout_compute(&r->config, &r->topo, &l);
		advise_region(p, &l, &r->config);
		ret = share_check(f, r, &st, want, err, errlen);
		/* (an observer only looks: its mapping may stay small) */
		if (!ret && !(f->flags & SSEMU_OPEN_OBSERVER))
			huge_shared(p, &l, &r->config, false, budget);
	}
	if (!ret) {
		ret = ssemu_region_lock(r);
		if (ret)
			snprintf(err, errlen, "fabric %s: %.*s", f->shm_name + 1,
				 (int)sizeof(r->verdict.why),
				 ssemu_broken(r) ? r->verdict.why :
						   strerror(-ret));
	}
	if (ret) {
		munmap((void *)*view, SSEMU_HDR_PRIVATE);
		munmap(p, size);
		return ret;
	}
	if (r->dead) {
		/* the last user is removing it: start over */
		ssemu_region_unlock(r);
		munmap((void *)*view, SSEMU_HDR_PRIVATE);
		munmap(p, size);
		usleep(1000);
		return -EAGAIN;
	}
	ret = check_model_locked(r, err, errlen);
	if (ret) {
		ssemu_region_unlock(r);
		munmap((void *)*view, SSEMU_HDR_PRIVATE);
		munmap(p, size);
		return ret;
	}
	ret = f->flags & SSEMU_OPEN_OBSERVER ? 0 :
					       ssemu_proc_register_locked(r);
	ssemu_region_unlock(r);
	if (ret) {
		munmap((void *)*view, SSEMU_HDR_PRIVATE);
		munmap(p, size);
		snprintf(err, errlen, "%d live processes are attached to "
			 "fabric %s already, the most it takes",
			 SSEMU_MAX_PROCS, f->shm_name + 1);
		return ret;
	}
	f->r = r;
	f->map_size = size;
	return 0;
}

int ssemu_store_shm(struct ssemu_fabric *f, const struct ssemu_config *c,
		    const struct ssemu_topo *t, const struct ssemu_layout *l,
		    const void **view, char *err, size_t errlen)
{
	bool existing = f->flags & (SSEMU_OPEN_EXISTING | SSEMU_OPEN_OBSERVER);
	int tries, ret;

	if (c && c->group_windows) {
		snprintf(err, errlen, "group windows need a fabric of one "
			 "process (a private store), not a shared one");
		return -EINVAL;
	}
	for (tries = 0; tries < 100; tries++) {
		ret = existing ? -EEXIST :
				 shm_create(f, c, t, l, view, err, errlen);
		if (ret != -EEXIST)
			return ret;
		ret = shm_attach(f, existing ? NULL : c, view, err, errlen);
		if (ret != -EAGAIN)
			return ret;
	}
	snprintf(err, errlen, "%s: the segment never became a valid fabric "
		 "(corrupt, or its creator died while building it; "
		 "`slingshot-emu clean` removes it)", f->shm_name + 1);
	return -EPROTO;
}
