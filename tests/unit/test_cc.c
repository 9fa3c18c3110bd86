/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end congestion control.  Eight sources on switch 0 of "2switch"
 * flood endpoint D on switch 1 (an incast); a victim on switch 0 sends
 * 16 KiB messages to E, also on switch 1, through the same local link.
 * Without congestion control the incast fills switch 1's input buffer from
 * that link and the victim waits behind it (tree saturation); with the
 * endpoint-pair control only the incast's pairs slow down and the victim
 * keeps close to its unloaded latency.  The incast's own sources also keep
 * sending at full speed to other destinations.
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

#define NAGG 8		/* incast sources: endpoints 1..8 (switch 0) */
#define VICTIM 9	/* endpoint 9 (switch 0) */
#define D 16		/* endpoint 16 (switch 1): the incast target */
#define E 17		/* endpoint 17 (switch 1): the victim's target */

struct victim {
	ssemu_time_t sum, from;
	unsigned n;
};

static void victim_latency(struct tf *t, unsigned ep,
			   const struct ssemu_event *ev)
{
	struct victim *v = t->priv;

	if (ev->hdr[1] == 1 && ev->hdr[0] >= v->from) {
		v->sum += ev->time - ev->hdr[0];
		v->n++;
	}
}

/* Victim mean latency (ns) with or without the incast, under @cc. */
static double run(const char *cc, bool incast, uint64_t *d_bytes)
{
	static uint8_t big[65536], small[16384];
	struct victim v = { .from = 50 * SSEMU_PS_PER_US };
	struct ssemu_config c;
	struct ssemu_nic_stats st;
	struct tf *t;
	ssemu_time_t now;
	unsigned i, ep_d = 0, ep_e = 0, ep_v = 0, agg[NAGG];

	tf_config(&c, "2switch");
	snprintf(c.cc, sizeof(c.cc), "%s", cc);
	c.local.rate_bps = 2 * c.edge.rate_bps;
	t = tf_open(&c);
	for (i = 0; i < NAGG; i++)
		agg[i] = tf_add(t, 1 + i);
	ep_v = tf_add(t, VICTIM);
	ep_d = tf_add(t, D);
	ep_e = tf_add(t, E);
	t->priv = &v;
	t->on_recv = victim_latency;
	for (now = 0; now < 200 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US) {
		struct iovec bi = { big, sizeof(big) },
			     si = { small, sizeof(small) };
		struct ssemu_send s = { .iov_count = 1 };

		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		if (incast) {
			s.iov = &bi;
			s.dest = ssemu_ep_addr(t->ep[ep_d]);
			for (i = 0; i < NAGG; i++)
				while (ssemu_ep_send(t->ep[agg[i]], &s) == 0)
					;
		}
		/* the victim: 16 KiB every 5 us, 13% of a link */
		if (now % (5 * SSEMU_PS_PER_US))
			continue;
		s.iov = &si;
		s.dest = ssemu_ep_addr(t->ep[ep_e]);
		s.hdr[0] = ssemu_fabric_now(t->fab);
		s.hdr[1] = 1;
		assert_int_equal(ssemu_ep_send(t->ep[ep_v], &s), 0);
	}
	/* what D received in the 200 us, before the backlog drains */
	assert_int_equal(ssemu_nic_stats(t->nic[ep_d], &st), 0);
	if (d_bytes)
		*d_bytes = st.rx_bytes;
	tf_run_idle(t, 2000000);
	tf_close(t);
	assert_true(v.n >= 25);
	return (double)v.sum / v.n / SSEMU_PS_PER_NS;
}

static void test_cc_incast_victim(void **state)
{
	uint64_t d_none, d_pair;
	double alone = run("endpoint-pair", false, NULL);
	double none = run("none", true, &d_none);
	double pair = run("endpoint-pair", true, &d_pair);

	print_message("victim latency: alone %.0f ns, with incast %.0f ns "
		      "without congestion control (%.1fx), %.0f ns with it "
		      "(%.2fx); D received %.1f / %.1f MB in 200 us\n", alone,
		      none, none / alone, pair, pair / alone, d_none / 1e6,
		      d_pair / 1e6);
	assert_true(none > 3 * alone);
	assert_true(pair < 1.5 * alone);
	/* the incast target's link stays busy either way */
	assert_true(d_pair > d_none * 85 / 100);
}

/*
 * A source in the incast still reaches another destination at speed: a
 * second endpoint on agg[0]'s NIC streams to F (switch 0) while the NIC's
 * first endpoint takes part in the incast to D.
 */
static double f_rate(const char *cc)
{
	static uint8_t big[65536];
	struct ssemu_config c;
	struct ssemu_nic_stats st;
	struct ssemu_event ev[32];
	struct ssemu_ep *side;
	struct tf *t;
	ssemu_time_t now;
	unsigned i, ep_d, ep_f, agg[NAGG];
	int n, k;

	tf_config(&c, "2switch");
	snprintf(c.cc, sizeof(c.cc), "%s", cc);
	c.local.rate_bps = 2 * c.edge.rate_bps;
	t = tf_open(&c);
	for (i = 0; i < NAGG; i++)
		agg[i] = tf_add(t, 1 + i);
	ep_d = tf_add(t, D);
	ep_f = tf_add(t, 0);
	assert_int_equal(ssemu_ep_open(t->nic[agg[0]], &side), 0);
	for (now = 0; now < 200 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US) {
		struct iovec bi = { big, sizeof(big) };
		struct ssemu_send s = { .iov = &bi, .iov_count = 1 };

		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		while ((n = ssemu_ep_poll(side, ev, 32)) > 0)
			for (k = 0; k < n; k++)
				assert_int_equal(ev[k].status, 0);
		s.dest = ssemu_ep_addr(t->ep[ep_d]);
		for (i = 0; i < NAGG; i++)
			while (ssemu_ep_send(t->ep[agg[i]], &s) == 0)
				;
		s.dest = ssemu_ep_addr(t->ep[ep_f]);
		while (ssemu_ep_send(side, &s) == 0)
			;
	}
	assert_int_equal(ssemu_nic_stats(t->nic[ep_f], &st), 0);
	ssemu_ep_close(side);
	tf_close(t);
	return (double)st.rx_bytes / (200 * SSEMU_PS_PER_US);
}

static void test_cc_only_pairs_slow_down(void **state)
{
	double none = f_rate("none"), pair = f_rate("endpoint-pair");
	double link = 200e9 / 8e12 * 65536 / (65536 + 32 * 64);

	print_message("agg[0] to F while in the incast: %.0f%% of the link "
		      "without congestion control, %.0f%% with it\n",
		      100 * none / link, 100 * pair / link);
	/* its pair to F is not throttled: it gets F's link (the NIC's own
	 * link is shared with its incast traffic) */
	assert_true(pair > 0.45 * link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cc_incast_victim),
		cmocka_unit_test(test_cc_only_pairs_slow_down),
	};

	return cmocka_run_group_tests_name("cc", tests, NULL, NULL);
}
