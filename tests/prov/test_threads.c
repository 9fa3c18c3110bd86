/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_THREAD_SAFE: several threads post sends and receives on the same
 * endpoints and read the same CQs at once (Open MPI with
 * MPI_THREAD_MULTIPLE).  Every message must arrive intact, exactly once.
 */
#include <pthread.h>

#include "sse_test.h"

#define NTHREADS 4
#define PER_THREAD 400

static struct sse_res res;
static int received[NTHREADS][PER_THREAD];

struct targ {
	int id;
};

static void *sender(void *arg)
{
	struct targ *t = arg;
	static uint64_t vals[NTHREADS][PER_THREAD][4];
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		uint64_t *v = vals[t->id][i];
		size_t len = (i % 5 == 0) ? 20000 : sizeof(vals[0][0]);
		void *buf = v;
		ssize_t ret;

		v[0] = (uint64_t)t->id << 32 | (uint64_t)i;
		if (len > sizeof(vals[0][0])) {
			buf = malloc(len);
			memcpy(buf, v, 8);
			sse_fill((char *)buf + 8, len - 8, (unsigned)i);
		}
		do {
			ret = fi_tsend(res.ep[0], buf, len, NULL, res.addr[1],
				       (uint64_t)t->id, len > 32 ? buf : NULL);
			if (ret == -FI_EAGAIN)
				(void)fi_cq_read(res.cq[0], NULL, 0);
		} while (ret == -FI_EAGAIN);
		if (ret)
			fail_msg("fi_tsend: %zd", ret);
	}
	return NULL;
}

static void *receiver(void *arg)
{
	struct targ *t = arg;
	char *buf = malloc(20000);
	struct fi_cq_tagged_entry e;
	int i;

	/* each receiver takes the messages of one tag, one at a time */
	for (i = 0; i < PER_THREAD; i++) {
		assert_fi_ok(fi_trecv(res.ep[1], buf, 20000, NULL,
				      FI_ADDR_UNSPEC, (uint64_t)t->id, 0, buf));
		for (;;) {
			ssize_t n = fi_cq_read(res.cq[1], &e, 1);

			if (n == 1)
				break;
			assert_int_equal(n, -FI_EAGAIN);
			(void)fi_cq_read(res.cq[0], NULL, 0);
		}
		/* the entry may be another thread's: only totals count */
	}
	/* A completion read here may be another thread's, so this thread's
	 * own last receive may still be landing in buf: the test frees it
	 * once every receiver is done, when every receive is complete. */
	return buf;
}

/* Senders race on one endpoint; one receiver checks the per-tag order. */
static void test_threads_concurrent_senders(void **state)
{
	pthread_t th[NTHREADS];
	struct targ targ[NTHREADS];
	struct fi_cq_tagged_entry e;
	static char rbuf[NTHREADS * PER_THREAD][20000];
	static int slot[NTHREADS][PER_THREAD];
	int i, j, got = 0, sends = 0;

	for (i = 0; i < NTHREADS * PER_THREAD; i++)
		assert_fi_ok(fi_trecv(res.ep[1], rbuf[i], sizeof(rbuf[i]),
				      NULL, FI_ADDR_UNSPEC, 0, 0xff, rbuf[i]));
	for (i = 0; i < NTHREADS; i++) {
		targ[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, sender,
						&targ[i]), 0);
	}
	while (got < NTHREADS * PER_THREAD) {
		uint64_t v;
		int tid, seq;

		assert_int_equal(sse_cq_wait(&res, res.cq[1], &e, NULL,
					     SSE_TEST_TIMEOUT_MS), 1);
		memcpy(&v, e.op_context, 8);
		tid = (int)(v >> 32);
		seq = (int)(v & 0xffffffff);
		assert_int_equal((int)e.tag, tid);
		/* which posted receive it matched (completions of rendezvous
		 * messages may come later than those of eager ones) */
		slot[tid][seq] = (int)(((char (*)[20000])e.op_context) - rbuf);
		if (e.len > 32)
			assert_int_equal(sse_check((char *)e.op_context + 8,
						   e.len - 8, (unsigned)seq),
					 -1);
		received[tid][seq]++;
		got++;
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	/* the sends' own completions */
	while (sends < NTHREADS * PER_THREAD) {
		ssize_t n = fi_cq_read(res.cq[0], &e, 1);

		if (n == 1) {
			if (e.op_context)
				free(e.op_context);
			sends++;
		} else {
			assert_int_equal(n, -FI_EAGAIN);
		}
	}
	for (i = 0; i < NTHREADS * PER_THREAD; i++)
		assert_int_equal(received[i / PER_THREAD][i % PER_THREAD], 1);
	/* matched in send order per sending thread (FI_ORDER_SAS) */
	for (i = 0; i < NTHREADS; i++)
		for (j = 1; j < PER_THREAD; j++)
			assert_true(slot[i][j] > slot[i][j - 1]);
}

/* Receivers in several threads post and reap on one CQ while a sender
 * thread streams to them. */
static void test_threads_concurrent_receivers(void **state)
{
	pthread_t rth[NTHREADS], sth[NTHREADS];
	struct targ targ[NTHREADS];
	struct fi_cq_tagged_entry e;
	void *rbuf[NTHREADS];
	int i, sends = 0;

	for (i = 0; i < NTHREADS; i++) {
		targ[i].id = i;
		assert_int_equal(pthread_create(&rth[i], NULL, receiver,
						&targ[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&sth[i], NULL, sender,
						&targ[i]), 0);
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(sth[i], NULL), 0);
		assert_int_equal(pthread_join(rth[i], &rbuf[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		free(rbuf[i]);
	while (sends < NTHREADS * PER_THREAD) {
		ssize_t n = fi_cq_read(res.cq[0], &e, 1);

		if (n == 1) {
			if (e.op_context)
				free(e.op_context);
			sends++;
		} else {
			assert_int_equal(n, -FI_EAGAIN);
		}
	}
}

static int setup(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED);
	struct sse_res_opts o = { .hints = hints };

	hints->domain_attr->threading = FI_THREAD_SAFE;
	sse_res_open(&res, 2, &o);
	fi_freeinfo(hints);
	assert_int_equal(res.info->domain_attr->threading, FI_THREAD_SAFE);
	return 0;
}

static int teardown(void **state)
{
	sse_res_close(&res);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_concurrent_senders),
		cmocka_unit_test(test_threads_concurrent_receivers),
	};

	sse_test_init("private", "threads");
	return cmocka_run_group_tests_name("threads", tests, setup, teardown);
}
