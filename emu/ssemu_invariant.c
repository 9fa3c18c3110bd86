/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The whole-model invariant check (ssemu_invariant.h): packet
 * conservation, VOQ membership and counts, credit bounds.  It reads every
 * packet, VOQ, credit counter and live event, so a debug build runs it on
 * a sample of the events only (ssemu_model.c); a test may call it at any
 * point between events.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ssemu_link.h"

bool ssemu_model_invariant_failed(struct ssemu_region *r, const char *fmt,
				  ...)
{
	char why[192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ssemu_fail(r, "a model invariant does not hold: %s", why);
}

/* Where the check has seen each packet, and the credits it has seen on
 * their way in events. */
struct census {
	struct ssemu_region *r;
	uint8_t *seen;		/* per packet: 0, or where it was seen */
	uint32_t inuse;		/* packets seen in use */
	/* credits in SW_CREDIT and NIC_CREDIT events, [inst][port][vcl]
	 * and [nic][tc] */
	uint32_t *sw_cr, *nic_cr;
	bool bad;
};

enum { SEEN_FREE = 1, SEEN_VOQ, SEEN_ACKQ, SEEN_EVENT, SEEN_PARK };

static const char *const seen_name[] = {
	[SEEN_FREE] = "the free list", [SEEN_VOQ] = "a VOQ",
	[SEEN_ACKQ] = "a NIC's ack queue", [SEEN_EVENT] = "an event",
	[SEEN_PARK] = "the park list",
};

/* Packet @pi is in @where: it must be nowhere else. */
static bool census_add(struct census *c, uint32_t pi, int where)
{
	struct ssemu_region *r = c->r;

	/* (free or in use, a packet is below the pool's high-water mark) */
	if (pi >= r->pkt_hwm)
		c->bad = ssemu_model_invariant_failed(
			r, "%s holds packet index %u, the pool's high-water "
			"mark is %u of %u", seen_name[where], pi, r->pkt_hwm,
			r->config.max_pkts);
	else if (c->seen[pi])
		c->bad = ssemu_model_invariant_failed(
			r, "packet %u is in %s and in %s", pi,
			seen_name[c->seen[pi]], seen_name[where]);
	if (c->bad)
		return false;
	c->seen[pi] = (uint8_t)where;
	if (where != SEEN_FREE)
		c->inuse++;
	return true;
}

static size_t sw_cr_index(const struct ssemu_region *r, uint32_t inst,
			  uint32_t port, uint32_t vcl)
{
	return ((size_t)inst * r->topo.radix + port) * SSEMU_MAX_VCLASS + vcl;
}

/* An event in flight: the packet it carries, or the credit. */
static bool census_event(void *arg, const struct ssemu_fired *f)
{
	struct census *c = arg;
	struct ssemu_region *r = c->r;

	switch (f->type) {
	case SSEMU_MEV_NIC_ARRIVE:
	case SSEMU_MEV_SW_READY:
		return census_add(c, f->c, SEEN_EVENT);
	case SSEMU_MEV_RESEND:
		return census_add(c, f->b, SEEN_EVENT);
	case SSEMU_MEV_SW_CREDIT:
		if (f->a < r->sw_used && (f->b & 0xff) < r->topo.radix &&
		    (f->b >> 8) < SSEMU_MAX_VCLASS)
			c->sw_cr[sw_cr_index(r, f->a, f->b & 0xff,
					     f->b >> 8)] += f->c;
		return true;
	case SSEMU_MEV_NIC_CREDIT:
		if (f->a < r->config.max_nics && f->b < SSEMU_MAX_TCLASS)
			c->nic_cr[(size_t)f->a * SSEMU_MAX_TCLASS + f->b] +=
				f->c;
		return true;
	default:
		return true;
	}
}

/* The free list: well formed, and with the packets in use and those never
 * used (from the high-water mark up) the pool. */
static bool check_free(struct census *c)
{
	struct ssemu_region *r = c->r;
	uint32_t pi, nfree = 0, never = r->config.max_pkts - r->pkt_hwm;

	for (pi = r->pkt_free; pi != SSEMU_NONE;
	     pi = ssemu_r_pkt(r, pi)->next) {
		if (!census_add(c, pi, SEEN_FREE))
			return false;
		nfree++;
	}
	if ((uint64_t)nfree + r->pkts_used + never != r->config.max_pkts)
		return !ssemu_model_invariant_failed(
			r, "%u packets free, %u in use and %u never used, of "
			"%u", nfree, r->pkts_used, never, r->config.max_pkts);
	return true;
}

/* Output @out of switch model @inst: its VOQs' lists against its masks
 * and counts. */
static bool check_output(struct census *c, uint32_t inst, uint32_t out)
{
	struct ssemu_region *r = c->r;
	struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);
	struct ssemu_swport *op = ssemu_sw_port(r, s, out);
	uint32_t nvcl = r->config.ntclass * SSEMU_NVC, vcl, in, n, pi, last;
	uint32_t per_tc[SSEMU_MAX_TCLASS] = { 0 }, total = 0, tc;
	uint64_t m, vclmask = 0;

	/* (a port has its fabric's vclasses alone: one marked queued
	 * beyond them differs from the vclmask made here) */
	for (vcl = 0; vcl < nvcl; vcl++) {
		n = 0;
		for (m = op->vq[vcl].inmask; m; m &= m - 1) {
			in = (uint32_t)__builtin_ctzll(m);
			if (in >= r->topo.radix)
				return !ssemu_model_invariant_failed(
					r, "switch %u output %u vclass %u: "
					"input %u in the mask, of %u", s->sw,
					out, vcl, in, r->topo.radix);
			pi = ssemu_r_voq(r, inst, in, out, vcl)->head;
			if (pi == SSEMU_NONE)
				return !ssemu_model_invariant_failed(
					r, "switch %u output %u vclass %u: "
					"input %u in the mask, its VOQ empty",
					s->sw, out, vcl, in);
			for (last = pi; pi != SSEMU_NONE;
			     pi = ssemu_r_pkt(r, pi)->next) {
				if (!census_add(c, pi, SEEN_VOQ))
					return false;
				last = pi;
				n++;
			}
			if (last != ssemu_r_voq(r, inst, in, out, vcl)->tail)
				return !ssemu_model_invariant_failed(
					r, "switch %u output %u vclass %u "
					"input %u: the VOQ's tail is %u, its "
					"last packet %u", s->sw, out, vcl, in,
					ssemu_r_voq(r, inst, in, out, vcl)->tail,
					last);
		}
		if (n != op->vq[vcl].queued)
			return !ssemu_model_invariant_failed(
				r, "switch %u output %u vclass %u: %u packets "
				"in its VOQs, %u counted", s->sw, out, vcl, n,
				op->vq[vcl].queued);
		if (n)
			vclmask |= 1ULL << vcl;
		per_tc[vcl / SSEMU_NVC] += n;
		total += n;
	}
	if (vclmask != op->vclmask)
		return !ssemu_model_invariant_failed(
			r, "switch %u output %u: vclmask %#llx, the vclasses "
			"with packets %#llx", s->sw, out,
			(unsigned long long)op->vclmask,
			(unsigned long long)vclmask);
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++)
		if (per_tc[tc] != op->queued_tc[tc])
			return !ssemu_model_invariant_failed(
				r, "switch %u output %u: %u packets of class "
				"%u queued, %u counted", s->sw, out,
				per_tc[tc], tc, op->queued_tc[tc]);
	if (total != op->nqueued)
		return !ssemu_model_invariant_failed(
			r, "switch %u output %u: %u packets queued, %u "
			"counted", s->sw, out, total, op->nqueued);
	return true;
}

/* The credits a ring holds for @key. */
static uint64_t ring_cells(const struct ssemu_cr *cr, uint32_t key)
{
	uint32_t k, i;
	uint64_t sum = 0;

	for (k = 0; k < *cr->n && k < SSEMU_CR_RING; k++) {
		i = (*cr->head + k) % SSEMU_CR_RING;
		if (cr->key[i] == key)
			sum += cr->cells[i];
	}
	return sum;
}

/* A credit counter (@have), with what is on its way to it (@coming), is
 * within its buffer. */
static bool credit_ok(struct ssemu_region *r, uint64_t have, uint64_t coming,
		      const char *who, uint32_t i, uint32_t j, uint32_t k)
{
	uint32_t buf = buf_cells(&r->config);

	if (have <= buf && have + coming <= buf)
		return true;
	return !ssemu_model_invariant_failed(
		r, "%s %u/%u/%u: %llu credits and %llu on their way, of a "
		"buffer of %u", who, i, j, k, (unsigned long long)have,
		(unsigned long long)coming, buf);
}

static bool check_credits(struct census *c)
{
	struct ssemu_region *r = c->r;
	uint32_t nvcl = r->config.ntclass * SSEMU_NVC, inst, p, vcl, nic, tc;

	for (inst = 0; inst < r->sw_used; inst++) {
		struct ssemu_switch_sh *s = ssemu_r_switch(r, inst);

		for (p = 0; p < r->topo.radix; p++) {
			struct ssemu_swport *op = ssemu_sw_port(r, s, p);
			struct ssemu_cr cr = cr_of_port(r, op);

			if (op->peer.kind == SSEMU_PORT_NONE)
				continue;
			for (vcl = 0; vcl < nvcl; vcl++)
				if (!credit_ok(r, op->vq[vcl].credits,
					       ring_cells(&cr, vcl) +
						       c->sw_cr[sw_cr_index(
							       r, inst, p,
							       vcl)],
					       "switch/output/vclass", s->sw, p,
					       vcl))
					return false;
		}
	}
	for (nic = 0; nic < r->config.max_nics; nic++) {
		struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
		struct ssemu_cr cr = cr_of_nic(n);

		if (n->state != SSEMU_NIC_ATTACHED)
			continue;
		for (tc = 0; tc < r->config.ntclass; tc++)
			if (!credit_ok(r, n->credits[tc],
				       ring_cells(&cr, tc) +
					       c->nic_cr[(size_t)nic *
							 SSEMU_MAX_TCLASS + tc],
				       "NIC/class", nic, tc, 0))
				return false;
	}
	return true;
}

bool ssemu_model_check(struct ssemu_region *r)
{
	const struct ssemu_config *cf = &r->config;
	struct census c = { .r = r };
	uint32_t inst, out, nic, pi;
	bool ok = false;

	if (ssemu_broken(r) || r->sw_used > cf->max_switches)
		return false;
	if (r->pkt_hwm > cf->max_pkts)
		return !ssemu_model_invariant_failed(
			r, "the packet pool's high-water mark is %u of %u",
			r->pkt_hwm, cf->max_pkts);
	/* (only the packets below the mark can be anywhere) */
	c.seen = calloc(SSEMU_MAX(r->pkt_hwm, 1u), 1);
	c.sw_cr = calloc((size_t)SSEMU_MAX(r->sw_used, 1u) * r->topo.radix *
				 SSEMU_MAX_VCLASS,
			 sizeof(*c.sw_cr));
	c.nic_cr = calloc((size_t)cf->max_nics * SSEMU_MAX_TCLASS,
			  sizeof(*c.nic_cr));
	if (!c.seen || !c.sw_cr || !c.nic_cr) {
		/* (nothing is known to be wrong) */
		ok = true;
		goto out;
	}
	if (!check_free(&c))
		goto out;
	/* each switch model's topology id, both ways */
	for (inst = 0; inst < r->sw_used; inst++) {
		uint32_t sw = ssemu_r_switch(r, inst)->sw;

		if (ssemu_sw_id(r, inst) != sw || sw >= r->topo.nswitches ||
		    ssemu_r_swmap(r)[sw] != inst) {
			ssemu_model_invariant_failed(
				r, "switch model %u: topology id %u, its own "
				"%u", inst, ssemu_sw_id(r, inst), sw);
			goto out;
		}
	}
	ssemu_engine_foreach(ssemu_r_engine(r), census_event, &c);
	if (c.bad)
		goto out;
	for (inst = 0; inst < r->sw_used; inst++)
		for (out = 0; out < r->topo.radix; out++)
			if (!check_output(&c, inst, out))
				goto out;
	for (nic = 0; nic < cf->max_nics; nic++)
		for (pi = ssemu_r_nic(r, nic)->ack_head; pi != SSEMU_NONE;
		     pi = ssemu_r_pkt(r, pi)->next)
			if (!census_add(&c, pi, SEEN_ACKQ))
				goto out;
	for (pi = r->park_head; pi != SSEMU_NONE;
	     pi = ssemu_r_pkt(r, pi)->next)
		if (!census_add(&c, pi, SEEN_PARK))
			goto out;
	if (c.inuse != r->pkts_used) {
		ssemu_model_invariant_failed(
			r, "%u packets in use, %u of them in a VOQ, an ack "
			"queue, the park list or an event", r->pkts_used, c.inuse);
		goto out;
	}
	ok = check_credits(&c);
out:
	free(c.seen);
	free(c.sw_cr);
	free(c.nic_cr);
	return ok;
}
