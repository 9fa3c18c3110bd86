/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Nothing accepted is lost at close.  An injected send is complete for the
 * application when fi_inject returns; a process that closes its endpoint,
 * domain and fabric right after it and exits must not lose the message.
 *
 * - inject_then_exit: a thousand child processes (a few at a time), each opening the fabric, injecting one message with its
 *   sequence number, closing everything and exiting, while the receiver
 *   makes no libfabric call at all (so nobody but the child itself can
 *   run the engine for it); then the receiver gets every number once.
 * - inject_then_close: the same in one process, an endpoint opened,
 *   injected from and closed per message, the receiver idle meanwhile.
 * - close_to_gone_peer: a closing endpoint whose message has nobody at its
 *   destination returns at once, and the fabric counts the message.
 */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#ifndef NMSG
#define NMSG 1000
#endif
#define PARALLEL 4

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Children come from a spawner process forked before the test opens
 * anything: it initialises libfabric once (the system library's own
 * start-up takes a few hundred ms per process here) and forks a child per
 * request, so the children start with libfabric loaded and no fabric open.
 */
struct spawn_req {
	struct fi_sse_addr dest;
	uint32_t seq;
	uint32_t pad;
};

/* a request that asks for the exit statuses of the children started */
#define BATCH_END UINT32_MAX

static int cmd_fd = -1, rep_fd = -1;
static pid_t spawner_pid;

/* The child: open, inject @seq to @dest, close everything, exit. */
static int child_main(const struct spawn_req *q)
{
	struct sse_res_opts o = { .caps = FI_MSG };
	struct fi_sse_addr dest = q->dest;
	uint32_t seq = q->seq;
	struct sse_res r;
	fi_addr_t fa;
	ssize_t ret;

	sse_res_open(&r, 1, &o);
	if (fi_av_insert(r.av, &dest, 1, &fa, 0, NULL) != 1)
		return 2;
	do {
		ret = fi_inject(r.ep[0], &seq, sizeof(seq), fa);
	} while (ret == -FI_EAGAIN);
	if (ret)
		return 3;
	sse_res_close(&r);
	return 0;
}

static void reap_one(int *running)
{
	int status;

	if (wait(&status) <= 0)
		_exit(98);
	(*running)--;
	if (write(rep_fd, &status, sizeof(status)) != sizeof(status))
		_exit(97);
}

static void spawner_main(void)
{
	struct fi_info *hints = sse_test_hints(FI_MSG), *info = NULL;
	struct spawn_req q;
	int running = 0;
	pid_t pid;

	if (fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info))
		_exit(96);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	while (read(cmd_fd, &q, sizeof(q)) == sizeof(q)) {
		if (q.seq == BATCH_END) {
			while (running)
				reap_one(&running);
			continue;
		}
		pid = fork();
		if (pid < 0)
			_exit(95);
		if (!pid)
			_exit(child_main(&q));
		running++;
	}
	while (running)
		reap_one(&running);
	_exit(0);
}

static void start_spawner(void)
{
	int cmd[2], rep[2];

	if (pipe(cmd) || pipe(rep))
		exit(99);
	fflush(NULL);
	spawner_pid = fork();
	if (spawner_pid < 0)
		exit(99);
	if (!spawner_pid) {
		close(cmd[1]);
		close(rep[0]);
		cmd_fd = cmd[0];
		rep_fd = rep[1];
		spawner_main();
	}
	close(cmd[0]);
	close(rep[1]);
	cmd_fd = cmd[1];
	rep_fd = rep[0];
}

/* Post @n receives of one uint32 each into @in. */
static void post_recvs(struct sse_res *r, uint32_t *in, int n)
{
	int k;

	for (k = 0; k < n; k++)
		assert_fi_ok(fi_recv(r->ep[0], &in[k], sizeof(in[k]), NULL,
				     FI_ADDR_UNSPEC, &in[k]));
}

/* Receive completions until @n have come in all (@got so far). */
static void wait_recvs(struct sse_res *r, int *got, int n)
{
	struct fi_cq_tagged_entry e;
	int ret;

	while (*got < n) {
		ret = sse_cq_wait(r, r->cq[0], &e, NULL, 5000);
		if (ret != 1)
			fail_msg("message %d of %d did not arrive (%d)",
				 *got + 1, n, ret);
		assert_int_equal(e.len, sizeof(uint32_t));
		(*got)++;
	}
}

/* @in holds 0..n-1 once each. */
static void check_seqs(const uint32_t *in, int n)
{
	static unsigned char seen[NMSG];
	int k;

	memset(seen, 0, sizeof(seen));
	for (k = 0; k < n; k++) {
		assert_true(in[k] < (uint32_t)n);
		assert_int_equal(seen[in[k]], 0);
		seen[in[k]] = 1;
	}
}

/*
 * The receiver makes no libfabric call while a batch of children runs;
 * once all of them have exited it takes their messages (which frees the
 * children's message slots for later children: a receiver that never
 * polls holds its senders' slots).
 */
static void test_inject_then_exit(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG };
	static uint32_t in[NMSG];
	struct spawn_req q = { .seq = 0 };
	size_t len = sizeof(q.dest);
	int k, b, status, got = 0;
	struct sse_res r;
	uint64_t t0;

	sse_res_open(&r, 1, &o);
	assert_fi_ok(fi_getname(&r.ep[0]->fid, &q.dest, &len));
	post_recvs(&r, in, NMSG);
	t0 = now_ms();
	for (k = 0; k < NMSG; k += PARALLEL) {
		for (b = k; b < NMSG && b < k + PARALLEL; b++) {
			q.seq = (uint32_t)b;
			assert_int_equal(write(cmd_fd, &q, sizeof(q)),
					 (ssize_t)sizeof(q));
		}
		q.seq = BATCH_END;
		assert_int_equal(write(cmd_fd, &q, sizeof(q)),
				 (ssize_t)sizeof(q));
		for (b = k; b < NMSG && b < k + PARALLEL; b++) {
			assert_int_equal(read(rep_fd, &status, sizeof(status)),
					 (ssize_t)sizeof(status));
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				fail_msg("a child of batch %d ended with status 0x%x",
					 k / PARALLEL, status);
		}
		/* every one of them gone: now their messages */
		wait_recvs(&r, &got, b);
	}
	close(cmd_fd);
	assert_int_equal(waitpid(spawner_pid, &status, 0), spawner_pid);
	assert_true(WIFEXITED(status) && !WEXITSTATUS(status));
	print_message("%d children in %llu ms\n", NMSG,
		      (unsigned long long)(now_ms() - t0));
	check_seqs(in, NMSG);
	sse_res_close(&r);
}

static void test_inject_then_close(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG };
	static uint32_t in[NMSG];
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	struct sse_res r;
	int got = 0;
	uint32_t k;
	ssize_t ret;

	sse_res_open(&r, 1, &o);
	post_recvs(&r, in, NMSG);
	assert_fi_ok(fi_cq_open(r.domain, &ca, &cq, NULL));
	for (k = 0; k < NMSG; k++) {
		assert_fi_ok(fi_endpoint(r.domain, r.info, &ep, NULL));
		assert_fi_ok(fi_ep_bind(ep, &r.av->fid, 0));
		assert_fi_ok(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		assert_fi_ok(fi_enable(ep));
		do {
			ret = fi_inject(ep, &k, sizeof(k), r.addr[0]);
		} while (ret == -FI_EAGAIN);
		assert_fi_ok(ret);
		assert_fi_ok(fi_close(&ep->fid));
		/* the receiver progresses only once the sender is gone */
		wait_recvs(&r, &got, (int)k + 1);
	}
	assert_fi_ok(fi_close(&cq->fid));
	check_seqs(in, NMSG);
	sse_res_close(&r);
}

static void test_close_to_gone_peer(void **state)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM,
					.flags = SSEMU_OPEN_OBSERVER };
	struct sse_res_opts o = { .caps = FI_MSG };
	struct ssemu_fabric_stats before, after;
	struct ssemu_fabric *fab;
	struct sse_res r;
	uint32_t v = 7;
	uint64_t t0;
	char err[128];
	ssize_t ret;

	sse_res_open(&r, 2, &o);
	/* ep[1] goes away: nobody is at its address any more */
	assert_fi_ok(fi_close(&r.ep[1]->fid));
	r.ep[1] = NULL;
	fo.name = getenv("FI_SLINGSHOT_EMU_FABRIC");
	assert_int_equal(ssemu_fabric_open(&fo, &fab, err, sizeof(err)), 0);
	assert_int_equal(ssemu_fabric_stats(fab, &before), 0);
	do {
		ret = fi_inject(r.ep[0], &v, sizeof(v), r.addr[1]);
	} while (ret == -FI_EAGAIN);
	assert_fi_ok(ret);
	t0 = now_ms();
	assert_fi_ok(fi_close(&r.ep[0]->fid));
	r.ep[0] = NULL;
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(ssemu_fabric_stats(fab, &after), 0);
	assert_int_equal(after.msgs_unreachable - before.msgs_unreachable, 1);
	assert_int_equal(after.msgs_discarded, before.msgs_discarded);
	ssemu_fabric_close(fab);
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inject_then_exit),
		cmocka_unit_test(test_inject_then_close),
		cmocka_unit_test(test_close_to_gone_peer),
	};

	sse_test_init("shm", "close");
	start_spawner();
	return cmocka_run_group_tests_name("close delivers what was accepted",
					   tests, NULL, NULL);
}
