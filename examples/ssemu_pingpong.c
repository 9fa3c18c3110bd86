/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A program written against libssemu alone, the way a traffic model or a
 * test harness would use the emulator without libfabric: it opens a private
 * two-group Dragonfly, attaches two NICs, sends a message from one endpoint
 * to the other and back, checks the bytes, and prints the model-time
 * latency and the fabric's counters.
 *
 * Build it against an installed copy:
 *	cc ssemu_pingpong.c $(pkg-config --cflags --libs ssemu)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>
#include <slingshot_emu/ssemu_rng.h>

#define MSG_LEN 4096

static int die(const char *what, int rc)
{
	fprintf(stderr, "ssemu_pingpong: %s: %s\n", what, strerror(-rc));
	return 1;
}

/* Send @len bytes of @buf from @from to @to and wait for them there;
 * @out gets the received bytes, *lat the model-time latency. */
static int transfer(struct ssemu_fabric *fabric, struct ssemu_ep *from,
		    struct ssemu_ep *to, const void *buf, size_t len,
		    void *out, ssemu_time_t *lat)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct ssemu_send send = {
		.dest = ssemu_ep_addr(to),
		.iov = &iov,
		.iov_count = 1,
		.cookie = 1,
	};
	struct ssemu_event ev;
	bool received = false, done = false;
	int rc, n, spins;

	rc = ssemu_ep_send(from, &send);
	if (rc)
		return rc;
	for (spins = 0; (!received || !done) && spins < 1000000; spins++) {
		rc = ssemu_fabric_progress(fabric, 256);
		if (rc < 0 && rc != -EBUSY)
			return rc;
		while ((n = ssemu_ep_poll(to, &ev, 1)) == 1) {
			if (ev.type != SSEMU_EV_RECV)
				continue;
			if (ev.len != len ||
			    ssemu_event_copy(to, &ev, 0, out, len) != len)
				return -EPROTO;
			*lat = ev.time - ev.posted;
			ssemu_event_release(to, &ev);
			received = true;
		}
		while ((n = ssemu_ep_poll(from, &ev, 1)) == 1) {
			if (ev.type == SSEMU_EV_SEND_DONE) {
				if (ev.status)
					return ev.status;
				done = true;
			}
		}
	}
	return received && done ? 0 : -ETIMEDOUT;
}

int main(void)
{
	struct ssemu_config cfg;
	struct ssemu_fabric_opts opts = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *fabric;
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	struct ssemu_rng rng;
	static unsigned char buf[MSG_LEN], out[MSG_LEN], back[MSG_LEN];
	ssemu_time_t lat[2];
	char err[256];
	size_t i;
	int rc;

	rc = ssemu_config_preset("2group", &cfg);
	if (rc)
		return die("preset 2group", rc);
	opts.config = &cfg;
	rc = ssemu_fabric_open(&opts, &fabric, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "ssemu_pingpong: open: %s\n", err);
		return 1;
	}
	for (i = 0; i < 2; i++) {
		/* the first port and the last: different groups */
		struct ssemu_nic_opts no = {
			.port = i ? (uint32_t)ssemu_config_nports(&cfg) - 1 : 0,
			.rank = -1,
		};

		rc = ssemu_nic_attach(fabric, &no, &nic[i]);
		if (rc)
			return die("nic attach", rc);
		rc = ssemu_ep_open(nic[i], &ep[i]);
		if (rc)
			return die("ep open", rc);
	}

	ssemu_rng_seed(&rng, 42, 0);
	for (i = 0; i < MSG_LEN; i++)
		buf[i] = (unsigned char)ssemu_rng_next(&rng);

	rc = transfer(fabric, ep[0], ep[1], buf, MSG_LEN, out, &lat[0]);
	if (rc)
		return die("ping", rc);
	rc = transfer(fabric, ep[1], ep[0], out, MSG_LEN, back, &lat[1]);
	if (rc)
		return die("pong", rc);
	if (memcmp(buf, back, MSG_LEN)) {
		fprintf(stderr, "ssemu_pingpong: data differ after the round trip\n");
		return 1;
	}
	printf("ports %u -> %u: %d bytes there and back, correct\n",
	       ssemu_nic_port(nic[0]), ssemu_nic_port(nic[1]), MSG_LEN);
	printf("model-time latency: %.3f us there, %.3f us back\n",
	       (double)lat[0] / SSEMU_PS_PER_US,
	       (double)lat[1] / SSEMU_PS_PER_US);

	for (i = 0; i < 2; i++) {
		ssemu_ep_close(ep[i]);
		ssemu_nic_detach(nic[i]);
	}
	ssemu_fabric_close(fabric);
	return 0;
}
