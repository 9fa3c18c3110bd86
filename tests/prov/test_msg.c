/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Untagged messages (fi_msg) between endpoints of one process: data
 * integrity across every protocol boundary (inline, MTU, emulator piece,
 * eager/rendezvous, 64 MiB), receive-first and unexpected orders, iovs,
 * CQ data, inject, selective completion, truncation, cancel, FI_SOURCE,
 * FI_SOURCE_ERR, multi-recv, ordering, FI_EAGAIN and bad arguments; the
 * read rendezvous (a sender nobody progresses, truncation, iovs, a sender
 * gone, more sends than internal regions, multi-recv).
 * Built twice: private store (test_msg) and shm store (test_msg_shm).
 */
#include <strings.h>

#include "sse_test.h"

#ifdef SSE_TEST_SHM
#define STORE "shm"
#define NAME "msg-shm"
#else
#define STORE "private"
#define NAME "msg"
#endif

#define TMO SSE_TEST_TIMEOUT_MS
#define SSEMU_TEST_MIN(a, b) ((a) < (b) ? (a) : (b))

static size_t eager_max(void)
{
	const char *s = getenv("FI_SLINGSHOT_EMU_EAGER_MAX");

	return s ? strtoul(s, NULL, 0) : 16384;
}

/* Send @len bytes ep0 -> ep1, receive posted first or not; check it all. */
static void xfer(struct sse_res *r, size_t len, bool recv_first,
		 unsigned seed)
{
	char *sbuf = malloc(len + 1), *rbuf = malloc(len + 16);
	struct fi_cq_tagged_entry e;

	assert_non_null(sbuf);
	assert_non_null(rbuf);
	sse_fill(sbuf, len, seed);
	memset(rbuf, 0xa5, len + 16);

	if (recv_first)
		assert_fi_ok(fi_recv(r->ep[1], rbuf, len, NULL,
				     FI_ADDR_UNSPEC, rbuf));
	assert_fi_ok(fi_send(r->ep[0], sbuf, len, NULL, r->addr[1], sbuf));
	if (!recv_first) {
		sse_progress_for(r, 2);
		assert_fi_ok(fi_recv(r->ep[1], rbuf, len, NULL,
				     FI_ADDR_UNSPEC, rbuf));
	}
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, rbuf);
	assert_int_equal(e.len, len);
	assert_true(e.flags & FI_RECV);
	assert_true(e.flags & FI_MSG);
	assert_int_equal(sse_check(rbuf, len, seed), -1);
	assert_int_equal((unsigned char)rbuf[len], 0xa5);	/* no overrun */
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
	assert_true(e.flags & FI_SEND);
	free(sbuf);
	free(rbuf);
}

static void test_msg_sizes(void **state)
{
	size_t mtu = sse_test_mtu(), piece = sse_test_piece();
	size_t em = eager_max();
	const size_t sizes[] = {
		0, 1, 8, 191, 192, 193, mtu - 1, mtu, mtu + 1,
		em - 1, em, em + 1, piece - 1, piece, piece + 1,
		3 * piece + 7, 1 << 20, (size_t)64 << 20,
	};
	struct sse_res r;
	size_t i;

	sse_res_open(&r, 2, NULL);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		xfer(&r, sizes[i], true, (unsigned)i);
		xfer(&r, sizes[i], false, (unsigned)i + 100);
	}
	sse_res_close(&r);
}

static void test_msg_iov(void **state)
{
	size_t piece = sse_test_piece();
	size_t len = 2 * piece + 333, cut[3] = { 10, piece + 1, 0 };
	char *sbuf = malloc(len), *rbuf = malloc(len);
	struct iovec siov[4], riov[3];
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	size_t off = 0;
	int i;

	sse_res_open(&r, 2, NULL);
	sse_fill(sbuf, len, 7);
	memset(rbuf, 0, len);
	/* send in 4 uneven pieces, receive in 3 other ones */
	siov[0] = (struct iovec){ sbuf, 1 };
	siov[1] = (struct iovec){ sbuf + 1, piece };
	siov[2] = (struct iovec){ sbuf + 1 + piece, 100 };
	siov[3] = (struct iovec){ sbuf + 101 + piece, len - 101 - piece };
	cut[2] = len - cut[0] - cut[1];
	for (i = 0; i < 3; i++) {
		riov[i] = (struct iovec){ rbuf + off, cut[i] };
		off += cut[i];
	}
	assert_fi_ok(fi_recvv(r.ep[1], riov, NULL, 3, FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_sendv(r.ep[0], siov, NULL, 4, r.addr[1], NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.len, len);
	assert_int_equal(sse_check(rbuf, len, 7), -1);
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);

	/* more iovs than the limit */
	assert_int_equal(fi_sendv(r.ep[0], siov, NULL, 5, r.addr[1], NULL),
			 -FI_EINVAL);
	sse_res_close(&r);
	free(sbuf);
	free(rbuf);
}

static void test_msg_cq_data_and_inject(void **state)
{
	struct fi_cq_tagged_entry e;
	char sbuf[64], rbuf[64];
	struct sse_res r;
	struct iovec iov = { sbuf, 16 };
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .context = sbuf,
		.data = 0xfeedULL,
	};

	sse_res_open(&r, 2, NULL);
	sse_fill(sbuf, sizeof(sbuf), 3);

	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_senddata(r.ep[0], sbuf, 16, NULL, 0xdeadbeef12345678ULL,
				 r.addr[1], NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_true(e.flags & FI_REMOTE_CQ_DATA);
	assert_int_equal(e.data, 0xdeadbeef12345678ULL);
	assert_int_equal(e.len, 16);
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);

	/* inject: the buffer is reusable at once and no completion comes */
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_inject(r.ep[0], sbuf, 32, r.addr[1]));
	memset(sbuf, 0, 32);
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_false(e.flags & FI_REMOTE_CQ_DATA);
	assert_int_equal(sse_check(rbuf, 32, 3), -1);
	sse_fill(sbuf, sizeof(sbuf), 3);

	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_injectdata(r.ep[0], sbuf, 8, 42, r.addr[1]));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 42);
	sse_assert_cq_empty(&r, r.cq[0]);

	/* fi_sendmsg(FI_INJECT | FI_COMPLETION) does complete */
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	msg.addr = r.addr[1];
	assert_fi_ok(fi_sendmsg(r.ep[0], &msg,
				FI_INJECT | FI_COMPLETION | FI_REMOTE_CQ_DATA));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.data, 0xfeed);

	/* inject above inject_size */
	{
		size_t big = r.info->tx_attr->inject_size + 1;
		char *b = calloc(1, big);

		assert_int_equal(fi_inject(r.ep[0], b, big, r.addr[1]),
				 -FI_EINVAL);
		free(b);
	}
	sse_res_close(&r);
}

/* Open MPI's mtl binds with FI_SELECTIVE_COMPLETION and sends its
 * zero-byte acks with fi_tsendmsg(flags 0, NULL iov, NULL context). */
static void test_msg_selective(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_MSG);
	struct sse_res_opts o = { .cq_flags = FI_SELECTIVE_COMPLETION,
				  .hints = hints };
	struct fi_cq_tagged_entry e;
	struct fi_msg msg = { 0 };
	char buf[8] = "abcdefg";
	struct sse_res r;

	/* as Open MPI does: fi_send/fi_recv complete, *msg(0) does not */
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	sse_res_open(&r, 2, &o);
	fi_freeinfo(hints);
	msg.addr = r.addr[1];

	/* zero bytes, NULL iov, NULL context, flags 0: no completion */
	assert_fi_ok(fi_recv(r.ep[1], NULL, 0, NULL, FI_ADDR_UNSPEC, buf));
	assert_fi_ok(fi_sendmsg(r.ep[0], &msg, 0));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, buf);	/* op_flags has FI_COMPLETION */
	assert_int_equal(e.len, 0);
	sse_assert_cq_empty(&r, r.cq[0]);

	/* with FI_COMPLETION it completes */
	msg.context = buf;
	assert_fi_ok(fi_recv(r.ep[1], NULL, 0, NULL, FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_sendmsg(r.ep[0], &msg, FI_COMPLETION));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, buf);
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);

	/* a receive posted with fi_recvmsg(flags 0) completes silently */
	{
		struct iovec iov = { buf, sizeof(buf) };
		struct fi_msg rmsg = { .msg_iov = &iov, .iov_count = 1,
				       .addr = FI_ADDR_UNSPEC, .context = buf };

		assert_fi_ok(fi_recvmsg(r.ep[1], &rmsg, 0));
		assert_fi_ok(fi_send(r.ep[0], "xyz", 4, NULL, r.addr[1],
				     NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
		sse_assert_cq_empty(&r, r.cq[1]);
		assert_string_equal(buf, "xyz");
	}
	sse_res_close(&r);
}

static void check_trunc(struct sse_res *r, size_t slen, size_t rlen)
{
	char *sbuf = malloc(slen), *rbuf = malloc(rlen + 8);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;

	sse_fill(sbuf, slen, 11);
	memset(rbuf, 0x5a, rlen + 8);
	assert_fi_ok(fi_recv(r->ep[1], rbuf, rlen, NULL, FI_ADDR_UNSPEC,
			     rbuf));
	assert_fi_ok(fi_senddata(r->ep[0], sbuf, slen, NULL, 77, r->addr[1],
				 sbuf));
	assert_int_equal(sse_cq_wait(r, r->cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r->cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ETRUNC);
	assert_ptr_equal(err.op_context, rbuf);
	assert_int_equal(err.len, rlen);
	assert_int_equal(err.olen, slen - rlen);
	assert_int_equal(err.data, 77);
	assert_true(err.flags & FI_RECV);
	assert_int_equal(sse_check(rbuf, rlen, 11), -1);
	assert_int_equal((unsigned char)rbuf[rlen], 0x5a);
	/* the sender's side is a normal completion */
	assert_int_equal(sse_cq_wait(r, r->cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, sbuf);
	free(sbuf);
	free(rbuf);
}

static void test_msg_truncation(void **state)
{
	struct sse_res r;

	sse_res_open(&r, 2, NULL);
	check_trunc(&r, 100, 10);
	check_trunc(&r, sse_test_piece() * 2 + 5, sse_test_piece() + 3);
	check_trunc(&r, 1 << 20, 100 << 10);	/* rendezvous */
	check_trunc(&r, 1 << 20, 0);
	sse_res_close(&r);
}

/*
 * Rendezvous by receiver reads (FI_SLINGSHOT_EMU_RNDV_READ, default on):
 * the receiver reads a one-segment send out of the sender's buffer, so it
 * completes with the sender left alone; pushed data (several segments, or
 * the parameter at 0) needs the sender to post it after the CTS.
 */
static bool rndv_read_on(void)
{
	const char *s = getenv("FI_SLINGSHOT_EMU_RNDV_READ");

	return !s || !(!strcmp(s, "0") || !strcasecmp(s, "false") ||
		       !strcasecmp(s, "no") || !strcasecmp(s, "off"));
}

/*
 * Sender and receiver in two domains of this process (as Open MPI's two
 * components are): reading a domain's CQ progresses only its endpoints,
 * so a sender whose domain nobody reads makes no progress at all (the
 * engine still runs, and its NIC serves reads).
 */
static void open_pair(struct sse_res *s, struct sse_res *d, fi_addr_t *to_d)
{
	struct fi_sse_addr a;
	size_t alen = sizeof(a);

	sse_res_open(s, 1, NULL);
	sse_res_open(d, 1, NULL);
	assert_fi_ok(fi_getname(&d->ep[0]->fid, &a, &alen));
	assert_int_equal(fi_av_insert(s->av, &a, 1, to_d, 0, NULL), 1);
}

/* Progress both sides until the send and the receive complete. */
static int both_wait(struct sse_res *s, struct fi_cq_tagged_entry *se,
		     struct sse_res *d, struct fi_cq_tagged_entry *de)
{
	int i, sret = 0, dret = 0;

	for (i = 0; i < TMO && (!sret || !dret); i++) {
		if (!sret)
			sret = sse_cq_wait(s, s->cq[0], se, NULL, 1);
		if (!dret)
			dret = sse_cq_wait(d, d->cq[0], de, NULL, 1);
		if (sret == -FI_ETIMEDOUT)
			sret = 0;
		if (dret == -FI_ETIMEDOUT)
			dret = 0;
	}
	assert_int_equal(sret, 1);
	return dret;
}

/*
 * @slen bytes from an idle sender into a receive of @rlen bytes (in three
 * uneven segments if @riov), posted before or after the RTS arrives; the
 * send in two segments if @siov.  Read: the receive completes while the
 * sender sits idle.  Push: it cannot until the sender progresses.
 */
static void idle_sender(size_t slen, size_t rlen, bool recv_first, bool siov,
			bool riov, unsigned seed)
{
	char *sbuf = malloc(slen), *rbuf = malloc(rlen + 8);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e, se;
	struct iovec sv[2], rv[3];
	bool pushed = siov || !rndv_read_on();
	size_t got = SSEMU_TEST_MIN(slen, rlen);
	struct sse_res s, d;
	fi_addr_t to_d;
	int ret;

	assert_non_null(sbuf);
	assert_non_null(rbuf);
	sse_fill(sbuf, slen, seed);
	memset(rbuf, 0x5a, rlen + 8);
	open_pair(&s, &d, &to_d);
	sv[0] = (struct iovec){ sbuf, slen / 3 };
	sv[1] = (struct iovec){ sbuf + slen / 3, slen - slen / 3 };
	rv[0] = (struct iovec){ rbuf, 1000 };
	rv[1] = (struct iovec){ rbuf + 1000, rlen / 2 };
	rv[2] = (struct iovec){ rbuf + 1000 + rlen / 2,
				rlen - 1000 - rlen / 2 };

	if (recv_first)
		assert_fi_ok(riov ? fi_recvv(d.ep[0], rv, NULL, 3,
					     FI_ADDR_UNSPEC, rbuf) :
			     fi_recv(d.ep[0], rbuf, rlen, NULL, FI_ADDR_UNSPEC,
				     rbuf));
	assert_fi_ok(siov ? fi_sendv(s.ep[0], sv, NULL, 2, to_d, sbuf) :
		     fi_send(s.ep[0], sbuf, slen, NULL, to_d, sbuf));
	if (!recv_first) {
		sse_progress_for(&d, 5);	/* the RTS arrives unexpected */
		assert_fi_ok(riov ? fi_recvv(d.ep[0], rv, NULL, 3,
					     FI_ADDR_UNSPEC, rbuf) :
			     fi_recv(d.ep[0], rbuf, rlen, NULL, FI_ADDR_UNSPEC,
				     rbuf));
	}
	/* only the receiver's domain progresses */
	ret = sse_cq_wait(&d, d.cq[0], &e, NULL, pushed ? 300 : TMO);
	if (pushed) {
		assert_int_equal(ret, -FI_ETIMEDOUT);
		/* the sender pushes once it progresses too */
		ret = both_wait(&s, &se, &d, &e);
		assert_ptr_equal(se.op_context, sbuf);
	} else {
		/* nothing is left for the sender to do but note the FIN */
		assert_int_equal(sse_cq_wait(&s, s.cq[0], &se, NULL, TMO), 1);
		assert_ptr_equal(se.op_context, sbuf);
	}
	if (slen > rlen) {
		assert_int_equal(ret, -FI_EAVAIL);
		assert_int_equal(fi_cq_readerr(d.cq[0], &err, 0), 1);
		assert_int_equal(err.err, FI_ETRUNC);
		assert_ptr_equal(err.op_context, rbuf);
		assert_int_equal(err.len, rlen);
		assert_int_equal(err.olen, slen - rlen);
	} else {
		assert_int_equal(ret, 1);
		assert_ptr_equal(e.op_context, rbuf);
		assert_int_equal(e.len, slen);
	}
	assert_int_equal(sse_check(rbuf, got, seed), -1);
	/* no overrun */
	assert_int_equal((unsigned char)rbuf[rlen], 0x5a);
	sse_assert_cq_empty(&s, s.cq[0]);
	sse_res_close(&d);
	sse_res_close(&s);
	free(sbuf);
	free(rbuf);
}

static void test_msg_rndv_idle_sender(void **state)
{
	size_t piece = sse_test_piece(), em = eager_max();

	idle_sender(em + 1, em + 1, true, false, false, 1);
	idle_sender(1 << 20, 1 << 20, false, false, false, 2);
	/* pieces across receive segments, reads all at once and queued */
	idle_sender(20 * piece + 3, 20 * piece + 3, true, false, true, 3);
	idle_sender(20 * piece + 3, 20 * piece + 3, false, false, true, 4);
	/* truncation: only what fits is read */
	idle_sender(1 << 20, 3 * piece + 5, true, false, false, 5);
	idle_sender(1 << 20, 3 * piece + 5, false, false, true, 6);
	idle_sender((size_t)64 << 20, (size_t)64 << 20, true, false, false, 7);
	/* several segments are pushed, whatever the parameter says */
	idle_sender(1 << 20, 1 << 20, true, true, false, 8);
	idle_sender(1 << 20, 1 << 20, false, true, true, 9);
}

/*
 * One buffer sent again and again, changed in between, and a part of it:
 * the region the first send registered serves the later ones (the
 * endpoint's cache), and every receive gets the buffer as it was sent.
 */
static void test_msg_rndv_same_buffer(void **state)
{
	size_t len = 300000;
	char *sbuf = malloc(len), *rbuf = malloc(len);
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	unsigned k;

	sse_res_open(&r, 2, NULL);
	for (k = 0; k < 12; k++) {
		/* whole, then slices inside the first region */
		size_t off = (k % 3) * 1000, n = len - 2 * off;

		sse_fill(sbuf + off, n, 90 + k);
		memset(rbuf, 0, len);
		assert_fi_ok(fi_recv(r.ep[1], rbuf, n, NULL, FI_ADDR_UNSPEC,
				     rbuf));
		assert_fi_ok(fi_send(r.ep[0], sbuf + off, n, NULL, r.addr[1],
				     sbuf));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		assert_int_equal(e.len, n);
		assert_int_equal(sse_check(rbuf, n, 90 + k), -1);
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
		assert_ptr_equal(e.op_context, sbuf);
	}
	sse_res_close(&r);
	free(sbuf);
	free(rbuf);
}

/*
 * A read rendezvous whose sender went away before the receive matched
 * it: the reads fail and the receive completes in error, rather than
 * waiting for data that will never come.
 */
static void test_msg_rndv_sender_gone(void **state)
{
	size_t len = 1 << 20;
	char *sbuf = malloc(len), *rbuf = malloc(len);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct sse_res s, d;
	fi_addr_t to_d;

	if (!rndv_read_on()) {
		free(sbuf);
		free(rbuf);
		skip();	/* push: the receiver has nobody to ask */
	}
	sse_fill(sbuf, len, 3);
	open_pair(&s, &d, &to_d);
	assert_fi_ok(fi_send(s.ep[0], sbuf, len, NULL, to_d, sbuf));
	sse_progress_for(&d, 5);	/* the RTS arrives unexpected */
	sse_res_close(&s);		/* its region is withdrawn */
	assert_fi_ok(fi_recv(d.ep[0], rbuf, len, NULL, FI_ADDR_UNSPEC, rbuf));
	assert_int_equal(sse_cq_wait(&d, d.cq[0], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(d.cq[0], &err, 0), 1);
	assert_ptr_equal(err.op_context, rbuf);
	assert_int_equal(err.err, FI_EHOSTUNREACH);
	assert_true(err.flags & FI_RECV);
	/* the endpoint goes on working */
	assert_fi_ok(fi_send(d.ep[0], "x", 2, NULL, d.addr[0], NULL));
	assert_fi_ok(fi_recv(d.ep[0], rbuf, 2, NULL, FI_ADDR_UNSPEC, NULL));
	assert_int_equal(sse_cq_wait(&d, d.cq[0], &e, NULL, TMO), 1);
	assert_int_equal(sse_cq_wait(&d, d.cq[0], &e, NULL, TMO), 1);
	sse_res_close(&d);
	free(sbuf);
	free(rbuf);
}

/*
 * More read rendezvous sends in progress than the NIC's region table lends
 * them (256, see the man page): the rest are pushed.  With the sender
 * idle, the receiver alone completes (about) the read ones; the pushed
 * ones follow once the sender progresses.  The data is right throughout.
 */
static void test_msg_rndv_table_full(void **state)
{
	enum { N = 260, READ_MAX = 256 };
	size_t len = eager_max() + 100;
	char *sbuf = malloc(N * len), *rbuf = calloc(N, len);
	struct fi_cq_tagged_entry e, se;
	struct sse_res s, d;
	int i, got = 0, sent = 0;
	fi_addr_t to_d;
	char mark = 0;

	assert_non_null(sbuf);
	assert_non_null(rbuf);
	open_pair(&s, &d, &to_d);
	for (i = 0; i < N; i++) {
		sse_fill(sbuf + i * len, len, 1000 + (unsigned)i);
		assert_fi_ok(fi_send(s.ep[0], sbuf + i * len, len, NULL, to_d,
				     NULL));
	}
	/* every RTS is in once a tagged marker sent after them is */
	assert_fi_ok(fi_tsend(s.ep[0], "m", 1, NULL, to_d, 1, NULL));
	assert_fi_ok(fi_trecv(d.ep[0], &mark, 1, NULL, FI_ADDR_UNSPEC, 1, 0,
			      &mark));
	for (;;) {
		if (sse_cq_wait(&s, s.cq[0], &se, NULL, 1) == 1)
			sent++;		/* the marker */
		if (sse_cq_wait(&d, d.cq[0], &e, NULL, 1) == 1)
			break;
	}
	assert_ptr_equal(e.op_context, &mark);
	assert_int_equal(mark, 'm');
	while (sent < 1)
		if (sse_cq_wait(&s, s.cq[0], &se, NULL, TMO) == 1)
			sent++;
	sent = 0;

	/* the sender idle */
	for (i = 0; i < N; i++)
		assert_fi_ok(fi_recv(d.ep[0], rbuf + i * len, len, NULL,
				     FI_ADDR_UNSPEC, rbuf + i * len));
	while (sse_cq_wait(&d, d.cq[0], &e, NULL, 500) == 1) {
		assert_int_equal(e.len, len);
		got++;
	}
	/* at most the read ones: their FINs also fill the idle sender's
	 * event ring, which holds back the last few */
	if (rndv_read_on()) {
		assert_true(got >= READ_MAX - 16);
		assert_true(got <= READ_MAX);
	} else {
		assert_int_equal(got, 0);
	}

	/* both */
	while (got < N || sent < N) {
		int r1 = sse_cq_wait(&s, s.cq[0], &se, NULL, 1);
		int r2 = sse_cq_wait(&d, d.cq[0], &e, NULL, 1);

		assert_true(r1 == 1 || r1 == -FI_ETIMEDOUT);
		assert_true(r2 == 1 || r2 == -FI_ETIMEDOUT);
		sent += r1 == 1;
		got += r2 == 1;
	}
	for (i = 0; i < N; i++)
		assert_int_equal(sse_check(rbuf + i * len, len,
					   1000 + (unsigned)i), -1);
	sse_res_close(&d);
	sse_res_close(&s);
	free(sbuf);
	free(rbuf);
}

static void test_msg_cancel(void **state)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	char buf[16];

	sse_res_open(&r, 2, NULL);
	assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     buf));
	assert_fi_ok(fi_cancel(&r.ep[1]->fid, buf));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_ECANCELED);
	assert_ptr_equal(err.op_context, buf);
	assert_int_equal(fi_cancel(&r.ep[1]->fid, buf), -FI_ENOENT);
	assert_int_equal(fi_cancel(&r.ep[1]->fid, &r), -FI_ENOENT);
	/* the cancelled buffer gets nothing */
	assert_fi_ok(fi_send(r.ep[0], "hello", 6, NULL, r.addr[1], NULL));
	sse_progress_for(&r, 10);
	assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_string_equal(buf, "hello");
	sse_res_close(&r);
}

static void test_msg_source(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG | FI_SOURCE };
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	fi_addr_t src;
	char buf[8];
	int i;

	sse_res_open(&r, 3, &o);
	for (i = 0; i < 3; i++) {
		if (i == 1)
			continue;
		assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL,
				     FI_ADDR_UNSPEC, NULL));
		assert_fi_ok(fi_send(r.ep[i], "x", 2, NULL, r.addr[1], NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, &src, TMO), 1);
		assert_int_equal(src, r.addr[i]);
		assert_int_equal(sse_cq_wait(&r, r.cq[i], &e, NULL, TMO), 1);
	}
	/* a sender not in the AV: FI_ADDR_NOTAVAIL */
	assert_fi_ok(fi_av_remove(r.av, &r.addr[2], 1, 0));
	assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     NULL));
	/* the sender still knows nothing changed: send via ep2's own AV
	 * entry for ep1, which is intact */
	assert_fi_ok(fi_send(r.ep[2], "y", 2, NULL, r.addr[1], NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, &src, TMO), 1);
	assert_int_equal(src, FI_ADDR_NOTAVAIL);
	assert_int_equal(sse_cq_wait(&r, r.cq[2], &e, NULL, TMO), 1);
	sse_res_close(&r);
}

static void test_msg_source_err(void **state)
{
	struct sse_res_opts o = {
		.caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR
	};
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_sse_addr want, got;
	size_t len = sizeof(want);
	struct sse_res r;
	char buf[8];

	sse_res_open(&r, 3, &o);
	assert_true(r.info->caps & FI_SOURCE_ERR);
	assert_fi_ok(fi_getname(&r.ep[2]->fid, &want, &len));
	assert_fi_ok(fi_av_remove(r.av, &r.addr[2], 1, 0));
	assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     buf));
	assert_fi_ok(fi_send(r.ep[2], "z", 2, NULL, r.addr[1], NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), -FI_EAVAIL);
	err.err_data = &got;
	err.err_data_size = sizeof(got);
	assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), 1);
	assert_int_equal(err.err, FI_EADDRNOTAVAIL);
	assert_ptr_equal(err.op_context, buf);
	assert_int_equal(err.err_data_size, sizeof(got));
	assert_memory_equal(&got, &want, sizeof(got));
	assert_string_equal(buf, "z");	/* the data did land */
	sse_res_close(&r);
}

static void test_msg_multi_recv(void **state)
{
	struct fi_cq_tagged_entry e;
	size_t min = 1024, got, mlen = 4096;
	char *mbuf = malloc(mlen), sbuf[1000];
	struct iovec iov = { mbuf, mlen };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC, .context = mbuf };
	struct sse_res r;
	int i;

	sse_res_open(&r, 2, NULL);
	assert_fi_ok(fi_setopt(&r.ep[1]->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, sizeof(min)));
	got = sizeof(min);
	min = 0;
	assert_fi_ok(fi_getopt(&r.ep[1]->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &min, &got));
	assert_int_equal(min, 1024);

	assert_fi_ok(fi_recvmsg(r.ep[1], &msg, FI_MULTI_RECV | FI_COMPLETION));
	for (i = 0; i < 4; i++) {
		sse_fill(sbuf, sizeof(sbuf), 50 + i);
		assert_fi_ok(fi_send(r.ep[0], sbuf, sizeof(sbuf), NULL,
				     r.addr[1], NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		assert_ptr_equal(e.op_context, mbuf);
		assert_int_equal(e.len, sizeof(sbuf));
		assert_ptr_equal(e.buf, mbuf + i * sizeof(sbuf));
		assert_int_equal(sse_check(e.buf, e.len, 50 + i), -1);
		/* released once less than min_multi_recv is left */
		if (i < 3)
			assert_false(e.flags & FI_MULTI_RECV);
		else
			assert_true(e.flags & FI_MULTI_RECV);
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	}
	/* the buffer is gone: the next message waits, unexpected */
	assert_fi_ok(fi_send(r.ep[0], sbuf, 10, NULL, r.addr[1], NULL));
	sse_assert_cq_empty(&r, r.cq[1]);

	/* a new multi-recv buffer picks up the unexpected message */
	assert_fi_ok(fi_recvmsg(r.ep[1], &msg, FI_MULTI_RECV));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(e.len, 10);
	assert_ptr_equal(e.buf, mbuf);
	/* cancelling it releases it */
	assert_fi_ok(fi_cancel(&r.ep[1]->fid, mbuf));
	{
		struct fi_cq_err_entry err = { 0 };

		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO),
				 -FI_EAVAIL);
		assert_int_equal(fi_cq_readerr(r.cq[1], &err, 0), 1);
		assert_int_equal(err.err, FI_ECANCELED);
		assert_true(err.flags & FI_MULTI_RECV);
	}
	/* multi-recv needs exactly one iov */
	assert_int_equal(fi_recvmsg(r.ep[1], &(struct fi_msg){
			.msg_iov = &iov, .iov_count = 0 }, FI_MULTI_RECV),
			 -FI_EINVAL);
	sse_res_close(&r);
	free(mbuf);
}

/*
 * Rendezvous messages into one multi-recv buffer: each is read into its
 * own slice (reads of several messages complete in any order), and the
 * completion that releases the buffer is the last one.
 */
static void test_msg_rndv_multi_recv(void **state)
{
	enum { N = 3 };
	size_t len = 100000, mlen = N * len;
	char *mbuf = malloc(mlen), *sbuf = malloc(N * len);
	struct iovec iov = { mbuf, mlen };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC, .context = mbuf };
	struct fi_cq_tagged_entry e;
	bool seen[N] = { false };
	struct sse_res r;
	int i, k;

	sse_res_open(&r, 2, NULL);
	assert_fi_ok(fi_recvmsg(r.ep[1], &msg, FI_MULTI_RECV | FI_COMPLETION));
	for (i = 0; i < N; i++) {
		sse_fill(sbuf + i * len, len, 70 + (unsigned)i);
		assert_fi_ok(fi_send(r.ep[0], sbuf + i * len, len, NULL,
				     r.addr[1], NULL));
	}
	for (k = 0; k < N; k++) {
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		assert_ptr_equal(e.op_context, mbuf);
		assert_int_equal(e.len, len);
		i = (int)(((char *)e.buf - mbuf) / (ptrdiff_t)len);
		assert_ptr_equal(e.buf, mbuf + i * len);
		assert_false(seen[i]);
		seen[i] = true;
		assert_int_equal(sse_check(e.buf, len, 70 + (unsigned)i), -1);
		/* released with the last message (nothing left after it) */
		assert_int_equal(!!(e.flags & FI_MULTI_RECV), k == N - 1);
	}
	for (i = 0; i < N; i++)
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	sse_res_close(&r);
	free(mbuf);
	free(sbuf);
}

/* Messages between a pair arrive in posting order, whatever the protocol
 * each one uses. */
static void test_msg_ordering(void **state)
{
	const size_t lens[] = { 8, 70000, 0, 200000, 1, 16384, 16385, 3000 };
	const int n = 64;
	char *sbuf[64], *rbuf[64];
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	int i, done = 0;

	sse_res_open(&r, 2, NULL);
	for (i = 0; i < n; i++) {
		size_t len = lens[i % 8] + 4;

		sbuf[i] = malloc(len);
		rbuf[i] = calloc(1, len);
		memcpy(sbuf[i], &i, sizeof(i));
		sse_fill(sbuf[i] + 4, len - 4, (unsigned)i);
		assert_fi_ok(fi_send(r.ep[0], sbuf[i], len, NULL, r.addr[1],
				     NULL));
	}
	for (i = 0; i < n; i++) {
		size_t len = lens[i % 8] + 4;

		assert_fi_ok(fi_recv(r.ep[1], rbuf[i], len, NULL,
				     FI_ADDR_UNSPEC, rbuf[i]));
	}
	while (done < n) {
		int seq;

		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		memcpy(&seq, e.op_context, sizeof(seq));
		for (i = 0; i < n && rbuf[i] != e.op_context; i++)
			;
		assert_int_equal(seq, i);
		assert_int_equal(sse_check((char *)rbuf[i] + 4,
					   lens[i % 8], (unsigned)i) , -1);
		done++;
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
		free(sbuf[i]);
		free(rbuf[i]);
	}
	sse_res_close(&r);
}

/* FI_RM_ENABLED: a full transmit or receive queue says -FI_EAGAIN, and
 * nothing queued is lost. */
static void test_msg_eagain(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_MSG);
	struct sse_res_opts o = { .hints = hints };
	size_t big = 1 << 20;
	char *sbuf = malloc(big), *rbuf = malloc(big);
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	char small[4];
	int i;

	hints->tx_attr->size = 4;
	hints->rx_attr->size = 2;
	sse_res_open(&r, 2, &o);
	fi_freeinfo(hints);
	sse_fill(sbuf, big, 9);
	/* rendezvous sends stay outstanding until received */
	for (i = 0; i < 4; i++)
		assert_fi_ok(fi_send(r.ep[0], sbuf, big, NULL, r.addr[1],
				     NULL));
	assert_int_equal(fi_send(r.ep[0], sbuf, big, NULL, r.addr[1], NULL),
			 -FI_EAGAIN);
	assert_int_equal(r.ep[0]->ops->tx_size_left(r.ep[0]), 0);
	for (i = 0; i < 4; i++) {
		memset(rbuf, 0, big);
		assert_fi_ok(fi_recv(r.ep[1], rbuf, big, NULL, FI_ADDR_UNSPEC,
				     NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		assert_int_equal(sse_check(rbuf, big, 9), -1);
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	assert_int_equal(r.ep[0]->ops->tx_size_left(r.ep[0]), 4);

	assert_fi_ok(fi_recv(r.ep[1], small, 4, NULL, FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_recv(r.ep[1], small, 4, NULL, FI_ADDR_UNSPEC, NULL));
	assert_int_equal(fi_recv(r.ep[1], small, 4, NULL, FI_ADDR_UNSPEC,
				 NULL), -FI_EAGAIN);
	assert_int_equal(r.ep[1]->ops->rx_size_left(r.ep[1]), 0);
	sse_res_close(&r);
	free(sbuf);
	free(rbuf);
}

/* Far more small messages than the emulator has slots: the provider
 * queues them and loses none. */
static void test_msg_flood(void **state)
{
	enum { n = 3000 };
	static int val[n];
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	int i, seen = 0;
	int rbuf;

	sse_res_open(&r, 2, NULL);
	for (i = 0; i < n; i++) {
		val[i] = i;
		assert_fi_ok(fi_send(r.ep[0], &val[i], sizeof(val[i]), NULL,
				     r.addr[1], NULL));
	}
	for (i = 0; i < n; i++) {
		assert_fi_ok(fi_recv(r.ep[1], &rbuf, sizeof(rbuf), NULL,
				     FI_ADDR_UNSPEC, NULL));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		assert_int_equal(rbuf, i);
		seen++;
	}
	assert_int_equal(seen, n);
	for (i = 0; i < n; i++)
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
	sse_assert_cq_empty(&r, r.cq[0]);
	sse_res_close(&r);
}

static void test_msg_directed(void **state)
{
	struct fi_cq_tagged_entry e;
	struct sse_res_opts o = { .caps = FI_MSG | FI_DIRECTED_RECV };
	struct sse_res r;
	char b1[8] = "", b2[8] = "";

	sse_res_open(&r, 3, &o);
	assert_fi_ok(fi_recv(r.ep[1], b2, sizeof(b2), NULL, r.addr[2], b2));
	assert_fi_ok(fi_send(r.ep[0], "from0", 6, NULL, r.addr[1], NULL));
	sse_assert_cq_empty(&r, r.cq[1]);
	assert_fi_ok(fi_send(r.ep[2], "from2", 6, NULL, r.addr[1], NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, b2);
	assert_string_equal(b2, "from2");
	assert_fi_ok(fi_recv(r.ep[1], b1, sizeof(b1), NULL, r.addr[0], b1));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_string_equal(b1, "from0");
	/* an address not in the AV */
	assert_int_equal(fi_recv(r.ep[1], b1, sizeof(b1), NULL, 1000, NULL),
			 -FI_EINVAL);
	sse_res_close(&r);
}

static void test_msg_bad_args(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_MSG), *info;
	struct fid_ep *ep;
	struct sse_res r;
	char buf[8];
	struct iovec iov = { NULL, 8 };

	sse_res_open(&r, 2, NULL);
	assert_int_equal(fi_send(r.ep[0], buf, 8, NULL, 12345, NULL),
			 -FI_EINVAL);
	assert_int_equal(fi_send(r.ep[0], buf, 8, NULL, FI_ADDR_UNSPEC,
				 NULL), -FI_EINVAL);
	/* address 0 with a length: memory the NIC cannot read (test_fault) */
	assert_fi_ok(fi_sendv(r.ep[0], &iov, NULL, 1, r.addr[1], buf));
	sse_cq_expect_err(&r, r.cq[0], buf, FI_EFAULT);
	assert_int_equal(fi_recvv(r.ep[1], NULL, NULL, 2, FI_ADDR_UNSPEC,
				  NULL), -FI_EINVAL);
	assert_int_equal(fi_sendmsg(r.ep[0], NULL, 0), -FI_EINVAL);
	{
		struct iovec ok = { buf, 8 };
		struct fi_msg m = { .msg_iov = &ok, .iov_count = 1,
				    .addr = r.addr[1] };

		assert_int_equal(fi_sendmsg(r.ep[0], &m, FI_FENCE),
				 -FI_EBADFLAGS);
		assert_int_equal(fi_recvmsg(r.ep[1], &m, FI_PEEK),
				 -FI_EBADFLAGS);
	}
	/* an endpoint without FI_TAGGED refuses tagged calls */
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	assert_fi_ok(fi_endpoint(r.domain, info, &ep, NULL));
	assert_int_equal(fi_tsend(ep, buf, 8, NULL, 0, 1, NULL),
			 -FI_EOPNOTSUPP);
	/* not enabled yet */
	assert_int_equal(fi_send(ep, buf, 8, NULL, 0, NULL), -FI_EOPBADSTATE);
	assert_int_equal(fi_recv(ep, buf, 8, NULL, 0, NULL), -FI_EOPBADSTATE);
	assert_fi_ok(fi_close(&ep->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_msg_sizes),
		cmocka_unit_test(test_msg_iov),
		cmocka_unit_test(test_msg_cq_data_and_inject),
		cmocka_unit_test(test_msg_selective),
		cmocka_unit_test(test_msg_truncation),
		cmocka_unit_test(test_msg_rndv_idle_sender),
		cmocka_unit_test(test_msg_rndv_same_buffer),
		cmocka_unit_test(test_msg_rndv_sender_gone),
		cmocka_unit_test(test_msg_rndv_table_full),
		cmocka_unit_test(test_msg_cancel),
		cmocka_unit_test(test_msg_source),
		cmocka_unit_test(test_msg_source_err),
		cmocka_unit_test(test_msg_multi_recv),
		cmocka_unit_test(test_msg_rndv_multi_recv),
		cmocka_unit_test(test_msg_ordering),
		cmocka_unit_test(test_msg_eagain),
		cmocka_unit_test(test_msg_flood),
		cmocka_unit_test(test_msg_directed),
		cmocka_unit_test(test_msg_bad_args),
	};

	sse_test_init(STORE, NAME);
	return cmocka_run_group_tests_name("msg (" STORE " store)", tests,
					   NULL, NULL);
}
