/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two processes (fork) on one shared-memory fabric: address exchange over
 * a pipe, then a tagged ping-pong of every size class with data checks in
 * both directions, unexpected messages, and a rendezvous each way.  This
 * is the shape of an MPI job on the emulated fabric.
 */
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS

struct side {
	struct sse_res r;
	fi_addr_t peer;
};

static void side_open(struct side *s, int rfd, int wfd,
		      enum fi_progress progress)
{
	struct sse_res_opts o = { .caps = FI_TAGGED, .progress = progress };
	struct fi_sse_addr me, them;
	size_t len = sizeof(me);

	sse_res_open(&s->r, 1, &o);
	assert_fi_ok(fi_getname(&s->r.ep[0]->fid, &me, &len));
	assert_int_equal(write(wfd, &me, sizeof(me)), (ssize_t)sizeof(me));
	assert_int_equal(read(rfd, &them, sizeof(them)),
			 (ssize_t)sizeof(them));
	assert_int_equal(me.fabric_id, them.fabric_id);
	assert_int_not_equal(me.addr, them.addr);
	assert_int_equal(fi_av_insert(s->r.av, &them, 1, &s->peer, 0, NULL),
			 1);
}

static size_t sizes[16];
static int nsizes;

static void init_sizes(void)
{
	size_t mtu = sse_test_mtu(), piece = sse_test_piece();
	const size_t s[] = { 0, 1, 8, mtu - 1, mtu, mtu + 1, 16385,
			     piece - 1, piece, piece + 1, 1 << 20,
			     (size_t)16 << 20 };

	nsizes = (int)(sizeof(s) / sizeof(s[0]));
	memcpy(sizes, s, sizeof(s));
}

/* One round: @first sends, the other echoes; both check the data. */
static void pingpong(struct side *s, bool first, size_t len, unsigned seed,
		     bool late_recv)
{
	char *buf = malloc(len + 1);
	struct fi_cq_tagged_entry e;
	uint64_t tag = 0x8000000000000000ULL | len;

	if (first) {
		sse_fill(buf, len, seed);
		assert_fi_ok(fi_tsend(s->r.ep[0], buf, len, NULL, s->peer, tag,
				      buf));
		assert_int_equal(sse_cq_wait(&s->r, s->r.cq[0], &e, NULL, TMO),
				 1);
		assert_ptr_equal(e.op_context, buf);
		memset(buf, 0, len + 1);
		assert_fi_ok(fi_trecv(s->r.ep[0], buf, len, NULL, s->peer,
				      tag + 1, 0, buf));
		assert_int_equal(sse_cq_wait(&s->r, s->r.cq[0], &e, NULL, TMO),
				 1);
		assert_int_equal(e.len, len);
		assert_int_equal(e.tag, tag + 1);
		assert_int_equal(sse_check(buf, len, seed + 1), -1);
	} else {
		memset(buf, 0, len + 1);
		if (late_recv)
			usleep(20000);	/* let it arrive unexpected */
		assert_fi_ok(fi_trecv(s->r.ep[0], buf, len, NULL,
				      FI_ADDR_UNSPEC, tag, 0, buf));
		assert_int_equal(sse_cq_wait(&s->r, s->r.cq[0], &e, NULL, TMO),
				 1);
		assert_int_equal(e.len, len);
		assert_int_equal(sse_check(buf, len, seed), -1);
		sse_fill(buf, len, seed + 1);
		assert_fi_ok(fi_tsend(s->r.ep[0], buf, len, NULL, s->peer,
				      tag + 1, buf));
		assert_int_equal(sse_cq_wait(&s->r, s->r.cq[0], &e, NULL, TMO),
				 1);
	}
	free(buf);
}

static void run_side(int rfd, int wfd, bool parent)
{
	struct side s;
	int i, rep;

	init_sizes();
	side_open(&s, rfd, wfd, FI_PROGRESS_UNSPEC);
	for (rep = 0; rep < 2; rep++) {
		for (i = 0; i < nsizes; i++) {
			/* the roles swap each repetition */
			bool first = parent == (rep == 0);

			pingpong(&s, first, sizes[i],
				 (unsigned)(rep * 100 + i), i & 1);
		}
	}
	/* a stream of small messages, both ways at once */
	{
		enum { N = 1000 };
		static uint32_t out[N], in[N];
		struct fi_cq_tagged_entry e;
		int k, done = 0;

		for (k = 0; k < N; k++) {
			out[k] = (uint32_t)k;
			assert_fi_ok(fi_trecv(s.r.ep[0], &in[k], 4, NULL,
					      s.peer, 5, 0, NULL));
		}
		for (k = 0; k < N; k++)
			assert_fi_ok(fi_tsend(s.r.ep[0], &out[k], 4, NULL,
					      s.peer, 5, NULL));
		while (done < 2 * N) {
			assert_int_equal(sse_cq_wait(&s.r, s.r.cq[0], &e,
						     NULL, TMO), 1);
			done++;
		}
		for (k = 0; k < N; k++)
			assert_int_equal(in[k], k);
	}
	/* do not close while the peer may still need our acks */
	{
		char c = 'x';

		assert_int_equal(write(wfd, &c, 1), 1);
		assert_int_equal(read(rfd, &c, 1), 1);
	}
	sse_res_close(&s.r);
}

/*
 * FI_PROGRESS_AUTO: the receiver posts a receive and then makes no
 * libfabric call for a while; its progress thread must answer the
 * rendezvous so that the sender's 1 MiB send completes meanwhile.
 */
static void auto_side(int rfd, int wfd, bool sender)
{
	struct fi_cq_tagged_entry e;
	size_t len = 1 << 20;
	char *buf = malloc(len), c = 'x';
	struct side s;

	side_open(&s, rfd, wfd, FI_PROGRESS_AUTO);
	if (sender) {
		sse_fill(buf, len, 33);
		assert_int_equal(read(rfd, &c, 1), 1);	/* receive posted */
		assert_fi_ok(fi_tsend(s.r.ep[0], buf, len, NULL, s.peer, 9,
				      NULL));
		/* progress only our own side: fi_cq_sread on our CQ */
		assert_int_equal(fi_cq_sread(s.r.cq[0], &e, 1, NULL, 5000), 1);
		assert_int_equal(write(wfd, &c, 1), 1);	/* sent */
	} else {
		assert_fi_ok(fi_trecv(s.r.ep[0], buf, len, NULL,
				      FI_ADDR_UNSPEC, 9, 0, NULL));
		assert_int_equal(write(wfd, &c, 1), 1);
		/* no libfabric call until the sender says it is done */
		assert_int_equal(read(rfd, &c, 1), 1);
		assert_int_equal(fi_cq_sread(s.r.cq[0], &e, 1, NULL, 5000), 1);
		assert_int_equal(sse_check(buf, len, 33), -1);
	}
	assert_int_equal(write(wfd, &c, 1), 1);
	assert_int_equal(read(rfd, &c, 1), 1);
	sse_res_close(&s.r);
	free(buf);
}

/*
 * A rendezvous send to a process that dies before it asks for the data:
 * no CTS will ever come, so the send must fail (an error completion), not
 * hang.  The child never posts a receive; the parent kills it.
 */
static void test_two_proc_rndv_peer_killed(void **state)
{
	int to_c[2], to_p[2], status;
	struct fi_cq_err_entry err;
	size_t len = 1 << 20;
	char *buf = malloc(len), c = 'x';
	struct side s;
	pid_t pid;
	int ret;

	assert_non_null(buf);
	assert_int_equal(pipe(to_c), 0);
	assert_int_equal(pipe(to_p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		side_open(&s, to_c[0], to_p[1], FI_PROGRESS_UNSPEC);
		assert_int_equal(write(to_p[1], &c, 1), 1);
		for (;;)
			pause();	/* never receives; killed */
	}
	side_open(&s, to_p[0], to_c[1], FI_PROGRESS_UNSPEC);
	assert_int_equal(read(to_p[0], &c, 1), 1);
	sse_fill(buf, len, 7);
	assert_fi_ok(fi_tsend(s.r.ep[0], buf, len, NULL, s.peer, 3, buf));
	/* the RTS is delivered (and acknowledged by the child's NIC) */
	usleep(50000);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ret = sse_cq_wait_err(&s.r, s.r.cq[0], &err, TMO);
	assert_int_equal(ret, 1);
	assert_ptr_equal(err.op_context, buf);
	assert_int_equal(err.err, FI_EHOSTUNREACH);
	sse_res_close(&s.r);
	close(to_c[0]);
	close(to_c[1]);
	close(to_p[0]);
	close(to_p[1]);
	free(buf);
}

/*
 * Read rendezvous: the sender process posts a 4 MiB send and then blocks
 * in read(2), making no libfabric call; the receiver alone drives the
 * engine, whose model of the sender's NIC serves the receiver's reads.
 * The sender NIC's counters show it: the data left it as read responses
 * (tx_bytes) while the sender posted one message (the RTS).  With the
 * push protocol (FI_SLINGSHOT_EMU_RNDV_READ=0) this receive could not
 * complete before the sender calls in again.
 */
static void test_two_proc_rndv_read_idle_sender(void **state)
{
	struct ssemu_fabric_opts fo = { .store = SSEMU_STORE_SHM,
					.flags = SSEMU_OPEN_OBSERVER };
	int to_c[2], to_p[2], status, i, n;
	struct ssemu_nic_info nics[64];
	struct fi_cq_tagged_entry e;
	struct ssemu_fabric *fab;
	struct fi_sse_addr them;
	size_t len = (size_t)4 << 20, alen = sizeof(them);
	char *buf = malloc(len), c = 'x', err[128];
	const char *env = getenv("FI_SLINGSHOT_EMU_RNDV_READ");
	struct pollfd pfd = { .events = POLLIN };
	struct side s;
	pid_t pid;

	if (env && !strcmp(env, "0")) {
		free(buf);
		skip();
	}
	assert_non_null(buf);
	assert_int_equal(pipe(to_c), 0);
	assert_int_equal(pipe(to_p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		side_open(&s, to_c[0], to_p[1], FI_PROGRESS_UNSPEC);
		sse_fill(buf, len, 44);
		assert_fi_ok(fi_tsend(s.r.ep[0], buf, len, NULL, s.peer, 12,
				      buf));
		assert_int_equal(write(to_p[1], &c, 1), 1);	/* posted */
		/* idle: no libfabric call until the receiver has it all (or
		 * gave up: then do not linger) */
		pfd.fd = to_c[0];
		if (poll(&pfd, 1, TMO + 5000) != 1)
			_exit(1);
		assert_int_equal(read(to_c[0], &c, 1), 1);
		assert_int_equal(sse_cq_wait(&s.r, s.r.cq[0], &e, NULL, TMO),
				 1);
		assert_ptr_equal(e.op_context, buf);
		assert_int_equal(write(to_p[1], &c, 1), 1);	/* done */
		assert_int_equal(read(to_c[0], &c, 1), 1);
		sse_res_close(&s.r);
		_exit(0);
	}
	side_open(&s, to_p[0], to_c[1], FI_PROGRESS_UNSPEC);
	memset(buf, 0, len);
	assert_int_equal(read(to_p[0], &c, 1), 1);
	assert_fi_ok(fi_trecv(s.r.ep[0], buf, len, NULL, FI_ADDR_UNSPEC, 12,
			      0, buf));
	assert_int_equal(sse_cq_wait(&s.r, s.r.cq[0], &e, NULL, TMO), 1);
	assert_ptr_equal(e.op_context, buf);
	assert_int_equal(e.len, len);
	assert_int_equal(sse_check(buf, len, 44), -1);

	/* the sender's NIC, as `slingshot-emu stat` sees it */
	fo.name = getenv("FI_SLINGSHOT_EMU_FABRIC");
	assert_int_equal(ssemu_fabric_open(&fo, &fab, err, sizeof(err)), 0);
	assert_int_equal(fi_av_lookup(s.r.av, s.peer, &them, &alen), 0);
	n = ssemu_fabric_nics(fab, nics, 64);
	for (i = 0; i < n && nics[i].port != FI_SSE_ADDR_PORT(&them); i++)
		;
	assert_true(i < n);
	assert_true(nics[i].stats.tx_bytes >= len);
	assert_int_equal(nics[i].stats.tx_msgs, 1);	/* the RTS */
	ssemu_fabric_close(fab);

	assert_int_equal(write(to_c[1], &c, 1), 1);	/* received */
	assert_int_equal(read(to_p[0], &c, 1), 1);	/* sender done */
	assert_int_equal(write(to_c[1], &c, 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	sse_res_close(&s.r);
	close(to_c[0]);
	close(to_c[1]);
	close(to_p[0]);
	close(to_p[1]);
	free(buf);
}

static int to_child[2], to_parent[2];

static void run_forked(void (*fn)(int rfd, int wfd, bool parent))
{
	int status;
	pid_t pid;

	assert_int_equal(pipe(to_child), 0);
	assert_int_equal(pipe(to_parent), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		fn(to_child[0], to_parent[1], false);
		_exit(0);
	}
	close(to_child[0]);
	close(to_parent[1]);
	fn(to_parent[0], to_child[1], true);
	close(to_parent[0]);
	close(to_child[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_two_proc_pingpong(void **state)
{
	run_forked(run_side);
}

static void test_two_proc_auto_progress(void **state)
{
	run_forked(auto_side);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_proc_pingpong),
		cmocka_unit_test(test_two_proc_auto_progress),
		cmocka_unit_test(test_two_proc_rndv_peer_killed),
		cmocka_unit_test(test_two_proc_rndv_read_idle_sender),
	};

	/* A failed assertion in the child ends it with a non-zero status,
	 * which the parent checks. */
	sse_test_init("shm", "2proc");
	return cmocka_run_group_tests_name("two processes (shm store)", tests,
					   NULL, NULL);
}
