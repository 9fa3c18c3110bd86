/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Who runs the engine, and when.
 *
 * There is no daemon: the model advances only when a process runs the
 * engine, under the fabric lock, and any process of the fabric may.  The
 * rule: whoever polls the fabric (ssemu_fabric_progress, and every wait)
 * and finds work (messages posted, a delivery to retry, events pending)
 * runs the engine, except that on a shared virtual-clock fabric a process
 * that sees another one ran it since it did leaves new work to that one,
 * the runner, for a short while (defer_to_runner): the runner polls too,
 * and finds the work within one of its polls, so the model's cache lines
 * stay on one core.  If the runner does not come (it computes, sleeps or
 * died), the waiting process takes over and becomes the runner.  On a
 * crowded fabric (more processes attached than CPUs online) nobody
 * defers: the runner is then often waiting for a CPU itself.  Who runs
 * the engine changes nothing in the model, only which core does the work.
 *
 * A run starts by taking what was posted into the model (drain_tx_locked)
 * and, now and then, by the liveness check (dead processes reaped, the
 * segment's header compared with this process's copy) and the stall check
 * (a message in flight with nothing pending: a corrupt model).  Closing an
 * endpoint runs the engine until what it posted is delivered, for a bound;
 * waiting sleeps on a futex word the engine bumps when it pushes an event
 * and finds a sleeper.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ssemu_priv.h"
#include "ssemu_timeline.h"

#define LIVENESS_PERIOD_NS 20000000ULL	/* between pid checks: 20 ms */

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Latest model time the clock mode lets the engine reach now. */
static ssemu_time_t model_limit(struct ssemu_region *r)
{
	uint64_t w;

	if (r->config.clock == SSEMU_CLOCK_VIRTUAL)
		return UINT64_MAX;
	w = wall_ns() - r->wall_t0_ns;
	return (ssemu_time_t)((double)w * 1000.0 / r->config.dilation);
}

/*
 * With no event pending, nothing in the model moves until something is
 * posted; a message that was posted and has not completed then never
 * completes: the model's state is corrupt (an index, a count or a flag
 * changed under it), its sender would wait forever.  A slot found so
 * twice in a row, the engine idle both times and having run nothing in
 * between (a post caught between its two steps is drained and run by
 * then), marks the fabric broken.  Looked for now and then (with the
 * liveness check), over the slots of the open endpoints of attached NICs.
 */
static void stall_check_locked(struct ssemu_region *r)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_engine *e = ssemu_r_engine(r);
	uint32_t nic, k, epi, mi, st, fl, gen;
	struct ssemu_ep_sh *sh;
	struct ssemu_msg *m;

	if (ssemu_engine_pending(e) || ssemu_broken(r))
		return;
	for (epi = 0; epi < r->neps; epi++) {
		sh = ssemu_r_ep(r, epi);
		if (!sh->open)
			continue;
		nic = sh->nic;
		/* (a NIC detaches after closing its endpoints) */
		if (nic >= c->max_nics ||
		    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED) {
			ssemu_fail(r, "endpoint %u is open on NIC slot %u, "
				   "which is not attached", epi, nic);
			return;
		}
		for (k = 0; k < c->msgs_per_ep; k++) {
			mi = epi * c->msgs_per_ep + k;
			st = ssemu_load_acquire(ssemu_r_mstate(r, mi));
			/* in flight: busy, not completed (only then are its
			 * fields the engine's to read: the owner fills a free
			 * slot without the fabric lock), and neither waiting
			 * for ring space (its endpoint has an overflow list)
			 * nor an RMA whose initiator holds its RMA_DONE */
			if (!(st & SSEMU_MSG_BUSY) || (st & SSEMU_MSG_TXDONE))
				continue;
			/* (its owner may take it back and fill it again
			 * between the look at its state and these reads:
			 * a new message's fields then, with a new gen,
			 * which no stall verdict matches) */
			m = ssemu_r_msg(r, mi);
			fl = ssemu_load_relaxed(&m->mflags);
			gen = ssemu_load_relaxed(&m->gen);
			if (((fl & SSEMU_MSGF_TXOVF) &&
			     sh->tx_head != SSEMU_NONE) ||
			    (ssemu_load_relaxed(&m->rma_op) &&
			     (fl & SSEMU_MSGF_TXPUSH)) ||
			    (r->nparked && (fl & SSEMU_MSGF_PARKED) &&
			     !(fl & SSEMU_MSGF_RMAEXEC)))
				continue;
			if (r->stall_mi == mi && r->stall_gen == gen &&
			    r->stall_exec == e->executed) {
				ssemu_fail(r, "the model stalled: message slot "
					   "%u is in flight with no event "
					   "pending", mi);
				return;
			}
			r->stall_mi = mi;
			r->stall_gen = gen;
			r->stall_exec = e->executed;
			return;
		}
	}
	r->stall_mi = SSEMU_NONE;
}

/* Did the engine find its memory corrupt (then the fabric is marked
 * broken)? */
SSEMU_HOT
static bool engine_bad(struct ssemu_region *r)
{
	uint32_t bad = ssemu_load_relaxed(&ssemu_r_engine(r)->bad);

	return bad && ssemu_fail(r, "the event engine's memory is corrupt "
				 "(%s)", ssemu_engine_why(bad));
}

/* Retry the event deliveries of the endpoints of @ovf's word @w that
 * found a full ring; the bits of those with nothing left go. */
static bool flush_ovf_word(struct ssemu_region *r, uint64_t *ovf,
			   uint32_t words, uint32_t w)
{
	uint64_t bits = ovf[w];
	struct ssemu_ep_sh *sh;
	uint32_t epi;

	while (bits) {
		epi = w * 64 + (uint32_t)__builtin_ctzll(bits);
		bits &= bits - 1;
		if (epi >= r->neps) {
			ovf[w] &= ~(1ULL << (epi % 64));
			continue;
		}
		sh = ssemu_r_ep(r, epi);
		if (sh->open)
			ssemu_model_flush_overflow(r, epi);
		if (!sh->open || (sh->rx_head == SSEMU_NONE &&
				  sh->tx_head == SSEMU_NONE))
			ovf[w] &= ~(1ULL << (epi % 64));
	}
	/* (its summary bit was cleared before: what is left keeps one) */
	if (ovf[w] && words > SSEMU_BM_FLAT)
		ovf[words + w / 64] |= 1ULL << (w % 64);
	return !ssemu_broken(r);
}

/* Take the messages posted to the endpoints of @work's word @w into the
 * model; @full: also compare each ring's tail with its entries (the
 * liveness pass).  @return false if the fabric is broken. */
SSEMU_HOT
static bool drain_work_word(struct ssemu_region *r, uint64_t *work,
			    uint32_t w, bool full)
{
	const struct ssemu_config *c = &r->config;
	uint32_t epi, mi, lo, nic, left;
	struct ssemu_ring *ring;
	struct ssemu_ep_sh *sh;
	uint64_t bits;

	if (!ssemu_load_relaxed(&work[w]))
		return true;
	bits = __atomic_exchange_n(&work[w], 0, __ATOMIC_ACQ_REL);
	while (bits) {
		epi = w * 64 + (uint32_t)__builtin_ctzll(bits);
		bits &= bits - 1;
		if (epi >= r->neps)
			continue;
		sh = ssemu_r_ep(r, epi);
		nic = ssemu_ep_nic(r, epi);
		if (!sh->open ||
		    ssemu_r_nic(r, nic)->state != SSEMU_NIC_ATTACHED)
			continue;
		if (ssemu_ep_rings_bad(r, epi))
			return false;
		ring = ssemu_r_ring(r, sh->tx_ring_off);
		lo = epi * c->msgs_per_ep;
		/* take the message into the NIC, then off the ring: if we
		 * die in between, crash recovery finds it.  At most a ring's
		 * worth a run: more means its owner keeps posting (the rest
		 * is the next run's, its bit set again), or that the ring's
		 * indices changed under us (a segment cut short reads as
		 * zeros: head past tail would never meet it again) */
		for (left = c->msgs_per_ep; !ssemu_ring_peek_tagged(ring, &mi);) {
			if (!left--) {
				ssemu_bm_set(work, ssemu_bm_words(r->neps), epi);
				break;
			}
			/* never trust an index from shared memory */
			if (SSEMU_BAD(r, mi >= c->msgs_per_ep,
				      "endpoint %u: slot %u in its tx ring",
				      epi, mi))
				return false;
			mi += lo;
			ssemu_model_enqueue_msg(r, nic, mi);
			ssemu_ring_advance(ring);
			if (ssemu_broken(r))
				return false;
			ssemu_tl(SSEMU_TL_TAKEN, mi);
		}
		/* an entry the tail counts and whose tag is wrong would
		 * hold up every message posted after it */
		if (SSEMU_BAD(r, full && ssemu_ring_tagged_stuck(ring),
			      "endpoint %u: its tx ring's entry %u is not the "
			      "one its tail counts (the entry was written over)",
			      epi, ssemu_load_relaxed(&ring->head)))
			return false;
		ssemu_model_nic_kick(r, nic);
	}
	return true;
}

/*
 * Move posted messages from the tx rings into the model, and retry event
 * deliveries that found a full ring.  The words to look at are those the
 * bitmaps' summaries name (ssemu_bm_set); @full looks at every word, as a
 * small fabric always does, which also finds the work of a summary bit
 * lost to a damaged segment (run_locked asks for it with each look for
 * dead processes, every LIVENESS_PERIOD_NS at most).
 */
SSEMU_HOT
static void drain_tx_locked(struct ssemu_region *r, bool full)
{
	uint64_t *work = ssemu_r_bits(r, r->work_off);
	uint64_t *ovf = ssemu_r_bits(r, r->ovf_off);
	uint32_t words = ssemu_bm_words(r->neps), w, k;
	uint32_t nsum = ssemu_bm_sum_words(words);
	uint64_t sum;

	if (full || !nsum) {
		for (w = 0; w < words; w++)
			if (ovf[w] && !flush_ovf_word(r, ovf, words, w))
				return;
		for (w = 0; w < words; w++)
			if (!drain_work_word(r, work, w, full))
				return;
		return;
	}
	for (k = 0; k < nsum; k++) {
		if (!ovf[words + k])
			continue;
		sum = ovf[words + k];
		ovf[words + k] = 0;
		for (; sum; sum &= sum - 1) {
			w = k * 64 + (uint32_t)__builtin_ctzll(sum);
			if (w < words && ovf[w] &&
			    !flush_ovf_word(r, ovf, words, w))
				return;
		}
	}
	for (k = 0; k < nsum; k++) {
		if (!ssemu_load_relaxed(&work[words + k]))
			continue;
		/* (cleared before the words: see ssemu_bm_set) */
		sum = __atomic_exchange_n(&work[words + k], 0,
					  __ATOMIC_ACQ_REL);
		for (; sum; sum &= sum - 1) {
			w = k * 64 + (uint32_t)__builtin_ctzll(sum);
			if (w < words && !drain_work_word(r, work, w, false))
				return;
		}
	}
}

/*
 * One turn of the engine.  Virtual clock: take what was posted and run as
 * far as the budget allows.  Realtime clock: first run everything that is
 * due by the wall clock, then move the model clock up to "now" (nothing
 * earlier is pending) so that what is posted now enters the model now.
 */
SSEMU_HOT
static int run_locked(struct ssemu_fabric *f, unsigned budget, bool reap)
{
	struct ssemu_region *r = f->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	bool realtime = r->config.clock == SSEMU_CLOCK_REALTIME;
	struct ssemu_fired fired;
	ssemu_time_t limit, next;
	bool reaped = false;
	unsigned n = 0;

	if (ssemu_fab_check(f))
		return -EIO;
	/* Look for dead processes now and then (by the wall clock, so a
	 * busy fabric finds them as fast as an idle one), and at the
	 * segment's header (this process works from its own copy: the
	 * segment's matters to the processes that attach next). */
	if (reap) {
		uint64_t w = wall_ns();

		if (w - r->last_reap_ns > LIVENESS_PERIOD_NS) {
			r->last_reap_ns = w;
			if (ssemu_fabric_image_bad(f))
				return -EIO;
			/* (a private store's only process is this one) */
			if (f->store != SSEMU_STORE_PRIVATE)
				ssemu_reap_dead_locked(r);
			reaped = true;
		}
	}
	/* RMA requests that wait for their target memory's owner: ours
	 * done, those of gone NICs failed (ssemu_xuid.c) */
	if (r->nparked)
		ssemu_xuid_run_locked(r);
	if (!realtime)
		drain_tx_locked(r, reaped);
	limit = model_limit(r);
	/* (virtual clock with modelled jobs: time stands still while no
	 * real message is in flight, ssemu_gen_hold; and while an RMA
	 * request waits for its target memory's owner) */
	if (!realtime && (ssemu_gen_hold(r) || r->nparked))
		limit = e->now;
	/* (the engine's control block is shared: its size, which places
	 * everything in it, is checked before every event, against our own
	 * configuration; the rest of its geometry by ssemu_fabric_image_bad) */
	ssemu_model_run_begin(r, limit);
	while (n < budget && ssemu_engine_cap_ok(e, r->config.max_events) &&
	       ssemu_engine_pop(e, limit, &fired)) {
		ssemu_model_dispatch(r, &fired);
		n++;
		if (unlikely(ssemu_broken(r) || f->gone))
			break;
		if (!realtime && limit > e->now &&
		    (ssemu_gen_hold(r) || r->nparked))
			ssemu_model_run_begin(r, limit = e->now);
	}
	ssemu_model_run_end(r);
	if (!ssemu_engine_cap_ok(e, r->config.max_events))
		ssemu_fail(r, "the event engine's size changed");
	if (engine_bad(r) || ssemu_fab_check(f))
		return -EIO;
	/* (after the run: what was posted is in the model by now) */
	if (reaped)
		stall_check_locked(r);
	if (realtime) {
		next = ssemu_engine_next_time(e);
		if (next <= limit) {
			/* out of budget with work due: we are behind */
			r->lag_ps = limit - next;
		} else {
			r->lag_ps = 0;
			if (e->now < limit)
				e->now = limit;
		}
		drain_tx_locked(r, reaped);
	}
	return (int)n;
}

/* Anything posted, or a delivery to retry? */
SSEMU_HOT
static bool work_posted(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;
	const uint64_t *work = ssemu_r_bits(r, r->work_off);
	const uint64_t *ovf = ssemu_r_bits(r, r->ovf_off);
	uint32_t w, words = ssemu_bm_words(f->neps), n = words;

	/* (the summaries, where there are: what a lost bit hides, the
	 * next full drain finds) */
	if (ssemu_bm_sum_words(words)) {
		work += words;
		ovf += words;
		n = ssemu_bm_sum_words(words);
	}
	for (w = 0; w < n; w++)
		if (ssemu_load_relaxed(&work[w]) ||
		    ssemu_load_relaxed(&ovf[w]))
			return true;
	return false;
}

/*
 * How long a process leaves new work to the process that ran the engine
 * last before it runs the engine itself, when that one does not come to it
 * (it computes, sleeps or died).  The runner normally comes within one of
 * its polls, well under this.
 */
#define DEFER_NS 10000ULL
/* A process that does not run the engine looks at it every this many
 * polls when nothing is posted. */
#define LOOK_EVERY 16
/*
 * Bulk: the engine ran BULK_EVENTS events or more between two looks of a
 * process that does not run it, or half that in one run of ours (a run
 * stops at its budget; a short message is 8 events).  A bulk transfer
 * keeps the engine busy for long batches, which amortise the cache misses
 * of moving it, and the process that receives spends long stretches copying
 * data out: then whoever is free takes the lock and runs the engine.
 */
#define BULK_EVENTS 128

/*
 * Shared fabric, virtual clock: leave the engine to whoever ran it last?
 * The model's state (event heap, NICs, switches, packets, counters) is a
 * few dozen cache lines per message; when the processes that wait on each
 * other take turns running the engine, all of it moves between their cores
 * on every message, which costs more than the model's own work.  So a
 * process that sees another one ran the engine since it did leaves new work
 * to that one (every process polls the fabric while it waits, so the runner
 * finds the work within one of its polls) for DEFER_NS after it last saw
 * the engine move; then it takes over and becomes the runner.  Who runs
 * the engine changes nothing in the model, only which core does the work.
 * The clock is read only while deferring, that is while waiting anyway.
 *
 * Not when the fabric is crowded (more processes attached than CPUs
 * online, count_crowd): then the runner is as likely as not waiting for a
 * CPU, and every message would wait for it or for DEFER_NS, where running
 * the engine at once costs only the cache misses.
 */
static bool defer_to_runner(struct ssemu_fabric *f)
{
	struct ssemu_runner_local *fl = &f->run;
	uint64_t exec, now, until;
	uint32_t aside;

	exec = ssemu_load_relaxed(&f->r->run_pub.executed);
	/* nobody ran it since we did, nor runs it now (a run publishes what
	 * it did as it lets go: one in progress, which may have pushed the
	 * event that made us post, has not yet) */
	if (exec == ssemu_load_relaxed(&fl->run_mark) &&
	    !ssemu_load_relaxed(&f->r->lock.word))
		return false;	/* ours */
	ssemu_store_relaxed(&fl->runner, 0);
	/* the runner went off to a long copy: take it over now */
	aside = ssemu_load_relaxed(&f->r->run_pub.aside);
	if (aside != ssemu_load_relaxed(&fl->aside)) {
		ssemu_store_relaxed(&fl->aside, aside);
		ssemu_store_relaxed(&fl->defer_until, 0);
		return false;
	}
	now = wall_ns();
	until = ssemu_load_relaxed(&fl->defer_until);
	if (exec != ssemu_load_relaxed(&fl->seen) || !until) {
		/* new work, or the runner is going: give it time */
		ssemu_store_relaxed(&fl->seen, exec);
		until = now + DEFER_NS;
		ssemu_store_relaxed(&fl->defer_until, until);
	}
	return now < until;
}

void ssemu_runner_step_aside(struct ssemu_fabric *f)
{
	struct ssemu_runner_local *fl = &f->run;
	struct ssemu_region *r = f->r;

	if (f->store != SSEMU_STORE_SHM ||
	    r->config.clock != SSEMU_CLOCK_VIRTUAL ||
	    ssemu_load_relaxed(&r->run_pub.executed) !=
		    ssemu_load_relaxed(&fl->run_mark))
		return;	/* (not the runner others defer to) */
	ssemu_store_relaxed(&fl->aside,
			    __atomic_add_fetch(&r->run_pub.aside, 1,
					       __ATOMIC_RELAXED));
}

/*
 * Are more processes attached to the fabric than the machine has CPUs
 * online?  (Online, not this process's affinity: processes pinned one to
 * a CPU each are not crowded.)  Counted at every liveness poll (one in
 * 64) from the process slots, which change only on attach and detach; a
 * slot per handle, so this process's own count once.
 */
static void count_crowd(struct ssemu_fabric *f)
{
	struct ssemu_runner_local *fl = &f->run;
	uint32_t i, n = 1, ncpus = ssemu_load_relaxed(&fl->ncpus);
	int32_t pid, self = (int32_t)ssemu_self_pid();
	long online;

	if (!ncpus) {
		online = sysconf(_SC_NPROCESSORS_ONLN);
		ncpus = online > 0 ? (uint32_t)online : 1;
		ssemu_store_relaxed(&fl->ncpus, ncpus);
	}
	for (i = 0; i < SSEMU_MAX_PROCS && n <= ncpus; i++) {
		pid = ssemu_load_relaxed(&f->r->procs[i]);
		if (pid && pid != self)
			n++;
	}
	ssemu_store_relaxed(&fl->crowded, (uint32_t)(n > ncpus));
}

/*
 * One poll of the engine.  It takes the fabric lock only if there is
 * something to do: with nothing posted and no event pending (virtual
 * clock; realtime also moves the model clock up to the wall clock when
 * idle, so it always runs), it returns at once.  Every 64th call takes the
 * lock anyway for the liveness check.  On a shared virtual-clock fabric a
 * process that does not run the engine (@defer, see defer_to_runner) reads
 * only the work bitmaps, and what the last lock holder published as it let
 * go (struct ssemu_run_pub: not the engine's own counters, which the
 * runner writes with every event), once in LOOK_EVERY polls: so waiting
 * processes take no cache lines away from the runner in the middle of its
 * work.
 * During a bulk transfer (BULK_EVENTS), and on a crowded fabric
 * (count_crowd), every poll that finds work tries the lock instead,
 * whoever ran the engine last.
 */
SSEMU_HOT
static int progress(struct ssemu_fabric *f, unsigned budget, bool defer)
{
	struct ssemu_runner_local *fl = &f->run;
	struct ssemu_region *r = f->r;
	bool reap, sticky, parked;
	unsigned call;
	uint64_t exec;
	int ret;

	/* several threads of the process may progress at once */
	call = __atomic_add_fetch(&f->progress_calls, 1, __ATOMIC_RELAXED);
	reap = call % 64 == 0;
	if (defer && f->store == SSEMU_STORE_SHM &&
	    (reap || !ssemu_load_relaxed(&fl->ncpus)))
		count_crowd(f);
	/* (an RMA request waits for its memory's owner, which may be us:
	 * take the lock, ssemu_xuid.c) */
	parked = ssemu_load_relaxed(&r->nparked) != 0;
	sticky = defer && f->store == SSEMU_STORE_SHM &&
		 r->config.clock == SSEMU_CLOCK_VIRTUAL &&
		 !ssemu_load_relaxed(&fl->bulk) && !parked &&
		 !ssemu_load_relaxed(&fl->crowded);
	if (!reap && sticky && !work_posted(f)) {
		uint32_t looks = ssemu_load_relaxed(&fl->looks) + 1;

		ssemu_store_relaxed(&fl->looks, looks);
		if (!ssemu_load_relaxed(&fl->runner) && looks % LOOK_EVERY)
			return 0;	/* the runner has it */
		if (!ssemu_load_relaxed(&r->run_pub.nlive) ||
		    ssemu_gen_hold(r)) {
			/* new work will give the runner a full DEFER_NS */
			if (ssemu_load_relaxed(&fl->defer_until))
				ssemu_store_relaxed(&fl->defer_until, 0);
			return 0;
		}
		exec = ssemu_load_relaxed(&r->run_pub.executed);
		if (exec - ssemu_load_relaxed(&fl->look_exec) >= BULK_EVENTS) {
			ssemu_store_relaxed(&fl->bulk, 1);
			sticky = false;
		}
		ssemu_store_relaxed(&fl->look_exec, exec);
	} else if (!reap && r->config.clock == SSEMU_CLOCK_VIRTUAL &&
		   /* bulk: whoever is free takes the lock */
		   !ssemu_load_relaxed(&fl->bulk) && !parked &&
		   !work_posted(f) &&
		   (!ssemu_load_relaxed(&r->run_pub.nlive) ||
		    ssemu_gen_hold(r))) {
		return 0;
	}
	/* (the runner looks for dead processes too) */
	if (sticky && defer_to_runner(f))
		return -EBUSY;
	ret = ssemu_region_trylock(r);
	if (ret)
		return ret;
	ssemu_tl(SSEMU_TL_LOCK, 0);
	ret = run_locked(f, budget ? budget : 1, reap);
	ssemu_tl(SSEMU_TL_RUN_END, ret > 0 ? (uint32_t)ret : 0);
	ssemu_store_relaxed(&fl->bulk, ret >= BULK_EVENTS / 2);
	/* the runner is whoever executed the last event (one that ran
	 * none must not think it is) */
	if (ret > 0) {
		ssemu_store_relaxed(&fl->run_mark,
				    ssemu_r_engine(r)->executed);
		ssemu_store_relaxed(&fl->runner, 1);
	}
	ssemu_region_unlock(r);
	ssemu_tl(SSEMU_TL_UNLOCK, 0);
	return ret;
}

SSEMU_HOT
int ssemu_fabric_progress(struct ssemu_fabric *f, unsigned budget)
{
	int ret;

	if (!f)
		return -EINVAL;
	ret = ssemu_fab_check(f);
	if (ret)
		return ret;
	ret = progress(f, budget, true);
	/* (the segment may have been cut short while we looked at it) */
	return unlikely(f->gone) ? ssemu_fab_check(f) : ret;
}

/*
 * Messages and RMA operations endpoint @epi posted that are not done yet
 * at their destination: busy slots whose completion was neither reported
 * (pushed to the endpoint's event ring or queued for it) nor given up.
 * Under the lock.
 */
static uint32_t ep_undelivered_locked(struct ssemu_region *r, uint32_t epi)
{
	uint32_t i, lo = epi * r->config.msgs_per_ep, n = 0, st;
	struct ssemu_msg *m;

	for (i = lo; i < lo + r->config.msgs_per_ep; i++) {
		st = ssemu_load_acquire(ssemu_r_mstate(r, i));
		if (!(st & SSEMU_MSG_BUSY) || (st & SSEMU_MSG_TXDONE))
			continue;
		m = ssemu_r_msg(r, i);
		if (m->mflags & (SSEMU_MSGF_TXPUSH | SSEMU_MSGF_TXOVF))
			continue;
		n++;
	}
	return n;
}

/* Events per engine turn while a closing endpoint waits for its traffic. */
#define CLOSE_BUDGET 4096

/*
 * The NIC owns what an endpoint posted: the close runs the engine (taking
 * it over as any waiting process does) until all of it is delivered, for
 * at most @timeout_ms.  Realtime fabrics release events by the wall clock:
 * between turns that ran nothing, nap.
 */
int ssemu_ep_close_timeout(struct ssemu_ep *ep, int timeout_ms)
{
	struct ssemu_fabric *f;
	struct ssemu_region *r;
	struct ssemu_ep_sh *sh;
	uint64_t deadline;
	uint32_t left;
	int ret, ran;

	if (!ep)
		return -EINVAL;
	f = ep->nic->fab;
	r = f->r;
	deadline = wall_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) *
				1000000ULL;
	for (;;) {
		ret = ssemu_region_lock(r);
		if (ret)
			break;
		sh = ssemu_r_ep(r, ep->index);
		if (ssemu_r_nic_eps(r, ep->nic->slot)[ep->pid] != ep->index ||
		    !sh->open) {
			ssemu_region_unlock(r);
			break;
		}
		left = ep_undelivered_locked(r, ep->index);
		if (left && wall_ns() >= deadline) {
			ssemu_log(SSEMU_LOG_WARN, "endpoint %u:%u closes with "
				  "%u message%s it posted not delivered after "
				  "%d ms: discarded", ssemu_nic_port(ep->nic),
				  ep->pid, left, left == 1 ? "" : "s",
				  timeout_ms);
			ret = -ETIMEDOUT;
			left = 0;
			/* (a message due later is one of those counted) */
			if (ep->sent_at)
				ssemu_model_ep_drop_due(r, ep->index);
		}
		if (!left) {
			ssemu_ep_close_locked(r, ep->nic->slot, ep->pid);
			ssemu_region_unlock(r);
			break;
		}
		ran = run_locked(f, CLOSE_BUDGET, true);
		ssemu_region_unlock(r);
		if (ran <= 0) {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
	ssemu_ep_free(ep);
	return ret;
}

void ssemu_ep_close(struct ssemu_ep *ep)
{
	ssemu_ep_close_timeout(ep, SSEMU_CLOSE_DRAIN_MS);
}

/* Run the engine up to @t; with @watched, only until an event frees a
 * watched endpoint's slot or finds an event ring full (then 1). */
SSEMU_HOT
static int run_until(struct ssemu_fabric *f, ssemu_time_t t, bool watched)
{
	struct ssemu_region *r = f->r;
	struct ssemu_engine *e = ssemu_r_engine(r);
	struct ssemu_fired fired;
	uint64_t exec0;
	bool stopped;
	int ret;

	ret = ssemu_fab_check(f);
	if (ret)
		return ret;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	if (ssemu_fabric_image_bad(f)) {
		ssemu_region_unlock(r);
		return -EIO;
	}
	if (r->nparked)
		ssemu_xuid_run_locked(r);
	/* (group windows: every event at or before @t is a prefix of the
	 * engine's order only where @t ends a window; short of that, the
	 * windows before @t's) */
	if (r->config.group_windows && t != UINT64_MAX)
		t = ssemu_gw_limit(r, t);
	exec0 = e->executed;
	/* (a slot freed before this run, by another: the caller looked at
	 * its slots before it ran the engine; only a watched run reads the
	 * flag, and every run clears it first) */
	r->watch_hit = 0;
	r->nwatch_freed = 0;
	/* (every word now and then, as progress does) */
	drain_tx_locked(r, ++f->run_until_calls % 64 == 0);
	/* (a post that failed as it was taken may have freed one) */
	stopped = watched && r->watch_hit;
	/* (not past an RMA request that waits for its memory's owner; to
	 * the end is while real traffic is in flight: modelled jobs never
	 * end, ssemu_gen_hold) */
	ssemu_model_run_begin(r, t);
	while (!stopped && !ssemu_broken(r) && !f->gone &&
	       ssemu_engine_cap_ok(e, r->config.max_events) &&
	       ssemu_engine_pop(e, r->nparked || (t == UINT64_MAX &&
						  ssemu_gen_hold(r)) ?
					   e->now : t, &fired)) {
		ssemu_model_dispatch(r, &fired);
		stopped = watched && r->watch_hit;
	}
	ssemu_model_run_end(r);
	if (!ssemu_engine_cap_ok(e, r->config.max_events))
		ssemu_fail(r, "the event engine's size changed");
	ret = engine_bad(r) || ssemu_fab_check(f) ? -EIO : stopped;
	/* (the clock goes to @t, unless @t is no time: run to the end) */
	if (!ret && e->now < t && t != UINT64_MAX && !r->nparked)
		e->now = t;
	/* (a run that executed events makes this process the runner, as
	 * in progress: its own next poll must not wait for another one) */
	if (e->executed != exec0) {
		ssemu_store_relaxed(&f->run.run_mark, e->executed);
		ssemu_store_relaxed(&f->run.runner, 1);
	}
	ssemu_region_unlock(r);
	return ret;
}

int ssemu_fabric_run_until(struct ssemu_fabric *f, ssemu_time_t t)
{
	return f ? run_until(f, t, false) : -EINVAL;
}

int ssemu_fabric_run_until_watched(struct ssemu_fabric *f, ssemu_time_t t)
{
	return f ? run_until(f, t, true) : -EINVAL;
}

bool ssemu_fabric_idle(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;
	uint32_t epi;

	/* (broken: nothing will ever happen) */
	if (ssemu_fab_check(f))
		return true;
	/* (modelled jobs' events do not count: they never end) */
	if (ssemu_engine_pending(ssemu_r_engine(r)) &&
	    !ssemu_gen_hold(r))
		return false;
	for (epi = r->gen_neps; epi < f->neps; epi++) {
		struct ssemu_ep_sh *sh = ssemu_r_ep(r, epi);

		if (!sh->open)
			continue;
		if (ssemu_ep_rings_bad(r, epi))
			return true;
		if (ssemu_ring_tagged_pending(ssemu_r_ring(r, sh->tx_ring_off)) ||
		    sh->rx_head != SSEMU_NONE || sh->tx_head != SSEMU_NONE)
			return false;
	}
	return true;
}

/* A waiter that finds the engine running naps this long, then looks. */
#define WAIT_BUSY_NS 20000L

/* Has one of the endpoint slots @eps[0, n) (SSEMU_NONE: none) an event? */
static bool eps_ready(struct ssemu_region *r, const uint32_t *eps, uint32_t n)
{
	uint32_t i, epi;

	for (i = 0; i < n; i++) {
		struct ssemu_ep_sh *sh;

		epi = ssemu_load_relaxed(&eps[i]);
		if (epi >= r->neps)
			continue;
		sh = ssemu_r_ep(r, epi);
		/* (a corrupt ring: "ready", and the poll says -EIO) */
		if (ssemu_load_acquire(&sh->open) &&
		    (ssemu_ep_rings_bad(r, epi) ||
		     ssemu_ring_count(ssemu_r_ring(r, sh->ev_ring_off))))
			return true;
	}
	return false;
}

/*
 * Wait until one of the endpoint slots @eps[0, n) has an event, driving
 * the engine when nobody else does, and otherwise sleeping on @word (bumped
 * by an event push while @waiters is raised) until woken, until the next
 * model deadline (realtime), or for a short nap that lets us take the
 * engine over if its runner stalls.
 */
static int wait_events(struct ssemu_fabric *f, const uint32_t *eps, uint32_t n,
		       uint32_t *word, uint32_t *waiters, int timeout_ms)
{
	struct ssemu_region *r = f->r;
	uint64_t start = wall_ns(), deadline, now, nap;
	struct timespec ts;
	uint32_t seq;
	int ret;

	deadline = timeout_ms < 0 ? UINT64_MAX :
				    start + (uint64_t)timeout_ms * 1000000ULL;
	for (;;) {
		ret = ssemu_fab_check(f);
		if (ret)
			return ret;
		if (eps_ready(r, eps, n))
			return 1;
		/* a waiter runs the engine itself: it may be the last one
		 * polling */
		ret = progress(f, 4096, false);
		if (eps_ready(r, eps, n))
			return 1;
		if (ret < 0 && ret != -EBUSY)
			return ret;
		now = wall_ns();
		if (now >= deadline)
			return 0;
		if (ret > 0)
			continue; /* the engine moved: look again */
		nap = 1000000ULL; /* 1 ms */
		if (ret == 0 && r->config.clock == SSEMU_CLOCK_REALTIME) {
			ssemu_time_t next;

			/* the engine is ours for a moment: peek at it */
			if (!ssemu_region_trylock(r)) {
				next = ssemu_engine_next_time(
					ssemu_r_engine(r));
				ssemu_region_unlock(r);
			} else {
				next = UINT64_MAX;
			}
			if (next != UINT64_MAX) {
				uint64_t due = r->wall_t0_ns +
					       (uint64_t)((double)next / 1000.0 *
							  r->config.dilation);
				nap = due > now ? due - now : 0;
				if (nap > 1000000ULL)
					nap = 1000000ULL;
			}
		}
		if (now + nap > deadline)
			nap = deadline - now;
		if (!nap)
			continue;
		ts.tv_sec = (time_t)(nap / 1000000000ULL);
		ts.tv_nsec = (long)(nap % 1000000000ULL);
		/* the engine bumps the word only for a sleeper it can see:
		 * count ourselves in under the lock (the engine is busy
		 * otherwise: look again soon instead of sleeping) */
		if (ssemu_region_trylock(r)) {
			nanosleep(&(struct timespec){ 0, WAIT_BUSY_NS }, NULL);
			continue;
		}
		ssemu_fetch_add(waiters, 1);
		ssemu_region_unlock(r);
		/* pairs with the release of the bump in futex_bump */
		seq = ssemu_load_acquire(word);
		if (!eps_ready(r, eps, n))
			syscall(SYS_futex, word, FUTEX_WAIT, seq, &ts, NULL, 0);
		ssemu_fetch_add(waiters, (uint32_t)-1);
	}
}

int ssemu_ep_wait(struct ssemu_ep *ep, int timeout_ms)
{
	struct ssemu_region *r;
	struct ssemu_ep_sh *sh;

	if (!ep)
		return -EINVAL;
	r = ep->nic->fab->r;
	sh = ssemu_r_ep(r, ep->index);
	return wait_events(ep->nic->fab, &ep->index, 1, &sh->ev_futex,
			   &sh->waiters, timeout_ms);
}

int ssemu_nic_wait(struct ssemu_nic *nic, int timeout_ms)
{
	struct ssemu_region *r;
	struct ssemu_nic_sh *n;

	if (!nic)
		return -EINVAL;
	r = nic->fab->r;
	n = ssemu_r_nic(r, nic->slot);
	return wait_events(nic->fab, ssemu_r_nic_eps(r, nic->slot),
			   nic->fab->cfg->eps_per_nic, &n->ev_futex,
			   &n->waiters, timeout_ms);
}
