/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: what the provider offers, how hints are matched (-FI_ENODATA
 * for anything it cannot do) and trimmed, and node/service resolution.
 * The cases follow fabtests' fi_getinfo_test and what Open MPI asks for.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

static int getinfo(uint32_t version, const char *node, const char *service,
		   uint64_t flags, struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	return fi_getinfo(version, node, service, flags, hints, info);
}

/* @hints is consumed. */
static void expect_nodata(struct fi_info *hints)
{
	struct fi_info *info;

	assert_int_equal(getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints,
				 &info), -FI_ENODATA);
	assert_null(info);
	fi_freeinfo(hints);
}

static struct fi_info *expect_one(uint32_t version, const char *node,
				  const char *service, uint64_t flags,
				  struct fi_info *hints)
{
	struct fi_info *info;

	assert_fi_ok(getinfo(version, node, service, flags, hints, &info));
	assert_non_null(info);
	assert_null(info->next);
	fi_freeinfo(hints);
	return info;
}

static void test_getinfo_no_hints(void **state)
{
	struct fi_info *info, *fi;
	int n = 0, ndgram = 0;

	assert_fi_ok(getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info));
	for (fi = info; fi; fi = fi->next) {
		if (strcmp(fi->fabric_attr->prov_name, SSE_TEST_PROV))
			continue;
		if (fi->ep_attr->type == FI_EP_DGRAM) {
			/* after the RDM entry; test_dgram has the rest */
			assert_int_equal(n, 1);
			assert_false(fi->caps & FI_TAGGED);
			ndgram++;
			continue;
		}
		n++;
		assert_int_equal(fi->ep_attr->type, FI_EP_RDM);
		assert_int_equal(fi->addr_format, FI_ADDR_SLINGSHOT_EMU);
		assert_true((fi->caps & (FI_MSG | FI_TAGGED | FI_SEND |
					 FI_RECV | FI_DIRECTED_RECV |
					 FI_SOURCE | FI_MULTI_RECV |
					 FI_LOCAL_COMM | FI_REMOTE_COMM)) ==
			    (FI_MSG | FI_TAGGED | FI_SEND | FI_RECV |
			     FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |
			     FI_LOCAL_COMM | FI_REMOTE_COMM));
		/* RMA and atomics both ways; never advertise what is
		 * not implemented; FI_RMA_EVENT only when asked for */
		assert_true((fi->caps & (FI_RMA | FI_ATOMIC | FI_READ |
					 FI_WRITE | FI_REMOTE_READ |
					 FI_REMOTE_WRITE)) ==
			    (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
			     FI_REMOTE_READ | FI_REMOTE_WRITE));
		assert_false(fi->caps & (FI_RMA_EVENT | FI_TRIGGER |
					 FI_HMEM));
		assert_int_equal(fi->domain_attr->mr_cnt, 1024);
		assert_int_equal(fi->domain_attr->mr_key_size, 8);
		assert_int_equal(fi->mode, 0);
		assert_non_null(fi->fabric_attr->name);
		assert_non_null(fi->domain_attr->name);
		assert_int_equal(fi->domain_attr->cq_data_size, 8);
		assert_true(fi->ep_attr->mem_tag_format & (1ULL << 63));
		assert_int_equal(fi->domain_attr->resource_mgmt, FI_RM_ENABLED);
		assert_int_equal(fi->domain_attr->threading, FI_THREAD_SAFE);
		assert_int_equal(fi->domain_attr->max_ep_tx_ctx, 1);
		assert_int_equal(fi->domain_attr->max_ep_rx_ctx, 1);
		assert_true(fi->tx_attr->msg_order & FI_ORDER_SAS);
		assert_true(fi->ep_attr->max_msg_size >= (64u << 20));
		assert_true(fi->tx_attr->inject_size > 0);
		/* fi_getinfo(3): a source address, here "any port" */
		assert_non_null(fi->src_addr);
		assert_int_equal(fi->src_addrlen, sizeof(struct fi_sse_addr));
		assert_int_equal(((struct fi_sse_addr *)fi->src_addr)->addr,
				 FI_SSE_ADDR_ANY);
		assert_null(fi->dest_addr);
	}
	assert_int_equal(n, 1);
	assert_int_equal(ndgram, 1);
	fi_freeinfo(info);
}

/* Exactly what Open MPI 4.1's mtl ofi asks for (mtl_ofi_component.c). */
static void test_getinfo_ompi_mtl_hints(void **state)
{
	struct fi_info *hints = fi_allocinfo(), *info;

	hints->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM |
		      FI_DIRECTED_RECV;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->ep_attr->type = FI_EP_RDM;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	hints->tx_attr->op_flags = FI_COMPLETION;
	hints->rx_attr->op_flags = FI_COMPLETION;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->domain_attr->cq_data_size = sizeof(int);
	hints->domain_attr->av_type = FI_AV_MAP;
	hints->domain_attr->resource_mgmt = FI_RM_ENABLED;
	info = expect_one(FI_VERSION(1, 5), NULL, NULL, 0, hints);

	/* primary caps exactly as asked, plus the direction bits */
	assert_int_equal(info->caps & (FI_MSG | FI_TAGGED | FI_RMA |
				       FI_ATOMIC), FI_TAGGED);
	assert_true(info->caps & FI_DIRECTED_RECV);
	assert_true(info->caps & FI_REMOTE_COMM);
	assert_true((info->caps & (FI_SEND | FI_RECV)) == (FI_SEND | FI_RECV));
	assert_false(info->caps & FI_SOURCE_ERR);	/* opt-in only */
	assert_int_equal(info->domain_attr->threading, FI_THREAD_DOMAIN);
	assert_int_equal(info->domain_attr->av_type, FI_AV_MAP);
	assert_int_equal(info->domain_attr->mr_mode, 0);
	assert_int_equal(info->tx_attr->op_flags, FI_COMPLETION);
	assert_true(info->domain_attr->cq_data_size >= 4);
	assert_true(info->ep_attr->mem_tag_format & (1ULL << 63));
	assert_non_null(info->fabric_attr->name);
	fi_freeinfo(info);
}

/* What Open MPI 4.1's btl ofi asks for, and what its validate_info
 * accepts (btl_ofi_component.c). */
static void test_getinfo_ompi_btl_hints(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_RMA | FI_ATOMIC), *info;

	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_VIRT_ADDR;
	hints->tx_attr->iov_limit = 1;
	hints->rx_attr->iov_limit = 1;
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	info = expect_one(FI_VERSION(1, 5), NULL, NULL, 0, hints);
	assert_true((info->caps & (FI_RMA | FI_ATOMIC)) ==
		    (FI_RMA | FI_ATOMIC));
	/* a subset of VIRT_ADDR | ALLOCATED | PROV_KEY */
	assert_false(info->domain_attr->mr_mode &
		     ~(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY));
	assert_true(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	assert_int_equal(info->ep_attr->type, FI_EP_RDM);
	assert_int_equal(info->domain_attr->max_ep_tx_ctx, 1);
	/* remote events would cost a passive target: not unless asked */
	assert_false(info->caps & FI_RMA_EVENT);
	fi_freeinfo(info);
}

static void test_getinfo_unsupported(void **state)
{
	struct fi_info *h;

	h = sse_test_hints(0);
	h->ep_attr->type = FI_EP_MSG;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->ep_attr->type = FI_EP_DGRAM;	/* datagrams are untagged */
	expect_nodata(h);
	expect_nodata(sse_test_hints(FI_MSG | FI_HMEM));
	expect_nodata(sse_test_hints(FI_RMA | FI_XPU_TRIGGER));
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->cq_data_size = 16;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->tx_attr->op_flags = FI_COMMIT_COMPLETE;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->rx_attr->comp_order = FI_ORDER_STRICT;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->tx_attr->size = (size_t)1 << 40;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->rx_attr->iov_limit = 1000;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->tx_attr->inject_size = 1 << 20;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->ep_attr->max_msg_size = SIZE_MAX;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->addr_format = FI_SOCKADDR_IN;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->name = strdup("mlx5_0");
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->ep_attr->tx_ctx_cnt = 4;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->mr_mode = FI_MR_BASIC | FI_MR_LOCAL;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->fabric_attr->prov_version = FI_VERSION(99, 0);
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->fabric_attr->api_version = FI_VERSION(2, 0);
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->ep_attr->auth_key_size = 5;	/* not struct fi_sse_auth_key */
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->threading = (enum fi_threading)77;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->av_type = (enum fi_av_type)9;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->tx_attr->tclass = FI_TC_SCAVENGER;
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->tclass = fi_tc_dscp_set(10);
	expect_nodata(h);
	h = sse_test_hints(FI_TAGGED);
	h->fabric_attr->name = strdup("bad/name");
	expect_nodata(h);
}

static void test_getinfo_trim_and_copy(void **state)
{
	struct fi_info *h = sse_test_hints(FI_MSG), *info;

	h->tx_attr->size = 100;
	h->rx_attr->size = 200;
	h->tx_attr->iov_limit = 1;
	h->tx_attr->inject_size = 64;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE | FI_COMPLETION;
	h->rx_attr->op_flags = FI_MULTI_RECV;
	h->domain_attr->threading = FI_THREAD_ENDPOINT;
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->tclass = FI_TC_LOW_LATENCY;
	h->mode = ~0ULL;
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_true(info->caps & FI_MSG);
	assert_false(info->caps & FI_TAGGED);
	assert_false(info->caps & FI_DIRECTED_RECV);
	assert_int_equal(info->tx_attr->size, 100);
	assert_int_equal(info->rx_attr->size, 200);
	assert_int_equal(info->tx_attr->iov_limit, 1);
	assert_int_equal(info->tx_attr->inject_size, 64);
	assert_int_equal(info->tx_attr->op_flags,
			 FI_DELIVERY_COMPLETE | FI_COMPLETION);
	assert_int_equal(info->rx_attr->op_flags, FI_MULTI_RECV);
	assert_int_equal(info->domain_attr->threading, FI_THREAD_ENDPOINT);
	assert_int_equal(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	assert_int_equal(info->domain_attr->av_type, FI_AV_TABLE);
	assert_int_equal(info->domain_attr->tclass, FI_TC_LOW_LATENCY);
	assert_int_equal(info->mode, 0);
	fi_freeinfo(info);

	/* FI_SOURCE_ERR comes back only when asked for */
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0,
			  sse_test_hints(FI_MSG | FI_SOURCE | FI_SOURCE_ERR));
	assert_true(info->caps & FI_SOURCE_ERR);
	fi_freeinfo(info);
}

static void test_getinfo_mr_mode(void **state)
{
	struct fi_info *h, *info;

	/* API 1.0 with FI_MR_UNSPEC: BASIC or SCALABLE must come back */
	h = sse_test_hints(FI_TAGGED);
	info = expect_one(FI_VERSION(1, 0), NULL, NULL, 0, h);
	assert_true(info->domain_attr->mr_mode == FI_MR_BASIC ||
		    info->domain_attr->mr_mode == FI_MR_SCALABLE);
	fi_freeinfo(info);

	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->mr_mode = FI_MR_BASIC;
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_int_equal(info->domain_attr->mr_mode, FI_MR_BASIC);
	fi_freeinfo(info);

	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->mr_mode = FI_MR_SCALABLE;
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_int_equal(info->domain_attr->mr_mode, FI_MR_SCALABLE);
	fi_freeinfo(info);

	/* fabtests' default hints: everything is accepted */
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ENDPOINT |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				  FI_MR_VIRT_ADDR;
	info = expect_one(FI_VERSION(1, 9), NULL, NULL, 0, h);
	assert_false(info->domain_attr->mr_mode &
		     ~(FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_ALLOCATED |
		       FI_MR_PROV_KEY | FI_MR_VIRT_ADDR));
	fi_freeinfo(info);

	/* an application that supports no mode gets none */
	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->mr_mode = 0;
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_int_equal(info->domain_attr->mr_mode, 0);
	fi_freeinfo(info);

	/* fi_info's catch-all hints */
	h = sse_test_hints(0);
	h->mode = ~0ULL;
	h->domain_attr->mode = ~0ULL;
	h->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	fi_freeinfo(info);
}

static void get_fabric_id(uint32_t *id)
{
	struct fi_info *info = expect_one(FI_VERSION(1, 17), "localhost",
					  "1", 0, sse_test_hints(FI_TAGGED));
	struct fi_sse_addr a;

	assert_int_equal(info->dest_addrlen, sizeof(a));
	memcpy(&a, info->dest_addr, sizeof(a));
	*id = a.fabric_id;
	fi_freeinfo(info);
}

static struct fi_sse_addr addr_of(const void *p, size_t len)
{
	struct fi_sse_addr a;

	assert_non_null(p);
	assert_int_equal(len, sizeof(a));
	memcpy(&a, p, sizeof(a));
	return a;
}

/* This host's first interface address that is not loopback, as text. */
static bool first_if_addr(char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;
	bool found = false;

	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		const struct sockaddr_in *s4 = (const void *)i->ifa_addr;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (ntohl(s4->sin_addr.s_addr) >> 24) == 127)
			continue;
		found = inet_ntop(AF_INET, &s4->sin_addr, buf,
				  (socklen_t)len) != NULL;
	}
	freeifaddrs(ifs);
	return found;
}

static void test_getinfo_node_service(void **state)
{
	struct fi_info *info, *h;
	struct fi_sse_addr a, b;
	char node[64], host[256];
	uint32_t id;

	/* FI_SOURCE: node/service name the service the endpoint will bind;
	 * the port stays placement's */
	info = expect_one(FI_VERSION(1, 17), "localhost", "9228", FI_SOURCE,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->src_addr, info->src_addrlen);
	assert_null(info->dest_addr);
	assert_true(FI_SSE_ADDR_IS_SVC(&a));
	assert_int_equal(FI_SSE_ADDR_SVC_KEY(&a), ssemu_svc_key("9228"));
	id = a.fabric_id;
	fi_freeinfo(info);

	/* without FI_SOURCE: the same service as destination, and a source
	 * address (any port) as tcp gives one */
	info = expect_one(FI_VERSION(1, 17), "127.0.0.1", "9228", 0,
			  sse_test_hints(FI_TAGGED));
	b = addr_of(info->dest_addr, info->dest_addrlen);
	assert_memory_equal(&a, &b, sizeof(a));
	b = addr_of(info->src_addr, info->src_addrlen);
	assert_int_equal(b.fabric_id, id);
	assert_int_equal(b.addr, FI_SSE_ADDR_ANY);
	fi_freeinfo(info);

	/* any service string is a name: distinct names, distinct keys */
	info = expect_one(FI_VERSION(1, 17), "localhost", "my-server", 0,
			  sse_test_hints(FI_TAGGED));
	b = addr_of(info->dest_addr, info->dest_addrlen);
	assert_true(FI_SSE_ADDR_IS_SVC(&b));
	assert_int_not_equal(b.addr, a.addr);
	fi_freeinfo(info);

	/* FI_SOURCE with a node only: any port */
	info = expect_one(FI_VERSION(1, 17), "localhost", NULL, FI_SOURCE,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->src_addr, info->src_addrlen);
	assert_int_equal(a.addr, FI_SSE_ADDR_ANY);
	fi_freeinfo(info);

	/* a service alone is local */
	info = expect_one(FI_VERSION(1, 17), NULL, "7", 0,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->src_addr, info->src_addrlen);
	assert_true(FI_SSE_ADDR_IS_SVC(&a));
	assert_null(info->dest_addr);
	fi_freeinfo(info);

	/* this host by any of its names and addresses, and the fabric */
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	info = expect_one(FI_VERSION(1, 17), host, "1", 0,
			  sse_test_hints(FI_TAGGED));
	fi_freeinfo(info);
	info = expect_one(FI_VERSION(1, 17), "::1", "1", 0,
			  sse_test_hints(FI_TAGGED));
	fi_freeinfo(info);
	info = expect_one(FI_VERSION(1, 17), getenv("FI_SLINGSHOT_EMU_FABRIC"),
			  "1", 0, sse_test_hints(FI_TAGGED));
	fi_freeinfo(info);
	if (first_if_addr(host, sizeof(host))) {
		info = expect_one(FI_VERSION(1, 17), host, "1", 0,
				  sse_test_hints(FI_TAGGED));
		fi_freeinfo(info);
	}

	/* the strings fi_av_straddr prints: exact endpoints, services */
	snprintf(node, sizeof(node), "sse://%08x/4:1", id);
	info = expect_one(FI_VERSION(1, 17), node, NULL, 0,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->dest_addr, info->dest_addrlen);
	assert_int_equal(a.addr, ((4u << 8) | 1));
	fi_freeinfo(info);
	snprintf(node, sizeof(node), "sse://%08x/svc:9228", id);
	info = expect_one(FI_VERSION(1, 17), node, NULL, 0,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->dest_addr, info->dest_addrlen);
	assert_int_equal(a.addr, 0xff000000u | ssemu_svc_key("9228"));
	fi_freeinfo(info);
	snprintf(node, sizeof(node), "sse://%08x/svc#%06x", id,
		 ssemu_svc_key("9228"));
	info = expect_one(FI_VERSION(1, 17), node, NULL, 0,
			  sse_test_hints(FI_TAGGED));
	b = addr_of(info->dest_addr, info->dest_addrlen);
	assert_memory_equal(&a, &b, sizeof(a));
	fi_freeinfo(info);
	/* ports by number: an sse:// source address places the NIC */
	snprintf(node, sizeof(node), "sse://%08x/5", id);
	info = expect_one(FI_VERSION(1, 17), node, NULL, FI_SOURCE,
			  sse_test_hints(FI_TAGGED));
	a = addr_of(info->src_addr, info->src_addrlen);
	assert_int_equal(FI_SSE_ADDR_PORT(&a), 5);
	fi_freeinfo(info);

	/* hosts that are not this one, other fabrics, ports the fabric
	 * lacks, names too long, an sse:// address with a service */
	assert_int_equal(getinfo(FI_VERSION(1, 17), "g00n13s", "9228", 0,
				 h = sse_test_hints(FI_TAGGED), &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	assert_int_equal(getinfo(FI_VERSION(1, 17), "198.51.100.1", "9228",
				 FI_SOURCE, h = sse_test_hints(FI_TAGGED),
				 &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	snprintf(node, sizeof(node), "sse://%08x/4:1", id ^ 1);
	assert_int_equal(getinfo(FI_VERSION(1, 17), node, NULL, 0,
				 h = sse_test_hints(FI_TAGGED), &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	snprintf(node, sizeof(node), "sse://%08x/100000", id);
	assert_int_equal(getinfo(FI_VERSION(1, 17), node, NULL, 0,
				 h = sse_test_hints(FI_TAGGED), &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	snprintf(node, sizeof(node), "sse://%08x/4", id);
	assert_int_equal(getinfo(FI_VERSION(1, 17), node, "9228", 0,
				 h = sse_test_hints(FI_TAGGED), &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
	memset(host, 'x', 64);
	host[64] = '\0';
	assert_int_equal(getinfo(FI_VERSION(1, 17), "localhost", host, 0,
				 h = sse_test_hints(FI_TAGGED), &info),
			 -FI_ENODATA);
	fi_freeinfo(h);
}

/* What fabtests' getinfo_test checks: a source address for every
 * combination of node, service and FI_SOURCE, and a destination too for
 * node and service without FI_SOURCE. */
static void test_getinfo_src_addr(void **state)
{
	static const struct {
		const char *node, *service;
		uint64_t flags;
		bool dest;
	} c[] = {
		{ NULL, NULL, 0, false },
		{ "localhost", NULL, FI_SOURCE, false },
		{ NULL, "9228", FI_SOURCE, false },
		{ "localhost", "9228", FI_SOURCE, false },
		{ "localhost", "9228", 0, true },
	};
	struct fi_info *info, *fi;
	size_t i;
	int hinted;

	for (hinted = 0; hinted < 2; hinted++) {
		for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			struct fi_info *h = hinted ?
				sse_test_hints(FI_MSG) : NULL;

			assert_fi_ok(getinfo(FI_VERSION(1, 17), c[i].node,
					     c[i].service, c[i].flags, h,
					     &info));
			for (fi = info; fi; fi = fi->next) {
				assert_non_null(fi->src_addr);
				assert_int_equal(fi->src_addrlen,
						 sizeof(struct fi_sse_addr));
				if (c[i].dest) {
					assert_non_null(fi->dest_addr);
					assert_int_equal(fi->dest_addrlen,
						sizeof(struct fi_sse_addr));
				} else {
					assert_null(fi->dest_addr);
				}
			}
			fi_freeinfo(info);
			fi_freeinfo(h);
		}
	}
}

/* fi_pingpong hands the peer's fi_getname() over as hints->dest_addr. */
static void test_getinfo_hint_addresses(void **state)
{
	struct fi_info *h, *info;
	struct fi_sse_addr a;
	uint32_t id;

	get_fabric_id(&id);
	a.fabric_id = id;
	a.addr = (2u << 8) | 3;
	h = sse_test_hints(FI_TAGGED);
	h->addr_format = FI_ADDR_SLINGSHOT_EMU;
	h->dest_addr = malloc(sizeof(a));
	memcpy(h->dest_addr, &a, sizeof(a));
	h->dest_addrlen = sizeof(a);
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_int_equal(info->dest_addrlen, sizeof(a));
	assert_memory_equal(info->dest_addr, &a, sizeof(a));
	fi_freeinfo(info);

	h = sse_test_hints(FI_TAGGED);
	h->src_addr = malloc(4);
	memset(h->src_addr, 0, 4);
	h->src_addrlen = 4;
	expect_nodata(h);

	a.fabric_id = id + 1;
	h = sse_test_hints(FI_TAGGED);
	h->src_addr = malloc(sizeof(a));
	memcpy(h->src_addr, &a, sizeof(a));
	h->src_addrlen = sizeof(a);
	expect_nodata(h);
}

static void test_getinfo_fabric_name(void **state)
{
	struct fi_info *h = sse_test_hints(FI_TAGGED), *info;

	/* A fabric that does not exist is not offered (the private store
	 * has only this process's own) ... */
	h->fabric_attr->name = strdup("another-fabric");
	expect_nodata(h);

	/* ... this process's own fabric is, by name too. */
	h = sse_test_hints(FI_TAGGED);
	h->fabric_attr->name = strdup(getenv("FI_SLINGSHOT_EMU_FABRIC"));
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	assert_string_equal(info->fabric_attr->name,
			    getenv("FI_SLINGSHOT_EMU_FABRIC"));
	assert_string_equal(info->fabric_attr->prov_name, SSE_TEST_PROV);
	fi_freeinfo(info);

	h = sse_test_hints(FI_TAGGED);
	h->domain_attr->name = strdup("sse0");
	info = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, h);
	fi_freeinfo(info);
}

/* The returned info must survive fi_dupinfo/fi_freeinfo and be reusable
 * as hints (as Open MPI does). */
static void test_getinfo_roundtrip(void **state)
{
	struct fi_info *info, *dup, *again;

	info = expect_one(FI_VERSION(1, 17), "localhost", "1", 0,
			  sse_test_hints(FI_MSG | FI_TAGGED));
	dup = fi_dupinfo(info);
	assert_non_null(dup);
	free(dup->fabric_attr->prov_name);
	dup->fabric_attr->prov_name = strdup(SSE_TEST_PROV);
	again = expect_one(FI_VERSION(1, 17), NULL, NULL, 0, dup);
	assert_int_equal(again->caps, info->caps);
	fi_freeinfo(again);
	fi_freeinfo(info);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getinfo_no_hints),
		cmocka_unit_test(test_getinfo_ompi_mtl_hints),
		cmocka_unit_test(test_getinfo_ompi_btl_hints),
		cmocka_unit_test(test_getinfo_unsupported),
		cmocka_unit_test(test_getinfo_trim_and_copy),
		cmocka_unit_test(test_getinfo_mr_mode),
		cmocka_unit_test(test_getinfo_node_service),
		cmocka_unit_test(test_getinfo_src_addr),
		cmocka_unit_test(test_getinfo_hint_addresses),
		cmocka_unit_test(test_getinfo_fabric_name),
		cmocka_unit_test(test_getinfo_roundtrip),
	};

	sse_test_init("private", "getinfo");
	return cmocka_run_group_tests_name("getinfo", tests, NULL, NULL);
}
