/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric lock and process liveness.  The lock is a word in the segment
 * (struct ssemu_region's lock): it serialises the engine, NIC attach and
 * detach, endpoint open and close.  A process that dies holding it is
 * found by its pid, which the word holds: the next process in takes it
 * over and repairs what the dead one may have left half done before it
 * goes on.  The word is shared memory like the rest, so what it says is
 * checked too: a damaged lock fails the call with -EIO (the fabric marked
 * broken), it never hangs a process.  The repair is
 * the store's business, not the lock's (ssemu_lock_set_repair): the lock
 * knows nothing of what it protects, so that every file may take it.
 *
 * A process that dies while attached, not holding the lock, is found by
 * its pid (ssemu_pid_alive) in the process slots kept here and in the NIC
 * table (ssemu_attach.c reaps both).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ssemu_priv.h"

/* A zombie still answers kill(0), so look at its state as well. */
bool ssemu_pid_alive(int32_t pid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return true;	/* no procfs: trust kill() */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * The lock is one word (struct ssemu_lock): 0 when free, else the pid of
 * the process holding it, with LOCK_WAITERS set once a process may sleep
 * on it (futex); beside it, a count of takes.  A holder is robust by its
 * pid: a process that waits for a lock that has not changed hands for
 * LOCK_NAP_NS (the same word, the same count) asks whether the holder is
 * alive (ssemu_pid_alive), and takes a dead holder's lock over, running
 * the repair.  Every wait is bounded: a word that no process can have
 * written (bits outside a pid's range, no pid) is found at once, and a
 * holder that is alive but not attached to the fabric, still holding it
 * after LOCK_STRANGER_NS, is a word that something wrote over: either way
 * the fabric is marked broken and the call fails with -EIO.
 */
#define LOCK_WAITERS 0x80000000u
#define LOCK_PID_MASK 0x003fffffu	/* pids are below 2^22 (PID_MAX_LIMIT) */
#define LOCK_SPINS 64			/* tries before sleeping */
#define LOCK_NAP_NS 10000000ULL		/* sleeps between holder checks: 10 ms */
#define LOCK_STRANGER_NS 2000000000ULL	/* 2 s */

/* What a lock whose holder died needs before it is handed on. */
static void (*lock_repair)(struct ssemu_region *r);

void ssemu_lock_set_repair(void (*repair)(struct ssemu_region *r))
{
	__atomic_store_n(&lock_repair, repair, __ATOMIC_RELEASE);
}

/* This process's pid, as the lock word holds it (kept, and forgotten in a
 * child after fork): getpid is a system call, and the pollers ask often. */
static uint32_t self_pid;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_forget(void)
{
	ssemu_store_relaxed(&self_pid, 0u);
}

static void self_once_init(void)
{
	pthread_atfork(NULL, NULL, self_forget);
}

SSEMU_HOT
uint32_t ssemu_self_pid(void)
{
	uint32_t pid = ssemu_load_relaxed(&self_pid);

	if (unlikely(!pid)) {
		pthread_once(&self_once, self_once_init);
		pid = (uint32_t)getpid();
		ssemu_store_relaxed(&self_pid, pid);
	}
	return pid;
}

static uint64_t lock_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Can a process have written @v (free, or a pid with or without
 * waiters)? */
static bool lock_word_sane(uint32_t v)
{
	return !v || (!(v & ~(LOCK_WAITERS | LOCK_PID_MASK)) &&
		      (v & LOCK_PID_MASK));
}

/* Is @pid this process or one of the fabric's attached processes? */
static bool lock_holder_attached(const struct ssemu_region *r, uint32_t pid)
{
	uint32_t i;

	if (pid == ssemu_self_pid())
		return true;
	for (i = 0; i < SSEMU_MAX_PROCS; i++)
		if ((uint32_t)ssemu_load_relaxed(&r->procs[i]) == pid)
			return true;
	return false;
}

static int lock_damaged(struct ssemu_region *r, uint32_t v, const char *why)
{
	ssemu_fail(r, "the fabric lock is damaged (its word is %#x: %s)", v,
		   why);
	return -EIO;
}

/* The lock is ours: count the take (a holder seen twice with the same
 * count held it all along in between). */
static int lock_taken(struct ssemu_region *r)
{
	ssemu_store_relaxed(&r->lock.taken,
			    ssemu_load_relaxed(&r->lock.taken) + 1);
	return 0;
}

/* The lock was @v, held by a process that is gone: ours now, if nobody
 * took it first; then repaired.  @return 0, or -EAGAIN (look again). */
static int lock_take_over(struct ssemu_region *r, uint32_t v, uint32_t mine)
{
	void (*repair)(struct ssemu_region *r);

	if (!ssemu_cas(&r->lock.word, &v, mine))
		return -EAGAIN;
	lock_taken(r);
	ssemu_log(SSEMU_LOG_WARN, "a process died holding the fabric lock: "
		  "recovering");
	repair = __atomic_load_n(&lock_repair, __ATOMIC_ACQUIRE);
	if (repair)
		repair(r);
	return 0;
}

static void lock_futex_wait(uint32_t *word, uint32_t v, uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ULL),
		.tv_nsec = (long)(ns % 1000000000ULL),
	};

	syscall(SYS_futex, word, FUTEX_WAIT, v, &ts, NULL, 0);
}

int ssemu_lock_init(struct ssemu_region *r)
{
	ssemu_store_relaxed(&r->lock.word, 0u);
	ssemu_store_relaxed(&r->lock.taken, 0u);
	return 0;
}

/* What a waiter has seen of a held lock (@v its word): the word and the
 * count of takes, in one. */
static uint64_t lock_key(const struct ssemu_region *r, uint32_t v)
{
	return (uint64_t)ssemu_load_relaxed(&r->lock.taken) << 32 | v;
}

/*
 * The lock has been @v, taken by nobody else, since @since: is its holder
 * gone (take it over), or a stranger (the word is damaged)?  @return 0
 * (ours now), -EAGAIN (go on waiting) or -EIO.
 */
static int lock_holder_check(struct ssemu_region *r, uint32_t v,
			     uint64_t since, uint64_t now, uint32_t mine)
{
	uint32_t pid = v & LOCK_PID_MASK;

	if (!ssemu_pid_alive((int32_t)pid))
		return lock_take_over(r, v, mine);
	if (now - since >= LOCK_STRANGER_NS && !lock_holder_attached(r, pid))
		return lock_damaged(r, v, "held for seconds by a process "
				    "that is not attached to the fabric");
	return -EAGAIN;
}

int ssemu_region_lock(struct ssemu_region *r)
{
	uint32_t *w = &r->lock.word, self = ssemu_self_pid(), v, zero;
	uint64_t key, seen = 0, since = 0, now;
	unsigned spin;
	int ret;

	for (spin = 0; spin < LOCK_SPINS; spin++) {
		zero = 0;
		/* pairs with the release in ssemu_region_unlock */
		if (ssemu_cas(w, &zero, self))
			return lock_taken(r);
		if (!lock_word_sane(zero))
			return lock_damaged(r, zero, "no process writes that");
		ssemu_cpu_relax();
	}
	for (;;) {
		if (ssemu_broken(r))
			return -EIO;
		v = ssemu_load_relaxed(w);
		if (!v) {
			/* (others may sleep on it: whoever unlocks wakes one) */
			zero = 0;
			if (ssemu_cas(w, &zero, self | LOCK_WAITERS))
				return lock_taken(r);
			continue;
		}
		if (!lock_word_sane(v))
			return lock_damaged(r, v, "no process writes that");
		if (!(v & LOCK_WAITERS)) {
			if (!ssemu_cas(w, &v, v | LOCK_WAITERS))
				continue;
			v |= LOCK_WAITERS;
		}
		key = lock_key(r, v);
		lock_futex_wait(w, v, LOCK_NAP_NS);
		if (lock_key(r, ssemu_load_relaxed(w)) != key)
			continue;
		now = lock_clock_ns();
		if (key != seen) {
			seen = key;
			since = now;
		}
		ret = lock_holder_check(r, v, since, now, self | LOCK_WAITERS);
		if (ret != -EAGAIN)
			return ret;
	}
}

/*
 * A try that fails says -EBUSY; one that finds the same holder (the same
 * word and count of takes) again after LOCK_NAP_NS checks it as a wait
 * would.  What the process's tries have seen is kept once for all its
 * threads, with relaxed atomics: a hint, as any holder it names is checked
 * before it is taken over.
 */
static struct {
	const struct ssemu_region *r;
	uint64_t key;
	uint64_t since;
} try_seen;

SSEMU_HOT
int ssemu_region_trylock(struct ssemu_region *r)
{
	uint32_t *w = &r->lock.word, self = ssemu_self_pid(), v = 0;
	uint64_t now, key, since;
	int ret;

	/* a plain look first: a compare-and-swap that fails still takes the
	 * word's line from the holder, which writes it as it lets go; pairs
	 * with the release in ssemu_region_unlock */
	v = ssemu_load_relaxed(w);
	if (!v && ssemu_cas(w, &v, self))
		return lock_taken(r);
	if (!lock_word_sane(v))
		return lock_damaged(r, v, "no process writes that");
	key = lock_key(r, v);
	now = lock_clock_ns();
	if (ssemu_load_relaxed(&try_seen.r) != r ||
	    ssemu_load_relaxed(&try_seen.key) != key) {
		ssemu_store_relaxed(&try_seen.r, r);
		ssemu_store_relaxed(&try_seen.key, key);
		ssemu_store_relaxed(&try_seen.since, now);
		return -EBUSY;
	}
	since = ssemu_load_relaxed(&try_seen.since);
	if (now - since < LOCK_NAP_NS)
		return -EBUSY;
	ret = lock_holder_check(r, v, since, now, self | (v & LOCK_WAITERS));
	return ret == -EAGAIN ? -EBUSY : ret;
}

/* What the pollers read instead of the engine's own counters
 * (struct ssemu_run_pub): written only when it changed, so an idle
 * poll's lock leaves the line shared. */
static void run_publish(struct ssemu_region *r)
{
	const struct ssemu_engine *e;
	struct ssemu_run_pub *p = &r->run_pub;
	uint64_t exec;
	uint32_t live;

	if (!r->engine_off)
		return;		/* (a region not laid out yet) */
	e = ssemu_r_engine(r);
	exec = ssemu_load_relaxed(&e->executed);
	live = ssemu_load_relaxed(&e->nlive);
	if (ssemu_load_relaxed(&p->executed) != exec)
		ssemu_store_relaxed(&p->executed, exec);
	if (ssemu_load_relaxed(&p->nlive) != live)
		ssemu_store_relaxed(&p->nlive, live);
}

SSEMU_HOT
void ssemu_region_unlock(struct ssemu_region *r)
{
	run_publish(r);
	ssemu_region_release(r);
}

void ssemu_region_release(struct ssemu_region *r)
{
	uint32_t v;

	/* pairs with the acquire of the cas in the lock */
	v = __atomic_exchange_n(&r->lock.word, 0u, __ATOMIC_RELEASE);

	if (v & LOCK_WAITERS)
		syscall(SYS_futex, &r->lock.word, FUTEX_WAKE, 1, NULL, NULL,
			0);
}

/* ------------------------------------------------------------------ */
/* Process slots                                                        */
/* ------------------------------------------------------------------ */

int ssemu_proc_claim_locked(struct ssemu_region *r, void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (!r->procs[i]) {
			r->procs[i] = getpid();
			return 0;
		}
	}
	return -ENOSPC;
}

int ssemu_proc_unregister_locked(struct ssemu_region *r)
{
	int i, n = 0;
	bool done = false;

	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (!done && r->procs[i] == getpid()) {
			r->procs[i] = 0;
			done = true;
		} else if (r->procs[i] && ssemu_pid_alive(r->procs[i])) {
			n++;
		}
	}
	return n;
}

uint32_t ssemu_procs_live(const struct ssemu_region *r)
{
	uint32_t i, n = 0;

	for (i = 0; i < SSEMU_MAX_PROCS; i++)
		if (r->procs[i] && ssemu_pid_alive(r->procs[i]))
			n++;
	return n;
}
