/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the shared fabric store (SSEMU_STORE_SHM, emu/ssemu_fabric.c)
 * with real processes: 2, 4 and 16 forked processes attach a NIC each to one
 * named fabric and exchange messages with every other one, checking every
 * byte; a process killed with SIGKILL in the middle of a transfer does not
 * hang the others and the fabric takes a newcomer on its port; the engine
 * stays with the handle that ran it last, except on a crowded fabric
 * (more processes than CPUs), where whoever finds work runs it; corrupt
 * headers and impossible engine counts are -EPROTO (the counts read under
 * the lock, so engine runners killed mid-run while others attach never
 * look corrupt), a different configuration is -EEXIST naming the
 * difference, a segment of another uid or with mode 0644 is -EACCES, and the
 * last process out removes the segment; SSEMU_SHM_DIR moves it to another
 * directory.
 *
 * Every segment is named after this process's pid (make check runs the
 * tests in parallel) and every test checks that it left nothing in
 * /dev/shm.  Children never call cmocka: they report through a shared
 * control page and their exit status, and the parent kills any child that
 * outlives its deadline.
 */
#include <errno.h>
#include <linux/magic.h>
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
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"

#define MAX_PROCS 16
#define CHILD_DEADLINE_S 40
#define STALL_MS 3000		/* idle fabric and no event: stuck */

/* ------------------------------------------------------------------ */
/* Names, configuration, cleanup                                        */
/* ------------------------------------------------------------------ */

static char shm_name[64];	/* without the leading '/' */

static void name_for(const char *tag)
{
	snprintf(shm_name, sizeof(shm_name), "ssemu-ut-%d-%s", (int)getpid(),
		 tag);
}

static bool segment_exists(void)
{
	char path[80];
	int fd;

	snprintf(path, sizeof(path), "/%s", shm_name);
	fd = shm_open(path, O_RDONLY, 0);
	if (fd >= 0) {
		close(fd);
		return true;
	}
	assert_int_equal(errno, ENOENT);
	return false;
}

/* Every test ends here: nothing of ours may be left in /dev/shm. */
static void expect_no_segment(void)
{
	char path[80];

	if (segment_exists()) {
		snprintf(path, sizeof(path), "/%s", shm_name);
		shm_unlink(path);
		fail_msg("segment %s left behind", shm_name);
	}
}

static int teardown_segment(void **state)
{
	char path[80];

	/* after a failed test: clean up without judging */
	snprintf(path, sizeof(path), "/%s", shm_name);
	shm_unlink(path);
	return 0;
}

static void shm_config(struct ssemu_config *c)
{
	assert_int_equal(ssemu_config_preset("switch", c), 0);
	c->max_nics = 20;
	c->max_switches = 1;
	c->eps_per_nic = 1;
	c->msgs_per_ep = 64;
	c->bufs_per_ep = 8;
	c->buf_size = 65536;
	c->max_pkts = 8192;
	c->max_events = 65536;
}

static int shm_open_fabric(const struct ssemu_config *c,
			   struct ssemu_fabric **f, char *err, size_t errlen)
{
	struct ssemu_fabric_opts o = {
		.store = SSEMU_STORE_SHM,
		.name = shm_name,
		.config = c,
	};

	return ssemu_fabric_open(&o, f, err, errlen);
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* Children                                                             */
/* ------------------------------------------------------------------ */

/* The control page shared with the children. */
struct ctl {
	uint32_t ready;		/* attached and waiting */
	uint32_t finished;	/* phase 1 done */
	uint32_t all_done;	/* phase 2 done */
	uint32_t victim_busy;	/* the victim is mid-transfer */
	uint32_t newcomer_in;	/* the newcomer is attached */
	uint32_t nprocs;
	uint32_t per_peer;
	uint32_t small_to_victim;	/* only inline sizes to the victim */
	/* dead processes free what they held (test_shm_dead_*) */
	uint32_t job, policy;	/* the job the children attach as */
	uint32_t wait_kill;	/* at the end, wait to be killed */
	uint32_t port[MAX_PROCS + 1];	/* where each child's NIC went */
	uint64_t recv[MAX_PROCS + 1];
	uint64_t bad_status[MAX_PROCS + 1];	/* completions with errors */
	char msg[MAX_PROCS + 1][320];		/* why a child failed */
};

static struct ctl *ctl;

static int child_rank = -1;

#define CFAIL(...)                                                       \
	do {                                                             \
		snprintf(ctl->msg[child_rank], sizeof(ctl->msg[0]),      \
			 __VA_ARGS__);                                   \
		_exit(1);                                                \
	} while (0)

static void ctl_wait_for(uint32_t *word, uint32_t want,
			 struct ssemu_fabric *f, uint64_t deadline,
			 const char *what)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want) {
		if (f)
			ssemu_fabric_progress(f, 1024);
		if (wall_ms() > deadline)
			CFAIL("rank %d: timed out waiting for %s (%u of %u)",
			      child_rank, what,
			      __atomic_load_n(word, __ATOMIC_ACQUIRE), want);
		usleep(200);
	}
}

static const size_t msg_sizes[] = { 0, 100, 192, 1000, 5000, 20000 };

static size_t msg_size(uint32_t src, uint32_t dst, uint32_t k)
{
	if (ctl->small_to_victim && dst == 2 && src != 2)
		return msg_sizes[(src + k) % 3];
	return msg_sizes[(src + 3 * dst + k) % 6];
}

static uint8_t msg_byte(uint32_t src, uint32_t dst, uint32_t k, size_t off)
{
	return (uint8_t)(src * 37 + dst * 11 + k * 5 + off * 3 + (off >> 7));
}

struct peer_state {
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	uint32_t rank;
	uint64_t next_k[MAX_PROCS + 1];	/* next expected k per source */
	uint64_t rx, done, done_err;
	uint64_t rx_from_victim;
	int victim;			/* rank whose traffic may stop */
	int newcomer_msgs;		/* messages from the newcomer */
	uint32_t newcomer_src;		/* address they came from */
	uint64_t last_event;		/* wall ms of the last event or post */
	bool looked_for_dead;		/* stalled once already */
	bool waiting_for_parent;	/* waiting on others: no stall check */
};

static void check_recv(struct peer_state *ps, const struct ssemu_event *ev)
{
	uint32_t src = (uint32_t)ev->hdr[0], dst = (uint32_t)ev->hdr[2];
	uint32_t k = (uint32_t)ev->hdr[1];
	const uint8_t *p = ssemu_event_data(ps->ep, ev);
	size_t off;

	if (src == 100) {	/* the newcomer */
		ps->newcomer_msgs++;
		ps->newcomer_src = ev->src;
		if (ev->len != 3000)
			CFAIL("rank %u: newcomer message of %llu bytes",
			      ps->rank, (unsigned long long)ev->len);
		for (off = 0; off < ev->len; off++)
			if (p[off] != (uint8_t)(off * 7 + 1))
				CFAIL("rank %u: newcomer byte %zu corrupt",
				      ps->rank, off);
		return;
	}
	if (src > MAX_PROCS || dst != ps->rank ||
	    SSEMU_ADDR_PORT(ev->src) != src)
		CFAIL("rank %u: message from %u (port %u) for %u", ps->rank,
		      src, SSEMU_ADDR_PORT(ev->src), dst);
	if (k != ps->next_k[src])
		CFAIL("rank %u: message %u from %u, expected %llu", ps->rank,
		      k, src, (unsigned long long)ps->next_k[src]);
	ps->next_k[src]++;
	if (ev->len != msg_size(src, dst, k) || ev->hdr[3] != ev->len)
		CFAIL("rank %u: message %u from %u has %llu bytes, want %zu",
		      ps->rank, k, src, (unsigned long long)ev->len,
		      msg_size(src, dst, k));
	if (ev->len && !p)
		CFAIL("rank %u: no data for message %u from %u", ps->rank, k,
		      src);
	for (off = 0; off < ev->len; off++)
		if (p[off] != msg_byte(src, dst, k, off))
			CFAIL("rank %u: message %u from %u: byte %zu is %u, "
			      "want %u", ps->rank, k, src, off, p[off],
			      msg_byte(src, dst, k, off));
	if ((int)src == ps->victim)
		ps->rx_from_victim++;
	else
		ps->rx++;
}

/* Take every event: check RECVs and give them back, count completions. */
static void drain_events(struct peer_state *ps, bool release)
{
	struct ssemu_event ev[32];
	int n, i;

	while ((n = ssemu_ep_poll(ps->ep, ev, 32)) > 0) {
		ps->last_event = wall_ms();
		for (i = 0; i < n; i++) {
			if (ev[i].type == SSEMU_EV_RECV) {
				check_recv(ps, &ev[i]);
				if (release)
					ssemu_event_release(ps->ep, &ev[i]);
			} else if (ev[i].type == SSEMU_EV_SEND_DONE) {
				if (ev[i].status) {
					ps->done_err++;
					if (ev[i].cookie >> 32 !=
					    (uint64_t)ps->victim)
						CFAIL("rank %u: send %llx "
						      "failed: %d", ps->rank,
						      (unsigned long long)
							      ev[i].cookie,
						      ev[i].status);
				}
				ps->done++;
			} else {
				CFAIL("rank %u: event type %u", ps->rank,
				      ev[i].type);
			}
		}
	}
}

static void wait_events(struct peer_state *ps, uint64_t deadline,
			const char *what)
{
	int ret = ssemu_ep_wait(ps->ep, 5);

	if (ret < 0)
		CFAIL("rank %u: ssemu_ep_wait: %d", ps->rank, ret);
	drain_events(ps, true);
	if (wall_ms() > deadline)
		CFAIL("rank %u: timed out %s: %llu received, %llu of %llu "
		      "sends done", ps->rank, what,
		      (unsigned long long)ps->rx,
		      (unsigned long long)ps->done,
		      (unsigned long long)(ctl->nprocs - 1) * ctl->per_peer);
	/*
	 * Nothing in the model and nothing for us for a while: stuck.  The
	 * fabric checks for dead processes every 4096 progress calls of a
	 * handle, so first make sure it has looked, then give it another
	 * stall period.
	 */
	if (ps->waiting_for_parent) {
		/* a process we wait for gave up: so do we */
		for (unsigned i = 0; i <= MAX_PROCS; i++)
			if (i != ps->rank && ctl->msg[i][0])
				CFAIL("rank %u: gave up %s: process %u failed",
				      ps->rank, what, i);
		return;
	}
	if (wall_ms() - ps->last_event > STALL_MS &&
	    ssemu_fabric_idle(ps->f) && !ps->looked_for_dead) {
		for (int i = 0; i < 2 * 4096; i++)
			ssemu_fabric_progress(ps->f, 16);
		ps->looked_for_dead = true;
		ps->last_event = wall_ms();
	}
	if (wall_ms() - ps->last_event > STALL_MS &&
	    ssemu_fabric_idle(ps->f))
		CFAIL("rank %u: stuck %s: the fabric is idle and nothing "
		      "happened for 2 x %d ms; %llu received, %llu of %llu "
		      "sends done", ps->rank, what, STALL_MS,
		      (unsigned long long)ps->rx,
		      (unsigned long long)ps->done,
		      (unsigned long long)(ctl->nprocs - 1) * ctl->per_peer);
}

static void post(struct peer_state *ps, uint32_t dst, uint32_t k,
		 uint64_t deadline)
{
	static uint8_t buf[20000];
	size_t len = msg_size(ps->rank, dst, k), off;
	struct iovec iov = { buf, len };
	struct ssemu_send s = {
		.dest = SSEMU_ADDR(dst, 0),
		.tclass = 3,
		.iov = &iov,
		.iov_count = 1,
		.cookie = (uint64_t)dst << 32 | k,
	};
	int ret;

	for (off = 0; off < len; off++)
		buf[off] = msg_byte(ps->rank, dst, k, off);
	s.hdr[0] = ps->rank;
	s.hdr[1] = k;
	s.hdr[2] = dst;
	s.hdr[3] = len;
	while ((ret = ssemu_ep_send(ps->ep, &s)) == -EAGAIN)
		wait_events(ps, deadline, "posting (-EAGAIN: no slot or "
			    "large buffer came back)");
	if (ret)
		CFAIL("rank %u: send to %u: %d", ps->rank, dst, ret);
	ps->last_event = wall_ms();
}

static void child_attach(struct peer_state *ps, uint32_t rank,
			 const struct ssemu_config *c)
{
	struct ssemu_nic_opts no = { .port = rank, .rank = (int32_t)rank };
	char err[160] = "";
	int ret;

	memset(ps, 0, sizeof(*ps));
	ps->rank = rank;
	ps->last_event = wall_ms();
	ps->victim = -1;
	ret = shm_open_fabric(c, &ps->f, err, sizeof(err));
	if (ret)
		CFAIL("rank %u: open: %d %s", rank, ret, err);
	ret = ssemu_nic_attach(ps->f, &no, &ps->nic);
	if (ret)
		CFAIL("rank %u: attach: %d", rank, ret);
	ret = ssemu_ep_open(ps->nic, &ps->ep);
	if (ret)
		CFAIL("rank %u: ep_open: %d", rank, ret);
}

static void child_leave(struct peer_state *ps)
{
	ssemu_ep_close(ps->ep);
	ssemu_nic_detach(ps->nic);
	ssemu_fabric_close(ps->f);
}

/* Everyone sends per_peer messages to every other and checks all it gets. */
static void child_exchange(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	uint32_t n = ctl->nprocs, k, d;
	uint64_t want = (uint64_t)(n - 1) * ctl->per_peer;
	struct peer_state ps;

	child_attach(&ps, rank, c);
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->ready, n, ps.f, deadline, "the others to attach");
	for (k = 0; k < ctl->per_peer; k++) {
		for (d = 1; d < n; d++) {
			post(&ps, (rank + d) % n, k, deadline);
			drain_events(&ps, true);
		}
	}
	while (ps.rx < want || ps.done < want)
		wait_events(&ps, deadline, "exchanging");
	ctl->recv[rank] = ps.rx;
	/* stay (and keep the engine going) until everyone has everything,
	 * so that nobody's last acknowledgements depend on a closed NIC */
	__atomic_add_fetch(&ctl->finished, 1, __ATOMIC_RELEASE);
	ps.waiting_for_parent = true;	/* others may be slow */
	while (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) < n)
		wait_events(&ps, deadline, "waiting for the others");
	child_leave(&ps);
	_exit(0);
}

typedef void (*child_fn)(uint32_t rank, const struct ssemu_config *c);

static pid_t spawn(uint32_t rank, child_fn fn, const struct ssemu_config *c)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka's handlers would run the remaining tests here */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		child_rank = (int)rank;
		alarm(CHILD_DEADLINE_S + 20);	/* last resort */
		fn(rank, c);
		_exit(2);
	}
	return pid;
}

/* Wait for @n children; kill what is left at the deadline.  Returns the
 * number that did not exit 0 and fills @why. */
static unsigned reap(pid_t *pids, unsigned n, unsigned timeout_s, char *why,
		     size_t whylen)
{
	uint64_t deadline = wall_ms() + timeout_s * 1000ULL;
	unsigned left = 0, bad = 0, i;
	int status;

	why[0] = 0;
	for (i = 0; i < n; i++)
		left += pids[i] > 0;
	while (left) {
		for (i = 0; i < n; i++) {
			if (pids[i] <= 0)
				continue;
			if (waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				size_t used = strlen(why);

				bad++;
				snprintf(why + used, whylen - used,
					 "%schild %u: %s%d: %s",
					 used ? "; " : "", i,
					 WIFEXITED(status) ? "exit " :
							     "signal ",
					 WIFEXITED(status) ?
						 WEXITSTATUS(status) :
						 WTERMSIG(status),
					 ctl->msg[i]);
			}
			pids[i] = 0;
			left--;
		}
		if (left && wall_ms() > deadline) {
			for (i = 0; i < n; i++) {
				if (pids[i] <= 0)
					continue;
				size_t used = strlen(why);

				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				pids[i] = 0;
				bad++;
				snprintf(why + used, whylen - used,
					 "%schild %u killed at the deadline"
					 "%s%s", used ? "; " : "", i,
					 ctl->msg[i][0] ? ": " : "",
					 ctl->msg[i]);
			}
			left = 0;
		}
		usleep(1000);
	}
	return bad;
}

static void ctl_reset(uint32_t nprocs, uint32_t per_peer)
{
	if (!ctl) {
		ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(ctl != MAP_FAILED);
	}
	memset(ctl, 0, sizeof(*ctl));
	ctl->nprocs = nprocs;
	ctl->per_peer = per_peer;
}

/* ------------------------------------------------------------------ */
/* Multi-process exchange                                               */
/* ------------------------------------------------------------------ */

static void exchange(uint32_t nprocs, uint32_t per_peer, const char *tag)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	struct ssemu_fabric_stats fs;
	pid_t pids[MAX_PROCS];
	char err[256] = "", why[1536];
	unsigned i, bad;

	name_for(tag);
	shm_config(&c);
	ctl_reset(nprocs, per_peer);
	/* the parent creates the fabric and holds it while children come
	 * and go */
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	assert_true(segment_exists());
	for (i = 0; i < nprocs; i++)
		pids[i] = spawn(i, child_exchange, &c);
	bad = reap(pids, nprocs, CHILD_DEADLINE_S + 10, why, sizeof(why));
	if (bad) {
		ssemu_fabric_close(f);
		fail_msg("%u of %u processes failed; %s", bad, nprocs, why);
	}
	for (i = 0; i < nprocs; i++)
		assert_true(ctl->recv[i] == (uint64_t)(nprocs - 1) * per_peer);
	/* every child detached on its way out; the model saw every packet */
	assert_int_equal(ssemu_fabric_stats(f, &fs), 0);
	assert_true(fs.nics_attached == 0);
	assert_true(fs.pkts_delivered >= (uint64_t)nprocs * (nprocs - 1) *
						 per_peer);
	ssemu_fabric_close(f);
	expect_no_segment();
}

static void test_shm_exchange_2_processes(void **state)
{
	exchange(2, 40, "x2");
}

static void test_shm_exchange_4_processes(void **state)
{
	exchange(4, 12, "x4");
}

static void test_shm_exchange_16_processes(void **state)
{
	exchange(16, 3, "x16");
}

/* ------------------------------------------------------------------ */
/* A process killed mid-transfer                                        */
/* ------------------------------------------------------------------ */

#define KILL_A 0
#define KILL_B 1
#define KILL_V 2
#define KILL_MSGS 30

/*
 * The victim: streams to A and B, then sleeps (not holding the fabric lock:
 * dying inside the engine is test_shm_engine_runner_killed) until killed.
 */
static void child_victim(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	struct peer_state ps;
	uint32_t k;

	child_attach(&ps, rank, c);
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->ready, 3, ps.f, deadline, "the others to attach");
	for (k = 0;; k++) {
		post(&ps, KILL_A, k % KILL_MSGS, deadline);
		post(&ps, KILL_B, k % KILL_MSGS, deadline);
		drain_events(&ps, true);
		if (k == 4)
			__atomic_store_n(&ctl->victim_busy, 1,
					 __ATOMIC_RELEASE);
		if (k + 1 == KILL_MSGS)
			break;
	}
	for (;;) {
		usleep(1000);
		if (wall_ms() > deadline)
			CFAIL("victim: never killed");
	}
}

/* A and B: exchange with each other and with the victim, which dies. */
static void child_survivor(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	uint32_t other = rank == KILL_A ? KILL_B : KILL_A, k;
	struct peer_state ps;
	int got_reply = 0;

	child_attach(&ps, rank, c);
	ps.victim = KILL_V;
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->ready, 3, ps.f, deadline, "the others to attach");
	ctl_wait_for(&ctl->victim_busy, 1, ps.f, deadline, "the victim");
	for (k = 0; k < KILL_MSGS; k++) {
		post(&ps, other, k, deadline);
		post(&ps, KILL_V, k, deadline);
		drain_events(&ps, true);
	}
	/* every send completes (those to the victim may fail), all of the
	 * other survivor's messages arrive intact */
	while (ps.rx < KILL_MSGS || ps.done < 2 * KILL_MSGS)
		wait_events(&ps, deadline, "after the kill");
	ctl->recv[rank] = ps.rx;
	ctl->bad_status[rank] = ps.done_err;
	__atomic_add_fetch(&ctl->finished, 1, __ATOMIC_RELEASE);

	/* phase 2: a newcomer takes the victim's port and says hello */
	ps.waiting_for_parent = true;
	while (!ps.newcomer_msgs)
		wait_events(&ps, deadline, "for the newcomer");
	ps.waiting_for_parent = false;
	ps.last_event = wall_ms();
	if (SSEMU_ADDR_PORT(ps.newcomer_src) != KILL_V)
		CFAIL("rank %u: newcomer at port %u", rank,
		      SSEMU_ADDR_PORT(ps.newcomer_src));
	{
		static uint8_t buf[3000];
		struct iovec iov = { buf, sizeof(buf) };
		struct ssemu_send s = {
			.dest = ps.newcomer_src,
			.tclass = 1,
			.iov = &iov,
			.iov_count = 1,
			.cookie = 7,
		};
		size_t off;
		int ret;

		for (off = 0; off < sizeof(buf); off++)
			buf[off] = (uint8_t)(off * 7 + rank);
		s.hdr[0] = 200 + rank;
		while ((ret = ssemu_ep_send(ps.ep, &s)) == -EAGAIN)
			wait_events(&ps, deadline, "answering");
		if (ret)
			CFAIL("rank %u: reply: %d", rank, ret);
		got_reply = 1;
	}
	while (ps.done < 2 * KILL_MSGS + 1)
		wait_events(&ps, deadline, "for the reply to complete");
	(void)got_reply;
	__atomic_add_fetch(&ctl->all_done, 1, __ATOMIC_RELEASE);
	ps.waiting_for_parent = true;	/* others may be slow */
	while (__atomic_load_n(&ctl->all_done, __ATOMIC_ACQUIRE) < 3)
		wait_events(&ps, deadline, "for the end");
	child_leave(&ps);
	_exit(0);
}

/* The newcomer: attaches at the dead victim's port, greets A and B. */
static void child_newcomer(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	struct ssemu_nic_opts no = { .port = KILL_V, .rank = 3 };
	struct ssemu_event ev[8];
	struct ssemu_nic *nic;
	struct ssemu_fabric *f;
	struct ssemu_ep *ep;
	static uint8_t buf[3000];
	char err[160] = "";
	unsigned replies = 0, done = 0, tries = 0;
	int ret, n, i;
	size_t off;

	ret = shm_open_fabric(c, &f, err, sizeof(err));
	if (ret)
		CFAIL("newcomer: open: %d %s", ret, err);
	/* the port is free once the fabric has noticed the death */
	while ((ret = ssemu_nic_attach(f, &no, &nic)) == -EADDRINUSE) {
		ssemu_fabric_progress(f, 64);
		tries++;
		if (wall_ms() > deadline)
			CFAIL("newcomer: port %u still in use after %u tries",
			      KILL_V, tries);
	}
	if (ret)
		CFAIL("newcomer: attach: %d", ret);
	if (ssemu_ep_open(nic, &ep))
		CFAIL("newcomer: ep_open");
	__atomic_store_n(&ctl->newcomer_in, 1, __ATOMIC_RELEASE);
	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (uint8_t)(off * 7 + 1);
	for (i = 0; i < 2; i++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct ssemu_send s = {
			.dest = SSEMU_ADDR(i == 0 ? KILL_A : KILL_B, 0),
			.tclass = 1,
			.iov = &iov,
			.iov_count = 1,
		};

		s.hdr[0] = 100;
		while ((ret = ssemu_ep_send(ep, &s)) == -EAGAIN)
			ssemu_ep_wait(ep, 5);
		if (ret)
			CFAIL("newcomer: send: %d", ret);
	}
	while (replies < 2 || done < 2) {
		ssemu_ep_wait(ep, 5);
		while ((n = ssemu_ep_poll(ep, ev, 8)) > 0) {
			for (i = 0; i < n; i++) {
				if (ev[i].type == SSEMU_EV_SEND_DONE) {
					if (ev[i].status)
						CFAIL("newcomer: send "
						      "failed: %d",
						      ev[i].status);
					done++;
					continue;
				}
				const uint8_t *p = ssemu_event_data(ep, &ev[i]);
				uint32_t from = (uint32_t)ev[i].hdr[0] - 200;

				if (ev[i].hdr[0] < 200) {
					/* a late message of the victim's
					 * NIC's previous life: must not
					 * arrive here */
					CFAIL("newcomer: stale message hdr %llu"
					      " from port %u",
					      (unsigned long long)ev[i].hdr[0],
					      SSEMU_ADDR_PORT(ev[i].src));
				}
				if (ev[i].len != 3000 || !p)
					CFAIL("newcomer: reply of %llu bytes",
					      (unsigned long long)ev[i].len);
				for (off = 0; off < 3000; off++)
					if (p[off] != (uint8_t)(off * 7 + from))
						CFAIL("newcomer: reply byte "
						      "%zu corrupt", off);
				ssemu_event_release(ep, &ev[i]);
				replies++;
			}
		}
		if (wall_ms() > deadline)
			CFAIL("newcomer: %u replies, %u sends done", replies,
			      done);
	}
	__atomic_add_fetch(&ctl->all_done, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&ctl->all_done, __ATOMIC_ACQUIRE) < 3) {
		ssemu_fabric_progress(f, 1024);
		if (wall_ms() > deadline)
			CFAIL("newcomer: waiting for the end");
		usleep(200);
	}
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	_exit(0);
}

static void sigkill_run(bool small_to_victim)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	pid_t pids[4], victim;
	char err[256] = "", why[1536];
	uint64_t deadline;
	unsigned bad;
	int status;

	name_for(small_to_victim ? "kill-small" : "kill");
	shm_config(&c);
	ctl_reset(3, KILL_MSGS);
	ctl->small_to_victim = small_to_victim;
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	pids[KILL_A] = spawn(KILL_A, child_survivor, &c);
	pids[KILL_B] = spawn(KILL_B, child_survivor, &c);
	victim = pids[KILL_V] = spawn(KILL_V, child_victim, &c);
	pids[3] = 0;
	/* kill the victim while it is streaming */
	deadline = wall_ms() + 20000;
	while (!__atomic_load_n(&ctl->victim_busy, __ATOMIC_ACQUIRE)) {
		if (waitpid(victim, &status, WNOHANG) == victim) {
			pids[KILL_V] = 0;
			break;
		}
		if (wall_ms() > deadline)
			break;
		usleep(100);
	}
	usleep(2000);
	kill(victim, SIGKILL);
	if (pids[KILL_V])
		assert_int_equal(waitpid(victim, &status, 0), victim);
	pids[KILL_V] = 0;
	if (!__atomic_load_n(&ctl->victim_busy, __ATOMIC_ACQUIRE)) {
		reap(pids, 3, 1, why, sizeof(why));
		ssemu_fabric_close(f);
		fail_msg("the victim never got going: %s", ctl->msg[KILL_V]);
	}
	/* the survivors finish their transfers */
	deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	while (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) < 2 &&
	       wall_ms() < deadline) {
		if (ctl->msg[KILL_A][0] || ctl->msg[KILL_B][0])
			break;	/* a survivor gave up: reap says why */
		usleep(1000);
	}
	/* a newcomer takes the dead process's port */
	if (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) == 2)
		pids[3] = spawn(3, child_newcomer, &c);
	/* if a survivor gave up, the other one waits for a newcomer that
	 * will not come: stop it after a moment */
	bad = reap(pids, 4, pids[3] ? CHILD_DEADLINE_S + 10 : 3, why,
		   sizeof(why));
	ssemu_fabric_close(f);
	if (bad)
		fail_msg("after the SIGKILL: %s", why);
	assert_true(ctl->recv[KILL_A] == KILL_MSGS);
	assert_true(ctl->recv[KILL_B] == KILL_MSGS);
	expect_no_segment();
}

/*
 * The survivors stream messages of every size, large ones included, to the
 * victim before and after its death.  Each needs one of a survivor's 8
 * large buffers until the receiver gives it back.
 */
static void test_shm_sigkill_mid_transfer(void **state)
{
	sigkill_run(false);
}

/* The same with inline messages only toward the victim (no large buffers,
 * and fewer than msgs_per_ep slots), then a newcomer on its port. */
static void test_shm_sigkill_small_messages(void **state)
{
	sigkill_run(true);
}

/* ------------------------------------------------------------------ */
/* A process killed while it runs the engine                            */
/* ------------------------------------------------------------------ */

#define RUNNER_MSGS 10000
#define RUNNER_KILLS 400

/* Runs the engine for everyone, nothing else, until killed. */
static void child_runner(uint32_t rank, const struct ssemu_config *c)
{
	struct ssemu_fabric *f;
	char err[160] = "";
	int ret;

	ret = shm_open_fabric(c, &f, err, sizeof(err));
	if (ret)
		CFAIL("runner: open: %d %s", ret, err);
	for (;;)
		ssemu_fabric_progress(f, 16);
}

/* A and B stream RUNNER_MSGS messages each way, checking order and data. */
static void child_streamer(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	uint32_t other = 1 - rank, k = 0;
	struct peer_state ps;
	int ret;

	child_attach(&ps, rank, c);
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->ready, 2, ps.f, deadline, "the other one");
	while (ps.rx < RUNNER_MSGS || ps.done < RUNNER_MSGS) {
		if (k < RUNNER_MSGS) {
			static uint8_t buf[20000];
			size_t len = msg_size(rank, other, k), off;
			struct iovec iov = { buf, len };
			struct ssemu_send s = {
				.dest = SSEMU_ADDR(other, 0),
				.iov = &iov,
				.iov_count = 1,
				.cookie = k,
			};

			for (off = 0; off < len; off++)
				buf[off] = msg_byte(rank, other, k, off);
			s.hdr[0] = rank;
			s.hdr[1] = k;
			s.hdr[2] = other;
			s.hdr[3] = len;
			ret = ssemu_ep_send(ps.ep, &s);
			if (!ret) {
				k++;
				ps.last_event = wall_ms();
				continue;
			}
			if (ret != -EAGAIN)
				CFAIL("rank %u: send: %d", rank, ret);
		}
		wait_events(&ps, deadline, "while runners die");
	}
	ctl->recv[rank] = ps.rx;
	__atomic_add_fetch(&ctl->finished, 1, __ATOMIC_RELEASE);
	ps.waiting_for_parent = true;	/* others may be slow */
	while (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) < 2)
		wait_events(&ps, deadline, "waiting for the other one");
	child_leave(&ps);
	_exit(0);
}

/*
 * Processes that do nothing but run the engine are SIGKILLed one after the
 * other, each a few milliseconds after it started, so most die holding the
 * fabric lock in the middle of an event.  The lock, robust by its
 * holder's pid, is handed on; the two streams between A and B must still
 * arrive complete, in order, intact, and every send must complete
 * successfully.
 */
static void test_shm_engine_runner_killed(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	pid_t pids[2], runner;
	char err[256] = "", why[1536];
	unsigned i, bad;
	int status;

	name_for("runner");
	shm_config(&c);
	ctl_reset(2, RUNNER_MSGS);
	ctl->small_to_victim = 0;
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	pids[0] = spawn(0, child_streamer, &c);
	pids[1] = spawn(1, child_streamer, &c);
	srand(1);
	for (i = 0; i < RUNNER_KILLS; i++) {
		if (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) == 2 ||
		    ctl->msg[0][0] || ctl->msg[1][0])
			break;
		runner = spawn(2, child_runner, &c);
		usleep(500 + (unsigned)(rand() % 2500));
		kill(runner, SIGKILL);
		assert_int_equal(waitpid(runner, &status, 0), runner);
		if (ctl->msg[2][0])
			break;	/* a runner failed before it was killed */
	}
	bad = reap(pids, 2, CHILD_DEADLINE_S + 10, why, sizeof(why));
	ssemu_fabric_close(f);
	if (ctl->msg[2][0])
		fail_msg("engine runner %u: %s", i, ctl->msg[2]);
	if (bad)
		fail_msg("with %u engine runners killed: %s", i, why);
	assert_true(ctl->recv[0] == RUNNER_MSGS && ctl->recv[1] == RUNNER_MSGS);
	expect_no_segment();
}

/* ------------------------------------------------------------------ */
/* Two handles in one process                                           */
/* Send @s (@len bytes of @buf) from @from to @to, which must receive
 * exactly those bytes. */
static void send_checked(struct ssemu_ep *from, struct ssemu_ep *to,
			 struct ssemu_send *s, const uint8_t *buf, size_t len)
{
	struct ssemu_event ev[4];

	s->dest = ssemu_ep_addr(to);
	assert_int_equal(ssemu_ep_send(from, s), 0);
	assert_int_equal(ssemu_ep_wait(to, 5000), 1);
	assert_int_equal(ssemu_ep_poll(to, ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_RECV);
	assert_memory_equal(ssemu_event_data(to, &ev[0]), buf, len);
	ssemu_event_release(to, &ev[0]);
}

/* ------------------------------------------------------------------ */

static void test_shm_two_handles_one_process(void **state)
{
	struct ssemu_nic_opts no0 = { .port = 0, .rank = -1 };
	struct ssemu_nic_opts no1 = { .port = 1, .rank = -1 };
	struct ssemu_config c;
	struct ssemu_fabric *f1, *f2;
	struct ssemu_nic *n0, *n1;
	struct ssemu_ep *e0, *e1;
	struct ssemu_event ev[4];
	static uint8_t buf[10000];
	struct iovec iov = { buf, sizeof(buf) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1, .tclass = 2 };
	char err[256] = "";
	size_t off;

	name_for("two");
	shm_config(&c);
	if (shm_open_fabric(&c, &f1, err, sizeof(err)) ||
	    shm_open_fabric(&c, &f2, err, sizeof(err)))
		fail_msg("open: %s", err);
	assert_int_equal(ssemu_nic_attach(f1, &no0, &n0), 0);
	assert_int_equal(ssemu_nic_attach(f2, &no1, &n1), 0);
	/* one fabric: the port is taken through either handle */
	{
		struct ssemu_nic *x;

		assert_int_equal(ssemu_nic_attach(f2, &no0, &x), -EADDRINUSE);
	}
	assert_int_equal(ssemu_ep_open(n0, &e0), 0);
	assert_int_equal(ssemu_ep_open(n1, &e1), 0);
	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (uint8_t)(off * 31);
	send_checked(e0, e1, &s, buf, sizeof(buf));
	assert_int_equal(ssemu_ep_wait(e0, 5000), 1);
	assert_int_equal(ssemu_ep_poll(e0, ev, 4), 1);
	assert_int_equal(ev[0].type, SSEMU_EV_SEND_DONE);
	assert_int_equal(ev[0].status, 0);
	/* the same model time through both */
	assert_true(ssemu_fabric_now(f1) == ssemu_fabric_now(f2));
	ssemu_ep_close(e0);
	ssemu_ep_close(e1);
	ssemu_nic_detach(n0);
	ssemu_nic_detach(n1);
	ssemu_fabric_close(f1);
	assert_true(segment_exists());
	ssemu_fabric_close(f2);
	expect_no_segment();
}

/* Poll @ep (progressing through @f) until a RECV comes or @ms pass. */
static bool recv_through(struct ssemu_fabric *f, struct ssemu_ep *ep,
			 uint64_t ms)
{
	uint64_t deadline = wall_ms() + ms;
	struct ssemu_event ev[4];
	int i, n;

	do {
		ssemu_fabric_progress(f, 256);
		n = ssemu_ep_poll(ep, ev, 4);
		for (i = 0; i < n; i++) {
			if (ev[i].type != SSEMU_EV_RECV)
				continue;
			ssemu_event_release(ep, &ev[i]);
			return true;
		}
	} while (wall_ms() < deadline);
	return false;
}

/* A message @from -> @to (@s's payload): handle @waits, which finds it,
 * leaves it to the runner @runs, which runs it; @to gets it. */
static void left_to_runner(struct ssemu_fabric *waits,
			   struct ssemu_fabric *runs, struct ssemu_ep *from,
			   struct ssemu_ep *to, struct ssemu_send *s)
{
	s->dest = ssemu_ep_addr(to);
	assert_int_equal(ssemu_ep_send(from, s), 0);
	assert_int_equal(ssemu_fabric_progress(waits, 256), -EBUSY);
	assert_true(ssemu_fabric_progress(runs, 256) > 0);
	assert_true(recv_through(waits, to, 1000));
}

/*
 * Virtual clock: the engine stays with the handle that ran it last; another
 * one that finds new work leaves it to that runner (-EBUSY, nothing moves),
 * but only for a while: when the runner stops polling, the other takes the
 * engine over, well within a second, and is the runner from then on; at
 * once if the runner steps aside (ssemu_runner_step_aside).  An idle
 * fabric polls to 0.
 */
static void test_shm_engine_stays_with_runner(void **state)
{
	struct ssemu_nic_opts no0 = { .port = 0, .rank = -1 };
	struct ssemu_nic_opts no1 = { .port = 1, .rank = -1 };
	struct ssemu_config c;
	struct ssemu_fabric *f1, *f2;
	struct ssemu_nic *n0, *n1;
	struct ssemu_ep *e0, *e1;
	uint64_t val = 42;
	struct iovec iov = { &val, sizeof(val) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	char err[256] = "";

	name_for("runner-stays");
	shm_config(&c);
	assert_int_equal(c.clock, SSEMU_CLOCK_VIRTUAL);
	if (shm_open_fabric(&c, &f1, err, sizeof(err)) ||
	    shm_open_fabric(&c, &f2, err, sizeof(err)))
		fail_msg("open: %s", err);
	assert_int_equal(ssemu_nic_attach(f1, &no0, &n0), 0);
	assert_int_equal(ssemu_nic_attach(f2, &no1, &n1), 0);
	assert_int_equal(ssemu_ep_open(n0, &e0), 0);
	assert_int_equal(ssemu_ep_open(n1, &e1), 0);
	assert_int_equal(ssemu_fabric_progress(f1, 256), 0);
	assert_int_equal(ssemu_fabric_progress(f2, 256), 0);

	/* f1 runs the first message through: f1 is the runner */
	s.dest = ssemu_ep_addr(e1);
	assert_int_equal(ssemu_ep_send(e0, &s), 0);
	assert_true(ssemu_fabric_progress(f1, 256) > 0);
	assert_true(recv_through(f1, e1, 1000));

	/* new work seen through f2 is left to f1 ... */
	s.dest = ssemu_ep_addr(e0);
	assert_int_equal(ssemu_ep_send(e1, &s), 0);
	assert_int_equal(ssemu_fabric_progress(f2, 256), -EBUSY);
	assert_false(ssemu_fabric_idle(f2));
	/* ... until f2 gives up waiting for it */
	assert_true(recv_through(f2, e0, 1000));

	/* f2 is the runner now */
	left_to_runner(f1, f2, e0, e1, &s);

	/* a runner going off to a long copy steps aside: new work seen
	 * through f1 is run there at once, and f1 is the runner from then
	 * on */
	assert_int_equal(ssemu_ep_send(e0, &s), 0);
	assert_int_equal(ssemu_fabric_progress(f1, 256), -EBUSY);
	ssemu_runner_step_aside(f2);
	assert_true(ssemu_fabric_progress(f1, 256) > 0);
	assert_true(recv_through(f1, e1, 1000));
	left_to_runner(f2, f1, e1, e0, &s);
	/* one that did not run the engine last has nothing to step aside
	 * from */
	ssemu_runner_step_aside(f2);
	left_to_runner(f2, f1, e1, e0, &s);

	ssemu_ep_close(e0);
	ssemu_ep_close(e1);
	ssemu_nic_detach(n0);
	ssemu_nic_detach(n1);
	ssemu_fabric_close(f1);
	ssemu_fabric_close(f2);
	expect_no_segment();
}

/* A child that only attaches to the fabric: it holds a process slot
 * until the parent closes @fd's other end. */
static void crowd_child(int rfd, int wfd, const struct ssemu_config *c)
{
	struct ssemu_fabric *f;
	char err[256], b = 1;

	if (shm_open_fabric(c, &f, err, sizeof(err)))
		_exit(3);
	if (write(wfd, &b, 1) != 1)
		_exit(4);
	while (read(rfd, &b, 1) > 0)
		;
	ssemu_fabric_close(f);
	_exit(0);
}

/*
 * A crowded fabric (more processes attached than CPUs online): nobody
 * defers to the runner.  The same sequence as above, with one child per
 * CPU attached besides: the work seen through the handle that did not run
 * the engine last is run at once.
 */
static void test_shm_crowded_runs_at_once(void **state)
{
	struct ssemu_nic_opts no0 = { .port = 0, .rank = -1 };
	struct ssemu_nic_opts no1 = { .port = 1, .rank = -1 };
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	struct ssemu_config c;
	struct ssemu_fabric *f1, *f2;
	struct ssemu_nic *n0, *n1;
	struct ssemu_ep *e0, *e1;
	uint64_t val = 42;
	struct iovec iov = { &val, sizeof(val) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	int go[2], ready[2], status;
	pid_t pids[32];
	char err[256] = "", b;
	long i, n;

	(void)state;
	if (online < 1 || online > 30)
		skip();	/* (one child per CPU: keep it small) */
	n = online;
	name_for("crowded");
	shm_config(&c);
	if (shm_open_fabric(&c, &f1, err, sizeof(err)) ||
	    shm_open_fabric(&c, &f2, err, sizeof(err)))
		fail_msg("open: %s", err);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	for (i = 0; i < n; i++) {
		fflush(NULL);
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (!pids[i]) {
			close(go[1]);
			close(ready[0]);
			alarm(CHILD_DEADLINE_S);	/* last resort */
			crowd_child(go[0], ready[1], &c);
		}
	}
	close(go[0]);
	close(ready[1]);
	for (i = 0; i < n; i++)
		assert_int_equal(read(ready[0], &b, 1), 1);
	close(ready[0]);

	assert_int_equal(ssemu_nic_attach(f1, &no0, &n0), 0);
	assert_int_equal(ssemu_nic_attach(f2, &no1, &n1), 0);
	assert_int_equal(ssemu_ep_open(n0, &e0), 0);
	assert_int_equal(ssemu_ep_open(n1, &e1), 0);
	/* f1 runs the first message through: f1 is the runner */
	s.dest = ssemu_ep_addr(e1);
	assert_int_equal(ssemu_ep_send(e0, &s), 0);
	assert_true(ssemu_fabric_progress(f1, 256) > 0);
	assert_true(recv_through(f1, e1, 1000));
	/* new work seen through f2 runs at once */
	s.dest = ssemu_ep_addr(e0);
	assert_int_equal(ssemu_ep_send(e1, &s), 0);
	assert_true(ssemu_fabric_progress(f2, 256) > 0);
	assert_true(recv_through(f2, e0, 1000));

	close(go[1]);
	for (i = 0; i < n; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	ssemu_ep_close(e0);
	ssemu_ep_close(e1);
	ssemu_nic_detach(n0);
	ssemu_nic_detach(n1);
	ssemu_fabric_close(f1);
	ssemu_fabric_close(f2);
	expect_no_segment();
}

/* ------------------------------------------------------------------ */
/* Corrupt, mismatched and foreign segments                             */
/* ------------------------------------------------------------------ */

static struct ssemu_region *map_header(void)
{
	char path[80];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "/%s", shm_name);
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	p = mmap(NULL, sizeof(struct ssemu_region), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	return p;
}

static void expect_open_error(const struct ssemu_config *c, int want,
			      const char *what)
{
	struct ssemu_fabric *g = NULL;
	char err[256];
	int ret;

	memset(err, 0, sizeof(err));
	ret = shm_open_fabric(c, &g, err, sizeof(err));
	if (ret != want) {
		if (!ret)
			ssemu_fabric_close(g);
		fail_msg("open returned %d (%s), want %d", ret, err, want);
	}
	if (what && !strstr(err, what))
		fail_msg("message '%s' lacks '%s'", err, what);
}

static void test_shm_corrupt_header(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f, *g;
	struct ssemu_region *r, saved;
	char err[256] = "";

	name_for("corrupt");
	shm_config(&c);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	r = map_header();
	memcpy(&saved, r, sizeof(saved));

	r->magic = 0x6761726261676521ULL;	/* "garbage!" */
	expect_open_error(&c, -EPROTO, "magic");
	r->magic = saved.magic;

	r->version = 0xdeadbeef;
	expect_open_error(&c, -EPROTO, "version");
	r->version = saved.version;

	r->hdr_size = saved.hdr_size + 8;
	expect_open_error(&c, -EPROTO, "version");
	r->hdr_size = saved.hdr_size;

	r->total_size = saved.total_size + 4096;
	expect_open_error(&c, -EPROTO, "bytes");
	r->total_size = saved.total_size;

	r->config_hash ^= 1;
	expect_open_error(&c, -EPROTO, "corrupt");
	r->config_hash = saved.config_hash;

	/* a bit flipped in the stored configuration shows in its hash */
	r->config.mtu ^= 0x100;
	expect_open_error(&c, -EPROTO, "corrupt");
	r->config.mtu = saved.config.mtu;

	/* a switch model's size and its ports' place every port: each is
	 * the configuration's, or the segment is refused */
	r->switch_bytes = saved.switch_bytes + 64;
	expect_open_error(&c, -EPROTO, "switch_bytes");
	r->switch_bytes = saved.switch_bytes;
	r->port_bytes = saved.port_bytes * 2;
	expect_open_error(&c, -EPROTO, "port_bytes");
	r->port_bytes = saved.port_bytes;

	/* repaired: opens again, and the fabric still works */
	if (shm_open_fabric(&c, &g, err, sizeof(err)))
		fail_msg("reopen after repair: %s", err);
	ssemu_fabric_close(g);
	munmap(r, sizeof(*r));
	ssemu_fabric_close(f);
	expect_no_segment();
}

/*
 * An engine whose counts are impossible (a write into the segment) is
 * refused at attach, as it is read under the fabric lock (never beside a
 * run, whose fields hold only between its steps); repaired, it opens.
 */
static void test_shm_corrupt_engine_refused(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f, *g;
	struct ssemu_engine *e;
	char err[256] = "";
	uint32_t saved;

	name_for("engine");
	shm_config(&c);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	e = ssemu_r_engine(f->r);
	saved = e->nnear;
	e->nnear = e->cap + 1;
	expect_open_error(&c, -EPROTO, "engine's geometry");
	e->nnear = saved;
	if (shm_open_fabric(&c, &g, err, sizeof(err)))
		fail_msg("reopen after repair: %s", err);
	ssemu_fabric_close(g);
	ssemu_fabric_close(f);
	expect_no_segment();
}

/* A segment that never became a fabric (zero-filled, as a creator that
 * died while building it leaves it) is refused, not waited on forever. */
static void test_shm_never_initialised(void **state)
{
	struct ssemu_config c;
	char path[80];
	uint64_t t0;
	int fd;

	name_for("zero");
	shm_config(&c);
	snprintf(path, sizeof(path), "/%s", shm_name);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	close(fd);
	t0 = wall_ms();
	expect_open_error(&c, -EPROTO, NULL);
	assert_true(wall_ms() - t0 < 10000);
	/* too small for a header: the same */
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 16), 0);
	close(fd);
	expect_open_error(&c, -EPROTO, NULL);
	assert_int_equal(shm_unlink(path), 0);
	expect_no_segment();
}

static void test_shm_config_mismatch(void **state)
{
	struct ssemu_config c, d;
	struct ssemu_fabric *f, *g;
	char err[256] = "";

	name_for("mismatch");
	shm_config(&c);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	/* another preset */
	assert_int_equal(ssemu_config_preset("2switch", &d), 0);
	d.max_nics = c.max_nics;
	d.max_switches = 2;
	expect_open_error(&d, -EEXIST, "'switch'");
	expect_open_error(&d, -EEXIST, "'2switch'");
	/* same preset name, another topology */
	d = c;
	d.topo.endpoints_per_switch = 8;
	expect_open_error(&d, -EEXIST, "topology");
	/* another clock */
	d = c;
	d.clock = SSEMU_CLOCK_REALTIME;
	expect_open_error(&d, -EEXIST, "clock");
	expect_open_error(&d, -EEXIST, "realtime");
	/* the same configuration attaches */
	d = c;
	if (shm_open_fabric(&d, &g, err, sizeof(err)))
		fail_msg("same configuration refused: %s", err);
	ssemu_fabric_close(g);
	/* nothing was created or removed by the refusals */
	assert_true(segment_exists());
	ssemu_fabric_close(f);
	expect_no_segment();
}

/*
 * docs/fabric-config.md: a process asking for another configuration "gets
 * an error naming the difference".  Fields other than preset, clock and
 * topology must be named too.
 */
static void test_shm_config_mismatch_names_field(void **state)
{
	struct ssemu_config c, d;
	struct ssemu_fabric *f;
	char err[256] = "";

	name_for("mismatch2");
	shm_config(&c);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	d = c;
	d.mtu = 4096;
	expect_open_error(&d, -EEXIST, NULL);
	memset(err, 0, sizeof(err));
	{
		struct ssemu_fabric *g;
		int ret = shm_open_fabric(&d, &g, err, sizeof(err));

		assert_int_equal(ret, -EEXIST);
	}
	ssemu_fabric_close(f);
	expect_no_segment();
	if (!strstr(err, "mtu"))
		fail_msg("a fabric with mtu 2048, asked for 4096: '%s' does "
			 "not name the mtu", err);
}

/* ------------------------------------------------------------------ */
/* Lifetime                                                             */
/* ------------------------------------------------------------------ */

static void child_open_close(uint32_t rank, const struct ssemu_config *c)
{
	struct peer_state ps;

	child_attach(&ps, rank, c);
	child_leave(&ps);
	_exit(0);
}

static void child_open_die(uint32_t rank, const struct ssemu_config *c)
{
	struct peer_state ps;

	child_attach(&ps, rank, c);
	_exit(0);	/* no close */
}

static void child_open_hold(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	struct peer_state ps;

	child_attach(&ps, rank, c);
	__atomic_store_n(&ctl->ready, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->finished, 1, NULL, deadline, "the parent");
	child_leave(&ps);
	_exit(0);
}

static void test_shm_last_close_removes_segment(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	pid_t pids[3];
	char err[256] = "", why[1536];
	unsigned i;
	int status;

	name_for("last");
	shm_config(&c);
	ctl_reset(3, 0);
	/* children come and go; the parent keeps it */
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	for (i = 0; i < 3; i++)
		pids[i] = spawn(i, child_open_close, &c);
	if (reap(pids, 3, 20, why, sizeof(why)))
		fail_msg("%s", why);
	assert_true(segment_exists());
	ssemu_fabric_close(f);
	expect_no_segment();

	/* the parent leaves first; the child is the last one out */
	ctl_reset(1, 0);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	pids[0] = spawn(0, child_open_hold, &c);
	while (!__atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE)) {
		if (waitpid(pids[0], &status, WNOHANG) == pids[0])
			fail_msg("child died: %s", ctl->msg[0]);
		usleep(500);
	}
	ssemu_fabric_close(f);
	assert_true(segment_exists());
	__atomic_store_n(&ctl->finished, 1, __ATOMIC_RELEASE);
	if (reap(pids, 1, 20, why, sizeof(why)))
		fail_msg("%s", why);
	expect_no_segment();

	/* a process that exits without closing does not keep it alive */
	ctl_reset(1, 0);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	pids[0] = spawn(0, child_open_die, &c);
	assert_int_equal(waitpid(pids[0], &status, 0), pids[0]);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ssemu_fabric_close(f);
	expect_no_segment();
}

static void test_shm_foreign_owner_refused(void **state)
{
	struct ssemu_config c;
	char path[80];
	int fd;

	if (geteuid() != 0)
		skip();	/* cannot give a segment away without root */
	name_for("foreign");
	shm_config(&c);
	snprintf(path, sizeof(path), "/%s", shm_name);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);
	if (fchown(fd, 65534, 65534)) {
		close(fd);
		shm_unlink(path);
		print_message("fchown to uid 65534 failed (%s): skipped\n",
			      strerror(errno));
		skip();
	}
	close(fd);
	expect_open_error(&c, -EACCES, "uid 65534");
	/* refused before anything was touched or removed */
	assert_true(segment_exists());
	assert_int_equal(shm_unlink(path), 0);
	expect_no_segment();
}

static void test_shm_mode_0644_refused(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	char path[80], err[256] = "";
	int fd;

	name_for("mode");
	shm_config(&c);
	snprintf(path, sizeof(path), "/%s", shm_name);
	/* a real fabric, made group/world readable behind its back */
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	fd = shm_open(path, O_RDWR, 0);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	expect_open_error(&c, -EACCES, "644");
	assert_int_equal(fchmod(fd, 0660), 0);
	expect_open_error(&c, -EACCES, "660");
	assert_int_equal(fchmod(fd, 0600), 0);
	close(fd);
	/* back to 0600: attaches again */
	{
		struct ssemu_fabric *g;

		if (shm_open_fabric(&c, &g, err, sizeof(err)))
			fail_msg("reopen at 0600: %s", err);
		ssemu_fabric_close(g);
	}
	ssemu_fabric_close(f);
	expect_no_segment();
}

/* ------------------------------------------------------------------ */
/* Dead processes free what they held                                   */
/* ------------------------------------------------------------------ */

/*
 * A child of a job (ctl->job, ctl->policy, ctl->nprocs ranks; policy
 * first-free when ctl->job is 0): attaches where placement puts it, sends
 * one message to the next rank and checks the one from the previous rank,
 * then dies without detaching: exits, or with ctl->wait_kill waits to be
 * killed.
 */
static void job_payload(uint8_t *buf, size_t len, uint32_t job,
			uint32_t rank)
{
	size_t off;

	for (off = 0; off < len; off++)
		buf[off] = (uint8_t)(job * 29 + rank * 13 + off * 7 + 3);
}

#define JOB_MSG 3000

static void child_job_rank(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	uint32_t n = ctl->nprocs, job = ctl->job;
	struct ssemu_nic_opts no = {
		.port = SSEMU_PORT_ANY,
		.job = job,
		.rank = job ? (int32_t)rank : -1,
		.nranks = job ? n : 0,
		.policy = job ? ctl->policy : SSEMU_PLACE_FIRST_FREE,
	};
	static uint8_t buf[JOB_MSG], want[JOB_MSG];
	struct iovec iov = { buf, sizeof(buf) };
	struct ssemu_send s = { .tclass = 3, .iov = &iov, .iov_count = 1 };
	struct ssemu_event ev[8];
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	unsigned got = 0, done = 0;
	char err[160] = "";
	int ret, k, i;

	ret = shm_open_fabric(c, &f, err, sizeof(err));
	if (ret)
		CFAIL("rank %u: open: %d %s", rank, ret, err);
	/* no progress call first: the attach itself frees what the dead
	 * held */
	ret = ssemu_nic_attach(f, &no, &nic);
	if (ret)
		CFAIL("job %u rank %u: attach: %s", job, rank, strerror(-ret));
	ret = ssemu_ep_open(nic, &ep);
	if (ret)
		CFAIL("job %u rank %u: ep_open: %s", job, rank,
		      strerror(-ret));
	ctl->port[rank] = SSEMU_ADDR_PORT(ssemu_ep_addr(ep));
	__atomic_add_fetch(&ctl->ready, 1, __ATOMIC_RELEASE);
	if (n > 1) {
		ctl_wait_for(&ctl->ready, n, f, deadline,
			     "the others to attach");
		job_payload(buf, sizeof(buf), job, rank);
		job_payload(want, sizeof(want), job, (rank + n - 1) % n);
		s.dest = SSEMU_ADDR(ctl->port[(rank + 1) % n], 0);
		s.hdr[0] = rank;
		while ((ret = ssemu_ep_send(ep, &s)) == -EAGAIN)
			ssemu_ep_wait(ep, 5);
		if (ret)
			CFAIL("job %u rank %u: send: %d", job, rank, ret);
		while (got < 1 || done < 1) {
			ssemu_ep_wait(ep, 5);
			while ((k = ssemu_ep_poll(ep, ev, 8)) > 0) {
				for (i = 0; i < k; i++) {
					const uint8_t *p;

					if (ev[i].type == SSEMU_EV_SEND_DONE) {
						if (ev[i].status)
							CFAIL("rank %u: send "
							      "failed: %d",
							      rank,
							      ev[i].status);
						done++;
						continue;
					}
					p = ssemu_event_data(ep, &ev[i]);
					if (ev[i].type != SSEMU_EV_RECV ||
					    ev[i].len != JOB_MSG || !p ||
					    memcmp(p, want, JOB_MSG) ||
					    ev[i].hdr[0] != (rank + n - 1) % n)
						CFAIL("job %u rank %u: wrong "
						      "message (type %u, %llu "
						      "bytes)", job, rank,
						      ev[i].type,
						      (unsigned long long)
							      ev[i].len);
					ssemu_event_release(ep, &ev[i]);
					got++;
				}
			}
			if (wall_ms() > deadline)
				CFAIL("job %u rank %u: %u received, %u sent",
				      job, rank, got, done);
		}
	}
	/* everyone's traffic is acknowledged before anyone dies */
	__atomic_add_fetch(&ctl->finished, 1, __ATOMIC_RELEASE);
	ctl_wait_for(&ctl->finished, n, f, deadline, "the others to finish");
	if (!ctl->wait_kill)
		_exit(0);	/* without detaching: the way many ranks end */
	for (;;) {
		usleep(1000);
		if (wall_ms() > deadline)
			CFAIL("rank %u: never killed", rank);
	}
}

/* Wait until every child of @pids, job number @j of the test, has
 * finished its part (or failed). */
static void wait_job_finished(pid_t *pids, unsigned n, unsigned j)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	char why[1536];

	while (__atomic_load_n(&ctl->finished, __ATOMIC_ACQUIRE) < n) {
		for (unsigned i = 0; i < n; i++) {
			if (ctl->msg[i][0] || wall_ms() > deadline) {
				reap(pids, n, 1, why, sizeof(why));
				fail_msg("job %u of the test: %s", j,
					 why[0] ? why : "timed out");
			}
		}
		usleep(500);
	}
}

/* Wait until the children have exited, leaving them zombies. */
static void wait_exited_unreaped(pid_t *pids, unsigned n)
{
	siginfo_t si;

	for (unsigned i = 0; i < n; i++) {
		memset(&si, 0, sizeof(si));
		assert_int_equal(waitid(P_PID, (id_t)pids[i], &si,
					WEXITED | WNOWAIT), 0);
		if (si.si_code != CLD_EXITED || si.si_status)
			fail_msg("job %u rank %u: exit %d (code %d): %s",
				 ctl->job, i, si.si_status, si.si_code,
				 ctl->msg[i]);
	}
}

/*
 * 16 processes attach with first-free placement, take every port of a
 * one-switch fabric and are killed with SIGKILL: a newcomer attaches at
 * once (no progress call in between), and so do 16 NICs after it.
 */
static void test_shm_dead_free_first_free_ports(void **state)
{
	struct ssemu_nic *nics[MAX_PROCS + 1];
	struct ssemu_config c;
	struct ssemu_fabric *f;
	pid_t pids[MAX_PROCS];
	uint32_t seen = 0;
	char err[256] = "", why[1536];
	unsigned i;
	int status, ret;

	name_for("dead-ff");
	shm_config(&c);
	assert_int_equal(ssemu_config_nports(&c), MAX_PROCS);
	ctl_reset(MAX_PROCS, 0);
	ctl->job = 0;
	ctl->wait_kill = 1;
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	for (i = 0; i < MAX_PROCS; i++)
		pids[i] = spawn(i, child_job_rank, &c);
	wait_job_finished(pids, MAX_PROCS, 0);
	for (i = 0; i < MAX_PROCS; i++)
		seen |= 1u << ctl->port[i];
	assert_int_equal(seen, (1u << MAX_PROCS) - 1);
	for (i = 0; i < MAX_PROCS; i++) {
		kill(pids[i], SIGKILL);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFSIGNALED(status));
	}

	/* a new process attaches and runs traffic with a second one */
	ctl_reset(2, 0);
	ctl->job = 0;
	pids[0] = spawn(0, child_job_rank, &c);
	pids[1] = spawn(1, child_job_rank, &c);
	if (reap(pids, 2, CHILD_DEADLINE_S + 10, why, sizeof(why)))
		fail_msg("after 16 SIGKILLs: %s", why);

	/* every port is free again (those two exited without detaching
	 * too), and the fabric still says no to a 17th NIC */
	for (i = 0; i < MAX_PROCS; i++) {
		ret = ssemu_nic_attach(f, NULL, &nics[i]);
		if (ret)
			fail_msg("NIC %u after the deaths: %s", i,
				 strerror(-ret));
	}
	assert_int_equal(ssemu_nic_attach(f, NULL, &nics[MAX_PROCS]),
			 -ENOSPC);
	for (i = 0; i < MAX_PROCS; i++)
		ssemu_nic_detach(nics[i]);
	ssemu_fabric_close(f);
	expect_no_segment();
}

/*
 * Jobs the way an Open MPI user runs them, one after the other, 48 ranks
 * over time on 16 ports: ranks that exit without closing (left as zombies
 * until the end), ranks killed by the launcher, first-free placement and
 * then linear placement by job and rank.
 */
static void test_shm_dead_sequential_jobs(void **state)
{
	enum { JOBS = 8, RANKS = 6 };
	pid_t pids[RANKS], zombies[JOBS * RANKS];
	struct ssemu_config c;
	struct ssemu_fabric *f;
	unsigned j, i, nz = 0;
	char err[256] = "";
	int status;

	name_for("dead-seq");
	shm_config(&c);
	assert_true(JOBS * RANKS > ssemu_config_nports(&c));
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	for (j = 0; j < JOBS; j++) {
		ctl_reset(RANKS, 0);
		/* the first half first-free, the second half linear */
		ctl->job = j < JOBS / 2 ? 0 : 100 + j;
		ctl->policy = SSEMU_PLACE_LINEAR;
		ctl->wait_kill = j % 2;	/* odd jobs: SIGKILLed */
		for (i = 0; i < RANKS; i++)
			pids[i] = spawn(i, child_job_rank, &c);
		wait_job_finished(pids, RANKS, j);
		if (ctl->wait_kill) {
			for (i = 0; i < RANKS; i++) {
				kill(pids[i], SIGKILL);
				assert_int_equal(waitpid(pids[i], &status, 0),
						 pids[i]);
			}
		} else {
			wait_exited_unreaped(pids, RANKS);
			for (i = 0; i < RANKS; i++)
				zombies[nz++] = pids[i];
		}
	}
	for (i = 0; i < nz; i++)
		assert_int_equal(waitpid(zombies[i], &status, 0), zombies[i]);
	ssemu_fabric_close(f);
	expect_no_segment();
}

/* Attach first-free, open ctl->per_peer endpoints, wait to be killed. */
static void child_many_eps(uint32_t rank, const struct ssemu_config *c)
{
	uint64_t deadline = wall_ms() + CHILD_DEADLINE_S * 1000ULL;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	char err[160] = "";
	uint32_t i;
	int ret;

	ret = shm_open_fabric(c, &f, err, sizeof(err));
	if (ret)
		CFAIL("rank %u: open: %d %s", rank, ret, err);
	ret = ssemu_nic_attach(f, NULL, &nic);
	if (ret)
		CFAIL("rank %u: attach: %s", rank, strerror(-ret));
	for (i = 0; i < ctl->per_peer; i++) {
		ret = ssemu_ep_open(nic, &ep);
		if (ret)
			CFAIL("rank %u: endpoint %u: %s", rank, i,
			      strerror(-ret));
	}
	__atomic_add_fetch(&ctl->finished, 1, __ATOMIC_RELEASE);
	for (;;) {
		usleep(1000);
		if (wall_ms() > deadline)
			CFAIL("rank %u: never killed", rank);
	}
}

/*
 * The fabric's endpoint slots are a pool its NICs share: two processes
 * take all 8 and are killed; a newcomer's NIC opens 4 endpoints at once
 * (the slots come back when the open finds none free).
 */
static void test_shm_dead_free_endpoint_slots(void **state)
{
	struct ssemu_config c;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep[4];
	pid_t pids[2];
	char err[256] = "";
	unsigned i;
	int status;

	name_for("dead-eps");
	shm_config(&c);
	c.eps_per_nic = 4;
	c.max_eps = 8;
	ctl_reset(2, 4);
	if (shm_open_fabric(&c, &f, err, sizeof(err)))
		fail_msg("open: %s", err);
	for (i = 0; i < 2; i++)
		pids[i] = spawn(i, child_many_eps, &c);
	wait_job_finished(pids, 2, 0);
	assert_int_equal(ssemu_nic_attach(f, NULL, &nic), 0);
	assert_int_equal(ssemu_ep_open(nic, &ep[0]), -ENOSPC);
	for (i = 0; i < 2; i++) {
		kill(pids[i], SIGKILL);
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
	}
	for (i = 0; i < 4; i++)
		if (ssemu_ep_open(nic, &ep[i]))
			fail_msg("endpoint %u after the deaths", i);
	for (i = 0; i < 4; i++)
		ssemu_ep_close(ep[i]);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	expect_no_segment();
}

/*
 * SSEMU_SHM_DIR puts the segment in that directory instead of /dev/shm:
 * two handles share it there (the second attaches and advises its own
 * mapping), a message crosses, the last close removes the file, and
 * nothing appears in /dev/shm.  A directory on a disk works with a
 * warning that says so.  A relative, too long or missing directory, and a
 * name that would be a path, are refused with a reason; unset or empty, it
 * is /dev/shm.
 */
static char shm_dir[64];
static char disk_dir[4096];
static char logged[512];

static void log_capture(enum ssemu_log_level lvl, const char *msg)
{
	if (lvl == SSEMU_LOG_WARN)
		snprintf(logged, sizeof(logged), "%s", msg);
}

/* A fabric in a directory of the build tree, where that is not a tmpfs. */
static void disk_dir_check(const struct ssemu_config *c)
{
	struct ssemu_fabric *f;
	struct statfs sf;
	char err[256] = "";

	assert_non_null(getcwd(disk_dir, sizeof(disk_dir) - 32));
	strcat(disk_dir, "/ssemu-ut-disk-XXXXXX");
	assert_non_null(mkdtemp(disk_dir));
	assert_int_equal(statfs(disk_dir, &sf), 0);
	if (sf.f_type == TMPFS_MAGIC) {
		print_message("(the build tree is a tmpfs: no disk directory "
			      "to try)\n");
	} else {
		setenv("SSEMU_SHM_DIR", disk_dir, 1);
		logged[0] = 0;
		ssemu_log_set_sink(log_capture);
		if (shm_open_fabric(c, &f, err, sizeof(err)))
			fail_msg("open in %s: %s", disk_dir, err);
		ssemu_log_set_sink(NULL);
		assert_non_null(strstr(logged, "is not on a tmpfs"));
		assert_non_null(strstr(logged, disk_dir));
		ssemu_fabric_close(f);
		setenv("SSEMU_SHM_DIR", shm_dir, 1);
	}
	assert_int_equal(rmdir(disk_dir), 0);
	disk_dir[0] = 0;
}

static void test_shm_dir(void **state)
{
	struct ssemu_nic_opts no0 = { .port = 0, .rank = -1 };
	struct ssemu_nic_opts no1 = { .port = 1, .rank = -1 };
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_config c;
	struct ssemu_fabric *f1, *f2, *x;
	struct ssemu_nic *n0, *n1;
	struct ssemu_ep *e0, *e1;
	static uint8_t buf[20000];
	struct iovec iov = { buf, sizeof(buf) };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	char err[256] = "", path[160], longdir[SSEMU_SHM_DIR_MAX + 2];
	struct stat st;
	size_t off;

	unsetenv("SSEMU_SHM_DIR");
	assert_string_equal(ssemu_shm_dir(err, sizeof(err)), "/dev/shm");
	setenv("SSEMU_SHM_DIR", "", 1);
	assert_string_equal(ssemu_shm_dir(err, sizeof(err)), "/dev/shm");

	snprintf(shm_dir, sizeof(shm_dir), "/dev/shm/ssemu-ut-%d-XXXXXX",
		 (int)getpid());
	assert_non_null(mkdtemp(shm_dir));
	setenv("SSEMU_SHM_DIR", shm_dir, 1);
	assert_string_equal(ssemu_shm_dir(err, sizeof(err)), shm_dir);
	name_for("dir");
	snprintf(path, sizeof(path), "%s/%s", shm_dir, shm_name);
	shm_config(&c);
	if (shm_open_fabric(&c, &f1, err, sizeof(err)) ||
	    shm_open_fabric(&c, &f2, err, sizeof(err)))
		fail_msg("open: %s", err);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
	assert_false(segment_exists());
	assert_int_equal(ssemu_nic_attach(f1, &no0, &n0), 0);
	assert_int_equal(ssemu_nic_attach(f2, &no1, &n1), 0);
	assert_int_equal(ssemu_ep_open(n0, &e0), 0);
	assert_int_equal(ssemu_ep_open(n1, &e1), 0);
	for (off = 0; off < sizeof(buf); off++)
		buf[off] = (uint8_t)(off * 7 + 3);
	send_checked(e0, e1, &s, buf, sizeof(buf));
	ssemu_ep_close(e0);
	ssemu_ep_close(e1);
	ssemu_nic_detach(n0);
	ssemu_nic_detach(n1);
	ssemu_fabric_close(f1);
	assert_int_equal(stat(path, &st), 0);
	ssemu_fabric_close(f2);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(errno, ENOENT);
	/* an attach-only open names the directory it looked in */
	o.name = shm_name;
	o.flags = SSEMU_OPEN_EXISTING;
	assert_int_equal(ssemu_fabric_open(&o, &x, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, shm_dir));
	o.flags = 0;
	/* a name is never a path */
	o.name = "..";
	assert_int_equal(ssemu_fabric_open(&o, &x, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad fabric name"));
	o.name = shm_name;
	assert_int_equal(rmdir(shm_dir), 0);

	/* a directory on a disk works, and says that it is one */
	disk_dir_check(&c);

	/* a directory that is not there */
	assert_int_equal(ssemu_fabric_open(&o, &x, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, shm_dir));
	/* relative, or too long: refused before anything is made */
	setenv("SSEMU_SHM_DIR", "dev/shm", 1);
	assert_null(ssemu_shm_dir(err, sizeof(err)));
	assert_int_equal(ssemu_fabric_open(&o, &x, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "SSEMU_SHM_DIR 'dev/shm'"));
	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = 0;
	setenv("SSEMU_SHM_DIR", longdir, 1);
	assert_int_equal(ssemu_fabric_open(&o, &x, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 190 characters"));
	unsetenv("SSEMU_SHM_DIR");
	expect_no_segment();
}

static int teardown_dir(void **state)
{
	char path[160];

	unsetenv("SSEMU_SHM_DIR");
	ssemu_log_set_sink(NULL);
	if (shm_dir[0]) {
		snprintf(path, sizeof(path), "%s/%s", shm_dir, shm_name);
		unlink(path);
		rmdir(shm_dir);
	}
	if (disk_dir[0]) {
		char p2[sizeof(disk_dir) + 80];

		snprintf(p2, sizeof(p2), "%s/%s", disk_dir, shm_name);
		unlink(p2);
		rmdir(disk_dir);
	}
	return teardown_segment(state);
}

#define SHM_TEST(f) cmocka_unit_test_teardown(f, teardown_segment)

int main(void)
{
	const struct CMUnitTest tests[] = {
		SHM_TEST(test_shm_exchange_2_processes),
		SHM_TEST(test_shm_exchange_4_processes),
		SHM_TEST(test_shm_exchange_16_processes),
		SHM_TEST(test_shm_sigkill_mid_transfer),
		SHM_TEST(test_shm_sigkill_small_messages),
		SHM_TEST(test_shm_engine_runner_killed),
		SHM_TEST(test_shm_two_handles_one_process),
		SHM_TEST(test_shm_engine_stays_with_runner),
		SHM_TEST(test_shm_crowded_runs_at_once),
		SHM_TEST(test_shm_corrupt_header),
		SHM_TEST(test_shm_corrupt_engine_refused),
		SHM_TEST(test_shm_never_initialised),
		SHM_TEST(test_shm_config_mismatch),
		SHM_TEST(test_shm_config_mismatch_names_field),
		SHM_TEST(test_shm_last_close_removes_segment),
		SHM_TEST(test_shm_foreign_owner_refused),
		SHM_TEST(test_shm_mode_0644_refused),
		SHM_TEST(test_shm_dead_free_first_free_ports),
		SHM_TEST(test_shm_dead_sequential_jobs),
		SHM_TEST(test_shm_dead_free_endpoint_slots),
		cmocka_unit_test_teardown(test_shm_dir, teardown_dir),
	};

	return cmocka_run_group_tests_name("shm", tests, NULL, NULL);
}
