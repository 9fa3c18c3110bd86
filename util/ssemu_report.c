/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu report`: turn a fabric's telemetry (read live, as an
 * observer) or a saved trace into a text or JSON summary per job and
 * traffic class, CSV files, and PNG plots drawn by gnuplot: bandwidth per
 * job and class over time (the paper's Figure 14) and latency histograms.
 * Everything is in model time.  See docs/telemetry.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"
#include "ssemu_compiler.h"

#define MAX_SERIES (SSEMU_TEL_JOB_SLOTS * SSEMU_MAX_TCLASS)
#define TOP_PAIRS 10

struct report_opts {
	const char *fabric;
	const char *trace;
	const char *csv;
	const char *plot;
	const char *save;
	bool json;
};

/* One (job, class) with traffic. */
struct series {
	uint32_t slot, tc;
	char label[64];
	const struct ssemu_tel_counters *c;
	struct ssemu_latency lat;
	int64_t first, last;	/* samples with bytes, -1: none */
	double gbps;		/* over its active span */
	uint64_t both_bytes;	/* in the overlap window */
	double gbps_both, share;
	double gbps_alone;	/* in its span outside the window */
};

/* The samples, closed ones and the open one, as times. */
struct rep {
	struct ssemu_telemetry *t;
	const char *source;
	uint32_t nser;
	struct series ser[MAX_SERIES];
	uint32_t ns;			/* samples in view */
	const struct ssemu_tel_sample **s;
	double *t0_us, *dur_us;		/* per sample */
	struct ssemu_tel_sample joined;	/* the last closed sample and a
					 * short open one, together */
	int64_t ov_first, ov_last;	/* overlap window, -1: none (its
					 * edge samples left out) */
	double ov_us;
};

static void usage_report(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu report [--fabric NAME | TRACE] [--csv DIR]\n"
		"                            [--plot DIR] [--json] [--save FILE]\n"
		"  Summarise a fabric's telemetry (a shared fabric, read as an\n"
		"  observer) or a trace saved by `sim --telemetry FILE` or\n"
		"  `report --save`: per job and traffic class bytes, bandwidth,\n"
		"  share of the total while all of them run, message latency\n"
		"  (mean, p50, p99 from the histograms), per class drops,\n"
		"  congestion marks and throttles, edge queue depths, latency\n"
		"  by job pair, and the NIC pairs with the most messages.\n"
		"  --fabric NAME   a live shared fabric\n"
		"  --csv DIR       also write summary, bandwidth, latency, classes,\n"
		"                  queues, pairs and jobpairs .csv files into DIR\n"
		"  --plot DIR      draw bandwidth.png and latency.png in DIR with\n"
		"                  gnuplot (Debian package gnuplot-nox)\n"
		"  --json          the summary as JSON instead of text\n"
		"  --save FILE     save what was read as a trace file\n");
}

static int parse_report(int argc, char **argv, struct report_opts *o)
{
	static const struct option lo[] = {
		{ "fabric", required_argument, NULL, 'f' },
		{ "csv", required_argument, NULL, 'c' },
		{ "plot", required_argument, NULL, 'p' },
		{ "save", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->fabric = optarg;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'p':
			o->plot = optarg;
			break;
		case 's':
			o->save = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage_report(stdout);
			return 1;
		default:
			usage_report(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		o->trace = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "report: unexpected argument '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	if (!o->fabric == !o->trace) {
		fprintf(stderr, "report: name either a fabric (--fabric NAME) "
			"or a trace file, not %s\n",
			o->fabric ? "both" : "neither");
		usage_report(stderr);
		return -EINVAL;
	}
	return 0;
}

static int load(const struct report_opts *o, struct ssemu_telemetry **t)
{
	struct ssemu_fabric_opts fo = {
		.store = SSEMU_STORE_SHM,
		.name = o->fabric,
		.flags = SSEMU_OPEN_OBSERVER,
	};
	struct ssemu_fabric *f;
	char err[512];
	int ret;

	if (o->trace) {
		ret = ssemu_telemetry_load(o->trace, t, err, sizeof(err));
		if (ret)
			fprintf(stderr, "report: %s\n", err);
		return ret;
	}
	ret = ssemu_fabric_open(&fo, &f, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "report: %s\n", err);
		return ret;
	}
	ret = ssemu_telemetry_read(f, t);
	if (ret)
		fprintf(stderr, "report: fabric %s: cannot read its telemetry: "
			"%s\n", o->fabric, strerror(-ret));
	ssemu_fabric_close(f);
	return ret;
}

static void job_name(const struct ssemu_telemetry *t, uint32_t slot,
		     char *buf, size_t len)
{
	uint32_t id = slot < t->njobs ? t->job[slot] : 0, j = id & 0xffff;

	/* a modelled job by its name (the trace's configuration has it) */
	if (slot < t->njobs && SSEMU_MJOB_IS_ID(id) && j < t->config.nmjobs &&
	    j < SSEMU_CONFIG_MJOBS)
		snprintf(buf, len, "%.20s", t->config.mjobs[j].name);
	else if (slot < t->njobs)
		snprintf(buf, len, "%" PRIu32, t->job[slot]);
	else
		snprintf(buf, len, "other");
}

static uint64_t rx_of(const struct rep *p, uint32_t k, const struct series *s)
{
	return p->s[k]->rx_bytes[s->slot][s->tc];
}

/* @out = samples @a and @b (which follows it) as one: counts summed,
 * the deepest queue the deeper of the two. */
static void sample_join(struct ssemu_tel_sample *out,
			const struct ssemu_tel_sample *a,
			const struct ssemu_tel_sample *b)
{
	uint32_t j, tc;

	*out = *a;
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
		for (j = 0; j < SSEMU_TEL_JOB_SLOTS; j++)
			out->rx_bytes[j][tc] += b->rx_bytes[j][tc];
		out->tx_bytes[tc] += b->tx_bytes[tc];
		out->drops[tc] += b->drops[tc];
		out->throttles[tc] += b->throttles[tc];
		out->marks[tc] += b->marks[tc];
		out->q_max[tc] = SSEMU_MAX(out->q_max[tc], b->q_max[tc]);
		out->q_sum[tc] += b->q_sum[tc];
		out->q_n[tc] += b->q_n[tc];
	}
}

/* Series, samples, spans, the overlap window and the shares in it. */
static int analyse(struct rep *p)
{
	struct ssemu_telemetry *t = p->t;
	double iv = (double)t->interval / SSEMU_PS_PER_US;
	uint32_t j, tc, k, i;
	int64_t lo = -1, hi = -1;
	uint64_t tot = 0;

	for (j = 0; j < SSEMU_TEL_JOB_SLOTS; j++) {
		if (j >= t->njobs && j != SSEMU_TEL_OTHER)
			continue;
		for (tc = 0; tc < t->config.ntclass; tc++) {
			const struct ssemu_tel_counters *c = &t->jc[j][tc];
			struct series *s = &p->ser[p->nser];
			char jn[24];

			if (!c->tx_msgs && !c->tx_bytes && !c->rx_bytes &&
			    !c->rx_msgs)
				continue;
			s->slot = j;
			s->tc = tc;
			s->c = c;
			job_name(t, j, jn, sizeof(jn));
			snprintf(s->label, sizeof(s->label), "job %s, %s", jn,
				 t->config.tclass[tc].name);
			ssemu_tel_latency(c->lat, c->lat_sum, &s->lat);
			s->first = s->last = -1;
			p->nser++;
		}
	}
	/* the closed samples, then the open one if it has any length: on
	 * its own if it is at least half an interval long, else joined to
	 * the last closed sample (a few bytes over a sliver of time would
	 * plot as a spike that flattens the rest) */
	p->s = calloc(t->nsamples + 1, sizeof(*p->s));
	p->t0_us = calloc(t->nsamples + 1, sizeof(double));
	p->dur_us = calloc(t->nsamples + 1, sizeof(double));
	if (!p->s || !p->t0_us || !p->dur_us)
		return -ENOMEM;
	for (k = 0; k < t->nsamples; k++) {
		p->s[k] = &t->samples[k];
		p->t0_us[k] = (double)t->samples[k].index * iv;
		p->dur_us[k] = iv;
	}
	p->ns = t->nsamples;
	{
		double start = (double)t->open.index * iv;
		double end = (double)t->now / SSEMU_PS_PER_US;

		if (!t->interval)
			start = 0;
		if (end > start && p->ns && end - start < iv / 2) {
			sample_join(&p->joined, p->s[p->ns - 1], &t->open);
			p->s[p->ns - 1] = &p->joined;
			p->dur_us[p->ns - 1] += end - start;
		} else if (end > start) {
			p->s[p->ns] = &t->open;
			p->t0_us[p->ns] = start;
			p->dur_us[p->ns] = end - start;
			p->ns++;
		}
	}
	/* active spans, and the window in which all series have traffic */
	for (i = 0; i < p->nser; i++) {
		struct series *s = &p->ser[i];
		uint64_t bytes = 0;
		double span = 0;

		for (k = 0; k < p->ns; k++) {
			if (!rx_of(p, k, s))
				continue;
			if (s->first < 0)
				s->first = k;
			s->last = k;
		}
		if (s->first < 0)
			continue;
		for (k = (uint32_t)s->first; k <= (uint32_t)s->last; k++) {
			bytes += rx_of(p, k, s);
			span += p->dur_us[k];
		}
		s->gbps = span > 0 ? (double)bytes * 8 / span / 1000 : 0;
		if (lo < 0 || s->first > lo)
			lo = s->first;
		if (hi < 0 || s->last < hi)
			hi = s->last;
	}
	for (i = 0; i < p->nser; i++)
		if (p->ser[i].first < 0)
			lo = hi = -1;	/* one never received: no window */
	p->ov_first = p->ov_last = -1;
	if (p->nser < 1 || lo < 0 || lo > hi)
		return 0;
	/* a series starts or stops inside the window's first and last
	 * samples: with three or more, the shares leave those two out */
	p->ov_first = hi - lo >= 2 ? lo + 1 : lo;
	p->ov_last = hi - lo >= 2 ? hi - 1 : hi;
	for (k = (uint32_t)p->ov_first; k <= (uint32_t)p->ov_last; k++)
		p->ov_us += p->dur_us[k];
	for (i = 0; i < p->nser; i++) {
		struct series *s = &p->ser[i];
		uint64_t out = 0;
		double out_us = 0;

		for (k = (uint32_t)p->ov_first; k <= (uint32_t)p->ov_last; k++)
			s->both_bytes += rx_of(p, k, s);
		tot += s->both_bytes;
		s->gbps_both = p->ov_us > 0 ?
			(double)s->both_bytes * 8 / p->ov_us / 1000 : 0;
		for (k = (uint32_t)s->first; k <= (uint32_t)s->last; k++) {
			if ((int64_t)k >= lo && (int64_t)k <= hi)
				continue;
			out += rx_of(p, k, s);
			out_us += p->dur_us[k];
		}
		s->gbps_alone = out_us > 0 ? (double)out * 8 / out_us / 1000 :
					     0;
	}
	for (i = 0; i < p->nser; i++)
		p->ser[i].share = tot ? 100.0 * (double)p->ser[i].both_bytes /
						(double)tot : 0;
	return 0;
}

static int pair_cmp(const void *a, const void *b)
{
	typedef const struct ssemu_tel_pair *pp;
	const struct ssemu_tel_pair *x = *(const pp *)a, *y = *(const pp *)b;

	if (x->msgs != y->msgs)
		return x->msgs < y->msgs ? 1 : -1;
	if (x->src_port != y->src_port)
		return x->src_port < y->src_port ? -1 : 1;
	return x->dst_port < y->dst_port ? -1 : x->dst_port > y->dst_port;
}

/* Pairs by message count, most first. */
static const struct ssemu_tel_pair **
sorted_pairs(const struct ssemu_telemetry *t)
{
	const struct ssemu_tel_pair **v = calloc(t->npairs + 1, sizeof(*v));
	uint32_t i;

	if (!v)
		return NULL;
	for (i = 0; i < t->npairs; i++)
		v[i] = &t->pair[i];
	qsort(v, t->npairs, sizeof(*v), pair_cmp);
	return v;
}

static void pair_job(uint32_t job, char *buf, size_t len)
{
	if (job == UINT32_MAX)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%" PRIu32, job);
}

/* Job slot pairs with messages, in slot order: calls @fn for each. */
static void each_jpair(const struct ssemu_telemetry *t,
		       void (*fn)(const struct ssemu_telemetry *t, uint32_t a,
				  uint32_t b, const struct ssemu_latency *l,
				  void *arg),
		       void *arg)
{
	struct ssemu_latency l;
	uint32_t a, b;

	for (a = 0; a < SSEMU_TEL_JOB_SLOTS; a++) {
		for (b = 0; b < SSEMU_TEL_JOB_SLOTS; b++) {
			const struct ssemu_tel_jpair *jp = &t->jpair[a][b];

			if (!jp->msgs)
				continue;
			ssemu_tel_latency(jp->lat, jp->lat_sum, &l);
			fn(t, a, b, &l, arg);
		}
	}
}

static void jpair_text(const struct ssemu_telemetry *t, uint32_t a,
		       uint32_t b, const struct ssemu_latency *l, void *arg)
{
	char ja[24], jb[24];

	job_name(t, a, ja, sizeof(ja));
	job_name(t, b, jb, sizeof(jb));
	printf("%-8s %-8s %9" PRIu64 " %11.1f %11.1f %11.1f\n", ja, jb,
	       l->count, l->mean_ns, l->p50_ns, l->p99_ns);
}

static void jpair_csv(const struct ssemu_telemetry *t, uint32_t a,
		      uint32_t b, const struct ssemu_latency *l, void *arg)
{
	char ja[24], jb[24];

	job_name(t, a, ja, sizeof(ja));
	job_name(t, b, jb, sizeof(jb));
	fprintf(arg, "%s,%s,%" PRIu64 ",%.1f,%.1f,%.1f\n", ja, jb, l->count,
		l->mean_ns, l->p50_ns, l->p99_ns);
}

static void jpair_json(const struct ssemu_telemetry *t, uint32_t a,
		       uint32_t b, const struct ssemu_latency *l, void *arg)
{
	char ja[24], jb[24];
	int *n = arg;

	job_name(t, a, ja, sizeof(ja));
	job_name(t, b, jb, sizeof(jb));
	printf("%s{\"src_job\":\"%s\",\"dst_job\":\"%s\",\"msgs\":%"
	       PRIu64 ",\"lat_mean_ns\":%.1f,\"lat_p50_ns\":%.1f"
	       ",\"lat_p99_ns\":%.1f}", (*n)++ ? "," : "", ja, jb, l->count,
	       l->mean_ns, l->p50_ns, l->p99_ns);
}

static double q_mean(uint64_t sum, uint64_t n)
{
	return n ? (double)sum / (double)n : 0;
}

static void print_text(const struct rep *p)
{
	const struct ssemu_telemetry *t = p->t;
	const struct ssemu_config *c = &t->config;
	const struct ssemu_tel_pair **pv;
	uint32_t i, tc;
	char jn[24], sj[24], dj[24];

	printf("telemetry: %s\n", p->source);
	printf("fabric: preset %s, arbitration %s, congestion control %s, "
	       "edge links %.0f Gb/s\n", c->preset, c->arb, c->cc,
	       (double)c->edge.rate_bps / 1e9);
	printf("model time: %.3f us\n", (double)t->now / SSEMU_PS_PER_US);
	if (t->interval)
		printf("samples: %" PRIu64 " closed of %.3f us, %u kept, "
		       "%" PRIu64 " lost to wrap-around\n",
		       t->samples_closed,
		       (double)t->interval / SSEMU_PS_PER_US, t->nsamples,
		       t->samples_lost);
	else
		printf("samples: none (telemetry interval 0)\n");
	if (t->samples_lost)
		printf("note: bandwidth spans and shares only see the samples "
		       "kept; byte totals are complete\n");
	for (tc = 0; tc < c->ntclass; tc++)
		printf("class %u: %s (priority %u, min %u%%, max %u%%)\n", tc,
		       c->tclass[tc].name, c->tclass[tc].priority,
		       c->tclass[tc].min_pct, c->tclass[tc].max_pct);
	if (!p->nser)
		printf("traffic: none counted\n");
	else if (p->ov_first >= 0)
		printf("all %u series active: %.3f - %.3f us (%.3f us)\n",
		       p->nser, p->t0_us[p->ov_first],
		       p->t0_us[p->ov_last] + p->dur_us[p->ov_last], p->ov_us);
	else
		printf("all %u series active: never together\n", p->nser);
	printf("\n%-6s %-16s %9s %14s %9s %14s %9s %9s %7s %9s %11s %11s "
	       "%11s\n", "job", "class", "tx_msgs", "tx_bytes", "rx_msgs",
	       "rx_bytes", "gbps", "both_gbps", "share%", "alone_gbps",
	       "lat_mean_ns", "lat_p50_ns", "lat_p99_ns");
	for (i = 0; i < p->nser; i++) {
		const struct series *s = &p->ser[i];

		job_name(t, s->slot, jn, sizeof(jn));
		printf("%-6s %-16s %9" PRIu64 " %14" PRIu64 " %9" PRIu64
		       " %14" PRIu64 " %9.3f %9.3f %7.2f %9.3f %11.1f %11.1f "
		       "%11.1f\n", jn, c->tclass[s->tc].name, s->c->tx_msgs,
		       s->c->tx_bytes, s->c->rx_msgs, s->c->rx_bytes, s->gbps,
		       s->gbps_both, s->share, s->gbps_alone, s->lat.mean_ns,
		       s->lat.p50_ns, s->lat.p99_ns);
	}
	printf("\n%-16s %10s %10s %10s %10s %8s %8s\n", "class", "drops",
	       "retries", "throttles", "marks", "q_max", "q_mean");
	for (tc = 0; tc < c->ntclass; tc++) {
		const struct ssemu_tel_class *k = &t->tc[tc];

		printf("%-16s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10"
		       PRIu64 " %8" PRIu64 " %8.2f\n", c->tclass[tc].name,
		       k->drops, k->retries, k->throttles, k->marks, k->q_max,
		       q_mean(k->q_sum, k->q_n));
	}
	printf("\nmessages by job pair (sending job, receiving job)\n");
	printf("%-8s %-8s %9s %11s %11s %11s\n", "src_job", "dst_job",
	       "msgs", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns");
	each_jpair(t, jpair_text, NULL);
	pv = sorted_pairs(t);
	if (!pv || !t->npairs)
		goto out;
	printf("\nNIC pairs: %u counted apart%s, top %u by messages\n",
	       t->npairs, t->other_pairs.msgs ? " (the rest together)" : "",
	       SSEMU_MIN((uint32_t)TOP_PAIRS, t->npairs));
	printf("%-8s %-8s %-6s %-6s %9s %11s %11s %11s\n", "src_port",
	       "dst_port", "src_job", "dst_job", "msgs", "lat_mean_ns",
	       "lat_p50_ns", "lat_p99_ns");
	for (i = 0; i < t->npairs && i < TOP_PAIRS; i++) {
		struct ssemu_latency l;

		ssemu_tel_latency(pv[i]->lat, pv[i]->lat_sum, &l);
		pair_job(pv[i]->src_job, sj, sizeof(sj));
		pair_job(pv[i]->dst_job, dj, sizeof(dj));
		printf("%-8u %-8u %-6s %-6s %9" PRIu64 " %11.1f %11.1f "
		       "%11.1f\n", pv[i]->src_port, pv[i]->dst_port, sj, dj,
		       pv[i]->msgs, l.mean_ns, l.p50_ns, l.p99_ns);
	}
	if (t->other_pairs.msgs) {
		struct ssemu_latency l;

		ssemu_tel_latency(t->other_pairs.lat, t->other_pairs.lat_sum,
				  &l);
		printf("%-8s %-8s %-6s %-6s %9" PRIu64 " %11.1f %11.1f "
		       "%11.1f\n", "other", "other", "-", "-",
		       t->other_pairs.msgs, l.mean_ns, l.p50_ns, l.p99_ns);
	}
out:
	free(pv);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void print_json(const struct rep *p)
{
	const struct ssemu_telemetry *t = p->t;
	const struct ssemu_config *c = &t->config;
	const struct ssemu_tel_pair **pv;
	uint32_t i, tc;
	int njp = 0;
	char jn[24];

	printf("{\"source\":");
	json_str(stdout, p->source);
	printf(",\"preset\":");
	json_str(stdout, c->preset);
	printf(",\"arbitration\":");
	json_str(stdout, c->arb);
	printf(",\"congestion_control\":");
	json_str(stdout, c->cc);
	printf(",\"now_ps\":%" PRIu64 ",\"interval_ps\":%" PRIu64
	       ",\"samples_closed\":%" PRIu64 ",\"samples_kept\":%u"
	       ",\"samples_lost\":%" PRIu64 ",\"overlap_us\":%.3f,\"series\":[",
	       t->now, t->interval, t->samples_closed, t->nsamples,
	       t->samples_lost, p->ov_us);
	for (i = 0; i < p->nser; i++) {
		const struct series *s = &p->ser[i];

		job_name(t, s->slot, jn, sizeof(jn));
		printf("%s{\"job\":", i ? "," : "");
		json_str(stdout, jn);
		printf(",\"class\":");
		json_str(stdout, c->tclass[s->tc].name);
		printf(",\"tx_msgs\":%" PRIu64 ",\"tx_pkts\":%" PRIu64
		       ",\"tx_bytes\":%" PRIu64 ",\"rx_pkts\":%" PRIu64
		       ",\"rx_bytes\":%" PRIu64 ",\"rx_msgs\":%" PRIu64
		       ",\"gbps\":%.3f,\"both_gbps\":%.3f,\"share_pct\":%.2f"
		       ",\"alone_gbps\":%.3f,\"lat_mean_ns\":%.1f"
		       ",\"lat_p50_ns\":%.1f,\"lat_p99_ns\":%.1f}",
		       s->c->tx_msgs, s->c->tx_pkts, s->c->tx_bytes,
		       s->c->rx_pkts, s->c->rx_bytes, s->c->rx_msgs, s->gbps,
		       s->gbps_both, s->share, s->gbps_alone, s->lat.mean_ns,
		       s->lat.p50_ns, s->lat.p99_ns);
	}
	printf("],\"classes\":[");
	for (tc = 0; tc < c->ntclass; tc++) {
		const struct ssemu_tel_class *k = &t->tc[tc];

		printf("%s{\"class\":", tc ? "," : "");
		json_str(stdout, c->tclass[tc].name);
		printf(",\"drops\":%" PRIu64 ",\"retries\":%" PRIu64
		       ",\"throttles\":%" PRIu64 ",\"marks\":%" PRIu64
		       ",\"q_max\":%" PRIu64 ",\"q_mean\":%.3f}", k->drops,
		       k->retries, k->throttles, k->marks, k->q_max,
		       q_mean(k->q_sum, k->q_n));
	}
	printf("],\"pairs\":[");
	pv = sorted_pairs(t);
	for (i = 0; pv && i < t->npairs; i++) {
		struct ssemu_latency l;

		ssemu_tel_latency(pv[i]->lat, pv[i]->lat_sum, &l);
		printf("%s{\"src_port\":%u,\"dst_port\":%u,\"msgs\":%" PRIu64
		       ",\"lat_mean_ns\":%.1f,\"lat_p50_ns\":%.1f"
		       ",\"lat_p99_ns\":%.1f}", i ? "," : "", pv[i]->src_port,
		       pv[i]->dst_port, pv[i]->msgs, l.mean_ns, l.p50_ns,
		       l.p99_ns);
	}
	free(pv);
	printf("],\"other_pairs_msgs\":%" PRIu64 ",\"job_pairs\":[",
	       t->other_pairs.msgs);
	each_jpair(t, jpair_json, &njp);
	printf("]}\n");
}

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

/* mkdir -p */
static int make_dir(const char *dir)
{
	char path[4096], *p;
	struct stat st;

	snprintf(path, sizeof(path), "%s", dir);
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0777) && errno != EEXIST)
			break;
		*p = '/';
	}
	if (!mkdir(dir, 0777) || (errno == EEXIST && !stat(dir, &st) &&
				  S_ISDIR(st.st_mode)))
		return 0;
	fprintf(stderr, "report: %s: %s\n", dir,
		errno == EEXIST ? "exists and is not a directory" :
				  strerror(errno));
	return -1;
}

static FILE *open_in(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "report: %s: %s\n", path, strerror(errno));
	return f;
}

static int close_file(FILE *f, const char *dir, const char *name)
{
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "report: %s/%s: write failed\n", dir, name);
		return -1;
	}
	return 0;
}

static int write_csv(const struct rep *p, const char *dir)
{
	const struct ssemu_telemetry *t = p->t;
	const struct ssemu_config *c = &t->config;
	const struct ssemu_tel_pair **pv;
	uint32_t i, k, b, tc;
	char jn[24], sj[24], dj[24], nm[SSEMU_MAX_TCLASS][SSEMU_NAME_MAX];
	FILE *f;
	int ret = 0;

	/* class names as CSV fields: no separators or quotes in them */
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
		char *q;

		snprintf(nm[tc], sizeof(nm[tc]), "%s", c->tclass[tc].name);
		for (q = nm[tc]; *q; q++)
			if (*q == ',' || *q == '"' || (unsigned char)*q < 0x20)
				*q = '_';
	}
	if (make_dir(dir))
		return -1;
	f = open_in(dir, "summary.csv");
	if (!f)
		return -1;
	fprintf(f, "job,class,tx_msgs,tx_pkts,tx_bytes,rx_pkts,rx_bytes,"
		   "rx_msgs,gbps,both_gbps,share_pct,alone_gbps,lat_mean_ns,"
		   "lat_p50_ns,lat_p99_ns\n");
	for (i = 0; i < p->nser; i++) {
		const struct series *s = &p->ser[i];

		job_name(t, s->slot, jn, sizeof(jn));
		fprintf(f, "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%.2f,%.3f,%.1f,%.1f,"
			"%.1f\n", jn, nm[s->tc], s->c->tx_msgs,
			s->c->tx_pkts, s->c->tx_bytes, s->c->rx_pkts,
			s->c->rx_bytes, s->c->rx_msgs, s->gbps, s->gbps_both,
			s->share, s->gbps_alone, s->lat.mean_ns, s->lat.p50_ns,
			s->lat.p99_ns);
	}
	ret |= close_file(f, dir, "summary.csv");

	f = open_in(dir, "bandwidth.csv");
	if (!f)
		return -1;
	fprintf(f, "time_us,duration_us,job,class,rx_bytes,gbps\n");
	for (k = 0; k < p->ns; k++) {
		for (i = 0; i < p->nser; i++) {
			const struct series *s = &p->ser[i];
			uint64_t by = rx_of(p, k, s);

			job_name(t, s->slot, jn, sizeof(jn));
			fprintf(f, "%.3f,%.3f,%s,%s,%" PRIu64 ",%.3f\n",
				p->t0_us[k], p->dur_us[k], jn,
				nm[s->tc], by,
				(double)by * 8 / p->dur_us[k] / 1000);
		}
	}
	ret |= close_file(f, dir, "bandwidth.csv");

	f = open_in(dir, "latency.csv");
	if (!f)
		return -1;
	fprintf(f, "job,class,bin,lo_ns,hi_ns,count\n");
	for (i = 0; i < p->nser; i++) {
		const struct series *s = &p->ser[i];

		if (!s->c->rx_msgs)
			continue;
		job_name(t, s->slot, jn, sizeof(jn));
		for (b = 0; b < SSEMU_TEL_LAT_BINS; b++) {
			fprintf(f, "%s,%s,%u,%.3f,", jn, nm[s->tc],
				b, (double)ssemu_tel_bin_lo(b) /
					   SSEMU_PS_PER_NS);
			if (b + 1 < SSEMU_TEL_LAT_BINS)
				fprintf(f, "%.3f", (double)ssemu_tel_bin_lo(
					b + 1) / SSEMU_PS_PER_NS);
			else
				fprintf(f, "inf");
			fprintf(f, ",%" PRIu64 "\n", s->c->lat[b]);
		}
	}
	ret |= close_file(f, dir, "latency.csv");

	f = open_in(dir, "classes.csv");
	if (!f)
		return -1;
	fprintf(f, "class,name,drops,retries,throttles,marks,q_max,q_mean\n");
	for (tc = 0; tc < c->ntclass; tc++) {
		const struct ssemu_tel_class *q = &t->tc[tc];

		fprintf(f, "%u,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%.3f\n", tc, nm[tc], q->drops,
			q->retries, q->throttles, q->marks, q->q_max,
			q_mean(q->q_sum, q->q_n));
	}
	ret |= close_file(f, dir, "classes.csv");

	f = open_in(dir, "queues.csv");
	if (!f)
		return -1;
	fprintf(f, "time_us,duration_us,class,tx_bytes,drops,throttles,"
		   "marks,q_max,q_mean\n");
	for (k = 0; k < p->ns; k++) {
		const struct ssemu_tel_sample *s = p->s[k];

		for (tc = 0; tc < c->ntclass; tc++)
			fprintf(f, "%.3f,%.3f,%s,%" PRIu64 ",%" PRIu64 ",%"
				PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n",
				p->t0_us[k], p->dur_us[k], nm[tc],
				s->tx_bytes[tc], s->drops[tc],
				s->throttles[tc], s->marks[tc], s->q_max[tc],
				q_mean(s->q_sum[tc], s->q_n[tc]));
	}
	ret |= close_file(f, dir, "queues.csv");

	f = open_in(dir, "pairs.csv");
	if (!f)
		return -1;
	fprintf(f, "src_port,dst_port,src_job,dst_job,msgs,lat_mean_ns,"
		   "lat_p50_ns,lat_p99_ns\n");
	pv = sorted_pairs(t);
	for (i = 0; pv && i < t->npairs; i++) {
		struct ssemu_latency l;

		ssemu_tel_latency(pv[i]->lat, pv[i]->lat_sum, &l);
		pair_job(pv[i]->src_job, sj, sizeof(sj));
		pair_job(pv[i]->dst_job, dj, sizeof(dj));
		fprintf(f, "%u,%u,%s,%s,%" PRIu64 ",%.1f,%.1f,%.1f\n",
			pv[i]->src_port, pv[i]->dst_port, sj, dj, pv[i]->msgs,
			l.mean_ns, l.p50_ns, l.p99_ns);
	}
	if (t->other_pairs.msgs) {
		struct ssemu_latency l;

		ssemu_tel_latency(t->other_pairs.lat, t->other_pairs.lat_sum,
				  &l);
		fprintf(f, "other,other,-,-,%" PRIu64 ",%.1f,%.1f,%.1f\n",
			t->other_pairs.msgs, l.mean_ns, l.p50_ns, l.p99_ns);
	}
	free(pv);
	ret |= close_file(f, dir, "pairs.csv");

	f = open_in(dir, "jobpairs.csv");
	if (!f)
		return -1;
	fprintf(f, "src_job,dst_job,msgs,lat_mean_ns,lat_p50_ns,lat_p99_ns\n");
	each_jpair(t, jpair_csv, f);
	ret |= close_file(f, dir, "jobpairs.csv");
	return ret ? -1 : 0;
}

/* Is @prog an executable somewhere on PATH? */
static bool on_path(const char *prog)
{
	const char *path = getenv("PATH"), *p, *e;
	char buf[4096];

	for (p = path ? path : "/usr/bin:/bin"; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)(e - p),
			 e > p ? p : ".", prog);
		if (!access(buf, X_OK))
			return true;
	}
	return false;
}

/* Run gnuplot on @script inside @dir. */
static int run_gnuplot(const char *dir, const char *script)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "report: fork: %s\n", strerror(errno));
		return -1;
	}
	if (!pid) {
		if (chdir(dir))
			_exit(126);
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "report: gnuplot %s/%s failed (exit %d)\n", dir,
			script, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -1;
	}
	return 0;
}

/* gnuplot wants its titles quoted: keep them printable and quote-free. */
static void gp_title(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
		fputc(*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 ?
			      '_' : *s, f);
	fputc('"', f);
}

static int write_plots(const struct rep *p, const char *dir)
{
	const struct ssemu_telemetry *t = p->t;
	uint32_t i, k, b, nlat = 0, blo = SSEMU_TEL_LAT_BINS, bhi = 0;
	FILE *f;
	int ret = 0;

	if (!on_path("gnuplot")) {
		fprintf(stderr, "report: --plot needs gnuplot, which is not "
			"installed (Debian package gnuplot-nox; "
			"scripts/install-deps.sh installs it)\n");
		return -1;
	}
	if (make_dir(dir))
		return -1;

	/* bandwidth over time: one column per series, Gb/s */
	f = open_in(dir, "bandwidth.dat");
	if (!f)
		return -1;
	fprintf(f, "# time_us");
	for (i = 0; i < p->nser; i++)
		fprintf(f, " \"%s\"", p->ser[i].label);
	fprintf(f, "\n");
	for (k = 0; k < p->ns; k++) {
		fprintf(f, "%.3f", p->t0_us[k] + p->dur_us[k] / 2);
		for (i = 0; i < p->nser; i++)
			fprintf(f, " %.3f", (double)rx_of(p, k, &p->ser[i]) *
						    8 / p->dur_us[k] / 1000);
		fprintf(f, "\n");
	}
	ret |= close_file(f, dir, "bandwidth.dat");
	f = open_in(dir, "bandwidth.gp");
	if (!f)
		return -1;
	fprintf(f, "# gnuplot bandwidth.gp: written by slingshot-emu report\n"
		   "set terminal pngcairo size 900,500 noenhanced\n"
		   "set output 'bandwidth.png'\n"
		   "set title 'Bandwidth per job and traffic class (model "
		   "time)'\n"
		   "set xlabel 'model time (us)'\n"
		   "set ylabel 'received (Gb/s)'\n"
		   "set yrange [0:*]\n"
		   "set key outside right\n"
		   "set grid\n");
	if (!p->nser || !p->ns)
		fprintf(f, "set label 'no traffic sampled' at graph 0.4,0.5\n"
			   "plot [0:1] 0 notitle\n");
	for (i = 0; i < p->nser && p->ns; i++) {
		fprintf(f, "%s 'bandwidth.dat' using 1:%u with lines lw 2 "
			   "title ", i ? ", \\\n    " : "plot ", i + 2);
		gp_title(f, p->ser[i].label);
	}
	fprintf(f, "\n");
	ret |= close_file(f, dir, "bandwidth.gp");

	/* latency histograms: fraction of messages per bin, log x */
	f = open_in(dir, "latency.dat");
	if (!f)
		return -1;
	fprintf(f, "# lo_us hi_us");
	for (i = 0; i < p->nser; i++)
		fprintf(f, " \"%s\"", p->ser[i].label);
	fprintf(f, "\n");
	for (b = 1; b + 1 < SSEMU_TEL_LAT_BINS; b++) {
		fprintf(f, "%.6f %.6f",
			(double)ssemu_tel_bin_lo(b) / SSEMU_PS_PER_US,
			(double)ssemu_tel_bin_lo(b + 1) / SSEMU_PS_PER_US);
		for (i = 0; i < p->nser; i++) {
			const struct series *s = &p->ser[i];

			fprintf(f, " %.6f", s->c->rx_msgs ?
				100.0 * (double)s->c->lat[b] /
					(double)s->c->rx_msgs : 0.0);
		}
		fprintf(f, "\n");
	}
	ret |= close_file(f, dir, "latency.dat");
	f = open_in(dir, "latency.gp");
	if (!f)
		return -1;
	fprintf(f, "# gnuplot latency.gp: written by slingshot-emu report\n"
		   "set terminal pngcairo size 900,500 noenhanced\n"
		   "set output 'latency.png'\n"
		   "set title 'Message latency (post to delivery, model "
		   "time)'\n"
		   "set xlabel 'latency (us)'\n"
		   "set ylabel 'messages (%%)'\n"
		   "set logscale x\n"
		   "set yrange [0:*]\n"
		   "set style fill transparent solid 0.3\n"
		   "set key outside right\n"
		   "set grid\n");
	/* the x range: the bins with messages, and a bin either side */
	for (i = 0; i < p->nser; i++)
		for (b = 1; b + 1 < SSEMU_TEL_LAT_BINS; b++)
			if (p->ser[i].c->lat[b]) {
				blo = SSEMU_MIN(blo, b);
				bhi = SSEMU_MAX(bhi, b);
			}
	if (blo <= bhi)
		fprintf(f, "set xrange [%.6f:%.6f]\n",
			(double)ssemu_tel_bin_lo(blo > 1 ? blo - 1 : 1) /
				SSEMU_PS_PER_US,
			(double)ssemu_tel_bin_lo(SSEMU_MIN(bhi + 2,
				(uint32_t)SSEMU_TEL_LAT_BINS - 1)) /
				SSEMU_PS_PER_US);
	for (i = 0; i < p->nser; i++) {
		if (!p->ser[i].c->rx_msgs)
			continue;
		fprintf(f, "%s 'latency.dat' using (sqrt($1*$2)):%u with "
			   "histeps lw 2 title ", nlat ? ", \\\n    " : "plot ",
			i + 3);
		gp_title(f, p->ser[i].label);
		nlat++;
	}
	if (!nlat)
		fprintf(f, "unset logscale x\n"
			   "set label 'no messages delivered' at graph 0.4,0.5\n"
			   "plot [0:1] 0 notitle");
	fprintf(f, "\n");
	ret |= close_file(f, dir, "latency.gp");
	if (ret)
		return -1;
	if (run_gnuplot(dir, "bandwidth.gp") || run_gnuplot(dir, "latency.gp"))
		return -1;
	(void)t;
	return 0;
}

int ssemu_cmd_report(int argc, char **argv)
{
	struct report_opts o;
	struct rep p;
	char src[4200], err[512];
	int ret;

	ret = parse_report(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	memset(&p, 0, sizeof(p));
	if (load(&o, &p.t))
		return 1;
	snprintf(src, sizeof(src), "%s %s", o.trace ? "trace" : "fabric",
		 o.trace ? o.trace : o.fabric);
	p.source = src;
	ret = analyse(&p);
	if (ret) {
		fprintf(stderr, "report: %s\n", strerror(-ret));
		goto out;
	}
	if (o.save && ssemu_telemetry_save(p.t, o.save, err, sizeof(err))) {
		fprintf(stderr, "report: %s\n", err);
		ret = -1;
		goto out;
	}
	if (o.json)
		print_json(&p);
	else
		print_text(&p);
	if (!o.json && !o.trace)
		ssemu_cli_vni_report(o.fabric);
	if (o.csv && write_csv(&p, o.csv))
		ret = -1;
	if (!ret && o.plot && write_plots(&p, o.plot))
		ret = -1;
out:
	free(p.s);
	free(p.t0_us);
	free(p.dur_us);
	ssemu_telemetry_free(p.t);
	return ret ? 1 : 0;
}
