/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters: read/add/set/adderr/seterr, waits that succeed, time out or
 * see an error, and counting of sends, receives and failed receives.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cntr_ops),
		cmocka_unit_test(test_cntr_counts_transfers),
	};

	sse_test_init("private", "cntr");
	return cmocka_run_group_tests_name("cntr", tests, NULL, NULL);
}
