/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_RMA: every fi_ops_rma call, data integrity from 0 bytes to 64 MiB
 * (around the MTU and the emulator's piece size), iov lists on both sides,
 * virtual and offset addressing with provider and user keys, injects,
 * refused accesses (bad key, out of range, missing permission: FI_EACCES at
 * the initiator, target memory untouched), remote CQ data, remote and MR
 * counters (FI_RMA_EVENT), local FI_READ/FI_WRITE counters, selective
 * completion, FI_FENCE, and many operations in flight.  ep[0] initiates,
 * ep[1] is the target (same process; the _shm variant runs over the
 * shared-memory store).
 */
#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS
#define GUARD 256

static const char *store = "private";

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct rma {
	struct sse_res r;
	struct fi_info *hints;
};

static void rma_open(struct rma *t, uint64_t caps, int mr_mode,
		     uint64_t cq_flags)
{
	struct sse_res_opts o = { .cq_flags = cq_flags };

	t->hints = sse_test_hints(FI_MSG | FI_RMA | FI_ATOMIC | caps);
	t->hints->domain_attr->mr_mode = mr_mode;
	o.hints = t->hints;
	sse_res_open(&t->r, 2, &o);
	assert_int_equal(t->r.info->domain_attr->mr_mode, mr_mode);
	assert_true(t->r.info->caps & FI_RMA);
}

/*
 * A counter, closed by rma_close after the endpoints (in a free slot of
 * the fixture's own counter arrays).
 */
static struct fid_cntr *cntr(struct rma *t)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	/* ep[1]'s slots first: they close after both endpoints */
	struct fid_cntr **slot[] = { &t->r.scntr[1], &t->r.rcntr[1],
				     &t->r.scntr[0], &t->r.rcntr[0] };
	size_t i;

	for (i = 0; i < 4; i++) {
		if (!*slot[i]) {
			assert_fi_ok(fi_cntr_open(t->r.domain, &ca, slot[i],
						  NULL));
			return *slot[i];
		}
	}
	fail_msg("out of counter slots");
	return NULL;
}

static void rma_close(struct rma *t)
{
	sse_res_close(&t->r);
	fi_freeinfo(t->hints);
}

/* Register @len bytes at @buf for remote read and/or write. */
static struct fid_mr *reg(struct rma *t, void *buf, size_t len,
			  uint64_t access, uint64_t key, uint64_t flags)
{
	struct fid_mr *mr;

	assert_fi_ok(fi_mr_reg(t->r.domain, buf, len, access, 0, key, flags,
			       &mr, NULL));
	return mr;
}

/* The address peers name @p inside a region starting at @base by. */
static uint64_t raddr(struct rma *t, const void *base, const void *p)
{
	if (t->r.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return (uint64_t)(uintptr_t)p;
	return (uint64_t)((const char *)p - (const char *)base);
}

/* ep[0]'s next completion: @ctx with @flags, or an error @err. */
#define wait_comp(t, ctx, flags) \
	sse_cq_expect(&(t)->r, (t)->r.cq[0], (ctx), (flags))
#define wait_err(t, ctx, err) \
	sse_cq_expect_err(&(t)->r, (t)->r.cq[0], (ctx), (err))

/* Post, retrying while the provider says -FI_EAGAIN. */
#define POST(t, call)							\
	do {								\
		ssize_t _ret;						\
		while ((_ret = (call)) == -FI_EAGAIN)			\
			sse_progress_for(&(t)->r, 1);			\
		assert_fi_ok(_ret);					\
	} while (0)

/* Write then read back each size, at the start of a registered region. */
static void test_rma_sizes(void **state)
{
	size_t mtu = sse_test_mtu(), piece = sse_test_piece();
	const size_t sizes[] = { 0, 1, 8, mtu - 1, mtu, mtu + 1, piece - 1,
				 piece, piece + 1, 1 << 20, (size_t)64 << 20 };
	size_t max = (size_t)64 << 20, i;
	char *tgt = malloc(max + GUARD), *src = malloc(max), *back;
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	back = malloc(max + GUARD);
	assert_non_null(tgt);
	assert_non_null(src);
	assert_non_null(back);
	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	mr = reg(&t, tgt, max + GUARD, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		 0);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t len = sizes[i];
		unsigned seed = (unsigned)(i + 1) * 7;
		long bad;

		memset(tgt, 0x5a, max + GUARD);
		sse_fill(src, len, seed);
		POST(&t, fi_write(t.r.ep[0], src, len, NULL, t.r.addr[1],
				  raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
		wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
		bad = sse_check(tgt, len, seed);
		if (bad >= 0)
			fail_msg("write of %zu bytes: byte %ld wrong", len,
				 bad);
		assert_int_equal((unsigned char)tgt[len], 0x5a);
		assert_int_equal((unsigned char)tgt[max + GUARD - 1], 0x5a);

		memset(back, 0xa5, len + GUARD);
		POST(&t, fi_read(t.r.ep[0], back, len, NULL, t.r.addr[1],
				 raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
		wait_comp(&t, &ctx, FI_RMA | FI_READ);
		bad = sse_check(back, len, seed);
		if (bad >= 0)
			fail_msg("read of %zu bytes: byte %ld wrong", len,
				 bad);
		assert_int_equal((unsigned char)back[len], 0xa5);
	}
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
	free(tgt);
	free(src);
	free(back);
}

/* Offset addressing with user keys (mr_mode 0), and loopback to ep[0]. */
static void test_rma_offset_user_key(void **state)
{
	char tgt[4096], src[300], back[300];
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, 0, 0);
	memset(tgt, 0, sizeof(tgt));
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE,
		 0xabc, 0);
	assert_int_equal(fi_mr_key(mr), 0xabc);
	sse_fill(src, sizeof(src), 3);
	POST(&t, fi_write(t.r.ep[0], src, sizeof(src), NULL, t.r.addr[1],
			  1000, 0xabc, &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_check(tgt + 1000, sizeof(src), 3), -1);
	assert_int_equal(tgt[999], 0);
	assert_int_equal(tgt[1300], 0);
	/* to one's own address, as Open MPI's btl ofi does */
	POST(&t, fi_read(t.r.ep[0], back, sizeof(back), NULL, t.r.addr[0],
			 1000, 0xabc, &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	assert_int_equal(sse_check(back, sizeof(back), 3), -1);
	/* a virtual address is out of range under offset addressing */
	POST(&t, fi_read(t.r.ep[0], back, 8, NULL, t.r.addr[1],
			 (uint64_t)(uintptr_t)tgt, 0xabc, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/* readv/writev and the msg forms with several local and remote pieces. */
static void test_rma_iov(void **state)
{
	size_t piece = sse_test_piece();
	size_t seg = piece + 17;		/* pieces straddle segments */
	char *tgt = calloc(1, 8 * seg), *a = malloc(seg), *b = malloc(seg),
	     *c = malloc(2 * seg), *ra = malloc(seg), *rb = malloc(seg),
	     *rc = malloc(2 * seg);
	struct iovec iov[3] = { { a, seg }, { b, seg }, { c, 2 * seg } };
	struct iovec riov[3] = { { ra, seg }, { rb, seg }, { rc, 2 * seg } };
	struct fi_rma_iov rma[2];
	struct fi_msg_rma msg = { 0 };
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	mr = reg(&t, tgt, 8 * seg, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0);
	sse_fill(a, seg, 11);
	sse_fill(b, seg, 12);
	sse_fill(c, 2 * seg, 13);

	/* writev: contiguous at the target */
	POST(&t, fi_writev(t.r.ep[0], iov, NULL, 3, t.r.addr[1],
			   raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_check(tgt, seg, 11), -1);
	assert_int_equal(sse_check(tgt + seg, seg, 12), -1);
	assert_int_equal(sse_check(tgt + 2 * seg, 2 * seg, 13), -1);
	/* readv back, in two local pieces of other sizes */
	memset(ra, 0, seg);
	memset(rb, 0, seg);
	POST(&t, fi_readv(t.r.ep[0], riov, NULL, 2, t.r.addr[1],
			  raddr(&t, tgt, tgt + seg), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	assert_int_equal(sse_check(ra, seg, 12), -1);
	assert_int_equal(memcmp(rb, tgt + 2 * seg, seg), 0);

	/* writemsg: 3 local pieces into 2 remote segments apart */
	memset(tgt, 0, 8 * seg);
	rma[0] = (struct fi_rma_iov){ raddr(&t, tgt, tgt + 5 * seg), seg,
				      fi_mr_key(mr) };
	rma[1] = (struct fi_rma_iov){ raddr(&t, tgt, tgt + seg), 3 * seg,
				      fi_mr_key(mr) };
	msg.msg_iov = iov;
	msg.iov_count = 3;
	msg.addr = t.r.addr[1];
	msg.rma_iov = rma;
	msg.rma_iov_count = 2;
	msg.context = &ctx;
	POST(&t, fi_writemsg(t.r.ep[0], &msg, FI_COMPLETION |
			     FI_DELIVERY_COMPLETE));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_check(tgt + 5 * seg, seg, 11), -1);
	assert_int_equal(sse_check(tgt + seg, seg, 12), -1);
	assert_int_equal(sse_check(tgt + 2 * seg, 2 * seg, 13), -1);
	assert_int_equal(tgt[0], 0);
	assert_int_equal(tgt[4 * seg], 0);
	/* readmsg the same layout back */
	memset(rc, 0, 2 * seg);
	msg.msg_iov = riov;
	POST(&t, fi_readmsg(t.r.ep[0], &msg, FI_COMPLETION));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	assert_int_equal(sse_check(ra, seg, 11), -1);
	assert_int_equal(sse_check(rb, seg, 12), -1);
	assert_int_equal(sse_check(rc, 2 * seg, 13), -1);

	/* local and remote lengths must agree */
	rma[1].len--;
	assert_int_equal(fi_writemsg(t.r.ep[0], &msg, 0), -FI_EINVAL);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
	free(tgt);
	free(a);
	free(b);
	free(c);
	free(ra);
	free(rb);
	free(rc);
}

/* fi_inject_write: no completion, the buffer is free at once, counted. */
static void test_rma_inject(void **state)
{
	size_t inj, i;
	char tgt[1024] = { 0 }, src[1024], back[1024];
	struct fid_cntr *wc, *rc;
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	inj = t.r.info->tx_attr->inject_size;
	assert_true(inj > 0 && inj < 300);
	wc = cntr(&t);
	rc = cntr(&t);
	assert_fi_ok(fi_ep_bind(t.r.ep[0], &wc->fid, FI_WRITE));
	assert_fi_ok(fi_ep_bind(t.r.ep[0], &rc->fid, FI_READ));
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		 0);
	for (i = 0; i < 4; i++) {
		sse_fill(src, inj, 40 + (unsigned)i);
		POST(&t, fi_inject_write(t.r.ep[0], src, inj, t.r.addr[1],
					 raddr(&t, tgt, tgt + 100 * i),
					 fi_mr_key(mr)));
		memset(src, 0, inj);	/* ours again at once */
	}
	assert_int_equal(fi_inject_write(t.r.ep[0], src, inj + 1,
					 t.r.addr[1], raddr(&t, tgt, tgt),
					 fi_mr_key(mr)), -FI_EINVAL);
	/* A read after the writes sees them (FI_ORDER_RAW). */
	POST(&t, fi_read(t.r.ep[0], back, 300 + inj, NULL, t.r.addr[1],
			 raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	for (i = 0; i < 4; i++)
		assert_int_equal(sse_check(back + 100 * i,
					   i == 3 ? inj : MIN(inj, 100),
					   40 + (unsigned)i), -1);
	sse_assert_cq_empty(&t.r, t.r.cq[0]);
	assert_int_equal(fi_cntr_read(wc), 4);
	assert_int_equal(fi_cntr_read(rc), 1);
	assert_int_equal(fi_cntr_readerr(wc), 0);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/* Refused accesses: an error completion, the target untouched. */
static void test_rma_refused(void **state)
{
	char tgt[256], ro[256], wo[256], src[512], back[512];
	struct fid_mr *mr, *mr_ro, *mr_wo;
	struct fid_cntr *wc;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	wc = cntr(&t);
	assert_fi_ok(fi_ep_bind(t.r.ep[0], &wc->fid, FI_WRITE));
	memset(tgt, 7, sizeof(tgt));
	memset(ro, 8, sizeof(ro));
	memset(wo, 9, sizeof(wo));
	memset(src, 1, sizeof(src));
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		 0);
	mr_ro = reg(&t, ro, sizeof(ro), FI_REMOTE_READ, 0, 0);
	mr_wo = reg(&t, wo, sizeof(wo), FI_REMOTE_WRITE, 0, 0);

	/* no such key */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt), fi_mr_key(mr) + 1000, &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	/* beyond the end, and across it */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt + sizeof(tgt)), fi_mr_key(mr),
			  &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_write(t.r.ep[0], src, 16, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt + sizeof(tgt) - 8),
			  fi_mr_key(mr), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_read(t.r.ep[0], back, sizeof(tgt) + 1, NULL, t.r.addr[1],
			 raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	/* before the start */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt) - 8, fi_mr_key(mr), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	/* no permission */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, ro, ro), fi_mr_key(mr_ro), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	POST(&t, fi_read(t.r.ep[0], back, 8, NULL, t.r.addr[1],
			 raddr(&t, wo, wo), fi_mr_key(mr_wo), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	/* a region that was closed */
	{
		char gone[64];
		struct fid_mr *g = reg(&t, gone, sizeof(gone),
				       FI_REMOTE_WRITE, 0, 0);
		uint64_t key = fi_mr_key(g);

		memset(gone, 3, sizeof(gone));
		assert_fi_ok(fi_close(&g->fid));
		POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
				  raddr(&t, gone, gone), key, &ctx));
		wait_err(&t, &ctx, FI_EACCES);
		assert_int_equal(gone[0], 3);
	}

	/* nothing was touched */
	for (size_t i = 0; i < sizeof(tgt); i++) {
		assert_int_equal(tgt[i], 7);
		assert_int_equal(ro[i], 8);
	}
	assert_int_equal(fi_cntr_readerr(wc), 6);
	assert_int_equal(fi_cntr_read(wc), 0);
	/* and the endpoint still works */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, wo, wo), fi_mr_key(mr_wo), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(wo[0], 1);
	assert_int_equal(wo[8], 9);
	assert_fi_ok(fi_close(&mr->fid));
	assert_fi_ok(fi_close(&mr_ro->fid));
	assert_fi_ok(fi_close(&mr_wo->fid));
	rma_close(&t);
}

/* fi_writedata / fi_inject_writedata / writemsg: a target CQ entry. */
static void test_rma_cq_data(void **state)
{
	char tgt[4096] = { 0 }, src[2048];
	struct fi_cq_tagged_entry e;
	struct fi_rma_iov rma;
	struct iovec iov;
	struct fi_msg_rma msg = { 0 };
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, 0);
	sse_fill(src, sizeof(src), 21);
	POST(&t, fi_writedata(t.r.ep[0], src, sizeof(src), NULL,
			      0x1122334455667788ULL, t.r.addr[1],
			      raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.flags, FI_REMOTE_CQ_DATA | FI_RMA |
				  FI_REMOTE_WRITE);
	assert_int_equal(e.data, 0x1122334455667788ULL);
	assert_int_equal(e.len, sizeof(src));
	assert_null(e.op_context);
	/* the data is there when the entry is */
	assert_int_equal(sse_check(tgt, sizeof(src), 21), -1);

	POST(&t, fi_inject_writedata(t.r.ep[0], src, 16, 77, t.r.addr[1],
				     raddr(&t, tgt, tgt + 3000),
				     fi_mr_key(mr)));
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 77);
	assert_int_equal(memcmp(tgt + 3000, src, 16), 0);

	iov = (struct iovec){ src, 100 };
	rma = (struct fi_rma_iov){ raddr(&t, tgt, tgt + 10), 100,
				   fi_mr_key(mr) };
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.addr = t.r.addr[1];
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.context = &ctx;
	msg.data = 99;
	POST(&t, fi_writemsg(t.r.ep[0], &msg, FI_REMOTE_CQ_DATA |
			     FI_COMPLETION));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 99);
	assert_int_equal(e.len, 100);
	/* zero bytes with CQ data still reach the target */
	POST(&t, fi_writedata(t.r.ep[0], src, 0, NULL, 0xfeed, t.r.addr[1],
			      raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 0xfeed);
	assert_int_equal(e.len, 0);
	/* a plain write leaves no entry at the target */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	sse_assert_cq_empty(&t.r, t.r.cq[1]);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/* FI_RMA_EVENT: remote counters on the target endpoint and on the MR. */
static void test_rma_remote_counters(void **state)
{
	struct fid_cntr *rw, *rr, *mrw, *mr2w;
	char *tgt = calloc(1, 4096), *src = malloc(4096), back[64];
	char tgt2[64];
	struct fid_mr *mr, *mr2;
	struct rma t;
	int ctx, i;

	rma_open(&t, FI_RMA_EVENT, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	assert_true(t.r.info->caps & FI_RMA_EVENT);
	rw = cntr(&t);
	rr = cntr(&t);
	mrw = cntr(&t);
	assert_fi_ok(fi_ep_bind(t.r.ep[1], &rw->fid, FI_REMOTE_WRITE));
	assert_fi_ok(fi_ep_bind(t.r.ep[1], &rr->fid, FI_REMOTE_READ));
	mr = reg(&t, tgt, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
		 FI_RMA_EVENT);
	mr2 = reg(&t, tgt2, sizeof(tgt2), FI_REMOTE_WRITE, 0, 0);
	assert_fi_ok(fi_mr_bind(mr, &mrw->fid, FI_REMOTE_WRITE));
	/* without FI_MR_RMA_EVENT a region needs no FI_RMA_EVENT flag to
	 * take a counter (fi_mr(3)) */
	mr2w = cntr(&t);
	assert_fi_ok(fi_mr_bind(mr2, &mr2w->fid, FI_REMOTE_WRITE));
	assert_int_equal(fi_mr_bind(mr2, &mr2w->fid, FI_REMOTE_WRITE),
			 -FI_EINVAL);	/* one counter per direction */
	assert_fi_ok(fi_mr_enable(mr));

	sse_fill(src, 4096, 5);
	for (i = 0; i < 3; i++) {
		/* one count per operation, however many pieces it has */
		POST(&t, fi_write(t.r.ep[0], src, i == 2 ? 4096 : 8, NULL,
				  t.r.addr[1], raddr(&t, tgt, tgt),
				  fi_mr_key(mr), &ctx));
		wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	}
	for (i = 0; i < 2; i++) {
		POST(&t, fi_read(t.r.ep[0], back, sizeof(back), NULL,
				 t.r.addr[1], raddr(&t, tgt, tgt),
				 fi_mr_key(mr), &ctx));
		wait_comp(&t, &ctx, FI_RMA | FI_READ);
	}
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt2, tgt2), fi_mr_key(mr2), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_fi_ok(fi_cntr_wait(rw, 4, TMO));
	assert_fi_ok(fi_cntr_wait(rr, 2, TMO));
	assert_int_equal(fi_cntr_read(mrw), 3);
	assert_int_equal(fi_cntr_read(mr2w), 1);
	/* no remote CQ entries without CQ data */
	sse_assert_cq_empty(&t.r, t.r.cq[1]);
	assert_int_equal(fi_cntr_read(rw), 4);
	assert_int_equal(fi_cntr_read(rr), 2);
	assert_int_equal(sse_check(tgt, 4096, 5), -1);
	assert_fi_ok(fi_close(&mr->fid));
	assert_fi_ok(fi_close(&mr2->fid));
	rma_close(&t);
	free(tgt);
	free(src);
}

/* Without FI_RMA_EVENT the target counters stay still. */
static void test_rma_no_remote_events(void **state)
{
	char tgt[64], src[8] = { 1 };
	struct fid_cntr *rw;
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	assert_false(t.r.info->caps & FI_RMA_EVENT);	/* opt-in */
	rw = cntr(&t);
	assert_fi_ok(fi_ep_bind(t.r.ep[1], &rw->fid, FI_REMOTE_WRITE));
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, 0);
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	sse_progress_for(&t.r, 20);
	assert_int_equal(fi_cntr_read(rw), 0);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/* FI_MR_RMA_EVENT: an FI_RMA_EVENT region is reachable once enabled. */
static void test_rma_mr_enable(void **state)
{
	char tgt[64] = { 0 }, src[8] = { 5 };
	struct fid_cntr *c;
	struct fid_mr *mr, *mr2;
	struct rma t;
	int ctx;

	rma_open(&t, FI_RMA_EVENT,
		 FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_RMA_EVENT, 0);
	c = cntr(&t);
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, FI_RMA_EVENT);
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	assert_int_equal(tgt[0], 0);
	assert_fi_ok(fi_mr_bind(mr, &c->fid, FI_REMOTE_WRITE));
	assert_fi_ok(fi_mr_enable(mr));
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  raddr(&t, tgt, tgt), fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(tgt[0], 5);
	assert_fi_ok(fi_cntr_wait(c, 1, TMO));
	/* enabled: no more bindings */
	assert_int_equal(fi_mr_bind(mr, &c->fid, FI_REMOTE_READ),
			 -FI_EINVAL);
	/* and a region registered without FI_RMA_EVENT takes none */
	mr2 = reg(&t, tgt + 32, 32, FI_REMOTE_WRITE, 0, 0);
	assert_int_equal(fi_mr_bind(mr2, &c->fid, FI_REMOTE_WRITE),
			 -FI_EINVAL);
	assert_fi_ok(fi_close(&mr2->fid));
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/*
 * fi_mr_regv of adjacent segments with remote access (up to mr_iov_limit):
 * one address space, RMA and atomics crossing from segment to segment, in
 * virtual and offset addressing; segments with a gap are refused.
 */
static void mr_segments(int mr_mode)
{
	size_t piece = sse_test_piece();
	/* uneven segment sizes (words stay aligned), one over a piece */
	size_t seg[4] = { 104, piece + 16, 8, 304 };
	size_t total = seg[0] + seg[1] + seg[2] + seg[3], off, i;
	char *tgt = calloc(1, total + 64), *src = malloc(total),
	     *back = malloc(total);
	uint64_t *w, v = 5, res = 0, cmpv, base;
	struct iovec iov[4];
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, mr_mode, 0);
	assert_true(t.r.info->domain_attr->mr_iov_limit >= 4);
	for (i = 0, off = 0; i < 4; off += seg[i], i++)
		iov[i] = (struct iovec){ tgt + off, seg[i] };
	assert_fi_ok(fi_mr_regv(t.r.domain, iov, 4,
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x77, 0,
				&mr, NULL));
	base = raddr(&t, tgt, tgt);

	/* the whole region in one write, across all four segments */
	sse_fill(src, total, 9);
	POST(&t, fi_write(t.r.ep[0], src, total, NULL, t.r.addr[1], base,
			  fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_check(tgt, total, 9), -1);
	assert_int_equal(tgt[total], 0);	/* not one byte further */
	/* a read straddling segments 0|1 and another 1|2|3 */
	memset(back, 0, total);
	POST(&t, fi_read(t.r.ep[0], back, 200, NULL, t.r.addr[1], base + 50,
			 fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	assert_memory_equal(back, tgt + 50, 200);
	off = seg[0] + seg[1] - 10;
	POST(&t, fi_read(t.r.ep[0], back, 10 + seg[2] + 20, NULL,
			 t.r.addr[1], base + off, fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_READ);
	assert_memory_equal(back, tgt + off, 10 + seg[2] + 20);
	/* past the end of the last segment: refused, nothing written */
	POST(&t, fi_write(t.r.ep[0], src, 8, NULL, t.r.addr[1],
			  base + total - 4, fi_mr_key(mr), &ctx));
	wait_err(&t, &ctx, FI_EACCES);
	assert_int_equal(tgt[total], 0);

	/* atomics on words in segments 1 and 3 (offsets within the region) */
	off = seg[0] + 16;
	w = (uint64_t *)(tgt + off);
	*w = 10;
	POST(&t, fi_atomic(t.r.ep[0], &v, 1, NULL, t.r.addr[1], base + off,
			   fi_mr_key(mr), FI_UINT64, FI_SUM, &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_WRITE);
	assert_int_equal(*w, 15);
	off = seg[0] + seg[1] + seg[2] + 8;
	w = (uint64_t *)(tgt + off);
	memcpy(w, &(uint64_t){ 41 }, 8);
	POST(&t, fi_fetch_atomic(t.r.ep[0], &v, 1, NULL, &res, NULL,
				 t.r.addr[1], base + off, fi_mr_key(mr),
				 FI_UINT64, FI_SUM, &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res, 41);
	cmpv = 46;
	v = 99;
	POST(&t, fi_compare_atomic(t.r.ep[0], &v, 1, NULL, &cmpv, NULL, &res,
				   NULL, t.r.addr[1], base + off,
				   fi_mr_key(mr), FI_UINT64, FI_CSWAP, &ctx));
	wait_comp(&t, &ctx, FI_ATOMIC | FI_READ);
	assert_int_equal(res, 46);
	memcpy(&res, w, 8);
	assert_int_equal(res, 99);
	assert_fi_ok(fi_close(&mr->fid));

	/* two adjacent segments, as fabtests' fi_mr_test registers them */
	iov[0] = (struct iovec){ tgt, 64 };
	iov[1] = (struct iovec){ tgt + 64, 64 };
	assert_fi_ok(fi_mr_regv(t.r.domain, iov, 2, FI_REMOTE_WRITE, 0, 0x78,
				0, &mr, NULL));
	sse_fill(src, 128, 4);
	POST(&t, fi_write(t.r.ep[0], src, 128, NULL, t.r.addr[1], base,
			  fi_mr_key(mr), &ctx));
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(sse_check(tgt, 128, 4), -1);
	assert_fi_ok(fi_close(&mr->fid));

	/* a gap between segments cannot be one NIC range */
	iov[1] = (struct iovec){ tgt + 65, 64 };
	assert_int_equal(fi_mr_regv(t.r.domain, iov, 2, FI_REMOTE_WRITE, 0,
				    0x79, 0, &mr, NULL), -FI_EINVAL);
	rma_close(&t);
	free(tgt);
	free(src);
	free(back);
}

static void test_rma_mr_segments_virt(void **state)
{
	mr_segments(FI_MR_VIRT_ADDR);
}

static void test_rma_mr_segments_offset(void **state)
{
	mr_segments(0);
}

/*
 * FI_FENCE: the fenced operation starts only after every earlier one
 * completed, so its completion comes after all of theirs.
 */
static void test_rma_fence(void **state)
{
	size_t big = (size_t)4 << 20;
	char *tgt = calloc(1, big), *src = malloc(big), back[64];
	struct fi_cq_tagged_entry e;
	struct fi_rma_iov rma;
	struct iovec iov;
	struct fi_msg_rma msg = { 0 };
	struct fid_mr *mr;
	struct rma t;
	int ctx[5], i, seen = 0;

	rma_open(&t, FI_FENCE, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	mr = reg(&t, tgt, big, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0);
	sse_fill(src, big, 31);
	for (i = 0; i < 4; i++)
		POST(&t, fi_write(t.r.ep[0], src + i * (big / 4), big / 4,
				  NULL, t.r.addr[1],
				  raddr(&t, tgt, tgt + i * (big / 4)),
				  fi_mr_key(mr), &ctx[i]));
	iov = (struct iovec){ back, sizeof(back) };
	rma = (struct fi_rma_iov){ raddr(&t, tgt, tgt + big - sizeof(back)),
				   sizeof(back), fi_mr_key(mr) };
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.addr = t.r.addr[1];
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.context = &ctx[4];
	POST(&t, fi_readmsg(t.r.ep[0], &msg, FI_FENCE | FI_COMPLETION));
	for (i = 0; i < 5; i++) {
		assert_int_equal(sse_cq_wait(&t.r, t.r.cq[0], &e, NULL, TMO),
				 1);
		if (e.op_context == &ctx[4]) {
			assert_int_equal(seen, 4);
			assert_int_equal(e.flags, FI_RMA | FI_READ);
		} else {
			seen++;
		}
	}
	assert_int_equal(memcmp(back, src + big - sizeof(back),
				sizeof(back)), 0);
	assert_int_equal(sse_check(tgt, big, 31), -1);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
	free(tgt);
	free(src);
}

/* Selective completion; FI_WRITE/FI_READ counters count every operation. */
static void test_rma_selective(void **state)
{
	char tgt[128] = { 0 }, src[16] = { 4 };
	struct fi_cq_tagged_entry e;
	struct fi_rma_iov rma;
	struct iovec iov;
	struct fi_msg_rma msg = { 0 };
	struct fid_cntr *wc;
	struct fid_mr *mr;
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR,
		 FI_SELECTIVE_COMPLETION);
	wc = cntr(&t);
	assert_fi_ok(fi_ep_bind(t.r.ep[0], &wc->fid, FI_WRITE));
	mr = reg(&t, tgt, sizeof(tgt), FI_REMOTE_WRITE, 0, 0);
	iov = (struct iovec){ src, sizeof(src) };
	rma = (struct fi_rma_iov){ raddr(&t, tgt, tgt), sizeof(src),
				   fi_mr_key(mr) };
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.addr = t.r.addr[1];
	msg.rma_iov = &rma;
	msg.rma_iov_count = 1;
	msg.context = &ctx;
	POST(&t, fi_writemsg(t.r.ep[0], &msg, 0));
	assert_fi_ok(fi_cntr_wait(wc, 1, TMO));
	sse_assert_cq_empty(&t.r, t.r.cq[0]);
	POST(&t, fi_writemsg(t.r.ep[0], &msg, FI_COMPLETION));
	assert_int_equal(sse_cq_wait(&t.r, t.r.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &ctx);
	assert_int_equal(fi_cntr_read(wc), 2);
	assert_int_equal(tgt[0], 4);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
}

/* Many small operations in flight: -FI_EAGAIN never loses one. */
static void test_rma_many(void **state)
{
	enum { N = 4000 };
	uint64_t *tgt = calloc(N, sizeof(uint64_t)), v[N];
	struct fi_cq_tagged_entry e;
	struct fid_mr *mr;
	struct rma t;
	int i, n = 0;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	mr = reg(&t, tgt, N * sizeof(uint64_t), FI_REMOTE_WRITE, 0, 0);
	for (i = 0; i < N; i++) {
		ssize_t ret;

		v[i] = 0x1000000ULL + (uint64_t)i * 3;
		while ((ret = fi_write(t.r.ep[0], &v[i], sizeof(v[i]), NULL,
				       t.r.addr[1], raddr(&t, tgt, &tgt[i]),
				       fi_mr_key(mr), &v[i])) == -FI_EAGAIN) {
			if (fi_cq_read(t.r.cq[0], &e, 1) == 1)
				n++;
			(void)fi_cq_read(t.r.cq[1], &e, 0);
		}
		assert_fi_ok(ret);
	}
	while (n < N) {
		assert_int_equal(sse_cq_wait(&t.r, t.r.cq[0], &e, NULL, TMO),
				 1);
		n++;
	}
	for (i = 0; i < N; i++)
		assert_int_equal(tgt[i], 0x1000000ULL + (uint64_t)i * 3);
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);
	free(tgt);
}

/* Argument checks, and fi_getinfo's view of RMA. */
static void test_rma_args(void **state)
{
	char buf[64];
	struct fid_mr *mr;
	struct iovec iov[2] = { { buf, 8 }, { buf + 16, 8 } };
	struct rma t;
	int ctx;

	rma_open(&t, 0, FI_MR_PROV_KEY | FI_MR_VIRT_ADDR, 0);
	assert_true(t.r.info->tx_attr->msg_order & FI_ORDER_RAW);
	assert_true(t.r.info->tx_attr->msg_order & FI_ORDER_WAW);
	assert_true(t.r.info->ep_attr->max_order_raw_size >= (64u << 20));
	assert_true(t.r.info->tx_attr->rma_iov_limit >= 2);
	assert_int_equal(t.r.info->domain_attr->mr_cnt, 1024);
	mr = reg(&t, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0);
	/* remote regions are one range: no gaps between segments */
	assert_int_equal(fi_mr_regv(t.r.domain, iov, 2, FI_REMOTE_WRITE, 0,
				    0, 0, &mr, NULL), -FI_EINVAL);
	assert_int_equal(fi_write(t.r.ep[0], buf, 8, NULL, t.r.addr[1],
				  raddr(&t, buf, buf), fi_mr_key(mr),
				  &ctx), 0);
	wait_comp(&t, &ctx, FI_RMA | FI_WRITE);
	assert_int_equal(fi_write(t.r.ep[0], NULL, 8, NULL, t.r.addr[1], 0,
				  fi_mr_key(mr), &ctx), -FI_EINVAL);
	assert_int_equal(fi_write(t.r.ep[0], buf, 8, NULL, 12345, 0,
				  fi_mr_key(mr), &ctx), -FI_EINVAL);
	{
		struct fi_msg_rma msg = { .msg_iov = iov, .iov_count = 1,
					  .addr = t.r.addr[1] };

		assert_int_equal(fi_writemsg(t.r.ep[0], &msg, FI_TAGGED |
					     FI_MULTI_RECV), -FI_EBADFLAGS);
	}
	assert_fi_ok(fi_close(&mr->fid));
	rma_close(&t);

	/* an endpoint without FI_RMA refuses RMA */
	{
		struct sse_res r;
		struct sse_res_opts o = { .caps = FI_MSG };

		sse_res_open(&r, 1, &o);
		assert_false(r.info->caps & (FI_RMA | FI_ATOMIC));
		assert_int_equal(fi_write(r.ep[0], buf, 8, NULL, r.addr[0], 0,
					  0, NULL), -FI_EOPNOTSUPP);
		sse_res_close(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rma_sizes),
		cmocka_unit_test(test_rma_offset_user_key),
		cmocka_unit_test(test_rma_iov),
		cmocka_unit_test(test_rma_inject),
		cmocka_unit_test(test_rma_refused),
		cmocka_unit_test(test_rma_cq_data),
		cmocka_unit_test(test_rma_remote_counters),
		cmocka_unit_test(test_rma_no_remote_events),
		cmocka_unit_test(test_rma_mr_enable),
		cmocka_unit_test(test_rma_mr_segments_virt),
		cmocka_unit_test(test_rma_mr_segments_offset),
		cmocka_unit_test(test_rma_fence),
		cmocka_unit_test(test_rma_selective),
		cmocka_unit_test(test_rma_many),
		cmocka_unit_test(test_rma_args),
	};

#ifdef SSE_TEST_SHM
	store = "shm";
#endif
	sse_test_init(store, "rma");
	return cmocka_run_group_tests_name(store[0] == 's' ? "rma_shm" :
					   "rma", tests, NULL, NULL);
}
