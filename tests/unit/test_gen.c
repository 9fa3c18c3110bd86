/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Modelled jobs (emu/ssemu_gen.c): traffic generated as declared (counts
 * against load x time / message time, exact for closed loops and fixed
 * counts), placement, start and stop, counters against deliveries, the
 * allreduce dependency chain, bad declarations refused with their key and
 * line, the virtual clock's rule (model time stands still while no real
 * message is in flight), and a real endpoint sharing the fabric with a
 * modelled incast aggressor.
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

#include "ssemu_priv.h"
#include "tf.h"

#define US SSEMU_PS_PER_US

/* A configuration from the text @body (a file's contents): 0, or the
 * loader's error in @err. */
static int load_text(const char *body, struct ssemu_config *c, char *err,
		     size_t errlen)
{
	char path[] = "/tmp/ssemu-test-gen-XXXXXX";
	int fd = mkstemp(path), ret;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
	ret = ssemu_config_load(path, c, err, errlen);
	unlink(path);
	return ret;
}

/* The configuration @body, with the unit tests' small resources. */
static void config_of(const char *body, struct ssemu_config *c)
{
	char err[512] = "";

	if (load_text(body, c, err, sizeof(err)))
		fail_msg("%s", err);
	c->max_nics = 16;
	c->max_switches = 8;
	c->eps_per_nic = 2;
	c->max_eps = 0;
	c->msgs_per_ep = 64;
	c->bufs_per_ep = 2;
	c->buf_size = 4096;
	c->max_pkts = 8192;
	c->max_events = 65536;
}

static struct ssemu_mjob_stats job_stats(struct tf *t, uint32_t j)
{
	struct ssemu_mjob_stats st[SSEMU_CONFIG_MJOBS];

	assert_true(ssemu_fabric_mjobs(t->fab, st, SSEMU_CONFIG_MJOBS) >
		    (int)j);
	return st[j];
}

static struct ssemu_mjob_rank rank_of(struct tf *t, uint32_t j, uint32_t k)
{
	struct ssemu_mjob_rank rk;

	assert_int_equal(ssemu_fabric_mjob_rank(t->fab, j, k, &rk), 0);
	return rk;
}

static uint64_t hist_count(const uint64_t *lat)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < SSEMU_TEL_LAT_BINS; i++)
		n += lat[i];
	return n;
}

/* Open loop: each sender posts time / (wire time / load) messages, give
 * or take the one its random phase may cost it. */
static void test_open_loop_count(void **state)
{
	struct ssemu_config c;
	struct ssemu_mjob_stats st;
	struct tf *t;
	const double T = 200.0 * US, load = 0.25;
	double wire, per;
	uint64_t lo, hi;

	(void)state;
	config_of("preset = \"switch\";\n"
		  "modelled_jobs = ( { name = \"u\"; endpoints = 8; "
		  "pattern = \"uniform\"; size = 4096; load = 0.25; } );\n",
		  &c);
	t = tf_open(&c);
	assert_int_equal(ssemu_fabric_run_until(t->fab, (ssemu_time_t)T), 0);
	st = job_stats(t, 0);
	/* 4096 bytes in 2 packets of 64 bytes' overhead at 200 Gb/s */
	wire = (4096.0 + 2 * 64) * 8.0 * 1e12 / 200e9;
	per = T / (wire / load);
	lo = (uint64_t)(8 * (per - 1));
	hi = (uint64_t)(8 * (per + 1));
	assert_in_range(st.posted, lo, hi);
	assert_true(st.delivered <= st.posted && st.delivered > st.posted / 2);
	assert_string_equal(st.name, "u");
	assert_int_equal(st.pattern, SSEMU_MJOB_UNIFORM);
	tf_close(t);
}

/* Closed loop with a fixed count: exact counts, everything delivered and
 * acknowledged, no message left in flight. */
static void test_inflight_count_exact(void **state)
{
	struct ssemu_config c;
	struct ssemu_mjob_stats st;
	struct ssemu_mjob_rank rk;
	struct tf *t;
	uint32_t k;

	(void)state;
	config_of("preset = \"switch\";\n"
		  "modelled_jobs = ( { name = \"r\"; endpoints = 6; "
		  "pattern = \"ring\"; size = 10000; inflight = 4; "
		  "count = 50; } );\n", &c);
	t = tf_open(&c);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 10000 * US), 0);
	st = job_stats(t, 0);
	assert_int_equal(st.posted, 6 * 50);
	assert_int_equal(st.delivered, 6 * 50);
	assert_int_equal(st.completed, 6 * 50);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.bytes, 6ULL * 50 * 10000);
	/* every delivery has its latency counted */
	assert_int_equal(hist_count(st.lat), st.delivered);
	for (k = 0; k < 6; k++) {
		rk = rank_of(t, 0, k);
		assert_int_equal(rk.posted, 50);
		assert_int_equal(rk.received, 50);	/* from rank k - 1 */
		assert_int_equal(rk.inflight, 0);
	}
	tf_close(t);
}

/* Explicit ports first, the policies on what is left; real NICs get the
 * ports the modelled jobs leave free. */
static void test_placement(void **state)
{
	struct ssemu_nic_opts no = { .port = 10, .rank = -1 };
	struct ssemu_config c;
	struct ssemu_nic *nic;
	struct tf *t;
	uint32_t k, p, seen[64] = { 0 };
	unsigned a;

	(void)state;
	config_of("preset = \"2switch\";\n"
		  "modelled_jobs = (\n"
		  " { name = \"lin\"; endpoints = 4; placement = \"linear\"; "
		  "pattern = \"ring\"; size = 8; load = 0.1; },\n"
		  " { name = \"map\"; endpoints = 3; placement = [10, 12, 14]; "
		  "pattern = \"ring\"; size = 8; load = 0.1; },\n"
		  " { name = \"il\"; endpoints = 4; "
		  "placement = \"interleaved\"; pattern = \"ring\"; size = 8; "
		  "load = 0.1; } );\n", &c);
	t = tf_open(&c);
	for (k = 0; k < 4; k++)
		assert_int_equal(rank_of(t, 0, k).port, k);
	assert_int_equal(rank_of(t, 1, 0).port, 10);
	assert_int_equal(rank_of(t, 1, 1).port, 12);
	assert_int_equal(rank_of(t, 1, 2).port, 14);
	/* interleaved: round robin over the two switches */
	for (k = 0; k < 4; k++) {
		p = rank_of(t, 2, k).port;
		assert_int_equal(p / 16, k % 2);
		assert_int_equal(seen[p]++, 0);
	}
	for (k = 0; k < 4; k++)
		assert_int_equal(seen[k], 0);
	/* a modelled job's port is taken */
	assert_int_equal(ssemu_nic_attach(t->fab, &no, &nic), -EADDRINUSE);
	/* a real NIC lands on a free port */
	a = tf_add(t, SSEMU_PORT_ANY);
	p = ssemu_nic_port(t->nic[a]);
	assert_true(p >= 4 && p != 10 && p != 12 && p != 14 && !seen[p]);
	tf_close(t);
}

/* Nothing is posted before start_us or at or after stop_us. */
static void test_start_stop(void **state)
{
	struct ssemu_config c;
	struct ssemu_mjob_rank rk;
	struct tf *t;
	uint32_t k;

	(void)state;
	config_of("preset = \"switch\";\n"
		  "modelled_jobs = ( { name = \"a\"; endpoints = 4; "
		  "pattern = \"alltoall\"; size = 2048; load = 0.5; "
		  "start_us = 20; stop_us = 60; },\n"
		  " { name = \"c\"; endpoints = 4; pattern = \"bisection\"; "
		  "size = 2048; inflight = 2; start_us = 30; stop_us = 40; },\n"
		  /* (an incast at full load: a backlog at its sources) */
		  " { name = \"i\"; endpoints = 8; pattern = \"incast\"; "
		  "size = 2048; load = 1.0; stop_us = 40; } );\n", &c);
	t = tf_open(&c);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 19 * US), 0);
	assert_int_equal(job_stats(t, 0).posted, 0);
	assert_int_equal(job_stats(t, 1).posted, 0);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 200 * US), 0);
	for (k = 0; k < 4; k++) {
		rk = rank_of(t, 0, k);
		assert_true(rk.posted > 10);
		assert_true(rk.first_post >= 20 * US);
		assert_true(rk.last_post < 60 * US);
		rk = rank_of(t, 1, k);
		assert_true(rk.posted >= 2);
		assert_true(rk.first_post >= 30 * US);
		assert_true(rk.last_post < 40 * US);
		assert_int_equal(rk.inflight, 0);
	}
	for (k = 1; k < 8; k++) {
		rk = rank_of(t, 2, k);
		assert_true(rk.posted > 10);
		assert_true(rk.last_post < 40 * US);
		assert_int_equal(rk.inflight, 0);
	}
	/* all of it delivered once the jobs stopped */
	assert_int_equal(job_stats(t, 0).delivered, job_stats(t, 0).posted);
	assert_int_equal(job_stats(t, 1).delivered, job_stats(t, 1).posted);
	tf_close(t);
}

/*
 * Allreduce: a rank's next message waits for its predecessor's (recursive
 * doubling with 8 ranks, a ring with 6), so at every moment no rank has
 * sent more than one message beyond what it received; operations counted
 * exactly.
 */
static void check_chain(const char *cfg, uint32_t n, uint32_t steps)
{
	struct ssemu_config c;
	struct ssemu_mjob_stats st;
	struct ssemu_mjob_rank rk;
	struct tf *t;
	ssemu_time_t now;
	uint32_t k;

	config_of(cfg, &c);
	t = tf_open(&c);
	for (now = 0; now < 200 * US; now += 20 * SSEMU_PS_PER_NS) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		for (k = 0; k < n; k++) {
			rk = rank_of(t, 0, k);
			if (rk.posted > rk.received + 1)
				fail_msg("rank %u posted %llu having received "
					 "%llu at %llu ps", k,
					 (unsigned long long)rk.posted,
					 (unsigned long long)rk.received,
					 (unsigned long long)now);
		}
	}
	st = job_stats(t, 0);
	assert_int_equal(st.ops, 20);
	assert_int_equal(hist_count(st.op_lat), 20);
	for (k = 0; k < n; k++) {
		rk = rank_of(t, 0, k);
		assert_int_equal(rk.posted, 20 * steps);
		assert_int_equal(rk.received, 20 * steps);
	}
	/* an operation is steps messages one after the other */
	assert_true(st.op_lat_sum / 20 >= steps * (st.lat_sum / st.delivered) /
						   2);
	tf_close(t);
}

static void test_allreduce_chain(void **state)
{
	(void)state;
	check_chain("preset = \"switch\";\n"
		    "modelled_jobs = ( { name = \"ar\"; endpoints = 8; "
		    "pattern = \"allreduce\"; size = 8; count = 20; } );\n",
		    8, 3);
	check_chain("preset = \"switch\";\n"
		    "modelled_jobs = ( { name = \"ar\"; endpoints = 6; "
		    "pattern = \"allreduce\"; size = 8; count = 20; } );\n",
		    6, 10);
}

/* Bad declarations: refused, with the file's line and the key. */
static void test_bad_declarations(void **state)
{
	static const struct {
		const char *job;	/* the declaration, on line 3 */
		const char *key;
	} bad[] = {
		{ "{ name = \"x\"; endpoints = 17; pattern = \"ring\"; "
		  "size = 8; load = 0.5; }", "endpoints" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"zigzag\"; "
		  "size = 8; load = 0.5; }", "pattern" },
		{ "{ name = \"x\"; endpoints = 2; placement = [1, 2]; "
		  "pattern = \"ring\"; size = 8; load = 0.5; },\n"
		  "{ name = \"y\"; endpoints = 2; placement = [2, 3]; "
		  "pattern = \"ring\"; size = 8; load = 0.5; }", "placement" },
		{ "{ name = \"x\"; endpoints = 2; placement = [1, 1]; "
		  "pattern = \"ring\"; size = 8; load = 0.5; }", "placement" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 1.5; }", "load" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.0; }", "load" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = -0.5; }", "load" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.0; inflight = 2; }", "load" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 0; load = 0.5; }", "size" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.5; start_us = 50; stop_us = 10; }",
		  "stop_us" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.5; tclass = \"GOLD\"; }", "tclass" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.5; tclass = 9; }", "tclass" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"incast\"; "
		  "targets = 4; size = 8; load = 0.5; }", "targets" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; }", "load" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; load = 0.5; colour = 3; }", "colour" },
		{ "{ name = \"x\"; endpoints = 4; pattern = \"ring\"; "
		  "size = 8; inflight = 1000; }", "inflight" },
	};
	struct ssemu_config c;
	char text[1024], err[512], want[64];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "preset = \"switch\";\n"
			 "modelled_jobs = (\n%s\n);\n", bad[i].job);
		memset(err, 0, sizeof(err));
		if (!load_text(text, &c, err, sizeof(err)))
			fail_msg("accepted: %s", bad[i].job);
		snprintf(want, sizeof(want), ": %s: ", bad[i].key);
		if (!strstr(err, want) ||
		    (!strstr(err, ":3: ") && !strstr(err, ":4: ")))
			fail_msg("%s: the error does not name line and key "
				 "%s: %s", bad[i].job, bad[i].key, err);
	}
	/* and a good one goes through */
	assert_int_equal(load_text("preset = \"switch\";\nmodelled_jobs = ( { "
				   "name = \"x\"; endpoints = 16; pattern = "
				   "\"bursty-incast\"; targets = 2; burst = "
				   "4; gap_us = 10; size = 8; load = 1; "
				   "tclass = \"LOW_LATENCY\"; } );\n", &c, err,
				   sizeof(err)), 0);
	assert_int_equal(c.nmjobs, 1);
	assert_int_equal(c.mjobs[0].tclass, 1);
	assert_int_equal(c.mjobs[0].gap, 10 * US);
}

/*
 * Virtual clock: with no real message in flight, polling the fabric
 * leaves model time (and the modelled jobs) where they are; a real
 * message lets both advance until it is done.
 */
static void test_virtual_clock_holds(void **state)
{
	struct ssemu_config c;
	struct tf *t;
	ssemu_time_t t0, t1;
	uint64_t posted;
	unsigned a, b, i;
	char byte = 1;

	(void)state;
	config_of("preset = \"switch\";\n"
		  "modelled_jobs = ( { name = \"u\"; endpoints = 8; "
		  "pattern = \"uniform\"; size = 4096; load = 0.5; } );\n",
		  &c);
	t = tf_open(&c);
	a = tf_add(t, SSEMU_PORT_ANY);
	b = tf_add(t, SSEMU_PORT_ANY);
	for (i = 0; i < 1000; i++)
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
	assert_int_equal(ssemu_fabric_now(t->fab), 0);
	assert_true(ssemu_fabric_idle(t->fab));
	posted = job_stats(t, 0).posted;
	/* a real message in flight: the model runs, modelled jobs too */
	tf_send(t, a, b, &byte, 1, 0, 0, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, b, SSEMU_EV_RECV), 1);
	t0 = ssemu_fabric_now(t->fab);
	assert_true(t0 > 0);
	/* (the delivery's time is model time; the send's completes later) */
	assert_true(t->log[0].ev.time <= t0);
	/* and still again once it is done */
	for (i = 0; i < 1000; i++)
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
	usleep(2000);
	assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
	t1 = ssemu_fabric_now(t->fab);
	assert_int_equal(t1, t0);
	assert_true(job_stats(t, 0).posted >= posted);
	/* a run to the end stops with the real traffic: the modelled
	 * jobs' events never end */
	assert_int_equal(ssemu_fabric_run_until(t->fab, UINT64_MAX), 0);
	assert_int_equal(ssemu_fabric_now(t->fab), t0);
	tf_send(t, a, b, &byte, 1, 0, 0, 0);
	assert_int_equal(ssemu_fabric_run_until_watched(t->fab, UINT64_MAX),
			 0);
	assert_int_equal(tf_pump(t), 2);
	assert_true(ssemu_fabric_now(t->fab) > t0);
	assert_true(ssemu_fabric_idle(t->fab));
	t0 = ssemu_fabric_now(t->fab);
	/* a tool driving the engine moves it on */
	assert_int_equal(ssemu_fabric_run_until(t->fab, t0 + 50 * US), 0);
	assert_true(job_stats(t, 0).posted > posted + 10);
	tf_close(t);
}

/* A real endpoint's messages to a modelled rank are counted there and
 * give their slots back: more of them than the sender has slots go. */
static void test_real_to_modelled(void **state)
{
	struct ssemu_config c;
	struct ssemu_send s = { .tclass = 0 };
	struct iovec iov;
	struct tf *t;
	unsigned a, i, spins;
	char byte = 1;
	int ret;

	(void)state;
	config_of("preset = \"switch\";\n"
		  "modelled_jobs = ( { name = \"r\"; endpoints = 2; "
		  "pattern = \"ring\"; size = 8; count = 1; inflight = 1; } "
		  ");\n", &c);
	t = tf_open(&c);
	a = tf_add(t, SSEMU_PORT_ANY);
	iov.iov_base = &byte;
	iov.iov_len = 1;
	s.iov = &iov;
	s.iov_count = 1;
	s.dest = SSEMU_ADDR(rank_of(t, 0, 1).port, 0);
	for (i = 0; i < 3 * c.msgs_per_ep; i++) {
		spins = 0;
		while ((ret = ssemu_ep_send(t->ep[a], &s)) == -EAGAIN) {
			assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
			tf_pump(t);
			if (++spins > 100000)
				fail_msg("message %u: no slot comes back", i);
		}
		assert_int_equal(ret, 0);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, a, SSEMU_EV_SEND_DONE), 3 * c.msgs_per_ep);
	/* (and the modelled job's own message from rank 0) */
	assert_int_equal(rank_of(t, 0, 1).received, 3 * c.msgs_per_ep + 1);
	tf_close(t);
}

/*
 * A real endpoint pair on the ports the modelled jobs leave free: their
 * 8-byte messages cross the local link an incast aggressor fills (its
 * sources on switch 0, its target on switch 1), and wait longer in model
 * time than with the aggressor idle.
 */
static double real_latency_ns(bool aggressor)
{
	char text[1024];
	struct ssemu_config c;
	struct tf *t;
	unsigned a, b, i, n = 200;
	uint64_t sum = 0, k;
	char byte = 1;

	snprintf(text, sizeof(text), "preset = \"2switch\";\n"
		 "modelled_jobs = ( { name = \"aggr\"; endpoints = 13; "
		 "placement = [16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]; "
		 "pattern = \"incast\"; size = 65536; %s } );\n",
		 aggressor ? "load = 1.0;" : "load = 1.0; start_us = 1e6;");
	config_of(text, &c);
	tf_fixed_pipeline(&c);
	t = tf_open(&c);
	a = tf_add(t, 13);	/* switch 0 */
	b = tf_add(t, 17);	/* switch 1 */
	for (i = 0; i < n; i++) {
		tf_send(t, a, b, &byte, 1, c.default_tclass, i, 0);
		tf_run_idle(t, 1000000);
	}
	for (k = 0, i = 0; k < t->nlog; k++) {
		if (t->log[k].ev.type != SSEMU_EV_RECV)
			continue;
		sum += t->log[k].ev.time - t->log[k].ev.posted;
		i++;
	}
	assert_int_equal(i, n);
	if (aggressor)
		assert_true(job_stats(t, 0).delivered > 0);
	else
		assert_int_equal(job_stats(t, 0).posted, 0);
	tf_close(t);
	return (double)sum / n / SSEMU_PS_PER_NS;
}

static void test_real_beside_aggressor(void **state)
{
	double quiet, loud;

	(void)state;
	quiet = real_latency_ns(false);
	loud = real_latency_ns(true);
	print_message("real 8-byte latency: %.0f ns alone, %.0f ns beside "
		      "the incast\n", quiet, loud);
	assert_true(quiet > 0);
	assert_true(loud > 1.5 * quiet);
}

/*
 * Group windows (ssemu_config.group_windows): the encoding keeps each
 * group's times in order and puts a window's groups one after the other;
 * a run of modelled jobs that cross both groups of 2group gives the same
 * counts, latencies and hops as the engine's usual order; a shared
 * segment is refused.
 */
static void gw_run(struct ssemu_config *c, bool windows,
		   struct ssemu_mjob_stats *st, struct ssemu_fabric_stats *fs)
{
	struct tf *t;
	uint32_t j;

	c->group_windows = windows;
	t = tf_open(c);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 40 * US), 0);
	for (j = 0; j < c->nmjobs; j++)
		st[j] = job_stats(t, j);
	assert_int_equal(ssemu_fabric_stats(t->fab, fs), 0);
	tf_close(t);
}

/* A send of @iov's length and no bytes (a private store takes it). */
static struct ssemu_send no_data(struct iovec *iov)
{
	return (struct ssemu_send){ .flags = SSEMU_SEND_NO_DATA,
				    .iov = iov, .iov_count = 1 };
}

/* Telemetry of @windows or not: a message from group 1 just before the
 * end of a telemetry sample and one from group 0 at that end, posted
 * ahead; the samples' transmitted bytes into @tx (@n samples). */
static void gw_tel_run(const struct ssemu_config *c, bool windows,
		       uint64_t *tx, uint32_t n)
{
	struct ssemu_config cc = *c;
	struct ssemu_telemetry *tel;
	struct iovec iov = { NULL, 2048 };
	struct ssemu_send m = no_data(&iov);
	ssemu_time_t b = cc.tel_interval;
	struct tf *t;
	uint32_t i, k;

	cc.group_windows = windows;
	t = tf_open(&cc);
	tf_add(t, 0);	/* group 0 */
	tf_add(t, 1);
	tf_add(t, 32);	/* group 1 */
	tf_add(t, 33);
	m.dest = ssemu_ep_addr(t->ep[1]);
	assert_int_equal(ssemu_ep_send_at(t->ep[0], &m, b), 0);
	m.dest = ssemu_ep_addr(t->ep[3]);
	assert_int_equal(ssemu_ep_send_at(t->ep[2], &m, b - 1000), 0);
	assert_int_equal(ssemu_fabric_run_until(t->fab, (n + 1) * b), 0);
	assert_int_equal(ssemu_telemetry_read(t->fab, &tel), 0);
	assert_true(tel->nsamples >= n);
	for (i = 0; i < n; i++)
		for (tx[i] = 0, k = 0; k < SSEMU_MAX_TCLASS; k++)
			tx[i] += tel->samples[i].tx_bytes[k];
	ssemu_telemetry_free(tel);
	tf_close(t);
}

/*
 * A telemetry sample closes once with group windows, with every event of
 * its time in it: a packet sent just before a sample's end from one group
 * and one sent at that end from a group before it in the window fall in
 * the samples they fall in without the mode.
 */
static void test_group_windows_telemetry(void **state)
{
	uint64_t a[3], b[3];
	struct ssemu_config c;
	uint32_t i;

	(void)state;
	tf_config(&c, "2group");
	c.max_nics = 8;
	c.tel_interval = 10 * ssemu_config_group_window(&c);
	gw_tel_run(&c, false, a, 3);
	gw_tel_run(&c, true, b, 3);
	/* the first message's packet in the first sample, the second's in
	 * the next */
	assert_true(a[0] > 0 && a[1] > 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(a[i], b[i]);
}

/* The NIC pairs the telemetry counts apart, @windows or not: 255 pairs
 * of group 0 first, then, in one window, a message from group 1 and a
 * later one from group 0, each of a pair not yet seen; the table's pairs
 * (ports, messages) into @pairs, its count into @n and what the rest
 * counted into @other. */
static void gw_pairs_run(bool windows, uint32_t *pairs, uint32_t *n,
			 uint64_t *other)
{
	struct ssemu_telemetry *tel;
	struct iovec iov = { NULL, 64 };
	struct ssemu_send m = no_data(&iov);
	struct ssemu_config c;
	ssemu_time_t W, at, d0 = 0, d1 = 0;
	uint32_t i, j, k = 0;
	struct tf *t;

	tf_config(&c, "2group");
	c.max_nics = 32;
	c.group_windows = windows;
	W = ssemu_config_group_window(&c);
	t = tf_open(&c);
	for (i = 0; i < 17; i++)
		tf_add(t, i);		/* group 0: ep i at port i */
	tf_add(t, 32);			/* group 1: eps 17, 18 */
	tf_add(t, 33);
	for (i = 0; i < 17 && k < SSEMU_TEL_PAIRS - 1; i++)
		for (j = 0; j < 17 && k < SSEMU_TEL_PAIRS - 1; j++) {
			if (i == j || (i == 0 && j == 1))
				continue;
			m.dest = ssemu_ep_addr(t->ep[j]);
			assert_int_equal(ssemu_ep_send(t->ep[i], &m), 0);
			k++;
		}
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 14);
	/* two windows on: group 1's message first, both delivered in one
	 * window, group 1's first (one switch each, 0.38-0.41 us) */
	at = (ssemu_fabric_now(t->fab) / W + 2) * W;
	m.dest = ssemu_ep_addr(t->ep[18]);
	assert_int_equal(ssemu_ep_send_at(t->ep[17], &m, at + 30000), 0);
	m.dest = ssemu_ep_addr(t->ep[1]);
	assert_int_equal(ssemu_ep_send_at(t->ep[0], &m, at + 31000), 0);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 18, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 15);
	for (i = 0; i < t->nlog; i++) {
		if (t->log[i].ev.type != SSEMU_EV_RECV)
			continue;
		if (t->log[i].ep == 18)
			d1 = t->log[i].ev.time;
		else if (t->log[i].ep == 1 && t->log[i].ev.posted >= at)
			d0 = t->log[i].ev.time;
	}
	assert_true(d1 < d0);
	assert_int_equal((d1 - 1) / W, (d0 - 1) / W);
	assert_int_equal(ssemu_telemetry_read(t->fab, &tel), 0);
	*n = tel->npairs;
	for (i = 0; i < tel->npairs; i++) {
		pairs[3 * i] = tel->pair[i].src_port;
		pairs[3 * i + 1] = tel->pair[i].dst_port;
		pairs[3 * i + 2] = (uint32_t)tel->pair[i].msgs;
	}
	*other = tel->other_pairs.msgs;
	ssemu_telemetry_free(tel);
	tf_close(t);
}

/*
 * With group windows the telemetry's NIC pairs are the ones the engine's
 * usual order gives, in its order: the table's last place goes to the
 * pair first delivered to in time, group 1's, though group 0 runs the
 * window first.
 */
static void test_group_windows_pairs(void **state)
{
	uint32_t a[3 * SSEMU_TEL_PAIRS], b[3 * SSEMU_TEL_PAIRS], na, nb;
	uint64_t oa, ob;

	(void)state;
	gw_pairs_run(false, a, &na, &oa);
	gw_pairs_run(true, b, &nb, &ob);
	assert_int_equal(na, SSEMU_TEL_PAIRS);
	assert_int_equal(a[3 * (na - 1)], 32);
	assert_int_equal(a[3 * (na - 1) + 1], 33);
	assert_int_equal(oa, 1);
	assert_int_equal(nb, na);
	assert_memory_equal(a, b, 3 * na * sizeof(a[0]));
	assert_int_equal(ob, oa);
}

/*
 * Posts with group windows: after a run to a window's end every group has
 * run that instant, so a post for now is refused (the fabric left as it
 * is) and one for a later time goes, from either group.
 */
static void test_group_windows_posts(void **state)
{
	struct iovec iov = { NULL, 64 };
	struct ssemu_send m = no_data(&iov);
	struct ssemu_config c;
	ssemu_time_t W;
	struct tf *t;

	(void)state;
	tf_config(&c, "2group");
	c.max_nics = 8;
	c.group_windows = 1;
	W = ssemu_config_group_window(&c);
	t = tf_open(&c);
	tf_add(t, 0);	/* group 0 */
	tf_add(t, 32);	/* group 1 */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 3 * W), 0);
	assert_int_equal(ssemu_fabric_now(t->fab), 3 * W);
	m.dest = ssemu_ep_addr(t->ep[1]);
	assert_int_equal(ssemu_ep_send(t->ep[0], &m), -EINVAL);
	assert_int_equal(ssemu_ep_send_at(t->ep[0], &m, 3 * W), -EINVAL);
	assert_int_equal(ssemu_ep_send_at(t->ep[0], &m, 3 * W + 1), 0);
	m.dest = ssemu_ep_addr(t->ep[0]);
	assert_int_equal(ssemu_ep_send_at(t->ep[1], &m, 5 * W), 0);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_SEND_DONE), 1);
	tf_close(t);
}

static void test_group_windows(void **state)
{
	struct ssemu_mjob_stats a[SSEMU_CONFIG_MJOBS], b[SSEMU_CONFIG_MJOBS];
	struct ssemu_fabric_stats fa, fb;
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM,
				       .name = "ssemu-test-gen-gw" };
	struct ssemu_fabric *f = NULL;
	struct ssemu_region *r;
	struct ssemu_config c;
	char err[256] = "";
	ssemu_time_t W, t, prev;
	uint32_t g, j;
	struct tf *tw;

	(void)state;
	config_of("preset = \"2group\";\n"
		  "routing = \"adaptive\";\n"
		  "modelled_jobs = (\n"
		  "  { name = \"u\"; endpoints = 8; placement = \"random\"; "
		  "pattern = \"uniform\"; size = 4096; load = 0.6; },\n"
		  "  { name = \"a\"; endpoints = 8; placement = \"random\"; "
		  "pattern = \"alltoall\"; size = 16384; inflight = 4; } );\n",
		  &c);
	/* jobs on both groups: ranks spread over the whole fabric */
	c.max_nics = 32;
	c.max_switches = 4;
	W = ssemu_config_group_window(&c);
	assert_int_equal(W, c.global.delay);

	c.group_windows = 1;
	tw = tf_open(&c);
	r = tw->fab->r;
	for (g = 0; g < r->topo.g; g++) {
		prev = 0;
		/* (each window's end, its first picosecond, a time
		 * within it and its last before the end) */
		for (t = 0; t < 5 * W;
		     t += t % W == 0 ? 1 : t % W == 1 ? W / 2 - 1 :
			  t % W == W / 2 ? W / 2 - 1 : 1) {
			ssemu_time_t s = ssemu_gw_enc(r, t, g);
			/* the end of t's window: (end - W, end] */
			ssemu_time_t end = (t + W - 1) / W * W;

			assert_int_equal(ssemu_gw_dec(r, s), t);
			assert_true(t == 0 || s > prev);
			prev = s;
			/* in the run to the window's end, not in the one to
			 * the window before */
			assert_true(s <= ssemu_gw_limit(r, end));
			if (end >= W)
				assert_true(t == 0 ||
					    s > ssemu_gw_limit(r, end - W));
			if (t < end) {
				/* after the group before's times short of
				 * the end, before every group's end */
				if (g)
					assert_true(s > ssemu_gw_enc(
							    r, end - 1, g - 1));
				assert_true(s < ssemu_gw_enc(r, end, 0));
			} else {
				/* the end: after every group's times short
				 * of it, and the group before's end */
				if (t)
					assert_true(s > ssemu_gw_enc(
							    r, end - 1,
							    r->topo.g - 1));
				if (g)
					assert_true(s > ssemu_gw_enc(r, end,
								     g - 1));
			}
		}
	}
	tf_close(tw);

	gw_run(&c, false, a, &fa);
	gw_run(&c, true, b, &fb);
	assert_true(fa.pkt_hops > 1000 && fa.pkt_hops == fb.pkt_hops);
	assert_int_equal(fa.pkts_delivered, fb.pkts_delivered);
	assert_int_equal(fa.switch_lat_sum, fb.switch_lat_sum);
	for (j = 0; j < c.nmjobs; j++) {
		assert_true(a[j].delivered > 0);
		assert_int_equal(a[j].posted, b[j].posted);
		assert_int_equal(a[j].delivered, b[j].delivered);
		assert_int_equal(a[j].bytes, b[j].bytes);
		assert_int_equal(a[j].completed, b[j].completed);
		assert_int_equal(a[j].throttles, b[j].throttles);
		assert_int_equal(a[j].lat_sum, b[j].lat_sum);
		assert_memory_equal(a[j].lat, b[j].lat, sizeof(a[j].lat));
	}

	/* not in a shared segment */
	c.group_windows = 1;
	o.config = &c;
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "group windows need a fabric of one "
				    "process"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_loop_count),
		cmocka_unit_test(test_inflight_count_exact),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_start_stop),
		cmocka_unit_test(test_allreduce_chain),
		cmocka_unit_test(test_bad_declarations),
		cmocka_unit_test(test_virtual_clock_holds),
		cmocka_unit_test(test_real_to_modelled),
		cmocka_unit_test(test_real_beside_aggressor),
		cmocka_unit_test(test_group_windows),
		cmocka_unit_test(test_group_windows_telemetry),
		cmocka_unit_test(test_group_windows_pairs),
		cmocka_unit_test(test_group_windows_posts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
