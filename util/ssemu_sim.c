/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu sim`: synthetic traffic on an in-process fabric.  Every
 * endpoint taking part gets a NIC; open-loop sources inject messages with
 * exponential gaps at the requested load (uniform random, permutation and
 * incast patterns), or two endpoints play ping-pong.  Everything reported is
 * in model time, so the same seed gives byte-identical output.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"
#include "ssemu_compiler.h"
#include <slingshot_emu/ssemu_rng.h>
#include "ssemu_samples.h"

enum pattern { PAT_UNIFORM, PAT_PERMUTATION, PAT_INCAST, PAT_PINGPONG,
	       PAT_GROUPS, PAT_ALLTOALL, PAT_COUNT };

static const char *const pattern_names[] = {
	[PAT_UNIFORM] = "uniform",
	[PAT_PERMUTATION] = "permutation",
	[PAT_INCAST] = "incast",
	[PAT_PINGPONG] = "pingpong",
	[PAT_GROUPS] = "groups",
	[PAT_ALLTOALL] = "alltoall",
};

struct sim_opts {
	struct ssemu_cli_fabric fab;
	enum pattern pattern;
	uint64_t nendpoints;	/* 0: every endpoint of the topology */
	uint64_t sources;	/* 0: every endpoint sends */
	uint64_t size;		/* message bytes */
	double load;		/* fraction of injection bandwidth */
	double time_us;		/* model time to generate traffic for */
	uint64_t messages;	/* or: total messages to send */
	uint32_t tclass;
	const char *csv;
	const char *versus;	/* --versus-routing: a second run */
	const char *telemetry;	/* trace file to save */
	double tel_interval_us;	/* < 0: the fabric's */
	bool progress;
};

struct sim {
	struct sim_opts o;
	struct ssemu_config cfg;
	struct ssemu_fabric *fab;
	struct ssemu_nic **nics;
	struct ssemu_ep **eps;
	uint64_t n;
	struct ssemu_rng rng;
	uint64_t *dest;		/* permutation; alltoall: next shift */
	ssemu_time_t *next;	/* next injection per source */
	uint64_t sent, received, rx_bytes, failed;
	ssemu_time_t first_rx, last_rx;
	uint64_t first_bytes;	/* the first arrival opens the window */
	uint64_t drained_at;
	struct ssemu_samples lat;
	FILE *csv;
	void *payload;
	double prog_last;	/* wall clock of the last progress line */
};

static void usage_sim(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu sim [options]\n"
		"  --preset NAME        fabric preset (default switch):");
	for (const char *const *p = ssemu_config_preset_names(); *p; p++)
		fprintf(f, " %s", *p);
	fprintf(f,
		"\n"
		"  --config FILE        fabric configuration file instead of a preset\n"
		"  --scenario FILE      read options from the file's `# sim:`\n"
		"                       line and use the file as --config\n"
		"  --pattern P          uniform | permutation | incast | pingpong |\n"
		"                       groups (each endpoint to its peer in the\n"
		"                       next group: adversarial) | alltoall\n"
		"                       (each endpoint to every other in turn,\n"
		"                       MPI's pairwise shifts) (default uniform)\n"
		SSEMU_CLI_POLICY_HELP
		"  --versus-routing R   run the same traffic again with routing R\n"
		"                       and report the throughput ratio\n"
		"  --endpoints N        endpoints taking part (default: all)\n"
		"  --sources N          only the first N of them send (default:\n"
		"                       all; incast: all but the target)\n"
		"  --size BYTES         message size (default 2048)\n"
		"  --load F             offered load per source, 0 < F <= 1, as a\n"
		"                       fraction of the injection rate (default 0.5)\n"
		"  --time US            model microseconds of traffic (default 100)\n"
		"  --messages N         stop after N messages instead\n"
		"  --tclass N           traffic class index (default: the fabric's)\n"
		"  --seed N             random seed (default: the fabric's)\n"
		"  --csv FILE           per-message records: src,dst,bytes,post_ps,\n"
		"                       recv_ps,latency_ns\n"
		"  --telemetry FILE     save the run's telemetry as a trace for\n"
		"                       `slingshot-emu report FILE`\n"
		"  --telemetry-interval US\n"
		"                       sample period of the time series (default:\n"
		"                       the fabric's, 10 us in the presets; 0: none)\n"
		"  --progress           model time reached on stderr as it runs\n"
		"                       (the default when stderr is a terminal)\n");
}

static int parse_sim(int argc, char **argv, struct sim_opts *o)
{
	static const struct option lo[] = {
		SSEMU_CLI_FABRIC_OPTIONS,
		{ "pattern", required_argument, NULL, 'P' },
		{ "endpoints", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "load", required_argument, NULL, 'l' },
		{ "time", required_argument, NULL, 't' },
		{ "messages", required_argument, NULL, 'm' },
		{ "tclass", required_argument, NULL, 'T' },
		{ "csv", required_argument, NULL, 'o' },
		{ "telemetry", required_argument, NULL, 'L' },
		{ "telemetry-interval", required_argument, NULL, 'I' },
		{ "progress", no_argument, NULL, 'G' },
		{ "versus-routing", required_argument, NULL, 'V' },
		{ "sources", required_argument, NULL, 'Q' },
		{ "scenario", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t u;
	size_t i;
	int c, ret;

	memset(o, 0, sizeof(*o));
	o->fab.preset = "switch";
	o->pattern = PAT_UNIFORM;
	o->size = 2048;
	o->load = 0.5;
	o->time_us = 100;
	o->tclass = UINT32_MAX;
	o->tel_interval_us = -1;
	o->progress = isatty(STDERR_FILENO);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		ret = ssemu_cli_fabric_opt(c, optarg, &o->fab);
		if (ret < 0)
			return -EINVAL;
		if (ret)
			continue;
		switch (c) {
		case 'P':
			for (i = 0; i < PAT_COUNT; i++)
				if (!strcmp(optarg, pattern_names[i]))
					break;
			if (i == PAT_COUNT) {
				fprintf(stderr, "sim: unknown pattern '%s' "
					"(uniform, permutation, incast, "
					"pingpong, groups)\n", optarg);
				return -EINVAL;
			}
			o->pattern = (enum pattern)i;
			break;
		case 'n':
			if (ssemu_cli_u64("--endpoints", optarg, 2,
					  SSEMU_MAX_PORTS, &o->nendpoints))
				return -EINVAL;
			break;
		case 's':
			if (ssemu_cli_u64("--size", optarg, 0, 1u << 24,
					  &o->size))
				return -EINVAL;
			break;
		case 'l':
			if (ssemu_cli_double("--load", optarg, 1e-6, 1.0,
					     &o->load))
				return -EINVAL;
			break;
		case 't':
			if (ssemu_cli_double("--time", optarg, 0.001, 1e9,
					     &o->time_us))
				return -EINVAL;
			break;
		case 'm':
			if (ssemu_cli_u64("--messages", optarg, 1, 1ULL << 40,
					  &o->messages))
				return -EINVAL;
			break;
		case 'T':
			if (ssemu_cli_u64("--tclass", optarg, 0,
					  SSEMU_MAX_TCLASS - 1, &u))
				return -EINVAL;
			o->tclass = (uint32_t)u;
			break;
		case 'o':
			o->csv = optarg;
			break;
		case 'L':
			o->telemetry = optarg;
			break;
		case 'I':
			if (ssemu_cli_double("--telemetry-interval", optarg, 0,
					     1e6, &o->tel_interval_us))
				return -EINVAL;
			break;
		case 'G':
			o->progress = true;
			break;
		case 'V':
			o->versus = optarg;
			break;
		case 'Q':
			if (ssemu_cli_u64("--sources", optarg, 1,
					  SSEMU_MAX_PORTS, &o->sources))
				return -EINVAL;
			break;
		case 'F':
			/* handled before parsing */
			break;
		case 'h':
			usage_sim(stdout);
			return 1;
		default:
			usage_sim(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sim: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* Injection time of one message at the edge rate, ps. */
static double msg_wire_ps(const struct sim *s)
{
	uint64_t pkts = s->o.size ? (s->o.size + s->cfg.mtu - 1) / s->cfg.mtu : 1;
	double bytes = (double)s->o.size + (double)pkts * s->cfg.pkt_overhead;

	return bytes * 8.0 * 1e12 / (double)s->cfg.edge.rate_bps;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ssemu_time_t gap(struct sim *s)
{
	double mean = msg_wire_ps(s) / s->o.load;
	double u = ssemu_rng_double(&s->rng);

	return (ssemu_time_t)(-log(1.0 - u) * mean) + 1;
}

static uint64_t pick_dest(struct sim *s, uint64_t src)
{
	uint64_t d;

	switch (s->o.pattern) {
	case PAT_PERMUTATION:
		return s->dest[src];
	case PAT_INCAST:
		return 0;
	case PAT_PINGPONG:
		return src ^ 1;
	case PAT_GROUPS:
		return (src + (uint64_t)s->cfg.topo.switches_per_group *
				      s->cfg.topo.endpoints_per_switch) %
		       s->n;
	case PAT_ALLTOALL:
		/* MPI's pairwise exchange: shifts 1, 2, ..., n-1, again */
		d = (src + 1 + s->dest[src]) % s->n;
		s->dest[src] = (s->dest[src] + 1) % (s->n - 1);
		return d;
	default:
		d = ssemu_rng_below(&s->rng, s->n - 1);
		return d >= src ? d + 1 : d;
	}
}

static int post(struct sim *s, uint64_t src, uint64_t dst)
{
	struct iovec iov = { s->payload, s->o.size };
	struct ssemu_send m = {
		.dest = ssemu_ep_addr(s->eps[dst]),
		.tclass = s->o.tclass,
		/* synthetic traffic needs no ordering: each packet may take
		 * its own path (a class marked ordered still orders) */
		.flags = 0,
		.iov = &iov,
		.iov_count = 1,
		.cookie = src,
	};

	m.hdr[0] = ssemu_fabric_now(s->fab);
	m.hdr[1] = src;
	return ssemu_ep_send(s->eps[src], &m);
}

/* Drain every endpoint's events; returns RECVs seen. */
static uint64_t drain(struct sim *s)
{
	struct ssemu_event ev[64];
	uint64_t i, got = 0;
	int k, n;

	for (i = 0; i < s->n; i++) {
		while ((n = ssemu_ep_poll(s->eps[i], ev, 64)) > 0) {
			for (k = 0; k < n; k++) {
				if (ev[k].type == SSEMU_EV_SEND_DONE) {
					if (ev[k].status)
						s->failed++;
					continue;
				}
				double l = (double)(ev[k].time - ev[k].hdr[0]) /
					   SSEMU_PS_PER_NS;

				ssemu_samples_add(&s->lat, l);
				if (!s->received) {
					s->first_rx = ev[k].time;
					s->first_bytes = ev[k].len;
				}
				s->last_rx = ev[k].time;
				s->received++;
				s->rx_bytes += ev[k].len;
				got++;
				if (s->csv)
					fprintf(s->csv,
						"%" PRIu64 ",%" PRIu64 ",%" PRIu64
						",%" PRIu64 ",%" PRIu64 ",%.3f\n",
						ev[k].hdr[1], i, ev[k].len,
						ev[k].hdr[0], ev[k].time, l);
				ssemu_event_release(s->eps[i], &ev[k]);
			}
		}
	}
	return got;
}

/* Let everything in flight arrive, then take the last events. */
static int finish(struct sim *s)
{
	int ret;

	while (!ssemu_fabric_idle(s->fab)) {
		ret = ssemu_fabric_progress(s->fab, 65536);
		if (ret < 0)
			return ret;
		drain(s);
	}
	drain(s);
	return 0;
}

/* A progress line on stderr at most twice a second (model time, share of
 * the run), rewritten in place; @done writes the final one. */
static void progress(struct sim *s, double frac, bool done)
{
	double w;

	if (!s->o.progress)
		return;
	w = wall_s();
	if (!done && w - s->prog_last < 0.5)
		return;
	s->prog_last = w;
	fprintf(stderr, "\rsim: model time %.3f us, %5.1f%% of the run, "
		"%" PRIu64 " messages sent ",
		(double)ssemu_fabric_now(s->fab) / SSEMU_PS_PER_US,
		100.0 * (frac < 0 ? 0 : frac > 1 ? 1 : frac), s->sent);
	if (done)	/* the last line stays */
		fprintf(stderr, "\n");
	fflush(stderr);
}

static int run_open_loop(struct sim *s)
{
	ssemu_time_t end = (ssemu_time_t)(s->o.time_us * SSEMU_PS_PER_US);
	ssemu_time_t t, tmin;
	uint64_t i, first = s->o.pattern == PAT_INCAST ? 1 : 0, spin;
	uint64_t nsrc = s->o.sources ? SSEMU_MIN(s->o.sources + first, s->n) :
				       s->n;
	int ret;

	for (i = first; i < nsrc; i++)
		s->next[i] = gap(s);
	for (;;) {
		tmin = UINT64_MAX;
		for (i = first; i < nsrc; i++)
			if (s->next[i] < tmin)
				tmin = s->next[i];
		if (s->o.messages ? s->sent >= s->o.messages : tmin >= end)
			break;
		ret = ssemu_fabric_run_until(s->fab, tmin);
		if (ret)
			return ret;
		progress(s, s->o.messages ? (double)s->sent / s->o.messages :
					    (double)tmin / (double)end, false);
		/* Event times are stamped by the model, so draining now and
		 * then loses nothing (overflowing rings queue in the model). */
		if (s->sent - s->drained_at >= 256) {
			drain(s);
			s->drained_at = s->sent;
		}
		t = ssemu_fabric_now(s->fab);
		for (i = first; i < nsrc; i++) {
			if (s->next[i] > t)
				continue;
			spin = 0;
			while ((ret = post(s, i, pick_dest(s, i))) == -EAGAIN) {
				/* the source is out of slots: let it drain */
				ssemu_fabric_progress(s->fab, 1024);
				drain(s);
				if (++spin > 1000000)
					return -EDEADLK;
			}
			if (ret)
				return ret;
			s->sent++;
			s->next[i] += gap(s);
		}
	}
	return finish(s);
}

static int run_pingpong(struct sim *s)
{
	uint64_t iters = s->o.messages ? s->o.messages : 1000, k;
	uint64_t before;
	int ret;

	for (k = 0; k < iters; k++) {
		uint64_t src = k & 1;

		if (!(k & 255))
			progress(s, (double)k / (double)iters, false);
		ret = post(s, src, src ^ 1);
		if (ret)
			return ret;
		s->sent++;
		before = s->received;
		while (s->received == before) {
			ret = ssemu_fabric_progress(s->fab, 65536);
			if (ret < 0)
				return ret;
			drain(s);
			if (ret == 0 && s->received == before &&
			    ssemu_fabric_idle(s->fab))
				return -EIO;
		}
	}
	return finish(s);
}

/* Payload delivered from the first arrival to the last, in Gb/s. */
static double sim_gbps(const struct sim *s, double *span_ns)
{
	double span = (double)(s->last_rx - s->first_rx) / SSEMU_PS_PER_NS;

	if (span_ns)
		*span_ns = span;
	return span > 0 ? (double)(s->rx_bytes - s->first_bytes) * 8.0 / span :
			  0;
}

static void report(struct sim *s)
{
	struct ssemu_fabric_stats st;
	struct ssemu_latency sl;
	double span, gbps, mean;
	char note[64];

	ssemu_fabric_stats(s->fab, &st);
	ssemu_fabric_switch_latency(s->fab, &sl);
	ssemu_samples_sort(&s->lat);
	gbps = sim_gbps(s, &span);

	printf("fabric: preset %s, %u groups x %u switches x %u endpoints "
	       "(+%u global%s), %" PRIu64 " endpoints used\n",
	       s->cfg.preset[0] ? s->cfg.preset : "(file)",
	       s->cfg.topo.groups, s->cfg.topo.switches_per_group,
	       s->cfg.topo.endpoints_per_switch,
	       s->cfg.topo.globals_per_switch,
	       ssemu_cli_links_note(&s->cfg, note, sizeof(note)), s->n);
	printf("traffic: pattern %s, %" PRIu64 " B messages, load %.3f, "
	       "class %s, seed %" PRIu64 "\n",
	       pattern_names[s->o.pattern], s->o.size, s->o.load,
	       s->cfg.tclass[s->o.tclass].name, s->cfg.seed);
	printf("policies: routing %s, congestion control %s, arbitration "
	       "%s\n", s->cfg.routing, s->cfg.cc, s->cfg.arb);
	printf("messages: sent %" PRIu64 ", received %" PRIu64
	       ", failed %" PRIu64 "\n",
	       s->sent, s->received, s->failed);
	mean = ssemu_samples_mean(&s->lat);
	printf("latency_ns: mean %.1f p50 %.1f p99 %.1f max %.1f\n", mean,
	       ssemu_samples_pct(&s->lat, 50), ssemu_samples_pct(&s->lat, 99),
	       s->lat.n ? s->lat.v[s->lat.n - 1] : 0.0);
	printf("throughput: %.3f Gb/s delivered over %.3f us "
	       "(%.3f Gb/s per receiving endpoint)\n",
	       gbps, span / 1000.0,
	       s->o.pattern == PAT_INCAST ? gbps :
	       gbps / (double)(s->n ? s->n : 1));
	printf("switch_latency_ns: hops %" PRIu64 " mean %.1f p50 %.0f "
	       "p99 %.0f max %.0f\n",
	       sl.count, sl.mean_ns, sl.p50_ns, sl.p99_ns, sl.max_ns);
	printf("model: time %.3f us, events %" PRIu64 ", switches modelled %"
	       PRIu64 "\n",
	       (double)st.now / SSEMU_PS_PER_US, st.events,
	       st.switches_instantiated);
}

static int sim_setup(struct sim *s)
{
	uint64_t nports, i, j, tmp;
	int ret;

	ret = ssemu_cli_config("sim", &s->o.fab, &s->cfg);
	if (ret)
		return ret;
	if (s->o.tel_interval_us >= 0)
		s->cfg.tel_interval = (ssemu_time_t)(s->o.tel_interval_us *
						     SSEMU_PS_PER_US + 0.5);
	if (s->o.tclass == UINT32_MAX)
		s->o.tclass = s->cfg.default_tclass;
	if (s->o.tclass >= s->cfg.ntclass) {
		fprintf(stderr, "sim: --tclass %u: the fabric has %u classes\n",
			s->o.tclass, s->cfg.ntclass);
		return -EINVAL;
	}
	nports = ssemu_config_nports(&s->cfg);
	s->n = s->o.nendpoints ? s->o.nendpoints : nports;
	if (s->o.pattern == PAT_PINGPONG)
		s->n = 2;
	if (s->n > nports) {
		fprintf(stderr, "sim: --endpoints %" PRIu64 ": the fabric has "
			"%" PRIu64 "\n", s->n, nports);
		return -EINVAL;
	}
	if (s->n > 65536) {
		fprintf(stderr, "sim: %" PRIu64 " endpoints: this tool models "
			"at most 65536 at once (use --endpoints)\n", s->n);
		return -EINVAL;
	}
	/* One endpoint per NIC, sized for this run. */
	ssemu_cli_size_fabric(&s->cfg, s->n, s->o.size, 256);
	ret = ssemu_cli_open("sim", &s->cfg, s->n, NULL, &s->fab, &s->nics,
			     &s->eps);
	if (ret)
		return ret;
	s->next = calloc(s->n, sizeof(*s->next));
	s->dest = calloc(s->n, sizeof(*s->dest));
	s->payload = calloc(1, s->o.size ? s->o.size : 1);
	if (!s->next || !s->dest || !s->payload)
		return -ENOMEM;
	ssemu_rng_seed(&s->rng, s->cfg.seed, 0x51);
	s->prog_last = wall_s();	/* the first line after half a second */
	/* A random derangement for the permutation pattern. */
	for (i = 0; i < s->n; i++)
		s->dest[i] = i;
	for (i = s->n - 1; i > 0; i--) {
		j = ssemu_rng_below(&s->rng, i);	/* Sattolo: one cycle */
		tmp = s->dest[i];
		s->dest[i] = s->dest[j];
		s->dest[j] = tmp;
	}
	if (s->o.pattern == PAT_ALLTOALL)
		memset(s->dest, 0, s->n * sizeof(*s->dest));
	if (s->o.csv) {
		s->csv = fopen(s->o.csv, "w");
		if (!s->csv) {
			fprintf(stderr, "sim: %s: %s\n", s->o.csv,
				strerror(errno));
			return -errno;
		}
		fprintf(s->csv, "src,dst,bytes,post_ps,recv_ps,latency_ns\n");
	}
	return 0;
}

static void sim_teardown(struct sim *s)
{
	if (s->csv)
		fclose(s->csv);
	ssemu_cli_close(s->n, s->fab, s->nics, s->eps);
	free(s->next);
	free(s->dest);
	free(s->payload);
	ssemu_samples_free(&s->lat);
}

/* The run's telemetry as a trace file for `slingshot-emu report`. */
static int save_telemetry(struct sim *s)
{
	struct ssemu_telemetry *t;
	char err[512];
	int ret;

	ret = ssemu_telemetry_read(s->fab, &t);
	if (ret)
		return ret;
	ret = ssemu_telemetry_save(t, s->o.telemetry, err, sizeof(err));
	if (ret)
		fprintf(stderr, "sim: %s\n", err);
	ssemu_telemetry_free(t);
	return ret;
}

/* One run of @o: its report printed if @print; its throughput in @gbps. */
static int sim_once(const struct sim_opts *o, bool print, double *gbps)
{
	struct sim s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.o = *o;
	ret = sim_setup(&s);
	if (!ret) {
		ret = s.o.pattern == PAT_PINGPONG ? run_pingpong(&s) :
						    run_open_loop(&s);
		progress(&s, 1, true);
		if (!ret && s.o.telemetry)
			ret = save_telemetry(&s);
		if (ret)
			fprintf(stderr, "sim: the run failed: %s\n",
				strerror(-ret));
		else if (print)
			report(&s);
		*gbps = sim_gbps(&s, NULL);
	}
	sim_teardown(&s);
	return ret;
}

int ssemu_cmd_sim(int argc, char **argv)
{
	struct sim_opts o, ov;
	char line[4096];
	char **nargv = NULL;
	double g1 = 0, g2 = 0;
	int nargc, ret;

	ret = ssemu_cli_scenario("sim", argc, argv, line, sizeof(line),
				 &nargv, &nargc);
	if (ret)
		return ret == -ENOMEM ? 1 : 2;
	ret = nargv ? parse_sim(nargc, nargv, &o) : parse_sim(argc, argv, &o);
	free(nargv);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (o.versus) {
		struct ssemu_config c;
		char err[256];

		ssemu_config_preset("switch", &c);
		snprintf(c.routing, sizeof(c.routing), "%s", o.versus);
		if (ssemu_config_validate(&c, err, sizeof(err))) {
			fprintf(stderr, "sim: --versus-routing: %s\n", err);
			return 2;
		}
	}
	ret = sim_once(&o, true, &g1);
	if (!ret && o.versus) {
		ov = o;
		ov.fab.routing = o.versus;
		ov.csv = NULL;
		ov.telemetry = NULL;
		ret = sim_once(&ov, false, &g2);
		if (!ret) {
			printf("versus: routing %s, throughput %.3f Gb/s\n",
			       o.versus, g2);
			printf("throughput_ratio: %.3f\n", g2 > 0 ? g1 / g2 : 0);
		}
	}
	return ret ? 1 : 0;
}
