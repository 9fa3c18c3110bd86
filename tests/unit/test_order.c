/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The model's results do not depend on the order in which it schedules
 * its events: random traffic over a small fabric with pipeline jitter and
 * routing draws, run once as it is and once with every handler's events
 * handed to the engine in the reverse order (ssemu_model_perturb, which
 * also gives them other pool indices), must give the same deliveries and
 * completions, each at the same model time, in the same order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "tf.h"
#include "ssemu_model_int.h"

#define NEPS 12
#define NMSG 160

/* One run: @nmsg random messages (seeded by @seed) posted in waves,
 * every event polled logged in @t. */
static struct tf *run(const char *preset, const char *routing,
		      uint64_t seed, bool perturb)
{
	static uint8_t buf[65536];
	struct ssemu_config c;
	struct tf *t;
	uint64_t s = seed;
	unsigned i, from, to, port, step;
	size_t len;

	tf_config(&c, preset);
	snprintf(c.routing, sizeof(c.routing), "%s", routing);
	c.max_switches = 32;
	c.seed = seed;
	t = tf_open(&c);
	/* endpoints spread over the fabric's switches */
	step = (unsigned)(ssemu_config_nports(&c) / NEPS);
	for (i = 0; i < NEPS; i++) {
		port = i * (step ? step : 1);
		tf_add(t, port);
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	ssemu_model_perturb = perturb;
	for (i = 0; i < NMSG; i++) {
		from = (unsigned)(tf_rng_next(&s) % NEPS);
		to = (unsigned)(tf_rng_next(&s) % (NEPS - 1));
		to += to >= from;
		/* 1 to 64 packets, or a short one */
		len = tf_rng_next(&s) % 4 ? 1 + tf_rng_next(&s) % 65535 :
					    tf_rng_next(&s) % 64;
		tf_send(t, from, to, buf, len, (uint32_t)(i % 2), i, i);
		/* waves: the next posts while these are in flight */
		if (i % 16 == 15)
			assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
	}
	tf_run_idle(t, 1000000);
	ssemu_model_perturb = 0;
	return t;
}

static void same_logs(const struct tf *a, const struct tf *b)
{
	size_t i;

	assert_int_equal(a->nlog, b->nlog);
	for (i = 0; i < a->nlog; i++) {
		const struct tf_rec *x = &a->log[i], *y = &b->log[i];

		if (x->ep != y->ep || x->ev.type != y->ev.type ||
		    x->ev.time != y->ev.time || x->ev.cookie != y->ev.cookie ||
		    x->ev.hdr[1] != y->ev.hdr[1] || x->ev.len != y->ev.len ||
		    x->ev.status != y->ev.status)
			fail_msg("event %zu differs: ep %u type %u at %llu "
				 "(message %llu) against ep %u type %u at %llu "
				 "(message %llu)", i, x->ep, x->ev.type,
				 (unsigned long long)x->ev.time,
				 (unsigned long long)(x->ev.type ==
						      SSEMU_EV_RECV ?
						      x->ev.hdr[1] :
						      x->ev.cookie),
				 y->ep, y->ev.type,
				 (unsigned long long)y->ev.time,
				 (unsigned long long)(y->ev.type ==
						      SSEMU_EV_RECV ?
						      y->ev.hdr[1] :
						      y->ev.cookie));
	}
}

static void check(const char *preset, const char *routing, uint64_t seed)
{
	struct tf *a = run(preset, routing, seed, false);
	struct tf *b = run(preset, routing, seed, true);

	/* every message delivered and completed */
	assert_int_equal(tf_count(a, UINT32_MAX, SSEMU_EV_RECV), NMSG);
	assert_int_equal(tf_count(a, UINT32_MAX, SSEMU_EV_SEND_DONE), NMSG);
	same_logs(a, b);
	tf_close(a);
	tf_close(b);
}

static void order_one_switch(void **state)
{
	(void)state;
	check("switch", "minimal", 1);
	check("switch", "minimal", 2);
}

static void order_groups_minimal(void **state)
{
	(void)state;
	check("2group", "minimal", 3);
}

static void order_groups_adaptive(void **state)
{
	(void)state;
	check("2group", "adaptive", 4);
	check("2group", "ugal", 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(order_one_switch),
		cmocka_unit_test(order_groups_minimal),
		cmocka_unit_test(order_groups_adaptive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
