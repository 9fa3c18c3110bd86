/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation, the provider's side: the service and VNI a domain and its
 * endpoints use, and the classes a job may use.
 *
 * Where they come from, first match wins (as the cxi provider does it):
 *   - an auth key in fi_ep_attr (the endpoint) or fi_domain_attr (the
 *     domain and its endpoints): struct fi_sse_auth_key, the layout of
 *     struct cxi_auth_key;
 *   - the launcher's variables (Slurm's switch/hpe_slingshot, Flux's
 *     shell plugin, slingshot-emu run/mpirun --vni/--service):
 *     SLINGSHOT_VNIS, the job step's VNI first (the only one used here)
 *     then an inter-step one; SLINGSHOT_SVC_IDS, a service id per device
 *     of SLINGSHOT_DEVICES, in that order (this provider's device is its
 *     domain, SSE_DOMAIN_NAME);
 *   - the fabric's default service and VNI.
 * SLINGSHOT_TCS is a hexadecimal mask of the Slingshot classes the job may
 * use (0x1 DEDICATED_ACCESS, 0x2 LOW_LATENCY, 0x4 BULK_DATA, 0x8
 * BEST_EFFORT).  A bad value is an error (fi_domain fails, the variable
 * and its problem logged), never a silent fallback: a job that was given
 * a VNI must not end up on another one.
 *
 * Whether this user may use the service and VNI is the emulator's
 * decision (ssemu_auth_check, from the effective uid), not this file's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "sse.h"

/* The variables' values: 0, or -FI_EINVAL (@why says which and why). */
static int auth_env(struct sse_auth *a, bool *set, char *why, size_t len)
{
	const char *vnis = getenv("SLINGSHOT_VNIS");
	const char *ids = getenv("SLINGSHOT_SVC_IDS");
	const char *devs = getenv("SLINGSHOT_DEVICES");
	const char *tcs = getenv("SLINGSHOT_TCS");
	uint16_t v[SSEMU_SERVICE_VNIS];
	char err[160], *end;
	unsigned long x;
	int n, ndev = 0, mine = -1, i;
	const char *p;

	*set = false;
	if (tcs) {
		errno = 0;
		x = strtoul(tcs, &end, 16);
		if (!*tcs || *end || errno || !x || x > 0xf || *tcs == '-') {
			snprintf(why, len, "SLINGSHOT_TCS=\"%s\": not a mask of "
				 "classes (hexadecimal, 0x1 to 0xf)", tcs);
			return -FI_EINVAL;
		}
		a->tcs = (uint32_t)x;
	}
	if (!vnis)
		return 0;
	n = ssemu_parse_vnis(vnis, v, SSEMU_SERVICE_VNIS, err, sizeof(err));
	if (n < 0) {
		snprintf(why, len, "SLINGSHOT_VNIS: %s", err);
		return -FI_EINVAL;
	}
	*set = true;
	a->vni = v[0];
	a->svc_id = SSEMU_SVC_ID_DEFAULT;
	if (!ids)
		return 0;
	if (devs) {
		/* this provider's device among the launcher's */
		for (p = devs; *p; ndev++) {
			size_t l = strcspn(p, ",");

			if (!l) {
				snprintf(why, len, "SLINGSHOT_DEVICES=\"%s\": "
					 "an empty device name", devs);
				return -FI_EINVAL;
			}
			if (mine < 0 && l == strlen(SSE_DOMAIN_NAME) &&
			    !strncmp(p, SSE_DOMAIN_NAME, l))
				mine = ndev;
			p += l;
			if (*p == ',' && !*++p) {
				snprintf(why, len, "SLINGSHOT_DEVICES=\"%s\": "
					 "an empty device name", devs);
				return -FI_EINVAL;
			}
		}
		if (!ndev) {
			snprintf(why, len, "SLINGSHOT_DEVICES is empty");
			return -FI_EINVAL;
		}
		if (mine < 0) {
			snprintf(why, len, "SLINGSHOT_DEVICES=\"%s\" does not "
				 "name this provider's device %s", devs,
				 SSE_DOMAIN_NAME);
			return -FI_EINVAL;
		}
		if (ndev > 1)
			SSE_WARN(FI_LOG_DOMAIN,
				 "SLINGSHOT_DEVICES=\"%s\" names %d devices; a process has one NIC here (%s), the others are not used\n",
				 devs, ndev, SSE_DOMAIN_NAME);
	} else {
		mine = 0;
	}
	/* the service id at the device's position */
	for (p = ids, i = 0;; i++) {
		if (*p < '0' || *p > '9') {
			snprintf(why, len, "SLINGSHOT_SVC_IDS=\"%s\": not a "
				 "list of numbers", ids);
			return -FI_EINVAL;
		}
		errno = 0;
		x = strtoul(p, &end, 10);
		if (errno || !x || x > UINT32_MAX ||
		    (*end && (*end != ',' || !end[1]))) {
			snprintf(why, len, "SLINGSHOT_SVC_IDS=\"%s\": not a "
				 "list of service ids (1 and up)", ids);
			return -FI_EINVAL;
		}
		if (i == mine)
			a->svc_id = (uint32_t)x;
		if (!*end)
			break;
		p = end + 1;
	}
	if (i < mine || (devs && i + 1 < ndev)) {
		snprintf(why, len, "SLINGSHOT_SVC_IDS=\"%s\" has %d ids for "
			 "the %d devices of SLINGSHOT_DEVICES=\"%s\"", ids,
			 i + 1, ndev, devs ? devs : "");
		return -FI_EINVAL;
	}
	return 0;
}

/* A key from the attributes into @a: 1 (none given), 0, or -FI_EINVAL. */
static int auth_key(const void *key, size_t size, struct sse_auth *a,
		    char *why, size_t len)
{
	struct fi_sse_auth_key k;

	if (!key)
		return 1;
	if (size != SSE_AUTH_KEY_SIZE) {
		snprintf(why, len, "auth_key_size %zu, this provider's keys "
			 "have %zu bytes (struct fi_sse_auth_key)", size,
			 SSE_AUTH_KEY_SIZE);
		return -FI_EINVAL;
	}
	memcpy(&k, key, sizeof(k));
	if (!k.svc_id || !k.vni) {
		snprintf(why, len, "auth key with service %u, VNI %u (both "
			 "start at 1)", k.svc_id, (unsigned)k.vni);
		return -FI_EINVAL;
	}
	a->svc_id = k.svc_id;
	a->vni = k.vni;
	return 0;
}

int sse_auth_hints_check(const void *key, size_t size, const char *what)
{
	struct sse_auth a;
	char why[160];

	/* a size without a key: the size this provider reports */
	if (!key && (!size || size == SSE_AUTH_KEY_SIZE))
		return 0;
	if (!key || auth_key(key, size, &a, why, sizeof(why)) < 0) {
		if (!key)
			snprintf(why, sizeof(why), "auth_key_size %zu, this "
				 "provider's keys have %zu bytes", size,
				 SSE_AUTH_KEY_SIZE);
		SSE_INFO(FI_LOG_CORE, "no match: %s %s\n", what, why);
		return -FI_ENODATA;
	}
	return 0;
}

static int dup_key(void **dst, size_t *dsize, const void *key, size_t size)
{
	if (!key)
		return 0;
	*dst = malloc(size);
	if (!*dst)
		return -FI_ENOMEM;
	memcpy(*dst, key, size);
	*dsize = size;
	return 0;
}

int sse_auth_info_apply(struct fi_info *info, const struct fi_info *hints)
{
	int ret = 0;

	if (!hints)
		return 0;
	if (hints->domain_attr && hints->domain_attr->auth_key &&
	    !info->domain_attr->auth_key)
		ret = dup_key((void **)&info->domain_attr->auth_key,
			      &info->domain_attr->auth_key_size,
			      hints->domain_attr->auth_key,
			      hints->domain_attr->auth_key_size);
	if (!ret && hints->ep_attr && hints->ep_attr->auth_key &&
	    !info->ep_attr->auth_key)
		ret = dup_key((void **)&info->ep_attr->auth_key,
			      &info->ep_attr->auth_key_size,
			      hints->ep_attr->auth_key,
			      hints->ep_attr->auth_key_size);
	return ret;
}

/* Is this user entitled to @a on the fabric?  0, -FI_EINVAL, -FI_EACCES. */
static int auth_entitled(struct sse_emu *emu, const struct sse_auth *a,
			 const char *what, const char *from)
{
	char why[160] = "";
	int ret;

	ret = ssemu_auth_check(emu->fabric, a->svc_id, a->vni, why,
			       sizeof(why));
	if (!ret)
		return 0;
	SSE_WARN(FI_LOG_DOMAIN, "%s: service %u, VNI %u (%s) refused: %s\n",
		 what, a->svc_id, a->vni, from, why);
	return ret == -EACCES ? -FI_EACCES : -FI_EINVAL;
}

int sse_auth_domain_init(struct sse_domain *dom, const struct fi_info *info)
{
	const struct fi_domain_attr *da = info->domain_attr;
	struct sse_auth *a = &dom->auth;
	const char *from = "the fabric's default service";
	char why[256];
	bool set;
	int ret;

	a->svc_id = SSEMU_SVC_ID_DEFAULT;
	a->vni = SSEMU_VNI_DEFAULT;
	a->tcs = 0;
	if (!da->auth_key && da->auth_key_size &&
	    da->auth_key_size != SSE_AUTH_KEY_SIZE) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_domain: auth_key_size %zu without a key; this provider's keys have %zu bytes\n",
			 da->auth_key_size, SSE_AUTH_KEY_SIZE);
		return -FI_EINVAL;
	}
	ret = auth_env(a, &set, why, sizeof(why));
	if (ret) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_domain: %s\n", why);
		return ret;
	}
	if (set)
		from = "SLINGSHOT_VNIS/SLINGSHOT_SVC_IDS";
	ret = auth_key(da->auth_key, da->auth_key_size, a, why, sizeof(why));
	if (ret < 0) {
		SSE_WARN(FI_LOG_DOMAIN, "fi_domain: %s\n", why);
		return ret;
	}
	if (!ret)
		from = "the domain's auth key";
	ret = auth_entitled(dom->emu, a, "fi_domain", from);
	if (!ret)
		SSE_INFO(FI_LOG_DOMAIN, "fi_domain: service %u, VNI %u (%s)\n",
			 a->svc_id, a->vni, from);
	return ret;
}

/* May the job use the fabric's class @tc (SLINGSHOT_TCS)? */
static bool tcs_allow(const struct ssemu_config *cfg, uint32_t tcs,
		      uint32_t tc)
{
	static const uint32_t label[] = { FI_TC_DEDICATED_ACCESS,
					  FI_TC_LOW_LATENCY, FI_TC_BULK_DATA,
					  FI_TC_BEST_EFFORT };
	uint32_t i, t;

	if (!tcs)
		return true;
	for (i = 0; i < 4; i++)
		if ((tcs >> i & 1) && !sse_tclass_lookup(cfg, label[i], &t) &&
		    t == tc)
			return true;
	return false;
}

int sse_auth_ep_open(struct sse_ep *ep, const struct fi_info *info)
{
	struct sse_domain *dom = ep->domain;
	const struct ssemu_config *cfg = dom->emu->cfg;
	struct sse_auth a = dom->auth;
	char why[256];
	int ret;

	if (info && info->ep_attr) {
		ret = auth_key(info->ep_attr->auth_key,
			       info->ep_attr->auth_key_size, &a, why,
			       sizeof(why));
		if (ret < 0) {
			SSE_DOM_WARN(dom, "fi_endpoint: %s\n", why);
			return -EINVAL;
		}
		if (!ret && (a.svc_id != dom->auth.svc_id ||
			     a.vni != dom->auth.vni)) {
			ret = auth_entitled(dom->emu, &a, "fi_endpoint",
					    "the endpoint's auth key");
			if (ret)
				return ret == -FI_EACCES ? -EACCES : -EINVAL;
		}
	}
	if (!tcs_allow(cfg, a.tcs, ep->emu_tclass)) {
		SSE_DOM_WARN(dom, "fi_endpoint: traffic class %s is not among the job's classes (SLINGSHOT_TCS=0x%x)\n",
			     cfg->tclass[ep->emu_tclass % SSEMU_MAX_TCLASS].name,
			     a.tcs);
		return -EACCES;
	}
	ret = ssemu_ep_open_auth(dom->emu->nic, a.svc_id, a.vni, &ep->emu);
	if (ret == -EDQUOT) {
		SSE_DOM_WARN(dom, "fi_endpoint: service %u has all its endpoints open\n",
			     a.svc_id);
		return -ENOSPC;
	}
	if (ret)
		return ret;
	if (!ssemu_ep_tclass_allowed(ep->emu, ep->emu_tclass)) {
		SSE_DOM_WARN(dom, "fi_endpoint: service %u does not allow traffic class %s\n",
			     a.svc_id,
			     cfg->tclass[ep->emu_tclass % SSEMU_MAX_TCLASS].name);
		ssemu_ep_close(ep->emu);
		ep->emu = NULL;
		return -EACCES;
	}
	return 0;
}

int sse_auth_mr_vni(struct sse_domain *dom, const void *key, size_t size,
		    uint32_t *vni)
{
	struct sse_auth a = dom->auth;
	char why[256];
	int ret;

	*vni = 0;
	ret = auth_key(key, size, &a, why, sizeof(why));
	if (ret > 0)
		return 0;
	if (ret < 0) {
		SSE_DOM_WARN(dom, "fi_mr_regattr: %s\n", why);
		return ret;
	}
	ret = auth_entitled(dom->emu, &a, "fi_mr_regattr", "the region's "
			    "auth key");
	if (!ret)
		*vni = a.vni;
	return ret;
}
