/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fabric lock and process liveness.  The lock is a robust,
 * process-shared mutex in the segment (struct ssemu_region's lock): it
 * serialises the engine, NIC attach and detach, endpoint open and close.
 * A process that dies holding it is caught by the robust mutex
 * (EOWNERDEAD): the next process in makes it consistent and repairs what
 * the dead one may have left half done before it goes on.  The repair is
 * the store's business, not the lock's (ssemu_lock_set_repair): the lock
 * knows nothing of what it protects, so that every file may take it.
 *
 * A process that dies while attached, not holding the lock, is found by
 * its pid (ssemu_pid_alive) in the process slots kept here and in the NIC
 * table (ssemu_attach.c reaps both).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
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

/* What a lock whose holder died needs before it is handed on. */
static void (*lock_repair)(struct ssemu_region *r);

void ssemu_lock_set_repair(void (*repair)(struct ssemu_region *r))
{
	__atomic_store_n(&lock_repair, repair, __ATOMIC_RELEASE);
}

int ssemu_lock_init(struct ssemu_region *r)
{
	pthread_mutexattr_t ma;
	int ret;

	ret = pthread_mutexattr_init(&ma);
	if (!ret)
		ret = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	if (!ret)
		ret = pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	if (!ret)
		ret = pthread_mutex_init(&r->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	return -ret;
}

static int lock_region(struct ssemu_region *r, bool try)
{
	void (*repair)(struct ssemu_region *r);
	int ret = try ? pthread_mutex_trylock(&r->lock) :
			pthread_mutex_lock(&r->lock);

	if (ret == EOWNERDEAD) {
		ssemu_log(SSEMU_LOG_WARN, "a process died holding the fabric "
			  "lock: recovering");
		pthread_mutex_consistent(&r->lock);
		repair = __atomic_load_n(&lock_repair, __ATOMIC_ACQUIRE);
		if (repair)
			repair(r);
		return 0;
	}
	return -ret;
}

int ssemu_region_lock(struct ssemu_region *r)
{
	return lock_region(r, false);
}

int ssemu_region_trylock(struct ssemu_region *r)
{
	return lock_region(r, true);
}

void ssemu_region_unlock(struct ssemu_region *r)
{
	pthread_mutex_unlock(&r->lock);
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

unsigned ssemu_procs_reap_locked(struct ssemu_region *r)
{
	unsigned freed = 0;
	uint32_t i;

	for (i = 0; i < SSEMU_MAX_PROCS; i++) {
		if (r->procs[i] && !ssemu_pid_alive(r->procs[i])) {
			r->procs[i] = 0;
			freed++;
		}
	}
	return freed;
}

uint32_t ssemu_procs_live(const struct ssemu_region *r)
{
	uint32_t i, n = 0;

	for (i = 0; i < SSEMU_MAX_PROCS; i++)
		if (r->procs[i] && ssemu_pid_alive(r->procs[i]))
			n++;
	return n;
}
