/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A message whose payload changes in the shared-memory segment after it
 * was posted fails its CRC at the receiver: the receive that matches it
 * completes with FI_EIO (prov_errno EBADMSG, the receive counter's error
 * count moves), whether it was posted before the message arrived or
 * after (the message waits as a failed unexpected entry), for a message
 * of one piece and for one whose later piece is the one that changed,
 * and for one with no payload whose header (its CQ data) changed before
 * the engine took it; tagged and untagged.  The sender's send completes normally (its data
 * left intact), and the endpoints carry a good message afterwards.
 *
 * Sender and receiver are in two domains of this process over the shm
 * store: the sender's CQ reads run the engine and progress the sender
 * only, so a message can be delivered, then changed in the segment (found
 * there by its contents), before the receiver looks at it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS
#define TAG 0x77
#define EAGER_MAX (1 << 20)

static unsigned seed;	/* a fresh pattern for every message */

struct crc_pair {
	struct sse_res tx, rx;	/* one endpoint each, in two domains */
	fi_addr_t to_rx;	/* the receiver in the sender's AV */
};

static void pair_open(struct crc_pair *p)
{
	struct sse_res_opts o = { .counters = true };
	char name[FI_NAME_MAX];
	size_t len = sizeof(name);

	sse_res_open(&p->tx, 1, &o);
	sse_res_open(&p->rx, 1, &o);
	assert_fi_ok(fi_getname(&p->rx.ep[0]->fid, name, &len));
	assert_int_equal(fi_av_insert(p->tx.av, name, 1, &p->to_rx, 0, NULL),
			 1);
}

static void pair_close(struct crc_pair *p)
{
	sse_res_close(&p->tx);
	sse_res_close(&p->rx);
}

/*
 * Flip one bit of every copy the fabric's segment holds of the @len
 * bytes at @pat.  @return how many copies there were.
 */
static int segment_corrupt(const void *pat, size_t len)
{
	const char *fabric = getenv("FI_SLINGSHOT_EMU_FABRIC");
	char path[128];
	struct stat st;
	char *seg, *at;
	size_t left;
	int fd, n = 0;

	assert_non_null(fabric);
	snprintf(path, sizeof(path), "/dev/shm/%s", fabric);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	seg = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	assert_true(seg != MAP_FAILED);
	close(fd);
	at = seg;
	left = (size_t)st.st_size;
	while ((at = memmem(at, left, pat, len))) {
		at[len / 2] ^= 0x10;
		n++;
		at += len;
		left = (size_t)st.st_size - (size_t)(at - seg);
	}
	munmap(seg, (size_t)st.st_size);
	return n;
}

static void post_recv(struct crc_pair *p, void *buf, size_t len,
		      bool tagged, void *ctx)
{
	if (tagged)
		assert_fi_ok(fi_trecv(p->rx.ep[0], buf, len, NULL,
				      FI_ADDR_UNSPEC, TAG, 0, ctx));
	else
		assert_fi_ok(fi_recv(p->rx.ep[0], buf, len, NULL,
				     FI_ADDR_UNSPEC, ctx));
}

static void post_send(struct crc_pair *p, const void *buf, size_t len,
		      bool tagged, void *ctx)
{
	if (tagged)
		assert_fi_ok(fi_tsend(p->tx.ep[0], buf, len, NULL, p->to_rx,
				      TAG, ctx));
	else
		assert_fi_ok(fi_send(p->tx.ep[0], buf, len, NULL, p->to_rx,
				     ctx));
}

/* Run the sender until its send of @ctx completes (the message is at
 * the receiver's NIC by then; the receiver has not looked at it). */
static void sender_done(struct crc_pair *p, void *ctx)
{
	struct fi_cq_tagged_entry e;

	assert_int_equal(sse_cq_wait(NULL, p->tx.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, ctx);
}

/* The receiver's next completion is @ctx failing with FI_EIO. */
static void expect_eio(struct crc_pair *p, void *ctx, uint64_t flags,
		       uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };

	assert_int_equal(sse_cq_wait(NULL, p->rx.cq[0], &e, NULL, TMO),
			 -FI_EAVAIL);
	assert_int_equal(sse_cq_wait_err(NULL, p->rx.cq[0], &ee, TMO), 1);
	assert_ptr_equal(ee.op_context, ctx);
	assert_int_equal(ee.err, FI_EIO);
	assert_int_equal(ee.prov_errno, EBADMSG);
	assert_int_equal(ee.flags, flags);
	assert_int_equal(ee.tag, tag);
}

/* A good message after the failed one. */
static void good_message(struct crc_pair *p, bool tagged)
{
	char out[64], in[64] = { 0 };
	struct fi_cq_tagged_entry e;
	unsigned s = ++seed;
	int sctx, rctx;

	sse_fill(out, sizeof(out), s);
	post_recv(p, in, sizeof(in), tagged, &rctx);
	post_send(p, out, sizeof(out), tagged, &sctx);
	sender_done(p, &sctx);
	assert_int_equal(sse_cq_wait(NULL, p->rx.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &rctx);
	assert_int_equal(e.len, sizeof(in));
	assert_int_equal(sse_check(in, sizeof(in), s), -1);
}

/*
 * One case: a message of @len bytes, the piece holding byte @bad changed
 * after delivery; the receive posted before the message arrives
 * (@posted) or after the receiver saw it.
 */
static void crc_case(size_t len, size_t bad, bool tagged, bool posted)
{
	uint64_t flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	struct crc_pair p;
	char *out = malloc(len), *in = calloc(1, len);
	struct fi_cq_tagged_entry e;
	int sctx, rctx;

	assert_non_null(out);
	assert_non_null(in);
	pair_open(&p);
	sse_fill(out, len, ++seed);
	if (posted)
		post_recv(&p, in, len, tagged, &rctx);
	post_send(&p, out, len, tagged, &sctx);
	/* the send completes as any other: its data left intact */
	sender_done(&p, &sctx);
	assert_int_equal(fi_cntr_read(p.tx.scntr[0]), 1);
	assert_int_equal(fi_cntr_readerr(p.tx.scntr[0]), 0);

	assert_int_equal(segment_corrupt(out + bad, 32), 1);
	if (!posted) {
		/* the receiver sees it first, with nothing posted */
		sse_progress_for(&p.rx, 50);
		assert_int_equal(fi_cq_read(p.rx.cq[0], &e, 1), -FI_EAGAIN);
		post_recv(&p, in, len, tagged, &rctx);
	}
	expect_eio(&p, &rctx, flags, tagged ? TAG : 0);
	assert_int_equal(fi_cntr_readerr(p.rx.rcntr[0]), 1);
	assert_int_equal(fi_cntr_read(p.rx.rcntr[0]), 0);
	sse_assert_cq_empty(&p.rx, p.rx.cq[0]);

	good_message(&p, tagged);
	assert_int_equal(fi_cntr_read(p.rx.rcntr[0]), 1);
	pair_close(&p);
	free(out);
	free(in);
}

static void test_crc_one_piece(void **state)
{
	(void)state;
	/* inline in its slot, and in a data buffer */
	crc_case(100, 40, true, true);
	crc_case(100, 40, true, false);
	crc_case(2000, 1500, false, true);
	crc_case(2000, 1500, false, false);
}

static void test_crc_later_piece(void **state)
{
	size_t piece = sse_test_piece();

	(void)state;
	/* three pieces, the third changed */
	crc_case(3 * piece, 2 * piece + 100, true, true);
	crc_case(3 * piece, 2 * piece + 100, true, false);
	crc_case(3 * piece, 2 * piece + 100, false, false);
	/* the first of several changed */
	crc_case(3 * piece, 100, false, true);
	crc_case(3 * piece, 100, true, false);
}

/*
 * A message with no payload is all header: its CQ data changed in the
 * segment after the post, before the engine took it, the receive fails
 * with FI_EIO as for a payload that changed (it must not complete with
 * the changed data).
 */
static void no_payload_case(bool tagged)
{
	uint64_t flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
			 FI_REMOTE_CQ_DATA;
	uint64_t data = 0x5ca1ab1e00000000ull | ++seed;
	struct crc_pair p;
	char in[16];
	int sctx, rctx;

	pair_open(&p);
	post_recv(&p, in, sizeof(in), tagged, &rctx);
	if (tagged)
		assert_fi_ok(fi_tsenddata(p.tx.ep[0], NULL, 0, NULL, data,
					  p.to_rx, TAG, &sctx));
	else
		assert_fi_ok(fi_senddata(p.tx.ep[0], NULL, 0, NULL, data,
					 p.to_rx, &sctx));
	/* posted, not taken by the engine yet (no progress has run) */
	assert_true(segment_corrupt(&data, sizeof(data)) >= 1);
	sender_done(&p, &sctx);
	expect_eio(&p, &rctx, flags, tagged ? TAG : 0);
	assert_int_equal(fi_cntr_readerr(p.rx.rcntr[0]), 1);
	sse_assert_cq_empty(&p.rx, p.rx.cq[0]);
	good_message(&p, tagged);
	pair_close(&p);
}

static void test_crc_no_payload(void **state)
{
	(void)state;
	no_payload_case(true);
	no_payload_case(false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc_one_piece),
		cmocka_unit_test(test_crc_later_piece),
		cmocka_unit_test(test_crc_no_payload),
	};
	char v[32];

	/* every case here is eager */
	snprintf(v, sizeof(v), "%d", EAGER_MAX);
	setenv("FI_SLINGSHOT_EMU_EAGER_MAX", v, 1);
	sse_test_init("shm", "crc");
	return cmocka_run_group_tests_name("crc (shm store)", tests, NULL,
					   NULL);
}
