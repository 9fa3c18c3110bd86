/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_attr.c: the provider's attributes (the one fi_info it offers before
 * hints trim it), traffic-class mapping and the address syntax.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "sse.h"

/*
 * The fi_info offered for @type: FI_EP_RDM (everything the provider does:
 * two-sided messages, tagged messages, RMA and atomics) or FI_EP_DGRAM
 * (untagged messages up to the eager limit, the same delivery underneath:
 * datagrams are not lost, but nothing promises it).
 * Values that the hints may lower or choose among (threading, progress,
 * av_type) are the defaults returned when the hints leave them unset; the
 * ranking checks in sse_info.c know what the provider can really do.
 */
struct fi_info *sse_info_alloc(const char *fabric_name,
			       enum fi_ep_type type)
{
	struct fi_info *info = fi_allocinfo();

	if (!info)
		return NULL;

	info->caps = SSE_CAPS;
	info->mode = 0;
	info->addr_format = FI_ADDR_SLINGSHOT_EMU;

	info->tx_attr->caps = SSE_TX_CAPS;
	info->tx_attr->mode = 0;
	info->tx_attr->op_flags = FI_COMPLETION;
	info->tx_attr->msg_order = SSE_MSG_ORDER;
	info->tx_attr->comp_order = SSE_COMP_ORDER;
	info->tx_attr->inject_size = SSE_INJECT_SIZE;
	info->tx_attr->size = sse_env.tx_size;
	info->tx_attr->iov_limit = SSE_IOV_LIMIT;
	info->tx_attr->rma_iov_limit = SSE_IOV_LIMIT;
	info->tx_attr->tclass = FI_TC_UNSPEC;

	info->rx_attr->caps = SSE_RX_CAPS;
	info->rx_attr->mode = 0;
	info->rx_attr->op_flags = FI_COMPLETION;
	info->rx_attr->msg_order = SSE_MSG_ORDER;
	info->rx_attr->comp_order = SSE_COMP_ORDER;
	info->rx_attr->total_buffered_recv = 0;
	info->rx_attr->size = sse_env.rx_size;
	info->rx_attr->iov_limit = SSE_IOV_LIMIT;

	info->ep_attr->type = FI_EP_RDM;
	info->ep_attr->protocol = FI_PROTO_UNSPEC;
	info->ep_attr->protocol_version = 1;
	info->ep_attr->max_msg_size = SSE_MAX_MSG_SIZE;
	info->ep_attr->msg_prefix_size = 0;
	/* RMA and atomic order holds at any size (see SSE_RMA_ORDER). */
	info->ep_attr->max_order_raw_size = SSE_MAX_MSG_SIZE;
	info->ep_attr->max_order_war_size = SSE_MAX_MSG_SIZE;
	info->ep_attr->max_order_waw_size = SSE_MAX_MSG_SIZE;
	info->ep_attr->mem_tag_format = SSE_MEM_TAG_FORMAT;
	info->ep_attr->tx_ctx_cnt = 1;
	info->ep_attr->rx_ctx_cnt = 1;
	info->ep_attr->auth_key_size = 0;

	info->domain_attr->name = strdup(SSE_DOMAIN_NAME);
	info->domain_attr->threading = FI_THREAD_SAFE;
	info->domain_attr->control_progress = FI_PROGRESS_AUTO;
	info->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	info->domain_attr->resource_mgmt = FI_RM_ENABLED;
	info->domain_attr->av_type = FI_AV_UNSPEC;
	/* Nothing is required: provider keys and virtual addresses are used
	 * when the application accepts them (see sse_info.c). */
	info->domain_attr->mr_mode = SSE_MR_MODE_OPTIONAL | FI_MR_BASIC |
				     FI_MR_SCALABLE;
	info->domain_attr->mr_key_size = sizeof(uint64_t);
	info->domain_attr->cq_data_size = SSE_CQ_DATA_SIZE;
	info->domain_attr->cq_cnt = SSE_MAX_CQ_CNT;
	info->domain_attr->ep_cnt = SSE_MAX_EP_CNT;
	info->domain_attr->tx_ctx_cnt = SSE_MAX_EP_CNT;
	info->domain_attr->rx_ctx_cnt = SSE_MAX_EP_CNT;
	info->domain_attr->max_ep_tx_ctx = 1;
	info->domain_attr->max_ep_rx_ctx = 1;
	info->domain_attr->max_ep_stx_ctx = 0;
	info->domain_attr->max_ep_srx_ctx = 0;
	info->domain_attr->cntr_cnt = SSE_MAX_CNTR_CNT;
	info->domain_attr->mr_iov_limit = SSE_IOV_LIMIT;
	info->domain_attr->caps = SSE_DOM_CAPS;
	info->domain_attr->mode = 0;
	info->domain_attr->max_err_data = sizeof(struct fi_sse_addr);
	info->domain_attr->mr_cnt = SSE_MAX_MR_CNT;
	info->domain_attr->tclass = FI_TC_UNSPEC;

	info->fabric_attr->name = strdup(fabric_name);
	info->fabric_attr->prov_name = NULL;	/* the core fills it in */
	info->fabric_attr->prov_version = SSE_PROV_VERSION;
	info->fabric_attr->api_version = SSE_FI_VERSION;

	if (type == FI_EP_DGRAM) {
		info->caps &= SSE_DGRAM_CAPS;
		info->tx_attr->caps &= SSE_DGRAM_CAPS;
		info->rx_attr->caps &= SSE_DGRAM_CAPS;
		info->ep_attr->type = FI_EP_DGRAM;
		info->ep_attr->max_msg_size = sse_env.eager_max;
		info->ep_attr->mem_tag_format = 0;
		info->tx_attr->rma_iov_limit = 0;
		/* no RMA on datagrams: message order only */
		info->tx_attr->msg_order = FI_ORDER_SAS;
		info->rx_attr->msg_order = FI_ORDER_SAS;
		info->ep_attr->max_order_raw_size = 0;
		info->ep_attr->max_order_war_size = 0;
		info->ep_attr->max_order_waw_size = 0;
	}

	if (!info->domain_attr->name || !info->fabric_attr->name) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

/* FI_TC_* labels and the class names of the fabric's table they select. */
static const struct {
	uint32_t tc;
	const char *name;
} sse_tc_names[] = {
	{ FI_TC_DEDICATED_ACCESS, "DEDICATED_ACCESS" },
	{ FI_TC_LOW_LATENCY, "LOW_LATENCY" },
	{ FI_TC_BULK_DATA, "BULK_DATA" },
	{ FI_TC_BEST_EFFORT, "BEST_EFFORT" },
};

/* Class names compare case-insensitively, '-' and '_' alike, with an
 * optional "FI_TC_" prefix. */
static bool sse_tc_name_eq(const char *a, const char *b)
{
	if (!strncasecmp(a, "FI_TC_", 6))
		a += 6;
	for (; *a && *b; a++, b++) {
		char ca = (*a == '-') ? '_' : *a;
		char cb = (*b == '-') ? '_' : *b;

		if ((ca | 0x20) != (cb | 0x20))
			return false;
	}
	return !*a && !*b;
}

static int sse_tclass_by_name(const struct ssemu_config *cfg,
			      const char *name, uint32_t *emu_tclass)
{
	uint32_t i;

	for (i = 0; i < cfg->ntclass && i < SSEMU_MAX_TCLASS; i++) {
		if (sse_tc_name_eq(name, cfg->tclass[i].name)) {
			*emu_tclass = i;
			return 0;
		}
	}
	return -FI_EINVAL;
}

/*
 * Map a libfabric traffic class onto the fabric's class table.
 * FI_TC_UNSPEC selects FI_SLINGSHOT_EMU_TCLASS when set, else the fabric's
 * default class.  @return 0, or -FI_EINVAL for a class the fabric lacks
 * (DSCP values, FI_TC_SCAVENGER, FI_TC_NETWORK_CTRL, or a table without it).
 * Whether the class is allowed is not looked at (sse_tclass_resolve).
 */
int sse_tclass_lookup(const struct ssemu_config *cfg, uint32_t tclass,
		      uint32_t *emu_tclass)
{
	size_t i;

	if (tclass == FI_TC_UNSPEC) {
		if (sse_env.tclass) {
			if (sse_tclass_by_name(cfg, sse_env.tclass,
					       emu_tclass)) {
				SSE_WARN(FI_LOG_CORE,
					 "FI_SLINGSHOT_EMU_TCLASS=%s: no such class in the fabric\n",
					 sse_env.tclass);
				return -FI_EINVAL;
			}
			return 0;
		}
		if (cfg->default_tclass >= cfg->ntclass)
			return -FI_EINVAL;
		*emu_tclass = cfg->default_tclass;
		return 0;
	}

	for (i = 0; i < ARRAY_SIZE(sse_tc_names); i++) {
		if (sse_tc_names[i].tc == tclass)
			return sse_tclass_by_name(cfg, sse_tc_names[i].name,
						  emu_tclass);
	}
	return -FI_EINVAL;
}

/*
 * The class the fabric's configuration lets an object use: as
 * sse_tclass_lookup, then a class marked "allowed = false" is refused
 * (tclass_denied = "error": -FI_EINVAL) or replaced by the default class
 * (tclass_denied = "warn"), with a warning naming the class and the
 * fabric configuration either way (once per class when it only warns).
 */
int sse_tclass_resolve(const struct ssemu_config *cfg, uint32_t tclass,
		       uint32_t *emu_tclass)
{
	static uint32_t warned;
	char asked[64], conf[320];
	uint32_t tc;
	int ret;

	ret = sse_tclass_lookup(cfg, tclass, &tc);
	if (ret)
		return ret;
	if (tc >= SSEMU_MAX_TCLASS || !cfg->tclass[tc].denied) {
		*emu_tclass = tc;
		return 0;
	}
	if (tclass == FI_TC_UNSPEC)
		snprintf(asked, sizeof(asked), "FI_SLINGSHOT_EMU_TCLASS=%s",
			 sse_env.tclass ? sse_env.tclass : "");
	else
		snprintf(asked, sizeof(asked), "tclass 0x%x", tclass);
	if (sse_env.config)
		snprintf(conf, sizeof(conf), "fabric configuration %s",
			 sse_env.config);
	else
		snprintf(conf, sizeof(conf), "fabric configuration preset %s",
			 cfg->preset);
	if (cfg->tclass_denied == SSEMU_TCLASS_DENIED_WARN) {
		if (!(__atomic_fetch_or(&warned, 1u << tc, __ATOMIC_RELAXED) &
		      1u << tc))
			SSE_WARN(FI_LOG_CORE,
				 "traffic class %s (%s) is not allowed by the %s: using the default class %s instead (tclass_denied = \"warn\")\n",
				 cfg->tclass[tc].name, asked, conf,
				 cfg->tclass[cfg->default_tclass %
					     SSEMU_MAX_TCLASS].name);
		*emu_tclass = cfg->default_tclass;
		return 0;
	}
	SSE_WARN(FI_LOG_CORE,
		 "traffic class %s (%s) is not allowed by the %s (tclass_denied = \"error\")\n",
		 cfg->tclass[tc].name, asked, conf);
	return -FI_EINVAL;
}

/* ------------------------------------------------------------------ */
/* Addresses                                                            */
/* ------------------------------------------------------------------ */

int sse_addr_check(const struct fi_sse_addr *addr, uint32_t fabric_id,
		   uint64_t nports)
{
	if (addr->fabric_id != fabric_id)
		return -FI_EADDRNOTAVAIL;
	if (addr->addr == FI_SSE_ADDR_ANY)
		return 0;
	if (FI_SSE_ADDR_PORT(addr) >= nports)
		return -FI_EADDRNOTAVAIL;
	return 0;
}

static bool sse_is_this_host(const char *node)
{
	char host[256];
	size_t n;

	if (!strcasecmp(node, "localhost") || !strcmp(node, "127.0.0.1") ||
	    !strcmp(node, "::1") || !strcmp(node, "0.0.0.0") ||
	    !strcmp(node, "::"))
		return true;
	if (gethostname(host, sizeof(host)))
		return false;
	host[sizeof(host) - 1] = '\0';
	if (!strcasecmp(node, host))
		return true;
	/* short host name against a fully qualified one, either way */
	n = strcspn(host, ".");
	if (!strncasecmp(node, host, n) &&
	    (node[n] == '\0' || node[n] == '.'))
		return true;
	return false;
}

/* "<port>" or "<port>:<pid>" (decimal). */
static int sse_parse_port_pid(const char *s, uint32_t *port, uint32_t *pid)
{
	unsigned long p, q = 0;
	char *end;

	if (!*s)
		return -FI_EINVAL;
	p = strtoul(s, &end, 10);
	if (end == s)
		return -FI_EINVAL;
	if (*end == ':' || *end == '.') {
		const char *t = end + 1;

		q = strtoul(t, &end, 10);
		if (end == t)
			return -FI_EINVAL;
	}
	if (*end || p >= SSEMU_MAX_PORTS || q > 0xff)
		return -FI_EINVAL;
	*port = (uint32_t)p;
	*pid = (uint32_t)q;
	return 0;
}

/*
 * Resolve a getinfo node/service pair.  Accepted nodes:
 *   "sse://<fabric id, hex>/<port>[:<pid>]"  (what fi_av_straddr prints)
 *   this host ("localhost", "127.0.0.1", its host name) or NULL
 * with service "<port>[:<pid>]".  A source address without a service
 * means any port; a destination without one means port 0, pid 0.
 * @return 0, or -FI_ENODATA for anything else (unknown host, another
 * fabric, a port the fabric does not have).
 */
int sse_addr_parse(const char *node, const char *service,
		   uint32_t fabric_id, uint64_t nports, bool src,
		   struct fi_sse_addr *addr)
{
	uint32_t port = 0, pid = 0;

	addr->fabric_id = fabric_id;

	if (node && !strncasecmp(node, "sse://", 6)) {
		const char *p = node + 6;
		unsigned long id;
		char *end;

		id = strtoul(p, &end, 16);
		if (end == p || *end != '/' || id != fabric_id)
			return -FI_ENODATA;
		p = end + 1;
		if (!strcmp(p, "any")) {
			addr->addr = FI_SSE_ADDR_ANY;
			return 0;
		}
		if (sse_parse_port_pid(p, &port, &pid))
			return -FI_ENODATA;
	} else {
		if (node && !sse_is_this_host(node))
			return -FI_ENODATA;
		if (!service || !*service) {
			addr->addr = src ? FI_SSE_ADDR_ANY : SSEMU_ADDR(0, 0);
			return 0;
		}
		if (sse_parse_port_pid(service, &port, &pid))
			return -FI_ENODATA;
	}
	if (port >= nports)
		return -FI_ENODATA;
	addr->addr = SSEMU_ADDR(port, pid);
	return 0;
}
