/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the fabric store's layout (emu/ssemu_store.c): the section
 * table of every preset is in order, aligned, without overlap and inside
 * the region; a new region's header holds the table's offsets; and an
 * attach refuses a segment whose header has any one section offset
 * changed, naming that offset, and takes it again once it is put back.
 *
 * Segments are named after this process's pid and none is left behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"

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
						 s == SSEMU_SEC_BUFS ?
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_table),
		cmocka_unit_test(test_layout_header),
		cmocka_unit_test(test_attach_refuses_each_offset),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
