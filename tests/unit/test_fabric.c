/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the fabric store and its public API (emu/ssemu_fabric.c) on
 * in-process fabrics: end-to-end data integrity across Dragonfly groups at
 * every size boundary, determinism (same seed and inputs, same event
 * times), ssemu_fabric_run_until, idle, progress and wait, NIC attach and
 * detach (-EADDRINUSE, -ENOSPC, -EINVAL), the endpoints-per-NIC limit, bad
 * open options, the full-scale topology, the realtime clock, and what
 * happens to a sender when its destination goes away or the model runs out
 * of switch instances.
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
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "tf.h"
#include "ssemu_priv.h"	/* the futex words of ep_wake */

/* ------------------------------------------------------------------ */
/* Harness: an in-process fabric with NICs, one endpoint each           */
/* ------------------------------------------------------------------ */

static uint8_t pattern_byte(uint64_t a, uint64_t b, size_t off)
{
	return (uint8_t)(a * 131 + b * 7 + off * 13 + (off >> 8) + (off >> 16));
}

/* Serialisation time of @bytes at the preset's 200 Gb/s, rounded up. */
static ssemu_time_t ser_time_ps(uint64_t bytes)
{
	return (bytes * 8 * SSEMU_PS_PER_S + 200000000000ULL - 1) /
	       200000000000ULL;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Data integrity                                                       */
/* ------------------------------------------------------------------ */

struct integrity {
	uint64_t checked;
};

static void check_payload(struct tf *t, unsigned ep,
			  const struct ssemu_event *ev)
{
	struct integrity *in = t->priv;
	const uint8_t *p = ssemu_event_data(t->ep[ep], ev);
	uint64_t tag = ev->hdr[1];
	uint8_t *copy;
	size_t off;

	assert_true(ev->len == ev->hdr[2]);
	if (ev->len)
		assert_non_null(p);
	for (off = 0; off < ev->len; off++)
		if (p[off] != pattern_byte(tag, ev->len, off))
			fail_msg("message %llx (%llu bytes): byte %zu is %u, "
				 "want %u", (unsigned long long)tag,
				 (unsigned long long)ev->len, off, p[off],
				 pattern_byte(tag, ev->len, off));
	copy = malloc(ev->len + 1);
	assert_non_null(copy);
	assert_true(ssemu_event_copy(t->ep[ep], ev, 0, copy, ev->len + 1) ==
		    ev->len);
	if (ev->len)
		assert_memory_equal(copy, p, ev->len);
	free(copy);
	in->checked++;
}

static void test_fabric_data_integrity_2group(void **state)
{
	static const size_t sizes[] = {
		0, 1, 191, 192, 193, 2047, 2048, 2049, 65535, 65536,
	};
	static const uint32_t pairs[][2] = {
		{ 3, 45 }, { 45, 3 }, { 20, 40 }, { 63, 0 }, { 17, 50 },
	};
	static uint8_t buf[65536];
	struct integrity in = { 0 };
	struct ssemu_config c;
	unsigned ep[64], i, p;
	bool have[64] = { false };
	uint64_t sent = 0;
	struct tf *t;
	size_t s, off;

	tf_config(&c, "2group");
	t = tf_open(&c);
	for (p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++)
		for (i = 0; i < 2; i++)
			if (!have[pairs[p][i]]) {
				ep[pairs[p][i]] = tf_add(t, pairs[p][i]);
				have[pairs[p][i]] = true;
			}
	t->priv = &in;
	t->on_recv = check_payload;
	for (p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++) {
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			uint64_t tag = (uint64_t)p << 8 | s;
			struct iovec iov[2];
			struct ssemu_send m = {
				.dest = ssemu_ep_addr(t->ep[ep[pairs[p][1]]]),
				.tclass = c.default_tclass,
				.iov = iov,
				.iov_count = 2,
				.cookie = tag,
			};
			int ret;

			for (off = 0; off < sizes[s]; off++)
				buf[off] = pattern_byte(tag, sizes[s], off);
			/* split unevenly in two */
			iov[0].iov_base = buf;
			iov[0].iov_len = sizes[s] / 3;
			iov[1].iov_base = buf + sizes[s] / 3;
			iov[1].iov_len = sizes[s] - sizes[s] / 3;
			m.hdr[1] = tag;
			m.hdr[2] = sizes[s];
			while ((ret = ssemu_ep_send(t->ep[ep[pairs[p][0]]],
						    &m)) == -EAGAIN) {
				assert_true(ssemu_fabric_progress(t->fab, 64) >=
					    0);
				tf_pump(t);
			}
			assert_int_equal(ret, 0);
			/* scribble over the source: the data was copied */
			memset(buf, 0xee, sizes[s]);
			sent++;
		}
	}
	tf_run_idle(t, 1000000);
	assert_true(in.checked == sent);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE), sent);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[i].ev.status, 0);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Determinism                                                          */
/* ------------------------------------------------------------------ */

/* Congested random traffic with jitter on 2group; returns the fabric's
 * event log (the caller frees it). */
static struct tf_rec *det_run(uint64_t seed, size_t *n,
			      struct ssemu_fabric_stats *fs)
{
	static uint8_t buf[6000];
	static const uint32_t ports[] = { 0, 1, 17, 30, 33, 47, 50, 63 };
	struct ssemu_config c;
	struct tf_rec *log;
	uint64_t rng = 77;
	struct tf *t;
	unsigned k, i;

	tf_config(&c, "2group");
	c.seed = seed;
	t = tf_open(&c);
	for (i = 0; i < 8; i++)
		tf_add(t, ports[i]);
	for (k = 0; k < 600; k++) {
		unsigned s = (unsigned)(tf_rng_next(&rng) % 8);
		unsigned d = (unsigned)(tf_rng_next(&rng) % 7);

		if (d >= s)
			d++;
		if (k % 5 == 0)
			assert_int_equal(ssemu_fabric_run_until(t->fab,
				ssemu_fabric_now(t->fab) +
				tf_rng_next(&rng) % 3000000), 0);
		tf_send(t, s, d, buf, tf_rng_next(&rng) % sizeof(buf),
			(uint32_t)(tf_rng_next(&rng) % 4), k, k);
	}
	tf_run_idle(t, 1000000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV), 600);
	assert_int_equal(ssemu_fabric_stats(t->fab, fs), 0);
	*n = t->nlog;
	log = t->log;
	t->log = NULL;
	tf_close(t);
	return log;
}

static void test_fabric_determinism(void **state)
{
	struct ssemu_fabric_stats fa, fb, fc;
	struct tf_rec *a, *b, *c;
	size_t na, nb, nc, i, differ = 0;

	a = det_run(1, &na, &fa);
	b = det_run(1, &nb, &fb);
	assert_int_equal(na, nb);
	for (i = 0; i < na; i++) {
		const struct ssemu_event *x = &a[i].ev, *y = &b[i].ev;

		if (a[i].ep != b[i].ep || x->type != y->type ||
		    x->time != y->time || x->src != y->src ||
		    x->len != y->len || x->status != y->status ||
		    x->cookie != y->cookie || x->tclass != y->tclass ||
		    memcmp(x->hdr, y->hdr, sizeof(x->hdr)))
			fail_msg("run 2 differs at event %zu: type %u/%u time "
				 "%llu/%llu", i, x->type, y->type,
				 (unsigned long long)x->time,
				 (unsigned long long)y->time);
	}
	assert_true(fa.now == fb.now && fa.events == fb.events);
	assert_true(fa.pkt_hops == fb.pkt_hops);
	assert_true(fa.switch_lat_sum == fb.switch_lat_sum);
	/* another seed: other pipeline jitter, other times */
	c = det_run(2, &nc, &fc);
	for (i = 0; i < na && i < nc; i++)
		differ += a[i].ev.time != c[i].ev.time;
	assert_true(differ > 0);
	assert_true(fa.switch_lat_sum != fc.switch_lat_sum);
	free(a);
	free(b);
	free(c);
}

/* ------------------------------------------------------------------ */
/* Engine control                                                       */
/* ------------------------------------------------------------------ */

static void test_fabric_run_until_and_idle(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric_stats fs;
	struct ssemu_event ev[4];
	struct tf *t;
	ssemu_time_t t0;
	char byte = 1;

	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_true(ssemu_fabric_now(t->fab) == 0);
	assert_true(ssemu_fabric_idle(t->fab));
	assert_int_equal(ssemu_fabric_progress(t->fab, 100), 0);
	assert_int_equal(ssemu_fabric_progress(t->fab, 0), 0);
	/* the clock moves to the requested time even with nothing to do */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 5 * SSEMU_PS_PER_US),
			 0);
	assert_true(ssemu_fabric_now(t->fab) == 5 * SSEMU_PS_PER_US);
	/* and never backwards */
	assert_int_equal(ssemu_fabric_run_until(t->fab, SSEMU_PS_PER_US), 0);
	assert_true(ssemu_fabric_now(t->fab) == 5 * SSEMU_PS_PER_US);

	t0 = ssemu_fabric_now(t->fab);
	tf_send(t, 0, 1, &byte, 1, 0, 1, 0);
	assert_false(ssemu_fabric_idle(t->fab));	/* posted */
	/* the message needs ~366 ns: not there at +100 ns */
	assert_int_equal(ssemu_fabric_run_until(t->fab, t0 + 100000), 0);
	assert_true(ssemu_fabric_now(t->fab) == t0 + 100000);
	assert_false(ssemu_fabric_idle(t->fab));	/* in flight */
	assert_int_equal(ssemu_ep_poll(t->ep[1], ev, 4), 0);
	/* there at +1 us, stamped with its own time, not the target's */
	assert_int_equal(ssemu_fabric_run_until(t->fab, t0 + 1000000), 0);
	assert_true(ssemu_fabric_now(t->fab) == t0 + 1000000);
	assert_int_equal(ssemu_ep_poll(t->ep[1], ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	assert_true(ev[0].time > t0 + 100000 && ev[0].time < t0 + 1000000);
	assert_true(ev[0].time == t0 + 2 * (ser_time_ps(65) + 5000) +
				  c.sw_lat_mean);
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_int_equal(ssemu_ep_poll(t->ep[0], ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_SEND_DONE);
	assert_true(ssemu_fabric_idle(t->fab));
	/* progress does not move the clock when there is nothing to do */
	assert_int_equal(ssemu_fabric_progress(t->fab, 100), 0);
	assert_true(ssemu_fabric_now(t->fab) == t0 + 1000000);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.now == t0 + 1000000);
	assert_true(fs.events > 0);
	assert_true(fs.pkts_delivered == 1);
	/* progress runs at most its budget */
	tf_send(t, 0, 1, &byte, 1, 0, 2, 0);
	assert_int_equal(ssemu_fabric_progress(t->fab, 1), 1);
	assert_int_equal(ssemu_fabric_progress(t->fab, 2), 2);
	tf_run_idle(t, 1000);
	tf_close(t);
}

static void test_fabric_wait(void **state)
{
	struct ssemu_config c;
	struct ssemu_event ev[4];
	struct tf *t;
	uint64_t w0, w1;
	char byte = 1;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	/* nothing coming: times out (sleeping, not returning at once) */
	w0 = wall_ns();
	assert_int_equal(ssemu_ep_wait(t->ep[1], 30), 0);
	w1 = wall_ns();
	assert_true(w1 - w0 >= 25000000ULL);
	assert_true(w1 - w0 < 2000000000ULL);
	assert_int_equal(ssemu_ep_wait(t->ep[1], 0), 0);
	/* a message: wait drives the engine itself */
	tf_send(t, 0, 1, &byte, 1, 0, 1, 0);
	assert_int_equal(ssemu_ep_wait(t->ep[1], 1000), 1);
	assert_int_equal(ssemu_ep_poll(t->ep[1], ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_int_equal(ssemu_ep_wait(t->ep[0], 1000), 1);
	assert_int_equal(ssemu_ep_poll(t->ep[0], ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_SEND_DONE);
	tf_close(t);
}

/*
 * An event push writes an endpoint's and its NIC's futex words only when
 * someone sleeps on them (ep_wake): with no sleeper they stay as they
 * were; with a sleeper counted, both are bumped.
 */
static void test_fabric_wake_only_sleepers(void **state)
{
	struct ssemu_event ev[4];
	struct ssemu_config c;
	struct ssemu_region *r;
	struct ssemu_ep_sh *sh;
	struct ssemu_nic_sh *n;
	uint32_t e0, n0;
	struct tf *t;
	char byte = 1;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	r = t->fab->r;
	sh = ssemu_r_ep(r, t->ep[1]->index);
	n = ssemu_r_nic(r, ssemu_ep_nic(r, t->ep[1]->index));
	e0 = sh->ev_futex;
	n0 = n->ev_futex;
	tf_send(t, 0, 1, &byte, 1, 0, 1, 0);
	while (ssemu_ep_poll(t->ep[1], ev, 4) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_int_equal(sh->ev_futex, e0);
	assert_int_equal(n->ev_futex, n0);
	/* one sleeper on the endpoint, one on the NIC */
	sh->waiters = 1;
	n->waiters = 1;
	tf_send(t, 0, 1, &byte, 1, 0, 1, 0);
	while (ssemu_ep_poll(t->ep[1], ev, 4) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_true(sh->ev_futex != e0);
	assert_true(n->ev_futex != n0);
	sh->waiters = 0;
	n->waiters = 0;
	tf_close(t);
}

/*
 * A release after ssemu_event_data does not check the event again, but
 * only for that event: a copy naming another generation of the slot is
 * refused (the slot stays held); the real one gives the slot back.  (A
 * message longer than SSEMU_EV_CARRY: a shorter one's event holds no
 * slot.)
 */
static void test_fabric_release_checked_event(void **state)
{
	struct ssemu_event ev[4], stale;
	struct ssemu_config c;
	struct ssemu_region *r;
	struct tf *t;
	char bytes[SSEMU_EV_CARRY + 8];
	uint32_t *st;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	r = t->fab->r;
	memset(bytes, 7, sizeof(bytes));
	tf_send(t, 0, 1, bytes, sizeof(bytes), 0, 1, 0);
	while (ssemu_ep_poll(t->ep[1], ev, 4) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	st = ssemu_r_mstate(r, ev[0].slot);
	assert_non_null(ssemu_event_data(t->ep[1], &ev[0]));
	stale = ev[0];
	stale.gen++;
	ssemu_event_release(t->ep[1], &stale);
	assert_false(*st & SSEMU_MSG_RXDONE);
	assert_non_null(ssemu_event_data(t->ep[1], &ev[0]));
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_true(*st & SSEMU_MSG_RXDONE);
	tf_close(t);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The sender's slot behind each RECV logged from @from on. */
static uint32_t recv_slots(const struct tf *t, size_t from, uint32_t *slot,
			   uint32_t max)
{
	uint32_t n = 0;

	for (; from < t->nlog; from++)
		if (t->log[from].ev.type == SSEMU_EV_RECV) {
			assert_true(n < max);
			slot[n++] = t->log[from].ev.slot;
		}
	return n;
}

/*
 * An endpoint takes the lowest free of its first page's worth of message
 * slots: messages sent one after another each done before the next reuse
 * one slot; a burst takes the low ones, then slots round the rest; after
 * it the lowest again.
 */
static void test_fabric_low_slots_first(void **state)
{
	uint32_t low = 4096 / sizeof(struct ssemu_msg), first, k, n;
	uint32_t slot[64];
	char bytes[SSEMU_EV_CARRY + 8];
	struct ssemu_config c;
	struct tf *t;
	size_t mark;

	(void)state;
	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_true(low + 3 <= c.msgs_per_ep && low + 3 <= 64);
	first = t->ep[0]->index * c.msgs_per_ep;
	memset(bytes, 5, sizeof(bytes));
	for (k = 0; k < 20; k++) {
		mark = t->nlog;
		tf_send(t, 0, 1, bytes, sizeof(bytes), 0, k, 0);
		tf_run_idle(t, 100000);
		assert_int_equal(recv_slots(t, mark, slot, 64), 1);
		assert_int_equal(slot[0], first);
	}
	mark = t->nlog;
	for (k = 0; k < low + 3; k++)
		tf_send(t, 0, 1, bytes, sizeof(bytes), 0, k, 0);
	tf_run_idle(t, 100000);
	n = recv_slots(t, mark, slot, 64);
	assert_int_equal(n, low + 3);
	qsort(slot, n, sizeof(slot[0]), cmp_u32);
	for (k = 0; k < n; k++)
		assert_int_equal(slot[k], first + k);
	mark = t->nlog;
	tf_send(t, 0, 1, bytes, sizeof(bytes), 0, 99, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(recv_slots(t, mark, slot, 64), 1);
	assert_int_equal(slot[0], first);
	tf_close(t);
}

/*
 * An event ring of the fewest entries (resources.ev_ring): a burst of
 * many times that to one endpoint that does not poll waits in the
 * overflow list and arrives whole and in order once it does.
 */
static void test_fabric_small_event_ring(void **state)
{
	char bytes[SSEMU_EV_CARRY + 8];
	struct ssemu_ep_sh *sh;
	struct ssemu_config c;
	uint32_t k, n = 0;
	struct tf *t;
	size_t i;

	(void)state;
	tf_config(&c, "switch");
	c.ev_ring = SSEMU_EV_RING_MIN;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_true(c.msgs_per_ep >= 3 * SSEMU_EV_RING_MIN);
	memset(bytes, 3, sizeof(bytes));
	for (k = 0; k < 3 * SSEMU_EV_RING_MIN; k++)
		tf_send(t, 0, 1, bytes, sizeof(bytes), 0, k, k);
	sh = ssemu_r_ep(t->fab->r, t->ep[1]->index);
	assert_int_equal(ssemu_r_ring(t->fab->r, sh->ev_ring_off)->mask,
			 SSEMU_EV_RING_MIN - 1);
	/* the model delivers everything before anyone polls: what the ring
	 * has no room for waits in the endpoint's overflow list */
	for (k = 0; k < 100000 && !ssemu_fabric_idle(t->fab); k++)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_true(sh->rx_head != SSEMU_NONE);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ep == 1 && t->log[i].ev.type == SSEMU_EV_RECV)
			assert_int_equal(t->log[i].ev.hdr[1], n++);
	assert_int_equal(n, 3 * SSEMU_EV_RING_MIN);
	tf_close(t);
}

/*
 * A message of at most SSEMU_EV_CARRY bytes arrives with its payload in
 * the event: read through the same calls, no slot behind it, and the
 * sender's slot given back before the receiver releases anything.  On a
 * shared store its CRC is checked as the engine copies it: a payload
 * changed between the post and the engine taking it fails (-EBADMSG)
 * and is never handed out.
 */
static void carried_round(bool shared, bool corrupt)
{
	struct ssemu_event ev[4];
	struct ssemu_config c;
	struct ssemu_region *r;
	struct ssemu_msg *m;
	uint8_t payload[SSEMU_EV_CARRY], out[SSEMU_EV_CARRY];
	uint32_t i, first, busy;
	struct tf *t;
	int n;

	tf_config(&c, "switch");
	t = shared ? tf_open_shared(&c) : tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	r = t->fab->r;
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(0xa0 + i);
	tf_send(t, 0, 1, payload, sizeof(payload), 0, 1, 0);
	first = ssemu_ep_slot(t->ep[0]) * c.msgs_per_ep;
	if (corrupt) {
		/* the slot just posted, before the engine takes it */
		for (i = first; i < first + c.msgs_per_ep; i++)
			if (*ssemu_r_mstate(r, i) == SSEMU_MSG_BUSY)
				break;
		assert_true(i < first + c.msgs_per_ep);
		m = ssemu_r_msg(r, i);
		m->data[3] ^= 0xff;
	}
	while ((n = ssemu_ep_poll(t->ep[1], ev, 4)) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	assert_int_equal(ev[0].len, sizeof(payload));
	assert_int_equal(ev[0].slot, SSEMU_NONE);
	memset(out, 0, sizeof(out));
	if (corrupt) {
		assert_int_equal(ev[0].status, -EBADMSG);
		assert_int_equal(ssemu_event_verify(t->ep[1], &ev[0]),
				 -EBADMSG);
		assert_int_equal(ssemu_event_copy(t->ep[1], &ev[0], 0, out,
						  sizeof(out)), 0);
		assert_null(ssemu_event_data(t->ep[1], &ev[0]));
	} else {
		assert_int_equal(ev[0].status, 0);
		assert_int_equal(ssemu_event_verify(t->ep[1], &ev[0]), 0);
		assert_int_equal(ssemu_event_copy(t->ep[1], &ev[0], 0, out,
						  sizeof(out)), sizeof(out));
		assert_memory_equal(out, payload, sizeof(out));
		assert_memory_equal(ssemu_event_payload(t->ep[1], &ev[0]),
				    payload, sizeof(payload));
		/* a part, from an offset */
		assert_int_equal(ssemu_event_copy(t->ep[1], &ev[0], 10, out,
						  sizeof(out)),
				 sizeof(out) - 10);
		assert_memory_equal(out, payload + 10, sizeof(out) - 10);
	}
	/* the receiver holds no slot: every busy one of the sender's has
	 * its receive side done already */
	busy = 0;
	for (i = first; i < first + c.msgs_per_ep; i++)
		if (*ssemu_r_mstate(r, i) & SSEMU_MSG_BUSY) {
			busy++;
			assert_true(*ssemu_r_mstate(r, i) & SSEMU_MSG_RXDONE);
		}
	assert_true(busy <= 1);
	ssemu_event_release(t->ep[1], &ev[0]);
	assert_int_equal(ssemu_r_ep(r, ssemu_ep_slot(t->ep[1]))->delivered,
			 ssemu_r_ep(r, ssemu_ep_slot(t->ep[1]))->released);
	tf_close(t);
}

static void test_fabric_carried_event(void **state)
{
	(void)state;
	carried_round(false, false);
	carried_round(true, false);
	carried_round(true, true);
}

/*
 * ssemu_event_copy_iov: a RECV's payload written into an iov of several
 * entries from an offset, the whole message checked against its CRC from
 * the same read.  A shared store: the bytes arrive, an iov shorter than
 * the payload takes what fits (the rest checked in the segment), a byte
 * changed in the segment before the copy fails it (-EBADMSG, counted)
 * whether it is one of those copied or not; memory that cannot be written
 * fails with -EFAULT and the process lives; a carried message that failed
 * the engine's check writes nothing.  A private store copies alike.
 */
static void copy_iov_round(bool shared, uint64_t len)
{
	struct ssemu_config c;
	struct ssemu_event ev[4];
	struct ssemu_fabric_stats fi;
	uint8_t *payload = malloc(len), *seg, *out = malloc(2 * len + 64);
	uint8_t *ro;
	struct iovec iov[3];
	uint64_t i, errs;
	size_t cut = len / 3;
	struct tf *t;
	int n, k;

	assert_non_null(payload);
	assert_non_null(out);
	for (i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	tf_config(&c, "switch");
	t = shared ? tf_open_shared(&c) : tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (k = 0; k < 5; k++) {
		tf_send(t, 0, 1, payload, len, 0, (uint64_t)k, 0);
		while ((n = ssemu_ep_poll(t->ep[1], ev, 4)) == 0)
			assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
		assert_int_equal(n, 1);
		assert_int_equal(ev[0].len, len);
		seg = (uint8_t *)ssemu_event_payload(t->ep[1], &ev[0]);
		assert_non_null(seg);
		memset(out, 0xee, 2 * len + 64);
		/* three entries, the first 5 bytes of the iov skipped */
		iov[0] = (struct iovec){ out, 5 + cut };
		iov[1] = (struct iovec){ out + 5 + cut, 1 };
		iov[2] = (struct iovec){ out + 6 + cut, len + 10 };
		assert_int_equal(ssemu_fabric_stats(t->fab, &fi), 0);
		errs = fi.crc_errors;
		switch (k) {
		case 0:	/* all of it */
			assert_int_equal(ssemu_event_copy_iov(t->ep[1], &ev[0],
							      iov, 3, 5, len),
					 (ssize_t)len);
			assert_memory_equal(out + 5, payload, len);
			assert_int_equal(out[4], 0xee);
			assert_int_equal(out[5 + len], 0xee);
			break;
		case 1:	/* what the iov holds; the rest checked */
			iov[2].iov_len = 2;
			assert_int_equal(ssemu_event_copy_iov(t->ep[1], &ev[0],
							      iov, 3, 5, len),
					 (ssize_t)SSEMU_MIN(len, cut + 3));
			assert_memory_equal(out + 5, payload,
					    SSEMU_MIN(len, cut + 3));
			break;
		case 2:	/* a byte changed, one not copied */
		case 3:	/* a byte changed, one copied */
			if (!shared && len <= SSEMU_EV_CARRY)
				break;	/* (in the event: not in a segment) */
			if (len > SSEMU_EV_CARRY)
				seg[k == 2 ? len - 1 : 0] ^= 0x10;
			iov[2].iov_len = len > 2 ? 2 : 0;
			n = (int)ssemu_event_copy_iov(t->ep[1], &ev[0], iov, 3,
						      5, k == 2 ? 1 : len);
			assert_int_equal(ssemu_fabric_stats(t->fab, &fi), 0);
			if (shared && len > SSEMU_EV_CARRY) {
				assert_int_equal(n, -EBADMSG);
				assert_int_equal(fi.crc_errors, errs + 1);
			} else {
				assert_true(n >= 0);
				assert_int_equal(fi.crc_errors, errs);
			}
			break;
		case 4:	/* memory that cannot be written */
			ro = mmap(NULL, 4096 + len, PROT_READ,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			assert_true(ro != MAP_FAILED);
			iov[0] = (struct iovec){ ro, 4096 + len };
			assert_int_equal(ssemu_event_copy_iov(t->ep[1], &ev[0],
							      iov, 1, 0, len),
					 len ? -EFAULT : 0);
			iov[0] = (struct iovec){ NULL, len };
			assert_int_equal(ssemu_event_copy_iov(t->ep[1], &ev[0],
							      iov, 1, 0, len),
					 len ? -EFAULT : 0);
			munmap(ro, 4096 + len);
			/* and the event itself, whole, still good */
			assert_int_equal(ssemu_event_copy_iov(t->ep[1], &ev[0],
							      iov + 2, 1, 0,
							      len),
					 (ssize_t)len);
			assert_memory_equal(out + 6 + cut, payload, len);
			break;
		}
		ssemu_event_release(t->ep[1], &ev[0]);
	}
	assert_int_equal(ssemu_event_copy_iov(t->ep[1], NULL, iov, 1, 0, 1),
			 -EINVAL);
	/* a SEND_DONE has no payload */
	while ((n = ssemu_ep_poll(t->ep[0], ev, 1)) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, SSEMU_EV_SEND_DONE);
	assert_int_equal(ssemu_event_copy_iov(t->ep[0], &ev[0], iov, 1, 0, 1),
			 -EINVAL);
	ssemu_event_release(t->ep[0], &ev[0]);
	tf_close(t);
	free(payload);
	free(out);
}

static void test_fabric_copy_iov(void **state)
{
	static const uint64_t lens[] = { 9, 1000, 4095, 16384, 60000 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		copy_iov_round(false, lens[i]);
		copy_iov_round(true, lens[i]);
	}
}

/* Endpoint @from's message of @len bytes to @to, for model time @at (0:
 * now, ssemu_ep_send), its header carrying @tag. */
static int send_at_round(struct tf *t, unsigned from, unsigned to,
			 uint64_t len, uint64_t tag, ssemu_time_t at)
{
	struct iovec iov = { NULL, len };
	struct ssemu_send s = {
		.dest = ssemu_ep_addr(t->ep[to]),
		.flags = SSEMU_SEND_NO_DATA,
		.iov = &iov,
		.iov_count = 1,
		.cookie = tag,
	};

	s.hdr[1] = tag;
	return at ? ssemu_ep_send_at(t->ep[from], &s, at) :
		    ssemu_ep_send(t->ep[from], &s);
}

/* What a fabric of 8 NICs on "2group" logged of a test's traffic: every
 * polled event's endpoint, type, time and tag, in a fixed order. */
static void send_at_log(struct tf *t, uint64_t *out, size_t n)
{
	size_t i;

	assert_int_equal(t->nlog, n);
	for (i = 0; i < n; i++)
		out[i] = (uint64_t)t->log[i].ev.time ^
			 (uint64_t)t->log[i].ep << 56 ^
			 (uint64_t)t->log[i].ev.type << 48 ^
			 t->log[i].ev.hdr[1] << 40 ^ t->log[i].ev.cookie << 32;
}

/*
 * A message posted for a later model time (ssemu_ep_send_at) is the
 * message a send posted when the engine stopped at that time is: the same
 * delivery and completion times for every message, with traffic in
 * flight, several posts of one time, and a long one; posts for times
 * before now, a shared store and the realtime clock are refused, a close
 * delivers what is due, and one that gives up discards it (its POST then
 * does nothing).
 */
static void test_fabric_send_at(void **state)
{
	static const struct {
		unsigned from, to;
		uint64_t len;
		ssemu_time_t at;
	} plan[] = {
		{ 0, 5, 2048, 0 },	/* at 0: in flight when the rest go */
		{ 6, 1, 65536, 0 },
		{ 1, 5, 4096, 250000 },	/* three at one time, to one NIC */
		{ 2, 5, 4096, 250000 },
		{ 7, 5, 100, 250000 },
		{ 3, 4, 65536, 251001 },
		{ 4, 3, 8, 900000 },
	};
	uint64_t via_stop[2 * ARRAY_SIZE(plan) + 6];
	uint64_t ahead[2 * ARRAY_SIZE(plan) + 6];
	struct ssemu_fabric_stats st;
	struct ssemu_config c;
	struct tf *t;
	size_t i, n = ARRAY_SIZE(plan);
	ssemu_time_t tie = 0;
	unsigned k;

	(void)state;
	tf_config(&c, "2group");
	/* the first message's acknowledgement reaches its NIC at tie (the
	 * plan's traffic alone): three more posts at that instant, which go
	 * in after it (as a post between two runs stopped there does) */
	t = tf_open(&c);
	for (i = 0; i < 8; i++)
		tf_add(t, (uint32_t)(i * 4));
	for (i = 0; i < n; i++)
		assert_int_equal(send_at_round(t, plan[i].from, plan[i].to,
					       plan[i].len, i + 1, plan[i].at),
				 0);
	tf_run_idle(t, 100000);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_SEND_DONE &&
		    t->log[i].ev.cookie == 1)
			tie = t->log[i].ev.time;
	tf_close(t);
	/* both ways: the engine stopped at each time, then sends; every post
	 * made at 0 for its time */
	for (k = 0; k < 2; k++) {
		t = tf_open(&c);
		for (i = 0; i < 8; i++)
			tf_add(t, (uint32_t)(i * 4));
		for (i = 0; i < n; i++) {
			if (k == 0) {
				assert_int_equal(ssemu_fabric_run_until(
							 t->fab, plan[i].at),
						 0);
				assert_int_equal(ssemu_fabric_now(t->fab),
						 plan[i].at);
			}
			assert_int_equal(send_at_round(t, plan[i].from,
						       plan[i].to, plan[i].len,
						       i + 1,
						       k ? plan[i].at : 0),
					 0);
		}
		/* the ties (after the plan's last time): from the acknowledged
		 * NIC, and from its neighbour, to the same destination */
		assert_true(tie > plan[n - 1].at);
		if (k == 0)
			assert_int_equal(ssemu_fabric_run_until(t->fab, tie), 0);
		assert_int_equal(send_at_round(t, 0, 5, 65536, 8, k ? tie : 0),
				 0);
		assert_int_equal(send_at_round(t, 0, 5, 2048, 9, k ? tie : 0),
				 0);
		assert_int_equal(send_at_round(t, 1, 5, 65536, 10, k ? tie : 0),
				 0);
		tf_run_idle(t, 100000);
		send_at_log(t, k ? ahead : via_stop, 2 * n + 6);
		tf_close(t);
	}
	for (i = 0; i < 2 * n + 6; i++)
		assert_int_equal(ahead[i], via_stop[i]);

	t = tf_open(&c);
	for (i = 0; i < 4; i++)
		tf_add(t, (uint32_t)i);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 5000), 0);
	/* refused: before now, no endpoint or message */
	assert_int_equal(send_at_round(t, 0, 1, 64, 1, 4999), -EINVAL);
	assert_int_equal(send_at_round(t, 0, 1, 64, 1, 1), -EINVAL);
	assert_int_equal(ssemu_ep_send_at(NULL, NULL, 6000), -EINVAL);
	/* due at a millisecond: a close drives the engine until it is
	 * delivered, then its receiver has it */
	assert_int_equal(send_at_round(t, 0, 1, 64, 2, 1000000), 0);
	ssemu_ep_close(t->ep[0]);
	t->ep[0] = NULL;
	tf_pump(t);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_true(t->log[0].ev.time > 1000000);
	/* a close that gives up at once discards what is due, and its POST
	 * enters nothing */
	assert_int_equal(send_at_round(t, 2, 3, 64, 3, 3000000), 0);
	assert_int_equal(ssemu_ep_close_timeout(t->ep[2], 0), -ETIMEDOUT);
	t->ep[2] = NULL;
	assert_int_equal(ssemu_fabric_stats(t->fab, &st), 0);
	assert_int_equal(st.msgs_discarded, 1);
	assert_int_equal(ssemu_fabric_run_until(t->fab, UINT64_MAX), 0);
	tf_pump(t);
	assert_int_equal(tf_count(t, 3, SSEMU_EV_RECV), 0);
	tf_close(t);

	/* the realtime clock, a shared store */
	tf_config(&c, "switch");
	c.clock = SSEMU_CLOCK_REALTIME;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_int_equal(send_at_round(t, 0, 1, 0, 1, 1000000), -ENOTSUP);
	tf_close(t);
	tf_config(&c, "switch");
	t = tf_open_shared(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	{
		/* (with its bytes: a shared store takes no SEND_NO_DATA) */
		uint64_t word = 42;
		struct iovec iov = { &word, sizeof(word) };
		struct ssemu_send m = {
			.dest = ssemu_ep_addr(t->ep[1]),
			.iov = &iov,
			.iov_count = 1,
		};

		assert_int_equal(ssemu_ep_send_at(t->ep[0], &m, 1000000),
				 -ENOTSUP);
		assert_int_equal(ssemu_ep_send(t->ep[0], &m), 0);
	}
	tf_close(t);
}

/*
 * One message of @len bytes from endpoint 0 to 1, with its bytes or
 * without (SSEMU_SEND_NO_DATA, no address to read them from): its RECV
 * into @rx and its SEND_DONE into @done.
 */
static void no_data_round(bool nodata, uint64_t len, struct ssemu_event *rx,
			  struct ssemu_event *done)
{
	struct ssemu_config c;
	struct tf *t;
	uint8_t *bytes = calloc(1, len ? len : 1);
	struct iovec iov = { nodata ? NULL : bytes, len };
	struct ssemu_send s = {
		.flags = nodata ? SSEMU_SEND_NO_DATA : 0,
		.iov = &iov,
		.iov_count = 1,
		.cookie = 7,
	};
	size_t i;

	assert_non_null(bytes);
	tf_config(&c, "switch");
	tf_fixed_pipeline(&c);
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.hdr[1] = 0x5eed;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	tf_run_idle(t, 1000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	for (i = 0; i < t->nlog; i++) {
		if (t->log[i].ev.type == SSEMU_EV_RECV)
			*rx = t->log[i].ev;
		else
			*done = t->log[i].ev;
	}
	tf_close(t);
	free(bytes);
}

/*
 * A message sent with SSEMU_SEND_NO_DATA is the model's message of its
 * length, to the picosecond, with nothing read or written: its RECV says
 * so and hands out no payload, and holds no slot.  It takes a large
 * buffer as one with bytes would (what an endpoint has in flight stays
 * bounded by them).  A shared store refuses it; unknown flags are
 * refused everywhere.
 */
static void test_fabric_no_data(void **state)
{
	static const uint64_t lens[] = { 8, SSEMU_EV_CARRY + 1, 5000, 60000 };
	struct ssemu_event rx, done, rx0, done0, ev;
	struct ssemu_config c;
	struct iovec iov = { NULL, 5000 };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_region *r;
	uint32_t first, k;
	struct tf *t;
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		no_data_round(false, lens[i], &rx0, &done0);
		no_data_round(true, lens[i], &rx, &done);
		assert_int_equal(rx.len, lens[i]);
		assert_int_equal(rx.flags, SSEMU_EV_NO_DATA);
		assert_int_equal(rx0.flags, 0);
		assert_int_equal(rx.slot, SSEMU_NONE);
		assert_int_equal(rx.hdr[1], 0x5eed);
		/* the same message in the model */
		assert_int_equal(rx.time, rx0.time);
		assert_int_equal(rx.posted, rx0.posted);
		assert_int_equal(done.time, done0.time);
		assert_int_equal(done.cookie, 7);
		assert_int_equal(done.status, 0);
	}

	tf_config(&c, "switch");
	c.bufs_per_ep = 2;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	r = t->fab->r;
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.flags = SSEMU_SEND_NO_DATA;
	/* no payload to hand out, and nothing to check */
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	while ((n = ssemu_ep_poll(t->ep[1], &ev, 1)) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
	assert_int_equal(n, 1);
	assert_int_equal(ev.type, SSEMU_EV_RECV);
	assert_int_equal(ev.flags, SSEMU_EV_NO_DATA);
	errno = 0;
	assert_null(ssemu_event_data(t->ep[1], &ev));
	assert_int_equal(errno, EINVAL);
	assert_null(ssemu_event_payload(t->ep[1], &ev));
	assert_int_equal(ssemu_event_copy(t->ep[1], &ev, 0, &k, sizeof(k)),
			 0);
	assert_int_equal(ssemu_event_verify(t->ep[1], &ev), -EINVAL);
	/* the receiver holds no slot: the sender's was given back for it
	 * at the push */
	first = ssemu_ep_slot(t->ep[0]) * c.msgs_per_ep;
	for (k = first; k < first + c.msgs_per_ep; k++)
		if (*ssemu_r_mstate(r, k) & SSEMU_MSG_BUSY)
			assert_true(*ssemu_r_mstate(r, k) & SSEMU_MSG_RXDONE);
	ssemu_event_release(t->ep[1], &ev);
	tf_run_idle(t, 1000);
	/* two large buffers: a third message in flight waits for one */
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EAGAIN);
	tf_run_idle(t, 1000);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	tf_run_idle(t, 1000);
	/* flags it does not know */
	s.flags = 1u << 30;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	s.flags = SSEMU_RMA_REMOTE_EVENT;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -EINVAL);
	tf_close(t);

	/* a shared store: its slots carry what their CRCs cover */
	tf_config(&c, "switch");
	t = tf_open_shared(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	s.dest = ssemu_ep_addr(t->ep[1]);
	s.flags = SSEMU_SEND_NO_DATA;
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), -ENOTSUP);
	tf_close(t);
}

/* A NO_DATA message of @len bytes from @t's endpoint 0 to endpoint 1. */
static int watch_send(struct tf *t, uint64_t len)
{
	struct iovec iov = { NULL, len };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1,
				.flags = SSEMU_SEND_NO_DATA };

	s.dest = ssemu_ep_addr(t->ep[1]);
	return ssemu_ep_send(t->ep[0], &s);
}

/* Two buffers, both in flight, endpoint 1's ring of SSEMU_EV_RING_MIN. */
static struct tf *watch_fabric(void)
{
	struct ssemu_config c;
	struct tf *t;

	tf_config(&c, "switch");
	c.bufs_per_ep = 2;
	c.ev_ring = SSEMU_EV_RING_MIN;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	assert_int_equal(watch_send(t, 5000), 0);
	assert_int_equal(watch_send(t, 5000), 0);
	assert_int_equal(watch_send(t, 5000), -EAGAIN);
	return t;
}

/*
 * A run that watches an endpoint stops after the event that frees one of
 * its slots, where a post is first taken when the engine is stepped an
 * event at a time, and names it; an unwatched run goes on to its end.  A
 * run stops too when an event finds a ring full (a slot's completion
 * waits on it).
 */
static void test_fabric_watch(void **state)
{
	ssemu_time_t t_step, t_watch;
	uint32_t slots[4];
	struct tf *t;
	unsigned k;
	int ret;

	(void)state;
	/* stepped: the first event after which the post is taken */
	t = watch_fabric();
	for (k = 0; watch_send(t, 5000) == -EAGAIN; k++) {
		assert_true(k < 100000);
		assert_int_equal(ssemu_fabric_progress(t->fab, 1), 1);
		tf_pump(t);
	}
	t_step = ssemu_fabric_now(t->fab);
	tf_run_idle(t, 1000);
	tf_close(t);

	/* watched: one run, stopped there */
	t = watch_fabric();
	assert_int_equal(ssemu_ep_watch(t->ep[0], true), 0);
	assert_int_equal(ssemu_ep_watch(t->ep[0], true), 0);
	assert_int_equal(t->fab->r->nwatch, 1);
	ret = ssemu_fabric_run_until_watched(t->fab, UINT64_MAX);
	assert_int_equal(ret, 1);
	t_watch = ssemu_fabric_now(t->fab);
	assert_int_equal(t_watch, t_step);
	/* ... naming the endpoint */
	assert_int_equal(ssemu_fabric_watched(t->fab, slots, 4), 1);
	assert_int_equal(slots[0], ssemu_ep_slot(t->ep[0]));
	assert_int_equal(ssemu_fabric_watched(t->fab, slots, 0), -ENOSPC);
	assert_int_equal(ssemu_fabric_watched(t->fab, NULL, 4), -EINVAL);
	assert_int_equal(watch_send(t, 5000), 0);
	/* not watched: to the end */
	assert_int_equal(ssemu_ep_watch(t->ep[0], false), 0);
	assert_int_equal(t->fab->r->nwatch, 0);
	assert_int_equal(ssemu_fabric_run_until_watched(t->fab, t_watch +
							SSEMU_PS_PER_US), 0);
	assert_int_equal(ssemu_fabric_now(t->fab), t_watch + SSEMU_PS_PER_US);
	tf_run_idle(t, 1000);
	assert_int_equal(ssemu_ep_watch(NULL, true), -EINVAL);
	assert_int_equal(ssemu_fabric_run_until_watched(NULL, 0), -EINVAL);
	tf_close(t);

	/* a full ring: endpoint 1 polls nothing, its RECVs wait in its
	 * overflow list; the run stops at the first of them (watched or
	 * not), naming no endpoint */
	t = watch_fabric();
	for (k = 0; k < SSEMU_EV_RING_MIN; k++) {
		while ((ret = watch_send(t, 8)) == -EAGAIN)
			assert_true(ssemu_fabric_run_until_watched(
					    t->fab, UINT64_MAX) >= 0);
		assert_int_equal(ret, 0);
	}
	while ((ret = ssemu_fabric_run_until_watched(t->fab, UINT64_MAX)) ==
		       1 &&
	       ssemu_r_ep(t->fab->r, t->ep[1]->index)->rx_head == SSEMU_NONE)
		;
	assert_int_equal(ret, 1);
	assert_true(ssemu_r_ep(t->fab->r, t->ep[1]->index)->rx_head !=
		    SSEMU_NONE);
	assert_int_equal(ssemu_fabric_watched(t->fab, slots, 4), 0);
	/* and polling makes room: the run goes on to the end */
	tf_pump(t);
	while ((ret = ssemu_fabric_run_until_watched(t->fab, UINT64_MAX)) ==
	       1)
		tf_pump(t);
	assert_int_equal(ret, 0);
	assert_true(ssemu_fabric_idle(t->fab));
	/* closing ends the watch */
	assert_int_equal(ssemu_ep_watch(t->ep[1], true), 0);
	ssemu_ep_close(t->ep[1]);
	t->ep[1] = NULL;
	assert_int_equal(t->fab->r->nwatch, 0);
	tf_close(t);
}

/* Realtime clock: the model never runs ahead of wall time / dilation. */
static void test_fabric_realtime_clock(void **state)
{
	struct ssemu_config c;
	struct ssemu_event ev[4];
	struct tf *t;
	uint64_t w0, w1;
	char byte = 1;

	tf_config(&c, "switch");
	c.clock = SSEMU_CLOCK_REALTIME;
	c.dilation = 1000.0;	/* 1 model ns = 1 wall us */
	w0 = wall_ns();
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_send(t, 0, 1, &byte, 1, 0, 1, 0);
	assert_int_equal(ssemu_ep_wait(t->ep[1], 5000), 1);
	w1 = wall_ns();
	assert_int_equal(ssemu_ep_poll(t->ep[1], ev, 4), 1);
	/* ~366 model ns took ~366 wall us, not less */
	assert_true(ev[0].time >= 300000);
	/* model ps <= wall ns / dilation x 1000 ps per ns = wall ns */
	if (ev[0].time > w1 - w0)
		fail_msg("model time %llu ps ran ahead of wall time %llu ns / "
			 "1000", (unsigned long long)ev[0].time,
			 (unsigned long long)(w1 - w0));
	assert_true(w1 - w0 >= 300000);
	ssemu_event_release(t->ep[1], &ev[0]);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* NICs and endpoints                                                   */
/* ------------------------------------------------------------------ */

static int attach(struct ssemu_fabric *f, uint32_t port, struct ssemu_nic **n)
{
	struct ssemu_nic_opts no = { .port = port, .job = 3, .rank = 1 };

	return ssemu_nic_attach(f, &no, n);
}

static void test_fabric_attach_detach(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric_stats fs;
	struct ssemu_nic *n[20], *x;
	struct ssemu_ep *ep;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	c.max_nics = 32;
	t = tf_open(&c);
	/* first free ports, in order, around an explicit one */
	assert_int_equal(attach(t->fab, 2, &n[2]), 0);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &n[0]), 0);
	assert_int_equal(ssemu_nic_port(n[0]), 0);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &n[1]), 0);
	assert_int_equal(ssemu_nic_port(n[1]), 1);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &n[3]), 0);
	assert_int_equal(ssemu_nic_port(n[3]), 3);
	assert_int_equal(ssemu_nic_attach(t->fab, NULL, &n[4]), 0);
	assert_int_equal(ssemu_nic_port(n[4]), 4);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.nics_attached == 5);
	/* taken, out of range, no result pointer */
	assert_int_equal(attach(t->fab, 2, &x), -EADDRINUSE);
	assert_int_equal(attach(t->fab, 0, &x), -EADDRINUSE);
	assert_int_equal(attach(t->fab, 16, &x), -EINVAL);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY - 1, &x), -EINVAL);
	assert_int_equal(ssemu_nic_attach(t->fab, NULL, NULL), -EINVAL);
	/* detach frees the port for the next attach */
	ssemu_nic_detach(n[1]);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.nics_attached == 4);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &n[1]), 0);
	assert_int_equal(ssemu_nic_port(n[1]), 1);
	ssemu_nic_detach(n[2]);
	assert_int_equal(attach(t->fab, 2, &n[2]), 0);
	/* all 16 ports: then -ENOSPC for "any" */
	for (i = 5; i < 16; i++) {
		assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &n[i]), 0);
		assert_int_equal(ssemu_nic_port(n[i]), i);
	}
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &x), -ENOSPC);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.nics_attached == 16);
	/* a NIC re-attached at a port works and starts from zero */
	assert_int_equal(ssemu_ep_open(n[7], &ep), 0);
	ssemu_ep_close(ep);
	ssemu_nic_detach(n[7]);
	assert_int_equal(attach(t->fab, 7, &n[7]), 0);
	{
		struct ssemu_nic_stats st;

		assert_int_equal(ssemu_nic_stats(n[7], &st), 0);
		assert_true(st.tx_msgs == 0 && st.rx_msgs == 0);
		assert_int_equal(ssemu_nic_stats(NULL, &st), -EINVAL);
		assert_int_equal(ssemu_nic_stats(n[7], NULL), -EINVAL);
	}
	for (i = 0; i < 16; i++)
		ssemu_nic_detach(n[i]);
	ssemu_nic_detach(NULL);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.nics_attached == 0);
	tf_close(t);

	/* max_nics smaller than the ports: -ENOSPC for NIC slots */
	tf_config(&c, "switch");
	c.max_nics = 3;
	t = tf_open(&c);
	for (i = 0; i < 3; i++)
		assert_int_equal(attach(t->fab, 10 + i, &n[i]), 0);
	assert_int_equal(attach(t->fab, 0, &x), -ENOSPC);
	assert_int_equal(attach(t->fab, SSEMU_PORT_ANY, &x), -ENOSPC);
	ssemu_nic_detach(n[1]);
	assert_int_equal(attach(t->fab, 0, &n[1]), 0);
	assert_int_equal(attach(t->fab, 1, &x), -ENOSPC);
	for (i = 0; i < 3; i++)
		ssemu_nic_detach(n[i]);
	tf_close(t);
}

/* Traffic keeps working across detach and re-attach at the same port. */
static void test_fabric_reattach_traffic(void **state)
{
	static uint8_t buf[3000];
	struct ssemu_config c;
	struct tf *t;
	size_t i;

	tf_config(&c, "2switch");
	t = tf_open(&c);
	tf_add(t, 1);
	tf_add(t, 25);
	tf_send(t, 0, 1, buf, sizeof(buf), 0, 1, 1);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	ssemu_ep_close(t->ep[1]);
	ssemu_nic_detach(t->nic[1]);
	t->ep[1] = NULL;
	t->nic[1] = NULL;
	/* nobody at port 25 now */
	{
		struct iovec iov = { buf, 10 };
		struct ssemu_send s = {
			.dest = SSEMU_ADDR(25, 0),
			.iov = &iov,
			.iov_count = 1,
			.cookie = 2,
		};

		assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
		tf_run_idle(t, 100000);
		assert_int_equal(t->log[t->nlog - 1].ev.type,
				 SSEMU_EV_SEND_DONE);
		assert_int_equal(t->log[t->nlog - 1].ev.status, -EHOSTUNREACH);
	}
	/* a new NIC at port 25 gets the traffic again */
	{
		struct ssemu_nic_opts no = { .port = 25, .rank = -1 };

		assert_int_equal(ssemu_nic_attach(t->fab, &no, &t->nic[1]), 0);
		assert_int_equal(ssemu_ep_open(t->nic[1], &t->ep[1]), 0);
	}
	t->nlog = 0;
	tf_send(t, 0, 1, buf, sizeof(buf), 0, 3, 3);
	tf_send(t, 1, 0, buf, sizeof(buf), 0, 4, 4);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_RECV), 1);
	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[i].ev.status, 0);
	tf_close(t);
}

static void test_fabric_eps_per_nic_limit(void **state)
{
	struct ssemu_config c;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep[4];
	struct tf *t;

	tf_config(&c, "switch");
	c.eps_per_nic = 2;
	t = tf_open(&c);
	assert_int_equal(attach(t->fab, 4, &nic), 0);
	assert_int_equal(ssemu_ep_open(nic, &ep[0]), 0);
	assert_int_equal(ssemu_ep_open(nic, &ep[1]), 0);
	assert_int_equal(ssemu_ep_open(nic, &ep[2]), -ENOSPC);
	assert_int_equal(ssemu_ep_open(nic, NULL), -EINVAL);
	assert_true(ssemu_ep_addr(ep[0]) == SSEMU_ADDR(4, 0));
	assert_true(ssemu_ep_addr(ep[1]) == SSEMU_ADDR(4, 1));
	ssemu_ep_close(ep[0]);
	assert_int_equal(ssemu_ep_open(nic, &ep[2]), 0);
	assert_true(ssemu_ep_addr(ep[2]) == SSEMU_ADDR(4, 0));
	assert_int_equal(ssemu_ep_open(nic, &ep[3]), -ENOSPC);
	ssemu_ep_close(ep[1]);
	ssemu_ep_close(ep[2]);
	ssemu_ep_close(NULL);
	/* a second NIC has its own endpoints */
	{
		struct ssemu_nic *nic2;

		assert_int_equal(attach(t->fab, 5, &nic2), 0);
		assert_int_equal(ssemu_ep_open(nic2, &ep[0]), 0);
		assert_int_equal(ssemu_ep_open(nic2, &ep[1]), 0);
		assert_true(ssemu_ep_addr(ep[1]) == SSEMU_ADDR(5, 1));
		ssemu_ep_close(ep[0]);
		ssemu_ep_close(ep[1]);
		ssemu_nic_detach(nic2);
	}
	ssemu_nic_detach(nic);
	tf_close(t);
}

static void test_fabric_open_bad_options(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_config c;
	struct ssemu_fabric *f = NULL;
	char err[256], long_name[64];

	memset(err, 0, sizeof(err));
	assert_int_equal(ssemu_fabric_open(NULL, &f, err, sizeof(err)),
			 -EINVAL);
	assert_true(err[0]);
	assert_int_equal(ssemu_fabric_open(&o, NULL, err, sizeof(err)),
			 -EINVAL);

	tf_config(&c, "switch");
	o.config = &c;
	o.name = "bad/name";
	memset(err, 0, sizeof(err));
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad/name"));
	assert_non_null(strstr(err, "'/'"));
	o.name = "/leading";
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	o.name = "";
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	memset(long_name, 'n', 49);
	long_name[49] = 0;
	o.name = long_name;
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	/* no error buffer: still refused, no crash */
	o.name = "bad/name";
	assert_int_equal(ssemu_fabric_open(&o, &f, NULL, 0), -EINVAL);

	o.store = (enum ssemu_store)7;
	o.name = NULL;
	memset(err, 0, sizeof(err));
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown store"));

	/* an invalid configuration says why */
	o.store = SSEMU_STORE_PRIVATE;
	c.mtu = 10;
	memset(err, 0, sizeof(err));
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "mtu"));
	/* a store beyond 1 TiB is refused before mapping anything */
	tf_config(&c, "switch");
	c.max_nics = 4096;
	c.eps_per_nic = 16;
	c.max_eps = 0;
	c.bufs_per_ep = 64;
	c.buf_size = 1u << 24;
	memset(err, 0, sizeof(err));
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), -ENOMEM);
	assert_non_null(strstr(err, "GiB"));
	assert_null(f);

	/* no configuration: the "switch" preset */
	o.config = NULL;
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), 0);
	assert_string_equal(ssemu_fabric_config(f)->preset, "switch");
	assert_true(ssemu_config_nports(ssemu_fabric_config(f)) == 16);
	ssemu_fabric_close(f);
	ssemu_fabric_close(NULL);
}

/*
 * A fabric of more endpoints than the bitmaps scan flat: MANY_NICS NICs
 * with an endpoint each (tf_add), then as many more endpoints as they
 * take into @extra (*@nx of them).
 */
enum { MANY_PER_NIC = 80, MANY_NICS = 16 };

static struct tf *open_many(struct ssemu_ep **extra, uint32_t *nx)
{
	struct ssemu_config c;
	struct tf *t;
	uint32_t k;

	tf_config(&c, "switch");
	c.max_nics = MANY_NICS;
	c.eps_per_nic = MANY_PER_NIC;
	c.max_eps = 0;
	c.msgs_per_ep = 4;
	c.bufs_per_ep = 1;
	t = tf_open(&c);
	for (k = 0; k < MANY_NICS; k++)
		tf_add(t, k);
	*nx = 0;
	for (k = 0; k < MANY_NICS; k++)
		while (*nx < MANY_NICS * MANY_PER_NIC &&
		       ssemu_ep_open(t->nic[k], &extra[*nx]) == 0)
			(*nx)++;
	return t;
}

/*
 * A fabric of more endpoints than the bitmaps scan flat: the engine finds
 * posted work through the summary, from endpoints in any word; and work
 * whose summary bit a damaged segment lost is still taken, by the full
 * look that comes with the look for dead processes.
 */
static void test_fabric_work_summary(void **state)
{
	static struct ssemu_ep *extra[MANY_NICS * MANY_PER_NIC];
	struct ssemu_event ev[4];
	struct ssemu_region *r;
	uint32_t words, nsum, k, nx = 0, round, done;
	struct ssemu_ep *hi;
	uint64_t *work;
	char byte = 7;
	struct tf *t;
	int n;

	(void)state;
	t = open_many(extra, &nx);
	r = t->fab->r;
	words = ssemu_bm_words(r->neps);
	nsum = ssemu_bm_sum_words(words);
	assert_true(nsum > 0);
	work = ssemu_r_bits(r, r->work_off);
	hi = extra[nx - 1];
	assert_true(hi->index / 64 > SSEMU_BM_FLAT);

	for (round = 0; round < 2; round++) {
		struct iovec iov = { &byte, 1 };
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[1]),
			.iov = &iov, .iov_count = 1, .cookie = round,
		};

		assert_int_equal(ssemu_ep_send(hi, &s), 0);
		assert_true(work[hi->index / 64]);
		assert_true(work[words + hi->index / 64 / 64] &
			    (1ull << (hi->index / 64 % 64)));
		/* the second time the summary is lost */
		if (round)
			memset(&work[words], 0, nsum * sizeof(uint64_t));
		for (done = 0, k = 0; !done && k < 2000; k++) {
			assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
			tf_pump(t);
			n = ssemu_ep_poll(hi, ev, 4);
			assert_true(n >= 0);
			done = n == 1 && ev[0].type == SSEMU_EV_SEND_DONE &&
			       ev[0].cookie == round && !ev[0].status;
			if (!done && round)
				usleep(1000);
		}
		assert_true(done);
		assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), round + 1);
	}
	while (nx)
		ssemu_ep_close(extra[--nx]);
	tf_close(t);
}

/* The endpoints of sends, in slot order: those at @ep[from] and @ep[to]
 * with a message each from the first to the second. */
static void ready_sends(struct tf *t, const unsigned *from,
			const unsigned *to, unsigned n)
{
	unsigned k;
	char b = 1;

	for (k = 0; k < n; k++)
		tf_send(t, from[k], to[k], &b, 1, 0, k, 0);
	while (!ssemu_fabric_idle(t->fab))
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
}

/*
 * An in-process fabric names the endpoints it pushed events to, each
 * once, in slot order, up to what the caller takes (the rest next time),
 * and forgets them once named; a fabric of more endpoints than the
 * bitmaps scan flat, through the summary.  A shared store does not keep
 * them.
 */
static void test_fabric_ready(void **state)
{
	static struct ssemu_ep *extra[MANY_NICS * MANY_PER_NIC];
	const unsigned from[] = { 3, 0, 3 }, to[] = { 1, 1, 5 };
	struct ssemu_config c;
	uint32_t slots[8], want[4], nx = 0, k;
	struct ssemu_event ev[4];
	struct ssemu_fabric *f;
	struct tf *t;
	int n;

	(void)state;
	tf_config(&c, "switch");
	c.max_nics = 8;
	t = tf_open(&c);
	for (k = 0; k < 6; k++)
		tf_add(t, k);
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 8), 0);
	ready_sends(t, from, to, 3);
	/* 0, 3: SEND_DONE; 1, 5: RECV */
	want[0] = ssemu_ep_slot(t->ep[0]);
	want[1] = ssemu_ep_slot(t->ep[1]);
	want[2] = ssemu_ep_slot(t->ep[3]);
	want[3] = ssemu_ep_slot(t->ep[5]);
	for (k = 1; k < 4; k++)
		assert_true(want[k] > want[k - 1]);
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 3), 3);
	for (k = 0; k < 3; k++)
		assert_int_equal(slots[k], want[k]);
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 8), 1);
	assert_int_equal(slots[0], want[3]);
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 8), 0);
	/* the events are still there: naming takes nothing */
	n = ssemu_ep_poll(t->ep[5], ev, 4);
	assert_int_equal(n, 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	ssemu_event_release(t->ep[5], &ev[0]);
	assert_int_equal(ssemu_fabric_ready(NULL, slots, 8), -EINVAL);
	assert_int_equal(ssemu_fabric_ready(t->fab, NULL, 8), -EINVAL);
	assert_int_equal(ssemu_fabric_ready(t->fab, NULL, 0), 0);
	tf_close(t);

	/* many endpoints: through the summary, in slot order */
	t = open_many(extra, &nx);
	assert_true(ssemu_ep_slot(extra[nx - 1]) / 64 > SSEMU_BM_FLAT);
	{
		struct iovec iov = { &k, 1 };
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(extra[nx - 1]),
			.iov = &iov, .iov_count = 1,
		};

		assert_int_equal(ssemu_ep_send(t->ep[2], &s), 0);
	}
	while (!ssemu_fabric_idle(t->fab))
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 8), 2);
	assert_int_equal(slots[0], ssemu_ep_slot(t->ep[2]));
	assert_int_equal(slots[1], ssemu_ep_slot(extra[nx - 1]));
	assert_int_equal(ssemu_fabric_ready(t->fab, slots, 8), 0);
	while (nx)
		ssemu_ep_close(extra[--nx]);
	tf_close(t);

	/* a shared store keeps no such set */
	tf_config(&c, "switch");
	t = tf_open_shared(&c);
	f = t->fab;
	assert_int_equal(ssemu_fabric_ready(f, slots, 8), -ENOTSUP);
	tf_close(t);
}

static void test_fabric_config_and_stats(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric_stats fs;
	const struct ssemu_config *got;
	struct tf *t;
	char byte = 0;

	tf_config(&c, "malbec");
	c.seed = 99;
	t = tf_open(&c);
	got = ssemu_fabric_config(t->fab);
	assert_true(ssemu_config_hash(got) == ssemu_config_hash(&c));
	assert_string_equal(got->preset, "malbec");
	assert_int_equal(ssemu_fabric_stats(t->fab, NULL), -EINVAL);
	assert_int_equal(ssemu_fabric_stats(NULL, &fs), -EINVAL);
	/* switches are modelled when traffic first touches them */
	tf_add(t, 0);
	tf_add(t, 5);	/* same switch */
	tf_add(t, 500);	/* another group */
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.switches_instantiated == 0);
	assert_true(fs.nics_attached == 3);
	tf_send(t, 0, 1, &byte, 1, 0, 0, 0);
	tf_run_idle(t, 10000);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.switches_instantiated == 1);
	tf_send(t, 0, 2, &byte, 1, 0, 0, 0);
	tf_run_idle(t, 10000);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	assert_true(fs.switches_instantiated >= 2 &&
		    fs.switches_instantiated <= 7);
	assert_true(fs.pkts_delivered == 2);
	assert_true(fs.pkt_hops >= 4);
	tf_close(t);
}

/* An endpoint may send to itself and to another pid of its own NIC. */
static void test_fabric_loopback(void **state)
{
	static uint8_t buf[5000];
	struct ssemu_config c;
	struct ssemu_ep *ep2;
	struct ssemu_event ev[4];
	struct tf *t;
	struct iovec iov = { buf, sizeof(buf) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	size_t off;

	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (uint8_t)(off * 7);
	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 6);
	assert_int_equal(ssemu_ep_open(t->nic[0], &ep2), 0);
	s.dest = ssemu_ep_addr(t->ep[0]);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	s.dest = ssemu_ep_addr(ep2);
	assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_RECV), 1);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 2);
	assert_int_equal(ssemu_ep_poll(ep2, ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	assert_true(ev[0].src == ssemu_ep_addr(t->ep[0]));
	assert_memory_equal(ssemu_event_data(ep2, &ev[0]), buf, sizeof(buf));
	ssemu_event_release(ep2, &ev[0]);
	ssemu_ep_close(ep2);
	tf_close(t);
}

static void test_fabric_full_scale(void **state)
{
	static uint8_t buf[4096];
	struct ssemu_config c;
	struct ssemu_fabric_stats fs;
	struct ssemu_event ev[4];
	struct tf *t;
	size_t off;

	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (uint8_t)(off ^ (off >> 8));
	tf_config(&c, "full");
	c.max_nics = 4;
	c.max_switches = 8;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 279039);
	tf_add(t, 140000);
	assert_int_equal(ssemu_nic_port(t->nic[1]), 279039);
	{
		struct ssemu_nic_opts no = { .port = 279040, .rank = -1 };
		struct ssemu_nic *x;

		assert_int_equal(ssemu_nic_attach(t->fab, &no, &x), -EINVAL);
	}
	tf_send(t, 0, 1, buf, sizeof(buf), 0, 1, 1);
	tf_send(t, 1, 2, buf, sizeof(buf), 0, 2, 2);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_RECV), 2);
	assert_int_equal(tf_count(t, UINT32_MAX, SSEMU_EV_SEND_DONE), 2);
	for (off = 0; off < t->nlog; off++)
		if (t->log[off].ev.type == SSEMU_EV_SEND_DONE)
			assert_int_equal(t->log[off].ev.status, 0);
	assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
	/* a handful of the 17,440 switches, at most 4 per direction */
	assert_true(fs.switches_instantiated >= 2 &&
		    fs.switches_instantiated <= 8);
	/* and the bytes made it */
	t->on_recv = NULL;
	tf_send(t, 2, 0, buf, sizeof(buf), 0, 3, 3);
	do {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
	} while (!ssemu_ep_poll(t->ep[0], ev, 1));
	assert_true(ev[0].len == sizeof(buf));
	assert_memory_equal(ssemu_event_data(t->ep[0], &ev[0]), buf,
			    sizeof(buf));
	ssemu_event_release(t->ep[0], &ev[0]);
	tf_run_idle(t, 100000);
	tf_close(t);
}

/* ------------------------------------------------------------------ */
/* Senders whose traffic cannot be delivered                            */
/* ------------------------------------------------------------------ */

static int send_raw_to(struct tf *t, unsigned from, ssemu_addr_t dest,
		       const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	struct ssemu_send s = {
		.dest = dest,
		.iov = &iov,
		.iov_count = 1,
	};

	return ssemu_ep_send(t->ep[from], &s);
}

/*
 * The destination NIC detaches while the last packets of a message (every
 * packet already injected) are on their way: the sender must get a
 * SEND_DONE with an error, not wait forever on a fabric that is idle.
 */
static void test_fabric_detach_with_packets_in_flight(void **state)
{
	static uint8_t buf[8192];
	struct ssemu_nic_stats st;
	struct ssemu_config c;
	struct tf *t;
	ssemu_time_t step;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_send(t, 0, 1, buf, sizeof(buf), 0, 1, 1);	/* 4 packets */
	/* run until the receiver has half of it */
	for (step = 0;; step += 10 * SSEMU_PS_PER_NS) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, step), 0);
		assert_int_equal(ssemu_nic_stats(t->nic[1], &st), 0);
		if (st.rx_pkts >= 2)
			break;
		assert_true(step < SSEMU_PS_PER_MS);
	}
	assert_int_equal(ssemu_nic_stats(t->nic[0], &st), 0);
	assert_true(st.tx_pkts == 4);	/* all injected */
	ssemu_ep_close(t->ep[1]);
	ssemu_nic_detach(t->nic[1]);
	t->ep[1] = NULL;
	t->nic[1] = NULL;
	tf_run_idle(t, 100000);
	if (tf_count(t, 0, SSEMU_EV_SEND_DONE) != 1)
		fail_msg("destination detached with packets in flight: no "
			 "SEND_DONE for the sender, and the fabric is idle "
			 "(%llu of 4 acks came back)",
			 (unsigned long long)(ssemu_nic_stats(t->nic[0], &st),
					      st.acks));
	assert_int_not_equal(t->log[t->nlog - 1].ev.status, 0);
	tf_close(t);
}

/* Same with a message still being injected: that case completes. */
static void test_fabric_detach_while_injecting(void **state)
{
	static uint8_t buf[65536];
	struct ssemu_nic_stats st;
	struct ssemu_config c;
	struct tf *t;

	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_send(t, 0, 1, buf, sizeof(buf), 0, 1, 1);	/* 32 packets */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 1500 * SSEMU_PS_PER_NS),
			 0);
	assert_int_equal(ssemu_nic_stats(t->nic[0], &st), 0);
	assert_true(st.tx_pkts > 4 && st.tx_pkts < 32);
	ssemu_ep_close(t->ep[1]);
	ssemu_nic_detach(t->nic[1]);
	t->ep[1] = NULL;
	t->nic[1] = NULL;
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	assert_int_equal(t->log[t->nlog - 1].ev.status, -EHOSTUNREACH);
	tf_close(t);
}

/*
 * A receiver that goes away (endpoint closed, or NIC detached as when its
 * process dies) holding messages it never released: the sender's slots and
 * large buffers must come back, or the sender is stuck on -EAGAIN forever.
 */
/* (small, yet longer than an event carries: each message holds a slot
 * until its receiver releases it) */
#define SMALL (SSEMU_EV_CARRY + 8)

static void receiver_gone(bool detach)
{
	static uint8_t buf[1000];
	struct ssemu_event ev[8];
	struct ssemu_config c;
	struct tf *t;
	unsigned k;
	int n = 0, ret;

	tf_config(&c, "switch");
	c.msgs_per_ep = 4;
	c.bufs_per_ep = 2;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (k = 0; k < 4; k++) {
		struct iovec iov = { buf, k < 2 ? sizeof(buf) : SMALL };
		struct ssemu_send s = {
			.dest = ssemu_ep_addr(t->ep[1]),
			.iov = &iov,
			.iov_count = 1,
			.cookie = k,
		};

		assert_int_equal(ssemu_ep_send(t->ep[0], &s), 0);
	}
	/* delivered and acknowledged; the receiver takes but keeps them */
	while (n < 4) {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		n += ssemu_ep_poll(t->ep[1], ev + n, 8 - n);
	}
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 4);
	assert_int_equal(send_raw_to(t, 0, SSEMU_ADDR(1, 0), buf, SMALL), -EAGAIN);
	/* the receiver goes away */
	ssemu_ep_close(t->ep[1]);
	t->ep[1] = NULL;
	if (detach) {
		ssemu_nic_detach(t->nic[1]);
		t->nic[1] = NULL;
	}
	tf_run_idle(t, 10000);
	ret = send_raw_to(t, 0, SSEMU_ADDR(1, 0), buf, SMALL);
	if (ret == -EAGAIN)
		fail_msg("receiver %s with 4 unreleased messages: the sender "
			 "never gets its slots back (-EAGAIN forever)",
			 detach ? "detached" : "closed");
	assert_int_equal(ret, 0);
	ret = send_raw_to(t, 0, SSEMU_ADDR(1, 0), buf, sizeof(buf));
	assert_int_equal(ret, 0);	/* and a large buffer */
	tf_run_idle(t, 10000);
	tf_close(t);
}

static void test_fabric_receiver_closed_returns_slots(void **state)
{
	receiver_gone(false);
}

static void test_fabric_receiver_detached_returns_slots(void **state)
{
	receiver_gone(true);
}

static char last_warning[512];
static unsigned warnings;

static void capture_log(enum ssemu_log_level lvl, const char *msg)
{
	if (lvl == SSEMU_LOG_WARN) {
		snprintf(last_warning, sizeof(last_warning), "%s", msg);
		warnings++;
	}
}

/*
 * max_switches = 1 on two switches: the model cannot instantiate the second
 * switch and says so through the log sink.  The sender must still learn
 * that its message failed rather than wait on an idle fabric.
 */
/*
 * A large buffer belongs to the slot that last took it only while that
 * slot still holds it: once the slot is reused for a small message (no
 * buffer), the buffer is free even though the slot is busy.  Before this
 * was checked, a large send got -EAGAIN with every buffer idle.
 */
static void test_fabric_buffer_free_after_slot_reuse(void **state)
{
	static uint8_t big[1000];
	struct ssemu_event ev[8];
	struct ssemu_config c;
	struct tf *t;
	ssemu_addr_t to;
	unsigned k, got = 0;
	int n;

	tf_config(&c, "switch");
	c.msgs_per_ep = 4;
	c.bufs_per_ep = 1;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	to = ssemu_ep_addr(t->ep[1]);
	/* slot 0 takes the buffer; delivered and released */
	assert_int_equal(send_raw_to(t, 0, to, big, sizeof(big)), 0);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 1);
	/* four small messages: slots 1, 2, 3 and 0 again */
	for (k = 0; k < 4; k++)
		assert_int_equal(send_raw_to(t, 0, to, big, 8), 0);
	/* the receiver releases the first (slot 1) and keeps the others */
	while (got < 4) {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		n = ssemu_ep_poll(t->ep[1], ev + got, 8 - got);
		got += (unsigned)n;
	}
	ssemu_event_release(t->ep[1], &ev[0]);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_SEND_DONE), 5);
	/* slot 1 is free and so is the buffer, whose last owner (slot 0)
	 * now carries a small message */
	assert_int_equal(send_raw_to(t, 0, to, big, sizeof(big)), 0);
	for (k = 1; k < 4; k++)
		ssemu_event_release(t->ep[1], &ev[k]);
	tf_run_idle(t, 10000);
	/* (the harness logged the first and the last message) */
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 2);
	assert_int_equal(t->log[t->nlog - 1].ev.len, sizeof(big));
	tf_close(t);
}

/*
 * A large buffer whose record names a busy slot that never took it (a
 * segment another process wrote into): the slot says it has no buffer,
 * so the buffer is free and a large send takes it, rather than waiting
 * for it forever.
 */
static void test_fabric_buffer_named_by_other_slot(void **state)
{
	static uint8_t big[1000], small[SSEMU_EV_CARRY + 4];
	struct ssemu_config c;
	struct ssemu_event ev;
	struct ssemu_region *r;
	struct tf *t;
	ssemu_addr_t to;
	int n;

	(void)state;
	tf_config(&c, "switch");
	c.msgs_per_ep = 4;
	c.bufs_per_ep = 1;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	r = t->fab->r;
	to = ssemu_ep_addr(t->ep[1]);
	/* a message in its slot, not carried: busy until released */
	assert_int_equal(send_raw_to(t, 0, to, small, sizeof(small)), 0);
	while ((n = ssemu_ep_poll(t->ep[1], &ev, 1)) == 0)
		assert_true(ssemu_fabric_progress(t->fab, 256) >= 0);
	assert_int_equal(n, 1);
	assert_int_not_equal(ev.slot, SSEMU_NONE);
	assert_true(*ssemu_r_mstate(r, ev.slot) & SSEMU_MSG_BUSY);
	ssemu_r_ep(r, ssemu_ep_slot(t->ep[0]))->buf_msg[0] = ev.slot;
	assert_int_equal(send_raw_to(t, 0, to, big, sizeof(big)), 0);
	assert_int_not_equal(ssemu_r_ep(r, ssemu_ep_slot(t->ep[0]))->buf_msg[0],
			     ev.slot);
	ssemu_event_release(t->ep[1], &ev);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(t->log[t->nlog - 1].ev.len, sizeof(big));
	tf_close(t);
}

/*
 * The default configuration's limit of endpoints per NIC is one a threaded
 * application opening an endpoint per thread does not reach; one beyond a
 * limit is refused with a warning naming the configuration key that raises
 * it, per NIC (resources.eps_per_nic) and for the fabric's pool of endpoint
 * slots (resources.max_eps).  A slot goes from one NIC to another and
 * carries the new NIC's traffic.
 */
static void test_fabric_eps_limits(void **state)
{
	static struct ssemu_ep *ep[256];
	struct ssemu_nic *nic, *nic2;
	struct ssemu_config c;
	struct tf *t;
	uint32_t lim, i;
	char byte;

	/* the default: every pid of one NIC, 64 */
	assert_int_equal(ssemu_config_preset("switch", &c), 0);
	lim = c.eps_per_nic;
	assert_true(lim >= 64 && c.max_eps >= lim);
	c.max_nics = 4;
	t = tf_open(&c);
	assert_int_equal(attach(t->fab, 3, &nic), 0);
	for (i = 0; i < lim; i++) {
		assert_int_equal(ssemu_ep_open(nic, &ep[i]), 0);
		assert_true(ssemu_ep_addr(ep[i]) == SSEMU_ADDR(3, i));
	}
	warnings = 0;
	ssemu_log_set_sink(capture_log);
	assert_int_equal(ssemu_ep_open(nic, &ep[lim]), -ENOSPC);
	ssemu_log_set_sink(NULL);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "resources.eps_per_nic"));
	for (i = 0; i < lim; i++)
		ssemu_ep_close(ep[i]);
	ssemu_nic_detach(nic);
	tf_close(t);

	/* a small limit per NIC, and a pool of 5 slots for 2 NICs */
	tf_config(&c, "switch");
	c.eps_per_nic = 3;
	c.max_eps = 5;
	t = tf_open(&c);
	assert_int_equal(attach(t->fab, 0, &nic), 0);
	assert_int_equal(attach(t->fab, 1, &nic2), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(ssemu_ep_open(nic, &ep[i]), 0);
	ssemu_log_set_sink(capture_log);
	warnings = 0;
	assert_int_equal(ssemu_ep_open(nic, &ep[3]), -ENOSPC);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "resources.eps_per_nic"));
	assert_non_null(strstr(last_warning, "all 3"));
	assert_int_equal(ssemu_ep_open(nic2, &ep[3]), 0);
	assert_int_equal(ssemu_ep_open(nic2, &ep[4]), 0);
	warnings = 0;
	assert_int_equal(ssemu_ep_open(nic2, &ep[5]), -ENOSPC);
	ssemu_log_set_sink(NULL);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "resources.max_eps"));
	assert_non_null(strstr(last_warning, "all 5"));
	/* a slot NIC 0 gives back goes to NIC 1, pid 2 there */
	ssemu_ep_close(ep[1]);
	assert_int_equal(ssemu_ep_open(nic2, &ep[5]), 0);
	assert_true(ssemu_ep_addr(ep[5]) == SSEMU_ADDR(1, 2));
	/* traffic both ways between the NICs, through the moved slot */
	t->nic[0] = nic;
	t->nic[1] = nic2;
	t->ep[0] = ep[2];	/* port 0 pid 2 */
	t->ep[1] = ep[5];	/* port 1 pid 2 */
	t->n = 2;
	for (i = 0; i < 8; i++) {
		byte = (char)(i * 7 + 1);
		tf_send(t, i % 2, (i + 1) % 2, &byte, 1, 0, i, i);
	}
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, 0, SSEMU_EV_RECV), 4);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 4);
	for (i = 0; i < t->nlog; i++) {
		const struct ssemu_event *ev = &t->log[i].ev;

		assert_int_equal(ev->status, 0);
		if (ev->type == SSEMU_EV_RECV)
			assert_true(ev->src == SSEMU_ADDR(t->log[i].ep ? 0 : 1,
							  2));
	}
	t->n = 0;
	ssemu_ep_close(ep[0]);
	ssemu_ep_close(ep[2]);
	for (i = 3; i < 6; i++)
		ssemu_ep_close(ep[i]);
	ssemu_nic_detach(nic);
	ssemu_nic_detach(nic2);
	tf_close(t);
}

static void test_fabric_switch_pool_exhausted(void **state)
{
	struct ssemu_config c;
	struct tf *t;
	char byte = 1;

	tf_config(&c, "2switch");
	c.max_switches = 1;
	t = tf_open(&c);
	tf_add(t, 0);	/* switch 0 */
	tf_add(t, 1);	/* switch 0 */
	tf_add(t, 16);	/* switch 1 */
	warnings = 0;
	ssemu_log_set_sink(capture_log);
	tf_send(t, 0, 1, &byte, 1, 0, 1, 1);
	tf_run_idle(t, 10000);
	assert_int_equal(tf_count(t, 1, SSEMU_EV_RECV), 1);
	assert_int_equal(warnings, 0);
	tf_send(t, 0, 2, &byte, 1, 0, 2, 2);
	tf_run_idle(t, 10000);
	ssemu_log_set_sink(NULL);
	assert_true(warnings >= 1);
	assert_non_null(strstr(last_warning, "max_switches"));
	if (tf_count(t, 0, SSEMU_EV_SEND_DONE) != 2)
		fail_msg("message through an unmodelled switch: dropped "
			 "without a completion (\"%s\"), the fabric is idle",
			 last_warning);
	assert_int_not_equal(t->log[t->nlog - 1].ev.status, 0);
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fabric_data_integrity_2group),
		cmocka_unit_test(test_fabric_determinism),
		cmocka_unit_test(test_fabric_run_until_and_idle),
		cmocka_unit_test(test_fabric_wait),
		cmocka_unit_test(test_fabric_wake_only_sleepers),
		cmocka_unit_test(test_fabric_release_checked_event),
		cmocka_unit_test(test_fabric_low_slots_first),
		cmocka_unit_test(test_fabric_small_event_ring),
		cmocka_unit_test(test_fabric_carried_event),
		cmocka_unit_test(test_fabric_copy_iov),
		cmocka_unit_test(test_fabric_no_data),
		cmocka_unit_test(test_fabric_watch),
		cmocka_unit_test(test_fabric_realtime_clock),
		cmocka_unit_test(test_fabric_attach_detach),
		cmocka_unit_test(test_fabric_reattach_traffic),
		cmocka_unit_test(test_fabric_eps_per_nic_limit),
		cmocka_unit_test(test_fabric_eps_limits),
		cmocka_unit_test(test_fabric_open_bad_options),
		cmocka_unit_test(test_fabric_config_and_stats),
		cmocka_unit_test(test_fabric_work_summary),
		cmocka_unit_test(test_fabric_ready),
		cmocka_unit_test(test_fabric_loopback),
		cmocka_unit_test(test_fabric_full_scale),
		cmocka_unit_test(test_fabric_detach_with_packets_in_flight),
		cmocka_unit_test(test_fabric_detach_while_injecting),
		cmocka_unit_test(test_fabric_switch_pool_exhausted),
		cmocka_unit_test(test_fabric_buffer_free_after_slot_reuse),
		cmocka_unit_test(test_fabric_buffer_named_by_other_slot),
		cmocka_unit_test(test_fabric_receiver_closed_returns_slots),
		cmocka_unit_test(test_fabric_receiver_detached_returns_slots),
		cmocka_unit_test(test_fabric_send_at),
	};

	return cmocka_run_group_tests_name("fabric", tests, NULL, NULL);
}
