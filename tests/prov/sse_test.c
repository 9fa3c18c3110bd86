/* SPDX-License-Identifier: BSD-2-Clause */
/* Fixtures shared by the provider tests (see sse_test.h). */
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#ifndef SSE_TEST_PROVDIR
#define SSE_TEST_PROVDIR "prov/.libs"
#endif

static void sse_test_watchdog(int sig)
{
	static const char msg[] = "test watchdog: no progress, aborting\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(99);
	_exit(99);	/* automake: hard error */
}

void sse_test_init(const char *store, const char *name)
{
	char fabric[64];

	setenv("FI_PROVIDER_PATH", SSE_TEST_PROVDIR, 0);
	setenv("FI_PROVIDER", SSE_TEST_PROV, 1);
	setenv("FI_SLINGSHOT_EMU_STORE", store, 1);
	snprintf(fabric, sizeof(fabric), "sset-%s-%d", name, (int)getpid());
	setenv("FI_SLINGSHOT_EMU_FABRIC", fabric, 1);
	signal(SIGALRM, sse_test_watchdog);
	alarm(300);
}

int sse_test_users_fabric(const char *name, char *path, size_t size,
			  struct ssemu_fabric **fab, const char *fmt, ...)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_config cfg;
	char err[256];
	va_list ap;
	FILE *fp;
	int fd;

	if (geteuid() != 0) {
		printf("SKIP: test_%s needs root (it shares a fabric with a "
		       "group and runs jobs as other uids)\n", name);
		return 77;
	}
	snprintf(path, size, "/tmp/sset-%s-%d.cfg", name, (int)getpid());
	/* readable by the jobs' users (fchmod: whatever the umask) */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fp = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!fp || fchmod(fd, 0644)) {
		perror(path);
		if (fp)
			fclose(fp);
		else if (fd >= 0)
			close(fd);
		unlink(path);
		return 1;
	}
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	if (fclose(fp)) {
		perror(path);
		unlink(path);
		return 1;
	}
	sse_test_init("shm", name);
	setenv("FI_SLINGSHOT_EMU_CONFIG", path, 1);
	if (ssemu_config_load(path, &cfg, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		unlink(path);
		return 1;
	}
	o.name = getenv("FI_SLINGSHOT_EMU_FABRIC");
	o.config = &cfg;
	if (ssemu_fabric_open(&o, fab, err, sizeof(err))) {
		fprintf(stderr, "fabric %s: %s\n", o.name, err);
		unlink(path);
		return 1;
	}
	return 0;
}

void sse_test_users_close(struct ssemu_fabric *fab, const char *path)
{
	ssemu_fabric_close(fab);
	unlink(path);
}

struct fi_info *sse_test_hints(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	assert_non_null(hints);
	hints->caps = caps;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup(SSE_TEST_PROV);
	return hints;
}

static const struct ssemu_config *sse_test_cfg(void)
{
	static struct ssemu_config cfg;
	static bool done;
	const char *preset = getenv("FI_SLINGSHOT_EMU_PRESET");

	if (!done) {
		assert_int_equal(ssemu_config_preset(preset ? preset : "switch",
						     &cfg), 0);
		done = true;
	}
	return &cfg;
}

size_t sse_test_mtu(void)
{
	return sse_test_cfg()->mtu;
}

size_t sse_test_piece(void)
{
	const struct ssemu_config *cfg = sse_test_cfg();

	return cfg->bufs_per_ep ? cfg->buf_size : SSEMU_INLINE_MAX;
}

void sse_res_open(struct sse_res *r, int nep, const struct sse_res_opts *o)
{
	struct sse_res_opts none = { 0 };
	struct fi_av_attr av_attr = { 0 };
	struct fi_cq_attr cq_attr = { 0 };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_info *hints;
	char name[FI_NAME_MAX];
	int i;

	if (!o)
		o = &none;
	memset(r, 0, sizeof(*r));
	assert_true(nep <= SSE_TEST_MAX_EP);
	r->nep = nep;

	hints = o->hints ? fi_dupinfo(o->hints) :
		sse_test_hints(o->caps ? o->caps : FI_MSG | FI_TAGGED);
	assert_non_null(hints);
	if (o->progress)
		hints->domain_attr->data_progress = o->progress;
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&r->info));
	fi_freeinfo(hints);

	assert_fi_ok(fi_fabric(r->info->fabric_attr, &r->fabric, NULL));
	assert_fi_ok(fi_domain(r->fabric, r->info, &r->domain, NULL));
	av_attr.type = o->av_type ? o->av_type : FI_AV_TABLE;
	assert_fi_ok(fi_av_open(r->domain, &av_attr, &r->av, NULL));

	cq_attr.format = o->format ? o->format : FI_CQ_FORMAT_TAGGED;
	cq_attr.wait_obj = o->cq_wait;
	for (i = 0; i < nep; i++) {
		size_t len = sizeof(name);

		assert_fi_ok(fi_cq_open(r->domain, &cq_attr, &r->cq[i], NULL));
		assert_fi_ok(fi_endpoint(r->domain, r->info, &r->ep[i], NULL));
		assert_fi_ok(fi_ep_bind(r->ep[i], &r->av->fid, 0));
		assert_fi_ok(fi_ep_bind(r->ep[i], &r->cq[i]->fid,
					FI_TRANSMIT | FI_RECV | o->cq_flags));
		if (o->counters) {
			assert_fi_ok(fi_cntr_open(r->domain, &cntr_attr,
						  &r->scntr[i], NULL));
			assert_fi_ok(fi_cntr_open(r->domain, &cntr_attr,
						  &r->rcntr[i], NULL));
			assert_fi_ok(fi_ep_bind(r->ep[i], &r->scntr[i]->fid,
						FI_SEND));
			assert_fi_ok(fi_ep_bind(r->ep[i], &r->rcntr[i]->fid,
						FI_RECV));
		}
		assert_fi_ok(fi_enable(r->ep[i]));
		assert_fi_ok(fi_getname(&r->ep[i]->fid, name, &len));
		assert_int_equal(len, sizeof(struct fi_sse_addr));
		assert_int_equal(fi_av_insert(r->av, name, 1, &r->addr[i], 0,
					      NULL), 1);
	}
}

void sse_res_close(struct sse_res *r)
{
	int i;

	for (i = 0; i < r->nep; i++) {
		if (r->ep[i])
			assert_fi_ok(fi_close(&r->ep[i]->fid));
		if (r->cq[i])
			assert_fi_ok(fi_close(&r->cq[i]->fid));
		if (r->scntr[i])
			assert_fi_ok(fi_close(&r->scntr[i]->fid));
		if (r->rcntr[i])
			assert_fi_ok(fi_close(&r->rcntr[i]->fid));
	}
	if (r->av)
		assert_fi_ok(fi_close(&r->av->fid));
	if (r->domain)
		assert_fi_ok(fi_close(&r->domain->fid));
	if (r->fabric)
		assert_fi_ok(fi_close(&r->fabric->fid));
	fi_freeinfo(r->info);
	memset(r, 0, sizeof(*r));
}

static uint64_t sse_test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One empty read of every other CQ: a peer in this process progresses. */
static void sse_poke_others(struct sse_res *r, struct fid_cq *cq)
{
	struct fi_cq_tagged_entry dummy;
	int i;

	for (i = 0; i < r->nep; i++) {
		if (r->cq[i] && r->cq[i] != cq)
			(void)fi_cq_read(r->cq[i], &dummy, 0);
	}
}

int sse_cq_wait(struct sse_res *r, struct fid_cq *cq, void *entry,
		fi_addr_t *src, int timeout_ms)
{
	uint64_t end = sse_test_now_ms() + (uint64_t)timeout_ms;
	ssize_t ret;

	do {
		ret = src ? fi_cq_readfrom(cq, entry, 1, src) :
			    fi_cq_read(cq, entry, 1);
		if (ret == 1 || ret == -FI_EAVAIL)
			return (int)ret;
		assert_int_equal(ret, -FI_EAGAIN);
		if (r)
			sse_poke_others(r, cq);
	} while (sse_test_now_ms() < end);
	return -FI_ETIMEDOUT;
}

int sse_cq_wait_err(struct sse_res *r, struct fid_cq *cq,
		    struct fi_cq_err_entry *err, int timeout_ms)
{
	uint64_t end = sse_test_now_ms() + (uint64_t)timeout_ms;
	ssize_t ret;

	do {
		ret = fi_cq_readerr(cq, err, 0);
		if (ret == 1)
			return 1;
		assert_int_equal(ret, -FI_EAGAIN);
		(void)fi_cq_read(cq, NULL, 0);
		if (r)
			sse_poke_others(r, cq);
	} while (sse_test_now_ms() < end);
	return -FI_ETIMEDOUT;
}

void sse_progress_for(struct sse_res *r, int ms)
{
	uint64_t end = sse_test_now_ms() + (uint64_t)ms;

	do {
		sse_poke_others(r, NULL);
	} while (sse_test_now_ms() < end);
}

void sse_assert_cq_empty(struct sse_res *r, struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;

	sse_progress_for(r, 20);
	assert_int_equal(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
}

void sse_fill(void *buf, size_t len, unsigned seed)
{
	unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

long sse_check(const void *buf, size_t len, unsigned seed)
{
	const unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (unsigned char)(x >> 16))
			return (long)i;
	}
	return -1;
}

void sse_cq_expect(struct sse_res *r, struct fid_cq *cq, void *ctx,
		   uint64_t flags)
{
	struct fi_cq_tagged_entry e;

	assert_int_equal(sse_cq_wait(r, cq, &e, NULL, SSE_TEST_TIMEOUT_MS), 1);
	assert_ptr_equal(e.op_context, ctx);
	assert_int_equal(e.flags, flags);
}

void sse_cq_expect_err(struct sse_res *r, struct fid_cq *cq, void *ctx,
		       int err)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };

	assert_int_equal(sse_cq_wait(r, cq, &e, NULL, SSE_TEST_TIMEOUT_MS),
			 -FI_EAVAIL);
	assert_int_equal(sse_cq_wait_err(r, cq, &ee, SSE_TEST_TIMEOUT_MS), 1);
	assert_ptr_equal(ee.op_context, ctx);
	assert_int_equal(ee.err, err);
}
