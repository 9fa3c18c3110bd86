/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQs with FI_WAIT_FD: fi_control(FI_GETWAIT) gives a descriptor that is
 * readable exactly while completions wait; fi_trywait says whether the
 * caller may sleep on it; an application that sleeps in poll() without
 * calling into libfabric still gets woken by a completion (the domain's
 * progress thread makes it arrive).
 */
#include <poll.h>
#include <unistd.h>

#include "sse_test.h"

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_cq_fd_wakes_a_sleeping_receiver(void **state)
{
	struct sse_res_opts o = { .caps = FI_TAGGED, .cq_wait = FI_WAIT_FD };
	struct fi_cq_tagged_entry e;
	struct fid *fids[1];
	uint64_t out = 0x1122334455667788ULL, in = 0;
	struct sse_res r;
	int fd = -1;

	sse_res_open(&r, 2, &o);
	assert_fi_ok(fi_control(&r.cq[1]->fid, FI_GETWAIT, &fd));
	assert_true(fd >= 0);
	fids[0] = &r.cq[1]->fid;

	/* nothing there: the caller may sleep, and the fd is not readable */
	assert_int_equal(fi_trywait(r.fabric, fids, 1), 0);
	assert_false(readable(fd, 0));

	assert_fi_ok(fi_trecv(r.ep[1], &in, sizeof(in), NULL, FI_ADDR_UNSPEC,
			      7, 0, &in));
	assert_fi_ok(fi_tsend(r.ep[0], &out, sizeof(out), NULL, r.addr[1], 7,
			      &out));
	/* sleep in poll() with no libfabric call: the completion comes */
	assert_true(readable(fd, 5000));
	assert_int_equal(fi_trywait(r.fabric, fids, 1), -FI_EAGAIN);
	assert_int_equal(fi_cq_read(r.cq[1], &e, 1), 1);
	assert_ptr_equal(e.op_context, &in);
	assert_true(in == out);
	/* read empty again: not readable, may sleep */
	assert_false(readable(fd, 0));
	assert_int_equal(fi_trywait(r.fabric, fids, 1), 0);
	/* the sender's completion too */
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL,
				     SSE_TEST_TIMEOUT_MS), 1);
	sse_res_close(&r);
}

static void test_cq_fd_trywait_bad_args(void **state)
{
	struct sse_res_opts o = { .caps = FI_TAGGED };
	struct fid *fids[1];
	struct sse_res r;
	int fd;

	sse_res_open(&r, 1, &o);
	/* a CQ without FI_WAIT_FD has no descriptor */
	assert_int_equal(fi_control(&r.cq[0]->fid, FI_GETWAIT, &fd),
			 -FI_ENODATA);
	fids[0] = &r.cq[0]->fid;
	assert_int_equal(fi_trywait(r.fabric, fids, 1), -FI_EINVAL);
	fids[0] = &r.domain->fid;
	assert_int_equal(fi_trywait(r.fabric, fids, 1), -FI_EINVAL);
	assert_int_equal(fi_trywait(r.fabric, NULL, 1), -FI_EINVAL);
	assert_int_equal(fi_trywait(r.fabric, NULL, 0), 0);
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_fd_wakes_a_sleeping_receiver),
		cmocka_unit_test(test_cq_fd_trywait_bad_args),
	};

	sse_test_init("private", "cqfd");
	return cmocka_run_group_tests_name("cq wait fd", tests, NULL, NULL);
}
