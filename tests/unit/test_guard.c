/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fault guard (emu/ssemu_guard.c): ssemu_copy_user from or into memory
 * that is not mapped, or not writable, returns -EFAULT and leaves the
 * process running; copies of good memory are exact; a fault outside any
 * guard still reaches the handler that was there before (the default one
 * ends the process with SIGSEGV, an application's own is called), and a
 * handler installed over the guard's is replaced again by the next
 * ssemu_guard_arm while still being chained to.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"	/* ssemu_guard_arm */

static size_t pg;

/* Two pages, the second unmapped; the first read-only if @ro. */
static char *page_then_hole(bool ro)
{
	char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	memset(p, 0x42, pg);
	assert_int_equal(munmap(p + pg, pg), 0);
	if (ro)
		assert_int_equal(mprotect(p, pg, PROT_READ), 0);
	return p;
}

static void test_guard_copies(void **state)
{
	char *p = page_then_hole(false), *ro = page_then_hole(true);
	static char buf[8192];
	int i;

	(void)state;
	/* many times: past GUARD_RECHECK, faults in a row */
	for (i = 0; i < 3000; i++) {
		assert_int_equal(ssemu_copy_user(buf, p + pg - 16, 32),
				 -EFAULT);
		assert_int_equal(ssemu_copy_user(p + pg - 16, buf, 32),
				 -EFAULT);
		assert_int_equal(ssemu_copy_user(ro, buf, 8), -EFAULT);
		assert_int_equal(ssemu_copy_user(buf, NULL, 8), -EFAULT);
	}
	memset(buf, 0, sizeof(buf));
	assert_int_equal(ssemu_copy_user(buf, p, pg), 0);
	for (i = 0; i < (int)pg; i++)
		assert_int_equal((unsigned char)buf[i], 0x42);
	assert_int_equal(ssemu_copy_user(buf, NULL, 0), 0);
	munmap(p, pg);
	munmap(ro, pg);
}

/* Outside a guard a fault is the process's as before: default action. */
static void test_guard_default_action(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char buf[8];
		volatile char *bad = page_then_hole(false) + pg;

		signal(SIGSEGV, SIG_DFL);
		ssemu_guard_arm();
		(void)ssemu_copy_user(buf, (void *)bad, 8);
		*bad = 1;	/* no guard: dies of SIGSEGV */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
}

static sigjmp_buf app_env;
static volatile int app_calls;

static void app_handler(int sig)
{
	(void)sig;
	app_calls++;
	siglongjmp(app_env, 1);
}

/* An application's handler installed later: re-armed over, chained to. */
static void test_guard_rearm_chain(void **state)
{
	volatile char *bad = page_then_hole(false) + pg;
	struct sigaction sa, old;
	char buf[8];

	(void)state;
	ssemu_guard_arm();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	sa.sa_flags = SA_NODEFER;
	assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
	ssemu_guard_arm();
	assert_int_equal(ssemu_copy_user(buf, (void *)bad, 8), -EFAULT);
	assert_int_equal(app_calls, 0);
	if (!sigsetjmp(app_env, 0))
		*bad = 1;	/* outside the guard: the application's */
	assert_int_equal(app_calls, 1);
	assert_int_equal(sigaction(SIGSEGV, &old, NULL), 0);
	munmap((char *)bad - pg, pg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guard_copies),
		cmocka_unit_test(test_guard_default_action),
		cmocka_unit_test(test_guard_rearm_chain),
	};

	pg = (size_t)sysconf(_SC_PAGESIZE);
	return cmocka_run_group_tests_name("fault guard", tests, NULL, NULL);
}
