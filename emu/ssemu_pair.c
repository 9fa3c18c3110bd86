/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC pair table: what a NIC keeps toward another NIC (struct
 * ssemu_pair: its window, congestion window, FGFC pacing, edge-queue count,
 * ordered path), for only the pairs that have some.  A pair without an
 * entry is a fresh pair (ssemu_pair_fresh); one whose state returns to a
 * fresh pair's gives its entry back (ssemu_pair_put), so the table holds
 * about the pairs with traffic in flight, not max_nics squared.
 *
 * One open-addressing table of 1 << pair_bits entries, linear probing,
 * backward-shift deletion (no tombstones: a lookup stops at the first free
 * entry).  A pair's home entry is in its source NIC's stretch of the table
 * (nic << shift, plus a hash of the destination into the stretch's first
 * 64 entries), so one NIC's pairs share a few cache lines, and a NIC with
 * many destinations fills its stretch, then its neighbours'.  The first
 * 64 entries of the stretches lie together in memory, then the next 64
 * of each, and so on (ssemu_pair_slot): what a fabric of NICs with a few
 * pairs each touches is the first, not a page a NIC.  At most max_pairs
 * entries are in use (the load stays at or below one half): an insert that
 * finds the table full sweeps it for expired entries once per model time,
 * then fails (-ENOSPC at the caller), logged with the key that raises it.
 *
 * An entry may move when another is deleted: a pointer to one is good
 * until the next ssemu_pair_put or ssemu_pair_get.
 */
#include <stdio.h>
#include <string.h>

#include "ssemu_priv.h"

/* A full window, no pause or pacing, and the first mark cuts the window
 * at once. */
void ssemu_pair_cc_reset(const struct ssemu_config *c, struct ssemu_pair *pr)
{
	pr->cwnd = c->nic_window << 8;
	pr->pause = 0;
	pr->gap = 0;
	pr->slow = 0;
	pr->cc_acked = UINT32_MAX / 2;
}

SSEMU_HOT
void ssemu_pair_fresh(const struct ssemu_config *c, struct ssemu_pair *pr)
{
	memset(pr, 0, sizeof(*pr));
	ssemu_pair_cc_reset(c, pr);
}

/*
 * Would a fresh pair behave as @pr does from model time @now on?  Its
 * pacing is over, nothing of it is in flight or queued (so its path is
 * chosen anew), its window is whole, and a mark would cut it at once
 * (cc_acked at or past a whole window counts as a fresh pair's).
 */
static bool pair_is_fresh(const struct ssemu_config *c,
			  const struct ssemu_pair *pr, ssemu_time_t now)
{
	return !pr->window && !pr->egq && pr->pause <= now &&
	       pr->slow <= now && pr->cwnd == c->nic_window << 8 &&
	       pr->cc_acked >= c->nic_window;
}

/* Entry @i is free now: entries after it that probed past it move back. */
static void pair_delete(struct ssemu_region *r, uint64_t i)
{
	struct ssemu_pair *ent = SSEMU_AT(r, r->pair_off), *e;
	uint64_t mask = ssemu_pair_mask(r), j = i, home;
	uint64_t si = ssemu_pair_slot(r, i), sj = si;

	for (;;) {
		j = (j + 1) & mask;
		sj = ssemu_pair_slot_next(r, j, sj);
		e = &ent[sj];
		if (!e->key)
			break;
		home = ssemu_pair_home(r, e->key);
		/* it may move to i if i lies cyclically in [home, j) */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			ent[si] = *e;
			i = j;
			si = sj;
		}
	}
	memset(&ent[si], 0, sizeof(struct ssemu_pair));
}

/* Free entry @i, counted out of its NICs. */
SSEMU_HOT
static void pair_free(struct ssemu_region *r, uint64_t i)
{
	uint64_t key = ssemu_r_pair_ent(r, i)->key;
	uint32_t nic = ssemu_pair_key_nic(key), dnic = (uint32_t)key;

	if (nic < r->config.max_nics && ssemu_r_pairn(r, nic)->from)
		ssemu_r_pairn(r, nic)->from--;
	if (dnic < r->config.max_nics && ssemu_r_pairn(r, dnic)->to)
		ssemu_r_pairn(r, dnic)->to--;
	if (r->pairs_used)
		r->pairs_used--;
	pair_delete(r, i);
}

/* Free every entry that is a fresh pair's at @now.  @return how many. */
static uint32_t pair_sweep(struct ssemu_region *r, ssemu_time_t now)
{
	uint64_t i, mask = ssemu_pair_mask(r);
	uint32_t freed = 0;

	for (i = 0; i <= mask; i++) {
		struct ssemu_pair *e = ssemu_r_pair_ent(r, i);

		/* (a deletion may move a later entry here: look again) */
		while (e->key && pair_is_fresh(&r->config, e, now)) {
			pair_free(r, i);
			freed++;
		}
	}
	return freed;
}

/* A fresh pair's entry for @key at @i, the free entry where its probe
 * stopped (NONE: the table is full). */
SSEMU_HOT
static struct ssemu_pair *pair_make(struct ssemu_region *r, uint64_t key,
				    uint64_t i)
{
	struct ssemu_pair *e;

	if (i == SSEMU_NONE)
		return NULL;
	e = ssemu_r_pair_ent(r, i);
	ssemu_pair_fresh(&r->config, e);
	e->key = key;
	r->pairs_used++;
	ssemu_r_pairn(r, ssemu_pair_key_nic(key))->from++;
	ssemu_r_pairn(r, (uint32_t)key)->to++;
	return e;
}

SSEMU_HOT
struct ssemu_pair *ssemu_pair_get(struct ssemu_region *r, uint32_t nic,
				  uint32_t dnic, ssemu_time_t now)
{
	uint64_t key = ssemu_pair_key(nic, dnic), i;
	bool hit;

	i = ssemu_pair_probe(r, key, &hit);
	if (hit)
		return ssemu_r_pair_ent(r, i);
	if (r->pairs_used >= r->max_pairs) {
		if (r->pairs_swept == now || !pair_sweep(r, now)) {
			r->pairs_swept = now;
			ssemu_log(r->pairs_full++ ? SSEMU_LOG_DEBUG :
						    SSEMU_LOG_WARN,
				  "NIC pair table full: %u pairs have state "
				  "(traffic in flight, or congestion state), "
				  "the most resources.max_pairs allows; NIC "
				  "%u's send to NIC %u fails (-ENOSPC)",
				  r->max_pairs, nic, dnic);
			return NULL;
		}
		r->pairs_swept = now;
		i = ssemu_pair_probe(r, key, &hit);
	}
	return pair_make(r, key, i);
}

SSEMU_HOT
struct ssemu_pair *ssemu_pair_make(struct ssemu_region *r, uint32_t nic,
				   uint32_t dnic, uint64_t at,
				   ssemu_time_t now)
{
	/* (a full table's sweep may move entries: the whole way then) */
	if (at == SSEMU_NONE || r->pairs_used >= r->max_pairs)
		return ssemu_pair_get(r, nic, dnic, now);
	return pair_make(r, ssemu_pair_key(nic, dnic), at);
}

/* The table's entry lying at @slot (ssemu_pair_slot's inverse). */
static uint64_t pair_index(const struct ssemu_region *r, uint64_t slot)
{
	uint32_t sh = r->pair_shift, hb = ssemu_pair_chunk_bits(sh);
	uint32_t sb = r->pair_bits - sh;	/* stretch bits */
	uint64_t chunk = slot >> (sb + hb);

	return ((slot >> hb) & ((1ULL << sb) - 1)) << sh | chunk << hb |
	       (slot & ((1ULL << hb) - 1));
}

SSEMU_HOT
void ssemu_pair_put(struct ssemu_region *r, struct ssemu_pair *pr,
		    ssemu_time_t now)
{
	struct ssemu_pair *ent = SSEMU_AT(r, r->pair_off);

	if (pr && pair_is_fresh(&r->config, pr, now))
		pair_free(r, pair_index(r, (uint64_t)(pr - ent)));
}

/*
 * A NIC attaches at slot @nic: no stale window toward it (pairs to it get
 * a fresh pair's window and congestion state), and pairs from it a fresh
 * pair's congestion state.  Edge-queue counts stay: their packets are still
 * queued and count themselves out.  Costs nothing for a NIC without pairs.
 */
void ssemu_pair_reset_nic(struct ssemu_region *r, uint32_t nic,
			  ssemu_time_t now)
{
	struct ssemu_pair_count *pn = ssemu_r_pairn(r, nic);
	uint64_t i, mask = ssemu_pair_mask(r);

	for (i = 0; i <= mask && (pn->from || pn->to); i++) {
		struct ssemu_pair *e = ssemu_r_pair_ent(r, i);
		uint64_t key = e->key;

		if (!key || (ssemu_pair_key_nic(key) != nic && (uint32_t)key != nic))
			continue;
		if ((uint32_t)key == nic)
			e->window = 0;
		ssemu_pair_cc_reset(&r->config, e);
		if (pair_is_fresh(&r->config, e, now)) {
			pair_free(r, i);
			i--;	/* (what moved here is looked at next) */
		}
	}
}

/* @nic is reset: nothing of its own is in flight any more. */
void ssemu_pair_nic_idle(struct ssemu_region *r, uint32_t nic,
			 ssemu_time_t now)
{
	struct ssemu_pair_count *pn = ssemu_r_pairn(r, nic);
	uint64_t i, mask = ssemu_pair_mask(r);
	uint32_t left = pn->from;

	for (i = 0; i <= mask && left; i++) {
		struct ssemu_pair *e = ssemu_r_pair_ent(r, i);

		if (!e->key || ssemu_pair_key_nic(e->key) != nic)
			continue;
		left--;
		e->window = 0;
		if (pair_is_fresh(&r->config, e, now)) {
			pair_free(r, i);
			i--;
		}
	}
}

/* Every pair fresh: the table empty (the model's reset). */
void ssemu_pair_clear(struct ssemu_region *r)
{
	uint64_t i, mask = ssemu_pair_mask(r);

	if (r->pairs_used)
		for (i = 0; i <= mask; i++)
			if (ssemu_r_pair_ent(r, i)->key)
				memset(ssemu_r_pair_ent(r, i), 0,
				       sizeof(struct ssemu_pair));
	memset(ssemu_r_pairn(r, 0), 0,
	       (size_t)r->config.max_nics * sizeof(struct ssemu_pair_count));
	r->pairs_used = 0;
}

uint32_t ssemu_config_pairs(const struct ssemu_config *c)
{
	uint64_t n = (uint64_t)ssemu_config_neps(c) * c->msgs_per_ep;
	uint64_t all = (uint64_t)c->max_nics * c->max_nics;

	if (c->max_pairs)
		return c->max_pairs;
	n = SSEMU_MAX(n, 4096);
	return (uint32_t)SSEMU_MIN(SSEMU_MIN(n, all), SSEMU_MAX_PAIRS);
}

uint32_t ssemu_pair_bits(const struct ssemu_config *c)
{
	uint64_t want = 2ULL * ssemu_config_pairs(c);
	uint32_t b = 4;

	while ((1ULL << b) < want)
		b++;
	return b;
}

/* Log2 of each NIC's stretch of a table of 1 << @bits entries. */
uint32_t ssemu_pair_shift(const struct ssemu_config *c, uint32_t bits)
{
	uint32_t nb = 0;

	while ((1u << nb) < c->max_nics)
		nb++;
	return bits > nb ? bits - nb : 0;
}
