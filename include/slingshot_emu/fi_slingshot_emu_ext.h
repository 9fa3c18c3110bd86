/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_slingshot_emu_ext.h: what applications may know about the
 * slingshot_emu libfabric provider beyond the standard API (in the spirit
 * of fi_cxi_ext.h): its address format and its endpoint options.
 *
 * This header only needs <rdma/fabric.h>; it never pulls in the emulator.
 */
#ifndef FI_SLINGSHOT_EMU_EXT_H
#define FI_SLINGSHOT_EMU_EXT_H

#include <stdint.h>

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Provider-specific code for options and values (see rdma/fi_ext.h). */
#define FI_PROV_SPECIFIC_SSE (0x55e << 16)

/*
 * fi_info::addr_format of every slingshot_emu fi_info.  Addresses are
 * struct fi_sse_addr, fixed size (8 bytes), as returned by fi_getname and
 * accepted by fi_av_insert and in fi_info src_addr/dest_addr.
 */
#define FI_ADDR_SLINGSHOT_EMU (FI_PROV_SPECIFIC | 0x55e)

struct fi_sse_addr {
	uint32_t fabric_id;	/* hash of the fabric (store + name) */
	uint32_t addr;		/* endpoint port << 8 | pid on that NIC */
};

#define FI_SSE_ADDR_PORT(a) ((a)->addr >> 8)
#define FI_SSE_ADDR_PID(a) ((a)->addr & 0xff)
/* addr value meaning "any port, any pid" in a source address. */
#define FI_SSE_ADDR_ANY UINT32_MAX
/*
 * addr values with the top byte 0xff (other than FI_SSE_ADDR_ANY) name a
 * service of the fabric's directory by its 24-bit key, not an endpoint:
 * what fi_getinfo returns for a node/service pair.  In a source address the
 * endpoint opened with it binds the service; in a destination address
 * fi_av_insert resolves it to the endpoint that bound it.  Ports of real
 * addresses stay below 0xff0000.
 */
#define FI_SSE_ADDR_SVC_BASE 0xff000000u
#define FI_SSE_ADDR_IS_SVC(a)						\
	(((a)->addr & 0xff000000u) == FI_SSE_ADDR_SVC_BASE &&		\
	 (a)->addr != FI_SSE_ADDR_ANY)
#define FI_SSE_ADDR_SVC_KEY(a) ((a)->addr & 0xffffffu)

/*
 * An auth key (fi_domain_attr and fi_ep_attr auth_key, auth_key_size
 * sizeof(struct fi_sse_auth_key)): a service of the fabric and one of its
 * VNIs, the layout of the cxi provider's struct cxi_auth_key.
 */
struct fi_sse_auth_key {
	uint32_t svc_id;
	uint16_t vni;
};

/* Longest string fi_av_straddr produces, with its NUL. */
#define FI_SSE_ADDR_STRLEN 32

/*
 * Endpoint options, level FI_OPT_ENDPOINT.
 *
 * FI_OPT_SSE_TCLASS: uint32_t, a FI_TC_* label (FI_TC_UNSPEC selects the
 *   domain's class).  Applies to messages posted after the call.
 *   fi_setopt returns -FI_EINVAL for a class the fabric does not have.
 */
enum {
	FI_OPT_SSE_TCLASS = -FI_PROV_SPECIFIC_SSE,
};

#ifdef __cplusplus
}
#endif
#endif /* FI_SLINGSHOT_EMU_EXT_H */
