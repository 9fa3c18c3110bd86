/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA, atomics and rendezvous between two users on one fabric, as root: a
 * shared fabric with a share group and one service both uids hold.  A
 * child of uid A registers memory; a child of uid B does fi_write, fi_read
 * and fi_fetch_atomic/fi_atomic on it and a rendezvous-size message each
 * way, with the data checked.  Neither may touch the other's memory by
 * cross-memory attach, so whichever runs the engine cannot do what the
 * other's memory needs: the memory's owner does it (emu/ssemu_xuid.c).
 *
 * Phase 1: B runs the engine while A is blocked on a pipe (it polls
 * nothing): B's operations must not complete (they wait for A, they do not
 * fail), the fabric counts them as waiting, the virtual clock stands still
 * meanwhile, and they complete once A polls again.  Phase 2: B posts and blocks on
 * a pipe, A runs the engine.
 *
 * Exits 77 when not run as root.
 */
#include <grp.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slingshot_emu/ssemu.h>

#include "sse_test.h"

#define UID_A 65534u		/* nobody */
#define UID_B 64998u
#define GID_SHARE 64999u
#define LEN_RMA 65536
#define LEN_RNDV (1u << 20)	/* above FI_SLINGSHOT_EMU_EAGER_MAX */
#define X0 100u
#define ADD 7u
#define TMO SSE_TEST_TIMEOUT_MS

static char cfg_path[64];
static struct ssemu_fabric *fab;	/* the parent's handle */
static int bp[2], pb[2];	/* B to the parent and back */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What A registers. */
struct tgt {
	char w[LEN_RMA];	/* B writes it in phase 1 */
	char r[LEN_RMA];	/* B reads it */
	char w2[LEN_RMA];	/* B writes it in phase 2 */
	uint64_t x;		/* B adds to it */
};

struct offer {
	struct fi_sse_addr addr;
	uint64_t key;
	uint64_t base;		/* the address B names tgt by */
};

/* A child's step that failed: its exit status. */
#define CHECK(cond, code)						\
	do {								\
		if (!(cond)) {						\
			printf("%s:%d: %s\n", __func__, __LINE__, #cond); \
			fflush(stdout);					\
			_exit(code);					\
		}							\
	} while (0)

static void become(uid_t uid)
{
	gid_t g = GID_SHARE;

	CHECK(!setgroups(1, &g) && !setgid(GID_SHARE) && !setuid(uid), 90);
	setenv("SLINGSHOT_VNIS", "10", 1);
	setenv("SLINGSHOT_SVC_IDS", "2", 1);
	setenv("SLINGSHOT_DEVICES", "sse0", 1);
}

static void open_res(struct sse_res *r, struct fi_info **hints)
{
	struct sse_res_opts o = { 0 };

	*hints = sse_test_hints(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC);
	(*hints)->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	o.hints = *hints;
	sse_res_open(r, 1, &o);
}

static void put(int fd, const void *p, size_t n)
{
	CHECK(write(fd, p, n) == (ssize_t)n, 91);
}

static void get(int fd, void *p, size_t n)
{
	CHECK(read(fd, p, n) == (ssize_t)n, 92);
}

/* The next completion of @r's CQ, which must not be an error. */
static void comp(struct sse_res *r)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	int ret = sse_cq_wait(r, r->cq[0], &e, NULL, TMO);

	if (ret == -FI_EAVAIL) {
		fi_cq_readerr(r->cq[0], &err, 0);
		printf("%d: completion error %s\n", (int)getpid(),
		       fi_strerror(err.err));
	}
	CHECK(ret == 1, 93);
}

/* The target, uid A: its memory, its receives and a rendezvous send. */
static int side_a(int rfd, int wfd)
{
	struct fi_info *hints;
	struct sse_res r;
	struct offer off;
	struct fi_sse_addr peer;
	struct fid_mr *mr;
	struct tgt *t;
	fi_addr_t pa;
	char *rbuf, *sbuf, c;
	uint64_t end;
	size_t len = sizeof(off.addr);

	become(UID_A);
	open_res(&r, &hints);
	t = calloc(1, sizeof(*t));
	rbuf = malloc(LEN_RNDV);
	sbuf = malloc(LEN_RNDV);
	CHECK(t && rbuf && sbuf, 10);
	sse_fill(t->r, LEN_RMA, 1);
	t->x = X0;
	sse_fill(sbuf, LEN_RNDV, 3);
	CHECK(!fi_mr_reg(r.domain, t, sizeof(*t),
			 FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			 NULL), 11);
	CHECK(!fi_getname(&r.ep[0]->fid, &off.addr, &len), 12);
	off.key = fi_mr_key(mr);
	off.base = (uint64_t)(uintptr_t)t;
	put(wfd, &off, sizeof(off));
	get(rfd, &peer, sizeof(peer));
	CHECK(fi_av_insert(r.av, &peer, 1, &pa, 0, NULL) == 1, 13);
	CHECK(!fi_recv(r.ep[0], rbuf, LEN_RNDV, NULL, pa, rbuf), 14);

	/* phase 1: blocked, polling nothing, until B has seen its
	 * operations wait */
	get(rfd, &c, 1);
	comp(&r);	/* (B's operations are done in here, then its send) */
	CHECK(sse_check(rbuf, LEN_RNDV, 2) == -1, 15);
	CHECK(!fi_send(r.ep[0], sbuf, LEN_RNDV, NULL, pa, sbuf), 16);
	comp(&r);

	/* phase 2: B posts and blocks; we run the engine */
	get(rfd, &c, 1);
	end = now_ms() + TMO;
	while (sse_check(t->w2, LEN_RMA, 4) != -1 && now_ms() < end)
		sse_progress_for(&r, 1);
	CHECK(sse_check(t->w2, LEN_RMA, 4) == -1, 17);
	sse_progress_for(&r, 200);
	put(wfd, &c, 1);

	get(rfd, &c, 1);	/* B checked its side */
	CHECK(sse_check(t->w, LEN_RMA, 5) == -1, 18);
	CHECK(__atomic_load_n(&t->x, __ATOMIC_RELAXED) == X0 + 2 * ADD, 19);
	fi_close(&mr->fid);
	sse_res_close(&r);
	fi_freeinfo(hints);
	return 0;
}

/* The initiator, uid B. */
static int side_b(int rfd, int wfd)
{
	struct fi_info *hints;
	struct sse_res r;
	struct offer off;
	struct fi_sse_addr me;
	struct fi_cq_tagged_entry e;
	struct tgt *t;
	fi_addr_t pa;
	char *src, *dst, *big, c = 'x';
	uint64_t res = 0, add = ADD, end, base;
	size_t len = sizeof(me);
	ssize_t ret;

	become(UID_B);
	open_res(&r, &hints);
	src = malloc(LEN_RMA);
	dst = malloc(LEN_RMA);
	big = malloc(LEN_RNDV);
	CHECK(src && dst && big, 30);
	get(rfd, &off, sizeof(off));
	CHECK(!fi_getname(&r.ep[0]->fid, &me, &len), 31);
	put(wfd, &me, sizeof(me));
	CHECK(fi_av_insert(r.av, &off.addr, 1, &pa, 0, NULL) == 1, 32);
	base = off.base;
	t = (struct tgt *)(uintptr_t)base;	/* (A's addresses) */

	/* phase 1: A polls nothing; we run the engine */
	sse_fill(src, LEN_RMA, 5);
	CHECK(!fi_write(r.ep[0], src, LEN_RMA, NULL, pa,
			(uint64_t)(uintptr_t)t->w, off.key, src), 33);
	CHECK(!fi_read(r.ep[0], dst, LEN_RMA, NULL, pa,
		       (uint64_t)(uintptr_t)t->r, off.key, dst), 34);
	CHECK(!fi_fetch_atomic(r.ep[0], &add, 1, NULL, &res, NULL, pa,
			       (uint64_t)(uintptr_t)&t->x, off.key,
			       FI_UINT64, FI_SUM, &res), 35);
	/* they wait for A: nothing completes, nothing fails */
	end = now_ms() + 200;
	while (now_ms() < end) {
		ret = fi_cq_read(r.cq[0], &e, 1);
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(r.cq[0], &err, 0);
			printf("an operation failed: %s\n",
			       fi_strerror(err.err));
		}
		CHECK(ret == -FI_EAGAIN, 36);
	}
	/* the parent looks at the model meanwhile */
	put(bp[1], &c, 1);
	get(pb[0], &c, 1);
	put(wfd, &c, 1);
	comp(&r);
	comp(&r);
	comp(&r);
	CHECK(sse_check(dst, LEN_RMA, 1) == -1, 37);
	CHECK(res == X0, 38);
	/* a rendezvous each way */
	sse_fill(big, LEN_RNDV, 2);
	CHECK(!fi_send(r.ep[0], big, LEN_RNDV, NULL, pa, big), 39);
	comp(&r);
	memset(big, 0, LEN_RNDV);
	CHECK(!fi_recv(r.ep[0], big, LEN_RNDV, NULL, pa, big), 40);
	comp(&r);
	CHECK(sse_check(big, LEN_RNDV, 3) == -1, 41);

	/* phase 2: we post and block; A runs the engine */
	sse_fill(src, LEN_RMA, 4);
	memset(dst, 0, LEN_RMA);
	CHECK(!fi_write(r.ep[0], src, LEN_RMA, NULL, pa,
			(uint64_t)(uintptr_t)t->w2, off.key, src), 42);
	CHECK(!fi_read(r.ep[0], dst, LEN_RMA, NULL, pa,
		       (uint64_t)(uintptr_t)t->r, off.key, dst), 43);
	CHECK(!fi_atomic(r.ep[0], &add, 1, NULL, pa,
			 (uint64_t)(uintptr_t)&t->x, off.key, FI_UINT64,
			 FI_SUM, &add), 44);
	put(wfd, &c, 1);
	get(rfd, &c, 1);
	comp(&r);
	comp(&r);
	comp(&r);
	CHECK(sse_check(dst, LEN_RMA, 1) == -1, 45);
	put(wfd, &c, 1);
	sse_res_close(&r);
	fi_freeinfo(hints);
	return 0;
}

/*
 * While B's operations wait for A: the fabric counts them, and with the
 * virtual clock the model does not advance past them, however long B
 * polls; @return 0 or what was wrong.
 */
static int look_parked(void)
{
	struct ssemu_fabric_info i0, i1;
	uint64_t end;

	if (ssemu_fabric_info(fab, &i0))
		return 1;
	if (i0.rma_parked < 1)
		return 2;
	if (i0.clock != SSEMU_CLOCK_VIRTUAL)
		return 0;
	end = now_ms() + 100;
	while (now_ms() < end)
		;	/* (B polls meanwhile) */
	if (ssemu_fabric_info(fab, &i1))
		return 1;
	if (i1.now != i0.now || i1.rma_parked < 1)
		return 3;
	return 0;
}

static void test_xuid(void **state)
{
	int ab[2], ba[2], sa, sb, looked = -1;
	pid_t a, b;
	char c;

	(void)state;
	assert_int_equal(pipe(ab), 0);
	assert_int_equal(pipe(ba), 0);
	assert_int_equal(pipe(bp), 0);
	assert_int_equal(pipe(pb), 0);
	fflush(stdout);
	a = fork();
	if (!a) {
		close(ab[0]);	/* (a side whose peer died reads EOF) */
		close(ba[1]);
		close(bp[0]);
		close(bp[1]);
		close(pb[0]);
		close(pb[1]);
		_exit(side_a(ba[0], ab[1]));
	}
	b = fork();
	if (!b) {
		close(ba[0]);
		close(ab[1]);
		close(bp[0]);
		close(pb[1]);
		_exit(side_b(ab[0], ba[1]));
	}
	assert_true(a > 0 && b > 0);
	close(ab[0]);
	close(ab[1]);
	close(ba[0]);
	close(ba[1]);
	close(bp[1]);
	close(pb[0]);
	if (read(bp[0], &c, 1) == 1) {
		looked = look_parked();
		if (write(pb[1], &c, 1) != 1)
			looked = 4;
	}
	close(bp[0]);
	close(pb[1]);
	assert_int_equal(waitpid(a, &sa, 0), a);
	assert_int_equal(waitpid(b, &sb, 0), b);
	assert_true(WIFEXITED(sa) && WIFEXITED(sb));
	assert_int_equal(WEXITSTATUS(sa), 0);
	assert_int_equal(WEXITSTATUS(sb), 0);
	assert_int_equal(looked, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xuid),
	};
	int ret;

	ret = sse_test_users_fabric("xuid", cfg_path, sizeof(cfg_path), &fab,
				    "preset = \"switch\";\n"
				    "share_group = %u;\n"
				    "services = (\n"
				    "  { id = 2; vnis = [10]; uids = [%u, %u]; }\n"
				    ");\n", GID_SHARE, UID_A, UID_B);
	if (ret)
		return ret;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	sse_test_users_close(fab, cfg_path);
	return ret;
}
