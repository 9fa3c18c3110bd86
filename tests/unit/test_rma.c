/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of remote memory access done by the emulated target NIC
 * (ssemu_mr_reg, ssemu_ep_rma; emu/ssemu_model.c's target side): writes
 * and reads at every packet-size boundary, fetch and compare results,
 * refusals (-ENOKEY, -ERANGE, -EACCES, a withdrawn region) that leave the
 * target memory alone, RMA_REMOTE events (and their overflow), ordered
 * write-then-read, response traffic really modelled (time and counters),
 * slots held until RMA_DONE is released, endpoints and NICs going away
 * with operations in flight, bad arguments; and across processes on a
 * shared fabric: a target process that never calls in served by the
 * engine in another (cross-memory attach), and fetch-adds from four
 * processes on one counter.  Crash recovery at any point of a run of
 * atomics neither loses nor repeats one.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

#include "lone.h"
#include "ssemu_priv.h"	/* ssemu_model_recover */
#include "tf.h"

/* ------------------------------------------------------------------ */
/* Harness                                                              */
/* ------------------------------------------------------------------ */

#define MAX_DONE 8192

/* RMA_DONE events polled (results copied, event released) and
 * RMA_REMOTE events, per endpoint of the tf harness. */
struct rlog {
	struct ssemu_event done[MAX_DONE];
	uint8_t *data[MAX_DONE];
	const void *data_ptr[MAX_DONE];	/* ssemu_event_data before release */
	size_t ndone;
	struct ssemu_event remote[MAX_DONE];
	unsigned remote_ep[MAX_DONE];
	size_t nremote;
	unsigned hold;		/* keep RMA_DONE events whose cookie is a
				 * multiple of it unreleased (0: none) */
	struct ssemu_event held[MAX_DONE];
	unsigned held_ep[MAX_DONE];
	size_t nheld;
};

static struct rlog *rl;

static void rlog_reset(void)
{
	size_t i;

	if (rl) {
		for (i = 0; i < rl->ndone; i++)
			free(rl->data[i]);
		free(rl);
	}
	rl = calloc(1, sizeof(*rl));
	assert_non_null(rl);
}

/* Poll every endpoint (those in @skip_mask excepted); returns events. */
static size_t pump(struct tf *t, uint64_t skip_mask)
{
	struct ssemu_event ev[64];
	size_t got = 0;
	unsigned i;
	int k, n;

	for (i = 0; i < t->n; i++) {
		if (!t->ep[i] || (skip_mask >> i & 1))
			continue;
		while ((n = ssemu_ep_poll(t->ep[i], ev, 64)) > 0) {
			for (k = 0; k < n; k++) {
				struct ssemu_event *e = &ev[k];

				switch (e->type) {
				case SSEMU_EV_RECV:
					ssemu_event_release(t->ep[i], e);
					break;
				case SSEMU_EV_RMA_REMOTE:
					assert_true(rl->nremote < MAX_DONE);
					rl->remote_ep[rl->nremote] = i;
					rl->remote[rl->nremote++] = *e;
					break;
				case SSEMU_EV_RMA_DONE: {
					size_t d = rl->ndone++;

					assert_true(d < MAX_DONE);
					rl->done[d] = *e;
					rl->data_ptr[d] =
						ssemu_event_data(t->ep[i], e);
					rl->data[d] = malloc(e->len + 1);
					assert_non_null(rl->data[d]);
					memset(rl->data[d], 0xee, e->len + 1);
					assert_int_equal(
						ssemu_event_copy(t->ep[i], e,
								 0, rl->data[d],
								 e->len + 1),
						rl->data_ptr[d] ? e->len : 0);
					if (rl->hold &&
					    !(e->cookie % rl->hold)) {
						rl->held_ep[rl->nheld] = i;
						rl->held[rl->nheld++] = *e;
					} else {
						ssemu_event_release(t->ep[i],
								    e);
					}
					break;
				}
				default:
					fail_msg("unexpected event type %u",
						 e->type);
				}
			}
			got += (size_t)n;
		}
	}
	return got;
}

static void run_idle(struct tf *t, uint64_t skip_mask)
{
	unsigned r;
	int ret;

	for (r = 0; r < 1000000; r++) {
		ret = ssemu_fabric_progress(t->fab, 4096);
		assert_true(ret >= 0);
		if (!pump(t, skip_mask) && !ret && ssemu_fabric_idle(t->fab))
			return;
	}
	fail_msg("fabric not idle");
}

/* Run until @n completions are logged (the fabric need not go idle:
 * endpoints in @skip_mask do not poll). */
static void run_until_done(struct tf *t, size_t n, uint64_t skip_mask)
{
	unsigned r;

	for (r = 0; r < 1000000 && rl->ndone < n; r++) {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		pump(t, skip_mask);
	}
	assert_true(rl->ndone >= n);
}

/* Post, retrying -EAGAIN while driving the engine. */
static void post(struct tf *t, unsigned from, const struct ssemu_rma *rma,
		 uint64_t skip_mask)
{
	unsigned spins = 0;
	int ret;

	while ((ret = ssemu_ep_rma(t->ep[from], rma)) == -EAGAIN) {
		assert_true(ssemu_fabric_progress(t->fab, 64) >= 0);
		pump(t, skip_mask);
		if (++spins > 1000000)
			fail_msg("ssemu_ep_rma: -EAGAIN forever");
	}
	if (ret)
		fail_msg("ssemu_ep_rma op %u len %llu: %d", rma->op,
			 (unsigned long long)rma->len, ret);
}

/* The completion with @cookie (the latest one if several). */
static size_t done_of(uint64_t cookie)
{
	size_t i;

	for (i = rl->ndone; i-- > 0;)
		if (rl->done[i].cookie == cookie)
			return i;
	fail_msg("no RMA_DONE with cookie %llu", (unsigned long long)cookie);
	return 0;
}

static struct ssemu_rma mk(struct tf *t, unsigned to, uint32_t op,
			   uint64_t key, uint64_t addr, uint64_t len,
			   struct iovec *iov, uint64_t cookie)
{
	struct ssemu_rma r = {
		.dest = ssemu_ep_addr(t->ep[to]),
		.tclass = 0,
		.op = op,
		.key = key,
		.addr = addr,
		.len = len,
		.iov = iov,
		.iov_count = iov ? 1 : 0,
		.cookie = cookie,
	};

	return r;
}

/* One operation, run to completion; returns its log index. */
static size_t do_rma(struct tf *t, unsigned from, const struct ssemu_rma *r)
{
	post(t, from, r, 0);
	run_idle(t, 0);
	return done_of(r->cookie);
}

static struct tf *open2_in(const char *preset, bool shared, unsigned *a,
			   unsigned *b)
{
	struct ssemu_config c;
	struct tf *t;

	tf_config(&c, preset);
	t = shared ? tf_open_shared(&c) : tf_open(&c);
	*a = tf_add(t, 0);
	*b = tf_add(t, (uint32_t)ssemu_config_nports(&c) - 1);
	rlog_reset();
	return t;
}

static struct tf *open2(const char *preset, unsigned *a, unsigned *b)
{
	return open2_in(preset, false, a, b);
}

static void reg(struct tf *t, unsigned ep, uint64_t key, void *addr,
		uint64_t len, uint64_t base, uint32_t access)
{
	struct ssemu_mr_desc d = {
		.key = key, .addr = addr, .len = len, .base = base,
		.access = access,
	};

	assert_int_equal(ssemu_mr_reg(t->nic[ep], &d), 0);
}

static uint8_t pat(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 37 + i * 11 + (i >> 8) * 3 + 1);
}

/* ------------------------------------------------------------------ */
/* In-process                                                           */
/* ------------------------------------------------------------------ */

static void write_read_sizes(const char *preset)
{
	unsigned a, b;
	struct tf *t = open2(preset, &a, &b);
	size_t max = ssemu_ep_max_msg(t->ep[a]), mtu = t->cfg.mtu;
	size_t sizes[] = { 0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 5,
			   max - 8, max };
	size_t region = max + 64, k, i, d;
	uint8_t *mem = malloc(region), *src = malloc(max), *snap;
	uint64_t cookie = 1;

	snap = malloc(region);
	assert_true(mem && src && snap);
	memset(mem, 0x5a, region);
	/* virtual addressing: peers name the bytes by their address */
	reg(t, b, 77, mem, region, (uintptr_t)mem,
	    SSEMU_MR_READ | SSEMU_MR_WRITE);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t len = sizes[k], off = (k * 13) % 64;
		struct iovec iov = { src, len };
		struct ssemu_rma r;

		for (i = 0; i < len; i++)
			src[i] = pat(k, i);
		memcpy(snap, mem, region);
		r = mk(t, b, SSEMU_RMA_WRITE, 77, (uintptr_t)mem + off, len,
		       &iov, cookie++);
		d = do_rma(t, a, &r);
		assert_int_equal(rl->done[d].status, 0);
		assert_int_equal(rl->done[d].op, SSEMU_RMA_WRITE);
		assert_int_equal(rl->done[d].len, len);
		assert_null(rl->data_ptr[d]);	/* a write brings nothing */
		assert_true(rl->done[d].time > rl->done[d].posted);
		/* exactly the bytes asked for changed */
		assert_memory_equal(mem + off, src, len);
		assert_memory_equal(mem, snap, off);
		assert_memory_equal(mem + off + len, snap + off + len,
				    region - off - len);
		/* and read back */
		memset(mem + off, 0, len ? 1 : 0);
		if (len)
			mem[off] = src[0];
		r = mk(t, b, SSEMU_RMA_READ, 77, (uintptr_t)mem + off, len,
		       NULL, cookie++);
		d = do_rma(t, a, &r);
		assert_int_equal(rl->done[d].status, 0);
		assert_int_equal(rl->done[d].op, SSEMU_RMA_READ);
		assert_int_equal(rl->done[d].len, len);
		if (len)
			assert_non_null(rl->data_ptr[d]);
		assert_memory_equal(rl->data[d], src, len);
		assert_int_equal(rl->data[d][len], 0xee); /* copy stops */
	}
	assert_int_equal(rl->nremote, 0);
	tf_close(t);
	free(mem);
	free(src);
	free(snap);
}

static void test_rma_write_read_sizes(void **state)
{
	write_read_sizes("switch");
}

static void test_rma_write_read_sizes_2switch(void **state)
{
	write_read_sizes("2switch");
}

static void test_rma_fetch_compare(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	uint64_t ctr[4] = { 10, 20, 30, 40 }, add[4] = { 1, 2, 3, 4 };
	int32_t iv[3] = { 5, -6, 7 }, sw[3] = { 50, 60, 70 },
		cm[3] = { 5, 6, 7 }, prev[3];
	double dv[2] = { 1.5, -2.0 }, dmin[2] = { 0.5, 3.0 }, dprev[2];
	struct iovec iov, cmpv;
	struct ssemu_rma r;
	uint64_t out[4];
	size_t d;

	/* offsets: base 0 */
	reg(t, b, 1, ctr, sizeof(ctr), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	reg(t, b, 2, iv, sizeof(iv), 0x1000, SSEMU_MR_READ | SSEMU_MR_WRITE);
	reg(t, b, 3, dv, sizeof(dv), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);

	/* fetch-add on the last three counters */
	iov = (struct iovec){ add, 3 * sizeof(uint64_t) };
	r = mk(t, b, SSEMU_RMA_FETCH, 1, 8, 24, &iov, 100);
	r.aop = SSEMU_AOP_SUM;
	r.dtype = SSEMU_UINT64;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_int_equal(rl->done[d].op, SSEMU_RMA_FETCH);
	memcpy(out, rl->data[d], 24);
	assert_true(out[0] == 20 && out[1] == 30 && out[2] == 40);
	assert_true(ctr[0] == 10 && ctr[1] == 21 && ctr[2] == 32 &&
		    ctr[3] == 43);

	/* a plain atomic: no results */
	iov = (struct iovec){ add, 8 };
	r = mk(t, b, SSEMU_RMA_ATOMIC, 1, 0, 8, &iov, 101);
	r.aop = SSEMU_AOP_PROD;
	r.dtype = SSEMU_UINT64;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_null(rl->data_ptr[d]);
	assert_int_equal(ctr[0], 10);	/* 10 * 1 */
	iov = (struct iovec){ &add[3], 8 };
	r.iov = &iov;
	r.cookie = 102;
	d = do_rma(t, a, &r);
	assert_int_equal(ctr[0], 40);

	/* atomic read through a fetch: no operands travel */
	r = mk(t, b, SSEMU_RMA_FETCH, 1, 0, 32, NULL, 103);
	r.aop = SSEMU_AOP_READ;
	r.dtype = SSEMU_UINT64;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_memory_equal(rl->data[d], ctr, 32);

	/* compare-and-swap: element 1 does not match */
	iov = (struct iovec){ sw, sizeof(sw) };
	cmpv = (struct iovec){ cm, sizeof(cm) };
	r = mk(t, b, SSEMU_RMA_COMPARE, 2, 0x1000, sizeof(iv), &iov, 104);
	r.cmp = &cmpv;
	r.cmp_count = 1;
	r.aop = SSEMU_AOP_CSWAP;
	r.dtype = SSEMU_INT32;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_int_equal(rl->done[d].op, SSEMU_RMA_COMPARE);
	memcpy(prev, rl->data[d], sizeof(prev));
	assert_true(prev[0] == 5 && prev[1] == -6 && prev[2] == 7);
	assert_true(iv[0] == 50 && iv[1] == -6 && iv[2] == 70);

	/* fetch-min on doubles */
	iov = (struct iovec){ dmin, sizeof(dmin) };
	r = mk(t, b, SSEMU_RMA_FETCH, 3, 0, sizeof(dv), &iov, 105);
	r.aop = SSEMU_AOP_MIN;
	r.dtype = SSEMU_DOUBLE;
	d = do_rma(t, a, &r);
	memcpy(dprev, rl->data[d], sizeof(dprev));
	assert_true(dprev[0] == 1.5 && dprev[1] == -2.0);
	assert_true(dv[0] == 0.5 && dv[1] == -2.0);
	tf_close(t);
}

/* Refused operations: the status, and not a byte of memory touched. */
static void test_rma_refused(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	uint8_t rw[256], ro[256], wo[256], snap[3][256], buf[256];
	struct iovec iov = { buf, 16 };
	struct ssemu_mr_desc dsc;
	struct ssemu_rma r;
	size_t d;
	struct {
		uint32_t op, aop;
		uint64_t key, addr, len;
		int status;
	} cases[] = {
		{ SSEMU_RMA_WRITE, 0, 999, 0, 16, -ENOKEY },
		{ SSEMU_RMA_READ, 0, 999, 0, 16, -ENOKEY },
		{ SSEMU_RMA_WRITE, 0, 10, 250, 16, -ERANGE },
		{ SSEMU_RMA_WRITE, 0, 10, 257, 0, -ERANGE },
		{ SSEMU_RMA_READ, 0, 10, 0x8000, 16, -ERANGE },
		{ SSEMU_RMA_WRITE, 0, 13, 0x0ff8, 16, -ERANGE }, /* below */
		{ SSEMU_RMA_FETCH, SSEMU_AOP_SUM, 10, 248, 16, -ERANGE },
		{ SSEMU_RMA_WRITE, 0, 11, 0, 16, -EACCES },
		{ SSEMU_RMA_ATOMIC, SSEMU_AOP_SUM, 11, 0, 16, -EACCES },
		{ SSEMU_RMA_FETCH, SSEMU_AOP_SUM, 11, 0, 16, -EACCES },
		{ SSEMU_RMA_READ, 0, 12, 0, 16, -EACCES },
		{ SSEMU_RMA_FETCH, SSEMU_AOP_SUM, 12, 0, 16, -EACCES },
		{ SSEMU_RMA_FETCH, SSEMU_AOP_READ, 12, 0, 16, -EACCES },
		/* what each region does allow */
		{ SSEMU_RMA_FETCH, SSEMU_AOP_READ, 11, 0, 16, 0 },
		{ SSEMU_RMA_READ, 0, 11, 240, 16, 0 },
		{ SSEMU_RMA_READ, 0, 10, 256, 0, 0 },
		{ SSEMU_RMA_ATOMIC, SSEMU_AOP_BXOR, 12, 8, 16, 0 },
		{ SSEMU_RMA_WRITE, 0, 13, 0x1000, 16, 0 },
	};
	size_t k;

	for (k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)(k + 1);
	memset(rw, 1, sizeof(rw));
	memset(ro, 2, sizeof(ro));
	memset(wo, 3, sizeof(wo));
	reg(t, b, 10, rw, sizeof(rw), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	reg(t, b, 11, ro, sizeof(ro), 0, SSEMU_MR_READ);
	reg(t, b, 12, wo, sizeof(wo), 0, SSEMU_MR_WRITE);
	reg(t, b, 13, rw, sizeof(rw), 0x1000, SSEMU_MR_READ | SSEMU_MR_WRITE);
	/* region table rules */
	dsc = (struct ssemu_mr_desc){ .key = 10, .addr = wo, .len = 8,
				      .access = SSEMU_MR_READ };
	assert_int_equal(ssemu_mr_reg(t->nic[b], &dsc), -EEXIST);
	dsc.key = 20;
	dsc.access = 4;
	assert_int_equal(ssemu_mr_reg(t->nic[b], &dsc), -EINVAL);
	dsc.access = SSEMU_MR_READ;
	dsc.addr = NULL;
	assert_int_equal(ssemu_mr_reg(t->nic[b], &dsc), -EINVAL);
	dsc.addr = (void *)(UINTPTR_MAX - 4);
	assert_int_equal(ssemu_mr_reg(t->nic[b], &dsc), -EINVAL);
	assert_int_equal(ssemu_mr_reg(t->nic[b], NULL), -EINVAL);
	assert_int_equal(ssemu_mr_dereg(t->nic[b], 20), -ENOENT);

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		memcpy(snap[0], rw, 256);
		memcpy(snap[1], ro, 256);
		memcpy(snap[2], wo, 256);
		iov.iov_len = cases[k].len;
		r = mk(t, b, cases[k].op, cases[k].key, cases[k].addr,
		       cases[k].len,
		       cases[k].op == SSEMU_RMA_READ ||
				       cases[k].aop == SSEMU_AOP_READ ?
			       NULL :
			       &iov,
		       1000 + k);
		r.aop = cases[k].aop;
		r.dtype = SSEMU_UINT64;
		r.flags = SSEMU_RMA_REMOTE_EVENT;
		d = do_rma(t, a, &r);
		if (rl->done[d].status != cases[k].status)
			fail_msg("case %zu: status %d, want %d", k,
				 rl->done[d].status, cases[k].status);
		if (cases[k].status) {
			assert_null(rl->data_ptr[d]);
			assert_memory_equal(snap[0], rw, 256);
			assert_memory_equal(snap[1], ro, 256);
			assert_memory_equal(snap[2], wo, 256);
		}
	}
	assert_true(wo[8] == (3 ^ 1) && wo[9] == (3 ^ 2));
	/* refused operations raise no RMA_REMOTE: only the 5 that went */
	assert_int_equal(rl->nremote, 5);

	/* a withdrawn region is gone for good */
	assert_int_equal(ssemu_mr_dereg(t->nic[b], 10), 0);
	assert_int_equal(ssemu_mr_dereg(t->nic[b], 10), -ENOENT);
	memcpy(snap[0], rw, 256);
	iov.iov_len = 16;
	r = mk(t, b, SSEMU_RMA_WRITE, 10, 0, 16, &iov, 2000);
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, -ENOKEY);
	assert_memory_equal(snap[0], rw, 256);
	/* and its key may be used again */
	reg(t, b, 10, wo, sizeof(wo), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	r.cookie = 2001;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_memory_equal(wo, buf, 16);
	assert_memory_equal(snap[0], rw, 256);

	/* a detached NIC's table goes with it */
	ssemu_ep_close(t->ep[b]);
	ssemu_nic_detach(t->nic[b]);
	t->ep[b] = NULL;
	t->nic[b] = NULL;
	r.cookie = 2002;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, -EHOSTUNREACH);
	tf_close(t);
}

/* The busy RMA slot whose cookie is @cookie. */
static struct ssemu_msg *rma_slot(struct tf *t, uint64_t cookie)
{
	struct ssemu_region *r = t->fab->r;
	struct ssemu_msg *m;
	uint32_t i;

	for (i = 0; i < r->nmsgs; i++) {
		m = ssemu_r_msg(r, i);
		if (m->rma_op && m->cookie == cookie &&
		    (*ssemu_r_mstate(r, i) & SSEMU_MSG_BUSY))
			return m;
	}
	fail_msg("no RMA slot with cookie %llu", (unsigned long long)cookie);
	return NULL;
}

/* The payload of that slot: where its data or operands, then its
 * results, are. */
static uint8_t *rma_slot_data(struct tf *t, uint64_t cookie)
{
	struct ssemu_msg *m = rma_slot(t, cookie);

	return m->buf == SSEMU_NONE ? m->data :
				      ssemu_r_buf(t->fab->r, m->buf);
}

static uint64_t crc_errors(struct tf *t)
{
	struct ssemu_fabric_stats st;

	assert_int_equal(ssemu_fabric_stats(t->fab, &st), 0);
	return st.crc_errors;
}

/* Post @r from @a, move its target address 128 bytes in the segment
 * before the target takes it: it fails with -EIO. */
static void moved_fails(struct tf *t, unsigned a, const struct ssemu_rma *r)
{
	post(t, a, r, 0);
	rma_slot(t, r->cookie)->raddr += 128;
	run_idle(t, 0);
	assert_int_equal(rl->done[done_of(r->cookie)].status, -EIO);
}

/*
 * RMA payloads carry end-to-end CRCs too: a write whose data changes in
 * the segment between the post and the target is refused with -EIO and
 * leaves the target's memory as it was; so are a write and a read whose
 * target address changes (what a request asks is in its CRC, data or
 * none); results that change between the target and the initiator's
 * read are never handed out.  All counted.
 */
static void test_rma_crc(void **state)
{
	unsigned a, b, i;
	/* (a shared store: the one that takes CRCs) */
	struct tf *t = open2_in("switch", true, &a, &b);
	uint8_t mem[256], src[64], want[64];
	struct iovec iov = { src, sizeof(src) };
	struct ssemu_rma r;
	uint64_t errs;
	size_t d;

	(void)state;
	memset(mem, 0x5a, sizeof(mem));
	for (i = 0; i < sizeof(src); i++)
		src[i] = pat(9, i);
	reg(t, b, 77, mem, sizeof(mem), (uintptr_t)mem,
	    SSEMU_MR_READ | SSEMU_MR_WRITE);

	/* a write changed after its post */
	errs = crc_errors(t);
	r = mk(t, b, SSEMU_RMA_WRITE, 77, (uintptr_t)mem, sizeof(src), &iov,
	       1);
	post(t, a, &r, 0);
	rma_slot_data(t, 1)[3] ^= 0x10;
	run_idle(t, 0);
	d = done_of(1);
	assert_int_equal(rl->done[d].status, -EIO);
	for (i = 0; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0x5a);
	assert_int_equal(crc_errors(t), errs + 1);
	/* the same write, left alone, lands */
	r.cookie = 2;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	assert_memory_equal(mem, src, sizeof(src));

	/* a read whose results change before the initiator reads them: the
	 * initiator is not polled until they are in its slot (a plain read,
	 * whose results travel in the slot; a direct read leaves only where
	 * they are, whose damage test_rma_direct_read checks) */
	for (i = 0; i < sizeof(want); i++)
		want[i] = mem[i];
	errs = crc_errors(t);
	r = mk(t, b, SSEMU_RMA_READ, 77, (uintptr_t)mem, sizeof(want), NULL,
	       3);
	post(t, a, &r, 1ull << a);
	for (i = 0; i < 100000 && !ssemu_fabric_idle(t->fab); i++) {
		assert_true(ssemu_fabric_progress(t->fab, 4096) >= 0);
		pump(t, 1ull << a);
	}
	assert_true(ssemu_fabric_idle(t->fab));
	assert_int_equal(rl->ndone, 2);	/* not read yet */
	assert_memory_equal(rma_slot_data(t, 3), want, sizeof(want));
	rma_slot_data(t, 3)[60] ^= 0x01;
	pump(t, 0);
	d = done_of(3);
	assert_int_equal(rl->done[d].status, 0);
	/* never handed out: no pointer, and the copy (pump) returned 0 */
	assert_null(rl->data_ptr[d]);
	assert_int_equal(crc_errors(t), errs + 2);	/* data, then copy */

	/* and a read left alone */
	r.cookie = 4;
	d = do_rma(t, a, &r);
	assert_non_null(rl->data_ptr[d]);
	assert_memory_equal(rl->data[d], want, sizeof(want));

	/* a write and a read whose target address changed after the post
	 * (to another place in the same region: only the CRC can tell) */
	errs = crc_errors(t);
	r = mk(t, b, SSEMU_RMA_WRITE, 77, (uintptr_t)mem, sizeof(src), &iov,
	       5);
	moved_fails(t, a, &r);
	for (i = 128; i < sizeof(mem); i++)
		assert_int_equal(mem[i], 0x5a);
	r = mk(t, b, SSEMU_RMA_READ, 77, (uintptr_t)mem, sizeof(want), NULL,
	       6);
	moved_fails(t, a, &r);
	assert_int_equal(crc_errors(t), errs + 2);
	tf_close(t);
}

/* The source of a post that changes while the NIC reads it (test below):
 * @buf's bytes alternate between pat(1, i) and pat(2, i), the atomic's
 * operand @op's third byte between 0 and 1, until @stop. */
struct flipper {
	volatile uint8_t *buf;
	size_t len;
	volatile uint8_t *op;
	int stop;
	uint64_t rounds;
};

static void *flip(void *arg)
{
	struct flipper *f = arg;
	uint64_t k = 0;
	size_t i;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		k++;
		for (i = 0; i < f->len; i++)
			f->buf[i] = pat(1 + (k & 1), i);
		f->op[2] = (uint8_t)(k & 1);
		__atomic_store_n(&f->rounds, k, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * A post's source may change while the NIC reads it (an application's
 * buffer can be the target of a peer's RMA at the same time, as in
 * fabtests' fi_rdm_atomic): the request carries what was read, and its
 * CRC covers exactly that, so the target takes it.  A shared store (the
 * one that takes CRCs), another thread writing the sources all along:
 * every write and atomic completes, no CRC fails, and what lands is
 * what the source held byte by byte at some moment.
 */
static void test_rma_source_changing(void **state)
{
	enum { LEN = 16384, N = 24 };
	unsigned a, b, n, i;
	struct tf *t = open2_in("switch", true, &a, &b);
	uint8_t *src = malloc(LEN), *mem = malloc(LEN);
	uint32_t ctr = 0, opnd = 1;
	struct flipper f = { src, LEN, (uint8_t *)&opnd, 0, 0 };
	struct iovec iov = { src, LEN }, oiov = { &opnd, sizeof(opnd) };
	struct ssemu_rma r;
	uint64_t errs;
	pthread_t th;
	size_t d;

	(void)state;
	assert_true(src && mem);
	assert_true(LEN <= ssemu_ep_max_msg(t->ep[a]));
	for (i = 0; i < LEN; i++)
		src[i] = pat(1, i);
	memset(mem, 0, LEN);
	reg(t, b, 77, mem, LEN, (uintptr_t)mem,
	    SSEMU_MR_READ | SSEMU_MR_WRITE);
	reg(t, b, 78, &ctr, sizeof(ctr), (uintptr_t)&ctr,
	    SSEMU_MR_READ | SSEMU_MR_WRITE);
	errs = crc_errors(t);
	assert_int_equal(pthread_create(&th, NULL, flip, &f), 0);
	/* (the sources change from the first post on) */
	while (__atomic_load_n(&f.rounds, __ATOMIC_RELAXED) < 2)
		sched_yield();
	for (n = 0; n < N; n++) {
		r = mk(t, b, SSEMU_RMA_WRITE, 77, (uintptr_t)mem, LEN, &iov,
		       1000 + 2 * n);
		d = do_rma(t, a, &r);
		assert_int_equal(rl->done[d].status, 0);
		for (i = 0; i < LEN; i++)
			assert_true(mem[i] == pat(1, i) || mem[i] == pat(2, i));
		r = mk(t, b, SSEMU_RMA_ATOMIC, 78, (uintptr_t)&ctr,
		       sizeof(ctr), &oiov, 1001 + 2 * n);
		r.aop = SSEMU_AOP_SUM;
		r.dtype = SSEMU_UINT32;
		d = do_rma(t, a, &r);
		assert_int_equal(rl->done[d].status, 0);
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* each operand read was 1 or 0x10001 */
	assert_int_equal(ctr & 0xffff, N);
	assert_int_equal(crc_errors(t), errs);
	tf_close(t);
	free(src);
	free(mem);
}

static void test_rma_bad_args(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	size_t max = ssemu_ep_max_msg(t->ep[a]);
	uint8_t *buf = calloc(1, max + 16);
	struct iovec iov = { buf, 16 }, cmpv = { buf, 16 };
	struct ssemu_rma r;

	assert_non_null(buf);
	r = mk(t, b, 0, 1, 0, 16, &iov, 1);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.op = 6;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.op = SSEMU_RMA_WRITE;
	r.flags = 1u << 5;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.flags = 0;
	r.len = 17;	/* iov bytes not len */
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.len = 16;
	r.tclass = t->cfg.ntclass;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.tclass = 0;
	r.dest = SSEMU_ADDR(ssemu_config_nports(&t->cfg), 0);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.dest = ssemu_ep_addr(t->ep[b]);
	r.cmp = &cmpv;
	r.cmp_count = 1;	/* compare values on a write */
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.cmp = NULL;
	r.cmp_count = 0;
	iov.iov_len = max + 1;
	r.len = max + 1;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EMSGSIZE);
	/* a read carries no data out */
	r = mk(t, b, SSEMU_RMA_READ, 1, 0, 16, &iov, 1);
	iov.iov_len = 16;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.iov = NULL;
	r.iov_count = 0;
	r.len = max + 1;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EMSGSIZE);
	/* atomics: a valid pair, whole elements, operands for all */
	r = mk(t, b, SSEMU_RMA_ATOMIC, 1, 0, 16, &iov, 1);
	r.aop = SSEMU_AOP_BOR;
	r.dtype = SSEMU_DOUBLE;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.aop = SSEMU_AOP_READ;	/* only with a fetch */
	r.dtype = SSEMU_UINT64;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.aop = SSEMU_AOP_CSWAP;	/* only with a compare */
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.aop = SSEMU_AOP_SUM;
	r.dtype = SSEMU_DATATYPE_COUNT;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r.dtype = SSEMU_UINT32;
	iov.iov_len = r.len = 6;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	iov.iov_len = 12;
	r.len = 8;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	r = mk(t, b, SSEMU_RMA_COMPARE, 1, 0, 16, &iov, 1);
	iov.iov_len = 16;
	r.aop = SSEMU_AOP_CSWAP;
	r.dtype = SSEMU_UINT64;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL); /* no cmp */
	r.cmp = &cmpv;
	r.cmp_count = 1;
	cmpv.iov_len = 8;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);
	/* operands and compare values must fit together */
	iov.iov_len = cmpv.iov_len = r.len = max / 2 + 8;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EMSGSIZE);
	iov.iov_len = cmpv.iov_len = r.len = max / 2;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	iov.iov_base = NULL;	/* memory the NIC cannot read */
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EFAULT);
	assert_int_equal(ssemu_ep_rma(t->ep[a], NULL), -EINVAL);
	assert_int_equal(ssemu_ep_rma(NULL, &r), -EINVAL);
	run_idle(t, 0);
	/* the one that went had no region to work on */
	assert_int_equal(rl->ndone, 1);
	assert_int_equal(rl->done[0].status, -ENOKEY);
	tf_close(t);
	free(buf);
}

/* RMA_REMOTE events: contents, and what happens when the ring is full. */
static void test_rma_remote_events(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	uint64_t mem[2048] = { 0 }, v;
	uint32_t msgs = t->cfg.msgs_per_ep;
	struct iovec iov = { &v, 8 };
	struct ssemu_rma r;
	size_t k, n = 1024 + msgs / 2;

	reg(t, b, 5, mem, sizeof(mem), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	r = mk(t, b, SSEMU_RMA_WRITE, 5, 8, 8, &iov, 1);
	r.flags = SSEMU_RMA_REMOTE_EVENT;
	r.tclass = 1;
	r.hdr[0] = 0x1111;
	r.hdr[3] = 0x4444;
	v = 42;
	do_rma(t, a, &r);
	assert_int_equal(rl->nremote, 1);
	assert_int_equal(rl->remote_ep[0], b);
	assert_int_equal(rl->remote[0].type, SSEMU_EV_RMA_REMOTE);
	assert_int_equal(rl->remote[0].status, 0);
	assert_int_equal(rl->remote[0].src, ssemu_ep_addr(t->ep[a]));
	assert_int_equal(rl->remote[0].op, SSEMU_RMA_WRITE);
	assert_int_equal(rl->remote[0].addr, 8);
	assert_int_equal(rl->remote[0].len, 8);
	assert_int_equal(rl->remote[0].tclass, 1);
	assert_true(rl->remote[0].hdr[0] == 0x1111 &&
		    rl->remote[0].hdr[3] == 0x4444);
	assert_true(rl->remote[0].time >= rl->remote[0].posted);
	/* the target's event comes before the initiator's completion */
	assert_true(rl->remote[0].time <= rl->done[0].time);
	assert_int_equal(mem[1], 42);
	/* without the flag, nothing at the target */
	r.flags = 0;
	r.cookie = 2;
	do_rma(t, a, &r);
	assert_int_equal(rl->nremote, 1);

	/* The target does not poll: its event ring (1024) fills and the
	 * rest wait on its overflow list, holding their slots; all arrive,
	 * in order, once it polls, and the slots come back. */
	rlog_reset();
	r.flags = SSEMU_RMA_REMOTE_EVENT;
	for (k = 0; k < n; k++) {
		v = k;
		r.addr = 8 * (k % 2048);
		r.cookie = 100 + k;
		r.hdr[1] = k;
		post(t, a, &r, 1ull << b);
	}
	run_until_done(t, n, 1ull << b);
	assert_int_equal(rl->ndone, n);
	assert_int_equal(rl->nremote, 0);
	/* the overflowed operations' slots are still held at the target:
	 * every further one overflows too, until none is left */
	for (k = 0; k < msgs; k++) {
		r.cookie = 1;
		if (ssemu_ep_rma(t->ep[a], &r) == -EAGAIN)
			break;
		run_until_done(t, n + k + 1, 1ull << b);
	}
	assert_int_equal(k, msgs - (n - 1024));
	run_idle(t, 0);
	assert_int_equal(rl->nremote, n + k);
	for (k = 0; k < n; k++) {
		assert_int_equal(rl->remote[k].hdr[1], k);
		assert_int_equal(rl->remote[k].addr, 8 * (k % 2048));
	}
	/* every slot is free again */
	for (k = 0; k < msgs; k++)
		assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	run_idle(t, 0);
	tf_close(t);
}

/* Ordered operations to one target are done in the order posted. */
static void test_rma_ordered(void **state)
{
	unsigned a, b;
	struct tf *t = open2("2switch", &a, &b);
	size_t len = 3 * t->cfg.mtu + 100, k, d;
	uint8_t *mem = calloc(1, len), *src = malloc(len);
	struct iovec iov = { src, len };
	struct ssemu_rma w, rd;

	assert_true(mem && src);
	reg(t, b, 9, mem, len, 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	for (k = 0; k < 50; k++) {
		memset(src, (int)(k + 1), len);
		src[len - 1] = (uint8_t)(k * 3);
		w = mk(t, b, SSEMU_RMA_WRITE, 9, 0, len, &iov, 2 * k);
		w.flags = SSEMU_SEND_ORDERED;
		/* a short read of the write's last bytes, right behind it */
		rd = mk(t, b, SSEMU_RMA_READ, 9, len - 16, 16, NULL,
			2 * k + 1);
		rd.flags = SSEMU_SEND_ORDERED;
		post(t, a, &w, 0);
		post(t, a, &rd, 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->ndone, 100);
	for (k = 0; k < 50; k++) {
		d = done_of(2 * k + 1);
		assert_int_equal(rl->done[d].status, 0);
		assert_int_equal(rl->data[d][0], (uint8_t)(k + 1));
		assert_int_equal(rl->data[d][15], (uint8_t)(k * 3));
	}
	tf_close(t);
	free(mem);
	free(src);
}

/*
 * The same under adaptive routing with congestion (paths would change if
 * order allowed it): sixteen sources in one group each write then read
 * their own area at four targets in another, ordered; every read sees the
 * write posted before it.
 */
static void test_rma_ordered_adaptive(void **state)
{
	const unsigned nsrc = 16, ntgt = 4, rounds = 40;
	struct ssemu_config c;
	struct tf *t;
	unsigned i, k, per_group, sent[16] = { 0 };
	size_t len, area, d, n = 0;
	uint8_t *mem[4], *src;
	struct iovec iov;
	struct ssemu_rma w, rd;
	ssemu_time_t now = 0;

	tf_config(&c, "malbec");
	snprintf(c.routing, sizeof(c.routing), "adaptive");
	c.max_nics = 32;
	c.max_switches = 32;
	c.eps_per_nic = 1;
	c.max_pkts = 65536;
	c.max_events = 262144;
	t = tf_open(&c);
	rlog_reset();
	per_group = c.topo.switches_per_group * c.topo.endpoints_per_switch;
	len = 3 * c.mtu + 100;
	area = len + 64;
	src = malloc(len);
	assert_non_null(src);
	for (i = 0; i < nsrc; i++)
		tf_add(t, i * (per_group / nsrc));
	for (i = 0; i < ntgt; i++) {
		tf_add(t, per_group + i * 7);
		mem[i] = calloc(nsrc, area);
		assert_non_null(mem[i]);
		reg(t, nsrc + i, 1, mem[i], nsrc * area, 0,
		    SSEMU_MR_READ | SSEMU_MR_WRITE);
	}
	iov = (struct iovec){ src, len };
	for (k = 0; k < rounds; k++, now += SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		pump(t, 0);
		for (i = 0; i < nsrc; i++) {
			unsigned v = sent[i];

			/* everyone's round v writes v + 1 everywhere in its
			 * area; the read right behind it takes the last bytes */
			memset(src, (int)(v + 1), len);
			w = mk(t, nsrc + (i % ntgt), SSEMU_RMA_WRITE, 1,
			       i * area, len, &iov, (uint64_t)i << 32 | 2 * v);
			w.flags = SSEMU_SEND_ORDERED;
			rd = mk(t, nsrc + (i % ntgt), SSEMU_RMA_READ, 1,
				i * area + len - 8, 8, NULL,
				(uint64_t)i << 32 | (2 * v + 1));
			rd.flags = SSEMU_SEND_ORDERED;
			if (ssemu_ep_rma(t->ep[i], &w))
				continue;
			post(t, i, &rd, 0);
			sent[i]++;
		}
	}
	run_idle(t, 0);
	for (d = 0; d < rl->ndone; d++) {
		uint64_t ck = rl->done[d].cookie;

		assert_int_equal(rl->done[d].status, 0);
		if (!(ck & 1))
			continue;
		i = (unsigned)(ck >> 32);
		k = (unsigned)(ck & 0xffffffff) / 2;
		assert_true(i < nsrc && k < sent[i]);
		assert_int_equal(rl->data[d][0], (uint8_t)(k + 1));
		assert_int_equal(rl->data[d][7], (uint8_t)(k + 1));
		n++;
	}
	for (i = 0, d = 0; i < nsrc; i++)
		d += sent[i];
	assert_int_equal(n, d);
	assert_true(n > nsrc * rounds / 2);
	tf_close(t);
	for (i = 0; i < ntgt; i++)
		free(mem[i]);
	free(src);
}

/* Results travel back as packets: they take time and show in counters. */
static void test_rma_response_modelled(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	size_t len = ssemu_ep_max_msg(t->ep[a]), d, mtu = t->cfg.mtu;
	uint8_t *mem = malloc(len), *src = malloc(len);
	struct ssemu_nic_stats ta0, ta1, ia0, ia1, tw0, tw1;
	struct iovec iov = { src, len };
	ssemu_time_t ser, read_lat, small_lat;
	struct ssemu_rma r;
	size_t k;

	assert_true(mem && src);
	for (k = 0; k < len; k++)
		mem[k] = pat(9, k);
	reg(t, b, 3, mem, len, 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	ser = (ssemu_time_t)len * 8 * SSEMU_PS_PER_S / t->cfg.edge.rate_bps;

	r = mk(t, b, SSEMU_RMA_READ, 3, 0, 8, NULL, 1);
	d = do_rma(t, a, &r);
	small_lat = rl->done[d].time - rl->done[d].posted;

	assert_int_equal(ssemu_nic_stats(t->nic[b], &ta0), 0);
	assert_int_equal(ssemu_nic_stats(t->nic[a], &ia0), 0);
	r = mk(t, b, SSEMU_RMA_READ, 3, 0, len, NULL, 2);
	d = do_rma(t, a, &r);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &ta1), 0);
	assert_int_equal(ssemu_nic_stats(t->nic[a], &ia1), 0);
	assert_int_equal(rl->done[d].status, 0);
	assert_memory_equal(rl->data[d], mem, len);
	read_lat = rl->done[d].time - rl->done[d].posted;
	/* the whole result crossed the target's edge link */
	assert_true(read_lat >= ser);
	assert_true(read_lat >= small_lat + ser * 9 / 10);
	/* target: sent the result (and an acknowledgement), received a
	 * header-only request; initiator: the mirror image */
	assert_int_equal(ta1.tx_bytes - ta0.tx_bytes, len);
	assert_true(ta1.tx_pkts - ta0.tx_pkts >= (len + mtu - 1) / mtu);
	assert_int_equal(ta1.rx_msgs - ta0.rx_msgs, 1);
	assert_int_equal(ta1.rx_bytes - ta0.rx_bytes, 0);
	assert_int_equal(ta1.rx_pkts - ta0.rx_pkts, 1);
	assert_int_equal(ia1.rx_bytes - ia0.rx_bytes, len);
	assert_int_equal(ia1.rx_pkts - ia0.rx_pkts, (len + mtu - 1) / mtu);
	assert_int_equal(ia1.tx_pkts - ia0.tx_pkts, 1);
	assert_int_equal(ia1.tx_bytes - ia0.tx_bytes, 0);

	/* a write sends no results back: nothing but acknowledgements */
	for (k = 0; k < len; k++)
		src[k] = pat(5, k);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &tw0), 0);
	r = mk(t, b, SSEMU_RMA_WRITE, 3, 0, len, &iov, 3);
	d = do_rma(t, a, &r);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &tw1), 0);
	assert_int_equal(tw1.tx_bytes - tw0.tx_bytes, 0);
	assert_true(tw1.tx_pkts - tw0.tx_pkts < (len + mtu - 1) / mtu);
	assert_int_equal(tw1.rx_bytes - tw0.rx_bytes, len);
	assert_true(rl->done[d].time - rl->done[d].posted >= ser);
	assert_memory_equal(mem, src, len);
	tf_close(t);
	free(mem);
	free(src);
}

/*
 * Lone reads of random sizes between random endpoints, each on a fabric of
 * its own (one switch, one group, across groups): each completes at the
 * picosecond the recurrence gives (lone_read: the request out, its
 * acknowledgement and the results back from the target's NIC), with as
 * many acknowledgements, packet-hops and picoseconds spent in switches.  The provider's
 * rendezvous moves its bulk data this way.
 */
static void test_rma_lone_read_recurrence(void **state)
{
	static const char *const presets[] = { "switch", "2group", "shandy" };
	uint64_t rng = 7, len, src, dst;
	struct ssemu_fabric_stats fs;
	struct ssemu_nic_stats st;
	struct ssemu_config c;
	struct ssemu_topo topo;
	struct lone_out o;
	unsigned p, round;
	uint8_t *mem;
	struct tf *t;
	size_t d;

	(void)state;
	for (p = 0; p < sizeof(presets) / sizeof(presets[0]); p++) {
		for (round = 0; round < 12; round++) {
			/* none to 1 MiB, the last packet often short */
			lone_case(presets[p], &rng, round, &c, &topo, &src,
				  &dst, &len);
			t = tf_open(&c);
			tf_add(t, (uint32_t)src);
			tf_add(t, (uint32_t)dst);
			rlog_reset();
			mem = calloc(1, len + 1);
			assert_non_null(mem);
			reg(t, 1, 5, mem, len + 1, 0, SSEMU_MR_READ);
			{
				struct ssemu_rma r = mk(t, 1, SSEMU_RMA_READ,
							5, 0, len, NULL, 1);

				d = do_rma(t, 0, &r);
			}
			assert_int_equal(rl->done[d].status, 0);
			lone_read(&c, &topo, src, dst, len, &o);
			assert_int_equal(ssemu_nic_stats(t->nic[0], &st), 0);
			assert_int_equal(st.ack_pkts, o.acks);
			assert_int_equal(ssemu_fabric_stats(t->fab, &fs), 0);
			assert_int_equal(fs.pkt_hops, o.hops);
			assert_int_equal(fs.switch_lat_sum, o.lat_sum);
			if (rl->done[d].time - rl->done[d].posted !=
			    o.completion)
				fail_msg("%s, seed %llu, a %llu-byte read by "
					 "port %llu of %llu: complete after %llu "
					 "ps, the recurrence gives %llu",
					 presets[p], (unsigned long long)c.seed,
					 (unsigned long long)len,
					 (unsigned long long)src,
					 (unsigned long long)dst,
					 (unsigned long long)(rl->done[d].time -
							      rl->done[d].posted),
					 (unsigned long long)o.completion);
			tf_close(t);
			free(mem);
		}
	}
}

/*
 * A lossy class drops every kind of packet that finds a full queue, RMA
 * results and acknowledgements too, and the end-to-end retry recovers each:
 * endpoint 0 reads 64 KiB at a time from four targets at once and writes
 * to them, all in a lossy class through 4-packet buffers without
 * congestion control, so the results (and acknowledgements) converging on
 * its edge port overflow it.  Every operation completes without error and
 * every byte is right.
 */
static void test_rma_lossy_results_recovered(void **state)
{
	enum { TARGETS = 4, ROUNDS = 6 };
	struct ssemu_telemetry *tel;
	struct ssemu_config c;
	struct tf *t;
	size_t len, d, k, n = 0;
	uint8_t *mem[TARGETS + 1], *src;
	struct iovec iov;
	struct ssemu_rma r;
	unsigned i, round;
	uint64_t cookie;

	tf_config(&c, "switch");
	c.tclass[1].lossy = true;
	c.port_buf_pkts = 4;
	snprintf(c.cc, sizeof(c.cc), "none");
	t = tf_open(&c);
	for (i = 0; i <= TARGETS; i++)
		tf_add(t, i);
	rlog_reset();
	len = ssemu_ep_max_msg(t->ep[0]);
	src = malloc(len);
	assert_non_null(src);
	for (k = 0; k < len; k++)
		src[k] = pat(77, k);
	for (i = 1; i <= TARGETS; i++) {
		/* reads from the first half, writes into the second */
		mem[i] = malloc(2 * len);
		assert_non_null(mem[i]);
		for (k = 0; k < 2 * len; k++)
			mem[i][k] = pat(i, k);
		reg(t, i, 10 + i, mem[i], 2 * len, 0,
		    SSEMU_MR_READ | SSEMU_MR_WRITE);
	}
	iov.iov_base = src;
	iov.iov_len = len;
	for (round = 0; round < ROUNDS; round++) {
		for (i = 1; i <= TARGETS; i++) {
			cookie = round * 100 + i;
			r = mk(t, i, SSEMU_RMA_READ, 10 + i, 0, len, NULL,
			       cookie);
			r.tclass = 1;
			post(t, 0, &r, 0);
			r = mk(t, i, SSEMU_RMA_WRITE, 10 + i, len, len, &iov,
			       cookie + 50);
			r.tclass = 1;
			post(t, 0, &r, 0);
			n += 2;
		}
	}
	run_until_done(t, n, 0);
	run_idle(t, 0);
	assert_int_equal(rl->ndone, n);
	for (round = 0; round < ROUNDS; round++) {
		for (i = 1; i <= TARGETS; i++) {
			d = done_of(round * 100 + i);
			assert_int_equal(rl->done[d].status, 0);
			assert_int_equal(rl->done[d].len, len);
			assert_memory_equal(rl->data[d], mem[i], len);
			d = done_of(round * 100 + i + 50);
			assert_int_equal(rl->done[d].status, 0);
		}
	}
	for (i = 1; i <= TARGETS; i++)
		assert_memory_equal(mem[i] + len, src, len);
	assert_int_equal(ssemu_telemetry_read(t->fab, &tel), 0);
	print_message("lossy class, 4 targets: %llu drops, %llu of them RMA "
		      "results, %llu acknowledgements; %llu retries\n",
		      (unsigned long long)tel->tc[1].drops,
		      (unsigned long long)tel->tc[1].drops_resp,
		      (unsigned long long)tel->tc[1].drops_ack,
		      (unsigned long long)tel->tc[1].retries);
	assert_true(tel->tc[1].drops_resp > 0);
	assert_true(tel->tc[1].retries >= tel->tc[1].drops_resp);
	ssemu_telemetry_free(tel);
	tf_close(t);
	for (i = 1; i <= TARGETS; i++)
		free(mem[i]);
	free(src);
}

/* A slot is held until its RMA_DONE is released. */
static void test_rma_release_returns_slots(void **state)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	uint32_t msgs = t->cfg.msgs_per_ep, k;
	uint64_t mem[8] = { 0 }, one = 1;
	struct iovec iov = { &one, 8 };
	struct ssemu_rma r;

	reg(t, b, 4, mem, sizeof(mem), 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	r = mk(t, b, SSEMU_RMA_FETCH, 4, 0, 8, &iov, 0);
	r.aop = SSEMU_AOP_SUM;
	r.dtype = SSEMU_UINT64;
	/* many more operations than slots, each released */
	for (k = 0; k < 3 * msgs; k++) {
		r.cookie = k;
		post(t, a, &r, 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->ndone, 3 * msgs);
	assert_int_equal(mem[0], 3 * msgs);
	for (k = 0; k < 3 * msgs; k++) {
		uint64_t prev;

		memcpy(&prev, rl->data[done_of(k)], 8);
		assert_int_equal(prev, k);	/* in posting order */
	}
	/* kept, they keep their slots (and their results stay readable) */
	rl->hold = 1;
	for (k = 0; k < msgs; k++) {
		r.cookie = 1000 + k;
		assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->nheld, msgs);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EAGAIN);
	run_idle(t, 0);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EAGAIN);
	for (k = 0; k < rl->nheld; k++) {
		const uint64_t *p = ssemu_event_data(t->ep[a], &rl->held[k]);
		uint64_t got;

		assert_non_null(p);
		assert_int_equal(ssemu_event_copy(t->ep[a], &rl->held[k], 0,
						  &got, 8), 8);
		assert_int_equal(got, 3 * msgs + k);
		/* only the initiator may release it */
		ssemu_event_release(t->ep[b], &rl->held[k]);
	}
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EAGAIN);
	for (k = 0; k < rl->nheld; k++)
		ssemu_event_release(t->ep[a], &rl->held[k]);
	/* released: the data is not theirs to read any more */
	rl->hold = 0;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	run_idle(t, 0);
	assert_int_equal(mem[0], 4 * msgs + 1);
	tf_close(t);
}

/* Model time from the post to the RMA_DONE of one read of the largest
 * size, with @flags, on a fresh fabric. */
static ssemu_time_t read_time(uint32_t flags)
{
	unsigned a, b;
	struct tf *t = open2("switch", &a, &b);
	size_t max = ssemu_ep_max_msg(t->ep[a]);
	uint8_t *mem = calloc(1, max);
	struct ssemu_rma r;
	ssemu_time_t dt;
	size_t d;

	assert_non_null(mem);
	reg(t, b, 21, mem, max, 0, SSEMU_MR_READ);
	r = mk(t, b, SSEMU_RMA_READ, 21, 0, max, NULL, 1);
	r.flags = flags;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	dt = rl->done[d].time - rl->done[d].posted;
	tf_close(t);
	free(mem);
	return dt;
}

/* The held RMA_DONE event with @cookie. */
static struct ssemu_event *held_of(uint64_t cookie)
{
	size_t i;

	for (i = 0; i < rl->nheld; i++)
		if (rl->held[i].cookie == cookie)
			return &rl->held[i];
	fail_msg("no held RMA_DONE with cookie %llu",
		 (unsigned long long)cookie);
	return NULL;
}

/*
 * Direct reads (SSEMU_RMA_DIRECT): the target NIC checks them and the
 * model carries their responses as any read's, in the same time, but the
 * bytes stay in the target's memory until the initiator copies them with
 * ssemu_event_read; they take no large buffer.  The target's answer in
 * the slot is CRC-checked, a region withdrawn before the copy fails it,
 * and memory not mapped on either side fails it with -EFAULT.
 */
static void test_rma_direct_read(void **state)
{
	unsigned a, b;
	/* (shared: its damaged answer is caught by a CRC) */
	struct tf *t = open2_in("switch", true, &a, &b);
	size_t max = ssemu_ep_max_msg(t->ep[a]), pg = 4096, i;
	uint32_t nbufs = t->cfg.bufs_per_ep, k;
	uint8_t *mem = malloc(max), *back = malloc(max), *bad;
	struct ssemu_event *ev;
	struct ssemu_rma r;
	ssemu_time_t plain, direct;
	uint64_t errs;

	(void)state;
	assert_true(mem && back);
	for (i = 0; i < max; i++)
		mem[i] = pat(5, i);
	reg(t, b, 21, mem, max, 0, SSEMU_MR_READ);
	/* only reads may be direct */
	r = mk(t, b, SSEMU_RMA_WRITE, 21, 0, 8, NULL, 1);
	r.flags = SSEMU_RMA_DIRECT;
	r.iov = &(struct iovec){ back, 8 };
	r.iov_count = 1;
	assert_int_equal(ssemu_ep_rma(t->ep[a], &r), -EINVAL);

	rl->hold = 1;
	r = mk(t, b, SSEMU_RMA_READ, 21, 0, max, NULL, 3);
	r.flags = SSEMU_RMA_DIRECT;
	post(t, a, &r, 0);
	run_idle(t, 0);
	ev = held_of(3);
	assert_int_equal(ev->status, 0);
	assert_int_equal(ev->len, max);
	/* nothing in the slot: the bytes come from the target's memory */
	assert_null(ssemu_event_data(t->ep[a], ev));
	assert_int_equal(ssemu_event_copy(t->ep[a], ev, 0, back, max), 0);
	memset(back, 0, max);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, back, max), 0);
	assert_memory_equal(back, mem, max);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 100, back, 50), 0);
	assert_memory_equal(back, mem + 100, 50);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, max - 1, back, 2),
			 -EINVAL);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, NULL, 2), -EINVAL);
	/* a plain read's results are not read so */
	r.flags = 0;
	r.cookie = 4;
	rl->hold = 4;
	post(t, a, &r, 0);
	run_idle(t, 0);
	assert_int_equal(ssemu_event_read(t->ep[a], held_of(4), 0, back, 8),
			 -EINVAL);
	ssemu_event_release(t->ep[a], held_of(4));
	ssemu_event_release(t->ep[a], held_of(3));
	rl->nheld = 0;

	/* more direct reads of the largest size held at once than the
	 * endpoint has large buffers: they take none */
	rl->hold = 1;
	r.flags = SSEMU_RMA_DIRECT;
	for (k = 0; k < nbufs + 2; k++) {
		r.cookie = 100 + k;
		post(t, a, &r, 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->nheld, nbufs + 2);
	for (k = 0; k < nbufs + 2; k++) {
		ev = held_of(100 + k);
		assert_int_equal(ev->status, 0);
		assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, back, max),
				 0);
		assert_memory_equal(back, mem, max);
		ssemu_event_release(t->ep[a], ev);
	}
	rl->nheld = 0;

	/* the target's answer changed in the segment: not followed */
	r.cookie = 200;
	post(t, a, &r, 0);
	run_idle(t, 0);
	errs = crc_errors(t);
	rma_slot_data(t, 200)[2] ^= 0x40;
	memset(back, 0, 8);
	assert_int_equal(ssemu_event_read(t->ep[a], held_of(200), 0, back,
					  8), -EBADMSG);
	assert_int_equal(crc_errors(t), errs + 1);
	for (i = 0; i < 8; i++)
		assert_int_equal(back[i], 0);
	ssemu_event_release(t->ep[a], held_of(200));
	rl->nheld = 0;

	/* the region withdrawn between the target and the copy */
	r.cookie = 201;
	post(t, a, &r, 0);
	run_idle(t, 0);
	assert_int_equal(ssemu_mr_dereg(t->nic[b], 21), 0);
	assert_int_equal(ssemu_event_read(t->ep[a], held_of(201), 0, back,
					  8), -ENOKEY);
	ssemu_event_release(t->ep[a], held_of(201));
	rl->nheld = 0;

	/* memory not mapped: at the target (a region registered longer
	 * than its mapping) and at the initiator; nobody faults */
	bad = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(bad != MAP_FAILED);
	memset(bad, 0x33, pg);
	assert_int_equal(mprotect(bad + pg, pg, PROT_NONE), 0);
	reg(t, b, 22, bad, 2 * pg, 0, SSEMU_MR_READ);
	r = mk(t, b, SSEMU_RMA_READ, 22, pg - 64, 128, NULL, 202);
	r.flags = SSEMU_RMA_DIRECT;
	post(t, a, &r, 0);
	run_idle(t, 0);
	ev = held_of(202);
	assert_int_equal(ev->status, 0);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, back, 128),
			 -EFAULT);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, back, 64), 0);
	for (i = 0; i < 64; i++)
		assert_int_equal(back[i], 0x33);
	assert_int_equal(ssemu_event_read(t->ep[a], ev, 0, bad + pg, 64),
			 -EFAULT);
	ssemu_event_release(t->ep[a], ev);
	rl->nheld = 0;
	rl->hold = 0;
	tf_close(t);
	munmap(bad, 2 * pg);
	free(mem);
	free(back);

	/* the same modelled time as a plain read of as many bytes */
	plain = read_time(0);
	direct = read_time(SSEMU_RMA_DIRECT);
	assert_int_equal(direct, plain);
}

/*
 * A direct read's bytes copied at its post (ssemu_ep_read_early): the
 * region checked as the target checks the request, the bytes those of
 * the region, and the read itself modelled as ever (its completion, time
 * and status the same as a read nobody copied early).
 */
static void test_rma_read_early(void **state)
{
	unsigned a, b;
	struct tf *t = open2_in("switch", true, &a, &b);
	size_t len = 3 * t->cfg.mtu + 77, i;
	uint8_t *mem = malloc(len), *back = malloc(len), wo[64];
	struct ssemu_rma r;
	ssemu_time_t plain, early;
	size_t d;

	(void)state;
	assert_true(mem && back);
	for (i = 0; i < len; i++)
		mem[i] = pat(6, i);
	reg(t, b, 31, mem, len, 0x1000, SSEMU_MR_READ);
	reg(t, b, 32, wo, sizeof(wo), 0, SSEMU_MR_WRITE);

	/* posted, then copied before the engine runs it */
	r = mk(t, b, SSEMU_RMA_READ, 31, 0x1000, len, NULL, 1);
	r.flags = SSEMU_RMA_DIRECT;
	post(t, a, &r, 0);
	memset(back, 0, len);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, len), 0);
	assert_memory_equal(back, mem, len);
	memset(back, 0, len);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 100, back, 50), 0);
	assert_memory_equal(back, mem + 100, 50);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 0), 0);
	run_idle(t, 0);
	d = done_of(1);
	assert_int_equal(rl->done[d].status, 0);
	early = rl->done[d].time;
	tf_close(t);
	/* the same read on the same fresh fabric, nobody copying early:
	 * the model's the same */
	t = open2_in("switch", true, &a, &b);
	reg(t, b, 31, mem, len, 0x1000, SSEMU_MR_READ);
	reg(t, b, 32, wo, sizeof(wo), 0, SSEMU_MR_WRITE);
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, 0);
	plain = rl->done[d].time;
	assert_int_equal(early, plain);

	/* bad arguments */
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, len - 1, back, 2),
			 -EINVAL);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, NULL, 2),
			 -EINVAL);
	assert_int_equal(ssemu_ep_read_early(NULL, &r, 0, back, 2), -EINVAL);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], NULL, 0, back, 2),
			 -EINVAL);
	r.flags = 0;	/* not direct */
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 2),
			 -EINVAL);
	r.flags = SSEMU_RMA_DIRECT;
	/* the target's checks, with what its read would say */
	r.key = 99;
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 2),
			 -ENOKEY);
	r.key = 31;
	r.addr = 0x1000 + 8;	/* past the region's end */
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 2),
			 -ERANGE);
	r.cookie = 3;
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, -ERANGE);
	r = mk(t, b, SSEMU_RMA_READ, 32, 0, sizeof(wo), NULL, 4);
	r.flags = SSEMU_RMA_DIRECT;
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 8),
			 -EACCES);
	d = do_rma(t, a, &r);
	assert_int_equal(rl->done[d].status, -EACCES);
	/* no endpoint open at the address */
	r = mk(t, b, SSEMU_RMA_READ, 31, 0x1000, len, NULL, 5);
	r.flags = SSEMU_RMA_DIRECT;
	assert_true(t->cfg.eps_per_nic > 1);
	r.dest = SSEMU_ADDR(SSEMU_ADDR_PORT(r.dest), 1);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 8),
			 -ECONNREFUSED);
	r.dest = SSEMU_ADDR(SSEMU_ADDR_PORT(r.dest), t->cfg.eps_per_nic);
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 8),
			 -EINVAL);
	/* withdrawn: nothing there */
	assert_int_equal(ssemu_mr_dereg(t->nic[b], 31), 0);
	r = mk(t, b, SSEMU_RMA_READ, 31, 0x1000, len, NULL, 6);
	r.flags = SSEMU_RMA_DIRECT;
	assert_int_equal(ssemu_ep_read_early(t->ep[a], &r, 0, back, 8),
			 -ENOKEY);
	tf_close(t);
	free(mem);
	free(back);
}

/* Endpoints and NICs going away with operations in flight. */
static void test_rma_close_in_flight(void **state)
{
	unsigned a, b;
	struct tf *t = open2("2switch", &a, &b);
	uint32_t msgs = t->cfg.msgs_per_ep, bufs = t->cfg.bufs_per_ep, k;
	size_t big = 4 * t->cfg.mtu;
	uint8_t *mem = calloc(1, big);
	struct ssemu_rma r;
	int failed;

	assert_non_null(mem);
	reg(t, b, 8, mem, big, 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	r = mk(t, b, SSEMU_RMA_READ, 8, 0, 64, NULL, 0);
	r.flags = SSEMU_RMA_REMOTE_EVENT;
	/* the initiator closes with reads (small and large) queued, in
	 * flight, and done but never released (half of them: the others
	 * free slots for more); the target does not poll */
	rl->hold = 2;
	for (k = 0; k < msgs + msgs / 2; k++) {
		r.cookie = k;
		r.len = k % 4 == 1 ? big : 64;	/* released */
		post(t, a, &r, 1ull << b);
		/* the last few stay queued or in flight */
		if (k + 8 < msgs + msgs / 2) {
			assert_true(ssemu_fabric_progress(t->fab, 30) >= 0);
			pump(t, 1ull << b);
		}
	}
	assert_true(rl->nheld > 0);
	assert_true(ssemu_fabric_progress(t->fab, 20) >= 0);
	ssemu_ep_close(t->ep[a]);
	t->ep[a] = NULL;
	rl->hold = 0;
	run_idle(t, 0);
	/* some were done at the target after the close */
	assert_true(rl->nremote > rl->ndone);
	assert_int_equal(ssemu_ep_open(t->nic[a], &t->ep[a]), 0);
	/* every slot and every buffer can be had again at once (they are
	 * per endpoint index) */
	rlog_reset();
	r.len = 64;
	for (k = 0; k < msgs; k++) {
		r.cookie = k;
		assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	}
	run_idle(t, 0);
	r.len = big;
	for (k = 0; k < bufs; k++) {
		r.cookie = msgs + k;
		assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->ndone, msgs + bufs);
	for (k = 0; k < rl->ndone; k++)
		assert_int_equal(rl->done[k].status, 0);

	/* the target goes away with reads in flight: every read completes
	 * (those it had not done, or not sent all results of, failed) */
	rlog_reset();
	for (k = 0; k < msgs / 2; k++) {
		r.cookie = k;
		r.len = k % 4 ? 64 : big;
		post(t, a, &r, 0);
	}
	assert_true(ssemu_fabric_progress(t->fab, 100) >= 0);
	ssemu_ep_close(t->ep[b]);
	ssemu_nic_detach(t->nic[b]);
	t->ep[b] = NULL;
	t->nic[b] = NULL;
	run_idle(t, 0);
	assert_int_equal(rl->ndone, msgs / 2);
	for (k = 0, failed = 0; k < rl->ndone; k++) {
		if (rl->done[k].status) {
			assert_true(rl->done[k].status == -EHOSTUNREACH);
			failed++;
		}
	}
	assert_true(failed > 0);
	/* and everything is free again: to itself, now (loopback) */
	rlog_reset();
	r.dest = ssemu_ep_addr(t->ep[a]);
	r.len = 64;
	reg(t, a, 8, mem, big, 0, SSEMU_MR_READ | SSEMU_MR_WRITE);
	for (k = 0; k < msgs; k++) {
		r.cookie = k;
		assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
	}
	run_idle(t, 0);
	assert_int_equal(rl->ndone, msgs);
	assert_int_equal(rl->nremote, msgs);
	for (k = 0; k < rl->ndone; k++)
		assert_int_equal(rl->done[k].status, 0);
	tf_close(t);
	free(mem);
}

/*
 * Crash recovery (as after an engine runner died between two events) cut
 * in at many points of a run of fetch-adds and large reads: every
 * operation completes exactly once, none is done twice at the target (the
 * counters and the values fetched say so), no RMA_REMOTE event is lost or
 * doubled, and every slot comes back.
 */
static void test_rma_recover_no_repeat(void **state)
{
	const unsigned nops = 40;
	unsigned a, b, c, k, j, per[8], nfetch, nflag, cut;
	uint64_t ctr[8], one = 1, prev;
	struct iovec iov = { &one, 8 };
	uint8_t seen[8][64], *mem;
	size_t big, d;
	struct ssemu_rma r;
	struct tf *t;

	/* from before anything arrives to the last few completing */
	for (c = 0; c < 64; c++) {
		cut = c ? 80 + 23 * c : 1;
		t = open2("2switch", &a, &b);
		big = 4 * t->cfg.mtu;
		mem = malloc(big);
		assert_non_null(mem);
		for (k = 0; k < big; k++)
			mem[k] = pat(c, k);
		memset(ctr, 0, sizeof(ctr));
		memset(per, 0, sizeof(per));
		memset(seen, 0, sizeof(seen));
		reg(t, b, 1, ctr, sizeof(ctr), 0,
		    SSEMU_MR_READ | SSEMU_MR_WRITE);
		reg(t, b, 2, mem, big, 0, SSEMU_MR_READ);
		nfetch = nflag = 0;
		for (k = 0; k < nops; k++) {
			if (k % 4 == 3) {
				r = mk(t, b, SSEMU_RMA_READ, 2, 0, big, NULL,
				       k);
			} else {
				r = mk(t, b, SSEMU_RMA_FETCH, 1, 8 * (k % 8),
				       8, &iov, k);
				r.aop = SSEMU_AOP_SUM;
				r.dtype = SSEMU_UINT64;
				nfetch++;
			}
			if (k % 2) {
				r.flags = SSEMU_RMA_REMOTE_EVENT;
				nflag++;
			}
			r.hdr[1] = k;
			assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
		}
		assert_true(ssemu_fabric_progress(t->fab, cut) >= 0);
		pump(t, 0);
		assert_int_equal(ssemu_model_recover(t->fab->r), 0);
		run_idle(t, 0);
		assert_int_equal(rl->ndone, nops);
		for (k = 0; k < nops; k++) {
			d = done_of(k);
			if (rl->done[d].status)
				fail_msg("cut %u: op %u status %d", cut, k,
					 rl->done[d].status);
			for (j = 0; j < rl->ndone; j++)
				assert_true(j == d || rl->done[j].cookie != k);
			if (k % 4 == 3) {
				assert_memory_equal(rl->data[d], mem, big);
				continue;
			}
			memcpy(&prev, rl->data[d], 8);
			assert_true(prev < 64);
			assert_false(seen[k % 8][prev]);
			seen[k % 8][prev] = 1;
			per[k % 8]++;
		}
		/* each counter counted each of its operations once */
		for (j = 0; j < 8; j++)
			assert_int_equal(ctr[j], per[j]);
		assert_int_equal(rl->nremote, nflag);
		for (k = 0; k < rl->nremote; k++)
			for (j = 0; j < k; j++)
				assert_true(rl->remote[j].hdr[1] !=
					    rl->remote[k].hdr[1]);
		/* and every slot is free */
		r = mk(t, b, SSEMU_RMA_FETCH, 1, 0, 8, &iov, 1000);
		r.aop = SSEMU_AOP_SUM;
		r.dtype = SSEMU_UINT64;
		for (k = 0; k < t->cfg.msgs_per_ep; k++)
			assert_int_equal(ssemu_ep_rma(t->ep[a], &r), 0);
		run_idle(t, 0);
		assert_int_equal(ctr[0], per[0] + t->cfg.msgs_per_ep);
		tf_close(t);
		free(mem);
	}
	(void)nfetch;
}

/* ------------------------------------------------------------------ */
/* Across processes                                                     */
/* ------------------------------------------------------------------ */

static char shm_name[64];

static int teardown_segment(void **state)
{
	char path[80];

	snprintf(path, sizeof(path), "/%s", shm_name);
	shm_unlink(path);
	return 0;
}

static void shm_cfg(struct ssemu_config *c)
{
	assert_int_equal(ssemu_config_preset("switch", c), 0);
	c->max_nics = 8;
	c->max_switches = 1;
	c->eps_per_nic = 1;
	c->msgs_per_ep = 64;
	c->bufs_per_ep = 4;
	c->buf_size = 16384;
	c->max_pkts = 4096;
	c->max_events = 65536;
}

/* Open the shared fabric, attach a NIC and open its endpoint; exits the
 * (child) process on failure. */
static int shm_join(struct ssemu_fabric **f, struct ssemu_nic **nic,
		    struct ssemu_ep **ep)
{
	struct ssemu_fabric_opts o = {
		.store = SSEMU_STORE_SHM,
		.name = shm_name,
	};
	struct ssemu_config c;
	char err[256];
	int ret;

	shm_cfg(&c);
	o.config = &c;
	ret = ssemu_fabric_open(&o, f, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fabric open: %s\n", err);
		return ret;
	}
	ret = ssemu_nic_attach(*f, NULL, nic);
	if (!ret)
		ret = ssemu_ep_open(*nic, ep);
	return ret;
}

/* One operation to completion over a shared fabric (the caller drives
 * the engine). */
static int shm_rma(struct ssemu_ep *ep, const struct ssemu_rma *r,
		   void *result, size_t rlen)
{
	struct ssemu_event ev;
	int ret, n;
	uint64_t t0 = (uint64_t)time(NULL);

	while ((ret = ssemu_ep_rma(ep, r)) == -EAGAIN)
		ssemu_ep_wait(ep, 10);
	if (ret)
		return ret;
	for (;;) {
		n = ssemu_ep_poll(ep, &ev, 1);
		if (n == 1 && ev.type == SSEMU_EV_RMA_DONE &&
		    ev.cookie == r->cookie)
			break;
		if (n == 1)
			return -EPROTO;
		if ((uint64_t)time(NULL) - t0 > 20)
			return -ETIMEDOUT;
		ssemu_ep_wait(ep, 10);
	}
	ret = ev.status;
	if (!ret && result && (r->flags & SSEMU_RMA_DIRECT))
		ret = ssemu_event_read(ep, &ev, 0, result, rlen);
	else if (!ret && result &&
		 ssemu_event_copy(ep, &ev, 0, result, rlen) != rlen)
		ret = -EIO;
	ssemu_event_release(ep, &ev);
	return ret;
}

#define XP_LEN 4000
#define XP_CTR 4096	/* offset of the counter */
#define XP_FLAG 4104	/* offset of the "done" flag */
#define XP_MAGIC 0x600dcafe12345678ULL
#define XP_ADDS 1000

/*
 * The target process registers memory and then computes in a loop that
 * never calls into the emulator; the parent's engine writes, reads and
 * fetch-adds into it by cross-memory attach, then writes a flag that ends
 * the loop.  The child checks what its memory holds.
 */
static void test_rma_cross_process_passive_target(void **state)
{
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	int pfd[2], status, ret;
	uint8_t src[XP_LEN], back[XP_LEN];
	uint64_t one = 1, prev, flag = XP_MAGIC;
	struct iovec iov;
	struct ssemu_rma r;
	ssemu_addr_t child_addr;
	pid_t pid;
	size_t k;

	snprintf(shm_name, sizeof(shm_name), "ssemu-ut-rma-%d", (int)getpid());
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		static uint8_t mem[8192] __attribute__((aligned(64)));
		volatile uint64_t *vflag = (volatile uint64_t *)(mem + XP_FLAG);
		struct ssemu_mr_desc d = {
			.key = 0xabc, .addr = mem, .len = sizeof(mem),
			.base = 0, .access = SSEMU_MR_READ | SSEMU_MR_WRITE,
		};
		struct timespec nap = { 0, 1000000 };
		uint64_t ctr, spins = 0;
		int bad = 0;

		close(pfd[0]);
		alarm(30);
		if (shm_join(&f, &nic, &ep) || ssemu_mr_reg(nic, &d))
			_exit(2);
		child_addr = ssemu_ep_addr(ep);
		if (write(pfd[1], &child_addr, sizeof(child_addr)) !=
		    sizeof(child_addr))
			_exit(3);
		/* no fabric calls from here until the flag is set */
		while (*vflag != XP_MAGIC) {
			nanosleep(&nap, NULL);
			if (++spins > 20000)
				_exit(4);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (k = 0; k < XP_LEN; k++)
			if (mem[k] != pat(77, k))
				bad = 1;
		memcpy(&ctr, mem + XP_CTR, 8);
		if (ctr != XP_ADDS)
			bad |= 2;
		ssemu_ep_close(ep);
		ssemu_nic_detach(nic);
		ssemu_fabric_close(f);
		_exit(bad ? 10 + bad : 0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &child_addr, sizeof(child_addr)),
			 sizeof(child_addr));
	close(pfd[0]);
	ret = shm_join(&f, &nic, &ep);
	assert_int_equal(ret, 0);
	for (k = 0; k < XP_LEN; k++)
		src[k] = pat(77, k);
	iov = (struct iovec){ src, XP_LEN };
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_WRITE,
				.key = 0xabc, .addr = 0, .len = XP_LEN,
				.iov = &iov, .iov_count = 1, .cookie = 1 };
	assert_int_equal(shm_rma(ep, &r, NULL, 0), 0);
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_READ,
				.key = 0xabc, .addr = 0, .len = XP_LEN,
				.cookie = 2 };
	assert_int_equal(shm_rma(ep, &r, back, XP_LEN), 0);
	assert_memory_equal(back, src, XP_LEN);
	/* direct: this process copies from the child's memory itself */
	memset(back, 0, XP_LEN);
	r.flags = SSEMU_RMA_DIRECT;
	r.cookie = 4;
	assert_int_equal(shm_rma(ep, &r, back, XP_LEN), 0);
	assert_memory_equal(back, src, XP_LEN);
	iov = (struct iovec){ &one, 8 };
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_FETCH,
				.aop = SSEMU_AOP_SUM, .dtype = SSEMU_UINT64,
				.key = 0xabc, .addr = XP_CTR, .len = 8,
				.iov = &iov, .iov_count = 1 };
	for (k = 0; k < XP_ADDS; k++) {
		r.cookie = 100 + k;
		assert_int_equal(shm_rma(ep, &r, &prev, 8), 0);
		assert_int_equal(prev, k);
	}
	/* out of its region: refused, the child's memory untouched */
	r.addr = 8192;
	r.cookie = 5;
	assert_int_equal(shm_rma(ep, &r, &prev, 8), -ERANGE);
	iov = (struct iovec){ &flag, 8 };
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_WRITE,
				.key = 0xabc, .addr = XP_FLAG, .len = 8,
				.iov = &iov, .iov_count = 1, .cookie = 3 };
	assert_int_equal(shm_rma(ep, &r, NULL, 0), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("target process: %s %d",
			 WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) :
					     WTERMSIG(status));
	teardown_segment(NULL);
}

/*
 * The region's process dies without detaching: until its NIC is found
 * dead, operations on its memory fail with -ESRCH; after, nobody is there.
 */
static void test_rma_cross_process_target_gone(void **state)
{
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	int pfd[2], gfd[2], status;
	ssemu_addr_t child_addr;
	uint64_t v = 5, back;
	struct iovec iov = { &v, 8 };
	struct ssemu_rma r;
	pid_t pid;
	char go;

	snprintf(shm_name, sizeof(shm_name), "ssemu-ut-rmagone-%d",
		 (int)getpid());
	assert_int_equal(shm_join(&f, &nic, &ep), 0);
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(gfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		static uint64_t word;
		struct ssemu_fabric *cf;
		struct ssemu_nic *cn;
		struct ssemu_ep *ce;
		struct ssemu_mr_desc d = {
			.key = 3, .addr = &word, .len = 8,
			.access = SSEMU_MR_READ | SSEMU_MR_WRITE,
		};

		alarm(30);
		if (shm_join(&cf, &cn, &ce) || ssemu_mr_reg(cn, &d))
			_exit(2);
		child_addr = ssemu_ep_addr(ce);
		if (write(pfd[1], &child_addr, sizeof(child_addr)) !=
		    sizeof(child_addr) || read(gfd[0], &go, 1) != 1)
			_exit(3);
		_exit(0);	/* dies attached */
	}
	assert_int_equal(read(pfd[0], &child_addr, sizeof(child_addr)),
			 sizeof(child_addr));
	/* it is alive: served */
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_WRITE,
				.key = 3, .len = 8, .iov = &iov,
				.iov_count = 1, .cookie = 1 };
	assert_int_equal(shm_rma(ep, &r, NULL, 0), 0);
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_READ,
				.key = 3, .len = 8, .cookie = 2 };
	assert_int_equal(shm_rma(ep, &r, &back, 8), 0);
	assert_int_equal(back, 5);
	assert_int_equal(write(gfd[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* gone, its NIC not reaped yet (the liveness check runs every 64
	 * engine turns of a handle, at most every 20 ms) */
	r.cookie = 3;
	assert_int_equal(shm_rma(ep, &r, &back, 8), -ESRCH);
	iov.iov_base = &v;
	r = (struct ssemu_rma){ .dest = child_addr, .op = SSEMU_RMA_FETCH,
				.aop = SSEMU_AOP_SUM, .dtype = SSEMU_UINT64,
				.key = 3, .len = 8, .iov = &iov,
				.iov_count = 1, .cookie = 4 };
	assert_int_equal(shm_rma(ep, &r, &back, 8), -ESRCH);
	/* once the liveness check has run, nobody is there any more */
	usleep(25000);
	for (status = 0; status < 200; status++)
		ssemu_fabric_progress(f, 16);
	r.cookie = 5;
	assert_int_equal(shm_rma(ep, &r, &back, 8), -EHOSTUNREACH);
	close(pfd[0]);
	close(pfd[1]);
	close(gfd[0]);
	close(gfd[1]);
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	teardown_segment(NULL);
}

#define CF_PROCS 4
#define CF_ADDS 1000

/* Fetch-adds from four processes on one counter of a fifth. */
static void test_rma_cross_process_fetch_add(void **state)
{
	static uint64_t counter __attribute__((aligned(64)));
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	struct ssemu_mr_desc d = {
		.key = 7, .addr = &counter, .len = 8, .base = 0,
		.access = SSEMU_MR_READ | SSEMU_MR_WRITE,
	};
	uint64_t *seen;
	uint8_t *hit;
	pid_t pids[CF_PROCS];
	ssemu_addr_t target;
	int status, i, bad = 0;
	size_t k;

	snprintf(shm_name, sizeof(shm_name), "ssemu-ut-rmafa-%d",
		 (int)getpid());
	seen = mmap(NULL, CF_PROCS * CF_ADDS * sizeof(uint64_t),
		    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(seen != MAP_FAILED);
	counter = 0;
	assert_int_equal(shm_join(&f, &nic, &ep), 0);
	assert_int_equal(ssemu_mr_reg(nic, &d), 0);
	target = ssemu_ep_addr(ep);
	for (i = 0; i < CF_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (!pids[i]) {
			struct ssemu_fabric *cf;
			struct ssemu_nic *cn;
			struct ssemu_ep *ce;
			uint64_t one = 1, prev;
			struct iovec iov = { &one, 8 };
			struct ssemu_rma r = {
				.dest = target, .op = SSEMU_RMA_FETCH,
				.aop = SSEMU_AOP_SUM, .dtype = SSEMU_UINT64,
				.key = 7, .addr = 0, .len = 8,
				.iov = &iov, .iov_count = 1,
			};

			alarm(30);
			/* the parent's handles are not ours to use */
			if (shm_join(&cf, &cn, &ce))
				_exit(2);
			for (k = 0; k < CF_ADDS; k++) {
				r.cookie = k;
				if (shm_rma(ce, &r, &prev, 8))
					_exit(3);
				seen[i * CF_ADDS + k] = prev;
			}
			ssemu_ep_close(ce);
			ssemu_nic_detach(cn);
			ssemu_fabric_close(cf);
			_exit(0);
		}
	}
	/* the target does not take part: it waits for its children */
	for (i = 0; i < CF_PROCS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	assert_int_equal(bad, 0);
	assert_int_equal(counter, CF_PROCS * CF_ADDS);
	/* every previous value seen exactly once, each process's rising */
	hit = calloc(CF_PROCS * CF_ADDS, 1);
	assert_non_null(hit);
	for (k = 0; k < CF_PROCS * CF_ADDS; k++) {
		assert_true(seen[k] < CF_PROCS * CF_ADDS);
		assert_false(hit[seen[k]]);
		hit[seen[k]] = 1;
		if (k % CF_ADDS)
			assert_true(seen[k] > seen[k - 1]);
	}
	free(hit);
	munmap(seen, CF_PROCS * CF_ADDS * sizeof(uint64_t));
	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	teardown_segment(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rma_write_read_sizes),
		cmocka_unit_test(test_rma_write_read_sizes_2switch),
		cmocka_unit_test(test_rma_fetch_compare),
		cmocka_unit_test(test_rma_refused),
		cmocka_unit_test(test_rma_bad_args),
		cmocka_unit_test(test_rma_crc),
		cmocka_unit_test(test_rma_source_changing),
		cmocka_unit_test(test_rma_remote_events),
		cmocka_unit_test(test_rma_ordered),
		cmocka_unit_test(test_rma_ordered_adaptive),
		cmocka_unit_test(test_rma_response_modelled),
		cmocka_unit_test(test_rma_lone_read_recurrence),
		cmocka_unit_test(test_rma_lossy_results_recovered),
		cmocka_unit_test(test_rma_release_returns_slots),
		cmocka_unit_test(test_rma_direct_read),
		cmocka_unit_test(test_rma_read_early),
		cmocka_unit_test(test_rma_close_in_flight),
		cmocka_unit_test(test_rma_recover_no_repeat),
		cmocka_unit_test_teardown(test_rma_cross_process_passive_target,
					  teardown_segment),
		cmocka_unit_test_teardown(test_rma_cross_process_target_gone,
					  teardown_segment),
		cmocka_unit_test_teardown(test_rma_cross_process_fetch_add,
					  teardown_segment),
	};
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	rlog_reset();
	free(rl);
	return ret;
}
