/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets (fi_poll_open) and wait sets (fi_wait_open): fi_poll returns
 * the contexts of exactly the CQs and counters with news, a counter once
 * per change; members cannot close; fi_wait times out when nothing
 * happens, returns for a completion, a counter change and an EQ event,
 * and wakes a thread blocked in it; an FI_WAIT_FD set's descriptor
 * becomes readable for an event while the application sleeps in poll(2),
 * and fi_trywait tells when it is safe to sleep on it.
 */
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

/* Does @ctx[0..n) hold @want? */
static bool has(void **ctx, int n, void *want)
{
	int i;

	for (i = 0; i < n; i++) {
		if (ctx[i] == want)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Poll sets                                                            */
/* ------------------------------------------------------------------ */

static void test_poll_cq_cntr(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG, .counters = true };
	int cq0_ctx, cq1_ctx, rc_ctx, sc_ctx;
	struct fi_poll_attr pa = { 0 };
	struct fi_cq_tagged_entry e;
	struct fid_poll *ps;
	struct sse_res r;
	char sbuf[8] = "poll", rbuf[8];
	void *ctx[8];
	int n = 0, got_cq = 0, got_rc = 0, got_sc = 0;
	uint64_t deadline;

	sse_res_open(&r, 2, &o);
	/* contexts fi_poll hands back */
	r.cq[0]->fid.context = &cq0_ctx;
	r.cq[1]->fid.context = &cq1_ctx;
	r.rcntr[1]->fid.context = &rc_ctx;
	r.scntr[0]->fid.context = &sc_ctx;
	assert_fi_ok(fi_poll_open(r.domain, &pa, &ps));
	assert_fi_ok(fi_poll_add(ps, &r.cq[1]->fid, 0));
	assert_fi_ok(fi_poll_add(ps, &r.rcntr[1]->fid, 0));
	assert_fi_ok(fi_poll_add(ps, &r.scntr[0]->fid, 0));
	assert_int_equal(fi_poll_add(ps, &r.av->fid, 0), -FI_EINVAL);
	assert_int_equal(fi_poll(ps, ctx, 8), 0);	/* nothing yet */

	assert_fi_ok(fi_recv(r.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_send(r.ep[0], sbuf, sizeof(sbuf), NULL, r.addr[1],
			     NULL));
	/* fi_poll alone makes it all happen: it progresses the members */
	deadline = now_ms() + TMO;
	while ((!got_cq || !got_rc || !got_sc) && now_ms() < deadline) {
		n = fi_poll(ps, ctx, 8);
		assert_true(n >= 0 && n <= 3);
		assert_false(has(ctx, n, &cq0_ctx));	/* not a member */
		got_cq += has(ctx, n, &cq1_ctx);
		got_rc += has(ctx, n, &rc_ctx);
		got_sc += has(ctx, n, &sc_ctx);
	}
	assert_true(got_cq && got_rc && got_sc);
	/* a counter is news once per change; a CQ while it holds entries */
	assert_int_equal(got_rc, 1);
	assert_int_equal(got_sc, 1);
	n = fi_poll(ps, ctx, 8);
	assert_int_equal(n, 1);
	assert_ptr_equal(ctx[0], &cq1_ctx);
	/* count bounds what comes back */
	assert_fi_ok(fi_cntr_add(r.rcntr[1], 1));
	assert_int_equal(fi_poll(ps, ctx, 1), 1);
	assert_int_equal(sse_cq_wait(&r, r.cq[1], &e, NULL, TMO), 1);
	assert_string_equal(rbuf, "poll");
	n = fi_poll(ps, ctx, 8);
	assert_int_equal(n, 1);
	assert_ptr_equal(ctx[0], &rc_ctx);
	assert_int_equal(fi_poll(ps, ctx, 8), 0);

	/* members cannot close; the set cannot close with members */
	assert_int_equal(fi_close(&ps->fid), -FI_EBUSY);
	assert_fi_ok(fi_poll_del(ps, &r.cq[1]->fid, 0));
	assert_int_equal(fi_poll_del(ps, &r.cq[1]->fid, 0), -FI_ENOENT);
	assert_fi_ok(fi_poll_del(ps, &r.rcntr[1]->fid, 0));
	assert_int_equal(fi_close(&r.scntr[0]->fid), -FI_EBUSY);
	assert_fi_ok(fi_poll_del(ps, &r.scntr[0]->fid, 0));
	assert_fi_ok(fi_close(&ps->fid));
	sse_res_close(&r);
}

/* ------------------------------------------------------------------ */
/* Wait sets                                                            */
/* ------------------------------------------------------------------ */

struct wres {
	struct sse_res r;	/* fabric, domain, AV */
	struct fid_wait *ws;
	struct fid_cq *cq[2];
	struct fid_cntr *cntr;
	struct fid_ep *ep[2];
	fi_addr_t addr[2];
};

/* Two endpoints whose CQs, and a counter, are in a wait set of @obj. */
static void wres_open(struct wres *w, enum fi_wait_obj obj)
{
	struct sse_res_opts o = { .caps = FI_MSG };
	struct fi_wait_attr wa = { .wait_obj = obj };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED,
				 .wait_obj = FI_WAIT_SET };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP,
				   .wait_obj = FI_WAIT_SET };
	char name[64];
	int i;

	memset(w, 0, sizeof(*w));
	sse_res_open(&w->r, 0, &o);
	assert_fi_ok(fi_wait_open(w->r.fabric, &wa, &w->ws));
	ca.wait_set = w->ws;
	na.wait_set = w->ws;
	assert_fi_ok(fi_cntr_open(w->r.domain, &na, &w->cntr, NULL));
	for (i = 0; i < 2; i++) {
		size_t len = sizeof(name);

		assert_fi_ok(fi_cq_open(w->r.domain, &ca, &w->cq[i], NULL));
		assert_fi_ok(fi_endpoint(w->r.domain, w->r.info, &w->ep[i],
					 NULL));
		assert_fi_ok(fi_ep_bind(w->ep[i], &w->r.av->fid, 0));
		assert_fi_ok(fi_ep_bind(w->ep[i], &w->cq[i]->fid,
					FI_TRANSMIT | FI_RECV));
		assert_fi_ok(fi_enable(w->ep[i]));
		assert_fi_ok(fi_getname(&w->ep[i]->fid, name, &len));
		assert_int_equal(fi_av_insert(w->r.av, name, 1, &w->addr[i],
					      0, NULL), 1);
	}
}

static void wres_close(struct wres *w)
{
	int i;

	/* the set is busy while it has members */
	assert_int_equal(fi_close(&w->ws->fid), -FI_EBUSY);
	for (i = 0; i < 2; i++) {
		assert_fi_ok(fi_close(&w->ep[i]->fid));
		assert_fi_ok(fi_close(&w->cq[i]->fid));
	}
	assert_fi_ok(fi_close(&w->cntr->fid));
	assert_fi_ok(fi_close(&w->ws->fid));
	sse_res_close(&w->r);
}

/* Read every CQ entry until fi_wait has nothing more for 30 ms. */
static int drain(struct wres *w)
{
	struct fi_cq_tagged_entry e;
	int n = 0, i;

	while (fi_wait(w->ws, 30) == 0) {
		for (i = 0; i < 2; i++) {
			while (fi_cq_read(w->cq[i], &e, 1) == 1)
				n++;
		}
	}
	return n;
}

static void test_wait_unspec(void **state)
{
	struct fi_cq_tagged_entry e;
	enum fi_wait_obj obj;
	struct wres w;
	char sbuf[8] = "wait", rbuf[8] = "";
	uint64_t t0;
	int fd;

	wres_open(&w, FI_WAIT_UNSPEC);
	assert_fi_ok(fi_control(&w.ws->fid, FI_GETWAITOBJ, &obj));
	assert_int_equal(obj, FI_WAIT_UNSPEC);
	assert_int_equal(fi_control(&w.ws->fid, FI_GETWAIT, &fd),
			 -FI_ENODATA);
	/* nothing happens: a timeout, after the time asked for */
	t0 = now_ms();
	assert_int_equal(fi_wait(w.ws, 60), -FI_ETIMEDOUT);
	assert_true(now_ms() - t0 >= 60);
	assert_true(now_ms() - t0 < 60 + 1000);

	/* a completion: fi_wait drives progress and returns */
	assert_fi_ok(fi_recv(w.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_send(w.ep[0], sbuf, sizeof(sbuf), NULL, w.addr[1],
			     NULL));
	assert_fi_ok(fi_wait(w.ws, TMO));
	assert_int_equal(drain(&w), 2);	/* send and receive */
	assert_string_equal(rbuf, "wait");
	assert_int_equal(fi_cq_read(w.cq[1], &e, 1), -FI_EAGAIN);
	assert_int_equal(fi_wait(w.ws, 20), -FI_ETIMEDOUT);

	/* a counter that moves: news once */
	assert_fi_ok(fi_cntr_add(w.cntr, 3));
	assert_fi_ok(fi_wait(w.ws, TMO));
	assert_int_equal(fi_wait(w.ws, 20), -FI_ETIMEDOUT);
	wres_close(&w);
}

struct waiter {
	struct fid_wait *ws;
	int ret;
	uint64_t woke;
};

static void *waiter_run(void *arg)
{
	struct waiter *wt = arg;

	wt->ret = fi_wait(wt->ws, TMO);
	wt->woke = now_ms();
	return NULL;
}

/* A thread blocked in fi_wait wakes for a message sent later. */
static void test_wait_blocks_until_event(void **state)
{
	struct waiter wt = { 0 };
	struct wres w;
	char sbuf[8] = "late", rbuf[8] = "";
	pthread_t th;
	uint64_t sent;

	wres_open(&w, FI_WAIT_UNSPEC);
	assert_fi_ok(fi_recv(w.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	wt.ws = w.ws;
	assert_int_equal(pthread_create(&th, NULL, waiter_run, &wt), 0);
	usleep(150 * 1000);
	assert_int_equal(wt.woke, 0);	/* still blocked */
	sent = now_ms();
	assert_fi_ok(fi_send(w.ep[0], sbuf, sizeof(sbuf), NULL, w.addr[1],
			     NULL));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(wt.ret, 0);
	assert_true(wt.woke >= sent);
	assert_true(wt.woke - sent < 1000);
	assert_int_equal(drain(&w), 2);
	assert_string_equal(rbuf, "late");
	wres_close(&w);
}

static void test_wait_fd(void **state)
{
	struct fi_eq_attr qa = { .wait_obj = FI_WAIT_SET, .flags = FI_WRITE };
	struct fi_cq_tagged_entry e;
	struct fi_eq_entry ee = { .context = &qa };
	uint32_t event;
	struct fid *fids[1];
	struct fid_eq *eq;
	struct wres w;
	char sbuf[8] = "fd", rbuf[8] = "";
	int fd = -1, n = 0, i;

	wres_open(&w, FI_WAIT_FD);
	assert_fi_ok(fi_control(&w.ws->fid, FI_GETWAIT, &fd));
	assert_true(fd >= 0);
	fids[0] = &w.ws->fid;
	assert_fi_ok(fi_trywait(w.r.fabric, fids, 1));
	assert_false(readable(fd, 0));

	/* the application sleeps in poll(2): the message still arrives */
	assert_fi_ok(fi_recv(w.ep[1], rbuf, sizeof(rbuf), NULL,
			     FI_ADDR_UNSPEC, NULL));
	assert_fi_ok(fi_send(w.ep[0], sbuf, sizeof(sbuf), NULL, w.addr[1],
			     NULL));
	assert_true(readable(fd, TMO));
	/* events queued: not safe to sleep */
	assert_int_equal(fi_trywait(w.r.fabric, fids, 1), -FI_EAGAIN);
	while (n < 2) {
		for (i = 0; i < 2; i++) {
			while (fi_cq_read(w.cq[i], &e, 1) == 1)
				n++;
		}
		if (n < 2)
			assert_true(readable(fd, TMO));
	}
	assert_string_equal(rbuf, "fd");
	/* all read: safe to sleep, and the descriptor is quiet */
	assert_fi_ok(fi_trywait(w.r.fabric, fids, 1));
	assert_false(readable(fd, 50));

	/* a counter moved by another party */
	assert_fi_ok(fi_cntr_add(w.cntr, 1));
	assert_true(readable(fd, TMO));
	assert_int_equal(fi_trywait(w.r.fabric, fids, 1), -FI_EAGAIN);
	assert_fi_ok(fi_trywait(w.r.fabric, fids, 1));
	assert_false(readable(fd, 0));

	/* an EQ in the set */
	qa.wait_set = w.ws;
	assert_fi_ok(fi_eq_open(w.r.fabric, &qa, &eq, NULL));
	assert_fi_ok(fi_trywait(w.r.fabric, fids, 1));
	assert_int_equal(fi_eq_write(eq, FI_NOTIFY, &ee, sizeof(ee), 0),
			 sizeof(ee));
	assert_true(readable(fd, TMO));
	assert_fi_ok(fi_wait(w.ws, TMO));
	assert_int_equal(fi_eq_read(eq, &event, &ee, sizeof(ee), 0),
			 sizeof(ee));
	assert_int_equal(event, FI_NOTIFY);
	assert_int_equal(fi_wait(w.ws, 20), -FI_ETIMEDOUT);
	assert_false(readable(fd, 0));
	assert_fi_ok(fi_close(&eq->fid));
	wres_close(&w);
}

static void test_wait_args(void **state)
{
	struct sse_res_opts o = { .caps = FI_MSG };
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_MUTEX_COND };
	struct fi_cq_attr ca = { .wait_obj = FI_WAIT_SET };
	struct fid_wait *ws;
	struct fid_cq *cq;
	struct sse_res r;

	sse_res_open(&r, 0, &o);
	assert_int_equal(fi_wait_open(r.fabric, &wa, &ws), -FI_ENOSYS);
	wa.wait_obj = FI_WAIT_FD;
	wa.flags = 1;
	assert_int_equal(fi_wait_open(r.fabric, &wa, &ws), -FI_EBADFLAGS);
	/* FI_WAIT_SET needs a wait set */
	assert_int_equal(fi_cq_open(r.domain, &ca, &cq, NULL), -FI_EINVAL);
	sse_res_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll_cq_cntr),
		cmocka_unit_test(test_wait_unspec),
		cmocka_unit_test(test_wait_blocks_until_event),
		cmocka_unit_test(test_wait_fd),
		cmocka_unit_test(test_wait_args),
	};

	sse_test_init("private", "poll");
	return cmocka_run_group_tests_name("poll", tests, NULL, NULL);
}
