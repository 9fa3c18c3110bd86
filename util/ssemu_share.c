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
#include "ssemu_compiler.h"
#include "ssemu_driver.h"

struct share_opts {
	struct ssemu_cli_fabric fab;
	char line[SSEMU_CLI_LINE_MAX];	/* --scenario words */
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
	struct ssemu_drv d;
	const struct share_opts *o;
	uint64_t *inflight;	/* per endpoint */
	uint64_t outstanding[2];	/* per job */
	bool with_b;
	struct share_result *res;
	/* the phases, model time rounded to whole steps: both jobs measured
	 * in [w0, w1), A alone in [s0, s1) (UINT64_MAX until B is done) */
	ssemu_time_t step, w0, w1, s0, s1, limit;
	uint64_t at_w0[2], at_s0[2];	/* payload in when a window opened */
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
		"                       (default all, at most 1048576)\n"
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

static int share_endpoints_check(const char *tool, uint64_t v)
{
	if (!(v % 4))
		return 0;
	fprintf(stderr, "%s: --endpoints %" PRIu64 ": not a multiple of 4 (two "
		"jobs on both halves)\n", tool, v);
	return -EINVAL;
}

static int parse_share(int argc, char **argv, struct share_opts *o)
{
	const struct ssemu_cli_opt opts[] = {
		{ .name = "endpoints", .kind = SSEMU_CLI_U64,
		  .u64 = &o->nendpoints, .lo = 4,
		  .hi = SSEMU_DRV_MAX_ENDPOINTS,
		  .check = share_endpoints_check },
		SSEMU_CLI_OPT_U32("tclass-a", &o->tc[0], 0,
				  SSEMU_MAX_TCLASS - 1),
		SSEMU_CLI_OPT_U32("tclass-b", &o->tc[1], 0,
				  SSEMU_MAX_TCLASS - 1),
		SSEMU_CLI_OPT_U64("size", &o->size, 1, 1u << 24),
		SSEMU_CLI_OPT_U64("window", &o->window, 1, 64),
		SSEMU_CLI_OPT_DOUBLE("warmup", &o->warmup_us, 0, 1e6),
		SSEMU_CLI_OPT_DOUBLE("time", &o->time_us, 0.001, 1e6),
		SSEMU_CLI_OPT_DOUBLE("settle", &o->settle_us, 0, 1e6),
		SSEMU_CLI_OPT_DOUBLE("survivor", &o->survivor_us, 0.001, 1e6),
		SSEMU_CLI_OPT_U64("step", &o->step_ns, 1, 1000000),
		SSEMU_CLI_OPT_FLAG("json", &o->json),
		{ 0 },
	};
	const struct ssemu_cli_cmd cmd = {
		.tool = "share", .fab = &o->fab, .opts = opts,
		.usage = usage_share, .line = o->line,
		.line_len = sizeof(o->line),
	};

	return ssemu_cli_parse(&cmd, argc, argv);
}

/* Job 1 (A) on the even ports, job 2 (B) on the odd ones. */
static void share_job(uint64_t port, struct ssemu_nic_opts *no)
{
	no->job = 1 + (uint32_t)(port & 1);
	no->rank = (int32_t)(port / 2);
}

static void share_sent(struct ssemu_drv *d, uint64_t port,
		       const struct ssemu_event *ev)
{
	struct share_run *r = container_of(d, struct share_run, d);

	(void)ev;
	r->inflight[port]--;
	r->outstanding[port & 1]--;
}

static int share_step(struct ssemu_drv *d, ssemu_time_t now);

static const struct ssemu_drv_ops share_drv_ops = {
	.sent = share_sent,
	.step = share_step,
};

static int share_setup(struct share_run *r)
{
	const struct share_opts *o = r->o;
	struct ssemu_config *c = &r->d.cfg;
	uint64_t nports, n;
	int ret, j;

	r->d.tool = "share";
	r->d.ops = &share_drv_ops;
	ret = ssemu_drv_config(&r->d, &o->fab);
	if (ret)
		return ret;
	for (j = 0; j < 2; j++)
		if (o->tc[j] != UINT32_MAX && o->tc[j] >= c->ntclass) {
			fprintf(stderr, "share: traffic class %u: the fabric "
				"has %u classes\n", o->tc[j], c->ntclass);
			return -EINVAL;
		}
	nports = ssemu_config_nports(c);
	n = o->nendpoints ? o->nendpoints : nports & ~3ULL;
	if (n > nports || n < 4) {
		fprintf(stderr, "share: %" PRIu64 " endpoints wanted, the "
			"fabric has %" PRIu64 " (4 or more needed)\n", n,
			nports);
		return -EINVAL;
	}
	ret = ssemu_drv_open(&r->d, n, o->size,
			     ssemu_drv_window_pkts(&r->d, o->size), share_job);
	if (ret)
		return ret;
	r->inflight = calloc(n, sizeof(*r->inflight));
	if (!r->inflight)
		return -ENOMEM;
	return 0;
}

static void share_teardown(struct share_run *r)
{
	ssemu_drv_close(&r->d);
	free(r->inflight);
}

static uint32_t job_tclass(const struct share_run *r, int job)
{
	return r->o->tc[job] == UINT32_MAX ? r->d.cfg.default_tclass :
					     r->o->tc[job];
}

/* Payload received by each job's NICs so far, counted by data packet. */
static void job_rx(struct share_run *r, uint64_t out[2])
{
	uint64_t i, pkts[2] = { 0, 0 };
	int j;

	for (i = 0; i < r->d.n; i++)
		pkts[i & 1] += ssemu_drv_rx_pkts(&r->d, i);
	for (j = 0; j < 2; j++)
		out[j] = ssemu_drv_pkts_bytes(&r->d, pkts[j], r->o->size);
}

/* Every endpoint of a job that is on keeps its window of messages to its
 * partner full (while its NIC takes them). */
static int post_job(struct share_run *r, int job)
{
	uint32_t tclass = job_tclass(r, job);
	uint64_t i, n = r->d.n, half = n / 2;
	int ret = 0;

	for (i = (uint64_t)job; i < n; i += 2) {
		while (r->inflight[i] < r->o->window &&
		       (ret = ssemu_drv_post(&r->d, i, (i + half) % n,
					     r->o->size, tclass, 0, 0,
					     i)) == 0) {
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

static ssemu_time_t up_to_step(const struct share_run *r, ssemu_time_t t)
{
	return (t + r->step - 1) / r->step * r->step;
}

/* At model time @t: A posts throughout; B until the both-window ends.
 * The survivor window starts --settle after B's last message is done. */
static int share_step(struct ssemu_drv *d, ssemu_time_t t)
{
	struct share_run *r = container_of(d, struct share_run, d);
	const struct share_opts *o = r->o;
	struct share_result *res = r->res;
	uint64_t rx[2];
	int ret, j;

	if (t >= r->w1 && r->s0 == UINT64_MAX && !r->outstanding[1]) {
		res->drain_us = (double)(t - r->w1) / SSEMU_PS_PER_US;
		r->s0 = up_to_step(r, t + us_to_ps(o->settle_us));
		r->s1 = up_to_step(r, r->s0 + us_to_ps(o->survivor_us));
		if (r->s1 == r->s0)
			r->s1 += r->step;
		res->after_us = (double)(r->s1 - r->s0) / SSEMU_PS_PER_US;
	}
	if (r->s0 == UINT64_MAX && t >= r->limit) {
		fprintf(stderr, "share: job B's messages still in flight %.3f "
			"us after it stopped\n",
			(double)(t - r->w1) / SSEMU_PS_PER_US);
		return -ETIMEDOUT;
	}
	ret = post_job(r, 0);
	if (!ret && r->with_b && t < r->w1)
		ret = post_job(r, 1);
	if (ret)
		return ret;
	if (t == r->w0 || t == r->w1 || t == r->s0 || t == r->s1) {
		job_rx(r, rx);
		for (j = 0; j < 2; j++) {
			if (t == r->w0)
				r->at_w0[j] = rx[j];
			if (t == r->w1)
				res->both[j] = rx[j] - r->at_w0[j];
			if (t == r->s0)
				r->at_s0[j] = rx[j];
			if (t == r->s1)
				res->after[j] = rx[j] - r->at_s0[j];
		}
	}
	return t >= r->s1;
}

/* One run, B in it if @with_b; windows rounded to whole steps. */
static int share_run_once(struct share_run *r, bool with_b,
			  struct share_result *res)
{
	const struct share_opts *o = r->o;

	r->with_b = with_b;
	r->res = res;
	r->step = o->step_ns * SSEMU_PS_PER_NS;
	r->w0 = up_to_step(r, us_to_ps(o->warmup_us));
	r->w1 = up_to_step(r, us_to_ps(o->warmup_us) + us_to_ps(o->time_us));
	if (r->w1 == r->w0)
		r->w1 += r->step;
	r->s0 = r->s1 = UINT64_MAX;
	res->both_us = (double)(r->w1 - r->w0) / SSEMU_PS_PER_US;
	/* B's windows drain at its share (a few hundred microseconds in the
	 * scenarios): give up after 100 ms and 100 windows */
	r->limit = r->w1 + 100 * (r->w1 - r->w0) + 100000 * SSEMU_PS_PER_US;
	return ssemu_drv_run_steps(&r->d, r->step);
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
	if (!ret && r.d.failed) {
		fprintf(stderr, "share: %" PRIu64 " messages failed\n",
			r.d.failed);
		ret = -EIO;
	}
	if (ret && ret != -EINVAL)
		fprintf(stderr, "share: the run failed: %s\n", strerror(-ret));
	if (keep) {
		keep->d.cfg = r.d.cfg;
		keep->d.n = r.d.n;
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
	const struct ssemu_config *c = &info->d.cfg;
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
		       c->preset[0] ? c->preset : "(file)", info->d.n,
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
	       ssemu_cli_links_note(c, note, sizeof(note)), info->d.n);
	printf("policies: routing %s, congestion control %s, arbitration %s, "
	       "seed %" PRIu64 "\n", c->routing, c->cc, c->arb, c->seed);
	printf("jobs: A on %" PRIu64 " endpoints, class %s (min %u%%, max "
	       "%u%%); B on %" PRIu64 " endpoints, class %s (min %u%%, max "
	       "%u%%); bisection, %" PRIu64 " B messages\n", info->d.n / 2,
	       ta->name, ta->min_pct, ta->max_pct, info->d.n / 2, tb->name,
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
	int ret;

	ret = parse_share(argc, argv, &o);
	if (ret != SSEMU_CLI_RUN)
		return ret;
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
