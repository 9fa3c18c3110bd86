/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Routing: adversarial group-to-group traffic on "malbec" (4 groups; every
 * source in group 0 sends to its peer in group 1) is limited by the few
 * global links between the two groups under minimal routing; adaptive
 * routing spreads it over the other groups, with or without its
 * neighbours' queues (adaptive-nb).  Ordered flows stay in order
 * under adaptive routing, and every path fits the virtual channels.
 */
#include <errno.h>
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

#define NSRC 32
#define MSG 4096

struct window {
	ssemu_time_t from, to;
	uint64_t bytes;
};

static void count(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct window *w = t->priv;

	if (ev->time >= w->from && ev->time < w->to)
		w->bytes += ev->len;
}

static void malbec(struct ssemu_config *c, const char *routing)
{
	tf_config(c, "malbec");
	snprintf(c->routing, sizeof(c->routing), "%s", routing);
	c->max_nics = 2 * NSRC;
	c->max_switches = 32;
	c->eps_per_nic = 1;
	c->max_pkts = 65536;
	c->max_events = 262144;
}

/* Goodput (bytes/ps) of NSRC group-0 sources streaming to group 1. */
static double adversarial(const char *routing)
{
	static uint8_t buf[MSG];
	struct window w = { .from = 20 * SSEMU_PS_PER_US,
			    .to = 60 * SSEMU_PS_PER_US };
	struct iovec iov = { buf, MSG };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_config c;
	struct tf *t;
	ssemu_time_t now;
	unsigned i, per_group;

	malbec(&c, routing);
	per_group = c.topo.switches_per_group * c.topo.endpoints_per_switch;
	t = tf_open(&c);
	/* sources spread over group 0's switches, peers likewise in group 1 */
	for (i = 0; i < NSRC; i++)
		tf_add(t, i * (per_group / NSRC));
	for (i = 0; i < NSRC; i++)
		tf_add(t, per_group + i * (per_group / NSRC));
	t->priv = &w;
	t->on_recv = count;
	for (now = 0; now < w.to; now += 500 * SSEMU_PS_PER_NS) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		for (i = 0; i < NSRC; i++) {
			s.dest = ssemu_ep_addr(t->ep[NSRC + i]);
			while (ssemu_ep_send(t->ep[i], &s) == 0)
				;
		}
	}
	tf_run_idle(t, 4000000);
	tf_close(t);
	return (double)w.bytes / (double)(w.to - w.from);
}

static void test_route_adaptive_beats_minimal_adversarial(void **state)
{
	double min = adversarial("minimal"), ad = adversarial("adaptive");
	double ugal = adversarial("ugal"), nb = adversarial("adaptive-nb");

	print_message("group 0 -> group 1, %d sources: minimal %.0f Gb/s, "
		      "adaptive %.0f Gb/s (%.2fx), ugal %.0f Gb/s (%.2fx), "
		      "adaptive-nb %.0f Gb/s (%.2fx)\n",
		      NSRC, min * 8000, ad * 8000, ad / min, ugal * 8000,
		      ugal / min, nb * 8000, nb / min);
	assert_true(ad > 1.4 * min);
	assert_true(ugal > 1.2 * min);
	assert_true(nb > 1.4 * min);
}

/* Ordered flows under adaptive routing still arrive in order. */
static void check_order(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	uint64_t *next = t->priv;
	unsigned src = (unsigned)ev->hdr[2];

	assert_true(src < NSRC);
	assert_int_equal(ev->hdr[1], next[src]);
	next[src]++;
}

static void test_route_adaptive_keeps_order(void **state)
{
	static uint8_t buf[MSG];
	uint64_t next[NSRC] = { 0 }, sent[NSRC] = { 0 };
	struct iovec iov = { buf, MSG };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1,
				.flags = SSEMU_SEND_ORDERED };
	struct ssemu_config c;
	struct tf *t;
	ssemu_time_t now;
	unsigned i, per_group;

	malbec(&c, "adaptive");
	per_group = c.topo.switches_per_group * c.topo.endpoints_per_switch;
	t = tf_open(&c);
	for (i = 0; i < NSRC; i++)
		tf_add(t, i * (per_group / NSRC));
	for (i = 0; i < NSRC; i++)
		tf_add(t, per_group + i * (per_group / NSRC));
	t->priv = next;
	t->on_recv = check_order;
	for (now = 0; now < 30 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		for (i = 0; i < NSRC; i++) {
			/* everyone to the first peer: congestion, so paths
			 * would change if order allowed it */
			s.dest = ssemu_ep_addr(t->ep[NSRC + (i % 4)]);
			s.hdr[1] = sent[i];
			s.hdr[2] = i;
			if (ssemu_ep_send(t->ep[i], &s) == 0)
				sent[i]++;
		}
	}
	tf_run_idle(t, 4000000);
	for (i = 0; i < NSRC; i++)
		assert_int_equal(next[i], sent[i]);
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route_adaptive_beats_minimal_adversarial),
		cmocka_unit_test(test_route_adaptive_keeps_order),
	};

	return cmocka_run_group_tests_name("route", tests, NULL, NULL);
}
