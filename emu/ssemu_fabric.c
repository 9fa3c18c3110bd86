/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process's handle on a fabric: open (a new region in private memory,
 * or a named POSIX shared-memory segment created or attached, see
 * ssemu_store.c) and close, the guard against the segment being truncated
 * under the process (SIGBUS), and the check that the segment's header is
 * still the one this process checked at attach.
 *
 * There is no daemon: whichever process calls progress and wins the fabric
 * lock runs the engine for everyone (ssemu_runner.c).  A process that dies
 * holding the lock is found by the pid the lock word holds (ssemu_lock.c),
 * one that dies while attached by a pid liveness check (ssemu_attach.c);
 * either way its NICs are detached and everyone else carries on.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "ssemu_priv.h"
#include "ssemu_timeline.h"

static void image_take(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;

	f->cfg = &r->config;
	f->neps = r->neps;
	f->nmsgs = r->nmsgs;
	f->nbufs = r->nbufs;
	f->nendpoints = r->topo.nendpoints;
}

/*
 * Is the segment's header still what attach checked (else the fabric is
 * marked broken)?  This process uses its own copy of it; the segment's is
 * compared with it (a page), with every liveness check of the engine's
 * runner (and every ssemu_fabric_run_until).
 */
bool ssemu_fabric_image_bad(struct ssemu_fabric *f)
{
	struct ssemu_region *r = f->r;

	if (f->view && memcmp(f->view, r, SSEMU_HDR_PRIVATE))
		return ssemu_fail(r, "the segment's header changed under the "
				  "fabric (its configuration, a section "
				  "offset or a count)");
	return !ssemu_engine_geometry_ok(ssemu_r_engine(r),
					 r->config.max_events) &&
	       ssemu_fail(r, "the event engine's geometry changed");
}

/* ------------------------------------------------------------------ */
/* The SIGBUS guard                                                     */
/* ------------------------------------------------------------------ */

/*
 * A POSIX shared-memory segment cannot be sealed against shrinking
 * (F_SEAL_SHRINK is for memfds), so anyone with the owner's rights may
 * truncate a fabric's segment under its users, whose next touch of a page
 * past the new end raises SIGBUS.  While a segment is mapped, the fault
 * guard's handler (ssemu_guard.c) asks segment_bus_fault about every
 * SIGBUS first, which looks at the fault address: inside a
 * mapped segment (the shared
 * part of its mapping, or the view of the segment's header; this process's
 * own copy of the header cannot fault), it maps anonymous zero pages from
 * the faulting page to the end of that range (MAP_FIXED), marks the handle
 * gone and returns, so the faulting access completes on a zero page; the
 * library checks the handle at its entry points and after every engine
 * event, so the call in progress and every later one fail with -EIO.  Any
 * other SIGBUS goes to the handler that was there before (or kills the
 * process, as it would have).  (mmap is a plain system call on Linux, safe here.)
 */
#define GUARD_MAX 64

static struct guard {
	uintptr_t base;		/* 0: slot free */
	size_t size;
	struct ssemu_fabric *f;
} guards[GUARD_MAX];
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static bool guard_on;
static uintptr_t guard_page;

/* Called by the fault guard's handler (ssemu_guard.c) for every SIGBUS:
 * true if it lay in a mapped segment. */
static bool segment_bus_fault(const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr, base, page, end;
	int saved = errno, i;

	for (i = 0; i < GUARD_MAX; i++) {
		base = ssemu_load_acquire(&guards[i].base);
		if (!base || a < base || a - base >= guards[i].size)
			continue;
		end = base + guards[i].size;
		page = a & ~(guard_page - 1);
		if (mmap((void *)page, end - page, PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
		    MAP_FAILED)
			break;
		guards[i].f->gone = 1;
		errno = saved;
		return true;
	}
	errno = saved;
	return false;
}

static void sigbus_guard_add(struct ssemu_fabric *f)
{
	int i, k;

	pthread_mutex_lock(&guard_lock);
	if (!guard_on) {
		guard_page = (uintptr_t)sysconf(_SC_PAGESIZE);
		ssemu_guard_set_bus_hook(segment_bus_fault);
		guard_on = true;
	}
	/* (again if someone replaced it since: the old one is chained) */
	ssemu_guard_arm();
	for (i = 0, k = 0; i < GUARD_MAX && k < 2; i++) {
		if (guards[i].base)
			continue;
		/* the shared part of the mapping, then the header's view */
		guards[i].size = k ? SSEMU_HDR_PRIVATE :
				     f->map_size - SSEMU_HDR_PRIVATE;
		guards[i].f = f;
		ssemu_store_release(&guards[i].base,
				    k ? (uintptr_t)f->view :
					(uintptr_t)f->r + SSEMU_HDR_PRIVATE);
		k++;
	}
	if (k < 2)
		ssemu_log(SSEMU_LOG_WARN, "more than %d shared fabrics open: "
			  "this one is not guarded against truncation",
			  GUARD_MAX);
	pthread_mutex_unlock(&guard_lock);
}

static void sigbus_guard_remove(struct ssemu_fabric *f)
{
	int i;

	pthread_mutex_lock(&guard_lock);
	for (i = 0; i < GUARD_MAX; i++)
		if (guards[i].base && guards[i].f == f)
			ssemu_store_release(&guards[i].base, (uintptr_t)0);
	pthread_mutex_unlock(&guard_lock);
}

int ssemu_fabric_open(const struct ssemu_fabric_opts *opts,
		      struct ssemu_fabric **fabric, char *err, size_t errlen)
{
	struct ssemu_config defcfg;
	const struct ssemu_config *c;
	struct ssemu_fabric *f;
	struct ssemu_topo t;
	struct ssemu_layout l;
	const char *dir;
	char dummy[8];
	int ret;

	if (!err) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!opts || !fabric) {
		snprintf(err, errlen, "missing options or result pointer");
		return -EINVAL;
	}
	c = opts->config;
	if (!c) {
		ssemu_config_preset("switch", &defcfg);
		c = &defcfg;
	}
	if (opts->flags & (SSEMU_OPEN_EXISTING | SSEMU_OPEN_OBSERVER) &&
	    opts->store != SSEMU_STORE_SHM) {
		snprintf(err, errlen, "only a shared fabric can be attached "
			 "as existing");
		return -EINVAL;
	}
	ret = ssemu_config_validate(c, err, errlen);
	if (ret)
		return ret;
	/* (zeroed: the header's copy is compared byte for byte) */
	memset(&t, 0, sizeof(t));
	ret = ssemu_topo_init(&t, &c->topo, err, errlen);
	if (ret)
		return ret;
	ssemu_layout_compute(c, &t, &l);
	if (l.total > (1ULL << 40)) {
		snprintf(err, errlen, "this fabric needs %llu GiB of store: "
			 "reduce max_nics/max_switches/bufs",
			 (unsigned long long)(l.total >> 30));
		return -ENOMEM;
	}

	/* (a lock left by a process that died holding it is repaired by
	 * the store: the lock itself knows nothing of it) */
	ssemu_lock_set_repair(ssemu_repair_locked);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->store = opts->store;
	if (opts->store == SSEMU_STORE_PRIVATE) {
		ret = ssemu_store_private(f, c, &t, &l, err, errlen);
		if (ret)
			goto err_free;
	} else if (opts->store == SSEMU_STORE_SHM) {
		/* (a file's name in ssemu_shm_dir: never a path) */
		if (opts->name && (!opts->name[0] || strchr(opts->name, '/') ||
				   !strcmp(opts->name, ".") ||
				   !strcmp(opts->name, "..") ||
				   strlen(opts->name) > 48)) {
			snprintf(err, errlen, "bad fabric name '%s': 1-48 "
				 "characters, no '/', not . or ..", opts->name);
			ret = -EINVAL;
			goto err_free;
		}
		if (opts->name)
			snprintf(f->shm_name, sizeof(f->shm_name), "/%s",
				 opts->name);
		else
			snprintf(f->shm_name, sizeof(f->shm_name),
				 "/ssemu-%u", (unsigned)geteuid());
		dir = ssemu_shm_dir(err, errlen);
		if (!dir) {
			ret = -EINVAL;
			goto err_free;
		}
		snprintf(f->shm_path, sizeof(f->shm_path), "%s%s", dir,
			 f->shm_name);
		f->flags = opts->flags;
		ret = ssemu_store_shm(f, c, &t, &l, &f->view, err, errlen);
		if (ret)
			goto err_free;
		/*
		 * The emulated NIC serving an RMA to our memory may be the
		 * engine running in another process of ours: let it use
		 * cross-memory attach (process_vm_readv/writev) on us even
		 * under Yama's ptrace_scope 1.  EINVAL: no Yama, nothing to
		 * do.
		 */
		if (!(opts->flags & SSEMU_OPEN_OBSERVER) &&
		    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) &&
		    errno != EINVAL)
			ssemu_log(SSEMU_LOG_WARN, "prctl(PR_SET_PTRACER): %s: "
				  "other processes' RMA to this one may be "
				  "refused", strerror(errno));
	} else {
		snprintf(err, errlen, "unknown store %d", (int)opts->store);
		ret = -EINVAL;
		goto err_free;
	}
	if (f->r->config.clock == SSEMU_CLOCK_REALTIME && !f->r->wall_t0_ns) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		/* first process in sets the origin; the others keep it */
		uint64_t zero = 0, t0 = (uint64_t)ts.tv_sec * 1000000000ULL +
					(uint64_t)ts.tv_nsec;
		ssemu_cas(&f->r->wall_t0_ns, &zero, t0);
	}
	image_take(f);
	if (f->store == SSEMU_STORE_SHM)
		sigbus_guard_add(f);
	*fabric = f;
	ssemu_tl_open();
	return 0;

err_free:
	free(f);
	return ret;
}

void ssemu_fabric_close(struct ssemu_fabric *f)
{
	struct ssemu_region *r;
	int left;

	if (!f)
		return;
	r = f->r;
	if (f->store == SSEMU_STORE_SHM)
		sigbus_guard_remove(f);
	/* (a segment cut short under us is left to `slingshot-emu clean`) */
	if (f->store == SSEMU_STORE_SHM && !(f->flags & SSEMU_OPEN_OBSERVER) &&
	    !f->gone) {
		if (!ssemu_region_lock(r)) {
			left = ssemu_proc_unregister_locked(r);
			/* (a fabric shared with a group may be another
			 * user's, whose file only they remove: it stays,
			 * for its next user or `slingshot-emu clean`) */
			if (!left && (!unlink(f->shm_path) ||
				      errno == ENOENT))
				r->dead = 1;
			ssemu_region_release(r);
		}
	}
	if (f->view)
		munmap((void *)f->view, SSEMU_HDR_PRIVATE);
	munmap(r, f->map_size);
	free(f);
	ssemu_tl_close();
}

const struct ssemu_config *ssemu_fabric_config(struct ssemu_fabric *f)
{
	return &f->r->config;
}

ssemu_time_t ssemu_fabric_now(struct ssemu_fabric *f)
{
	/* (group windows: the engine's clock decoded, the time of the group
	 * whose event ran last) */
	if (f->r->config.group_windows)
		return ssemu_r_now(f->r);
	return ssemu_load_relaxed(&ssemu_r_engine(f->r)->now);
}
