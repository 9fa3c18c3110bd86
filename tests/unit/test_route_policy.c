/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Routing policies (emu/ssemu_route.c) on their own: a Dragonfly topology
 * and a table of output loads stand for the source switch (no fabric); a
 * packet's path is chosen under a given congestion view and checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ssemu_policy.h"

/* What the source switch reports: a load per output, a neighbour's queue
 * per output, and how often it was asked. */
struct loads {
	uint32_t port[SSEMU_RADIX];
	uint32_t nb[SSEMU_RADIX];
	unsigned asked, nb_asked;
};

static uint32_t load_of(void *arg, uint32_t port)
{
	struct loads *l = arg;

	assert_true(port < SSEMU_RADIX);
	l->asked++;
	return l->port[port];
}

static uint32_t nb_of(void *arg, uint32_t port, uint64_t target,
		      uint16_t copy)
{
	struct loads *l = arg;

	(void)target;
	(void)copy;
	assert_true(port < SSEMU_RADIX);
	l->nb_asked++;
	return l->nb[port];
}

struct fx {
	struct ssemu_topo t;
	struct ssemu_rng rng;
	struct loads l;
	struct ssemu_route_view v;
};

/* 8 groups of 4 switches, 4 endpoints each; the source is endpoint @src. */
static void fx_init(struct fx *f, uint64_t src)
{
	struct ssemu_topo_params p = { .groups = 8, .switches_per_group = 4,
				       .endpoints_per_switch = 4,
				       .globals_per_switch = 2 };
	char err[128];

	memset(f, 0, sizeof(*f));
	assert_int_equal(ssemu_topo_init(&f->t, &p, err, sizeof(err)), 0);
	ssemu_rng_seed(&f->rng, 7, 0x100000000ULL);
	f->v = (struct ssemu_route_view){
		.topo = &f->t, .rng = &f->rng,
		.sw = ssemu_topo_ep_switch(&f->t, src), .src_port = src,
		.bias = 0, .ordered = false, .load = load_of, .nb_load = nb_of,
		.arg = &f->l,
	};
}

static const struct ssemu_route_ops *route(const char *name)
{
	int i = ssemu_route_index(name);

	assert_true(i >= 0);
	assert_string_equal(ssemu_route_table[i].name, name);
	return &ssemu_route_table[i];
}

static struct ssemu_pkt pkt_to(uint64_t dst, uint16_t copy)
{
	struct ssemu_pkt p;

	memset(&p, 0, sizeof(p));
	p.type = SSEMU_PKT_DATA;
	p.dst_port = (uint32_t)dst;
	p.copy = copy;
	p.via = 0xffff;	/* whatever it was: the chooser sets it */
	return p;
}

/* Follow @pkt hop by hop from @sw with the policy's select: the
 * switches it passes, up to @max; returns the last (the destination's). */
static uint32_t walk(const struct fx *f, const struct ssemu_route_ops *ro,
		     uint32_t sw, struct ssemu_pkt *pkt, uint32_t *hops)
{
	struct ssemu_peer pe;
	uint32_t port;

	for (*hops = 0; *hops < 8; (*hops)++) {
		port = ro->select(&f->t, sw, pkt);
		ssemu_topo_peer(&f->t, sw, port, &pe);
		if (pe.kind == SSEMU_PORT_ENDPOINT) {
			assert_int_equal(pe.ep, pkt->dst_port);
			return sw;
		}
		assert_true(pe.kind == SSEMU_PORT_LOCAL ||
			    pe.kind == SSEMU_PORT_GLOBAL);
		sw = pe.sw;
	}
	fail_msg("no endpoint after 8 hops");
	return 0;
}

/* @name's choice for a packet from @src to @dst (global-link copy @copy,
 * @ordered or not) when the minimal first hop is congested and every
 * other port idle, the switch's random stream seeded with @seed. */
static struct ssemu_pkt choose_congested(struct fx *f, const char *name,
					 uint64_t src, uint64_t dst,
					 uint16_t copy, bool ordered,
					 uint64_t seed, uint16_t *path)
{
	struct ssemu_pkt p;

	fx_init(f, src);
	ssemu_rng_seed(&f->rng, seed, 1);
	f->v.ordered = ordered;
	f->l.port[ssemu_topo_min_port(&f->t, f->v.sw, dst, copy)] = 1000;
	p = pkt_to(dst, copy);
	route(name)->choose(&f->v, &p, path);
	return p;
}

/* "minimal" has no chooser; its select is the topology's minimal port. */
static void test_minimal(void **state)
{
	const struct ssemu_route_ops *ro = route("minimal");
	struct fx f;
	struct ssemu_pkt p;
	uint32_t hops;

	(void)state;
	fx_init(&f, 0);
	assert_null(ro->choose);
	p = pkt_to(100, 3);
	assert_int_equal(ro->select(&f.t, 0, &p),
			 ssemu_topo_min_port(&f.t, 0, 100, 3));
	walk(&f, ro, 0, &p, &hops);
	assert_true(hops <= 3);
}

/* Nothing queued anywhere: every adaptive policy goes minimally. */
static void test_idle_is_minimal(void **state)
{
	static const char *const names[] = { "ugal", "adaptive",
					     "adaptive-nb" };
	unsigned i, k;

	(void)state;
	for (i = 0; i < 3; i++) {
		const struct ssemu_route_ops *ro = route(names[i]);
		struct fx f;
		uint16_t path = 99;

		fx_init(&f, 5);
		for (k = 0; k < 50; k++) {
			struct ssemu_pkt p = pkt_to(64 + k, 1);

			ro->choose(&f.v, &p, &path);
			assert_int_equal(p.via, 0);
			assert_int_equal(path, 0);
		}
	}
}

/* The minimal first hop congested, the others idle: the packet goes
 * through an intermediate group other than both ends, and gets there by
 * select and then to its destination. */
static void test_congested_goes_around(void **state)
{
	struct fx f;
	uint16_t path = 0;
	uint32_t sg, dg, hops, last;
	uint64_t dst = 4 * 4 * 5 + 2;	/* group 5, from group 0 */
	struct ssemu_pkt p = choose_congested(&f, "adaptive", 1, dst, 0,
					      false, 7, &path);

	(void)state;
	sg = ssemu_topo_group(&f.t, f.v.sw);
	dg = ssemu_topo_group(&f.t, ssemu_topo_ep_switch(&f.t, dst));
	assert_int_not_equal(p.via, 0);
	assert_false(p.via & SSEMU_VIA_SWITCH);
	assert_int_not_equal(p.via - 1, sg);
	assert_int_not_equal(p.via - 1, dg);
	assert_true(p.via - 1u < f.t.g);
	assert_int_equal(path, p.via);
	/* the minimal port and three candidates were weighed */
	assert_int_equal(f.l.asked, 4);
	assert_int_equal(f.l.nb_asked, 0);
	last = walk(&f, route("adaptive"), f.v.sw, &p, &hops);
	assert_int_equal(last, ssemu_topo_ep_switch(&f.t, dst));
	assert_int_equal(p.phase, 1);
	assert_true(hops > 2);
}

/* "ugal" weighs one candidate against the minimal path. */
static void test_ugal_one_candidate(void **state)
{
	struct fx f;
	uint16_t path = 0;
	struct ssemu_pkt p = choose_congested(&f, "ugal", 0, 4 * 4 * 3, 0,
					      false, 7, &path);

	(void)state;
	assert_int_equal(f.l.asked, 2);
	assert_int_not_equal(p.via, 0);
}

/* The minimal path's neighbour is congested, the source's queues are
 * not: only "adaptive-nb" sees it and goes around. */
static void test_neighbours(void **state)
{
	struct fx f;
	struct ssemu_pkt p;
	uint16_t path = 0;
	uint64_t dst = 4 * 4 * 6 + 1;
	uint32_t minport;

	(void)state;
	fx_init(&f, 2);
	minport = ssemu_topo_min_port(&f.t, f.v.sw, dst, 0);
	f.l.nb[minport] = 1000;
	p = pkt_to(dst, 0);
	route("adaptive")->choose(&f.v, &p, &path);
	assert_int_equal(p.via, 0);
	assert_int_equal(f.l.nb_asked, 0);

	fx_init(&f, 2);
	f.l.nb[minport] = 1000;
	p = pkt_to(dst, 0);
	route("adaptive-nb")->choose(&f.v, &p, &path);
	assert_int_not_equal(p.via, 0);
	assert_int_equal(f.l.nb_asked, 4);
}

/* The routing bias favours minimal paths: a moderate queue on the
 * minimal port moves an unbiased class, not one biased toward minimal. */
static void test_bias(void **state)
{
	const struct ssemu_route_ops *ro = route("adaptive");
	struct fx f;
	struct ssemu_pkt p;
	uint16_t path = 0;
	uint64_t dst = 4 * 4 * 4;
	uint32_t minport;

	(void)state;
	fx_init(&f, 0);
	minport = ssemu_topo_min_port(&f.t, f.v.sw, dst, 0);
	/* minimal (hmin 3): (6+1) * 4 * 8 = 224; around: 1 * 6 * (8 + b) */
	f.l.port[minport] = 6;
	p = pkt_to(dst, 0);
	ro->choose(&f.v, &p, &path);
	assert_int_not_equal(p.via, 0);

	fx_init(&f, 0);
	f.l.port[minport] = 6;
	f.v.bias = 40;
	p = pkt_to(dst, 0);
	ro->choose(&f.v, &p, &path);
	assert_int_equal(p.via, 0);
}

/* Ordered traffic keeps its copy of the global links (its pair's), so
 * its packets stay in one FIFO; unordered may spread. */
static void test_ordered_copy(void **state)
{
	uint64_t dst = 4 * 4 * 7 + 3;
	unsigned k, moved = 0;

	(void)state;
	for (k = 0; k < 20; k++) {
		struct fx f;
		struct ssemu_pkt p;
		uint16_t path = 0;

		p = choose_congested(&f, "adaptive", 3, dst, 11, true, 100 + k,
				     &path);
		assert_int_not_equal(p.via, 0);
		assert_int_equal(p.copy, 11);
		p = choose_congested(&f, "adaptive", 3, dst, 11, false,
				     100 + k, &path);
		assert_int_not_equal(p.via, 0);
		moved += p.copy != 11;
	}
	assert_true(moved > 10);
}

/* Inside a group: around the congested direct link through a third
 * switch of the group, local then local. */
static void test_local_detour(void **state)
{
	struct fx f;
	uint16_t path = 0;
	uint32_t isw, hops, last, sw0;
	/* from switch 0 to switch 3, group 0 */
	struct ssemu_pkt p = choose_congested(&f, "adaptive", 0, 4 * 3 + 1, 0,
					      false, 7, &path);

	(void)state;
	sw0 = f.v.sw;
	assert_true(p.via & SSEMU_VIA_SWITCH);
	isw = p.via & ~SSEMU_VIA_SWITCH;
	assert_int_equal(ssemu_topo_group(&f.t, isw), 0);
	assert_int_not_equal(isw, sw0);
	assert_int_not_equal(isw, 3);
	assert_int_equal(path, p.via);
	last = walk(&f, route("adaptive"), sw0, &p, &hops);
	assert_int_equal(last, 3);
	assert_int_equal(hops, 2);
}

static void test_registry(void **state)
{
	(void)state;
	assert_int_equal(ssemu_route_index("minimal"), 0);
	assert_true(ssemu_route_index("adaptive-nb") > 0);
	assert_int_equal(ssemu_route_index("valiant"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal),
		cmocka_unit_test(test_idle_is_minimal),
		cmocka_unit_test(test_congested_goes_around),
		cmocka_unit_test(test_ugal_one_candidate),
		cmocka_unit_test(test_neighbours),
		cmocka_unit_test(test_bias),
		cmocka_unit_test(test_ordered_copy),
		cmocka_unit_test(test_local_detour),
		cmocka_unit_test(test_registry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
