/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues: the four formats, empty reads, a queue far smaller
 * than the completions it receives (none lost), error entries in order
 * with normal ones, err_data by pointer and by copy, blocking reads with
 * timeouts, fi_cq_signal, readfrom, open/close errors, and which
 * endpoints a read progresses.
 */
#include <time.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void format_case(enum fi_cq_format format, size_t esize)
{
	struct sse_res_opts o = { .format = format };
	union {
		struct fi_cq_entry c;
		struct fi_cq_msg_entry m;
		struct fi_cq_data_entry d;
		struct fi_cq_tagged_entry t;
		char raw[128];
	} e;
	struct sse_res r;
	char buf[16];

	sse_res_open(&r, 2, &o);
	memset(&e, 0xee, sizeof(e));
	assert_fi_ok(fi_trecv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			      6, 0, buf));
	assert_fi_ok(fi_tsenddata(r.ep[0], "abc", 4, NULL, 9, r.addr[1], 6,
				  NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.c.op_context, buf);
	if (format != FI_CQ_FORMAT_CONTEXT) {
		assert_int_equal(e.m.len, 4);
		assert_true(e.m.flags & FI_RECV);
	}
	if (format == FI_CQ_FORMAT_DATA || format == FI_CQ_FORMAT_TAGGED) {
		assert_int_equal(e.d.data, 9);
		assert_ptr_equal(e.d.buf, buf);
	}
	if (format == FI_CQ_FORMAT_TAGGED)
		assert_int_equal(e.t.tag, 6);
	/* nothing written past the entry of this format */
	assert_int_equal((unsigned char)e.raw[esize], 0xee);
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	sse_res_close(&r);
}

static void test_cq_formats(void **state)
{
	format_case(FI_CQ_FORMAT_CONTEXT, sizeof(struct fi_cq_entry));
	format_case(FI_CQ_FORMAT_MSG, sizeof(struct fi_cq_msg_entry));
	format_case(FI_CQ_FORMAT_DATA, sizeof(struct fi_cq_data_entry));
	format_case(FI_CQ_FORMAT_TAGGED, sizeof(struct fi_cq_tagged_entry));
}

static void test_cq_open_errors(void **state)
{
	struct sse_res r;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_cq *cq;
	enum fi_wait_obj wo;

	sse_res_open(&r, 1, NULL);
	attr.format = (enum fi_cq_format)42;
	assert_int_equal(fi_cq_open(r.domain, &attr, &cq, NULL), -FI_ENOSYS);
	attr.format = FI_CQ_FORMAT_UNSPEC;
	attr.wait_obj = FI_WAIT_FD;	/* supported: test_cq_fd */
	assert_fi_ok(fi_cq_open(r.domain, &attr, &cq, NULL));
	assert_fi_ok(fi_close(&cq->fid));
	/* FI_WAIT_SET without a wait set (wait sets: test_poll) */
	attr.wait_obj = FI_WAIT_SET;
	assert_int_equal(fi_cq_open(r.domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_UNSPEC;
	attr.flags = 1ULL << 50;
	assert_int_equal(fi_cq_open(r.domain, &attr, &cq, NULL),
			 -FI_EBADFLAGS);
	attr.flags = 0;
	attr.wait_cond = (enum fi_cq_wait_cond)9;
	assert_int_equal(fi_cq_open(r.domain, &attr, &cq, NULL), -FI_EINVAL);
	attr.wait_cond = FI_CQ_COND_NONE;
	assert_int_equal(fi_cq_open(r.domain, NULL, &cq, NULL), -FI_EINVAL);
	assert_fi_ok(fi_cq_open(r.domain, &attr, &cq, NULL));
	assert_int_not_equal(attr.format, FI_CQ_FORMAT_UNSPEC);
	assert_fi_ok(fi_control(&cq->fid, FI_GETWAITOBJ, &wo));
	assert_int_equal(wo, FI_WAIT_UNSPEC);
	/* no descriptor without FI_WAIT_FD (as libfabric's util CQs say) */
	assert_int_equal(fi_control(&cq->fid, FI_GETWAIT, &wo), -FI_ENODATA);
	assert_fi_ok(fi_close(&cq->fid));
	sse_res_close(&r);
}

static void test_cq_empty_and_signal(void **state)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct sse_res r;
	uint64_t t0;

	sse_res_open(&r, 1, NULL);
	assert_int_equal(fi_cq_read(r.cq[0], &e, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(r.cq[0], &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_readerr(r.cq[0], &err, 1), -FI_EBADFLAGS);
	/* a timed blocking read times out, not much early */
	t0 = now_ms();
	assert_int_equal(fi_cq_sread(r.cq[0], &e, 1, NULL, 120), -FI_EAGAIN);
	assert_true(now_ms() - t0 >= 110);
	/* fi_cq_signal wakes a blocking read at once */
	assert_fi_ok(fi_cq_signal(r.cq[0]));
	t0 = now_ms();
	assert_int_equal(fi_cq_sread(r.cq[0], &e, 1, NULL, 10000), -FI_EAGAIN);
	assert_true(now_ms() - t0 < 2000);
	sse_res_close(&r);
}

/*
 * A read of a CQ progresses the endpoints bound to it, no others: reads
 * of the sender's CQ complete the send and leave the receiver's message
 * where the emulator put it (the receive buffer untouched, nothing in the
 * receiver's CQ without a read of it); the receiver's own read then
 * completes the receive.
 */
static void test_cq_progress_scope(void **state)
{
	struct fi_cq_tagged_entry e;
	char rbuf[16] = { 0 };
	struct sse_res r;
	uint64_t end;
	ssize_t n;
	int i;

	sse_res_open(&r, 2, NULL);
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, rbuf));
	assert_fi_ok(fi_send(r.ep[0], "scoped", 7, NULL, r.addr[1], &r));
	/* only the sender's CQ is read: its send completes ... */
	end = now_ms() + TMO;
	do {
		n = fi_cq_read(r.cq[0], &e, 1);
		assert_true(n == 1 || n == -FI_EAGAIN);
	} while (n != 1 && now_ms() < end);
	assert_int_equal(n, 1);
	assert_ptr_equal(e.op_context, &r);
	/* ... and however long it is read on, the receive is not done */
	for (i = 0; i < 2000; i++)
		assert_int_equal(fi_cq_read(r.cq[0], &e, 1), -FI_EAGAIN);
	assert_int_equal(rbuf[0], 0);
	/* the receiver's own read completes it, with the data */
	assert_int_equal(sse_cq_wait(NULL, r.cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, rbuf);
	assert_int_equal(e.len, 7);
	assert_string_equal(rbuf, "scoped");
	sse_res_close(&r);
}

/* A CQ of size 1 receives 500 completions: all of them are there. */
static void test_cq_overflow(void **state)
{
	struct sse_res r;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 1 };
	struct fid_cq *small;
	struct fi_cq_entry e[64];
	struct fid_ep *ep;
	enum { N = 500 };
	static char rb[N];
	int i, got = 0;
	ssize_t n;

	sse_res_open(&r, 2, NULL);
	/* a third endpoint whose receives go to the small CQ */
	assert_fi_ok(fi_cq_open(r.domain, &attr, &small, NULL));
	assert_fi_ok(fi_endpoint(r.domain, r.info, &ep, NULL));
	assert_fi_ok(fi_ep_bind(ep, &r.av->fid, 0));
	assert_fi_ok(fi_ep_bind(ep, &small->fid, FI_TRANSMIT | FI_RECV));
	assert_fi_ok(fi_enable(ep));
	{
		char name[16];
		size_t len = sizeof(name);
		fi_addr_t fa;

		assert_fi_ok(fi_getname(&ep->fid, name, &len));
		assert_int_equal(fi_av_insert(r.av, name, 1, &fa, 0, NULL), 1);
		for (i = 0; i < N; i++)
			assert_fi_ok(fi_recv(ep, &rb[i], 1, NULL,
					     FI_ADDR_UNSPEC, &rb[i]));
		for (i = 0; i < N; i++)
			assert_fi_ok(fi_inject(r.ep[0], "x", 1, fa));
	}
	/* let everything land before reading a single entry */
	sse_progress_for(&r, 300);
	while (got < N) {
		n = fi_cq_read(small, e, 64);
		if (n == -FI_EAGAIN) {
			/* the sender's injects wait for slots: its CQ's
			 * reads post them (FI_PROGRESS_MANUAL) */
			(void)fi_cq_read(r.cq[0], NULL, 0);
			continue;
		}
		assert_true(n > 0);
		for (i = 0; i < n; i++)
			assert_ptr_equal(e[i].op_context, &rb[got + i]);
		got += (int)n;
	}
	assert_int_equal(fi_cq_read(small, e, 1), -FI_EAGAIN);
	assert_fi_ok(fi_close(&ep->fid));
	assert_fi_ok(fi_close(&small->fid));
	sse_res_close(&r);
}

/* Normal entries before an error are read first; then -FI_EAVAIL. */
static void test_cq_error_order(void **state)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_cq_err_entry err = { 0 };
	struct sse_res r;
	char a[8], b[2], c[8];

	sse_res_open(&r, 2, NULL);
	assert_fi_ok(fi_trecv(r.ep[1], a, sizeof(a), NULL, FI_ADDR_UNSPEC, 1,
			      0, a));
	assert_fi_ok(fi_trecv(r.ep[1], b, sizeof(b), NULL, FI_ADDR_UNSPEC, 2,
			      0, b));
	assert_fi_ok(fi_trecv(r.ep[1], c, sizeof(c), NULL, FI_ADDR_UNSPEC, 3,
			      0, c));
	assert_fi_ok(fi_tsend(r.ep[0], "aaaa", 5, NULL, r.addr[1], 1, NULL));
	assert_fi_ok(fi_tsend(r.ep[0], "bbbb", 5, NULL, r.addr[1], 2, NULL));
	assert_fi_ok(fi_tsend(r.ep[0], "cccc", 5, NULL, r.addr[1], 3, NULL));
	sse_progress_for(&r, 50);
	assert_int_equal(fi_cq_read(r.cq[1], e, 4), 1);
	assert_ptr_equal(e[0].op_context, a);
	assert_int_equal(fi_cq_read(r.cq[1], e, 4), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), 1);
	assert_ptr_equal(err.op_context, b);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(r.cq[1], e, 4), 1);
	assert_ptr_equal(e[0].op_context, c);
	assert_int_equal(fi_cq_read(r.cq[1], e, 4), -FI_EAGAIN);
	assert_ptr_not_equal(fi_cq_strerror(r.cq[1], FI_ETRUNC, NULL, NULL, 0),
			     NULL);
	{
		char s[64];

		assert_ptr_equal(fi_cq_strerror(r.cq[1], FI_ETRUNC, NULL, s,
						sizeof(s)), s);
		assert_true(strlen(s) > 0);
	}
	sse_res_close(&r);
}

/* err_data: into the caller's buffer when it gives one, else a pointer
 * the provider keeps valid until the next readerr. */
static void test_cq_err_data(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR };
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_sse_addr want;
	size_t len = sizeof(want);
	struct sse_res r;
	char buf[8];
	int i;

	sse_res_open(&r, 3, &o);
	assert_fi_ok(fi_getname(&r.ep[2]->fid, &want, &len));
	assert_fi_ok(fi_av_remove(r.av, &r.addr[2], 1, 0));
	for (i = 0; i < 2; i++) {
		assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL,
				     FI_ADDR_UNSPEC, NULL));
		assert_fi_ok(fi_send(r.ep[2], "q", 2, NULL, r.addr[1], NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO),
				 -FI_EAVAIL);
		memset(&err, 0, sizeof(err));
		assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), 1);
		assert_int_equal(err.err, FI_EADDRNOTAVAIL);
		assert_non_null(err.err_data);
		assert_int_equal(err.err_data_size, sizeof(want));
		assert_memory_equal(err.err_data, &want, sizeof(want));
	}
	sse_res_close(&r);
}

static void test_cq_close_busy(void **state)
{
	struct sse_res r;

	sse_res_open(&r, 1, NULL);
	assert_int_equal(fi_close(&r.cq[0]->fid), -FI_EBUSY);
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_formats),
		cmocka_unit_test(test_cq_open_errors),
		cmocka_unit_test(test_cq_empty_and_signal),
		cmocka_unit_test(test_cq_overflow),
		cmocka_unit_test(test_cq_progress_scope),
		cmocka_unit_test(test_cq_error_order),
		cmocka_unit_test(test_cq_err_data),
		cmocka_unit_test(test_cq_close_busy),
	};

	sse_test_init("private", "cq");
	return cmocka_run_group_tests_name("cq", tests, NULL, NULL);
}
