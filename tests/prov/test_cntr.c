/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters: read/add/set/adderr/seterr, waits that succeed, time out or
 * see an error, counting of sends, receives and failed receives, and
 * which endpoints a read progresses.
 */
#include "sse_test.h"

static void test_cntr_ops(void **state)
{
	struct sse_res r;
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *c;
	enum fi_wait_obj wo;

	sse_res_open(&r, 1, NULL);
	assert_fi_ok(fi_cntr_open(r.domain, &attr, &c, NULL));
	assert_int_equal(fi_cntr_read(c), 0);
	assert_int_equal(fi_cntr_readerr(c), 0);
	assert_fi_ok(fi_cntr_add(c, 5));
	assert_fi_ok(fi_cntr_add(c, 2));
	assert_int_equal(fi_cntr_read(c), 7);
	assert_fi_ok(fi_cntr_set(c, 100));
	assert_int_equal(fi_cntr_read(c), 100);
	assert_fi_ok(fi_cntr_adderr(c, 3));
	assert_int_equal(fi_cntr_readerr(c), 3);
	assert_fi_ok(fi_cntr_seterr(c, 0));
	assert_int_equal(fi_cntr_readerr(c), 0);
	/* already there */
	assert_fi_ok(fi_cntr_wait(c, 100, 0));
	/* never comes */
	assert_int_equal(fi_cntr_wait(c, 101, 50), -FI_ETIMEDOUT);
	assert_fi_ok(fi_control(&c->fid, FI_GETWAITOBJ, &wo));
	assert_fi_ok(fi_close(&c->fid));

	attr.events = (enum fi_cntr_events)3;
	assert_int_equal(fi_cntr_open(r.domain, &attr, &c, NULL), -FI_ENOSYS);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.wait_obj = FI_WAIT_FD;
	assert_int_equal(fi_cntr_open(r.domain, &attr, &c, NULL), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_NONE;
	attr.flags = 1;
	assert_int_equal(fi_cntr_open(r.domain, &attr, &c, NULL),
			 -FI_EBADFLAGS);
	assert_fi_ok(fi_cntr_open(r.domain, NULL, &c, NULL));
	assert_fi_ok(fi_close(&c->fid));
	sse_res_close(&r);
}

static void test_cntr_counts_transfers(void **state)
{
	struct sse_res_opts o = { .counters = true };
	struct sse_res r;
	char buf[64], small[4];
	int i;

	sse_res_open(&r, 2, &o);
	for (i = 0; i < 10; i++) {
		assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL,
				     FI_ADDR_UNSPEC, NULL));
		assert_fi_ok(fi_send(r.ep[0], buf, 10, NULL, r.addr[1], NULL));
	}
	/* waiting on the receiver's counter progresses the domain */
	assert_fi_ok(fi_cntr_wait(r.rcntr[1], 10, 5000));
	assert_fi_ok(fi_cntr_wait(r.scntr[0], 10, 5000));
	assert_int_equal(fi_cntr_read(r.rcntr[1]), 10);
	assert_int_equal(fi_cntr_read(r.scntr[0]), 10);
	assert_int_equal(fi_cntr_read(r.scntr[1]), 0);

	/* injects count too */
	assert_fi_ok(fi_recv(r.ep[1], buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
			     NULL));
	assert_fi_ok(fi_inject(r.ep[0], buf, 4, r.addr[1]));
	assert_fi_ok(fi_cntr_wait(r.rcntr[1], 11, 5000));
	assert_int_equal(fi_cntr_read(r.scntr[0]), 11);

	/* a truncated receive is an error; a wait for it reports that */
	assert_fi_ok(fi_recv(r.ep[1], small, sizeof(small), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_send(r.ep[0], buf, 10, NULL, r.addr[1], NULL));
	assert_int_equal(fi_cntr_wait(r.rcntr[1], 12, 5000), -FI_EAVAIL);
	assert_int_equal(fi_cntr_readerr(r.rcntr[1]), 1);
	assert_int_equal(fi_cntr_read(r.rcntr[1]), 11);
	/* clean up the CQ error */
	{
		struct fi_cq_err_entry err = { 0 };

		assert_int_equal(sse_cq_wait_err(&r, r.cq[1], &err, 5000), 1);
		assert_int_equal(err.err, FI_ETRUNC);
	}
	sse_res_close(&r);
}

/*
 * An endpoint bound to counters and no CQ progresses through reads of its
 * counters, and only of its own: another endpoint's counter leaves its
 * receive undone.
 */
static void test_cntr_progress_scope(void **state)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct sse_res_opts o = { .counters = true };
	char rbuf[16] = { 0 }, name[FI_NAME_MAX];
	size_t len = sizeof(name);
	struct fid_cntr *rc;
	struct fid_ep *ep;
	struct sse_res r;
	fi_addr_t fa;
	int i;

	sse_res_open(&r, 1, &o);
	assert_fi_ok(fi_cntr_open(r.domain, &attr, &rc, NULL));
	assert_fi_ok(fi_endpoint(r.domain, r.info, &ep, NULL));
	assert_fi_ok(fi_ep_bind(ep, &r.av->fid, 0));
	assert_fi_ok(fi_ep_bind(ep, &rc->fid, FI_RECV));
	assert_fi_ok(fi_enable(ep));
	assert_fi_ok(fi_getname(&ep->fid, name, &len));
	assert_int_equal(fi_av_insert(r.av, name, 1, &fa, 0, NULL), 1);

	assert_fi_ok(fi_recv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC,
			     NULL));
	assert_fi_ok(fi_send(r.ep[0], "counted", 8, NULL, fa, NULL));
	assert_fi_ok(fi_cntr_wait(r.scntr[0], 1, 5000));
	for (i = 0; i < 2000; i++)
		(void)fi_cntr_read(r.scntr[0]);
	assert_int_equal(rbuf[0], 0);
	for (i = 0; i < 1000000 && fi_cntr_read(rc) < 1; i++)
		;
	assert_int_equal(fi_cntr_read(rc), 1);
	assert_string_equal(rbuf, "counted");
	assert_int_equal(fi_cntr_readerr(rc), 0);
	assert_fi_ok(fi_close(&ep->fid));
	assert_fi_ok(fi_close(&rc->fid));
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cntr_ops),
		cmocka_unit_test(test_cntr_counts_transfers),
		cmocka_unit_test(test_cntr_progress_scope),
	};

	sse_test_init("private", "cntr");
	return cmocka_run_group_tests_name("cntr", tests, NULL, NULL);
}
