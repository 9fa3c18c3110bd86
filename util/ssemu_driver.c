/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The traffic driver of the model-time commands: the fabric and its
 * endpoints, posting, draining and running the engine.  See ssemu_driver.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_compiler.h"
#include "ssemu_driver.h"

int ssemu_drv_config(struct ssemu_drv *d, const struct ssemu_cli_fabric *fo)
{
	return ssemu_cli_config(d->tool, fo, &d->cfg);
}

/* The store's tables for @n endpoints, one NIC and one endpoint each. */
static void drv_size(struct ssemu_config *cfg, uint64_t n,
		     uint64_t msg_bytes, uint64_t pkts_per_nic)
{
	uint64_t m = 0, pkts;
	uint32_t j;

	/* (the modelled jobs' NICs, endpoints and packets too) */
	for (j = 0; j < cfg->nmjobs && j < SSEMU_CONFIG_MJOBS; j++)
		m += cfg->mjobs[j].endpoints;
	n += m;
	pkts = n * pkts_per_nic + 4096;
	cfg->max_nics = (uint32_t)n;
	cfg->eps_per_nic = 1;
	cfg->max_eps = 0;	/* one endpoint slot for each NIC */
	cfg->msgs_per_ep = 64;
	/* an endpoint's rings in 2,304 bytes (events that find the ring
	 * full wait in its overflow list: no result changes), not 27 pages
	 * that a long run goes round one after another, at every endpoint */
	cfg->ev_ring = SSEMU_EV_RING_MIN;
	cfg->bufs_per_ep = msg_bytes > SSEMU_INLINE_MAX ? 16 : 0;
	/* buffers as large as a message (on cache lines), not the default's
	 * 64 KiB.  The messages carry no bytes (SSEMU_SEND_NO_DATA): the
	 * buffers are never written, they bound what an endpoint has in
	 * flight */
	if (cfg->bufs_per_ep)
		cfg->buf_size = (uint32_t)SSEMU_ALIGN_UP(msg_bytes, 64);
	cfg->max_switches = cfg->topo.groups * cfg->topo.switches_per_group;
	cfg->max_pkts = (uint32_t)(pkts < (1u << 24) ? pkts : 1u << 24);
	/* the engine holds at most 2^24 pending events */
	cfg->max_events = cfg->max_pkts < (1u << 22) ? cfg->max_pkts * 4 :
						      1u << 24;
}

uint64_t ssemu_drv_window_pkts(const struct ssemu_drv *d, uint64_t bytes)
{
	uint64_t pkts = (bytes + d->cfg.mtu - 1) / d->cfg.mtu;

	return SSEMU_MIN(pkts * 16, 1024) + 64;
}

/* Which port each endpoint slot is (slot_port), for the drains. */
static int drv_slots(struct ssemu_drv *d)
{
	uint32_t max = 0, s;
	uint64_t i;

	for (i = 0; i < d->n; i++)
		max = SSEMU_MAX(max, ssemu_ep_slot(d->eps[i]));
	d->nslots = d->n ? max + 1 : 0;
	d->slot_port = malloc((d->nslots ? d->nslots : 1) *
			      sizeof(*d->slot_port));
	d->ready_bits = calloc((d->n + 63) / 64 + 1, sizeof(*d->ready_bits));
	d->ready_sum = calloc((d->n + 4095) / 4096 + 1, sizeof(*d->ready_sum));
	if (!d->slot_port || !d->ready_bits || !d->ready_sum)
		return -ENOMEM;
	for (s = 0; s < d->nslots; s++)
		d->slot_port[s] = UINT32_MAX;
	for (i = 0; i < d->n; i++)
		d->slot_port[ssemu_ep_slot(d->eps[i])] = (uint32_t)i;
	return 0;
}

int ssemu_drv_open(struct ssemu_drv *d, uint64_t n, uint64_t msg_bytes,
		   uint64_t pkts_per_nic,
		   void (*job)(uint64_t port, struct ssemu_nic_opts *no))
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	char err[256];
	uint64_t i;
	int ret;

	if (n > SSEMU_DRV_MAX_ENDPOINTS) {
		fprintf(stderr, "%s: %" PRIu64 " endpoints: this tool models "
			"at most %u at once (use --endpoints)\n", d->tool, n,
			SSEMU_DRV_MAX_ENDPOINTS);
		return -EINVAL;
	}
	drv_size(&d->cfg, n, msg_bytes, pkts_per_nic);
	ret = ssemu_config_validate(&d->cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", d->tool, err);
		return ret;
	}
	fo.config = &d->cfg;
	ret = ssemu_fabric_open(&fo, &d->fab, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: cannot build the fabric: %s\n", d->tool,
			err);
		return ret;
	}
	d->n = n;
	d->nics = calloc(n, sizeof(*d->nics));
	d->eps = calloc(n, sizeof(*d->eps));
	d->owed = calloc(n, sizeof(*d->owed));
	d->owed_bits = calloc((n + 63) / 64, sizeof(*d->owed_bits));
	if (!d->nics || !d->eps || !d->owed || !d->owed_bits)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)i, .rank = -1 };

		if (job)
			job(i, &no);
		ret = ssemu_nic_attach(d->fab, &no, &d->nics[i]);
		if (!ret)
			ret = ssemu_ep_open(d->nics[i], &d->eps[i]);
		if (ret) {
			fprintf(stderr, "%s: endpoint %" PRIu64 ": %s\n",
				d->tool, i, strerror(-ret));
			return ret;
		}
	}
	return drv_slots(d);
}

void ssemu_drv_close(struct ssemu_drv *d)
{
	uint64_t i;

	for (i = 0; d->eps && i < d->n; i++)
		if (d->eps[i])
			ssemu_ep_close(d->eps[i]);
	for (i = 0; d->nics && i < d->n; i++)
		if (d->nics[i])
			ssemu_nic_detach(d->nics[i]);
	if (d->fab)
		ssemu_fabric_close(d->fab);
	free(d->nics);
	free(d->eps);
	free(d->owed);
	free(d->owed_bits);
	free(d->ready_bits);
	free(d->ready_sum);
	free(d->slot_port);
	d->owed = NULL;
	d->owed_bits = NULL;
	d->ready_bits = NULL;
	d->ready_sum = NULL;
	d->slot_port = NULL;
	d->fab = NULL;
	d->nics = NULL;
	d->eps = NULL;
}

/* Port @i's events into the hooks; @return how many. */
static uint64_t drain_port(struct ssemu_drv *d, uint64_t i)
{
	const struct ssemu_drv_ops *ops = d->ops;
	struct ssemu_event ev[64];
	uint64_t got = 0;
	int k, n;

	while ((n = ssemu_ep_poll(d->eps[i], ev, 64)) > 0) {
		for (k = 0; k < n; k++) {
			if (ev[k].type == SSEMU_EV_SEND_DONE) {
				if (ev[k].status)
					d->failed++;
				if (ops->sent)
					ops->sent(d, i, &ev[k]);
				continue;
			}
			if (ops->recv)
				ops->recv(d, i, &ev[k]);
			ssemu_event_release(d->eps[i], &ev[k]);
		}
		got += (uint64_t)n;
	}
	return got;
}

/* Port @i's events into the hooks, and what it is owed settled (a port
 * owed nothing more leaves the set). */
static void drain_owed(struct ssemu_drv *d, uint64_t i)
{
	uint64_t got = drain_port(d, i);

	d->owed[i] -= (uint32_t)SSEMU_MIN(got, (uint64_t)d->owed[i]);
	if (!d->owed[i])
		d->owed_bits[i / 64] &= ~(1ull << (i % 64));
}

/* The ports the fabric pushed events to since they were last drained
 * (their bits in ready_bits).  @return false if the fabric cannot say. */
static bool drv_ready(struct ssemu_drv *d)
{
	uint32_t slots[4096], p;
	int k, got;

	do {
		got = ssemu_fabric_ready(d->fab, slots, ARRAY_SIZE(slots));
		if (got < 0)
			return false;
		for (k = 0; k < got; k++) {
			if (slots[k] >= d->nslots)
				continue;
			p = d->slot_port[slots[k]];
			if (p < d->n) {
				d->ready_bits[p / 64] |= 1ull << (p % 64);
				d->ready_sum[p / 4096] |= 1ull << (p / 64 % 64);
			}
		}
	} while (got == (int)ARRAY_SIZE(slots));
	return true;
}

/*
 * The ports owed events that have events, in port order (the order a
 * sweep of every port calls the hooks in): those the fabric pushed events
 * to since their last drain (a port not pushed to has nothing in its
 * ring, a drain empties it), else every port owed events.  A port whose
 * message failed is never sent the RECV it is owed (failures are rare,
 * and counted).  A port pushed to but owed nothing stays ready until it
 * is owed.
 */
void ssemu_drv_drain(struct ssemu_drv *d)
{
	uint64_t w, s, bits, sum, p;

	if (!d->ready_bits || !drv_ready(d)) {
		for (w = 0; w < (d->n + 63) / 64; w++)
			for (bits = d->owed_bits[w]; bits; bits &= bits - 1)
				drain_owed(d, w * 64 + (uint64_t)
						       __builtin_ctzll(bits));
		return;
	}
	for (s = 0; s < (d->n + 4095) / 4096; s++) {
		for (sum = d->ready_sum[s]; sum; sum &= sum - 1) {
			w = s * 64 + (uint64_t)__builtin_ctzll(sum);
			bits = d->owed_bits[w] & d->ready_bits[w];
			for (; bits; bits &= bits - 1) {
				p = w * 64 + (uint64_t)__builtin_ctzll(bits);
				d->ready_bits[w] &= ~(1ull << (p % 64));
				drain_owed(d, p);
			}
			if (!d->ready_bits[w])
				d->ready_sum[s] &= ~(1ull << (w % 64));
		}
	}
}

int ssemu_drv_progress(struct ssemu_drv *d, uint32_t events)
{
	int ret = ssemu_fabric_progress(d->fab, events);

	if (ret < 0)
		return ret;
	ssemu_drv_drain(d);
	return ret;
}

int ssemu_drv_finish(struct ssemu_drv *d)
{
	uint64_t i;
	int ret;

	/* (the ports polled when a ring is full: an event waits for room
	 * until then, not until a batch of events ends) */
	while (!ssemu_fabric_idle(d->fab)) {
		ret = ssemu_fabric_run_until_watched(d->fab, UINT64_MAX);
		if (ret < 0)
			return ret;
		ssemu_drv_drain(d);
	}
	/* every port, owed events or not */
	for (i = 0; i < d->n; i++)
		drain_owed(d, i);
	return 0;
}

int ssemu_drv_run_steps(struct ssemu_drv *d, ssemu_time_t step)
{
	ssemu_time_t t = 0;
	int ret;

	for (;;) {
		ret = d->ops->step(d, t);
		if (ret)
			return ret < 0 ? ret : 0;
		t += step;
		ret = ssemu_fabric_run_until(d->fab, t);
		if (ret)
			return ret;
		ssemu_drv_drain(d);
	}
}

uint64_t ssemu_drv_rx_pkts(const struct ssemu_drv *d, uint64_t port)
{
	struct ssemu_nic_stats st;

	return ssemu_nic_stats(d->nics[port], &st) ? 0 : st.rx_pkts;
}

uint64_t ssemu_drv_pkts_bytes(const struct ssemu_drv *d, uint64_t pkts,
			      uint64_t size)
{
	uint64_t npkts = (size + d->cfg.mtu - 1) / d->cfg.mtu;

	return (uint64_t)((double)pkts * (double)size / (double)npkts);
}
