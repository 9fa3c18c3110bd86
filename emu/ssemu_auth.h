/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation inside the emulator (ssemu_auth.c): the fabric's table of
 * services in the segment, the per-VNI counters, and the hooks the model
 * and the endpoint code call.  Public side: <slingshot_emu/ssemu_auth.h>.
 */
#ifndef SSEMU_AUTH_PRIV_H
#define SSEMU_AUTH_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <slingshot_emu/ssemu_auth.h>

struct ssemu_region;
struct ssemu_config;
struct ssemu_ep;
struct ssemu_ep_sh;
struct ssemu_msg;
struct ssemu_pkt;
struct ssemu_switch_sh;

#define SSEMU_AUTH_JOBS 64	/* jobs whose drops are kept apart */

/* The services (id 0: a free entry) and the drops per job, in the
 * segment's shared part, under the fabric lock. */
struct ssemu_auth_sh {
	struct ssemu_service svc[SSEMU_MAX_SERVICES];
	struct ssemu_job_vni_drops job[SSEMU_AUTH_JOBS];
	uint64_t drops;		/* every NIC's, every job's */
};

/* A new fabric's table: the default service, then @c's. */
void ssemu_auth_init(struct ssemu_region *r, const struct ssemu_config *c);

/* An endpoint is being claimed (fabric lock held): give it service @id
 * and VNI @vni, or refuse. */
int ssemu_auth_ep_open_locked(struct ssemu_region *r, struct ssemu_ep_sh *sh,
			      struct ssemu_ep *ep, uint32_t id, uint32_t vni);

/* The VNI a message of endpoint slot @epi travels on. */
uint16_t ssemu_auth_ep_vni(struct ssemu_region *r, uint32_t epi);

/* Data packet @pkt of message @m reached NIC @nic: true if the target
 * endpoint does not hold its VNI (then it is counted as dropped). */
bool ssemu_auth_rx_refused(struct ssemu_region *r, uint32_t nic,
			   const struct ssemu_msg *m,
			   const struct ssemu_pkt *pkt);

/* An RMA @m reached NIC @nic for region @mr: true if the region serves
 * another VNI than @m's (then it is counted as dropped at @nic). */
struct ssemu_mr_sh;
bool ssemu_auth_mr_refused(struct ssemu_region *r, uint32_t nic,
			   const struct ssemu_mr_sh *mr,
			   const struct ssemu_msg *m);

/* An acknowledgement or RMA results @pkt for message @m reached its
 * initiator's NIC @nic: true if it came on another VNI than @m's (then it
 * is counted as dropped at @nic, and logged). */
bool ssemu_auth_reply_refused(struct ssemu_region *r, uint32_t nic,
			      const struct ssemu_msg *m,
			      const struct ssemu_pkt *pkt);

/* Output @op of switch @s sent a packet of @bytes on VNI @vni, and the
 * port's count of what it sent since its VNI changed (ssemu_swport's vacc)
 * cannot take it: that count moves into the switch's table, and the port
 * counts @vni from this packet on, the switch's table given an entry for
 * @vni now if it has none (so the table keeps the order in which the
 * switch first sent each VNI).  The usual send is ssemu_auth_port_count
 * (ssemu_model_int.h). */
struct ssemu_swport;
void ssemu_auth_port_turn(struct ssemu_switch_sh *s, struct ssemu_swport *op,
			  uint16_t vni, uint32_t bytes);

/* A configuration file's "services" list (ssemu_config_load) into @c:
 * 0, or -EINVAL with "path:line: key: problem" in @err. */
struct config_setting_t;
int ssemu_auth_config_load(const struct config_setting_t *l,
			   struct ssemu_config *c, const char *path, char *err,
			   size_t errlen);

/* A configuration file's "share_group" (a group name or number) into @c:
 * 0, or -EINVAL with "path:line: share_group: problem" in @err. */
int ssemu_auth_share_load(const struct config_setting_t *s,
			  struct ssemu_config *c, const char *path, char *err,
			  size_t errlen);

/* Check and describe a configuration's services (ssemu_config_validate). */
int ssemu_auth_config_check(const struct ssemu_config *c, char *err,
			    size_t errlen);

#endif
