/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric configuration: built-in presets, validation and the hash that two
 * processes compare before sharing a fabric.  A preset is just a built-in
 * configuration; every value can be changed before the fabric is opened.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ssemu_priv.h"

/* 1 Pb/s: far above any link, and bytes * 8 * 1e12 / rate stays exact */
#define SSEMU_MAX_RATE_BPS 1000000000000000ULL

/*
 * HPE's default HPC traffic-class profile (anchors.md 2.2): LOW_LATENCY is
 * served first and capped at 30%; the others share by their guarantees.
 */
static const struct ssemu_tclass_desc hpe_hpc_profile[] = {
	{ "DEDICATED_ACCESS", 1, 50, 100, false, false, 0 },
	{ "LOW_LATENCY", 2, 15, 30, false, false, 1 },
	{ "BULK_DATA", 1, 15, 100, false, false, 0 },
	{ "BEST_EFFORT", 1, 10, 100, false, false, 0 },
};

struct preset {
	const char *name;
	const char *help;
	struct ssemu_topo_params topo;
};

/*
 * Dragonfly shapes.  "malbec" and "shandy" stand for the paper's systems
 * at their endpoint counts (512 and 1024); "full" is the 64-port full-scale
 * construction: 16 endpoint + 31 local + 17 global ports, 545 groups.
 */
static const struct preset presets[] = {
	{ "switch", "one switch, 16 endpoints", { 1, 1, 16, 0 } },
	{ "2switch", "one group of 2 switches, 32 endpoints", { 1, 2, 16, 0 } },
	{ "2group", "2 groups x 2 switches, 64 endpoints", { 2, 2, 16, 1 } },
	{ "malbec", "4 groups x 8 switches, 512 endpoints", { 4, 8, 16, 4 } },
	{ "shandy", "8 groups x 8 switches, 1024 endpoints", { 8, 8, 16, 4 } },
	{ "full", "545 groups x 32 switches, 279040 endpoints",
	  { 545, 32, 16, 17 } },
};

static const char *const preset_names[] = {
	"switch", "2switch", "2group", "malbec", "shandy", "full", NULL,
};

const char *const *ssemu_config_preset_names(void)
{
	return preset_names;
}

int ssemu_config_preset(const char *name, struct ssemu_config *cfg)
{
	const struct preset *p = NULL;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(presets); i++)
		if (name && !strcmp(presets[i].name, name))
			p = &presets[i];
	if (!p)
		return -ENOENT;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->preset, sizeof(cfg->preset), "%s", p->name);
	cfg->topo = p->topo;
	cfg->topo.local_links_per_pair = 1;
	cfg->edge = (struct ssemu_link_params){ 200000000000ULL,
						5 * SSEMU_PS_PER_NS };
	cfg->local = (struct ssemu_link_params){ 200000000000ULL,
						 10 * SSEMU_PS_PER_NS };
	cfg->global = (struct ssemu_link_params){ 200000000000ULL,
						  100 * SSEMU_PS_PER_NS };
	cfg->mtu = 2048;
	cfg->pkt_overhead = 64;
	cfg->port_buf_pkts = 32;
	cfg->sw_lat_mean = 350 * SSEMU_PS_PER_NS;
	cfg->sw_lat_sd = 15 * SSEMU_PS_PER_NS;
	cfg->sw_lat_min = 300 * SSEMU_PS_PER_NS;
	cfg->sw_lat_max = 400 * SSEMU_PS_PER_NS;
	cfg->nic_window = 64;
	cfg->ntclass = ARRAY_SIZE(hpe_hpc_profile);
	memcpy(cfg->tclass, hpe_hpc_profile, sizeof(hpe_hpc_profile));
	cfg->default_tclass = 3; /* BEST_EFFORT, as cxi defaults */
	snprintf(cfg->routing, sizeof(cfg->routing), "minimal");
	snprintf(cfg->cc, sizeof(cfg->cc), "endpoint-pair");
	snprintf(cfg->arb, sizeof(cfg->arb), "shares");
	cfg->seed = 1;
	cfg->clock = SSEMU_CLOCK_VIRTUAL;
	cfg->dilation = 1.0;
	cfg->max_nics = 64;
	cfg->max_switches = 64;
	/* a threaded application opens an endpoint per thread; what
	 * endpoints cost (message slots, buffers, rings) is in max_eps's
	 * pool, so the per-NIC limit costs 4 bytes per NIC and endpoint */
	cfg->eps_per_nic = 64;
	cfg->max_eps = 256;
	cfg->msgs_per_ep = 256;
	cfg->bufs_per_ep = 16;
	cfg->buf_size = 65536;
	cfg->max_pkts = 65536;
	cfg->max_events = 262144;
	cfg->ev_ring = 1024;
	cfg->tel_interval = 10 * SSEMU_PS_PER_US;
	cfg->tel_samples = 2048;
	return 0;
}

static bool pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

static const char *const pattern_names[SSEMU_MJOB_PATTERNS] = {
	[SSEMU_MJOB_INCAST] = "incast",
	[SSEMU_MJOB_ALLTOALL] = "alltoall",
	[SSEMU_MJOB_BISECTION] = "bisection",
	[SSEMU_MJOB_UNIFORM] = "uniform",
	[SSEMU_MJOB_BURSTY_INCAST] = "bursty-incast",
	[SSEMU_MJOB_RING] = "ring",
	[SSEMU_MJOB_ALLREDUCE] = "allreduce",
};

const char *ssemu_mjob_pattern_name(uint32_t p)
{
	return p < SSEMU_MJOB_PATTERNS ? pattern_names[p] : "?";
}

uint32_t ssemu_gen_neps(const struct ssemu_config *c)
{
	uint64_t n = 0;
	uint32_t j;

	for (j = 0; j < c->nmjobs && j < SSEMU_CONFIG_MJOBS; j++)
		n += c->mjobs[j].endpoints;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

const char *ssemu_mjob_problem(const struct ssemu_config *c, uint32_t j,
			       const char **key, char *buf, size_t len)
{
	const struct ssemu_mjob_desc *d = &c->mjobs[j];
	const char *k = NULL, *why = NULL;

#define PROBLEM(cond, kk, ...)                                   \
	do {                                                     \
		if (!k && (cond)) {                              \
			k = (kk);                                \
			snprintf(buf, len, __VA_ARGS__);         \
			why = buf;                               \
		}                                                \
	} while (0)
	PROBLEM(!d->name[0] || !memchr(d->name, 0, sizeof(d->name)), "name",
		"a modelled job needs a name (at most %d characters)",
		SSEMU_NAME_MAX - 1);
	PROBLEM(!d->endpoints || d->endpoints > SSEMU_RESV_MAX_RANKS,
		"endpoints", "%u out of range [1, %u]", d->endpoints,
		SSEMU_RESV_MAX_RANKS);
	PROBLEM(d->pattern >= SSEMU_MJOB_PATTERNS, "pattern",
		"unknown pattern %u", d->pattern);
	PROBLEM(d->placement == SSEMU_PLACE_FIRST_FREE ||
		d->placement >= SSEMU_PLACE_COUNT ||
		(d->placement == SSEMU_PLACE_MAP &&
		 (!d->nruns || d->nruns > SSEMU_MJOB_RUNS)),
		"placement", "unknown placement %u", d->placement);
	PROBLEM(!d->size || d->size > SSEMU_GEN_MAX_SIZE, "size",
		"%llu bytes out of range [1, %llu]",
		(unsigned long long)d->size,
		(unsigned long long)SSEMU_GEN_MAX_SIZE);
	PROBLEM(!(d->load >= 0) || d->load > 1, "load",
		"%g out of range (0, 1]", d->load);
	PROBLEM(d->pattern != SSEMU_MJOB_ALLREDUCE && d->load == 0 &&
		!d->inflight, "load", "needs a load in (0, 1] or inflight");
	PROBLEM(d->load > 0 && d->inflight, "inflight",
		"a job is open loop (load) or closed loop (inflight), not "
		"both");
	PROBLEM(d->inflight > c->msgs_per_ep, "inflight",
		"%u messages outstanding, an endpoint has %u message slots "
		"(resources.msgs_per_ep)", d->inflight, c->msgs_per_ep);
	PROBLEM(d->stop && d->stop <= d->start, "stop_us",
		"stops at or before it starts");
	PROBLEM(d->tclass >= c->ntclass, "tclass", "no traffic class %u",
		d->tclass);
	PROBLEM((d->pattern == SSEMU_MJOB_INCAST ||
		 d->pattern == SSEMU_MJOB_BURSTY_INCAST) &&
		(!d->targets || d->targets >= d->endpoints), "targets",
		"%u targets of %u endpoints: need 1 to endpoints - 1",
		d->targets, d->endpoints);
	PROBLEM(d->pattern == SSEMU_MJOB_BURSTY_INCAST && !d->burst, "burst",
		"a burst of 0 messages");
	PROBLEM(d->pattern == SSEMU_MJOB_ALLREDUCE && d->endpoints > 1 &&
		!(d->endpoints & (d->endpoints - 1)) &&
		__builtin_ctz(d->endpoints) > SSEMU_GEN_AR_STEPS, "endpoints",
		"allreduce over more than 2^%d ranks", SSEMU_GEN_AR_STEPS);
#undef PROBLEM
	*key = k;
	return why;
}

/* The modelled jobs of @cfg, each and together. */
static int mjobs_check(const struct ssemu_config *cfg, char *err,
		       size_t errlen)
{
	uint32_t j, n = ssemu_gen_neps(cfg);
	const char *key;
	char why[160];

	if (cfg->nmjobs > SSEMU_CONFIG_MJOBS) {
		snprintf(err, errlen, "%u modelled jobs, at most %d",
			 cfg->nmjobs, SSEMU_CONFIG_MJOBS);
		return -EINVAL;
	}
	for (j = 0; j < cfg->nmjobs; j++) {
		if (ssemu_mjob_problem(cfg, j, &key, why, sizeof(why))) {
			snprintf(err, errlen, "modelled job %u: %s: %s", j,
				 key, why);
			return -EINVAL;
		}
	}
	if (!n)
		return 0;
	if (n > ssemu_config_nports(cfg) || n > cfg->max_nics ||
	    n > ssemu_config_neps(cfg)) {
		snprintf(err, errlen, "modelled jobs: %u endpoints, more than "
			 "the fabric's %llu ports, %u NICs "
			 "(resources.max_nics) or %u endpoint slots "
			 "(resources.max_eps) take", n,
			 (unsigned long long)ssemu_config_nports(cfg),
			 cfg->max_nics, ssemu_config_neps(cfg));
		return -EINVAL;
	}
	return 0;
}

int ssemu_config_validate(const struct ssemu_config *cfg, char *err,
			  size_t errlen)
{
	struct ssemu_topo topo;
	unsigned min_sum = 0;
	uint32_t i;
	int ret;

	if (!cfg) {
		snprintf(err, errlen, "no configuration");
		return -EINVAL;
	}
	ret = ssemu_topo_init(&topo, &cfg->topo, err, errlen);
	if (ret)
		return ret;
	ret = ssemu_auth_config_check(cfg, err, errlen);
	if (ret)
		return ret;
#define CHECK(cond, ...)                                \
	do {                                            \
		if (!(cond)) {                          \
			snprintf(err, errlen, __VA_ARGS__); \
			return -EINVAL;                 \
		}                                       \
	} while (0)
	CHECK(cfg->edge.rate_bps && cfg->local.rate_bps &&
		      cfg->global.rate_bps,
	      "link rates must be positive");
	CHECK(cfg->edge.rate_bps <= SSEMU_MAX_RATE_BPS &&
		      cfg->local.rate_bps <= SSEMU_MAX_RATE_BPS &&
		      cfg->global.rate_bps <= SSEMU_MAX_RATE_BPS,
	      "link rates above %llu Gb/s are not modelled",
	      SSEMU_MAX_RATE_BPS / 1000000000ULL);
	CHECK(cfg->mtu >= 64 && cfg->mtu <= 65536,
	      "mtu %u out of range [64, 65536]", cfg->mtu);
	CHECK(cfg->pkt_overhead <= 4096,
	      "packet overhead %u out of range [0, 4096]", cfg->pkt_overhead);
	CHECK(cfg->port_buf_pkts >= 1 && cfg->port_buf_pkts <= 65535,
	      "port_buf_pkts %u out of range [1, 65535]", cfg->port_buf_pkts);
	CHECK(cfg->sw_lat_min <= cfg->sw_lat_mean &&
		      cfg->sw_lat_mean <= cfg->sw_lat_max,
	      "switch latency must satisfy min <= mean <= max");
	CHECK(cfg->nic_window >= 1 && cfg->nic_window <= 65535,
	      "nic_window %u out of range [1, 65535]", cfg->nic_window);
	CHECK(cfg->ntclass >= 1 && cfg->ntclass <= SSEMU_MAX_TCLASS,
	      "ntclass %u out of range [1, %d]", cfg->ntclass,
	      SSEMU_MAX_TCLASS);
	CHECK(cfg->default_tclass < cfg->ntclass,
	      "default traffic class %u does not exist", cfg->default_tclass);
	/* denied classes fall back to the default one: it must be usable */
	CHECK(!cfg->tclass[cfg->default_tclass].denied,
	      "default traffic class %s is not allowed",
	      cfg->tclass[cfg->default_tclass].name);
	CHECK(cfg->tclass_denied == SSEMU_TCLASS_DENIED_ERROR ||
		      cfg->tclass_denied == SSEMU_TCLASS_DENIED_WARN,
	      "unknown tclass_denied policy %u", cfg->tclass_denied);
	for (i = 0; i < cfg->ntclass; i++) {
		const struct ssemu_tclass_desc *tc = &cfg->tclass[i];

		CHECK(tc->name[0], "traffic class %u has no name", i);
		CHECK(tc->min_pct <= tc->max_pct && tc->max_pct <= 100 &&
			      tc->max_pct > 0,
		      "traffic class %s: need 0 <= min <= max <= 100, max > 0",
		      tc->name);
		min_sum += tc->min_pct;
	}
	CHECK(min_sum <= 100,
	      "traffic classes: minimum bandwidth shares add up to %u%% "
	      "(more than 100%%)", min_sum);
	CHECK(ssemu_route_index(cfg->routing) >= 0, "unknown routing algorithm '%s'",
	      cfg->routing);
	CHECK(ssemu_cc_index(cfg->cc) >= 0, "unknown congestion control '%s'",
	      cfg->cc);
	CHECK(ssemu_arb_index(cfg->arb) >= 0, "unknown arbitration '%s'", cfg->arb);
	CHECK(cfg->clock == SSEMU_CLOCK_VIRTUAL ||
		      cfg->clock == SSEMU_CLOCK_REALTIME,
	      "unknown clock mode %d", (int)cfg->clock);
	CHECK(cfg->clock == SSEMU_CLOCK_VIRTUAL ||
		      (cfg->dilation >= 1e-3 && cfg->dilation <= 1e9),
	      "dilation %g out of range [0.001, 1e9]", cfg->dilation);
	CHECK(cfg->group_windows <= 1, "group_windows %u is not 0 or 1",
	      cfg->group_windows);
	CHECK(!cfg->group_windows || cfg->clock == SSEMU_CLOCK_VIRTUAL,
	      "group windows need the virtual clock");
	CHECK(!cfg->group_windows || ssemu_config_group_window(cfg) > 0,
	      "group windows need global links with a delay");
	CHECK(!cfg->group_windows ||
		      ssemu_config_group_window(cfg) > cfg->topo.groups,
	      "group windows need a window (%llu ps) longer than the "
	      "groups are many (%u)",
	      (unsigned long long)ssemu_config_group_window(cfg),
	      cfg->topo.groups);
	CHECK(!cfg->group_windows || !cfg->tel_interval ||
		      cfg->tel_interval % ssemu_config_group_window(cfg) == 0,
	      "group windows need a telemetry interval (%llu ps) that is "
	      "a whole number of windows (%llu ps)",
	      (unsigned long long)cfg->tel_interval,
	      (unsigned long long)ssemu_config_group_window(cfg));
	CHECK(cfg->max_nics >= 1 && cfg->max_nics <= SSEMU_MAX_NICS,
	      "max_nics %u out of range [1, %u]", cfg->max_nics,
	      SSEMU_MAX_NICS);
	CHECK(cfg->max_pairs <= SSEMU_MAX_PAIRS,
	      "max_pairs %u out of range [0, %u]", cfg->max_pairs,
	      SSEMU_MAX_PAIRS);
	CHECK(cfg->max_switches >= 1 && cfg->max_switches <= 65536,
	      "max_switches %u out of range [1, 65536]", cfg->max_switches);
	CHECK(cfg->eps_per_nic >= 1 && cfg->eps_per_nic <= 256,
	      "eps_per_nic %u out of range [1, 256]", cfg->eps_per_nic);
	CHECK(pow2(cfg->msgs_per_ep) && cfg->msgs_per_ep >= 4 &&
		      cfg->msgs_per_ep <= 65536,
	      "msgs_per_ep %u must be a power of two in [4, 65536]",
	      cfg->msgs_per_ep);
	CHECK(pow2(cfg->ev_ring) && cfg->ev_ring >= SSEMU_EV_RING_MIN &&
		      cfg->ev_ring <= SSEMU_EV_RING_MAX,
	      "ev_ring %u must be a power of two in [%u, %u]", cfg->ev_ring,
	      SSEMU_EV_RING_MIN, SSEMU_EV_RING_MAX);
	CHECK(cfg->bufs_per_ep <= SSEMU_MAX_BUFS,
	      "bufs_per_ep %u out of range [0, %d]", cfg->bufs_per_ep,
	      SSEMU_MAX_BUFS);
	CHECK(cfg->buf_size >= SSEMU_INLINE_MAX && cfg->buf_size <= (1u << 24),
	      "buf_size %u out of range [%d, 16 MiB]", cfg->buf_size,
	      SSEMU_INLINE_MAX);
	CHECK(cfg->max_pkts >= 16 && cfg->max_pkts < SSEMU_NONE,
	      "max_pkts %u too small", cfg->max_pkts);
	CHECK(cfg->max_events >= 64 && cfg->max_events <= SSEMU_ENGINE_MAX_CAP,
	      "max_events %u out of range [64, %u]", cfg->max_events,
	      SSEMU_ENGINE_MAX_CAP);
	CHECK(cfg->max_eps <= SSEMU_MAX_EPS,
	      "max_eps %u out of range [0, %u]", cfg->max_eps, SSEMU_MAX_EPS);
	CHECK((uint64_t)ssemu_config_neps(cfg) * cfg->msgs_per_ep < SSEMU_NONE,
	      "%s x msgs_per_ep too large",
	      cfg->max_eps ? "max_eps" : "max_nics x eps_per_nic");
	CHECK(!cfg->tel_interval ||
		      (cfg->tel_interval >= 100 * SSEMU_PS_PER_NS &&
		       cfg->tel_interval <= SSEMU_PS_PER_S),
	      "telemetry interval %.3f us out of range [0.1 us, 1 s] "
	      "(0: no time series)",
	      (double)cfg->tel_interval / SSEMU_PS_PER_US);
	CHECK(!cfg->tel_interval || (cfg->tel_samples >= 16 &&
				     cfg->tel_samples <= SSEMU_TEL_MAX_SAMPLES),
	      "telemetry samples %u out of range [16, %u]", cfg->tel_samples,
	      SSEMU_TEL_MAX_SAMPLES);
#undef CHECK
	return mjobs_check(cfg, err, errlen);
}

uint64_t ssemu_config_nports(const struct ssemu_config *cfg)
{
	return (uint64_t)cfg->topo.groups * cfg->topo.switches_per_group *
	       cfg->topo.endpoints_per_switch;
}

/*
 * Every field that shapes a fabric, once: the hash two processes compare
 * and the message that names the first difference both come from here.
 */
#define FLD(name, field) \
	{ name, offsetof(struct ssemu_config, field), \
	  sizeof(((struct ssemu_config *)0)->field), false }
#define STR(name, field) \
	{ name, offsetof(struct ssemu_config, field), \
	  sizeof(((struct ssemu_config *)0)->field), true }

static const struct cfg_field {
	const char *name;
	size_t off, size;
	bool str;
} cfg_fields[] = {
	FLD("topology.groups", topo.groups),
	FLD("topology.switches_per_group", topo.switches_per_group),
	FLD("topology.endpoints_per_switch", topo.endpoints_per_switch),
	FLD("topology.globals_per_switch", topo.globals_per_switch),
	FLD("topology.local_links_per_pair", topo.local_links_per_pair),
	FLD("links.edge.rate", edge.rate_bps),
	FLD("links.edge.delay", edge.delay),
	FLD("links.local.rate", local.rate_bps),
	FLD("links.local.delay", local.delay),
	FLD("links.global.rate", global.rate_bps),
	FLD("links.global.delay", global.delay),
	FLD("mtu", mtu),
	FLD("packet_overhead", pkt_overhead),
	FLD("port_buffer_packets", port_buf_pkts),
	FLD("switch_latency.mean", sw_lat_mean),
	FLD("switch_latency.sd", sw_lat_sd),
	FLD("switch_latency.min", sw_lat_min),
	FLD("switch_latency.max", sw_lat_max),
	FLD("nic_window", nic_window),
	FLD("traffic_classes (count)", ntclass),
	FLD("default_tclass", default_tclass),
	FLD("tclass_denied", tclass_denied),
	STR("routing", routing),
	STR("congestion_control", cc),
	STR("arbitration", arb),
	FLD("seed", seed),
	FLD("clock", clock),
	FLD("dilation", dilation),
	FLD("resources.max_nics", max_nics),
	FLD("resources.max_switches", max_switches),
	FLD("resources.eps_per_nic", eps_per_nic),
	FLD("resources.max_eps", max_eps),
	FLD("resources.msgs_per_ep", msgs_per_ep),
	FLD("resources.bufs_per_ep", bufs_per_ep),
	FLD("resources.buf_size", buf_size),
	FLD("resources.max_pkts", max_pkts),
	FLD("resources.max_events", max_events),
	FLD("resources.max_pairs", max_pairs),
	FLD("resources.ev_ring", ev_ring),
	FLD("telemetry.interval (ps)", tel_interval),
	FLD("telemetry.samples", tel_samples),
};

static size_t field_len(const struct cfg_field *f, const void *base)
{
	const char *p = (const char *)base + f->off;

	return f->str ? strnlen(p, f->size) : f->size;
}

static bool tclass_equal(const struct ssemu_tclass_desc *a,
			 const struct ssemu_tclass_desc *b)
{
	return !strncmp(a->name, b->name, sizeof(a->name)) &&
	       a->priority == b->priority && a->min_pct == b->min_pct &&
	       a->max_pct == b->max_pct && a->ordered == b->ordered &&
	       a->lossy == b->lossy && a->route_bias == b->route_bias &&
	       a->denied == b->denied;
}

int ssemu_config_diff(const struct ssemu_config *a,
		      const struct ssemu_config *b, char *buf, size_t len)
{
	const struct cfg_field *f;
	uint32_t i;

	for (f = cfg_fields; f < cfg_fields + ARRAY_SIZE(cfg_fields); f++) {
		size_t la = field_len(f, a), lb = field_len(f, b);

		if (la == lb && !memcmp((const char *)a + f->off,
					(const char *)b + f->off, la))
			continue;
		if (f->str)
			snprintf(buf, len, "%s is '%.*s', asked for '%.*s'",
				 f->name, (int)la, (const char *)a + f->off,
				 (int)lb, (const char *)b + f->off);
		else if (f->off == offsetof(struct ssemu_config, dilation))
			snprintf(buf, len, "dilation is %g, asked for %g",
				 a->dilation, b->dilation);
		else if (f->off == offsetof(struct ssemu_config, clock))
			snprintf(buf, len, "clock is %s, asked for %s",
				 a->clock ? "realtime" : "virtual",
				 b->clock ? "realtime" : "virtual");
		else {
			uint64_t va = 0, vb = 0;

			memcpy(&va, (const char *)a + f->off, f->size);
			memcpy(&vb, (const char *)b + f->off, f->size);
			snprintf(buf, len, "%s is %llu, asked for %llu",
				 f->name, (unsigned long long)va,
				 (unsigned long long)vb);
		}
		return 1;
	}
	for (i = 0; i < a->ntclass && i < SSEMU_MAX_TCLASS; i++) {
		if (!tclass_equal(&a->tclass[i], &b->tclass[i])) {
			snprintf(buf, len, "traffic class %u is %s (priority "
				 "%u, min %u%%, max %u%%%s), asked for %s "
				 "(priority %u, min %u%%, max %u%%%s)", i,
				 a->tclass[i].name, a->tclass[i].priority,
				 a->tclass[i].min_pct, a->tclass[i].max_pct,
				 a->tclass[i].denied ? ", not allowed" : "",
				 b->tclass[i].name, b->tclass[i].priority,
				 b->tclass[i].min_pct, b->tclass[i].max_pct,
				 b->tclass[i].denied ? ", not allowed" : "");
			return 1;
		}
	}
	if (a->nservices != b->nservices ||
	    memcmp(a->services, b->services,
		   SSEMU_MIN(a->nservices, (uint32_t)SSEMU_CONFIG_SERVICES) *
		   sizeof(a->services[0]))) {
		snprintf(buf, len, "services differ (%u, asked for %u)",
			 a->nservices, b->nservices);
		return 1;
	}
	if (a->nmjobs != b->nmjobs ||
	    memcmp(a->mjobs, b->mjobs,
		   SSEMU_MIN(a->nmjobs, (uint32_t)SSEMU_CONFIG_MJOBS) *
		   sizeof(a->mjobs[0]))) {
		snprintf(buf, len, "modelled jobs differ (%u, asked for %u)",
			 a->nmjobs, b->nmjobs);
		return 1;
	}
	return 0;
}

/* FNV-1a over the fields above (never over padding). */
static void h_bytes(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--) {
		*h ^= *b++;
		*h *= 0x100000001b3ULL;
	}
}

#define H(h, field) h_bytes((h), &(field), sizeof(field))

uint64_t ssemu_config_hash(const struct ssemu_config *cfg)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const struct cfg_field *f;
	uint32_t i;

	for (f = cfg_fields; f < cfg_fields + ARRAY_SIZE(cfg_fields); f++)
		h_bytes(&h, (const char *)cfg + f->off, field_len(f, cfg));
	for (i = 0; i < cfg->ntclass && i < SSEMU_MAX_TCLASS; i++) {
		const struct ssemu_tclass_desc *tc = &cfg->tclass[i];

		h_bytes(&h, tc->name, strnlen(tc->name, sizeof(tc->name)));
		H(&h, tc->priority);
		H(&h, tc->min_pct);
		H(&h, tc->max_pct);
		H(&h, tc->ordered);
		H(&h, tc->lossy);
		H(&h, tc->route_bias);
		H(&h, tc->denied);
	}
	/* (none: the hash of a fabric without services of its own) */
	for (i = 0; i < cfg->nservices && i < SSEMU_CONFIG_SERVICES; i++)
		h_bytes(&h, &cfg->services[i], sizeof(cfg->services[i]));
	/* (none: the hash of a fabric without modelled jobs) */
	for (i = 0; i < cfg->nmjobs && i < SSEMU_CONFIG_MJOBS; i++)
		h_bytes(&h, &cfg->mjobs[i], sizeof(cfg->mjobs[i]));
	return h;
}
