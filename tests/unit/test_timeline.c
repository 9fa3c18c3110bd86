/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The timeline's recorder (emu/ssemu_timeline.c): nothing is recorded
 * without SSEMU_TIMELINE; with it, the points of a message between two
 * endpoints are recorded in their order, and the file is written once, at
 * the last fabric close, with a header that matches its records; a
 * prefix that cannot be written to loses the file, not the fabric; a
 * forked child does not write its parent's points.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_timeline.h"

static char dir[64];

static struct ssemu_fabric *fab_open(void)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_PRIVATE };
	struct ssemu_fabric *f;

	assert_int_equal(ssemu_fabric_open(&fo, &f, NULL, 0), 0);
	return f;
}

/* One 8-byte message from port 0 to port 1 of @f, received. */
static void one_message(struct ssemu_fabric *f)
{
	struct ssemu_nic_opts no[2] = { { .port = 0, .rank = -1 },
					{ .port = 1, .rank = -1 } };
	struct ssemu_nic *nic[2];
	struct ssemu_ep *ep[2];
	uint64_t v = 42;
	struct iovec iov = { &v, sizeof(v) };
	struct ssemu_send s = { .dest = SSEMU_ADDR(1, 0), .iov = &iov,
				.iov_count = 1 };
	struct ssemu_event ev;
	int k, got = 0, i;

	for (k = 0; k < 2; k++) {
		assert_int_equal(ssemu_nic_attach(f, &no[k], &nic[k]), 0);
		assert_int_equal(ssemu_ep_open(nic[k], &ep[k]), 0);
	}
	assert_int_equal(ssemu_ep_send(ep[0], &s), 0);
	for (i = 0; i < 1000 && !got; i++) {
		ssemu_fabric_progress(f, 64);
		while (ssemu_ep_poll(ep[1], &ev, 1) == 1)
			if (ev.type == SSEMU_EV_RECV) {
				ssemu_event_release(ep[1], &ev);
				got = 1;
			}
	}
	assert_true(got);
	for (k = 0; k < 2; k++) {
		ssemu_ep_close(ep[k]);
		ssemu_nic_detach(nic[k]);
	}
}

/* The file of this process under prefix @p: its header and records
 * (malloc'd, *@recs), or -1 if there is none. */
static int read_tl(const char *p, struct ssemu_tl_file *h,
		   struct ssemu_tl_rec **recs)
{
	char path[160];
	struct stat st;
	FILE *fp;

	snprintf(path, sizeof(path), "%s.%d", p, (int)getpid());
	fp = fopen(path, "rb");
	if (!fp)
		return -1;
	assert_int_equal(fstat(fileno(fp), &st), 0);
	assert_int_equal(fread(h, sizeof(*h), 1, fp), 1);
	assert_true(h->magic == SSEMU_TL_MAGIC);
	assert_int_equal((uint64_t)st.st_size,
			 sizeof(*h) + h->nrec * sizeof(**recs));
	*recs = calloc(h->nrec + 1, sizeof(**recs));
	assert_non_null(*recs);
	assert_int_equal(fread(*recs, sizeof(**recs), h->nrec, fp), h->nrec);
	fclose(fp);
	unlink(path);
	return 0;
}

static void test_timeline_off(void **state)
{
	struct ssemu_fabric *f;
	char p[128];

	(void)state;
	unsetenv("SSEMU_TIMELINE");
	f = fab_open();
	assert_null(ssemu_tl_on);
	one_message(f);
	ssemu_fabric_close(f);
	snprintf(p, sizeof(p), "%s/tl.%d", dir, (int)getpid());
	assert_int_equal(access(p, F_OK), -1);
}

static void test_timeline_points(void **state)
{
	static const uint32_t want[] = {
		SSEMU_TL_SEND, SSEMU_TL_POSTED, SSEMU_TL_LOCK, SSEMU_TL_TAKEN,
		SSEMU_TL_PUSH_RECV, SSEMU_TL_POLL_RECV,
	};
	struct ssemu_fabric *f, *g;
	struct ssemu_tl_file h;
	struct ssemu_tl_rec *rec;
	uint32_t slot = UINT32_MAX;
	char p[128];
	uint64_t i;
	size_t w = 0;

	(void)state;
	snprintf(p, sizeof(p), "%s/tl", dir);
	setenv("SSEMU_TIMELINE", p, 1);
	f = fab_open();
	assert_non_null(ssemu_tl_on);
	g = fab_open();		/* a second fabric: one file, at the last close */
	one_message(f);
	ssemu_fabric_close(f);
	assert_non_null(ssemu_tl_on);
	assert_int_equal(read_tl(p, &h, &rec), -1);
	ssemu_fabric_close(g);
	assert_null(ssemu_tl_on);
	unsetenv("SSEMU_TIMELINE");
	assert_int_equal(read_tl(p, &h, &rec), 0);
	assert_int_equal(h.pid, (uint32_t)getpid());
	assert_int_equal(h.dropped, 0);
	assert_true(h.ticks_per_ns > 0.01 && h.ticks_per_ns < 100);
	/* the message's points, in their order, its slot named by each
	 * that names one; time never runs back */
	for (i = 0; i < h.nrec; i++) {
		assert_true(rec[i].point >= 1 &&
			    rec[i].point < SSEMU_TL_NPOINTS);
		if (i)
			assert_true(rec[i].t >= rec[i - 1].t);
		if (w < sizeof(want) / sizeof(want[0]) &&
		    rec[i].point == want[w]) {
			if (want[w] == SSEMU_TL_POSTED)
				slot = rec[i].arg;
			if (want[w] == SSEMU_TL_TAKEN ||
			    want[w] == SSEMU_TL_PUSH_RECV)
				assert_int_equal(rec[i].arg, slot);
			w++;
		}
	}
	assert_int_equal(w, sizeof(want) / sizeof(want[0]));
	free(rec);
}

static void test_timeline_unwritable(void **state)
{
	struct ssemu_fabric *f;

	(void)state;
	setenv("SSEMU_TIMELINE", "/nonexistent-dir-of-ssemu/tl", 1);
	f = fab_open();
	one_message(f);
	ssemu_fabric_close(f);	/* a warning, and nothing else */
	assert_null(ssemu_tl_on);
	unsetenv("SSEMU_TIMELINE");
}

static void test_timeline_fork(void **state)
{
	struct ssemu_fabric *f, *c;
	struct ssemu_tl_file h;
	struct ssemu_tl_rec *rec;
	char p[128], cp[160];
	int st;
	pid_t pid;

	(void)state;
	snprintf(p, sizeof(p), "%s/fk", dir);
	setenv("SSEMU_TIMELINE", p, 1);
	f = fab_open();
	one_message(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child's own fabric: a file of its own pid, without
		 * the parent's points (its first point is its own post) */
		c = fab_open();
		one_message(c);
		ssemu_fabric_close(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ssemu_fabric_close(f);
	unsetenv("SSEMU_TIMELINE");
	assert_int_equal(read_tl(p, &h, &rec), 0);
	free(rec);
	snprintf(cp, sizeof(cp), "%s.%d", p, (int)pid);
	{
		FILE *fp = fopen(cp, "rb");

		assert_non_null(fp);
		assert_int_equal(fread(&h, sizeof(h), 1, fp), 1);
		assert_int_equal(h.pid, (uint32_t)pid);
		rec = calloc(h.nrec + 1, sizeof(*rec));
		assert_non_null(rec);
		assert_int_equal(fread(rec, sizeof(*rec), h.nrec, fp),
				 h.nrec);
		assert_true(h.nrec > 0);
		assert_int_equal(rec[0].point, SSEMU_TL_SEND);
		/* one message, so one post */
		for (uint64_t i = 1; i < h.nrec; i++)
			assert_int_not_equal(rec[i].point, SSEMU_TL_SEND);
		free(rec);
		fclose(fp);
		unlink(cp);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/ssemu-tl-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeline_off),
		cmocka_unit_test(test_timeline_points),
		cmocka_unit_test(test_timeline_unwritable),
		cmocka_unit_test(test_timeline_fork),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
