/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM: the second fi_info entry (after FI_EP_RDM), what it offers
 * (untagged messages up to the eager limit), data integrity up to that
 * limit over the private and the shm store, and the refusals: datagrams
 * over the limit, tagged calls, tagged capabilities, and a utility
 * provider's request to layer over the provider.
 */
#include "sse_test.h"

#ifdef SSE_TEST_SHM
#define STORE "shm"
#define NAME "dgram-shm"
#else
#define STORE "private"
#define NAME "dgram"
#endif

#define TMO SSE_TEST_TIMEOUT_MS
/* libfabric's internal flag for "core providers only" (include/ofi.h) */
#define CORE_PROV_ONLY (1ULL << 59)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static size_t eager_max(void)
{
	const char *s = getenv("FI_SLINGSHOT_EMU_EAGER_MAX");

	return s ? strtoul(s, NULL, 0) : 16384;
}

static struct fi_info *dgram_hints(uint64_t caps)
{
	struct fi_info *hints = sse_test_hints(caps);

	hints->ep_attr->type = FI_EP_DGRAM;
	return hints;
}

static void test_dgram_getinfo(void **state)
{
	struct fi_info *hints, *info = NULL, *cur;
	int n = 0;

	/* no type asked: RDM first, then DGRAM */
	hints = sse_test_hints(FI_MSG);
	hints->ep_attr->type = FI_EP_UNSPEC;
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	for (cur = info; cur; cur = cur->next, n++)
		assert_int_equal(cur->ep_attr->type,
				 n == 0 ? FI_EP_RDM : FI_EP_DGRAM);
	assert_int_equal(n, 2);
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* DGRAM: untagged only, messages up to the eager limit */
	hints = dgram_hints(FI_MSG);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	assert_null(info->next);
	assert_int_equal(info->ep_attr->type, FI_EP_DGRAM);
	assert_int_equal(info->ep_attr->max_msg_size, eager_max());
	assert_true(info->caps & FI_MSG);
	assert_false(info->caps & (FI_TAGGED | FI_RMA | FI_ATOMIC));
	fi_freeinfo(info);
	fi_freeinfo(hints);

	/* what DGRAM does not do */
	hints = dgram_hints(FI_MSG | FI_TAGGED);
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info), -FI_ENODATA);
	fi_freeinfo(hints);
	hints = dgram_hints(FI_MSG);
	hints->ep_attr->max_msg_size = eager_max() + 1;
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				    &info), -FI_ENODATA);
	fi_freeinfo(hints);

	/* a utility provider (ofi_rxd) may not layer over it */
	hints = dgram_hints(FI_MSG);
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), NULL, NULL,
				    CORE_PROV_ONLY, hints, &info),
			 -FI_ENODATA);
	fi_freeinfo(hints);
}

static void open_dgram(struct sse_res *r)
{
	struct sse_res_opts o = { .hints = dgram_hints(FI_MSG) };

	sse_res_open(r, 2, &o);
	fi_freeinfo(o.hints);
	assert_int_equal(r->info->ep_attr->type, FI_EP_DGRAM);
}

static void test_dgram_sizes(void **state)
{
	size_t mtu = sse_test_mtu(), max = eager_max();
	size_t sizes[] = { 0, 1, 8, mtu - 1, mtu, mtu + 1, max - 1, max };
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	fi_addr_t src;
	size_t i;

	open_dgram(&r);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		size_t len = sizes[i];
		char *sbuf = malloc(len + 1), *rbuf = malloc(len + 16);

		assert_non_null(sbuf);
		assert_non_null(rbuf);
		sse_fill(sbuf, len, (unsigned)i + 1);
		memset(rbuf, 0xa5, len + 16);
		assert_fi_ok(fi_recv(r.ep[1], rbuf, len, NULL, FI_ADDR_UNSPEC,
				     rbuf));
		assert_fi_ok(fi_send(r.ep[0], sbuf, len, NULL, r.addr[1],
				     sbuf));
		assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, &src, TMO), 1);
		assert_ptr_equal(e.op_context, rbuf);
		assert_int_equal(e.len, len);
		assert_true(e.flags & FI_RECV);
		assert_true(e.flags & FI_MSG);
		assert_int_equal(src, r.addr[0]);
		assert_int_equal(sse_check(rbuf, len, (unsigned)i + 1), -1);
		assert_int_equal((unsigned char)rbuf[len], 0xa5);
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
		assert_ptr_equal(e.op_context, sbuf);
		free(sbuf);
		free(rbuf);
	}
	sse_res_close(&r);
}

static void test_dgram_refusals(void **state)
{
	size_t max = eager_max();
	char *buf = calloc(1, max + 1);
	struct fi_info *info;
	struct fid_ep *ep;
	struct sse_res r;

	assert_non_null(buf);
	open_dgram(&r);
	/* a datagram over max_msg_size is refused, not split */
	assert_int_equal(fi_send(r.ep[0], buf, max + 1, NULL, r.addr[1], buf),
			 -FI_EMSGSIZE);
	/* no tagged messages on a datagram endpoint */
	assert_int_equal(fi_tsend(r.ep[0], buf, 8, NULL, r.addr[1], 1, buf),
			 -FI_EOPNOTSUPP);
	assert_int_equal(fi_trecv(r.ep[1], buf, 8, NULL, FI_ADDR_UNSPEC, 1,
				  0, buf), -FI_EOPNOTSUPP);
	/* nor tagged capabilities or a larger max_msg_size asked at open */
	info = fi_dupinfo(r.info);
	assert_non_null(info);
	info->caps |= FI_TAGGED;
	assert_int_equal(fi_endpoint(r.domain, info, &ep, NULL), -FI_EINVAL);
	info->caps = r.info->caps;
	info->ep_attr->max_msg_size = max + 1;
	assert_int_equal(fi_endpoint(r.domain, info, &ep, NULL), -FI_EINVAL);
	fi_freeinfo(info);
	sse_assert_cq_empty(&r, r.cq[0]);
	sse_assert_cq_empty(&r, r.cq[1]);
	sse_res_close(&r);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dgram_getinfo),
		cmocka_unit_test(test_dgram_sizes),
		cmocka_unit_test(test_dgram_refusals),
	};

	sse_test_init(STORE, NAME);
	return cmocka_run_group_tests_name("dgram (" STORE " store)", tests,
					   NULL, NULL);
}
