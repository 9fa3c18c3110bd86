/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Jobs, placement and traffic-class policy through the provider's runtime
 * parameters, which libfabric reads once per process: every case starts
 * child processes (this binary again, "child" mode) with the environment a
 * launcher would give them (Open MPI, PMIx, PMI, Slurm variables,
 * FI_SLINGSHOT_EMU_*), all on one shared fabric, and looks at the fabric
 * from outside as `slingshot-emu status` does (an observer).
 *
 * A child opens fabric, domain and an endpoint, sends itself one message,
 * prints "ok <port>" (or "err <stage> <fi errno>") and keeps its NIC until
 * its stdin closes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

/* ------------------------------------------------------------------ */
/* Child                                                                */
/* ------------------------------------------------------------------ */

/* An error ends the child there and then, with what it had open (under
 * LeakSanitizer that is no leak: _exit runs no exit-time leak check). */
static int child_report(const char *stage, int ret)
{
	printf("err %s %d\n", stage, ret < 0 ? -ret : ret);
	fflush(stdout);
	_exit(0);
}

/* argv: child [domain tclass (hex)] [endpoint option tclass (hex)] */
static int child_main(int argc, char **argv)
{
	uint32_t dom_tc = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 16) : 0;
	uint32_t ep_tc = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 16) : 0;
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_entry ent;
	struct fi_sse_addr me;
	size_t len = sizeof(me);
	char sbuf[64] = "hello", rbuf[64], c;
	fi_addr_t self;
	time_t start;
	int ret, done = 0;

	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(SSE_TEST_PROV);
	hints->domain_attr->tclass = dom_tc;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	if (ret)
		return child_report("getinfo", ret);
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (ret)
		return child_report("fabric", ret);
	ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		return child_report("domain", ret);
	ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (ret)
		return child_report("cq/av", ret);
	ret = fi_endpoint(domain, info, &ep, NULL);
	if (ret)
		return child_report("endpoint", ret);
	if (ep_tc) {
		ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_SSE_TCLASS,
				&ep_tc, sizeof(ep_tc));
		if (ret)
			return child_report("setopt", ret);
	}
	ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ep, &av->fid, 0);
	if (!ret)
		ret = fi_enable(ep);
	if (!ret)
		ret = fi_getname(&ep->fid, &me, &len);
	if (!ret && fi_av_insert(av, &me, 1, &self, 0, NULL) != 1)
		ret = -FI_EINVAL;
	if (!ret)
		ret = (int)fi_recv(ep, rbuf, sizeof(rbuf), NULL, self, rbuf);
	if (!ret)
		ret = (int)fi_send(ep, sbuf, 6, NULL, self, sbuf);
	if (ret)
		return child_report("send", ret);
	start = time(NULL);
	while (done < 2 && time(NULL) - start < 20) {
		ret = (int)fi_cq_read(cq, &ent, 1);
		if (ret == 1)
			done++;
		else if (ret != -FI_EAGAIN)
			return child_report("cq", ret);
	}
	if (done < 2 || strcmp(rbuf, "hello"))
		return child_report("loopback", FI_ETIMEDOUT);
	printf("ok %u\n", FI_SSE_ADDR_PORT(&me));
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	fi_close(&ep->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Parent                                                               */
/* ------------------------------------------------------------------ */

#define MAX_CHILD 8

struct child {
	pid_t pid;
	int in, out;		/* its stdin (to close), its stdout */
	char log[128];		/* its stderr */
	char line[128];		/* what it reported */
	int port;		/* "ok <port>", else -1 */
	int err;		/* "err <stage> <errno>": the errno */
};

static const char *const launcher_vars[] = {
	"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_MCA_ess_base_jobid",
	"PMIX_RANK", "PMIX_NAMESPACE", "PMIX_LOCAL_RANK", "PMI_RANK",
	"PMI_SIZE", "MPI_LOCALRANKID", "SLURM_PROCID", "SLURM_NTASKS",
	"SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID",
	"FI_SLINGSHOT_EMU_PLACEMENT", "FI_SLINGSHOT_EMU_PLACEMENT_SEED",
	"FI_SLINGSHOT_EMU_TCLASS", "FI_SLINGSHOT_EMU_CONFIG",
	"FI_SLINGSHOT_EMU_PRESET", "FI_SLINGSHOT_EMU_PORT",
};

static char fabric_name[64];
static char exe[4096];

/*
 * Start a child with @env ("NAME=value" strings, NULL-terminated; the
 * launcher variables of this process are dropped first) and wait for its
 * report line.
 */
static void spawn(struct child *c, const char *const *env, const char *dtc,
		  const char *etc)
{
	int in[2], out[2], fd;
	size_t i;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->port = c->err = -1;
	snprintf(c->log, sizeof(c->log), "/tmp/sse-test-jobs-%d-%p.log",
		 (int)getpid(), (void *)c);
	/* close-on-exec: other children must not hold this one's stdin */
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		fd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		close(in[1]);
		close(out[0]);
		for (i = 0; i < sizeof(launcher_vars) / sizeof(*launcher_vars);
		     i++)
			unsetenv(launcher_vars[i]);
		setenv("FI_LOG_LEVEL", "warn", 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		execl(exe, exe, "child", dtc ? dtc : "0", etc ? etc : "0",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	f = fdopen(fcntl(c->out, F_DUPFD_CLOEXEC, 0), "r");
	assert_non_null(f);
	if (!fgets(c->line, sizeof(c->line), f))
		snprintf(c->line, sizeof(c->line), "(nothing)");
	fclose(f);
	if (sscanf(c->line, "ok %d", &c->port) != 1) {
		char stage[32];

		if (sscanf(c->line, "err %31s %d", stage, &c->err) != 2)
			c->err = 0;
	}
}

/* Its stderr contains @what. */
static bool child_logged(const struct child *c, const char *what)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(c->log, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, what) != NULL;
}

static void show_log(const struct child *c)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "sed 's/^/  child: /' %s", c->log);
	if (system(cmd) < 0)
		return;
}

static void expect_ok(struct child *c)
{
	if (c->port < 0) {
		show_log(c);
		fail_msg("child failed: %s", c->line);
	}
}

static void expect_err(struct child *c, int fi_errno, const char *logged)
{
	if (c->err != fi_errno) {
		show_log(c);
		fail_msg("child: expected error %d (%s), got: %s", fi_errno,
			 fi_strerror(fi_errno), c->line);
	}
	if (logged && !child_logged(c, logged)) {
		show_log(c);
		fail_msg("child's log lacks '%s'", logged);
	}
}

static void finish(struct child *c)
{
	int status;

	close(c->in);
	close(c->out);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	unlink(c->log);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("child exited with status 0x%x", status);
}

static struct ssemu_fabric *observe(void)
{
	struct ssemu_fabric_opts o = {
		.store = SSEMU_STORE_SHM, .name = fabric_name,
		.flags = SSEMU_OPEN_OBSERVER,
	};
	struct ssemu_fabric *f;
	char err[256];

	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("observer: %s", err);
	return f;
}

/* Packets switch outputs sent in each class so far. */
static void class_pkts(uint64_t pkts[SSEMU_MAX_TCLASS])
{
	struct ssemu_fabric *f = observe();
	struct ssemu_port_info pi[64];
	int n, i, tc;

	memset(pkts, 0, SSEMU_MAX_TCLASS * sizeof(*pkts));
	n = ssemu_fabric_ports(f, pi, 64);
	for (i = 0; i < n; i++)
		for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++)
			pkts[tc] += pi[i].tx_pkts[tc];
	ssemu_fabric_close(f);
}

/* The one child's message went in class @tc only. */
static void expect_class(struct child *c, int tc)
{
	uint64_t pkts[SSEMU_MAX_TCLASS];
	int i;

	expect_ok(c);
	class_pkts(pkts);
	for (i = 0; i < SSEMU_MAX_TCLASS; i++)
		if ((i == tc) != (pkts[i] > 0))
			fail_msg("class %d carried %llu packets (expected "
				 "class %d only)", i,
				 (unsigned long long)pkts[i], tc);
}

static char cfg_path[128];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* The segment is gone once every child left. */
static void expect_no_fabric(void)
{
	char path[96];

	snprintf(path, sizeof(path), "/dev/shm/%s", fabric_name);
	if (!access(path, F_OK))
		fail_msg("%s left behind", path);
}

/* ------------------------------------------------------------------ */
/* Traffic classes                                                      */
/* ------------------------------------------------------------------ */

/* FI_SLINGSHOT_EMU_TCLASS moves a process's endpoints to a class; the
 * fabric's default otherwise; a label in the hints wins. */
static void test_tclass_env(void **state)
{
	const char *ll[] = { "FI_SLINGSHOT_EMU_TCLASS=LOW_LATENCY", NULL };
	const char *bad[] = { "FI_SLINGSHOT_EMU_TCLASS=GOLD", NULL };
	char bulk[16];
	struct child c;

	spawn(&c, NULL, NULL, NULL);
	expect_class(&c, 3);	/* BEST_EFFORT, the preset's default */
	finish(&c);
	spawn(&c, ll, NULL, NULL);
	expect_class(&c, 1);
	finish(&c);
	snprintf(bulk, sizeof(bulk), "%x", FI_TC_BULK_DATA);
	spawn(&c, ll, bulk, NULL);
	expect_class(&c, 2);
	finish(&c);
	/* per endpoint, over the domain's */
	spawn(&c, ll, NULL, bulk);
	expect_class(&c, 2);
	finish(&c);
	/* a class the fabric does not have: no provider */
	spawn(&c, bad, NULL, NULL);
	expect_err(&c, FI_ENODATA, "FI_SLINGSHOT_EMU_TCLASS=GOLD");
	finish(&c);
	expect_no_fabric();
}

static const char denied_cfg[] =
	"traffic_classes = (\n"
	"  { name = \"LOW_LATENCY\"; priority = 2; min_pct = 15; "
	"max_pct = 30; },\n"
	"  { name = \"BULK_DATA\"; min_pct = 15; allowed = false; },\n"
	"  { name = \"BEST_EFFORT\"; min_pct = 10; }\n"
	");\n"
	"default_tclass = \"BEST_EFFORT\";\n";

/* tclass_denied = "error": the open fails with -FI_EINVAL and a warning
 * naming the class and the configuration. */
static void test_tclass_denied_error(void **state)
{
	char env_cfg[160], bulk[16], ll[16];
	const char *env[] = { env_cfg, NULL };
	const char *env_tc[] = { env_cfg, "FI_SLINGSHOT_EMU_TCLASS=bulk_data",
				 NULL };
	struct child c;

	snprintf(cfg_path, sizeof(cfg_path), "/tmp/sse-test-jobs-%d.cfg",
		 (int)getpid());
	write_file(cfg_path, denied_cfg);
	snprintf(env_cfg, sizeof(env_cfg), "FI_SLINGSHOT_EMU_CONFIG=%s",
		 cfg_path);
	snprintf(bulk, sizeof(bulk), "%x", FI_TC_BULK_DATA);
	snprintf(ll, sizeof(ll), "%x", FI_TC_LOW_LATENCY);

	/* the domain's class */
	spawn(&c, env, bulk, NULL);
	expect_err(&c, FI_EINVAL, "BULK_DATA");
	assert_true(child_logged(&c, cfg_path));
	assert_true(child_logged(&c, "not allowed"));
	finish(&c);
	/* the process's default class */
	spawn(&c, env_tc, NULL, NULL);
	expect_err(&c, FI_EINVAL, "FI_SLINGSHOT_EMU_TCLASS=bulk_data");
	finish(&c);
	/* the endpoint option */
	spawn(&c, env, NULL, bulk);
	expect_err(&c, FI_EINVAL, "BULK_DATA");
	finish(&c);
	/* allowed classes work as before */
	spawn(&c, env, ll, NULL);
	expect_class(&c, 0);
	finish(&c);
	unlink(cfg_path);
	expect_no_fabric();
}

/* tclass_denied = "warn": a warning, and the default class is used. */
static void test_tclass_denied_warn(void **state)
{
	char env_cfg[160], bulk[16], text[sizeof(denied_cfg) + 64];
	const char *env[] = { env_cfg, NULL };
	const char *env_tc[] = { env_cfg, "FI_SLINGSHOT_EMU_TCLASS=BULK_DATA",
				 NULL };
	struct child c;

	snprintf(cfg_path, sizeof(cfg_path), "/tmp/sse-test-jobs-%d.cfg",
		 (int)getpid());
	snprintf(text, sizeof(text), "%stclass_denied = \"warn\";\n",
		 denied_cfg);
	write_file(cfg_path, text);
	snprintf(env_cfg, sizeof(env_cfg), "FI_SLINGSHOT_EMU_CONFIG=%s",
		 cfg_path);
	snprintf(bulk, sizeof(bulk), "%x", FI_TC_BULK_DATA);

	spawn(&c, env, bulk, NULL);
	expect_class(&c, 2);	/* BEST_EFFORT in this table */
	if (!child_logged(&c, "BULK_DATA") ||
	    !child_logged(&c, "using the default class BEST_EFFORT") ||
	    !child_logged(&c, cfg_path)) {
		show_log(&c);
		fail_msg("no warning naming the class and the configuration");
	}
	finish(&c);
	spawn(&c, env_tc, NULL, NULL);
	expect_class(&c, 2);
	assert_true(child_logged(&c, "FI_SLINGSHOT_EMU_TCLASS=BULK_DATA"));
	finish(&c);
	unlink(cfg_path);
	expect_no_fabric();
}

/* ------------------------------------------------------------------ */
/* Placement                                                            */
/* ------------------------------------------------------------------ */

/* Every NIC on the fabric: port -> job, rank. */
static int fabric_nics(struct ssemu_nic_info *info, int max)
{
	struct ssemu_fabric *f = observe();
	int n = ssemu_fabric_nics(f, info, max);

	ssemu_fabric_close(f);
	return n;
}

/* Two Open MPI jobs placed linearly, ranks arriving out of order: each
 * job gets its block, rank r at block + r, and carries its job id. */
static void test_place_two_jobs_linear(void **state)
{
	const char *a1[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			     "OMPI_MCA_ess_base_jobid=1001",
			     "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1",
			     NULL };
	const char *a0[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			     "OMPI_MCA_ess_base_jobid=1001",
			     "OMPI_COMM_WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=0",
			     NULL };
	/* PMIx and Slurm give the second job's identity */
	const char *b0[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			     "PMIX_NAMESPACE=prterun-x-77@1", "PMIX_RANK=0",
			     "SLURM_NTASKS=3", NULL };
	const char *b2[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			     "PMIX_NAMESPACE=prterun-x-77@1", "PMIX_RANK=2",
			     "SLURM_NTASKS=3", NULL };
	const char *x[] = { NULL };
	struct child c[6];
	struct ssemu_nic_info info[16];
	int n, i;

	spawn(&c[0], a1, NULL, NULL);
	expect_ok(&c[0]);
	assert_int_equal(c[0].port, 1);
	spawn(&c[1], b2, NULL, NULL);
	expect_ok(&c[1]);
	assert_int_equal(c[1].port, 4);
	/* no launcher: first free, around the reservations */
	spawn(&c[2], x, NULL, NULL);
	expect_ok(&c[2]);
	assert_int_equal(c[2].port, 5);
	spawn(&c[3], a0, NULL, NULL);
	expect_ok(&c[3]);
	assert_int_equal(c[3].port, 0);
	spawn(&c[4], b0, NULL, NULL);
	expect_ok(&c[4]);
	assert_int_equal(c[4].port, 2);
	/* the same rank twice */
	spawn(&c[5], a0, NULL, NULL);
	expect_err(&c[5], FI_EADDRINUSE, "rank 0 is attached already");
	finish(&c[5]);

	n = fabric_nics(info, 16);
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		if (info[i].port <= 1) {
			assert_int_equal(info[i].job, 1001);
			assert_int_equal(info[i].rank, (int)info[i].port);
		} else if (info[i].port <= 4) {
			assert_int_not_equal(info[i].job, 1001);
			assert_int_not_equal(info[i].job, 0);
			assert_int_equal(info[i].rank, (int)info[i].port - 2);
		} else {
			assert_int_equal(info[i].job, 0);
			assert_int_equal(info[i].rank, -1);
		}
	}
	for (i = 0; i < 5; i++)
		finish(&c[i]);
	expect_no_fabric();
}

/* Interleaved on a Dragonfly (Slurm job step): consecutive ranks on
 * different switches and groups. */
static void test_place_interleaved_slurm(void **state)
{
	char rank[4][32];
	const char *env[4][7];
	const char *step1[] = { "FI_SLINGSHOT_EMU_PLACEMENT=interleaved",
				"FI_SLINGSHOT_EMU_PRESET=2group",
				"SLURM_JOB_ID=4242", "SLURM_STEP_ID=1",
				"SLURM_NTASKS=1", "SLURM_PROCID=0", NULL };
	struct ssemu_nic_info info[8];
	struct child c[4], step;
	uint32_t job = 0, step_job = 0;
	int i, n;

	for (i = 0; i < 4; i++) {
		snprintf(rank[i], sizeof(rank[i]), "SLURM_PROCID=%d", i);
		env[i][0] = "FI_SLINGSHOT_EMU_PLACEMENT=interleaved";
		env[i][1] = "FI_SLINGSHOT_EMU_PRESET=2group";
		env[i][2] = "SLURM_JOB_ID=4242";
		env[i][3] = "SLURM_STEP_ID=0";
		env[i][4] = "SLURM_NTASKS=4";
		env[i][5] = rank[i];
		env[i][6] = NULL;
	}
	for (i = 3; i >= 0; i--) {
		spawn(&c[i], env[i], NULL, NULL);
		expect_ok(&c[i]);
	}
	/* 2 groups x 2 switches x 16 ports: group-major switch order */
	assert_int_equal(c[0].port / 16, 0);
	assert_int_equal(c[1].port / 16, 2);
	assert_int_equal(c[2].port / 16, 1);
	assert_int_equal(c[3].port / 16, 3);
	/* another step of the same Slurm job is another job */
	spawn(&step, step1, NULL, NULL);
	expect_ok(&step);
	n = fabric_nics(info, 8);
	assert_int_equal(n, 5);
	for (i = 0; i < n; i++) {
		if ((int)info[i].port == step.port)
			step_job = info[i].job;
		else
			job = info[i].job;
	}
	assert_int_not_equal(step_job, 0);
	assert_int_not_equal(job, 0);
	assert_int_not_equal(step_job, job);
	finish(&step);
	for (i = 0; i < 4; i++)
		finish(&c[i]);
	expect_no_fabric();
}

/* Random: reproducible from its seed, the fabric's by default. */
static void test_place_random_seeded(void **state)
{
	const char *s7[2][6] = {
		{ "FI_SLINGSHOT_EMU_PLACEMENT=random",
		  "FI_SLINGSHOT_EMU_PLACEMENT_SEED=7", "PMI_SIZE=4",
		  "PMI_RANK=0", "SLURM_JOB_ID=55", NULL },
		{ "FI_SLINGSHOT_EMU_PLACEMENT=random",
		  "FI_SLINGSHOT_EMU_PLACEMENT_SEED=7", "PMI_SIZE=4",
		  "PMI_RANK=3", "SLURM_JOB_ID=55", NULL },
	};
	const char *s8[] = { "FI_SLINGSHOT_EMU_PLACEMENT=random",
			     "FI_SLINGSHOT_EMU_PLACEMENT_SEED=8", "PMI_SIZE=4",
			     "PMI_RANK=0", "SLURM_JOB_ID=55", NULL };
	int first[2], again[2], other[4], i, differ = 0;
	struct child c[2];

	for (i = 0; i < 2; i++) {
		spawn(&c[i], s7[i], NULL, NULL);
		expect_ok(&c[i]);
		first[i] = c[i].port;
	}
	assert_int_not_equal(first[0], first[1]);
	for (i = 0; i < 2; i++)
		finish(&c[i]);
	/* a new fabric, the same seed: the same ports, whichever rank
	 * comes first */
	for (i = 1; i >= 0; i--) {
		spawn(&c[i], s7[i], NULL, NULL);
		expect_ok(&c[i]);
		again[i] = c[i].port;
	}
	assert_int_equal(again[0], first[0]);
	assert_int_equal(again[1], first[1]);
	for (i = 0; i < 2; i++)
		finish(&c[i]);
	/* other seeds, other draws (seen over a few) */
	for (i = 0; i < 4; i++) {
		char seed[48];
		const char *env[] = { s8[0], seed, s8[2], s8[3], s8[4], NULL };

		snprintf(seed, sizeof(seed),
			 "FI_SLINGSHOT_EMU_PLACEMENT_SEED=%d", 100 + i);
		spawn(&c[0], env, NULL, NULL);
		expect_ok(&c[0]);
		other[i] = c[0].port;
		differ += other[i] != first[0];
		finish(&c[0]);
	}
	assert_true(differ > 0);
	expect_no_fabric();
}

/* An explicit map; bad map files are reported by file and line. */
static void test_place_map(void **state)
{
	char path[128], env_map[160], r[3][40], want[192];
	const char *env[3][5];
	struct child c[3];
	int i;

	snprintf(path, sizeof(path), "/tmp/sse-test-jobs-%d.map",
		 (int)getpid());
	snprintf(env_map, sizeof(env_map), "FI_SLINGSHOT_EMU_PLACEMENT=map:%s",
		 path);
	for (i = 0; i < 3; i++) {
		snprintf(r[i], sizeof(r[i]), "OMPI_COMM_WORLD_RANK=%d", i);
		env[i][0] = env_map;
		env[i][1] = "OMPI_MCA_ess_base_jobid=9";
		env[i][2] = "OMPI_COMM_WORLD_SIZE=3";
		env[i][3] = r[i];
		env[i][4] = NULL;
	}
	write_file(path, "# rank port\n1 3\n\n0 12   # far away\n  2 7\n");
	for (i = 0; i < 3; i++) {
		spawn(&c[i], env[i], NULL, NULL);
		expect_ok(&c[i]);
	}
	assert_int_equal(c[0].port, 12);
	assert_int_equal(c[1].port, 3);
	assert_int_equal(c[2].port, 7);
	for (i = 0; i < 3; i++)
		finish(&c[i]);

	write_file(path, "0 1\n1 x\n2 3\n");
	spawn(&c[0], env[0], NULL, NULL);
	snprintf(want, sizeof(want), "%s:2: expected \"rank port\"", path);
	expect_err(&c[0], FI_EINVAL, want);
	finish(&c[0]);
	write_file(path, "0 1\n1 2\n0 3\n");
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, ":3: rank 0 is placed on line 1");
	finish(&c[0]);
	write_file(path, "0 1\n1 1\n2 3\n");
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, ":2: port 1 is rank 0's already");
	finish(&c[0]);
	write_file(path, "0 1\n1 16\n2 3\n");
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, ":2: port 16 out of range");
	finish(&c[0]);
	write_file(path, "0 1\n2 3\n");
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, "no port for rank 1");
	finish(&c[0]);
	write_file(path, "0 1\n1 2\n2 3\n3 4\n");
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, ":4: rank 3: the job has 3 ranks");
	finish(&c[0]);
	unlink(path);
	spawn(&c[0], env[0], NULL, NULL);
	expect_err(&c[0], FI_EINVAL, "cannot read it");
	finish(&c[0]);

	/* a map port another process has */
	write_file(path, "0 0\n1 1\n2 2\n");
	{
		const char *x[] = { NULL };

		spawn(&c[1], x, NULL, NULL);
		expect_ok(&c[1]);
		assert_int_equal(c[1].port, 0);
		spawn(&c[0], env[2], NULL, NULL);
		expect_err(&c[0], FI_EADDRINUSE, "port 0 is taken");
		finish(&c[0]);
		finish(&c[1]);
	}
	unlink(path);
	expect_no_fabric();
}

/* Bad settings and impossible jobs: an error, never a crash. */
static void test_place_bad_input(void **state)
{
	const char *bogus[] = { "FI_SLINGSHOT_EMU_PLACEMENT=diagonal",
				"PMI_RANK=0", "PMI_SIZE=2", NULL };
	const char *nomap[] = { "FI_SLINGSHOT_EMU_PLACEMENT=map:", NULL };
	const char *big[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			      "OMPI_MCA_ess_base_jobid=5",
			      "OMPI_COMM_WORLD_SIZE=17",
			      "OMPI_COMM_WORLD_RANK=0", NULL };
	const char *over[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			       "OMPI_MCA_ess_base_jobid=5",
			       "OMPI_COMM_WORLD_SIZE=2",
			       "OMPI_COMM_WORLD_RANK=2", NULL };
	/* PMI alone names no job: first free, with a warning */
	const char *pmi[] = { "FI_SLINGSHOT_EMU_PLACEMENT=linear",
			      "PMI_RANK=1", "PMI_SIZE=2", NULL };
	struct child c;

	spawn(&c, bogus, NULL, NULL);
	expect_err(&c, FI_EINVAL, "FI_SLINGSHOT_EMU_PLACEMENT=diagonal");
	finish(&c);
	spawn(&c, nomap, NULL, NULL);
	expect_err(&c, FI_EINVAL, "needs a file name");
	finish(&c);
	spawn(&c, big, NULL, NULL);
	expect_err(&c, FI_ENOSPC, "17 ranks");
	finish(&c);
	spawn(&c, over, NULL, NULL);
	expect_err(&c, FI_EINVAL, "rank 2 is not below the job size 2");
	finish(&c);
	spawn(&c, pmi, NULL, NULL);
	expect_ok(&c);
	assert_int_equal(c.port, 0);
	assert_true(child_logged(&c, "gives no job id"));
	finish(&c);
	expect_no_fabric();
}

/* The way mpirun ends a rank that will not go: SIGKILL. */
static void kill_child(struct child *c)
{
	int status;

	kill(c->pid, SIGKILL);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	close(c->in);
	close(c->out);
	unlink(c->log);
}

/*
 * Processes placed first-free take every port of the fabric (16) and are
 * killed with SIGKILL; the next 16 attach at once, on the same ports, and
 * so on: more ranks over time than the fabric has ports.  A 17th process
 * while 16 are alive is refused with -FI_ENOSPC, saying why.
 */
static void test_place_dead_ranks_free_ports(void **state)
{
	const char *ff[] = { "FI_SLINGSHOT_EMU_PLACEMENT=first-free", NULL };
	struct child c[17];
	uint32_t seen;
	int round, i;

	for (round = 0; round < 3; round++) {
		seen = 0;
		for (i = 0; i < 16; i++) {
			spawn(&c[i], ff, NULL, NULL);
			expect_ok(&c[i]);
			assert_true(c[i].port >= 0 && c[i].port < 16);
			seen |= 1u << c[i].port;
		}
		assert_int_equal(seen, 0xffff);
		if (round == 0) {
			spawn(&c[16], ff, NULL, NULL);
			expect_err(&c[16], FI_ENOSPC, "no free port");
			finish(&c[16]);
		}
		/* the last one of the last round leaves properly: the last
		 * one out removes the fabric */
		for (i = 0; i < 16; i++) {
			if (round == 2 && i == 15)
				finish(&c[i]);
			else
				kill_child(&c[i]);
		}
	}
	expect_no_fabric();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tclass_env),
		cmocka_unit_test(test_tclass_denied_error),
		cmocka_unit_test(test_tclass_denied_warn),
		cmocka_unit_test(test_place_two_jobs_linear),
		cmocka_unit_test(test_place_interleaved_slurm),
		cmocka_unit_test(test_place_random_seeded),
		cmocka_unit_test(test_place_map),
		cmocka_unit_test(test_place_bad_input),
		cmocka_unit_test(test_place_dead_ranks_free_ports),
	};
	ssize_t n;

	if (argc > 1 && !strcmp(argv[1], "child"))
		return child_main(argc, argv);
	sse_test_init("shm", "jobs");
	snprintf(fabric_name, sizeof(fabric_name), "%s",
		 getenv("FI_SLINGSHOT_EMU_FABRIC"));
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		fprintf(stderr, "SKIP: no /proc/self/exe to start children\n");
		return 77;
	}
	exe[n] = 0;
	return cmocka_run_group_tests_name("jobs", tests, NULL, NULL);
}
