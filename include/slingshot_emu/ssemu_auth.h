/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ssemu_auth.h: job isolation on an emulated fabric, the way a Cassini NIC
 * and its driver do it.  Every packet carries a VNI (virtual network
 * identifier); an endpoint holds one VNI, granted through a CXI-like
 * service (an id, the VNIs and traffic classes it allows, the users it
 * belongs to, a limit on its endpoints).  A target NIC takes only packets
 * whose VNI the target endpoint holds: the others are dropped and counted,
 * and their message completes at the sender with -ENOTCONN (the return
 * code a Cassini NIC reports as VNI_NOT_FOUND).
 *
 * The fabric's table of services is created with it (the configuration's
 * services, plus the default service) and changed by its owner
 * (ssemu_service_add, ssemu_service_remove).  An endpoint opened with
 * ssemu_ep_open uses the default service and VNI.
 */
#ifndef SSEMU_AUTH_H
#define SSEMU_AUTH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define SSEMU_SVC_ID_DEFAULT 1	/* the default service's id */
#define SSEMU_VNI_DEFAULT 1	/* ... and its VNI */
#define SSEMU_VNI_MAX 65535	/* VNIs are 1..65535 (16 bits, 0 is none) */
#define SSEMU_MAX_SERVICES 32	/* services of a fabric */
#define SSEMU_SERVICE_VNIS 8	/* VNIs of a service */
#define SSEMU_SERVICE_UIDS 8	/* users of a service */
#define SSEMU_CONFIG_SERVICES 8	/* services a configuration may name */
#define SSEMU_SW_VNIS 8		/* VNIs a switch counts apart */

/* A service: what endpoints opened under it may use. */
struct ssemu_service {
	uint32_t id;		/* 1 and up (SLINGSHOT_SVC_IDS) */
	uint32_t nvnis;
	uint16_t vnis[SSEMU_SERVICE_VNIS];
	uint32_t tc_mask;	/* bit i: the fabric's class i is allowed */
	uint32_t max_eps;	/* endpoints open under it at once, 0: any */
	uint32_t nuids;		/* 0: every user of the fabric */
	uint32_t uids[SSEMU_SERVICE_UIDS];
	uint32_t eps;		/* ssemu_service_list: endpoints open now */
};

struct ssemu_fabric;
struct ssemu_nic;
struct ssemu_ep;

/**
 * Add a service to the fabric's table.  Only the fabric's owner (the user
 * that created it) may.
 * @return 0; -EEXIST the id is taken; -ENOSPC the table is full; -EINVAL
 * an id of 0, no VNI, a VNI out of range, no class of the fabric, too many
 * VNIs or users; -EPERM not the owner.
 */
int ssemu_service_add(struct ssemu_fabric *fabric,
		      const struct ssemu_service *svc);

/**
 * Remove a service (the default one too: then every endpoint must name a
 * service).
 * @return 0; -ENOENT no such service; -EBUSY endpoints are open under it;
 * -EPERM not the owner.
 */
int ssemu_service_remove(struct ssemu_fabric *fabric, uint32_t id);

/** The fabric's services, up to @max, by id. @return how many. */
int ssemu_service_list(struct ssemu_fabric *fabric, struct ssemu_service *out,
		       int max);

/**
 * May this process (its effective uid) open endpoints under service @id
 * with @vni?  @why, if not NULL, says why not.
 * @return 0; -ENOENT no such service; -EACCES the service does not belong
 * to this user, or does not allow @vni; -EINVAL @vni out of range.
 */
int ssemu_auth_check(struct ssemu_fabric *fabric, uint32_t id, uint32_t vni,
		     char *why, size_t whylen);

/**
 * ssemu_ep_open under service @id with @vni: the check above, made again
 * under the fabric lock when the endpoint is claimed, with the service's
 * endpoint limit.
 * @return as ssemu_ep_open; -ENOENT, -EACCES, -EINVAL as ssemu_auth_check;
 * -EDQUOT the service's endpoints are all in use.
 */
int ssemu_ep_open_auth(struct ssemu_nic *nic, uint32_t id, uint32_t vni,
		       struct ssemu_ep **ep);

/** The service and VNI endpoint @ep holds. */
void ssemu_ep_auth(struct ssemu_ep *ep, uint32_t *id, uint32_t *vni);

/** May endpoint @ep send on the fabric's class @tclass (its service's
 * classes)? */
int ssemu_ep_tclass_allowed(struct ssemu_ep *ep, uint32_t tclass);

/* Traffic of one VNI through a switch (vni 0: the VNIs past the first
 * SSEMU_SW_VNIS - 1 it saw). */
struct ssemu_vni_count {
	uint32_t vni;
	uint32_t pad;
	uint64_t pkts, bytes;
};

/**
 * Per-VNI traffic of the switch with topology id @sw (every packet it
 * sent, data, acknowledgements and responses).
 * @return entries written (0: not modelled yet), -EINVAL no such switch.
 */
int ssemu_switch_vni_stats(struct ssemu_fabric *fabric, uint32_t sw,
			   struct ssemu_vni_count *out, int max);

/* Packets dropped for their VNI at the NICs of one job. */
struct ssemu_job_vni_drops {
	uint32_t job;
	uint32_t pad;
	uint64_t drops;
};

/** Per-job VNI drops (up to @max jobs). @return entries written. */
int ssemu_vni_drops_by_job(struct ssemu_fabric *fabric,
			   struct ssemu_job_vni_drops *out, int max);

/**
 * Parse a list of VNIs ("5", "5,6") into @vnis (at most @max).
 * @return how many, or -EINVAL (empty, not a number, out of range) with
 * the problem in @err.
 */
int ssemu_parse_vnis(const char *s, uint16_t *vnis, int max, char *err,
		     size_t errlen);

/**
 * A group to share a fabric with (configuration "share_group", `slingshot-emu
 * run --share-group`): a group name, or a number.  The caller need not
 * belong to it (creating the fabric does: fchown refuses otherwise).
 * @return 0 with its id in *@gid, or -EINVAL (empty, no such group, a
 * number out of range) with the problem in @err.
 */
int ssemu_share_group_parse(const char *s, uint32_t *gid, char *err,
			    size_t errlen);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
