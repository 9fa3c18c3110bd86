/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu status`, `stat` and `clean`: look at shared fabrics from
 * outside.  The tool attaches as an observer (it never counts as a user and
 * never removes a live fabric), reads the counters while the fabric runs,
 * and prints text or JSON.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

#define MAX_LIST 4096

struct tool_opts {
	const char *fabric;
	bool json;
	bool dry_run;
	double interval;
	uint64_t count;
};

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* Is @dir/@name one of ours (magic at offset 0)? */
static bool looks_like_fabric(const char *dir, const char *name)
{
	char path[512];
	uint64_t magic = 0;
	struct stat st;
	int fd;
	bool yes;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return false;
	fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return false;
	yes = read(fd, &magic, sizeof(magic)) == sizeof(magic) &&
	      magic == 0x5353454d55464142ULL;
	close(fd);
	/* a segment named by us but never finished is ours too */
	return yes || (!strncmp(name, "ssemu", 5) && st.st_size < 4096);
}

/* The fabrics in directory @path (ssemu_shm_dir). */
static int list_fabrics(const char *path, char names[][64], int max)
{
	struct dirent *d;
	DIR *dir = opendir(path);
	int n = 0;

	if (!dir)
		return -errno;
	while ((d = readdir(dir)) && n < max) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= 64)
			continue;
		if (looks_like_fabric(path, d->d_name))
			snprintf(names[n++], 64, "%s", d->d_name);
	}
	closedir(dir);
	return n;
}

static int observe(const char *name, struct ssemu_fabric **f, char *err,
		   size_t errlen)
{
	struct ssemu_fabric_opts o = {
		.store = SSEMU_STORE_SHM,
		.name = name,
		.flags = SSEMU_OPEN_OBSERVER,
	};

	return ssemu_fabric_open(&o, f, err, errlen);
}

static const char *clock_name(enum ssemu_clock_mode c)
{
	return c == SSEMU_CLOCK_REALTIME ? "realtime" : "virtual";
}

/* Jobs placed by policy and the ports reserved for them. */
static void print_jobs(struct ssemu_fabric *f, bool json)
{
	struct ssemu_job_info jobs[64];
	int n, i;

	n = ssemu_fabric_jobs(f, jobs, 64);
	if (json)
		printf(",\"jobs\":[");
	else if (n > 0)
		printf("  %-10s %-6s %-12s %-6s %-8s %s\n", "job", "ranks",
		       "placement", "nics", "reserved", "rank 0 at");
	for (i = 0; i < n; i++) {
		if (json)
			printf("%s{\"job\":%u,\"ranks\":%u,\"placement\":"
			       "\"%s\",\"nics\":%u,\"ports_reserved\":%u,"
			       "\"rank0_port\":%d}", i ? "," : "", jobs[i].job,
			       jobs[i].nranks,
			       ssemu_place_policy_name(jobs[i].policy),
			       jobs[i].nics, jobs[i].ports,
			       (int)jobs[i].rank0_port);
		else
			printf("  %-10u %-6u %-12s %-6u %-8u %d\n",
			       jobs[i].job, jobs[i].nranks,
			       ssemu_place_policy_name(jobs[i].policy),
			       jobs[i].nics, jobs[i].ports,
			       (int)jobs[i].rank0_port);
	}
	if (json)
		printf("]");
}

/* Modelled jobs (their NICs are not listed one by one). */
static void print_mjobs(struct ssemu_fabric *f, bool json)
{
	struct ssemu_mjob_stats st[SSEMU_CONFIG_MJOBS];
	int n, i;

	n = ssemu_fabric_mjobs(f, st, SSEMU_CONFIG_MJOBS);
	if (json)
		printf(",\"modelled_jobs\":[");
	else if (n > 0)
		printf("  %-12s %-9s %-14s %-16s %s\n", "modelled", "endpoints",
		       "pattern", "delivered", "bytes");
	for (i = 0; i < n && i < SSEMU_CONFIG_MJOBS; i++) {
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			json_str(st[i].name);
			printf(",\"endpoints\":%u,\"pattern\":\"%s\","
			       "\"job\":%u,\"posted\":%" PRIu64
			       ",\"delivered\":%" PRIu64 ",\"bytes\":%" PRIu64
			       "}", st[i].endpoints,
			       ssemu_mjob_pattern_name(st[i].pattern),
			       st[i].job, st[i].posted, st[i].delivered,
			       st[i].bytes);
		} else {
			printf("  %-12s %-9u %-14s %-16" PRIu64 " %" PRIu64
			       "\n", st[i].name, st[i].endpoints,
			       ssemu_mjob_pattern_name(st[i].pattern),
			       st[i].delivered, st[i].bytes);
		}
	}
	if (json)
		printf("]");
}

/* The service directory: names fi_getinfo's node/service resolve to. */
static void print_services(struct ssemu_fabric *f, bool json)
{
	struct ssemu_svc_info svc[SSEMU_MAX_SVCS];
	int n, i;

	n = ssemu_fabric_services(f, svc, SSEMU_MAX_SVCS);
	if (n > SSEMU_MAX_SVCS)
		n = SSEMU_MAX_SVCS;
	if (json)
		printf(",\"services\":[");
	else if (n > 0)
		printf("  %-24s %-12s %s\n", "service", "endpoint", "pid");
	for (i = 0; i < n; i++) {
		if (json) {
			printf("%s{\"name\":", i ? "," : "");
			json_str(svc[i].name);
			printf(",\"port\":%u,\"pid_on_nic\":%u,\"pid\":%d}",
			       SSEMU_ADDR_PORT(svc[i].addr),
			       SSEMU_ADDR_PID(svc[i].addr), svc[i].pid);
		} else {
			printf("  %-24s %u:%-10u %d\n", svc[i].name,
			       SSEMU_ADDR_PORT(svc[i].addr),
			       SSEMU_ADDR_PID(svc[i].addr), svc[i].pid);
		}
	}
	if (json)
		printf("]");
}

/*
 * A realtime fabric that lags has reached model time now while the wall
 * clock asked for now + lag: the host ran the model at now / (now + lag)
 * of the speed the dilation needs, so a dilation that much larger (and a
 * fifth for margin) would have kept up.  Said only when the lag is more
 * than 1% of the model time and 1 us.
 */
static void lag_note(const struct ssemu_fabric_info *fi)
{
	double need;

	if (fi->clock != SSEMU_CLOCK_REALTIME || !fi->now ||
	    fi->lag_ps < SSEMU_PS_PER_US || fi->lag_ps * 100 < fi->now)
		return;
	need = fi->dilation * (double)(fi->now + fi->lag_ps) /
	       (double)fi->now * 1.2;
	printf("  the host is not keeping up: %.1f us behind the wall clock;"
	       " a dilation of about %.0f would keep up\n",
	       (double)fi->lag_ps / SSEMU_PS_PER_US, need);
}

/* The segment's mode and group, and whether users share it. */
static void print_segment_text(const struct ssemu_fabric_info *fi)
{
	struct group *g;

	if (!fi->shm_mode)
		return;		/* (a private store) */
	printf("  segment mode %04o, owner uid %u", fi->shm_mode,
	       fi->owner_uid);
	if (fi->shm_mode & 0060) {
		g = getgrgid((gid_t)fi->shm_gid);
		printf(", group %u", fi->shm_gid);
		if (g)
			printf(" (%s)", g->gr_name);
		printf(": shared across users");
	} else {
		printf(": its owner's only");
	}
	if (fi->rma_parked)
		printf(", %u RMA request%s waiting for the target memory's "
		       "owner", fi->rma_parked, fi->rma_parked == 1 ? "" : "s");
	printf("\n");
}

static void print_status_text(struct ssemu_fabric *f)
{
	const struct ssemu_config *c = ssemu_fabric_config(f);
	struct ssemu_fabric_info fi;
	char note[64];
	struct ssemu_nic_info *nics;
	int n, i;

	ssemu_fabric_info(f, &fi);
	printf("fabric %s: %s (%ux%ux%u+%u%s), %" PRIu64 " MiB store, "
	       "clock %s", fi.name, c->preset, c->topo.groups,
	       c->topo.switches_per_group, c->topo.endpoints_per_switch,
	       c->topo.globals_per_switch,
	       ssemu_cli_links_note(c, note, sizeof(note)), fi.size >> 20,
	       clock_name(fi.clock));
	if (fi.clock == SSEMU_CLOCK_REALTIME)
		printf(" (dilation %g, lag %.3f us)", fi.dilation,
		       (double)fi.lag_ps / SSEMU_PS_PER_US);
	printf("\n  model time %.3f us, %u processes, %u NICs, %" PRIu64
	       " packets in flight\n",
	       (double)fi.now / SSEMU_PS_PER_US, fi.nprocs, fi.nnics,
	       fi.pkts_in_flight);
	lag_note(&fi);
	print_segment_text(&fi);
	nics = calloc(c->max_nics, sizeof(*nics));
	if (!nics)
		return;
	n = ssemu_fabric_nics(f, nics, (int)c->max_nics);
	if (n > 0)
		printf("  %-8s %-8s %-8s %-10s %-6s %-4s %s\n", "port", "pid",
		       "uid", "job", "rank", "eps", "state");
	for (i = 0; i < n; i++) {
		if (SSEMU_MJOB_IS_ID(nics[i].job))
			continue;	/* (print_mjobs) */
		printf("  %-8u %-8d %-8u %-10u %-6d %-4u %s\n", nics[i].port,
		       nics[i].pid, nics[i].uid, nics[i].job, nics[i].rank,
		       nics[i].eps_open, nics[i].alive ? "alive" : "dead");
	}
	free(nics);
	print_jobs(f, false);
	print_mjobs(f, false);
	print_services(f, false);
}

static void print_status_json(struct ssemu_fabric *f, bool comma)
{
	const struct ssemu_config *c = ssemu_fabric_config(f);
	struct ssemu_fabric_info fi;
	struct ssemu_nic_info *nics;
	int n, i;

	ssemu_fabric_info(f, &fi);
	printf("%s{\"name\":", comma ? "," : "");
	json_str(fi.name);
	printf(",\"preset\":");
	json_str(c->preset);
	printf(",\"topology\":{\"groups\":%u,\"switches_per_group\":%u,"
	       "\"endpoints_per_switch\":%u,\"globals_per_switch\":%u,"
	       "\"local_links_per_pair\":%u},"
	       "\"store_bytes\":%" PRIu64 ",\"clock\":\"%s\",\"dilation\":%g,"
	       "\"lag_ps\":%" PRIu64 ",\"model_time_ps\":%" PRIu64
	       ",\"processes\":%u,\"pkts_in_flight\":%" PRIu64
	       ",\"owner_uid\":%u,\"segment_mode\":\"%04o\",\"segment_gid\":%u,"
	       "\"shared_across_users\":%s,\"rma_parked\":%u,\"nics\":[",
	       c->topo.groups, c->topo.switches_per_group,
	       c->topo.endpoints_per_switch, c->topo.globals_per_switch,
	       c->topo.local_links_per_pair,
	       fi.size, clock_name(fi.clock), fi.dilation, fi.lag_ps, fi.now,
	       fi.nprocs, fi.pkts_in_flight, fi.owner_uid, fi.shm_mode,
	       fi.shm_gid, fi.shm_mode & 0060 ? "true" : "false",
	       fi.rma_parked);
	nics = calloc(c->max_nics, sizeof(*nics));
	n = nics ? ssemu_fabric_nics(f, nics, (int)c->max_nics) : 0;
	for (i = 0; i < n; i++)
		printf("%s{\"port\":%u,\"pid\":%d,\"job\":%u,\"rank\":%d,"
		       "\"endpoints\":%u,\"alive\":%s,\"uid\":%u}",
		       i ? "," : "", nics[i].port, nics[i].pid, nics[i].job,
		       nics[i].rank, nics[i].eps_open,
		       nics[i].alive ? "true" : "false", nics[i].uid);
	printf("]");
	free(nics);
	print_jobs(f, true);
	print_mjobs(f, true);
	print_services(f, true);
	printf("}");
}

static int parse_common(const char *cmd, int argc, char **argv,
			struct tool_opts *o, void (*usage)(FILE *))
{
	static const struct option lo[] = {
		{ "fabric", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->count = 1;
	o->interval = 1.0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'f':
			/* (a name, never a path: clean removes the file) */
			if (!*optarg || strchr(optarg, '/') ||
			    !strcmp(optarg, ".") || !strcmp(optarg, "..") ||
			    strlen(optarg) > 48) {
				fprintf(stderr, "%s: bad fabric name '%s': 1-48 "
					"characters, no '/', not . or ..\n", cmd,
					optarg);
				return -EINVAL;
			}
			o->fabric = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'n':
			o->dry_run = true;
			break;
		case 'i':
			if (ssemu_cli_double("--interval", optarg, 0.01, 3600,
					     &o->interval))
				return -EINVAL;
			break;
		case 'c':
			if (ssemu_cli_u64("--count", optarg, 1, 1000000,
					  &o->count))
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", cmd,
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void usage_status(FILE *f)
{
	fprintf(f, "usage: slingshot-emu status [--fabric NAME] [--json]\n"
		   "  Lists the shared fabrics of this user (or one of them):\n"
		   "  configuration, clock mode and lag, and the attached NICs\n"
		   "  with their pid, job, rank and port, and the services\n"
		   "  bound in its directory (name, endpoint, pid).  The\n"
		   "  fabrics are the files in $SSEMU_SHM_DIR (default\n"
		   "  /dev/shm).\n");
}

int ssemu_cmd_status(int argc, char **argv)
{
	static char names[MAX_LIST][64];
	struct tool_opts o;
	struct ssemu_fabric *f;
	const char *dir;
	char err[256];
	int n, i, ret, shown = 0, bad = 0;

	ret = parse_common("status", argc, argv, &o, usage_status);
	if (ret)
		return ret > 0 ? 0 : 2;
	dir = ssemu_shm_dir(err, sizeof(err));
	if (!dir) {
		fprintf(stderr, "status: %s\n", err);
		return 2;
	}
	if (o.fabric) {
		snprintf(names[0], 64, "%s", o.fabric);
		n = 1;
	} else {
		n = list_fabrics(dir, names, MAX_LIST);
		if (n < 0) {
			fprintf(stderr, "status: %s: %s\n", dir,
				strerror(-n));
			return 1;
		}
	}
	if (o.json)
		printf("{\"fabrics\":[");
	for (i = 0; i < n; i++) {
		ret = observe(names[i], &f, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "status: %s: %s\n", names[i], err);
			bad++;
			continue;
		}
		if (o.json)
			print_status_json(f, shown > 0);
		else
			print_status_text(f);
		shown++;
		ssemu_fabric_close(f);
	}
	if (o.json)
		printf("]}\n");
	else if (!n)
		printf("no fabrics\n");
	return bad && o.fabric ? 1 : 0;
}

static void usage_stat(FILE *f)
{
	fprintf(f, "usage: slingshot-emu stat [--fabric NAME] [--json] "
		   "[--interval S] [--count N]\n"
		   "  Live counters of a shared fabric (default: this user's\n"
		   "  default fabric): per NIC packets, bytes and stalls; per\n"
		   "  switch port and traffic class packets, bytes, queue depth,\n"
		   "  drops.  Congestion-control throttles are shown when the\n"
		   "  fabric runs a congestion-control algorithm.\n");
}

static void print_stat(struct ssemu_fabric *f, bool json)
{
	const struct ssemu_config *c = ssemu_fabric_config(f);
	struct ssemu_fabric_info fi;
	struct ssemu_nic_info *nics;
	struct ssemu_port_info *ports;
	int nn, np, i;
	uint32_t tc;
	int maxp = (int)(c->max_switches * 64);

	ssemu_fabric_info(f, &fi);
	nics = calloc(c->max_nics, sizeof(*nics));
	ports = calloc((size_t)maxp, sizeof(*ports));
	if (!nics || !ports)
		goto out;
	nn = ssemu_fabric_nics(f, nics, (int)c->max_nics);
	np = ssemu_fabric_ports(f, ports, maxp);
	if (json) {
		printf("{\"fabric\":");
		json_str(fi.name);
		printf(",\"model_time_ps\":%" PRIu64 ",\"crc_errors\":%" PRIu64
		       ",\"congestion_control\":", fi.now, fi.crc_errors);
		json_str(c->cc);
		printf(",\"nics\":[");
		for (i = 0; i < nn; i++) {
			const struct ssemu_nic_stats *s = &nics[i].stats;

			printf("%s{\"port\":%u,\"pid\":%d,\"job\":%u,"
			       "\"tx_msgs\":%" PRIu64 ",\"tx_bytes\":%" PRIu64
			       ",\"tx_pkts\":%" PRIu64 ",\"rx_msgs\":%" PRIu64
			       ",\"rx_bytes\":%" PRIu64 ",\"rx_pkts\":%" PRIu64
			       ",\"acks\":%" PRIu64 ",\"window_stalls\":%" PRIu64
			       ",\"credit_stalls\":%" PRIu64 ",\"vni_drops\":%"
			       PRIu64 "}",
			       i ? "," : "", nics[i].port, nics[i].pid,
			       nics[i].job, s->tx_msgs, s->tx_bytes, s->tx_pkts,
			       s->rx_msgs, s->rx_bytes, s->rx_pkts, s->acks,
			       s->window_stalls, s->credit_stalls, s->vni_drops);
		}
		printf("],\"ports\":[");
		for (i = 0; i < np; i++) {
			printf("%s{\"switch\":%u,\"port\":%u,\"kind\":%u,"
			       "\"drops\":%" PRIu64 ",\"classes\":[",
			       i ? "," : "", ports[i].sw, ports[i].port,
			       ports[i].kind, ports[i].drops);
			for (tc = 0; tc < c->ntclass; tc++) {
				printf("%s{\"class\":", tc ? "," : "");
				json_str(c->tclass[tc].name);
				printf(",\"pkts\":%" PRIu64 ",\"bytes\":%" PRIu64
				       ",\"queued\":%u}", ports[i].tx_pkts[tc],
				       ports[i].tx_bytes[tc], ports[i].queued[tc]);
			}
			printf("]}");
		}
		printf("]");
		ssemu_cli_vni_stat(f, true);
		printf("}\n");
		goto out;
	}
	printf("fabric %s at model time %.3f us (congestion control: %s, "
	       "crc errors: %" PRIu64 ")\n", fi.name,
	       (double)fi.now / SSEMU_PS_PER_US, c->cc, fi.crc_errors);
	printf("  %-6s %-8s %10s %12s %10s %10s %12s %10s %8s %8s\n", "port",
	       "pid", "tx_msgs", "tx_bytes", "tx_pkts", "rx_msgs", "rx_bytes",
	       "rx_pkts", "win_stl", "crd_stl");
	for (i = 0; i < nn; i++) {
		const struct ssemu_nic_stats *s = &nics[i].stats;

		printf("  %-6u %-8d %10" PRIu64 " %12" PRIu64 " %10" PRIu64
		       " %10" PRIu64 " %12" PRIu64 " %10" PRIu64 " %8" PRIu64
		       " %8" PRIu64 "\n",
		       nics[i].port, nics[i].pid, s->tx_msgs, s->tx_bytes,
		       s->tx_pkts, s->rx_msgs, s->rx_bytes, s->rx_pkts,
		       s->window_stalls, s->credit_stalls);
	}
	printf("  %-6s %-5s %-6s %-18s %10s %14s %7s %6s\n", "switch", "port",
	       "kind", "class", "pkts", "bytes", "queued", "drops");
	for (i = 0; i < np; i++) {
		static const char *const kinds[] = { "-", "edge", "local",
						     "global" };

		for (tc = 0; tc < c->ntclass; tc++) {
			if (!ports[i].tx_pkts[tc] && !ports[i].queued[tc] &&
			    !(tc == 0 && ports[i].drops))
				continue;
			printf("  %-6u %-5u %-6s %-18s %10" PRIu64 " %14" PRIu64
			       " %7u %6" PRIu64 "\n", ports[i].sw,
			       ports[i].port, kinds[ports[i].kind & 3],
			       c->tclass[tc].name, ports[i].tx_pkts[tc],
			       ports[i].tx_bytes[tc], ports[i].queued[tc],
			       ports[i].drops);
		}
	}
	ssemu_cli_vni_stat(f, false);
out:
	free(nics);
	free(ports);
}

int ssemu_cmd_stat(int argc, char **argv)
{
	struct tool_opts o;
	struct ssemu_fabric *f;
	char err[256], defname[64];
	uint64_t k;
	int ret;

	ret = parse_common("stat", argc, argv, &o, usage_stat);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (!o.fabric) {
		snprintf(defname, sizeof(defname), "ssemu-%u",
			 (unsigned)geteuid());
		o.fabric = defname;
	}
	ret = observe(o.fabric, &f, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "stat: %s\n", err);
		return 1;
	}
	for (k = 0; k < o.count; k++) {
		if (k)
			usleep((useconds_t)(o.interval * 1e6));
		print_stat(f, o.json);
		fflush(stdout);
	}
	ssemu_fabric_close(f);
	return 0;
}

static void usage_clean(FILE *f)
{
	fprintf(f, "usage: slingshot-emu clean [--fabric NAME] [--dry-run]\n"
		   "  Removes this user's shared fabrics that no live process\n"
		   "  uses any more, and corrupt or half-built segments, in\n"
		   "  $SSEMU_SHM_DIR (default /dev/shm).  Fabrics in use are\n"
		   "  left alone.\n");
}

int ssemu_cmd_clean(int argc, char **argv)
{
	static char names[MAX_LIST][64];
	struct ssemu_fabric_info fi;
	struct tool_opts o;
	struct ssemu_fabric *f;
	char err[256], path[SSEMU_SHM_DIR_MAX + 80];
	const char *dir;
	int n, i, ret, removed = 0;
	bool stale;

	ret = parse_common("clean", argc, argv, &o, usage_clean);
	if (ret)
		return ret > 0 ? 0 : 2;
	dir = ssemu_shm_dir(err, sizeof(err));
	if (!dir) {
		fprintf(stderr, "clean: %s\n", err);
		return 2;
	}
	if (o.fabric) {
		snprintf(names[0], 64, "%s", o.fabric);
		n = 1;
	} else {
		n = list_fabrics(dir, names, MAX_LIST);
		if (n < 0) {
			fprintf(stderr, "clean: %s: %s\n", dir,
				strerror(-n));
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		ret = observe(names[i], &f, err, sizeof(err));
		if (ret == -ENOENT) {
			fprintf(stderr, "clean: %s: no such fabric\n", names[i]);
			continue;
		}
		if (ret == -EACCES) {
			fprintf(stderr, "clean: %s: %s (left alone)\n",
				names[i], err);
			continue;
		}
		if (ret) {
			stale = true;	/* corrupt or half built */
			printf("%s %s: %s\n", o.dry_run ? "would remove" :
				"removing", names[i], err);
		} else {
			ssemu_fabric_info(f, &fi);
			ssemu_fabric_close(f);
			stale = fi.nprocs == 0;
			if (stale)
				printf("%s %s: no live process attached\n",
				       o.dry_run ? "would remove" : "removing",
				       names[i]);
			else
				printf("keeping %s: %u live processes\n",
				       names[i], fi.nprocs);
		}
		if (stale && !o.dry_run) {
			snprintf(path, sizeof(path), "%s/%.63s", dir,
				 names[i]);
			if (unlink(path))
				fprintf(stderr, "clean: %s: %s\n", names[i],
					strerror(errno));
			else
				removed++;
		}
	}
	if (!o.dry_run)
		printf("%d removed\n", removed);
	return 0;
}
