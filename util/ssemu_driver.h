/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The traffic driver of the model-time commands (sim, impact, share): a
 * private in-process fabric with one NIC and one endpoint per port, posting
 * a message, draining every endpoint's events into the command's hooks,
 * and running the engine, in fixed steps or until it is idle.  A command
 * keeps its traffic patterns (as tables of ops of its own), its
 * measurement and its output; the driver is what they all do alike.
 */
#ifndef SSEMU_DRIVER_H
#define SSEMU_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

struct ssemu_drv;

/* What a command does with what the driver sees.  Every hook may be NULL. */
struct ssemu_drv_ops {
	/* a message arrived at endpoint @port (released after the hook) */
	void (*recv)(struct ssemu_drv *d, uint64_t port,
		     const struct ssemu_event *ev);
	/* a send of endpoint @port completed (a failed one is counted in
	 * d->failed already) */
	void (*sent)(struct ssemu_drv *d, uint64_t port,
		     const struct ssemu_event *ev);
	/* ssemu_drv_run_steps(): what happens at model time @now, before
	 * the engine runs one step on; 1 ends the run, < 0 fails it */
	int (*step)(struct ssemu_drv *d, ssemu_time_t now);
};

struct ssemu_drv {
	const char *tool;		/* prefix of every message */
	const struct ssemu_drv_ops *ops;
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic **nics;	/* port -> NIC */
	struct ssemu_ep **eps;		/* port -> endpoint */
	uint64_t n;			/* ports attached */
	uint64_t failed;		/* sends completed with an error */
	/* events each port is owed (a SEND_DONE at the source and a RECV at
	 * the destination of every post), and the ports owed any (a bit
	 * each): a drain polls those alone, not every port */
	uint32_t *owed;
	uint64_t *owed_bits;
	/* the ports with events pushed since their last drain (a bit
	 * each), from the fabric's ready endpoints (ssemu_fabric_ready) by
	 * slot_port (endpoint slot -> port, nslots of them): a drain polls
	 * the ports both owed and ready; ready_sum has a bit for each
	 * word of ready_bits with a bit set, so a drain visits the words
	 * with ports ready rather than every port's */
	uint64_t *ready_bits;
	uint64_t *ready_sum;
	uint32_t *slot_port;
	uint32_t nslots;
};

/* Port @port is owed one more event. */
static inline void ssemu_drv_owe(struct ssemu_drv *d, uint64_t port)
{
	d->owed[port]++;
	d->owed_bits[port / 64] |= 1ull << (port % 64);
}

/* The most endpoints one run models: one NIC each, as many as a fabric
 * has NIC slots (resources.max_nics, at most 2^20). */
#define SSEMU_DRV_MAX_ENDPOINTS 1048576

/* @d->cfg as @fo says (ssemu_cli_config()); set tool and ops first. */
int ssemu_drv_config(struct ssemu_drv *d, const struct ssemu_cli_fabric *fo);

/*
 * Size d->cfg for @n endpoints, messages of up to @msg_bytes and about
 * @pkts_per_nic packets in flight per NIC, then open it as a private fabric
 * and attach ports 0..@n-1, one NIC and one endpoint each; @job, if given,
 * sets a port's job and rank.  On error a message names the tool and what
 * failed; ssemu_drv_close() undoes whatever was opened.
 */
int ssemu_drv_open(struct ssemu_drv *d, uint64_t n, uint64_t msg_bytes,
		   uint64_t pkts_per_nic,
		   void (*job)(uint64_t port, struct ssemu_nic_opts *no));
void ssemu_drv_close(struct ssemu_drv *d);

/* Packets in flight per NIC for a window of messages of @bytes: sixteen
 * messages' worth, at most 1024, and 64 more. */
uint64_t ssemu_drv_window_pkts(const struct ssemu_drv *d, uint64_t bytes);

/*
 * Send @len bytes from @src to @dst in class @tclass, unordered (each
 * packet may take its own path; a class marked ordered still orders), into
 * the model at model time @at (ssemu_ep_send_at; 0: now).  The header
 * carries the post time, @src, @kind and @tag (hdr[0..3]), the completion
 * @cookie.  -EAGAIN when the source is out of slots.
 */
static inline int ssemu_drv_post_at(struct ssemu_drv *d, uint64_t src,
				    uint64_t dst, uint64_t len,
				    uint32_t tclass, uint64_t kind,
				    uint64_t tag, uint64_t cookie,
				    ssemu_time_t at)
{
	/* (a length, no bytes: the model never reads them) */
	struct iovec iov = { NULL, len };
	int ret;
	struct ssemu_send m = {
		.dest = ssemu_ep_addr(d->eps[dst]),
		.tclass = tclass,
		.flags = SSEMU_SEND_NO_DATA,
		.iov = &iov,
		.iov_count = 1,
		.cookie = cookie,
	};

	m.hdr[0] = at ? at : ssemu_fabric_now(d->fab);
	m.hdr[1] = src;
	m.hdr[2] = kind;
	m.hdr[3] = tag;
	ret = at ? ssemu_ep_send_at(d->eps[src], &m, at) :
		   ssemu_ep_send(d->eps[src], &m);
	if (!ret) {
		ssemu_drv_owe(d, src);
		ssemu_drv_owe(d, dst);
	}
	return ret;
}

/* The same, into the model now. */
static inline int ssemu_drv_post(struct ssemu_drv *d, uint64_t src,
				 uint64_t dst, uint64_t len, uint32_t tclass,
				 uint64_t kind, uint64_t tag, uint64_t cookie)
{
	return ssemu_drv_post_at(d, src, dst, len, tclass, kind, tag, cookie,
				 0);
}

/* Every endpoint's events, port by port, into the ops' hooks (the ports
 * owed events; ssemu_drv_finish() looks at every port once more). */
void ssemu_drv_drain(struct ssemu_drv *d);

/* The engine runs up to @events events, then the endpoints are drained:
 * what ssemu_fabric_progress() returns. */
int ssemu_drv_progress(struct ssemu_drv *d, uint32_t events);

/* Until nothing is in flight, draining as it goes. */
int ssemu_drv_finish(struct ssemu_drv *d);

/*
 * From model time 0 in steps of @step: ops->step at each step's time, then
 * the engine runs to the next one and the endpoints are drained; until
 * ops->step returns 1 (then 0) or fails.
 */
int ssemu_drv_run_steps(struct ssemu_drv *d, ssemu_time_t step);

/* Data packets endpoint @port has received (0 if it cannot say). */
uint64_t ssemu_drv_rx_pkts(const struct ssemu_drv *d, uint64_t port);

/* Payload in @pkts data packets of messages of @size bytes: packets times
 * the average payload per packet (a NIC counts bytes only when a whole
 * message is in; under load one message takes long). */
uint64_t ssemu_drv_pkts_bytes(const struct ssemu_drv *d, uint64_t pkts,
			      uint64_t size);

#endif
