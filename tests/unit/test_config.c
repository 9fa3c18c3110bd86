/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the fabric configuration (emu/ssemu_config.c and
 * emu/ssemu_config_file.c): every preset validates, unknown presets are
 * -ENOENT, validation catches each bad field with a message that says what
 * is wrong, the hash is equal for equal configurations and changes with
 * every field that shapes the fabric, and configuration files (written to
 * temporary files here) override presets, parse traffic-class lists and
 * report unknown keys, bad types, bad ranges and syntax errors as
 * "file:line: key: problem" without touching the caller's configuration.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_topo.h"

/* ------------------------------------------------------------------ */
/* Presets and validation                                               */
/* ------------------------------------------------------------------ */

static void test_config_presets_valid(void **state)
{
	static const char *const want[] = {
		"switch", "2switch", "2group", "malbec", "shandy", "full",
	};
	const char *const *names = ssemu_config_preset_names();
	struct ssemu_config cfg;
	char err[256];
	size_t i, n = 0;

	for (i = 0; names[i]; i++) {
		memset(&cfg, 0x5a, sizeof(cfg));
		assert_int_equal(ssemu_config_preset(names[i], &cfg), 0);
		assert_string_equal(cfg.preset, names[i]);
		err[0] = 0;
		if (ssemu_config_validate(&cfg, err, sizeof(err)))
			fail_msg("preset %s invalid: %s", names[i], err);
		assert_true(ssemu_config_nports(&cfg) > 0);
		n++;
	}
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < n; i++)
		assert_string_equal(names[i], want[i]);

	/* the documented defaults of the "switch" preset */
	assert_int_equal(ssemu_config_preset("switch", &cfg), 0);
	assert_true(cfg.edge.rate_bps == 200000000000ULL);
	assert_true(cfg.edge.delay == 5 * SSEMU_PS_PER_NS);
	assert_true(cfg.global.delay == 100 * SSEMU_PS_PER_NS);
	assert_int_equal(cfg.mtu, 2048);
	assert_int_equal(cfg.pkt_overhead, 64);
	assert_int_equal(cfg.port_buf_pkts, 32);
	assert_true(cfg.sw_lat_mean == 350 * SSEMU_PS_PER_NS);
	assert_int_equal(cfg.nic_window, 64);
	assert_int_equal(cfg.ntclass, 4);
	assert_string_equal(cfg.tclass[cfg.default_tclass].name,
			    "BEST_EFFORT");
	assert_string_equal(cfg.tclass[1].name, "LOW_LATENCY");
	assert_int_equal(cfg.tclass[1].priority, 2);
	assert_int_equal(cfg.tclass[1].max_pct, 30);
	assert_string_equal(cfg.routing, "minimal");
	assert_string_equal(cfg.cc, "endpoint-pair");
	assert_string_equal(cfg.arb, "shares");
	assert_int_equal(cfg.clock, SSEMU_CLOCK_VIRTUAL);
	assert_true(ssemu_config_nports(&cfg) == 16);
	assert_int_equal(ssemu_config_preset("full", &cfg), 0);
	assert_true(ssemu_config_nports(&cfg) == 279040);
}

static void test_config_unknown_preset(void **state)
{
	struct ssemu_config cfg;

	assert_int_equal(ssemu_config_preset("nope", &cfg), -ENOENT);
	assert_int_equal(ssemu_config_preset("", &cfg), -ENOENT);
	assert_int_equal(ssemu_config_preset("Switch", &cfg), -ENOENT);
	assert_int_equal(ssemu_config_preset("switch2", &cfg), -ENOENT);
	assert_int_equal(ssemu_config_preset(NULL, &cfg), -ENOENT);
}

struct bad_field {
	const char *what;
	void (*mutate)(struct ssemu_config *c);
	const char *msg;	/* expected in the error message */
};

#define MUT(name, body) \
	static void mut_##name(struct ssemu_config *c) { body; }

MUT(min_sum, c->tclass[0].min_pct = 70)	/* 70 + 15 + 15 + 10 = 110 */
MUT(routing, snprintf(c->routing, sizeof(c->routing), "valiant-x"))
MUT(cc, snprintf(c->cc, sizeof(c->cc), "dcqcn-x"))
MUT(arb, snprintf(c->arb, sizeof(c->arb), "wfq-x"))
MUT(routing_empty, c->routing[0] = 0)
MUT(msgs_np2, c->msgs_per_ep = 100)
MUT(msgs_small, c->msgs_per_ep = 2)
MUT(msgs_big, c->msgs_per_ep = 131072)
MUT(mtu_small, c->mtu = 32)
MUT(mtu_big, c->mtu = 65537)
MUT(buf_zero, c->port_buf_pkts = 0)
MUT(lat_order, c->sw_lat_min = c->sw_lat_mean + 1)
MUT(lat_order2, c->sw_lat_max = c->sw_lat_mean - 1)
MUT(window_zero, c->nic_window = 0)
MUT(window_big, c->nic_window = 65536)
MUT(ntclass_zero, c->ntclass = 0)
MUT(ntclass_big, c->ntclass = SSEMU_MAX_TCLASS + 1)
MUT(default_tc, c->default_tclass = c->ntclass)
MUT(tc_noname, c->tclass[2].name[0] = 0)
MUT(tc_min_max, c->tclass[3].min_pct = 20; c->tclass[3].max_pct = 10)
MUT(tc_max_zero, c->tclass[0].min_pct = 0; c->tclass[0].max_pct = 0)
MUT(tc_max_101, c->tclass[0].max_pct = 101)
MUT(clock, c->clock = (enum ssemu_clock_mode)7)
MUT(dilation, c->clock = SSEMU_CLOCK_REALTIME; c->dilation = 0)
MUT(max_nics_zero, c->max_nics = 0)
MUT(max_nics_big, c->max_nics = (1u << 20) + 1)
MUT(max_pairs_big, c->max_pairs = (1u << 30) + 1)
MUT(max_sw_zero, c->max_switches = 0)
MUT(eps_zero, c->eps_per_nic = 0)
MUT(eps_big, c->eps_per_nic = 257)
MUT(bufs_big, c->bufs_per_ep = 65)
MUT(bufsize_small, c->buf_size = 100)
MUT(bufsize_big, c->buf_size = (1u << 24) + 1)
MUT(pkts_small, c->max_pkts = 8)
MUT(events_small, c->max_events = 10)
MUT(ev_ring_np2, c->ev_ring = 48)
MUT(ev_ring_small, c->ev_ring = 8)
MUT(ev_ring_big, c->ev_ring = 131072)
MUT(rate_edge, c->edge.rate_bps = 0)
MUT(rate_global, c->global.rate_bps = 0)
MUT(topo_radix, c->topo.endpoints_per_switch = 63)
MUT(topo_zero, c->topo.groups = 0)
MUT(topo_local_links, c->topo.local_links_per_pair = 48)
MUT(topo_globals, c->topo.groups = 3; c->topo.globals_per_switch = 0)
MUT(too_many_msgs,
	c->max_nics = 4096; c->eps_per_nic = 256; c->max_eps = 0;
	c->msgs_per_ep = 65536)
MUT(max_eps_big, c->max_eps = (1u << 20) + 1)
MUT(too_many_pool_msgs, c->max_eps = 65536; c->msgs_per_ep = 65536)

static const struct bad_field bad_fields[] = {
	{ "min shares > 100%", mut_min_sum, "110%" },
	{ "routing", mut_routing, "unknown routing algorithm 'valiant-x'" },
	{ "cc", mut_cc, "unknown congestion control 'dcqcn-x'" },
	{ "arb", mut_arb, "unknown arbitration 'wfq-x'" },
	{ "routing empty", mut_routing_empty, "routing" },
	{ "msgs_per_ep 100", mut_msgs_np2, "power of two" },
	{ "msgs_per_ep 2", mut_msgs_small, "msgs_per_ep 2" },
	{ "msgs_per_ep 2^17", mut_msgs_big, "msgs_per_ep" },
	{ "mtu 32", mut_mtu_small, "mtu 32" },
	{ "mtu 65537", mut_mtu_big, "mtu 65537" },
	{ "port_buf_pkts 0", mut_buf_zero, "port_buf_pkts" },
	{ "latency min > mean", mut_lat_order, "min <= mean <= max" },
	{ "latency max < mean", mut_lat_order2, "min <= mean <= max" },
	{ "nic_window 0", mut_window_zero, "nic_window" },
	{ "nic_window 65536", mut_window_big, "nic_window" },
	{ "ntclass 0", mut_ntclass_zero, "ntclass" },
	{ "ntclass 9", mut_ntclass_big, "ntclass" },
	{ "default_tclass", mut_default_tc, "default traffic class" },
	{ "class without name", mut_tc_noname, "no name" },
	{ "class min > max", mut_tc_min_max, "BEST_EFFORT" },
	{ "class max 0", mut_tc_max_zero, "DEDICATED_ACCESS" },
	{ "class max 101", mut_tc_max_101, "DEDICATED_ACCESS" },
	{ "clock", mut_clock, "clock" },
	{ "dilation 0", mut_dilation, "dilation" },
	{ "max_nics 0", mut_max_nics_zero, "max_nics" },
	{ "max_nics 2^20 + 1", mut_max_nics_big,
	  "max_nics 1048577 out of range [1, 1048576]" },
	{ "max_pairs 2^30 + 1", mut_max_pairs_big,
	  "max_pairs 1073741825 out of range" },
	{ "max_switches 0", mut_max_sw_zero, "max_switches" },
	{ "eps_per_nic 0", mut_eps_zero, "eps_per_nic" },
	{ "eps_per_nic 257", mut_eps_big, "eps_per_nic" },
	{ "max_eps 2^20 + 1", mut_max_eps_big, "max_eps 1048577" },
	{ "max_eps x msgs_per_ep", mut_too_many_pool_msgs,
	  "max_eps x msgs_per_ep" },
	{ "bufs_per_ep 65", mut_bufs_big, "bufs_per_ep" },
	{ "buf_size 100", mut_bufsize_small, "buf_size" },
	{ "buf_size 16M+1", mut_bufsize_big, "buf_size" },
	{ "max_pkts 8", mut_pkts_small, "max_pkts" },
	{ "max_events 10", mut_events_small, "max_events" },
	{ "ev_ring 48", mut_ev_ring_np2, "ev_ring 48 must be a power of two" },
	{ "ev_ring 8", mut_ev_ring_small, "ev_ring 8" },
	{ "ev_ring 2^17", mut_ev_ring_big, "ev_ring 131072" },
	{ "edge rate 0", mut_rate_edge, "rate" },
	{ "global rate 0", mut_rate_global, "rate" },
	{ "radix", mut_topo_radix, "radix" },
	{ "groups 0", mut_topo_zero, "groups" },
	{ "48 local links on 2group", mut_topo_local_links, "radix" },
	{ "no global links", mut_topo_globals, "global" },
	{ "slot count", mut_too_many_msgs, "too large" },
};

static void test_config_validate_catches_each_field(void **state)
{
	struct ssemu_config base, cfg;
	char err[256];
	size_t i;

	assert_int_equal(ssemu_config_preset("2group", &base), 0);
	assert_int_equal(ssemu_config_validate(&base, err, sizeof(err)), 0);
	for (i = 0; i < sizeof(bad_fields) / sizeof(bad_fields[0]); i++) {
		cfg = base;
		bad_fields[i].mutate(&cfg);
		memset(err, 0, sizeof(err));
		if (ssemu_config_validate(&cfg, err, sizeof(err)) != -EINVAL)
			fail_msg("%s: accepted", bad_fields[i].what);
		if (!strstr(err, bad_fields[i].msg))
			fail_msg("%s: message '%s' lacks '%s'",
				 bad_fields[i].what, err, bad_fields[i].msg);
	}
	assert_int_equal(ssemu_config_validate(NULL, err, sizeof(err)),
			 -EINVAL);
	/* a tiny error buffer is never overrun */
	cfg = base;
	mut_min_sum(&cfg);
	memset(err, 'x', sizeof(err));
	assert_int_equal(ssemu_config_validate(&cfg, err, 8), -EINVAL);
	assert_int_equal(err[7], 0);
	assert_int_equal(err[8], 'x');
}

static void test_config_validate_accepts_limits(void **state)
{
	struct ssemu_config cfg;
	char err[256];

	assert_int_equal(ssemu_config_preset("switch", &cfg), 0);
	/* shares adding up to exactly 100% */
	cfg.tclass[0].min_pct = 60;
	cfg.mtu = 64;
	cfg.msgs_per_ep = 4;
	cfg.port_buf_pkts = 1;
	cfg.nic_window = 1;
	cfg.sw_lat_sd = 0;
	cfg.sw_lat_min = cfg.sw_lat_max = cfg.sw_lat_mean;
	cfg.bufs_per_ep = 0;
	cfg.buf_size = SSEMU_INLINE_MAX;
	cfg.max_pkts = 16;
	cfg.max_events = 64;
	cfg.max_nics = 1;
	cfg.eps_per_nic = 1;
	cfg.ntclass = 1;
	cfg.default_tclass = 0;
	cfg.tclass[0].min_pct = 100;
	if (ssemu_config_validate(&cfg, err, sizeof(err)))
		fail_msg("lower limits refused: %s", err);
	cfg.ntclass = SSEMU_MAX_TCLASS;
	for (uint32_t i = 0; i < SSEMU_MAX_TCLASS; i++) {
		snprintf(cfg.tclass[i].name, sizeof(cfg.tclass[i].name),
			 "TC%u", i);
		cfg.tclass[i].min_pct = i < 4 ? 25 : 0;
		cfg.tclass[i].max_pct = 100;
	}
	cfg.mtu = 65536;
	cfg.msgs_per_ep = 65536;
	cfg.clock = SSEMU_CLOCK_REALTIME;
	cfg.dilation = 1e-3;
	if (ssemu_config_validate(&cfg, err, sizeof(err)))
		fail_msg("upper limits refused: %s", err);
	/* the full preset's endpoints, one NIC each, and the most NICs */
	assert_int_equal(ssemu_config_preset("full", &cfg), 0);
	cfg.eps_per_nic = 1;
	cfg.max_eps = 0;
	cfg.msgs_per_ep = 64;
	cfg.max_pairs = 1u << 30;
	for (uint32_t n = 4097; n <= 1u << 20; n = n < 279040 ? 279040 :
								1u << 20) {
		cfg.max_nics = n;
		if (ssemu_config_validate(&cfg, err, sizeof(err)))
			fail_msg("max_nics %u refused: %s", n, err);
		if (n == 1u << 20)
			break;
	}
}

/*
 * A packet is mtu + pkt_overhead bytes in a 32-bit field: an overhead that
 * wraps it must be refused like every other field (the file loader caps
 * packet_overhead at 4096; the API should not accept more).
 */
static void test_config_validate_pkt_overhead(void **state)
{
	struct ssemu_config cfg;
	char err[256] = "";

	assert_int_equal(ssemu_config_preset("switch", &cfg), 0);
	cfg.pkt_overhead = UINT32_MAX - 100;
	if (ssemu_config_validate(&cfg, err, sizeof(err)) != -EINVAL)
		fail_msg("pkt_overhead %u accepted: mtu + overhead wraps the "
			 "packet size", cfg.pkt_overhead);
	assert_non_null(strstr(err, "overhead"));
}

/* ------------------------------------------------------------------ */
/* Hash                                                                 */
/* ------------------------------------------------------------------ */

MUT(h_groups, c->topo.groups = 3; c->topo.globals_per_switch = 2)
MUT(h_a, c->topo.switches_per_group++)
MUT(h_p, c->topo.endpoints_per_switch--)
MUT(h_h, c->topo.globals_per_switch++)
MUT(h_edge_rate, c->edge.rate_bps /= 2)
MUT(h_edge_delay, c->edge.delay++)
MUT(h_local_rate, c->local.rate_bps++)
MUT(h_local_delay, c->local.delay++)
MUT(h_global_rate, c->global.rate_bps++)
MUT(h_global_delay, c->global.delay++)
MUT(h_mtu, c->mtu = 4096)
MUT(h_overhead, c->pkt_overhead++)
MUT(h_buf, c->port_buf_pkts++)
MUT(h_lat_mean, c->sw_lat_mean++)
MUT(h_lat_sd, c->sw_lat_sd++)
MUT(h_lat_min, c->sw_lat_min++)
MUT(h_lat_max, c->sw_lat_max++)
MUT(h_window, c->nic_window++)
MUT(h_ntclass, c->ntclass--; c->default_tclass = 0)
MUT(h_tc_name, c->tclass[2].name[0] = 'b')
MUT(h_tc_prio, c->tclass[3].priority++)
MUT(h_tc_min, c->tclass[3].min_pct++)
MUT(h_tc_max, c->tclass[0].max_pct--)
MUT(h_tc_ordered, c->tclass[1].ordered = !c->tclass[1].ordered)
MUT(h_tc_lossy, c->tclass[1].lossy = !c->tclass[1].lossy)
MUT(h_tc_bias, c->tclass[1].route_bias = -3)
MUT(h_default_tc, c->default_tclass = 1)
MUT(h_routing, snprintf(c->routing, sizeof(c->routing), "minimal2"))
MUT(h_cc, snprintf(c->cc, sizeof(c->cc), "nonf"))
MUT(h_arb, snprintf(c->arb, sizeof(c->arb), "priority-r"))
MUT(h_seed, c->seed = 2)
MUT(h_clock, c->clock = SSEMU_CLOCK_REALTIME)
MUT(h_dilation, c->dilation = 2.0)
MUT(h_max_nics, c->max_nics++)
MUT(h_max_switches, c->max_switches++)
MUT(h_eps, c->eps_per_nic++)
MUT(h_max_eps, c->max_eps++)
MUT(h_msgs, c->msgs_per_ep *= 2)
MUT(h_bufs, c->bufs_per_ep++)
MUT(h_buf_size, c->buf_size++)
MUT(h_pkts, c->max_pkts++)
MUT(h_events, c->max_events++)
MUT(h_ev_ring, c->ev_ring *= 2)
MUT(h_tc_denied, c->tclass[2].denied = true)
MUT(h_tclass_denied, c->tclass_denied = SSEMU_TCLASS_DENIED_WARN)

static void (*const hash_mutations[])(struct ssemu_config *) = {
	mut_h_groups, mut_h_a, mut_h_p, mut_h_h, mut_h_edge_rate,
	mut_h_edge_delay, mut_h_local_rate, mut_h_local_delay,
	mut_h_global_rate, mut_h_global_delay, mut_h_mtu, mut_h_overhead,
	mut_h_buf, mut_h_lat_mean, mut_h_lat_sd, mut_h_lat_min, mut_h_lat_max,
	mut_h_window, mut_h_ntclass, mut_h_tc_name, mut_h_tc_prio,
	mut_h_tc_min, mut_h_tc_max, mut_h_tc_ordered, mut_h_tc_lossy,
	mut_h_tc_bias, mut_h_default_tc, mut_h_routing, mut_h_cc, mut_h_arb,
	mut_h_seed, mut_h_clock, mut_h_dilation, mut_h_max_nics,
	mut_h_max_switches, mut_h_eps, mut_h_max_eps, mut_h_msgs, mut_h_bufs,
	mut_h_buf_size, mut_h_pkts, mut_h_events, mut_h_ev_ring,
	mut_h_tc_denied, mut_h_tclass_denied,
};

static void test_config_hash(void **state)
{
	struct ssemu_config a, b;
	uint64_t h, seen[64];
	size_t i, j, n = sizeof(hash_mutations) / sizeof(hash_mutations[0]);

	assert_true(n <= 64);
	assert_int_equal(ssemu_config_preset("malbec", &a), 0);
	memset(&b, 0xa5, sizeof(b));	/* different padding and slack */
	assert_int_equal(ssemu_config_preset("malbec", &b), 0);
	h = ssemu_config_hash(&a);
	assert_true(h == ssemu_config_hash(&b));
	assert_true(h == ssemu_config_hash(&a));	/* stable */

	/* bytes after a string's terminator do not shape anything */
	b = a;
	memset(b.routing + strlen(b.routing) + 1, 'z',
	       sizeof(b.routing) - strlen(b.routing) - 1);
	memset(b.tclass[0].name + strlen(b.tclass[0].name) + 1, 'z',
	       sizeof(b.tclass[0].name) - strlen(b.tclass[0].name) - 1);
	assert_true(h == ssemu_config_hash(&b));
	/* nor do classes beyond ntclass */
	b = a;
	snprintf(b.tclass[6].name, sizeof(b.tclass[6].name), "UNUSED");
	b.tclass[6].priority = 9;
	assert_true(h == ssemu_config_hash(&b));

	/* every shaping field changes the hash, each in its own way */
	for (i = 0; i < n; i++) {
		b = a;
		hash_mutations[i](&b);
		seen[i] = ssemu_config_hash(&b);
		if (seen[i] == h)
			fail_msg("mutation %zu does not change the hash", i);
		for (j = 0; j < i; j++)
			if (seen[j] == seen[i])
				fail_msg("mutations %zu and %zu collide", j, i);
	}
	/* different presets, different hashes */
	assert_int_equal(ssemu_config_preset("shandy", &b), 0);
	assert_true(ssemu_config_hash(&b) != h);
}

/* ------------------------------------------------------------------ */
/* Configuration files                                                  */
/* ------------------------------------------------------------------ */

struct cfile {
	char path[128];
	char err[512];
	struct ssemu_config cfg;
	int ret;
};

/* Write @text to a fresh temporary file and load it into f->cfg (which
 * starts out as a sentinel pattern). */
static void load_text(struct cfile *f, const char *text)
{
	static unsigned seq;
	FILE *fp;

	snprintf(f->path, sizeof(f->path), "/tmp/ssemu-test-config-%d-%u.cfg",
		 (int)getpid(), seq++);
	fp = fopen(f->path, "w");
	assert_non_null(fp);
	assert_true(fputs(text, fp) >= 0);
	assert_int_equal(fclose(fp), 0);
	memset(&f->cfg, 0x5a, sizeof(f->cfg));
	memset(f->err, 0, sizeof(f->err));
	f->ret = ssemu_config_load(f->path, &f->cfg, f->err, sizeof(f->err));
	unlink(f->path);
}

static bool cfg_untouched(const struct ssemu_config *c)
{
	const unsigned char *p = (const unsigned char *)c;
	size_t i;

	for (i = 0; i < sizeof(*c); i++)
		if (p[i] != 0x5a)
			return false;
	return true;
}

/* The load failed with -EINVAL, left the output alone, and the message
 * starts with "path:line: key:". */
static void expect_error(struct cfile *f, int line, const char *key,
			 const char *what)
{
	char want[256];

	if (f->ret != -EINVAL)
		fail_msg("expected -EINVAL for %s, got %d (%s)", key, f->ret,
			 f->err);
	assert_true(cfg_untouched(&f->cfg));
	if (line > 0)
		snprintf(want, sizeof(want), "%s:%d: %s: ", f->path, line, key);
	else
		snprintf(want, sizeof(want), "%s:", f->path);
	if (strncmp(f->err, want, strlen(want)))
		fail_msg("message '%s' does not start with '%s'", f->err, want);
	if (what && !strstr(f->err, what))
		fail_msg("message '%s' lacks '%s'", f->err, what);
}

static void test_config_file_overrides_preset(void **state)
{
	struct ssemu_config ref;
	struct cfile f;

	load_text(&f,
		  "# a comment\n"
		  "preset = \"2group\";\n"
		  "mtu = 4096;\n"
		  "packet_overhead = 48;\n"
		  "topology = { groups = 3; globals_per_switch = 2;\n"
		  "             local_links_per_pair = 2; };\n"
		  "links = {\n"
		  "  edge = { rate_gbps = 100.0; delay_ns = 7.5; };\n"
		  "  global = { delay_ns = 250; };\n"
		  "};\n"
		  "switch_latency = { mean_ns = 300.0; sd_ns = 0.0;\n"
		  "                   min_ns = 300.0; max_ns = 300.0; };\n"
		  "resources = { max_nics = 8; msgs_per_ep = 32;\n"
		  "              bufs_per_ep = 4; };\n"
		  "port_buffer_packets = 3;\n"
		  "nic_window = 7;\n"
		  "seed = 12345678901L;\n"
		  "clock = \"realtime\";\n"
		  "dilation = 2.5;\n"
		  "routing = \"minimal\";\n");
	if (f.ret)
		fail_msg("good file refused: %s", f.err);
	assert_int_equal(ssemu_config_preset("2group", &ref), 0);
	assert_string_equal(f.cfg.preset, "2group");
	assert_int_equal(f.cfg.mtu, 4096);
	assert_int_equal(f.cfg.pkt_overhead, 48);
	assert_int_equal(f.cfg.topo.groups, 3);
	assert_int_equal(f.cfg.topo.switches_per_group, 2);
	assert_int_equal(f.cfg.topo.endpoints_per_switch, 16);
	assert_int_equal(f.cfg.topo.globals_per_switch, 2);
	assert_int_equal(f.cfg.topo.local_links_per_pair, 2);
	assert_int_equal(ref.topo.local_links_per_pair, 1);
	assert_true(f.cfg.edge.rate_bps == 100000000000ULL);
	assert_true(f.cfg.edge.delay == 7500);
	assert_true(f.cfg.global.delay == 250000);
	assert_true(f.cfg.global.rate_bps == ref.global.rate_bps);
	assert_true(f.cfg.local.rate_bps == ref.local.rate_bps);
	assert_true(f.cfg.local.delay == ref.local.delay);
	assert_true(f.cfg.sw_lat_mean == 300000);
	assert_true(f.cfg.sw_lat_sd == 0);
	assert_true(f.cfg.sw_lat_min == 300000 && f.cfg.sw_lat_max == 300000);
	assert_int_equal(f.cfg.max_nics, 8);
	assert_int_equal(f.cfg.msgs_per_ep, 32);
	assert_int_equal(f.cfg.bufs_per_ep, 4);
	assert_int_equal(f.cfg.eps_per_nic, ref.eps_per_nic);
	assert_int_equal(f.cfg.port_buf_pkts, 3);
	assert_int_equal(f.cfg.nic_window, 7);
	assert_true(f.cfg.seed == 12345678901ULL);
	assert_int_equal(f.cfg.clock, SSEMU_CLOCK_REALTIME);
	assert_true(f.cfg.dilation == 2.5);
	/* what the file does not name is the preset's */
	assert_int_equal(f.cfg.ntclass, ref.ntclass);
	assert_memory_equal(f.cfg.tclass, ref.tclass, sizeof(ref.tclass));
	assert_int_equal(f.cfg.default_tclass, ref.default_tclass);
	assert_string_equal(f.cfg.cc, ref.cc);
	assert_int_equal(f.cfg.max_events, ref.max_events);

	/* an empty file is the "switch" preset under the name "file" */
	load_text(&f, "");
	if (f.ret)
		fail_msg("empty file refused: %s", f.err);
	assert_int_equal(ssemu_config_preset("switch", &ref), 0);
	assert_string_equal(f.cfg.preset, "file");
	snprintf(ref.preset, sizeof(ref.preset), "file");
	assert_true(ssemu_config_hash(&f.cfg) == ssemu_config_hash(&ref));
	assert_memory_equal(&f.cfg.topo, &ref.topo, sizeof(ref.topo));
}

static void test_config_file_unknown_key(void **state)
{
	struct cfile f;

	load_text(&f, "preset = \"switch\";\nmtu = 2048;\nmtux = 5;\n");
	expect_error(&f, 3, "mtux", "unknown key");
	load_text(&f, "topology = {\n  groups = 2;\n  gruops = 3;\n};\n");
	expect_error(&f, 3, "gruops", "unknown key in topology");
	load_text(&f, "\n\nresources = { max_nic = 2; };\n");
	expect_error(&f, 3, "max_nic", "unknown key in resources");
	load_text(&f, "links = {\n edge = { rate = 5.0; };\n};\n");
	expect_error(&f, 2, "rate", "unknown key");
	load_text(&f, "links = {\n\n optical = { rate_gbps = 5.0; };\n};\n");
	expect_error(&f, 3, "optical", "unknown link kind");
	load_text(&f, "switch_latency = { mean_ns = 1.0; p99_ns = 4.0; };\n");
	expect_error(&f, 1, "p99_ns", "unknown key");
	load_text(&f, "traffic_classes = ( { name = \"A\"; prio = 1; } );\n");
	expect_error(&f, 1, "prio", "unknown key in traffic_classes");
	load_text(&f, "preset = \"malbecc\";\n");
	expect_error(&f, 1, "preset", "unknown preset");
	load_text(&f, "preset = 3;\n");
	expect_error(&f, 1, "preset", NULL);
}

static void test_config_file_bad_types(void **state)
{
	struct cfile f;

	load_text(&f, "mtu = \"big\";\n");
	expect_error(&f, 1, "mtu", "expected an integer");
	load_text(&f, "\nmtu = 1500.0;\n");
	expect_error(&f, 2, "mtu", "expected an integer");
	load_text(&f, "seed = true;\n");
	expect_error(&f, 1, "seed", "expected an integer");
	load_text(&f, "routing = 5;\n");
	expect_error(&f, 1, "routing", "expected a string");
	load_text(&f, "links = { edge = { rate_gbps = \"fast\"; }; };\n");
	expect_error(&f, 1, "rate_gbps", "expected a number");
	load_text(&f, "switch_latency = {\n  sd_ns = [1, 2];\n};\n");
	expect_error(&f, 2, "sd_ns", "expected a number");
	load_text(&f, "traffic_classes = (\n { name = \"A\";\n"
		  "   ordered = 1; } );\n");
	expect_error(&f, 3, "ordered", "expected true or false");
	load_text(&f, "traffic_classes = ( { name = \"A\"; "
		  "route_bias = 1.5; } );\n");
	expect_error(&f, 1, "route_bias", "expected an integer");
	load_text(&f, "topology = 4;\n");
	expect_error(&f, 1, "topology", "expected a group");
	load_text(&f, "links = 4;\n");
	expect_error(&f, 1, "links", "expected a group");
	load_text(&f, "traffic_classes = { name = \"A\"; };\n");
	expect_error(&f, 1, "traffic_classes", "expected a list");
	load_text(&f, "clock = \"fast\";\n");
	expect_error(&f, 1, "clock", "virtual");
	load_text(&f, "resources = { max_nics = \"2\"; };\n");
	expect_error(&f, 1, "max_nics", "expected an integer");
	load_text(&f, "traffic_classes = ( { name = 5; } );\n");
	expect_error(&f, 1, "name", "expected a string");
	load_text(&f, "routing = \"a-routing-name-that-is-way-too-long\";\n");
	expect_error(&f, 1, "routing", "too long");
}

static void test_config_file_bad_ranges(void **state)
{
	struct cfile f;

	load_text(&f, "mtu = 10;\n");
	expect_error(&f, 1, "mtu", "10 out of range [64, 65536]");
	load_text(&f, "\n\n\nmtu = 70000;\n");
	expect_error(&f, 4, "mtu", "out of range");
	load_text(&f, "resources = { max_nics = 1048577; };\n");
	expect_error(&f, 1, "max_nics", "out of range [1, 1048576]");
	load_text(&f, "resources = { max_pairs = 1073741825; };\n");
	expect_error(&f, 1, "max_pairs", "out of range");
	load_text(&f, "nic_window = -1;\n");
	expect_error(&f, 1, "nic_window", "out of range");
	load_text(&f, "packet_overhead = 5000;\n");
	expect_error(&f, 1, "packet_overhead", "out of range");
	load_text(&f, "port_buffer_packets = 0;\n");
	expect_error(&f, 1, "port_buffer_packets", "out of range");
	load_text(&f, "topology = {\n groups = 0;\n};\n");
	expect_error(&f, 2, "groups", "out of range");
	load_text(&f, "topology = { endpoints_per_switch = 65; };\n");
	expect_error(&f, 1, "endpoints_per_switch", "out of range");
	load_text(&f, "topology = {\n local_links_per_pair = 0; };\n");
	expect_error(&f, 2, "local_links_per_pair", "out of range");
	load_text(&f, "topology = { local_links_per_pair = 64; };\n");
	expect_error(&f, 1, "local_links_per_pair", "out of range");
	load_text(&f, "resources = {\n\n  eps_per_nic = 300;\n};\n");
	expect_error(&f, 3, "eps_per_nic", "out of range");
	load_text(&f, "resources = { bufs_per_ep = 65; };\n");
	expect_error(&f, 1, "bufs_per_ep", "out of range");
	load_text(&f, "resources = { max_pkts = 15; };\n");
	expect_error(&f, 1, "max_pkts", "out of range");
	load_text(&f, "links = { local = { delay_ns = -1.0; }; };\n");
	expect_error(&f, 1, "delay_ns", "out of range");
	load_text(&f, "switch_latency = { mean_ns = 2e12; };\n");
	expect_error(&f, 1, "mean_ns", "out of range");
	load_text(&f, "traffic_classes = ( { name = \"A\";\n"
		  "  min_pct = 101; } );\n");
	expect_error(&f, 2, "min_pct", "out of range");
	load_text(&f, "traffic_classes = ( { name = \"A\";\n"
		  " route_bias = 300; } );\n");
	expect_error(&f, 2, "route_bias", "[-128, 127]");
	load_text(&f, "traffic_classes = ( { name = \"A\";\n"
		  "  priority = 256; } );\n");
	expect_error(&f, 2, "priority", "out of range");
	load_text(&f, "dilation = -1.0;\n");
	expect_error(&f, 1, "dilation", "out of range");
	load_text(&f, "seed = -5;\n");
	expect_error(&f, 1, "seed", "out of range");
}

/*
 * Values that pass the per-key bounds but are wrong for the fabric: the
 * file's own error (with line) or, failing that, the validation message
 * prefixed with the file.  Every one is refused.
 */
static void test_config_file_semantic_errors(void **state)
{
	struct cfile f;

	load_text(&f, "traffic_classes = (\n"
		  "  { name = \"A\"; min_pct = 60; },\n"
		  "  { name = \"B\"; min_pct = 60; }\n"
		  ");\n");
	expect_error(&f, 0, NULL, "120%");
	load_text(&f, "routing = \"ugal-x\";\n");
	expect_error(&f, 0, NULL, "unknown routing algorithm 'ugal-x'");
	load_text(&f, "congestion_control = \"x\";\n");
	expect_error(&f, 0, NULL, "unknown congestion control");
	load_text(&f, "arbitration = \"x\";\n");
	expect_error(&f, 0, NULL, "unknown arbitration");
	load_text(&f, "topology = { endpoints_per_switch = 60; "
		  "switches_per_group = 8; };\n");
	expect_error(&f, 0, NULL, "radix");
	/* 16 endpoint + 7 x 7 local + 4 global ports */
	load_text(&f, "preset = \"malbec\";\n"
		  "topology = { local_links_per_pair = 7; };\n");
	expect_error(&f, 0, NULL, "radix");
	load_text(&f, "switch_latency = { min_ns = 400.0; };\n");
	expect_error(&f, 0, NULL, "min <= mean <= max");
	load_text(&f, "resources = { msgs_per_ep = 100; };\n");
	expect_error(&f, 0, NULL, "power of two");
	load_text(&f, "resources = { ev_ring = 100; };\n");
	expect_error(&f, 0, NULL, "ev_ring 100 must be a power of two");
	load_text(&f, "resources = { ev_ring = 8; };\n");
	expect_error(&f, 1, "ev_ring", "out of range");
	load_text(&f, "clock = \"realtime\";\ndilation = 0.0;\n");
	expect_error(&f, 0, NULL, "dilation");
}

/*
 * docs/fabric-config.md: "values out of range are errors reported as
 * file:line: key: problem".  Rates must be representable in bits per second
 * (uint64): 1e11 Gb/s is 1e20 b/s, which does not fit; the loader's bound
 * (1e12) is the one for nanoseconds, and llround overflows.
 */
static void test_config_file_rate_range(void **state)
{
	struct cfile f;

	load_text(&f, "links = {\n  edge = { rate_gbps = 1e11; };\n};\n");
	if (!f.ret)
		fail_msg("rate_gbps = 1e11 (1e20 b/s) accepted as %llu b/s",
			 (unsigned long long)f.cfg.edge.rate_bps);
	expect_error(&f, 2, "rate_gbps", "out of range");
}

/* A zero rate is out of range for the key too: refused (it is), and
 * reported against the key and its line like the other range errors. */
static void test_config_file_zero_rate_line(void **state)
{
	struct cfile f;

	load_text(&f, "links = {\n  local = { rate_gbps = 0.0; };\n};\n");
	assert_int_equal(f.ret, -EINVAL);
	expect_error(&f, 2, "rate_gbps", NULL);
}

static void test_config_file_traffic_classes(void **state)
{
	struct cfile f;

	load_text(&f,
		  "preset = \"switch\";\n"
		  "traffic_classes = (\n"
		  "  { name = \"CTRL\"; priority = 5; min_pct = 20;\n"
		  "    max_pct = 40; ordered = true; lossy = false;\n"
		  "    route_bias = -2; },\n"
		  "  { name = \"BULK\"; lossy = true; },\n"
		  "  { name = \"Scavenger\"; priority = 0; min_pct = 0;\n"
		  "    max_pct = 10; }\n"
		  ");\n"
		  "default_tclass = \"bulk\";\n");
	if (f.ret)
		fail_msg("class list refused: %s", f.err);
	assert_int_equal(f.cfg.ntclass, 3);
	assert_string_equal(f.cfg.tclass[0].name, "CTRL");
	assert_int_equal(f.cfg.tclass[0].priority, 5);
	assert_int_equal(f.cfg.tclass[0].min_pct, 20);
	assert_int_equal(f.cfg.tclass[0].max_pct, 40);
	assert_true(f.cfg.tclass[0].ordered);
	assert_false(f.cfg.tclass[0].lossy);
	assert_int_equal(f.cfg.tclass[0].route_bias, -2);
	assert_string_equal(f.cfg.tclass[1].name, "BULK");
	assert_int_equal(f.cfg.tclass[1].priority, 0);
	assert_int_equal(f.cfg.tclass[1].min_pct, 0);
	assert_int_equal(f.cfg.tclass[1].max_pct, 100);	/* default */
	assert_true(f.cfg.tclass[1].lossy);
	assert_string_equal(f.cfg.tclass[2].name, "Scavenger");
	assert_int_equal(f.cfg.tclass[2].max_pct, 10);
	/* by name, case-insensitively */
	assert_int_equal(f.cfg.default_tclass, 1);
	/* the unused class slots are cleared */
	assert_int_equal(f.cfg.tclass[3].name[0], 0);

	/* default_tclass on the preset's classes, written before them */
	load_text(&f, "default_tclass = \"LOW_LATENCY\";\n"
		  "preset = \"2group\";\n");
	if (f.ret)
		fail_msg("default_tclass refused: %s", f.err);
	assert_int_equal(f.cfg.default_tclass, 1);

	load_text(&f, "\ndefault_tclass = \"GOLD\";\n");
	expect_error(&f, 2, "default_tclass", "no traffic class");
	load_text(&f, "default_tclass = 1;\n");
	expect_error(&f, 1, "default_tclass", NULL);
	load_text(&f, "traffic_classes = (\n { priority = 1; }\n);\n");
	expect_error(&f, 2, "traffic_classes", "name");
	load_text(&f, "traffic_classes = ( );\n");
	expect_error(&f, 1, "traffic_classes", "between 1 and 8");
	load_text(&f, "traffic_classes = ( {name=\"a\";}, {name=\"b\";}, "
		  "{name=\"c\";}, {name=\"d\";}, {name=\"e\";}, {name=\"f\";}, "
		  "{name=\"g\";}, {name=\"h\";}, {name=\"i\";} );\n");
	expect_error(&f, 1, "traffic_classes", "between 1 and 8");
	load_text(&f, "traffic_classes = ( 1, 2 );\n");
	expect_error(&f, 1, "traffic_classes", "expected a group");
}

/* Class policy: "allowed" per class and the top-level tclass_denied. */
static void test_config_file_class_policy(void **state)
{
	struct ssemu_config a, b;
	struct cfile f;
	char diff[256];

	/* defaults: every preset class allowed, denial is an error */
	assert_int_equal(ssemu_config_preset("switch", &a), 0);
	for (uint32_t i = 0; i < a.ntclass; i++)
		assert_false(a.tclass[i].denied);
	assert_int_equal(a.tclass_denied, SSEMU_TCLASS_DENIED_ERROR);

	load_text(&f,
		  "traffic_classes = (\n"
		  "  { name = \"GOLD\"; min_pct = 50; allowed = false; },\n"
		  "  { name = \"BEST_EFFORT\"; allowed = true; },\n"
		  "  { name = \"BULK\"; }\n"
		  ");\n"
		  "tclass_denied = \"warn\";\n");
	if (f.ret)
		fail_msg("class policy refused: %s", f.err);
	assert_true(f.cfg.tclass[0].denied);
	assert_false(f.cfg.tclass[1].denied);
	assert_false(f.cfg.tclass[2].denied);	/* default: allowed */
	assert_int_equal(f.cfg.default_tclass, 1);
	assert_int_equal(f.cfg.tclass_denied, SSEMU_TCLASS_DENIED_WARN);

	/* both shape the fabric: the diff names them */
	b = a;
	b.tclass[1].denied = true;
	assert_int_equal(ssemu_config_diff(&a, &b, diff, sizeof(diff)), 1);
	if (!strstr(diff, "traffic class 1") || !strstr(diff, "not allowed"))
		fail_msg("diff '%s' does not name the denied class", diff);
	b = a;
	b.tclass_denied = SSEMU_TCLASS_DENIED_WARN;
	assert_int_equal(ssemu_config_diff(&a, &b, diff, sizeof(diff)), 1);
	if (!strstr(diff, "tclass_denied"))
		fail_msg("diff '%s' does not name tclass_denied", diff);

	load_text(&f, "tclass_denied = \"error\";\n");
	assert_int_equal(f.ret, 0);
	assert_int_equal(f.cfg.tclass_denied, SSEMU_TCLASS_DENIED_ERROR);
	load_text(&f, "\ntclass_denied = \"ignore\";\n");
	expect_error(&f, 2, "tclass_denied", "\"error\" or \"warn\"");
	load_text(&f, "tclass_denied = 1;\n");
	expect_error(&f, 1, "tclass_denied", NULL);
	load_text(&f, "traffic_classes = (\n { name = \"A\";\n"
		  "   allowed = 1; }\n);\n");
	expect_error(&f, 3, "allowed", "true or false");
	/* the default class cannot be denied: denials fall back to it */
	load_text(&f, "traffic_classes = (\n { name = \"A\";\n"
		  "   allowed = false; }\n);\n");
	expect_error(&f, 3, "allowed", "default traffic class");
	load_text(&f, "traffic_classes = (\n { name = \"A\"; },\n"
		  " { name = \"B\"; allowed = false; }\n);\n"
		  "default_tclass = \"B\";\n");
	expect_error(&f, 5, "default_tclass", "must be allowed");
	/* and the API says so too */
	b = a;
	b.tclass[b.default_tclass].denied = true;
	assert_int_equal(ssemu_config_validate(&b, diff, sizeof(diff)),
			 -EINVAL);
	b = a;
	b.tclass_denied = 7;
	assert_int_equal(ssemu_config_validate(&b, diff, sizeof(diff)),
			 -EINVAL);
}

/*
 * Bad configuration files get a clear error and lose nothing, whatever is
 * wrong with them: a seeded run of mutations of a file that sets every
 * section (a token replaced by an extreme or a wrong-typed value, a
 * character dropped, inserted or replaced, a line doubled, the file cut
 * short).  Each load either succeeds with a configuration that validates
 * and whose topology builds, or fails with -EINVAL, a "path:" message and
 * the output untouched.  Never a crash.
 */
static const char mut_base[] =
	"preset = \"malbec\";\n"
	"topology = { groups = 4; switches_per_group = 8;\n"
	"  endpoints_per_switch = 16; globals_per_switch = 4;\n"
	"  local_links_per_pair = 2; };\n"
	"links = { edge = { rate_gbps = 200.0; delay_ns = 5.0; };\n"
	"  local = { rate_gbps = 200.0; delay_ns = 10.0; };\n"
	"  global = { rate_gbps = 100.0; delay_ns = 150.0; }; };\n"
	"mtu = 2048;\n"
	"packet_overhead = 64;\n"
	"port_buffer_packets = 32;\n"
	"switch_latency = { mean_ns = 350.0; sd_ns = 15.0;\n"
	"  min_ns = 300.0; max_ns = 400.0; };\n"
	"nic_window = 64;\n"
	"traffic_classes = (\n"
	"  { name = \"DEDICATED_ACCESS\"; priority = 1; min_pct = 50; },\n"
	"  { name = \"LOW_LATENCY\"; priority = 2; min_pct = 15;\n"
	"    max_pct = 30; allowed = false; },\n"
	"  { name = \"BULK_DATA\"; priority = 1; min_pct = 15;\n"
	"    ordered = true; lossy = true; route_bias = 2; },\n"
	"  { name = \"BEST_EFFORT\"; priority = 1; min_pct = 10; }\n"
	");\n"
	"default_tclass = \"BEST_EFFORT\";\n"
	"tclass_denied = \"warn\";\n"
	"routing = \"adaptive\";\n"
	"congestion_control = \"endpoint-pair\";\n"
	"arbitration = \"shares\";\n"
	"seed = 42;\n"
	"clock = \"realtime\";\n"
	"dilation = 2.5;\n"
	"resources = { max_nics = 8; max_switches = 32; eps_per_nic = 2;\n"
	"  msgs_per_ep = 64; bufs_per_ep = 4; buf_size = 65536;\n"
	"  max_pkts = 4096; max_events = 65536; };\n"
	"telemetry = { interval_us = 10.0; samples = 64; };\n";

static const char *const mut_values[] = {
	"0", "-1", "1", "63", "64", "65", "65535", "65536", "4294967295",
	"4294967296", "18446744073709551615", "9223372036854775807L",
	"-9223372036854775808L", "0.0", "-0.5", "1e308", "-1e308", "1e-308",
	"\"\"", "\"x\"", "\"LOW_LATENCY\"", "true", "false", "( )", "[ ]",
	"{ }", "( { } )", "0x7fffffff", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
};

#define MUT_WORD "0123456789.-+abcdefghijklmnopqrstuvwxyz" \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ_"

/* The end of the token (a string, or a number or word) starting at @i
 * of @in (@n long), or @i if none starts there. */
static size_t mut_token_end(const char *in, size_t n, size_t i)
{
	if (in[i] == '"') {
		for (i++; i < n && in[i] != '"'; i++)
			;
		return i < n ? i + 1 : n;
	}
	while (i < n && strchr(MUT_WORD, in[i]))
		i++;
	return i;
}

/* Replace token k (mod their number) of @in by @with. */
static void mut_replace_token(const char *in, char *out, size_t outlen,
			      uint64_t k, const char *with)
{
	size_t n = strlen(in), i, e, o = 0, ntok = 0, pick;

	for (i = 0; i < n; i = e > i ? e : i + 1)
		if ((e = mut_token_end(in, n, i)) > i)
			ntok++;
	pick = ntok ? k % ntok : 0;
	ntok = 0;
	for (i = 0; i < n && o + 1 < outlen; i = e) {
		e = mut_token_end(in, n, i);
		if (e == i) {
			out[o++] = in[e++];
			continue;
		}
		if (ntok++ == pick)
			o += (size_t)snprintf(out + o, outlen - o, "%s", with);
		else
			o += (size_t)snprintf(out + o, outlen - o, "%.*s",
					      (int)(e - i), in + i);
		if (o >= outlen)
			o = outlen - 1;
	}
	out[o] = '\0';
}

static uint64_t mut_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_config_file_mutations(void **state)
{
	static char text[8192];
	uint64_t rng = 0x5eed5eedULL, r;
	unsigned i, ok = 0, refused = 0;
	size_t n, at;
	struct cfile f;
	char err[256];

	load_text(&f, mut_base);
	if (f.ret)
		fail_msg("the base file is refused: %s", f.err);
	for (i = 0; i < 3000; i++) {
		r = mut_rng(&rng);
		n = strlen(mut_base);
		at = (size_t)(mut_rng(&rng) % n);
		switch (r % 6) {
		case 0:
		case 1:	/* a token becomes something else */
			mut_replace_token(mut_base, text, sizeof(text),
					  mut_rng(&rng),
					  mut_values[mut_rng(&rng) %
						     (sizeof(mut_values) /
						      sizeof(mut_values[0]))]);
			break;
		case 2:	/* a character dropped */
			memcpy(text, mut_base, at);
			memcpy(text + at, mut_base + at + 1, n - at);
			break;
		case 3:	/* a character inserted or replaced */
			memcpy(text, mut_base, n + 1);
			text[at] = "{}();=\",.-0\n#x\\@"[mut_rng(&rng) % 16];
			break;
		case 4: {	/* a line given twice */
			const char *nl = strchr(mut_base + at, '\n');
			size_t end = nl ? (size_t)(nl - mut_base) + 1 : n;
			size_t bol = at;

			while (bol > 0 && mut_base[bol - 1] != '\n')
				bol--;
			memcpy(text, mut_base, end);
			memcpy(text + end, mut_base + bol, end - bol);
			memcpy(text + end + (end - bol), mut_base + end,
			       n - end + 1);
			break;
		}
		default:	/* cut short */
			memcpy(text, mut_base, at);
			text[at] = '\0';
			break;
		}
		load_text(&f, text);
		if (f.ret == 0) {
			struct ssemu_topo t;

			ok++;
			if (ssemu_config_validate(&f.cfg, err, sizeof(err)))
				fail_msg("mutation %u loads but does not "
					 "validate: %s\n%s", i, err, text);
			if (ssemu_topo_init(&t, &f.cfg.topo, err, sizeof(err)))
				fail_msg("mutation %u loads but its topology "
					 "fails: %s\n%s", i, err, text);
			continue;
		}
		refused++;
		if (f.ret != -EINVAL || !f.err[0] ||
		    strncmp(f.err, f.path, strlen(f.path)) ||
		    !cfg_untouched(&f.cfg))
			fail_msg("mutation %u: ret %d, message '%s', output %s"
				 "\n%s", i, f.ret, f.err,
				 cfg_untouched(&f.cfg) ? "untouched" :
							 "changed", text);
	}
	/* both outcomes were exercised */
	print_message("%u mutations loaded, %u refused\n", ok, refused);
	assert_true(ok > 100 && refused > 1000);
}

static void test_config_file_syntax_error(void **state)
{
	struct cfile f;

	load_text(&f, "preset = \"switch\";\nmtu = ;\n");
	expect_error(&f, 0, NULL, "syntax error");
	{
		char want[160];

		snprintf(want, sizeof(want), "%s:2: ", f.path);
		if (strncmp(f.err, want, strlen(want)))
			fail_msg("'%s' does not start with '%s'", f.err, want);
	}
	load_text(&f, "preset = \"switch\";\nmtu = 64 64;\n");
	expect_error(&f, 0, NULL, "syntax error");
	assert_non_null(strstr(f.err, ":2:"));
	/* an unclosed group: reported at the end of the file */
	load_text(&f, "links = {\n edge = { delay_ns = 1.0; };\n");
	expect_error(&f, 0, NULL, "syntax error");
	assert_non_null(strstr(f.err, ":3:"));
	/* libconfig refuses a setting given twice */
	load_text(&f, "mtu = 1024;\nmtu = 4096;\n");
	expect_error(&f, 0, NULL, "duplicate");
	assert_non_null(strstr(f.err, ":2:"));
}

static void test_config_file_missing(void **state)
{
	struct ssemu_config cfg;
	char err[256] = "";
	const char *path = "/nonexistent/ssemu-test.cfg";

	memset(&cfg, 0x5a, sizeof(cfg));
	assert_int_equal(ssemu_config_load(path, &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "cannot read"));
	assert_true(cfg_untouched(&cfg));
	assert_int_equal(ssemu_config_load(NULL, &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(ssemu_config_load(path, NULL, err, sizeof(err)),
			 -EINVAL);
}

/* A loaded file and the same settings made by hand hash the same, so two
 * processes may mix files and presets. */
static void test_config_file_hash_matches_api(void **state)
{
	struct ssemu_config ref;
	struct cfile f;

	load_text(&f, "preset = \"shandy\";\nlinks = { global = {\n"
		  "  rate_gbps = 100.0; delay_ns = 150.0; }; };\n"
		  "default_tclass = \"LOW_LATENCY\";\nseed = 42;\n");
	if (f.ret)
		fail_msg("docs example refused: %s", f.err);
	assert_int_equal(ssemu_config_preset("shandy", &ref), 0);
	ref.global.rate_bps = 100000000000ULL;
	ref.global.delay = 150000;
	ref.default_tclass = 1;
	ref.seed = 42;
	assert_true(ssemu_config_hash(&f.cfg) == ssemu_config_hash(&ref));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_presets_valid),
		cmocka_unit_test(test_config_unknown_preset),
		cmocka_unit_test(test_config_validate_catches_each_field),
		cmocka_unit_test(test_config_validate_accepts_limits),
		cmocka_unit_test(test_config_validate_pkt_overhead),
		cmocka_unit_test(test_config_hash),
		cmocka_unit_test(test_config_file_overrides_preset),
		cmocka_unit_test(test_config_file_unknown_key),
		cmocka_unit_test(test_config_file_bad_types),
		cmocka_unit_test(test_config_file_bad_ranges),
		cmocka_unit_test(test_config_file_semantic_errors),
		cmocka_unit_test(test_config_file_rate_range),
		cmocka_unit_test(test_config_file_zero_rate_line),
		cmocka_unit_test(test_config_file_traffic_classes),
		cmocka_unit_test(test_config_file_class_policy),
		cmocka_unit_test(test_config_file_syntax_error),
		cmocka_unit_test(test_config_file_mutations),
		cmocka_unit_test(test_config_file_missing),
		cmocka_unit_test(test_config_file_hash_matches_api),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
