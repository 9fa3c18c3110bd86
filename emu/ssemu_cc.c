/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * End-to-end congestion control: how many packets a source NIC may have in
 * flight to a destination NIC (the window), when a switch marks a packet,
 * how a source answers marks and flow-control frames.  A policy keeps its
 * state in the pair (struct ssemu_pair) and, at edge outputs, in the
 * output's flow count; it sees them through the views of ssemu_policy.h.
 */
#include "ssemu_link.h"

/* No end-to-end congestion control: only the window and the link-level
 * credits hold a source back (the previous-generation behaviour: an incast
 * backs up through the credits into the network). */
static uint32_t cc_none_window(const struct ssemu_cc_pair_view *v)
{
	return v->nic_window;
}

static bool cc_none_mark(const uint32_t *queued_tc, uint32_t tc)
{
	return false;
}

static void cc_none_on_ack(const struct ssemu_cc_pair_view *v, uint32_t count,
			   bool marked)
{
}

/*
 * Endpoint-pair congestion control, after Slingshot's: a switch output
 * toward an endpoint where SSEMU_CC_MARK_QUEUE packets or more of a class
 * wait is congested for that class, and marks the class's packets it sends;
 * the destination NIC echoes the mark in its acknowledgement (at once); the
 * source keeps a congestion window per destination NIC (as many packets in
 * flight as it allows) that halves on a marked acknowledgement, at most
 * once per window's worth of acknowledgements (about a round trip), and
 * grows by one packet per window of unmarked ones, up to the NIC's window.
 * Only the pairs that feed the congested port slow down: the same source's
 * traffic to other destinations does not.
 */

/*
 * Fine-grained flow control (FGFC), after HPE's patents (anchors.md 6).
 * An edge output knows the flows feeding it (Rosetta keeps per-flow state:
 * here, the source NICs with data packets queued for it, nflows).  When a
 * data packet joins the output's queue and SSEMU_CC_MARK_QUEUE or more
 * packets of its class wait there, the switch sends the packet's source a
 * flow-control frame for the pair: send one packet per gap, gap = nflows
 * packet times (the fair share) stretched by how far the class's queue is
 * over the threshold, for the next SSEMU_CC_PACE_GAPS gaps.  The frame
 * travels back over the hops the packet came (control frames go first),
 * so the source hears within a round trip of the egress port -- not of the
 * destination, whose acknowledgements (marks and the window, above) come
 * only once the queue has drained, which under a deep incast takes long.
 * Every packet that joins a congested queue renews its pair's pacing; once
 * the queue is short, the pacing runs out.  The queue settles near the
 * threshold however many sources there are; a window of one packet per
 * pair would still leave one packet per source queued, filling the
 * switch buffers that bystanders' packets need.
 */
#define FGFC_GAP_MAX ((1u << 24) - 1)	/* ns: the low 24 bits of a frame */

SSEMU_HOT
static uint32_t cc_pair_window(const struct ssemu_cc_pair_view *v)
{
	if (v->pair->pause > v->now)
		return 0;
	return SSEMU_MAX(v->pair->cwnd >> 8, 1u);
}

/* Paced packets queued per flow at edge outputs (the flows a port sees):
 * data, and RMA read results, whose source is the NIC sending them. */
static void egq_count(const struct ssemu_cc_queue_view *v, int d)
{
	uint16_t *e;

	if (!v->pair)
		return;
	e = &v->pair->egq;
	if (d > 0) {
		if ((*e)++ == 0)
			(*v->nflows)++;
	} else if (*e && --(*e) == 0 && *v->nflows) {
		(*v->nflows)--;
	}
}

SSEMU_HOT
static bool cc_pair_on_queue(const struct ssemu_cc_queue_view *v,
			     struct ssemu_cc_frame *f)
{
	const struct ssemu_config *c = v->c;
	const struct ssemu_pkt *pkt = v->pkt;
	uint32_t q;
	ssemu_time_t gap;

	egq_count(v, 1);
	q = v->queued_tc[pkt->tclass];
	if (q < SSEMU_CC_MARK_QUEUE || !v->src ||
	    v->src->state != SSEMU_NIC_ATTACHED ||
	    (pkt->type == SSEMU_PKT_DATA && v->src->gen != pkt->src_gen))
		return false;
	/* back over the switch-to-switch hops taken and the source's link */
	f->delay = (ssemu_time_t)(pkt->vc + 1) *
			   (c->sw_lat_mean + c->local.delay) +
		   c->edge.delay;
	gap = ser_time(c->mtu + c->pkt_overhead, c->edge.rate_bps) *
	      SSEMU_MAX(*v->nflows, 1u) * q / SSEMU_CC_MARK_QUEUE;
	/* the frame carries the gap (ns, at most 2^24 - 1) and the class */
	f->arg = (uint32_t)SSEMU_MIN(gap / SSEMU_PS_PER_NS, FGFC_GAP_MAX) |
		 (uint32_t)pkt->tclass << 24;
	return true;
}

SSEMU_HOT
static void cc_pair_on_dequeue(const struct ssemu_cc_queue_view *v)
{
	egq_count(v, -1);
}

/* A frame reached the pair's source: pace its traffic. */
static bool cc_pair_on_frame(const struct ssemu_cc_pair_view *v, uint32_t arg)
{
	ssemu_time_t gap = (ssemu_time_t)(arg & FGFC_GAP_MAX) * SSEMU_PS_PER_NS;
	struct ssemu_pair *pr = v->pair;
	/* a pair that was not paced is throttled now (telemetry counts the
	 * episodes, not every frame that prolongs one) */
	bool episode = pr->slow <= v->now;

	pr->gap = (uint32_t)SSEMU_MIN(gap, UINT32_MAX);
	pr->slow = v->now + SSEMU_CC_PACE_GAPS * gap;
	return episode;
}

/* The source put a paced packet on the wire: while paced, the next one
 * waits a gap. */
SSEMU_HOT
static bool cc_pair_on_send(const struct ssemu_cc_pair_view *v,
			    ssemu_time_t *until)
{
	if (v->pair->slow <= v->now)
		return false;
	v->pair->pause = v->now + v->pair->gap;
	*until = v->pair->pause;
	return true;
}

SSEMU_HOT
static bool cc_pair_mark(const uint32_t *queued_tc, uint32_t tc)
{
	/* per class, so that throttling respects the classes' shares */
	return queued_tc[tc] >= SSEMU_CC_MARK_QUEUE;
}

SSEMU_HOT
static void cc_pair_on_ack(const struct ssemu_cc_pair_view *v, uint32_t count,
			   bool marked)
{
	uint32_t *w = &v->pair->cwnd;
	uint32_t *since = &v->pair->cc_acked;
	uint32_t max = v->nic_window << 8;

	if (*since < UINT32_MAX / 2)
		*since += count;
	if (marked) {
		/* at most one cut per window's worth of acknowledgements
		 * (about a round trip): the marks of one episode count once */
		if (*since >= (*w >> 8)) {
			*w = SSEMU_MAX(*w / 2, 256u);
			*since = 0;
		}
	} else {
		*w = SSEMU_MIN(max, *w + count * 65536u / SSEMU_MAX(*w, 256u));
	}
}

const struct ssemu_cc_ops ssemu_cc_table[] = {
	{ .name = "none", .window = cc_none_window,
	  .mark = cc_none_mark, .on_ack = cc_none_on_ack },
	{ .name = "endpoint-pair", .window = cc_pair_window,
	  .mark = cc_pair_mark, .on_ack = cc_pair_on_ack,
	  .on_queue = cc_pair_on_queue, .on_dequeue = cc_pair_on_dequeue,
	  .on_send = cc_pair_on_send, .on_frame = cc_pair_on_frame },
};

int ssemu_cc_index(const char *name)
{
	return ssemu_policy_find(ssemu_cc_table, ARRAY_SIZE(ssemu_cc_table),
				 sizeof(ssemu_cc_table[0]), name);
}
