/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Provider tests of job isolation: auth_key_size in fi_info, auth keys in
 * hints and in fi_domain/fi_endpoint attributes (taken, refused for a
 * service of another user or a VNI the service does not allow, bad sizes),
 * the launcher's SLINGSHOT_* variables (good ones, and empty, non-numeric,
 * out of range, more devices than ids, a device not ours, a bad class
 * mask), a send between two endpoints on different VNIs (the sender's
 * FI_ENOTCONN, no completion at the target), classes refused by
 * SLINGSHOT_TCS and by the service, and fi_mr_regattr's auth key (a
 * region on VNI 11 refuses a write from VNI 10 with FI_EACCES; keys of
 * another user's service, of no service, of another size refused).  The
 * services come from a fabric configuration file.
 */
#include <fcntl.h>
#include <unistd.h>

#include "sse_test.h"

static char cfg_path[64];

/* A key as the cxi layout has it. */
static struct fi_sse_auth_key key(uint32_t svc, uint16_t vni)
{
	struct fi_sse_auth_key k = { .svc_id = svc, .vni = vni };

	return k;
}

static void clear_env(void)
{
	unsetenv("SLINGSHOT_VNIS");
	unsetenv("SLINGSHOT_SVC_IDS");
	unsetenv("SLINGSHOT_DEVICES");
	unsetenv("SLINGSHOT_TCS");
}

static struct fi_info *get_info(const struct fi_sse_auth_key *dk)
{
	struct fi_info *hints = sse_test_hints(FI_MSG | FI_TAGGED), *info;

	if (dk) {
		hints->domain_attr->auth_key = malloc(sizeof(*dk));
		memcpy(hints->domain_attr->auth_key, dk, sizeof(*dk));
		hints->domain_attr->auth_key_size = sizeof(*dk);
	}
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	fi_freeinfo(hints);
	return info;
}

/* fi_domain's result for @info (the domain closed again). */
static int domain_rc(struct fi_info *info)
{
	struct fid_fabric *fab;
	struct fid_domain *dom;
	int ret;

	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	ret = fi_domain(fab, info, &dom, NULL);
	if (!ret)
		assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	return ret;
}

static int env_domain_rc(const char *vnis, const char *ids, const char *devs,
			 const char *tcs)
{
	struct fi_info *info;
	int ret;

	clear_env();
	if (vnis)
		setenv("SLINGSHOT_VNIS", vnis, 1);
	if (ids)
		setenv("SLINGSHOT_SVC_IDS", ids, 1);
	if (devs)
		setenv("SLINGSHOT_DEVICES", devs, 1);
	if (tcs)
		setenv("SLINGSHOT_TCS", tcs, 1);
	info = get_info(NULL);
	ret = domain_rc(info);
	fi_freeinfo(info);
	clear_env();
	return ret;
}

static void test_auth_key_size(void **state)
{
	struct fi_info *info = get_info(NULL);

	(void)state;
	assert_int_equal(info->domain_attr->auth_key_size,
			 sizeof(struct fi_sse_auth_key));
	assert_int_equal(info->ep_attr->auth_key_size,
			 sizeof(struct fi_sse_auth_key));
	assert_null(info->domain_attr->auth_key);
	/* the size as a hint without a key: the same infos */
	assert_int_equal(domain_rc(info), 0);
	fi_freeinfo(info);
}

static void test_hints_key(void **state)
{
	struct fi_sse_auth_key k = key(2, 10), *got;
	struct fi_info *hints, *info;

	(void)state;
	info = get_info(&k);
	got = (struct fi_sse_auth_key *)info->domain_attr->auth_key;
	assert_non_null(got);
	assert_int_equal(info->domain_attr->auth_key_size, sizeof(k));
	assert_int_equal(got->svc_id, 2);
	assert_int_equal(got->vni, 10);
	assert_int_equal(domain_rc(info), 0);
	fi_freeinfo(info);
	/* a key of another size, or of service 0 */
	hints = sse_test_hints(FI_MSG);
	hints->domain_attr->auth_key = calloc(1, 4);
	hints->domain_attr->auth_key_size = 4;
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info), -FI_ENODATA);
	fi_freeinfo(hints);
	k = key(0, 10);
	hints = sse_test_hints(FI_MSG);
	hints->ep_attr->auth_key = malloc(sizeof(k));
	memcpy(hints->ep_attr->auth_key, &k, sizeof(k));
	hints->ep_attr->auth_key_size = sizeof(k);
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

/* @info with its domain auth key replaced by @k. */
static void set_key(struct fi_info *info, struct fi_sse_auth_key k)
{
	free(info->domain_attr->auth_key);
	info->domain_attr->auth_key = malloc(sizeof(k));
	memcpy(info->domain_attr->auth_key, &k, sizeof(k));
	info->domain_attr->auth_key_size = sizeof(k);
}

static void test_domain_refused(void **state)
{
	struct fi_info *info = get_info(NULL);

	(void)state;
	set_key(info, key(3, 20));	/* another user's service */
	assert_int_equal(domain_rc(info), -FI_EACCES);
	set_key(info, key(2, 12));	/* not one of its VNIs */
	assert_int_equal(domain_rc(info), -FI_EACCES);
	set_key(info, key(9, 10));	/* no such service */
	assert_int_equal(domain_rc(info), -FI_EINVAL);
	set_key(info, key(1, 1));	/* the default one */
	assert_int_equal(domain_rc(info), 0);
	info->domain_attr->auth_key_size = 3;	/* a wrong size */
	assert_int_equal(domain_rc(info), -FI_EINVAL);
	fi_freeinfo(info);
}

static void test_env(void **state)
{
	(void)state;
	assert_int_equal(env_domain_rc("10,1", "2", "sse0", "0xf"), 0);
	assert_int_equal(env_domain_rc("10", "2", NULL, NULL), 0);
	assert_int_equal(env_domain_rc("10", "5,2", "cxi0,sse0", NULL), 0);
	/* the default service has VNI 1 only */
	assert_int_equal(env_domain_rc("10", NULL, NULL, NULL), -FI_EACCES);
	assert_int_equal(env_domain_rc("1", NULL, NULL, NULL), 0);
	/* bad values: an error, never another VNI */
	assert_int_equal(env_domain_rc("", "2", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("ten", "2", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("70000", "2", "sse0", NULL),
			 -FI_EINVAL);
	assert_int_equal(env_domain_rc("0", "2", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10,", "2", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "two", "sse0", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "", NULL), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "cxi0", NULL), -FI_EINVAL);
	/* more devices than service ids (and than this process's NIC) */
	assert_int_equal(env_domain_rc("10", "2", "sse0,cxi1", NULL),
			 -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "sse0,,cxi1", NULL),
			 -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2,2", "sse0,cxi1", NULL), 0);
	assert_int_equal(env_domain_rc("10", "2", "sse0", "zz"), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "sse0", ""), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "sse0", "0x0"), -FI_EINVAL);
	assert_int_equal(env_domain_rc("10", "2", "sse0", "0x10"), -FI_EINVAL);
}

struct two {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq[2];
	struct fid_ep *ep[2];
	fi_addr_t addr[2];
};

/* Endpoint @i of @t, with its own auth key @k if not NULL. */
static int open_ep(struct two *t, int i, const struct fi_sse_auth_key *k)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *info = fi_dupinfo(t->info);
	char name[FI_NAME_MAX];
	size_t len = sizeof(name);
	int ret;

	assert_non_null(info);
	if (k) {
		info->ep_attr->auth_key = malloc(sizeof(*k));
		memcpy(info->ep_attr->auth_key, k, sizeof(*k));
		info->ep_attr->auth_key_size = sizeof(*k);
	}
	assert_fi_ok(fi_cq_open(t->dom, &cq_attr, &t->cq[i], NULL));
	ret = fi_endpoint(t->dom, info, &t->ep[i], NULL);
	fi_freeinfo(info);
	if (ret)
		return ret;
	assert_fi_ok(fi_ep_bind(t->ep[i], &t->av->fid, 0));
	assert_fi_ok(fi_ep_bind(t->ep[i], &t->cq[i]->fid,
				FI_TRANSMIT | FI_RECV));
	assert_fi_ok(fi_enable(t->ep[i]));
	assert_fi_ok(fi_getname(&t->ep[i]->fid, name, &len));
	assert_int_equal(fi_av_insert(t->av, name, 1, &t->addr[i], 0, NULL),
			 1);
	return 0;
}

static void two_open(struct two *t, struct fi_info *info)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	memset(t, 0, sizeof(*t));
	t->info = info;
	assert_fi_ok(fi_fabric(info->fabric_attr, &t->fab, NULL));
	assert_fi_ok(fi_domain(t->fab, info, &t->dom, NULL));
	assert_fi_ok(fi_av_open(t->dom, &av_attr, &t->av, NULL));
}

static void two_close(struct two *t)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (t->ep[i])
			assert_fi_ok(fi_close(&t->ep[i]->fid));
		if (t->cq[i])
			assert_fi_ok(fi_close(&t->cq[i]->fid));
	}
	assert_fi_ok(fi_close(&t->av->fid));
	assert_fi_ok(fi_close(&t->dom->fid));
	assert_fi_ok(fi_close(&t->fab->fid));
	fi_freeinfo(t->info);
}

/* Send from endpoint 0 to endpoint 1 (which posted a receive): the
 * send's completion error (0: it completed), and whether 1 got it. */
static int send_one(struct two *t, bool *received)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	char out[64] = "hello", in[64];
	uint64_t spins;
	ssize_t ret;
	int status = 1;

	assert_fi_ok(fi_recv(t->ep[1], in, sizeof(in), NULL, FI_ADDR_UNSPEC,
			     in));
	assert_fi_ok(fi_send(t->ep[0], out, sizeof(out), NULL, t->addr[1],
			     out));
	*received = false;
	for (spins = 0; status == 1 && spins < 50000000; spins++) {
		ret = fi_cq_read(t->cq[0], &e, 1);
		if (ret == 1)
			status = 0;
		else if (ret == -FI_EAVAIL) {
			assert_int_equal(fi_cq_readerr(t->cq[0], &err, 0), 1);
			status = err.err;
		} else {
			assert_int_equal(ret, -FI_EAGAIN);
		}
		if (fi_cq_read(t->cq[1], &e, 1) == 1)
			*received = true;
	}
	assert_true(status != 1);
	/* a little longer for a receive to show up (it must not) */
	for (spins = 0; spins < 100000; spins++)
		if (fi_cq_read(t->cq[1], &e, 1) == 1)
			*received = true;
	return status;
}

static void test_two_vnis(void **state)
{
	struct fi_sse_auth_key k11 = key(2, 11), k10 = key(2, 10);
	struct two t;
	bool got;

	(void)state;
	clear_env();
	setenv("SLINGSHOT_VNIS", "10", 1);
	setenv("SLINGSHOT_SVC_IDS", "2", 1);
	setenv("SLINGSHOT_DEVICES", "sse0", 1);
	/* the domain on VNI 10 (the variables), one endpoint on 11 */
	two_open(&t, get_info(NULL));
	assert_fi_ok(open_ep(&t, 0, NULL));
	assert_fi_ok(open_ep(&t, 1, &k11));
	assert_int_equal(send_one(&t, &got), FI_ENOTCONN);
	assert_false(got);
	two_close(&t);
	/* the same VNI: as without VNIs */
	two_open(&t, get_info(NULL));
	assert_fi_ok(open_ep(&t, 0, NULL));
	assert_fi_ok(open_ep(&t, 1, &k10));
	assert_int_equal(send_one(&t, &got), 0);
	assert_true(got);
	two_close(&t);
	/* an endpoint key for a service of another user */
	two_open(&t, get_info(NULL));
	k11 = key(3, 20);
	assert_int_equal(open_ep(&t, 0, &k11), -FI_EACCES);
	two_close(&t);
	clear_env();
}

/* fi_mr_regattr of @len bytes at @buf, remote write, key @rkey, with an
 * auth key @k if not NULL (@ksize its size); its result. */
static int mr_regattr(struct two *t, void *buf, size_t len, uint64_t rkey,
		      const struct fi_sse_auth_key *k, size_t ksize,
		      struct fid_mr **mr)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov,
		.iov_count = 1,
		.access = FI_REMOTE_WRITE,
		.requested_key = rkey,
		.auth_key = (uint8_t *)k,
		.auth_key_size = ksize,
		.iface = FI_HMEM_SYSTEM,
	};

	return fi_mr_regattr(t->dom, &attr, 0, mr);
}

/* An fi_write of @len bytes from endpoint 0 into region @rkey of endpoint
 * 1's domain (offset addressing): its completion error, 0 if none. */
static int write_one(struct two *t, uint64_t rkey, const void *src,
		     size_t len)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	uint64_t spins;
	ssize_t ret;
	int status = 1;

	assert_fi_ok(fi_write(t->ep[0], src, len, NULL, t->addr[1], 0, rkey,
			      &e));
	for (spins = 0; status == 1 && spins < 50000000; spins++) {
		ret = fi_cq_read(t->cq[0], &e, 1);
		if (ret == 1) {
			status = 0;
		} else if (ret == -FI_EAVAIL) {
			assert_int_equal(fi_cq_readerr(t->cq[0], &err, 0), 1);
			status = err.err;
		} else {
			assert_int_equal(ret, -FI_EAGAIN);
		}
		fi_cq_read(t->cq[1], &e, 1);	/* (progress at the target) */
	}
	assert_true(status != 1);
	return status;
}

static void test_mr_auth_key(void **state)
{
	struct fi_sse_auth_key k10 = key(2, 10), k11 = key(2, 11);
	struct fi_sse_auth_key other = key(3, 20), none = key(9, 10);
	static char m10[64], m11[64], any[64];
	struct fid_mr *mr10, *mr11, *mrany, *bad;
	struct fi_info *hints, *info;
	char src[64];
	struct two t;

	(void)state;
	clear_env();
	hints = sse_test_hints(FI_MSG | FI_RMA);
	hints->domain_attr->mr_mode = 0;	/* offsets, keys of ours */
	hints->domain_attr->auth_key = malloc(sizeof(k10));
	memcpy(hints->domain_attr->auth_key, &k10, sizeof(k10));
	hints->domain_attr->auth_key_size = sizeof(k10);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	fi_freeinfo(hints);
	/* both endpoints on VNI 10 (the domain's key) */
	two_open(&t, info);
	assert_fi_ok(open_ep(&t, 0, NULL));
	assert_fi_ok(open_ep(&t, 1, NULL));
	assert_fi_ok(mr_regattr(&t, m10, sizeof(m10), 0x10, &k10,
				sizeof(k10), &mr10));
	assert_fi_ok(mr_regattr(&t, m11, sizeof(m11), 0x11, &k11,
				sizeof(k11), &mr11));
	assert_fi_ok(mr_regattr(&t, any, sizeof(any), 0x12, NULL, 0, &mrany));
	/* keys this user may not use, or not keys */
	assert_int_equal(mr_regattr(&t, any, sizeof(any), 0x13, &other,
				    sizeof(other), &bad), -FI_EACCES);
	assert_int_equal(mr_regattr(&t, any, sizeof(any), 0x13, &none,
				    sizeof(none), &bad), -FI_EINVAL);
	assert_int_equal(mr_regattr(&t, any, sizeof(any), 0x13, &k10, 3,
				    &bad), -FI_EINVAL);
	memset(src, 0x3c, sizeof(src));
	/* the region of the initiator's VNI, and one without a key */
	assert_int_equal(write_one(&t, 0x10, src, sizeof(src)), 0);
	assert_memory_equal(m10, src, sizeof(src));
	assert_int_equal(write_one(&t, 0x12, src, sizeof(src)), 0);
	assert_memory_equal(any, src, sizeof(src));
	/* a region restricted to VNI 11: refused, untouched */
	assert_int_equal(write_one(&t, 0x11, src, sizeof(src)), FI_EACCES);
	assert_int_equal(m11[0], 0);
	assert_fi_ok(fi_close(&mr10->fid));
	assert_fi_ok(fi_close(&mr11->fid));
	assert_fi_ok(fi_close(&mrany->fid));
	two_close(&t);
}

static void test_tclass_refused(void **state)
{
	struct fi_sse_auth_key k = key(4, 30);
	struct fi_info *info;
	struct two t;

	(void)state;
	clear_env();
	/* SLINGSHOT_TCS without the default class (BEST_EFFORT, 0x8) */
	setenv("SLINGSHOT_TCS", "0x4", 1);
	two_open(&t, get_info(NULL));
	assert_int_equal(open_ep(&t, 0, NULL), -FI_EACCES);
	two_close(&t);
	info = get_info(NULL);
	info->tx_attr->tclass = FI_TC_BULK_DATA;
	two_open(&t, info);
	assert_fi_ok(open_ep(&t, 0, NULL));
	two_close(&t);
	clear_env();
	/* service 4 allows BULK_DATA only */
	two_open(&t, get_info(&k));
	assert_int_equal(open_ep(&t, 0, NULL), -FI_EACCES);
	two_close(&t);
	info = get_info(&k);
	info->tx_attr->tclass = FI_TC_BULK_DATA;
	two_open(&t, info);
	assert_fi_ok(open_ep(&t, 0, NULL));
	two_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth_key_size),
		cmocka_unit_test(test_hints_key),
		cmocka_unit_test(test_domain_refused),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_two_vnis),
		cmocka_unit_test(test_tclass_refused),
		cmocka_unit_test(test_mr_auth_key),
	};
	FILE *f;
	int fd, ret;

	snprintf(cfg_path, sizeof(cfg_path), "/tmp/sset-auth-%d.cfg",
		 (int)getpid());
	fd = open(cfg_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		perror(cfg_path);
		return 1;
	}
	fprintf(f, "preset = \"switch\";\n"
		   "services = (\n"
		   "  { id = 2; vnis = [10, 11]; },\n"
		   "  { id = 3; vnis = [20]; uids = [%u]; },\n"
		   "  { id = 4; vnis = [30]; tclasses = [\"BULK_DATA\"]; }\n"
		   ");\n", (unsigned)geteuid() + 1);
	fclose(f);
	sse_test_init("private", "auth");
	setenv("FI_SLINGSHOT_EMU_CONFIG", cfg_path, 1);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(cfg_path);
	return ret;
}
