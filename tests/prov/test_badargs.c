/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bad arguments to every fi_* entry point the provider implements (its
 * ops tables: fabric, domain, MR, AV, CQ, counter, EQ, endpoint, CM, msg,
 * tagged, RMA, atomic, collective): NULL pointers, zero and huge counts
 * and lengths, iov lists whose lengths wrap, unknown flags, unknown
 * fi_addrs, objects still in use.  Each call's return code is checked
 * against the libfabric 1.17 man page (or, where the page leaves it open,
 * the provider's man page), and every object is used successfully
 * afterwards: a refused call changes nothing.  Objects cannot be called
 * once closed (their memory is gone); fi_close of an object something
 * still uses is the closed-object case libfabric defines (-FI_EBUSY).
 *
 * Runs on the shm store, so that fabric names have their real meaning
 * (segments that exist or not).  The number of calls checked is printed
 * at the end.
 */
#include <limits.h>
#include <unistd.h>

#include <rdma/fi_collective.h>
#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS
#define HUGE_LEN ((size_t)1 << 40)
#define BADADDR ((fi_addr_t)12345)
#define BADFLAG (1ULL << 55)	/* no FI_* flag */
#define BADTYPE ((enum fi_datatype)1000)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static unsigned long ncalls;

/* One call under test: its return code must be @want. */
#define CHK(want, expr)							\
	do {								\
		long _r = (long)(expr);					\
		ncalls++;						\
		if (_r != (long)(want))					\
			fail_msg("%s = %ld (%s), expected %ld (%s)", #expr, \
				 _r, fi_strerror((int)-_r), (long)(want), \
				 fi_strerror((int)-(long)(want)));	\
	} while (0)
#define OK(expr) CHK(0, expr)

static char sbuf[4096], rbuf[4096];

/* ep[0] sends ep[1] a checked tagged message, both complete. */
static void pingpong(struct sse_res *r, unsigned seed)
{
	struct fi_cq_tagged_entry e;

	memset(rbuf, 0, sizeof(rbuf));
	sse_fill(sbuf, 100, seed);
	OK(fi_trecv(r->ep[1], rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 7, 0,
		    rbuf));
	OK(fi_tsend(r->ep[0], sbuf, 100, NULL, r->addr[1], 7, sbuf));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, rbuf);
	assert_int_equal(e.len, 100);
	assert_int_equal(sse_check(rbuf, 100, seed), -1);
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
}

static void res_open(struct sse_res *r, uint64_t caps)
{
	struct sse_res_opts o = { 0 };

	o.hints = sse_test_hints(FI_MSG | FI_TAGGED | caps);
	o.hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	sse_res_open(r, 2, &o);
	fi_freeinfo(o.hints);
}

/* ------------------------------------------------------------------ */
/* fi_getinfo, fi_fabric and the fabric's ops                           */
/* ------------------------------------------------------------------ */

static void test_fabric(void **state)
{
	struct fi_info *hints, *info = NULL, *ok;
	struct fi_fabric_attr fa;
	struct fid_fabric *fab, *fab2;
	struct fid_domain *dom;
	struct fid_pep *pep;
	struct fid_wait *ws;
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_FD };
	struct fid *fids[1];
	char name[64], none[64];

	snprintf(none, sizeof(none), "sset-badargs-none-%d", (int)getpid());
	hints = sse_test_hints(FI_TAGGED);
	OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &ok));

	/* fi_fabric(3): a fabric that is not there is no data, a name that
	 * cannot be one is invalid */
	fa = *ok->fabric_attr;
	CHK(-FI_EINVAL, fi_fabric(NULL, &fab, NULL));
	fa.name = none;
	CHK(-FI_ENODATA, fi_fabric(&fa, &fab, NULL));
	fa.name = "bad/name";
	CHK(-FI_EINVAL, fi_fabric(&fa, &fab, NULL));
	fa.name = "";
	CHK(-FI_EINVAL, fi_fabric(&fa, &fab, NULL));
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	fa.name = name;
	CHK(-FI_EINVAL, fi_fabric(&fa, &fab, NULL));
	fa.name = ok->fabric_attr->name;
	fa.prov_version = FI_VERSION(99, 0);
	CHK(-FI_ENODATA, fi_fabric(&fa, &fab, NULL));

	/* fi_getinfo(3): no match is -FI_ENODATA */
	hints->fabric_attr->name = strdup(none);
	CHK(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info));
	assert_null(info);
	free(hints->fabric_attr->name);
	hints->fabric_attr->name = NULL;
	hints->caps = FI_COLLECTIVE;
	CHK(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info));
	hints->caps = FI_TAGGED;
	hints->ep_attr->type = FI_EP_MSG;
	CHK(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info));
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->name = strdup("sse99");
	CHK(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info));
	CHK(-FI_ENOSYS, fi_getinfo(FI_VERSION(9, 0), NULL, NULL, 0, NULL,
				   &info));
	fi_freeinfo(hints);

	/* the fabric's own ops */
	OK(fi_fabric(ok->fabric_attr, &fab, NULL));
	CHK(-FI_EINVAL, fi_domain(fab, NULL, &dom, NULL));
	CHK(-FI_EINVAL, fi_domain2(fab, ok, &dom, BADFLAG, NULL));
	CHK(-FI_ENOSYS, fi_passive_ep(fab, ok, &pep, NULL));
	CHK(-FI_EINVAL, fi_wait_open(fab, NULL, &ws));
	CHK(-FI_EINVAL, fi_wait_open(fab, &wa, NULL));
	wa.flags = BADFLAG;
	CHK(-FI_EBADFLAGS, fi_wait_open(fab, &wa, &ws));
	wa.flags = 0;
	wa.wait_obj = FI_WAIT_MUTEX_COND;
	CHK(-FI_ENOSYS, fi_wait_open(fab, &wa, &ws));
	wa.wait_obj = FI_WAIT_FD;
	OK(fi_wait_open(fab, &wa, &ws));
	OK(fi_close(&ws->fid));
	CHK(-FI_EINVAL, fi_trywait(fab, NULL, 1));
	CHK(-FI_EINVAL, fi_trywait(fab, fids, -1));
	fids[0] = NULL;
	CHK(-FI_EINVAL, fi_trywait(fab, fids, 1));
	fids[0] = &fab->fid;
	CHK(-FI_EINVAL, fi_trywait(fab, fids, 1));
	OK(fi_trywait(fab, fids, 0));
	CHK(-FI_ENOSYS, fi_control(&fab->fid, FI_GETWAIT, NULL));
	CHK(-FI_ENOSYS, fi_open_ops(&fab->fid, "x", 0, NULL, NULL));
	/* a second handle on the same fabric, and one still in use */
	OK(fi_fabric(ok->fabric_attr, &fab2, NULL));
	OK(fi_domain(fab, ok, &dom, NULL));
	CHK(-FI_EBUSY, fi_close(&fab->fid));
	CHK(-FI_EINVAL, fi_domain(fab, ok, NULL, NULL));
	OK(fi_close(&dom->fid));
	OK(fi_close(&fab2->fid));
	OK(fi_close(&fab->fid));
	fi_freeinfo(ok);
}

/*
 * fi_fabric's errors say what the emulator said: a fabric of this name
 * with another configuration is -FI_EADDRINUSE (the name is taken), not
 * a generic -FI_EINVAL.  Another fabric that exists is opened.
 */
static void test_fabric_errors(void **state)
{
	struct ssemu_fabric_opts opts = { .store = SSEMU_STORE_SHM };
	struct ssemu_config cfg;
	struct ssemu_fabric *f;
	struct fi_info *hints, *info;
	struct fid_fabric *fab;
	struct fi_fabric_attr fa;
	char err[256], other[64];

	hints = sse_test_hints(FI_TAGGED);
	OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));

	/* this process's own fabric, made with another configuration */
	assert_int_equal(ssemu_config_preset("2switch", &cfg), 0);
	opts.name = getenv("FI_SLINGSHOT_EMU_FABRIC");
	opts.config = &cfg;
	assert_int_equal(ssemu_fabric_open(&opts, &f, err, sizeof(err)), 0);
	CHK(-FI_EADDRINUSE, fi_fabric(info->fabric_attr, &fab, NULL));
	ssemu_fabric_close(f);

	/* another fabric that exists: offered by fi_getinfo, opened */
	snprintf(other, sizeof(other), "sset-badargs-other-%d", (int)getpid());
	opts.name = other;
	assert_int_equal(ssemu_fabric_open(&opts, &f, err, sizeof(err)), 0);
	fi_freeinfo(info);
	hints->fabric_attr->name = strdup(other);
	OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	assert_string_equal(info->fabric_attr->name, other);
	fa = *info->fabric_attr;
	OK(fi_fabric(&fa, &fab, NULL));
	OK(fi_close(&fab->fid));
	ssemu_fabric_close(f);
	/* gone with its last user */
	CHK(-FI_ENODATA, fi_fabric(&fa, &fab, NULL));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* ------------------------------------------------------------------ */
/* Domain, AV                                                           */
/* ------------------------------------------------------------------ */

static void test_domain(void **state)
{
	struct sse_res r;
	struct fi_info *info;
	struct fid_ep *ep;
	struct fid_poll *ps;
	struct fi_poll_attr pa = { 0 };
	struct fid_stx *stx;
	struct fi_collective_attr ca = { 0 };
	struct fi_atomic_attr aa;
	void *ops;

	res_open(&r, FI_ATOMIC | FI_RMA);
	info = fi_dupinfo(r.info);
	CHK(-FI_EINVAL, fi_endpoint(r.domain, NULL, &ep, NULL));
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, NULL, NULL));
	CHK(-FI_EINVAL, fi_endpoint2(r.domain, info, &ep, BADFLAG, NULL));
	info->caps |= FI_COLLECTIVE;
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, &ep, NULL));
	info->caps &= ~FI_COLLECTIVE;
	info->ep_attr->type = FI_EP_MSG;
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, &ep, NULL));
	info->ep_attr->type = FI_EP_RDM;
	info->tx_attr->iov_limit = 1000;
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, &ep, NULL));
	info->tx_attr->iov_limit = 0;
	info->tx_attr->op_flags = BADFLAG;
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, &ep, NULL));
	info->tx_attr->op_flags = 0;
	info->ep_attr->tx_ctx_cnt = 2;
	CHK(-FI_EINVAL, fi_endpoint(r.domain, info, &ep, NULL));
	fi_freeinfo(info);

	CHK(-FI_ENOSYS, fi_scalable_ep(r.domain, r.info, &ep, NULL));
	CHK(-FI_EINVAL, fi_poll_open(r.domain, NULL, &ps));
	CHK(-FI_EINVAL, fi_poll_open(r.domain, &pa, NULL));
	pa.flags = BADFLAG;
	CHK(-FI_EBADFLAGS, fi_poll_open(r.domain, &pa, &ps));
	pa.flags = 0;
	OK(fi_poll_open(r.domain, &pa, &ps));
	OK(fi_close(&ps->fid));
	CHK(-FI_ENOSYS, fi_stx_context(r.domain, NULL, &stx, NULL));
	CHK(-FI_ENOSYS, fi_srx_context(r.domain, NULL, &ep, NULL));
	CHK(-FI_ENOSYS, fi_query_collective(r.domain, FI_BARRIER, &ca, 0));
	CHK(-FI_ENOSYS, fi_open_ops(&r.domain->fid, "x", 0, &ops, NULL));
	CHK(-FI_ENOSYS, fi_control(&r.domain->fid, FI_GETWAIT, NULL));
	CHK(-FI_ENOSYS, fi_domain_bind(r.domain, &r.av->fid, 0));

	/* fi_query_atomic (fi_atomic(3)) */
	CHK(-FI_EINVAL, fi_query_atomic(r.domain, FI_UINT64, FI_SUM, NULL, 0));
	CHK(-FI_EBADFLAGS, fi_query_atomic(r.domain, FI_UINT64, FI_SUM, &aa,
					   BADFLAG));
	CHK(-FI_EINVAL, fi_query_atomic(r.domain, FI_UINT64, FI_SUM, &aa,
					FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC));
	CHK(-FI_EOPNOTSUPP, fi_query_atomic(r.domain, FI_UINT64, FI_SUM, &aa,
					    FI_TAGGED));
	CHK(-FI_EOPNOTSUPP, fi_query_atomic(r.domain, BADTYPE,
					    FI_SUM, &aa, 0));
	CHK(-FI_EOPNOTSUPP, fi_query_atomic(r.domain, FI_UINT64,
					    FI_ATOMIC_OP_LAST, &aa, 0));
	CHK(-FI_EOPNOTSUPP, fi_query_atomic(r.domain, FI_UINT64, FI_CSWAP,
					    &aa, 0));
	CHK(-FI_EOPNOTSUPP, fi_query_atomic(r.domain, (enum fi_datatype)-1,
					    FI_SUM, &aa, 0));
	OK(fi_query_atomic(r.domain, FI_UINT64, FI_SUM, &aa, 0));
	assert_int_equal(aa.size, 8);
	assert_true(aa.count >= 1);

	/* still in use: the domain has endpoints, CQs and an AV */
	CHK(-FI_EBUSY, fi_close(&r.domain->fid));
	CHK(-FI_EBUSY, fi_close(&r.av->fid));
	CHK(-FI_EBUSY, fi_close(&r.cq[0]->fid));
	pingpong(&r, 1);
	sse_res_close(&r);
}

static void test_av(void **state)
{
	static const size_t huge_open[] = {
		((size_t)1 << 60) + 1, ((size_t)1 << 62) + 1, SIZE_MAX,
		(size_t)INT_MAX + 1,
	};
	static const size_t huge_insert[] = {
		((size_t)1 << 59) + 1, ((size_t)1 << 60) + 1,
		((size_t)1 << 63) + 1, SIZE_MAX, (size_t)INT_MAX + 1,
	};
	struct sse_res r;
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;
	struct fid_eq *eq;
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_NONE };
	struct fi_sse_addr a[2], out;
	struct fid_av_set *set;
	struct fi_av_set_attr sa = { 0 };
	fi_addr_t fa[2], bad = BADADDR;
	size_t len, i;
	char str[64];

	res_open(&r, 0);
	len = sizeof(a[0]);
	OK(fi_getname(&r.ep[1]->fid, &a[0], &len));
	a[1] = a[0];

	/* fi_av_open: attr.count is a hint, but not past what an AV holds
	 * (the allocations wrapped, or the doubling never ended) */
	CHK(-FI_EINVAL, fi_av_open(r.domain, NULL, &av, NULL));
	CHK(-FI_EINVAL, fi_av_open(r.domain, &attr, NULL, NULL));
	for (i = 0; i < ARRAY_SIZE(huge_open); i++) {
		attr.count = huge_open[i];
		CHK(-FI_EINVAL, fi_av_open(r.domain, &attr, &av, NULL));
	}
	attr.count = 0;
	attr.type = (enum fi_av_type)77;
	CHK(-FI_EINVAL, fi_av_open(r.domain, &attr, &av, NULL));
	attr.type = FI_AV_TABLE;
	attr.rx_ctx_bits = 4;
	CHK(-FI_ENOSYS, fi_av_open(r.domain, &attr, &av, NULL));
	attr.rx_ctx_bits = 0;
	attr.name = "shared";
	CHK(-FI_ENOSYS, fi_av_open(r.domain, &attr, &av, NULL));
	attr.name = NULL;
	attr.flags = BADFLAG;
	CHK(-FI_EINVAL, fi_av_open(r.domain, &attr, &av, NULL));
	attr.flags = 0;
	/* a large hint is fine */
	attr.count = (size_t)1 << 30;
	OK(fi_av_open(r.domain, &attr, &av, NULL));
	CHK(1, fi_av_insert(av, a, 1, fa, 0, NULL));
	OK(fi_close(&av->fid));
	attr.count = 4;
	OK(fi_av_open(r.domain, &attr, &av, NULL));

	/* fi_av_insert: counts no AV holds are refused before anything is
	 * read, and the AV is left as it was (its table not freed) */
	for (i = 0; i < ARRAY_SIZE(huge_insert); i++)
		CHK(-FI_EINVAL, fi_av_insert(av, a, huge_insert[i], fa, 0,
					     NULL));
	CHK(-FI_EBADFLAGS, fi_av_insert(av, a, 1, fa, BADFLAG, NULL));
	CHK(-FI_EINVAL, fi_av_insert(av, NULL, 1, fa, 0, NULL));
	CHK(-FI_EINVAL, fi_av_insert(av, a, 1, fa, FI_SYNC_ERR, NULL));
	CHK(-FI_EINVAL, fi_av_bind(av, &r.cq[0]->fid, 0));
	CHK(0, fi_av_insert(av, a, 0, fa, 0, NULL));
	CHK(2, fi_av_insert(av, a, 2, fa, 0, NULL));
	assert_int_equal(fa[0], 0);
	assert_int_equal(fa[1], 1);
	/* an address of another fabric: not inserted, FI_ADDR_NOTAVAIL */
	out = a[0];
	out.fabric_id ^= 1;
	CHK(0, fi_av_insert(av, &out, 1, &fa[0], 0, NULL));
	assert_true(fa[0] == FI_ADDR_NOTAVAIL);

	CHK(-FI_EINVAL, fi_av_remove(av, NULL, 1, 0));
	CHK(-FI_EINVAL, fi_av_remove(av, &bad, 1, 0));
	CHK(-FI_EBADFLAGS, fi_av_remove(av, &fa[1], 1, BADFLAG));
	len = sizeof(out);
	CHK(-FI_EINVAL, fi_av_lookup(av, BADADDR, &out, &len));
	CHK(-FI_EINVAL, fi_av_lookup(av, 0, &out, NULL));
	len = sizeof(out);
	CHK(-FI_EINVAL, fi_av_lookup(av, 0, NULL, &len));
	len = 2;
	CHK(-FI_ETOOSMALL, fi_av_lookup(av, 0, &out, &len));
	assert_int_equal(len, sizeof(out));
	len = sizeof(out);
	OK(fi_av_lookup(av, 1, &out, &len));
	assert_memory_equal(&out, &a[1], sizeof(out));

	len = sizeof(str);
	ncalls++;
	assert_null(fi_av_straddr(av, NULL, str, &len));
	ncalls++;
	assert_null(fi_av_straddr(av, &a[0], str, NULL));
	len = sizeof(str);
	ncalls++;
	assert_non_null(fi_av_straddr(av, &a[0], str, &len));
	CHK(-FI_EINVAL, fi_av_insertsvc(av, NULL, NULL, fa, 0, NULL));
	CHK(-FI_ENOSYS, fi_av_set(av, &sa, &set, NULL));
	CHK(-FI_EINVAL, fi_av_bind(av, NULL, 0));

	/* asynchronous AV: an EQ is needed and can be bound once */
	OK(fi_eq_open(r.fabric, &eqa, &eq, NULL));
	OK(fi_close(&av->fid));
	attr.flags = FI_EVENT;
	OK(fi_av_open(r.domain, &attr, &av, NULL));
	CHK(-FI_ENOEQ, fi_av_insert(av, a, 1, fa, 0, NULL));
	CHK(-FI_EINVAL, fi_av_bind(av, &eq->fid, BADFLAG));
	OK(fi_av_bind(av, &eq->fid, 0));
	CHK(-FI_EINVAL, fi_av_bind(av, &eq->fid, 0));
	CHK(-FI_EBUSY, fi_close(&eq->fid));
	OK(fi_close(&av->fid));
	OK(fi_close(&eq->fid));

	pingpong(&r, 2);
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* MR                                                                   */
/* ------------------------------------------------------------------ */

static void test_mr(void **state)
{
	struct sse_res r;
	struct fid_mr *mr, *mr2;
	struct fid_cntr *cntr;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct iovec iov[5], gap[2];
	struct fi_mr_attr ma = { 0 };
	static char mem[4096];
	size_t i;

	res_open(&r, FI_RMA);
	for (i = 0; i < 5; i++) {
		iov[i].iov_base = mem + i * 512;
		iov[i].iov_len = 512;
	}
	CHK(-FI_EINVAL, fi_mr_reg(r.domain, mem, 64, FI_REMOTE_WRITE, 0, 0, 0,
				  NULL, NULL));
	CHK(-FI_EINVAL, fi_mr_reg(r.domain, mem, 64, BADFLAG, 0, 0, 0, &mr,
				  NULL));
	CHK(-FI_EBADFLAGS, fi_mr_reg(r.domain, mem, 64, FI_REMOTE_WRITE, 0, 0,
				     BADFLAG, &mr, NULL));
	CHK(-FI_EINVAL, fi_mr_reg(r.domain, NULL, 64, FI_REMOTE_WRITE, 0, 0,
				  0, &mr, NULL));
	CHK(-FI_EINVAL, fi_mr_regv(r.domain, iov, 5, FI_SEND, 0, 0, 0, &mr,
				   NULL));
	CHK(-FI_EINVAL, fi_mr_regv(r.domain, NULL, 1, FI_SEND, 0, 0, 0, &mr,
				   NULL));
	/* remote access over segments that are not adjacent */
	gap[0].iov_base = mem;
	gap[0].iov_len = 256;
	gap[1].iov_base = mem + 512;
	gap[1].iov_len = 256;
	CHK(-FI_EINVAL, fi_mr_regv(r.domain, gap, 2, FI_REMOTE_READ, 0, 0, 0,
				   &mr, NULL));
	CHK(-FI_EINVAL, fi_mr_regattr(r.domain, NULL, 0, &mr));
	ma.mr_iov = iov;
	ma.iov_count = 1;
	ma.access = FI_REMOTE_READ;
	ma.iface = FI_HMEM_CUDA;
	CHK(-FI_ENOSYS, fi_mr_regattr(r.domain, &ma, 0, &mr));
	ma.iface = FI_HMEM_SYSTEM;
	/* the ops reached through another object */
	CHK(-FI_EINVAL, r.domain->mr->regattr(&r.av->fid, &ma, 0, &mr));

	OK(fi_mr_regattr(r.domain, &ma, 0, &mr));
	OK(fi_mr_enable(mr));
	CHK(-FI_ENOSYS, fi_control(&mr->fid, FI_GETWAIT, NULL));
	CHK(-FI_EINVAL, fi_mr_bind(mr, NULL, 0));
	CHK(-FI_EINVAL, fi_mr_bind(mr, &r.av->fid, 0));
	OK(fi_cntr_open(r.domain, &ca, &cntr, NULL));
	/* a counter binds to any region (this domain's mr_mode has no
	 * FI_MR_RMA_EVENT), but not twice to one */
	OK(fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE));
	CHK(-FI_EINVAL, fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE));
	OK(fi_mr_reg(r.domain, mem, 64, FI_REMOTE_WRITE, 0, 0, FI_RMA_EVENT,
		     &mr2, NULL));
	CHK(-FI_EBADFLAGS, fi_mr_bind(mr2, &cntr->fid, BADFLAG));
	CHK(-FI_EBADFLAGS, fi_mr_bind(mr2, &cntr->fid, 0));
	OK(fi_mr_bind(mr2, &cntr->fid, FI_REMOTE_WRITE));
	CHK(-FI_EINVAL, fi_mr_bind(mr2, &cntr->fid, FI_REMOTE_WRITE));
	CHK(-FI_EBUSY, fi_close(&cntr->fid));
	OK(fi_close(&mr2->fid));
	/* still bound to the first region */
	CHK(-FI_EBUSY, fi_close(&cntr->fid));
	CHK(-FI_EBUSY, fi_close(&r.domain->fid));
	OK(fi_close(&mr->fid));
	OK(fi_close(&cntr->fid));
	pingpong(&r, 3);
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* CQ, counter, EQ                                                      */
/* ------------------------------------------------------------------ */

static void test_cq(void **state)
{
	struct sse_res r;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fid_cq *cq;
	fi_addr_t src;
	enum fi_wait_obj wo;
	size_t thr = 1;
	int fd;

	res_open(&r, 0);
	CHK(-FI_EINVAL, fi_cq_open(r.domain, NULL, &cq, NULL));
	CHK(-FI_EINVAL, fi_cq_open(r.domain, &attr, NULL, NULL));
	attr.flags = BADFLAG;
	CHK(-FI_EBADFLAGS, fi_cq_open(r.domain, &attr, &cq, NULL));
	attr.flags = 0;
	attr.format = (enum fi_cq_format)99;
	CHK(-FI_ENOSYS, fi_cq_open(r.domain, &attr, &cq, NULL));
	attr.format = FI_CQ_FORMAT_TAGGED;
	/* FI_WAIT_SET without a wait set */
	attr.wait_obj = FI_WAIT_SET;
	CHK(-FI_EINVAL, fi_cq_open(r.domain, &attr, &cq, NULL));
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	CHK(-FI_ENOSYS, fi_cq_open(r.domain, &attr, &cq, NULL));
	attr.wait_obj = FI_WAIT_NONE;
	attr.wait_cond = (enum fi_cq_wait_cond)9;
	CHK(-FI_EINVAL, fi_cq_open(r.domain, &attr, &cq, NULL));
	attr.wait_cond = FI_CQ_COND_NONE;
	attr.size = SIZE_MAX;	/* a hint: the ring grows as needed */
	OK(fi_cq_open(r.domain, &attr, &cq, NULL));

	CHK(-FI_EINVAL, fi_cq_read(cq, NULL, 1));
	CHK(-FI_EAGAIN, fi_cq_read(cq, NULL, 0));
	CHK(-FI_EAGAIN, fi_cq_read(cq, &e, 1));
	CHK(-FI_EINVAL, fi_cq_readfrom(cq, NULL, 4, &src));
	CHK(-FI_EAGAIN, fi_cq_readfrom(cq, &e, 1, &src));
	CHK(-FI_EINVAL, fi_cq_readerr(cq, NULL, 0));
	CHK(-FI_EBADFLAGS, fi_cq_readerr(cq, &err, BADFLAG));
	CHK(-FI_EAGAIN, fi_cq_readerr(cq, &err, 0));
	CHK(-FI_EINVAL, fi_cq_sread(cq, NULL, 1, NULL, 0));
	CHK(-FI_EAGAIN, fi_cq_sread(cq, &e, 1, NULL, 0));
	CHK(-FI_EAGAIN, fi_cq_sread(cq, &e, 1, &thr, 0));
	CHK(-FI_EAGAIN, fi_cq_sreadfrom(cq, &e, 1, &src, NULL, 1));
	OK(fi_cq_signal(cq));
	CHK(-FI_EAGAIN, fi_cq_sread(cq, &e, 1, NULL, -1));
	ncalls++;
	assert_non_null(fi_cq_strerror(cq, FI_EIO, NULL, NULL, 0));
	ncalls++;
	assert_non_null(fi_cq_strerror(cq, -12345, NULL, NULL, 0));
	CHK(-FI_ENODATA, fi_control(&cq->fid, FI_GETWAIT, &fd));
	CHK(-FI_EINVAL, fi_control(&cq->fid, FI_GETWAITOBJ, NULL));
	OK(fi_control(&cq->fid, FI_GETWAITOBJ, &wo));
	CHK(-FI_ENOSYS, fi_control(&cq->fid, 9999, NULL));
	CHK(-FI_ENOSYS, cq->fid.ops->bind(&cq->fid, &r.av->fid, 0));
	OK(fi_close(&cq->fid));

	/* a CQ bound to an endpoint is busy; the endpoint still works */
	CHK(-FI_EBUSY, fi_close(&r.cq[1]->fid));
	pingpong(&r, 4);
	sse_res_close(&r);
}

static void test_cntr(void **state)
{
	struct sse_res r;
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;
	enum fi_wait_obj wo;

	res_open(&r, 0);
	CHK(-FI_EINVAL, fi_cntr_open(r.domain, &attr, NULL, NULL));
	attr.events = (enum fi_cntr_events)5;
	CHK(-FI_ENOSYS, fi_cntr_open(r.domain, &attr, &cntr, NULL));
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.flags = BADFLAG;
	CHK(-FI_EBADFLAGS, fi_cntr_open(r.domain, &attr, &cntr, NULL));
	attr.flags = 0;
	attr.wait_obj = FI_WAIT_FD;
	CHK(-FI_ENOSYS, fi_cntr_open(r.domain, &attr, &cntr, NULL));
	attr.wait_obj = FI_WAIT_UNSPEC;
	OK(fi_cntr_open(r.domain, &attr, &cntr, NULL));

	CHK(-FI_ETIMEDOUT, fi_cntr_wait(cntr, UINT64_MAX, 0));
	OK(fi_cntr_add(cntr, UINT64_MAX));
	OK(fi_cntr_add(cntr, 2));	/* wraps, as unsigned counters do */
	CHK(1, fi_cntr_read(cntr));
	OK(fi_cntr_set(cntr, 0));
	OK(fi_cntr_adderr(cntr, 3));
	CHK(3, fi_cntr_readerr(cntr));
	OK(fi_cntr_seterr(cntr, 0));
	CHK(-FI_EINVAL, fi_control(&cntr->fid, FI_GETWAITOBJ, NULL));
	OK(fi_control(&cntr->fid, FI_GETWAITOBJ, &wo));
	CHK(-FI_ENOSYS, fi_control(&cntr->fid, FI_GETWAIT, &wo));

	/* fi_ep_bind of a counter: flags name what it counts */
	CHK(-FI_EBADFLAGS, fi_ep_bind(r.ep[0], &cntr->fid, 0));
	CHK(-FI_EBADFLAGS, fi_ep_bind(r.ep[0], &cntr->fid, BADFLAG));
	OK(fi_ep_bind(r.ep[0], &cntr->fid, FI_SEND));
	CHK(-FI_EINVAL, fi_ep_bind(r.ep[0], &cntr->fid, FI_SEND));
	CHK(-FI_EBUSY, fi_close(&cntr->fid));
	pingpong(&r, 5);
	CHK(1, fi_cntr_read(cntr));
	OK(fi_cntr_wait(cntr, 1, 0));
	assert_fi_ok(fi_close(&r.ep[0]->fid));
	r.ep[0] = NULL;
	OK(fi_close(&cntr->fid));
	sse_res_close(&r);
}

static void test_eq(void **state)
{
	struct sse_res r;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry in = { .data = 42 }, out;
	struct fid_eq *eq;
	uint32_t ev;
	int fd;

	res_open(&r, 0);
	CHK(-FI_EINVAL, fi_eq_open(r.fabric, NULL, &eq, NULL));
	CHK(-FI_EINVAL, fi_eq_open(r.fabric, &attr, NULL, NULL));
	attr.flags = BADFLAG;
	CHK(-FI_EBADFLAGS, fi_eq_open(r.fabric, &attr, &eq, NULL));
	attr.flags = FI_WRITE;
	attr.wait_obj = FI_WAIT_SET;
	CHK(-FI_EINVAL, fi_eq_open(r.fabric, &attr, &eq, NULL));
	attr.wait_obj = FI_WAIT_UNSPEC;
	OK(fi_eq_open(r.fabric, &attr, &eq, NULL));

	/* fi_eq_write: the size wrapped, the copy ran over the heap and
	 * fi_close freed twice */
	CHK(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, &in, SIZE_MAX, 0));
	CHK(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, &in, SIZE_MAX - 8, 0));
	CHK(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, &in, (size_t)SSIZE_MAX + 1,
				    0));
	CHK(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, &in, HUGE_LEN, 0));
	CHK(-FI_EINVAL, fi_eq_write(eq, FI_NOTIFY, NULL, sizeof(in), 0));
	CHK(-FI_EBADFLAGS, fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in),
				       BADFLAG));
	CHK(-FI_EAGAIN, fi_eq_read(eq, &ev, &out, sizeof(out), 0));

	CHK(-FI_EINVAL, fi_eq_read(eq, &ev, NULL, sizeof(out), 0));
	CHK(-FI_EBADFLAGS, fi_eq_read(eq, &ev, &out, sizeof(out), BADFLAG));
	CHK(-FI_EINVAL, fi_eq_readerr(eq, NULL, 0));
	CHK(-FI_EBADFLAGS, fi_eq_readerr(eq, &err, BADFLAG));
	CHK(-FI_EAGAIN, fi_eq_readerr(eq, &err, 0));
	CHK(-FI_EINVAL, fi_eq_sread(eq, &ev, NULL, 8, 0, 0));
	CHK(-FI_EBADFLAGS, fi_eq_sread(eq, &ev, &out, sizeof(out), 0,
				       BADFLAG));
	CHK(-FI_EAGAIN, fi_eq_sread(eq, &ev, &out, sizeof(out), 0, 0));
	CHK(-FI_ENODATA, fi_control(&eq->fid, FI_GETWAIT, &fd));
	CHK(-FI_ENOSYS, fi_control(&eq->fid, 9999, NULL));
	CHK(-FI_ENOSYS, eq->fid.ops->bind(&eq->fid, &r.av->fid, 0));
	ncalls++;
	assert_non_null(fi_eq_strerror(eq, FI_EIO, NULL, NULL, 0));

	/* the EQ works: an event in, too small a buffer, then out */
	CHK(sizeof(in), fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0));
	CHK(-FI_ETOOSMALL, fi_eq_read(eq, &ev, &out, sizeof(out) - 1, 0));
	CHK(sizeof(out), fi_eq_read(eq, &ev, &out, sizeof(out), FI_PEEK));
	CHK(sizeof(out), fi_eq_sread(eq, &ev, &out, sizeof(out), -1, 0));
	assert_int_equal(ev, FI_NOTIFY);
	assert_int_equal(out.data, 42);
	CHK(-FI_EAGAIN, fi_eq_read(eq, &ev, &out, sizeof(out), 0));
	OK(fi_close(&eq->fid));

	/* FI_WAIT_NONE: no blocking read */
	attr.wait_obj = FI_WAIT_NONE;
	OK(fi_eq_open(r.fabric, &attr, &eq, NULL));
	CHK(-FI_EINVAL, fi_eq_sread(eq, &ev, &out, sizeof(out), 0, 0));
	OK(fi_close(&eq->fid));
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* Endpoint, CM                                                         */
/* ------------------------------------------------------------------ */

static void test_ep(void **state)
{
	struct sse_res r;
	struct fid_ep *ep, *tx;
	struct fid_cq *cq;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct fid_mc *mc;
	uint64_t flags;
	size_t optval, optlen, len;
	char name[64];

	res_open(&r, 0);

	/* not enabled yet: refused, not lost */
	OK(fi_endpoint(r.domain, r.info, &ep, NULL));
	OK(fi_cq_open(r.domain, &cqa, &cq, NULL));
	CHK(-FI_EOPBADSTATE, fi_send(ep, sbuf, 1, NULL, r.addr[1], NULL));
	CHK(-FI_EOPBADSTATE, fi_recv(ep, rbuf, 1, NULL, FI_ADDR_UNSPEC,
				     NULL));
	CHK(-FI_EOPBADSTATE, ep->ops->rx_size_left(ep));
	CHK(-FI_EOPBADSTATE, ep->ops->tx_size_left(ep));
	CHK(-FI_ENOAV, fi_enable(ep));
	CHK(-FI_EINVAL, fi_ep_bind(ep, NULL, 0));
	CHK(-FI_EBADFLAGS, fi_ep_bind(ep, &r.av->fid, BADFLAG));
	OK(fi_ep_bind(ep, &r.av->fid, 0));
	CHK(-FI_EINVAL, fi_ep_bind(ep, &r.av->fid, 0));
	CHK(-FI_ENOCQ, fi_enable(ep));
	CHK(-FI_EINVAL, fi_ep_bind(ep, &cq->fid, 0));
	CHK(-FI_EBADFLAGS, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | BADFLAG));
	OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	CHK(-FI_EINVAL, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
	CHK(-FI_EINVAL, fi_ep_bind(ep, &r.domain->fid, 0));
	OK(fi_enable(ep));
	CHK(-FI_EBUSY, fi_close(&cq->fid));
	OK(fi_close(&ep->fid));
	OK(fi_close(&cq->fid));

	/* fi_control */
	CHK(-FI_EINVAL, fi_control(&r.ep[0]->fid, FI_GETOPSFLAG, NULL));
	flags = 0;
	CHK(-FI_EINVAL, fi_control(&r.ep[0]->fid, FI_GETOPSFLAG, &flags));
	flags = FI_TRANSMIT | FI_RECV;
	CHK(-FI_EINVAL, fi_control(&r.ep[0]->fid, FI_GETOPSFLAG, &flags));
	flags = FI_TRANSMIT | BADFLAG;
	CHK(-FI_EINVAL, fi_control(&r.ep[0]->fid, FI_SETOPSFLAG, &flags));
	flags = FI_RECV | FI_INJECT;
	CHK(-FI_EINVAL, fi_control(&r.ep[0]->fid, FI_SETOPSFLAG, &flags));
	CHK(-FI_ENOSYS, fi_control(&r.ep[0]->fid, 9999, NULL));
	flags = FI_TRANSMIT;
	OK(fi_control(&r.ep[0]->fid, FI_GETOPSFLAG, &flags));

	/* options (fi_endpoint(3)) */
	optlen = sizeof(optval);
	CHK(-FI_ENOPROTOOPT, fi_getopt(&r.ep[0]->fid, 99,
				       FI_OPT_MIN_MULTI_RECV, &optval,
				       &optlen));
	CHK(-FI_ENOPROTOOPT, fi_getopt(&r.ep[0]->fid, FI_OPT_ENDPOINT, 9999,
				       &optval, &optlen));
	CHK(-FI_EINVAL, fi_getopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				  FI_OPT_MIN_MULTI_RECV, NULL, &optlen));
	CHK(-FI_EINVAL, fi_getopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				  FI_OPT_MIN_MULTI_RECV, &optval, NULL));
	optlen = 1;
	CHK(-FI_ETOOSMALL, fi_getopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				     FI_OPT_MIN_MULTI_RECV, &optval,
				     &optlen));
	CHK(-FI_EINVAL, fi_setopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				  FI_OPT_MIN_MULTI_RECV, NULL,
				  sizeof(optval)));
	CHK(-FI_EINVAL, fi_setopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				  FI_OPT_MIN_MULTI_RECV, &optval, 1));
	CHK(-FI_ENOPROTOOPT, fi_setopt(&r.ep[0]->fid, 99,
				       FI_OPT_MIN_MULTI_RECV, &optval,
				       sizeof(optval)));
	CHK(-FI_ENOPROTOOPT, fi_setopt(&r.ep[0]->fid, FI_OPT_ENDPOINT,
				       9999, &optval, sizeof(optval)));
	optlen = sizeof(optval);
	OK(fi_getopt(&r.ep[0]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		     &optval, &optlen));

	CHK(-FI_ENOSYS, fi_tx_context(r.ep[0], 0, NULL, &tx, NULL));
	CHK(-FI_ENOSYS, fi_rx_context(r.ep[0], 0, NULL, &tx, NULL));
	ncalls++;
	assert_true(r.ep[0]->ops->tx_size_left(r.ep[0]) > 0);
	ncalls++;
	assert_true(r.ep[0]->ops->rx_size_left(r.ep[0]) > 0);

	/* fi_cancel: nothing of that context is posted */
	CHK(-FI_ENOENT, fi_cancel(&r.ep[0]->fid, sbuf));
	/* a receive "larger than memory" is fine until data comes */
	OK(fi_recv(r.ep[1], rbuf, SIZE_MAX, NULL, FI_ADDR_UNSPEC, &len));
	OK(fi_cancel(&r.ep[1]->fid, &len));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO),
			 -FI_EAVAIL);
	CHK(1, fi_cq_readerr(r.cq[1], &err, 0));
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, &len);

	/* connection management: only fi_getname means something */
	CHK(-FI_EINVAL, fi_getname(&r.ep[0]->fid, name, NULL));
	len = 2;
	CHK(-FI_ETOOSMALL, fi_getname(&r.ep[0]->fid, name, &len));
	assert_int_equal(len, sizeof(struct fi_sse_addr));
	CHK(-FI_EINVAL, fi_getname(&r.ep[0]->fid, NULL, &len));
	CHK(-FI_ENOSYS, fi_setname(&r.ep[0]->fid, name, len));
	CHK(-FI_ENOSYS, fi_getpeer(r.ep[0], name, &len));
	CHK(-FI_ENOSYS, fi_connect(r.ep[0], name, NULL, 0));
	CHK(-FI_ENOSYS, fi_accept(r.ep[0], NULL, 0));
	CHK(-FI_ENOSYS, fi_shutdown(r.ep[0], 0));
	CHK(-FI_ENOSYS, fi_join(r.ep[0], name, 0, &mc, NULL));
	CHK(-FI_ENOSYS, fi_barrier(r.ep[0], 0, NULL));
	CHK(-FI_ENOSYS, fi_broadcast(r.ep[0], sbuf, 1, NULL, 0, 0, FI_UINT8,
				     0, NULL));
	CHK(-FI_ENOSYS, fi_allreduce(r.ep[0], sbuf, 1, NULL, rbuf, NULL, 0,
				     FI_UINT8, FI_SUM, 0, NULL));
	CHK(-FI_ENOSYS, fi_open_ops(&r.ep[0]->fid, "x", 0, NULL, NULL));

	pingpong(&r, 6);
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* Messages, tagged messages                                            */
/* ------------------------------------------------------------------ */

/* iov lists whose lengths add up past SIZE_MAX: 1 byte once went out */
static void wrap_iov(struct iovec *iov)
{
	iov[0].iov_base = sbuf;
	iov[0].iov_len = SIZE_MAX;
	iov[1].iov_base = sbuf;
	iov[1].iov_len = 2;
}

static void test_msg(void **state)
{
	struct sse_res r;
	struct iovec iov[5], wiov[2];
	struct fi_msg msg = { 0 };
	struct fi_msg_tagged tmsg = { 0 };
	struct fi_cq_tagged_entry e;
	size_t i;

	res_open(&r, FI_DIRECTED_RECV | FI_MULTI_RECV);
	for (i = 0; i < 5; i++) {
		iov[i].iov_base = sbuf + i;
		iov[i].iov_len = 1;
	}
	wrap_iov(wiov);

	/* fi_send and friends */
	CHK(-FI_EINVAL, fi_send(r.ep[0], sbuf, 1, NULL, BADADDR, NULL));
	/* (a NULL buffer with a length is accepted and fails at both ends
	 * with FI_EFAULT: tests/prov/test_fault) */
	CHK(-FI_EMSGSIZE, fi_send(r.ep[0], sbuf, HUGE_LEN, NULL, r.addr[1],
				  NULL));
	CHK(-FI_EMSGSIZE, fi_send(r.ep[0], sbuf, SIZE_MAX, NULL, r.addr[1],
				  NULL));
	CHK(-FI_EINVAL, fi_sendv(r.ep[0], iov, NULL, 5, r.addr[1], NULL));
	CHK(-FI_EINVAL, fi_sendv(r.ep[0], NULL, NULL, 1, r.addr[1], NULL));
	CHK(-FI_EINVAL, fi_sendv(r.ep[0], wiov, NULL, 2, r.addr[1], NULL));
	CHK(-FI_EINVAL, fi_sendmsg(r.ep[0], NULL, 0));
	msg.msg_iov = wiov;
	msg.iov_count = 2;
	msg.addr = r.addr[1];
	CHK(-FI_EINVAL, fi_sendmsg(r.ep[0], &msg, 0));
	msg.msg_iov = iov;
	msg.iov_count = 1;
	CHK(-FI_EBADFLAGS, fi_sendmsg(r.ep[0], &msg, BADFLAG));
	CHK(-FI_EBADFLAGS, fi_sendmsg(r.ep[0], &msg, FI_PEEK));
	msg.addr = BADADDR;
	CHK(-FI_EINVAL, fi_sendmsg(r.ep[0], &msg, 0));
	CHK(-FI_EINVAL, fi_inject(r.ep[0], sbuf, 1, BADADDR));
	CHK(-FI_EINVAL, fi_inject(r.ep[0], sbuf, sizeof(sbuf) * 64,
				  r.addr[1]));
	CHK(-FI_EINVAL, fi_injectdata(r.ep[0], sbuf, 1, 0, BADADDR));
	CHK(-FI_EINVAL, fi_senddata(r.ep[0], sbuf, 1, NULL, 0, BADADDR,
				    NULL));
	CHK(-FI_EMSGSIZE, fi_senddata(r.ep[0], sbuf, HUGE_LEN, NULL, 0,
				      r.addr[1], NULL));

	/* fi_recv and friends; a directed receive names an inserted peer */
	CHK(-FI_EINVAL, fi_recv(r.ep[1], rbuf, 1, NULL, BADADDR, NULL));
	CHK(-FI_EINVAL, fi_recv(r.ep[1], NULL, 1, NULL, FI_ADDR_UNSPEC,
				NULL));
	CHK(-FI_EINVAL, fi_recvv(r.ep[1], iov, NULL, 5, FI_ADDR_UNSPEC,
				 NULL));
	CHK(-FI_EINVAL, fi_recvv(r.ep[1], wiov, NULL, 2, FI_ADDR_UNSPEC,
				 NULL));
	CHK(-FI_EINVAL, fi_recvv(r.ep[1], iov, NULL, 1, BADADDR, NULL));
	CHK(-FI_EINVAL, fi_recvmsg(r.ep[1], NULL, 0));
	msg.addr = BADADDR;
	CHK(-FI_EINVAL, fi_recvmsg(r.ep[1], &msg, 0));
	msg.addr = FI_ADDR_UNSPEC;
	CHK(-FI_EBADFLAGS, fi_recvmsg(r.ep[1], &msg, BADFLAG));
	msg.msg_iov = wiov;
	msg.iov_count = 2;
	CHK(-FI_EINVAL, fi_recvmsg(r.ep[1], &msg, 0));
	/* FI_MULTI_RECV takes one buffer */
	CHK(-FI_EINVAL, fi_recvmsg(r.ep[1], &msg, FI_MULTI_RECV));

	/* the tagged ones */
	CHK(-FI_EINVAL, fi_tsend(r.ep[0], sbuf, 1, NULL, BADADDR, 1, NULL));
	CHK(-FI_EMSGSIZE, fi_tsend(r.ep[0], sbuf, HUGE_LEN, NULL, r.addr[1],
				   1, NULL));
	CHK(-FI_EINVAL, fi_tsendv(r.ep[0], wiov, NULL, 2, r.addr[1], 1,
				  NULL));
	CHK(-FI_EINVAL, fi_tsendv(r.ep[0], iov, NULL, 5, r.addr[1], 1,
				  NULL));
	CHK(-FI_EINVAL, fi_tsendmsg(r.ep[0], NULL, 0));
	tmsg.msg_iov = wiov;
	tmsg.iov_count = 2;
	tmsg.addr = r.addr[1];
	CHK(-FI_EINVAL, fi_tsendmsg(r.ep[0], &tmsg, 0));
	tmsg.msg_iov = iov;
	tmsg.iov_count = 1;
	CHK(-FI_EBADFLAGS, fi_tsendmsg(r.ep[0], &tmsg, BADFLAG));
	CHK(-FI_EINVAL, fi_tinject(r.ep[0], sbuf, 1, BADADDR, 1));
	CHK(-FI_EMSGSIZE, fi_tinject(r.ep[0], sbuf, HUGE_LEN, r.addr[1], 1));
	CHK(-FI_EINVAL, fi_tsenddata(r.ep[0], sbuf, 1, NULL, 0, BADADDR, 1,
				     NULL));
	CHK(-FI_EINVAL, fi_tinjectdata(r.ep[0], sbuf, 1, 0, BADADDR, 1));
	CHK(-FI_EINVAL, fi_trecv(r.ep[1], rbuf, 1, NULL, BADADDR, 1, 0,
				 NULL));
	CHK(-FI_EINVAL, fi_trecvv(r.ep[1], wiov, NULL, 2, FI_ADDR_UNSPEC, 1,
				  0, NULL));
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], NULL, 0));
	tmsg.addr = BADADDR;
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], &tmsg, 0));
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], &tmsg, FI_PEEK));
	tmsg.addr = FI_ADDR_UNSPEC;
	CHK(-FI_EBADFLAGS, fi_trecvmsg(r.ep[1], &tmsg, BADFLAG));
	CHK(-FI_EBADFLAGS, fi_trecvmsg(r.ep[1], &tmsg, FI_PEEK | BADFLAG));
	/* FI_DISCARD goes with FI_PEEK or FI_CLAIM; a claim needs a peek */
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], &tmsg, FI_DISCARD));
	tmsg.context = &e;
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], &tmsg, FI_CLAIM));
	tmsg.msg_iov = wiov;
	tmsg.iov_count = 5;
	CHK(-FI_EINVAL, fi_trecvmsg(r.ep[1], &tmsg, FI_PEEK));

	/* nothing was posted or sent by any of it */
	sse_progress_for(&r, 50);
	sse_assert_cq_empty(&r, r.cq[0]);
	sse_assert_cq_empty(&r, r.cq[1]);
	pingpong(&r, 7);
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* RMA, atomics                                                         */
/* ------------------------------------------------------------------ */

static void test_rma(void **state)
{
	static uint64_t target[64];
	struct sse_res r;
	struct fid_mr *mr;
	struct iovec wiov[2], iov[5];
	struct fi_rma_iov rma[5], wrma[2];
	struct fi_msg_rma msg = { 0 };
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	uint64_t addr, key;
	size_t i;

	res_open(&r, FI_RMA);
	OK(fi_mr_reg(r.domain, target, sizeof(target),
		     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	addr = (uint64_t)(uintptr_t)target;
	key = fi_mr_key(mr);
	wrap_iov(wiov);
	for (i = 0; i < 5; i++) {
		iov[i].iov_base = sbuf + 8 * i;
		iov[i].iov_len = 8;
		rma[i].addr = addr + 8 * i;
		rma[i].len = 8;
		rma[i].key = key;
	}
	wrma[0] = rma[0];
	wrma[0].len = SIZE_MAX;
	wrma[1] = rma[1];
	wrma[1].len = 9;

	CHK(-FI_EINVAL, fi_write(r.ep[0], sbuf, 8, NULL, BADADDR, addr, key,
				 NULL));
	CHK(-FI_EINVAL, fi_write(r.ep[0], NULL, 8, NULL, r.addr[1], addr, key,
				 NULL));
	CHK(-FI_EINVAL, fi_write(r.ep[0], sbuf, HUGE_LEN, NULL, r.addr[1],
				 addr, key, NULL));
	CHK(-FI_EINVAL, fi_read(r.ep[0], rbuf, HUGE_LEN, NULL, r.addr[1],
				addr, key, NULL));
	CHK(-FI_EINVAL, fi_read(r.ep[0], rbuf, 8, NULL, BADADDR, addr, key,
				NULL));
	CHK(-FI_EINVAL, fi_writev(r.ep[0], wiov, NULL, 2, r.addr[1], addr,
				  key, NULL));
	CHK(-FI_EINVAL, fi_writev(r.ep[0], iov, NULL, 5, r.addr[1], addr,
				  key, NULL));
	CHK(-FI_EINVAL, fi_readv(r.ep[0], wiov, NULL, 2, r.addr[1], addr,
				 key, NULL));
	CHK(-FI_EINVAL, fi_inject_write(r.ep[0], sbuf, 8, BADADDR, addr,
					key));
	CHK(-FI_EINVAL, fi_inject_write(r.ep[0], sbuf, sizeof(sbuf) * 64,
					r.addr[1], addr, key));
	CHK(-FI_EINVAL, fi_writedata(r.ep[0], sbuf, 8, NULL, 0, BADADDR,
				     addr, key, NULL));
	CHK(-FI_EINVAL, fi_inject_writedata(r.ep[0], sbuf, 8, 0, BADADDR,
					    addr, key));

	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], NULL, 0));
	CHK(-FI_EINVAL, fi_readmsg(r.ep[0], NULL, 0));
	msg.addr = r.addr[1];
	msg.msg_iov = wiov;		/* local lengths wrap to 1 */
	msg.iov_count = 2;
	msg.rma_iov = rma;
	msg.rma_iov_count = 1;
	rma[0].len = 1;
	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], &msg, 0));
	CHK(-FI_EINVAL, fi_readmsg(r.ep[0], &msg, 0));
	rma[0].len = 8;
	msg.msg_iov = iov;		/* remote lengths wrap to 8 */
	msg.iov_count = 1;
	msg.rma_iov = wrma;
	msg.rma_iov_count = 2;
	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], &msg, 0));
	CHK(-FI_EINVAL, fi_readmsg(r.ep[0], &msg, 0));
	msg.rma_iov = rma;
	msg.rma_iov_count = 5;
	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], &msg, 0));
	msg.rma_iov_count = 2;		/* 16 remote bytes for 8 local */
	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], &msg, 0));
	msg.rma_iov_count = 1;
	msg.rma_iov = NULL;
	CHK(-FI_EINVAL, fi_writemsg(r.ep[0], &msg, 0));
	msg.rma_iov = rma;
	CHK(-FI_EBADFLAGS, fi_writemsg(r.ep[0], &msg, BADFLAG));
	CHK(-FI_EINVAL, fi_readmsg(r.ep[0], &msg, FI_REMOTE_CQ_DATA));
	msg.addr = BADADDR;
	CHK(-FI_EINVAL, fi_readmsg(r.ep[0], &msg, 0));

	/* a key nobody registered: refused by the target, reported as a
	 * completion error (fi_rma(3)), and the endpoint goes on */
	OK(fi_write(r.ep[0], sbuf, 8, NULL, r.addr[1], addr, key + 1000,
		    &err));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO),
			 -FI_EAVAIL);
	CHK(1, fi_cq_readerr(r.cq[0], &err, 0));
	assert_int_equal(err.err, FI_EACCES);

	/* and a good write lands */
	sse_fill(sbuf, 8, 9);
	OK(fi_write(r.ep[0], sbuf, 8, NULL, r.addr[1], addr, key, &e));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	assert_int_equal(sse_check(target, 8, 9), -1);
	pingpong(&r, 8);
	OK(fi_close(&mr->fid));
	sse_res_close(&r);
}

static void test_atomic(void **state)
{
	static uint64_t target[8];
	uint64_t opnd[8] = { 1 }, res[8], cmp[8];
	struct sse_res r;
	struct fid_mr *mr;
	struct fi_ioc ioc[5], wioc[2], rioc, cioc;
	struct fi_rma_ioc rma, wrma[2];
	struct fi_msg_atomic msg = { 0 };
	struct fi_cq_tagged_entry e;
	uint64_t addr, key;
	size_t count, i;

	res_open(&r, FI_ATOMIC);
	OK(fi_mr_reg(r.domain, target, sizeof(target),
		     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	addr = (uint64_t)(uintptr_t)target;
	key = fi_mr_key(mr);

	/* fi_atomicvalid and friends: the count is an output */
	CHK(-FI_EINVAL, fi_atomicvalid(r.ep[0], FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_fetch_atomicvalid(r.ep[0], FI_UINT64, FI_SUM,
					     NULL));
	CHK(-FI_EINVAL, fi_compare_atomicvalid(r.ep[0], FI_UINT64, FI_CSWAP,
					       NULL));
	CHK(-FI_EOPNOTSUPP, fi_atomicvalid(r.ep[0], BADTYPE, FI_SUM,
					   &count));
	CHK(-FI_EOPNOTSUPP, fi_atomicvalid(r.ep[0], FI_UINT64,
					   FI_ATOMIC_OP_LAST, &count));
	CHK(-FI_EOPNOTSUPP, fi_atomicvalid(r.ep[0], FI_UINT64, FI_CSWAP,
					   &count));
	CHK(-FI_EOPNOTSUPP, fi_compare_atomicvalid(r.ep[0], FI_UINT64,
						   FI_SUM, &count));
	OK(fi_atomicvalid(r.ep[0], FI_UINT64, FI_SUM, &count));
	assert_true(count >= 1);

	CHK(-FI_EOPNOTSUPP, fi_atomic(r.ep[0], opnd, 1, NULL, r.addr[1], addr,
				      key, BADTYPE, FI_SUM, NULL));
	CHK(-FI_EOPNOTSUPP, fi_atomic(r.ep[0], opnd, 1, NULL, r.addr[1], addr,
				      key, FI_UINT64, (enum fi_op)99, NULL));
	CHK(-FI_EINVAL, fi_atomic(r.ep[0], opnd, 1, NULL, BADADDR, addr, key,
				  FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_atomic(r.ep[0], opnd, count + 1, NULL, r.addr[1],
				  addr, key, FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_atomic(r.ep[0], opnd, SIZE_MAX, NULL, r.addr[1],
				  addr, key, FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_atomic(r.ep[0], NULL, 1, NULL, r.addr[1], addr,
				  key, FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_inject_atomic(r.ep[0], opnd, 1, BADADDR, addr,
					 key, FI_UINT64, FI_SUM));
	CHK(-FI_EINVAL, fi_fetch_atomic(r.ep[0], opnd, 1, NULL, NULL, NULL,
					r.addr[1], addr, key, FI_UINT64,
					FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_compare_atomic(r.ep[0], opnd, 1, NULL, NULL, NULL,
					  res, NULL, r.addr[1], addr, key,
					  FI_UINT64, FI_CSWAP, NULL));

	/* vectors: too many, counts that wrap (1 element once went out) */
	for (i = 0; i < 5; i++) {
		ioc[i].addr = &opnd[i];
		ioc[i].count = 1;
	}
	wioc[0].addr = opnd;
	wioc[0].count = SIZE_MAX;
	wioc[1].addr = opnd;
	wioc[1].count = 2;
	CHK(-FI_EINVAL, fi_atomicv(r.ep[0], ioc, NULL, 5, r.addr[1], addr,
				   key, FI_UINT64, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_atomicv(r.ep[0], wioc, NULL, 2, r.addr[1], addr,
				   key, FI_UINT8, FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_atomicv(r.ep[0], wioc, NULL, 2, r.addr[1], addr,
				   key, FI_UINT64, FI_SUM, NULL));
	rioc.addr = res;
	rioc.count = 1;
	cioc.addr = cmp;
	cioc.count = 1;
	CHK(-FI_EINVAL, fi_fetch_atomicv(r.ep[0], wioc, NULL, 2, &rioc, NULL,
					 1, r.addr[1], addr, key, FI_UINT8,
					 FI_SUM, NULL));
	CHK(-FI_EINVAL, fi_compare_atomicv(r.ep[0], wioc, NULL, 2, &cioc,
					   NULL, 1, &rioc, NULL, 1, r.addr[1],
					   addr, key, FI_UINT8, FI_CSWAP,
					   NULL));

	CHK(-FI_EINVAL, fi_atomicmsg(r.ep[0], NULL, 0));
	CHK(-FI_EINVAL, fi_fetch_atomicmsg(r.ep[0], NULL, &rioc, NULL, 1, 0));
	CHK(-FI_EINVAL, fi_compare_atomicmsg(r.ep[0], NULL, &cioc, NULL, 1,
					     &rioc, NULL, 1, 0));
	rma.addr = addr;
	rma.count = 1;
	rma.key = key;
	wrma[0] = rma;
	wrma[0].count = SIZE_MAX;
	wrma[1] = rma;
	wrma[1].count = 2;
	msg.msg_iov = ioc;
	msg.iov_count = 1;
	msg.addr = r.addr[1];
	msg.rma_iov = wrma;	/* remote counts wrap to 1 */
	msg.rma_iov_count = 2;
	msg.datatype = FI_UINT8;
	msg.op = FI_SUM;
	CHK(-FI_EINVAL, fi_atomicmsg(r.ep[0], &msg, 0));
	CHK(-FI_EINVAL, fi_fetch_atomicmsg(r.ep[0], &msg, &rioc, NULL, 1, 0));
	msg.op = FI_CSWAP;
	CHK(-FI_EINVAL, fi_compare_atomicmsg(r.ep[0], &msg, &cioc, NULL, 1,
					     &rioc, NULL, 1, 0));
	msg.op = FI_SUM;
	msg.datatype = FI_UINT64;
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	CHK(-FI_EBADFLAGS, fi_atomicmsg(r.ep[0], &msg, BADFLAG));
	msg.addr = BADADDR;
	CHK(-FI_EINVAL, fi_atomicmsg(r.ep[0], &msg, 0));
	msg.addr = r.addr[1];
	msg.rma_iov_count = 5;
	CHK(-FI_EINVAL, fi_atomicmsg(r.ep[0], &msg, 0));

	/* and a good one adds */
	target[0] = 41;
	OK(fi_atomic(r.ep[0], opnd, 1, NULL, r.addr[1], addr, key, FI_UINT64,
		     FI_SUM, &e));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	assert_int_equal(target[0], 42);
	pingpong(&r, 9);
	OK(fi_close(&mr->fid));
	sse_res_close(&r);
}

static int report(void **state)
{
	printf("test_badargs: %lu calls checked\n", ncalls);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fabric),
		cmocka_unit_test(test_fabric_errors),
		cmocka_unit_test(test_domain),
		cmocka_unit_test(test_av),
		cmocka_unit_test(test_mr),
		cmocka_unit_test(test_cq),
		cmocka_unit_test(test_cntr),
		cmocka_unit_test(test_eq),
		cmocka_unit_test(test_ep),
		cmocka_unit_test(test_msg),
		cmocka_unit_test(test_rma),
		cmocka_unit_test(test_atomic),
	};

	sse_test_init("shm", "badargs");
	/* BADARGS_TEST=test_av runs that one alone */
	if (getenv("BADARGS_TEST"))
		cmocka_set_test_filter(getenv("BADARGS_TEST"));
	return cmocka_run_group_tests_name("badargs", tests, NULL, report);
}
