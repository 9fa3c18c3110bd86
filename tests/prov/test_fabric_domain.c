/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_fabric, fi_domain and fi_endpoint lifecycles: several fabrics and
 * domains per process sharing one NIC (Open MPI's mtl and btl), close
 * ordering (-FI_EBUSY), stubs for what is not offered, endpoint binding
 * and enabling rules, options, traffic classes, auto progress.
 */
#include "sse_test.h"

static struct fi_info *get_info(uint64_t caps)
{
	struct fi_info *hints = sse_test_hints(caps), *info;

	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	fi_freeinfo(hints);
	return info;
}

static void test_fabric_open_close(void **state)
{
	struct fi_info *info = get_info(FI_TAGGED);
	struct fi_fabric_attr attr = *info->fabric_attr;
	struct fid_fabric *fab, *fab2;
	struct fid_domain *dom;
	struct fid_wait *wait;
	struct fid_pep *pep;
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_UNSPEC };

	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	assert_int_equal(fab->fid.fclass, FI_CLASS_FABRIC);
	/* wait sets: test_poll */
	assert_fi_ok(fi_wait_open(fab, &wattr, &wait));
	assert_fi_ok(fi_close(&wait->fid));
	assert_int_equal(fi_passive_ep(fab, info, &pep, NULL), -FI_ENOSYS);
	/* nothing to wait on: the caller may sleep (test_cq_fd has more) */
	assert_int_equal(fi_trywait(fab, NULL, 0), 0);

	/* a second handle on the same fabric */
	assert_fi_ok(fi_fabric(info->fabric_attr, &fab2, NULL));

	/* fabric with a domain open: busy */
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	assert_int_equal(fi_close(&fab->fid), -FI_EBUSY);
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	assert_fi_ok(fi_close(&fab2->fid));

	/* the core insists on a name */
	attr.name = NULL;
	assert_int_equal(fi_fabric(&attr, &fab, NULL), -FI_EINVAL);
	fi_freeinfo(info);
}

/* Open MPI: mtl and btl each open fabric + domain + endpoint in one
 * process; both endpoints live on the process's one NIC. */
static void test_fabric_two_stacks(void **state)
{
	struct fi_info *info = get_info(FI_TAGGED);
	struct fid_fabric *fab[2];
	struct fid_domain *dom[2];
	struct fid_ep *ep[2];
	struct fid_av *av[2];
	struct fid_cq *cq[2];
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_sse_addr a[2];
	fi_addr_t peer;
	struct fi_cq_tagged_entry e;
	uint64_t v = 5, got = 0;
	int i, n;

	for (i = 0; i < 2; i++) {
		size_t len = sizeof(a[i]);

		assert_fi_ok(fi_fabric(info->fabric_attr, &fab[i], NULL));
		assert_fi_ok(fi_domain(fab[i], info, &dom[i], NULL));
		assert_fi_ok(fi_av_open(dom[i], &av_attr, &av[i], NULL));
		assert_fi_ok(fi_cq_open(dom[i], &cq_attr, &cq[i], NULL));
		assert_fi_ok(fi_endpoint(dom[i], info, &ep[i], NULL));
		assert_fi_ok(fi_ep_bind(ep[i], &av[i]->fid, 0));
		assert_fi_ok(fi_ep_bind(ep[i], &cq[i]->fid,
					FI_TRANSMIT | FI_RECV));
		assert_fi_ok(fi_enable(ep[i]));
		assert_fi_ok(fi_getname(&ep[i]->fid, &a[i], &len));
	}
	assert_int_equal(a[0].fabric_id, a[1].fabric_id);
	assert_int_equal(FI_SSE_ADDR_PORT(&a[0]), FI_SSE_ADDR_PORT(&a[1]));
	assert_int_not_equal(FI_SSE_ADDR_PID(&a[0]), FI_SSE_ADDR_PID(&a[1]));

	/* traffic between the two stacks */
	assert_int_equal(fi_av_insert(av[0], &a[1], 1, &peer, 0, NULL), 1);
	assert_fi_ok(fi_trecv(ep[1], &got, 8, NULL, FI_ADDR_UNSPEC, 1, 0,
			      NULL));
	assert_fi_ok(fi_tsend(ep[0], &v, 8, NULL, peer, 1, NULL));
	for (n = 0; n < 2;) {
		for (i = 0; i < 2; i++)
			if (fi_cq_read(cq[i], &e, 1) == 1)
				n++;
	}
	assert_int_equal(got, 5);

	for (i = 0; i < 2; i++) {
		/* Open MPI's finalize order: ep, av, cq, domain, fabric */
		assert_fi_ok(fi_close(&ep[i]->fid));
		assert_fi_ok(fi_close(&av[i]->fid));
		assert_fi_ok(fi_close(&cq[i]->fid));
		assert_fi_ok(fi_close(&dom[i]->fid));
		assert_fi_ok(fi_close(&fab[i]->fid));
	}
	fi_freeinfo(info);
}

static void test_domain_errors(void **state)
{
	struct fi_info *info = get_info(FI_TAGGED), *bad;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep;
	struct fid_poll *poll;
	struct fid_stx *stx;
	struct fi_poll_attr pattr = { 0 };
	struct fi_tx_attr tattr = { 0 };
	struct fi_rx_attr rattr = { 0 };
	struct fi_atomic_attr aattr;
	struct fid_av *av;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };

	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));

	bad = fi_dupinfo(info);
	free(bad->domain_attr->name);
	bad->domain_attr->name = strdup("nosuch0");
	assert_int_equal(fi_domain(fab, bad, &dom, NULL), -FI_EINVAL);
	free(bad->domain_attr->name);
	bad->domain_attr->name = NULL;
	bad->domain_attr->tclass = FI_TC_SCAVENGER;
	assert_int_equal(fi_domain(fab, bad, &dom, NULL), -FI_EINVAL);
	/* DSCP values are refused as cxi refuses them */
	bad->domain_attr->tclass = fi_tc_dscp_set(10);
	assert_int_equal(fi_domain(fab, bad, &dom, NULL), -FI_EINVAL);
	bad->domain_attr->tclass = FI_TC_LOW_LATENCY;
	assert_fi_ok(fi_domain(fab, bad, &dom, NULL));
	assert_fi_ok(fi_close(&dom->fid));
	fi_freeinfo(bad);

	assert_int_equal(fi_domain2(fab, info, &dom, 1, NULL), -FI_EINVAL);
	assert_fi_ok(fi_domain2(fab, info, &dom, 0, NULL));
	assert_int_equal(fi_scalable_ep(dom, info, &ep, NULL), -FI_ENOSYS);
	/* poll sets: test_poll */
	assert_fi_ok(fi_poll_open(dom, &pattr, &poll));
	assert_fi_ok(fi_close(&poll->fid));
	assert_int_equal(fi_stx_context(dom, &tattr, &stx, NULL), -FI_ENOSYS);
	assert_int_equal(fi_srx_context(dom, &rattr, &ep, NULL), -FI_ENOSYS);
	assert_fi_ok(fi_query_atomic(dom, FI_UINT64, FI_SUM, &aattr, 0));
	assert_int_equal(aattr.size, 8);
	assert_int_equal(fi_query_atomic(dom, FI_DOUBLE, FI_BOR, &aattr, 0),
			 -FI_EOPNOTSUPP);

	/* domain with an open object: busy */
	assert_fi_ok(fi_av_open(dom, &av_attr, &av, NULL));
	assert_int_equal(fi_close(&dom->fid), -FI_EBUSY);
	assert_fi_ok(fi_close(&av->fid));
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
}

static void test_ep_lifecycle(void **state)
{
	struct fi_info *info = get_info(FI_MSG | FI_TAGGED), *bad;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep, *ep2;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fi_sse_addr a;
	char small[4], buf[8];
	size_t len;
	uint64_t flags;

	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	assert_fi_ok(fi_av_open(dom, &av_attr, &av, NULL));
	assert_fi_ok(fi_cq_open(dom, &cq_attr, &cq, NULL));
	assert_fi_ok(fi_cntr_open(dom, &cntr_attr, &cntr, NULL));

	bad = fi_dupinfo(info);
	bad->caps |= FI_HMEM;
	assert_int_equal(fi_endpoint(dom, bad, &ep, NULL), -FI_EINVAL);
	bad->caps = info->caps;
	bad->ep_attr->type = FI_EP_MSG;
	assert_int_equal(fi_endpoint(dom, bad, &ep, NULL), -FI_EINVAL);
	bad->ep_attr->type = FI_EP_RDM;
	bad->tx_attr->tclass = FI_TC_NETWORK_CTRL;
	assert_int_equal(fi_endpoint(dom, bad, &ep, NULL), -FI_EINVAL);
	bad->tx_attr->tclass = fi_tc_dscp_set(0);
	assert_int_equal(fi_endpoint(dom, bad, &ep, NULL), -FI_EINVAL);
	fi_freeinfo(bad);
	assert_int_equal(fi_endpoint(dom, NULL, &ep, NULL), -FI_EINVAL);
	assert_int_equal(fi_endpoint2(dom, info, &ep, 1, NULL), -FI_EINVAL);

	assert_fi_ok(fi_endpoint(dom, info, &ep, NULL));
	/* names work before enable; a short buffer says how long */
	len = sizeof(small);
	assert_int_equal(fi_getname(&ep->fid, small, &len), -FI_ETOOSMALL);
	assert_int_equal(len, sizeof(a));
	assert_fi_ok(fi_getname(&ep->fid, &a, &len));
	assert_int_equal(fi_setname(&ep->fid, &a, sizeof(a)), -FI_ENOSYS);
	assert_int_equal(fi_getpeer(ep, &a, &len), -FI_ENOSYS);
	assert_int_equal(fi_connect(ep, &a, NULL, 0), -FI_ENOSYS);

	/* enable needs an AV, then a CQ or a counter */
	assert_int_equal(fi_enable(ep), -FI_ENOAV);
	assert_fi_ok(fi_ep_bind(ep, &av->fid, 0));
	assert_int_equal(fi_ep_bind(ep, &av->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_enable(ep), -FI_ENOCQ);
	assert_int_equal(fi_ep_bind(ep, &cq->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_ep_bind(ep, &cq->fid, FI_REMOTE_WRITE),
			 -FI_EBADFLAGS);
	assert_fi_ok(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
	assert_int_equal(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT), -FI_EINVAL);
	assert_fi_ok(fi_ep_bind(ep, &cq->fid, FI_RECV));
	assert_fi_ok(fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV));
	assert_int_equal(fi_ep_bind(ep, &cntr->fid, FI_SEND), -FI_EINVAL);
	assert_int_equal(fi_ep_bind(ep, &cntr->fid, 1ULL << 62),
			 -FI_EBADFLAGS);
	assert_int_equal(fi_ep_bind(ep, &dom->fid, 0), -FI_EINVAL);
	assert_fi_ok(fi_enable(ep));

	/* objects an endpoint holds cannot close first */
	assert_int_equal(fi_close(&cq->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&av->fid), -FI_EBUSY);
	assert_int_equal(fi_close(&cntr->fid), -FI_EBUSY);

	/* op flags */
	flags = FI_TRANSMIT;
	assert_fi_ok(fi_control(&ep->fid, FI_GETOPSFLAG, &flags));
	flags = FI_TRANSMIT | FI_COMPLETION | FI_DELIVERY_COMPLETE;
	assert_fi_ok(fi_control(&ep->fid, FI_SETOPSFLAG, &flags));
	flags = FI_TRANSMIT;
	assert_fi_ok(fi_control(&ep->fid, FI_GETOPSFLAG, &flags));
	assert_int_equal(flags, FI_COMPLETION | FI_DELIVERY_COMPLETE);
	flags = FI_TRANSMIT | FI_RECV;
	assert_int_equal(fi_control(&ep->fid, FI_GETOPSFLAG, &flags),
			 -FI_EINVAL);
	assert_int_equal(fi_control(&ep->fid, 12345, NULL), -FI_ENOSYS);

	/* options */
	{
		size_t v = 4096, vl = sizeof(v);
		uint32_t tc = FI_TC_BULK_DATA;

		assert_fi_ok(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)));
		v = 0;
		assert_fi_ok(fi_getopt(&ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_MIN_MULTI_RECV, &v, &vl));
		assert_int_equal(v, 4096);
		assert_int_equal(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_MIN_MULTI_RECV, &v, 1),
				 -FI_EINVAL);
		assert_int_equal(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_CM_DATA_SIZE, &v, sizeof(v)),
				 -FI_ENOPROTOOPT);
		assert_int_equal(fi_setopt(&ep->fid, 77, FI_OPT_MIN_MULTI_RECV,
					   &v, sizeof(v)), -FI_ENOPROTOOPT);
		assert_fi_ok(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_SSE_TCLASS, &tc, sizeof(tc)));
		tc = 0;
		vl = sizeof(tc);
		assert_fi_ok(fi_getopt(&ep->fid, FI_OPT_ENDPOINT,
				       FI_OPT_SSE_TCLASS, &tc, &vl));
		assert_int_equal(tc, FI_TC_BULK_DATA);
		tc = FI_TC_SCAVENGER;
		assert_int_equal(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_SSE_TCLASS, &tc, sizeof(tc)),
				 -FI_EINVAL);
		tc = fi_tc_dscp_set(46);
		assert_int_equal(fi_setopt(&ep->fid, FI_OPT_ENDPOINT,
					   FI_OPT_SSE_TCLASS, &tc, sizeof(tc)),
				 -FI_EINVAL);
	}

	/* what is not offered, or not asked for, fails cleanly */
	assert_int_equal(fi_read(ep, buf, 8, NULL, 0, 0, 0, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(fi_write(ep, buf, 8, NULL, 0, 0, 0, NULL),
			 -FI_EOPNOTSUPP);
	assert_int_equal(fi_atomic(ep, buf, 1, NULL, 0, 0, 0, FI_UINT64,
				   FI_SUM, NULL), -FI_EOPNOTSUPP);
	assert_int_equal(fi_tx_context(ep, 0, NULL, &ep2, NULL), -FI_ENOSYS);

	/* a message to itself */
	{
		fi_addr_t self;
		struct fi_cq_tagged_entry e;
		int n = 0;

		assert_int_equal(fi_av_insert(av, &a, 1, &self, 0, NULL), 1);
		assert_fi_ok(fi_recv(ep, buf, sizeof(buf), NULL, self, buf));
		assert_fi_ok(fi_send(ep, "self", 5, NULL, self, NULL));
		while (n < 2)
			if (fi_cq_read(cq, &e, 1) == 1)
				n++;
		assert_string_equal(buf, "self");
		assert_int_equal(fi_cntr_read(cntr), 2);
	}

	assert_fi_ok(fi_close(&ep->fid));
	assert_fi_ok(fi_close(&cntr->fid));
	assert_fi_ok(fi_close(&cq->fid));
	assert_fi_ok(fi_close(&av->fid));
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
}

/* The NIC has a fixed number of pids (the configuration's eps_per_nic, at
 * least 64 by default): one more endpoint is refused. */
static void test_ep_limit(void **state)
{
	struct fi_info *info = get_info(FI_TAGGED);
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_ep *ep[257];
	size_t n, i, max = info->domain_attr->ep_cnt;

	assert_true(max >= 64 && max < 257);
	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	for (n = 0; n < max; n++)
		assert_fi_ok(fi_endpoint(dom, info, &ep[n], NULL));
	assert_int_equal(fi_endpoint(dom, info, &ep[n], NULL), -FI_ENOSPC);
	for (i = 0; i < n; i++)
		assert_fi_ok(fi_close(&ep[i]->fid));
	assert_fi_ok(fi_close(&dom->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
}

/* FI_PROGRESS_AUTO: a progress thread per domain, and blocking reads. */
static void test_auto_progress(void **state)
{
	struct sse_res_opts o = { .progress = FI_PROGRESS_AUTO,
				  .caps = FI_TAGGED };
	struct fi_cq_tagged_entry e;
	struct sse_res r;
	size_t len = 1 << 20;
	char *s = malloc(len), *d = malloc(len);
	int i;

	sse_res_open(&r, 2, &o);
	assert_int_equal(r.info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	sse_fill(s, len, 1);
	for (i = 0; i < 3; i++) {
		assert_fi_ok(fi_trecv(r.ep[1], d, len, NULL, FI_ADDR_UNSPEC, 1,
				      0, NULL));
		assert_fi_ok(fi_tsend(r.ep[0], s, len, NULL, r.addr[1], 1,
				      NULL));
		/* blocking reads on one CQ only: the other side must be
		 * progressed by the thread (or by the wait) */
		assert_int_equal(fi_cq_sread(r.cq[1], &e, 1, NULL, 5000), 1);
		assert_int_equal(fi_cq_sread(r.cq[0], &e, 1, NULL, 5000), 1);
		assert_int_equal(sse_check(d, len, 1), -1);
	}
	sse_res_close(&r);
	free(s);
	free(d);
}

/* A source address with a port places the process's NIC there. */
static void test_domain_src_port(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED), *info, *info2;
	struct fid_fabric *fab;
	struct fid_domain *dom, *dom2;
	struct fid_ep *ep;
	struct fi_sse_addr a;
	size_t len = sizeof(a);

	char node[64];

	/* the fabric's id, from the "any port" source address */
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				&info));
	memcpy(&a, info->src_addr, sizeof(a));
	fi_freeinfo(info);
	snprintf(node, sizeof(node), "sse://%08x/5", a.fabric_id);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), node, NULL, FI_SOURCE,
				hints, &info));
	snprintf(node, sizeof(node), "sse://%08x/6", a.fabric_id);
	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), node, NULL, FI_SOURCE,
				hints, &info2));
	assert_fi_ok(fi_fabric(info->fabric_attr, &fab, NULL));
	assert_fi_ok(fi_domain(fab, info, &dom, NULL));
	assert_fi_ok(fi_endpoint(dom, info, &ep, NULL));
	assert_fi_ok(fi_getname(&ep->fid, &a, &len));
	assert_int_equal(FI_SSE_ADDR_PORT(&a), 5);
	/* the process's NIC is on port 5 now: port 6 is not available */
	assert_int_equal(fi_domain(fab, info2, &dom2, NULL),
			 -FI_EADDRNOTAVAIL);
	assert_fi_ok(fi_close(&ep->fid));
	assert_fi_ok(fi_close(&dom->fid));
	/* NIC detached with the last domain: port 6 works */
	assert_fi_ok(fi_domain(fab, info2, &dom2, NULL));
	assert_fi_ok(fi_close(&dom2->fid));
	assert_fi_ok(fi_close(&fab->fid));
	fi_freeinfo(info);
	fi_freeinfo(info2);
	fi_freeinfo(hints);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fabric_open_close),
		cmocka_unit_test(test_fabric_two_stacks),
		cmocka_unit_test(test_domain_errors),
		cmocka_unit_test(test_ep_lifecycle),
		cmocka_unit_test(test_ep_limit),
		cmocka_unit_test(test_auto_progress),
		cmocka_unit_test(test_domain_src_port),
	};

	sse_test_init("private", "fabric");
	return cmocka_run_group_tests_name("fabric, domain, endpoint", tests,
					   NULL, NULL);
}
