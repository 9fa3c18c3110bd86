/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the fabric store's layout (emu/ssemu_store.c): the section
 * table of every preset is in order, aligned, without overlap and inside
 * the region; a new region's header holds the table's offsets; and an
 * attach refuses a segment whose header has any one section offset
 * changed, naming that offset, and takes it again once it is put back.
 * The packet pool: nothing of it written before use, handed out from its
 * high-water mark in order, freed packets first, a reset starting it
 * again, a wrong mark caught (the fabric broken, or an attach refused).
 * The telemetry section is mapped from the start in every process of a
 * fabric, the creator's and an attacher's (its sample ring would fault
 * in a page at a time during runs); a shared fabric's dense part is on
 * huge pages in both, whatever the file system's huge page setting.
 *
 * Segments are named after this process's pid and none is left behind.
 */
#define _GNU_SOURCE	/* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"
#include "ssemu_model.h"
#include "ssemu_model_int.h"

/* Each section's header field, by hand: the oracle the table is held to. */
static const struct {
	enum ssemu_sec sec;
	const char *field;
	size_t off;
} fields[] = {
#define F(s, f) { SSEMU_SEC_##s, #f, offsetof(struct ssemu_region, f) }
	F(ENGINE, engine_off), F(NICS, nics_off), F(EPS, eps_off),
	F(MSGS, msgs_off), F(MSTATE, mstate_off), F(RINGS, rings_off),
	F(PKTS, pkts_off), F(SWMAP, swmap_off), F(PORTMAP, portmap_off),
	F(PAIR, pair_off), F(PAIRN, pairn_off), F(WORK, work_off), F(OVF, ovf_off),
	F(READY, ready_off),
	F(RESV, resv_off), F(NIC_EPS, nic_eps_off),
	F(SWITCHES, switches_off), F(VOQROW, voqrow_off),
	F(VOQS, voqs_off), F(MRS, mrs_off),
	F(TEL, tel_off), F(GEN, gen_off), F(BUFS, bufs_off),
#undef F
};

static const char *const presets[] = {
	"switch", "2switch", "2group", "malbec", "shandy", "full",
};

static void layout_of(const char *preset, struct ssemu_config *c,
		      struct ssemu_layout *l)
{
	struct ssemu_topo t;
	char err[256];

	assert_int_equal(ssemu_config_preset(preset, c), 0);
	memset(&t, 0, sizeof(t));
	if (ssemu_topo_init(&t, &c->topo, err, sizeof(err)))
		fail_msg("%s: %s", preset, err);
	ssemu_layout_compute(c, &t, l);
}

static void test_layout_table(void **state)
{
	struct ssemu_config c;
	struct ssemu_layout l;
	uint64_t end;
	size_t p;
	unsigned s;

	(void)state;
	assert_int_equal(ARRAY_SIZE(fields), SSEMU_SEC_COUNT);
	for (p = 0; p < ARRAY_SIZE(presets); p++) {
		layout_of(presets[p], &c, &l);
		end = sizeof(struct ssemu_region);
		for (s = 0; s < SSEMU_SEC_COUNT; s++) {
			const struct ssemu_section *sec = &l.sec[s];
			uint64_t align = s == SSEMU_SEC_MRS ||
						 s == SSEMU_SEC_PAIR ||
						 s == SSEMU_SEC_VOQS ||
						 s == SSEMU_SEC_BUFS ||
						 s == SSEMU_SEC_MSGS ||
						 s == SSEMU_SEC_RINGS ?
					 4096 : SSEMU_CACHELINE;

			assert_int_equal(fields[s].sec, s);
			if (strncmp(fields[s].field, sec->name,
				    strlen(sec->name)) ||
			    strcmp(fields[s].field + strlen(sec->name), "_off"))
				fail_msg("section %u is '%s', its field %s", s,
					 sec->name, fields[s].field);
			if (sec->off < end || sec->off % align)
				fail_msg("%s: section %s at %#llx, the one "
					 "before ends at %#llx (alignment %llu)",
					 presets[p], sec->name,
					 (unsigned long long)sec->off,
					 (unsigned long long)end,
					 (unsigned long long)align);
			assert_int_equal(sec->size, sec->count * sec->esize);
			end = sec->off + sec->size;
		}
		assert_true(l.total >= end && l.total % 4096 == 0 &&
			    l.total - end < 4096);
		assert_int_equal(l.sec[SSEMU_SEC_EPS].count,
				 ssemu_config_neps(&c));
		assert_int_equal(l.ring_bytes, ssemu_rings_stride(&c));
		/* every endpoint's rings from a page boundary (rings of more
		 * than a page) */
		assert_true(l.ring_bytes > 4096);
		assert_int_equal(l.ring_bytes % 4096, 0);
	}
}

/*
 * Where message slots lie: at their own index while all of them fit in
 * SSEMU_MSG_DENSE_MAX; beyond, in chunks, every endpoint's first chunk
 * together.  Each slot has a place of its own inside the section, the
 * index comes back from the place, and an endpoint's first chunk is
 * where the endpoints' first chunks are.
 */
static void test_layout_msg_place(void **state)
{
	struct ssemu_region *r = aligned_alloc(4096, sizeof(*r));
	struct ssemu_config c;
	struct ssemu_layout l;
	struct ssemu_topo t;
	uint64_t *seen, places, i, p;
	struct ssemu_msg *base;
	uint32_t mb, hb, nb, k, e;
	char err[256];

	(void)state;
	assert_non_null(r);
	memset(r, 0, sizeof(*r));
	/* a small fabric's: the index */
	layout_of("shandy", &c, &l);
	ssemu_msg_bits(&c, &r->msg_mb, &r->msg_hb, &r->msg_nb);
	assert_int_equal(r->msg_hb, r->msg_mb);
	assert_int_equal(l.sec[SSEMU_SEC_MSGS].count,
			 (uint64_t)ssemu_config_neps(&c) * c.msgs_per_ep);
	for (i = 0; i < (uint64_t)ssemu_config_neps(&c) * c.msgs_per_ep;
	     i += 97)
		assert_int_equal(ssemu_msg_place(r, (uint32_t)i), i);

	/* a simulation's of the full system: 279,040 endpoints of 64 */
	assert_int_equal(ssemu_config_preset("full", &c), 0);
	c.max_nics = c.max_eps = 279040;
	c.eps_per_nic = 1;
	c.msgs_per_ep = 64;
	memset(&t, 0, sizeof(t));
	if (ssemu_topo_init(&t, &c.topo, err, sizeof(err)))
		fail_msg("full: %s", err);
	ssemu_layout_compute(&c, &t, &l);
	ssemu_msg_bits(&c, &mb, &hb, &nb);
	assert_int_equal(mb, 6);
	assert_int_equal(hb, 3);
	assert_int_equal(nb, 19);
	r->msg_mb = mb;
	r->msg_hb = hb;
	r->msg_nb = nb;
	r->msgs_off = 4096;
	places = (uint64_t)64 << 19;
	assert_int_equal(l.sec[SSEMU_SEC_MSGS].count, places);
	seen = calloc(places / 64, sizeof(*seen));
	assert_non_null(seen);
	base = (struct ssemu_msg *)((char *)r + r->msgs_off);
	for (e = 0; e < 279040; e++) {
		for (k = 0; k < 64; k++) {
			i = (uint64_t)e << mb | k;
			p = ssemu_msg_place(r, (uint32_t)i);
			if (p >= places || (seen[p / 64] >> (p % 64) & 1))
				fail_msg("slot %u of endpoint %u: place %llu "
					 "out of the section or taken", k, e,
					 (unsigned long long)p);
			seen[p / 64] |= 1ULL << (p % 64);
			if (k < SSEMU_MSG_CHUNK &&
			    p != (uint64_t)e * SSEMU_MSG_CHUNK + k)
				fail_msg("slot %u of endpoint %u: place %llu, "
					 "not among the first chunks", k, e,
					 (unsigned long long)p);
			/* (pointer arithmetic alone: nothing is read) */
			if (ssemu_msg_index(r, base + p) != i)
				fail_msg("slot %u of endpoint %u: place %llu "
					 "gives back %u", k, e,
					 (unsigned long long)p,
					 ssemu_msg_index(r, base + p));
		}
	}
	free(seen);
	free(r);
}

/* Rings of a page or less follow each other on cache lines; larger ones
 * start on a page. */
static void test_layout_ring_stride(void **state)
{
	static const struct {
		uint32_t msgs, ev;
		uint64_t want;
	} cases[] = {
		/* 192 + 64 * 4 = 448; 192 + 16 * 104 = 1,856 */
		{ 64, 16, 2304 },
		/* 448 + 192 + 32 * 104 = 3,968: a page's worth */
		{ 64, 32, 3968 },
		/* 448 + 192 + 64 * 104 = 7,296: two pages */
		{ 64, 64, 8192 },
		/* 192 + 4 * 4 = 208 -> 256; + 1,856 = 2,112 */
		{ 4, 16, 2112 },
	};
	struct ssemu_config c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ssemu_config_preset("shandy", &c), 0);
		c.msgs_per_ep = cases[i].msgs;
		c.ev_ring = cases[i].ev;
		assert_int_equal(ssemu_rings_stride(&c), cases[i].want);
		assert_int_equal(ssemu_rings_stride(&c) % SSEMU_CACHELINE, 0);
	}
}

/* A new region's header holds the table's offsets and total. */
static void test_layout_header(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *f;
	struct ssemu_config c;
	struct ssemu_layout l;
	char err[256];
	uint64_t v;
	size_t i;

	(void)state;
	layout_of("2group", &c, &l);
	o.config = &c;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	assert_int_equal(f->r->total_size, l.total);
	assert_int_equal(f->map_size, l.total);
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		memcpy(&v, (char *)f->r + fields[i].off, sizeof(v));
		if (v != l.sec[fields[i].sec].off)
			fail_msg("%s is %#llx, the table has %#llx",
				 fields[i].field, (unsigned long long)v,
				 (unsigned long long)l.sec[fields[i].sec].off);
	}
	ssemu_fabric_close(f);
}

/* Any section offset changed in the segment: attach refused, naming it. */
static void test_attach_refuses_each_offset(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_fabric *f, *f2;
	struct ssemu_config c;
	char name[64], path[80], err[256];
	uint64_t v, was;
	size_t i;
	void *raw;
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "ssemu-ut-%d-store", (int)getpid());
	snprintf(path, sizeof(path), "/%s", name);
	assert_int_equal(ssemu_config_preset("switch", &c), 0);
	o.name = name;
	o.config = &c;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	/* (into the segment: the handle has its own copy of the header) */
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	raw = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(raw != MAP_FAILED);
	close(fd);
	o.flags = SSEMU_OPEN_EXISTING;
	for (i = 0; i < ARRAY_SIZE(fields); i++) {
		memcpy(&was, (char *)raw + fields[i].off, sizeof(was));
		v = was + 64;
		memcpy((char *)raw + fields[i].off, &v, sizeof(v));
		err[0] = 0;
		assert_int_equal(ssemu_fabric_open(&o, &f2, err, sizeof(err)),
				 -EPROTO);
		if (!strstr(err, fields[i].field))
			fail_msg("refusal does not name %s: %s",
				 fields[i].field, err);
		memcpy((char *)raw + fields[i].off, &was, sizeof(was));
		if (ssemu_fabric_open(&o, &f2, err, sizeof(err)))
			fail_msg("%s put back, still refused: %s",
				 fields[i].field, err);
		ssemu_fabric_close(f2);
	}
	munmap(raw, 4096);
	assert_false(ssemu_broken(f->r));
	ssemu_fabric_close(f);
	assert_true(shm_open(path, O_RDONLY, 0) < 0 && errno == ENOENT);
}

/* A private fabric of one switch with a pool of @npkts packets. */
static struct ssemu_fabric *pool_fabric(uint32_t npkts)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *f;
	struct ssemu_config c;
	char err[256];

	assert_int_equal(ssemu_config_preset("switch", &c), 0);
	c.max_pkts = npkts;
	o.config = &c;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	return f;
}

/*
 * Pages of packets [@from, @to) of @r that are resident, in the 2 MiB
 * pages wholly inside that range (the region asks for huge pages: one
 * that holds another section's written bytes too is resident for them).
 * There must be some.
 */
static unsigned pkt_pages_resident(struct ssemu_region *r, uint32_t from,
				   uint32_t to)
{
	const uintptr_t huge = (uintptr_t)2 << 20;
	uintptr_t a = (uintptr_t)ssemu_r_pkt(r, from);
	uintptr_t b = (uintptr_t)ssemu_r_pkt(r, to);
	static unsigned char vec[4096];
	unsigned n = 0;
	size_t i, len;

	a = (a + huge - 1) & ~(huge - 1);
	b &= ~(huge - 1);
	assert_true(b > a);
	len = b - a;
	assert_true(len / 4096 <= sizeof(vec));
	assert_int_equal(mincore((void *)a, len, vec), 0);
	for (i = 0; i < len / 4096; i++)
		n += vec[i] & 1;
	return n;
}

static void test_packet_pool(void **state)
{
	/* (megabytes: whole huge pages inside the pool) */
	const uint32_t npkts = 65536;
	struct ssemu_fabric *f = pool_fabric(npkts);
	struct ssemu_region *r = f->r;
	uint32_t i, n;

	(void)state;
	/* new: nothing freed, nothing used, nothing of the pool written */
	assert_true(r->pkt_free == SSEMU_NONE);
	assert_int_equal(r->pkt_hwm, 0);
	assert_int_equal(r->pkts_used, 0);
	assert_true(pkt_pages_resident(r, 0, npkts) == 0);

	/* in order from the mark */
	for (i = 0; i < 3; i++)
		assert_int_equal(pkt_alloc(r), i);
	assert_int_equal(r->pkt_hwm, 3);
	assert_int_equal(r->pkts_used, 3);
	/* freed ones first, the last freed first, then the mark again */
	pkt_free(r, 1);
	pkt_free(r, 0);
	assert_int_equal(pkt_alloc(r), 0);
	assert_int_equal(pkt_alloc(r), 1);
	assert_int_equal(pkt_alloc(r), 3);
	assert_int_equal(r->pkt_hwm, 4);
	/* (still nothing written far above the mark) */
	assert_true(pkt_pages_resident(r, 64, npkts) == 0);
	/* the census: free, in use and never used, the pool */
	for (i = 0; i < 4; i++)
		pkt_free(r, i);
	assert_true(ssemu_model_check(r));
	for (i = 0; i < 4; i++)
		assert_int_equal(pkt_alloc(r), 3 - i);

	/* exhausted: NONE, as ever, and the fabric is sound */
	for (n = 0; pkt_alloc(r) != SSEMU_NONE; n++)
		;
	assert_int_equal(n, npkts - 4);
	assert_int_equal(r->pkt_hwm, npkts);
	assert_int_equal(r->pkts_used, npkts);
	assert_false(ssemu_broken(r));
	pkt_free(r, 7);
	assert_int_equal(pkt_alloc(r), 7);
	assert_true(pkt_alloc(r) == SSEMU_NONE);
	assert_false(ssemu_broken(r));

	/* a reset: every packet never used again, handed out from 0 */
	for (i = 0; i < npkts; i++)
		pkt_free(r, i);
	assert_int_equal(ssemu_model_recover(r), 0);
	assert_true(r->pkt_free == SSEMU_NONE);
	assert_int_equal(r->pkt_hwm, 0);
	assert_int_equal(r->pkts_used, 0);
	assert_int_equal(pkt_alloc(r), 0);
	assert_false(ssemu_broken(r));
	ssemu_fabric_close(f);
}

/* A mark beyond the pool, or below a freed packet: the fabric is broken
 * at the next allocation, and its calls fail with -EIO. */
static void test_packet_pool_bad_mark(void **state)
{
	struct ssemu_fabric *f;
	struct ssemu_region *r;

	(void)state;
	f = pool_fabric(64);
	r = f->r;
	assert_int_equal(pkt_alloc(r), 0);
	r->pkt_hwm = 65;
	assert_true(pkt_alloc(r) == SSEMU_NONE);
	assert_true(ssemu_broken(r));
	assert_non_null(strstr(r->verdict.why, "high-water mark"));
	assert_int_equal(ssemu_fabric_run_until(f, 1000), -EIO);
	ssemu_fabric_close(f);

	f = pool_fabric(64);
	r = f->r;
	assert_int_equal(pkt_alloc(r), 0);
	assert_int_equal(pkt_alloc(r), 1);
	pkt_free(r, 1);
	r->pkt_hwm = 1;
	assert_true(pkt_alloc(r) == SSEMU_NONE);
	assert_true(ssemu_broken(r));
	assert_non_null(strstr(r->verdict.why, "high-water mark"));
	ssemu_fabric_close(f);
}

/* A segment whose mark is beyond its pool, or below its free list's
 * head: an attach is refused, and taken once it is put back. */
static void test_attach_refuses_bad_mark(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_fabric *f, *f2;
	struct ssemu_config c;
	char name[64], path[80], err[256];
	struct ssemu_region *raw;
	uint32_t was;
	int fd;

	(void)state;
	snprintf(name, sizeof(name), "ssemu-ut-%d-hwm", (int)getpid());
	snprintf(path, sizeof(path), "/%s", name);
	assert_int_equal(ssemu_config_preset("switch", &c), 0);
	o.name = name;
	o.config = &c;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	raw = mmap(NULL, sizeof(*raw), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	assert_true(raw != MAP_FAILED);
	close(fd);
	o.flags = SSEMU_OPEN_EXISTING;
	was = raw->pkt_hwm;
	raw->pkt_hwm = c.max_pkts + 1;
	err[0] = 0;
	assert_int_equal(ssemu_fabric_open(&o, &f2, err, sizeof(err)),
			 -EPROTO);
	assert_non_null(strstr(err, "packets used up to"));
	raw->pkt_hwm = was;
	raw->pkt_free = was;	/* (a freed packet at the mark) */
	assert_int_equal(ssemu_fabric_open(&o, &f2, err, sizeof(err)),
			 -EPROTO);
	raw->pkt_free = SSEMU_NONE;
	if (ssemu_fabric_open(&o, &f2, err, sizeof(err)))
		fail_msg("mark put back, still refused: %s", err);
	ssemu_fabric_close(f2);
	munmap(raw, sizeof(*raw));
	assert_false(ssemu_broken(f->r));
	ssemu_fabric_close(f);
	assert_true(shm_open(path, O_RDONLY, 0) < 0 && errno == ENOENT);
}

/*
 * Pages of [@p, @p + @len) this process has mapped (present in its page
 * table, /proc/self/pagemap bit 63), and how many pages that is.
 */
static unsigned pages_mapped(const void *p, size_t len, unsigned *total)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	uintptr_t b = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
	uint64_t ent;
	unsigned n = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	assert_true(fd >= 0);
	*total = 0;
	for (; a < b; a += 4096, (*total)++) {
		assert_int_equal(pread(fd, &ent, sizeof(ent),
				       (off_t)(a / 4096 * sizeof(ent))),
				 sizeof(ent));
		n += (unsigned)(ent >> 63);
	}
	close(fd);
	return n;
}

/* Shared fabric "ssemu-ut-<pid>-@tag" of the switch preset, made with
 * @o (its name and configuration kept in @name and @c, which must
 * outlive it), and its layout in @l. */
static struct ssemu_fabric *open_switch(const char *tag,
					struct ssemu_fabric_opts *o,
					struct ssemu_config *c, char *name,
					size_t namelen, struct ssemu_layout *l)
{
	struct ssemu_fabric *f;
	char err[256];

	snprintf(name, namelen, "ssemu-ut-%d-%s", (int)getpid(), tag);
	assert_int_equal(ssemu_config_preset("switch", c), 0);
	o->name = name;
	o->config = c;
	if (ssemu_fabric_open(o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	ssemu_layout_compute(&f->r->config, &f->r->topo, l);
	return f;
}

static void test_telemetry_prefaulted(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_fabric *f, *f2;
	struct ssemu_layout l;
	struct ssemu_config c;
	const struct ssemu_section *tel;
	char name[64], err[256];
	unsigned n, total;
	void *probe;

	(void)state;
	/* (the advice is Linux 5.14's: an older kernel faults them in as
	 * they are touched) */
	probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(probe != MAP_FAILED);
	if (madvise(probe, 4096, MADV_POPULATE_WRITE)) {
		munmap(probe, 4096);
		print_message("SKIP: this kernel has no MADV_POPULATE_WRITE\n");
		skip();
	}
	munmap(probe, 4096);
	f = open_switch("tel", &o, &c, name, sizeof(name), &l);
	tel = &l.sec[SSEMU_SEC_TEL];
	/* (the sample ring: most of the section, never written yet) */
	assert_true(tel->size > 64 * 4096);
	n = pages_mapped((char *)f->r + tel->off, tel->size, &total);
	assert_int_equal(n, total);
	/* another mapping of the same fabric, as another process's */
	o.flags = SSEMU_OPEN_EXISTING;
	if (ssemu_fabric_open(&o, &f2, err, sizeof(err)))
		fail_msg("attach: %s", err);
	assert_true(f2->r != f->r);
	n = pages_mapped((char *)f2->r + tel->off, tel->size, &total);
	assert_int_equal(n, total);
	ssemu_fabric_close(f2);
	ssemu_fabric_close(f);

	/* a private store's too */
	o.store = SSEMU_STORE_PRIVATE;
	o.name = NULL;
	o.flags = 0;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("private fabric: %s", err);
	n = pages_mapped((char *)f->r + tel->off, tel->size, &total);
	assert_int_equal(n, total);
	ssemu_fabric_close(f);
}

/* kB of the mapping holding @p that are shmem mapped with 2 MiB entries
 * (/proc/self/smaps' ShmemPmdMapped of its area). */
static unsigned long pmd_mapped_kb(const void *p)
{
	char line[512];
	unsigned long lo, hi, kb = 0;
	bool in = false;
	FILE *fp = fopen("/proc/self/smaps", "r");

	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "ShmemPmdMapped: %lu kB", &kb) == 1)
			break;
	}
	fclose(fp);
	return in ? kb : 0;
}

/* Can this kernel collapse a shared memory range into a huge page?  (A
 * memfd of two huge pages, a page written in its aligned one.) */
static bool shmem_collapses(void)
{
	const size_t huge = (size_t)2 << 20;
	int fd = memfd_create("ssemu-ut-probe", MFD_CLOEXEC);
	char *res, *a;
	bool ok = false;

	if (fd < 0)
		return false;
	res = mmap(NULL, 3 * huge, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!ftruncate(fd, (off_t)(2 * huge)) && res != MAP_FAILED) {
		a = (char *)(((uintptr_t)res + huge - 1) &
			     ~(uintptr_t)(huge - 1));
		if (mmap(a, 2 * huge, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == a) {
			a[0] = 1;
			ok = !madvise(a, huge, 25 /* MADV_COLLAPSE */);
		}
	}
	if (res != MAP_FAILED)
		munmap(res, 3 * huge);
	close(fd);
	return ok;
}

/*
 * A shared fabric's dense part is on huge pages, mapped with 2 MiB
 * entries in the process that made it and in one that attached, whatever
 * the file system's huge page setting (/dev/shm as most systems mount
 * it gives none on advice), and no more of it than the bound.
 */
static void test_shared_huge_pages(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	const unsigned long huge_kb = 2048, bound_kb = 128 * 1024;
	struct ssemu_fabric *f, *f2;
	struct ssemu_layout l;
	struct ssemu_config c;
	char name[64], err[256];
	const char *dir;
	struct statfs sf;
	unsigned long kb;

	(void)state;
	if (!shmem_collapses()) {
		print_message("SKIP: this kernel does not collapse shared "
			      "memory into huge pages (before Linux 6.1, or "
			      "THP off)\n");
		skip();
	}
	/* (the library takes at most a quarter of what is free there) */
	dir = getenv("SSEMU_SHM_DIR") ? getenv("SSEMU_SHM_DIR") : "/dev/shm";
	if (statfs(dir, &sf) || sf.f_type != TMPFS_MAGIC ||
	    (sf.f_blocks && (uint64_t)sf.f_bavail * sf.f_bsize / 4 <
				    (uint64_t)bound_kb * 1024)) {
		print_message("SKIP: %s is not a tmpfs with %lu MiB free\n",
			      dir, 4 * bound_kb / 1024);
		skip();
	}
	f = open_switch("huge", &o, &c, name, sizeof(name), &l);
	/* (the engine's queues alone span several huge pages) */
	assert_true(l.sec[SSEMU_SEC_ENGINE].size >= 4 * huge_kb * 1024);
	assert_int_equal((uintptr_t)f->r % (huge_kb * 1024), 0);
	kb = pmd_mapped_kb((char *)f->r + l.sec[SSEMU_SEC_ENGINE].off +
			   l.sec[SSEMU_SEC_ENGINE].size / 2);
	assert_true(kb >= 8 * huge_kb);
	assert_true(kb <= bound_kb);
	/* another mapping of the same fabric, as another process's */
	o.flags = SSEMU_OPEN_EXISTING;
	if (ssemu_fabric_open(&o, &f2, err, sizeof(err)))
		fail_msg("attach: %s", err);
	assert_int_equal((uintptr_t)f2->r % (huge_kb * 1024), 0);
	assert_int_equal(pmd_mapped_kb((char *)f2->r +
				       l.sec[SSEMU_SEC_ENGINE].off +
				       l.sec[SSEMU_SEC_ENGINE].size / 2),
			 kb);
	ssemu_fabric_close(f2);
	ssemu_fabric_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_table),
		cmocka_unit_test(test_layout_header),
		cmocka_unit_test(test_layout_ring_stride),
		cmocka_unit_test(test_layout_msg_place),
		cmocka_unit_test(test_attach_refuses_each_offset),
		cmocka_unit_test(test_packet_pool),
		cmocka_unit_test(test_packet_pool_bad_mark),
		cmocka_unit_test(test_attach_refuses_bad_mark),
		cmocka_unit_test(test_telemetry_prefaulted),
		cmocka_unit_test(test_shared_huge_pages),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
