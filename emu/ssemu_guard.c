/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Guarded access to application memory.
 *
 * The emulated NIC reads and writes memory the application named: send
 * buffers, receive buffers, registered regions.  A real NIC that meets an
 * unmapped page fails the transfer (a DMA or translation error); it never
 * brings the host down.  Here the NIC is code in some process, so an access
 * to a page that is not mapped (or not writable) would kill that process,
 * which may be the one that runs the engine for everybody.
 *
 * Accesses to another process's memory go through process_vm_readv/writev,
 * which answer EFAULT.  For this process's own memory a system call per
 * copy costs about 2 us on a virtualised host, more than the whole model's
 * work for a small message, so those copies run under a fault guard
 * instead: a SIGSEGV/SIGBUS handler, installed once, that returns to the
 * guard's sigsetjmp when the faulting thread is inside a guarded access and
 * otherwise hands the signal to whatever handler was there before (or to
 * the default action, which then ends the process as it would have).  The
 * same handler serves the shared segments' truncation check: a SIGBUS on a
 * mapped segment goes to the hook that ssemu_fabric.c sets.  The
 * guard costs a sigsetjmp without a signal mask (no system call) and two
 * stores to a thread-local word.
 *
 * An application (or test harness) that installs its own SIGSEGV handler
 * later replaces this one until the guard looks again (ssemu_guard_arm):
 * a fault in a guarded copy meanwhile goes to its handler, as any fault in
 * its own code does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <string.h>

#include "ssemu_priv.h"

struct guard {
	sigjmp_buf env;
};

static __thread struct guard *volatile cur_guard;
static __thread unsigned guard_calls;
static struct sigaction old_segv, old_bus;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static bool guard_ready, guard_warned;

/* Look at the guard's handler again every this many guarded accesses of a
 * thread (the look is a system call). */
#define GUARD_RECHECK 1024

/* The shared-segment truncation check (ssemu_fabric.c), asked first about
 * every SIGBUS, guarded access or not. */
static bool (*bus_hook)(const siginfo_t *si);

void ssemu_guard_set_bus_hook(bool (*hook)(const siginfo_t *si))
{
	__atomic_store_n(&bus_hook, hook, __ATOMIC_RELEASE);
}

static void guard_chain(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;
	struct sigaction dfl;

	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction) {
			old->sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* sent by someone and ignored before us: still ignored */
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN &&
	    si->si_code <= 0)
		return;
	/* As without us: the default action is put back; a fault runs the
	 * faulting instruction again on return and ends the process with
	 * this signal, a signal that was sent is sent again. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

/*
 * One handler for both signals, whoever is interested: a SIGBUS on a
 * truncated shared segment is the segment check's (it maps zero pages
 * there, so the access, guarded or not, completes; the library then finds
 * the segment gone), a fault inside a guarded access jumps back to its
 * guard, and anything else goes to the handler that was there before.
 */
static void guard_handler(int sig, siginfo_t *si, void *uc)
{
	bool (*hook)(const siginfo_t *);
	struct guard *g;

	hook = __atomic_load_n(&bus_hook, __ATOMIC_ACQUIRE);
	if (sig == SIGBUS && si->si_code > 0 && hook && hook(si))
		return;
	g = cur_guard;
	if (g) {
		cur_guard = NULL;
		siglongjmp(g->env, 1);
	}
	guard_chain(sig, si, uc);
}

/* Put the handler in for @sig unless it is there; what was there is
 * chained to. */
static int guard_install(int sig, struct sigaction *old)
{
	struct sigaction sa, cur;

	if (sigaction(sig, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == guard_handler)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = guard_handler;
	/* SA_NODEFER: the jump out of the handler leaves the signal
	 * unblocked without a signal-mask system call per guard */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	/* (the chain reads @old only on a fault outside a guard) */
	*old = cur;
	if (sigaction(sig, &sa, NULL))
		return -errno;
	return 0;
}

/*
 * Install the guard's handlers, or put them back if somebody replaced
 * them (a test harness that sets its own per test, an application that
 * installs one later): done when an endpoint opens, when a region is
 * registered, and every GUARD_RECHECK guarded accesses of a thread.
 */
void ssemu_guard_arm(void)
{
	int ret;

	pthread_mutex_lock(&guard_lock);
	ret = guard_install(SIGSEGV, &old_segv);
	if (!ret)
		ret = guard_install(SIGBUS, &old_bus);
	__atomic_store_n(&guard_ready, !ret, __ATOMIC_RELEASE);
	if (ret && !guard_warned) {
		guard_warned = true;
		ssemu_log(SSEMU_LOG_WARN, "cannot install the fault guard "
			  "(%s): a bad application buffer will crash the "
			  "process instead of failing its transfer",
			  strerror(-ret));
	}
	pthread_mutex_unlock(&guard_lock);
}

SSEMU_HOT
int ssemu_guarded(void (*fn)(void *), void *arg)
{
	bool ready = __atomic_load_n(&guard_ready, __ATOMIC_ACQUIRE);
	struct guard g;

	if (!ready || ++guard_calls % GUARD_RECHECK == 0) {
		ssemu_guard_arm();
		ready = __atomic_load_n(&guard_ready, __ATOMIC_ACQUIRE);
	}
	if (!ready || cur_guard) {
		/* no handler, or nested: the outer guard catches it */
		fn(arg);
		return 0;
	}
	if (sigsetjmp(g.env, 0))
		return -EFAULT;
	cur_guard = &g;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fn(arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	cur_guard = NULL;
	return 0;
}

struct copy_args {
	void *dst;
	const void *src;
	size_t len;
};

SSEMU_HOT
static void copy_fn(void *arg)
{
	struct copy_args *a = arg;

	memcpy(a->dst, a->src, a->len);
}

SSEMU_HOT
int ssemu_copy_user(void *dst, const void *src, size_t len)
{
	struct copy_args a = { dst, src, len };

	if (!len)
		return 0;
	if (!dst || !src)
		return -EFAULT;
	return ssemu_guarded(copy_fn, &a);
}
