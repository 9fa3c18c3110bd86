/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA across users: operations on memory the engine's process may not
 * touch.
 *
 * The engine runs in whichever process of the fabric polls it
 * (ssemu_runner.c), and an RMA request is done at its target by that
 * process: in its own memory, or in another process's by cross-memory
 * attach (ssemu_rma.c).  The kernel lets a process attach only to
 * processes of its own uid, unless it holds CAP_SYS_PTRACE.  On a fabric
 * shared by two users (a share group) the engine's process and the target
 * memory's owner may differ: then the request's last packet is parked here,
 * on the fabric's park list, and the memory's owner does the operation
 * itself, in its own address space, the next time it runs the engine
 * (every progress and wait of the fabric does); the packet then goes on into
 * its acknowledgement, and its results, if any, follow it back
 * (nic_rma_resume).  Atomics are done by the owner under the fabric lock
 * too, one operation at a time with respect to the fabric.
 *
 * Who may attach is decided up front from the uid each NIC's owner
 * recorded when it attached (ssemu_xuid_may_cma); a refusal the kernel
 * gives anyway (ptrace restrictions, a process that is not dumpable) is
 * handled the same way.
 *
 * Model time: with the virtual clock the model does not advance past an
 * operation while it waits (the runner holds the clock at its arrival,
 * ssemu_runner.c), so the operation takes effect, and its acknowledgement
 * and results leave, at the model time the request arrived, as when the
 * engine's process may do it; only the wall clock waits.  With the
 * realtime clock it takes effect when the owner gets to it.  A target that
 * never polls the fabric delays such operations (and, with the virtual
 * clock, the whole model), as a real NIC would not.  A parked request
 * whose target NIC went (its process died or closed) fails as a packet to
 * a gone NIC does, done by whichever process runs the engine next.
 */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ssemu_model_int.h"

/* Has this process CAP_SYS_PTRACE (in its effective set)? */
static bool may_ptrace(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_SYS_PTRACE / 32].effective &
	       (1u << (CAP_SYS_PTRACE % 32));
}

/*
 * This process's uid and whether it holds CAP_SYS_PTRACE, as the kernel
 * answers them.  ssemu_xuid_may_cma runs at the target of every RMA
 * request, and two system calls there each time would cost more than
 * the decision, so they are asked once per process and forgotten in a
 * child after fork (which may go on to become another user, as the jobs
 * of a launcher or the tests' children do).  A process that changes its
 * uid or capabilities later, while on the fabric, keeps the answer it
 * had: that is safe, because the kernel keeps the last word (an attach it
 * refuses with EPERM parks the request all the same, cma() in
 * ssemu_rma.c), and a request parked that need not have been is done by
 * its owner, only later.  One word (0: not known; else SELF_KNOWN, the
 * uid and SELF_PTRACE), so that threads of one process see all of it or
 * none.
 */
#define SELF_KNOWN (1ull << 63)
#define SELF_PTRACE (1ull << 32)
static uint64_t self;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_forget(void)
{
	ssemu_store_relaxed(&self, 0ull);
}

static void self_once_init(void)
{
	pthread_atfork(NULL, NULL, self_forget);
}

/* May this process reach the memory of NIC @nic's owner by cross-memory
 * attach?  (The kernel has the last word: cma() parks on EPERM too.) */
bool ssemu_xuid_may_cma(struct ssemu_region *r, uint32_t nic)
{
	uint64_t me = ssemu_load_relaxed(&self);

	if (unlikely(!me)) {
		pthread_once(&self_once, self_once_init);
		me = SELF_KNOWN | (uint32_t)getuid() |
		     (may_ptrace() ? SELF_PTRACE : 0);
		ssemu_store_relaxed(&self, me);
	}
	return ssemu_r_nic(r, nic)->owner_uid == (uint32_t)me ||
	       (me & SELF_PTRACE);
}

static void wake(uint32_t *word, uint32_t *waiters)
{
	if (!ssemu_load_relaxed(waiters))
		return;
	ssemu_fetch_add(word, 1);
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/*
 * Park the last packet @pi of an RMA request (nic_arrive): it waits at the
 * end of the fabric's park list for the owner of its target NIC, who is
 * woken if it sleeps on the NIC or one of its endpoints.
 */
void ssemu_xuid_park(struct ssemu_region *r, uint32_t pi)
{
	struct ssemu_pkt *pkt = ssemu_r_pkt(r, pi);
	uint32_t nic = ssemu_port_nic(r, pkt->dst_port), i, epi;
	struct ssemu_nic_sh *n;

	pkt->next = SSEMU_NONE;
	if (r->park_head == SSEMU_NONE)
		r->park_head = pi;
	else if (SSEMU_BAD(r, r->park_tail >= r->config.max_pkts,
			   "the park list's tail %u", r->park_tail))
		return;
	else
		ssemu_r_pkt(r, r->park_tail)->next = pi;
	r->park_tail = pi;
	ssemu_store_relaxed(&r->nparked, r->nparked + 1);
	if (nic >= r->config.max_nics)
		return;
	n = ssemu_r_nic(r, nic);
	wake(&n->ev_futex, &n->waiters);
	for (i = 0; i < r->config.eps_per_nic; i++) {
		epi = ssemu_r_nic_eps(r, nic)[i];
		if (epi < r->neps)
			wake(&ssemu_r_ep(r, epi)->ev_futex,
			     &ssemu_r_ep(r, epi)->waiters);
	}
}

/*
 * Under the fabric lock, from every engine run while the list is not
 * empty: do the parked requests whose target NIC this process owns, and
 * fail those whose target NIC went.  The others stay, in their order.
 */
void ssemu_xuid_run_locked(struct ssemu_region *r)
{
	uint32_t pi = r->park_head, prev = SSEMU_NONE, next, nic, seen = 0;
	int32_t self = (int32_t)ssemu_self_pid();
	struct ssemu_nic_sh *n;
	struct ssemu_pkt *pkt;
	bool gone;

	while (pi != SSEMU_NONE) {
		if (SSEMU_BAD(r, pi >= r->config.max_pkts ||
			      ++seen > r->config.max_pkts,
			      "the park list holds packet %u", pi))
			return;
		pkt = ssemu_r_pkt(r, pi);
		next = pkt->next;
		nic = ssemu_port_nic(r, pkt->dst_port);
		n = nic < r->config.max_nics ? ssemu_r_nic(r, nic) : NULL;
		gone = !n || n->state != SSEMU_NIC_ATTACHED ||
		       n->gen != pkt->to_gen;
		if (!gone && n->owner_pid != self) {
			prev = pi;
			pi = next;
			continue;
		}
		if (prev == SSEMU_NONE)
			r->park_head = next;
		else
			ssemu_r_pkt(r, prev)->next = next;
		if (r->park_tail == pi)
			r->park_tail = prev;
		ssemu_store_relaxed(&r->nparked, r->nparked - 1);
		nic_rma_resume(r, pi);
		if (ssemu_broken(r))
			return;
		pi = next;
	}
}
