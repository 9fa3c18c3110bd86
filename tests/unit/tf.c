/* SPDX-License-Identifier: BSD-2-Clause */
/* The unit tests' fabric harness (see tf.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "tf.h"

/* A preset with resources small enough for a unit test. */
void tf_config(struct ssemu_config *c, const char *preset)
{
	assert_int_equal(ssemu_config_preset(preset, c), 0);
	c->max_nics = 16;
	c->max_switches = 8;
	c->eps_per_nic = 2;
	c->max_eps = 0;		/* every pid of every NIC */
	c->msgs_per_ep = 64;
	c->bufs_per_ep = 16;
	c->buf_size = 65536;
	c->max_pkts = 8192;
	c->max_events = 65536;
}

/* Switch pipeline latency fixed at its mean (no jitter, no slow path). */
void tf_fixed_pipeline(struct ssemu_config *c)
{
	c->sw_lat_sd = 0;
	c->sw_lat_min = c->sw_lat_max = c->sw_lat_mean;
}

static struct tf *tf_open_in(const struct ssemu_config *c,
			     enum ssemu_store store, const char *name)
{
	struct ssemu_fabric_opts o = {
		.store = store,
		.name = name,
		.config = c,
	};
	struct tf *t = calloc(1, sizeof(*t));
	char err[256] = "";

	assert_non_null(t);
	t->cfg = *c;
	if (ssemu_fabric_open(&o, &t->fab, err, sizeof(err)))
		fail_msg("ssemu_fabric_open: %s", err);
	return t;
}

struct tf *tf_open(const struct ssemu_config *c)
{
	return tf_open_in(c, SSEMU_STORE_PRIVATE, NULL);
}

struct tf *tf_open_shared(const struct ssemu_config *c)
{
	static unsigned seq;
	char name[64], path[80];
	struct tf *t;

	snprintf(name, sizeof(name), "ssemu-tf-%d-%u", (int)getpid(), seq++);
	t = tf_open_in(c, SSEMU_STORE_SHM, name);
	/* mapped now: nothing is left behind, whatever the test does */
	snprintf(path, sizeof(path), "/%s", name);
	shm_unlink(path);
	return t;
}

/* Attach a NIC at @port and open one endpoint; returns its index. */
unsigned tf_add(struct tf *t, uint32_t port)
{
	struct ssemu_nic_opts no = { .port = port, .rank = -1 };
	unsigned i = t->n;

	assert_true(i < TF_MAX);
	assert_int_equal(ssemu_nic_attach(t->fab, &no, &t->nic[i]), 0);
	assert_int_equal(ssemu_ep_open(t->nic[i], &t->ep[i]), 0);
	if (port != SSEMU_PORT_ANY)
		assert_int_equal(ssemu_nic_port(t->nic[i]), port);
	t->n++;
	return i;
}

void tf_close(struct tf *t)
{
	unsigned i;

	for (i = 0; i < t->n; i++) {
		if (t->ep[i])
			ssemu_ep_close(t->ep[i]);
		if (t->nic[i])
			ssemu_nic_detach(t->nic[i]);
	}
	ssemu_fabric_close(t->fab);
	free(t->log);
	free(t);
}

/* Poll every endpoint; RECVs go through on_recv and are released.
 * Returns the number of events taken. */
size_t tf_pump(struct tf *t)
{
	struct ssemu_event ev[64];
	size_t got = 0;
	unsigned i;
	int k, n;

	for (i = 0; i < t->n; i++) {
		if (!t->ep[i])
			continue;
		while ((n = ssemu_ep_poll(t->ep[i], ev, 64)) > 0) {
			for (k = 0; k < n; k++) {
				if (t->nlog == t->cap) {
					t->cap = t->cap ? 2 * t->cap : 1024;
					t->log = realloc(t->log, t->cap *
							 sizeof(*t->log));
					assert_non_null(t->log);
				}
				t->log[t->nlog].ep = i;
				t->log[t->nlog++].ev = ev[k];
				if (ev[k].type == SSEMU_EV_RECV) {
					if (t->on_recv)
						t->on_recv(t, i, &ev[k]);
					ssemu_event_release(t->ep[i], &ev[k]);
				} else if (ev[k].type == SSEMU_EV_RMA_DONE) {
					ssemu_event_release(t->ep[i], &ev[k]);
				}
			}
			got += (size_t)n;
		}
	}
	return got;
}

void tf_run_idle_runs(struct tf *t, unsigned max_rounds, unsigned run)
{
	unsigned r, budget;
	int ret, n;

	for (r = 0; r < max_rounds; r++) {
		for (n = 0; n < 4096; n += ret) {
			budget = run < 4096u - (unsigned)n ? run :
					4096u - (unsigned)n;
			ret = ssemu_fabric_progress(t->fab, budget);
			assert_true(ret >= 0);
			if ((unsigned)ret < budget) {
				n += ret;
				break;
			}
		}
		if (!tf_pump(t) && !n && ssemu_fabric_idle(t->fab))
			return;
	}
	fail_msg("fabric not idle after %u rounds", max_rounds);
}

void tf_run_idle(struct tf *t, unsigned max_rounds)
{
	tf_run_idle_runs(t, max_rounds, 4096);
}

/* Post a message, retrying -EAGAIN while driving the engine. */
void tf_send(struct tf *t, unsigned from, unsigned to,
		    const void *buf, size_t len, uint32_t tclass,
		    uint64_t cookie, uint64_t hdr1)
{
	struct iovec iov = { (void *)buf, len };
	struct ssemu_send s = {
		.dest = ssemu_ep_addr(t->ep[to]),
		.tclass = tclass,
		.iov = &iov,
		.iov_count = len ? 1 : 0,
		.cookie = cookie,
	};
	unsigned spins = 0;
	int ret;

	s.hdr[0] = ssemu_fabric_now(t->fab);
	s.hdr[1] = hdr1;
	while ((ret = ssemu_ep_send(t->ep[from], &s)) == -EAGAIN) {
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
		tf_pump(t);
		if (++spins > 10000000)
			fail_msg("send %u->%u: -EAGAIN forever", from, to);
	}
	if (ret)
		fail_msg("send %u->%u (%zu bytes): %d", from, to, len, ret);
}

/* Count logged events of @type at endpoint @ep (any: UINT32_MAX). */
size_t tf_count(const struct tf *t, unsigned ep, uint32_t type)
{
	size_t i, n = 0;

	for (i = 0; i < t->nlog; i++)
		if ((ep == UINT32_MAX || t->log[i].ep == ep) &&
		    t->log[i].ev.type == type)
			n++;
	return n;
}

uint64_t tf_rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}
