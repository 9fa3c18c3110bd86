/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations (FI_TRIGGER, FI_TRIGGER_THRESHOLD): fi_getinfo
 * returns the capability when asked; sends, tagged sends, RMA writes and
 * atomics posted with FI_TRIGGER run exactly when their counter reaches
 * the threshold, not before; several on one counter run in threshold
 * order (submission order among equals); a threshold already met runs at
 * once; a counter bumped by the data path (fi_rdm_rma_trigger's chain of
 * writes) triggers too; an alias endpoint made with FI_TRIGGER triggers
 * every call; fi_cancel and fi_close of the endpoint free waiting
 * operations; without the capability FI_TRIGGER is refused.
 */
#include "sse_test.h"

#include <rdma/fi_trigger.h>

#define TMO SSE_TEST_TIMEOUT_MS

/* ep[0] sends to ep[1], both with FI_TRIGGER. */
static void trig_open(struct sse_res *r, uint64_t caps, struct fid_cntr **c)
{
	struct fi_info *hints = sse_test_hints(FI_MSG | FI_TAGGED | FI_RMA |
					       FI_ATOMIC | caps);
	struct sse_res_opts o = { .hints = hints, .counters = true };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };

	hints->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	sse_res_open(r, 2, &o);
	fi_freeinfo(hints);
	if (c)
		assert_fi_ok(fi_cntr_open(r->domain, &ca, c, NULL));
}

/* Close the endpoints, then @c, then the rest. */
static void trig_close(struct sse_res *r, struct fid_cntr *c)
{
	int i;

	for (i = 0; i < r->nep; i++) {
		assert_fi_ok(fi_close(&r->ep[i]->fid));
		r->ep[i] = NULL;
	}
	if (c)
		assert_fi_ok(fi_close(&c->fid));
	sse_res_close(r);
}

static void set_trig(struct fi_triggered_context *tc, struct fid_cntr *c,
		     size_t threshold)
{
	memset(tc, 0, sizeof(*tc));
	tc->event_type = FI_TRIGGER_THRESHOLD;
	tc->trigger.threshold.cntr = c;
	tc->trigger.threshold.threshold = threshold;
}

static ssize_t tsend(struct sse_res *r, void *buf, size_t len, uint64_t tag,
		     struct fi_triggered_context *tc, uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = r->addr[1],
		.tag = tag, .context = tc,
	};

	return fi_tsendmsg(r->ep[0], &m, flags);
}

/* The next @n completions on @cq are those of @ctx[], in any order. */
static void expect_set(struct sse_res *r, struct fid_cq *cq, void **ctx,
		       int n)
{
	struct fi_cq_tagged_entry e;
	bool seen[8] = { false };
	int i, j;

	for (i = 0; i < n; i++) {
		assert_int_equal(sse_cq_wait(r, cq, &e, NULL, TMO), 1);
		for (j = 0; j < n; j++) {
			if (!seen[j] && e.op_context == ctx[j]) {
				seen[j] = true;
				break;
			}
		}
		assert_true(j < n);
	}
}

static void test_trigger_getinfo(void **state)
{
	struct fi_info *hints, *info;

	hints = sse_test_hints(FI_MSG | FI_RMA | FI_TRIGGER);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	assert_true(info->caps & FI_TRIGGER);
	assert_true(info->tx_attr->caps & FI_TRIGGER);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	/* opt-in: not returned unless asked for */
	hints = sse_test_hints(FI_MSG | FI_RMA);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	assert_false(info->caps & FI_TRIGGER);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* A triggered send waits for exactly its threshold. */
static void test_trigger_threshold(void **state)
{
	struct fi_triggered_context tc;
	struct fi_cq_tagged_entry e;
	struct fid_cntr *c;
	struct sse_res r;
	char sbuf[16] = "triggered", rbuf[16] = "";
	int rctx;

	trig_open(&r, FI_TRIGGER, &c);
	assert_fi_ok(fi_trecv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			      FI_ADDR_UNSPEC, 7, 0, &rctx));
	set_trig(&tc, c, 3);
	assert_fi_ok(tsend(&r, sbuf, sizeof(sbuf), 7, &tc, FI_TRIGGER));
	assert_fi_ok(fi_cntr_add(c, 2));
	sse_progress_for(&r, 100);
	/* one short: nothing ran */
	sse_assert_cq_empty(&r, r.cq[0]);
	sse_assert_cq_empty(&r, r.cq[1]);
	assert_int_equal(fi_cntr_read(r.scntr[0]), 0);
	assert_string_equal(rbuf, "");
	assert_fi_ok(fi_cntr_add(c, 1));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, &rctx);
	assert_string_equal(rbuf, "triggered");
	/* the completion reports the triggered context */
	sse_cq_expect(&r, r.cq[0], &tc, FI_SEND | FI_TAGGED);
	assert_int_equal(fi_cntr_read(r.scntr[0]), 1);
	trig_close(&r, c);
}

/* Threshold order, submission order among equal thresholds. */
static void test_trigger_order(void **state)
{
	const size_t thr[5] = { 5, 2, 4, 2, 9 };
	const int expect[4] = { 1, 3, 2, 0 };	/* indices, in run order */
	struct fi_triggered_context tc[5];
	struct fi_cq_tagged_entry e;
	struct fid_cntr *c;
	struct sse_res r;
	int sbuf[5], rbuf[5], i;
	void *ran[4];

	trig_open(&r, FI_TRIGGER, &c);
	for (i = 0; i < 5; i++) {
		sbuf[i] = i;
		rbuf[i] = -1;
		set_trig(&tc[i], c, thr[i]);
		assert_fi_ok(tsend(&r, &sbuf[i], sizeof(int), 1, &tc[i],
				   FI_TRIGGER));
	}
	for (i = 0; i < 5; i++)
		assert_fi_ok(fi_trecv(r.ep[1], &rbuf[i], sizeof(int), NULL,
				      FI_ADDR_UNSPEC, 1, 0, NULL));
	/* one jump past four thresholds, short of the fifth */
	assert_fi_ok(fi_cntr_set(c, 8));
	for (i = 0; i < 4; i++) {
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
		/* receives match in order: rbuf[i] got the i-th to run */
		assert_int_equal(rbuf[i], expect[i]);
		ran[i] = &tc[expect[i]];
	}
	expect_set(&r, r.cq[0], ran, 4);
	sse_progress_for(&r, 50);
	assert_int_equal(rbuf[4], -1);
	sse_assert_cq_empty(&r, r.cq[0]);
	assert_fi_ok(fi_cntr_add(c, 1));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_int_equal(rbuf[4], 4);
	sse_cq_expect(&r, r.cq[0], &tc[4], FI_SEND | FI_TAGGED);
	trig_close(&r, c);
}

/* A threshold the counter already passed: the operation runs at once. */
static void test_trigger_past(void **state)
{
	struct fi_triggered_context tc;
	struct fi_cq_tagged_entry e;
	struct fid_cntr *c;
	struct sse_res r;
	char sbuf[8] = "now", rbuf[8] = "";

	trig_open(&r, FI_TRIGGER, &c);
	assert_fi_ok(fi_cntr_set(c, 10));
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	set_trig(&tc, c, 4);
	{
		struct iovec iov = { sbuf, sizeof(sbuf) };
		struct fi_msg m = { .msg_iov = &iov, .iov_count = 1,
				    .addr = r.addr[1], .context = &tc };

		/* FI_INJECT: the buffer is free on return */
		assert_fi_ok(fi_sendmsg(r.ep[0], &m, FI_TRIGGER | FI_INJECT |
					FI_COMPLETION));
		memset(sbuf, 'x', sizeof(sbuf));
	}
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_string_equal(rbuf, "now");
	sse_cq_expect(&r, r.cq[0], &tc, FI_SEND | FI_MSG);
	trig_close(&r, c);
}

/*
 * RMA and atomics, and a counter the data path bumps: as in
 * fi_rdm_rma_trigger, a write triggered by the first write's completion
 * on the write counter, then an atomic triggered by the second.
 */
static void test_trigger_rma_chain(void **state)
{
	struct fi_triggered_context tc_w, tc_a;
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	char tgt[64] = { 0 }, s1[8] = "first", s2[8] = "second";
	uint64_t *word = (uint64_t *)(tgt + 32), one = 1;
	struct fid_cntr *wc;
	struct fid_mr *mr;
	struct sse_res r;
	int ctx;

	trig_open(&r, FI_TRIGGER, NULL);
	assert_fi_ok(fi_cntr_open(r.domain, &ca, &wc, NULL));
	assert_fi_ok(fi_ep_bind(r.ep[0], &wc->fid, FI_WRITE));
	assert_fi_ok(fi_mr_reg(r.domain, tgt, sizeof(tgt), FI_REMOTE_WRITE,
			       0, 0, 0, &mr, NULL));
	*word = 41;
	{
		struct iovec iov = { s2, sizeof(s2) };
		struct fi_rma_iov rio = { (uint64_t)(uintptr_t)(tgt + 8),
					  sizeof(s2), fi_mr_key(mr) };
		struct fi_msg_rma m = { .msg_iov = &iov, .iov_count = 1,
					.addr = r.addr[1], .rma_iov = &rio,
					.rma_iov_count = 1, .context = &tc_w };

		set_trig(&tc_w, wc, 1);
		assert_fi_ok(fi_writemsg(r.ep[0], &m, FI_TRIGGER |
					 FI_COMPLETION));
	}
	{
		struct fi_ioc ioc = { &one, 1 };
		struct fi_rma_ioc rioc = { (uint64_t)(uintptr_t)word, 1,
					   fi_mr_key(mr) };
		struct fi_msg_atomic m = {
			.msg_iov = &ioc, .iov_count = 1, .addr = r.addr[1],
			.rma_iov = &rioc, .rma_iov_count = 1,
			.datatype = FI_UINT64, .op = FI_SUM, .context = &tc_a,
		};

		set_trig(&tc_a, wc, 2);
		assert_fi_ok(fi_atomicmsg(r.ep[0], &m, FI_TRIGGER |
					  FI_COMPLETION));
	}
	sse_progress_for(&r, 50);
	assert_int_equal(tgt[8], 0);
	assert_int_equal(*word, 41);
	assert_int_equal(fi_cntr_read(wc), 0);
	/* the plain write completes, bumps the counter, and the chain runs */
	assert_fi_ok(fi_write(r.ep[0], s1, sizeof(s1), NULL, r.addr[1],
			      (uint64_t)(uintptr_t)tgt, fi_mr_key(mr), &ctx));
	assert_fi_ok(fi_cntr_wait(wc, 3, TMO));
	assert_string_equal(tgt, "first");
	assert_string_equal(tgt + 8, "second");
	assert_int_equal(*word, 42);
	{
		void *all[3] = { &ctx, &tc_w, &tc_a };

		expect_set(&r, r.cq[0], all, 3);
	}
	assert_fi_ok(fi_close(&mr->fid));
	trig_close(&r, wc);
}

/* An alias made with FI_TRIGGER triggers every call made through it. */
static void test_trigger_alias(void **state)
{
	struct fi_triggered_context tc;
	struct fi_cq_tagged_entry e;
	struct fid_ep *alias = NULL;
	struct fid_cntr *c;
	struct sse_res r;
	char sbuf[8] = "alias", rbuf[8] = "";
	uint64_t flags = FI_TRANSMIT;

	trig_open(&r, FI_TRIGGER, &c);
	assert_fi_ok(fi_ep_alias(r.ep[0], &alias, FI_TRANSMIT | FI_TRIGGER));
	assert_fi_ok(fi_control(&alias->fid, FI_GETOPSFLAG, &flags));
	assert_int_equal(flags, FI_TRIGGER);
	/* its flags are its own: the endpoint's stay as they were */
	flags = FI_TRANSMIT | FI_TRIGGER | FI_COMPLETION;
	assert_fi_ok(fi_control(&alias->fid, FI_SETOPSFLAG, &flags));
	flags = FI_TRANSMIT;
	assert_fi_ok(fi_control(&alias->fid, FI_GETOPSFLAG, &flags));
	assert_int_equal(flags, FI_TRIGGER | FI_COMPLETION);
	flags = FI_TRANSMIT;
	assert_fi_ok(fi_control(&r.ep[0]->fid, FI_GETOPSFLAG, &flags));
	assert_false(flags & FI_TRIGGER);
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	set_trig(&tc, c, 1);
	assert_fi_ok(fi_send(alias, sbuf, sizeof(sbuf), NULL, r.addr[1],
			     &tc));
	sse_progress_for(&r, 50);
	assert_string_equal(rbuf, "");
	/* the endpoint is busy while its alias is open */
	assert_int_equal(fi_close(&r.ep[0]->fid), -FI_EBUSY);
	assert_fi_ok(fi_cntr_add(c, 1));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_string_equal(rbuf, "alias");
	sse_cq_expect(&r, r.cq[0], &tc, FI_SEND | FI_MSG);
	assert_fi_ok(fi_close(&alias->fid));
	trig_close(&r, c);
}

/* fi_cancel of a waiting operation; fi_close of an endpoint with some. */
static void test_trigger_cancel_close(void **state)
{
	struct fi_triggered_context tc[3];
	struct fid_cntr *c;
	struct sse_res r;
	char sbuf[8] = "never", rbuf[8] = "";
	int i;

	trig_open(&r, FI_TRIGGER, &c);
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	for (i = 0; i < 3; i++) {
		set_trig(&tc[i], c, 5);
		assert_fi_ok(tsend(&r, sbuf, sizeof(sbuf), 0, &tc[i],
				   FI_TRIGGER));
	}
	assert_fi_ok(fi_cancel(&r.ep[0]->fid, &tc[1]));
	sse_cq_expect_err(&r, r.cq[0], &tc[1], FI_ECANCELED);
	assert_int_equal(fi_cancel(&r.ep[0]->fid, &tc[1]), -FI_ENOENT);
	/* waiting operations hold their counter */
	assert_int_equal(fi_close(&c->fid), -FI_EBUSY);
	/* closing the endpoint frees the two left: the counter closes */
	assert_fi_ok(fi_close(&r.ep[0]->fid));
	r.ep[0] = NULL;
	assert_fi_ok(fi_cntr_add(c, 10));
	assert_fi_ok(fi_close(&c->fid));
	sse_progress_for(&r, 50);
	assert_string_equal(rbuf, "");
	assert_fi_ok(fi_close(&r.ep[1]->fid));
	r.ep[1] = NULL;
	sse_res_close(&r);
}

/* An operation that cannot start when triggered completes with an error. */
static void test_trigger_fails_late(void **state)
{
	struct fi_triggered_context tc;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee = { 0 };
	struct fid_cntr *c;
	struct sse_res r;
	char buf[8] = "gone";

	trig_open(&r, FI_TRIGGER, &c);
	set_trig(&tc, c, 1);
	assert_fi_ok(tsend(&r, buf, sizeof(buf), 0, &tc, FI_TRIGGER));
	/* the destination leaves the AV before the trigger */
	assert_fi_ok(fi_av_remove(r.av, &r.addr[1], 1, 0));
	assert_fi_ok(fi_cntr_add(c, 1));
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), -FI_EAVAIL);
	assert_int_equal(sse_cq_wait_err(&r, r.cq[0], &ee, TMO), 1);
	assert_ptr_equal(ee.op_context, &tc);
	assert_true(ee.err > 0);
	assert_int_equal(ee.flags, FI_SEND | FI_TAGGED);
	assert_int_equal(fi_cntr_readerr(r.scntr[0]), 1);
	trig_close(&r, c);
}

/* Without the capability, FI_TRIGGER is an error; so is a bad context. */
static void test_trigger_refused(void **state)
{
	struct fi_triggered_context tc;
	struct fid_cntr *c;
	struct fid_ep *alias = NULL;
	struct sse_res r;
	char buf[8] = "x";

	trig_open(&r, 0, &c);
	assert_false(r.info->caps & FI_TRIGGER);
	set_trig(&tc, c, 1);
	assert_int_equal(tsend(&r, buf, sizeof(buf), 0, &tc, FI_TRIGGER),
			 -FI_EINVAL);
	assert_int_equal(fi_ep_alias(r.ep[0], &alias,
				     FI_TRANSMIT | FI_TRIGGER), -FI_EINVAL);
	{
		uint64_t flags = FI_TRANSMIT | FI_TRIGGER;

		assert_int_equal(fi_control(&r.ep[0]->fid, FI_SETOPSFLAG,
					    &flags), -FI_EINVAL);
	}
	trig_close(&r, c);

	trig_open(&r, FI_TRIGGER, &c);
	assert_int_equal(tsend(&r, buf, sizeof(buf), 0, NULL, FI_TRIGGER),
			 -FI_EINVAL);
	tc.event_type = FI_TRIGGER_XPU;
	assert_int_equal(tsend(&r, buf, sizeof(buf), 0, &tc, FI_TRIGGER),
			 -FI_EINVAL);
	set_trig(&tc, NULL, 1);
	assert_int_equal(tsend(&r, buf, sizeof(buf), 0, &tc, FI_TRIGGER),
			 -FI_EINVAL);
	/* argument errors come back at submission, not at the trigger */
	set_trig(&tc, c, 1);
	assert_int_equal(tsend(&r, buf, sizeof(buf), 0, &tc,
			       FI_TRIGGER | FI_COMMIT_COMPLETE),
			 -FI_EBADFLAGS);
	assert_fi_ok(fi_cntr_add(c, 1));
	sse_progress_for(&r, 20);
	sse_assert_cq_empty(&r, r.cq[0]);
	trig_close(&r, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trigger_getinfo),
		cmocka_unit_test(test_trigger_threshold),
		cmocka_unit_test(test_trigger_order),
		cmocka_unit_test(test_trigger_past),
		cmocka_unit_test(test_trigger_rma_chain),
		cmocka_unit_test(test_trigger_alias),
		cmocka_unit_test(test_trigger_cancel_close),
		cmocka_unit_test(test_trigger_fails_late),
		cmocka_unit_test(test_trigger_refused),
	};

	sse_test_init("private", "trigger");
	return cmocka_run_group_tests_name("trigger", tests, NULL, NULL);
}
