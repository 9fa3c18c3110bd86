/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_THREAD_SAFE: several threads post sends and receives on the same
 * endpoints and read the same CQs at once (Open MPI with
 * MPI_THREAD_MULTIPLE).  Every message must arrive intact, exactly once.
 * And an endpoint per thread: 32 threads each open their own endpoint on
 * one domain (within the default limit of endpoints per NIC) and pass a
 * message around the ring.
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

#define EP_THREADS 32
#define EP_MSG 3000

static struct {
	pthread_barrier_t opened, inserted;
	struct fid_ep *ep[EP_THREADS];
	struct fid_cq *cq[EP_THREADS];
	char name[EP_THREADS][64];
	size_t namelen[EP_THREADS];
	fi_addr_t addr[EP_THREADS];
	int open_ret[EP_THREADS];	/* opening its endpoint */
	int failed[EP_THREADS];
} pt;

/* Wait for one completion on @cq (each thread progresses its own). */
static int ep_thread_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e)
{
	int spins;
	ssize_t n;

	for (spins = 0; spins < 20000000; spins++) {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 0;
		if (n != -FI_EAGAIN)
			return (int)n;
	}
	return -FI_ETIMEDOUT;
}

static void *ep_thread(void *arg)
{
	int id = (int)(intptr_t)arg, next = (id + 1) % EP_THREADS;
	int prev = (id + EP_THREADS - 1) % EP_THREADS;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	static char sbuf[EP_THREADS][EP_MSG], rbuf[EP_THREADS][EP_MSG];
	struct fi_cq_tagged_entry e;
	int ret, got = 0, sent = 0;

	pt.namelen[id] = sizeof(pt.name[id]);
	ret = fi_endpoint(res.domain, res.info, &pt.ep[id], NULL);
	if (!ret)
		ret = fi_cq_open(res.domain, &ca, &pt.cq[id], NULL);
	if (!ret)
		ret = fi_ep_bind(pt.ep[id], &pt.cq[id]->fid,
				 FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(pt.ep[id], &res.av->fid, 0);
	if (!ret)
		ret = fi_enable(pt.ep[id]);
	if (!ret)
		ret = fi_getname(&pt.ep[id]->fid, pt.name[id],
				 &pt.namelen[id]);
	pt.open_ret[id] = pt.failed[id] = ret;
	pthread_barrier_wait(&pt.opened);
	pthread_barrier_wait(&pt.inserted);	/* the main thread inserts */
	if (ret)
		return NULL;
	sse_fill(sbuf[id], EP_MSG, (unsigned)id);
	ret = (int)fi_trecv(pt.ep[id], rbuf[id], EP_MSG, NULL,
			    pt.addr[prev], 7, 0, rbuf[id]);
	if (!ret) {
		do {
			ret = (int)fi_tsend(pt.ep[id], sbuf[id], EP_MSG, NULL,
					    pt.addr[next], 7, sbuf[id]);
			if (ret == -FI_EAGAIN)
				(void)fi_cq_read(pt.cq[id], NULL, 0);
		} while (ret == -FI_EAGAIN);
	}
	while (!ret && (got < 1 || sent < 1)) {
		ret = ep_thread_wait(pt.cq[id], &e);
		if (ret)
			break;
		if (e.op_context == rbuf[id])
			got++;
		else if (e.op_context == sbuf[id])
			sent++;
		else
			ret = -FI_EOTHER;
	}
	if (!ret && sse_check(rbuf[id], EP_MSG, (unsigned)prev) != -1)
		ret = -FI_EIO;
	pt.failed[id] = ret;
	return NULL;
}

/* An endpoint of its own for each of 32 threads, in one process. */
static void test_threads_endpoint_per_thread(void **state)
{
	pthread_t th[EP_THREADS];
	int i;

	memset(&pt, 0, sizeof(pt));
	pthread_barrier_init(&pt.opened, NULL, EP_THREADS + 1);
	pthread_barrier_init(&pt.inserted, NULL, EP_THREADS + 1);
	for (i = 0; i < EP_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, ep_thread,
						(void *)(intptr_t)i), 0);
	pthread_barrier_wait(&pt.opened);
	for (i = 0; i < EP_THREADS; i++) {
		if (pt.open_ret[i])
			continue;
		assert_int_equal(fi_av_insert(res.av, pt.name[i], 1,
					      &pt.addr[i], 0, NULL), 1);
	}
	pthread_barrier_wait(&pt.inserted);
	for (i = 0; i < EP_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < EP_THREADS; i++) {
		if (pt.ep[i])
			assert_fi_ok(fi_close(&pt.ep[i]->fid));
		if (pt.cq[i])
			assert_fi_ok(fi_close(&pt.cq[i]->fid));
	}
	pthread_barrier_destroy(&pt.opened);
	pthread_barrier_destroy(&pt.inserted);
	for (i = 0; i < EP_THREADS; i++)
		if (pt.open_ret[i])
			fail_msg("thread %d: opening its endpoint: %s", i,
				 fi_strerror(-pt.open_ret[i]));
	for (i = 0; i < EP_THREADS; i++)
		if (pt.failed[i])
			fail_msg("thread %d: %s", i,
				 fi_strerror(-pt.failed[i]));
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
		cmocka_unit_test(test_threads_endpoint_per_thread),
	};

	sse_test_init("private", "threads");
	return cmocka_run_group_tests_name("threads", tests, setup, teardown);
}
