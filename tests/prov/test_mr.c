/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: provider keys (FI_MR_PROV_KEY) are unique,
 * requested keys are honoured and duplicates refused, bad access bits,
 * flags and iov counts fail, descriptors work in sends, and a domain with
 * regions open cannot close.
 */
#include "sse_test.h"

static void open_dom(int mr_mode, struct fi_info **info,
		     struct fid_fabric **fab, struct fid_domain **dom)
{
	struct fi_info *hints = sse_test_hints(FI_MSG);

	hints->domain_attr->mr_mode = mr_mode;
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				info));
	fi_freeinfo(hints);
	assert_int_equal((*info)->domain_attr->mr_mode, mr_mode);
	assert_fi_ok(fi_fabric((*info)->fabric_attr, fab, NULL));
	assert_fi_ok(fi_domain(*fab, *info, dom, NULL));
}

static void close_dom(struct fi_info *info, struct fid_fabric *fab,
		      struct fid_domain *dom)
{
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
}

static void test_mr_prov_key(void **state)
{
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_mr *mr[8];
	char buf[8][64];
	int i, j;

	open_dom(FI_MR_PROV_KEY, &info, &fab, &dom);
	for (i = 0; i < 8; i++) {
		/* the requested key is ignored under FI_MR_PROV_KEY */
		assert_fi_ok(fi_mr_reg(dom, buf[i], sizeof(buf[i]),
				       FI_SEND | FI_RECV, 0, 5, 0, &mr[i],
				       NULL));
		assert_non_null(fi_mr_desc(mr[i]));
		for (j = 0; j < i; j++)
			assert_int_not_equal(fi_mr_key(mr[i]),
					     fi_mr_key(mr[j]));
	}
	assert_int_equal(fi_close(&dom->fid), -FI_EBUSY);
	for (i = 0; i < 8; i++)
		assert_fi_ok(fi_close(&mr[i]->fid));
	close_dom(info, fab, dom);
}

static void test_mr_user_key(void **state)
{
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_mr *mr, *mr2;
	struct iovec iov[5];
	char buf[64];
	int i;

	open_dom(0, &info, &fab, &dom);
	assert_fi_ok(fi_mr_reg(dom, buf, sizeof(buf), FI_RECV, 0, 0x1234, 0,
			       &mr, NULL));
	assert_int_equal(fi_mr_key(mr), 0x1234);
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), FI_RECV, 0, 0x1234,
				   0, &mr2, NULL), -FI_ENOKEY);
	assert_fi_ok(fi_close(&mr->fid));
	/* the key is free again */
	assert_fi_ok(fi_mr_reg(dom, buf, sizeof(buf), FI_RECV, 0, 0x1234, 0,
			       &mr, NULL));
	assert_fi_ok(fi_close(&mr->fid));

	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), 1ULL << 40, 0, 1,
				   0, &mr, NULL), -FI_EINVAL);
	assert_int_equal(fi_mr_reg(dom, buf, sizeof(buf), FI_SEND, 0, 1,
				   FI_RMA_PMEM, &mr, NULL), -FI_EBADFLAGS);
	for (i = 0; i < 5; i++)
		iov[i] = (struct iovec){ buf + i, 1 };
	assert_int_equal(fi_mr_regv(dom, iov, 5, FI_SEND, 0, 2, 0, &mr, NULL),
			 -FI_EINVAL);
	assert_fi_ok(fi_mr_regv(dom, iov, 4, FI_SEND, 0, 2, 0, &mr, NULL));
	assert_fi_ok(fi_close(&mr->fid));
	{
		struct fi_mr_attr attr = {
			.mr_iov = iov, .iov_count = 1, .access = FI_SEND,
			.requested_key = 3, .iface = FI_HMEM_SYSTEM,
		};

		assert_fi_ok(fi_mr_regattr(dom, &attr, 0, &mr));
		assert_int_equal(fi_mr_key(mr), 3);
		assert_fi_ok(fi_close(&mr->fid));
		attr.iface = FI_HMEM_CUDA;
		assert_int_equal(fi_mr_regattr(dom, &attr, 0, &mr),
				 -FI_ENOSYS);
	}
	close_dom(info, fab, dom);
}

/* Applications with FI_MR_LOCAL pass descriptors: they must just work. */
static void test_mr_desc_in_transfers(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_MSG);
	struct sse_res_opts o = { .hints = hints };
	struct fi_cq_tagged_entry e;
	struct fid_mr *smr, *rmr;
	struct sse_res r;
	char sbuf[32] = "registered", rbuf[32];
	void *sd, *rd;

	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_PROV_KEY;
	sse_res_open(&r, 2, &o);
	fi_freeinfo(hints);
	assert_fi_ok(fi_mr_reg(r.domain, sbuf, sizeof(sbuf), FI_SEND, 0, 0, 0,
			       &smr, NULL));
	assert_fi_ok(fi_mr_reg(r.domain, rbuf, sizeof(rbuf), FI_RECV, 0, 0, 0,
			       &rmr, NULL));
	assert_fi_ok(fi_mr_bind(smr, &r.ep[0]->fid, 0));
	assert_fi_ok(fi_mr_enable(smr));
	sd = fi_mr_desc(smr);
	rd = fi_mr_desc(rmr);
	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), rd, FI_ADDR_UNSPEC,
			     NULL));
	assert_fi_ok(fi_send(r.ep[0], sbuf, sizeof(sbuf), sd, r.addr[1],
			     NULL));
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, 5000), 1);
	assert_string_equal(rbuf, "registered");
	assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, 5000), 1);
	assert_fi_ok(fi_close(&smr->fid));
	assert_fi_ok(fi_close(&rmr->fid));
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mr_prov_key),
		cmocka_unit_test(test_mr_user_key),
		cmocka_unit_test(test_mr_desc_in_transfers),
	};

	sse_test_init("private", "mr");
	return cmocka_run_group_tests_name("mr", tests, NULL, NULL);
}
