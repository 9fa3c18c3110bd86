/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The paper's Figure 14 in miniature, for tests/util/report_cli.sh: two jobs
 * stream 64 KiB messages into one endpoint of a single switch, job 1 in a
 * class with an 80% minimum share from 0 to 200 us, job 2 in a class with
 * 20% from 50 to 400 us (with --same-class both in the first class); the
 * fabric's telemetry is saved as a trace for `slingshot-emu report`.
 *
 * usage: tel_fig14 [--same-class] TRACE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#define MSG 65536

static void die(const char *what, int ret, const char *err)
{
	fprintf(stderr, "tel_fig14: %s: %d %s\n", what, ret, err ? err : "");
	exit(1);
}

int main(int argc, char **argv)
{
	static uint8_t buf[MSG];
	struct iovec iov = { buf, MSG };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_nic *nic[3];
	struct ssemu_ep *ep[3];
	struct ssemu_event ev[64];
	struct ssemu_telemetry *tel;
	struct ssemu_fabric *f;
	struct ssemu_config c;
	ssemu_time_t now, us = SSEMU_PS_PER_US;
	bool same = argc == 3 && !strcmp(argv[1], "--same-class");
	char err[256] = "";
	int i, k, n, ret, out[3] = { 0 };

	if (argc != 2 + same) {
		fprintf(stderr, "usage: tel_fig14 [--same-class] TRACE\n");
		return 2;
	}
	ssemu_config_preset("switch", &c);
	c.max_nics = 4;
	c.eps_per_nic = 1;
	c.msgs_per_ep = 64;
	c.max_pkts = 8192;
	c.max_events = 65536;
	memset(c.tclass, 0, sizeof(c.tclass));
	c.ntclass = 2;
	snprintf(c.tclass[0].name, SSEMU_NAME_MAX, "TC80");
	c.tclass[0].min_pct = 80;
	c.tclass[0].max_pct = 100;
	c.tclass[0].priority = 1;
	snprintf(c.tclass[1].name, SSEMU_NAME_MAX, "TC20");
	c.tclass[1].min_pct = 20;
	c.tclass[1].max_pct = 100;
	c.tclass[1].priority = 1;
	c.default_tclass = 0;
	c.tel_interval = 10 * us;
	fo.config = &c;
	ret = ssemu_fabric_open(&fo, &f, err, sizeof(err));
	if (ret)
		die("fabric", ret, err);
	for (i = 0; i < 3; i++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)i,
					     .job = (uint32_t)i, .rank = 0 };

		ret = ssemu_nic_attach(f, &no, &nic[i]);
		if (!ret)
			ret = ssemu_ep_open(nic[i], &ep[i]);
		if (ret)
			die("attach", ret, NULL);
	}
	s.dest = ssemu_ep_addr(ep[0]);
	for (now = 0; now < 400 * us; now += us) {
		ret = ssemu_fabric_run_until(f, now);
		if (ret)
			die("run", ret, NULL);
		for (i = 0; i < 3; i++)
			while ((n = ssemu_ep_poll(ep[i], ev, 64)) > 0)
				for (k = 0; k < n; k++)
					if (ev[k].type == SSEMU_EV_RECV)
						ssemu_event_release(ep[i],
								    &ev[k]);
					else
						out[i]--;
		/* a few messages in flight each: a job stops when it stops */
		s.tclass = 0;
		while (now < 200 * us && out[1] < 4 &&
		       ssemu_ep_send(ep[1], &s) == 0)
			out[1]++;
		s.tclass = same ? 0 : 1;
		while (now >= 50 * us && out[2] < 4 &&
		       ssemu_ep_send(ep[2], &s) == 0)
			out[2]++;
	}
	ret = ssemu_telemetry_read(f, &tel);
	if (ret)
		die("telemetry", ret, NULL);
	ret = ssemu_telemetry_save(tel, argv[1 + same], err, sizeof(err));
	if (ret)
		die("save", ret, err);
	ssemu_telemetry_free(tel);
	for (i = 0; i < 3; i++) {
		ssemu_ep_close(ep[i]);
		ssemu_nic_detach(nic[i]);
	}
	ssemu_fabric_close(f);
	return 0;
}
