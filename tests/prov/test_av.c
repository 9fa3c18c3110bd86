/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors: FI_AV_TABLE and FI_AV_MAP insert/lookup/remove,
 * addresses of other fabrics, FI_SYNC_ERR, fi_av_straddr, asynchronous
 * insertion through an EQ (FI_EVENT), and what is not offered.
 */
#include <time.h>

#include "sse_test.h"

static struct fi_info *info;
static struct fid_fabric *fab;
static struct fid_domain *dom;
static uint32_t fabric_id;

static int setup(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED);
	struct fi_info *tmp;
	struct fi_sse_addr a;

	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), "localhost", "0", 0, hints,
				&tmp));
	memcpy(&a, tmp->dest_addr, sizeof(a));
	fabric_id = a.fabric_id;
	fi_freeinfo(tmp);
	fi_freeinfo(hints);
	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	return 0;
}

static int teardown(void **state)
{
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct fi_sse_addr mk(uint32_t port, uint32_t pid)
{
	struct fi_sse_addr a = { fabric_id, (port << 8) | pid };

	return a;
}

static void av_basic(enum fi_av_type type)
{
	struct fi_av_attr attr = { .type = type, .count = 2 };
	struct fi_sse_addr in[40], out;
	fi_addr_t fa[40];
	struct fid_av *av;
	size_t len;
	int i;

	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	for (i = 0; i < 40; i++)	/* more than attr.count: it grows */
		in[i] = mk((uint32_t)i % 16, (uint32_t)i / 16);
	assert_int_equal(fi_av_insert(av, in, 40, fa, 0, NULL), 40);
	for (i = 0; i < 40; i++) {
		if (type == FI_AV_TABLE)
			assert_int_equal(fa[i], i);
		len = sizeof(out);
		assert_fi_ok(fi_av_lookup(av, fa[i], &out, &len));
		assert_int_equal(len, sizeof(out));
		assert_memory_equal(&out, &in[i], sizeof(out));
	}
	/* a short buffer: partial copy, full length reported */
	len = 4;
	assert_int_equal(fi_av_lookup(av, fa[3], &out, &len), -FI_ETOOSMALL);
	assert_int_equal(len, sizeof(out));

	assert_fi_ok(fi_av_remove(av, &fa[5], 1, 0));
	len = sizeof(out);
	assert_int_equal(fi_av_lookup(av, fa[5], &out, &len), -FI_EINVAL);
	assert_int_equal(fi_av_remove(av, &fa[5], 1, 0), -FI_EINVAL);
	assert_int_equal(fi_av_lookup(av, 1000, &out, &len), -FI_EINVAL);
	assert_int_equal(fi_av_remove(av, fa, 1, 1), -FI_EBADFLAGS);
	/* the same address twice is fine */
	assert_int_equal(fi_av_insert(av, &in[0], 1, &fa[0], 0, NULL), 1);
	assert_int_equal(fi_av_insert(av, in, 0, NULL, 0, NULL), 0);
	assert_fi_ok(fi_close(&av->fid));
}

static void test_av_table(void **state)
{
	av_basic(FI_AV_TABLE);
}

static void test_av_map(void **state)
{
	av_basic(FI_AV_MAP);
}

static void test_av_bad_addresses(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fi_sse_addr in[3];
	fi_addr_t fa[3];
	struct fid_av *av;
	int err[3] = { -1, -1, -1 };

	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	in[0] = mk(1, 0);
	in[1] = mk(1, 1);
	in[1].fabric_id ^= 0x10;		/* another fabric */
	in[2] = mk(5000, 0);			/* a port the fabric lacks */
	assert_int_equal(fi_av_insert(av, in, 3, fa, 0, NULL), 1);
	assert_int_not_equal(fa[0], FI_ADDR_NOTAVAIL);
	assert_int_equal(fa[1], FI_ADDR_NOTAVAIL);
	assert_int_equal(fa[2], FI_ADDR_NOTAVAIL);
	assert_int_equal(fi_av_insert(av, in, 3, fa, FI_SYNC_ERR, err), 1);
	assert_int_equal(err[0], 0);
	assert_int_equal(err[1], FI_EADDRNOTAVAIL);
	assert_int_equal(err[2], FI_EADDRNOTAVAIL);
	assert_int_equal(fi_av_insert(av, in, 1, fa, 1ULL << 40, NULL),
			 -FI_EBADFLAGS);
	assert_int_equal(fi_av_insert(av, NULL, 1, fa, 0, NULL), -FI_EINVAL);
	/* by name: a host that is not this one, a service nobody binds
	 * (after FI_SLINGSHOT_EMU_SERVICE_WAIT, 200 ms here) */
	assert_int_equal(fi_av_insertsvc(av, "g00n13s", "1", fa, 0, NULL),
			 -FI_EADDRNOTAVAIL);
	assert_int_equal(fa[0], FI_ADDR_NOTAVAIL);
	{
		uint64_t t0 = now_ms(), dt;

		assert_int_equal(fi_av_insertsvc(av, "localhost", "nobody",
						 fa, 0, NULL), 0);
		dt = now_ms() - t0;
		assert_int_equal(fa[0], FI_ADDR_NOTAVAIL);
		assert_true(dt >= 190 && dt < 3000);
	}
	/* several services nobody binds share one wait */
	{
		struct fi_sse_addr svc[3];
		int i;
		uint64_t t0, dt;

		for (i = 0; i < 3; i++) {
			svc[i].fabric_id = fabric_id;
			svc[i].addr = 0xff000000u | (0x100u + (uint32_t)i);
		}
		t0 = now_ms();
		assert_int_equal(fi_av_insert(av, svc, 3, fa, FI_SYNC_ERR,
					      err), 0);
		dt = now_ms() - t0;
		assert_true(dt >= 190 && dt < 390);
		for (i = 0; i < 3; i++) {
			assert_int_equal(fa[i], FI_ADDR_NOTAVAIL);
			assert_int_equal(err[i], FI_EADDRNOTAVAIL);
		}
	}
	assert_int_equal(fi_av_insertsvc(av, NULL, NULL, fa, 0, NULL),
			 -FI_EINVAL);
	assert_fi_ok(fi_close(&av->fid));
}

static void test_av_straddr(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fi_sse_addr a = mk(12, 3);
	char buf[64], want[64], tiny[8];
	struct fid_av *av;
	size_t len = sizeof(buf);

	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	snprintf(want, sizeof(want), "sse://%08x/12:3", fabric_id);
	assert_ptr_equal(fi_av_straddr(av, &a, buf, &len), buf);
	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want) + 1);
	len = sizeof(tiny);
	assert_ptr_equal(fi_av_straddr(av, &a, tiny, &len), tiny);
	assert_int_equal(len, strlen(want) + 1);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	/* what straddr prints, getinfo resolves */
	{
		struct fi_info *hints = sse_test_hints(FI_TAGGED), *fi;

		assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), want, NULL, 0,
					hints, &fi));
		assert_memory_equal(fi->dest_addr, &a, sizeof(a));
		fi_freeinfo(fi);
		fi_freeinfo(hints);
	}
	assert_fi_ok(fi_close(&av->fid));
}

static void test_av_open_errors(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;

	attr.rx_ctx_bits = 2;
	assert_int_equal(fi_av_open(dom, &attr, &av, NULL), -FI_ENOSYS);
	attr.rx_ctx_bits = 0;
	attr.name = "shared";
	assert_int_equal(fi_av_open(dom, &attr, &av, NULL), -FI_ENOSYS);
	attr.name = NULL;
	attr.type = (enum fi_av_type)7;
	assert_int_equal(fi_av_open(dom, &attr, &av, NULL), -FI_EINVAL);
	attr.type = FI_AV_UNSPEC;
	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	assert_true(attr.type == FI_AV_MAP || attr.type == FI_AV_TABLE);
	assert_fi_ok(fi_close(&av->fid));
}

static void test_av_event(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_sse_addr in[2] = { mk(1, 0), mk(2, 0) };
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry ev;
	fi_addr_t fa[2];
	uint32_t event;
	struct fid_av *av;
	struct fid_eq *eq;
	int ctx;

	assert_fi_ok(fi_eq_open(fab, &eq_attr, &eq, NULL));
	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	assert_int_equal(fi_av_insert(av, in, 2, fa, 0, &ctx), -FI_ENOEQ);
	assert_fi_ok(fi_av_bind(av, &eq->fid, 0));
	assert_int_equal(fi_av_bind(av, &eq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_close(&eq->fid), -FI_EBUSY);

	assert_int_equal(fi_av_insert(av, in, 2, fa, 0, &ctx), 0);
	assert_int_equal(fi_eq_sread(eq, &event, &ev, sizeof(ev), 1000, 0),
			 sizeof(ev));
	assert_int_equal(event, FI_AV_COMPLETE);
	assert_ptr_equal(ev.context, &ctx);
	assert_int_equal(ev.data, 2);
	assert_ptr_equal(ev.fid, &av->fid);

	/* a bad address: an error entry naming its index, then the count */
	in[1].fabric_id++;
	assert_int_equal(fi_av_insert(av, in, 2, fa, 0, &ctx), 0);
	assert_int_equal(fi_eq_read(eq, &event, &ev, sizeof(ev), 0),
			 -FI_EAVAIL);
	assert_int_equal(fi_eq_readerr(eq, &err, 0), sizeof(err));
	assert_int_equal(err.err, FI_EADDRNOTAVAIL);
	assert_int_equal(err.data, 1);
	assert_int_equal(fi_eq_read(eq, &event, &ev, sizeof(ev), 0),
			 sizeof(ev));
	assert_int_equal(ev.data, 1);

	assert_fi_ok(fi_close(&av->fid));
	assert_fi_ok(fi_close(&eq->fid));
}

/* An endpoint opened from fi_getinfo(localhost, @service, FI_SOURCE). */
static struct fid_ep *open_bound(const char *service, struct fi_info **fip)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED);
	struct fid_ep *ep;

	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), "localhost", service,
				FI_SOURCE, hints, fip));
	fi_freeinfo(hints);
	assert_fi_ok(fi_endpoint(dom, *fip, &ep, NULL));
	return ep;
}

static void lookup(struct fid_av *av, fi_addr_t fa, struct fi_sse_addr *a)
{
	size_t len = sizeof(*a);

	assert_fi_ok(fi_av_lookup(av, fa, a, &len));
	assert_int_equal(len, sizeof(*a));
}

/*
 * FI_ADDR_STR round trips: what fi_av_straddr prints, fi_av_insertsvc
 * (and fi_getinfo) take back, for endpoint addresses and for services;
 * a node/service pair inserts the endpoint that bound the service; and
 * fi_av_insertsym counts services up.
 */
static void test_av_str_roundtrip(void **state)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fi_info *fi1, *fi2, *fi3, *hints;
	struct fid_ep *ep1, *ep2, *ep3, *ep4;
	struct fi_sse_addr me1, me2, me3, got, svc;
	char str[FI_SSE_ADDR_STRLEN];
	fi_addr_t fa[4];
	struct fid_av *av;
	size_t len;

	ep1 = open_bound("av-server", &fi1);
	ep2 = open_bound("sym7", &fi2);
	ep3 = open_bound("sym8", &fi3);
	len = sizeof(me1);
	assert_fi_ok(fi_getname(&ep1->fid, &me1, &len));
	len = sizeof(me2);
	assert_fi_ok(fi_getname(&ep2->fid, &me2, &len));
	len = sizeof(me3);
	assert_fi_ok(fi_getname(&ep3->fid, &me3, &len));
	assert_false(FI_SSE_ADDR_IS_SVC(&me1));
	/* a second endpoint cannot bind a service already bound */
	assert_int_equal(fi_endpoint(dom, fi1, &ep4, NULL), -FI_EADDRINUSE);
	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));

	/* node/service: the endpoint bound to the service */
	assert_int_equal(fi_av_insertsvc(av, "localhost", "av-server", &fa[0],
					 0, NULL), 1);
	lookup(av, fa[0], &got);
	assert_memory_equal(&got, &me1, sizeof(got));

	/* an endpoint address: straddr -> insertsvc -> the same address */
	len = sizeof(str);
	assert_ptr_equal(fi_av_straddr(av, &me2, str, &len), str);
	assert_int_equal(fi_av_insertsvc(av, str, NULL, &fa[1], 0, NULL), 1);
	lookup(av, fa[1], &got);
	assert_memory_equal(&got, &me2, sizeof(got));

	/* a service's address as getinfo returns it: its string names the
	 * service, and inserting either resolves it */
	hints = sse_test_hints(FI_TAGGED);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "sym8", 0,
				hints, &fi2->next));
	memcpy(&svc, fi2->next->dest_addr, sizeof(svc));
	fi_freeinfo(fi2->next);
	fi2->next = NULL;
	fi_freeinfo(hints);
	assert_true(FI_SSE_ADDR_IS_SVC(&svc));
	len = sizeof(str);
	assert_ptr_equal(fi_av_straddr(av, &svc, str, &len), str);
	assert_true(len <= FI_SSE_ADDR_STRLEN);
	assert_non_null(strstr(str, "/svc#"));
	assert_int_equal(fi_av_insertsvc(av, str, NULL, &fa[2], 0, NULL), 1);
	lookup(av, fa[2], &got);
	assert_memory_equal(&got, &me3, sizeof(got));
	assert_int_equal(fi_av_insert(av, &svc, 1, &fa[3], 0, NULL), 1);
	lookup(av, fa[3], &got);
	assert_memory_equal(&got, &me3, sizeof(got));
	assert_fi_ok(fi_close(&av->fid));

	/* insertsym: services sym7 and sym8 of this host */
	assert_fi_ok(fi_av_open(dom, &attr, &av, NULL));
	assert_int_equal(fi_av_insertsym(av, "localhost", 1, "sym7", 2, fa, 0,
					 NULL), 2);
	lookup(av, fa[0], &got);
	assert_memory_equal(&got, &me2, sizeof(got));
	lookup(av, fa[1], &got);
	assert_memory_equal(&got, &me3, sizeof(got));
	/* a node name with no number to count up cannot make two nodes */
	assert_int_equal(fi_av_insertsym(av, "localhost", 2, "sym7", 1, fa, 0,
					 NULL), -FI_EINVAL);
	assert_fi_ok(fi_close(&av->fid));

	/* closing the endpoint releases its service: another binds it */
	assert_fi_ok(fi_close(&ep1->fid));
	assert_fi_ok(fi_endpoint(dom, fi1, &ep4, NULL));
	assert_fi_ok(fi_close(&ep4->fid));
	assert_fi_ok(fi_close(&ep2->fid));
	assert_fi_ok(fi_close(&ep3->fid));
	fi_freeinfo(fi1);
	fi_freeinfo(fi2);
	fi_freeinfo(fi3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_av_table),
		cmocka_unit_test(test_av_map),
		cmocka_unit_test(test_av_bad_addresses),
		cmocka_unit_test(test_av_straddr),
		cmocka_unit_test(test_av_str_roundtrip),
		cmocka_unit_test(test_av_open_errors),
		cmocka_unit_test(test_av_event),
	};

	sse_test_init("private", "av");
	setenv("FI_SLINGSHOT_EMU_SERVICE_WAIT", "200", 1);
	return cmocka_run_group_tests_name("av", tests, setup, teardown);
}
