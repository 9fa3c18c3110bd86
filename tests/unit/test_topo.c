/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the Dragonfly arithmetic (emu/ssemu_topo.c): switch, endpoint
 * and port counts of every preset up to the 279,040-endpoint "full" system
 * (which must cost no memory), port kinds, peer symmetry of every port,
 * global link copies between groups, minimal paths of at most three
 * switch-to-switch hops for every endpoint pair and every copy (walked port
 * by port, not just counted), and the shapes ssemu_topo_init refuses.
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_topo.h"

/* Small deterministic PRNG for sampling (xorshift64*). */
static uint64_t test_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* A preset's shape with @l links between every two switches of a group. */
static void topo_of_links(const char *preset, uint32_t l,
			  struct ssemu_topo *t)
{
	struct ssemu_config cfg;
	char err[256] = "";

	assert_int_equal(ssemu_config_preset(preset, &cfg), 0);
	cfg.topo.local_links_per_pair = l;
	if (ssemu_topo_init(t, &cfg.topo, err, sizeof(err)))
		fail_msg("preset %s, %u local links: %s", preset, l, err);
	assert_int_equal(t->l, l ? l : 1);
}

static void topo_of(const char *preset, struct ssemu_topo *t)
{
	topo_of_links(preset, 1, t);
}

struct expect {
	const char *preset;
	uint32_t g, a, p, h;
	uint32_t nswitches, radix;
	uint64_t nendpoints;
};

static const struct expect expected[] = {
	{ "switch", 1, 1, 16, 0, 1, 16, 16 },
	{ "2switch", 1, 2, 16, 0, 2, 17, 32 },
	{ "2group", 2, 2, 16, 1, 4, 18, 64 },
	{ "malbec", 4, 8, 16, 4, 32, 27, 512 },
	{ "shandy", 8, 8, 16, 4, 64, 27, 1024 },
	{ "full", 545, 32, 16, 17, 17440, 64, 279040 },
};

static const struct expect *expect_of(const char *preset)
{
	size_t i;

	for (i = 0; i < sizeof(expected) / sizeof(expected[0]); i++)
		if (!strcmp(expected[i].preset, preset))
			return &expected[i];
	return NULL;
}

static void test_topo_preset_counts(void **state)
{
	const char *const *name;
	unsigned n = 0;

	for (name = ssemu_config_preset_names(); *name; name++) {
		const struct expect *e = expect_of(*name);
		struct ssemu_config cfg;
		struct ssemu_topo t;

		if (!e)
			fail_msg("preset %s: no expected counts", *name);
		topo_of(*name, &t);
		assert_int_equal(t.g, e->g);
		assert_int_equal(t.a, e->a);
		assert_int_equal(t.p, e->p);
		assert_int_equal(t.h, e->h);
		assert_int_equal(t.nswitches, e->nswitches);
		assert_int_equal(t.radix, e->radix);
		assert_true(t.radix <= SSEMU_RADIX);
		assert_true(t.nendpoints == e->nendpoints);
		assert_int_equal(ssemu_config_preset(*name, &cfg), 0);
		assert_true(ssemu_config_nports(&cfg) == e->nendpoints);
		n++;
	}
	assert_int_equal(n, sizeof(expected) / sizeof(expected[0]));
}

/* The full system: 545 groups, radix 64, arithmetic only. */
static void test_topo_full_scale_no_allocation(void **state)
{
	struct ssemu_config cfg;
	struct mallinfo2 before, after;
	struct ssemu_topo t;
	struct ssemu_peer peer;
	uint64_t rng = 7, acc = 0;
	char err[256];
	unsigned i;

	assert_int_equal(ssemu_config_preset("full", &cfg), 0);
	before = mallinfo2();
	assert_int_equal(ssemu_topo_init(&t, &cfg.topo, err, sizeof(err)), 0);
	for (i = 0; i < 10000; i++) {
		uint64_t src = test_rng_next(&rng) % t.nendpoints;
		uint64_t dst = test_rng_next(&rng) % t.nendpoints;
		uint32_t sw = (uint32_t)(test_rng_next(&rng) % t.nswitches);

		ssemu_topo_peer(&t, sw, (uint32_t)(i % t.radix), &peer);
		acc += peer.sw + ssemu_topo_min_hops(&t, src, dst, i);
		acc += ssemu_topo_ncopies(&t, sw / t.a, (uint32_t)(dst /
					  t.p / t.a));
	}
	after = mallinfo2();
	assert_true(acc > 0);
	/* No heap growth and no mmapped chunks for a 279,040-endpoint
	 * description: everything is computed. */
	assert_true(after.uordblks == before.uordblks);
	assert_true(after.hblkhd == before.hblkhd);
	assert_true(sizeof(struct ssemu_topo) <= 64);
	assert_int_equal(t.g, 545);
	assert_int_equal(t.radix, 64);
	assert_true(t.nendpoints == 279040);
	assert_int_equal(ssemu_config_validate(&cfg, err, sizeof(err)), 0);
}

static void test_topo_port_kinds(void **state)
{
	const char *const *name;

	for (name = ssemu_config_preset_names(); *name; name++) {
		unsigned count[4] = { 0 };
		struct ssemu_topo t;
		uint32_t port;

		topo_of(*name, &t);
		for (port = 0; port < SSEMU_RADIX + 8; port++) {
			enum ssemu_port_kind k = ssemu_topo_port_kind(&t, port);
			enum ssemu_port_kind want =
				port < t.p ? SSEMU_PORT_ENDPOINT :
				port < t.p + t.l * (t.a - 1) ? SSEMU_PORT_LOCAL :
				port < t.radix ? SSEMU_PORT_GLOBAL :
						 SSEMU_PORT_NONE;

			if (k != want)
				fail_msg("%s: port %u is kind %d, want %d",
					 *name, port, k, want);
			count[k]++;
		}
		assert_int_equal(count[SSEMU_PORT_ENDPOINT], t.p);
		assert_int_equal(count[SSEMU_PORT_LOCAL], t.l * (t.a - 1));
		assert_int_equal(count[SSEMU_PORT_GLOBAL], t.h);
	}
}

/* Check one (sw, port): the far end is consistent and its peer is us.
 * Returns the peer kind. */
static enum ssemu_port_kind check_peer(const char *name,
				       const struct ssemu_topo *t, uint32_t sw,
				       uint32_t port)
{
	struct ssemu_peer peer, back;

	ssemu_topo_peer(t, sw, port, &peer);
	switch (ssemu_topo_port_kind(t, port)) {
	case SSEMU_PORT_ENDPOINT:
		if (peer.kind != SSEMU_PORT_ENDPOINT ||
		    peer.ep != (uint64_t)sw * t->p + port)
			fail_msg("%s: sw %u port %u: endpoint %llu kind %d",
				 name, sw, port, (unsigned long long)peer.ep,
				 peer.kind);
		assert_int_equal(ssemu_topo_ep_switch(t, peer.ep), sw);
		return peer.kind;
	case SSEMU_PORT_LOCAL:
		if (peer.kind != SSEMU_PORT_LOCAL || peer.sw == sw ||
		    ssemu_topo_group(t, peer.sw) != ssemu_topo_group(t, sw) ||
		    ssemu_topo_port_kind(t, peer.port) != SSEMU_PORT_LOCAL)
			fail_msg("%s: sw %u local port %u -> sw %u port %u "
				 "kind %d", name, sw, port, peer.sw, peer.port,
				 peer.kind);
		break;
	case SSEMU_PORT_GLOBAL:
		if (peer.kind == SSEMU_PORT_NONE)
			return SSEMU_PORT_NONE;	/* unconnected spare */
		if (peer.kind != SSEMU_PORT_GLOBAL || peer.sw >= t->nswitches ||
		    ssemu_topo_group(t, peer.sw) == ssemu_topo_group(t, sw) ||
		    ssemu_topo_port_kind(t, peer.port) != SSEMU_PORT_GLOBAL)
			fail_msg("%s: sw %u global port %u -> sw %u port %u "
				 "kind %d", name, sw, port, peer.sw, peer.port,
				 peer.kind);
		break;
	default:
		if (peer.kind != SSEMU_PORT_NONE)
			fail_msg("%s: sw %u port %u beyond the radix has a "
				 "peer", name, sw, port);
		return SSEMU_PORT_NONE;
	}
	ssemu_topo_peer(t, peer.sw, peer.port, &back);
	if (back.kind != peer.kind || back.sw != sw || back.port != port)
		fail_msg("%s: sw %u port %u -> sw %u port %u -> sw %u port %u",
			 name, sw, port, peer.sw, peer.port, back.sw,
			 back.port);
	return peer.kind;
}

static void peer_symmetry_all(const char *name, uint32_t l)
{
	struct ssemu_topo t;
	uint32_t sw, port, *links;
	uint64_t connected = 0;

	topo_of_links(name, l, &t);
	/* links[g1 * g + g2]: global links from group g1 to g2 */
	links = calloc((size_t)t.g * t.g, sizeof(*links));
	assert_non_null(links);
	for (sw = 0; sw < t.nswitches; sw++) {
		uint32_t seen_local[SSEMU_RADIX] = { 0 }, i;

		for (port = 0; port < SSEMU_RADIX; port++) {
			enum ssemu_port_kind k = check_peer(name, &t, sw, port);
			struct ssemu_peer peer;

			ssemu_topo_peer(&t, sw, port, &peer);
			if (k == SSEMU_PORT_LOCAL) {
				/* link c of a pair lands on link c of the
				 * pair at the other end */
				assert_int_equal((peer.port - t.p) / (t.a - 1),
						 (port - t.p) / (t.a - 1));
				seen_local[peer.sw % t.a]++;
			} else if (k == SSEMU_PORT_GLOBAL) {
				links[ssemu_topo_group(&t, sw) * t.g +
				      ssemu_topo_group(&t, peer.sw)]++;
				connected++;
			}
		}
		/* each other switch of the group l times, itself never */
		for (i = 0; i < t.a; i++)
			assert_int_equal(seen_local[i],
					 i == sw % t.a ? 0 : t.l);
	}
	/* Every pair of groups is joined by exactly ncopies links, the same
	 * number both ways. */
	for (uint32_t g1 = 0; g1 < t.g; g1++) {
		for (uint32_t g2 = 0; g2 < t.g; g2++) {
			uint32_t n = ssemu_topo_ncopies(&t, g1, g2);

			if (g1 == g2) {
				assert_int_equal(n, 0);
				assert_int_equal(links[g1 * t.g + g2], 0);
				continue;
			}
			if (n < 1 || n != links[g1 * t.g + g2] ||
			    n != ssemu_topo_ncopies(&t, g2, g1))
				fail_msg("%s: groups %u->%u: ncopies %u/%u, %u "
					 "links", name, g1, g2, n,
					 ssemu_topo_ncopies(&t, g2, g1),
					 links[g1 * t.g + g2]);
		}
	}
	if (t.g > 1)
		assert_true(connected >= (uint64_t)t.g * (t.g - 1));
	free(links);
}

static void test_topo_peer_symmetry_small(void **state)
{
	peer_symmetry_all("switch", 1);
	peer_symmetry_all("2switch", 1);
	peer_symmetry_all("2group", 1);
	peer_symmetry_all("2switch", 5);
	peer_symmetry_all("2group", 0);		/* 0 means one link */
}

static void test_topo_peer_symmetry_malbec_shandy(void **state)
{
	peer_symmetry_all("malbec", 1);
	peer_symmetry_all("shandy", 1);
	peer_symmetry_all("malbec", 3);
	peer_symmetry_all("shandy", 6);		/* 16 + 42 + 4: radix 62 */
}

static void test_topo_peer_symmetry_full_sample(void **state)
{
	struct ssemu_topo t;
	uint64_t rng = 0x5eed;
	uint32_t i, port, sw, globals = 0;
	static const uint32_t corners[] = { 0, 31, 32, 17407, 17408, 17439 };

	topo_of("full", &t);
	/* whole switches at group boundaries */
	for (i = 0; i < sizeof(corners) / sizeof(corners[0]); i++)
		for (port = 0; port < SSEMU_RADIX; port++)
			if (check_peer("full", &t, corners[i], port) ==
			    SSEMU_PORT_GLOBAL)
				globals++;
	/* all 17 global ports of every switch are connected: a*h = g-1 */
	assert_int_equal(globals, 6 * 17);
	for (i = 0; i < 50000; i++) {
		sw = (uint32_t)(test_rng_next(&rng) % t.nswitches);
		port = (uint32_t)(test_rng_next(&rng) % t.radix);
		assert_int_not_equal(check_peer("full", &t, sw, port),
				     SSEMU_PORT_NONE);
	}
}

static void test_topo_ncopies(void **state)
{
	static const char *const names[] = { "2group", "malbec", "shandy" };
	struct ssemu_topo t;
	uint64_t rng = 99;
	uint32_t i, g1, g2, sum;

	for (i = 0; i < 3; i++) {
		topo_of(names[i], &t);
		for (g1 = 0; g1 < t.g; g1++) {
			sum = 0;
			for (g2 = 0; g2 < t.g; g2++) {
				uint32_t n = ssemu_topo_ncopies(&t, g1, g2);

				assert_int_equal(n, ssemu_topo_ncopies(&t, g2,
								       g1));
				if (g1 == g2)
					assert_int_equal(n, 0);
				else
					assert_true(n >= 1);
				sum += n;
			}
			/* no more links than global ports in the group */
			assert_true(sum <= t.a * t.h);
			assert_true(sum >= t.g - 1);
		}
	}
	/* 2group: both global links join the two groups. */
	topo_of("2group", &t);
	assert_int_equal(ssemu_topo_ncopies(&t, 0, 1), 2);
	/* full: exactly one link between every pair of groups. */
	topo_of("full", &t);
	for (i = 0; i < 20000; i++) {
		g1 = (uint32_t)(test_rng_next(&rng) % t.g);
		g2 = (uint32_t)(test_rng_next(&rng) % t.g);
		assert_int_equal(ssemu_topo_ncopies(&t, g1, g2), g1 != g2);
	}
	/* a single group has nothing to copy */
	topo_of("2switch", &t);
	assert_int_equal(ssemu_topo_ncopies(&t, 0, 0), 0);
}

/*
 * Walk the minimal path from @src to @dst on copy @copy, port by port.
 * Checks that it reaches exactly @dst, uses connected ports only, never
 * more than one global link and at most three switch-to-switch hops, and
 * returns the hops (and, through @gl, the global link used, or UINT64_MAX).
 */
static uint32_t walk(const char *name, const struct ssemu_topo *t,
		     uint64_t src, uint64_t dst, uint32_t copy, uint64_t *gl)
{
	uint32_t sw = ssemu_topo_ep_switch(t, src), hops = 0, globals = 0;
	uint32_t port;
	struct ssemu_peer peer;

	*gl = UINT64_MAX;
	for (;;) {
		port = ssemu_topo_min_port(t, sw, dst, copy);
		if (port >= t->radix)
			fail_msg("%s: %llu->%llu copy %u: sw %u picks port %u",
				 name, (unsigned long long)src,
				 (unsigned long long)dst, copy, sw, port);
		ssemu_topo_peer(t, sw, port, &peer);
		if (peer.kind == SSEMU_PORT_ENDPOINT) {
			if (peer.ep != dst)
				fail_msg("%s: %llu->%llu copy %u ends at %llu",
					 name, (unsigned long long)src,
					 (unsigned long long)dst, copy,
					 (unsigned long long)peer.ep);
			return hops;
		}
		if (peer.kind == SSEMU_PORT_NONE)
			fail_msg("%s: %llu->%llu copy %u: sw %u port %u is "
				 "unconnected", name, (unsigned long long)src,
				 (unsigned long long)dst, copy, sw, port);
		if (peer.kind == SSEMU_PORT_GLOBAL) {
			globals++;
			*gl = (uint64_t)sw * SSEMU_RADIX + port;
		}
		sw = peer.sw;
		if (++hops > 3 || globals > 1)
			fail_msg("%s: %llu->%llu copy %u: %u hops, %u global",
				 name, (unsigned long long)src,
				 (unsigned long long)dst, copy, hops, globals);
	}
}

static uint32_t expected_hops_max(const struct ssemu_topo *t, uint64_t src,
				  uint64_t dst)
{
	uint32_t s = ssemu_topo_ep_switch(t, src);
	uint32_t d = ssemu_topo_ep_switch(t, dst);

	if (s == d)
		return 0;
	if (ssemu_topo_group(t, s) == ssemu_topo_group(t, d))
		return 1;
	return 3;
}

static void min_paths_all(const char *name, uint32_t l)
{
	struct ssemu_topo t;
	uint64_t src, dst, gl, *used;
	uint32_t copy, n, hops, maxhops = 0, k;

	topo_of_links(name, l, &t);
	used = calloc(64, sizeof(*used));
	assert_non_null(used);
	for (src = 0; src < t.nendpoints; src++) {
		for (dst = 0; dst < t.nendpoints; dst++) {
			uint32_t gs = ssemu_topo_group(&t,
				ssemu_topo_ep_switch(&t, src));
			uint32_t gd = ssemu_topo_group(&t,
				ssemu_topo_ep_switch(&t, dst));

			n = gs == gd ? t.l : ssemu_topo_ncopies(&t, gs, gd);
			assert_true(n >= 1 && n <= 64);
			for (copy = 0; copy < n; copy++) {
				hops = walk(name, &t, src, dst, copy, &gl);
				assert_int_equal(hops, ssemu_topo_min_hops(
					&t, src, dst, copy));
				assert_true(hops <= expected_hops_max(&t, src,
								      dst));
				if (gs != gd) {
					assert_true(hops >= 1 &&
						    gl != UINT64_MAX);
					used[copy] = gl;
				} else {
					assert_true(gl == UINT64_MAX);
				}
				if (hops > maxhops)
					maxhops = hops;
			}
			/* distinct copies leave on distinct global links */
			if (gs != gd && (src % 61) == 0)
				for (copy = 0; copy < n; copy++)
					for (k = copy + 1; k < n; k++)
						assert_true(used[copy] !=
							    used[k]);
			/* copies wrap around modulo their number */
			if (gs != gd && (dst % 37) == 0) {
				walk(name, &t, src, dst, 0, &gl);
				used[0] = gl;
				walk(name, &t, src, dst, n, &gl);
				assert_true(used[0] == gl);
			}
		}
	}
	assert_true(maxhops <= 3);
	if (t.g > 1)
		assert_true(maxhops >= 1);
	free(used);
}

static void test_topo_min_hops_2group(void **state)
{
	min_paths_all("2group", 1);
	min_paths_all("2group", 3);
}

static void test_topo_min_hops_malbec(void **state)
{
	min_paths_all("malbec", 1);
}

static void test_topo_min_hops_shandy(void **state)
{
	min_paths_all("shandy", 1);
}

/*
 * Parallel local links: a hop inside a group takes link (copy mod l) of
 * the pair, so l copies spread over l distinct ports, and a path that
 * leaves the group still crosses one global link at most three hops.
 */
static void test_topo_parallel_local_links(void **state)
{
	struct ssemu_topo t;
	uint32_t sw, dsw, c, port, seen;
	uint64_t gl;

	topo_of_links("malbec", 3, &t);
	assert_int_equal(t.radix, 16 + 3 * 7 + 4);
	assert_int_equal(t.gbase, 16 + 3 * 7);
	for (sw = 0; sw < t.a; sw++) {
		for (dsw = 0; dsw < t.a; dsw++) {
			if (dsw == sw)
				continue;
			seen = 0;
			for (c = 0; c < 2 * t.l; c++) {
				port = ssemu_topo_min_port(&t, sw,
							   (uint64_t)dsw * t.p,
							   c);
				assert_int_equal(ssemu_topo_port_kind(&t, port),
						 SSEMU_PORT_LOCAL);
				/* copies wrap modulo l */
				assert_int_equal(port, ssemu_topo_min_port(
					&t, sw, (uint64_t)dsw * t.p, c % t.l));
				seen |= 1u << ((port - t.p) / (t.a - 1));
			}
			assert_int_equal(seen, (1u << t.l) - 1);
		}
	}
	min_paths_all("malbec", 3);
	/* and the global ports moved up by the extra local ones */
	for (c = 0; c < 64; c++) {
		walk("malbec/3", &t, 5, 300, c, &gl);
		assert_true(gl != UINT64_MAX);
		assert_true(gl % SSEMU_RADIX >= t.gbase);
	}
}

static void test_topo_min_hops_full_sample(void **state)
{
	struct ssemu_topo t;
	uint64_t rng = 4242, src, dst, gl;
	unsigned i, hist[4] = { 0 };
	uint32_t hops;

	topo_of("full", &t);
	for (i = 0; i < 30000; i++) {
		src = test_rng_next(&rng) % t.nendpoints;
		dst = test_rng_next(&rng) % t.nendpoints;
		hops = walk("full", &t, src, dst, (uint32_t)i, &gl);
		assert_int_equal(hops, ssemu_topo_min_hops(&t, src, dst,
							   (uint32_t)i));
		hist[hops]++;
	}
	/* the extremes of the endpoint range */
	walk("full", &t, 0, t.nendpoints - 1, 0, &gl);
	walk("full", &t, t.nendpoints - 1, 0, 0, &gl);
	/* most random pairs are in different groups: 2 or 3 hops */
	assert_true(hist[3] > 0 && hist[2] > 0);
}

struct bad_shape {
	struct ssemu_topo_params p;
	const char *msg;	/* expected in the error */
};

static void test_topo_init_rejects_bad_shapes(void **state)
{
	static const struct bad_shape bad[] = {
		{ { 0, 2, 16, 1 }, "at least 1" },
		{ { 2, 0, 16, 1 }, "at least 1" },
		{ { 2, 2, 0, 1 }, "at least 1" },
		{ { 2, 20, 40, 10 }, "radix" },	  /* 40 + 19 + 10 = 69 */
		{ { 545, 32, 16, 18 }, "radix" }, /* 65 ports */
		{ { 1, 1, 65, 0 }, "radix" },
		{ { 10, 2, 16, 4 }, "global" },	  /* 8 links for 9 groups */
		{ { 546, 32, 16, 17 }, "global" },
		{ { 3, 2, 16, 0 }, "global" },
		{ { 4, 8, 16, 4, 7 }, "radix" },  /* 16 + 49 + 4 = 69 */
		{ { 1, 2, 16, 0, 49 }, "radix" }, /* 16 + 49 = 65 */
	};
	struct ssemu_topo t;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(err, 0, sizeof(err));
		if (ssemu_topo_init(&t, &bad[i].p, err, sizeof(err)) !=
		    -EINVAL)
			fail_msg("shape %u/%u/%u/%u accepted",
				 bad[i].p.groups, bad[i].p.switches_per_group,
				 bad[i].p.endpoints_per_switch,
				 bad[i].p.globals_per_switch);
		if (!err[0] || !strstr(err, bad[i].msg))
			fail_msg("shape %zu: message '%s' lacks '%s'", i, err,
				 bad[i].msg);
	}
}

static void test_topo_init_accepts_edges(void **state)
{
	static const struct ssemu_topo_params good[] = {
		{ 1, 1, 1, 0 },		/* one switch, one endpoint */
		{ 1, 1, 64, 0 },	/* radix exactly 64 */
		{ 545, 32, 16, 17 },	/* a*h == g-1 */
		{ 2, 1, 16, 1 },	/* one switch per group */
		{ 33, 1, 16, 32 },	/* one switch, one link per group */
	};
	struct ssemu_topo t;
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (ssemu_topo_init(&t, &good[i], err, sizeof(err)))
			fail_msg("shape %zu refused: %s", i, err);
		assert_true(t.radix <= SSEMU_RADIX);
		assert_true(t.nendpoints == (uint64_t)good[i].groups *
					    good[i].switches_per_group *
					    good[i].endpoints_per_switch);
	}
	/* a single group has no global ports whatever h says */
	{
		struct ssemu_topo_params p = { 1, 4, 16, 2 };

		assert_int_equal(ssemu_topo_init(&t, &p, err, sizeof(err)), 0);
		assert_int_equal(t.h, 0);
		assert_int_equal(t.radix, 19);
	}
	/* the one-switch-per-group shape routes everywhere in one hop */
	{
		struct ssemu_topo_params p = { 33, 1, 16, 32 };
		uint64_t gl;

		assert_int_equal(ssemu_topo_init(&t, &p, err, sizeof(err)), 0);
		for (uint64_t s = 0; s < t.nendpoints; s += 7)
			for (uint64_t d = 0; d < t.nendpoints; d += 5)
				assert_true(walk("33x1", &t, s, d, 0, &gl) ==
					    (s / 16 != d / 16));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_topo_preset_counts),
		cmocka_unit_test(test_topo_full_scale_no_allocation),
		cmocka_unit_test(test_topo_port_kinds),
		cmocka_unit_test(test_topo_peer_symmetry_small),
		cmocka_unit_test(test_topo_peer_symmetry_malbec_shandy),
		cmocka_unit_test(test_topo_peer_symmetry_full_sample),
		cmocka_unit_test(test_topo_ncopies),
		cmocka_unit_test(test_topo_min_hops_2group),
		cmocka_unit_test(test_topo_min_hops_malbec),
		cmocka_unit_test(test_topo_min_hops_shandy),
		cmocka_unit_test(test_topo_min_hops_full_sample),
		cmocka_unit_test(test_topo_parallel_local_links),
		cmocka_unit_test(test_topo_init_rejects_bad_shapes),
		cmocka_unit_test(test_topo_init_accepts_edges),
	};

	return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
