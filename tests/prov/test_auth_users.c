/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation between two users through libfabric, as root: a shared
 * fabric made from a configuration file with share_group and a service
 * for each of two unprivileged uids (VNI 10 for one, VNI 20 for the
 * other).  Children that become those uids open a domain and an endpoint
 * on their own service (SLINGSHOT_VNIS, SLINGSHOT_SVC_IDS,
 * SLINGSHOT_DEVICES, as a launcher sets them) and are refused with
 * -FI_EACCES, and a warning that names their uid, on the other's (by the
 * variables and by an auth key).  On their own domain, a memory region
 * with their service's auth key is registered and one with the other's
 * is refused the same way.  A uid outside the group cannot open the
 * fabric at all.
 *
 * Exits 77 when not run as root.
 */
#include <fcntl.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#define UID_A 65534u		/* nobody */
#define UID_B 64998u
#define UID_C 64997u		/* not in the group */
#define GID_SHARE 64999u

static char cfg_path[64];

static int become(uid_t uid, gid_t gid, bool in_group)
{
	gid_t g = GID_SHARE;

	if (setgroups(in_group ? 1 : 0, &g) || setgid(gid) || setuid(uid)) {
		perror("become");
		return -1;
	}
	return 0;
}

/* fi_mr_regattr on @dom with the auth key of service @svc, VNI @vni; its
 * result. */
static int mr_with_key(struct fid_domain *dom, uint32_t svc, uint32_t vni)
{
	static char buf[64];
	struct fi_sse_auth_key k = { .svc_id = svc, .vni = (uint16_t)vni };
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.requested_key = 0x20,
		.auth_key = (uint8_t *)&k,
		.auth_key_size = sizeof(k),
		.iface = FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr;
	int ret = fi_mr_regattr(dom, &attr, 0, &mr);

	if (!ret)
		fi_close(&mr->fid);
	return ret;
}

/* fi_domain (and an endpoint on it) under service @svc, VNI @vni, from
 * the launcher's variables, or from a domain auth key if @key; its
 * result.  With @mr, also a memory region with an auth key of service
 * mr[0], VNI mr[1], whose fi_mr_regattr result goes to mr[2]. */
static int open_job(uint32_t svc, uint32_t vni, bool key, uint32_t *mr)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_sse_auth_key k = { .svc_id = svc, .vni = (uint16_t)vni };
	struct fi_info *hints = sse_test_hints(FI_MSG), *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char buf[16];
	int ret;

	snprintf(buf, sizeof(buf), "%u", vni);
	setenv("SLINGSHOT_VNIS", buf, 1);
	snprintf(buf, sizeof(buf), "%u", svc);
	setenv("SLINGSHOT_SVC_IDS", buf, 1);
	setenv("SLINGSHOT_DEVICES", "sse0", 1);
	if (key) {
		unsetenv("SLINGSHOT_VNIS");
		unsetenv("SLINGSHOT_SVC_IDS");
		hints->domain_attr->auth_key = malloc(sizeof(k));
		memcpy(hints->domain_attr->auth_key, &k, sizeof(k));
		hints->domain_attr->auth_key_size = sizeof(k);
	}
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fab, NULL);
	if (ret)
		goto out_info;
	ret = fi_domain(fab, info, &dom, NULL);
	if (ret)
		goto out_fab;
	if (mr)
		mr[2] = (uint32_t)-mr_with_key(dom, mr[0], mr[1]);
	ret = fi_av_open(dom, &av_attr, &av, NULL);
	if (ret)
		goto out_dom;
	ret = fi_cq_open(dom, &cq_attr, &cq, NULL);
	if (ret)
		goto out_av;
	ret = fi_endpoint(dom, info, &ep, NULL);
	if (!ret) {
		ret = fi_ep_bind(ep, &av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(ep);
		fi_close(&ep->fid);
	}
	fi_close(&cq->fid);
out_av:
	fi_close(&av->fid);
out_dom:
	fi_close(&dom->fid);
out_fab:
	fi_close(&fab->fid);
out_info:
	fi_freeinfo(info);
	return ret;
}

/* Does file @path hold @what? */
static bool file_has(const char *path, const char *what)
{
	char buf[16384];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, what) != NULL;
}

/* The job of @uid: 0, or the step that went wrong.  Its warnings go to
 * @log. */
static int job(uid_t uid, uint32_t svc, uint32_t vni, uint32_t osvc,
	       uint32_t ovni, const char *log)
{
	uint32_t mr[3];
	char want[160];
	int fd, ret;

	if (become(uid, GID_SHARE, true))
		return 1;
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || dup2(fd, 2) < 0)
		return 2;
	ret = open_job(svc, vni, false, NULL);
	if (ret) {
		printf("uid %u: own service %u: %s\n", (unsigned)uid, svc,
		       fi_strerror(-ret));
		return 3;
	}
	/* memory regions: a key of its own service, not of the other's */
	mr[0] = svc;
	mr[1] = vni;
	ret = open_job(svc, vni, false, mr);
	if (ret || mr[2]) {
		printf("uid %u: a region with its own key: %d, %d\n",
		       (unsigned)uid, ret, -(int)mr[2]);
		return 7;
	}
	mr[0] = osvc;
	mr[1] = ovni;
	ret = open_job(svc, vni, false, mr);
	if (ret || mr[2] != FI_EACCES) {
		printf("uid %u: a region with the other's key: %d, %d\n",
		       (unsigned)uid, ret, -(int)mr[2]);
		return 8;
	}
	snprintf(want, sizeof(want), "fi_mr_regattr: service %u, VNI %u (the "
		 "region's auth key) refused: service %u does not belong to "
		 "uid %u", osvc, ovni, osvc, (unsigned)uid);
	if (!file_has(log, want)) {
		printf("uid %u: no \"%s\" in its log\n", (unsigned)uid, want);
		return 9;
	}
	ret = open_job(osvc, ovni, false, NULL);
	if (ret != -FI_EACCES) {
		printf("uid %u: the other's service %u: %d\n", (unsigned)uid,
		       osvc, ret);
		return 4;
	}
	ret = open_job(osvc, ovni, true, NULL);
	if (ret != -FI_EACCES) {
		printf("uid %u: the other's auth key: %d\n", (unsigned)uid,
		       ret);
		return 5;
	}
	snprintf(want, sizeof(want), "service %u does not belong to uid %u",
		 osvc, (unsigned)uid);
	if (!file_has(log, want)) {
		printf("uid %u: no \"%s\" in its log\n", (unsigned)uid, want);
		return 6;
	}
	return 0;
}

static void test_two_users(void **state)
{
	char la[96], lb[96];
	pid_t a, b;
	int sa, sb;

	(void)state;
	snprintf(la, sizeof(la), "%s.a.log", cfg_path);
	snprintf(lb, sizeof(lb), "%s.b.log", cfg_path);
	fflush(stdout);
	a = fork();
	if (!a) {
		sa = job(UID_A, 2, 10, 3, 20, la);
		fflush(stdout);
		_exit(sa);
	}
	b = fork();
	if (!b) {
		sb = job(UID_B, 3, 20, 2, 10, lb);
		fflush(stdout);
		_exit(sb);
	}
	assert_true(a > 0 && b > 0);
	assert_int_equal(waitpid(a, &sa, 0), a);
	assert_int_equal(waitpid(b, &sb, 0), b);
	unlink(la);
	unlink(lb);
	assert_true(WIFEXITED(sa) && WIFEXITED(sb));
	assert_int_equal(WEXITSTATUS(sa), 0);
	assert_int_equal(WEXITSTATUS(sb), 0);
}

static int outsider(void)
{
	struct fi_info *hints = sse_test_hints(FI_MSG), *info;
	struct fid_fabric *fab;
	int ret;

	if (become(UID_C, UID_C, false))
		return 1;
	unsetenv("SLINGSHOT_VNIS");
	unsetenv("SLINGSHOT_SVC_IDS");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return 4;
	ret = fi_fabric(info->fabric_attr, &fab, NULL);
	fi_freeinfo(info);
	if (!ret) {
		fi_close(&fab->fid);
		return 2;
	}
	return ret == -FI_EACCES ? 0 : 3;
}

static void test_outsider(void **state)
{
	pid_t c;
	int st;

	(void)state;
	fflush(stdout);
	c = fork();
	if (!c)
		_exit(outsider());
	assert_true(c > 0);
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_users),
		cmocka_unit_test(test_outsider),
	};
	struct ssemu_fabric *f;
	int ret;

	setenv("FI_LOG_LEVEL", "warn", 1);
	ret = sse_test_users_fabric("auth_users", cfg_path, sizeof(cfg_path),
				    &f, "preset = \"switch\";\n"
				    "share_group = %u;\n"
				    "services = (\n"
				    "  { id = 2; vnis = [10]; uids = [%u]; },\n"
				    "  { id = 3; vnis = [20]; uids = [%u]; }\n"
				    ");\n", GID_SHARE, UID_A, UID_B);
	if (ret)
		return ret;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	sse_test_users_close(f, cfg_path);
	return ret;
}
