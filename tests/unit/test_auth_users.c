/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation between two users on one fabric, as root: a fabric shared
 * with a group (share_group: mode 0660, the group recorded in the header)
 * and a service for each of two unprivileged uids.  Children that become
 * those uids (numeric ids, no passwd entries needed) attach, open an
 * endpoint under their own service and are refused, with a log line, under
 * the other's.  Then the attach rule: a uid outside the group cannot open
 * the segment, and a segment whose mode (0666) or group no longer say what
 * its header recorded is refused; a fabric asked for with another group is
 * -EEXIST.  A fabric whose last user out is not its creator (who alone
 * may remove the file) stays usable for the next one.  Last, whom a
 * process may reach by cross-memory attach, kept per process and asked
 * again in a child that became another uid.
 *
 * Exits 77 when not run as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_model_int.h"	/* ssemu_xuid_may_cma */
#include "ssemu_priv.h"
#include "tf.h"

#define UID_A 65534u		/* nobody */
#define UID_B 64998u
#define UID_C 64997u		/* in neither group */
#define GID_SHARE 64999u
#define GID_OTHER 64996u

static char name[48];
static struct ssemu_config cfg;

/* The last warning the emulator logged in this (child) process. */
static char last_log[512];

static void log_sink(enum ssemu_log_level lvl, const char *msg)
{
	if (lvl <= SSEMU_LOG_WARN)
		snprintf(last_log, sizeof(last_log), "%s", msg);
}

static void config_init(void)
{
	struct ssemu_service a = { .id = 2, .nvnis = 1, .vnis = { 10 },
				   .nuids = 1, .uids = { UID_A } };
	struct ssemu_service b = { .id = 3, .nvnis = 1, .vnis = { 20 },
				   .nuids = 1, .uids = { UID_B } };

	tf_config(&cfg, "switch");
	a.tc_mask = b.tc_mask = (1u << cfg.ntclass) - 1;
	cfg.services[0] = a;
	cfg.services[1] = b;
	cfg.nservices = 2;
	cfg.share_group = 1;
	cfg.share_gid = GID_SHARE;
}

/* Become @uid with primary group @gid and supplementary groups @groups. */
static int become(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
	if (setgroups(n, groups) || setgid(gid) || setuid(uid)) {
		perror("become");
		return -1;
	}
	return geteuid() == uid ? 0 : -1;
}

static int attach(const char *fab, uint32_t flags,
		  const struct ssemu_config *c, struct ssemu_fabric **f,
		  char *err, size_t errlen)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM, .name = fab,
				       .config = c, .flags = flags };

	return ssemu_fabric_open(&o, f, err, errlen);
}

/*
 * A job of @uid (in the share group): its own service @svc (VNI @vni)
 * works, the other's (@osvc, @ovni) is refused.  @return 0, or which step
 * failed.
 */
static int job(uid_t uid, uint32_t svc, uint32_t vni, uint32_t osvc,
	       uint32_t ovni)
{
	struct ssemu_nic_opts no = { .port = SSEMU_PORT_ANY, .rank = -1 };
	gid_t g = GID_SHARE;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep, *other = NULL;
	char err[256], want[64];
	uint32_t id, v;
	int ret;

	if (become(uid, g, &g, 1))
		return 1;
	ssemu_log_set_sink(log_sink);
	ret = attach(name, SSEMU_OPEN_EXISTING, NULL, &f, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "uid %u: attach: %s\n", (unsigned)uid, err);
		return 2;
	}
	no.job = uid;
	if (ssemu_nic_attach(f, &no, &nic))
		return 3;
	ret = ssemu_ep_open_auth(nic, svc, vni, &ep);
	if (ret) {
		fprintf(stderr, "uid %u: own service %u: %d\n", (unsigned)uid,
			svc, ret);
		return 4;
	}
	ssemu_ep_auth(ep, &id, &v);
	if (id != svc || v != vni)
		return 5;
	last_log[0] = 0;
	ret = ssemu_ep_open_auth(nic, osvc, ovni, &other);
	if (ret != -EACCES) {
		fprintf(stderr, "uid %u: the other's service %u: %d\n",
			(unsigned)uid, osvc, ret);
		return 6;
	}
	snprintf(want, sizeof(want), "does not belong to uid %u",
		 (unsigned)uid);
	if (!strstr(last_log, want)) {
		fprintf(stderr, "uid %u: logged \"%s\"\n", (unsigned)uid,
			last_log);
		return 7;
	}
	if (ssemu_auth_check(f, osvc, ovni, err, sizeof(err)) != -EACCES ||
	    ssemu_auth_check(f, svc, vni, err, sizeof(err)))
		return 8;
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	return 0;
}

/* An attach as @uid (groups @groups): its error, 0 if it succeeded; @msg,
 * if not NULL, must be in the message. */
static int attach_as(uid_t uid, gid_t gid, const gid_t *groups, size_t n,
		     const char *msg)
{
	struct ssemu_fabric *f;
	char err[256] = "";
	int ret;

	if (uid && become(uid, gid, groups, n))
		return 100;
	ret = attach(name, SSEMU_OPEN_EXISTING, NULL, &f, err, sizeof(err));
	if (!ret)
		ssemu_fabric_close(f);
	if (ret && msg && !strstr(err, msg)) {
		fprintf(stderr, "uid %u: \"%s\" lacks \"%s\"\n", (unsigned)uid,
			err, msg);
		return 101;
	}
	return -ret;
}

/* Run @fn in a child; its exit status. */
#define IN_CHILD(expr)                                                       \
	({                                                                   \
		pid_t pid_ = fork();                                         \
		int st_ = 0;                                                 \
		if (pid_ == 0)                                               \
			_exit((expr));                                       \
		assert_true(pid_ > 0);                                       \
		assert_int_equal(waitpid(pid_, &st_, 0), pid_);              \
		assert_true(WIFEXITED(st_));                                 \
		WEXITSTATUS(st_);                                            \
	})

static void shm_path(char *buf, size_t len, const char *fab)
{
	snprintf(buf, len, "/dev/shm/%s", fab);
}

static void test_two_users(void **state)
{
	struct ssemu_fabric *f;
	char err[256], path[96];
	struct stat st;
	pid_t a, b;
	int sa, sb;

	(void)state;
	assert_int_equal(attach(name, 0, &cfg, &f, err, sizeof(err)), 0);
	shm_path(path, sizeof(path), name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, GID_SHARE);
	/* both jobs at once */
	a = fork();
	if (!a)
		_exit(job(UID_A, 2, 10, 3, 20));
	b = fork();
	if (!b)
		_exit(job(UID_B, 3, 20, 2, 10));
	assert_true(a > 0 && b > 0);
	assert_int_equal(waitpid(a, &sa, 0), a);
	assert_int_equal(waitpid(b, &sb, 0), b);
	assert_true(WIFEXITED(sa) && WIFEXITED(sb));
	assert_int_equal(WEXITSTATUS(sa), 0);
	assert_int_equal(WEXITSTATUS(sb), 0);
	ssemu_fabric_close(f);
}

static void test_attach_rule(void **state)
{
	gid_t share = GID_SHARE, both[2] = { GID_SHARE, GID_OTHER };
	struct ssemu_config other = cfg;
	struct ssemu_fabric *f, *g;
	char err[256];
	int fd;

	(void)state;
	assert_int_equal(attach(name, 0, &cfg, &f, err, sizeof(err)), 0);
	fd = shm_open(name, O_RDWR, 0);
	assert_true(fd >= 0);
	/* in the group: yes; outside it, the file does not open */
	assert_int_equal(IN_CHILD(attach_as(UID_A, share, &share, 1, NULL)),
			 0);
	assert_int_equal(IN_CHILD(attach_as(UID_C, GID_OTHER, NULL, 0,
					    "Permission denied")), EACCES);
	/* world-writable: refused, whoever may open it */
	assert_int_equal(fchmod(fd, 0666), 0);
	assert_int_equal(IN_CHILD(attach_as(UID_A, share, &share, 1,
					    "mode 666")), EACCES);
	assert_int_equal(IN_CHILD(attach_as(UID_C, GID_OTHER, NULL, 0,
					    "mode 666")), EACCES);
	/* 0600 of another user: refused, even to root */
	assert_int_equal(fchmod(fd, 0600), 0);
	assert_int_equal(fchown(fd, UID_A, (gid_t)-1), 0);
	assert_int_equal(IN_CHILD(attach_as(0, 0, NULL, 0, "not to you")),
			 EACCES);
	assert_int_equal(fchown(fd, 0, (gid_t)-1), 0);
	/* 0660 with another group than the header's */
	assert_int_equal(fchmod(fd, 0660), 0);
	assert_int_equal(fchown(fd, (uid_t)-1, GID_OTHER), 0);
	assert_int_equal(IN_CHILD(attach_as(UID_A, share, both, 2,
					    "its header says")), EACCES);
	assert_int_equal(fchown(fd, (uid_t)-1, GID_SHARE), 0);
	assert_int_equal(IN_CHILD(attach_as(UID_A, share, both, 2, NULL)), 0);
	/* asked for with another group, or not shared */
	other.share_gid = GID_OTHER;
	assert_int_equal(attach(name, 0, &other, &g, err, sizeof(err)),
			 -EEXIST);
	assert_non_null(strstr(err, "shared with group 64999, asked for "
				    "group 64996"));
	other.share_group = 0;
	assert_int_equal(attach(name, 0, &other, &g, err, sizeof(err)), 0);
	ssemu_fabric_close(g);
	close(fd);
	ssemu_fabric_close(f);
}

/* uid A creates a fabric and holds it until B has attached and told it
 * (@up), then leaves first; B leaves last. */
static int creator(const char *fab, int ready, int go)
{
	gid_t g = GID_SHARE;
	struct ssemu_fabric *f;
	char err[256], c;

	if (become(UID_A, g, &g, 1))
		return 1;
	if (attach(fab, 0, &cfg, &f, err, sizeof(err))) {
		fprintf(stderr, "creator: %s\n", err);
		return 2;
	}
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		return 3;
	ssemu_fabric_close(f);
	return 0;
}

static int joiner(const char *fab, int ready, int joined, int gone)
{
	gid_t g = GID_SHARE;
	struct ssemu_fabric *f;
	char err[256], c;

	if (become(UID_B, g, &g, 1) || read(ready, &c, 1) != 1)
		return 1;
	if (attach(fab, SSEMU_OPEN_EXISTING, NULL, &f, err, sizeof(err))) {
		fprintf(stderr, "joiner: %s\n", err);
		return 2;
	}
	if (write(joined, "j", 1) != 1 || read(gone, &c, 1) != 1)
		return 3;
	ssemu_fabric_close(f);	/* last out, and not the file's owner */
	return 0;
}

static void test_last_out_not_owner(void **state)
{
	int ready[2], go[2], joined[2], gone[2], sa, sb;
	struct ssemu_fabric *f;
	char fab[80], path[112], err[256], c;
	struct stat st;
	pid_t a, b;

	(void)state;
	snprintf(fab, sizeof(fab), "%s-x", name);
	shm_path(path, sizeof(path), fab);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(joined), 0);
	assert_int_equal(pipe(gone), 0);
	a = fork();
	if (!a)
		_exit(creator(fab, ready[1], go[0]));
	b = fork();
	if (!b)
		_exit(joiner(fab, ready[0], joined[1], gone[0]));
	assert_int_equal(read(joined[0], &c, 1), 1);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(waitpid(a, &sa, 0), a);
	assert_int_equal(write(gone[1], "g", 1), 1);
	assert_int_equal(waitpid(b, &sb, 0), b);
	assert_true(WIFEXITED(sa) && WIFEXITED(sb));
	assert_int_equal(WEXITSTATUS(sa), 0);
	assert_int_equal(WEXITSTATUS(sb), 0);
	/* B could not remove A's file: it stays, and is not left dead (the
	 * next attach would retry forever) */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_uid, UID_A);
	assert_int_equal(attach(fab, SSEMU_OPEN_EXISTING, NULL, &f, err,
				sizeof(err)), 0);
	ssemu_fabric_close(f);	/* root's close removes it */
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* Has this process CAP_SYS_PTRACE in its effective set, as /proc says? */
static bool proc_may_ptrace(void)
{
	unsigned long long eff = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ull << 19);	/* CAP_SYS_PTRACE */
}

/*
 * Whom this process may reach by cross-memory attach, as the model
 * decides it (ssemu_xuid_may_cma keeps the answer per process): root
 * reaches its own uid's NIC, and uid A's if it has CAP_SYS_PTRACE; a
 * child after fork that became uid A reaches uid A's NIC and not root's
 * (what root's process knew is not the child's), and root still answers
 * as before.
 */
static void test_may_cma_fork(void **state)
{
	struct ssemu_config c;
	struct ssemu_region *r;
	uint32_t n0, n1;
	struct tf *t;
	bool ptrace = proc_may_ptrace();
	pid_t p;
	int st;

	(void)state;
	tf_config(&c, "switch");
	t = tf_open(&c);
	tf_add(t, SSEMU_PORT_ANY);
	tf_add(t, SSEMU_PORT_ANY);
	r = t->fab->r;
	n0 = t->nic[0]->slot;
	n1 = t->nic[1]->slot;
	assert_int_equal(ssemu_r_nic(r, n0)->owner_uid, 0);
	ssemu_r_nic(r, n1)->owner_uid = UID_A;	/* as if uid A attached it */
	assert_true(ssemu_xuid_may_cma(r, n0));
	assert_int_equal(ssemu_xuid_may_cma(r, n1), ptrace);
	fflush(stdout);
	p = fork();
	if (!p) {
		gid_t g = GID_SHARE;

		if (setgroups(1, &g) || setgid(GID_SHARE) || setuid(UID_A))
			_exit(9);
		if (ssemu_xuid_may_cma(r, n0))
			_exit(1);
		if (!ssemu_xuid_may_cma(r, n1))
			_exit(2);
		_exit(0);
	}
	assert_true(p > 0);
	assert_int_equal(waitpid(p, &st, 0), p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(ssemu_xuid_may_cma(r, n0));
	assert_int_equal(ssemu_xuid_may_cma(r, n1), ptrace);
	ssemu_r_nic(r, n1)->owner_uid = 0;
	tf_close(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_users),
		cmocka_unit_test(test_attach_rule),
		cmocka_unit_test(test_last_out_not_owner),
		cmocka_unit_test(test_may_cma_fork),
	};

	if (geteuid() != 0) {
		printf("SKIP: test_auth_users needs root (it creates a fabric "
		       "shared with a group and runs jobs as two other "
		       "uids)\n");
		return 77;
	}
	snprintf(name, sizeof(name), "sset-users-%d", (int)getpid());
	config_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
