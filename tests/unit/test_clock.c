/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Clock modes.  Virtual: model time runs ahead of the wall clock as fast as
 * events allow.  Realtime with dilation D: a saturated link measured in the
 * application's own wall-clock time delivers rate / D (within 5%), and model
 * time follows wall time / D.  D is chosen so this host sustains it easily
 * even with other tests running beside it: what is measured is the pacing,
 * not the host's speed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct pair {
	struct ssemu_fabric *f;
	struct ssemu_nic *na, *nb;
	struct ssemu_ep *a, *b;
};

static void pair_open(struct pair *p, enum ssemu_clock_mode clock, double d)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_config cfg;
	char err[256];

	assert_int_equal(ssemu_config_preset("switch", &cfg), 0);
	cfg.clock = clock;
	cfg.dilation = d;
	cfg.max_nics = 2;
	cfg.eps_per_nic = 1;
	fo.config = &cfg;
	assert_int_equal(ssemu_fabric_open(&fo, &p->f, err, sizeof(err)), 0);
	assert_int_equal(ssemu_nic_attach(p->f, NULL, &p->na), 0);
	assert_int_equal(ssemu_nic_attach(p->f, NULL, &p->nb), 0);
	assert_int_equal(ssemu_ep_open(p->na, &p->a), 0);
	assert_int_equal(ssemu_ep_open(p->nb, &p->b), 0);
}

static void pair_close(struct pair *p)
{
	ssemu_ep_close(p->a);
	ssemu_ep_close(p->b);
	ssemu_nic_detach(p->na);
	ssemu_nic_detach(p->nb);
	ssemu_fabric_close(p->f);
}

/*
 * Stream 64 KiB messages from a to b for @secs of wall time, keeping the
 * sender busy; return goodput (bits per wall second) measured after a
 * warm-up, and the model time elapsed over the measured window.
 */
static double stream(struct pair *p, double warm, double secs,
		     double *model_secs)
{
	static char payload[65536];
	struct iovec iov = { payload, sizeof(payload) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_event ev[32];
	double t0 = wall(), tstart = 0, now;
	uint64_t bytes = 0;
	ssemu_time_t m0 = 0;
	bool measuring = false;
	int n, i, ret;

	s.dest = ssemu_ep_addr(p->b);
	s.tclass = ssemu_fabric_config(p->f)->default_tclass;
	for (;;) {
		while ((ret = ssemu_ep_send(p->a, &s)) == 0)
			;
		assert_int_equal(ret, -EAGAIN);
		ssemu_fabric_progress(p->f, 4096);
		while ((n = ssemu_ep_poll(p->a, ev, 32)) > 0)
			for (i = 0; i < n; i++)
				assert_int_equal(ev[i].status, 0);
		now = wall();
		while ((n = ssemu_ep_poll(p->b, ev, 32)) > 0) {
			for (i = 0; i < n; i++) {
				assert_int_equal(ev[i].type, SSEMU_EV_RECV);
				if (measuring)
					bytes += ev[i].len;
				ssemu_event_release(p->b, &ev[i]);
			}
		}
		if (!measuring && now - t0 >= warm) {
			measuring = true;
			tstart = now;
			m0 = ssemu_fabric_now(p->f);
		}
		if (measuring && now - tstart >= secs)
			break;
	}
	*model_secs = (double)(ssemu_fabric_now(p->f) - m0) / SSEMU_PS_PER_S;
	return (double)bytes * 8.0 / (now - tstart);
}

static void test_clock_realtime_link_rate(void **state)
{
	const double d = 2000.0;
	struct ssemu_fabric_info fi;
	const struct ssemu_config *c;
	double got, want, model_secs;
	struct pair p;

	pair_open(&p, SSEMU_CLOCK_REALTIME, d);
	c = ssemu_fabric_config(p.f);
	/* goodput of the edge link, in wall-clock bits per second */
	want = (double)c->edge.rate_bps / d * 65536.0 /
	       (65536.0 + 32.0 * c->pkt_overhead);
	got = stream(&p, 0.2, 1.0, &model_secs);
	print_message("realtime D=%g: %.2f Mb/s wall-clock, expected %.2f "
		      "(%.2f%%); model advanced %.3f ms in 1 s\n", d, got / 1e6,
		      want / 1e6, 100.0 * (got - want) / want,
		      model_secs * 1e3);
	assert_true(got > want * 0.95 && got < want * 1.05);
	/* model time follows wall time / D */
	assert_true(model_secs > 0.95 / d && model_secs < 1.05 / d);
	assert_int_equal(ssemu_fabric_info(p.f, &fi), 0);
	assert_int_equal(fi.clock, SSEMU_CLOCK_REALTIME);
	/* the host kept up: well under a model millisecond behind */
	assert_true(fi.lag_ps < SSEMU_PS_PER_MS);
	pair_close(&p);
}

static void test_clock_virtual_runs_ahead(void **state)
{
	const struct ssemu_config *c;
	double got, wire, model_secs;
	struct pair p;

	pair_open(&p, SSEMU_CLOCK_VIRTUAL, 1.0);
	c = ssemu_fabric_config(p.f);
	got = stream(&p, 0.05, 0.3, &model_secs);
	/* model-time goodput is the link's, whatever the wall clock did */
	wire = (double)c->edge.rate_bps * 65536.0 /
	       (65536.0 + 32.0 * c->pkt_overhead);
	assert_true(model_secs > 0);
	print_message("virtual: %.2f Gb/s in model time over %.3f model ms "
		      "(host-limited %.3f Gb/s wall)\n",
		      got * 0.3 / model_secs / 1e9, model_secs * 1e3,
		      got / 1e9);
	assert_true(got * 0.3 / model_secs < wire * 1.01);
	assert_true(got * 0.3 / model_secs > wire * 0.9);
	pair_close(&p);
}

static void test_clock_realtime_bad_dilation(void **state)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_config cfg;
	struct ssemu_fabric *f;
	char err[256];

	ssemu_config_preset("switch", &cfg);
	cfg.clock = SSEMU_CLOCK_REALTIME;
	cfg.dilation = 0;
	fo.config = &cfg;
	assert_int_equal(ssemu_fabric_open(&fo, &f, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "dilation"));
	cfg.clock = (enum ssemu_clock_mode)7;
	cfg.dilation = 1;
	assert_int_equal(ssemu_fabric_open(&fo, &f, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "clock"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_realtime_link_rate),
		cmocka_unit_test(test_clock_virtual_runs_ahead),
		cmocka_unit_test(test_clock_realtime_bad_dilation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
