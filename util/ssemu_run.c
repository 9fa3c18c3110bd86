/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `slingshot-emu run -- CMD...` and `slingshot-emu mpirun ARGS...`: run a
 * job on a shared fabric and report what the fabric saw.
 *
 * The tool creates (or joins) the fabric first and holds it while the job
 * runs, so the counters outlive the job's processes; when the job ends it
 * prints them and lets go (the last one out removes the segment).  The
 * fabric is the one the FI_SLINGSHOT_EMU_* variables name, exactly as the
 * provider reads them, so the tool and the job agree on it.
 *
 * `mpirun` spells out what Open MPI needs to take the provider (printed
 * before it runs, nothing hidden): --mca pml cm --mca mtl ofi, and -x for
 * FI_PROVIDER=slingshot_emu, FI_PROVIDER_PATH and every FI_SLINGSHOT_EMU_*
 * variable; as root it adds --allow-run-as-root.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

extern char **environ;

#define SSEMU_RUN_AUTH_HELP						\
	"  --vni N        the job's VNI: SLINGSHOT_VNIS, SLINGSHOT_SVC_IDS "	\
	"and\n"								\
	"                 SLINGSHOT_DEVICES set for it, under a service of "	\
	"its own\n"								\
	"                 (created for the job, removed after it)\n"		\
	"  --service ID   ... under that existing service instead\n"	\
	"  --share-group G  create the fabric shared with group G (a name\n"	\
	"                 or gid): mode 0660, the group's users may join it\n"

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return v && *v ? v : def;
}

/* Open the fabric the environment names, as a participant (created
 * shared with @ja's group if it asks). */
static int hold_fabric(struct ssemu_fabric **f, char *name, size_t namelen,
		       const struct ssemu_cli_job_auth *ja)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM };
	struct ssemu_config cfg;
	char err[256];
	int ret;

	ret = ssemu_config_select(getenv("FI_SLINGSHOT_EMU_CONFIG"),
				  getenv("FI_SLINGSHOT_EMU_PRESET"),
				  getenv("FI_SLINGSHOT_EMU_CLOCK"),
				  getenv("FI_SLINGSHOT_EMU_DILATION"), &cfg, err,
				  sizeof(err));
	if (ret) {
		fprintf(stderr, "slingshot-emu: fabric configuration: %s\n",
			err);
		return ret;
	}
	snprintf(name, namelen, "%s", env_or("FI_SLINGSHOT_EMU_FABRIC", ""));
	if (!*name)
		snprintf(name, namelen, "ssemu-%u", (unsigned)geteuid());
	fo.name = name;
	if (ja->share) {
		cfg.share_group = 1;
		cfg.share_gid = ja->share_gid;
	}
	fo.config = &cfg;
	ret = ssemu_fabric_open(&fo, f, err, sizeof(err));
	if (ret)
		fprintf(stderr, "slingshot-emu: fabric %s: %s\n", name, err);
	return ret;
}

static void report(struct ssemu_fabric *f, const char *name)
{
	const struct ssemu_config *c = ssemu_fabric_config(f);
	struct ssemu_fabric_stats st;
	struct ssemu_latency sl;
	struct ssemu_port_info *ports;
	int np, i;
	uint32_t tc;
	uint64_t pk[SSEMU_MAX_TCLASS] = { 0 }, by[SSEMU_MAX_TCLASS] = { 0 };
	uint64_t drops = 0;
	int maxp = (int)c->max_switches * 64;

	ssemu_fabric_stats(f, &st);
	ssemu_fabric_switch_latency(f, &sl);
	printf("\n== what fabric %s saw ==\n", name);
	printf("model time %.3f us, %" PRIu64 " events, %" PRIu64
	       " packets delivered, %" PRIu64 " switch hops\n",
	       (double)st.now / SSEMU_PS_PER_US, st.events, st.pkts_delivered,
	       st.pkt_hops);
	if (sl.count)
		printf("switch latency per hop: mean %.1f ns, p50 %.0f, p99 "
		       "%.0f, max %.0f\n", sl.mean_ns, sl.p50_ns, sl.p99_ns,
		       sl.max_ns);
	ports = calloc((size_t)maxp, sizeof(*ports));
	np = ports ? ssemu_fabric_ports(f, ports, maxp) : 0;
	for (i = 0; i < np; i++) {
		drops += ports[i].drops;
		if (ports[i].kind != 1)
			continue;	/* count each packet once: at the edge */
		for (tc = 0; tc < c->ntclass; tc++) {
			pk[tc] += ports[i].tx_pkts[tc];
			by[tc] += ports[i].tx_bytes[tc];
		}
	}
	printf("%-18s %12s %14s\n", "class", "packets", "wire bytes");
	for (tc = 0; tc < c->ntclass; tc++)
		if (pk[tc])
			printf("%-18s %12" PRIu64 " %14" PRIu64 "\n",
			       c->tclass[tc].name, pk[tc], by[tc]);
	printf("drops %" PRIu64 "\n", drops);
	ssemu_cli_vni_stat(f, false);
	free(ports);
}

/*
 * A realtime fabric with modelled jobs: their traffic follows the dilated
 * wall clock, so the tool runs the engine while the job runs, whether or
 * not the job's processes are in the fabric (computing, or not started
 * yet).  Without modelled jobs, or with the virtual clock, the job's own
 * calls run it.
 */
static bool drives(struct ssemu_fabric *f)
{
	const struct ssemu_config *c = f ? ssemu_fabric_config(f) : NULL;

	return c && c->clock == SSEMU_CLOCK_REALTIME && c->nmjobs;
}

static int run_child(char **argv, struct ssemu_fabric *f)
{
	const struct timespec nap = { .tv_nsec = 100 * 1000 };
	pid_t pid, w;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("slingshot-emu: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "slingshot-emu: %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	while (drives(f)) {
		w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			goto done;
		if (w < 0 && errno != EINTR)
			return 127;
		/* (-EBUSY: a process of the job runs it) */
		if (ssemu_fabric_progress(f, 4096) <= 0)
			nanosleep(&nap, NULL);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
done:
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* run/mpirun --vni, --service */
static struct ssemu_cli_job_auth job_auth;

static int run_held(char **argv)
{
	struct ssemu_fabric *f;
	char name[64];
	int rc;

	if (hold_fabric(&f, name, sizeof(name), &job_auth))
		return 1;
	if (ssemu_cli_job_auth_begin(f, &job_auth)) {
		ssemu_fabric_close(f);
		return 1;
	}
	/* The job must meet the tool on the same fabric. */
	setenv("FI_SLINGSHOT_EMU_FABRIC", name, 1);
	rc = run_child(argv, f);
	report(f, name);
	ssemu_cli_job_auth_end(f, &job_auth);
	ssemu_fabric_close(f);
	if (rc)
		fprintf(stderr, "slingshot-emu: the job exited with %d\n", rc);
	return rc;
}

int ssemu_cmd_run(int argc, char **argv)
{
	int first = 1;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: slingshot-emu run [--vni N [--service ID]] "
		       "[--share-group G] [--]\n"
		       "                         COMMAND [ARGS...]\n"
		       "  Holds the fabric named by FI_SLINGSHOT_EMU_FABRIC "
		       "(default: this user's),\n"
		       "  built from FI_SLINGSHOT_EMU_CONFIG/PRESET/CLOCK/"
		       "DILATION, runs COMMAND\n"
		       "  and prints what the fabric saw.\n"
		       SSEMU_RUN_AUTH_HELP);
		return 0;
	}
	if (ssemu_cli_job_auth_opts(argc, argv, &first, &job_auth))
		return 2;
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
	if (first >= argc) {
		fprintf(stderr, "usage: slingshot-emu run [--] COMMAND "
			"[ARGS...]\n");
		return 2;
	}
	return run_held(argv + first);
}

int ssemu_cmd_mpirun(int argc, char **argv)
{
	const char *mpirun = env_or("MPIRUN", "mpirun");
	char **av, **e;
	char name[64];
	int n = 0, i, rc;
	size_t cap;

	int first = 1;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		printf("usage: slingshot-emu mpirun [--vni N [--service ID]] "
		       "[--share-group G]\n"
		       "                            [MPIRUN ARGS...] PROGRAM "
		       "[ARGS...]\n"
		       "  Runs Open MPI's mpirun with the options that make it "
		       "use the\n"
		       "  slingshot_emu provider (printed before it runs), on "
		       "the fabric\n"
		       "  FI_SLINGSHOT_EMU_FABRIC names, and prints what the "
		       "fabric saw.\n"
		       "  The ranks get every FI_SLINGSHOT_EMU_* variable set "
		       "here, and\n"
		       "  SSEMU_SHM_DIR (the fabric's directory) when it is "
		       "set.\n"
		       SSEMU_RUN_AUTH_HELP);
		return argc < 2 ? 2 : 0;
	}
	if (ssemu_cli_job_auth_opts(argc, argv, &first, &job_auth))
		return 2;
	if (first >= argc) {
		fprintf(stderr, "usage: slingshot-emu mpirun [--vni N "
			"[--service ID]] [MPIRUN ARGS...] PROGRAM\n");
		return 2;
	}
	snprintf(name, sizeof(name), "%s",
		 env_or("FI_SLINGSHOT_EMU_FABRIC", ""));
	if (!*name) {
		snprintf(name, sizeof(name), "ssemu-job-%d", (int)getpid());
		setenv("FI_SLINGSHOT_EMU_FABRIC", name, 1);
	}
	setenv("FI_PROVIDER", "slingshot_emu", 1);
	if (!getenv("FI_PROVIDER_PATH") &&
	    !access(SSEMU_PROVDIR "/libslingshot_emu-fi.so", R_OK))
		setenv("FI_PROVIDER_PATH", SSEMU_PROVDIR, 1);

	cap = (size_t)argc + 64;
	for (e = environ; *e; e++)
		cap += 2;
	av = calloc(cap, sizeof(*av));
	if (!av)
		return 1;
	av[n++] = (char *)mpirun;
	if (geteuid() == 0)
		av[n++] = "--allow-run-as-root";
	av[n++] = "--mca";
	av[n++] = "pml";
	av[n++] = "cm";
	av[n++] = "--mca";
	av[n++] = "mtl";
	av[n++] = "ofi";
	av[n++] = "-x";
	av[n++] = "FI_PROVIDER";
	if (getenv("FI_PROVIDER_PATH")) {
		av[n++] = "-x";
		av[n++] = "FI_PROVIDER_PATH";
	}
	/* (the ranks look for the fabric held here in the same directory) */
	if (getenv("SSEMU_SHM_DIR")) {
		av[n++] = "-x";
		av[n++] = "SSEMU_SHM_DIR";
	}
	for (e = environ; *e; e++) {
		if (strncmp(*e, "FI_SLINGSHOT_EMU_", 17) &&
		    (strncmp(*e, "SLINGSHOT_", 10) || job_auth.vni))
			continue;
		av[n] = strndup(*e, strcspn(*e, "="));
		if (av[n]) {
			av[n + 1] = av[n];
			av[n] = "-x";
			n += 2;
		}
	}
	if (job_auth.vni) {
		/* (set by run_held, for the job, before mpirun starts) */
		static char *const names[] = { "SLINGSHOT_VNIS",
					       "SLINGSHOT_SVC_IDS",
					       "SLINGSHOT_DEVICES" };

		for (i = 0; i < 3; i++) {
			av[n++] = "-x";
			av[n++] = names[i];
		}
	}
	for (i = first; i < argc; i++)
		av[n++] = argv[i];
	av[n] = NULL;

	printf("+");
	for (i = 0; i < n; i++)
		printf(" %s", av[i]);
	printf("\n");
	rc = run_held(av);
	free(av);
	return rc;
}
