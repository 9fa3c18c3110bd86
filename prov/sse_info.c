/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_info.c: fi_getinfo.  libfabric's core does no hint checking for a
 * provider, so this file does what prov/util's ofi_check_info and
 * ofi_alter_info do for in-tree providers: reject hints the provider cannot
 * meet (-FI_ENODATA, with an FI_INFO line naming the hint), then trim the
 * answer to the hints, and resolve node/service into addresses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "sse.h"

/* Same sets as libfabric's util layer (include/ofi.h, v1.17). */
#define SSE_PRIMARY_CAPS						\
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |	\
	 FI_READ | FI_WRITE | FI_SEND | FI_COLLECTIVE | FI_NAMED_RX_CTX | \
	 FI_HMEM | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV |		\
	 FI_DIRECTED_RECV | FI_VARIABLE_MSG | FI_REMOTE_COMM | FI_LOCAL_COMM)
#define SSE_SECONDARY_CAPS						\
	(FI_TRIGGER | FI_FENCE | FI_RMA_PMEM | FI_MULTI_RECV |		\
	 FI_SOURCE | FI_RMA_EVENT | FI_SOURCE_ERR | FI_SHARED_AV)
/* Secondary caps that change behaviour: returned only when asked for.
 * FI_RMA_EVENT makes every RMA ask for a remote event at its target, which
 * a passive target (Open MPI's btl ofi) has no use for. */
#define SSE_OPT_IN_CAPS (FI_SOURCE_ERR | FI_RMA_EVENT | FI_TRIGGER)
#define SSE_MSG_DIR_CAPS (FI_SEND | FI_RECV)
#define SSE_RMA_DIR_CAPS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define SSE_IGNORED_TX_CAPS						\
	(FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV | \
	 FI_VARIABLE_MSG | FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT |	\
	 FI_SOURCE_ERR)
#define SSE_IGNORED_RX_CAPS						\
	(FI_READ | FI_WRITE | FI_SEND | FI_FENCE | FI_MULTICAST |	\
	 FI_NAMED_RX_CTX)
#define SSE_MR_RMA_TARGET						\
	(FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_RMA_EVENT)

#define SSE_NOMATCH(fmt, ...)						\
	SSE_INFO(FI_LOG_CORE, "hint not supported: " fmt, ##__VA_ARGS__)

static const char *sse_bits(char *buf, size_t len, const void *val,
			    enum fi_type type)
{
	return fi_tostr_r(buf, len, val, type);
}

static int sse_check_bits(uint64_t req, uint64_t have, const char *what,
			  enum fi_type type)
{
	char buf[512];
	uint64_t extra = req & ~have;

	if (!extra)
		return 0;
	SSE_NOMATCH("%s %s\n", what, sse_bits(buf, sizeof(buf), &extra, type));
	return -FI_ENODATA;
}

static int sse_check_size(size_t req, size_t have, const char *what)
{
	if (req <= have)
		return 0;
	SSE_NOMATCH("%s %zu (at most %zu)\n", what, req, have);
	return -FI_ENODATA;
}

/* Ranked levels: a hint may ask for less than the provider can do. */
static int sse_thread_level(enum fi_threading t)
{
	switch (t) {
	case FI_THREAD_SAFE: return 1;
	case FI_THREAD_FID: return 2;
	case FI_THREAD_ENDPOINT: return 3;
	case FI_THREAD_COMPLETION: return 4;
	case FI_THREAD_DOMAIN: return 5;
	case FI_THREAD_UNSPEC: return 6;
	default: return -1;
	}
}

static int sse_progress_level(enum fi_progress p)
{
	switch (p) {
	case FI_PROGRESS_AUTO: return 1;
	case FI_PROGRESS_MANUAL: return 2;
	case FI_PROGRESS_UNSPEC: return 3;
	default: return -1;
	}
}

static int sse_rm_level(enum fi_resource_mgmt rm)
{
	switch (rm) {
	case FI_RM_ENABLED: return 1;
	case FI_RM_DISABLED: return 2;
	case FI_RM_UNSPEC: return 3;
	default: return -1;
	}
}

static bool sse_rma_target_allowed(uint64_t caps)
{
	if (!(caps & (FI_RMA | FI_ATOMIC)))
		return false;
	if (!(caps & SSE_RMA_DIR_CAPS))
		return true;
	return (caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)) != 0;
}

/* MR mode bits that matter for the requested caps (util: ofi_cap_mr_mode). */
static int sse_cap_mr_mode(uint64_t caps, int mr_mode)
{
	if (!(caps & FI_HMEM))
		mr_mode &= ~FI_MR_HMEM;
	if (!sse_rma_target_allowed(caps)) {
		if (!(mr_mode & (FI_MR_LOCAL | FI_MR_HMEM)))
			return 0;
		mr_mode &= ~SSE_MR_RMA_TARGET;
	}
	return mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

static int sse_check_mr_mode(uint32_t version, int prov_mode,
			     const struct fi_info *hints)
{
	int user_mode = hints->domain_attr->mr_mode;

	if ((prov_mode & FI_MR_LOCAL) &&
	    !((hints->mode & FI_LOCAL_MR) || (user_mode & FI_MR_LOCAL)))
		goto nomatch;

	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		switch (user_mode) {
		case FI_MR_UNSPEC:
			if (!(prov_mode & (FI_MR_SCALABLE | FI_MR_BASIC)))
				goto nomatch;
			break;
		case FI_MR_BASIC:
		case FI_MR_SCALABLE:
			if (!(prov_mode & user_mode))
				goto nomatch;
			break;
		default:
			goto nomatch;
		}
		return 0;
	}

	if (user_mode & FI_MR_BASIC) {
		if ((user_mode & ~FI_MR_BASIC) || !(prov_mode & FI_MR_BASIC))
			goto nomatch;
	} else if (user_mode & FI_MR_SCALABLE) {
		if ((user_mode & ~FI_MR_SCALABLE) ||
		    !(prov_mode & FI_MR_SCALABLE))
			goto nomatch;
	} else {
		/* Optional bits are never required of the application. */
		prov_mode = sse_cap_mr_mode(hints->caps, prov_mode) &
			    ~SSE_MR_MODE_OPTIONAL;
		if (user_mode != FI_MR_UNSPEC &&
		    (user_mode & prov_mode) != prov_mode)
			goto nomatch;
	}
	return 0;
nomatch:
	SSE_NOMATCH("mr_mode 0x%x (provider needs 0x%x)\n", user_mode,
		    prov_mode);
	return -FI_ENODATA;
}

static int sse_check_domain(const struct fi_info *prov,
			    const struct fi_info *hints, uint32_t version,
			    const struct ssemu_config *cfg)
{
	const struct fi_domain_attr *pa = prov->domain_attr;
	const struct fi_domain_attr *ua = hints->domain_attr;
	uint32_t tc;
	int ret;

	if (ua->name && strcmp(ua->name, pa->name)) {
		SSE_NOMATCH("domain name %s (this provider has %s)\n",
			    ua->name, pa->name);
		return -FI_ENODATA;
	}
	/* The provider implements the most demanding level of each. */
	if (sse_thread_level(ua->threading) < 1) {
		SSE_NOMATCH("threading model %d\n", ua->threading);
		return -FI_ENODATA;
	}
	if (sse_progress_level(ua->control_progress) < 1 ||
	    sse_progress_level(ua->data_progress) < 1) {
		SSE_NOMATCH("progress model %d/%d\n", ua->control_progress,
			    ua->data_progress);
		return -FI_ENODATA;
	}
	if (sse_rm_level(ua->resource_mgmt) < 1) {
		SSE_NOMATCH("resource management %d\n", ua->resource_mgmt);
		return -FI_ENODATA;
	}
	if (ua->av_type != FI_AV_UNSPEC && ua->av_type != FI_AV_MAP &&
	    ua->av_type != FI_AV_TABLE) {
		SSE_NOMATCH("av_type %d\n", ua->av_type);
		return -FI_ENODATA;
	}
	ret = sse_check_size(ua->cq_data_size, pa->cq_data_size,
			     "cq_data_size");
	if (ret)
		return ret;
	ret = sse_check_mr_mode(version, pa->mr_mode, hints);
	if (ret)
		return ret;
	if (ua->max_ep_stx_ctx > pa->max_ep_stx_ctx ||
	    ua->max_ep_srx_ctx > pa->max_ep_srx_ctx) {
		SSE_NOMATCH("shared contexts\n");
		return -FI_ENODATA;
	}
	ret = sse_auth_hints_check(ua->auth_key, ua->auth_key_size,
				   "domain auth_key");
	if (ret)
		return ret;
	if (ua->tclass != FI_TC_UNSPEC && sse_tclass_lookup(cfg, ua->tclass,
							    &tc)) {
		SSE_NOMATCH("domain tclass 0x%x (not in the fabric's class table)\n",
			    ua->tclass);
		return -FI_ENODATA;
	}

	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return 0;

	if ((ret = sse_check_size(ua->cntr_cnt, pa->cntr_cnt, "cntr_cnt")) ||
	    (ret = sse_check_size(ua->mr_iov_limit, pa->mr_iov_limit,
				  "mr_iov_limit")) ||
	    (ret = sse_check_size(ua->max_err_data, pa->max_err_data,
				  "max_err_data")) ||
	    (ret = sse_check_size(ua->mr_cnt, pa->mr_cnt, "mr_cnt")))
		return ret;
	ret = sse_check_bits(ua->caps, pa->caps, "domain caps", FI_TYPE_CAPS);
	if (ret)
		return ret;
	return sse_check_bits(pa->mode & ~ua->mode, 0, "domain mode needs",
			      FI_TYPE_MODE);
}

static int sse_check_ep(const struct fi_info *prov,
			const struct fi_info *hints)
{
	const struct fi_ep_attr *pa = prov->ep_attr;
	const struct fi_ep_attr *ua = hints->ep_attr;
	int ret;

	if (ua->protocol != FI_PROTO_UNSPEC && ua->protocol != pa->protocol) {
		SSE_NOMATCH("protocol %u\n", ua->protocol);
		return -FI_ENODATA;
	}
	if (ua->protocol_version > pa->protocol_version) {
		SSE_NOMATCH("protocol_version %u\n", ua->protocol_version);
		return -FI_ENODATA;
	}
	ret = sse_check_size(ua->max_msg_size, pa->max_msg_size,
			     "max_msg_size");
	if (ret)
		return ret;
	if (ua->tx_ctx_cnt > prov->domain_attr->max_ep_tx_ctx ||
	    ua->rx_ctx_cnt > prov->domain_attr->max_ep_rx_ctx) {
		SSE_NOMATCH("tx/rx_ctx_cnt %zu/%zu (one context each, no shared or scalable contexts)\n",
			    ua->tx_ctx_cnt, ua->rx_ctx_cnt);
		return -FI_ENODATA;
	}
	ret = sse_auth_hints_check(ua->auth_key, ua->auth_key_size,
				   "ep auth_key");
	if (ret)
		return ret;
	if (ua->msg_prefix_size) {
		SSE_NOMATCH("msg_prefix_size %zu\n", ua->msg_prefix_size);
		return -FI_ENODATA;
	}
	if (hints->caps & (FI_RMA | FI_ATOMIC) &&
	    (ua->max_order_raw_size > pa->max_order_raw_size ||
	     ua->max_order_war_size > pa->max_order_war_size ||
	     ua->max_order_waw_size > pa->max_order_waw_size)) {
		SSE_NOMATCH("max_order_*_size\n");
		return -FI_ENODATA;
	}
	/* Every tag bit is usable: any mem_tag_format fits in 64 bits. */
	return 0;
}

static int sse_check_rx(const struct fi_info *prov,
			const struct fi_info *hints)
{
	const struct fi_rx_attr *pa = prov->rx_attr;
	const struct fi_rx_attr *ua = hints->rx_attr;
	uint64_t mode = ua->mode ? ua->mode : hints->mode;
	int ret;

	if ((ret = sse_check_bits(ua->caps & ~SSE_IGNORED_RX_CAPS, pa->caps,
				  "rx caps", FI_TYPE_CAPS)) ||
	    (ret = sse_check_bits(pa->mode & ~mode, 0, "rx mode needs",
				  FI_TYPE_MODE)) ||
	    (ret = sse_check_bits(ua->op_flags, SSE_RX_OP_FLAGS,
				  "rx op_flags", FI_TYPE_OP_FLAGS)) ||
	    (ret = sse_check_bits(ua->msg_order, pa->msg_order,
				  "rx msg_order", FI_TYPE_MSG_ORDER)) ||
	    (ret = sse_check_bits(ua->comp_order, pa->comp_order,
				  "rx comp_order", FI_TYPE_MSG_ORDER)) ||
	    (ret = sse_check_size(ua->size, pa->size, "rx size")) ||
	    (ret = sse_check_size(ua->iov_limit, pa->iov_limit,
				  "rx iov_limit")))
		return ret;
	return 0;
}

static int sse_check_tx(const struct fi_info *prov,
			const struct fi_info *hints,
			const struct ssemu_config *cfg)
{
	const struct fi_tx_attr *pa = prov->tx_attr;
	const struct fi_tx_attr *ua = hints->tx_attr;
	uint64_t mode = ua->mode ? ua->mode : hints->mode;
	uint32_t tc;
	int ret;

	if ((ret = sse_check_bits(ua->caps & ~SSE_IGNORED_TX_CAPS, pa->caps,
				  "tx caps", FI_TYPE_CAPS)) ||
	    (ret = sse_check_bits(pa->mode & ~mode, 0, "tx mode needs",
				  FI_TYPE_MODE)) ||
	    (ret = sse_check_bits(ua->op_flags, SSE_TX_OP_FLAGS,
				  "tx op_flags", FI_TYPE_OP_FLAGS)) ||
	    (ret = sse_check_bits(ua->msg_order, pa->msg_order,
				  "tx msg_order", FI_TYPE_MSG_ORDER)) ||
	    (ret = sse_check_bits(ua->comp_order, pa->comp_order,
				  "tx comp_order", FI_TYPE_MSG_ORDER)) ||
	    (ret = sse_check_size(ua->inject_size, pa->inject_size,
				  "inject_size")) ||
	    (ret = sse_check_size(ua->size, pa->size, "tx size")) ||
	    (ret = sse_check_size(ua->iov_limit, pa->iov_limit,
				  "tx iov_limit")) ||
	    (ret = sse_check_size(ua->rma_iov_limit, pa->rma_iov_limit,
				  "rma_iov_limit")))
		return ret;
	if (ua->tclass != FI_TC_UNSPEC && sse_tclass_lookup(cfg, ua->tclass,
							    &tc)) {
		SSE_NOMATCH("tx tclass 0x%x (not in the fabric's class table)\n",
			    ua->tclass);
		return -FI_ENODATA;
	}
	return 0;
}

static int sse_check_info(const struct fi_info *prov,
			  const struct fi_info *hints, uint32_t version,
			  const struct ssemu_config *cfg)
{
	int ret;

	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != prov->ep_attr->type) {
		SSE_NOMATCH("endpoint type %s (FI_EP_RDM and FI_EP_DGRAM only)\n",
			    fi_tostr(&hints->ep_attr->type, FI_TYPE_EP_TYPE));
		return -FI_ENODATA;
	}
	ret = sse_check_bits(hints->caps, prov->caps, "capabilities",
			     FI_TYPE_CAPS);
	if (ret)
		return ret;
	if (hints->addr_format != FI_FORMAT_UNSPEC &&
	    hints->addr_format != prov->addr_format) {
		SSE_NOMATCH("addr_format %u (FI_ADDR_SLINGSHOT_EMU only)\n",
			    hints->addr_format);
		return -FI_ENODATA;
	}
	if (hints->fabric_attr) {
		if (hints->fabric_attr->prov_version >
		    prov->fabric_attr->prov_version) {
			SSE_NOMATCH("prov_version 0x%x\n",
				    hints->fabric_attr->prov_version);
			return -FI_ENODATA;
		}
		if (FI_VERSION_LT(prov->fabric_attr->api_version,
				  hints->fabric_attr->api_version)) {
			SSE_NOMATCH("api_version 0x%x\n",
				    hints->fabric_attr->api_version);
			return -FI_ENODATA;
		}
	}
	if (hints->domain_attr &&
	    (ret = sse_check_domain(prov, hints, version, cfg)))
		return ret;
	if (hints->ep_attr && (ret = sse_check_ep(prov, hints)))
		return ret;
	if (hints->rx_attr && (ret = sse_check_rx(prov, hints)))
		return ret;
	if (hints->tx_attr && (ret = sse_check_tx(prov, hints, cfg)))
		return ret;
	return 0;
}

/* util: ofi_get_caps.  Primary caps come back exactly as requested. */
static uint64_t sse_get_caps(uint64_t info_caps, uint64_t hint_caps,
			     uint64_t attr_caps)
{
	uint64_t caps;

	if (!hint_caps)
		caps = (info_caps & attr_caps & SSE_PRIMARY_CAPS) |
		       (attr_caps & SSE_SECONDARY_CAPS & ~SSE_OPT_IN_CAPS);
	else
		caps = (hint_caps & SSE_PRIMARY_CAPS) |
		       (attr_caps & SSE_SECONDARY_CAPS &
			(~SSE_OPT_IN_CAPS | hint_caps));
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & SSE_MSG_DIR_CAPS))
		caps |= attr_caps & SSE_MSG_DIR_CAPS;
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & SSE_RMA_DIR_CAPS))
		caps |= attr_caps & SSE_RMA_DIR_CAPS;
	return caps;
}

static void sse_alter_info(struct fi_info *info, const struct fi_info *hints,
			   uint32_t version)
{
	struct fi_domain_attr *da = info->domain_attr;
	const struct fi_domain_attr *hda = hints ? hints->domain_attr : NULL;
	int hmr = hda ? hda->mr_mode : 0;

	if (hints) {
		info->caps = sse_get_caps(info->caps, hints->caps, info->caps);
		info->handle = hints->handle;
	} else {
		/* util: opt-in capabilities only when asked for */
		info->caps &= ~SSE_OPT_IN_CAPS;
		info->rx_attr->caps &= ~SSE_OPT_IN_CAPS;
		info->tx_attr->caps &= ~SSE_OPT_IN_CAPS;
	}

	if (hmr & (FI_MR_BASIC | FI_MR_SCALABLE)) {
		da->mr_mode = hmr;
	} else if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		da->mr_mode = FI_MR_BASIC;
	} else {
		/* The optional modes the application accepts are the ones
		 * the domain uses; without hints, all of them. */
		da->mr_mode &= ~(FI_MR_BASIC | FI_MR_SCALABLE);
		if (hda)
			da->mr_mode &= hmr;
	}

	da->caps = sse_get_caps(info->caps, hda ? hda->caps : 0, da->caps) &
		   SSE_DOM_CAPS;
	if (hda) {
		if (hda->threading)
			da->threading = hda->threading;
		if (hda->control_progress)
			da->control_progress = hda->control_progress;
		if (hda->data_progress)
			da->data_progress = hda->data_progress;
		if (hda->av_type)
			da->av_type = hda->av_type;
		if (hda->tclass)
			da->tclass = hda->tclass;
	}

	if (hints && hints->ep_attr) {
		if (hints->ep_attr->tx_ctx_cnt)
			info->ep_attr->tx_ctx_cnt = hints->ep_attr->tx_ctx_cnt;
		if (hints->ep_attr->rx_ctx_cnt)
			info->ep_attr->rx_ctx_cnt = hints->ep_attr->rx_ctx_cnt;
	}

	if (!hints)
		return;

	info->rx_attr->caps = sse_get_caps(info->caps, hints->rx_attr ?
					   hints->rx_attr->caps : 0,
					   info->rx_attr->caps) & SSE_RX_CAPS;
	if (hints->rx_attr) {
		info->rx_attr->op_flags = hints->rx_attr->op_flags;
		if (hints->rx_attr->size)
			info->rx_attr->size = hints->rx_attr->size;
		if (hints->rx_attr->iov_limit)
			info->rx_attr->iov_limit = hints->rx_attr->iov_limit;
	}

	/* transmit caps not named: those of the hints (FI_TRIGGER) */
	info->tx_attr->caps = sse_get_caps(info->caps,
					   hints->tx_attr &&
					   hints->tx_attr->caps ?
					   hints->tx_attr->caps : hints->caps,
					   info->tx_attr->caps) & SSE_TX_CAPS;
	if (hints->tx_attr) {
		info->tx_attr->op_flags = hints->tx_attr->op_flags;
		if (hints->tx_attr->inject_size)
			info->tx_attr->inject_size =
				hints->tx_attr->inject_size;
		if (hints->tx_attr->size)
			info->tx_attr->size = hints->tx_attr->size;
		if (hints->tx_attr->iov_limit)
			info->tx_attr->iov_limit = hints->tx_attr->iov_limit;
		if (hints->tx_attr->tclass)
			info->tx_attr->tclass = hints->tx_attr->tclass;
	}
}

static int sse_set_addr(void **dst, size_t *dstlen,
			const struct fi_sse_addr *addr)
{
	*dst = malloc(sizeof(*addr));
	if (!*dst)
		return -FI_ENOMEM;
	memcpy(*dst, addr, sizeof(*addr));
	*dstlen = sizeof(*addr);
	return 0;
}

static int sse_copy_hint_addr(void **dst, size_t *dstlen, const void *src,
			      size_t srclen, uint32_t fabric_id,
			      uint64_t nports, const char *what)
{
	struct fi_sse_addr addr;

	if (srclen != sizeof(addr)) {
		SSE_NOMATCH("%s of %zu bytes (addresses are %zu bytes)\n",
			    what, srclen, sizeof(addr));
		return -FI_ENODATA;
	}
	memcpy(&addr, src, sizeof(addr));
	if (sse_addr_check(&addr, fabric_id, nports)) {
		SSE_NOMATCH("%s %08x/%u:%u is not on fabric %08x\n", what,
			    addr.fabric_id, FI_SSE_ADDR_PORT(&addr),
			    FI_SSE_ADDR_PID(&addr), fabric_id);
		return -FI_ENODATA;
	}
	return sse_set_addr(dst, dstlen, &addr);
}

/* What node/service name: nothing, the source or the destination. */
enum sse_named { SSE_NAMED_NONE, SSE_NAMED_SRC, SSE_NAMED_DEST };

/*
 * fi_getinfo(3)'s rule: with FI_SOURCE (or a service and no node),
 * node/service name the source, otherwise the destination.  Resolved once
 * per fi_getinfo call (its warnings too), for every fi_info it returns.
 */
static int sse_resolve_node(const char *node, const char *service,
			    uint64_t flags, const char *fname,
			    uint32_t fabric_id, uint64_t nports,
			    enum sse_named *named, struct fi_sse_addr *addr)
{
	*named = SSE_NAMED_NONE;
	if ((flags & FI_SOURCE) || (!node && service)) {
		if (!node && !service)
			return 0;
		*named = SSE_NAMED_SRC;
		return sse_addr_parse(node, service, fname, fabric_id, nports,
				      true, addr);
	}
	if (!node)
		return 0;
	*named = SSE_NAMED_DEST;
	return sse_addr_parse(node, service, fname, fabric_id, nports, false,
			      addr);
}

/*
 * The addresses of one fi_info: what node/service named; the hints'
 * addresses fill what that leaves unset; and a source address is always
 * returned, "any port" when nothing names one (the endpoint's NIC is then
 * placed by policy).
 */
static int sse_info_addrs(struct fi_info *info, enum sse_named named,
			  const struct fi_sse_addr *naddr,
			  const struct fi_info *hints, uint32_t fabric_id,
			  uint64_t nports)
{
	struct fi_sse_addr addr;
	int ret;

	if (named == SSE_NAMED_SRC) {
		ret = sse_set_addr(&info->src_addr, &info->src_addrlen, naddr);
		if (ret)
			return ret;
	} else if (named == SSE_NAMED_DEST) {
		ret = sse_set_addr(&info->dest_addr, &info->dest_addrlen,
				   naddr);
		if (ret)
			return ret;
	}

	if (hints && hints->src_addr && !info->src_addr) {
		ret = sse_copy_hint_addr(&info->src_addr, &info->src_addrlen,
					 hints->src_addr, hints->src_addrlen,
					 fabric_id, nports, "src_addr");
		if (ret)
			return ret;
	}
	if (hints && hints->dest_addr && !info->dest_addr) {
		ret = sse_copy_hint_addr(&info->dest_addr,
					 &info->dest_addrlen,
					 hints->dest_addr, hints->dest_addrlen,
					 fabric_id, nports, "dest_addr");
		if (ret)
			return ret;
	}
	if (!info->src_addr) {
		addr.fabric_id = fabric_id;
		addr.addr = FI_SSE_ADDR_ANY;
		ret = sse_set_addr(&info->src_addr, &info->src_addrlen,
				   &addr);
		if (ret)
			return ret;
	}
	return 0;
}

int sse_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct ssemu_config cfg;
	enum ssemu_store store;
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM };
	const char *fname = sse_default_fabric_name();
	struct fi_info *fi, **tail = info;
	size_t t;
	uint32_t fabric_id, tc, epcnt;
	uint64_t nports;
	enum sse_named named;
	struct fi_sse_addr naddr;
	int ret;

	*info = NULL;
	/* A utility provider (ofi_rxd over FI_EP_DGRAM) asking to layer over
	 * us: no, as the core says no for cxi and shm -- the native RDM
	 * endpoint is the one to use, and an RxD entry listed ahead of it
	 * would be what FI_PROVIDER=slingshot_emu applications pick. */
	if (flags & SSE_OFI_CORE_PROV_ONLY) {
		SSE_NOMATCH("a utility provider layering over slingshot_emu\n");
		return -FI_ENODATA;
	}
	if (sse_env_store(&store) || sse_env_config(&cfg))
		return -FI_ENODATA;
	/* A bad FI_SLINGSHOT_EMU_TCLASS is reported here, not at fi_domain. */
	if (sse_tclass_lookup(&cfg, FI_TC_UNSPEC, &tc))
		return -FI_ENODATA;

	/* Other fabrics than this process's own are offered if they exist. */
	if (hints && hints->fabric_attr && hints->fabric_attr->name) {
		fname = hints->fabric_attr->name;
		if (sse_fabric_exists(store, fname)) {
			SSE_NOMATCH("fabric name \"%s\": no such fabric (this process's own is %s)\n",
				    fname, sse_default_fabric_name());
			return -FI_ENODATA;
		}
	}
	fabric_id = sse_fabric_id(store, fname);
	nports = ssemu_config_nports(&cfg);
	ret = sse_resolve_node(node, service, flags, fname, fabric_id, nports,
			       &named, &naddr);
	if (ret)
		return ret;

	/* One entry per endpoint type, RDM first; the hints' type picks. */
	ret = -FI_ENODATA;
	for (t = 0; t < ARRAY_SIZE(types); t++) {
		if (hints && hints->ep_attr &&
		    hints->ep_attr->type != FI_EP_UNSPEC &&
		    hints->ep_attr->type != types[t])
			continue;
		fi = sse_info_alloc(fname, types[t]);
		if (!fi) {
			ret = -FI_ENOMEM;
			goto err;
		}
		/* Endpoints are pids on the process's one NIC (and slots
		 * of the fabric's pool, which may be smaller). */
		epcnt = cfg.max_eps && cfg.max_eps < cfg.eps_per_nic ?
			cfg.max_eps : cfg.eps_per_nic;
		fi->domain_attr->ep_cnt = epcnt;
		fi->domain_attr->tx_ctx_cnt = epcnt;
		fi->domain_attr->rx_ctx_cnt = epcnt;

		if (hints) {
			ret = sse_check_info(fi, hints, version, &cfg);
			if (ret) {
				fi_freeinfo(fi);
				continue;
			}
		}
		sse_alter_info(fi, hints, version);
		ret = sse_auth_info_apply(fi, hints);
		if (!ret)
			ret = sse_info_addrs(fi, named, &naddr, hints,
					     fabric_id, nports);
		if (ret) {
			fi_freeinfo(fi);
			goto err;
		}
		*tail = fi;
		tail = &fi->next;
	}
	if (!*info) {
		if (hints && hints->ep_attr &&
		    hints->ep_attr->type != FI_EP_UNSPEC &&
		    hints->ep_attr->type != FI_EP_RDM &&
		    hints->ep_attr->type != FI_EP_DGRAM)
			SSE_NOMATCH("endpoint type %s (FI_EP_RDM and FI_EP_DGRAM only)\n",
				    fi_tostr(&hints->ep_attr->type,
					     FI_TYPE_EP_TYPE));
		return ret ? ret : -FI_ENODATA;
	}
	return 0;
err:
	fi_freeinfo(*info);
	*info = NULL;
	return ret;
}
