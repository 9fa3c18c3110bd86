/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Telemetry: what the model counts, in model time, kept in the fabric region
 * so that any process (an observer too) can read it (the trace files that
 * keep it after the fabric is gone: ssemu_telemetry_file.c).
 *
 * The model calls the hooks below under the fabric lock.  Time series are
 * sampled lazily: the open sample accumulates until a hook (or a reader)
 * finds model time past its end, and then closes it and the empty samples
 * in between.  No engine event is ever scheduled for sampling, so an idle
 * fabric stays idle.  Nothing here feeds back into the model: it reads the
 * model's state and writes only to this section.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ssemu_priv.h"

static inline struct ssemu_tel_sh *tel_of(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->tel_off);
}

/* (the count is read once: the segment may change, or be cut short and
 * read as zeros, between a check of it and its use) */
static inline struct ssemu_tel_sample *tel_ring(struct ssemu_region *r,
						struct ssemu_tel_sh *tl,
						uint64_t i)
{
	uint32_t n = ssemu_load_relaxed(&tl->ring);

	return (struct ssemu_tel_sample *)SSEMU_AT(r, tl->ring_off) +
	       (n ? i % n : 0);
}

/* NIC @nic's job slot entry (@nic < max_nics): the first NICs' are in the
 * head page, with the counters a message touches */
static inline struct ssemu_tel_nic *tel_nicjob(struct ssemu_region *r,
					       struct ssemu_tel_sh *tl,
					       uint32_t nic)
{
	if (nic < SSEMU_TEL_NICJOB_HEAD)
		return &tl->nicjob_head[nic];
	return (struct ssemu_tel_nic *)SSEMU_AT(r, tl->nicjob_off) + nic;
}

static uint32_t ring_size(const struct ssemu_config *c)
{
	return c->tel_interval ? c->tel_samples : 0;
}

/* Where the group windows' pair candidates are, from the section's start
 * (config @c has group windows). */
static uint64_t cands_at(const struct ssemu_config *c)
{
	return SSEMU_ALIGN_UP(SSEMU_ALIGN_UP(sizeof(struct ssemu_tel_sh),
					     (uint64_t)SSEMU_CACHELINE) +
				      (uint64_t)ring_size(c) *
					      sizeof(struct ssemu_tel_sample) +
				      (uint64_t)c->max_nics *
					      sizeof(struct ssemu_tel_nic),
			      (uint64_t)SSEMU_CACHELINE);
}

uint64_t ssemu_tel_bytes(const struct ssemu_config *c)
{
	if (c->group_windows)
		return cands_at(c) + sizeof(struct ssemu_tel_cands);
	return SSEMU_ALIGN_UP(sizeof(struct ssemu_tel_sh),
			      (uint64_t)SSEMU_CACHELINE) +
	       (uint64_t)ring_size(c) * sizeof(struct ssemu_tel_sample) +
	       (uint64_t)c->max_nics * sizeof(struct ssemu_tel_nic);
}

static inline struct ssemu_tel_cands *tel_cands(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->tel_off + cands_at(&r->config));
}

/* The section is zero-filled already. */
void ssemu_tel_init(struct ssemu_region *r, uint64_t off)
{
	struct ssemu_tel_sh *tl;

	r->tel_off = off;
	tl = tel_of(r);
	tl->interval = r->config.tel_interval;
	tl->ring = ring_size(&r->config);
	tl->ring_off = off + SSEMU_ALIGN_UP(sizeof(struct ssemu_tel_sh),
					    (uint64_t)SSEMU_CACHELINE);
	tl->nicjob_off = tl->ring_off +
			 (uint64_t)tl->ring * sizeof(struct ssemu_tel_sample);
	r->tel_next = tl->interval ? tl->interval : UINT64_MAX;
	if (r->config.group_windows)
		tel_cands(r)->room = SSEMU_TEL_PAIRS;
}

/* The hot lines' share of the open sample, folded into @s (the open
 * sample as stored, or a copy of it). */
SSEMU_HOT
static void tel_fold_open(const struct ssemu_tel_sh *tl,
			  struct ssemu_tel_sample *s)
{
	uint32_t tc;

	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
		const struct ssemu_tel_hot *h = &tl->hot[tc];

		s->tx_bytes[tc] += h->s_tx_bytes;
		s->q_max[tc] = SSEMU_MAX(s->q_max[tc], h->s_q_max);
		s->q_sum[tc] += h->s_q_sum;
		s->q_n[tc] += h->s_q_n;
	}
}

/* Close the samples that end at or before @t. */
SSEMU_HOT
static void tel_tick(struct ssemu_region *r, struct ssemu_tel_sh *tl,
		     ssemu_time_t t)
{
	uint64_t target, i, interval = ssemu_load_relaxed(&tl->interval);

	/* (read once, as the ring's count in tel_ring) */
	if (!interval || !tl->ring) {
		r->tel_next = UINT64_MAX;
		return;
	}
	target = t / interval;	/* the sample open at @t */
	if (target > tl->cur.index) {
		uint32_t tc;

		tel_fold_open(tl, &tl->cur);
		for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
			tl->hot[tc].s_tx_bytes = 0;
			tl->hot[tc].s_q_max = 0;
			tl->hot[tc].s_q_sum = 0;
			tl->hot[tc].s_q_n = 0;
		}
		*tel_ring(r, tl, tl->cur.index) = tl->cur;
		/* empty samples in between: only a ring's worth can survive */
		i = tl->cur.index + 1;
		if (target - i > tl->ring)
			i = target - tl->ring;
		for (; i < target; i++) {
			struct ssemu_tel_sample *sp = tel_ring(r, tl, i);

			memset(sp, 0, sizeof(*sp));
			sp->index = i;
		}
		tl->closed = target;
		memset(&tl->cur, 0, sizeof(tl->cur));
		tl->cur.index = target;
	}
	r->tel_next = target + 1 > UINT64_MAX / interval ?
			      UINT64_MAX : (target + 1) * interval;
}

/* The open sample, once the ones model time has passed are closed. */
static inline struct ssemu_tel_sample *tel_now(struct ssemu_region *r,
					       struct ssemu_tel_sh *tl)
{
	ssemu_time_t now = ssemu_r_now(r);

	if (now >= r->tel_next)
		tel_tick(r, tl, now);
	return &tl->cur;
}

/* The job slot of NIC @nic (its job id's, or the "other" slot). */
SSEMU_HOT
static uint32_t tel_job(struct ssemu_region *r, struct ssemu_tel_sh *tl,
			uint32_t nic)
{
	struct ssemu_tel_nic *c;
	struct ssemu_nic_sh *n;
	uint32_t i;

	if (nic >= r->config.max_nics)
		return SSEMU_TEL_OTHER;
	c = tel_nicjob(r, tl, nic);
	/* valid for the NIC's attach generation c->gen: its next attach
	 * clears it (ssemu_tel_nic_attach), so the NIC's own line need not
	 * be read to check */
	if (c->gen)
		/* (read from the segment: kept inside the counters) */
		return SSEMU_MIN(c->slot, (uint32_t)SSEMU_TEL_OTHER);
	n = ssemu_r_nic(r, nic);
	for (i = 0; i < tl->njobs && i < SSEMU_TEL_JOBS; i++)
		if (tl->job[i] == n->job)
			break;
	if (i == tl->njobs && i < SSEMU_TEL_JOBS)
		tl->job[tl->njobs++] = n->job;
	c->gen = n->gen;
	c->slot = SSEMU_MIN(i, (uint32_t)SSEMU_TEL_OTHER);
	return c->slot;
}

void ssemu_tel_nic_attach(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_tel_sh *tl = tel_of(r);

	if (nic < r->config.max_nics)
		tel_nicjob(r, tl, nic)->gen = 0;
}

SSEMU_HOT
void ssemu_tel_post(struct ssemu_region *r, uint32_t nic, uint32_t tc)
{
	struct ssemu_tel_sh *tl = tel_of(r);

	if (tc < SSEMU_MAX_TCLASS)
		tl->jc[tel_job(r, tl, nic)][tc].tx_msgs++;
}

SSEMU_HOT
void ssemu_tel_tx(struct ssemu_region *r, uint32_t nic, uint32_t tc,
		  uint32_t bytes)
{
	struct ssemu_tel_sh *tl = tel_of(r);
	struct ssemu_tel_counters *jc;

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	jc = &tl->jc[tel_job(r, tl, nic)][tc];
	jc->tx_pkts++;
	jc->tx_bytes += bytes;
	tel_now(r, tl);
	tl->hot[tc].s_tx_bytes += bytes;
}

SSEMU_HOT
void ssemu_tel_rx(struct ssemu_region *r, uint32_t src_nic, uint32_t tc,
		  uint32_t bytes)
{
	struct ssemu_tel_sh *tl = tel_of(r);
	uint32_t j;

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	j = tel_job(r, tl, src_nic);
	tl->jc[j][tc].rx_pkts++;
	tl->jc[j][tc].rx_bytes += bytes;
	tel_now(r, tl)->rx_bytes[j][tc] += bytes;
}

static uint32_t lat_bin(ssemu_time_t ps)
{
	uint64_t u = ps / 25000;	/* 25 ns units: 100 ns is 4 */
	uint32_t msb, oct;

	if (u < 4)
		return 0;
	msb = 63 - (uint32_t)__builtin_clzll(u);
	oct = msb - 2;
	if (oct >= 20)
		return SSEMU_TEL_LAT_BINS - 1;
	return 1 + oct * 4 + (uint32_t)((u >> oct) & 3);
}

uint32_t ssemu_tel_bin(ssemu_time_t ps)
{
	return lat_bin(ps);
}

ssemu_time_t ssemu_tel_bin_lo(uint32_t i)
{
	if (!i)
		return 0;
	if (i >= SSEMU_TEL_LAT_BINS)
		i = SSEMU_TEL_LAT_BINS - 1;
	return (ssemu_time_t)25000 * ((4 + (i - 1) % 4) << ((i - 1) / 4));
}

static struct ssemu_tel_pair *__attribute__((noinline))
tel_cand(struct ssemu_region *r, struct ssemu_tel_sh *tl, uint32_t sp,
	 uint32_t dp, uint32_t sjob, uint32_t djob);

/* The pair table entry of (@sp, @dp): first come, first served; under
 * group windows (@cand), a pair not in it is a candidate (tel_cand). */
static inline __attribute__((always_inline)) struct ssemu_tel_pair *
tel_pair(struct ssemu_region *r, struct ssemu_tel_sh *tl, uint32_t sp,
	 uint32_t dp, uint32_t sjob, uint32_t djob, bool cand)
{
	uint32_t h = (sp * 2654435761u ^ dp * 40503u) % SSEMU_TEL_HASH, k;
	struct ssemu_tel_pair *p;
	uint16_t *slot;

	for (k = 0; k < SSEMU_TEL_HASH; k++) {
		slot = &tl->pair_hash[(h + k) % SSEMU_TEL_HASH];
		if (!*slot)
			break;
		if (*slot > SSEMU_TEL_PAIRS)
			return &tl->other;	/* never trust the region */
		p = &tl->pair[*slot - 1];
		if (p->src_port == sp && p->dst_port == dp)
			return p;
	}
	if (k == SSEMU_TEL_HASH || tl->npairs >= SSEMU_TEL_PAIRS)
		return &tl->other;
	if (cand)
		return tel_cand(r, tl, sp, dp, sjob, djob);
	p = &tl->pair[tl->npairs++];
	*slot = (uint16_t)tl->npairs;
	p->src_port = sp;
	p->dst_port = dp;
	p->src_job = sjob;
	p->dst_job = djob;
	return p;
}

static void pair_add(struct ssemu_tel_pair *to,
		     const struct ssemu_tel_pair *from)
{
	uint32_t i;

	to->msgs += from->msgs;
	to->lat_sum += from->lat_sum;
	for (i = 0; i < SSEMU_TEL_LAT_BINS; i++)
		to->lat[i] += from->lat[i];
}

/* Candidates in the engine's usual order: model time, then event key. */
static int cand_cmp(const void *a, const void *b)
{
	const struct ssemu_tel_cand *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static bool cand_before(const struct ssemu_tel_cand *x, ssemu_time_t t,
			uint64_t key)
{
	return x->t < t || (x->t == t && x->key < key);
}

/* The window's candidates (all of its groups run) join the table in the
 * usual order (they fit: no more were kept than it had room for). */
static void cands_admit(struct ssemu_region *r, struct ssemu_tel_sh *tl,
			struct ssemu_tel_cands *cs)
{
	uint32_t i, n = SSEMU_MIN(cs->n, (uint32_t)SSEMU_TEL_PAIRS);

	qsort(cs->c, n, sizeof(cs->c[0]), cand_cmp);
	for (i = 0; i < n; i++) {
		const struct ssemu_tel_pair *c = &cs->c[i].p;

		pair_add(tel_pair(r, tl, c->src_port, c->dst_port, c->src_job,
				  c->dst_job, false),
			 c);
	}
	cs->n = 0;
}

/*
 * Group windows: the window of model time @t begins.  The one before has
 * been run by every group, so its candidates join the table, and the new
 * window's may take what room is left.
 */
static void cands_window(struct ssemu_region *r, struct ssemu_tel_sh *tl,
			 ssemu_time_t t)
{
	struct ssemu_tel_cands *cs = tel_cands(r);
	uint64_t W = ssemu_config_group_window(&r->config) ?: 1;
	uint64_t w = t ? (t - 1) / W + 1 : 0;

	if (w <= cs->window)
		return;
	cands_admit(r, tl, cs);
	cs->window = w;
	cs->room = SSEMU_TEL_PAIRS - SSEMU_MIN(tl->npairs,
					       (uint32_t)SSEMU_TEL_PAIRS);
}

/*
 * Group windows: pair (@sp, @dp), not in the table, delivered to at @t.
 * The table takes the pairs a window first brings in the order of their
 * first deliveries' events, as many as it has room for; the groups run
 * a window one after another, so the candidates are kept, the earliest
 * as many as that room, and the pair that no longer is among them counts
 * with the rest from then on.  (A pair's deliveries are all at its
 * destination's NIC, in one group, whose events run in their order: a
 * pair's first delivery run is its earliest, and one that was left out
 * is later than every candidate at each of its next deliveries.)
 */
static struct ssemu_tel_pair *__attribute__((noinline))
tel_cand(struct ssemu_region *r, struct ssemu_tel_sh *tl, uint32_t sp,
	 uint32_t dp, uint32_t sjob, uint32_t djob)
{
	struct ssemu_tel_cands *cs = tel_cands(r);
	uint64_t key = ssemu_gw_ev_r == r ? ssemu_gw_ev_key : UINT64_MAX;
	ssemu_time_t t = ssemu_r_now(r);
	struct ssemu_tel_cand *c;
	uint32_t i, n = SSEMU_MIN(cs->n, (uint32_t)SSEMU_TEL_PAIRS), last;

	for (i = 0; i < n; i++)
		if (cs->c[i].p.src_port == sp && cs->c[i].p.dst_port == dp)
			return &cs->c[i].p;
	if (!cs->room)
		return &tl->other;
	if (n < cs->room) {
		c = &cs->c[cs->n++];
	} else {
		for (last = 0, i = 1; i < n; i++)
			if (cand_before(&cs->c[last], cs->c[i].t,
					cs->c[i].key))
				last = i;
		c = &cs->c[last];
		if (cand_before(c, t, key))
			return &tl->other;
		pair_add(&tl->other, &c->p);
	}
	memset(c, 0, sizeof(*c));
	c->p.src_port = sp;
	c->p.dst_port = dp;
	c->p.src_job = sjob;
	c->p.dst_job = djob;
	c->t = t;
	c->key = key;
	return &c->p;
}

SSEMU_HOT
void ssemu_tel_deliver(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_tel_sh *tl = tel_of(r);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t snic = ssemu_ep_nic(r, ssemu_msg_ep(r, mi));
	uint32_t dport = SSEMU_ADDR_PORT(m->dst), dnic = SSEMU_NONE, bin;
	ssemu_time_t now = ssemu_r_now(r);
	ssemu_time_t lat = now > m->post_time ? now - m->post_time : 0;
	struct ssemu_tel_counters *jc;
	struct ssemu_tel_jpair *jp;
	struct ssemu_tel_pair *p;
	uint32_t sj;

	if (m->tclass >= SSEMU_MAX_TCLASS)
		return;
	bin = lat_bin(lat);
	sj = tel_job(r, tl, snic);
	jc = &tl->jc[sj][m->tclass];
	jc->rx_msgs++;
	jc->lat_sum += lat;
	jc->lat[bin]++;
	if (dport < r->topo.nendpoints)
		dnic = ssemu_port_nic(r, dport);
	jp = &tl->jpair[sj][tel_job(r, tl, dnic)];
	jp->msgs++;
	jp->lat_sum += lat;
	jp->lat[bin]++;
	if (unlikely(r->config.group_windows))
		cands_window(r, tl, now);
	p = tel_pair(r, tl, SSEMU_ADDR_PORT(m->src), dport,
		     ssemu_r_nic(r, snic)->job,
		     dnic < r->config.max_nics ? ssemu_r_nic(r, dnic)->job :
						 UINT32_MAX,
		     r->config.group_windows);
	p->msgs++;
	p->lat_sum += lat;
	p->lat[bin]++;
}

void ssemu_tel_drop(struct ssemu_region *r, uint32_t tc, uint32_t type)
{
	struct ssemu_tel_sh *tl = tel_of(r);

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	tl->tc[tc].drops++;
	if (type == SSEMU_PKT_ACK)
		tl->tc[tc].drops_ack++;
	else if (type == SSEMU_PKT_RESP)
		tl->tc[tc].drops_resp++;
	tel_now(r, tl)->drops[tc]++;
}

void ssemu_tel_retry(struct ssemu_region *r, uint32_t tc)
{
	if (tc < SSEMU_MAX_TCLASS)
		tel_of(r)->tc[tc].retries++;
}

void ssemu_tel_throttle(struct ssemu_region *r, uint32_t tc)
{
	struct ssemu_tel_sh *tl = tel_of(r);

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	tl->tc[tc].throttles++;
	tel_now(r, tl)->throttles[tc]++;
}

void ssemu_tel_mark(struct ssemu_region *r, uint32_t tc)
{
	struct ssemu_tel_sh *tl = tel_of(r);

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	tl->tc[tc].marks++;
	tel_now(r, tl)->marks[tc]++;
}

SSEMU_HOT
void ssemu_tel_queue(struct ssemu_region *r, uint32_t tc, uint32_t depth)
{
	struct ssemu_tel_sh *tl = tel_of(r);
	struct ssemu_tel_hot *h;

	if (tc >= SSEMU_MAX_TCLASS)
		return;
	tel_now(r, tl);
	h = &tl->hot[tc];
	h->q_max = SSEMU_MAX(h->q_max, (uint64_t)depth);
	h->q_sum += depth;
	h->q_n++;
	h->s_q_max = SSEMU_MAX(h->s_q_max, (uint64_t)depth);
	h->s_q_sum += depth;
	h->s_q_n++;
}

/* ------------------------------------------------------------------ */
/* Reading                                                              */
/* ------------------------------------------------------------------ */

void ssemu_tel_latency(const uint64_t *lat, uint64_t sum,
		       struct ssemu_latency *out)
{
	uint64_t n = 0, acc = 0;
	double want[2] = { 0.5, 0.99 }, *res[2];
	uint32_t i, k, top = 0;

	memset(out, 0, sizeof(*out));
	res[0] = &out->p50_ns;
	res[1] = &out->p99_ns;
	for (i = 0; i < SSEMU_TEL_LAT_BINS; i++) {
		n += lat[i];
		if (lat[i])
			top = i;
	}
	out->count = n;
	if (!n)
		return;
	out->mean_ns = (double)sum / (double)n / SSEMU_PS_PER_NS;
	out->max_ns = (double)(top + 1 < SSEMU_TEL_LAT_BINS ?
				       ssemu_tel_bin_lo(top + 1) :
				       ssemu_tel_bin_lo(top)) / SSEMU_PS_PER_NS;
	for (k = 0; k < 2; k++) {
		double goal = want[k] * (double)n, lo, hi;

		acc = 0;
		for (i = 0; i < SSEMU_TEL_LAT_BINS; i++) {
			if (!lat[i] || (double)(acc + lat[i]) < goal) {
				acc += lat[i];
				continue;
			}
			lo = (double)ssemu_tel_bin_lo(i);
			hi = i + 1 < SSEMU_TEL_LAT_BINS ?
				     (double)ssemu_tel_bin_lo(i + 1) : lo;
			*res[k] = (lo + (hi - lo) * (goal - (double)acc) /
						(double)lat[i]) /
				  SSEMU_PS_PER_NS;
			break;
		}
	}
}

int ssemu_telemetry_read(struct ssemu_fabric *f, struct ssemu_telemetry **out)
{
	struct ssemu_region *r;
	struct ssemu_tel_sh *tl;
	struct ssemu_telemetry *t;
	uint64_t first, i;
	uint32_t n;
	int ret;

	if (!f || !out)
		return -EINVAL;
	r = f->r;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = ssemu_region_lock(r);
	if (ret) {
		free(t);
		return ret;
	}
	tl = tel_of(r);
	tel_now(r, tl);
	n = tl->ring ? (uint32_t)SSEMU_MIN(tl->closed, (uint64_t)tl->ring) : 0;
	if (n) {
		t->samples = calloc(n, sizeof(*t->samples));
		if (!t->samples) {
			ssemu_region_unlock(r);
			free(t);
			return -ENOMEM;
		}
	}
	t->config = r->config;
	t->now = ssemu_r_now(r);
	t->interval = tl->interval;
	t->njobs = SSEMU_MIN(tl->njobs, (uint32_t)SSEMU_TEL_JOBS);
	memcpy(t->job, tl->job, sizeof(t->job));
	memcpy(t->jc, tl->jc, sizeof(t->jc));
	memcpy(t->tc, tl->tc, sizeof(t->tc));
	for (i = 0; i < SSEMU_MAX_TCLASS; i++) {
		t->tc[i].q_max = tl->hot[i].q_max;
		t->tc[i].q_sum = tl->hot[i].q_sum;
		t->tc[i].q_n = tl->hot[i].q_n;
	}
	t->npairs = SSEMU_MIN(tl->npairs, (uint32_t)SSEMU_TEL_PAIRS);
	memcpy(t->pair, tl->pair, sizeof(t->pair));
	if (r->config.group_windows) {
		/* the window's candidates, as its end will admit them
		 * (sorted in place: where each sits in the area does not
		 * matter to them) */
		struct ssemu_tel_cands *cs = tel_cands(r);
		uint32_t nc = SSEMU_MIN(cs->n, SSEMU_TEL_PAIRS - t->npairs);

		qsort(cs->c, SSEMU_MIN(cs->n, (uint32_t)SSEMU_TEL_PAIRS),
		      sizeof(cs->c[0]), cand_cmp);
		for (i = 0; i < nc; i++)
			t->pair[t->npairs++] = cs->c[i].p;
	}
	t->other_pairs = tl->other;
	memcpy(t->jpair, tl->jpair, sizeof(t->jpair));
	t->samples_closed = tl->closed;
	t->samples_lost = tl->closed - n;
	t->open = tl->cur;
	tel_fold_open(tl, &t->open);
	first = tl->closed - n;
	for (i = 0; i < n; i++)
		t->samples[i] = *tel_ring(r, tl, first + i);
	t->nsamples = n;
	ssemu_region_unlock(r);
	*out = t;
	return 0;
}

void ssemu_telemetry_free(struct ssemu_telemetry *t)
{
	if (!t)
		return;
	free(t->samples);
	free(t);
}
