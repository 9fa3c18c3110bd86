/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_proto.h: the slingshot_emu provider's wire protocol: the four header
 * words every ssemu message carries, its op codes and flags, and the
 * payload of a read rendezvous request.
 *
 * Every ssemu message (ssemu_ep_send, and the RMA_REMOTE event of an
 * ssemu_ep_rma) carries SSEMU_HDR_WORDS 64-bit words next to its payload:
 *
 *   hdr[0] = op << 56 | flags << 48 | message id (48 bits, per sending ep)
 *   hdr[1..3] as the op says:
 *
 *   op     hdr[1]           hdr[2]    hdr[3]  payload
 *   EAGER  tag              CQ data   total   bytes [0, n) of the message
 *   RTS    tag              CQ data   total   none, or a read descriptor
 *   FRAG   offset           0         total   bytes [offset, offset + n)
 *   CTS    bytes wanted     0         total   none
 *   FIN    0 or FI_E* err   0         total   none
 *   RMA    region key       CQ data   length  (RMA_REMOTE event header)
 *
 * Eager.  A message of at most FI_SLINGSHOT_EMU_EAGER_MAX bytes (and any
 * inject) is an EAGER message carrying its first ssemu_ep_max_msg bytes,
 * then FRAG messages for the rest.  The receiver matches the EAGER against
 * its posted receives; the FRAGs are found by (source, message id).
 *
 * Rendezvous (push).  A larger message starts as a data-less RTS.  Once a
 * receive matches it, the receiver answers with a CTS naming how many
 * bytes it wants (0: the message was discarded), and the sender posts
 * them as FRAG messages.
 *
 * Rendezvous read.  An RTS flagged SSE_HF_RNDV_READ carries a struct
 * sse_rndv_desc: the sender entered its buffer in its NIC's region table
 * under an internal key.  The receiver reads the bytes it wants
 * (SSEMU_RMA_READ) and answers with a FIN, whose hdr[1] is 0 or the
 * positive FI_E* error the receive failed with; a CTS in answer to a read
 * RTS (reads refused) has the sender push instead.
 *
 * Control messages (CTS, FIN) carry the sender's message id in hdr[0] and
 * take no part in matching.  Pieces of one message arrive in order
 * (SSEMU_SEND_ORDERED), so matching order is posting order per (sender,
 * receiver) pair (FI_ORDER_SAS).
 */
#ifndef SSE_PROTO_H
#define SSE_PROTO_H

#include <assert.h>
#include <stdint.h>

#include <slingshot_emu/ssemu.h>

enum sse_op {
	SSE_OP_EAGER = 1,
	SSE_OP_RTS,
	SSE_OP_FRAG,
	SSE_OP_CTS,
	SSE_OP_RMA,	/* header of an RMA_REMOTE event, see sse_rma.c */
	SSE_OP_FIN,
	SSE_OP_LAST = SSE_OP_FIN,
};

#define SSE_HF_TAGGED 0x01	/* tagged (else untagged message) */
#define SSE_HF_DATA 0x02	/* hdr[2] is remote CQ data */
#define SSE_HF_RREAD 0x04	/* RMA: a remote read (else a remote write) */
#define SSE_HF_ATOMIC 0x08	/* RMA: an atomic (else a read or write) */
#define SSE_HF_RNDV_READ 0x10	/* RTS: read it (payload: sse_rndv_desc) */
/* EAGER, FRAG: the sender's NIC could not read the data from here on
 * (no payload): the message fails with FI_EFAULT at the receiver */
#define SSE_HF_FAULT 0x20
#define SSE_HF_ALL 0x3f

#define SSE_HDR_OP_SHIFT 56
#define SSE_HDR_FLAGS_SHIFT 48
#define SSE_HDR_ID_BITS 48
#define SSE_HDR_ID_MASK ((1ULL << SSE_HDR_ID_BITS) - 1)

#define SSE_HDR0(op, fl, id) \
	(((uint64_t)(op) << SSE_HDR_OP_SHIFT) | \
	 ((uint64_t)(fl) << SSE_HDR_FLAGS_SHIFT) | ((id) & SSE_HDR_ID_MASK))
#define SSE_HDR_OP(h) ((unsigned)((h) >> SSE_HDR_OP_SHIFT))
#define SSE_HDR_FLAGS(h) ((unsigned)(((h) >> SSE_HDR_FLAGS_SHIFT) & 0xff))
#define SSE_HDR_ID(h) ((h) & SSE_HDR_ID_MASK)

/* The payload of a read RTS: where the receiver reads the message. */
struct sse_rndv_desc {
	uint64_t key;		/* the region's key in the sender's NIC */
	uint64_t addr;		/* the address the region names the buffer by */
};

static_assert(SSEMU_HDR_WORDS == 4, "the protocol uses four header words");
static_assert(SSE_OP_LAST < 256, "op codes fit in 8 bits");
static_assert((SSE_HF_ALL & ~0xffu) == 0, "flags fit in 8 bits");
static_assert(SSE_HDR_ID_BITS + 16 == 64,
	      "op, flags and message id fill hdr[0]");
static_assert(sizeof(struct sse_rndv_desc) == 2 * sizeof(uint64_t),
	      "a read descriptor is two words");
static_assert(sizeof(struct sse_rndv_desc) <= SSEMU_INLINE_MAX,
	      "a read RTS fits in an inline message");

#endif /* SSE_PROTO_H */
