/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu service add|list|rm`: the services of a shared fabric
 * (what endpoints opened under each may use: VNIs, traffic classes, users,
 * an endpoint limit), changed by the fabric's owner; the VNI counters
 * `stat` and `run` print; and the --vni/--service options of `run` and
 * `mpirun`, which hand a job its VNI and service the way Slurm's
 * switch/hpe_slingshot plugin does (SLINGSHOT_VNIS, SLINGSHOT_SVC_IDS,
 * SLINGSHOT_DEVICES), creating a service for the job's VNI when none is
 * named, and removing it when the job is over; and their --share-group,
 * which makes a fabric they create one that group's users may join.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

/* The provider's device name (its domain), as SLINGSHOT_DEVICES names it. */
#define DEVICE "sse0"
/* Services `run --vni` creates take the first free id from here. */
#define JOB_SVC_BASE 1000

static void usage_service(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu service add --id N --vni V[,V...] "
		"[--tc CLASS[,CLASS...]]\n"
		"                                 [--uid U[,U...]] [--max-eps N] "
		"[--fabric NAME]\n"
		"       slingshot-emu service list [--fabric NAME]\n"
		"       slingshot-emu service rm ID [--fabric NAME]\n"
		"  The services of a shared fabric (default: this user's): an "
		"endpoint\n"
		"  opened under a service may use its VNIs and traffic classes "
		"(default:\n"
		"  all) if the process's uid is one of its users (default: "
		"every user of\n"
		"  the fabric); --max-eps limits its endpoints open at once "
		"(0: none).\n"
		"  Service 1 is the default service (VNI 1, every class); only "
		"the fabric's\n"
		"  owner changes the table.\n");
}

/* A comma-separated list of numbers in [lo, hi]: how many, or -1. */
static int num_list(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		    uint32_t *out, int max)
{
	char *dup = strdup(s ? s : ""), *tok, *save = NULL;
	uint64_t v;
	int n = 0;

	if (!dup)
		return -1;
	if (!*dup) {
		fprintf(stderr, "%s: an empty list\n", opt);
		free(dup);
		return -1;
	}
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n >= max) {
			fprintf(stderr, "%s: more than %d values\n", opt, max);
			n = -1;
			break;
		}
		if (ssemu_cli_u64(opt, tok, lo, hi, &v)) {
			n = -1;
			break;
		}
		out[n++] = (uint32_t)v;
	}
	free(dup);
	return n;
}

/* Class names (or "all") as a mask of the fabric's classes, or -1. */
static int64_t class_mask(const struct ssemu_config *c, const char *s)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int64_t m = 0;
	uint32_t i;

	if (!dup)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcasecmp(tok, "all")) {
			m |= (1u << c->ntclass) - 1;
			continue;
		}
		for (i = 0; i < c->ntclass; i++)
			if (!strcasecmp(tok, c->tclass[i].name))
				break;
		if (i == c->ntclass) {
			fprintf(stderr, "service: --tc: the fabric has no "
				"class '%s'\n", tok);
			m = -1;
			break;
		}
		m |= 1u << i;
	}
	free(dup);
	return m ? m : -1;
}

static int open_fabric(const char *name, struct ssemu_fabric **f)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM,
				       .name = name,
				       .flags = SSEMU_OPEN_OBSERVER };
	char err[256];
	int ret;

	ret = ssemu_fabric_open(&o, f, err, sizeof(err));
	if (ret)
		fprintf(stderr, "service: fabric %s: %s\n", name, err);
	return ret;
}

static void print_service(const struct ssemu_config *c,
			  const struct ssemu_service *s)
{
	char vnis[SSEMU_SERVICE_VNIS * 6 + 1] = "";
	uint32_t i, first = 1;
	size_t l = 0;

	for (i = 0; i < s->nvnis && i < SSEMU_SERVICE_VNIS; i++)
		l += (size_t)snprintf(vnis + l, sizeof(vnis) - l, "%s%u",
				      i ? "," : "", s->vnis[i]);
	printf("  %-6u %-15s ", s->id, vnis);
	for (i = 0; i < c->ntclass; i++)
		if (s->tc_mask >> i & 1) {
			printf("%s%s", first ? "" : ",", c->tclass[i].name);
			first = 0;
		}
	printf("\n         users ");
	if (!s->nuids)
		printf("any");
	for (i = 0; i < s->nuids && i < SSEMU_SERVICE_UIDS; i++)
		printf("%s%u", i ? "," : "", s->uids[i]);
	printf(", endpoints %u", s->eps);
	if (s->max_eps)
		printf(" of %u", s->max_eps);
	printf("\n");
}

static const char *why_not(int err)
{
	switch (err) {
	case -EPERM:
		return "only the fabric's owner changes its services";
	case -EEXIST:
		return "a service has that id";
	case -ENOSPC:
		return "the fabric's table of services is full";
	case -ENOENT:
		return "no such service";
	case -EBUSY:
		return "endpoints are open under it";
	default:
		return strerror(-err);
	}
}

int ssemu_cmd_service(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "fabric", required_argument, NULL, 'f' },
		{ "id", required_argument, NULL, 'i' },
		{ "vni", required_argument, NULL, 'v' },
		{ "tc", required_argument, NULL, 't' },
		{ "uid", required_argument, NULL, 'u' },
		{ "max-eps", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *fabric = NULL, *vnis = NULL, *tcs = NULL, *uids = NULL;
	struct ssemu_service s = { 0 }, list[SSEMU_MAX_SERVICES];
	const struct ssemu_config *c;
	uint32_t v[SSEMU_SERVICE_VNIS];
	struct ssemu_fabric *f;
	char defname[64];
	const char *sub;
	uint64_t x;
	int64_t m;
	int opt, ret = 0, n, i;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage_service(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	sub = argv[1];
	if (strcmp(sub, "add") && strcmp(sub, "list") && strcmp(sub, "rm")) {
		fprintf(stderr, "service: unknown subcommand '%s' (add, list, "
			"rm)\n", sub);
		return 2;
	}
	optind = 1;
	while ((opt = getopt_long(argc - 1, argv + 1, "", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'f':
			fabric = optarg;
			break;
		case 'i':
			if (ssemu_cli_u64("--id", optarg, 1, UINT32_MAX, &x))
				return 2;
			s.id = (uint32_t)x;
			break;
		case 'v':
			vnis = optarg;
			break;
		case 't':
			tcs = optarg;
			break;
		case 'u':
			uids = optarg;
			break;
		case 'm':
			if (ssemu_cli_u64("--max-eps", optarg, 0, UINT32_MAX,
					  &x))
				return 2;
			s.max_eps = (uint32_t)x;
			break;
		case 'h':
			usage_service(stdout);
			return 0;
		default:
			usage_service(stderr);
			return 2;
		}
	}
	if (!strcmp(sub, "rm")) {
		if (optind + 1 == argc - 1 &&
		    ssemu_cli_u64("rm", argv[optind + 1], 1, UINT32_MAX, &x))
			return 2;
		if (optind + 1 == argc - 1)
			s.id = (uint32_t)x;
		if (!s.id || optind + 1 < argc - 1) {
			fprintf(stderr, "service rm: name one service id\n");
			return 2;
		}
	} else if (optind < argc - 1) {
		fprintf(stderr, "service %s: unexpected '%s'\n", sub,
			argv[optind + 1]);
		return 2;
	}
	if (!strcmp(sub, "add") && (!s.id || !vnis)) {
		fprintf(stderr, "service add: --id and --vni are needed\n");
		return 2;
	}
	if (!fabric) {
		snprintf(defname, sizeof(defname), "ssemu-%u",
			 (unsigned)geteuid());
		fabric = defname;
	}
	if (open_fabric(fabric, &f))
		return 1;
	c = ssemu_fabric_config(f);
	if (!strcmp(sub, "list")) {
		n = ssemu_service_list(f, list, SSEMU_MAX_SERVICES);
		if (n < 0) {
			fprintf(stderr, "service list: %s\n", strerror(-n));
			ret = 1;
		} else {
			printf("fabric %s: %d service%s\n", fabric, n,
			       n == 1 ? "" : "s");
			printf("  %-6s %-15s classes\n", "id", "vnis");
			for (i = 0; i < n; i++)
				print_service(c, &list[i]);
		}
	} else if (!strcmp(sub, "rm")) {
		ret = ssemu_service_remove(f, s.id);
		if (ret)
			fprintf(stderr, "service rm %u: %s\n", s.id,
				why_not(ret));
		ret = ret ? 1 : 0;
	} else {
		n = num_list("--vni", vnis, 1, SSEMU_VNI_MAX, v,
			     SSEMU_SERVICE_VNIS);
		if (n < 0)
			goto bad;
		s.nvnis = (uint32_t)n;
		for (i = 0; i < n; i++)
			s.vnis[i] = (uint16_t)v[i];
		m = tcs ? class_mask(c, tcs) : (1 << c->ntclass) - 1;
		if (m < 0)
			goto bad;
		s.tc_mask = (uint32_t)m;
		if (uids) {
			n = num_list("--uid", uids, 0, UINT32_MAX - 1, s.uids,
				     SSEMU_SERVICE_UIDS);
			if (n < 0)
				goto bad;
			s.nuids = (uint32_t)n;
		}
		ret = ssemu_service_add(f, &s);
		if (ret)
			fprintf(stderr, "service add %u: %s\n", s.id,
				why_not(ret));
		ret = ret ? 1 : 0;
	}
	ssemu_fabric_close(f);
	return ret;
bad:
	ssemu_fabric_close(f);
	return 2;
}

/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

void ssemu_cli_vni_stat(struct ssemu_fabric *f, bool json)
{
	const struct ssemu_config *c = ssemu_fabric_config(f);
	struct ssemu_job_vni_drops jd[64];
	struct ssemu_vni_count vc[SSEMU_SW_VNIS];
	uint32_t sw, nsw = c->topo.groups * c->topo.switches_per_group;
	int nj, n, i;
	bool any = false, first = true;

	/* nothing but the default VNI: nothing to say */
	nj = ssemu_vni_drops_by_job(f, jd, 64);
	for (sw = 0; sw < nsw && !any; sw++) {
		n = ssemu_switch_vni_stats(f, sw, vc, SSEMU_SW_VNIS);
		for (i = 0; i < n; i++)
			any |= vc[i].vni != SSEMU_VNI_DEFAULT;
	}
	if (!any && nj <= 0)
		return;
	if (json) {
		printf(",\"vni_drops\":[");
		for (i = 0; i < nj; i++)
			printf("%s{\"job\":%u,\"drops\":%" PRIu64 "}",
			       i ? "," : "", jd[i].job, jd[i].drops);
		printf("],\"switch_vnis\":[");
	} else {
		struct ssemu_nic_info *nics = calloc(c->max_nics,
						     sizeof(*nics));
		int nn = nics ? ssemu_fabric_nics(f, nics, (int)c->max_nics) : 0;

		for (i = 0; i < nn; i++)
			if (nics[i].stats.vni_drops)
				printf("  NIC at port %u (job %u): %" PRIu64
				       " packets dropped for their VNI\n",
				       nics[i].port, nics[i].job,
				       nics[i].stats.vni_drops);
		free(nics);
		for (i = 0; i < nj; i++)
			printf("  job %u: %" PRIu64 " packets dropped for "
			       "their VNI\n", jd[i].job, jd[i].drops);
		printf("  %-6s %-6s %10s %14s\n", "switch", "vni", "pkts",
		       "bytes");
	}
	for (sw = 0; sw < nsw; sw++) {
		n = ssemu_switch_vni_stats(f, sw, vc, SSEMU_SW_VNIS);
		for (i = 0; i < n; i++) {
			if (json)
				printf("%s{\"switch\":%u,\"vni\":%u,\"pkts\":%"
				       PRIu64 ",\"bytes\":%" PRIu64 "}",
				       first ? "" : ",", sw, vc[i].vni,
				       vc[i].pkts, vc[i].bytes);
			else if (vc[i].vni)
				printf("  %-6u %-6u %10" PRIu64 " %14" PRIu64
				       "\n", sw, vc[i].vni, vc[i].pkts,
				       vc[i].bytes);
			else
				printf("  %-6u %-6s %10" PRIu64 " %14" PRIu64
				       "\n", sw, "other", vc[i].pkts,
				       vc[i].bytes);
			first = false;
		}
	}
	if (json)
		printf("]");
}

/* ------------------------------------------------------------------ */
/* run and mpirun                                                       */
/* ------------------------------------------------------------------ */

int ssemu_cli_job_auth_opts(int argc, char **argv, int *first,
			    struct ssemu_cli_job_auth *ja)
{
	char err[200];
	uint64_t v;

	while (*first + 1 < argc) {
		const char *o = argv[*first];

		if (!strcmp(o, "--vni")) {
			if (ssemu_cli_u64("--vni", argv[*first + 1], 1,
					  SSEMU_VNI_MAX, &v))
				return -1;
			ja->vni = (uint32_t)v;
		} else if (!strcmp(o, "--service")) {
			if (ssemu_cli_u64("--service", argv[*first + 1], 1,
					  UINT32_MAX, &v))
				return -1;
			ja->svc = (uint32_t)v;
		} else if (!strcmp(o, "--share-group")) {
			if (ssemu_share_group_parse(argv[*first + 1],
						    &ja->share_gid, err,
						    sizeof(err))) {
				fprintf(stderr, "--share-group: %s\n", err);
				return -1;
			}
			ja->share = true;
		} else {
			break;
		}
		*first += 2;
	}
	if (*first < argc && (!strcmp(argv[*first], "--vni") ||
			      !strcmp(argv[*first], "--service") ||
			      !strcmp(argv[*first], "--share-group"))) {
		fprintf(stderr, "%s: needs a value\n", argv[*first]);
		return -1;
	}
	if (ja->svc && !ja->vni) {
		fprintf(stderr, "--service: needs --vni (the job's VNI among "
			"the service's)\n");
		return -1;
	}
	return 0;
}

int ssemu_cli_job_auth_begin(struct ssemu_fabric *f,
			     struct ssemu_cli_job_auth *ja)
{
	struct ssemu_service s = { .nvnis = 1, .nuids = 1 };
	const struct ssemu_config *c = ssemu_fabric_config(f);
	char buf[32];
	uint32_t id;
	int ret = -EEXIST;

	if (!ja->vni)
		return 0;
	if (!ja->svc) {
		/* the job's own service, as a workload manager makes one */
		s.vnis[0] = (uint16_t)ja->vni;
		s.tc_mask = (1u << c->ntclass) - 1;
		s.uids[0] = (uint32_t)geteuid();
		for (id = JOB_SVC_BASE; ret == -EEXIST && id < JOB_SVC_BASE +
		     SSEMU_MAX_SERVICES * 4; id++) {
			s.id = id;
			ret = ssemu_service_add(f, &s);
		}
		if (ret) {
			fprintf(stderr, "slingshot-emu: a service for VNI %u: "
				"%s\n", ja->vni, why_not(ret));
			return ret;
		}
		ja->svc = s.id;
		ja->made = true;
		printf("slingshot-emu: service %u for VNI %u (this job's, uid "
		       "%u)\n", ja->svc, ja->vni, (unsigned)geteuid());
	}
	snprintf(buf, sizeof(buf), "%u", ja->vni);
	setenv("SLINGSHOT_VNIS", buf, 1);
	snprintf(buf, sizeof(buf), "%u", ja->svc);
	setenv("SLINGSHOT_SVC_IDS", buf, 1);
	setenv("SLINGSHOT_DEVICES", DEVICE, 1);
	return 0;
}

void ssemu_cli_job_auth_end(struct ssemu_fabric *f,
			    const struct ssemu_cli_job_auth *ja)
{
	int ret;

	if (!ja->made)
		return;
	ret = ssemu_service_remove(f, ja->svc);
	if (ret)
		fprintf(stderr, "slingshot-emu: service %u stays: %s\n",
			ja->svc, why_not(ret));
}

void ssemu_cli_vni_report(const char *name)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM,
				       .name = name,
				       .flags = SSEMU_OPEN_OBSERVER };
	struct ssemu_fabric *f;
	char err[256];

	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		return;
	ssemu_cli_vni_stat(f, false);
	ssemu_fabric_close(f);
}
