/* SPDX-License-Identifier: BSD-2-Clause */
/* A lone stream's recurrence, for the unit tests (see lone.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu_rng.h>

#include "lone.h"
#include "ssemu_compiler.h"
#include "ssemu_region.h"
#include "tf.h"

void lone_case(const char *preset, uint64_t *rng, unsigned round,
	       struct ssemu_config *c, struct ssemu_topo *t, uint64_t *src,
	       uint64_t *dst, uint64_t *len)
{
	char err[128];

	tf_config(c, preset);
	c->seed = tf_rng_next(rng);
	c->buf_size = 1u << 20;
	c->bufs_per_ep = 2;
	assert_int_equal(ssemu_topo_init(t, &c->topo, err, sizeof(err)), 0);
	*src = tf_rng_next(rng) % t->nendpoints;
	do
		*dst = tf_rng_next(rng) % t->nendpoints;
	while (*dst == *src);
	*len = tf_rng_next(rng) % (1u << (round % 4 * 5 + 5));
}

/*
 * A switch's pipeline latency for the packet of identity @uid (source
 * port << 32 | its NIC's sequence number) arriving on VC @vc: from the
 * stream keyed by (switch, packet, VC), one packet in a thousand on the
 * slow path above max, the others a normal of the configured mean and
 * deviation clipped to [min, max].  Drawn from the whole stream, as
 * the definition has it: emu/ssemu_switch.c takes its usual case from
 * the stream's first two draws alone, and the tests check that it gives
 * the same values.
 */
static ssemu_time_t pipeline_draw(const struct ssemu_config *c, uint32_t sw,
				  uint64_t uid, uint32_t vc)
{
	struct ssemu_rng g;
	double v;

	ssemu_rng_keyed(&g, c->seed, 0x100000000ULL + sw,
			uid ^ (uint64_t)vc << 48);
	if (ssemu_rng_below(&g, 1000) == 0)
		return c->sw_lat_max +
		       ssemu_rng_below(&g, c->sw_lat_max - c->sw_lat_min + 1);
	v = (double)c->sw_lat_mean + ssemu_rng_normal(&g) * c->sw_lat_sd;
	v = SSEMU_MAX(v, (double)c->sw_lat_min);
	v = SSEMU_MIN(v, (double)c->sw_lat_max);
	return (ssemu_time_t)v;
}

void lone_path(struct lone_path *lp, const struct ssemu_config *c,
	       const struct ssemu_topo *t, uint64_t src, uint64_t dst)
{
	/* (the global link copy of the pair, as a NIC stamps it) */
	uint16_t copy = (uint16_t)(((uint32_t)src * 2654435761u +
				    (uint32_t)dst) >> 7);
	struct ssemu_peer peer;
	uint32_t port;

	assert_true(c->edge.rate_bps == c->local.rate_bps &&
		    c->edge.rate_bps == c->global.rate_bps &&
		    8 * SSEMU_PS_PER_S % c->edge.rate_bps == 0);
	memset(lp, 0, sizeof(*lp));
	lp->c = c;
	lp->src = src;
	lp->ps_per_byte = 8 * SSEMU_PS_PER_S / c->edge.rate_bps;
	lp->sw[0] = ssemu_topo_ep_switch(t, src);
	for (;;) {
		assert_true(lp->nsw < LONE_HOPS);
		port = ssemu_topo_min_port(t, lp->sw[lp->nsw], dst, copy);
		ssemu_topo_peer(t, lp->sw[lp->nsw], port, &peer);
		lp->delay[lp->nsw] = peer.kind == SSEMU_PORT_GLOBAL ?
					     c->global.delay :
				     peer.kind == SSEMU_PORT_LOCAL ?
					     c->local.delay : c->edge.delay;
		lp->nsw++;
		if (peer.kind == SSEMU_PORT_ENDPOINT) {
			assert_true(peer.ep == dst);
			return;
		}
		lp->sw[lp->nsw] = peer.sw;
		lp->vc[lp->nsw] = lp->vc[lp->nsw - 1] + 1;
	}
}

/*
 * The next packet of @bytes (its header too) the source NIC puts on
 * @lp's path, when it has it at @t: the time it arrives at the far
 * endpoint.  It leaves once the packet before it is on the wire; at each
 * switch it is ready after its pipeline draw but never before the packet
 * ahead of it from the same input (the pipeline is FIFO), and goes out
 * when it is ready and the output has serialised the one before.  No
 * credit, window or congestion control holds anything back (the caller
 * checks the NICs' stall counts), and nothing else uses the path.
 */
ssemu_time_t lone_packet(struct lone_path *lp, ssemu_time_t t,
			 uint64_t bytes)
{
	ssemu_time_t ser = bytes * lp->ps_per_byte, at, r;
	uint64_t uid = lp->src << 32 | lp->seq++;
	uint32_t h;

	at = SSEMU_MAX(t, lp->nic_free);
	lp->nic_free = at + ser;
	at = lp->nic_free + lp->c->edge.delay;
	for (h = 0; h < lp->nsw; h++) {
		r = at + pipeline_draw(lp->c, lp->sw[h], uid, lp->vc[h]);
		lp->ready[h] = SSEMU_MAX(r, lp->ready[h]);
		lp->lat_sum -= at;
		at = SSEMU_MAX(lp->ready[h], lp->free_at[h]);
		lp->lat_sum += at;
		lp->free_at[h] = at + ser;
		at = lp->free_at[h] + lp->delay[h];
	}
	lp->hops += lp->nsw;
	return at;
}

/*
 * A lone @len-byte message from endpoint port @src to @dst, posted at 0
 * on a fresh fabric: when its last packet arrives and when the
 * acknowledgement that covers it does, into @o with the fabric's counts.
 * The receiver acknowledges a message's last packet at once, and the
 * others when 16 are unacknowledged or, if fewer, a microsecond after the
 * first of them (SSEMU_ACK_EVERY, SSEMU_ACK_DELAY; an arrival at the very
 * instant of that timer counts in its acknowledgement); each
 * acknowledgement is a header-sized packet of the receiver's NIC, back on
 * the minimal path.
 */
void lone_send(const struct ssemu_config *c, const struct ssemu_topo *t,
	       uint64_t src, uint64_t dst, uint64_t len, struct lone_out *o)
{
	uint64_t npkts = (len + c->mtu - 1) / c->mtu, k, arrived = 0;
	uint64_t acked = 0;
	ssemu_time_t *b = calloc(npkts, sizeof(*b));
	ssemu_time_t *timer = calloc(npkts, sizeof(*timer));
	struct lone_path fwd, back;
	uint32_t ntimer = 0, first = 0;

	assert_non_null(b);
	assert_non_null(timer);
	lone_path(&fwd, c, t, src, dst);
	lone_path(&back, c, t, dst, src);
	for (k = 0; k < npkts; k++)
		b[k] = lone_packet(&fwd, 0,
				   SSEMU_MIN((uint64_t)c->mtu,
					     len - k * c->mtu) +
					   c->pkt_overhead);
	o->delivery = b[npkts - 1];
	k = 0;
	while (k < npkts) {
		if (first < ntimer && timer[first] < b[k]) {
			/* a timer: what arrived since the last one */
			if (arrived > acked) {
				o->completion = lone_packet(&back,
							    timer[first],
							    c->pkt_overhead);
				acked = arrived;
			}
			first++;
			continue;
		}
		arrived = ++k;
		if (arrived == npkts ||
		    arrived - acked >= SSEMU_ACK_EVERY) {
			o->completion = lone_packet(&back, b[k - 1],
						    c->pkt_overhead);
			acked = arrived;
		} else if (arrived - acked == 1) {
			timer[ntimer++] = b[k - 1] + SSEMU_ACK_DELAY;
		}
	}
	o->acks = back.seq;
	o->hops = fwd.hops + back.hops;
	o->lat_sum = fwd.lat_sum + back.lat_sum;
	free(timer);
	free(b);
}

/*
 * The read's request is a header-only packet on the forward path; the
 * target acknowledges it at once and then sends the results, each of up
 * to an MTU of the region's bytes (one packet for a read of none), all
 * back to back from its NIC on the reverse path, the acknowledgement
 * first.  Results are neither windowed nor acknowledged, so the read
 * completes when the last of them arrives.
 */
void lone_read(const struct ssemu_config *c, const struct ssemu_topo *t,
	       uint64_t src, uint64_t dst, uint64_t len, struct lone_out *o)
{
	uint64_t npkts = len ? (len + c->mtu - 1) / c->mtu : 1, k;
	struct lone_path fwd, back;
	ssemu_time_t at;

	lone_path(&fwd, c, t, src, dst);
	lone_path(&back, c, t, dst, src);
	at = lone_packet(&fwd, 0, c->pkt_overhead);
	o->delivery = at;
	(void)lone_packet(&back, at, c->pkt_overhead);
	for (k = 0; k < npkts; k++)
		o->completion = lone_packet(&back, at,
					    SSEMU_MIN((uint64_t)c->mtu,
						      len - k * c->mtu) +
						    c->pkt_overhead);
	o->acks = 1;
	o->hops = fwd.hops + back.hops;
	o->lat_sum = fwd.lat_sum + back.lat_sum;
}
