/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues: write/read, FI_PEEK, short buffers, blocking reads with a
 * timeout, FI_WAIT_FD (a pollable descriptor, readable exactly while
 * events wait), error entries, close rules.
 */
#include <poll.h>

#include "sse_test.h"

static struct fi_info *info;
static struct fid_fabric *fab;

static int setup(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED);

	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	fi_freeinfo(hints);
	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	return 0;
}

static int teardown(void **state)
{
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
	return 0;
}

static void test_eq_write_read(void **state)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_entry in = { .context = &attr, .data = 77 }, out;
	struct fi_eq_err_entry err;
	struct fid_eq *eq;
	uint32_t event;
	char tiny[4];

	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_read(eq, &event, tiny, sizeof(tiny), 0),
			 -FI_ETOOSMALL);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK),
			 sizeof(out));
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(event, FI_NOTIFY);
	assert_ptr_equal(out.context, &attr);
	assert_int_equal(out.data, 77);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 1ULL << 40),
			 -FI_EBADFLAGS);
	{
		char s[64];

		assert_ptr_equal(fi_eq_strerror(eq, FI_EAGAIN, NULL, s,
						sizeof(s)), s);
	}
	assert_fi_ok(fi_close(&eq->fid));
}

static void test_eq_sread(void **state)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_eq_entry in = { .data = 1 }, out;
	struct fid_eq *eq;
	uint32_t event;

	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 50, 0),
			 -FI_EAGAIN);
	assert_int_equal(fi_eq_write(eq, FI_MR_COMPLETE, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), -1, 0),
			 sizeof(out));
	assert_int_equal(event, FI_MR_COMPLETE);
	assert_fi_ok(fi_close(&eq->fid));

	/* no wait object, no blocking read */
	attr.wait_obj = FI_WAIT_NONE;
	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_int_equal(fi_eq_sread(eq, &event, &out, sizeof(out), 1, 0),
			 -FI_EINVAL);
	assert_fi_ok(fi_close(&eq->fid));
}

static void test_eq_wait_fd(void **state)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fi_eq_entry in = { .data = 3 }, out;
	struct pollfd pfd = { .events = POLLIN };
	struct fid_eq *eq;
	uint32_t event;
	int fd = -1;

	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_fi_ok(fi_control(&eq->fid, FI_GETWAIT, &fd));
	assert_true(fd >= 0);
	pfd.fd = fd;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0),
			 sizeof(in));
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(poll(&pfd, 1, 0), 1);	/* one still waits */
	assert_int_equal(fi_eq_read(eq, &event, &out, sizeof(out), 0),
			 sizeof(out));
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_fi_ok(fi_close(&eq->fid));

	/* FI_WAIT_SET without a wait set (wait sets: test_poll) */
	attr.wait_obj = FI_WAIT_SET;
	assert_int_equal(fi_eq_open(fab, &attr, &eq, NULL), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_UNSPEC;
	attr.flags = 1ULL << 44;
	assert_int_equal(fi_eq_open(fab, &attr, &eq, NULL), -FI_EBADFLAGS);
	attr.flags = 0;
	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_int_equal(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	assert_fi_ok(fi_close(&eq->fid));
}

/* An endpoint bound to an EQ holds it. */
static void test_eq_bound(void **state)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_eq *eq;

	assert_fi_ok(fi_eq_open(fab, &attr, &eq, NULL));
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	assert_fi_ok(fi_endpoint(dom, info, &ep, NULL));
	assert_fi_ok(fi_ep_bind(ep, &eq->fid, 0));
	assert_int_equal(fi_ep_bind(ep, &eq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&fab->fid), -FI_EBUSY);
	assert_fi_ok(fi_close(&ep->fid));
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&eq->fid));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eq_write_read),
		cmocka_unit_test(test_eq_sread),
		cmocka_unit_test(test_eq_wait_fd),
		cmocka_unit_test(test_eq_bound),
	};

	sse_test_init("private", "eq");
	return cmocka_run_group_tests_name("eq", tests, setup, teardown);
}
