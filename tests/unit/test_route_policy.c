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

/* A choice to make: policy @name's for a packet from @src to @dst
 * (global-link copy @copy, @ordered or not, the class's @bias), the
 * minimal first hop loaded with @min_load and its neighbour's queue
 * @min_nb, every other port idle, the switch's random stream seeded with
 * @seed. */
struct pick {
	const char *name;
	uint64_t src, dst;
	uint16_t copy;
	bool ordered;
	uint64_t seed;
	uint32_t min_load, min_nb;
	int bias;
};

static struct ssemu_pkt choose(struct fx *f, const struct pick *k,
			       uint16_t *path)
{
	struct ssemu_pkt p;
	uint32_t minport;

	fx_init(f, k->src);
	ssemu_rng_seed(&f->rng, k->seed, 1);
	f->v.ordered = k->ordered;
	f->v.bias = k->bias;
	minport = ssemu_topo_min_port(&f->t, f->v.sw, k->dst, k->copy);
	f->l.port[minport] = k->min_load;
	f->l.nb[minport] = k->min_nb;
	p = pkt_to(k->dst, k->copy);
	route(k->name)->choose(&f->v, &p, path);
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
	struct ssemu_pkt p = choose(&f, &(struct pick){
		.name = "adaptive", .src = 1, .dst = dst, .seed = 7,
		.min_load = 1000 }, &path);

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
	struct ssemu_pkt p = choose(&f, &(struct pick){
		.name = "ugal", .src = 0, .dst = 4 * 4 * 3, .seed = 7,
		.min_load = 1000 }, &path);

	(void)state;
	assert_int_equal(f.l.asked, 2);
	assert_int_not_equal(p.via, 0);
}

/* The minimal path's neighbour is congested, the source's queues are
 * not: only "adaptive-nb" sees it and goes around. */
static void test_neighbours(void **state)
{
	struct pick k = { .name = "adaptive", .src = 2, .dst = 4 * 4 * 6 + 1,
			  .seed = 7, .min_nb = 1000 };
	struct fx f;
	struct ssemu_pkt p;
	uint16_t path = 0;

	(void)state;
	p = choose(&f, &k, &path);
	assert_int_equal(p.via, 0);
	assert_int_equal(f.l.nb_asked, 0);
	k.name = "adaptive-nb";
	p = choose(&f, &k, &path);
	assert_int_not_equal(p.via, 0);
	assert_int_equal(f.l.nb_asked, 4);
}

/* The routing bias favours minimal paths: a moderate queue on the
 * minimal port moves an unbiased class, not one biased toward minimal.
 * Minimal (3 hops): (6 + 1) * 4 * 8 = 224; around: 1 * 6 * (8 + bias). */
static void test_bias(void **state)
{
	struct pick k = { .name = "adaptive", .src = 0, .dst = 4 * 4 * 4,
			  .seed = 7, .min_load = 6 };
	struct fx f;
	struct ssemu_pkt p;
	uint16_t path = 0;

	(void)state;
	p = choose(&f, &k, &path);
	assert_int_not_equal(p.via, 0);
	k.bias = 40;
	p = choose(&f, &k, &path);
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

		p = choose(&f, &(struct pick){ .name = "adaptive", .src = 3,
				.dst = dst, .copy = 11, .ordered = true,
				.seed = 100 + k, .min_load = 1000 }, &path);
		assert_int_not_equal(p.via, 0);
		assert_int_equal(p.copy, 11);
		p = choose(&f, &(struct pick){ .name = "adaptive", .src = 3,
				.dst = dst, .copy = 11, .seed = 100 + k,
				.min_load = 1000 }, &path);
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
	struct ssemu_pkt p = choose(&f, &(struct pick){
		.name = "adaptive", .src = 0, .dst = 4 * 3 + 1, .seed = 7,
		.min_load = 1000 }, &path);

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
