/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric configuration files, parsed with libconfig (no hand-written
 * parser).  A file may start from a preset ("preset = ...") and override any
 * value; every key is listed in the tables below and documented in
 * docs/fabric-config.md.  Unknown keys and bad values are reported with
 * file, line and key, and nothing half-parsed is returned.
 */
#include <errno.h>
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

#include "ssemu_priv.h"

enum kind { K_U32, K_U64, K_NS, K_GBPS, K_DOUBLE, K_STR, K_BOOL, K_PCT,
	    K_I8, K_U8, K_US, K_NBOOL /* stored negated */ };

struct key {
	const char *name;
	enum kind kind;
	size_t off;
	uint64_t lo, hi;	/* integer bounds */
};

#define F(field) offsetof(struct ssemu_config, field)

static const struct key top_keys[] = {
	{ "mtu", K_U32, F(mtu), 64, 65536 },
	{ "packet_overhead", K_U32, F(pkt_overhead), 0, 4096 },
	{ "port_buffer_packets", K_U32, F(port_buf_pkts), 1, 65535 },
	{ "nic_window", K_U32, F(nic_window), 1, 65535 },
	{ "routing", K_STR, F(routing), 0, 0 },
	{ "congestion_control", K_STR, F(cc), 0, 0 },
	{ "arbitration", K_STR, F(arb), 0, 0 },
	{ "seed", K_U64, F(seed), 0, UINT64_MAX },
	{ "dilation", K_DOUBLE, F(dilation), 0, 0 },
};

static const struct key topo_keys[] = {
	{ "groups", K_U32, F(topo.groups), 1, 1u << 20 },
	{ "switches_per_group", K_U32, F(topo.switches_per_group), 1, 64 },
	{ "endpoints_per_switch", K_U32, F(topo.endpoints_per_switch), 1, 64 },
	{ "globals_per_switch", K_U32, F(topo.globals_per_switch), 0, 64 },
	{ "local_links_per_pair", K_U32, F(topo.local_links_per_pair), 1, 63 },
};

static const struct key lat_keys[] = {
	{ "mean_ns", K_NS, F(sw_lat_mean), 0, 0 },
	{ "sd_ns", K_NS, F(sw_lat_sd), 0, 0 },
	{ "min_ns", K_NS, F(sw_lat_min), 0, 0 },
	{ "max_ns", K_NS, F(sw_lat_max), 0, 0 },
};

static const struct key res_keys[] = {
	{ "max_nics", K_U32, F(max_nics), 1, SSEMU_MAX_NICS },
	{ "max_switches", K_U32, F(max_switches), 1, 65536 },
	{ "eps_per_nic", K_U32, F(eps_per_nic), 1, 256 },
	{ "max_eps", K_U32, F(max_eps), 0, SSEMU_MAX_EPS },
	{ "msgs_per_ep", K_U32, F(msgs_per_ep), 4, 65536 },
	{ "bufs_per_ep", K_U32, F(bufs_per_ep), 0, SSEMU_MAX_BUFS },
	{ "buf_size", K_U32, F(buf_size), SSEMU_INLINE_MAX, 1u << 24 },
	{ "max_pkts", K_U32, F(max_pkts), 16, 1u << 30 },
	{ "max_events", K_U32, F(max_events), 64, SSEMU_ENGINE_MAX_CAP },
	{ "max_pairs", K_U32, F(max_pairs), 0, SSEMU_MAX_PAIRS },
	{ "ev_ring", K_U32, F(ev_ring), SSEMU_EV_RING_MIN, SSEMU_EV_RING_MAX },
};

static const struct key tel_keys[] = {
	{ "interval_us", K_US, F(tel_interval), 0, 0 },
	{ "samples", K_U32, F(tel_samples), 16, SSEMU_TEL_MAX_SAMPLES },
};

#define L(field) offsetof(struct ssemu_link_params, field)
static const struct key link_keys[] = {
	{ "rate_gbps", K_GBPS, L(rate_bps), 0, 0 },
	{ "delay_ns", K_NS, L(delay), 0, 0 },
};

#define T(field) offsetof(struct ssemu_tclass_desc, field)
static const struct key tc_keys[] = {
	{ "name", K_STR, T(name), 0, 0 },
	{ "priority", K_U8, T(priority), 0, 255 },
	{ "min_pct", K_PCT, T(min_pct), 0, 100 },
	{ "max_pct", K_PCT, T(max_pct), 0, 100 },
	{ "ordered", K_BOOL, T(ordered), 0, 0 },
	{ "lossy", K_BOOL, T(lossy), 0, 0 },
	{ "route_bias", K_I8, T(route_bias), 0, 0 },
	{ "allowed", K_NBOOL, T(denied), 0, 0 },
};

struct ctx {
	const char *path;
	char *err;
	size_t errlen;
};

static int fail(struct ctx *c, const config_setting_t *s, const char *key,
		const char *what)
{
	snprintf(c->err, c->errlen, "%s:%d: %s: %s", c->path,
		 s ? config_setting_source_line(s) : 0, key, what);
	return -EINVAL;
}

static const struct key *find_key(const struct key *keys, size_t n,
				  const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static int get_number(struct ctx *c, const config_setting_t *s,
		      const char *name, double *out)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
		*out = config_setting_get_int(s);
		return 0;
	case CONFIG_TYPE_INT64:
		*out = (double)config_setting_get_int64(s);
		return 0;
	case CONFIG_TYPE_FLOAT:
		*out = config_setting_get_float(s);
		return 0;
	default:
		return fail(c, s, name, "expected a number");
	}
}

static int set_value(struct ctx *c, const config_setting_t *s,
		     const struct key *k, void *base, size_t strsize)
{
	char *p = (char *)base + k->off;
	const char *str;
	long long i64;
	double d;
	int ret;

	switch (k->kind) {
	case K_STR:
		str = config_setting_get_string(s);
		if (!str)
			return fail(c, s, k->name, "expected a string");
		if (strlen(str) >= strsize)
			return fail(c, s, k->name, "string too long");
		snprintf(p, strsize, "%s", str);
		return 0;
	case K_BOOL:
	case K_NBOOL:
		if (config_setting_type(s) != CONFIG_TYPE_BOOL)
			return fail(c, s, k->name, "expected true or false");
		*(bool *)p = !!config_setting_get_bool(s) ^
			     (k->kind == K_NBOOL);
		return 0;
	case K_NS:
	case K_US:
	case K_GBPS:
	case K_DOUBLE:
		ret = get_number(c, s, k->name, &d);
		if (ret)
			return ret;
		if (!(d >= 0) || d > 1e12 ||
		    (k->kind == K_GBPS && (d > 1e6 || d < 1e-6)))
			return fail(c, s, k->name, k->kind == K_GBPS ?
				    "out of range [1e-6, 1e6] Gb/s" :
				    "out of range");
		if (k->kind == K_NS)
			*(ssemu_time_t *)p = (ssemu_time_t)llround(d * 1000.0);
		else if (k->kind == K_US)
			*(ssemu_time_t *)p = (ssemu_time_t)llround(d * 1e6);
		else if (k->kind == K_GBPS)
			*(uint64_t *)p = (uint64_t)llround(d * 1e9);
		else
			*(double *)p = d;
		return 0;
	case K_I8:
		if (config_setting_type(s) != CONFIG_TYPE_INT)
			return fail(c, s, k->name, "expected an integer");
		i64 = config_setting_get_int(s);
		if (i64 < -128 || i64 > 127)
			return fail(c, s, k->name, "out of range [-128, 127]");
		*(int8_t *)p = (int8_t)i64;
		return 0;
	default:
		if (config_setting_type(s) == CONFIG_TYPE_INT)
			i64 = config_setting_get_int(s);
		else if (config_setting_type(s) == CONFIG_TYPE_INT64)
			i64 = config_setting_get_int64(s);
		else
			return fail(c, s, k->name, "expected an integer");
		if (i64 < 0 || (uint64_t)i64 < k->lo || (uint64_t)i64 > k->hi) {
			char what[96];

			snprintf(what, sizeof(what), "%lld out of range "
				 "[%llu, %llu]", i64,
				 (unsigned long long)k->lo,
				 (unsigned long long)k->hi);
			return fail(c, s, k->name, what);
		}
		if (k->kind == K_U64)
			*(uint64_t *)p = (uint64_t)i64;
		else if (k->kind == K_U32)
			*(uint32_t *)p = (uint32_t)i64;
		else
			*(uint8_t *)p = (uint8_t)i64;
		return 0;
	}
}

/* Apply every member of group @g through @keys; unknown keys fail. */
static int apply_group(struct ctx *c, const config_setting_t *g,
		       const char *gname, const struct key *keys, size_t n,
		       void *base, size_t strsize)
{
	int i, cnt, ret;

	if (!config_setting_is_group(g))
		return fail(c, g, gname, "expected a group { ... }");
	cnt = config_setting_length(g);
	for (i = 0; i < cnt; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const char *name = config_setting_name(s);
		const struct key *k = find_key(keys, n, name);

		if (!k) {
			char what[128];

			snprintf(what, sizeof(what), "unknown key in %s",
				 gname);
			return fail(c, s, name, what);
		}
		ret = set_value(c, s, k, base, strsize);
		if (ret)
			return ret;
	}
	return 0;
}

static int apply_tclasses(struct ctx *c, const config_setting_t *l,
			  struct ssemu_config *cfg)
{
	int i, n, ret;

	if (!config_setting_is_list(l))
		return fail(c, l, "traffic_classes",
			    "expected a list ( { ... }, ... )");
	n = config_setting_length(l);
	if (n < 1 || n > SSEMU_MAX_TCLASS)
		return fail(c, l, "traffic_classes",
			    "need between 1 and 8 classes");
	char old_default[SSEMU_NAME_MAX];

	/* the default class keeps its name if the new list has it */
	snprintf(old_default, sizeof(old_default), "%s",
		 cfg->tclass[cfg->default_tclass % SSEMU_MAX_TCLASS].name);
	memset(cfg->tclass, 0, sizeof(cfg->tclass));
	for (i = 0; i < n; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct ssemu_tclass_desc *tc = &cfg->tclass[i];

		tc->max_pct = 100;
		ret = apply_group(c, g, "traffic_classes", tc_keys,
				  ARRAY_SIZE(tc_keys), tc, sizeof(tc->name));
		if (ret)
			return ret;
		if (!tc->name[0])
			return fail(c, g, "traffic_classes", "class needs a name");
	}
	cfg->ntclass = (uint32_t)n;
	cfg->default_tclass = 0;
	for (i = 0; i < n; i++)
		if (!strcasecmp(cfg->tclass[i].name, old_default))
			cfg->default_tclass = (uint32_t)i;
	return 0;
}

static int find_tclass(const struct ssemu_config *cfg, const char *name)
{
	uint32_t i;

	for (i = 0; i < cfg->ntclass; i++)
		if (!strcasecmp(cfg->tclass[i].name, name))
			return (int)i;
	return -1;
}

/*
 * Modelled jobs: "modelled_jobs = ( { name = ...; endpoints = ...; ... } )"
 * (the keys: the man page's CONFIGURATION section).  Each problem is named
 * with the line of the key it is about.
 */
#define MJ(field) offsetof(struct ssemu_mjob_desc, field)
static const struct key mjob_keys[] = {
	{ "name", K_STR, MJ(name), 0, 0 },
	{ "endpoints", K_U32, MJ(endpoints), 1, SSEMU_RESV_MAX_RANKS },
	{ "targets", K_U32, MJ(targets), 1, SSEMU_RESV_MAX_RANKS },
	{ "size", K_U64, MJ(size), 1, SSEMU_GEN_MAX_SIZE },
	{ "load", K_DOUBLE, MJ(load), 0, 0 },
	{ "inflight", K_U32, MJ(inflight), 1, 65536 },
	{ "burst", K_U32, MJ(burst), 1, 1u << 20 },
	{ "count", K_U64, MJ(count), 1, UINT64_MAX },
	{ "gap_us", K_US, MJ(gap), 0, 0 },
	{ "start_us", K_US, MJ(start), 0, 0 },
	{ "stop_us", K_US, MJ(stop), 0, 0 },
};

/* "placement": a policy's name or a list of ports (kept as runs). */
static int mjob_placement(struct ctx *c, const config_setting_t *s,
			  struct ssemu_mjob_desc *d, uint8_t *explicit,
			  uint64_t nports)
{
	const char *str;
	int i, n, pol;
	long long p;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		str = config_setting_get_string(s);
		pol = ssemu_place_policy_index(str);
		if (pol != SSEMU_PLACE_LINEAR &&
		    pol != SSEMU_PLACE_INTERLEAVED &&
		    pol != SSEMU_PLACE_RANDOM)
			return fail(c, s, "placement", "expected \"linear\", "
				    "\"interleaved\", \"random\" or a list of "
				    "ports");
		d->placement = (uint32_t)pol;
		return 0;
	}
	if (!config_setting_is_array(s) && !config_setting_is_list(s))
		return fail(c, s, "placement", "expected a policy's name or a "
			    "list of ports");
	n = config_setting_length(s);
	d->placement = SSEMU_PLACE_MAP;
	d->nruns = 0;
	for (i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);

		if (config_setting_type(e) != CONFIG_TYPE_INT)
			return fail(c, s, "placement", "a port is an integer");
		p = config_setting_get_int(e);
		if (p < 0 || (uint64_t)p >= nports)
			return fail(c, s, "placement", "a port outside the "
				    "topology");
		if (explicit[p])
			return fail(c, s, "placement", "a port listed twice, "
				    "or by another modelled job (overlapping "
				    "explicit ports)");
		explicit[p] = 1;
		if (d->nruns && d->run_first[d->nruns - 1] +
					d->run_len[d->nruns - 1] == p) {
			d->run_len[d->nruns - 1]++;
			continue;
		}
		if (d->nruns == SSEMU_MJOB_RUNS)
			return fail(c, s, "placement", "more than 8 runs of "
				    "consecutive ports");
		d->run_first[d->nruns] = (uint32_t)p;
		d->run_len[d->nruns++] = 1;
	}
	if ((uint32_t)n != d->endpoints)
		return fail(c, s, "placement", "not one port per endpoint");
	return 0;
}

/* "pattern" and "tclass" (a class's name or its index). */
static int mjob_names(struct ctx *c, const config_setting_t *g,
		      struct ssemu_mjob_desc *d, const struct ssemu_config *cfg)
{
	const config_setting_t *s;
	const char *str;
	uint32_t p;
	int tc;

	s = config_setting_get_member(g, "pattern");
	if (!s)
		return fail(c, g, "pattern", "a modelled job needs a pattern");
	str = config_setting_get_string(s);
	for (p = 0; str && p < SSEMU_MJOB_PATTERNS; p++)
		if (!strcmp(str, ssemu_mjob_pattern_name(p)))
			break;
	if (!str || p == SSEMU_MJOB_PATTERNS)
		return fail(c, s, "pattern", "unknown pattern (incast, "
			    "alltoall, bisection, uniform, bursty-incast, "
			    "ring, allreduce)");
	d->pattern = p;
	d->tclass = cfg->default_tclass;
	s = config_setting_get_member(g, "tclass");
	if (!s)
		return 0;
	if (config_setting_type(s) == CONFIG_TYPE_INT) {
		tc = config_setting_get_int(s);
		if (tc < 0 || (uint32_t)tc >= cfg->ntclass)
			return fail(c, s, "tclass", "no traffic class of that "
				    "index");
	} else {
		str = config_setting_get_string(s);
		tc = str ? find_tclass(cfg, str) : -1;
		if (tc < 0)
			return fail(c, s, "tclass", "no traffic class of that "
				    "name");
	}
	d->tclass = (uint32_t)tc;
	return 0;
}

static int apply_mjobs(struct ctx *c, const config_setting_t *l,
		       struct ssemu_config *cfg)
{
	uint64_t nports = ssemu_config_nports(cfg), total = 0;
	const config_setting_t *s;
	const char *key, *why;
	uint8_t *explicit;
	char buf[160];
	int i, j, n, ret = 0;

	if (!config_setting_is_list(l))
		return fail(c, l, "modelled_jobs", "expected a list "
			    "( { ... }, ... )");
	n = config_setting_length(l);
	if (n > SSEMU_CONFIG_MJOBS)
		return fail(c, l, "modelled_jobs", "more than 8 modelled jobs");
	explicit = calloc(nports ? nports : 1, 1);
	if (!explicit)
		return fail(c, l, "modelled_jobs", "out of memory");
	memset(cfg->mjobs, 0, sizeof(cfg->mjobs));
	for (i = 0; i < n && !ret; i++) {
		const config_setting_t *g = config_setting_get_elem(l, i);
		struct ssemu_mjob_desc *d = &cfg->mjobs[i];
		int m;

		if (!config_setting_is_group(g)) {
			ret = fail(c, g, "modelled_jobs", "expected a group "
				   "{ ... }");
			break;
		}
		d->targets = 1;
		d->placement = SSEMU_PLACE_LINEAR;
		m = config_setting_length(g);
		for (j = 0; j < m && !ret; j++) {
			const config_setting_t *e;
			const char *name;
			const struct key *k;

			e = config_setting_get_elem(g, j);
			name = config_setting_name(e);
			/* (those three: mjob_placement, mjob_names) */
			if (!strcmp(name, "placement") ||
			    !strcmp(name, "pattern") || !strcmp(name, "tclass"))
				continue;
			k = find_key(mjob_keys, ARRAY_SIZE(mjob_keys), name);
			ret = k ? set_value(c, e, k, d, sizeof(d->name)) :
				  fail(c, e, name,
				       "unknown key in modelled_jobs");
		}
		if (ret)
			break;
		s = config_setting_get_member(g, "endpoints");
		if (!s) {
			ret = fail(c, g, "endpoints", "a modelled job needs "
				   "its number of endpoints");
			break;
		}
		total += d->endpoints;
		if (total > nports || total > cfg->max_nics ||
		    total > ssemu_config_neps(cfg)) {
			snprintf(buf, sizeof(buf), "modelled jobs take %llu "
				 "endpoints, more than the %llu free ports, %u "
				 "NIC slots (resources.max_nics) or %u "
				 "endpoint slots (resources.max_eps) of the "
				 "fabric",
				 (unsigned long long)total,
				 (unsigned long long)nports, cfg->max_nics,
				 ssemu_config_neps(cfg));
			ret = fail(c, s, "endpoints", buf);
			break;
		}
		s = config_setting_get_member(g, "load");
		if (s && !(d->load > 0)) {
			ret = fail(c, s, "load", "out of range (0, 1]");
			break;
		}
		s = config_setting_get_member(g, "placement");
		if (s && (ret = mjob_placement(c, s, d, explicit, nports)))
			break;
		if ((ret = mjob_names(c, g, d, cfg)))
			break;
		why = ssemu_mjob_problem(cfg, (uint32_t)i, &key, buf,
					 sizeof(buf));
		if (why) {
			s = config_setting_get_member(g, key);
			ret = fail(c, s ? s : g, key, why);
		}
		for (j = 0; j < i && !ret; j++)
			if (!strcmp(cfg->mjobs[j].name, d->name))
				ret = fail(c, config_setting_get_member(g,
								       "name"),
					   "name", "two modelled jobs of that "
					   "name");
	}
	cfg->nmjobs = ret ? 0 : (uint32_t)n;
	free(explicit);
	return ret;
}

int ssemu_config_load(const char *path, struct ssemu_config *out, char *err,
		      size_t errlen)
{
	struct ctx c = { path, err, errlen };
	struct ssemu_config cfg;
	const config_setting_t *root, *s;
	const char *str;
	config_t lc;
	int i, n, ret = 0, tc;

	if (!path || !out || !err)
		return -EINVAL;
	config_init(&lc);
	if (!config_read_file(&lc, path)) {
		if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
			snprintf(err, errlen, "%s: cannot read: %s", path,
				 strerror(errno));
		else
			snprintf(err, errlen, "%s:%d: %s", path,
				 config_error_line(&lc), config_error_text(&lc));
		config_destroy(&lc);
		return -EINVAL;
	}
	root = config_root_setting(&lc);
	ssemu_config_preset("switch", &cfg);
	s = config_setting_get_member(root, "preset");
	if (s) {
		str = config_setting_get_string(s);
		if (!str || ssemu_config_preset(str, &cfg)) {
			ret = fail(&c, s, "preset", "unknown preset");
			goto out;
		}
	}
	n = config_setting_length(root);
	for (i = 0; i < n && !ret; i++) {
		const char *name;
		const struct key *k;

		s = config_setting_get_elem(root, i);
		name = config_setting_name(s);
		if (!strcmp(name, "preset"))
			continue;
		if (!strcmp(name, "topology")) {
			ret = apply_group(&c, s, name, topo_keys,
					  ARRAY_SIZE(topo_keys), &cfg, 0);
		} else if (!strcmp(name, "switch_latency")) {
			ret = apply_group(&c, s, name, lat_keys,
					  ARRAY_SIZE(lat_keys), &cfg, 0);
		} else if (!strcmp(name, "telemetry")) {
			ret = apply_group(&c, s, name, tel_keys,
					  ARRAY_SIZE(tel_keys), &cfg, 0);
		} else if (!strcmp(name, "resources")) {
			ret = apply_group(&c, s, name, res_keys,
					  ARRAY_SIZE(res_keys), &cfg, 0);
		} else if (!strcmp(name, "links")) {
			int j, m = config_setting_length(s);

			if (!config_setting_is_group(s)) {
				ret = fail(&c, s, name, "expected a group");
				break;
			}
			for (j = 0; j < m && !ret; j++) {
				const config_setting_t *l =
					config_setting_get_elem(s, j);
				const char *ln = config_setting_name(l);
				struct ssemu_link_params *lp =
					!strcmp(ln, "edge")	? &cfg.edge :
					!strcmp(ln, "local")	? &cfg.local :
					!strcmp(ln, "global")	? &cfg.global :
								  NULL;

				if (!lp)
					ret = fail(&c, l, ln, "unknown link "
						   "kind (edge, local, global)");
				else
					ret = apply_group(&c, l, ln, link_keys,
							  ARRAY_SIZE(link_keys),
							  lp, 0);
			}
		} else if (!strcmp(name, "traffic_classes")) {
			ret = apply_tclasses(&c, s, &cfg);
		} else if (!strcmp(name, "default_tclass") ||
			   !strcmp(name, "clock") || !strcmp(name, "services") ||
			   !strcmp(name, "share_group") ||
			   !strcmp(name, "tclass_denied") ||
			   !strcmp(name, "modelled_jobs")) {
			/* resolved after the classes are known */
		} else if ((k = find_key(top_keys, ARRAY_SIZE(top_keys),
					 name))) {
			ret = set_value(&c, s, k, &cfg, SSEMU_NAME_MAX);
		} else {
			ret = fail(&c, s, name, "unknown key");
		}
	}
	if (ret)
		goto out;
	s = config_setting_get_member(root, "default_tclass");
	if (s) {
		str = config_setting_get_string(s);
		tc = str ? find_tclass(&cfg, str) : -1;
		if (tc < 0) {
			ret = fail(&c, s, "default_tclass",
				   "no traffic class of that name");
			goto out;
		}
		cfg.default_tclass = (uint32_t)tc;
	}
	s = config_setting_get_member(root, "clock");
	if (s) {
		str = config_setting_get_string(s);
		if (str && !strcmp(str, "virtual"))
			cfg.clock = SSEMU_CLOCK_VIRTUAL;
		else if (str && !strcmp(str, "realtime"))
			cfg.clock = SSEMU_CLOCK_REALTIME;
		else {
			ret = fail(&c, s, "clock", "expected \"virtual\" or "
				   "\"realtime\"");
			goto out;
		}
	}
	if (cfg.tclass[cfg.default_tclass % SSEMU_MAX_TCLASS].denied) {
		/* point at the class's "allowed" line, or the default's */
		const config_setting_t *l, *g = NULL;

		l = config_setting_get_member(root, "traffic_classes");
		if (l && config_setting_is_list(l))
			g = config_setting_get_elem(l, cfg.default_tclass);
		s = config_setting_get_member(root, "default_tclass");
		if (!s && g)
			s = config_setting_get_member(g, "allowed");
		ret = fail(&c, s ? s : root, s ? config_setting_name(s) :
						 "default_tclass",
			   "the default traffic class must be allowed (denied "
			   "classes fall back to it)");
		goto out;
	}
	s = config_setting_get_member(root, "tclass_denied");
	if (s) {
		str = config_setting_get_string(s);
		if (str && !strcmp(str, "error"))
			cfg.tclass_denied = SSEMU_TCLASS_DENIED_ERROR;
		else if (str && !strcmp(str, "warn"))
			cfg.tclass_denied = SSEMU_TCLASS_DENIED_WARN;
		else {
			ret = fail(&c, s, "tclass_denied", "expected \"error\" "
				   "or \"warn\"");
			goto out;
		}
	}
	s = config_setting_get_member(root, "services");
	if (s && (ret = ssemu_auth_config_load(s, &cfg, path, err, errlen)))
		goto out;
	s = config_setting_get_member(root, "share_group");
	if (s && (ret = ssemu_auth_share_load(s, &cfg, path, err, errlen)))
		goto out;
	s = config_setting_get_member(root, "modelled_jobs");
	if (s && (ret = apply_mjobs(&c, s, &cfg)))
		goto out;
	if (!config_setting_get_member(root, "preset"))
		snprintf(cfg.preset, sizeof(cfg.preset), "file");
	{
		char verr[256];

		ret = ssemu_config_validate(&cfg, verr, sizeof(verr));
		if (ret) {
			snprintf(err, errlen, "%s: %s", path, verr);
			goto out;
		}
	}
	*out = cfg;
out:
	config_destroy(&lc);
	return ret;
}

int ssemu_config_select(const char *config_path, const char *preset,
			const char *clock, const char *dilation,
			struct ssemu_config *cfg, char *err, size_t errlen)
{
	char verr[256];
	char *end;
	double d;
	int ret;

	if (config_path && *config_path) {
		ret = ssemu_config_load(config_path, cfg, err, errlen);
		if (ret)
			return ret;
	} else if (ssemu_config_preset(preset && *preset ? preset : "switch",
				       cfg)) {
		snprintf(err, errlen, "unknown preset '%s'", preset);
		return -EINVAL;
	}
	if (clock && *clock) {
		if (!strcasecmp(clock, "virtual")) {
			cfg->clock = SSEMU_CLOCK_VIRTUAL;
		} else if (!strcasecmp(clock, "realtime")) {
			cfg->clock = SSEMU_CLOCK_REALTIME;
		} else {
			snprintf(err, errlen, "clock '%s': expected virtual or "
				 "realtime", clock);
			return -EINVAL;
		}
	}
	if (dilation && *dilation) {
		errno = 0;
		d = strtod(dilation, &end);
		if (errno || *end || !(d > 0)) {
			snprintf(err, errlen, "dilation '%s': expected a "
				 "number > 0", dilation);
			return -EINVAL;
		}
		cfg->dilation = d;
	}
	ret = ssemu_config_validate(cfg, verr, sizeof(verr));
	if (ret)
		snprintf(err, errlen, "%s", verr);
	return ret;
}
