/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_attr.c: the provider's attributes (the one fi_info it offers before
 * hints trim it), traffic-class mapping and the address syntax.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>
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
	info->ep_attr->auth_key_size = SSE_AUTH_KEY_SIZE;

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
	info->domain_attr->auth_key_size = SSE_AUTH_KEY_SIZE;

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
	if (addr->addr == FI_SSE_ADDR_ANY || FI_SSE_ADDR_IS_SVC(addr))
		return 0;
	if (FI_SSE_ADDR_PORT(addr) >= nports)
		return -FI_EADDRNOTAVAIL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Service names this process has seen, by key                         */
/* ------------------------------------------------------------------ */

/*
 * Addresses carry a service's 24-bit key, not its name.  The names that
 * fi_getinfo and fi_av_insertsvc were given are kept here, so that
 * fi_endpoint can bind the service by name and log lines can say which
 * service they mean.  A name forgotten (the table is full and reused
 * round-robin) is bound as "#<key>"; resolution is by key either way.
 */
#define SSE_SVC_NAMES 256

static struct {
	uint32_t key;
	char name[SSEMU_SVC_NAME_MAX];
} sse_svc_names[SSE_SVC_NAMES];
static unsigned sse_svc_next;
static pthread_mutex_t sse_svc_lock = PTHREAD_MUTEX_INITIALIZER;

int sse_svc_remember(const char *name, uint32_t *key)
{
	size_t len = strlen(name);
	uint32_t k;
	unsigned i;
	int ret = 0;

	if (!len || len >= SSEMU_SVC_NAME_MAX) {
		SSE_WARN(FI_LOG_CORE,
			 "service \"%s\": service names are 1 to %d bytes\n",
			 name, SSEMU_SVC_NAME_MAX - 1);
		return -FI_ENODATA;
	}
	k = ssemu_svc_key(name);
	pthread_mutex_lock(&sse_svc_lock);
	for (i = 0; i < SSE_SVC_NAMES; i++) {
		if (sse_svc_names[i].key != k)
			continue;
		if (strcmp(sse_svc_names[i].name, name)) {
			SSE_WARN(FI_LOG_CORE,
				 "service \"%s\" has the key (%06x) of service \"%s\", which this process already uses: use another name\n",
				 name, k, sse_svc_names[i].name);
			ret = -FI_ENODATA;
		}
		goto out;
	}
	i = sse_svc_next++ % SSE_SVC_NAMES;
	sse_svc_names[i].key = k;
	memcpy(sse_svc_names[i].name, name, len + 1);
out:
	pthread_mutex_unlock(&sse_svc_lock);
	if (!ret)
		*key = k;
	return ret;
}

/* The name of the service with @key, as this process knows it, or
 * "#<key>" in @buf. */
const char *sse_svc_name(uint32_t key, char *buf, size_t len)
{
	unsigned i;

	pthread_mutex_lock(&sse_svc_lock);
	for (i = 0; i < SSE_SVC_NAMES; i++) {
		if (sse_svc_names[i].key == key && key) {
			snprintf(buf, len, "%s", sse_svc_names[i].name);
			pthread_mutex_unlock(&sse_svc_lock);
			return buf;
		}
	}
	pthread_mutex_unlock(&sse_svc_lock);
	snprintf(buf, len, "#%06x", key);
	return buf;
}

static uint64_t sse_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t sse_svc_deadline(void)
{
	return sse_mono_ms() + (uint64_t)sse_env.service_wait;
}

/*
 * The endpoint address the service with @key is bound to, waiting until
 * @deadline (sse_svc_deadline: FI_SLINGSHOT_EMU_SERVICE_WAIT ms from the
 * call that inserts it) for it to be bound: a client started right after
 * its server may get here before the server's fi_endpoint.
 * @return 0, or -FI_EADDRNOTAVAIL (with a warning) when nothing bound it
 * in time.
 */
int sse_svc_resolve(struct ssemu_fabric *fabric, uint32_t key,
		    uint64_t deadline, ssemu_addr_t *addr)
{
	struct ssemu_svc_info si;
	char name[SSEMU_SVC_NAME_MAX + 8];
	unsigned nap_us = 200;
	int ret;

	sse_svc_name(key, name, sizeof(name));
	for (;;) {
		ret = ssemu_svc_lookup(fabric, NULL, key, &si);
		if (!ret)
			break;
		if (ret != -ENOENT || sse_mono_ms() >= deadline) {
			SSE_WARN(FI_LOG_AV,
				 "service \"%s\" is not bound by any endpoint of the fabric (FI_SLINGSHOT_EMU_SERVICE_WAIT=%d ms): is its server running, on this fabric?\n",
				 name, sse_env.service_wait);
			return -FI_EADDRNOTAVAIL;
		}
		usleep(nap_us);
		if (nap_us < 5000)
			nap_us *= 2;
	}
	if (name[0] != '#' && si.name[0] != '#' && strcmp(name, si.name)) {
		SSE_WARN(FI_LOG_AV,
			 "service \"%s\": its key %06x is bound to service \"%s\", a different name\n",
			 name, key, si.name);
		return -FI_EADDRNOTAVAIL;
	}
	SSE_INFO(FI_LOG_AV, "service \"%s\" is endpoint %u:%u (process %d)\n",
		 si.name, SSEMU_ADDR_PORT(si.addr), SSEMU_ADDR_PID(si.addr),
		 si.pid);
	*addr = si.addr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Nodes                                                                */
/* ------------------------------------------------------------------ */

/* Is numeric @node one of this host's addresses (loopback included)? */
static bool sse_is_local_ip(const char *node)
{
	struct in_addr a4;
	struct in6_addr a6;
	struct ifaddrs *ifs, *i;
	bool v4, found = false;

	v4 = inet_pton(AF_INET, node, &a4) == 1;
	if (!v4 && inet_pton(AF_INET6, node, &a6) != 1)
		return false;
	if (v4 && ((ntohl(a4.s_addr) >> 24) == 127 || a4.s_addr == INADDR_ANY))
		return true;
	if (!v4 && (IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6)))
		return true;
	if (getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		const struct sockaddr_in *s4 = (const void *)i->ifa_addr;
		const struct sockaddr_in6 *s6 = (const void *)i->ifa_addr;

		if (!i->ifa_addr)
			continue;
		if (v4 && i->ifa_addr->sa_family == AF_INET)
			found = !memcmp(&s4->sin_addr, &a4, sizeof(a4));
		else if (!v4 && i->ifa_addr->sa_family == AF_INET6)
			found = !memcmp(&s6->sin6_addr, &a6, sizeof(a6));
	}
	freeifaddrs(ifs);
	return found;
}

static bool sse_is_this_host(const char *node, const char *fabric_name)
{
	char host[256];
	size_t n;

	if (!strcasecmp(node, "localhost") ||
	    !strcasecmp(node, "localhost.localdomain") ||
	    !strcasecmp(node, "ip6-localhost") ||
	    !strcasecmp(node, "ip6-loopback"))
		return true;
	if (fabric_name && !strcmp(node, fabric_name))
		return true;
	if (sse_is_local_ip(node))
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

#define SSE_ADDR_WARN(node, service, fmt, ...)				\
	SSE_WARN(FI_LOG_CORE, "node \"%s\" service \"%s\": " fmt,	\
		 (node) ? (node) : "", (service) ? (service) : "",	\
		 ##__VA_ARGS__)

/* The part after "sse://<fabric id>/": "any", "<port>[:<pid>]",
 * "svc:<name>" or "svc#<key, hex>". */
static int sse_parse_sse_url(const char *node, const char *p, bool src,
			     uint64_t nports, struct fi_sse_addr *addr)
{
	uint32_t port, pid, key;
	unsigned long k;
	char *end;
	int ret;

	if (!strcmp(p, "any")) {
		if (!src) {
			SSE_ADDR_WARN(node, NULL,
				      "\"any\" is a source address only\n");
			return -FI_ENODATA;
		}
		addr->addr = FI_SSE_ADDR_ANY;
		return 0;
	}
	if (!strncmp(p, "svc:", 4)) {
		ret = sse_svc_remember(p + 4, &key);
		if (ret)
			return ret;
		addr->addr = FI_SSE_ADDR_SVC_BASE | key;
		return 0;
	}
	if (!strncmp(p, "svc#", 4)) {
		k = strtoul(p + 4, &end, 16);
		if (end == p + 4 || *end || !k || k >= SSEMU_SVC_KEY_MASK) {
			SSE_ADDR_WARN(node, NULL, "not a service key\n");
			return -FI_ENODATA;
		}
		addr->addr = FI_SSE_ADDR_SVC_BASE | (uint32_t)k;
		return 0;
	}
	if (sse_parse_port_pid(p, &port, &pid)) {
		SSE_ADDR_WARN(node, NULL,
			      "expected sse://<fabric>/<port>[:<pid>], .../any, .../svc:<name> or .../svc#<key>\n");
		return -FI_ENODATA;
	}
	if (port >= nports) {
		SSE_ADDR_WARN(node, NULL, "the fabric has %llu ports\n",
			      (unsigned long long)nports);
		return -FI_ENODATA;
	}
	addr->addr = SSEMU_ADDR(port, pid);
	return 0;
}

/*
 * Resolve a getinfo (or fi_av_insertsvc) node/service pair:
 *   node "sse://<fabric id, hex>/..." (what fi_av_straddr prints), with no
 *     service: that exact address;
 *   node NULL, any name or address of this host, or the fabric's name,
 *     with a service: the service's address (a reference the directory
 *     resolves, see FI_SSE_ADDR_IS_SVC); without a service: any port for
 *     a source, port 0 pid 0 for a destination.
 * @return 0, or -FI_ENODATA with a warning saying why.
 */
int sse_addr_parse(const char *node, const char *service,
		   const char *fabric_name, uint32_t fabric_id,
		   uint64_t nports, bool src, struct fi_sse_addr *addr)
{
	uint32_t key;
	int ret;

	addr->fabric_id = fabric_id;

	if (node && !strncasecmp(node, "sse://", 6)) {
		const char *p = node + 6;
		unsigned long id;
		char *end;

		id = strtoul(p, &end, 16);
		if (end == p || *end != '/') {
			SSE_ADDR_WARN(node, service,
				      "expected sse://<fabric id>/...\n");
			return -FI_ENODATA;
		}
		if (id != fabric_id) {
			SSE_ADDR_WARN(node, service,
				      "fabric %08lx is not this one (%08x)\n",
				      id, fabric_id);
			return -FI_ENODATA;
		}
		if (service && *service) {
			SSE_ADDR_WARN(node, service,
				      "an sse:// node is a whole address: it takes no service\n");
			return -FI_ENODATA;
		}
		return sse_parse_sse_url(node, end + 1, src, nports, addr);
	}
	if (node && !sse_is_this_host(node, fabric_name)) {
		SSE_ADDR_WARN(node, service,
			      "not this host (the fabric is reached from this host only: use localhost, one of its names or addresses, the fabric's name \"%s\", or sse://%08x/<port>[:<pid>])\n",
			      fabric_name ? fabric_name : "", fabric_id);
		return -FI_ENODATA;
	}
	if (!service || !*service) {
		addr->addr = src ? FI_SSE_ADDR_ANY : SSEMU_ADDR(0, 0);
		return 0;
	}
	ret = sse_svc_remember(service, &key);
	if (ret)
		return ret;
	addr->addr = FI_SSE_ADDR_SVC_BASE | key;
	return 0;
}
