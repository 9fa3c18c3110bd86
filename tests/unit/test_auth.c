/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of job isolation (emu/ssemu_auth.c): the default service, the
 * owner's table (add, remove, list, bad services), entitlement by uid, by
 * VNI and by the service's endpoint limit, a send to an endpoint on
 * another VNI (its sender's -ENOTCONN, the target's drop counters, no
 * receive), a send on the same VNI, memory regions restricted to a VNI
 * (an RMA on another refused and counted at the target), acknowledgements
 * and RMA results on another VNI than their operation's (refused at the
 * initiator, the operation failed), a class the service denies, the
 * configuration's services and share group, the per-VNI switch counters
 * and the VNI list parser.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_priv.h"	/* the packet pool, for test_reply_vni */
#include "ssemu_model_int.h"	/* sw_get, ssemu_auth_port_count */
#include "tf.h"

static struct ssemu_service svc(uint32_t id, uint16_t vni1, uint16_t vni2)
{
	struct ssemu_service s = { .id = id, .nvnis = vni2 ? 2 : 1,
				   .vnis = { vni1, vni2 }, .tc_mask = 0xff,
				   .nuids = 1, .uids = { (uint32_t)geteuid() } };

	return s;
}

/* Reopen endpoint @i of @t under service @id with @vni. */
static void reopen(struct tf *t, unsigned i, uint32_t id, uint32_t vni)
{
	ssemu_ep_close(t->ep[i]);
	t->ep[i] = NULL;
	assert_int_equal(ssemu_ep_open_auth(t->nic[i], id, vni, &t->ep[i]), 0);
}

/* A NIC on the next free port of @t whose endpoint is under service 2
 * (svc(2, 10, 11), added) with @vni; its index in @t. */
static unsigned add_on(struct tf *t, uint32_t vni)
{
	unsigned i = tf_add(t, SSEMU_PORT_ANY);

	reopen(t, i, 2, vni);
	return i;
}

static struct tf *tiny(void)
{
	struct ssemu_config c;

	tf_config(&c, "switch");
	return tf_open(&c);
}

static void test_default_service(void **state)
{
	struct ssemu_service l[4];
	struct tf *t = tiny();
	uint32_t id, vni;
	unsigned a;

	(void)state;
	assert_int_equal(ssemu_service_list(t->fab, l, 4), 1);
	assert_int_equal(l[0].id, SSEMU_SVC_ID_DEFAULT);
	assert_int_equal(l[0].nvnis, 1);
	assert_int_equal(l[0].vnis[0], SSEMU_VNI_DEFAULT);
	assert_int_equal(l[0].nuids, 0);
	assert_int_equal(l[0].tc_mask, (1u << t->cfg.ntclass) - 1);
	a = tf_add(t, SSEMU_PORT_ANY);
	ssemu_ep_auth(t->ep[a], &id, &vni);
	assert_int_equal(id, SSEMU_SVC_ID_DEFAULT);
	assert_int_equal(vni, SSEMU_VNI_DEFAULT);
	assert_int_equal(ssemu_service_list(t->fab, l, 4), 1);
	assert_int_equal(l[0].eps, 1);
	tf_close(t);
}

static void test_table(void **state)
{
	struct ssemu_service s = svc(2, 10, 11), l[4];
	struct tf *t = tiny();
	unsigned a;

	(void)state;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	assert_int_equal(ssemu_service_add(t->fab, &s), -EEXIST);
	s.id = 0;
	assert_int_equal(ssemu_service_add(t->fab, &s), -EINVAL);
	s = svc(3, 0, 0);
	assert_int_equal(ssemu_service_add(t->fab, &s), -EINVAL);
	s = svc(3, 5, 0);
	s.nvnis = 0;
	assert_int_equal(ssemu_service_add(t->fab, &s), -EINVAL);
	s = svc(3, 5, 0);
	s.tc_mask = 1u << 31;	/* no class of the fabric */
	assert_int_equal(ssemu_service_add(t->fab, &s), -EINVAL);
	s = svc(3, 5, 0);
	s.nvnis = SSEMU_SERVICE_VNIS + 1;
	assert_int_equal(ssemu_service_add(t->fab, &s), -EINVAL);
	assert_int_equal(ssemu_service_list(t->fab, l, 4), 2);
	assert_int_equal(l[1].id, 2);
	assert_int_equal(l[1].vnis[1], 11);
	assert_int_equal(ssemu_service_remove(t->fab, 7), -ENOENT);
	a = tf_add(t, SSEMU_PORT_ANY);
	reopen(t, a, 2, 11);
	assert_int_equal(ssemu_service_remove(t->fab, 2), -EBUSY);
	ssemu_ep_close(t->ep[a]);
	t->ep[a] = NULL;
	assert_int_equal(ssemu_service_remove(t->fab, 2), 0);
	assert_int_equal(ssemu_service_list(t->fab, l, 4), 1);
	/* without the default service, an endpoint must name one */
	assert_int_equal(ssemu_service_remove(t->fab, 1), 0);
	assert_int_equal(ssemu_ep_open(t->nic[a], &t->ep[a]), -ENOENT);
	t->ep[a] = NULL;
	tf_close(t);
}

static void test_entitlement(void **state)
{
	struct ssemu_service s = svc(2, 10, 0);
	struct ssemu_ep *ep, *ep2;
	struct tf *t = tiny();
	char why[128] = "";
	unsigned a;

	(void)state;
	s.uids[0] = (uint32_t)geteuid() + 1;	/* someone else's */
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	s = svc(3, 20, 0);
	s.max_eps = 1;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = tf_add(t, SSEMU_PORT_ANY);
	ssemu_ep_close(t->ep[a]);	/* (a NIC has two pids) */
	t->ep[a] = NULL;
	assert_int_equal(ssemu_auth_check(t->fab, 2, 10, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "does not belong to uid"));
	assert_int_equal(ssemu_ep_open_auth(t->nic[a], 2, 10, &ep), -EACCES);
	assert_int_equal(ssemu_auth_check(t->fab, 3, 21, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "does not allow VNI 21"));
	assert_int_equal(ssemu_auth_check(t->fab, 9, 10, why, sizeof(why)),
			 -ENOENT);
	assert_int_equal(ssemu_auth_check(t->fab, 3, 0, why, sizeof(why)),
			 -EINVAL);
	assert_int_equal(ssemu_auth_check(t->fab, 3, 70000, NULL, 0), -EINVAL);
	/* its endpoint limit */
	assert_int_equal(ssemu_ep_open_auth(t->nic[a], 3, 20, &ep), 0);
	assert_int_equal(ssemu_ep_open_auth(t->nic[a], 3, 20, &ep2), -EDQUOT);
	ssemu_ep_close(ep);
	assert_int_equal(ssemu_ep_open_auth(t->nic[a], 3, 20, &ep2), 0);
	ssemu_ep_close(ep2);
	tf_close(t);
}

/* The first logged SEND_DONE of endpoint @ep. */
static const struct ssemu_event *send_done(const struct tf *t, unsigned ep)
{
	size_t i;

	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ep == ep &&
		    t->log[i].ev.type == SSEMU_EV_SEND_DONE)
			return &t->log[i].ev;
	fail_msg("no SEND_DONE at endpoint %u", ep);
	return NULL;
}

static void test_isolation(void **state)
{
	struct ssemu_service s = svc(2, 10, 11);
	struct ssemu_nic_stats st;
	struct ssemu_job_vni_drops jd[4];
	struct ssemu_vni_count vc[SSEMU_SW_VNIS];
	static char buf[10000];
	struct tf *t = tiny();
	unsigned a, b, c, npkts;
	int i, n;

	(void)state;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = add_on(t, 10);
	b = add_on(t, 10);
	c = add_on(t, 11);
	npkts = (unsigned)((sizeof(buf) + t->cfg.mtu - 1) / t->cfg.mtu);
	/* same VNI: delivered */
	tf_send(t, a, b, buf, sizeof(buf), 0, 1, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, b, SSEMU_EV_RECV), 1);
	assert_int_equal(send_done(t, a)->status, 0);
	/* another VNI: refused at the target, the sender told */
	t->nlog = 0;
	tf_send(t, a, c, buf, sizeof(buf), 0, 2, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, c, SSEMU_EV_RECV), 0);
	assert_int_equal(send_done(t, a)->status, -ENOTCONN);
	assert_int_equal(ssemu_nic_stats(t->nic[c], &st), 0);
	assert_int_equal(st.vni_drops, npkts);
	assert_int_equal(st.rx_msgs, 0);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st), 0);
	assert_int_equal(st.vni_drops, 0);
	n = ssemu_vni_drops_by_job(t->fab, jd, 4);
	assert_int_equal(n, 1);
	assert_int_equal(jd[0].drops, npkts);
	/* the switch counted both VNIs (the data and its acks on 10, the
	 * refused data and its ack on 10: the sender's VNI) */
	n = ssemu_switch_vni_stats(t->fab, 0, vc, SSEMU_SW_VNIS);
	assert_int_equal(n, 1);
	assert_int_equal(vc[0].vni, 10);
	assert_true(vc[0].pkts >= 2 * npkts);
	/* c answers on its own VNI: refused at a, counted under VNI 11 */
	t->nlog = 0;
	tf_send(t, c, a, buf, 100, 0, 3, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(send_done(t, c)->status, -ENOTCONN);
	assert_int_equal(tf_count(t, a, SSEMU_EV_RECV), 0);
	n = ssemu_switch_vni_stats(t->fab, 0, vc, SSEMU_SW_VNIS);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)
		assert_true(vc[i].vni == 10 || vc[i].vni == 11);
	assert_int_equal(ssemu_switch_vni_stats(t->fab, 999, vc, 1), -EINVAL);
	tf_close(t);
}

/* Switch 0's per-VNI counts, read through the API, against what its
 * outputs counted by class: the same packets and bytes in all. */
static void vni_counts_whole(struct tf *t, uint64_t *pkts)
{
	struct ssemu_region *r = t->fab->r;
	struct ssemu_vni_count vc[SSEMU_SW_VNIS];
	struct ssemu_switch_sh *s = ssemu_r_switch(r, ssemu_sw_inst(r, 0));
	uint64_t vp = 0, vb = 0, cp = 0, cb = 0;
	uint32_t p, tc;
	int i, n;

	n = ssemu_switch_vni_stats(t->fab, 0, vc, SSEMU_SW_VNIS);
	assert_true(n >= 0);
	for (i = 0; i < n; i++) {
		vp += vc[i].pkts;
		vb += vc[i].bytes;
	}
	for (p = 0; p < r->topo.radix; p++)
		for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
			cp += ssemu_sw_port(r, s, p)->cls[tc].pkts;
			cb += ssemu_sw_port(r, s, p)->cls[tc].bytes;
		}
	assert_int_equal(vp, cp);
	assert_int_equal(vb, cb);
	*pkts = vp;
}

/*
 * A switch counts what it sends by VNI: two senders on two VNIs into one
 * output, read in the middle of the traffic and at its end; every packet
 * the switch's outputs sent is counted once, under its VNI.
 */
static void test_switch_vni_counts(void **state)
{
	struct ssemu_service s = svc(2, 10, 11);
	struct ssemu_vni_count vc[SSEMU_SW_VNIS];
	static char buf[20000];
	struct tf *t = tiny();
	uint64_t mid, end, v10 = 0, v11 = 0;
	unsigned a, c, d;
	int i, n;

	(void)state;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = add_on(t, 10);
	c = add_on(t, 11);
	d = add_on(t, 10);
	/* into d's output both ways: a's data on 10, c's on 11 (refused
	 * at d, its acknowledgement back on 11) */
	tf_send(t, a, d, buf, sizeof(buf), 0, 1, 0);
	tf_send(t, c, d, buf, sizeof(buf), 0, 2, 0);
	assert_int_equal(ssemu_fabric_run_until(t->fab, 600000), 0);
	vni_counts_whole(t, &mid);
	tf_run_idle(t, 100000);
	vni_counts_whole(t, &end);
	assert_true(mid > 0 && end > mid);
	n = ssemu_switch_vni_stats(t->fab, 0, vc, SSEMU_SW_VNIS);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		if (vc[i].vni == 10)
			v10 = vc[i].pkts;
		else if (vc[i].vni == 11)
			v11 = vc[i].pkts;
	}
	/* each message's data packets at least, under its own VNI */
	assert_true(v10 >= (sizeof(buf) + t->cfg.mtu - 1) / t->cfg.mtu);
	assert_true(v11 >= (sizeof(buf) + t->cfg.mtu - 1) / t->cfg.mtu);
	assert_int_equal(v10 + v11, end);
	tf_close(t);
}

/*
 * What a switch's table holds, from its definition: the VNIs in the order
 * they were first sent, the first SSEMU_SW_VNIS - 1 of them an entry each
 * (entry k the k-th VNI seen), every later one counted in the last entry,
 * whose VNI is 0.  @seen and @nseen: the VNIs so far, in that order.
 */
static void count_direct(struct ssemu_vni_count *v, uint16_t *seen,
			 uint32_t *nseen, uint16_t vni, uint32_t bytes)
{
	uint32_t rank = 0;

	while (rank < *nseen && seen[rank] != vni)
		rank++;
	if (rank == *nseen)
		seen[(*nseen)++] = vni;
	if (rank >= SSEMU_SW_VNIS - 1)
		rank = SSEMU_SW_VNIS - 1;
	else
		v[rank].vni = vni;
	v[rank].pkts++;
	v[rank].bytes += bytes;
}

/* Switch 0's table read through the API against @want, entry by entry
 * in order. */
static void table_is(struct tf *t, const struct ssemu_vni_count *want)
{
	struct ssemu_vni_count got[SSEMU_SW_VNIS];
	int i, n, k = 0;

	n = ssemu_switch_vni_stats(t->fab, 0, got, SSEMU_SW_VNIS);
	for (i = 0; i < SSEMU_SW_VNIS; i++) {
		if (!want[i].pkts)
			continue;
		assert_true(k < n);
		assert_int_equal(got[k].vni, want[i].vni);
		assert_int_equal(got[k].pkts, want[i].pkts);
		assert_int_equal(got[k].bytes, want[i].bytes);
		k++;
	}
	assert_int_equal(n, k);
}

/*
 * The sends' counts, kept by each output until its VNI changes, read as a
 * count of each packet on its own would have them: twelve VNIs on four
 * outputs (more than the table holds apart), a run of one VNI past a
 * port's 16-bit count, packets large enough to fill its 32-bit byte count;
 * read at points along the way.
 */
static void test_switch_vni_table(void **state)
{
	struct ssemu_vni_count want[SSEMU_SW_VNIS];
	uint16_t seen[12];
	uint32_t nseen = 0;
	struct tf *t = tiny();
	struct ssemu_region *r = t->fab->r;
	struct ssemu_switch_sh *s;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint32_t inst, i, bytes;
	uint16_t vni;
	bool run;

	(void)state;
	memset(want, 0, sizeof(want));
	s = sw_get(r, 0, &inst);
	assert_non_null(s);
	table_is(t, want);
	for (i = 0; i < 240000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		/* a long run of small packets of VNI 3 in the middle, on
		 * one output; elsewhere a large one now and then */
		run = i >= 80000 && i < 160000;
		vni = run ? 3 : 1 + (uint16_t)(x % 12);
		bytes = !run && i % 1000 == 999 ? 0x7fff0000u :
						  64 + (x >> 20) % 4096;
		ssemu_auth_port_count(s, ssemu_sw_port(r, s, run ? 2 :
				      (uint32_t)(x >> 40) % 4), vni, bytes);
		count_direct(want, seen, &nseen, vni, bytes);
		if (i % 40000 == 39999)
			table_is(t, want);
	}
	/* the ports' VNIs turned over: the switch's own table holds
	 * counts, not only what the ports keep */
	assert_true(s->vni[0].pkts > 0);
	tf_close(t);
}

/* The first logged event of @type at endpoint @ep, or NULL. */
static const struct ssemu_event *logged(const struct tf *t, unsigned ep,
					uint32_t type)
{
	size_t i;

	for (i = 0; i < t->nlog; i++)
		if (t->log[i].ep == ep && t->log[i].ev.type == type)
			return &t->log[i].ev;
	return NULL;
}

/* Run the model an event at a time, calling @meddle after each, until
 * endpoint @ep has an event of @type; its status (an RMA_DONE released). */
static int run_to(struct tf *t, unsigned ep, uint32_t type,
		  void (*meddle)(struct ssemu_region *r))
{
	const struct ssemu_event *ev = NULL;
	unsigned i;
	int status;

	for (i = 0; i < 1000000 && !ev; i++) {
		assert_true(ssemu_fabric_progress(t->fab, 1) >= 0);
		if (meddle)
			meddle(t->fab->r);
		tf_pump(t);
		ev = logged(t, ep, type);
	}
	assert_non_null(ev);
	status = ev->status;
	if (type == SSEMU_EV_RMA_DONE)
		ssemu_event_release(t->ep[ep], ev);
	t->nlog = 0;
	return status;
}

/* An RMA write of @len bytes from endpoint @from into region @key of
 * endpoint @to's NIC, at offset 0; its status. */
static int rma_write(struct tf *t, unsigned from, unsigned to, uint64_t key,
		     const void *data, size_t len)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct ssemu_rma r = { .dest = ssemu_ep_addr(t->ep[to]),
			       .op = SSEMU_RMA_WRITE, .key = key, .len = len,
			       .iov = &iov, .iov_count = 1, .cookie = key };

	assert_int_equal(ssemu_ep_rma(t->ep[from], &r), 0);
	return run_to(t, from, SSEMU_EV_RMA_DONE, NULL);
}

static void mr_reg(struct tf *t, unsigned ep, uint64_t key, void *buf,
		   size_t len, uint32_t vni)
{
	struct ssemu_mr_desc d = { .key = key, .addr = buf, .len = len,
				   .access = SSEMU_MR_READ | SSEMU_MR_WRITE,
				   .vni = vni };

	assert_int_equal(ssemu_mr_reg(t->nic[ep], &d), 0);
}

static void test_mr_vni(void **state)
{
	struct ssemu_service s = svc(2, 10, 11);
	struct ssemu_mr_desc bad = { .key = 9, .addr = &bad, .len = 8,
				     .access = SSEMU_MR_READ,
				     .vni = SSEMU_VNI_MAX + 1 };
	struct ssemu_job_vni_drops jd[4];
	static char mem10[64], mem11[64], any[64];
	struct ssemu_nic_stats st;
	char data[64];
	struct tf *t = tiny();
	unsigned a, b;

	(void)state;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = add_on(t, 10);
	b = add_on(t, 10);
	memset(data, 0x5a, sizeof(data));
	mr_reg(t, b, 1, mem10, sizeof(mem10), 10);
	mr_reg(t, b, 2, mem11, sizeof(mem11), 11);
	mr_reg(t, b, 3, any, sizeof(any), 0);
	assert_int_equal(ssemu_mr_reg(t->nic[b], &bad), -EINVAL);
	/* a region of the initiator's VNI, or of none: written */
	assert_int_equal(rma_write(t, a, b, 1, data, sizeof(data)), 0);
	assert_memory_equal(mem10, data, sizeof(data));
	assert_int_equal(rma_write(t, a, b, 3, data, sizeof(data)), 0);
	assert_memory_equal(any, data, sizeof(data));
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st), 0);
	assert_int_equal(st.vni_drops, 0);
	/* a region of another VNI (the target endpoint's is 10 as well):
	 * refused, untouched, counted at the target */
	assert_int_equal(rma_write(t, a, b, 2, data, sizeof(data)), -EACCES);
	assert_int_equal(mem11[0], 0);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st), 0);
	assert_int_equal(st.vni_drops, 1);
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st), 0);
	assert_int_equal(st.vni_drops, 0);
	assert_int_equal(ssemu_vni_drops_by_job(t->fab, jd, 4), 1);
	assert_int_equal(jd[0].drops, 1);
	/* from VNI 11: its own region only */
	reopen(t, a, 2, 11);
	reopen(t, b, 2, 11);
	assert_int_equal(rma_write(t, a, b, 2, data, sizeof(data)), 0);
	assert_memory_equal(mem11, data, sizeof(data));
	memset(mem10, 0, sizeof(mem10));
	assert_int_equal(rma_write(t, a, b, 1, data, sizeof(data)), -EACCES);
	assert_int_equal(mem10[0], 0);
	/* a direct read's early copy checks as the target NIC does: the
	 * region's VNI, then the target endpoint's */
	{
		struct ssemu_rma rd = { .dest = ssemu_ep_addr(t->ep[b]),
					.op = SSEMU_RMA_READ,
					.flags = SSEMU_RMA_DIRECT, .key = 2,
					.len = sizeof(mem11) };
		char back[64];

		memset(back, 0, sizeof(back));
		assert_int_equal(ssemu_ep_read_early(t->ep[a], &rd, 0, back,
						     sizeof(back)), 0);
		assert_memory_equal(back, mem11, sizeof(back));
		rd.key = 1;
		assert_int_equal(ssemu_ep_read_early(t->ep[a], &rd, 0, back,
						     sizeof(back)), -EACCES);
		rd.key = 3;
		assert_int_equal(ssemu_ep_read_early(t->ep[a], &rd, 0, back,
						     sizeof(back)), 0);
		reopen(t, b, 2, 10);
		rd.dest = ssemu_ep_addr(t->ep[b]);
		assert_int_equal(ssemu_ep_read_early(t->ep[a], &rd, 0, back,
						     sizeof(back)), -ENOTCONN);
	}
	tf_close(t);
}

/* Every acknowledgement (or every RMA results packet) in the packet pool
 * turned to VNI 11, as a process writing the segment could. */
static void acks_to_11(struct ssemu_region *r)
{
	uint32_t i;

	for (i = 0; i < r->config.max_pkts; i++)
		if (ssemu_r_pkt(r, i)->type == SSEMU_PKT_ACK)
			ssemu_r_pkt(r, i)->vni = 11;
}

static void resps_to_11(struct ssemu_region *r)
{
	uint32_t i;

	for (i = 0; i < r->config.max_pkts; i++)
		if (ssemu_r_pkt(r, i)->type == SSEMU_PKT_RESP)
			ssemu_r_pkt(r, i)->vni = 11;
}

static void test_reply_vni(void **state)
{
	struct ssemu_service s = svc(2, 10, 11);
	static char mem[64], out[64];
	struct ssemu_nic_stats st;
	struct tf *t = tiny();
	unsigned a, b;
	struct iovec iov = { .iov_base = out, .iov_len = sizeof(out) };
	struct ssemu_nic_stats st2;
	struct ssemu_rma rd, wr;

	(void)state;
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = add_on(t, 10);
	b = add_on(t, 10);
	/* a send whose acknowledgement comes back on another VNI: the
	 * initiator refuses it, the send fails (it never hangs) */
	t->nlog = 0;
	tf_send(t, a, b, out, sizeof(out), 0, 1, 0);
	assert_int_equal(run_to(t, a, SSEMU_EV_SEND_DONE, acks_to_11), -EIO);
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st), 0);
	assert_true(st.vni_drops >= 1);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st), 0);
	assert_int_equal(st.vni_drops, 0);
	/* untouched, the same send completes */
	tf_send(t, a, b, out, sizeof(out), 0, 2, 0);
	assert_int_equal(run_to(t, a, SSEMU_EV_SEND_DONE, NULL), 0);
	/* RMA results on another VNI: the read fails (its results go
	 * packet by packet, not as a train, so that they are in the pool
	 * between events for the meddling) */
	ssemu_model_trains = 0;
	mr_reg(t, b, 1, mem, sizeof(mem), 0);
	rd = (struct ssemu_rma){ .dest = ssemu_ep_addr(t->ep[b]),
				 .op = SSEMU_RMA_READ, .key = 1,
				 .len = sizeof(mem), .cookie = 7 };
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st), 0);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &rd), 0);
	assert_int_equal(run_to(t, a, SSEMU_EV_RMA_DONE, resps_to_11), -EIO);
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st2), 0);
	assert_true(st2.vni_drops > st.vni_drops);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &rd), 0);
	assert_int_equal(run_to(t, a, SSEMU_EV_RMA_DONE, NULL), 0);
	ssemu_model_trains = 1;
	/* the acknowledgement of an RMA write on another VNI: the target
	 * wrote (its packets were on VNI 10), the initiator refuses the
	 * acknowledgement and the write fails; nothing counted at the
	 * target */
	memset(out, 0x3c, sizeof(out));
	wr = (struct ssemu_rma){ .dest = ssemu_ep_addr(t->ep[b]),
				 .op = SSEMU_RMA_WRITE, .key = 1,
				 .len = sizeof(out), .iov = &iov,
				 .iov_count = 1, .cookie = 8 };
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st), 0);
	assert_int_equal(ssemu_ep_rma(t->ep[a], &wr), 0);
	assert_int_equal(run_to(t, a, SSEMU_EV_RMA_DONE, acks_to_11), -EIO);
	assert_memory_equal(mem, out, sizeof(out));
	assert_int_equal(ssemu_nic_stats(t->nic[a], &st2), 0);
	assert_true(st2.vni_drops > st.vni_drops);
	assert_int_equal(ssemu_nic_stats(t->nic[b], &st2), 0);
	assert_int_equal(st2.vni_drops, 0);
	tf_close(t);
}

static void test_tclass_denied(void **state)
{
	struct ssemu_service s = svc(2, 10, 0);
	struct tf *t = tiny();
	struct iovec iov = { "x", 1 };
	struct ssemu_send snd = { .iov = &iov, .iov_count = 1 };
	unsigned a, b;

	(void)state;
	assert_true(t->cfg.ntclass >= 2);
	s.tc_mask = 1u << 1;	/* class 1 only */
	assert_int_equal(ssemu_service_add(t->fab, &s), 0);
	a = add_on(t, 10);
	b = add_on(t, 10);
	assert_false(ssemu_ep_tclass_allowed(t->ep[a], 0));
	assert_true(ssemu_ep_tclass_allowed(t->ep[a], 1));
	snd.dest = ssemu_ep_addr(t->ep[b]);
	snd.tclass = 0;
	assert_int_equal(ssemu_ep_send(t->ep[a], &snd), -EACCES);
	snd.tclass = 1;
	assert_int_equal(ssemu_ep_send(t->ep[a], &snd), 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, b, SSEMU_EV_RECV), 1);
	tf_close(t);
}

static void test_config_services(void **state)
{
	struct ssemu_service l[4];
	struct ssemu_config c, c2;
	char err[256];
	struct tf *t;

	(void)state;
	tf_config(&c, "switch");
	c2 = c;
	c.nservices = 1;
	c.services[0] = svc(5, 50, 0);
	assert_int_equal(ssemu_config_validate(&c, err, sizeof(err)), 0);
	assert_true(ssemu_config_hash(&c) != ssemu_config_hash(&c2));
	assert_int_equal(ssemu_config_diff(&c, &c2, err, sizeof(err)), 1);
	t = tf_open(&c);
	assert_int_equal(ssemu_service_list(t->fab, l, 4), 2);
	assert_int_equal(l[1].id, 5);
	assert_int_equal(l[1].vnis[0], 50);
	tf_close(t);
	c.nservices = 2;
	c.services[1] = c.services[0];
	assert_int_equal(ssemu_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twice"));
	c.nservices = 1;
	c.services[0].vnis[0] = 0;
	assert_int_equal(ssemu_config_validate(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "VNI 0"));
}

/* Load @text as a configuration file: its ssemu_config_load result. */
static int load(const char *text, struct ssemu_config *c, char *err,
		size_t errlen)
{
	char path[] = "/tmp/test_auth_XXXXXX";
	int fd = mkstemp(path), ret;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	ret = ssemu_config_load(path, c, err, errlen);
	unlink(path);
	return ret;
}

static void test_config_file(void **state)
{
	struct ssemu_config c;
	char err[256];
	uint32_t i;

	(void)state;
	assert_int_equal(load("preset = \"switch\";\n"
			      "services = ( { id = 2; vnis = [10, 11]; "
			      "tclasses = [\"LOW_LATENCY\"]; uids = [1000, 1001]; "
			      "max_eps = 4; } );\n", &c, err, sizeof(err)), 0);
	assert_int_equal(c.nservices, 1);
	assert_int_equal(c.services[0].id, 2);
	assert_int_equal(c.services[0].nvnis, 2);
	assert_int_equal(c.services[0].vnis[1], 11);
	assert_int_equal(c.services[0].nuids, 2);
	assert_int_equal(c.services[0].uids[1], 1001);
	assert_int_equal(c.services[0].max_eps, 4);
	for (i = 0; strcmp(c.tclass[i].name, "LOW_LATENCY"); i++)
		assert_true(i + 1 < c.ntclass);
	assert_int_equal(c.services[0].tc_mask, 1u << i);
	assert_int_equal(load("services = ( { id = 2; } );\n", &c, err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "vnis"));
	assert_int_equal(load("services = ( { id = 2; vnis = [70000]; } );\n",
			      &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "out of range"));
	assert_int_equal(load("services = ( { id = 2; vnis = [5]; "
			      "tclasses = [\"nope\"]; } );\n", &c, err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no traffic class"));
	assert_int_equal(load("services = ( { id = 2; vnis = [5]; color = 1; "
			      "} );\n", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown key"));
	assert_int_equal(load("services = ( { id = 2; vnis = [5]; }, "
			      "{ id = 2; vnis = [6]; } );\n", &c, err,
			      sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "twice"));
}

static void test_config_share_group(void **state)
{
	struct ssemu_config c, d;
	char err[256];
	uint32_t gid;

	(void)state;
	assert_int_equal(load("preset = \"switch\";\n", &c, err,
			      sizeof(err)), 0);
	assert_int_equal(c.share_group, 0);
	assert_int_equal(load("share_group = 64999;\n", &d, err,
			      sizeof(err)), 0);
	assert_int_equal(d.share_group, 1);
	assert_int_equal(d.share_gid, 64999);
	/* who may attach is not what the fabric is */
	assert_true(ssemu_config_hash(&c) == ssemu_config_hash(&d));
	assert_int_equal(load("share_group = \"root\";\n", &d, err,
			      sizeof(err)), 0);
	assert_int_equal(d.share_gid, 0);
	assert_int_equal(load("share_group = \"64998\";\n", &d, err,
			      sizeof(err)), 0);
	assert_int_equal(d.share_gid, 64998);
	/* bad values name the file, the line and the key */
	assert_int_equal(load("preset = \"switch\";\n"
			      "share_group = \"no-such-group-xyz\";\n", &d,
			      err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":2: share_group: no group named "
				    "\"no-such-group-xyz\""));
	assert_int_equal(load("share_group = -1;\n", &d, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":1: share_group: -1: a group id"));
	assert_int_equal(load("share_group = 1.5;\n", &d, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "share_group: expected a group name"));
	assert_int_equal(load("share_group = \"\";\n", &d, err,
			      sizeof(err)), -EINVAL);
	assert_int_equal(ssemu_share_group_parse("4294967295", &gid, err,
						 sizeof(err)), -EINVAL);
	assert_int_equal(ssemu_share_group_parse("12x", &gid, err,
						 sizeof(err)), -EINVAL);
	assert_int_equal(ssemu_share_group_parse("12", &gid, err,
						 sizeof(err)), 0);
	assert_int_equal(gid, 12);
}

static void test_default_counts(void **state)
{
	struct ssemu_vni_count vc[SSEMU_SW_VNIS];
	struct tf *t = tiny();
	unsigned a, b;

	(void)state;
	a = tf_add(t, SSEMU_PORT_ANY);
	b = tf_add(t, SSEMU_PORT_ANY);
	tf_send(t, a, b, "hello", 5, 0, 1, 0);
	tf_run_idle(t, 100000);
	assert_int_equal(tf_count(t, b, SSEMU_EV_RECV), 1);
	assert_int_equal(ssemu_switch_vni_stats(t->fab, 0, vc, SSEMU_SW_VNIS),
			 1);
	assert_int_equal(vc[0].vni, SSEMU_VNI_DEFAULT);
	assert_int_equal(vc[0].pkts, 2);	/* the data and its ack */
	tf_close(t);
}

static void test_parse_vnis(void **state)
{
	static const char *bad[] = { "", ",", "x", "1,", ",1", "0", "65536",
				     "1;2", "-1", "1,,2", "99999999999999999",
				     "1,2,3" };
	uint16_t v[2];
	char err[128];
	size_t i;

	(void)state;
	assert_int_equal(ssemu_parse_vnis("5", v, 2, err, sizeof(err)), 1);
	assert_int_equal(v[0], 5);
	assert_int_equal(ssemu_parse_vnis("65535,7", v, 2, err, sizeof(err)),
			 2);
	assert_int_equal(v[0], 65535);
	assert_int_equal(v[1], 7);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		assert_int_equal(ssemu_parse_vnis(bad[i], v, 2, err,
						  sizeof(err)), -EINVAL);
		assert_true(err[0] != 0);
	}
	assert_int_equal(ssemu_parse_vnis(NULL, v, 2, err, sizeof(err)),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_service),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_entitlement),
		cmocka_unit_test(test_isolation),
		cmocka_unit_test(test_switch_vni_counts),
		cmocka_unit_test(test_switch_vni_table),
		cmocka_unit_test(test_mr_vni),
		cmocka_unit_test(test_reply_vni),
		cmocka_unit_test(test_tclass_denied),
		cmocka_unit_test(test_config_services),
		cmocka_unit_test(test_config_file),
		cmocka_unit_test(test_config_share_group),
		cmocka_unit_test(test_default_counts),
		cmocka_unit_test(test_parse_vnis),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
