/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Traffic classes at a switch output ("shares" arbitration): two sources in
 * classes with 80% and 20% minimum bandwidth saturating one output get
 * 80/20; in one class they get 50/50; the survivor gets the whole link once
 * the other stops; a class capped at 30% gets no more than that even on an
 * otherwise idle link; a higher-priority class within its guarantee goes
 * first.  Shares are measured in model time at the destination, over a
 * window after the start-up transient.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "tf.h"

#define MSG 65536

struct share {
	ssemu_time_t from, to;		/* measuring window */
	uint64_t bytes[TF_MAX];		/* by source endpoint index */
	uint32_t port_of[TF_MAX];
};

static void count_bytes(struct tf *t, unsigned ep, const struct ssemu_event *ev)
{
	struct share *sh = t->priv;
	unsigned i;

	if (ev->time < sh->from || ev->time >= sh->to)
		return;
	for (i = 0; i < t->n; i++)
		if (sh->port_of[i] == SSEMU_ADDR_PORT(ev->src))
			sh->bytes[i] += ev->len;
}

/* A two-class table: class 0 and 1 with the given shares and priorities. */
static void two_classes(struct ssemu_config *c, uint8_t min0, uint8_t max0,
			uint8_t prio0, uint8_t min1, uint8_t max1,
			uint8_t prio1)
{
	memset(c->tclass, 0, sizeof(c->tclass));
	c->ntclass = 2;
	snprintf(c->tclass[0].name, sizeof(c->tclass[0].name), "A");
	c->tclass[0].min_pct = min0;
	c->tclass[0].max_pct = max0;
	c->tclass[0].priority = prio0;
	snprintf(c->tclass[1].name, sizeof(c->tclass[1].name), "B");
	c->tclass[1].min_pct = min1;
	c->tclass[1].max_pct = max1;
	c->tclass[1].priority = prio1;
	c->default_tclass = 0;
}

/*
 * Sources 1 and 2 stream 64 KiB messages to endpoint 0 in classes @tc1 and
 * @tc2 as fast as they are allowed, source 2 only until @stop2 (ps).  Fills
 * @sh for the window [from, to).
 */
static void stream(const struct ssemu_config *c, uint32_t tc1, uint32_t tc2,
		   ssemu_time_t stop2, ssemu_time_t end, struct share *sh)
{
	static uint8_t buf[MSG];
	struct iovec iov = { buf, MSG };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct tf *t = tf_open(c);
	ssemu_time_t now;
	unsigned i;

	for (i = 0; i < 3; i++) {
		tf_add(t, i);
		sh->port_of[i] = i;
	}
	t->priv = sh;
	t->on_recv = count_bytes;
	s.dest = ssemu_ep_addr(t->ep[0]);
	for (now = 0; now < end; now += SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		s.tclass = tc1;
		while (ssemu_ep_send(t->ep[1], &s) == 0)
			;
		if (now < stop2) {
			s.tclass = tc2;
			while (ssemu_ep_send(t->ep[2], &s) == 0)
				;
		}
	}
	tf_run_idle(t, 1000000);
	tf_close(t);
}

/* Payload goodput of a 200 Gb/s link with 64 KiB messages, bytes/ps. */
static double link_goodput(const struct ssemu_config *c)
{
	double pkts = (double)MSG / c->mtu;

	return (double)c->edge.rate_bps / 8e12 * MSG /
	       (MSG + pkts * c->pkt_overhead);
}

static void test_tclass_min_shares_80_20(void **state)
{
	struct share sh = { .from = 50 * SSEMU_PS_PER_US,
			    .to = 250 * SSEMU_PS_PER_US };
	struct ssemu_config c;
	double a, b, total;

	tf_config(&c, "switch");
	two_classes(&c, 80, 100, 1, 20, 100, 1);
	stream(&c, 0, 1, UINT64_MAX, 260 * SSEMU_PS_PER_US, &sh);
	total = (double)(sh.bytes[1] + sh.bytes[2]);
	a = 100.0 * sh.bytes[1] / total;
	b = 100.0 * sh.bytes[2] / total;
	print_message("80/20 classes: %.1f%% / %.1f%% of %.1f Gb/s\n", a, b,
		      total * 8 / (double)(sh.to - sh.from) * 1000);
	assert_true(a > 77 && a < 83);
	assert_true(b > 17 && b < 23);
	/* and the link is used in full */
	assert_true(total / (double)(sh.to - sh.from) >
		    0.97 * link_goodput(&c));
}

static void test_tclass_same_class_fair(void **state)
{
	/* congestion control's windows take a while to even out */
	struct share sh = { .from = 100 * SSEMU_PS_PER_US,
			    .to = 600 * SSEMU_PS_PER_US };
	struct ssemu_config c;
	double a;

	tf_config(&c, "switch");
	two_classes(&c, 80, 100, 1, 20, 100, 1);
	stream(&c, 0, 0, UINT64_MAX, 610 * SSEMU_PS_PER_US, &sh);
	a = 100.0 * sh.bytes[1] / (double)(sh.bytes[1] + sh.bytes[2]);
	print_message("one class: %.1f%% / %.1f%%\n", a, 100 - a);
	assert_true(a > 47 && a < 53);
}

static void test_tclass_survivor_gets_link(void **state)
{
	/* B stops posting at 100 us; what it queued (up to 16 x 64 KiB)
	 * drains at its share; measure A after that */
	struct share sh = { .from = 400 * SSEMU_PS_PER_US,
			    .to = 550 * SSEMU_PS_PER_US };
	struct ssemu_config c;
	double rate;

	tf_config(&c, "switch");
	two_classes(&c, 20, 100, 1, 80, 100, 1);
	stream(&c, 0, 1, 100 * SSEMU_PS_PER_US, 560 * SSEMU_PS_PER_US, &sh);
	rate = (double)sh.bytes[1] / (double)(sh.to - sh.from);
	print_message("survivor with a 20%% guarantee: %.1f%% of the link\n",
		      100 * rate / link_goodput(&c));
	assert_int_equal(sh.bytes[2], 0);
	assert_true(rate > 0.95 * link_goodput(&c));
}

static void test_tclass_cap_holds_on_idle_link(void **state)
{
	struct share sh = { .from = 50 * SSEMU_PS_PER_US,
			    .to = 250 * SSEMU_PS_PER_US };
	struct ssemu_config c;
	double frac;

	tf_config(&c, "switch");
	two_classes(&c, 15, 30, 2, 10, 100, 1);
	/* only the capped class sends */
	stream(&c, 0, 0, 0, 260 * SSEMU_PS_PER_US, &sh);
	frac = (double)sh.bytes[1] / (double)(sh.to - sh.from) /
	       link_goodput(&c);
	print_message("class capped at 30%%, alone: %.1f%% of the link\n",
		      100 * frac);
	assert_true(frac > 0.27 && frac < 0.31);
}

/*
 * Priority inside the guarantee: a light flow (1 KiB every 500 ns, 8% of
 * the link) in a high-priority class (min 15, max 30) against three
 * saturating sources in a low-priority class goes first at the shared
 * output; in their class it takes its turn behind them.
 */
static double light_flow_latency(uint32_t light_tc)
{
	static uint8_t big[MSG], small[1024];
	struct ssemu_config c;
	struct tf *t;
	ssemu_time_t now, lat = 0;
	unsigned n = 0, i;

	tf_config(&c, "switch");
	two_classes(&c, 15, 30, 2, 10, 100, 1);
	/* No end-to-end control: let the bulk flows' queue build, which is
	 * what priority is for (with it, FGFC keeps that queue short). */
	snprintf(c.cc, sizeof(c.cc), "none");
	t = tf_open(&c);
	for (i = 0; i < 5; i++)
		tf_add(t, i);
	for (now = 0; now < 100 * SSEMU_PS_PER_US;
	     now += 500 * SSEMU_PS_PER_NS) {
		struct iovec bi = { big, MSG }, si = { small, sizeof(small) };
		struct ssemu_send s = { .dest = ssemu_ep_addr(t->ep[0]) };

		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		s.iov = &bi;
		s.iov_count = 1;
		s.tclass = 1;
		for (i = 1; i <= 3; i++)
			while (ssemu_ep_send(t->ep[i], &s) == 0)
				;
		s.iov = &si;
		s.tclass = light_tc;
		s.hdr[0] = ssemu_fabric_now(t->fab);
		s.hdr[1] = 7;
		assert_int_equal(ssemu_ep_send(t->ep[4], &s), 0);
	}
	tf_run_idle(t, 1000000);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type == SSEMU_EV_RECV && ev->hdr[1] == 7 &&
		    ev->hdr[0] > 20 * SSEMU_PS_PER_US) {
			lat += ev->time - ev->hdr[0];
			n++;
		}
	}
	tf_close(t);
	assert_true(n > 100);
	return (double)lat / n / SSEMU_PS_PER_NS;
}

static void test_tclass_priority_within_guarantee(void **state)
{
	double hi = light_flow_latency(0), lo = light_flow_latency(1);

	print_message("light flow against 3 bulk flows: %.0f ns in the "
		      "high-priority class, %.0f ns in theirs\n", hi, lo);
	/* unloaded: 2 x 43.5 ns serialisation + 2 x 5 ns + 350 ns; at most
	 * one bulk packet (84 ns) ahead of it in the high class.  In the bulk
	 * class it also waits for the inputs whose turn comes first (round
	 * robin over 4 inputs: 1.5 packets on average, 126 ns). */
	assert_true(hi < 447 + 100);
	assert_true(lo > hi + 60);
}

static void test_tclass_min_over_100_refused(void **state)
{
	struct ssemu_config c;
	char err[256] = "";

	tf_config(&c, "switch");
	two_classes(&c, 80, 100, 1, 30, 100, 1);
	assert_int_equal(ssemu_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "110%"));
}

/*
 * Four sources send 20 messages of 16 KiB each to one endpoint through one
 * switch with 4-packet buffers and no end-to-end congestion control: the
 * output toward the endpoint overflows.  @lossy: the class drops there and
 * the sources' go-back-N retry sends again.  Returns the switch's drops;
 * every message must arrive whole and complete without error either way.
 */
static uint64_t incast_small_buffers(bool lossy)
{
	static uint8_t buf[16384];
	struct ssemu_port_info pi[8];
	struct ssemu_config c;
	uint64_t drops = 0;
	struct tf *t;
	size_t i;
	unsigned src, k;
	int n;

	tf_config(&c, "switch");
	two_classes(&c, 50, 100, 1, 50, 100, 1);
	c.tclass[1].lossy = lossy;
	c.port_buf_pkts = 4;
	snprintf(c.cc, sizeof(c.cc), "none");
	t = tf_open(&c);
	for (i = 0; i < 5; i++)
		tf_add(t, (uint32_t)i);
	for (k = 0; k < 20; k++)
		for (src = 1; src <= 4; src++)
			tf_send(t, src, 0, buf, sizeof(buf), 1, k, src);
	tf_run_idle(t, 1000000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_RECV), 80);
	for (src = 1; src <= 4; src++)
		assert_int_equal(tf_count(t, src, SSEMU_EV_SEND_DONE), 20);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		if (ev->type == SSEMU_EV_RECV)
			assert_int_equal(ev->len, sizeof(buf));
		else
			assert_int_equal(ev->status, 0);
	}
	n = ssemu_fabric_ports(t->fab, pi, 8);
	while (n-- > 0)
		drops += pi[n].drops;
	tf_close(t);
	return drops;
}

static void test_tclass_lossy_drops_and_retries(void **state)
{
	uint64_t lossless = incast_small_buffers(false);
	uint64_t lossy = incast_small_buffers(true);

	print_message("4-way incast, 4-packet buffers: %llu drops lossless, "
		      "%llu lossy (all delivered)\n",
		      (unsigned long long)lossless, (unsigned long long)lossy);
	assert_int_equal(lossless, 0);
	assert_true(lossy > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tclass_min_shares_80_20),
		cmocka_unit_test(test_tclass_same_class_fair),
		cmocka_unit_test(test_tclass_survivor_gets_link),
		cmocka_unit_test(test_tclass_cap_holds_on_idle_link),
		cmocka_unit_test(test_tclass_priority_within_guarantee),
		cmocka_unit_test(test_tclass_min_over_100_refused),
		cmocka_unit_test(test_tclass_lossy_drops_and_retries),
	};

	return cmocka_run_group_tests_name("tclass", tests, NULL, NULL);
}
