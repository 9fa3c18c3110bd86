/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Buffers the emulated NIC cannot read or write fail their transfer with
 * FI_EFAULT, within bounded time, and never crash a process (the one that
 * runs the engine included) or hang the peer:
 * - a send from an unmapped or partly unmapped buffer, eager and
 *   rendezvous: FI_EFAULT at the sender and at the receiver;
 * - a receive into one: FI_EFAULT at the receiver, and at the sender of a
 *   rendezvous (an eager send has completed when its data left);
 * - fi_write, fi_read and atomics against a region unmapped after it was
 *   registered, and a large fi_read from a region registered longer than
 *   its mapping: FI_EFAULT at the initiator;
 * - a send naming address 0 with a length (MPI_BOTTOM from Open MPI's
 *   MTL): FI_EFAULT at both ends;
 * - an inject from unmapped memory: -FI_EFAULT from the call.
 * After each, the endpoints carry a good transfer.  In one process and
 * across two (fork), over the shared-memory store.
 */
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sse_test.h"

#define TMO 10000
#define RNDV_LEN ((size_t)1 << 20)
#define CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)
#define MR_MODE (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)

static size_t pg;

/* @len bytes of fresh memory of which only the first @good stay mapped
 * (@good a multiple of the page size).  The rest stays reserved with no
 * access at all rather than unmapped, so that no later mapping (the
 * fabric's, say) can land there and make it readable again. */
static void *bad_buf(size_t len, size_t good)
{
	size_t sz = (len + pg - 1) / pg * pg;
	char *p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	if (good)
		memset(p, 0x5a, good);
	if (good < sz)
		assert_int_equal(mprotect(p + good, sz - good, PROT_NONE), 0);
	return p;
}

static void bad_free(void *p, size_t len, size_t good)
{
	munmap(p, (len + pg - 1) / pg * pg);
	(void)good;
}

static void res_open(struct sse_res *r, int nep, struct fi_info **hints)
{
	struct sse_res_opts o = { 0 };

	*hints = sse_test_hints(CAPS);
	(*hints)->domain_attr->mr_mode = MR_MODE;
	o.hints = *hints;
	sse_res_open(r, nep, &o);
}

/* The next entry of @cq is an error for @ctx with FI_EFAULT. */
static void expect_efault(struct sse_res *r, struct fid_cq *cq, void *ctx)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	int ret;

	ret = sse_cq_wait(r, cq, &e, NULL, TMO);
	if (ret != -FI_EAVAIL)
		fail_msg("expected an error completion, got %d", ret);
	assert_int_equal(sse_cq_wait_err(r, cq, &ee, TMO), 1);
	assert_ptr_equal(ee.op_context, ctx);
	if (ee.err != FI_EFAULT)
		fail_msg("error %d (%s), expected FI_EFAULT", ee.err,
			 fi_strerror(ee.err));
}

static void expect_ok(struct sse_res *r, struct fid_cq *cq, void *ctx)
{
	struct fi_cq_tagged_entry e;
	int ret;

	ret = sse_cq_wait(r, cq, &e, NULL, TMO);
	if (ret != 1)
		fail_msg("expected a completion, got %d", ret);
	assert_ptr_equal(e.op_context, ctx);
}

/* A good tagged message @from -> @to, data checked. */
static void good_msg(struct sse_res *r, int from, int to, size_t len)
{
	char *s = malloc(len), *d = calloc(1, len);
	int sc, rc;

	sse_fill(s, len, 77);
	assert_fi_ok(fi_trecv(r->ep[to], d, len, NULL, FI_ADDR_UNSPEC, 9, 0,
			      &rc));
	assert_fi_ok(fi_tsend(r->ep[from], s, len, NULL, r->addr[to], 9,
			      &sc));
	expect_ok(r, r->cq[from], &sc);
	expect_ok(r, r->cq[to], &rc);
	assert_int_equal(sse_check(d, len, 77), -1);
	free(s);
	free(d);
}

/* A send of @len from a buffer mapped for its first @good bytes. */
static void send_fault(size_t len, size_t good)
{
	struct fi_info *hints;
	struct sse_res r;
	char *src = bad_buf(len, good), *dst = malloc(len);
	int sc, rc;

	res_open(&r, 2, &hints);
	assert_fi_ok(fi_trecv(r.ep[1], dst, len, NULL, FI_ADDR_UNSPEC, 3, 0,
			      &rc));
	assert_fi_ok(fi_tsend(r.ep[0], src, len, NULL, r.addr[1], 3, &sc));
	expect_efault(&r, r.cq[0], &sc);
	expect_efault(&r, r.cq[1], &rc);
	good_msg(&r, 0, 1, 100);
	good_msg(&r, 0, 1, RNDV_LEN);
	/* unexpected at the receiver: fails when it is matched (a
	 * rendezvous sender learns it then) */
	assert_fi_ok(fi_tsend(r.ep[0], src, len, NULL, r.addr[1], 4, &sc));
	sse_progress_for(&r, 20);
	assert_fi_ok(fi_trecv(r.ep[1], dst, len, NULL, FI_ADDR_UNSPEC, 4, 0,
			      &rc));
	expect_efault(&r, r.cq[0], &sc);
	expect_efault(&r, r.cq[1], &rc);
	good_msg(&r, 0, 1, 100);
	sse_res_close(&r);
	fi_freeinfo(hints);
	bad_free(src, len, good);
	free(dst);
}

static void test_send_unmapped_eager(void **state)
{
	send_fault(100, 0);
}

static void test_send_partly_unmapped_eager(void **state)
{
	send_fault(pg + 1000, pg);
}

static void test_send_partly_unmapped_rndv(void **state)
{
	send_fault(RNDV_LEN, RNDV_LEN / 2);
}

/*
 * Address 0 with a length, as Open MPI's MTL passes MPI_BOTTOM for
 * MPI_Alltoallw with absolute struct datatypes: both ends fail (an error
 * returned by the call alone leaves the receiver waiting).
 */
static void test_send_null(void **state)
{
	size_t lens[] = { 8, 5000, RNDV_LEN }, i;
	char *dst = malloc(RNDV_LEN);
	struct fi_info *hints;
	struct sse_res r;
	int sc, rc;

	res_open(&r, 2, &hints);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		assert_fi_ok(fi_trecv(r.ep[1], dst, lens[i], NULL,
				      FI_ADDR_UNSPEC, i, 0, &rc));
		assert_fi_ok(fi_tsenddata(r.ep[0], NULL, lens[i], NULL, 1,
					  r.addr[1], i, &sc));
		expect_efault(&r, r.cq[0], &sc);
		expect_efault(&r, r.cq[1], &rc);
	}
	assert_int_equal(fi_inject(r.ep[0], NULL, 8, r.addr[1]), -FI_EFAULT);
	good_msg(&r, 0, 1, 100);
	sse_res_close(&r);
	fi_freeinfo(hints);
	free(dst);
}

/* A receive of @len into a buffer mapped for its first @good bytes; the
 * sender of a rendezvous learns it too (@both). */
static void recv_fault(size_t len, size_t good, bool both)
{
	struct fi_info *hints;
	struct sse_res r;
	char *src = malloc(len), *dst = bad_buf(len, good);
	int sc, rc;

	sse_fill(src, len, 5);
	res_open(&r, 2, &hints);
	assert_fi_ok(fi_trecv(r.ep[1], dst, len, NULL, FI_ADDR_UNSPEC, 3, 0,
			      &rc));
	assert_fi_ok(fi_tsend(r.ep[0], src, len, NULL, r.addr[1], 3, &sc));
	if (both)
		expect_efault(&r, r.cq[0], &sc);
	else
		expect_ok(&r, r.cq[0], &sc);
	expect_efault(&r, r.cq[1], &rc);
	good_msg(&r, 0, 1, 100);
	good_msg(&r, 0, 1, RNDV_LEN);
	sse_res_close(&r);
	fi_freeinfo(hints);
	bad_free(dst, len, good);
	free(src);
}

static void test_recv_unmapped_eager(void **state)
{
	recv_fault(100, 0, false);
}

/* The read rendezvous fails the send with the receive (FIN); pushed data
 * completes the send when it has left, as an eager one does. */
static void test_recv_partly_unmapped_rndv(void **state)
{
	const char *rr = getenv("FI_SLINGSHOT_EMU_RNDV_READ");

	recv_fault(RNDV_LEN, RNDV_LEN / 2, !(rr && !strcmp(rr, "0")));
}

static void test_inject_unmapped(void **state)
{
	struct fi_info *hints;
	struct sse_res r;
	char *src = bad_buf(64, 0);

	res_open(&r, 2, &hints);
	assert_int_equal(fi_inject(r.ep[0], src, 64, r.addr[1]), -FI_EFAULT);
	assert_int_equal(fi_inject_write(r.ep[0], src, 64, r.addr[1], 0, 0),
			 -FI_EFAULT);
	good_msg(&r, 0, 1, 64);
	sse_res_close(&r);
	fi_freeinfo(hints);
}

/*
 * RMA against @tgt (registered, @len bytes) on ep[1] from ep[0], @tgt no
 * longer (or never fully) mapped: write, read, atomic, fetch-atomic fail
 * with FI_EFAULT; @raddr is where they go.
 */
static void rma_faults(struct sse_res *r, uint64_t raddr, uint64_t key,
		       size_t len)
{
	char *loc = calloc(1, len);
	uint64_t one = 1, old = 0;
	int ctx;

	assert_fi_ok(fi_write(r->ep[0], loc, len, NULL, r->addr[1], raddr,
			      key, &ctx));
	expect_efault(r, r->cq[0], &ctx);
	assert_fi_ok(fi_read(r->ep[0], loc, len, NULL, r->addr[1], raddr,
			     key, &ctx));
	expect_efault(r, r->cq[0], &ctx);
	assert_fi_ok(fi_atomic(r->ep[0], &one, 1, NULL, r->addr[1], raddr,
			       key, FI_UINT64, FI_SUM, &ctx));
	expect_efault(r, r->cq[0], &ctx);
	assert_fi_ok(fi_fetch_atomic(r->ep[0], &one, 1, NULL, &old, NULL,
				     r->addr[1], raddr, key, FI_UINT64,
				     FI_SUM, &ctx));
	expect_efault(r, r->cq[0], &ctx);
	free(loc);
}

/* A good fi_write of @len into a fresh region on ep[1]. */
static void good_write(struct sse_res *r, size_t len)
{
	char *src = malloc(len), *tgt = calloc(1, len);
	struct fid_mr *mr;
	int ctx;

	sse_fill(src, len, 21);
	assert_fi_ok(fi_mr_reg(r->domain, tgt, len, FI_REMOTE_WRITE, 0, 0, 0,
			       &mr, NULL));
	assert_fi_ok(fi_write(r->ep[0], src, len, NULL, r->addr[1],
			      (uint64_t)(uintptr_t)tgt, fi_mr_key(mr), &ctx));
	expect_ok(r, r->cq[0], &ctx);
	assert_int_equal(sse_check(tgt, len, 21), -1);
	assert_fi_ok(fi_close(&mr->fid));
	free(src);
	free(tgt);
}

static void test_rma_region_unmapped(void **state)
{
	size_t len = 16 * pg;
	struct fi_info *hints;
	struct fid_mr *mr;
	struct sse_res r;
	char *tgt = bad_buf(len, len);

	res_open(&r, 2, &hints);
	assert_fi_ok(fi_mr_reg(r.domain, tgt, len,
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr,
			       NULL));
	/* gone since registration (kept reserved: see bad_buf) */
	assert_int_equal(mprotect(tgt, len, PROT_NONE), 0);
	rma_faults(&r, (uint64_t)(uintptr_t)tgt, fi_mr_key(mr), 4096);
	good_write(&r, 4096);
	good_msg(&r, 0, 1, 100);
	assert_fi_ok(fi_close(&mr->fid));
	sse_res_close(&r);
	fi_freeinfo(hints);
	bad_free(tgt, len, len);
}

static void test_mr_longer_than_mapping(void **state)
{
	size_t map = (size_t)1 << 20, len = (size_t)4 << 20;
	char *loc = malloc(len), *tgt;
	struct fi_info *hints;
	struct fid_mr *mr;
	struct sse_res r;
	int ctx;

	/* nothing mapped right after the first MiB */
	tgt = bad_buf(len, map);

	res_open(&r, 2, &hints);
	assert_fi_ok(fi_mr_reg(r.domain, tgt, (uint64_t)1 << 40,
			       FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	assert_fi_ok(fi_read(r.ep[0], loc, len, NULL, r.addr[1],
			     (uint64_t)(uintptr_t)tgt, fi_mr_key(mr), &ctx));
	expect_efault(&r, r.cq[0], &ctx);
	good_write(&r, 4096);
	assert_fi_ok(fi_close(&mr->fid));
	sse_res_close(&r);
	fi_freeinfo(hints);
	bad_free(tgt, len, map);
	free(loc);
}

/* ------------------------------------------------------------------ */
/* Across two processes                                                 */
/* ------------------------------------------------------------------ */

struct peer {
	int rfd, wfd;
	pid_t pid;
};

/* Fork; both sides open one endpoint and exchange addresses.  The
 * child's side runs @child and exits with 0 unless an assertion fails. */
static void two_proc(void (*parent)(struct sse_res *, struct peer *),
		     void (*child)(struct sse_res *, struct peer *))
{
	int to_c[2], to_p[2], status;
	struct fi_sse_addr me, them;
	size_t alen = sizeof(me);
	struct fi_info *hints;
	struct sse_res r;
	struct peer p;
	bool is_child;

	assert_int_equal(pipe(to_c), 0);
	assert_int_equal(pipe(to_p), 0);
	fflush(NULL);
	p.pid = fork();
	assert_true(p.pid >= 0);
	is_child = !p.pid;
	p.rfd = is_child ? to_c[0] : to_p[0];
	p.wfd = is_child ? to_p[1] : to_c[1];
	res_open(&r, 1, &hints);
	assert_fi_ok(fi_getname(&r.ep[0]->fid, &me, &alen));
	assert_int_equal(write(p.wfd, &me, sizeof(me)), (ssize_t)sizeof(me));
	assert_int_equal(read(p.rfd, &them, sizeof(them)),
			 (ssize_t)sizeof(them));
	/* addr[1]: the peer */
	assert_int_equal(fi_av_insert(r.av, &them, 1, &r.addr[1], 0, NULL),
			 1);
	(is_child ? child : parent)(&r, &p);
	sse_res_close(&r);
	fi_freeinfo(hints);
	if (is_child)
		_exit(0);
	assert_int_equal(waitpid(p.pid, &status, 0), p.pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the other process ended with status 0x%x", status);
	close(to_c[0]);
	close(to_c[1]);
	close(to_p[0]);
	close(to_p[1]);
}

static void sync_peer(struct peer *p)
{
	char c = 's';

	assert_int_equal(write(p->wfd, &c, 1), 1);
	assert_int_equal(read(p->rfd, &c, 1), 1);
}

static const size_t xlens[] = { 100, 5000, RNDV_LEN };

/* The child sends from partly unmapped buffers, then a good message. */
static void xsend_child(struct sse_res *r, struct peer *p)
{
	char *good = malloc(100);
	size_t i;
	int sc;

	for (i = 0; i < sizeof(xlens) / sizeof(xlens[0]); i++) {
		size_t ok = xlens[i] > pg ? xlens[i] / pg / 2 * pg : 0;
		char *src = bad_buf(xlens[i], ok);

		sync_peer(p);	/* its receive is posted */
		assert_fi_ok(fi_tsend(r->ep[0], src, xlens[i], NULL,
				      r->addr[1], i, &sc));
		expect_efault(r, r->cq[0], &sc);
		bad_free(src, xlens[i], ok);
	}
	sse_fill(good, 100, 8);
	assert_fi_ok(fi_tsend(r->ep[0], good, 100, NULL, r->addr[1], 99, &sc));
	expect_ok(r, r->cq[0], &sc);
	sync_peer(p);
	free(good);
}

static void xsend_parent(struct sse_res *r, struct peer *p)
{
	char *dst = malloc(RNDV_LEN);
	size_t i;
	int rc;

	for (i = 0; i < sizeof(xlens) / sizeof(xlens[0]); i++) {
		assert_fi_ok(fi_trecv(r->ep[0], dst, xlens[i], NULL,
				      FI_ADDR_UNSPEC, i, 0, &rc));
		sync_peer(p);
		expect_efault(r, r->cq[0], &rc);
	}
	assert_fi_ok(fi_trecv(r->ep[0], dst, 100, NULL, FI_ADDR_UNSPEC, 99, 0,
			      &rc));
	expect_ok(r, r->cq[0], &rc);
	assert_int_equal(sse_check(dst, 100, 8), -1);
	sync_peer(p);
	free(dst);
}

static void test_two_proc_send_fault(void **state)
{
	two_proc(xsend_parent, xsend_child);
}

/*
 * The child registers a region, unmaps it and names it to the parent,
 * then polls (so that it may well be the process running the engine, and
 * the target NIC's accesses happen in it) until the parent is done: the
 * parent's operations fail with FI_EFAULT, the child lives on, and a good
 * write into a second region arrives.
 */
static void xrma_child(struct sse_res *r, struct peer *p)
{
	size_t len = 16 * pg;
	char *bad = bad_buf(len, len), *good = calloc(1, 4096), c;
	struct fid_mr *mr, *mr2;
	uint64_t desc[4];
	struct fi_cq_tagged_entry e;

	assert_fi_ok(fi_mr_reg(r->domain, bad, len,
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr,
			       NULL));
	assert_fi_ok(fi_mr_reg(r->domain, good, 4096, FI_REMOTE_WRITE, 0, 0,
			       0, &mr2, NULL));
	assert_int_equal(munmap(bad, len), 0);
	desc[0] = (uint64_t)(uintptr_t)bad;
	desc[1] = fi_mr_key(mr);
	desc[2] = (uint64_t)(uintptr_t)good;
	desc[3] = fi_mr_key(mr2);
	assert_int_equal(write(p->wfd, desc, sizeof(desc)),
			 (ssize_t)sizeof(desc));
	/* progress until the parent says it is done */
	for (;;) {
		struct pollfd pfd = { .fd = p->rfd, .events = POLLIN };

		(void)fi_cq_read(r->cq[0], &e, 0);
		if (poll(&pfd, 1, 1) > 0)
			break;
	}
	assert_int_equal(read(p->rfd, &c, 1), 1);
	assert_int_equal(sse_check(good, 4096, 21), -1);
	assert_int_equal(write(p->wfd, &c, 1), 1);
	assert_fi_ok(fi_close(&mr->fid));
	assert_fi_ok(fi_close(&mr2->fid));
	free(good);
}

static void xrma_parent(struct sse_res *r, struct peer *p)
{
	char *src = malloc(4096), c = 'd';
	uint64_t desc[4];
	int ctx;

	assert_int_equal(read(p->rfd, desc, sizeof(desc)),
			 (ssize_t)sizeof(desc));
	rma_faults(r, desc[0], desc[1], 4096);
	sse_fill(src, 4096, 21);
	assert_fi_ok(fi_write(r->ep[0], src, 4096, NULL, r->addr[1], desc[2],
			      desc[3], &ctx));
	expect_ok(r, r->cq[0], &ctx);
	assert_int_equal(write(p->wfd, &c, 1), 1);
	assert_int_equal(read(p->rfd, &c, 1), 1);
	free(src);
}

static void test_two_proc_rma_unmapped(void **state)
{
	two_proc(xrma_parent, xrma_child);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_unmapped_eager),
		cmocka_unit_test(test_send_partly_unmapped_eager),
		cmocka_unit_test(test_send_partly_unmapped_rndv),
		cmocka_unit_test(test_send_null),
		cmocka_unit_test(test_recv_unmapped_eager),
		cmocka_unit_test(test_recv_partly_unmapped_rndv),
		cmocka_unit_test(test_inject_unmapped),
		cmocka_unit_test(test_rma_region_unmapped),
		cmocka_unit_test(test_mr_longer_than_mapping),
		cmocka_unit_test(test_two_proc_send_fault),
		cmocka_unit_test(test_two_proc_rma_unmapped),
	};

	pg = (size_t)sysconf(_SC_PAGESIZE);
	sse_test_init("shm", "fault");
	return cmocka_run_group_tests_name("bad buffers fail with FI_EFAULT",
					   tests, NULL, NULL);
}
