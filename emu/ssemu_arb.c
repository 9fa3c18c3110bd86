/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Output arbitration: which (input, vclass) a switch output sends next,
 * among the VOQs with a packet queued and a credit downstream.  Each
 * arbiter sees one output (struct ssemu_arb_view) and keeps its own state
 * there (round-robin pointers, token buckets).  "shares" (the default):
 * per-class guarantees and caps, then priority, then turns; "priority-rr":
 * strict priority between classes.  Inside a class both take turns among
 * inputs, and among the VCs of an input.
 */
#include "ssemu_voq.h"

/*
 * pick_in_class when only vclass @vcl of the class may go (@cr credits
 * ahead of it), the usual case: the first input after rr, cyclically (rr
 * last), whose packet fits in the buffer downstream.
 */
/* The packet at the head of VOQ (@in, @vcl) of the output (not empty). */
static inline uint32_t voq_head(const struct ssemu_arb_view *v, uint32_t vcl,
				uint32_t in)
{
	size_t row = v->row ? v->row[vcl] : vcl;

	return v->voq[row * v->radix + in].head;
}

static inline bool pick_one_vcl(const struct ssemu_arb_view *v, uint32_t vcl,
				uint32_t cr, uint32_t *in_out, uint32_t *pi_out)
{
	struct ssemu_swport *op = v->op;
	uint64_t any = op->vq[vcl].inmask, later, m;
	uint32_t pass, in, head;

	later = op->rr + 1 < 64 ? any & (~0ULL << (op->rr + 1)) : 0;
	for (pass = 0; pass < 2; pass++) {
		for (m = pass ? any & ~later : later; m; m &= m - 1) {
			in = (uint32_t)__builtin_ctzll(m);
			head = voq_head(v, vcl, in);
			if (pkt_cells(v->pkt[head].bytes) > cr)
				continue;
			op->rr = in;
			op->vc_rr++;
			*in_out = in;
			*pi_out = head;
			return true;
		}
	}
	return false;
}

/*
 * "priority-rr": strict priority between classes; inside a class,
 * pick_in_class (round robin among inputs).  No guarantees nor caps
 * ("shares" has those).
 */
static inline bool pick_in_class(const struct ssemu_arb_view *v, uint32_t tc,
				 uint32_t vcs, uint32_t *in_out,
				 uint32_t *vcl_out, uint32_t *pi_out);

static bool arb_priority_rr(const struct ssemu_arb_view *v, uint32_t *in_out,
			    uint32_t *vcl_out, ssemu_time_t *retry)
{
	const struct ssemu_config *c = v->c;
	uint32_t T = c->ntclass, order[SSEMU_MAX_TCLASS], i, j, pi;
	uint64_t rv = ready_vcls(v->op, v->edge, T);

	/* classes by descending priority (stable: lower index first) */
	for (i = 0; i < T; i++) {
		for (j = i; j > 0 && c->tclass[order[j - 1]].priority <
					     c->tclass[i].priority; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < T; i++)
		if (pick_in_class(v, order[i], class_vcs(rv, order[i]), in_out,
				  vcl_out, &pi))
			return true;
	return false;
}

/*
 * Round robin over inputs, and over the VCs (with a credit) of an input.
 * Taking turns matters under saturation: a strict preference for higher
 * VCs (packets further along) starves every source whose packets are on
 * VC 0 -- the target's own group, under an incast -- for as long as remote
 * traffic keeps arriving.  @vcs: the class's VCs with a packet queued and
 * a credit ahead (class_vcs).
 */
SSEMU_HOT
static inline bool pick_in_class(const struct ssemu_arb_view *v, uint32_t tc,
				 uint32_t vcs, uint32_t *in_out,
				 uint32_t *vcl_out, uint32_t *pi_out)
{
	struct ssemu_swport *op = v->op;
	bool edge = v->edge;
	uint32_t vcls[SSEMU_NVC], cr[SSEMU_NVC], nv = 0, vc, vcl, j, k, in;
	uint32_t pass, head;
	uint64_t any = 0, later, m;

	/* highest VC first (next_vcl_at: VC 0 at a NIC, else the next) */
	while (vcs) {
		vc = 31 - (uint32_t)__builtin_clz(vcs);
		vcs &= ~(1u << vc);
		vcl = tc * SSEMU_NVC + vc;
		assert(edge || vc + 1 < SSEMU_NVC);
		vcls[nv] = vcl;
		cr[nv++] = op->vq[edge ? vcl - vc : vcl + 1].credits;
		any |= op->vq[vcl].inmask;
	}
	if (!any)
		return false;
	if (nv == 1) {
		*vcl_out = vcls[0];
		return pick_one_vcl(v, vcls[0], cr[0], in_out, pi_out);
	}
	/* the first input after rr, cyclically (rr last), whose packet fits
	 * in the buffer downstream */
	later = op->rr + 1 < 64 ? any & (~0ULL << (op->rr + 1)) : 0;
	for (pass = 0; pass < 2; pass++) {
		for (m = pass ? any & ~later : later; m; m &= m - 1) {
			in = (uint32_t)__builtin_ctzll(m);
			for (j = 0; j < nv; j++) {
				k = (op->vc_rr + j) % nv;
				vcl = vcls[k];
				if (!(op->vq[vcl].inmask & (1ULL << in)))
					continue;
				head = voq_head(v, vcl, in);
				if (pkt_cells(v->pkt[head].bytes) > cr[k])
					continue;
				op->rr = in;
				op->vc_rr++;
				*in_out = in;
				*vcl_out = vcl;
				*pi_out = head;
				return true;
			}
		}
	}
	return false;
}

/*
 * HPE's traffic-class semantics (anchors.md 2.2), as Rosetta arbitrates
 * an output: every class has a guaranteed minimum share and a cap (a
 * percentage of the link), kept as two token buckets in bytes per output.
 * A class over its cap waits.  Among the classes that may go, those still
 * within their guarantee go first; then (or among those) the highest
 * priority; equal priorities take turns.  Guaranteed bandwidth a class
 * does not use is lent to the others: nothing idles while a class could go.
 */
#define SSEMU_TOKEN_DEPTH_PKTS 4	/* bucket depth, in MTU packets */

/*
 * The buckets are stored as of the output's last send (tok_time) and
 * only a send stores them: a look that sends nothing reads them refilled
 * up to its time (tok_look) and leaves them as they were.  So the buckets
 * at a send depend on the sends before it alone, not on how often the
 * output looked in between (how its credits came back, a wake-up that
 * found nothing to do): in floating point, a refill in two steps need not
 * give what one step gives.
 */
struct tok_now {
	double dt;	/* what a 1% share refills since tok_time, bytes */
	double depth;
};

/* A bucket's depth, in bytes. */
static inline double tok_depth(const struct ssemu_config *c)
{
	return SSEMU_TOKEN_DEPTH_PKTS * (double)(c->mtu + c->pkt_overhead);
}

static inline void tok_since(const struct ssemu_arb_view *v,
			      struct tok_now *tn)
{
	tn->dt = (double)(v->now - v->op->tok_time) * v->op->bytes_per_ps /
		 100.0;
	tn->depth = tok_depth(v->c);
}

/* Class @tc's buckets, not full at tok_time, refilled to the look's
 * time: *@g (guarantee), *@cap. */
static inline void tok_refill(const struct ssemu_arb_view *v,
			      const struct tok_now *tn, uint32_t tc,
			      double *g, double *cap)
{
	const struct ssemu_tclass_desc *d = &v->c->tclass[tc];
	const struct ssemu_swport *op = v->op;

	*g = SSEMU_MIN(tn->depth, op->cls[tc].g + tn->dt * d->min_pct);
	*cap = SSEMU_MIN(tn->depth, op->cls[tc].c + tn->dt * d->max_pct);
}

/* Class @tc's buckets at the look's time. */
static inline void tok_look(const struct ssemu_arb_view *v,
			    const struct tok_now *tn, uint32_t tc, double *g,
			    double *cap)
{
	if (v->op->tok_full & 1u << tc)
		*g = *cap = tn->depth;
	else
		tok_refill(v, tn, tc, g, cap);
}

/* A send of @bytes of class @best at the look's time: every class's
 * buckets refilled up to it and stored, then the class's taken from. */
static inline __attribute__((always_inline)) void
tok_send(const struct ssemu_arb_view *v, uint32_t best, uint32_t bytes)
{
	const struct ssemu_config *c = v->c;
	struct ssemu_swport *op = v->op;
	double depth = tok_depth(c);
	struct tok_now tn;
	uint32_t todo, tc;
	double g, cap;

	if (v->now != op->tok_time) {
		tok_since(v, &tn);
		todo = ~op->tok_full & ((1u << c->ntclass) - 1);
		op->tok_time = v->now;
		for (; todo; todo &= todo - 1) {
			tc = (uint32_t)__builtin_ctz(todo);
			tok_refill(v, &tn, tc, &g, &cap);
			op->cls[tc].g = g;
			op->cls[tc].c = cap;
			if (g == tn.depth && cap == tn.depth)
				op->tok_full |= 1u << tc;
		}
	}
	op->cls[best].g -= bytes;
	op->cls[best].c -= bytes;
	if (op->cls[best].g < -depth)
		op->cls[best].g = -depth;
	op->tok_full &= ~(1u << best);
}

SSEMU_HOT
static bool arb_shares(const struct ssemu_arb_view *v, uint32_t *in_out,
		       uint32_t *vcl_out, ssemu_time_t *retry)
{
	const struct ssemu_config *c = v->c;
	struct ssemu_swport *op = v->op;
	struct tok_now tn;
	ssemu_time_t now = v->now, wait = UINT64_MAX;
	uint32_t T = c->ntclass, tc, k, best = SSEMU_NONE, ready = 0, pi;
	double g[SSEMU_MAX_TCLASS], cap, need, dt;
	uint64_t rv, m;
	bool any_g = false;

	/* the classes with a packet queued and a credit ahead */
	rv = ready_vcls(op, v->edge, T);
	/* the usual case: one class ready, and it has no cap (so no retry
	 * time): it goes if a packet of it fits downstream */
	best = rv ? (uint32_t)__builtin_ctzll(rv) / SSEMU_NVC : 0;
	if (rv && !(rv >> (best * SSEMU_NVC) >> SSEMU_NVC) &&
	    c->tclass[best].max_pct >= 100) {
		if (!(rv & (rv - 1))) {
			/* one vclass: pick_in_class would end up here too,
			 * after building its per-VC arrays (1.7% of the
			 * model's instructions) */
			*vcl_out = (uint32_t)__builtin_ctzll(rv);
			if (!pick_one_vcl(v, *vcl_out,
					  op->vq[next_vcl_at(v->edge, *vcl_out)]
						  .credits,
					  in_out, &pi))
				return false;
		} else if (!pick_in_class(v, best, class_vcs(rv, best), in_out,
					  vcl_out, &pi)) {
			return false;
		}
		goto picked;
	}
	tok_since(v, &tn);
	for (m = rv; m; m &= ~(((1ULL << SSEMU_NVC) - 1) << (tc * SSEMU_NVC))) {
		tc = (uint32_t)__builtin_ctzll(m) / SSEMU_NVC;
		tok_look(v, &tn, tc, &g[tc], &cap);
		if (c->tclass[tc].max_pct < 100 && cap <= 0) {
			/* capped: the first picosecond its bucket is above
			 * zero again, when it may go.  (From the bucket as
			 * stored, at tok_time: the same time whenever the
			 * output looks, as a look's own refill would round
			 * differently.) */
			need = -op->cls[tc].c;
			dt = need / (op->bytes_per_ps *
				     c->tclass[tc].max_pct / 100.0);
			wait = SSEMU_MIN(wait, SSEMU_MAX(now, op->tok_time +
						     (ssemu_time_t)dt) + 1);
			continue;
		}
		ready |= 1u << tc;
		if (g[tc] > 0)
			any_g = true;
	}
	/* guaranteed first, then priority, then take turns; a class none of
	 * whose packets fits downstream yet makes way for the next.  (The
	 * last class left goes whatever its guarantee: passed over for
	 * having none, it would be taken once the guaranteed were out.) */
	while (ready) {
		if (!(ready & (ready - 1))) {
			best = (uint32_t)__builtin_ctz(ready);
		} else {
			best = SSEMU_NONE;
			for (k = 1; k <= T; k++) {
				tc = (op->tc_rr + k) % T;
				if (!(ready & 1u << tc) ||
				    (any_g && g[tc] <= 0))
					continue;
				if (best == SSEMU_NONE ||
				    c->tclass[tc].priority >
					    c->tclass[best].priority)
					best = tc;
			}
			if (best == SSEMU_NONE) {
				/* the guaranteed ones cannot go: the rest */
				any_g = false;
				continue;
			}
		}
		if (pick_in_class(v, best, class_vcs(rv, best), in_out,
				  vcl_out, &pi))
			goto picked;
		ready &= ~(1u << best);
	}
	if (wait != UINT64_MAX)
		*retry = wait;
	return false;
picked:
	op->tc_rr = best;
	tok_send(v, best, v->pkt[pi].bytes);
	return true;
}

/*
 * The sole packet's case.  pick_one_vcl takes it if it fits in the
 * buffer downstream (with no credit its vclass is not even ready): the
 * input's turn and the VC's move on.  "shares" then takes its class's
 * turn and tokens (arb_shares' one-class case: a class without a cap);
 * a capped class's tokens decide, so that one is queued.
 */
static inline bool sole_fits(const struct ssemu_arb_view *v, uint32_t in,
			     uint32_t vcl, uint32_t bytes)
{
	struct ssemu_swport *op = v->op;

	if (pkt_cells(bytes) > op->vq[next_vcl_at(v->edge, vcl)].credits)
		return false;
	op->rr = in;
	op->vc_rr++;
	return true;
}

static bool sole_priority_rr(const struct ssemu_arb_view *v, uint32_t in,
			     uint32_t vcl, uint32_t bytes)
{
	return sole_fits(v, in, vcl, bytes);
}

SSEMU_HOT
static bool sole_shares(const struct ssemu_arb_view *v, uint32_t in,
			uint32_t vcl, uint32_t bytes)
{
	uint32_t tc = vcl / SSEMU_NVC;

	if (v->c->tclass[tc].max_pct < 100 || !sole_fits(v, in, vcl, bytes))
		return false;
	v->op->tc_rr = tc;
	tok_send(v, tc, bytes);
	return true;
}

const struct ssemu_arb_ops ssemu_arb_table[] = {
	{ .name = "shares", .pick = arb_shares, .sole = sole_shares },
	{ .name = "priority-rr", .pick = arb_priority_rr,
	  .sole = sole_priority_rr },
};

int ssemu_arb_index(const char *name)
{
	return ssemu_policy_find(ssemu_arb_table, ARRAY_SIZE(ssemu_arb_table),
				 sizeof(ssemu_arb_table[0]), name);
}
