/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider's side of job isolation (sse_auth.c): which service and
 * VNI a domain and each of its endpoints use, from an auth key in the
 * attributes, from the launcher's SLINGSHOT_* variables, or the fabric's
 * default service; which traffic classes SLINGSHOT_TCS leaves to the job.
 */
#ifndef SSE_AUTH_H
#define SSE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include <slingshot_emu/fi_slingshot_emu_ext.h>

#define SSE_AUTH_KEY_SIZE sizeof(struct fi_sse_auth_key)

struct sse_auth {
	uint32_t svc_id;
	uint32_t vni;
	uint32_t tcs;		/* SLINGSHOT_TCS bits, 0: not set (any) */
};

struct sse_domain;
struct sse_ep;

/* fi_getinfo: is an auth key in the hints one this provider takes (its
 * size, its VNI's range)?  0 or -FI_ENODATA (logged). */
int sse_auth_hints_check(const void *key, size_t size, const char *what);
/* fi_getinfo: the hints' auth keys into a returned @info. */
int sse_auth_info_apply(struct fi_info *info, const struct fi_info *hints);
/* fi_domain: the domain's service and VNI, checked against the fabric's
 * services for this user.  0, -FI_EINVAL (a bad key or variable, no such
 * service), -FI_EACCES (not this user's, or not its VNI); logged. */
int sse_auth_domain_init(struct sse_domain *dom, const struct fi_info *info);
/* fi_endpoint: open the emulator's endpoint under the domain's service
 * (or the endpoint's own auth key), refusing a class the service or
 * SLINGSHOT_TCS does not allow.  0 or a negative errno (logged). */
int sse_auth_ep_open(struct sse_ep *ep, const struct fi_info *info);
/* fi_mr_regattr: the VNI an auth key (@key, @size; NULL: none, *@vni 0)
 * restricts a region to, checked against the fabric's services for this
 * user.  0, -FI_EINVAL (a bad key, no such service), -FI_EACCES. */
int sse_auth_mr_vni(struct sse_domain *dom, const void *key, size_t size,
		    uint32_t *vni);

#endif
