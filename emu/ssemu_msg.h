/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's side of a message slot (ssemu_msg.c): delivering a message
 * to its endpoint and completing its send.  Called by the model under the
 * fabric lock.
 */
#ifndef SSEMU_MSG_H
#define SSEMU_MSG_H

#include "ssemu_region.h"
#include "ssemu_invariant.h"

/* A message's end-to-end CRC: its source, header words, length and
 * payload, as the sender posted them (an RMA request's: its description,
 * ssemu_rma_crc_desc, then its data or operands).  The receiver checks it
 * before it hands a payload out, an RMA target before it touches memory.
 * Shared stores only, as ssemu_r_crc.  ssemu_msg_crc_head covers all but
 * the payload, which the caller adds with ssemu_crc (a sender over the
 * bytes it read of its own memory, in the read that copies them: never
 * from the segment's copy, which another process may write between the
 * copy and the CRC). */
static inline uint32_t ssemu_msg_crc_head(ssemu_addr_t src,
					  const uint64_t *hdr, uint64_t len)
{
	/* (the three fields in a row: one CRC of them is the CRC of each
	 * continued from the one before, in a call instead of three) */
	uint8_t b[sizeof(src) + SSEMU_HDR_WORDS * sizeof(uint64_t) +
		  sizeof(len)];

	memcpy(b, &src, sizeof(src));
	memcpy(b + sizeof(src), hdr, SSEMU_HDR_WORDS * sizeof(uint64_t));
	memcpy(b + sizeof(b) - sizeof(len), &len, sizeof(len));
	return ssemu_crc(0, b, sizeof(b));
}

static inline uint32_t ssemu_msg_crc(const struct ssemu_region *r,
				     ssemu_addr_t src, const uint64_t *hdr,
				     uint64_t len, const void *data)
{
	if (!r->shm_mode)
		return 0;	/* (ssemu_r_crc) */
	return ssemu_crc(ssemu_msg_crc_head(src, hdr, len), data, (size_t)len);
}

/*
 * What an RMA request asks of the target, in its CRC after the head and
 * before its data or operands: the operation, where (key, address), how
 * much, and its flags.  The sender takes it from its own arguments, the
 * target from its snapshot of the slot, which the operation then uses.
 */
struct ssemu_rma_desc {
	uint64_t key, raddr, rma_len;
	uint32_t flags;
	uint8_t op, aop, dtype, pad;
};

static inline uint32_t ssemu_rma_crc_desc(uint32_t crc,
					  const struct ssemu_rma_desc *d)
{
	return ssemu_crc(crc, d, sizeof(*d));
}

/*
 * What the target NIC leaves in the inline data of a SSEMU_RMA_DIRECT
 * read's slot instead of the results (ssemu_rma.c writes it, the slot's
 * crc its CRC; ssemu_event_read in the initiator's process reads it):
 * where the bytes are.
 */
struct ssemu_rma_direct {
	uint64_t addr;		/* the first byte, in the region's process */
	int32_t pid;		/* the region's process */
	uint32_t nic;		/* the NIC whose table holds the region */
	uint32_t mr;		/* ... at this entry */
	uint32_t pad;
};
_Static_assert(sizeof(struct ssemu_rma_direct) <= SSEMU_INLINE_MAX,
	       "a direct read's answer fits a slot's inline data");

struct ssemu_ep;

/* The slot of @ev if it is the RMA_DONE of a successful SSEMU_RMA_DIRECT
 * read posted by @ep (the checks of any event's slot done), else NULL. */
struct ssemu_msg *event_rma_direct(struct ssemu_ep *ep,
				   const struct ssemu_event *ev);

/* Message slot @mi is free: if its endpoint is watched, the run of
 * ssemu_fabric_run_until_watched stops after this event (ssemu_msg.c). */
void msg_watch_freed(struct ssemu_region *r, uint32_t mi);

/* Set @bits (TXDONE, RXDONE) in the state word @st of a message slot: the
 * engine gives back its side of the slot.  Only a busy slot (allocated by
 * its owner) may be given back. */
static inline void msg_state_or(struct ssemu_region *r, uint32_t *st,
				uint32_t bits)
{
	uint32_t old = ssemu_fetch_or(st, bits);

	SSEMU_INVARIANT(r, old & SSEMU_MSG_BUSY, "message slot %u: state "
			"%#x set on a slot in state %#x, not busy",
			(uint32_t)(st - ssemu_r_mstate(r, 0)), bits, old);
	/* the slot is free now: a watched endpoint's stops the run */
	if (unlikely(r->nwatch) && old != SSEMU_MSG_DONE &&
	    (old | bits) == SSEMU_MSG_DONE)
		msg_watch_freed(r, (uint32_t)(st - ssemu_r_mstate(r, 0)));
}

/* The receiving endpoint of @m (its index in *@epi), or an error. */
int recv_ep(struct ssemu_region *r, struct ssemu_msg *m, uint32_t *epi);
/* The receiving endpoint of message @mi, all of which has arrived, into
 * *@epi; or the message fails (never delivered, the error its status):
 * then the error. */
int recv_target(struct ssemu_region *r, uint32_t mi, uint32_t *epi);
/* Message @mi (not an RMA) to endpoint @epi (recv_target). */
void deliver_recv(struct ssemu_region *r, uint32_t mi, uint32_t epi);
/* Hand a RECV (or RMA_REMOTE) event to endpoint @epi now, or queue it
 * for ring space. */
void recv_event(struct ssemu_region *r, uint32_t epi, uint32_t mi);
/* Does @m's RECV carry its payload in the event (SSEMU_EV_CARRY), or
 * have none (SSEMU_SEND_NO_DATA)? */
bool recv_carried(const struct ssemu_region *r, const struct ssemu_msg *m);
/* The target side of RMA @m may be done with its slot. */
void rma_rx_done(struct ssemu_region *r, struct ssemu_msg *m);
/* Message @mi's send is done (its status set): SEND_DONE to its sender. */
void complete_tx(struct ssemu_region *r, uint32_t mi);
/* Fail a queued message that cannot be sent at all. */
void fail_queued(struct ssemu_region *r, uint32_t mi, int32_t status);

#endif
