/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tagged messages (fi_tagged): matching with ignore masks, posted and
 * unexpected orders, directed receive, sizes across every protocol
 * boundary, FI_PEEK / FI_CLAIM / FI_DISCARD as Open MPI's probe and mprobe
 * use them, truncation (tag and data in the error entry), cancel, inject,
 * CQ data, ordering per tag.  Built for the private and the shm store.
 */
#include "sse_test.h"

#ifdef SSE_TEST_SHM
#define STORE "shm"
#define NAME "tagged-shm"
#else
#define STORE "private"
#define NAME "tagged"
#endif

#define TMO SSE_TEST_TIMEOUT_MS

static struct sse_res res;

static int setup(void **state)
{
	struct sse_res_opts o = { .caps = FI_TAGGED | FI_DIRECTED_RECV };

	sse_res_open(&res, 3, &o);
	return 0;
}

static int teardown(void **state)
{
	sse_res_close(&res);
	return 0;
}

static void txfer(struct sse_res *r, size_t len, bool recv_first,
		  uint64_t tag, unsigned seed)
{
	char *sbuf = malloc(len + 1), *rbuf = malloc(len + 1);
	struct fi_cq_tagged_entry e;

	sse_fill(sbuf, len, seed);
	memset(rbuf, 0, len + 1);
	if (recv_first)
		assert_fi_ok(fi_trecv(r->ep[1], rbuf, len, NULL,
				      FI_ADDR_UNSPEC, tag, 0, rbuf));
	assert_fi_ok(fi_tsenddata(r->ep[0], sbuf, len, NULL, seed, r->addr[1],
				  tag, sbuf));
	if (!recv_first) {
		sse_progress_for(r, 2);
		assert_fi_ok(fi_trecv(r->ep[1], rbuf, len, NULL,
				      FI_ADDR_UNSPEC, tag, 0, rbuf));
	}
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, rbuf);
	assert_int_equal(e.len, len);
	assert_int_equal(e.tag, tag);
	assert_int_equal(e.data, seed);
	assert_int_equal(e.flags, FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA);
	assert_int_equal(sse_check(rbuf, len, seed), -1);
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
	assert_int_equal(e.flags, FI_SEND | FI_TAGGED);
	free(sbuf);
	free(rbuf);
}

static void test_tagged_sizes(void **state)
{
	size_t mtu = sse_test_mtu(), piece = sse_test_piece();
	const size_t sizes[] = {
		0, 1, 8, mtu - 1, mtu, mtu + 1, 16383, 16384, 16385,
		piece - 1, piece, piece + 1, 1 << 20, (size_t)64 << 20,
	};
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		txfer(&res, sizes[i], true, 0x8000000000000000ULL | i,
		      (unsigned)i);
		txfer(&res, sizes[i], false, i * 77, (unsigned)i + 50);
	}
}

static void test_tagged_matching(void **state)
{
	struct sse_res *r = &res;
	struct fi_cq_tagged_entry e;
	uint32_t a = 0, b = 0, c = 0;
	uint32_t va = 1, vb = 2, vc = 3;

	/* exact tag, masked tag, wildcard: posted in that order */
	assert_fi_ok(fi_trecv(r->ep[1], &a, 4, NULL, FI_ADDR_UNSPEC, 0x1234,
			      0, &a));
	assert_fi_ok(fi_trecv(r->ep[1], &b, 4, NULL, FI_ADDR_UNSPEC,
			      0xab000000, 0x00ffffff, &b));
	assert_fi_ok(fi_trecv(r->ep[1], &c, 4, NULL, FI_ADDR_UNSPEC, 0,
			      ~0ULL, &c));
	/* matches b (masked), not a */
	assert_fi_ok(fi_tsend(r->ep[0], &vb, 4, NULL, r->addr[1], 0xab123456,
			      NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &b);
	assert_int_equal(e.tag, 0xab123456);
	/* matches c (anything) since a wants 0x1234 exactly */
	assert_fi_ok(fi_tsend(r->ep[0], &vc, 4, NULL, r->addr[1], 0x1235,
			      NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &c);
	assert_fi_ok(fi_tsend(r->ep[0], &va, 4, NULL, r->addr[1], 0x1234,
			      NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &a);
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(c, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);

	/* untagged and tagged queues are separate */
	assert_fi_ok(fi_tsend(r->ep[0], &va, 4, NULL, r->addr[1], 5, NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_int_equal(fi_recv(r->ep[1], &a, 4, NULL, FI_ADDR_UNSPEC, NULL),
			 -FI_EOPNOTSUPP);
	assert_fi_ok(fi_trecv(r->ep[1], &a, 4, NULL, FI_ADDR_UNSPEC, 5, 0,
			      NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
}

/* Directed receive: Open MPI's receive from a given rank. */
static void test_tagged_directed(void **state)
{
	struct sse_res *r = &res;
	struct fi_cq_tagged_entry e;
	int from0 = 0, from2 = 0, v0 = 100, v2 = 200;

	assert_fi_ok(fi_trecv(r->ep[1], &from2, 4, NULL, r->addr[2], 9, 0,
			      &from2));
	assert_fi_ok(fi_trecv(r->ep[1], &from0, 4, NULL, r->addr[0], 9, 0,
			      &from0));
	assert_fi_ok(fi_tsend(r->ep[0], &v0, 4, NULL, r->addr[1], 9, NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &from0);
	assert_fi_ok(fi_tsend(r->ep[2], &v2, 4, NULL, r->addr[1], 9, NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &from2);
	assert_int_equal(from0, 100);
	assert_int_equal(from2, 200);
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_int_equal(sse_cq_wait(r, r->cq[2], &e, NULL, TMO), 1);
}

static void peek(struct sse_res *r, uint64_t tag, uint64_t flags, void *ctx,
		 struct iovec *iov, size_t count)
{
	struct fi_msg_tagged msg = {
		.msg_iov = iov, .iov_count = count, .addr = FI_ADDR_UNSPEC,
		.tag = tag, .ignore = 0, .context = ctx,
	};

	assert_fi_ok(fi_trecvmsg(r->ep[1], &msg, flags));
}

/* MPI_Probe / MPI_Improbe + MPI_Mrecv, eager and rendezvous. */
static void peek_claim(size_t len)
{
	struct sse_res *r = &res;
	char *sbuf = malloc(len), *rbuf = malloc(len);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_context2 ctx;
	struct iovec iov = { rbuf, len };

	sse_fill(sbuf, len, 21);
	/* nothing there: FI_ENOMSG */
	peek(r, 77, FI_PEEK | FI_COMPLETION, &ctx, NULL, 0);
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ENOMSG);
	assert_ptr_equal(err.op_context, &ctx);

	assert_fi_ok(fi_tsenddata(r->ep[0], sbuf, len, NULL, 0x55, r->addr[1],
				  77, sbuf));
	/* peek until it shows up; it stays queued */
	for (;;) {
		peek(r, 77, FI_PEEK | FI_COMPLETION, &ctx, NULL, 0);
		if (sse_cq_wait(r, r->cq[1], &e, NULL, TMO) == 1)
			break;
		assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
		assert_int_equal(err.err, FI_ENOMSG);
		sse_progress_for(r, 1);
	}
	assert_ptr_equal(e.op_context, &ctx);
	assert_int_equal(e.len, len);
	assert_int_equal(e.tag, 77);
	assert_int_equal(e.data, 0x55);
	assert_true(e.flags & FI_REMOTE_CQ_DATA);

	/* peek + claim, then receive the claimed message by context */
	peek(r, 77, FI_PEEK | FI_CLAIM | FI_COMPLETION, &ctx, NULL, 0);
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.len, len);
	/* claimed: a second peek does not see it */
	peek(r, 77, FI_PEEK | FI_COMPLETION, &e, NULL, 0);
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ENOMSG);
	/* claim with an unknown context */
	{
		struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1,
					   .context = &err };

		assert_int_equal(fi_trecvmsg(r->ep[1], &m, FI_CLAIM),
				 -FI_EINVAL);
	}
	memset(rbuf, 0, len);
	peek(r, 77, FI_CLAIM | FI_COMPLETION, &ctx, &iov, 1);
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &ctx);
	assert_int_equal(e.len, len);
	assert_int_equal(e.data, 0x55);
	assert_int_equal(sse_check(rbuf, len, 21), -1);
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	free(sbuf);
	free(rbuf);
}

static void test_tagged_peek_claim(void **state)
{
	peek_claim(8);
	peek_claim(sse_test_piece() * 3 + 1);	/* eager, several pieces */
	peek_claim(1 << 20);			/* rendezvous */
}

static void discard(size_t len, bool claim_first)
{
	struct sse_res *r = &res;
	char *sbuf = calloc(1, len);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_context2 ctx;

	assert_fi_ok(fi_tsend(r->ep[0], sbuf, len, NULL, r->addr[1], 88,
			      sbuf));
	do {
		sse_progress_for(r, 1);
		peek(r, 88, FI_PEEK | FI_COMPLETION, &ctx, NULL, 0);
	} while (sse_cq_wait(r, r->cq[1], &e, NULL, TMO) != 1 &&
		 fi_cq_readerr(r->cq[1], &err, 0) == 1);
	if (claim_first) {
		peek(r, 88, FI_PEEK | FI_CLAIM, &ctx, NULL, 0);
		assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
		peek(r, 88, FI_CLAIM | FI_DISCARD, &ctx, NULL, 0);
	} else {
		peek(r, 88, FI_PEEK | FI_DISCARD, &ctx, NULL, 0);
	}
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	/* gone */
	peek(r, 88, FI_PEEK, &ctx, NULL, 0);
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ENOMSG);
	/* the sender completes (a rendezvous sender is told) */
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
	free(sbuf);
}

static void test_tagged_discard(void **state)
{
	discard(16, false);
	discard(16, true);
	discard(1 << 20, false);
	discard(1 << 20, true);
}

/*
 * Read rendezvous (FI_SLINGSHOT_EMU_RNDV_READ, default on) through
 * FI_PEEK / FI_CLAIM / FI_DISCARD, with the sender in a domain of its own
 * that nobody progresses: the claimed receive reads the data on its own
 * (with the push protocol it waits for the sender), and a discarded
 * message releases its sender with a FIN.
 */
static bool rndv_read_on(void)
{
	const char *s = getenv("FI_SLINGSHOT_EMU_RNDV_READ");

	return !s || !(!strcmp(s, "0") || !strcmp(s, "false") ||
		       !strcmp(s, "no") || !strcmp(s, "off"));
}

/* Peek (only @d progresses) until the message tagged @tag is there. */
static void peek_until(struct sse_res *d, uint64_t tag, uint64_t flags,
		       struct fi_context2 *ctx, struct fi_cq_tagged_entry *e)
{
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = tag,
				   .context = ctx };
	struct fi_cq_err_entry err = { 0 };
	int i;

	for (i = 0; i < 10000; i++) {
		assert_fi_ok(fi_trecvmsg(d->ep[0], &m, flags));
		if (sse_cq_wait(d, d->cq[0], e, NULL, TMO) == 1)
			return;
		assert_int_equal(fi_cq_readerr(d->cq[0], &err, 0), 1);
		assert_int_equal(err.err, FI_ENOMSG);
		sse_progress_for(d, 1);
	}
	fail_msg("message tagged %llu never showed up",
		 (unsigned long long)tag);
}

static void test_tagged_rndv_idle_sender(void **state)
{
	struct sse_res_opts o = { .caps = FI_TAGGED };
	size_t len = (1 << 20) + 3;
	char *sbuf = malloc(len), *rbuf = malloc(len);
	struct iovec iov = { rbuf, len };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1,
				   .addr = FI_ADDR_UNSPEC, .tag = 5 };
	struct fi_cq_tagged_entry e, se;
	struct fi_context2 ctx;
	struct fi_sse_addr a;
	size_t alen = sizeof(a);
	struct sse_res s, d;
	fi_addr_t to_d;
	int ret;

	/* two more domains on the NIC: lend them the fixture's endpoints */
	teardown(state);
	sse_res_open(&s, 1, &o);
	sse_res_open(&d, 1, &o);
	assert_fi_ok(fi_getname(&d.ep[0]->fid, &a, &alen));
	assert_int_equal(fi_av_insert(s.av, &a, 1, &to_d, 0, NULL), 1);
	sse_fill(sbuf, len, 31);
	memset(rbuf, 0, len);

	/* peek, claim, receive the claimed message */
	assert_fi_ok(fi_tsenddata(s.ep[0], sbuf, len, NULL, 0x77, to_d, 5,
				  sbuf));
	peek_until(&d, 5, FI_PEEK | FI_CLAIM | FI_COMPLETION, &ctx, &e);
	assert_int_equal(e.len, len);
	m.context = &ctx;
	assert_fi_ok(fi_trecvmsg(d.ep[0], &m, FI_CLAIM | FI_COMPLETION));
	ret = sse_cq_wait(&d, d.cq[0], &e, NULL, rndv_read_on() ? TMO : 300);
	if (!rndv_read_on()) {
		assert_int_equal(ret, -FI_ETIMEDOUT);
		/* pushed: the sender must go on */
		assert_int_equal(sse_cq_wait(&s, s.cq[0], &se, NULL, TMO), 1);
		ret = sse_cq_wait(&d, d.cq[0], &e, NULL, TMO);
	} else {
		assert_int_equal(sse_cq_wait(&s, s.cq[0], &se, NULL, TMO), 1);
	}
	assert_ptr_equal(se.op_context, sbuf);
	assert_int_equal(ret, 1);
	assert_ptr_equal(e.op_context, &ctx);
	assert_int_equal(e.len, len);
	assert_int_equal(e.tag, 5);
	assert_int_equal(e.data, 0x77);
	assert_int_equal(sse_check(rbuf, len, 31), -1);

	/* peek and discard: the sender completes, nothing is received */
	memset(rbuf, 0, len);
	assert_fi_ok(fi_tsend(s.ep[0], sbuf, len, NULL, to_d, 6, sbuf));
	peek_until(&d, 6, FI_PEEK | FI_DISCARD | FI_COMPLETION, &ctx, &e);
	assert_int_equal(sse_cq_wait(&s, s.cq[0], &se, NULL, TMO), 1);
	assert_ptr_equal(se.op_context, sbuf);
	sse_assert_cq_empty(&d, d.cq[0]);
	assert_int_equal(rbuf[0], 0);

	sse_res_close(&d);
	sse_res_close(&s);
	setup(state);
	free(sbuf);
	free(rbuf);
}

/* The MTL reads tag and data from a truncation error entry. */
static void test_tagged_truncation(void **state)
{
	struct sse_res *r = &res;
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	char sbuf[100], rbuf[40];

	sse_fill(sbuf, sizeof(sbuf), 4);
	assert_fi_ok(fi_trecv(r->ep[1], rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 0, ~0ULL, rbuf));
	assert_fi_ok(fi_tsenddata(r->ep[0], sbuf, sizeof(sbuf), NULL, 1234,
				  r->addr[1], 0xabcdef, NULL));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(err.tag, 0xabcdef);
	assert_int_equal(err.data, 1234);
	assert_int_equal(err.len, sizeof(rbuf));
	assert_int_equal(err.olen, sizeof(sbuf) - sizeof(rbuf));
	assert_true(err.flags & FI_TAGGED);
	assert_int_equal(sse_check(rbuf, sizeof(rbuf), 4), -1);
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
}

static void test_tagged_cancel(void **state)
{
	struct sse_res *r = &res;
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_context2 ctx;
	char buf[8];

	assert_fi_ok(fi_trecv(r->ep[1], buf, sizeof(buf), NULL,
			      FI_ADDR_UNSPEC, 4242, 0, &ctx));
	assert_fi_ok(fi_cancel(&r->ep[1]->fid, &ctx));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, &ctx);
	assert_int_equal(err.tag, 4242);
	assert_true(err.flags & FI_TAGGED);
}

static void test_tagged_inject(void **state)
{
	struct sse_res *r = &res;
	struct fi_cq_tagged_entry e;
	uint64_t v = 0x1122334455667788ULL, got = 0;

	assert_fi_ok(fi_trecv(r->ep[1], &got, 8, NULL, FI_ADDR_UNSPEC, 3, 0,
			      NULL));
	assert_fi_ok(fi_tinject(r->ep[0], &v, 8, r->addr[1], 3));
	v = 0;
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_int_equal(got, 0x1122334455667788ULL);
	assert_int_equal(e.tag, 3);

	assert_fi_ok(fi_trecv(r->ep[1], &got, 8, NULL, FI_ADDR_UNSPEC, 4, 0,
			      NULL));
	assert_fi_ok(fi_tinjectdata(r->ep[0], &v, 8, 99, r->addr[1], 4));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 99);
	assert_true(e.flags & FI_REMOTE_CQ_DATA);
	sse_assert_cq_empty(r, r->cq[0]);
}

/* Same source and tag: receives complete in send order. */
static void test_tagged_ordering(void **state)
{
	struct sse_res *r = &res;
	enum { N = 200 };
	static uint32_t sv[N], rv[N];
	struct fi_cq_tagged_entry e;
	int i;

	for (i = 0; i < N; i++) {
		sv[i] = (uint32_t)i;
		assert_fi_ok(fi_tsend(r->ep[0], &sv[i], 4, NULL, r->addr[1],
				      7, NULL));
	}
	for (i = 0; i < N; i++)
		assert_fi_ok(fi_trecv(r->ep[1], &rv[i], 4, NULL,
				      FI_ADDR_UNSPEC, 7, 0, NULL));
	for (i = 0; i < N; i++) {
		assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
		assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	}
	for (i = 0; i < N; i++)
		assert_int_equal(rv[i], i);
}

static void test_tagged_bad_args(void **state)
{
	struct sse_res *r = &res;
	char buf[8] = "";
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC };

	assert_int_equal(fi_tsend(r->ep[0], buf, 8, NULL, 777, 1, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_trecv(r->ep[1], buf, 8, NULL, 777, 1, 0, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_trecvmsg(r->ep[1], NULL, 0), -FI_EINVAL);
	assert_int_equal(fi_trecvmsg(r->ep[1], &m, FI_DISCARD), -FI_EINVAL);
	assert_int_equal(fi_trecvmsg(r->ep[1], &m, FI_MULTI_RECV),
			 -FI_EINVAL);
	assert_int_equal(fi_tsendmsg(r->ep[0], &m, FI_FENCE), -FI_EBADFLAGS);
	assert_int_equal(fi_tinject(r->ep[0], buf, 100000, r->addr[1], 1),
			 -FI_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tagged_sizes),
		cmocka_unit_test(test_tagged_matching),
		cmocka_unit_test(test_tagged_directed),
		cmocka_unit_test(test_tagged_peek_claim),
		cmocka_unit_test(test_tagged_discard),
		cmocka_unit_test(test_tagged_rndv_idle_sender),
		cmocka_unit_test(test_tagged_truncation),
		cmocka_unit_test(test_tagged_cancel),
		cmocka_unit_test(test_tagged_inject),
		cmocka_unit_test(test_tagged_ordering),
		cmocka_unit_test(test_tagged_bad_args),
	};

	sse_test_init(STORE, NAME);
	return cmocka_run_group_tests_name("tagged (" STORE " store)", tests,
					   setup, teardown);
}
