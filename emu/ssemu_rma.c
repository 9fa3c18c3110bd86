/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Remote memory access, the target NIC's side: the memory region table
 * lookup (key, range, access, and the region's VNI), the operation on the
 * target's memory (in this process, or in another by cross-memory
 * attach), and the results queued for the way back (ssemu_nic.c sends
 * them).  A direct read (SSEMU_RMA_DIRECT) leaves its results in the
 * target's memory: the target NIC only checks it and says where they are,
 * and the initiator's process copies them from there itself
 * (ssemu_event_read, at the end: the one function here that runs outside
 * the engine).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* process_vm_readv */
#endif
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ssemu_model_int.h"

static struct ssemu_mr_sh *mr_find(struct ssemu_region *r, uint32_t nic,
				   uint64_t key)
{
	struct ssemu_mr_sh *t = ssemu_r_mrs(r, nic);
	uint32_t i, hwm = SSEMU_MIN(ssemu_r_nic(r, nic)->mr_hwm,
				    (uint32_t)SSEMU_MRS_PER_NIC);

	for (i = 0; i < hwm; i++)
		if (t[i].in_use && t[i].key == key)
			return &t[i];
	return NULL;
}

/* Does region @e hold the @len bytes peers name from address @addr? */
static inline bool mr_covers(const struct ssemu_mr_sh *e, uint64_t addr,
			     uint64_t len)
{
	return addr >= e->base && addr - e->base <= e->len &&
	       len <= e->len - (addr - e->base);
}

/* Move @len bytes between another process's memory at @raddr and ours at
 * @local by cross-memory attach. */
static int cma(int32_t pid, bool write, uint64_t raddr, uint8_t *local,
	       size_t len)
{
	static bool warned;
	struct iovec l, rv;
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		l.iov_base = local + done;
		l.iov_len = len - done;
		rv.iov_base = (void *)(uintptr_t)(raddr + done);
		rv.iov_len = len - done;
		n = write ? process_vm_writev(pid, &l, 1, &rv, 1, 0) :
			    process_vm_readv(pid, &l, 1, &rv, 1, 0);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return -EFAULT;
		if (errno == EPERM) {
			if (!warned) {
				warned = true;
				ssemu_log(SSEMU_LOG_INFO, "cross-memory attach "
					  "to process %d was refused (EPERM: "
					  "ptrace restrictions?): its RMA "
					  "operations wait for it to do them",
					  pid);
			}
			return SSEMU_RMA_PARK;
		}
		return -errno;
	}
	return 0;
}

/* The access an operation needs from the region. */
static uint32_t rma_access(const struct ssemu_msg *m)
{
	switch (m->rma_op) {
	case SSEMU_RMA_WRITE:
	case SSEMU_RMA_ATOMIC:
		return SSEMU_MR_WRITE;
	case SSEMU_RMA_READ:
		return SSEMU_MR_READ;
	case SSEMU_RMA_FETCH:
		if (m->aop == SSEMU_AOP_READ)
			return SSEMU_MR_READ;
		return SSEMU_MR_READ | SSEMU_MR_WRITE;
	default:
		return SSEMU_MR_READ | SSEMU_MR_WRITE;
	}
}

static bool rma_direct(const struct ssemu_msg *m)
{
	return m->rma_op == SSEMU_RMA_READ && (m->flags & SSEMU_RMA_DIRECT);
}

/* Bytes of data or operands an operation of @rlen bytes reads from its
 * request. */
static uint64_t rma_req_bytes(const struct ssemu_msg *m, uint64_t rlen)
{
	switch (m->rma_op) {
	case SSEMU_RMA_WRITE:
		return rlen;
	case SSEMU_RMA_ATOMIC:
	case SSEMU_RMA_FETCH:
		return m->aop == SSEMU_AOP_READ ? 0 : rlen;
	case SSEMU_RMA_COMPARE:
		return 2 * rlen;
	default:
		return 0;
	}
}

static bool rma_has_result(const struct ssemu_msg *m)
{
	return m->rma_op == SSEMU_RMA_READ || m->rma_op == SSEMU_RMA_FETCH ||
	       m->rma_op == SSEMU_RMA_COMPARE;
}

/*
 * Do @m's operation on the memory of the region it names in NIC @nic's
 * table: plainly if the region is this process's, else by cross-memory
 * attach (atomics read the target, apply into a copy and write it back;
 * the engine does one operation at a time, so that is atomic with respect
 * to every other fabric operation).  @buf is the message's buffer, of
 * @cap bytes, which rma_execute has checked holds @len (the request's
 * rma_len) bytes of results; they go into it.  @req is the request's
 * payload (data or operands) as checked against its CRC.  A refused
 * operation touches nothing.  @return the operation's status.
 */
static int rma_operate(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_msg *m, const uint8_t *req, uint8_t *buf,
		       uint64_t cap, uint64_t len)
{
	uint64_t off;
	struct ssemu_mr_sh *mr;
	uint8_t *tmp;
	const void *src, *cmp;
	size_t esize;
	bool local;
	int ret;

	mr = mr_find(r, nic, m->key);
	if (!mr)
		return -ENOKEY;
	if (ssemu_auth_mr_refused(r, nic, mr, m))
		return -EACCES;	/* a region of another VNI */
	if (!mr_covers(mr, m->raddr, len))
		return -ERANGE;
	if ((mr->access & rma_access(m)) != rma_access(m))
		return -EACCES;
	off = mr->addr + (m->raddr - mr->base);
	local = mr->pid == (int32_t)ssemu_self_pid();
	if (rma_direct(m)) {
		/* where the results are, for the initiator to copy them
		 * itself (ssemu_event_read): nothing touched here */
		struct ssemu_rma_direct d = {
			.addr = off,
			.pid = mr->pid,
			.nic = nic,
			.mr = (uint32_t)(mr - ssemu_r_mrs(r, nic)),
		};

		memcpy(buf, &d, sizeof(d));
		return 0;
	}
	if (!len)
		return 0;
	/* memory of another uid's process: its owner does the operation */
	if (!local && !ssemu_xuid_may_cma(r, nic))
		return SSEMU_RMA_PARK;
	/* This process's memory is accessed under the fault guard: a region
	 * unmapped since it was registered (or registered longer than its
	 * mapping) fails the operation with -EFAULT, as cma() does for
	 * another process's. */
	switch (m->rma_op) {
	case SSEMU_RMA_WRITE:
		if (local)
			return ssemu_copy_user((void *)(uintptr_t)off, req,
					       len);
		return cma(mr->pid, true, off, (void *)req, len);
	case SSEMU_RMA_READ:
		if (local)
			return ssemu_copy_user(buf, (void *)(uintptr_t)off,
					       len);
		return cma(mr->pid, false, off, buf, len);
	case SSEMU_RMA_ATOMIC:
	case SSEMU_RMA_FETCH:
	case SSEMU_RMA_COMPARE:
		break;
	default:
		return -EPROTO;
	}
	if (!ssemu_atomic_valid(m->rma_op, m->aop, m->dtype))
		return -EPROTO;
	esize = ssemu_datatype_size(m->dtype);
	if (len % esize ||
	    (m->rma_op == SSEMU_RMA_COMPARE && 2 * len > cap))
		return -EPROTO;
	src = m->aop == SSEMU_AOP_READ ? NULL : req;
	cmp = m->rma_op == SSEMU_RMA_COMPARE ? req + len : NULL;
	/* applied to a copy, so that memory it cannot read is left as it
	 * was */
	tmp = malloc(len);
	if (!tmp)
		return -ENOMEM;
	ret = local ? ssemu_copy_user(tmp, (void *)(uintptr_t)off, len) :
		      cma(mr->pid, false, off, tmp, len);
	if (!ret)
		ret = ssemu_atomic_apply(m->aop, m->dtype, tmp, src, cmp,
					 m->rma_op == SSEMU_RMA_ATOMIC ? NULL :
									  buf,
					 len / esize);
	if (!ret && m->aop != SSEMU_AOP_READ)
		ret = local ? ssemu_copy_user((void *)(uintptr_t)off, tmp,
					      len) :
			      cma(mr->pid, true, off, tmp, len);
	free(tmp);
	return ret;
}

/*
 * Do RMA @m at NIC @nic's memory, if its request is what the initiator
 * posted: its data or operands are checked against the CRC taken at the
 * post first (a request changed in the segment since touches nothing and
 * fails with -EIO, counted in crc_errors).  Results get a CRC of their
 * own, which the initiator checks when it reads them (ssemu_msg.c).
 */
static int rma_execute(struct ssemu_region *r, uint32_t nic,
		       struct ssemu_msg *slot)
{
	/* never trust the shared slot: what the operation reads of it is
	 * read once, into a snapshot (checked against the CRC with the
	 * data, and then the one the operation uses), and the buffer must
	 * hold it all */
	struct ssemu_msg snap, *m = &snap;
	struct ssemu_rma_desc desc;
	uint32_t bi = ssemu_load_relaxed(&slot->buf), crc;
	uint64_t len = ssemu_load_relaxed(&slot->len), rlen, cap;
	uint8_t *buf, *copy = NULL;
	const uint8_t *req;
	unsigned k;
	int ret;

	snap.src = ssemu_load_relaxed(&slot->src);
	snap.dst = ssemu_load_relaxed(&slot->dst);
	snap.vni = ssemu_load_relaxed(&slot->vni);
	snap.flags = ssemu_load_relaxed(&slot->flags);
	snap.rma_op = ssemu_load_relaxed(&slot->rma_op);
	snap.aop = ssemu_load_relaxed(&slot->aop);
	snap.dtype = ssemu_load_relaxed(&slot->dtype);
	snap.rma_len = rlen = ssemu_load_relaxed(&slot->rma_len);
	snap.key = ssemu_load_relaxed(&slot->key);
	snap.raddr = ssemu_load_relaxed(&slot->raddr);
	for (k = 0; k < SSEMU_HDR_WORDS; k++)
		snap.hdr[k] = ssemu_load_relaxed(&slot->hdr[k]);
	crc = ssemu_load_relaxed(&slot->crc);
	desc = (struct ssemu_rma_desc){
		.key = snap.key, .raddr = snap.raddr, .rma_len = rlen,
		.flags = snap.flags, .op = snap.rma_op, .aop = snap.aop,
		.dtype = snap.dtype,
	};

	if (bi != SSEMU_NONE && bi >= r->nbufs)
		return -EPROTO;
	cap = bi == SSEMU_NONE ? SSEMU_INLINE_MAX : r->config.buf_size;
	/* (a direct read's results stay at the target: it holds only where
	 * they are) */
	if (len > cap || (!rma_direct(m) && rlen > cap))
		return -EPROTO;
	/* the request carries what its operation reads, no less */
	if (len < rma_req_bytes(m, rlen))
		return -EPROTO;
	buf = bi == SSEMU_NONE ? slot->data : ssemu_r_buf(r, bi);
	req = buf;
	if (len && r->shm_mode) {
		/* checked on a copy of our own, which the operation then
		 * uses: the segment's may change after the check */
		copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, buf, len);
		req = copy;
	}
	/* (a request without data, a read, is checked too: all it asks is
	 * in its head and description) */
	if (r->shm_mode &&
	    ssemu_crc(ssemu_rma_crc_desc(ssemu_msg_crc_head(m->src, m->hdr,
							    len),
					 &desc),
		      req, (size_t)len) != crc) {
		free(copy);
		ssemu_r_nic(r, nic)->stats.crc_errors++;
		ssemu_log(ssemu_fetch_add(&r->crc_errors, 1) ?
				  SSEMU_LOG_DEBUG : SSEMU_LOG_WARN,
			  "an RMA request from port %u to port %u failed its "
			  "CRC: what it asks or its data changed in the "
			  "segment after the post; refused, memory untouched",
			  SSEMU_ADDR_PORT(m->src), SSEMU_ADDR_PORT(m->dst));
		return -EIO;
	}
	ret = rma_operate(r, nic, m, req, buf, cap, rlen);
	free(copy);
	if (!ret && rma_direct(m))
		slot->crc = ssemu_r_crc(r, 0, buf,
					sizeof(struct ssemu_rma_direct));
	else if (!ret && rma_has_result(m))
		slot->crc = ssemu_r_crc(r, 0, buf, (size_t)rlen);
	return ret;
}

/*
 * The last packet of an RMA request reached the target endpoint @epi's
 * NIC: do the operation (once: recovery may send a request again), queue
 * its results for the way back, and tell the target endpoint if asked.
 * The status travels back in the acknowledgement.  @return true if this
 * process may not touch the target's memory: then nothing is done yet,
 * and the request waits for the memory's owner (ssemu_xuid.c), which
 * calls this again.
 */
bool rma_deliver(struct ssemu_region *r, uint32_t mi, uint32_t epi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t nic = ssemu_ep_nic(r, epi), mtu = r->config.mtu;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	int ret;

	if (!(m->mflags & SSEMU_MSGF_RMAEXEC)) {
		/* a runner dying between the two flags leaves the memory in
		 * doubt: recovery fails the operation, never repeats it */
		m->mflags |= SSEMU_MSGF_RMABEGIN;
		ret = rma_execute(r, nic, m);
		if (ret == SSEMU_RMA_PARK) {
			/* memory untouched; a parked one is its owner's,
			 * which never parks it again */
			m->mflags &= ~SSEMU_MSGF_RMABEGIN;
			if (!(m->mflags & SSEMU_MSGF_PARKED)) {
				m->mflags |= SSEMU_MSGF_PARKED;
				return true;
			}
			ret = -EACCES;
		}
		m->status = ret;
		m->mflags |= SSEMU_MSGF_RMAEXEC;
	}
	n->stats.rx_msgs++;
	n->stats.rx_bytes += m->len;
	if (!m->status && rma_has_result(m)) {
		m->resp_npkts = m->rma_len ?
			(uint32_t)((m->rma_len + mtu - 1) / mtu) : 1;
		m->resp_sent = m->resp_arrived = 0;
		m->resp_next = SSEMU_NONE;
		m->mflags |= SSEMU_MSGF_RESPQ;
		if (n->resp_head == SSEMU_NONE)
			n->resp_head = mi;
		else if (SSEMU_BAD(r, n->resp_tail >= r->nmsgs, "NIC %u: "
				   "response queue tail %u", nic,
				   n->resp_tail))
			return false;
		else
			ssemu_r_msg(r, n->resp_tail)->resp_next = mi;
		n->resp_tail = mi;
		n->stats.tx_bytes += m->rma_len;
	}
	if (!m->status && (m->flags & SSEMU_RMA_REMOTE_EVENT))
		recv_event(r, epi, mi);	/* sets RXDONE when it may */
	else
		rma_rx_done(r, m);
	return false;
}

/* ------------------------------------------------------------------ */
/* The initiator's side of a direct read                               */
/* ------------------------------------------------------------------ */

/* Is the region the target named in @d still in its NIC's table, as it
 * was?  (Read without the lock: registering and withdrawing take it, and
 * an entry changed under us reads as withdrawn.) */
static bool direct_region_there(struct ssemu_region *r,
				const struct ssemu_msg *m,
				const struct ssemu_rma_direct *d)
{
	const struct ssemu_mr_sh *e = &ssemu_r_mrs(r, d->nic)[d->mr];

	if (!ssemu_load_acquire(&e->in_use) || e->key != m->key ||
	    e->pid != d->pid)
		return false;
	return e->addr + (m->raddr - e->base) == d->addr &&
	       mr_covers(e, m->raddr, m->rma_len);
}

/*
 * The results of a direct read (SSEMU_RMA_DIRECT), from the target's
 * memory straight into the initiator's @buf: the only copy of the bytes.
 * The target NIC checked the request and left in the slot where the
 * bytes are, with a CRC; the region must still be there after the copy,
 * or the target withdrew it meanwhile (its endpoint closed, its process
 * gave up) and what was copied may be anything.  A process that died
 * fails the copy itself (-ESRCH).
 */
int ssemu_event_read(struct ssemu_ep *ep, const struct ssemu_event *ev,
		     size_t off, void *buf, size_t len)
{
	const struct ssemu_config *c;
	struct ssemu_region *r;
	struct ssemu_rma_direct d;
	struct ssemu_msg *m;
	int ret;

	if (!ep || !buf)
		return -EINVAL;
	c = ep->nic->fab->cfg;
	m = event_rma_direct(ep, ev);
	if (!m || off > m->rma_len || len > m->rma_len - off)
		return -EINVAL;
	r = ep->r;
	memcpy(&d, m->data, sizeof(d));
	if (ssemu_r_crc(r, 0, &d, sizeof(d)) != m->crc) {
		ssemu_fetch_add(&r->crc_errors, 1);
		ssemu_log(SSEMU_LOG_WARN, "endpoint %u: the answer of a direct "
			  "read of %llu bytes from port %u failed its CRC: it "
			  "changed in the segment after the target wrote it; "
			  "nothing copied", ep->index,
			  (unsigned long long)m->rma_len,
			  SSEMU_ADDR_PORT(m->dst));
		return -EBADMSG;
	}
	/* (never trust the segment: a region the table does not hold is
	 * not read) */
	if (d.nic >= c->max_nics || d.mr >= SSEMU_MRS_PER_NIC ||
	    !direct_region_there(r, m, &d))
		return -ENOKEY;
	if (!len)
		return 0;
	if (d.pid == (int32_t)ssemu_self_pid())
		ret = ssemu_copy_user(buf, (const void *)(uintptr_t)(d.addr +
								   off), len);
	else
		ret = cma(d.pid, false, d.addr + off, buf, len);
	/* (this process may not read the sender's memory: nothing to park
	 * here, the caller has the sender push it instead) */
	if (ret == SSEMU_RMA_PARK)
		return -EACCES;
	if (ret)
		return ret;
	/* the copy's reads before the second look at the region */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return direct_region_there(r, m, &d) ? 0 : -ENOKEY;
}

/* An entry of a region table as read without the lock (registering and
 * withdrawing take it): its fields, with in_use read first. */
static bool mr_snap(const struct ssemu_mr_sh *e, struct ssemu_mr_sh *out)
{
	if (!ssemu_load_acquire(&e->in_use))
		return false;
	out->key = ssemu_load_relaxed(&e->key);
	out->addr = ssemu_load_relaxed(&e->addr);
	out->len = ssemu_load_relaxed(&e->len);
	out->base = ssemu_load_relaxed(&e->base);
	out->pid = ssemu_load_relaxed(&e->pid);
	out->access = ssemu_load_relaxed(&e->access);
	out->vni = ssemu_load_relaxed(&e->vni);
	out->in_use = 1;
	return true;
}

/* An early copy at least this long steps aside from running the engine
 * (a few microseconds of copying: more than the others' polls) */
#define READ_EARLY_ASIDE (64u << 10)

/*
 * An SSEMU_RMA_DIRECT read's bytes copied before it completes: the
 * target endpoint and the region found and checked as the target NIC
 * checks the request (the endpoint there and on our VNI; the region's
 * key, VNI, range and access), the bytes copied from the region's
 * process, and the region checked again after the copy (withdrawn or
 * changed meanwhile: -ENOKEY, what was copied not to be trusted).
 */
int ssemu_ep_read_early(struct ssemu_ep *ep, const struct ssemu_rma *rma,
			size_t off, void *buf, size_t len)
{
	const struct ssemu_config *c;
	struct ssemu_mr_sh *mr, e, again;
	struct ssemu_region *r;
	uint32_t nic, port, epi;
	uint64_t src;
	uint16_t vni;
	int ret;

	if (!ep || !rma || (len && !buf) || rma->op != SSEMU_RMA_READ ||
	    !(rma->flags & SSEMU_RMA_DIRECT) || off > rma->len ||
	    len > rma->len - off)
		return -EINVAL;
	if (ssemu_fab_check(ep->nic->fab))
		return -EIO;
	r = ep->r;
	c = &r->config;
	port = (uint32_t)SSEMU_ADDR_PORT(rma->dest);
	if (port >= r->topo.nendpoints)
		return -EINVAL;
	nic = ssemu_port_nic(r, port);
	if (nic >= c->max_nics)
		return -EHOSTUNREACH;
	/* the target endpoint, there and on our VNI, as the NIC takes the
	 * request (ssemu_auth_rx_refused) */
	if (SSEMU_ADDR_PID(rma->dest) >= c->eps_per_nic)
		return -EINVAL;
	epi = ssemu_r_nic_eps(r, nic)[SSEMU_ADDR_PID(rma->dest)];
	if (epi >= r->neps || !ssemu_load_relaxed(&ssemu_r_ep(r, epi)->open))
		return -ECONNREFUSED;
	vni = ssemu_auth_ep_vni(r, ep->index);
	if (ssemu_auth_ep_vni(r, epi) != vni)
		return -ENOTCONN;
	/* (the entry found, then read once: what is checked is what is
	 * used) */
	mr = mr_find(r, nic, rma->key);
	if (!mr || !mr_snap(mr, &e) || e.key != rma->key)
		return -ENOKEY;
	if (e.vni && e.vni != vni)
		return -EACCES;
	if (!mr_covers(&e, rma->addr, rma->len))
		return -ERANGE;
	if (!(e.access & SSEMU_MR_READ))
		return -EACCES;
	if (!len)
		return 0;
	/* (a copy that outlasts a poll: whoever waits for the engine runs
	 * it meanwhile, the read's train among it) */
	if (len >= READ_EARLY_ASIDE)
		ssemu_runner_step_aside(ep->nic->fab);
	src = e.addr + (rma->addr - e.base) + off;
	if (e.pid == (int32_t)ssemu_self_pid())
		ret = ssemu_copy_user(buf, (const void *)(uintptr_t)src, len);
	else
		ret = cma(e.pid, false, src, buf, len);
	if (ret == SSEMU_RMA_PARK)
		return -EACCES;
	if (ret)
		return ret;
	/* the copy's reads before the second look at the region */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!mr_snap(mr, &again) || again.key != e.key ||
	    again.addr != e.addr || again.len != e.len ||
	    again.base != e.base || again.pid != e.pid ||
	    again.access != e.access || again.vni != e.vni)
		return -ENOKEY;
	return 0;
}
