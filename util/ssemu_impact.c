/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu impact`: GPCNeT-style congestion impact on an in-process
 * fabric.  The endpoints are split into victims and aggressors; the victims
 * run a closed-loop latency pattern (random ring, an 8-byte recursive-
 * doubling allreduce, or ping-pong pairs) or a bandwidth pattern (random
 * pairs streaming both ways, or each victim streaming to its two ring
 * neighbours, a window of messages in flight), first alone
 * and then with the aggressors streaming at full rate (incast, all-to-all,
 * MPI_Alltoall's pairwise exchange, bursty incast, bisection pairs).
 * Congestion impact is the victim's latency with aggressors divided by its
 * latency alone, on the mean and on the 99th percentile; for a bandwidth
 * victim it is the bandwidth alone divided by the bandwidth with
 * aggressors, on the mean and on the worst 1% (as GPCNeT inverts it).
 * Everything is in model time: the same seed gives byte-identical output.
 *
 * `--scenario FILE` reads the options from the file's first line of the
 * form `# impact: OPTIONS` and uses the file itself as the fabric
 * configuration (the line is a libconfig comment); options given on the
 * command line after it override the file's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"
#include "ssemu_compiler.h"
#include "ssemu_driver.h"
#include <slingshot_emu/ssemu_rng.h>
#include "ssemu_samples.h"

enum victim_pat {
	VIC_RING, VIC_ALLREDUCE, VIC_PINGPONG, VIC_BISECTION, VIC_RINGBW,
	VIC_COUNT
};
enum agg_pat {
	AGG_INCAST, AGG_ALLTOALL, AGG_PAIRWISE, AGG_BURSTY, AGG_NONE,
	AGG_BISECTION, AGG_COUNT
};
enum alloc { ALLOC_LINEAR, ALLOC_INTERLEAVED, ALLOC_RANDOM, ALLOC_COUNT };

struct run;

/*
 * A victim pattern: what it posts at a step (@start_new: it may begin new
 * operations), what it does with a message that arrives, whether an
 * operation is still in flight, and what it counts of those still in flight
 * at the --drain cut-off.
 */
struct victim_ops {
	const char *name;
	const char *unit;	/* what one latency sample is */
	bool bw;		/* measured by the rate it receives */
	bool pairs;		/* victims in random pairs */
	int (*step)(struct run *r, ssemu_time_t now, bool start_new);
	void (*recv)(struct run *r, uint64_t port,
		     const struct ssemu_event *ev);
	bool (*busy)(const struct run *r);
	void (*censor)(struct run *r, ssemu_time_t now);
};

/*
 * An aggressor pattern: what it posts at a step (NULL: nothing); for the
 * streaming ones, which aggressors send and where each message goes; hooks
 * for its own messages arriving and completing.
 */
struct agg_ops {
	const char *name;
	int (*step)(struct run *r, ssemu_time_t now);
	bool (*sends)(const struct run *r, uint64_t ai);
	uint64_t (*dest)(struct run *r, uint64_t ai);
	bool burst;		/* --burst-bytes, then --gap-us idle */
	bool pairs;		/* aggressors in random pairs */
	void (*recv)(struct run *r, const struct ssemu_event *ev);
	void (*sent)(struct run *r, const struct ssemu_event *ev);
};

static const struct victim_ops victims[VIC_COUNT];
static const struct agg_ops aggressors[AGG_COUNT];
static const struct ssemu_drv_ops imp_drv_ops;

static const char *const alloc_names[] = {
	[ALLOC_LINEAR] = "linear", [ALLOC_INTERLEAVED] = "interleaved",
	[ALLOC_RANDOM] = "random",
};

struct imp_opts {
	struct ssemu_cli_fabric fab;
	char line[SSEMU_CLI_LINE_MAX];	/* --scenario words */
	uint64_t nendpoints;
	int victim;		/* enum victim_pat: index into victims */
	int aggressor;		/* enum agg_pat: index into aggressors */
	double victim_frac;
	int alloc;		/* enum alloc */
	uint64_t agg_size;
	uint64_t victim_size;	/* bandwidth victims' messages */
	uint64_t victim_window;	/* bandwidth victims' messages in flight */
	uint64_t incast_targets;
	uint64_t agg_ppn;
	uint64_t burst_bytes;
	double gap_us;
	uint32_t tc_victim, tc_agg;
	double time_us;
	double warmup_us;
	double drain_us;
	uint64_t step_ns;
	bool json;
};

/* What one run (alone or with aggressors) measured. */
struct result {
	struct ssemu_samples lat;	/* ns per victim message / allreduce,
					 * or Gb/s per bandwidth victim */
	double mean, p50, p99, max;
	double p1, min;			/* bandwidth victim: worst 1%, worst */
	uint64_t vmsgs;			/* bandwidth victim: messages in */
	uint64_t agg_bytes;	/* aggressor bytes delivered in the window */
	uint64_t agg_msgs;
	struct ssemu_samples agg_lat;	/* us, aggressor messages delivered
					 * in the window, post to arrival */
	double agg_mean, agg_p50, agg_p99;
	double agg_gbps;
	ssemu_time_t end;	/* model time the run stopped */
	double window_ns;	/* the measured window */
	uint64_t unfinished;	/* victim operations cut off by --drain */
};

/* One run's state.  Endpoint indices are port numbers 0..n-1. */
struct run {
	struct ssemu_drv d;
	const struct imp_opts *o;
	const struct victim_ops *vic;
	const struct agg_ops *agg;
	bool aggressors_on;
	/* roles */
	uint64_t nv, na;
	uint64_t *victims;	/* victim index -> port */
	uint64_t *aggs;		/* aggressor index -> port */
	int64_t *role;		/* port -> victim index, or -1 - aggressor idx */
	/* ring (GPCNeT's random-ring latency: each iteration a victim sends
	 * 8 B to both neighbours and waits for both of theirs) */
	uint64_t *succ;		/* victim index -> right neighbour */
	uint64_t *pred;		/* victim index -> left neighbour */
	bool *waiting;		/* ring: an iteration in progress */
	bool *want;		/* ring: start the next iteration */
	ssemu_time_t *posted;	/* ring: when the current one started */
	uint64_t *ring_iter;	/* ring: current iteration */
	uint8_t *ring_sent;	/* ring: bit 0 sent right, bit 1 sent left */
	uint8_t *ring_got[2];	/* ring: bit 0 from left, bit 1 from right,
				 * per iteration parity (a neighbour is at
				 * most one iteration ahead) */
	uint64_t ring_final;	/* ring: last iteration once time is up */
	/* allreduce over the first p (power of two) victims */
	uint64_t p, stages;
	uint64_t iter;
	bool ar_active;
	ssemu_time_t ar_start;
	uint64_t *stage;	/* next stage to send, per rank */
	bool *sent_stage;	/* the current stage's message was posted */
	uint64_t *got[2];	/* received stage bitmask, per iteration parity */
	uint64_t ar_done;	/* ranks finished the current iteration */
	ssemu_time_t ar_last;
	/* pairs (pingpong and bisection victims, bisection aggressors):
	 * index -> partner index, or NO_PARTNER for an odd one out */
	uint64_t *vpart, *apart;
	/* pingpong: the lower index of a pair pings, the other answers */
	uint8_t *pp_state;	/* PP_*, per initiator */
	ssemu_time_t *pp_posted;	/* when its message in flight left */
	uint64_t *v_rx0;	/* bandwidth victim: payload bytes in when the
				 * window opened */
	/* aggressors */
	struct ssemu_rng rng;
	uint64_t *agg_dest_fixed;	/* incast: target aggressor port */
	uint64_t *outstanding;
	uint64_t *burst_posted;
	ssemu_time_t *resume;	/* bursty: idle until */
	/* pairwise, over nr = na x ppn ranks (rank q on aggressor q / ppn):
	 * steps begun, over all iterations (step k of an iteration sends to
	 * rank q + k, receives from q - k) */
	uint64_t nr;
	uint64_t *pw_count;
	uint8_t *pw_flags;	/* PW_* for the current step */
	ssemu_time_t win_start, win_end;
	/* the run's phases, model time rounded to whole steps */
	ssemu_time_t warm, end, limit;
	uint64_t agg_rx0;	/* aggressor payload in at the window's start */
	struct result *res;
};

static void usage_impact(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu impact [options]\n"
		"  --scenario FILE      read options from the file's `# impact:`\n"
		"                       line and use the file as --config\n"
		"  --preset NAME        fabric preset (default 2group):");
	for (const char *const *p = ssemu_config_preset_names(); *p; p++)
		fprintf(f, " %s", *p);
	fprintf(f,
		"\n"
		"  --config FILE        fabric configuration file instead\n"
		SSEMU_CLI_POLICY_HELP
		"  --endpoints N        use the first N endpoint ports (default all,\n"
		"                       at most 1048576)\n"
		"  --victim P           ring | allreduce | pingpong | bisection |\n"
		"                       ringbw (default ring; pingpong: 8 B\n"
		"                       between random pairs; bandwidth\n"
		"                       victims: bisection, random pairs\n"
		"                       streaming both ways; ringbw, GPCNeT's\n"
		"                       RR two-sided BW, each streaming to its\n"
		"                       two random-ring neighbours in turn)\n"
		"  --aggressor P        incast | alltoall | pairwise | bursty |\n"
		"                       bisection | none (alltoall: random\n"
		"                       destinations, as many messages as the\n"
		"                       NIC takes; pairwise: MPI_Alltoall's\n"
		"                       pairwise exchange, one step at a time;\n"
		"                       bisection: random pairs, both ways, as\n"
		"                       many as the NIC takes) (default incast)\n"
		"  --victim-frac F      fraction of endpoints that are victims\n"
		"                       (default 0.1)\n"
		"  --allocation A       linear | interleaved | random (default linear)\n"
		"  --agg-size BYTES     aggressor message size (default 65536)\n"
		"  --victim-size BYTES  bandwidth victim message size\n"
		"                       (default 131072, GPCNeT's)\n"
		"  --victim-window N    bandwidth victim messages in flight\n"
		"                       per endpoint (default 8)\n"
		"  --incast-targets K   incast/bursty targets (default 1)\n"
		"  --agg-ppn N          pairwise: MPI ranks per aggressor\n"
		"                       endpoint (default 1); pairs on one\n"
		"                       endpoint exchange without the fabric\n"
		"  --burst-bytes B      bursty: bytes per burst per aggressor\n"
		"                       (default 262144)\n"
		"  --gap-us G           bursty: idle model us between bursts\n"
		"                       (default 5)\n"
		"  --tclass-victim N    victim traffic class index (default: fabric's)\n"
		"  --tclass-aggressor N aggressor class index (default: fabric's)\n"
		"  --time US            model microseconds measured (default 50)\n"
		"  --warmup US          aggressors alone before victims start\n"
		"                       (default 5)\n"
		"  --drain US           after --time, wait at most this long for\n"
		"                       victim operations in flight; the rest\n"
		"                       count as cut off (default 100)\n"
		"  --step NS            model step between event drains (default 100)\n"
		"  --seed N             random seed (default: the fabric's)\n"
		"  --json               one JSON object instead of text\n");
}

static int parse_impact(int argc, char **argv, struct imp_opts *o)
{
	const struct ssemu_cli_opt opts[] = {
		SSEMU_CLI_OPT_U64("endpoints", &o->nendpoints, 4,
				  SSEMU_DRV_MAX_ENDPOINTS),
		SSEMU_CLI_OPT_NAME("victim", &o->victim, victims, NULL),
		SSEMU_CLI_OPT_NAME("aggressor", &o->aggressor, aggressors,
				   NULL),
		SSEMU_CLI_OPT_DOUBLE("victim-frac", &o->victim_frac, 0.001,
				     0.999),
		SSEMU_CLI_OPT_NAME("allocation", &o->alloc, alloc_names, NULL),
		SSEMU_CLI_OPT_U64("agg-size", &o->agg_size, 1, 1u << 24),
		SSEMU_CLI_OPT_U64("victim-size", &o->victim_size, 1, 1u << 24),
		SSEMU_CLI_OPT_U64("victim-window", &o->victim_window, 1, 1024),
		SSEMU_CLI_OPT_U64("incast-targets", &o->incast_targets, 1,
				  65536),
		SSEMU_CLI_OPT_U64("agg-ppn", &o->agg_ppn, 1, 64),
		SSEMU_CLI_OPT_U64("burst-bytes", &o->burst_bytes, 1,
				  1ULL << 40),
		SSEMU_CLI_OPT_DOUBLE("gap-us", &o->gap_us, 0, 1e6),
		SSEMU_CLI_OPT_U32("tclass-victim", &o->tc_victim, 0,
				  SSEMU_MAX_TCLASS - 1),
		SSEMU_CLI_OPT_U32("tclass-aggressor", &o->tc_agg, 0,
				  SSEMU_MAX_TCLASS - 1),
		SSEMU_CLI_OPT_DOUBLE("time", &o->time_us, 0.1, 1e5),
		SSEMU_CLI_OPT_DOUBLE("warmup", &o->warmup_us, 0, 1e5),
		SSEMU_CLI_OPT_U64("step", &o->step_ns, 1, 1000000),
		SSEMU_CLI_OPT_DOUBLE("drain", &o->drain_us, 0, 1e6),
		SSEMU_CLI_OPT_FLAG("json", &o->json),
		{ 0 },
	};
	const struct ssemu_cli_cmd cmd = {
		.tool = "impact", .fab = &o->fab, .opts = opts,
		.usage = usage_impact, .line = o->line,
		.line_len = sizeof(o->line),
	};

	return ssemu_cli_parse(&cmd, argc, argv);
}

static void opts_default(struct imp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->fab.preset = "2group";
	o->victim = VIC_RING;
	o->aggressor = AGG_INCAST;
	o->victim_frac = 0.1;
	o->alloc = ALLOC_LINEAR;
	o->agg_size = 65536;
	o->victim_size = 131072;
	o->victim_window = 8;
	o->incast_targets = 1;
	o->agg_ppn = 1;
	o->burst_bytes = 262144;
	o->gap_us = 5;
	o->tc_victim = UINT32_MAX;
	o->tc_agg = UINT32_MAX;
	o->time_us = 50;
	o->warmup_us = 5;
	o->drain_us = 100;
	o->step_ns = 100;
}

/* --- setup ------------------------------------------------------------- */

static int split_roles(struct run *r)
{
	const struct imp_opts *o = r->o;
	uint64_t *perm, i, j, tmp, k, iv = 0, ia = 0;
	struct ssemu_rng rng;

	r->nv = (uint64_t)llround(o->victim_frac * (double)r->d.n);
	if (r->nv < 2)
		r->nv = 2;
	if (r->nv > r->d.n - 2)
		r->nv = r->d.n - 2;
	r->na = r->d.n - r->nv;
	r->victims = calloc(r->nv, sizeof(*r->victims));
	r->aggs = calloc(r->na, sizeof(*r->aggs));
	r->role = calloc(r->d.n, sizeof(*r->role));
	perm = calloc(r->d.n, sizeof(*perm));
	if (!r->victims || !r->aggs || !r->role || !perm) {
		free(perm);
		return -ENOMEM;
	}
	for (i = 0; i < r->d.n; i++)
		perm[i] = i;
	ssemu_rng_seed(&rng, r->d.cfg.seed, 0x1a);
	if (o->alloc == ALLOC_RANDOM) {
		for (i = r->d.n - 1; i > 0; i--) {
			j = ssemu_rng_below(&rng, i + 1);
			tmp = perm[i];
			perm[i] = perm[j];
			perm[j] = tmp;
		}
	}
	for (i = 0; i < r->d.n; i++)
		r->role[i] = INT64_MIN;
	if (o->alloc == ALLOC_INTERLEAVED) {
		k = r->d.n / r->nv;
		for (i = 0; i < r->nv; i++)
			r->role[i * k] = (int64_t)i;
		for (i = 0; i < r->d.n; i++) {
			if (r->role[i] >= 0)
				r->victims[iv++] = i;
			else
				r->aggs[ia++] = i;
		}
	} else {
		for (i = 0; i < r->d.n; i++) {
			if (i < r->nv)
				r->victims[iv++] = perm[i];
			else
				r->aggs[ia++] = perm[i];
		}
	}
	for (i = 0; i < r->nv; i++)
		r->role[r->victims[i]] = (int64_t)i;
	for (i = 0; i < r->na; i++)
		r->role[r->aggs[i]] = -1 - (int64_t)i;

	/* The victims' ring: a random single cycle (Sattolo). */
	r->succ = calloc(r->nv, sizeof(*r->succ));
	if (!r->succ) {
		free(perm);
		return -ENOMEM;
	}
	for (i = 0; i < r->nv; i++)
		perm[i] = i;
	for (i = r->nv - 1; i > 0; i--) {
		j = ssemu_rng_below(&rng, i);
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	/* perm is a cyclic permutation: successor of i is perm[i] */
	r->pred = calloc(r->nv, sizeof(*r->pred));
	if (!r->pred) {
		free(perm);
		return -ENOMEM;
	}
	for (i = 0; i < r->nv; i++) {
		r->succ[i] = perm[i];
		r->pred[perm[i]] = i;
	}
	free(perm);
	return 0;
}

#define NO_PARTNER UINT64_MAX

/* Random pairs over @n indices: part[i] is i's partner, NO_PARTNER for
 * the one left over when @n is odd. */
static uint64_t *pair_up(struct ssemu_rng *rng, uint64_t n)
{
	uint64_t *perm = calloc(n, sizeof(*perm));
	uint64_t *part = calloc(n, sizeof(*part));
	uint64_t i, j, tmp;

	if (!perm || !part) {
		free(perm);
		free(part);
		return NULL;
	}
	for (i = 0; i < n; i++)
		perm[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = ssemu_rng_below(rng, i + 1);
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (i = 0; i + 1 < n; i += 2) {
		part[perm[i]] = perm[i + 1];
		part[perm[i + 1]] = perm[i];
	}
	if (n & 1)
		part[perm[n - 1]] = NO_PARTNER;
	free(perm);
	return part;
}

static bool victim_pairs(int v)
{
	return victims[v].pairs;
}

/* A bandwidth victim: measured by the rate it receives, not by latency. */
static bool victim_bw(int v)
{
	return victims[v].bw;
}

/* Bytes of the largest message either side sends. */
static uint64_t max_msg(const struct imp_opts *o)
{
	return victim_bw(o->victim) ?
		       SSEMU_MAX(o->agg_size, o->victim_size) : o->agg_size;
}

static int run_setup(struct run *r)
{
	const struct imp_opts *o = r->o;
	uint64_t nports, n, i;
	int ret;

	r->d.tool = "impact";
	r->d.ops = &imp_drv_ops;
	r->vic = &victims[o->victim];
	r->agg = &aggressors[o->aggressor];
	ret = ssemu_drv_config(&r->d, &o->fab);
	if (ret)
		return ret;
	nports = ssemu_config_nports(&r->d.cfg);
	n = o->nendpoints ? o->nendpoints : nports;
	if (n > nports) {
		fprintf(stderr, "impact: --endpoints %" PRIu64 ": the fabric "
			"has %" PRIu64 "\n", n, nports);
		return -EINVAL;
	}
	if (n < 4) {
		fprintf(stderr, "impact: the fabric has %" PRIu64 " endpoints; "
			"at least 4 are needed\n", n);
		return -EINVAL;
	}
	ret = ssemu_drv_open(&r->d, n, max_msg(o),
			     ssemu_drv_window_pkts(&r->d, max_msg(o)), NULL);
	if (ret)
		return ret;
	ret = split_roles(r);
	if (ret)
		return ret;
	r->waiting = calloc(r->nv, sizeof(bool));
	r->want = calloc(r->nv, sizeof(bool));
	r->posted = calloc(r->nv, sizeof(ssemu_time_t));
	r->ring_iter = calloc(r->nv, sizeof(uint64_t));
	r->ring_sent = calloc(r->nv, 1);
	r->ring_got[0] = calloc(r->nv, 1);
	r->ring_got[1] = calloc(r->nv, 1);
	r->ring_final = UINT64_MAX;
	r->stage = calloc(r->nv, sizeof(uint64_t));
	r->sent_stage = calloc(r->nv, sizeof(bool));
	r->got[0] = calloc(r->nv, sizeof(uint64_t));
	r->got[1] = calloc(r->nv, sizeof(uint64_t));
	r->agg_dest_fixed = calloc(r->na, sizeof(uint64_t));
	r->outstanding = calloc(r->d.n, sizeof(uint64_t));
	r->burst_posted = calloc(r->na, sizeof(uint64_t));
	r->resume = calloc(r->na, sizeof(ssemu_time_t));
	r->nr = r->na * o->agg_ppn;
	r->pw_count = calloc(r->nr, sizeof(uint64_t));
	r->pw_flags = calloc(r->nr, 1);
	if (!r->pw_count || !r->pw_flags)
		return -ENOMEM;
	if (!r->waiting || !r->want || !r->posted || !r->ring_iter ||
	    !r->ring_sent || !r->ring_got[0] || !r->ring_got[1] ||
	    !r->stage || !r->sent_stage ||
	    !r->got[0] || !r->got[1] || !r->agg_dest_fixed ||
	    !r->outstanding || !r->burst_posted || !r->resume)
		return -ENOMEM;
	for (r->p = 1, r->stages = 0; r->p * 2 <= r->nv; r->p *= 2)
		r->stages++;
	if (r->vic->pairs || r->agg->pairs) {
		/* a stream of its own: the other patterns' draws stay as
		 * they were */
		struct ssemu_rng prng;

		ssemu_rng_seed(&prng, r->d.cfg.seed, 0x1c);
		if (r->vic->pairs && !(r->vpart = pair_up(&prng, r->nv)))
			return -ENOMEM;
		if (r->agg->pairs && !(r->apart = pair_up(&prng, r->na)))
			return -ENOMEM;
	}
	r->pp_state = calloc(r->nv, 1);
	r->pp_posted = calloc(r->nv, sizeof(ssemu_time_t));
	r->v_rx0 = calloc(r->nv, sizeof(uint64_t));
	if (!r->pp_state || !r->pp_posted || !r->v_rx0)
		return -ENOMEM;
	/* Incast: the first K aggressors are the targets; they do not send. */
	for (i = 0; i < r->na; i++)
		r->agg_dest_fixed[i] = r->aggs[i % SSEMU_MIN(o->incast_targets,
							     r->na)];
	ssemu_rng_seed(&r->rng, r->d.cfg.seed, 0x1b);
	return 0;
}

static void run_teardown(struct run *r)
{
	ssemu_drv_close(&r->d);
	free(r->victims);
	free(r->aggs);
	free(r->role);
	free(r->succ);
	free(r->pred);
	free(r->ring_iter);
	free(r->ring_sent);
	free(r->ring_got[0]);
	free(r->ring_got[1]);
	free(r->waiting);
	free(r->want);
	free(r->posted);
	free(r->stage);
	free(r->sent_stage);
	free(r->got[0]);
	free(r->got[1]);
	free(r->agg_dest_fixed);
	free(r->outstanding);
	free(r->burst_posted);
	free(r->resume);
	free(r->pw_count);
	free(r->pw_flags);
	free(r->vpart);
	free(r->apart);
	free(r->pp_state);
	free(r->pp_posted);
	free(r->v_rx0);
}

/* --- traffic ----------------------------------------------------------- */

enum { KIND_AGG = 1, KIND_RING, KIND_AR, KIND_PP, KIND_BW };
/* a ping-pong pair's exchange, kept by its initiator */
enum { PP_IDLE, PP_PING, PP_PONG_DUE, PP_PONG };
enum { PW_POSTED = 1, PW_SENT = 2, PW_GOT = 4 };

static int post(struct run *r, uint64_t src, uint64_t dst, uint64_t len,
		uint32_t tclass, uint64_t kind, uint64_t tag, uint64_t cookie)
{
	return ssemu_drv_post(&r->d, src, dst, len, tclass, kind, tag, cookie);
}

static void ar_finish_rank(struct run *r, uint64_t rank, ssemu_time_t t)
{
	r->got[r->iter & 1][rank] = 0;
	r->ar_done++;
	if (t > r->ar_last)
		r->ar_last = t;
}

/* Allreduce rank @rank may have received what it waits for. */
static void ar_advance(struct run *r, uint64_t rank, ssemu_time_t t)
{
	uint64_t *g = &r->got[r->iter & 1][rank];

	while (r->stage[rank] < r->stages && r->sent_stage[rank] &&
	       (*g & (1ULL << r->stage[rank]))) {
		r->stage[rank]++;
		r->sent_stage[rank] = false;
		if (r->stage[rank] == r->stages)
			ar_finish_rank(r, rank, t);
	}
}

/*
 * Ring victim @vi finishes its iteration once both its sends are posted and
 * both neighbours' messages of the same iteration arrived.  One sample per
 * iteration: half its duration, as GPCNeT counts (two messages each way).
 */
static void ring_try_finish(struct run *r, uint64_t vi, ssemu_time_t t)
{
	uint8_t *got = &r->ring_got[r->ring_iter[vi] & 1][vi];

	if (!r->waiting[vi] || r->ring_sent[vi] != 3 || *got != 3)
		return;
	ssemu_samples_add(&r->res->lat,
			  (double)(t - r->posted[vi]) / 2.0 / SSEMU_PS_PER_NS);
	*got = 0;
	r->ring_iter[vi]++;
	r->ring_sent[vi] = 0;
	r->waiting[vi] = false;
	r->want[vi] = true;
}

/*
 * MPI_Alltoall's pairwise exchange (what Open MPI and Cray MPICH use for
 * large messages): step k of an iteration, aggressor i sends to i + k and
 * receives from i - k (mod the aggressor count), and starts step k + 1 once
 * both are done.  A large message goes by rendezvous, so the send starts
 * only once its destination reached step k (posted its receive): a rank
 * stuck behind a congested path holds up those who wait for it, and the
 * exchange limits its own load, as the real collective does.
 */
static void pw_advance(struct run *r, uint64_t q)
{
	if (r->pw_flags[q] != (PW_POSTED | PW_SENT | PW_GOT))
		return;
	r->pw_flags[q] = 0;
	r->pw_count[q]++;
}

static uint64_t pw_peer(const struct run *r, uint64_t q, bool to)
{
	uint64_t k = r->pw_count[q] % (r->nr - 1) + 1;

	return to ? (q + k) % r->nr : (q + r->nr - k) % r->nr;
}

/* Rank @q received its step @count message. */
static void pw_got(struct run *r, uint64_t q, uint64_t count)
{
	/* a sender starts step k only once we are at step k */
	if (q >= r->nr || count != r->pw_count[q] ||
	    (r->pw_flags[q] & PW_GOT)) {
		fprintf(stderr, "impact: pairwise: rank %" PRIu64 " got step %"
			PRIu64 " out of turn\n", q, count);
		r->d.failed++;
		return;
	}
	r->pw_flags[q] |= PW_GOT;
	pw_advance(r, q);
}

static void pw_sent(struct run *r, uint64_t q)
{
	r->pw_flags[q] |= PW_SENT;
	pw_advance(r, q);
}

/* Start the sends of every rank whose destination is at its step. */
static int pw_step(struct run *r)
{
	uint64_t q, to, ppn = r->o->agg_ppn;
	int ret;

	for (q = 0; q < r->nr; q++) {
		to = pw_peer(r, q, true);
		if ((r->pw_flags[q] & PW_POSTED) ||
		    r->pw_count[to] != r->pw_count[q])
			continue;
		if (q / ppn == to / ppn) {
			/* same node: shared memory, not the fabric */
			r->pw_flags[q] |= PW_POSTED;
			pw_got(r, to, r->pw_count[q]);
			pw_sent(r, q);
			continue;
		}
		ret = post(r, r->aggs[q / ppn], r->aggs[to / ppn],
			   r->o->agg_size, r->o->tc_agg, KIND_AGG,
			   to << 40 | r->pw_count[q], q);
		if (ret == -EAGAIN)
			continue;
		if (ret)
			return ret;
		r->pw_flags[q] |= PW_POSTED;
		r->outstanding[r->aggs[q / ppn]]++;
	}
	return 0;
}

static void pw_recv(struct run *r, const struct ssemu_event *ev)
{
	pw_got(r, ev->hdr[3] >> 40, ev->hdr[3] & ((1ULL << 40) - 1));
}

static void pw_sent_ev(struct run *r, const struct ssemu_event *ev)
{
	pw_sent(r, ev->cookie);
}

static void ring_recv(struct run *r, uint64_t port,
		      const struct ssemu_event *ev)
{
	uint64_t it = ev->hdr[3] >> 1;
	int64_t vi = r->role[port];

	r->ring_got[it & 1][vi] |= (uint8_t)(1u << (ev->hdr[3] & 1));
	ring_try_finish(r, (uint64_t)vi, ev->time);
}

static void pingpong_recv(struct run *r, uint64_t port,
			  const struct ssemu_event *ev)
{
	uint64_t init = ev->hdr[3] >> 1;

	(void)port;
	/* one-way latency, from the post (at a step) to the arrival: the
	 * answer's wait for the next step is not the fabric's */
	ssemu_samples_add(&r->res->lat, (double)(ev->time - ev->hdr[0]) /
					SSEMU_PS_PER_NS);
	if (init >= r->nv) {
		r->d.failed++;
		return;
	}
	if (ev->hdr[3] & 1) {
		r->pp_state[init] = PP_IDLE;
	} else {
		r->pp_state[init] = PP_PONG_DUE;
		r->pp_posted[init] = ev->time;
	}
}

static void bw_recv(struct run *r, uint64_t port, const struct ssemu_event *ev)
{
	(void)port;
	if (ev->time >= r->win_start && ev->time < r->win_end)
		r->res->vmsgs++;
}

static void ar_recv(struct run *r, uint64_t port, const struct ssemu_event *ev)
{
	uint64_t iter = ev->hdr[3] >> 8, st = ev->hdr[3] & 0xff;
	uint64_t rank = (uint64_t)r->role[port];

	r->got[iter & 1][rank] |= 1ULL << st;
	if (iter == r->iter)
		ar_advance(r, rank, ev->time);
}

static void imp_recv(struct ssemu_drv *d, uint64_t port,
		     const struct ssemu_event *ev)
{
	struct run *r = container_of(d, struct run, d);

	if (ev->hdr[2] != KIND_AGG) {
		r->vic->recv(r, port, ev);
		return;
	}
	if (ev->time >= r->win_start && ev->time < r->win_end) {
		r->res->agg_msgs++;
		ssemu_samples_add(&r->res->agg_lat,
				  (double)(ev->time - ev->hdr[0]) /
				  SSEMU_PS_PER_US);
	}
	if (r->agg->recv)
		r->agg->recv(r, ev);
}

static void imp_sent(struct ssemu_drv *d, uint64_t port,
		     const struct ssemu_event *ev)
{
	struct run *r = container_of(d, struct run, d);

	if (r->outstanding[port])
		r->outstanding[port]--;
	if (r->agg->sent && r->role[port] < 0)
		r->agg->sent(r, ev);
}

/* Each message to a random other aggressor. */
static uint64_t alltoall_dest(struct run *r, uint64_t ai)
{
	uint64_t d = ssemu_rng_below(&r->rng, r->na - 1);

	if (d >= ai)
		d++;
	return r->aggs[d];
}

static uint64_t bisection_dest(struct run *r, uint64_t ai)
{
	return r->aggs[r->apart[ai]];
}

/* The incast targets, in turn over the senders. */
static uint64_t incast_dest(struct run *r, uint64_t ai)
{
	return r->agg_dest_fixed[ai];
}

static bool all_send(const struct run *r, uint64_t ai)
{
	(void)r;
	(void)ai;
	return true;
}

/* The first --incast-targets aggressors only receive. */
static bool incast_sends(const struct run *r, uint64_t ai)
{
	return ai >= SSEMU_MIN(r->o->incast_targets, r->na);
}

/* The odd one out has no partner. */
static bool bisection_sends(const struct run *r, uint64_t ai)
{
	return r->apart[ai] != NO_PARTNER;
}

static int pairwise_step(struct run *r, ssemu_time_t now)
{
	(void)now;
	return pw_step(r);
}

/* Every sending aggressor posts as many messages as its NIC takes (a
 * bursty one: until its burst is posted, then idles once it is in). */
static int stream_step(struct run *r, ssemu_time_t now)
{
	const struct imp_opts *o = r->o;
	const struct agg_ops *ag = r->agg;
	uint64_t ai, src;
	int ret;

	for (ai = 0; ai < r->na; ai++) {
		if (!ag->sends(r, ai))
			continue;
		src = r->aggs[ai];
		if (ag->burst) {
			if (now < r->resume[ai])
				continue;
			if (r->burst_posted[ai] >= o->burst_bytes) {
				/* burst posted: idle once it is delivered */
				if (r->outstanding[src])
					continue;
				r->burst_posted[ai] = 0;
				r->resume[ai] = now + (ssemu_time_t)(o->gap_us *
						SSEMU_PS_PER_US);
				continue;
			}
		}
		for (;;) {
			uint64_t len = o->agg_size;

			if (ag->burst) {
				if (r->burst_posted[ai] >= o->burst_bytes)
					break;
				len = SSEMU_MIN(len, o->burst_bytes -
						     r->burst_posted[ai]);
			}
			ret = post(r, src, ag->dest(r, ai), len, o->tc_agg,
				   KIND_AGG, 0, src);
			if (ret == -EAGAIN)
				break;
			if (ret)
				return ret;
			r->outstanding[src]++;
			if (ag->burst)
				r->burst_posted[ai] += len;
		}
	}
	return 0;
}

static int ar_post_rank(struct run *r, uint64_t rank)
{
	uint64_t st = r->stage[rank], peer = rank ^ (1ULL << st);
	int ret;

	ret = post(r, r->victims[rank], r->victims[peer], 8, r->o->tc_victim,
		   KIND_AR, (r->iter << 8) | st, r->victims[rank]);
	if (ret == -EAGAIN)
		return 0;
	if (ret)
		return ret;
	r->sent_stage[rank] = true;
	return 0;
}

/* Ping-pong pairs: the initiator pings once idle (while measuring), the
 * other answers as soon as the ping is in. */
static int pingpong_step(struct run *r, ssemu_time_t now, bool start_new)
{
	uint64_t i, j;
	int ret;

	for (i = 0; i < r->nv; i++) {
		j = r->vpart[i];
		if (j == NO_PARTNER || j < i)
			continue;	/* not an initiator */
		if (r->pp_state[i] == PP_IDLE && start_new) {
			ret = post(r, r->victims[i], r->victims[j], 8,
				   r->o->tc_victim, KIND_PP, i << 1,
				   r->victims[i]);
			if (ret && ret != -EAGAIN)
				return ret;
			if (!ret) {
				r->pp_state[i] = PP_PING;
				r->pp_posted[i] = now;
			}
		} else if (r->pp_state[i] == PP_PONG_DUE) {
			ret = post(r, r->victims[j], r->victims[i], 8,
				   r->o->tc_victim, KIND_PP, i << 1 | 1,
				   r->victims[j]);
			if (ret && ret != -EAGAIN)
				return ret;
			if (!ret) {
				r->pp_state[i] = PP_PONG;
				r->pp_posted[i] = now;
			}
		}
	}
	return 0;
}

/* Bandwidth victims keep --victim-window messages in flight until the
 * window ends: a bisection pair to each other, a ring victim to its two
 * neighbours in turn. */
static int bw_step(struct run *r, bool start_new)
{
	bool ring = r->o->victim == VIC_RINGBW;
	uint64_t i, src, dst;
	int ret;

	if (!start_new)
		return 0;
	for (i = 0; i < r->nv; i++) {
		if (!ring && r->vpart[i] == NO_PARTNER)
			continue;
		src = r->victims[i];
		while (r->outstanding[src] < r->o->victim_window) {
			dst = !ring ? r->vpart[i] :
			      r->ring_sent[i] ? r->pred[i] : r->succ[i];
			ret = post(r, src, r->victims[dst], r->o->victim_size,
				   r->o->tc_victim, KIND_BW, 0, src);
			if (ret == -EAGAIN)
				break;
			if (ret)
				return ret;
			r->outstanding[src]++;
			r->ring_sent[i] ^= 1;	/* ringbw: the other side next */
		}
	}
	return 0;
}

static int bw_victim_step(struct run *r, ssemu_time_t now, bool start_new)
{
	(void)now;
	return bw_step(r, start_new);
}

static int ring_step(struct run *r, ssemu_time_t now, bool start_new)
{
	uint64_t i;
	int ret;

	/* Once time is up, every victim still completes the last
	 * iteration any of them started (its neighbours wait for it):
	 * a neighbour is never more than one iteration ahead. */
	if (!start_new && r->ring_final == UINT64_MAX) {
		/* iterations the furthest victim has started */
		r->ring_final = 0;
		for (i = 0; i < r->nv; i++)
			r->ring_final = SSEMU_MAX(r->ring_final,
				r->ring_iter[i] + r->waiting[i]);
	}
	for (i = 0; i < r->nv; i++) {
		uint64_t it = r->ring_iter[i];

		if (r->want[i] && !r->waiting[i]) {
			if (!start_new && it >= r->ring_final)
				continue;
			r->want[i] = false;
			r->waiting[i] = true;
			r->posted[i] = now;
		}
		if (!r->waiting[i])
			continue;
		if (!(r->ring_sent[i] & 1)) {
			ret = post(r, r->victims[i], r->victims[r->succ[i]],
				   8, r->o->tc_victim, KIND_RING, it << 1 | 0,
				   r->victims[i]);
			if (ret && ret != -EAGAIN)
				return ret;
			if (!ret)
				r->ring_sent[i] |= 1;
		}
		if (!(r->ring_sent[i] & 2)) {
			ret = post(r, r->victims[i], r->victims[r->pred[i]],
				   8, r->o->tc_victim, KIND_RING, it << 1 | 1,
				   r->victims[i]);
			if (ret && ret != -EAGAIN)
				return ret;
			if (!ret)
				r->ring_sent[i] |= 2;
		}
		ring_try_finish(r, i, now);
	}
	return 0;
}

static int allreduce_step(struct run *r, ssemu_time_t now, bool start_new)
{
	uint64_t i;
	int ret;

	if (r->ar_active && r->ar_done == r->p) {
		ssemu_samples_add(&r->res->lat,
			    (double)(r->ar_last - r->ar_start) /
			    SSEMU_PS_PER_NS);
		r->ar_active = false;
		r->iter++;
		for (i = 0; i < r->p; i++) {
			r->stage[i] = 0;
			r->sent_stage[i] = false;
			/* messages of the new iteration that came early */
			ar_advance(r, i, now);
		}
	}
	if (!r->ar_active) {
		if (!start_new)
			return 0;
		r->ar_active = true;
		r->ar_start = now;
		r->ar_done = 0;
		r->ar_last = 0;
	}
	for (i = 0; i < r->p; i++) {
		if (r->stage[i] >= r->stages || r->sent_stage[i])
			continue;
		ret = ar_post_rank(r, i);
		if (ret)
			return ret;
		ar_advance(r, i, now);
	}
	return 0;
}

static bool allreduce_busy(const struct run *r)
{
	return r->ar_active;
}

static bool ring_busy(const struct run *r)
{
	uint64_t i;

	for (i = 0; i < r->nv; i++)
		if (r->waiting[i])
			return true;
	return false;
}

static bool pingpong_busy(const struct run *r)
{
	uint64_t i;

	for (i = 0; i < r->nv; i++)
		if (r->pp_state[i] != PP_IDLE)
			return true;
	return false;
}

/* A rate: nothing to finish. */
static bool bw_busy(const struct run *r)
{
	(void)r;
	return false;
}

/* What is still in flight at the cut-off is censored: its latency is at
 * least the time it has waited. */
static void allreduce_censor(struct run *r, ssemu_time_t t)
{
	ssemu_samples_add(&r->res->lat,
			  (double)(t - r->ar_start) / SSEMU_PS_PER_NS);
	r->res->unfinished++;
}

/* The message in flight, or the answer due since the ping came in. */
static void pingpong_censor(struct run *r, ssemu_time_t t)
{
	uint64_t i;

	for (i = 0; i < r->nv; i++) {
		if (r->pp_state[i] == PP_IDLE)
			continue;
		ssemu_samples_add(&r->res->lat,
				  (double)(t - r->pp_posted[i]) /
				  SSEMU_PS_PER_NS);
		r->res->unfinished++;
	}
}

static void ring_censor(struct run *r, ssemu_time_t t)
{
	uint64_t i;

	for (i = 0; i < r->nv; i++) {
		if (!r->waiting[i])
			continue;
		ssemu_samples_add(&r->res->lat,
				  (double)(t - r->posted[i]) / 2.0 /
				  SSEMU_PS_PER_NS);
		r->res->unfinished++;
	}
}

static const struct victim_ops victims[VIC_COUNT] = {
	[VIC_RING] = { .name = "ring", .unit = "message", .step = ring_step,
		       .recv = ring_recv, .busy = ring_busy,
		       .censor = ring_censor },
	[VIC_ALLREDUCE] = { .name = "allreduce", .unit = "allreduce",
			    .step = allreduce_step, .recv = ar_recv,
			    .busy = allreduce_busy,
			    .censor = allreduce_censor },
	[VIC_PINGPONG] = { .name = "pingpong", .unit = "message",
			   .pairs = true, .step = pingpong_step,
			   .recv = pingpong_recv, .busy = pingpong_busy,
			   .censor = pingpong_censor },
	[VIC_BISECTION] = { .name = "bisection", .unit = "message",
			    .bw = true, .pairs = true,
			    .step = bw_victim_step, .recv = bw_recv,
			    .busy = bw_busy },
	[VIC_RINGBW] = { .name = "ringbw", .unit = "message", .bw = true,
			 .step = bw_victim_step, .recv = bw_recv,
			 .busy = bw_busy },
};

static const struct agg_ops aggressors[AGG_COUNT] = {
	[AGG_INCAST] = { .name = "incast", .step = stream_step,
			 .sends = incast_sends, .dest = incast_dest },
	[AGG_ALLTOALL] = { .name = "alltoall", .step = stream_step,
			   .sends = all_send, .dest = alltoall_dest },
	[AGG_PAIRWISE] = { .name = "pairwise", .step = pairwise_step,
			   .recv = pw_recv, .sent = pw_sent_ev },
	[AGG_BURSTY] = { .name = "bursty", .step = stream_step,
			 .sends = incast_sends, .dest = incast_dest,
			 .burst = true },
	[AGG_NONE] = { .name = "none" },
	[AGG_BISECTION] = { .name = "bisection", .step = stream_step,
			    .pairs = true,
			    .sends = bisection_sends,
			    .dest = bisection_dest },
};

/* Payload bytes the aggressors' NICs have received so far, counted by
 * packet (the NIC counts bytes only when a whole message is in, and under
 * incast every message takes long): data packets x average payload per
 * packet of an aggressor message. */
static uint64_t agg_rx_bytes(struct run *r)
{
	uint64_t i, pkts = 0;

	for (i = 0; i < r->na; i++)
		pkts += ssemu_drv_rx_pkts(&r->d, r->aggs[i]);
	return ssemu_drv_pkts_bytes(&r->d, pkts, r->o->agg_size);
}

/* Payload bytes bandwidth victim @vi's NIC has received so far (by
 * packet, as agg_rx_bytes). */
static uint64_t victim_rx_bytes(struct run *r, uint64_t vi)
{
	return ssemu_drv_pkts_bytes(&r->d,
				    ssemu_drv_rx_pkts(&r->d, r->victims[vi]),
				    r->o->victim_size);
}

/* The bandwidth victims' window opens (@open) or closes: one sample per
 * victim (but a bisection victim left without a partner), the Gb/s it
 * received in the window. */
static void victims_window(struct run *r, bool open)
{
	uint64_t i;

	if (!victim_bw(r->o->victim))
		return;
	for (i = 0; i < r->nv; i++) {
		if (r->vpart && r->vpart[i] == NO_PARTNER)
			continue;
		if (open)
			r->v_rx0[i] = victim_rx_bytes(r, i);
		else
			ssemu_samples_add(&r->res->lat,
				(double)(victim_rx_bytes(r, i) - r->v_rx0[i]) *
				8.0 / r->res->window_ns);
	}
}

/* At model time @t: the aggressors stream until the window ends, the
 * victims run from the warm-up (a bandwidth victim from the start, so that
 * the window sees it steady); the run ends once the victims finished what
 * they began, or at the --drain cut-off. */
static int imp_step(struct ssemu_drv *d, ssemu_time_t t)
{
	struct run *r = container_of(d, struct run, d);
	bool measuring = t >= r->warm && t < r->end;
	int ret;

	if (r->aggressors_on && r->agg->step && t < r->end) {
		ret = r->agg->step(r, t);
		if (ret)
			return ret;
	}
	if (r->vic->bw) {
		ret = r->vic->step(r, t, t < r->end);
		if (ret)
			return ret;
	} else if (t >= r->warm) {
		ret = r->vic->step(r, t, measuring);
		if (ret)
			return ret;
	}
	if (t == r->warm) {
		r->agg_rx0 = agg_rx_bytes(r);
		victims_window(r, true);
	}
	if (t == r->end) {
		r->res->agg_bytes = agg_rx_bytes(r) - r->agg_rx0;
		victims_window(r, false);
	}
	if (t >= r->end && !r->vic->busy(r)) {
		r->res->end = t;
		return 1;
	}
	if (t >= r->limit) {
		if (r->vic->censor)
			r->vic->censor(r, t);
		r->res->end = t;
		return 1;
	}
	return 0;
}

static const struct ssemu_drv_ops imp_drv_ops = {
	.recv = imp_recv,
	.sent = imp_sent,
	.step = imp_step,
};

static int run_once(struct run *r)
{
	const struct imp_opts *o = r->o;
	ssemu_time_t step = o->step_ns * SSEMU_PS_PER_NS;
	ssemu_time_t warm = (ssemu_time_t)(o->warmup_us * SSEMU_PS_PER_US);
	ssemu_time_t end = warm + (ssemu_time_t)(o->time_us * SSEMU_PS_PER_US);
	ssemu_time_t limit;
	uint64_t i;

	warm = (warm + step - 1) / step * step;
	end = (end + step - 1) / step * step;
	r->res->window_ns = (double)(end - warm) / SSEMU_PS_PER_NS;
	limit = end + (ssemu_time_t)(o->drain_us * SSEMU_PS_PER_US);
	limit = (limit + step - 1) / step * step;
	r->win_start = r->warm = warm;
	r->win_end = r->end = end;
	r->limit = limit;
	for (i = 0; i < r->nv; i++)
		r->want[i] = true;
	return ssemu_drv_run_steps(&r->d, step);
}

static void summarize(struct result *res)
{
	double window_ns = res->window_ns;

	ssemu_samples_sort(&res->lat);
	res->mean = ssemu_samples_mean(&res->lat);
	res->p50 = ssemu_samples_pct(&res->lat, 50);
	res->p99 = ssemu_samples_pct(&res->lat, 99);
	res->max = res->lat.n ? res->lat.v[res->lat.n - 1] : 0;
	res->p1 = ssemu_samples_pct(&res->lat, 1);
	ssemu_samples_sort(&res->agg_lat);
	res->agg_mean = ssemu_samples_mean(&res->agg_lat);
	res->agg_p50 = ssemu_samples_pct(&res->agg_lat, 50);
	res->agg_p99 = ssemu_samples_pct(&res->agg_lat, 99);
	res->min = res->lat.n ? res->lat.v[0] : 0;
	res->agg_gbps = window_ns > 0 ? (double)res->agg_bytes * 8.0 /
					window_ns : 0;
}

static int do_run(const struct imp_opts *o, bool aggressors,
		  struct result *res, struct run *keep)
{
	struct run r;
	int ret;

	memset(&r, 0, sizeof(r));
	r.o = o;
	r.res = res;
	r.aggressors_on = aggressors;
	ret = run_setup(&r);
	if (!ret && (o->tc_victim != UINT32_MAX || o->tc_agg != UINT32_MAX)) {
		uint32_t bad = o->tc_victim != UINT32_MAX &&
			       o->tc_victim >= r.d.cfg.ntclass ? o->tc_victim :
			       o->tc_agg != UINT32_MAX &&
			       o->tc_agg >= r.d.cfg.ntclass ? o->tc_agg :
			       UINT32_MAX;
		if (bad != UINT32_MAX) {
			fprintf(stderr, "impact: traffic class %u: the fabric "
				"has %u classes\n", bad, r.d.cfg.ntclass);
			ret = -EINVAL;
		}
	}
	if (!ret) {
		struct imp_opts oo = *o;

		if (oo.tc_victim == UINT32_MAX)
			oo.tc_victim = r.d.cfg.default_tclass;
		if (oo.tc_agg == UINT32_MAX)
			oo.tc_agg = r.d.cfg.default_tclass;
		r.o = &oo;
		ret = run_once(&r);
		if (!ret && r.d.failed) {
			fprintf(stderr, "impact: %" PRIu64 " messages failed "
				"or came out of turn\n", r.d.failed);
			ret = -EIO;
		}
		if (ret && ret != -ETIMEDOUT)
			fprintf(stderr, "impact: the run failed: %s\n",
				strerror(-ret));
		r.o = o;
	}
	summarize(res);
	if (keep) {
		keep->d.cfg = r.d.cfg;
		keep->d.n = r.d.n;
		keep->nv = r.nv;
		keep->na = r.na;
		keep->p = r.p;
	}
	run_teardown(&r);
	return ret;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* Bandwidth alone over congested: a victim starved to nothing in the
 * congested run is an infinite impact, not none. */
static double bw_ratio(double alone, double with)
{
	return with > 0 ? alone / with : alone > 0 ? INFINITY : 0;
}

/* An impact for JSON, which has no infinity. */
static void json_impact(double v)
{
	if (isinf(v))
		printf("null");
	else
		printf("%.3f", v);
}

static void report(const struct imp_opts *o, const struct run *info,
		   const struct result *alone, const struct result *with)
{
	const struct ssemu_config *c = &info->d.cfg;
	uint32_t tv = o->tc_victim == UINT32_MAX ? c->default_tclass :
						  o->tc_victim;
	uint32_t ta = o->tc_agg == UINT32_MAX ? c->default_tclass : o->tc_agg;
	const char *preset = c->preset[0] ? c->preset : "(file)";
	char note[64];
	uint64_t vn = o->victim == VIC_ALLREDUCE ? info->p : info->nv;
	uint64_t paired = info->na & ~1ULL;	/* bisection: the odd one idles */
	uint64_t senders = o->aggressor == AGG_ALLTOALL ||
			   o->aggressor == AGG_PAIRWISE ? info->na :
			   o->aggressor == AGG_BISECTION ? paired :
			   info->na - SSEMU_MIN(o->incast_targets, info->na);
	const char *unit = victims[o->victim].unit;
	/* the links the aggressors' traffic ends on: every aggressor's, or
	 * the incast targets' */
	uint64_t sinks = o->aggressor == AGG_INCAST ||
			 o->aggressor == AGG_BURSTY ?
			 SSEMU_MIN(o->incast_targets, info->na) :
			 o->aggressor == AGG_BISECTION ? paired : info->na;
	double link_pct = sinks ? 100.0 * with->agg_gbps * 1e9 /
				  ((double)sinks * (double)c->edge.rate_bps) : 0;
	/* a bandwidth victim's impact is inverted, as GPCNeT's: alone over
	 * congested, on the mean and on the worst 1% */
	bool bw = victim_bw(o->victim);
	double imp_mean = bw ? bw_ratio(alone->mean, with->mean) :
			       ratio(with->mean, alone->mean);
	double imp_tail = bw ? bw_ratio(alone->p1, with->p1) :
			       ratio(with->p99, alone->p99);
	uint64_t vsize = bw ? o->victim_size : 8;

	if (o->json) {
		printf("{\"fabric\": {\"preset\": \"%s\", \"groups\": %u, "
		       "\"switches_per_group\": %u, \"endpoints_per_switch\": "
		       "%u, \"local_links_per_pair\": %u, \"endpoints\": %"
		       PRIu64 ", \"routing\": \"%s\", "
		       "\"cc\": \"%s\", \"arbitration\": \"%s\", \"seed\": %"
		       PRIu64 "},\n",
		       preset, c->topo.groups, c->topo.switches_per_group,
		       c->topo.endpoints_per_switch,
		       c->topo.local_links_per_pair, info->d.n, c->routing,
		       c->cc, c->arb, c->seed);
		printf(" \"victim\": {\"pattern\": \"%s\", \"endpoints\": %"
		       PRIu64 ", \"size\": %" PRIu64 ", \"tclass\": \"%s\"},\n",
		       victims[o->victim].name, vn, vsize, c->tclass[tv].name);
		printf(" \"aggressor\": {\"pattern\": \"%s\", \"endpoints\": %"
		       PRIu64 ", \"senders\": %" PRIu64 ", \"tclass\": \"%s\", "
		       "\"size\": %" PRIu64 "},\n",
		       aggressors[o->aggressor].name, info->na,
		       o->aggressor == AGG_NONE ? 0 : senders,
		       c->tclass[ta].name, o->agg_size);
		printf(" \"allocation\": \"%s\", \"time_us\": %.3f, "
		       "\"warmup_us\": %.3f,\n",
		       alloc_names[o->alloc], o->time_us, o->warmup_us);
		for (int k = 0; k < 2; k++) {
			const struct result *x = k ? with : alone;

			if (bw)
				printf(" \"%s\": {\"samples\": %zu, \"messages\": "
				       "%" PRIu64 ", \"mean_gbps\": %.3f, "
				       "\"p1_gbps\": %.3f, \"min_gbps\": %.3f},\n",
				       k ? "congested" : "alone", x->lat.n,
				       x->vmsgs, x->mean, x->p1, x->min);
			else
				printf(" \"%s\": {\"samples\": %zu, \"cut_off\": "
				       "%" PRIu64 ", \"mean_ns\": %.1f, "
				       "\"p50_ns\": %.1f, \"p99_ns\": %.1f, "
				       "\"max_ns\": %.1f},\n",
				       k ? "congested" : "alone", x->lat.n,
				       x->unfinished, x->mean, x->p50, x->p99,
				       x->max);
		}
		printf(" \"aggressor_gbps\": %.3f,\n", with->agg_gbps);
		printf(" \"aggressor_latency_us\": {\"messages\": %zu, "
		       "\"mean\": %.3f, \"p50\": %.3f, \"p99\": %.3f},\n",
		       with->agg_lat.n, with->agg_mean, with->agg_p50,
		       with->agg_p99);
		printf(" \"aggressor_link_pct\": %.1f,\n", link_pct);
		printf(" \"impact\": {\"mean\": ");
		json_impact(imp_mean);
		printf(", \"p99\": ");
		json_impact(imp_tail);
		printf("}}\n");
		return;
	}
	printf("fabric: preset %s, %u groups x %u switches x %u endpoints%s, "
	       "%" PRIu64 " endpoints used\n",
	       preset, c->topo.groups, c->topo.switches_per_group,
	       c->topo.endpoints_per_switch,
	       ssemu_cli_links_note(c, note, sizeof(note)), info->d.n);
	printf("policies: routing %s, congestion control %s, arbitration %s, "
	       "seed %" PRIu64 "\n", c->routing, c->cc, c->arb, c->seed);
	printf("victim: %s on %" PRIu64 " endpoints", victims[o->victim].name,
	       vn);
	if (victim_pairs(o->victim))
		printf(" (%" PRIu64 " pairs)", vn / 2);
	printf(", %" PRIu64 " B", vsize);
	if (bw)
		printf(", %" PRIu64 " in flight", o->victim_window);
	printf(", class %s\n", c->tclass[tv].name);
	printf("aggressor: %s on %" PRIu64 " endpoints (%" PRIu64
	       " sending), %" PRIu64 " B, class %s",
	       aggressors[o->aggressor].name, info->na,
	       o->aggressor == AGG_NONE ? 0 : senders, o->agg_size,
	       c->tclass[ta].name);
	if (o->aggressor == AGG_INCAST || o->aggressor == AGG_BURSTY)
		printf(", %" PRIu64 " target%s", SSEMU_MIN(o->incast_targets,
							   info->na),
		       o->incast_targets > 1 ? "s" : "");
	if (o->aggressor == AGG_BURSTY)
		printf(", bursts of %" PRIu64 " B, gap %.3f us",
		       o->burst_bytes, o->gap_us);
	printf("\n");
	printf("allocation: %s; time %.3f us after %.3f us warm-up, drain "
	       "at most %.3f us\n", alloc_names[o->alloc], o->time_us,
	       o->warmup_us, o->drain_us);
	for (int k = 0; k < 2; k++) {
		const struct result *x = k ? with : alone;
		const char *what = k ? "congested:" : "alone:    ";

		if (bw)
			printf("%s %zu endpoints, %" PRIu64 " messages in, "
			       "bandwidth_gbps mean %.3f p1 %.3f min %.3f\n",
			       what, x->lat.n, x->vmsgs, x->mean, x->p1,
			       x->min);
		else
			printf("%s %zu %ss (%" PRIu64 " cut off), latency_ns "
			       "mean %.1f p50 %.1f p99 %.1f max %.1f\n", what,
			       x->lat.n, unit, x->unfinished, x->mean, x->p50,
			       x->p99, x->max);
	}
	printf("aggressor_bandwidth: %.3f Gb/s delivered (%" PRIu64
	       " messages)\n", with->agg_gbps, with->agg_msgs);
	if (o->aggressor != AGG_NONE)
		printf("aggressor_latency_us: mean %.3f p50 %.3f p99 %.3f (the "
		       "messages delivered in the window, post to arrival)\n",
		       with->agg_mean, with->agg_p50, with->agg_p99);
	if (o->aggressor != AGG_NONE)
		printf("aggressor_link_pct: %.1f (of %" PRIu64 " receiving "
		       "endpoints' links)\n", link_pct, sinks);
	printf("congestion_impact: mean %.3f p99 %.3f%s\n", imp_mean, imp_tail,
	       bw ? " (bandwidth alone / congested; p99: the worst 1%)" : "");
}

int ssemu_cmd_impact(int argc, char **argv)
{
	struct imp_opts o;
	struct result alone, with;
	struct run info;
	int ret;

	opts_default(&o);
	ret = parse_impact(argc, argv, &o);
	if (ret != SSEMU_CLI_RUN)
		return ret;
	if (o.victim == VIC_ALLREDUCE && o.victim_frac <= 0)
		return 2;

	memset(&alone, 0, sizeof(alone));
	memset(&with, 0, sizeof(with));
	memset(&info, 0, sizeof(info));
	ret = do_run(&o, false, &alone, &info);
	if (!ret)
		ret = do_run(&o, o.aggressor != AGG_NONE, &with, NULL);
	if (!ret)
		report(&o, &info, &alone, &with);
	ssemu_samples_free(&alone.lat);
	ssemu_samples_free(&with.lat);
	ssemu_samples_free(&alone.agg_lat);
	ssemu_samples_free(&with.agg_lat);
	if (ret == -EINVAL)
		return 2;
	return ret ? 1 : 0;
}
