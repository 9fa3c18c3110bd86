/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The whole life of a message slot.  Its owner's side: posting (take a
 * free slot, fill it, hand it to the engine: sends and RMA operations) and
 * reading (poll the event ring, read a received payload, release the
 * slot).  The engine's side, under the fabric lock: what the model does
 * with a message once it is delivered or done -- its RECV (or RMA_REMOTE)
 * event to the receiving endpoint, its SEND_DONE (or RMA_DONE) to the
 * sender, the overflow lists that hold events while a ring is full, the
 * futex wake-ups -- and the state bits (RXDONE, TXDONE) that give the
 * slot back.  Taking a slot into the NIC is ssemu_nic.c's
 * (ssemu_model_enqueue_msg).
 *
 * A slot's life, and the barrier pairs that order it (each a release, or
 * an acq_rel read-modify-write, of one field, paired with an acquire of
 * the same field):
 *   1. Allocate (owner, msg_alloc): an acquire load of the slot's state
 *      word finds it free (0 or DONE), pairing with the last release of
 *      that word (steps 4 and 5, or 2's undo); the same for the owner of a
 *      large buffer.  The owner then fills the slot with plain stores.
 *   2. Post (owner, msg_post): a release store of BUSY to the state word;
 *      the slot's index pushed onto the endpoint's tx ring (the ring's
 *      release of tail); the endpoint's bit set in the work bitmap (an
 *      acq_rel fetch_or).  A push that fails stores 0 back, with release.
 *   3. Take (engine, drain_tx_locked): the bitmap word taken with an
 *      acq_rel exchange, the index read with the ring's acquire of tail
 *      (ssemu_ring_peek), pairing with 2: the slot's fields are now the
 *      engine's to read.  Its release of the ring's head (advance) pairs
 *      with the owner's acquire of head in the next push.
 *   4. Report (engine): an event pushed to the receiver's or the sender's
 *      event ring (the ring's release of tail); the owner pops it with the
 *      ring's acquire of tail (ssemu_ep_poll).  The wake-up (ep_wake):
 *      a waiter raises the endpoint's or the NIC's waiter count under
 *      the fabric lock, then loads the futex word with an acquire and
 *      looks at the ring before it sleeps (wait_events,
 *      ssemu_runner.c); the engine, under the lock, loads the counts
 *      after a push.  The lock orders the two (its release at unlock,
 *      its acquire at lock): a push in an earlier run is seen by the
 *      waiter's look, a push in a later run sees the count, and then
 *      the word is bumped (an acq_rel fetch_add, pairing with the
 *      waiter's acquire of it) and the waiter woken.  With nobody asleep
 *      no word is written and no fence taken.  (A count lowered outside
 *      the lock may be seen late: one needless wake.)  A send's TXDONE
 *      is set with an acq_rel fetch_or once it is acknowledged or failed.
 *   5. Release (receiver, ssemu_event_release): its reads of the payload
 *      come after the event's acquire (4); RXDONE set with an acq_rel
 *      fetch_or then orders them before the sender's next fill (1).  An
 *      RMA's initiator sets TXDONE the same way when it releases
 *      RMA_DONE, and the engine RXDONE when the target is done.
 * A slot whose word reads DONE (all three bits) is free again.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ssemu_priv.h"
#include "ssemu_timeline.h"
#include "ssemu_msg.h"

static inline bool slot_free(uint32_t state)
{
	return state == 0 || state == SSEMU_MSG_DONE;
}

/*
 * A free message slot of @ep and, if @bytes do not fit inline, one of its
 * large buffers; the slot's bookkeeping is reset for a new message (the
 * caller fills in the rest and posts it with msg_post).  The owner is the
 * only allocator of its slots and buffers.
 * @return the slot, or NULL (-EAGAIN: none free).
 */
SSEMU_HOT
static struct ssemu_msg *msg_alloc(struct ssemu_ep *ep, uint64_t bytes,
				   uint32_t *mip)
{
	struct ssemu_region *r = ep->r;
	const struct ssemu_config *c = ep->nic->fab->cfg;
	struct ssemu_ep_sh *sh = ssemu_r_ep(r, ep->index);
	uint32_t i, k, mi = SSEMU_NONE, buf = SSEMU_NONE, local = 0;
	/* (in locals: the acquire loads below would have them read again
	 * on every turn) */
	uint32_t *mstate = ssemu_r_mstate(r, 0);
	uint32_t low = ssemu_msg_first_slots(r);
	uint32_t nmsgs = ep->nic->fab->nmsgs, nbufs = c->bufs_per_ep;
	uint32_t mask = c->msgs_per_ep - 1, cursor = ep->alloc_cursor;
	uint32_t first = ep->index * c->msgs_per_ep;
	struct ssemu_msg *m;

	/* The lowest free one of the endpoint's first chunk of slots (in a
	 * large fabric every endpoint's first chunk lies with the others',
	 * ssemu_msg_place: with a few messages in flight each, the slots in
	 * use are dense); else the next free one after the last taken so,
	 * round all of them.  (A slot's state is a word of its own, the
	 * first chunk's in one cache line.) */
	for (k = 0; k < low; k++) {
		/* pairs with the releases of TXDONE/RXDONE */
		if (slot_free(ssemu_load_acquire(&mstate[first + k]))) {
			mi = first + k;
			break;
		}
	}
	for (k = 0; mi == SSEMU_NONE && k <= mask; k++) {
		local = (cursor + k) & mask;
		i = first + local;
		if (slot_free(ssemu_load_acquire(&mstate[i]))) {
			mi = i;
			cursor = (local + 1) & mask;
		}
	}
	if (mi == SSEMU_NONE)
		return NULL;
	m = ssemu_r_msg(r, mi);
	/* The slot's last message is done: a large buffer it held that no
	 * message took since is nobody's now.  Then the look below need not
	 * read the slot each busy buffer names (a line of another slot, where
	 * this one's are written below anyway). */
	k = m->buf - ep->index * nbufs;
	if (k < nbufs && sh->buf_msg[k] == mi)
		sh->buf_msg[k] = SSEMU_NONE;
	if (bytes > SSEMU_INLINE_MAX) {
		/* free if nobody has it or its last owner is done (SSEMU_NONE
		 * is >= nmsgs too) */
		for (k = 0; k < nbufs; k++) {
			uint32_t owner = sh->buf_msg[k];

			if (owner >= nmsgs ||
			    slot_free(ssemu_load_acquire(&mstate[owner]))) {
				buf = k;
				break;
			}
		}
		/* or its owner went on to a message without it, which the
		 * release above leaves to a segment written by someone else
		 * (this process alone allocates the endpoint's slots and sets
		 * their buf: a busy slot's buf is stable) */
		for (k = 0; buf == SSEMU_NONE && k < nbufs; k++) {
			uint32_t owner = sh->buf_msg[k];

			if (owner >= nmsgs ||
			    ssemu_r_msg(r, owner)->buf !=
				    ep->index * nbufs + k)
				buf = k;
		}
		if (buf == SSEMU_NONE)
			return NULL;
		sh->buf_msg[buf] = mi;
	}
	ep->alloc_cursor = cursor;

	/* (relaxed: the engine's stall check may still look at the slot's
	 * last message: stall_check_locked, ssemu_runner.c) */
	ssemu_store_relaxed(&m->gen, m->gen + 1);
	m->src = ssemu_ep_addr(ep);
	m->buf = buf == SSEMU_NONE ? SSEMU_NONE :
				     ep->index * c->bufs_per_ep + buf;
	m->sent = m->arrived = m->acked = m->rx_acked = 0;
	m->rx_marked = 0;
	m->status = 0;
	m->ep_gen = sh->gen;
	/* the engine is done with a free slot: its bookkeeping restarts */
	ssemu_store_relaxed(&m->mflags, 0);
	ssemu_store_relaxed(&m->rma_op, 0);
	/* (RMA's counts, in a line the engine reads at every completion:
	 * written only when an RMA left them set, so that a send's post
	 * does not take the line from the engine's process) */
	if (m->resp_npkts | m->resp_sent | m->resp_arrived)
		m->resp_npkts = m->resp_sent = m->resp_arrived = 0;
	m->rma_len = 0;
	*mip = mi;
	return m;
}

static uint8_t *msg_data(struct ssemu_region *r, struct ssemu_msg *m)
{
	return m->buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, m->buf);
}

/*
 * Copy the application's @iov to @dst (the NIC reading host memory): a
 * page that is not mapped fails the copy with -EFAULT, as a DMA read
 * error fails a real NIC's command, and never faults the process.
 * *@dstp advances past what was copied.
 *
 * A shared store (@crc not NULL) also adds the bytes copied to *@crc,
 * the message's end-to-end CRC (ssemu_msg_crc).  Both are taken from one
 * read of the application's memory (ssemu_crc_copy): the memory may
 * change while the NIC reads it (the application's buffer may be the
 * target of another endpoint's RMA, which a process running the engine
 * writes), and the CRC must cover the bytes that were sent, as a NIC's
 * covers what its DMA read.  Never from the segment's copy, which
 * another process may write between the copy and the CRC.
 */
struct copy_args {
	uint8_t *dst;
	const struct iovec *iov;
	size_t n;
	uint32_t *crc;
};

SSEMU_HOT
static void copy_fn(void *arg)
{
	struct copy_args *a = arg;
	size_t v, len;

	for (v = 0; v < a->n; v++) {
		len = a->iov[v].iov_len;
		if (a->crc)
			*a->crc = ssemu_crc_copy(*a->crc, a->dst,
						 a->iov[v].iov_base, len);
		else
			memcpy(a->dst, a->iov[v].iov_base, len);
		a->dst += len;
	}
}

SSEMU_HOT
static int copy_iov(uint8_t **dstp, const struct iovec *iov, size_t n,
		    uint32_t *crc)
{
	struct copy_args a = { *dstp, iov, n, crc };
	size_t v;
	int ret;

	/* (address 0 with a length is one more unmapped address) */
	for (v = 0; v < n; v++)
		if (iov[v].iov_len && !iov[v].iov_base)
			return -EFAULT;
	ret = ssemu_guarded(copy_fn, &a);
	if (ret)
		return ret;
	*dstp = a.dst;
	return 0;
}

/* The CRC of a posted message's head (ssemu_msg_crc_head, an RMA
 * request's @desc after it), to which copy_iov adds the payload as it
 * copies it; NULL for a private store, which checks no CRC
 * (ssemu_r_crc). */
static uint32_t *post_crc(const struct ssemu_region *r, uint32_t *crc,
			  ssemu_addr_t src, const uint64_t *hdr, uint64_t len,
			  const struct ssemu_rma_desc *desc)
{
	if (!r->shm_mode)
		return NULL;
	*crc = ssemu_msg_crc_head(src, hdr, len);
	if (desc)
		*crc = ssemu_rma_crc_desc(*crc, desc);
	return crc;
}

/* Bytes in @iov; -1 if there is none or they add up past INT64_MAX.  (An
 * entry with a length and no base fails in copy_iov, as any address the
 * NIC cannot read does.) */
static int64_t iov_bytes(const struct iovec *iov, size_t n)
{
	uint64_t len = 0;
	size_t v;

	if (n && !iov)
		return -1;
	for (v = 0; v < n; v++) {
		if (iov[v].iov_len > INT64_MAX)
			return -1;
		len += iov[v].iov_len;
		if (len > INT64_MAX)
			return -1;
	}
	return (int64_t)len;
}

/*
 * A shared store: the completion of a post comes back with the cookie it
 * was posted with, from this process's record (struct ssemu_owed), never
 * from the slot, which another process may write; a completion this
 * endpoint has no post for is the segment's damage.  A slot whose
 * completion was not polled yet when the slot is posted again keeps its
 * record in owed_old until it is.
 */
static int owed_record(struct ssemu_ep *ep, const struct ssemu_msg *m,
		       uint32_t local, uint64_t cookie)
{
	struct ssemu_owed *o = &ep->owed[local], *old;
	uint32_t cap;

	if (o->live) {
		if (ep->nowed_old == ep->owed_old_cap) {
			cap = ep->owed_old_cap ? 2 * ep->owed_old_cap : 16;
			old = realloc(ep->owed_old, cap * sizeof(*old));
			if (!old)
				return -ENOMEM;
			ep->owed_old = old;
			ep->owed_old_cap = cap;
		}
		ep->owed_old[ep->nowed_old] = *o;
		ep->owed_old[ep->nowed_old++].local = (uint16_t)local;
	}
	o->cookie = cookie;	/* (the caller's, not read back from the slot) */
	o->gen = m->gen;
	o->live = 1;
	return 0;
}

/* The cookie of the completion of slot @local, generation @gen, which
 * is polled now: @return false if this endpoint owes no such one. */
static bool owed_take(struct ssemu_ep *ep, uint32_t local, uint32_t gen,
		      uint64_t *cookie)
{
	struct ssemu_owed *o = &ep->owed[local];
	uint32_t k;

	if (o->live && o->gen == gen) {
		*cookie = o->cookie;
		o->live = 0;
		return true;
	}
	for (k = 0; k < ep->nowed_old; k++) {
		o = &ep->owed_old[k];
		if (o->local == local && o->gen == gen) {
			*cookie = o->cookie;
			*o = ep->owed_old[--ep->nowed_old];
			return true;
		}
	}
	return false;
}

void ssemu_ep_free(struct ssemu_ep *ep)
{
	free(ep->owed);
	free(ep->owed_old);
	free(ep);
}

SSEMU_HOT
static int msg_post(struct ssemu_ep *ep, struct ssemu_msg *m, uint32_t mi,
		    uint64_t cookie)
{
	struct ssemu_region *r = ep->r;
	const struct ssemu_config *c = ep->nic->fab->cfg;
	uint32_t local = mi - ep->index * c->msgs_per_ep;
	struct ssemu_owed keep;
	int ret;

	/* (the ring where the layout puts it, found at open: the segment's
	 * offsets, and the line of the endpoint's slot that holds them,
	 * are the engine's to read and check) */
	if (SSEMU_BAD(r, !ssemu_ring_sane(ep->tx_ring, c->msgs_per_ep,
					  sizeof(uint32_t)),
		      "endpoint %u: its tx ring's control block is corrupt",
		      ep->index))
		return -EIO;
	/* (group windows: now is the clock of the group whose event ran
	 * last, which another group's window, or a window's end after the
	 * run to it, may have passed) */
	if (unlikely(c->group_windows) &&
	    !ssemu_model_post_now_ok(r, ep->nic->slot))
		return -EINVAL;
	/* (before the slot is the engine's: it may complete at once) */
	if (ep->owed) {
		keep = ep->owed[local];
		ret = owed_record(ep, m, local, cookie);
		if (ret)
			return ret;
	}
	ssemu_store_release(ssemu_r_mstate(r, mi), SSEMU_MSG_BUSY);
	/* The tx ring has a slot per message slot, so it cannot be full.
	 * (It holds the slot's index among the endpoint's, tagged with the
	 * ring's lap: the engine reads the entry, not the tail, which stays
	 * in this process's cache.) */
	if (ssemu_ring_push_tagged(ep->tx_ring, local, &ep->tx_head_seen)) {
		ssemu_store_release(ssemu_r_mstate(r, mi), 0);
		if (ep->owed) {
			if (keep.live)
				ep->nowed_old--;
			ep->owed[local] = keep;
		}
		return -EAGAIN;
	}
	/* tell the engine where to look; pairs with the exchange in
	 * drain_tx_locked */
	ssemu_bm_set(ssemu_r_bits(r, r->work_off), ssemu_bm_words(r->neps),
		     ep->index);
	return 0;
}

/*
 * Message @m (slot @mi), filled, enters the model at @at by its POST event
 * (ssemu_model_post_at); refused (-EINVAL: a time the engine cannot take
 * for it), its slot stays free.
 */
static int post_at(struct ssemu_ep *ep, struct ssemu_msg *m, uint32_t mi,
		   ssemu_time_t at)
{
	struct ssemu_region *r = ep->r;
	int ret;

	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	ssemu_store_release(ssemu_r_mstate(r, mi), SSEMU_MSG_BUSY);
	ret = ssemu_model_post_at(r, ep->nic->slot, mi, at);
	if (ret)
		ssemu_store_release(ssemu_r_mstate(r, mi), 0);
	else
		ep->sent_at = true;
	ssemu_region_unlock(r);
	if (!ret)
		ssemu_tl(SSEMU_TL_POSTED, mi);
	return ret ? ret : ssemu_fab_check(ep->nic->fab);
}

/*
 * A send: into the tx ring (@at 0), or (@at later than now) into the
 * model at @at by an engine event, the fabric locked meanwhile.
 */
static inline __attribute__((always_inline)) int
send_msg(struct ssemu_ep *ep, const struct ssemu_send *s, ssemu_time_t at)
{
	struct ssemu_region *r;
	const struct ssemu_config *c;
	struct ssemu_msg *m;
	uint32_t mi;
	int64_t len;
	uint32_t crc, *crcp;
	uint8_t *p;
	int ret;

	ssemu_tl(SSEMU_TL_SEND, 0);
	if (!ep || !s || (s->iov_count && !s->iov) ||
	    (s->flags & ~(SSEMU_SEND_ORDERED | SSEMU_SEND_NO_DATA)))
		return -EINVAL;
	if (ssemu_fab_check(ep->nic->fab))
		return -EIO;
	r = ep->r;
	c = ep->nic->fab->cfg;
	/* (a slot in a segment other processes write must carry what its
	 * CRC covers: no bytes is a private store's shortcut) */
	if ((s->flags & SSEMU_SEND_NO_DATA) && r->shm_mode)
		return -ENOTSUP;
	if (SSEMU_ADDR_PORT(s->dest) >= ep->nic->fab->nendpoints ||
	    SSEMU_ADDR_PID(s->dest) >= c->eps_per_nic ||
	    s->tclass >= c->ntclass)
		return -EINVAL;
	if (!ssemu_ep_tclass_allowed(ep, s->tclass))
		return -EACCES;
	len = iov_bytes(s->iov, s->iov_count);
	if (len < 0)
		return -EINVAL;
	if ((uint64_t)len > ssemu_ep_max_msg(ep))
		return -EMSGSIZE;

	m = msg_alloc(ep, (uint64_t)len, &mi);
	if (!m)
		return -EAGAIN;
	m->dst = s->dest;
	m->dst_crc = ssemu_r_crc(r, 0, &s->dest, sizeof(s->dest));
	m->tclass = s->tclass;
	m->flags = s->flags;
	m->len = (uint64_t)len;
	memcpy(m->hdr, s->hdr, sizeof(m->hdr));
	m->cookie = s->cookie;
	m->npkts = len ? (uint32_t)((len + c->mtu - 1) / c->mtu) : 1;
	if (s->flags & SSEMU_SEND_NO_DATA) {
		m->crc = 0;	/* (a private store's: ssemu_r_crc) */
	} else {
		p = msg_data(r, m);
		crcp = post_crc(r, &crc, ssemu_ep_addr(ep), s->hdr,
				(uint64_t)len, NULL);
		/* a slot that is not posted stays free */
		ret = copy_iov(&p, s->iov, s->iov_count, crcp);
		if (ret)
			return ret;
		m->crc = crcp ? crc : 0;
	}
	if (at)
		return post_at(ep, m, mi, at);
	ret = msg_post(ep, m, mi, s->cookie);
	if (!ret)
		ssemu_tl(SSEMU_TL_POSTED, mi);
	/* (the segment may have been cut short while we copied) */
	return ret ? ret : ssemu_fab_check(ep->nic->fab);
}

SSEMU_HOT
int ssemu_ep_send(struct ssemu_ep *ep, const struct ssemu_send *s)
{
	return send_msg(ep, s, 0);
}

int ssemu_ep_send_at(struct ssemu_ep *ep, const struct ssemu_send *s,
		     ssemu_time_t t)
{
	struct ssemu_fabric *f;
	ssemu_time_t now;

	if (!ep || !s)
		return -EINVAL;
	f = ep->nic->fab;
	/* (a model time only the virtual clock keeps, and an event only the
	 * engine of this process's own store takes from it) */
	if (f->r->shm_mode || f->cfg->clock != SSEMU_CLOCK_VIRTUAL)
		return -ENOTSUP;
	now = ssemu_fabric_now(f);
	if (t < now)
		return -EINVAL;
	return send_msg(ep, s, t > now ? t : 0);
}

int ssemu_ep_rma(struct ssemu_ep *ep, const struct ssemu_rma *rma)
{
	struct ssemu_rma_desc desc;
	struct ssemu_region *r;
	const struct ssemu_config *c;
	struct ssemu_msg *m;
	uint64_t payload, need, max;
	int64_t ilen, clen;
	uint32_t mi;
	size_t esize;
	uint32_t crc, *crcp;
	uint8_t *p;
	int ret;

	if (!ep || !rma)
		return -EINVAL;
	if (ssemu_fab_check(ep->nic->fab))
		return -EIO;
	r = ep->nic->fab->r;
	c = ep->nic->fab->cfg;
	if (SSEMU_ADDR_PORT(rma->dest) >= ep->nic->fab->nendpoints ||
	    SSEMU_ADDR_PID(rma->dest) >= c->eps_per_nic ||
	    rma->tclass >= c->ntclass ||
	    (rma->flags & ~(SSEMU_SEND_ORDERED | SSEMU_RMA_REMOTE_EVENT |
			    SSEMU_RMA_DIRECT)) ||
	    ((rma->flags & SSEMU_RMA_DIRECT) && rma->op != SSEMU_RMA_READ))
		return -EINVAL;
	if (!ssemu_ep_tclass_allowed(ep, rma->tclass))
		return -EACCES;
	ilen = iov_bytes(rma->iov, rma->iov_count);
	clen = iov_bytes(rma->cmp, rma->cmp_count);
	if (ilen < 0 || clen < 0)
		return -EINVAL;
	max = ssemu_ep_max_msg(ep);
	switch (rma->op) {
	case SSEMU_RMA_WRITE:
		if ((uint64_t)ilen != rma->len || clen)
			return -EINVAL;
		payload = rma->len;
		break;
	case SSEMU_RMA_READ:
		if (ilen || clen)
			return -EINVAL;
		payload = 0;
		break;
	case SSEMU_RMA_ATOMIC:
	case SSEMU_RMA_FETCH:
	case SSEMU_RMA_COMPARE:
		if (!ssemu_atomic_valid(rma->op, rma->aop, rma->dtype))
			return -EINVAL;
		esize = ssemu_datatype_size(rma->dtype);
		if (rma->len % esize)
			return -EINVAL;
		if (rma->op == SSEMU_RMA_COMPARE) {
			if ((uint64_t)ilen != rma->len ||
			    (uint64_t)clen != rma->len)
				return -EINVAL;
			if (rma->len > max / 2)
				return -EMSGSIZE;
			payload = 2 * rma->len;
			break;
		}
		if (clen)
			return -EINVAL;
		if (rma->aop == SSEMU_AOP_READ) {
			/* no operands travel; a provider may hand us its
			 * (ignored) operand buffer all the same */
			if (ilen && (uint64_t)ilen != rma->len)
				return -EINVAL;
			payload = 0;
		} else {
			if ((uint64_t)ilen != rma->len)
				return -EINVAL;
			payload = rma->len;
		}
		break;
	default:
		return -EINVAL;
	}
	if (rma->len > (rma->flags & SSEMU_RMA_DIRECT ? SSEMU_RMA_DIRECT_MAX :
							max))
		return -EMSGSIZE;
	/* the buffer carries the request out and the results back (a direct
	 * read's stay in the target's memory) */
	need = rma->flags & SSEMU_RMA_DIRECT ? 0 : SSEMU_MAX(payload, rma->len);

	m = msg_alloc(ep, need, &mi);
	if (!m)
		return -EAGAIN;
	m->dst = rma->dest;
	m->dst_crc = ssemu_r_crc(r, 0, &rma->dest, sizeof(rma->dest));
	m->tclass = rma->tclass;
	m->flags = rma->flags;
	m->len = payload;
	memcpy(m->hdr, rma->hdr, sizeof(m->hdr));
	m->cookie = rma->cookie;
	m->npkts = payload ? (uint32_t)((payload + c->mtu - 1) / c->mtu) : 1;
	m->rma_op = (uint8_t)rma->op;
	m->aop = (uint8_t)rma->aop;
	m->dtype = (uint8_t)rma->dtype;
	m->rma_len = rma->len;
	m->key = rma->key;
	m->raddr = rma->addr;
	/* the target checks it before it touches memory, and does what
	 * this says (not what the slot may say by then) */
	desc = (struct ssemu_rma_desc){
		.key = rma->key, .raddr = rma->addr, .rma_len = rma->len,
		.flags = (uint32_t)rma->flags, .op = (uint8_t)rma->op,
		.aop = (uint8_t)rma->aop, .dtype = (uint8_t)rma->dtype,
	};
	crcp = post_crc(r, &crc, ssemu_ep_addr(ep), rma->hdr, payload, &desc);
	p = msg_data(r, m);
	ret = 0;
	if (payload)
		ret = copy_iov(&p, rma->iov, rma->iov_count, crcp);
	if (!ret && rma->op == SSEMU_RMA_COMPARE)
		ret = copy_iov(&p, rma->cmp, rma->cmp_count, crcp);
	if (ret)
		return ret;
	m->crc = crcp ? crc : 0;
	return msg_post(ep, m, mi, rma->cookie);
}

/* Endpoint slots of ready word @w into @slots (from *@n, up to @max),
 * their bits cleared.  @return whether the word is empty now. */
static bool ready_take(uint64_t *word, uint32_t w, uint32_t *slots,
		       uint32_t *n, uint32_t max)
{
	while (*word && *n < max) {
		slots[(*n)++] = w * 64 + (uint32_t)__builtin_ctzll(*word);
		*word &= *word - 1;
	}
	return !*word;
}

int ssemu_fabric_ready(struct ssemu_fabric *f, uint32_t *slots, uint32_t max)
{
	struct ssemu_region *r;
	uint32_t words, nsum, w, k, n = 0;
	uint64_t *bits, sum;
	int ret;

	if (!f || (max && !slots))
		return -EINVAL;
	if (f->store != SSEMU_STORE_PRIVATE)
		return -ENOTSUP;
	ret = ssemu_region_lock(f->r);
	if (ret)
		return ret;
	r = f->r;
	bits = ssemu_r_bits(r, r->ready_off);
	words = ssemu_bm_words(r->neps);
	nsum = ssemu_bm_sum_words(words);
	if (!nsum) {
		for (w = 0; w < words && n < max; w++)
			ready_take(&bits[w], w, slots, &n, max);
	}
	/* (the words the summary names) */
	for (k = 0; k < nsum && n < max; k++) {
		for (sum = bits[words + k]; sum && n < max; sum &= sum - 1) {
			w = k * 64 + (uint32_t)__builtin_ctzll(sum);
			if (w < words && !ready_take(&bits[w], w, slots, &n,
						     max))
				continue;
			bits[words + k] &= ~(1ULL << (w % 64));
		}
	}
	ssemu_region_unlock(r);
	return ssemu_fab_check(f) ? -EIO : (int)n;
}

void msg_watch_freed(struct ssemu_region *r, uint32_t mi)
{
	uint32_t epi = ssemu_msg_ep(r, mi), n = r->nwatch_freed;

	/* (a count or flag written by someone else costs a run a stop) */
	if (epi >= r->neps || !ssemu_load_relaxed(&ssemu_r_ep(r, epi)->watch))
		return;
	r->watch_hit = 1;
	if (n && n <= SSEMU_WATCH_FREED && r->watch_freed[n - 1] == epi)
		return;
	if (n < SSEMU_WATCH_FREED)
		r->watch_freed[n] = epi;
	if (n <= SSEMU_WATCH_FREED)
		r->nwatch_freed = n + 1;
}

int ssemu_fabric_watched(struct ssemu_fabric *f, uint32_t *slots,
			 uint32_t max)
{
	struct ssemu_region *r;
	uint32_t n, k;
	int ret;

	if (!f || (max && !slots))
		return -EINVAL;
	r = f->r;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	n = r->nwatch_freed;
	if (n > SSEMU_WATCH_FREED || n > max) {
		ret = -ENOSPC;
	} else {
		for (k = 0; k < n; k++)
			slots[k] = r->watch_freed[k];
		ret = (int)n;
	}
	ssemu_region_unlock(r);
	return ssemu_fab_check(f) ? -EIO : ret;
}

int ssemu_ep_watch(struct ssemu_ep *ep, bool on)
{
	struct ssemu_region *r;
	int ret;

	if (!ep)
		return -EINVAL;
	r = ep->r;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	ssemu_ep_watch_set(r, ssemu_r_ep(r, ep->index), on);
	ssemu_region_unlock(r);
	return ssemu_fab_check(ep->nic->fab) ? -EIO : 0;
}

/* Completion @ev of one of @ep's posts: its cookie the one it was posted
 * with.  @return false if @ep owes no such completion. */
static bool completion_owed(struct ssemu_ep *ep, struct ssemu_event *ev)
{
	uint32_t per = ep->nic->fab->cfg->msgs_per_ep, first = ep->index * per;

	return ev->slot >= first && ev->slot - first < per &&
	       owed_take(ep, ev->slot - first, ev->gen, &ev->cookie);
}

SSEMU_HOT
int ssemu_ep_poll(struct ssemu_ep *ep, struct ssemu_event *ev, int max)
{
	struct ssemu_ring *ring = ep->ev_ring;
	int n = 0;

	if (ssemu_fab_check(ep->nic->fab))
		return -EIO;
	/* (the ring's geometry is checked here, its offset by the engine) */
	if (SSEMU_BAD(ep->r, !ssemu_ring_sane(ring, ep->r->config.ev_ring,
					      sizeof(struct ssemu_event)),
		      "endpoint %u: its event ring's control block is corrupt",
		      ep->index))
		return -EIO;
	while (n < max && !ssemu_ring_pop(ring, &ev[n])) {
		/* (an event is the engine's word on a message: it must be
		 * what the engine pushed) */
		if (SSEMU_BAD(ep->r,
			      ev[n].crc != ssemu_event_crc(ep->r, &ev[n]),
			      "endpoint %u: an event in its ring changed "
			      "after it was pushed (its CRC fails)",
			      ep->index))
			return -EIO;
		if (ep->owed && (ev[n].type == SSEMU_EV_SEND_DONE ||
				 ev[n].type == SSEMU_EV_RMA_DONE) &&
		    SSEMU_BAD(ep->r, !completion_owed(ep, &ev[n]),
			      "endpoint %u: a completion for message slot %u "
			      "(generation %u) it has no post of (the slot "
			      "changed in the segment)", ep->index,
			      ev[n].slot, ev[n].gen))
			return -EIO;
		if (ev[n].type == SSEMU_EV_RECV)
			ssemu_tl(SSEMU_TL_POLL_RECV, ep->index);
		n++;
	}
	return n;
}

/*
 * The message behind a RECV or RMA_DONE event, after checking what the
 * ring said, and its payload's address (ep->ck_data), taken from the same
 * read of the slot's buffer index as the check: a write to the slot after
 * the check cannot move it outside the buffers.
 */
static struct ssemu_msg *event_msg_check(struct ssemu_ep *ep,
					 const struct ssemu_event *ev)
{
	struct ssemu_region *r = ep->r;
	struct ssemu_msg *m;
	uint32_t buf;

	if (!ev || ev->slot >= ep->nic->fab->nmsgs || ssemu_fab_check(ep->nic->fab))
		return NULL;
	m = ssemu_r_msg(r, ev->slot);
	if (m->gen != ev->gen)
		return NULL;
	if (ev->type == SSEMU_EV_RECV) {
		if (m->rma_op || m->len != ev->len)
			return NULL;
	} else if (ev->type == SSEMU_EV_RMA_DONE) {
		/* only the initiator's own slots */
		if (!m->rma_op || m->rma_len != ev->len ||
		    ssemu_msg_ep(r, ev->slot) != ep->index)
			return NULL;
	} else {
		return NULL;
	}
	buf = ssemu_load_relaxed(&m->buf);
	if (buf != SSEMU_NONE && buf >= ep->nic->fab->nbufs)
		return NULL;
	ep->ck_msg = m;
	ep->ck_data = buf == SSEMU_NONE ? m->data : ssemu_r_buf(r, buf);
	ep->ck_slot = ev->slot;
	ep->ck_gen = ev->gen;
	ep->ck_type = ev->type;
	return m;
}

/*
 * event_msg_check for @ev, once per event: the answer it gave for this
 * event if it was asked since the last release (the slot is ours to read
 * until we release it: what the check found still holds), else the check.
 * The payload's address is then ep->ck_data.
 */
SSEMU_HOT
static struct ssemu_msg *event_msg(struct ssemu_ep *ep,
				   const struct ssemu_event *ev)
{
	if (ev && ep->ck_msg && ev->slot == ep->ck_slot &&
	    ev->gen == ep->ck_gen && ev->type == ep->ck_type)
		/* (a segment cut short is never read again) */
		return ssemu_fab_check(ep->nic->fab) ? NULL : ep->ck_msg;
	return event_msg_check(ep, ev);
}

/* event_msg for the release of @ev, which forgets it: after the release
 * the slot may be reused. */
static struct ssemu_msg *event_msg_release(struct ssemu_ep *ep,
					   const struct ssemu_event *ev)
{
	struct ssemu_msg *m = event_msg(ep, ev);

	ep->ck_msg = NULL;
	return m;
}

/* A RECV that carries its payload (SSEMU_EV_CARRY), or has none
 * (SSEMU_EV_NO_DATA): no slot behind it. */
static inline bool ev_carried(const struct ssemu_event *ev)
{
	return ev && ev->type == SSEMU_EV_RECV && ev->slot == SSEMU_NONE &&
	       (ev->len <= SSEMU_EV_CARRY || (ev->flags & SSEMU_EV_NO_DATA));
}

/* The payload of @ev and (*@mp) its message slot, or NULL; a carried
 * RECV's is in the event itself (*@mp NULL: recv_crc_bad reports the
 * engine's check of it). */
SSEMU_HOT
static const uint8_t *event_payload(struct ssemu_ep *ep,
				    const struct ssemu_event *ev,
				    struct ssemu_msg **mp)
{
	struct ssemu_msg *m;

	if (ev_carried(ev)) {
		*mp = NULL;
		return ev->flags & SSEMU_EV_NO_DATA ? NULL : ev->data;
	}
	m = event_msg(ep, ev);

	if (!m)
		return NULL;
	/* an RMA has data only if it brought results back (a direct read
	 * left them at the target: ssemu_event_read) */
	if (ev->type == SSEMU_EV_RMA_DONE &&
	    (ev->status || m->rma_op == SSEMU_RMA_WRITE ||
	     m->rma_op == SSEMU_RMA_ATOMIC || (m->flags & SSEMU_RMA_DIRECT)))
		return NULL;
	*mp = m;
	return ep->ck_data;
}

struct ssemu_msg *event_rma_direct(struct ssemu_ep *ep,
				   const struct ssemu_event *ev)
{
	struct ssemu_msg *m;

	if (!ev || ev->type != SSEMU_EV_RMA_DONE || ev->status)
		return NULL;
	m = event_msg(ep, ev);
	if (!m || m->rma_op != SSEMU_RMA_READ ||
	    !(m->flags & SSEMU_RMA_DIRECT))
		return NULL;
	return m;
}

/* The count and the log of a payload found changed since its CRC was
 * taken (the first of the fabric's at WARN, the rest at DEBUG), by
 * endpoint @epi: @what bytes from port @port. */
static void crc_failed(struct ssemu_region *r, uint32_t epi,
		       const char *what, uint64_t len, uint32_t port,
		       const char *since)
{
	ssemu_log(ssemu_fetch_add(&r->crc_errors, 1) ? SSEMU_LOG_DEBUG :
						      SSEMU_LOG_WARN,
		  "endpoint %u: %s %llu bytes from port %u failed their CRC: "
		  "they changed in the segment after %s; not handed out",
		  epi, what, (unsigned long long)len, port, since);
}

/*
 * A payload that is not what it was when its CRC was taken: a received
 * message's header or payload (the CRC taken at the post), or an RMA's
 * results (taken by the target when it produced them).  Counted, logged,
 * never handed out.  A carried RECV (@m NULL) was checked by the engine
 * as it copied it into the event: its status says what it found.
 * @crc: the CRC of its head and its first @done bytes, already read
 * (NULL: none read, @done 0); the rest is read at @data.
 */
SSEMU_HOT
static bool payload_bad(struct ssemu_ep *ep, const struct ssemu_event *ev,
			const struct ssemu_msg *m, const uint8_t *data,
			const uint32_t *crc, size_t done)
{
	struct ssemu_region *r = ep->r;
	bool recv = ev->type == SSEMU_EV_RECV;
	uint32_t c;

	if (!m)
		return ev->status != 0;
	if (!r->shm_mode)
		return false;	/* (no CRCs: ssemu_r_crc) */
	if (crc)
		c = *crc;
	else
		c = recv ? ssemu_msg_crc_head(ev->src, ev->hdr, ev->len) : 0;
	c = ssemu_crc(c, data + done, (size_t)ev->len - done);
	if (c == m->crc)
		return false;
	crc_failed(r, ep->index,
		   recv ? "a message of" : "the results of an RMA operation,",
		   ev->len, SSEMU_ADDR_PORT(ev->src),
		   recv ? "the post" : "the target produced them");
	return true;
}

/* The payload of @ev at @data, all of it read in the segment. */
static bool recv_crc_bad(struct ssemu_ep *ep, const struct ssemu_event *ev,
			 const struct ssemu_msg *m, const void *data)
{
	return payload_bad(ep, ev, m, data, NULL, 0);
}

const void *ssemu_event_data(struct ssemu_ep *ep, const struct ssemu_event *ev)
{
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);

	if (!data) {
		errno = EINVAL;
		return NULL;
	}
	if (recv_crc_bad(ep, ev, m, data)) {
		errno = EBADMSG;
		return NULL;
	}
	return data;
}

SSEMU_HOT
const void *ssemu_event_payload(struct ssemu_ep *ep,
				const struct ssemu_event *ev)
{
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);

	if (!data)
		errno = EINVAL;
	return data;
}

int ssemu_event_verify(struct ssemu_ep *ep, const struct ssemu_event *ev)
{
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);

	if (!data)
		return -EINVAL;
	return recv_crc_bad(ep, ev, m, data) ? -EBADMSG : 0;
}

/*
 * A payload's first @len bytes written to bytes [@off, @off + len) of the
 * application's @iov (as far as it reaches), and, if @crc is not NULL,
 * added to *@crc from the same read (ssemu_crc_copy): the CRC is of what
 * the application received, though the segment may change meanwhile.
 * Run under the fault guard; done counts what was written.
 */
struct out_args {
	const struct iovec *iov;
	size_t count, off;
	const uint8_t *src;
	size_t len, done;
	uint32_t *crc;
	bool fault;	/* an entry with a length at address 0 */
};

SSEMU_HOT
static void out_fn(void *arg)
{
	struct out_args *a = arg;
	size_t i, off = a->off, n;
	uint8_t *dst;

	for (i = 0; i < a->count && a->done < a->len; i++) {
		if (off >= a->iov[i].iov_len) {
			off -= a->iov[i].iov_len;
			continue;
		}
		if (!a->iov[i].iov_base) {
			a->fault = true;
			return;
		}
		n = SSEMU_MIN(a->iov[i].iov_len - off, a->len - a->done);
		dst = (uint8_t *)a->iov[i].iov_base + off;
		if (a->crc)
			*a->crc = ssemu_crc_copy(*a->crc, dst,
						 a->src + a->done, n);
		else
			memcpy(dst, a->src + a->done, n);
		a->done += n;
		off = 0;
	}
}

/*
 * The payload of @ev (@data, and @m its slot or NULL, as event_payload
 * gives them) out to @iov: its first @len bytes, at @off into the iov,
 * and the whole message checked against its CRC (payload_bad), the bytes
 * written from the read that wrote them and the rest from the segment.  A
 * carried payload that failed the engine's check is not written.
 * @return the bytes written, -EFAULT (the application's memory cannot be
 * written: nothing checked), or -EBADMSG.
 */
SSEMU_HOT
static ssize_t payload_out(struct ssemu_ep *ep, const struct ssemu_event *ev,
			   const uint8_t *data, const struct ssemu_msg *m,
			   const struct iovec *iov, size_t count, size_t off,
			   size_t len)
{
	bool check = m && ep->r->shm_mode;
	uint32_t crc = 0;
	struct out_args a = {
		.iov = iov, .count = count, .off = off, .src = data,
		.len = len, .crc = check ? &crc : NULL,
	};
	int ret;

	if (!m && ev->status)
		return -EBADMSG;
	if (check && ev->type == SSEMU_EV_RECV)
		crc = ssemu_msg_crc_head(ev->src, ev->hdr, ev->len);
	ret = ssemu_guarded(out_fn, &a);
	if (!ret && a.fault)
		ret = -EFAULT;
	if (ret)
		return ret;
	return payload_bad(ep, ev, m, data, &crc, a.done) ? -EBADMSG :
							    (ssize_t)a.done;
}

size_t ssemu_event_copy(struct ssemu_ep *ep, const struct ssemu_event *ev,
			size_t off, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	struct ssemu_msg *m;
	const uint8_t *data = event_payload(ep, ev, &m);
	ssize_t n;

	if (!data || off >= ev->len)
		return 0;
	if (len > ev->len - off)
		len = ev->len - off;
	/* a part: checked on the shared payload before it is copied */
	if (off || len < ev->len) {
		if (recv_crc_bad(ep, ev, m, data))
			return 0;
		memcpy(buf, data + off, len);
		return len;
	}
	/* the whole message: checked on the copy, from the same read */
	iov.iov_len = len;
	n = payload_out(ep, ev, data, m, &iov, 1, 0, len);
	return n < 0 ? 0 : (size_t)n;
}

SSEMU_HOT
ssize_t ssemu_event_copy_iov(struct ssemu_ep *ep, const struct ssemu_event *ev,
			     const struct iovec *iov, size_t count, size_t off,
			     size_t len)
{
	struct ssemu_msg *m;
	const uint8_t *data;

	if (!ep || !ev || (count && !iov))
		return -EINVAL;
	data = event_payload(ep, ev, &m);
	if (!data)
		return -EINVAL;
	return payload_out(ep, ev, data, m, iov, count, off,
			   SSEMU_MIN(len, (size_t)ev->len));
}

SSEMU_HOT
void ssemu_event_release(struct ssemu_ep *ep, const struct ssemu_event *ev)
{
	struct ssemu_msg *m = event_msg_release(ep, ev);

	/* an RMA's initiator is done with its slot (the target side sets
	 * RXDONE); pairs with the acquire in msg_alloc */
	if (m && ev->type == SSEMU_EV_RMA_DONE) {
		ssemu_fetch_or(ssemu_msg_state(ep->r, m), SSEMU_MSG_TXDONE);
		return;
	}
	/* pairs with the acquire in the sender's slot allocation */
	if (m && !(ssemu_fetch_or(ssemu_msg_state(ep->r, m),
				  SSEMU_MSG_RXDONE) & SSEMU_MSG_RXDONE))
		ssemu_fetch_add(&ssemu_r_ep(ep->r, ep->index)->released, 1);
}

/* ------------------------------------------------------------------ */
/* The engine's side                                                   */
/* ------------------------------------------------------------------ */

/* Wake the sleepers on @word, if there are any (step 4 above). */
static void futex_bump(uint32_t *word, uint32_t *waiters)
{
	if (!ssemu_load_relaxed(waiters))
		return;
	/* pairs with the acquire of the word in wait_events */
	ssemu_fetch_add(word, 1);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* After an event push to @ep: wake who sleeps on it or on its NIC, and in
 * a private store mark it ready (ssemu_fabric_ready). */
SSEMU_HOT
static void ep_wake(struct ssemu_region *r, struct ssemu_ep_sh *ep)
{
	struct ssemu_nic_sh *n;
	uint32_t epi = (uint32_t)(ep - ssemu_r_ep(r, 0));

	/* (under the lock, as ssemu_fabric_ready reads them) */
	if (r->ready_on)
		ssemu_bm_mark(ssemu_r_bits(r, r->ready_off),
			      ssemu_bm_words(r->neps), epi);

	/* (under the lock, as the waiters raise their counts: step 4) */
	futex_bump(&ep->ev_futex, &ep->waiters);
	n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	futex_bump(&n->ev_futex, &n->waiters);
}

/* A message sent with SSEMU_SEND_NO_DATA: honoured in a private store
 * alone (the post refuses it in a shared one, where the bit in a slot
 * would be the segment's damage: such a message is delivered, and
 * checked, with its bytes). */
static inline bool no_data(const struct ssemu_region *r,
			   const struct ssemu_msg *m)
{
	return !r->shm_mode && (m->flags & SSEMU_SEND_NO_DATA);
}

/* recv_carried for @m, of @len bytes as read once by the caller. */
static inline bool carries(const struct ssemu_region *r,
			   const struct ssemu_msg *m, uint64_t len)
{
	return !m->rma_op &&
	       ((len <= SSEMU_EV_CARRY &&
		 ssemu_load_relaxed(&m->buf) == SSEMU_NONE) || no_data(r, m));
}

/*
 * Does message @m's RECV carry its payload (SSEMU_EV_CARRY): a message,
 * not an RMA, of at most that many bytes, in its slot (its payload is
 * there, not in a buffer), or one with no payload (SSEMU_SEND_NO_DATA)?
 * Then the receiver never reads the slot, and the engine gives it back
 * once the event is out (carried_done).
 */
bool recv_carried(const struct ssemu_region *r, const struct ssemu_msg *m)
{
	return carries(r, m, ssemu_load_relaxed(&m->len));
}

/* A RECV carried in its event is out: the slot is given back for the
 * receiver, who holds nothing of it (the slot's last touch here: its
 * owner may reuse it from now on). */
SSEMU_HOT
static void carried_done(struct ssemu_region *r, struct ssemu_ep_sh *ep,
			 struct ssemu_msg *m)
{
	ssemu_store_relaxed(&ep->delivered, ep->delivered - 1);
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
}

/* The RECV (or RMA_REMOTE) event of message @mi to @ep's ring: false if
 * the ring is full.  *@carried: its payload went with it (recv_carried,
 * as the slot said when it was read here); the caller calls carried_done
 * after its last touch of the slot. */
SSEMU_HOT
static bool push_recv(struct ssemu_region *r, struct ssemu_ep_sh *ep,
		      uint32_t mi, bool *carried)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_event ev = {
		.type = SSEMU_EV_RECV,
		.src = m->src,
		.tclass = m->tclass,
		.len = m->len,
		.cookie = 0,
		.time = ssemu_r_now(r),
		.posted = m->post_time,
		.slot = mi,
		.gen = m->gen,
	};
	*carried = false;
	if (m->rma_op) {
		/* an RMA done to this endpoint's memory: no slot to hold */
		ev.type = SSEMU_EV_RMA_REMOTE;
		ev.len = m->rma_len;
		ev.op = m->rma_op;
		ev.addr = m->raddr;
		ev.slot = SSEMU_NONE;
		ev.gen = 0;
	}

	struct ssemu_ring *ring = ssemu_r_ring(r, ep->ev_ring_off);

	memcpy(ev.hdr, m->hdr, sizeof(ev.hdr));
	if (ev.type == SSEMU_EV_RECV && carries(r, m, ev.len)) {
		*carried = true;
		ev.slot = SSEMU_NONE;
		ev.gen = 0;
		if (no_data(r, m)) {
			/* nothing to read: the header and the length are
			 * the message */
			ev.flags = SSEMU_EV_NO_DATA;
		} else {
			/* carried: header and payload copied, then checked
			 * against the CRC the sender took at the post; the
			 * event's own CRC covers them from here on */
			memcpy(ev.data, m->data, ev.len);
			if (ssemu_msg_crc(r, ev.src, ev.hdr, ev.len,
					  ev.data) !=
			    ssemu_load_relaxed(&m->crc)) {
				ev.status = -EBADMSG;
				crc_failed(r,
					   (uint32_t)(ep - ssemu_r_ep(r, 0)),
					   "a message of", ev.len,
					   SSEMU_ADDR_PORT(ev.src), "the post");
			}
		}
	}
	/* Where it lands, so crash recovery can tell whether it did.  Not a
	 * word is written to the slot after the push (but for a carried
	 * RECV's state word, carried_done, which gives it back): from then
	 * on the receiver may release it and its owner reuse it. */
	m->rx_pos = ssemu_load_relaxed(&ring->tail);
	m->mflags |= SSEMU_MSGF_RXPUSH;
	ev.crc = ssemu_event_crc(r, &ev);
	if (ssemu_ring_push_seen(ring, &ev)) {
		m->mflags &= ~SSEMU_MSGF_RXPUSH;
		return false;
	}
	ssemu_tl(SSEMU_TL_PUSH_RECV, mi);
	return true;
}

SSEMU_HOT
static bool push_send_done(struct ssemu_region *r, struct ssemu_ep_sh *ep,
			   uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_event ev = {
		.type = SSEMU_EV_SEND_DONE,
		.status = m->status,
		.src = m->src,
		.tclass = m->tclass,
		.len = m->len,
		.cookie = m->cookie,
		.time = ssemu_r_now(r),
		.posted = m->post_time,
		.slot = mi,
		.gen = m->gen,
	};

	struct ssemu_ring *ring = ssemu_r_ring(r, ep->ev_ring_off);
	/* (read before the push: once an RMA_DONE is out, its initiator
	 * may release it and take the slot for a new message) */
	uint8_t rma = m->rma_op;

	if (rma) {
		ev.type = SSEMU_EV_RMA_DONE;
		ev.len = m->rma_len;
		ev.op = rma;
		ev.addr = m->raddr;
	}
	m->tx_pos = ssemu_load_relaxed(&ring->tail);
	m->mflags |= SSEMU_MSGF_TXPUSH;
	ev.crc = ssemu_event_crc(r, &ev);
	if (ssemu_ring_push_seen(ring, &ev)) {
		m->mflags &= ~SSEMU_MSGF_TXPUSH;
		return false;
	}
	/* an RMA's slot stays the initiator's until it releases the event
	 * (its results live there); not a word of it is read or written
	 * from here on */
	if (rma)
		return true;
	/* the slot may be reused once the receiver is done too */
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
	return true;
}

/* The receiving endpoint of @m (its index in @epi), or an error. */
SSEMU_HOT
int recv_ep(struct ssemu_region *r, struct ssemu_msg *m, uint32_t *epi)
{
	uint32_t nic = ssemu_port_nic(r, SSEMU_ADDR_PORT(m->dst));

	if (nic == SSEMU_NONE ||
	    SSEMU_ADDR_PID(m->dst) >= r->config.eps_per_nic)
		return -EHOSTUNREACH;
	*epi = ssemu_r_nic_eps(r, nic)[SSEMU_ADDR_PID(m->dst)];
	return *epi < r->neps && ssemu_r_ep(r, *epi)->open ? 0 :
							       -ECONNREFUSED;
}

/*
 * The target side of an RMA is done with its slot once its RMA_REMOTE
 * event (if any) is out and its response packets are all injected: the
 * last of the two sets RXDONE, the slot's last write at the target.
 */
SSEMU_HOT
void rma_rx_done(struct ssemu_region *r, struct ssemu_msg *m)
{
	if (m->rma_op &&
	    !(m->mflags & (SSEMU_MSGF_RXOVF | SSEMU_MSGF_RESPQ)))
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
}

/* Hand a RECV (or RMA_REMOTE) event to endpoint @epi now, or queue it for
 * ring space. */
SSEMU_HOT
void recv_event(struct ssemu_region *r, uint32_t epi, uint32_t mi)
{
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	bool carried;

	if (ssemu_ep_rings_bad(r, epi))
		return;
	m->rx_next = SSEMU_NONE;
	if (ep->rx_head == SSEMU_NONE && push_recv(r, ep, mi, &carried)) {
		ep_wake(r, ep);
		rma_rx_done(r, m);
		if (carried)
			carried_done(r, ep, m);
		return;
	}
	ssemu_bm_set(ssemu_r_bits(r, r->ovf_off), ssemu_bm_words(r->neps), epi);
	m->mflags |= SSEMU_MSGF_RXOVF;
	/* (a slot can wait on a full ring: a watched run stops for its
	 * caller to poll, ssemu_fabric_run_until_watched) */
	r->watch_hit = 1;
	if (ep->rx_head == SSEMU_NONE)
		ep->rx_head = mi;
	else if (SSEMU_BAD(r, ep->rx_tail >= r->nmsgs, "endpoint %u: "
			   "receive overflow tail %u", epi, ep->rx_tail))
		return;
	else
		ssemu_r_msg(r, ep->rx_tail)->rx_next = mi;
	ep->rx_tail = mi;
}

SSEMU_HOT
int recv_target(struct ssemu_region *r, uint32_t mi, uint32_t *epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	int ret;

	ret = m->status;
	if (!ret && ssemu_r_crc(r, 0, &m->dst, sizeof(m->dst)) != m->dst_crc) {
		/* its destination changed in the segment after the post (its
		 * packets went where the slot says now): it goes to nobody,
		 * its sender gets the error */
		ssemu_log(ssemu_fetch_add(&r->crc_errors, 1) ?
				  SSEMU_LOG_DEBUG : SSEMU_LOG_WARN,
			  "a message from port %u names port %u, not the "
			  "destination it was posted to: its slot changed in "
			  "the segment; not delivered",
			  SSEMU_ADDR_PORT(m->src), SSEMU_ADDR_PORT(m->dst));
		ret = m->status = -EIO;
	}
	if (!ret)
		ret = recv_ep(r, m, epi);
	if (ret) {
		/* (a packet that failed its CRC failed the message: it is
		 * never delivered, its sender gets the error; otherwise
		 * nobody is at the destination any more) */
		if (!m->status)
			r->msgs_unreachable++;
		m->status = ret;
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	}
	return ret;
}

SSEMU_HOT
void deliver_recv(struct ssemu_region *r, uint32_t mi, uint32_t epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct ssemu_nic_sh *n;

	n = ssemu_r_nic(r, ssemu_ep_nic(r, epi));
	n->stats.rx_msgs++;
	n->stats.rx_bytes += m->len;
	ssemu_tel_deliver(r, mi);
	ssemu_store_relaxed(&ssemu_r_ep(r, epi)->delivered,
			    ssemu_r_ep(r, epi)->delivered + 1);
	recv_event(r, epi, mi);
}

SSEMU_HOT
void complete_tx(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t epi = ssemu_msg_ep(r, mi);
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);

	if (ssemu_gen_msg(r, mi)) {
		ssemu_gen_complete(r, mi);	/* a modelled job's */
		return;
	}
	ssemu_gen_real_done(r, m);
	/* the endpoint that sent it is gone (maybe reopened by someone else) */
	if (!ep->open || ep->gen != m->ep_gen) {
		msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
		return;
	}
	if (ssemu_ep_rings_bad(r, epi))
		return;
	m->tx_next = SSEMU_NONE;
	if (ep->tx_head == SSEMU_NONE && push_send_done(r, ep, mi)) {
		ep_wake(r, ep);
		return;
	}
	ssemu_bm_set(ssemu_r_bits(r, r->ovf_off), ssemu_bm_words(r->neps), epi);
	m->mflags |= SSEMU_MSGF_TXOVF;
	r->watch_hit = 1;
	if (ep->tx_head == SSEMU_NONE)
		ep->tx_head = mi;
	else if (SSEMU_BAD(r, ep->tx_tail >= r->nmsgs, "endpoint %u: send "
			   "overflow tail %u", epi, ep->tx_tail))
		return;
	else
		ssemu_r_msg(r, ep->tx_tail)->tx_next = mi;
	ep->tx_tail = mi;
}

void ssemu_model_flush_overflow(struct ssemu_region *r, uint32_t epi)
{
	struct ssemu_ep_sh *ep = ssemu_r_ep(r, epi);
	bool pushed = false, carried;
	struct ssemu_msg *m;
	uint32_t mi, next;

	/* Read the links before pushing: once its event is out, a slot may
	 * be released and reused by its owner at any moment. */
	if (ssemu_ep_rings_bad(r, epi))
		return;
	while ((mi = ep->rx_head) != SSEMU_NONE) {
		if (SSEMU_BAD(r, mi >= r->nmsgs, "a receive overflow list: "
			      "message slot %u of %u", mi, r->nmsgs))
			return;
		m = ssemu_r_msg(r, mi);
		next = m->rx_next;
		m->mflags &= ~SSEMU_MSGF_RXOVF;
		if (!push_recv(r, ep, mi, &carried)) {
			m->mflags |= SSEMU_MSGF_RXOVF;
			break;
		}
		ep->rx_head = next;
		pushed = true;
		rma_rx_done(r, m);
		if (carried)
			carried_done(r, ep, m);
	}
	while ((mi = ep->tx_head) != SSEMU_NONE) {
		if (SSEMU_BAD(r, mi >= r->nmsgs, "a send overflow list: "
			      "message slot %u of %u", mi, r->nmsgs))
			return;
		m = ssemu_r_msg(r, mi);
		next = m->tx_next;
		m->mflags &= ~SSEMU_MSGF_TXOVF;
		if (!push_send_done(r, ep, mi)) {
			m->mflags |= SSEMU_MSGF_TXOVF;
			break;
		}
		ep->tx_head = next;
		pushed = true;
	}
	if (pushed)
		ep_wake(r, ep);
}

/* Fail a queued message that cannot be sent at all. */
void fail_queued(struct ssemu_region *r, uint32_t mi, int32_t status)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->status = status;
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	complete_tx(r, mi);
}
