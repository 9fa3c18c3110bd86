/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the fabric lock and the process slots (emu/ssemu_lock.c)
 * on a shared fabric: a lock word written over with bytes no process
 * writes fails the next call with -EIO and marks the fabric broken (later
 * attaches refused); a word naming a dead process is taken over and
 * repaired; a word naming a live process that is not attached fails
 * within a bound instead of hanging; random words over the lock end in
 * one of those, never a hang.  The 257th process to attach (SSEMU_MAX_PROCS
 * 256) gets -ENOSPC with a message, and one more gets in once a holder
 * died.  The reaper (emu/ssemu_attach.c) frees the NICs and slots of dead
 * processes and keeps the live ones', asking about each pid once a sweep;
 * a private fabric's polls never sweep.
 *
 * Segments are named after this process's pid and none is left behind.
 * Children never call cmocka: they report through pipes and their exit
 * status.  Each test runs under an alarm: a hang fails it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"

#define TEST_ALARM_S 60
#define RANDOM_RUNS 24

static char shm_name[64];	/* without the leading '/' */
static char last_log[512];	/* the last warning logged */
static unsigned recoveries;	/* "died holding the fabric lock" logged */

static void log_sink(enum ssemu_log_level lvl, const char *msg)
{
	if (lvl != SSEMU_LOG_WARN)
		return;
	snprintf(last_log, sizeof(last_log), "%s", msg);
	if (strstr(msg, "died holding the fabric lock"))
		recoveries++;
}

static void name_for(const char *tag)
{
	snprintf(shm_name, sizeof(shm_name), "ssemu-ut-%d-lock-%s",
		 (int)getpid(), tag);
}

static bool segment_exists(void)
{
	char path[96];

	snprintf(path, sizeof(path), "/dev/shm/%s", shm_name);
	return access(path, F_OK) == 0;
}

/* A broken fabric is left to `slingshot-emu clean`: remove it here. */
static void remove_segment(void)
{
	char path[80];

	snprintf(path, sizeof(path), "/%s", shm_name);
	shm_unlink(path);
}

static int open_fabric(struct ssemu_fabric **f, uint32_t flags, char *err,
		       size_t errlen)
{
	static struct ssemu_config c;
	struct ssemu_fabric_opts o = {
		.store = SSEMU_STORE_SHM,
		.name = shm_name,
		.config = &c,
		.flags = flags,
	};

	ssemu_config_preset("switch", &c);
	return ssemu_fabric_open(&o, f, err, errlen);
}

static int setup(void **state)
{
	(void)state;
	last_log[0] = 0;
	recoveries = 0;
	ssemu_log_set_sink(log_sink);
	alarm(TEST_ALARM_S);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	ssemu_log_set_sink(NULL);
	remove_segment();
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A pid that names no process: a child's, once reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return pid;
}

/* The fabric is broken, says why, and refuses a new attach. */
static void expect_broken(struct ssemu_fabric *f, const char *why)
{
	struct ssemu_fabric *f2;
	char err[256];

	assert_true(ssemu_broken(f->r));
	if (!strstr(f->r->verdict.why, why))
		fail_msg("verdict '%s' does not say '%s'", f->r->verdict.why,
			 why);
	assert_int_equal(open_fabric(&f2, SSEMU_OPEN_EXISTING, err,
				     sizeof(err)), -EIO);
	if (!strstr(err, "marked broken"))
		fail_msg("attach refused without saying why: %s", err);
}

/* Bits outside a pid's range: the next lock fails at once. */
static void test_lock_word_garbage(void **state)
{
	struct ssemu_fabric *f, *f2;
	struct ssemu_nic *nic;
	char err[256];
	uint64_t t0;

	(void)state;
	name_for("garbage");
	assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
	f->r->lock.word = 0xdeadbeef;
	t0 = now_ms();
	/* found by an attach, which says so */
	assert_int_equal(open_fabric(&f2, SSEMU_OPEN_EXISTING, err,
				     sizeof(err)), -EIO);
	if (!strstr(err, "fabric lock is damaged"))
		fail_msg("attach refused without saying why: %s", err);
	assert_true(now_ms() - t0 < 1000);
	expect_broken(f, "fabric lock is damaged");
	assert_int_equal(ssemu_nic_attach(f, NULL, &nic), -EIO);
	if (!strstr(last_log, "fabric lock is damaged"))
		fail_msg("no log line says so: '%s'", last_log);
	/* every later call fails the same way, the try too */
	assert_int_equal(ssemu_fabric_progress(f, 16), -EIO);
	assert_int_equal(ssemu_region_trylock(f->r), -EIO);
	ssemu_fabric_close(f);
	remove_segment();
	assert_false(segment_exists());
}

/* A dead process's pid: taken over and repaired, the fabric works on. */
static void test_lock_dead_holder(void **state)
{
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	char err[256];
	uint64_t t0;

	(void)state;
	name_for("dead");
	assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
	f->r->lock.word = (uint32_t)dead_pid();
	t0 = now_ms();
	assert_int_equal(ssemu_nic_attach(f, NULL, &nic), 0);
	assert_true(now_ms() - t0 < 2000);
	assert_int_equal(recoveries, 1);
	assert_false(ssemu_broken(f->r));
	assert_int_equal(ssemu_ep_open(nic, &ep), 0);
	ssemu_ep_close(ep);
	/* with waiters marked, and found by a try (after a while) */
	f->r->lock.word = (uint32_t)dead_pid() | 0x80000000u;
	t0 = now_ms();
	while (ssemu_region_trylock(f->r) == -EBUSY)
		assert_true(now_ms() - t0 < 2000);
	ssemu_region_unlock(f->r);
	assert_int_equal(recoveries, 2);
	assert_false(ssemu_broken(f->r));
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	assert_false(segment_exists());
}

/* A live process that is not attached "holds" it: -EIO within bounds. */
static void test_lock_stranger(void **state)
{
	struct ssemu_fabric *f;
	char err[256];
	uint64_t t0, took;
	pid_t pid;
	int status;

	(void)state;
	name_for("stranger");
	assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(TEST_ALARM_S);
		pause();
		_exit(0);
	}
	f->r->lock.word = (uint32_t)pid;
	t0 = now_ms();
	assert_int_equal(ssemu_region_lock(f->r), -EIO);
	took = now_ms() - t0;
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (took < 1500 || took > 10000)
		fail_msg("gave up after %llu ms", (unsigned long long)took);
	expect_broken(f, "not attached to the fabric");
	ssemu_fabric_close(f);
	remove_segment();
	assert_false(segment_exists());
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Random bytes over the whole lock, nobody holding it: the next call
 * either goes on (a word naming a dead process is taken over) or fails
 * with -EIO, the fabric marked broken; never a hang, and the fabric stays
 * usable exactly when it is not broken.
 */
static void test_lock_random(void **state)
{
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	char err[256];
	uint64_t s = 42, v;
	unsigned i, ok = 0, bad = 0;
	int ret;

	(void)state;
	for (i = 0; i < RANDOM_RUNS; i++) {
		name_for("random");
		assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
		v = rng_next(&s);
		/* (a third of the runs keep to a pid's bits: the takeover) */
		if (i % 3 == 0)
			v &= 0x803fffffULL;
		memcpy(&f->r->lock, &v, sizeof(f->r->lock));
		ret = ssemu_nic_attach(f, NULL, &nic);
		if (ret == 0) {
			assert_false(ssemu_broken(f->r));
			ssemu_nic_detach(nic);
			ok++;
		} else {
			if (ret != -EIO)
				fail_msg("seed run %u (word %#llx): %d", i,
					 (unsigned long long)v, ret);
			assert_true(ssemu_broken(f->r));
			bad++;
		}
		ssemu_fabric_close(f);
		remove_segment();
	}
	assert_true(ok > 0 && bad > 0);
}

/* One holder: attach, say so on @ready, hold until @go closes. */
static void holder(int ready, int go)
{
	struct ssemu_fabric *f;
	char err[256], c = 'R';

	alarm(TEST_ALARM_S);
	if (open_fabric(&f, SSEMU_OPEN_EXISTING, err, sizeof(err)))
		c = 'E';
	if (write(ready, &c, 1) != 1)
		_exit(3);
	if (c == 'E')
		_exit(2);
	while (read(go, &c, 1) > 0)
		;
	ssemu_fabric_close(f);
	_exit(0);
}

/*
 * SSEMU_MAX_PROCS processes attached (this one and its children): the
 * next attach is -ENOSPC, saying so; once a holder is killed, the next
 * one gets its slot.
 */
static void test_procs_full(void **state)
{
	pid_t pids[SSEMU_MAX_PROCS - 1];
	struct ssemu_fabric *f, *f2;
	int ready[2], go[2], status, i, n = SSEMU_MAX_PROCS - 1;
	char err[256], c;

	(void)state;
	name_for("procs");
	assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(ready[0]);
			close(go[1]);
			holder(ready[1], go[0]);
		}
	}
	close(ready[1]);
	close(go[0]);
	for (i = 0; i < n; i++) {
		assert_int_equal(read(ready[0], &c, 1), 1);
		assert_int_equal(c, 'R');
	}
	err[0] = 0;
	assert_int_equal(open_fabric(&f2, SSEMU_OPEN_EXISTING, err,
				     sizeof(err)), -ENOSPC);
	if (!strstr(err, "256 live processes are attached"))
		fail_msg("the refusal does not say why: '%s'", err);
	/* a holder dies: its slot is reaped for the next one */
	kill(pids[0], SIGKILL);
	assert_int_equal(waitpid(pids[0], &status, 0), pids[0]);
	assert_int_equal(open_fabric(&f2, SSEMU_OPEN_EXISTING, err,
				     sizeof(err)), 0);
	ssemu_fabric_close(f2);
	close(go[1]);
	for (i = 1; i < n; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	close(ready[0]);
	ssemu_fabric_close(f);
	assert_false(segment_exists());
}

/* The read() calls this process made so far (/proc/self/io), or -1. */
static long reads_so_far(void)
{
	char buf[512], *p;
	ssize_t n;
	int fd = open("/proc/self/io", O_RDONLY);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "syscr: ");
	return p ? strtol(p + 7, NULL, 10) : -1;
}

/* A child that lives until @fd (its pipe's read end) sees the write end
 * closed, or is killed. */
static pid_t live_child(int fds[2])
{
	pid_t pid;
	char c;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[1]);
		while (read(fds[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(fds[0]);
	return pid;
}

/* A free process slot, taken for @pid. */
static void proc_slot_for(struct ssemu_region *r, pid_t pid)
{
	int i;

	for (i = 0; i < SSEMU_MAX_PROCS && r->procs[i]; i++)
		;
	assert_true(i < SSEMU_MAX_PROCS);
	r->procs[i] = pid;
}

static bool proc_slot_held(const struct ssemu_region *r, pid_t pid)
{
	int i;

	for (i = 0; i < SSEMU_MAX_PROCS; i++)
		if (r->procs[i] == pid)
			return true;
	return false;
}

#define REAP_NICS 5

/*
 * The reaper on a shared fabric: two NICs and the process slot of a dead
 * process freed, the NICs and slot of a live one (and this process's) kept,
 * each pid asked about once (one read of /proc/<pid>/stat for the live
 * child, none for the dead pid, which kill() answers, nor for this
 * process); once the child is killed, polling the fabric finds it.
 */
static void test_reap_per_pid(void **state)
{
	/* NIC i is owned by: dead, dead, child, child, this process */
	struct ssemu_nic *nic[REAP_NICS];
	struct ssemu_region *r;
	struct ssemu_fabric *f;
	long r0, r1, r2, sweep_reads;
	pid_t dead, child;
	unsigned freed;
	uint64_t t0;
	char err[256];
	int i, fds[2], status;

	(void)state;
	name_for("reap");
	assert_int_equal(open_fabric(&f, 0, err, sizeof(err)), 0);
	r = f->r;
	for (i = 0; i < REAP_NICS; i++)
		assert_int_equal(ssemu_nic_attach(f, NULL, &nic[i]), 0);
	dead = dead_pid();
	child = live_child(fds);
	ssemu_r_nic(r, nic[0]->slot)->owner_pid = dead;
	ssemu_r_nic(r, nic[1]->slot)->owner_pid = dead;
	ssemu_r_nic(r, nic[2]->slot)->owner_pid = child;
	ssemu_r_nic(r, nic[3]->slot)->owner_pid = child;
	proc_slot_for(r, dead);
	proc_slot_for(r, child);

	assert_int_equal(ssemu_region_lock(r), 0);
	r0 = reads_so_far();
	r1 = reads_so_far();
	freed = ssemu_reap_dead_locked(r);
	r2 = reads_so_far();
	ssemu_region_unlock(r);
	assert_int_equal(freed, 3);
	for (i = 0; i < REAP_NICS; i++)
		assert_int_equal(ssemu_r_nic(r, nic[i]->slot)->state,
				 i < 2 ? SSEMU_NIC_FREE : SSEMU_NIC_ATTACHED);
	assert_int_equal(r->nnics, REAP_NICS - 2);
	assert_false(proc_slot_held(r, dead));
	assert_true(proc_slot_held(r, child));
	assert_true(proc_slot_held(r, getpid()));
	if (r0 >= 0 && r1 >= 0 && r2 >= 0) {
		/* (less the read of /proc/self/io itself) */
		sweep_reads = (r2 - r1) - (r1 - r0);
		if (sweep_reads != 1)
			fail_msg("the sweep made %ld reads, not 1 (the live "
				 "child's /proc entry, once)", sweep_reads);
	}

	/* the child dies: polling the shared fabric reaps its NICs */
	kill(child, SIGKILL);
	assert_int_equal(waitpid(child, &status, 0), child);
	close(fds[1]);
	t0 = now_ms();
	while (ssemu_r_nic(r, nic[3]->slot)->state == SSEMU_NIC_ATTACHED) {
		if (now_ms() - t0 > 10000)
			fail_msg("polling did not reap a dead process's NICs "
				 "within 10 s");
		ssemu_fabric_progress(f, 1);
		usleep(100);
	}
	assert_int_equal(ssemu_r_nic(r, nic[2]->slot)->state,
			 SSEMU_NIC_FREE);
	assert_int_equal(ssemu_r_nic(r, nic[4]->slot)->state,
			 SSEMU_NIC_ATTACHED);
	assert_false(proc_slot_held(r, child));
	assert_false(ssemu_broken(r));
	for (i = 0; i < REAP_NICS; i++)
		ssemu_nic_detach(nic[i]);
	ssemu_fabric_close(f);
	assert_false(segment_exists());
}

/* A private fabric's only process is this one: polling it never looks for
 * dead processes (a NIC faked to a dead owner stays attached, however long
 * it polls). */
static void test_reap_private_skipped(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_config c;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	char err[256];
	uint64_t t0;
	unsigned k = 0;

	(void)state;
	ssemu_config_preset("switch", &c);
	o.config = &c;
	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), 0);
	assert_int_equal(ssemu_nic_attach(f, NULL, &nic), 0);
	ssemu_r_nic(f->r, nic->slot)->owner_pid = dead_pid();
	/* past several liveness periods (20 ms) and progress strides (64) */
	t0 = now_ms();
	while (now_ms() - t0 < 100 || k < 1024) {
		assert_true(ssemu_fabric_progress(f, 1) >= 0);
		k++;
		usleep(50);
	}
	assert_int_equal(ssemu_r_nic(f->r, nic->slot)->state,
			 SSEMU_NIC_ATTACHED);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lock_word_garbage, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lock_dead_holder, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lock_stranger, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lock_random, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_procs_full, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reap_per_pid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reap_private_skipped,
						setup, teardown),
	};

	return cmocka_run_group_tests_name("lock", tests, NULL, NULL);
}
