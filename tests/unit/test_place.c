/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Placement: the policies as pure functions (linear, interleaved, random,
 * map, exhaustion), then jobs on a fabric: reservations for whole jobs,
 * two jobs that never collide, release with the last NIC, a dead job's
 * reservation freed, and bad input refused with an error.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ssemu_priv.h"

/* ------------------------------------------------------------------ */
/* The policies                                                         */
/* ------------------------------------------------------------------ */

#define NP_MAX 1024

struct ports {
	bool taken[NP_MAX];
};

static bool usable_cb(void *arg, uint32_t port)
{
	const struct ports *p = arg;

	assert_true(port < NP_MAX);
	return !p->taken[port];
}

static void topo_for(struct ssemu_topo *t, const char *preset)
{
	struct ssemu_config c;
	char err[128];

	assert_int_equal(ssemu_config_preset(preset, &c), 0);
	assert_int_equal(ssemu_topo_init(t, &c.topo, err, sizeof(err)), 0);
	assert_true(t->nendpoints <= NP_MAX);
}

static int choose(const struct ssemu_topo *t, struct ports *pt,
		  uint32_t policy, uint32_t n, uint64_t seed,
		  const uint32_t *map, uint32_t *out, char *err)
{
	struct ssemu_place_req q = {
		.topo = t, .policy = policy, .nranks = n, .seed = seed,
		.map = map, .usable = usable_cb, .arg = pt,
	};

	return ssemu_place_choose(&q, out, err, 200);
}

/* Distinct ports, each one usable. */
static void check_valid(const struct ssemu_topo *t, const struct ports *pt,
			const uint32_t *out, uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		assert_true(out[i] < t->nendpoints);
		assert_false(pt->taken[out[i]]);
		for (j = 0; j < i; j++)
			assert_int_not_equal(out[i], out[j]);
	}
}

static void test_place_names(void **state)
{
	uint32_t i;

	for (i = 0; i < SSEMU_PLACE_COUNT; i++)
		assert_int_equal(ssemu_place_policy_index(
					 ssemu_place_policy_name(i)), (int)i);
	assert_int_equal(ssemu_place_policy_index("first-free"),
			 SSEMU_PLACE_FIRST_FREE);
	assert_int_equal(ssemu_place_policy_index("Linear"), -1);
	assert_int_equal(ssemu_place_policy_index(NULL), -1);
	assert_string_equal(ssemu_place_policy_name(99), "?");
}

static void test_place_linear(void **state)
{
	struct ssemu_topo t;
	struct ports pt = { 0 };
	uint32_t out[8], i;
	char err[200];

	topo_for(&t, "switch");
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_LINEAR, 4, 0, NULL, out,
				err), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(out[i], i);
	/* holes: the lowest block long enough */
	pt.taken[2] = pt.taken[5] = pt.taken[6] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_LINEAR, 3, 0, NULL, out,
				err), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(out[i], 7 + i);
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_LINEAR, 2, 0, NULL, out,
				err), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 1);
	/* no block left: the lowest free ports, and it says so */
	memset(&pt, 0, sizeof(pt));
	for (i = 0; i < 16; i += 2)
		pt.taken[i] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_LINEAR, 3, 0, NULL, out,
				err), 1);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 3);
	assert_int_equal(out[2], 5);
	check_valid(&t, &pt, out, 3);
	/* first free: the lowest usable ports */
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_FIRST_FREE, 2, 0, NULL,
				out, err), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 3);
}

/* On 2 groups x 2 switches: consecutive ranks on different switches, and
 * in different groups; every switch used before one is used twice. */
static void test_place_interleaved(void **state)
{
	struct ssemu_topo t;
	struct ports pt = { 0 };
	uint32_t out[16], sw[16], i;
	char err[200];

	topo_for(&t, "2group");
	assert_int_equal(t.nswitches, 4);
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_INTERLEAVED, 8, 0, NULL,
				out, err), 0);
	check_valid(&t, &pt, out, 8);
	for (i = 0; i < 8; i++)
		sw[i] = ssemu_topo_ep_switch(&t, out[i]);
	for (i = 1; i < 8; i++) {
		assert_int_not_equal(sw[i], sw[i - 1]);
		assert_int_not_equal(ssemu_topo_group(&t, sw[i]),
				     ssemu_topo_group(&t, sw[i - 1]));
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(sw[i + 4], sw[i]);
	assert_int_equal(sw[0] + sw[1] + sw[2] + sw[3], 0 + 1 + 2 + 3);
	/* rank 0 and 4 share a switch: its two lowest ports */
	assert_int_equal(out[4], out[0] + 1);

	/* a full switch is skipped, the rest still spread */
	for (i = 0; i < 16; i++)
		pt.taken[16 * 2 + i] = true;	/* switch 2 (group 1) */
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_INTERLEAVED, 6, 0, NULL,
				out, err), 0);
	check_valid(&t, &pt, out, 6);
	for (i = 1; i < 6; i++)
		assert_int_not_equal(ssemu_topo_ep_switch(&t, out[i]),
				     ssemu_topo_ep_switch(&t, out[i - 1]));

	/* one switch only: interleaving is first-free order */
	topo_for(&t, "switch");
	memset(&pt, 0, sizeof(pt));
	pt.taken[0] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_INTERLEAVED, 3, 0, NULL,
				out, err), 0);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[2], 3);
}

static void test_place_random(void **state)
{
	struct ssemu_topo t;
	struct ports pt = { 0 };
	uint32_t a[32], b[32], c[32], i, same = 0, hits[512] = { 0 };
	char err[200];
	int s;

	topo_for(&t, "malbec");
	pt.taken[3] = pt.taken[100] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_RANDOM, 32, 42, NULL, a,
				err), 0);
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_RANDOM, 32, 42, NULL, b,
				err), 0);
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_RANDOM, 32, 43, NULL, c,
				err), 0);
	check_valid(&t, &pt, a, 32);
	check_valid(&t, &pt, c, 32);
	/* seeded: reproducible, and another seed draws other ports */
	assert_memory_equal(a, b, sizeof(a));
	for (i = 0; i < 32; i++)
		same += a[i] == c[i];
	assert_true(same < 4);
	/* not simply the lowest ports */
	for (i = 0; i < 32 && a[i] < 32; i++)
		;
	assert_true(i < 32);
	/* spread over the whole fabric across seeds */
	for (s = 0; s < 64; s++) {
		assert_int_equal(choose(&t, &pt, SSEMU_PLACE_RANDOM, 8,
					(uint64_t)s, NULL, a, err), 0);
		for (i = 0; i < 8; i++)
			hits[a[i]]++;
	}
	for (i = same = 0; i < 512; i++)
		same += hits[i] > 0;
	assert_true(same > 300);	/* 512 draws over 510 free ports */
	assert_int_equal(hits[3] + hits[100], 0);
	/* exactly as many free ports as ranks: all of them */
	topo_for(&t, "switch");
	memset(&pt, 0, sizeof(pt));
	for (i = 0; i < 13; i++)
		pt.taken[i] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_RANDOM, 3, 7, NULL, a,
				err), 0);
	check_valid(&t, &pt, a, 3);
}

static void test_place_map(void **state)
{
	struct ssemu_topo t;
	struct ports pt = { 0 };
	uint32_t out[4];
	const uint32_t map[4] = { 9, 2, 15, 0 };
	const uint32_t dup[3] = { 4, 5, 4 };
	const uint32_t far[2] = { 1, 16 };
	char err[200];

	topo_for(&t, "switch");
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_MAP, 4, 0, map, out,
				err), 0);
	assert_memory_equal(out, map, sizeof(map));
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_MAP, 3, 0, dup, out,
				err), -EINVAL);
	assert_non_null(strstr(err, "rank 2: port 4"));
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_MAP, 2, 0, far, out,
				err), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
	pt.taken[15] = true;
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_MAP, 4, 0, map, out,
				err), -EADDRINUSE);
	assert_non_null(strstr(err, "rank 2: port 15"));
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_MAP, 2, 0, NULL, out,
				err), -EINVAL);
}

static void test_place_exhaustion(void **state)
{
	struct ssemu_topo t;
	struct ports pt = { 0 };
	uint32_t out[32], p;
	char err[200];

	topo_for(&t, "switch");
	for (p = 0; p < SSEMU_PLACE_MAP; p++) {
		assert_int_equal(choose(&t, &pt, p, 17, 1, NULL, out, err),
				 -ENOSPC);
		assert_non_null(strstr(err, "17 ranks"));
	}
	pt.taken[0] = true;
	for (p = 0; p < SSEMU_PLACE_MAP; p++) {
		assert_int_equal(choose(&t, &pt, p, 16, 1, NULL, out, err),
				 -ENOSPC);
		assert_non_null(strstr(err, "15 free"));
		assert_int_equal(choose(&t, &pt, p, 15, 1, NULL, out, err),
				 0);
		check_valid(&t, &pt, out, 15);
	}
	/* bad requests */
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_COUNT, 1, 1, NULL, out,
				err), -EINVAL);
	assert_int_equal(choose(&t, &pt, SSEMU_PLACE_LINEAR, 0, 1, NULL, out,
				err), -EINVAL);
	assert_int_equal(ssemu_place_choose(NULL, out, err, 200), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Jobs on a fabric                                                     */
/* ------------------------------------------------------------------ */

static struct ssemu_fabric *open_private(const char *preset)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_config c;
	struct ssemu_fabric *f;
	char err[256];

	assert_int_equal(ssemu_config_preset(preset, &c), 0);
	o.config = &c;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	return f;
}

static int attach(struct ssemu_fabric *f, uint32_t job, int32_t rank,
		  uint32_t nranks, uint32_t policy, struct ssemu_nic **nic)
{
	struct ssemu_nic_opts o = {
		.port = SSEMU_PORT_ANY, .job = job, .rank = rank,
		.nranks = nranks, .policy = policy, .seed = 5,
	};

	return ssemu_nic_attach(f, &o, nic);
}

/* Two jobs placed linearly: each gets its block, whichever rank comes
 * first; others (first free, explicit ports) keep out of the blocks. */
static void test_jobs_two_linear(void **state)
{
	struct ssemu_fabric *f = open_private("switch");
	struct ssemu_nic *a[3], *b[2], *x, *y;
	struct ssemu_nic_opts o = { .port = 0, .job = 9, .rank = 0 };
	struct ssemu_nic_info info[16];
	struct ssemu_job_info jobs[8];
	int n, i;

	assert_int_equal(attach(f, 100, 1, 3, SSEMU_PLACE_LINEAR, &a[1]), 0);
	assert_int_equal(ssemu_nic_port(a[1]), 1);
	assert_int_equal(attach(f, 200, 1, 2, SSEMU_PLACE_LINEAR, &b[1]), 0);
	assert_int_equal(ssemu_nic_port(b[1]), 4);
	/* first free skips ports reserved for ranks not attached yet */
	assert_int_equal(ssemu_nic_attach(f, NULL, &x), 0);
	assert_int_equal(ssemu_nic_port(x), 5);
	/* an explicit port reserved for another job's rank is refused... */
	assert_int_equal(ssemu_nic_attach(f, &o, &y), -EADDRINUSE);
	/* ...but not for the rank it is reserved for */
	o.job = 100;
	assert_int_equal(ssemu_nic_attach(f, &o, &a[0]), 0);
	assert_int_equal(ssemu_nic_port(a[0]), 0);
	assert_int_equal(attach(f, 200, 0, 2, SSEMU_PLACE_LINEAR, &b[0]), 0);
	assert_int_equal(ssemu_nic_port(b[0]), 3);
	assert_int_equal(attach(f, 100, 2, 3, SSEMU_PLACE_LINEAR, &a[2]), 0);
	assert_int_equal(ssemu_nic_port(a[2]), 2);

	n = ssemu_fabric_jobs(f, jobs, 8);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		assert_int_equal(jobs[i].policy, SSEMU_PLACE_LINEAR);
		assert_int_equal(jobs[i].ports, jobs[i].nranks);
		assert_int_equal(jobs[i].nics, jobs[i].nranks);
		assert_int_equal(jobs[i].rank0_port,
				 jobs[i].job == 100 ? 0 : 3);
	}
	n = ssemu_fabric_nics(f, info, 16);
	assert_int_equal(n, 6);
	for (i = 0; i < n; i++) {
		if (info[i].port <= 2) {
			assert_int_equal(info[i].job, 100);
			assert_int_equal(info[i].rank, (int)info[i].port);
		} else if (info[i].port <= 4) {
			assert_int_equal(info[i].job, 200);
			assert_int_equal(info[i].rank, (int)info[i].port - 3);
		}
	}

	/* a job's block stays reserved while any of its NICs is there:
	 * first free passes port 3 by */
	ssemu_nic_detach(b[0]);
	assert_int_equal(ssemu_nic_attach(f, NULL, &y), 0);
	assert_int_equal(ssemu_nic_port(y), 6);
	ssemu_nic_detach(y);
	assert_int_equal(attach(f, 200, 0, 2, SSEMU_PLACE_LINEAR, &b[0]), 0);
	assert_int_equal(ssemu_nic_port(b[0]), 3);
	ssemu_nic_detach(b[0]);
	ssemu_nic_detach(b[1]);
	/* gone with its last NIC: first free takes port 3 now */
	assert_int_equal(ssemu_nic_attach(f, NULL, &y), 0);
	assert_int_equal(ssemu_nic_port(y), 3);
	ssemu_nic_detach(y);
	/* a new job 200 of another size is a new placement */
	assert_int_equal(attach(f, 200, 0, 4, SSEMU_PLACE_LINEAR, &b[0]), 0);
	assert_int_equal(ssemu_nic_port(b[0]), 6);
	ssemu_nic_detach(b[0]);
	for (i = 0; i < 3; i++)
		ssemu_nic_detach(a[i]);
	ssemu_nic_detach(x);
	assert_int_equal(ssemu_fabric_nics(f, info, 16), 0);
	assert_int_equal(ssemu_fabric_jobs(f, jobs, 8), 0);
	/* everything released: a 16-rank job fits */
	for (i = 0; i < 3; i++)
		assert_int_equal(attach(f, 300, i, 16, SSEMU_PLACE_LINEAR,
					&a[i]), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(ssemu_nic_port(a[i]), i);
		ssemu_nic_detach(a[i]);
	}
	ssemu_fabric_close(f);
}

/* Interleaved and random jobs on a Dragonfly never share a port. */
static void test_jobs_no_collision(void **state)
{
	struct ssemu_fabric *f = open_private("2group");
	struct ssemu_nic *nic[48], *extra;
	struct ssemu_nic_info info[64];
	uint32_t job, r, k = 0, sizes[3] = { 16, 16, 16 };
	const uint32_t pol[3] = { SSEMU_PLACE_INTERLEAVED, SSEMU_PLACE_RANDOM,
				  SSEMU_PLACE_LINEAR };
	int n, i, j;

	/* ranks of the three jobs arrive interleaved */
	for (r = 0; r < 16; r++)
		for (job = 0; job < 3; job++)
			assert_int_equal(attach(f, job + 1, (int32_t)r,
						sizes[job], pol[job],
						&nic[k++]), 0);
	n = ssemu_fabric_nics(f, info, 64);
	assert_int_equal(n, 48);
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			assert_int_not_equal(info[i].port, info[j].port);
	/* the interleaved job's consecutive ranks are on different switches */
	for (i = 0; i < 48; i += 3) {
		if (i + 3 < 48)
			assert_int_not_equal(ssemu_nic_port(nic[i]) / 16,
					     ssemu_nic_port(nic[i + 3]) / 16);
	}
	/* a fourth job needs 17 of the 16 free ports: refused */
	assert_int_equal(attach(f, 4, 0, 17, SSEMU_PLACE_LINEAR, &extra),
			 -ENOSPC);
	/* 16 do fit, on exactly the ports nobody has */
	assert_int_equal(attach(f, 4, 0, 16, SSEMU_PLACE_RANDOM, &extra), 0);
	for (i = 0; i < n; i++)
		assert_int_not_equal(info[i].port, ssemu_nic_port(extra));
	ssemu_nic_detach(extra);
	for (i = 0; i < 48; i++)
		ssemu_nic_detach(nic[i]);
	ssemu_fabric_close(f);
}

static void test_jobs_bad_input(void **state)
{
	struct ssemu_fabric *f = open_private("switch");
	struct ssemu_nic *a, *b, *c;
	const uint32_t map[2] = { 7, 3 }, bad_map[2] = { 1, 99 };
	struct ssemu_nic_opts o = {
		.port = SSEMU_PORT_ANY, .job = 50, .rank = 0, .nranks = 2,
		.policy = SSEMU_PLACE_MAP, .map = map,
	};

	/* rank not below the job size */
	assert_int_equal(attach(f, 1, 2, 2, SSEMU_PLACE_LINEAR, &a), -EINVAL);
	/* unknown policy, a map without ports */
	assert_int_equal(attach(f, 1, 0, 2, SSEMU_PLACE_COUNT, &a), -EINVAL);
	assert_int_equal(attach(f, 1, 0, 2, SSEMU_PLACE_MAP, &a), -EINVAL);
	/* bigger than the fabric, bigger than the NIC table */
	assert_int_equal(attach(f, 1, 0, 17, SSEMU_PLACE_RANDOM, &a), -ENOSPC);
	assert_int_equal(attach(f, 1, 0, 100000, SSEMU_PLACE_LINEAR, &a),
			 -ENOSPC);
	/* nothing was left reserved by the failures */
	assert_int_equal(attach(f, 1, 0, 16, SSEMU_PLACE_LINEAR, &a), 0);
	assert_int_equal(ssemu_nic_port(a), 0);
	/* the job's ranks must agree on its size and policy */
	assert_int_equal(attach(f, 1, 1, 8, SSEMU_PLACE_LINEAR, &b), -EINVAL);
	assert_int_equal(attach(f, 1, 1, 16, SSEMU_PLACE_RANDOM, &b),
			 -EINVAL);
	/* the same rank twice */
	assert_int_equal(attach(f, 1, 0, 16, SSEMU_PLACE_LINEAR, &b),
			 -EADDRINUSE);
	/* the fabric is reserved in full: another job does not fit */
	assert_int_equal(attach(f, 2, 0, 1, SSEMU_PLACE_LINEAR, &b), -ENOSPC);
	assert_int_equal(ssemu_nic_attach(f, NULL, &b), -ENOSPC);
	ssemu_nic_detach(a);

	/* a map: each rank at its port, checked against other jobs */
	assert_int_equal(attach(f, 3, 0, 1, SSEMU_PLACE_LINEAR, &c), 0);
	assert_int_equal(ssemu_nic_port(c), 0);
	o.rank = 1;
	assert_int_equal(ssemu_nic_attach(f, &o, &a), 0);
	assert_int_equal(ssemu_nic_port(a), 3);
	o.rank = 0;
	assert_int_equal(ssemu_nic_attach(f, &o, &b), 0);
	assert_int_equal(ssemu_nic_port(b), 7);
	ssemu_nic_detach(a);
	ssemu_nic_detach(b);
	/* a map naming a taken port, or one out of range */
	o.map = (const uint32_t[2]){ 0, 1 };
	assert_int_equal(ssemu_nic_attach(f, &o, &a), -EADDRINUSE);
	o.map = bad_map;
	assert_int_equal(ssemu_nic_attach(f, &o, &a), -EINVAL);
	ssemu_nic_detach(c);
	ssemu_fabric_close(f);
}

/* A job whose processes die without detaching: its ports and its
 * reservation are free for the next job. */
static void test_jobs_dead_job_released(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_fabric *f;
	struct ssemu_nic *nic[16];
	struct ssemu_nic_opts no = { .port = 1, .job = 77, .rank = 0 };
	char name[64], err[256], path[80];
	int pfd[2], status, i;
	pid_t pid;
	char c;

	snprintf(name, sizeof(name), "ssemu-ut-%d-place", (int)getpid());
	o.name = name;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ssemu_fabric *cf;
		struct ssemu_nic *cn;

		close(pfd[0]);
		if (ssemu_fabric_open(&o, &cf, err, sizeof(err)) ||
		    attach(cf, 66, 0, 4, SSEMU_PLACE_LINEAR, &cn))
			_exit(2);
		c = (char)ssemu_nic_port(cn);
		if (write(pfd[1], &c, 1) != 1)
			_exit(3);
		_exit(0);	/* dies attached, reservation held */
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	assert_int_equal(c, 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	/* port 1 was reserved for the dead job's rank 1: free now */
	assert_int_equal(ssemu_nic_attach(f, &no, &nic[0]), 0);
	assert_int_equal(ssemu_nic_port(nic[0]), 1);
	ssemu_nic_detach(nic[0]);
	/* the whole fabric is there for a 16-rank job */
	for (i = 0; i < 16; i++)
		assert_int_equal(attach(f, 88, i, 16, SSEMU_PLACE_LINEAR,
					&nic[i]), 0);
	for (i = 0; i < 16; i++) {
		assert_int_equal(ssemu_nic_port(nic[i]), (uint32_t)i);
		ssemu_nic_detach(nic[i]);
	}
	ssemu_fabric_close(f);
	snprintf(path, sizeof(path), "/%s", name);
	/* the last user removed it */
	assert_int_equal(shm_unlink(path), -1);
}

/* A process that dies holding the fabric lock in the middle of placing a
 * job leaves no port reserved for good. */
static void test_jobs_died_while_placing(void **state)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_nic_opts no = { .job = 1, .rank = -1 };
	struct ssemu_fabric *f, *cf;
	struct ssemu_nic *a, *b, *c, *keep;
	char name[64], err[256];
	int status;
	pid_t pid;

	snprintf(name, sizeof(name), "ssemu-ut-%d-place2", (int)getpid());
	o.name = name;
	if (ssemu_fabric_open(&o, &f, err, sizeof(err)))
		fail_msg("fabric: %s", err);
	/* a job of ours that must survive the sweep */
	assert_int_equal(attach(f, 9, 0, 2, SSEMU_PLACE_LINEAR, &keep), 0);
	assert_int_equal(ssemu_nic_port(keep), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ssemu_region *r;

		if (ssemu_fabric_open(&o, &cf, err, sizeof(err)))
			_exit(2);
		r = cf->r;
		assert_int_equal(ssemu_region_lock(r), 0);
		/* half-placed: a reservation for a slot not active yet, and
		 * an active job with no NIC */
		ssemu_r_resv(r)[5] = SSEMU_RESV(7, 0);
		r->jobs[8].id = 1234;
		r->jobs[8].active = 1;
		r->jobs[8].nranks = 1;
		ssemu_r_resv(r)[6] = SSEMU_RESV(8, 0);
		_exit(0);	/* dies holding the lock */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	no.port = 5;
	assert_int_equal(ssemu_nic_attach(f, &no, &a), 0);
	no.port = 6;
	assert_int_equal(ssemu_nic_attach(f, &no, &b), 0);
	/* job 9's rank 1 still has its port */
	no.port = 1;
	assert_int_equal(ssemu_nic_attach(f, &no, &c), -EADDRINUSE);
	ssemu_nic_detach(a);
	ssemu_nic_detach(b);
	assert_int_equal(attach(f, 9, 1, 2, SSEMU_PLACE_LINEAR, &a), 0);
	assert_int_equal(ssemu_nic_port(a), 1);
	ssemu_nic_detach(a);
	ssemu_nic_detach(keep);
	ssemu_fabric_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_place_names),
		cmocka_unit_test(test_place_linear),
		cmocka_unit_test(test_place_interleaved),
		cmocka_unit_test(test_place_random),
		cmocka_unit_test(test_place_map),
		cmocka_unit_test(test_place_exhaustion),
		cmocka_unit_test(test_jobs_two_linear),
		cmocka_unit_test(test_jobs_no_collision),
		cmocka_unit_test(test_jobs_bad_input),
		cmocka_unit_test(test_jobs_dead_job_released),
		cmocka_unit_test(test_jobs_died_while_placing),
	};

	return cmocka_run_group_tests_name("place", tests, NULL, NULL);
}
