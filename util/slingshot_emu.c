/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slingshot-emu: the command-line tool of the emulated Slingshot fabric.
 * Subcommands: sim (synthetic traffic on an in-process fabric), impact
 * and share (congestion and class studies in model time), status,
 * stat and clean (shared fabrics), run and mpirun (jobs on a held fabric),
 * report (telemetry), presets.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

int ssemu_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		goto bad;
	if (v < lo || v > hi) {
		fprintf(stderr, "%s: %llu is out of range [%llu, %llu]\n", opt,
			v, (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: '%s' is not a non-negative integer\n", opt,
		s ? s : "");
	return -1;
}

int ssemu_cli_double(const char *opt, const char *s, double lo, double hi,
		     double *out)
{
	double v;
	char *end;

	errno = 0;
	if (!s || !*s)
		goto bad;
	v = strtod(s, &end);
	if (errno || *end || v != v)
		goto bad;
	if (v < lo || v > hi) {
		fprintf(stderr, "%s: %g is out of range [%g, %g]\n", opt, v, lo,
			hi);
		return -1;
	}
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: '%s' is not a number\n", opt, s ? s : "");
	return -1;
}

const char *ssemu_cli_links_note(const struct ssemu_config *cfg, char *buf,
				 size_t len)
{
	if (cfg->topo.local_links_per_pair <= 1)
		return "";
	snprintf(buf, len, ", %u local links per switch pair",
		 cfg->topo.local_links_per_pair);
	return buf;
}

void ssemu_cli_size_fabric(struct ssemu_config *cfg, uint64_t n,
			   uint64_t msg_bytes, uint64_t pkts_per_nic)
{
	uint64_t pkts = n * pkts_per_nic + 4096;

	cfg->max_nics = (uint32_t)n;
	cfg->eps_per_nic = 1;
	cfg->max_eps = 0;	/* one endpoint slot for each NIC */
	cfg->msgs_per_ep = 64;
	cfg->bufs_per_ep = msg_bytes > SSEMU_INLINE_MAX ? 16 : 0;
	if (msg_bytes > cfg->buf_size)
		cfg->buf_size = (uint32_t)msg_bytes;
	cfg->max_switches = cfg->topo.groups * cfg->topo.switches_per_group;
	cfg->max_pkts = (uint32_t)(pkts < (1u << 24) ? pkts : 1u << 24);
	/* the engine holds at most 2^24 pending events */
	cfg->max_events = cfg->max_pkts < (1u << 22) ? cfg->max_pkts * 4 :
						      1u << 24;
}

#define SCEN_MAX_ARGS 64

/* The words of FILE's `# TOOL:` line, in @buf. */
static int scenario_read(const char *tool, const char *path, char *buf,
			 size_t len, char **words, int *nwords)
{
	FILE *f = fopen(path, "r");
	char key[64], *p, *tok, *save = NULL;
	bool found = false;
	size_t klen;
	int err;

	if (!f) {
		err = errno;
		fprintf(stderr, "%s: --scenario %s: %s\n", tool, path,
			strerror(err));
		return -err;
	}
	snprintf(key, sizeof(key), "# %s:", tool);
	klen = strlen(key);
	while (fgets(buf, (int)len, f)) {
		p = buf;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, key, klen)) {
			memmove(buf, p + klen, strlen(p + klen) + 1);
			found = true;
			break;
		}
	}
	fclose(f);
	if (!found) {
		fprintf(stderr, "%s: --scenario %s: no '%s' line\n", tool,
			path, key);
		return -EINVAL;
	}
	*nwords = 0;
	for (tok = strtok_r(buf, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (*nwords >= SCEN_MAX_ARGS) {
			fprintf(stderr, "%s: --scenario %s: too many "
				"options\n", tool, path);
			return -E2BIG;
		}
		if (!strcmp(tok, "--scenario") || !strcmp(tok, "--config") ||
		    !strcmp(tok, "--preset")) {
			fprintf(stderr, "%s: --scenario %s: %s is not "
				"allowed in a scenario line (the file is the "
				"fabric)\n", tool, path, tok);
			return -EINVAL;
		}
		words[(*nwords)++] = tok;
	}
	return 0;
}

int ssemu_cli_scenario(const char *tool, int argc, char **argv, char *line,
		       size_t len, char ***nargv, int *nargc)
{
	char *words[SCEN_MAX_ARGS];
	const char *scenario = NULL;
	int nwords = 0, i, j, n, ret;
	char **v;

	*nargv = NULL;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scenario")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "%s: --scenario needs a "
					"file\n", tool);
				return -EINVAL;
			}
			scenario = argv[i + 1];
		} else if (!strncmp(argv[i], "--scenario=", 11)) {
			scenario = argv[i] + 11;
		}
	}
	if (!scenario)
		return 0;
	ret = scenario_read(tool, scenario, line, len, words, &nwords);
	if (ret)
		return ret;
	v = calloc((size_t)(argc + nwords + 4), sizeof(char *));
	if (!v)
		return -ENOMEM;
	n = 0;
	v[n++] = argv[0];
	v[n++] = (char *)"--config";
	v[n++] = (char *)scenario;
	for (j = 0; j < nwords; j++)
		v[n++] = words[j];
	for (i = 1; i < argc; i++)
		v[n++] = argv[i];
	*nargv = v;
	*nargc = n;
	return 0;
}

int ssemu_cli_fabric_opt(int c, const char *arg, struct ssemu_cli_fabric *fo)
{
	switch (c) {
	case 'p':
		fo->preset = arg;
		fo->config_path = NULL;
		return 1;
	case 'c':
		fo->config_path = arg;
		return 1;
	case 'R':
		fo->routing = arg;
		return 1;
	case 'C':
		fo->cc = arg;
		return 1;
	case 'S':
		if (ssemu_cli_u64("--seed", arg, 0, UINT64_MAX, &fo->seed))
			return -EINVAL;
		fo->seed_set = true;
		return 1;
	default:
		return 0;
	}
}

int ssemu_cli_config(const char *tool, const struct ssemu_cli_fabric *fo,
		     struct ssemu_config *cfg)
{
	char err[256];
	int ret;

	if (fo->config_path) {
		ret = ssemu_config_load(fo->config_path, cfg, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "%s: %s\n", tool, err);
			return ret;
		}
	} else if (ssemu_config_preset(fo->preset, cfg)) {
		fprintf(stderr, "%s: unknown preset '%s' (try: ", tool,
			fo->preset);
		for (const char *const *p = ssemu_config_preset_names(); *p; p++)
			fprintf(stderr, "%s%s", *p, p[1] ? ", " : ")\n");
		return -EINVAL;
	}
	if (fo->seed_set)
		cfg->seed = fo->seed;
	if (fo->routing)
		snprintf(cfg->routing, sizeof(cfg->routing), "%s",
			 fo->routing);
	if (fo->cc)
		snprintf(cfg->cc, sizeof(cfg->cc), "%s", fo->cc);
	return 0;
}

int ssemu_cli_open(const char *tool, struct ssemu_config *cfg, uint64_t n,
		   void (*job)(uint64_t port, struct ssemu_nic_opts *no),
		   struct ssemu_fabric **fab, struct ssemu_nic ***nics,
		   struct ssemu_ep ***eps)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	char err[256];
	uint64_t i;
	int ret;

	*fab = NULL;
	*nics = NULL;
	*eps = NULL;
	ret = ssemu_config_validate(cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", tool, err);
		return ret;
	}
	fo.config = cfg;
	ret = ssemu_fabric_open(&fo, fab, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: cannot build the fabric: %s\n", tool, err);
		return ret;
	}
	*nics = calloc(n, sizeof(**nics));
	*eps = calloc(n, sizeof(**eps));
	if (!*nics || !*eps)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct ssemu_nic_opts no = { .port = (uint32_t)i, .rank = -1 };

		if (job)
			job(i, &no);
		ret = ssemu_nic_attach(*fab, &no, &(*nics)[i]);
		if (!ret)
			ret = ssemu_ep_open((*nics)[i], &(*eps)[i]);
		if (ret) {
			fprintf(stderr, "%s: endpoint %llu: %s\n", tool,
				(unsigned long long)i, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

void ssemu_cli_close(uint64_t n, struct ssemu_fabric *fab,
		     struct ssemu_nic **nics, struct ssemu_ep **eps)
{
	uint64_t i;

	for (i = 0; eps && i < n; i++)
		if (eps[i])
			ssemu_ep_close(eps[i]);
	for (i = 0; nics && i < n; i++)
		if (nics[i])
			ssemu_nic_detach(nics[i]);
	if (fab)
		ssemu_fabric_close(fab);
	free(nics);
	free(eps);
}

static int cmd_presets(int argc, char **argv)
{
	const char *const *p;
	struct ssemu_config c;

	for (p = ssemu_config_preset_names(); *p; p++) {
		ssemu_config_preset(*p, &c);
		printf("%-8s %4u groups x %2u switches x %2u endpoints, "
		       "%2u global links/switch: %llu endpoints\n", *p,
		       c.topo.groups, c.topo.switches_per_group,
		       c.topo.endpoints_per_switch, c.topo.globals_per_switch,
		       (unsigned long long)ssemu_config_nports(&c));
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  sim       run synthetic traffic on an in-process fabric and\n"
		"            report latency and throughput in model time\n"
		"  impact    congestion impact (GPCNeT style): victim latency\n"
		"            with aggressors / alone, in model time\n"
		"  share     two jobs in traffic classes share the links they\n"
		"            cross (the paper's Figure 14), in model time\n"
		"  status    list shared fabrics: configuration, clock mode,\n"
		"            lag, attached NICs (pid, job, rank, port)\n"
		"  stat      live counters of a shared fabric per NIC, switch\n"
		"            port and traffic class\n"
		"  clean     remove shared fabrics no live process uses\n"
		"  run       run a command on a shared fabric held by the tool,\n"
		"            then print what the fabric saw\n"
		"  mpirun    run an MPI program over the slingshot_emu provider\n"
		"            (adds and prints the Open MPI options it needs)\n"
		"  report    telemetry of a shared fabric or a saved trace:\n"
		"            bandwidth and latency per job and class, CSV,\n"
		"            gnuplot plots\n"
		"  presets   list the built-in fabric presets\n"
		"  help      this text\n"
		"\n"
		"`slingshot-emu COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "sim"))
		return ssemu_cmd_sim(argc - 1, argv + 1);
	if (!strcmp(argv[1], "impact"))
		return ssemu_cmd_impact(argc - 1, argv + 1);
	if (!strcmp(argv[1], "share"))
		return ssemu_cmd_share(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return ssemu_cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stat"))
		return ssemu_cmd_stat(argc - 1, argv + 1);
	if (!strcmp(argv[1], "clean"))
		return ssemu_cmd_clean(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return ssemu_cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mpirun"))
		return ssemu_cmd_mpirun(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return ssemu_cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "presets"))
		return cmd_presets(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "slingshot-emu: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
