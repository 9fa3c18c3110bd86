/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slingshot-emu share: the paper's Figure 14 in model time.  Two jobs, A on
 * the even endpoint ports and B on the odd ones, each stream bisection
 * traffic (port i to port i + n/2 and back) at full rate, so both cross the
 * same links.  A traffic class each decides how those links are shared.
 *
 * Two runs with the same seed: A alone, then A and B together until B
 * stops.  Reported: A's bandwidth alone; each job's share of what was
 * delivered while both ran; A's bandwidth once B stopped (the survivor),
 * against A alone.  Bandwidth is payload delivered to the job's NICs in the
 * window, counted by data packet.  Everything is model time.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

struct share_opts {
	struct ssemu_cli_fabric fab;
	uint64_t nendpoints;
	uint32_t tc[2];		/* UINT32_MAX: the fabric's default */
	uint64_t size;
	uint64_t window;	/* messages in flight per endpoint */
	double warmup_us, time_us, settle_us, survivor_us;
	uint64_t step_ns;
	bool json;
};

/* What a run measured: payload bytes per job in each window. */
struct share_result {
	uint64_t both[2];	/* [warmup, warmup + time) */
	uint64_t after[2];	/* the survivor window, B stopped */
	double both_us, after_us;	/* the windows, whole steps */
	double drain_us;	/* B's last message done, after it stopped */
};

struct share_run {
	const struct share_opts *o;
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic **nics;
	struct ssemu_ep **eps;
	uint64_t n;
	void *payload;
	uint64_t *inflight;	/* per endpoint */
	uint64_t outstanding[2];	/* per job */
	uint64_t failed;
};

static void usage_share(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu share [options]\n"
		"  --scenario FILE      read options from the file's `# share:`\n"
		"                       line and use the file as --config\n"
		"  --preset NAME        fabric preset (default 2switch):");
	for (const char *const *p = ssemu_config_preset_names(); *p; p++)
		fprintf(f, " %s", *p);
	fprintf(f, "\n"
		"  --config FILE        fabric configuration file instead\n"
		SSEMU_CLI_POLICY_HELP
		"  --endpoints N        use the first N endpoint ports, a "
		"multiple of 4\n"
		"                       (default all)\n"
		"  --tclass-a N         job A's traffic class index (default:\n"
		"                       the fabric's default class)\n"
		"  --tclass-b N         job B's traffic class index (same)\n"
		"  --size BYTES         message size (default 65536)\n"
		"  --window N           messages in flight per endpoint, as\n"
		"                       a benchmark's window of sends\n"
		"                       (default 4)\n"
		"  --warmup US          both jobs before measuring (default 50)\n"
		"  --time US            both jobs measured (default 200)\n"
		"  --settle US          after B's last message is done, before\n"
		"                       measuring A (default 10)\n"
		"  --survivor US        A measured alone after B stopped\n"
		"                       (default 100)\n"
		"  --step NS            model step between postings "
		"(default 100)\n"
		"  --seed N             random seed (default: the fabric's)\n"
		"  --json               one JSON object instead of text\n");
}

static int parse_share(int argc, char **argv, struct share_opts *o)
{
	static const struct option lo[] = {
		SSEMU_CLI_FABRIC_OPTIONS,
		{ "endpoints", required_argument, NULL, 'n' },
		{ "tclass-a", required_argument, NULL, 'A' },
		{ "tclass-b", required_argument, NULL, 'B' },
		{ "size", required_argument, NULL, 's' },
		{ "window", required_argument, NULL, 'W' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "time", required_argument, NULL, 't' },
		{ "settle", required_argument, NULL, 'e' },
		{ "survivor", required_argument, NULL, 'v' },
		{ "step", required_argument, NULL, 'x' },
		{ "json", no_argument, NULL, 'j' },
		{ "scenario", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t u;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		ret = ssemu_cli_fabric_opt(c, optarg, &o->fab);
		if (ret < 0)
			return -EINVAL;
		if (ret)
			continue;
		switch (c) {
		case 'n':
			if (ssemu_cli_u64("--endpoints", optarg, 4, 65536,
					  &o->nendpoints))
				return -EINVAL;
			if (o->nendpoints % 4) {
				fprintf(stderr, "share: --endpoints %" PRIu64
					": not a multiple of 4 (two jobs on "
					"both halves)\n", o->nendpoints);
				return -EINVAL;
			}
			break;
		case 'A':
		case 'B':
			if (ssemu_cli_u64(c == 'A' ? "--tclass-a" : "--tclass-b",
					  optarg, 0, SSEMU_MAX_TCLASS - 1, &u))
				return -EINVAL;
			o->tc[c == 'B'] = (uint32_t)u;
			break;
		case 's':
			if (ssemu_cli_u64("--size", optarg, 1, 1u << 24,
					  &o->size))
				return -EINVAL;
			break;
		case 'W':
			if (ssemu_cli_u64("--window", optarg, 1, 64,
					  &o->window))
				return -EINVAL;
			break;
		case 'w':
			if (ssemu_cli_double("--warmup", optarg, 0, 1e6,
					     &o->warmup_us))
				return -EINVAL;
			break;
		case 't':
			if (ssemu_cli_double("--time", optarg, 0.001, 1e6,
					     &o->time_us))
				return -EINVAL;
			break;
		case 'e':
			if (ssemu_cli_double("--settle", optarg, 0, 1e6,
					     &o->settle_us))
				return -EINVAL;
			break;
		case 'v':
			if (ssemu_cli_double("--survivor", optarg, 0.001, 1e6,
					     &o->survivor_us))
				return -EINVAL;
			break;
		case 'x':
			if (ssemu_cli_u64("--step", optarg, 1, 1000000,
					  &o->step_ns))
				return -EINVAL;
			break;
		case 'j':
			o->json = true;
			break;
		case 'F':
			/* handled before parsing */
			break;
		case 'h':
			usage_share(stdout);
			return 1;
		default:
			usage_share(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "share: unexpected argument '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* Job 1 (A) on the even ports, job 2 (B) on the odd ones. */
static void share_job(uint64_t port, struct ssemu_nic_opts *no)
{
	no->job = 1 + (uint32_t)(port & 1);
	no->rank = (int32_t)(port / 2);
}

static int share_setup(struct share_run *r)
{
	const struct share_opts *o = r->o;
	uint64_t nports, pkts;
	int ret, j;

	ret = ssemu_cli_config("share", &o->fab, &r->cfg);
	if (ret)
		return ret;
	for (j = 0; j < 2; j++)
		if (o->tc[j] != UINT32_MAX && o->tc[j] >= r->cfg.ntclass) {
			fprintf(stderr, "share: traffic class %u: the fabric "
				"has %u classes\n", o->tc[j], r->cfg.ntclass);
			return -EINVAL;
		}
	nports = ssemu_config_nports(&r->cfg);
	r->n = o->nendpoints ? o->nendpoints : nports & ~3ULL;
	if (r->n > nports || r->n < 4) {
		fprintf(stderr, "share: %" PRIu64 " endpoints wanted, the "
			"fabric has %" PRIu64 " (4 or more needed)\n", r->n,
			nports);
		return -EINVAL;
	}
	if (r->n > 65536) {
		fprintf(stderr, "share: %" PRIu64 " endpoints: this tool "
			"models at most 65536 at once (use --endpoints)\n",
			r->n);
		return -EINVAL;
	}
	pkts = (o->size + r->cfg.mtu - 1) / r->cfg.mtu;
	ssemu_cli_size_fabric(&r->cfg, r->n, o->size,
			      (pkts * 16 < 1024 ? pkts * 16 : 1024) + 64);
	ret = ssemu_cli_open("share", &r->cfg, r->n, share_job, &r->fab,
			     &r->nics, &r->eps);
	if (ret)
		return ret;
	r->payload = calloc(1, o->size);
	r->inflight = calloc(r->n, sizeof(*r->inflight));
	if (!r->payload || !r->inflight)
		return -ENOMEM;
	return 0;
}

static void share_teardown(struct share_run *r)
{
	ssemu_cli_close(r->n, r->fab, r->nics, r->eps);
	free(r->payload);
	free(r->inflight);
}

static uint32_t job_tclass(const struct share_run *r, int job)
{
	return r->o->tc[job] == UINT32_MAX ? r->cfg.default_tclass :
					     r->o->tc[job];
}

/* Payload received by each job's NICs so far, counted by data packet. */
static void job_rx(struct share_run *r, uint64_t out[2])
{
	struct ssemu_nic_stats st;
	uint64_t i, pkts[2] = { 0, 0 }, npkts;
	int j;

	for (i = 0; i < r->n; i++)
		if (!ssemu_nic_stats(r->nics[i], &st))
			pkts[i & 1] += st.rx_pkts;
	npkts = (r->o->size + r->cfg.mtu - 1) / r->cfg.mtu;
	for (j = 0; j < 2; j++)
		out[j] = (uint64_t)((double)pkts[j] * (double)r->o->size /
				    (double)npkts);
}

static void drain(struct share_run *r)
{
	struct ssemu_event ev[64];
	uint64_t i;
	int k, n;

	for (i = 0; i < r->n; i++)
		while ((n = ssemu_ep_poll(r->eps[i], ev, 64)) > 0)
			for (k = 0; k < n; k++) {
				if (ev[k].type == SSEMU_EV_SEND_DONE) {
					if (ev[k].status)
						r->failed++;
					r->inflight[i]--;
					r->outstanding[i & 1]--;
					continue;
				}
				ssemu_event_release(r->eps[i], &ev[k]);
			}
}

/* Every endpoint of a job that is on keeps its window of messages to its
 * partner full (while its NIC takes them). */
static int post_job(struct share_run *r, int job)
{
	struct iovec iov = { r->payload, r->o->size };
	struct ssemu_send m = {
		.tclass = job_tclass(r, job),
		.iov = &iov,
		.iov_count = 1,
	};
	uint64_t i, half = r->n / 2;
	int ret = 0;

	for (i = (uint64_t)job; i < r->n; i += 2) {
		m.dest = ssemu_ep_addr(r->eps[(i + half) % r->n]);
		m.cookie = i;
		while (r->inflight[i] < r->o->window &&
		       (ret = ssemu_ep_send(r->eps[i], &m)) == 0) {
			r->inflight[i]++;
			r->outstanding[job]++;
		}
		if (r->inflight[i] < r->o->window && ret != -EAGAIN)
			return ret;
	}
	return 0;
}

static ssemu_time_t us_to_ps(double us)
{
	return (ssemu_time_t)(us * SSEMU_PS_PER_US);
}

/*
 * One run: A posts throughout; B (if @with_b) until the both-window ends.
 * The survivor window starts --settle after B's last message is done.
 * Windows are rounded to whole steps.
 */
static int share_run_once(struct share_run *r, bool with_b,
			  struct share_result *res)
{
	const struct share_opts *o = r->o;
	ssemu_time_t step = o->step_ns * SSEMU_PS_PER_NS, t = 0;
	ssemu_time_t w0 = us_to_ps(o->warmup_us);
	ssemu_time_t w1 = w0 + us_to_ps(o->time_us);
	ssemu_time_t s0 = UINT64_MAX, s1 = UINT64_MAX;
	ssemu_time_t limit;
	uint64_t rx[2], at_w0[2] = { 0, 0 }, at_s0[2] = { 0, 0 };
	int ret, j;

	w0 = (w0 + step - 1) / step * step;
	w1 = (w1 + step - 1) / step * step;
	if (w1 == w0)
		w1 += step;
	res->both_us = (double)(w1 - w0) / SSEMU_PS_PER_US;
	/* B's windows drain at its share (a few hundred microseconds in the
	 * scenarios): give up after 100 ms and 100 windows */
	limit = w1 + 100 * (w1 - w0) + 100000 * SSEMU_PS_PER_US;
	for (;;) {
		if (t >= w1 && s0 == UINT64_MAX && !r->outstanding[1]) {
			res->drain_us = (double)(t - w1) / SSEMU_PS_PER_US;
			s0 = t + us_to_ps(o->settle_us);
			s0 = (s0 + step - 1) / step * step;
			s1 = s0 + us_to_ps(o->survivor_us);
			s1 = (s1 + step - 1) / step * step;
			if (s1 == s0)
				s1 += step;
			res->after_us = (double)(s1 - s0) / SSEMU_PS_PER_US;
		}
		if (s0 == UINT64_MAX && t >= limit) {
			fprintf(stderr, "share: job B's messages still in "
				"flight %.3f us after it stopped\n",
				(double)(t - w1) / SSEMU_PS_PER_US);
			return -ETIMEDOUT;
		}
		ret = post_job(r, 0);
		if (!ret && with_b && t < w1)
			ret = post_job(r, 1);
		if (ret)
			return ret;
		if (t == w0 || t == w1 || t == s0 || t == s1) {
			job_rx(r, rx);
			for (j = 0; j < 2; j++) {
				if (t == w0)
					at_w0[j] = rx[j];
				if (t == w1)
					res->both[j] = rx[j] - at_w0[j];
				if (t == s0)
					at_s0[j] = rx[j];
				if (t == s1)
					res->after[j] = rx[j] - at_s0[j];
			}
		}
		if (t >= s1)
			return 0;
		t += step;
		ret = ssemu_fabric_run_until(r->fab, t);
		if (ret)
			return ret;
		drain(r);
	}
}

static int share_do(const struct share_opts *o, bool with_b,
		    struct share_result *res, struct share_run *keep)
{
	struct share_run r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.o = o;
	ret = share_setup(&r);
	if (!ret)
		ret = share_run_once(&r, with_b, res);
	if (!ret && r.failed) {
		fprintf(stderr, "share: %" PRIu64 " messages failed\n",
			r.failed);
		ret = -EIO;
	}
	if (ret && ret != -EINVAL)
		fprintf(stderr, "share: the run failed: %s\n", strerror(-ret));
	if (keep) {
		keep->cfg = r.cfg;
		keep->n = r.n;
	}
	share_teardown(&r);
	return ret;
}

static double gbps(uint64_t bytes, double us)
{
	return us > 0 ? (double)bytes * 8.0 / (us * 1e3) : 0;
}

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : 0;
}

static void share_report(const struct share_opts *o,
			 const struct share_run *info,
			 const struct share_result *alone,
			 const struct share_result *both)
{
	const struct ssemu_config *c = &info->cfg;
	const struct ssemu_tclass_desc *ta, *tb;
	double a_alone = gbps(alone->both[0], alone->both_us);
	double a = gbps(both->both[0], both->both_us);
	double b = gbps(both->both[1], both->both_us);
	double sa = gbps(both->after[0], both->after_us);
	double sb = gbps(both->after[1], both->after_us);
	uint32_t tca = o->tc[0] == UINT32_MAX ? c->default_tclass : o->tc[0];
	uint32_t tcb = o->tc[1] == UINT32_MAX ? c->default_tclass : o->tc[1];
	char note[64];

	ta = &c->tclass[tca];
	tb = &c->tclass[tcb];
	if (o->json) {
		printf("{\"fabric\": {\"preset\": \"%s\", \"endpoints\": %"
		       PRIu64 ", \"routing\": \"%s\", \"cc\": \"%s\", "
		       "\"arbitration\": \"%s\", \"seed\": %" PRIu64 "},\n",
		       c->preset[0] ? c->preset : "(file)", info->n,
		       c->routing, c->cc, c->arb, c->seed);
		printf(" \"jobs\": {\"a\": {\"tclass\": \"%s\", \"min_pct\": "
		       "%u}, \"b\": {\"tclass\": \"%s\", \"min_pct\": %u}, "
		       "\"size\": %" PRIu64 "},\n", ta->name, ta->min_pct,
		       tb->name, tb->min_pct, o->size);
		printf(" \"alone_gbps\": {\"a\": %.3f},\n", a_alone);
		printf(" \"both_gbps\": {\"a\": %.3f, \"b\": %.3f},\n", a, b);
		printf(" \"survivor_gbps\": {\"a\": %.3f, \"b\": %.3f},\n", sa,
		       sb);
		printf(" \"b_drain_us\": %.3f,\n", both->drain_us);
		printf(" \"share_a_pct\": %.2f, \"share_b_pct\": %.2f, "
		       "\"survivor_pct\": %.2f}\n", pct(a, a + b),
		       pct(b, a + b), pct(sa, a_alone));
		return;
	}
	printf("fabric: preset %s, %u groups x %u switches x %u endpoints%s, "
	       "%" PRIu64 " endpoints used\n",
	       c->preset[0] ? c->preset : "(file)", c->topo.groups,
	       c->topo.switches_per_group, c->topo.endpoints_per_switch,
	       ssemu_cli_links_note(c, note, sizeof(note)), info->n);
	printf("policies: routing %s, congestion control %s, arbitration %s, "
	       "seed %" PRIu64 "\n", c->routing, c->cc, c->arb, c->seed);
	printf("jobs: A on %" PRIu64 " endpoints, class %s (min %u%%, max "
	       "%u%%); B on %" PRIu64 " endpoints, class %s (min %u%%, max "
	       "%u%%); bisection, %" PRIu64 " B messages\n", info->n / 2,
	       ta->name, ta->min_pct, ta->max_pct, info->n / 2, tb->name,
	       tb->min_pct, tb->max_pct, o->size);
	printf("phases: %.3f us warm-up, both measured %.3f us; B stops "
	       "(its last message done %.3f us later), %.3f us settle, A "
	       "measured %.3f us\n", o->warmup_us, o->time_us,
	       both->drain_us, o->settle_us, o->survivor_us);
	printf("alone:    A %.3f Gb/s\n", a_alone);
	printf("both:     A %.3f Gb/s, B %.3f Gb/s\n", a, b);
	printf("survivor: A %.3f Gb/s, B %.3f Gb/s\n", sa, sb);
	printf("share_a_pct: %.2f\n", pct(a, a + b));
	printf("share_b_pct: %.2f\n", pct(b, a + b));
	printf("survivor_pct: %.2f (of A alone)\n", pct(sa, a_alone));
}

int ssemu_cmd_share(int argc, char **argv)
{
	struct share_opts o = {
		.fab.preset = "2switch",
		.tc = { UINT32_MAX, UINT32_MAX },
		.size = 65536,
		.window = 4,
		.warmup_us = 50,
		.time_us = 200,
		.settle_us = 10,
		.survivor_us = 100,
		.step_ns = 100,
	};
	struct share_result alone, both;
	struct share_run info;
	char line[4096];
	char **nargv = NULL;
	int nargc, ret;

	ret = ssemu_cli_scenario("share", argc, argv, line, sizeof(line),
				 &nargv, &nargc);
	if (ret)
		return ret == -ENOMEM ? 1 : 2;
	ret = nargv ? parse_share(nargc, nargv, &o) :
		      parse_share(argc, argv, &o);
	free(nargv);
	if (ret)
		return ret > 0 ? 0 : 2;
	memset(&alone, 0, sizeof(alone));
	memset(&both, 0, sizeof(both));
	memset(&info, 0, sizeof(info));
	ret = share_do(&o, false, &alone, &info);
	if (!ret)
		ret = share_do(&o, true, &both, NULL);
	if (!ret)
		share_report(&o, &info, &alone, &both);
	if (ret == -EINVAL)
		return 2;
	return ret ? 1 : 0;
}
