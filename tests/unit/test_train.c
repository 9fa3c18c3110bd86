/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet trains (emu/ssemu_train.c, emu/ssemu_train_send.c) against the
 * per-packet model: the same random scenarios -- lone reads, fetches and
 * sends between random endpoints, reads meeting other reads, sends and
 * writes, sends meeting sends, every class,
 * on one switch, one group and across groups -- run with trains and
 * without, and every event each endpoint polls (its type, status, model
 * time, length, cookie), the memory written, the fabric's and every NIC's
 * counts, the telemetry (its samples closed every half microsecond, so
 * that samples close inside trains) and the state left in the switch
 * models, NICs and pair table must be the same byte for byte.  Only the
 * count of engine events differs, and must be lower with trains; and the
 * model's invariants are checked as it runs (SSEMU_DEBUG).
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

#include "ssemu_priv.h"	/* ssemu_model_trains */
#include "tf.h"

#define EPS 4
#define MEM (1u << 20)
#define STEPS 8

/* What a run leaves to compare. */
struct run {
	struct tf_rec *log;
	size_t nlog;
	struct ssemu_fabric_stats fs;
	struct ssemu_nic_stats ns[EPS];
	struct ssemu_telemetry *tel;
	uint8_t *mem[EPS];		/* the endpoints' registered memory */
};

static void rma(struct tf *t, unsigned from, unsigned to, uint32_t op,
		uint64_t len, uint32_t tclass, uint64_t cookie, void *src)
{
	struct iovec iov = { src, len };
	struct ssemu_rma r = {
		.dest = ssemu_ep_addr(t->ep[to]),
		.tclass = tclass,
		.op = op,
		.key = 5,
		.addr = 0,
		.len = len,
		.iov = op == SSEMU_RMA_READ ? NULL : &iov,
		.iov_count = op == SSEMU_RMA_READ ? 0 : 1,
		.cookie = cookie,
	};

	/* (no retry: a run that waited for room would move the model on
	 * by its own steps, and the two runs' posts differ in model time) */
	assert_int_equal(ssemu_ep_rma(t->ep[from], &r), 0);
}

/* A length below 2^5, 2^10, 2^15 or 2^20 as @round goes. */
static uint64_t len_of(uint64_t *rng, unsigned round)
{
	return tf_rng_next(rng) % (1u << (round % 4 * 5 + 5));
}

static struct tf *scenario(const char *preset, uint64_t seed,
			   unsigned round, bool trains, struct run *out)
{
	uint64_t rng = seed, len, cookie = 1;
	uint32_t port[EPS], ntc;
	struct ssemu_config c;
	uint8_t *mem[EPS], *src;
	unsigned i, j, step, a, b, x, y;
	struct tf *t;

	tf_config(&c, preset);
	c.seed = tf_rng_next(&rng);
	c.buf_size = MEM;
	c.bufs_per_ep = 4;
	c.tel_interval = 500 * SSEMU_PS_PER_NS;
	c.max_switches = 64;
	/* the policies too: adaptive routing, the other arbiter, no
	 * congestion control */
	if (round % 4 == 1)
		snprintf(c.routing, sizeof(c.routing), "adaptive");
	if (round % 4 == 2)
		snprintf(c.arb, sizeof(c.arb), "priority-rr");
	if (round % 4 == 3)
		snprintf(c.cc, sizeof(c.cc), "none");
	/* and the fabric's shape: fast switches (credits back within a
	 * packet or two, the NIC's looks for them among its sends), small
	 * buffers (credits that hold packets back: no train), a smaller
	 * MTU, long edge links (credits back after the NIC's last send) */
	if (round % 3 == 2) {
		c.sw_lat_mean = 20 * SSEMU_PS_PER_NS;
		c.sw_lat_sd = 5 * SSEMU_PS_PER_NS;
		c.sw_lat_min = 10 * SSEMU_PS_PER_NS;
		c.sw_lat_max = 40 * SSEMU_PS_PER_NS;
	}
	if (round % 5 == 3)
		c.port_buf_pkts = 2;
	if (round % 2)
		c.mtu = 1024;
	if (round % 4 == 0)
		c.edge.delay = 400 * SSEMU_PS_PER_NS;
	/* and a small window: a send's packets wait for acknowledgements,
	 * and the one that fills it asks for one at once */
	if (round % 3 == 1)
		c.nic_window = 2 + (uint32_t)(tf_rng_next(&rng) % 14);
	ntc = c.ntclass;
	for (i = 0; i < EPS; i++) {
again:
		port[i] = (uint32_t)(tf_rng_next(&rng) %
				     ssemu_config_nports(&c));
		for (j = 0; j < i; j++)
			if (port[j] == port[i])
				goto again;
	}
	ssemu_model_trains = trains;
	t = tf_open(&c);
	src = malloc(MEM);
	assert_non_null(src);
	for (i = 0; i < MEM; i++)
		src[i] = (uint8_t)(i * 7 + seed);
	for (i = 0; i < EPS; i++) {
		struct ssemu_mr_desc d = {
			.key = 5, .len = MEM, .base = 0,
			.access = SSEMU_MR_READ | SSEMU_MR_WRITE,
		};

		assert_int_equal(tf_add(t, port[i]), i);
		mem[i] = malloc(MEM);
		assert_non_null(mem[i]);
		memset(mem[i], (int)i, MEM);
		d.addr = mem[i];
		assert_int_equal(ssemu_mr_reg(t->nic[i], &d), 0);
	}
	for (step = 0; step < STEPS; step++) {
		uint64_t kind = tf_rng_next(&rng) % 11;
		uint32_t tc = (uint32_t)(tf_rng_next(&rng) % ntc);

		a = (unsigned)(tf_rng_next(&rng) % EPS);
		b = (a + 1 + (unsigned)(tf_rng_next(&rng) % (EPS - 1))) % EPS;
		x = (unsigned)(tf_rng_next(&rng) % EPS);
		y = (x + 1 + (unsigned)(tf_rng_next(&rng) % (EPS - 1))) % EPS;
		len = len_of(&rng, round + step);
		switch (kind) {
		case 0:	/* a lone read */
			rma(t, a, b, SSEMU_RMA_READ, len, tc, cookie++, NULL);
			break;
		case 1:	/* a lone read of up to a MiB */
			rma(t, a, b, SSEMU_RMA_READ, tf_rng_next(&rng) % MEM,
			    tc, cookie++, NULL);
			break;
		case 2:	/* a lone fetch: one result */
			rma(t, a, b, SSEMU_RMA_FETCH, 8, tc, cookie++, src);
			break;
		case 3:	/* a read and a send at once */
			rma(t, a, b, SSEMU_RMA_READ, len, tc, cookie++, NULL);
			tf_send(t, x, y, src, len_of(&rng, round) % 65536, 0,
				cookie++, 0);
			break;
		case 4:	/* two reads at once */
			rma(t, a, b, SSEMU_RMA_READ, len, tc, cookie++, NULL);
			rma(t, x, y, SSEMU_RMA_READ, len_of(&rng, round + 1),
			    tc, cookie++, NULL);
			break;
		case 5:	/* an incast of results: a reads from the other
			 * three at once (congestion control paces them) */
			for (i = 1; i < EPS; i++)
				rma(t, a, (a + i) % EPS, SSEMU_RMA_READ,
				    MEM / 2 + tf_rng_next(&rng) % (MEM / 2),
				    tc, cookie++, NULL);
			break;
		case 6:	/* a write, then a read of it */
			rma(t, a, b, SSEMU_RMA_WRITE, len, tc, cookie++, src);
			tf_run_idle(t, 1000000);
			rma(t, b, a, SSEMU_RMA_READ, len, tc, cookie++, NULL);
			break;
		case 7:	/* a lone send */
			tf_send(t, a, b, src, len, tc, cookie++, 0);
			break;
		case 8:	/* a lone send of up to a MiB */
			tf_send(t, a, b, src, tf_rng_next(&rng) % MEM, tc,
				cookie++, 0);
			break;
		case 9:	/* two sends from one endpoint at once, then
			 * another once they are in */
			tf_send(t, a, b, src, len, tc, cookie++, 0);
			tf_send(t, a, y == a ? b : y, src,
				len_of(&rng, round + 1), tc, cookie++, 0);
			tf_run_idle(t, 1000000);
			tf_send(t, b, a, src, len, tc, cookie++, 0);
			break;
		default:	/* a send each way at once, then a send and a
			 * read meeting it */
			tf_send(t, a, b, src, len, tc, cookie++, 0);
			tf_send(t, b, a, src, len_of(&rng, round + 2), tc,
				cookie++, 0);
			tf_run_idle(t, 1000000);
			tf_send(t, a, b, src, len, tc, cookie++, 0);
			rma(t, x, y, SSEMU_RMA_READ, len_of(&rng, round + 3),
			    tc, cookie++, NULL);
			break;
		}
		tf_run_idle(t, 1000000);
	}
	out->log = t->log;
	out->nlog = t->nlog;
	t->log = NULL;
	t->nlog = t->cap = 0;
	assert_int_equal(ssemu_fabric_stats(t->fab, &out->fs), 0);
	for (i = 0; i < EPS; i++)
		assert_int_equal(ssemu_nic_stats(t->nic[i], &out->ns[i]), 0);
	assert_int_equal(ssemu_telemetry_read(t->fab, &out->tel), 0);
	ssemu_model_trains = 1;
	for (i = 0; i < EPS; i++)
		out->mem[i] = mem[i];
	free(src);
	return t;
}

/*
 * The state the two runs leave in the model: every switch model's ports
 * (but for the time of a look no longer due, which only a pending look
 * reads), every NIC, the pair table's entries (where an entry lies
 * depends on the order of others' comings and goings at one instant).
 */
static void same_state(struct tf *to, struct tf *tw, const char *what)
{
	struct ssemu_region *a = to->fab->r, *b = tw->fab->r;
	uint32_t i, p, n = 0;
	uint64_t x, y;

	if (a->sw_used != b->sw_used)
		fail_msg("%s: %u switch models per packet, %u with trains",
			 what, a->sw_used, b->sw_used);
	for (i = 0; i < a->sw_used; i++) {
		struct ssemu_switch_sh *s = ssemu_r_switch(a, i);
		struct ssemu_switch_sh *t = ssemu_r_switch(b, i);

		if (s->sw != t->sw || memcmp(s->vni, t->vni, sizeof(s->vni)))
			fail_msg("%s: switch model %u differs", what, i);
		for (p = 0; p < a->topo.radix; p++) {
			struct ssemu_swport_img u, v;

			/* (the whole port, its vclasses too: a port is
			 * port_bytes, the same in both fabrics) */
			assert_int_equal(a->port_bytes, b->port_bytes);
			assert_true(a->port_bytes <= sizeof(u));
			memset(&u, 0, sizeof(u));
			memset(&v, 0, sizeof(v));
			memcpy(&u, ssemu_sw_port(a, s, p), a->port_bytes);
			memcpy(&v, ssemu_sw_port(b, t, p), b->port_bytes);
			u.port.wake_at = v.port.wake_at = 0;
			if (memcmp(&u, &v, sizeof(u)))
				fail_msg("%s: switch %u port %u differs", what,
					 s->sw, p);
		}
	}
	for (i = 0; i < a->config.max_nics; i++)
		if (memcmp(ssemu_r_nic(a, i), ssemu_r_nic(b, i),
			   sizeof(struct ssemu_nic_sh)))
			fail_msg("%s: NIC %u differs", what, i);
	if (a->pairs_used != b->pairs_used)
		fail_msg("%s: %u pairs per packet, %u with trains", what,
			 a->pairs_used, b->pairs_used);
	for (x = 0; x <= ssemu_pair_mask(a); x++) {
		const struct ssemu_pair *e = ssemu_r_pair_ent(a, x);

		if (!e->key)
			continue;
		n++;
		for (y = 0; y <= ssemu_pair_mask(b); y++)
			if (ssemu_r_pair_ent(b, y)->key == e->key)
				break;
		if (y > ssemu_pair_mask(b) ||
		    memcmp(e, ssemu_r_pair_ent(b, y), sizeof(*e)))
			fail_msg("%s: pair %llx differs", what,
				 (unsigned long long)e->key);
	}
	assert_int_equal(n, a->pairs_used);
}

/* The events endpoint @ep polled, in order, as @o and @w saw them. */
static void same_events(const struct run *o, const struct run *w,
			unsigned ep, const char *what)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < o->nlog && o->log[i].ep != ep)
			i++;
		while (j < w->nlog && w->log[j].ep != ep)
			j++;
		if (i == o->nlog || j == w->nlog)
			break;
		{
			const struct ssemu_event *p = &o->log[i].ev;
			const struct ssemu_event *q = &w->log[j].ev;

			if (p->type != q->type || p->status != q->status ||
			    p->time != q->time || p->posted != q->posted ||
			    p->len != q->len || p->tclass != q->tclass ||
			    p->src != q->src ||
			    (p->type != SSEMU_EV_RECV &&
			     p->cookie != q->cookie))
				fail_msg("%s: endpoint %u's event %zu: type %u "
					 "at %llu ps (posted %llu), %llu bytes, "
					 "status %d per packet; type %u at %llu "
					 "ps (posted %llu), %llu bytes, status "
					 "%d with trains", what, ep, i, p->type,
					 (unsigned long long)p->time,
					 (unsigned long long)p->posted,
					 (unsigned long long)p->len, p->status,
					 q->type, (unsigned long long)q->time,
					 (unsigned long long)q->posted,
					 (unsigned long long)q->len, q->status);
		}
		i++;
		j++;
	}
	if (i != o->nlog || j != w->nlog)
		fail_msg("%s: endpoint %u polled a different number of "
			 "events", what, ep);
}

static void test_train_same_as_packets(void **state)
{
	static const char *const presets[] = { "switch", "2switch", "2group",
						 "shandy" };
	uint64_t events_o = 0, events_w = 0;
	uint64_t trains0 = ssemu_model_trains_run;
	uint64_t sends0 = ssemu_model_trains_sent;
	struct run o, w;
	struct tf *to, *tw;
	unsigned p, round, i;
	char what[96];

	(void)state;
	for (p = 0; p < sizeof(presets) / sizeof(presets[0]); p++) {
		for (round = 0; round < 12; round++) {
			uint64_t seed = 1000 * p + round + 1;

			snprintf(what, sizeof(what), "%s, seed %llu",
				 presets[p], (unsigned long long)seed);
			to = scenario(presets[p], seed, round, false, &o);
			tw = scenario(presets[p], seed, round, true, &w);
			for (i = 0; i < EPS; i++) {
				same_events(&o, &w, i, what);
				assert_memory_equal(o.mem[i], w.mem[i], MEM);
			}
			same_state(to, tw, what);
			tf_close(to);
			tf_close(tw);
			for (i = 0; i < EPS; i++) {
				free(o.mem[i]);
				free(w.mem[i]);
			}
			events_o += o.fs.events;
			events_w += w.fs.events;
			o.fs.events = w.fs.events = 0;
			if (memcmp(&o.fs, &w.fs, sizeof(o.fs)))
				fail_msg("%s: the fabric's counts differ "
					 "(packet-hops %llu and %llu, switch "
					 "time %llu and %llu ps)", what,
					 (unsigned long long)o.fs.pkt_hops,
					 (unsigned long long)w.fs.pkt_hops,
					 (unsigned long long)o.fs.switch_lat_sum,
					 (unsigned long long)w.fs.switch_lat_sum);
			for (i = 0; i < EPS; i++)
				if (memcmp(&o.ns[i], &w.ns[i], sizeof(o.ns[i])))
					fail_msg("%s: NIC %u's counts differ",
						 what, i);
			if (memcmp(o.tel, w.tel,
				   offsetof(struct ssemu_telemetry, samples)) ||
			    o.tel->nsamples != w.tel->nsamples ||
			    memcmp(o.tel->samples, w.tel->samples,
				   o.tel->nsamples * sizeof(*o.tel->samples)))
				fail_msg("%s: the telemetry differs", what);
			ssemu_telemetry_free(o.tel);
			ssemu_telemetry_free(w.tel);
			free(o.log);
			free(w.log);
		}
	}
	print_message("%llu trains, %llu of them sends; engine events: "
		      "%llu per packet, %llu with trains\n",
		      (unsigned long long)(ssemu_model_trains_run - trains0),
		      (unsigned long long)(ssemu_model_trains_sent - sends0),
		      (unsigned long long)events_o,
		      (unsigned long long)events_w);
	/* (trains formed, of both kinds: the comparison was not of the
	 * model with itself) */
	assert_true(ssemu_model_trains_run - trains0 >= 50);
	assert_true(ssemu_model_trains_sent - sends0 >= 20);
	assert_true(events_w < events_o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_train_same_as_packets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
