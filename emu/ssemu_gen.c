/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Modelled jobs: traffic the engine generates itself.  Each rank of a
 * modelled job has a NIC, an endpoint and a generator of its own (slot gi
 * of each: ssemu_gen.h), made with the fabric and never detached.  A
 * generator takes a free message slot of its endpoint, fills it as a post
 * would (no payload: the NIC sends no bytes of it, the target counts what
 * arrives instead of copying it) and queues it at its NIC, where it meets
 * real traffic in the same windows, congestion control, routing, classes
 * and queues.  Its delivery and its last acknowledgement come back here
 * (ssemu_gen_deliver, ssemu_gen_complete) instead of to event rings.
 *
 * Rates: open loop at a load L sends a message every (its wire time on
 * the edge link) / L, from a random phase on, as `slingshot-emu sim
 * --load` does on average; a message with no free slot waits at the
 * source (owed) and goes when one frees.  Closed loop (inflight N) keeps N
 * messages in the model.  Allreduce is a dependency chain: recursive
 * doubling when the job has a power-of-two ranks (step k to rank ^ 2^k,
 * step k + 1 once the partner's step k arrived), a ring otherwise (2(n-1)
 * steps to rank + 1, each once the previous one from rank - 1 arrived).
 *
 * Clock: model time advances while the engine runs.  On a virtual clock
 * the engine holds still while no real message is in flight
 * (ssemu_gen_hold), unless a tool drives it (ssemu_fabric_run_until): the
 * computation of real processes takes no model time.  On a realtime clock
 * modelled traffic follows the dilated wall clock like everything else.
 */
#include <math.h>
#include <stdlib.h>

#include "ssemu_link.h"

#define GEN_RNG_COMPONENT 0x47454eULL	/* "GEN" */
#define GEN_NO_TICK 0
#define GEN_TICK 1

struct gen_job {
	struct ssemu_mjob_stats st;
	uint32_t first, n;	/* its generators [first, first + n) */
	uint32_t steps;		/* allreduce: messages per operation */
	uint32_t rd;		/* allreduce: doubling (0: a ring) */
	double gap_ps;		/* open loop: between two messages */
};

struct gen_ep {
	uint32_t job, rank, port;
	uint32_t cursor;	/* alltoall: next destination */
	uint32_t inflight;	/* its messages in the model */
	uint32_t owed;		/* open loop: due, no slot yet */
	uint32_t in_burst;	/* bursty: messages of this burst sent */
	uint32_t ar_step;	/* allreduce: next step to send */
	uint32_t alloc;		/* next slot to look at */
	uint32_t tick;		/* a GEN event is pending */
	uint64_t sent, received;
	uint64_t ar_op;		/* allreduce: the operation under way */
	ssemu_time_t first_post, last_post, op_start;
	uint32_t recv[SSEMU_GEN_AR_STEPS];	/* allreduce: per step */
	struct ssemu_rng rng;
};

struct gen_sh {
	uint32_t njobs, neps;
	uint64_t real_inflight;	/* real messages in the model */
	struct gen_job job[SSEMU_CONFIG_MJOBS];
	struct gen_ep ep[];
};

static struct gen_sh *gen_of(struct ssemu_region *r)
{
	return SSEMU_AT(r, r->gen_off);
}

uint64_t ssemu_gen_bytes(const struct ssemu_config *c)
{
	return sizeof(struct gen_sh) +
	       (uint64_t)ssemu_gen_neps(c) * sizeof(struct gen_ep);
}

/* ------------------------------------------------------------------ */
/* Placement                                                            */
/* ------------------------------------------------------------------ */

struct place_arg {
	const uint8_t *taken;
};

static bool gen_usable(void *arg, uint32_t port)
{
	return !((const struct place_arg *)arg)->taken[port];
}

/* Place job @j into @out (explicit runs, or its policy on what is left). */
static int place_job(const struct ssemu_config *c, const struct ssemu_topo *t,
		     uint32_t j, uint8_t *taken, uint32_t *out, char *err,
		     size_t errlen)
{
	const struct ssemu_mjob_desc *d = &c->mjobs[j];
	struct place_arg a = { taken };
	struct ssemu_place_req q = {
		.topo = t, .policy = d->placement, .nranks = d->endpoints,
		.seed = c->seed ^ ((uint64_t)j << 32), .usable = gen_usable,
		.arg = &a,
	};
	uint32_t i, k, n = 0;
	char why[200] = "";
	int ret;

	if (d->placement == SSEMU_PLACE_MAP) {
		for (i = 0; i < d->nruns && i < SSEMU_MJOB_RUNS; i++)
			for (k = 0; k < d->run_len[i] && n < d->endpoints; k++)
				out[n++] = d->run_first[i] + k;
		if (n != d->endpoints) {
			snprintf(err, errlen, "modelled job %s: %u ports "
				 "listed for %u endpoints", d->name, n,
				 d->endpoints);
			return -EINVAL;
		}
		for (i = 0; i < n; i++) {
			if (out[i] >= t->nendpoints || taken[out[i]]) {
				snprintf(err, errlen, "modelled job %s: port "
					 "%u is %s", d->name, out[i],
					 out[i] >= t->nendpoints ?
					 "not in the topology" :
					 "listed twice or by another job");
				return -EINVAL;
			}
			taken[out[i]] = 1;
		}
		return 0;
	}
	ret = ssemu_place_choose(&q, out, why, sizeof(why));
	if (ret < 0) {
		snprintf(err, errlen, "modelled job %s: %u endpoints placed "
			 "%s: %s", d->name, d->endpoints,
			 ssemu_place_policy_name(d->placement),
			 why[0] ? why : "not enough free ports");
		return -EINVAL;
	}
	for (i = 0; i < d->endpoints; i++)
		taken[out[i]] = 1;
	return 0;
}

int ssemu_gen_place(const struct ssemu_config *c, const struct ssemu_topo *t,
		    uint32_t *ports, char *err, size_t errlen)
{
	uint32_t j, first[SSEMU_CONFIG_MJOBS], n = 0;
	uint8_t *taken;
	int pass, ret = 0;

	taken = calloc(t->nendpoints ? t->nendpoints : 1, 1);
	if (!taken)
		return -ENOMEM;
	for (j = 0; j < c->nmjobs && j < SSEMU_CONFIG_MJOBS; j++) {
		first[j] = n;
		n += c->mjobs[j].endpoints;
	}
	if (n > t->nendpoints) {
		snprintf(err, errlen, "modelled jobs: %u endpoints, the "
			 "topology has %llu ports", n,
			 (unsigned long long)t->nendpoints);
		ret = -EINVAL;
	}
	/* explicit ports first: the policies place around them */
	for (pass = 0; pass < 2 && !ret; pass++)
		for (j = 0; j < c->nmjobs && j < SSEMU_CONFIG_MJOBS && !ret;
		     j++)
			if ((c->mjobs[j].placement == SSEMU_PLACE_MAP) ==
			    (pass == 0))
				ret = place_job(c, t, j, taken,
						ports + first[j], err, errlen);
	free(taken);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */
/* ------------------------------------------------------------------ */

/* A message's wire time on the edge link, ps. */
static double wire_ps(const struct ssemu_config *c, uint64_t size)
{
	uint64_t pkts = size ? (size + c->mtu - 1) / c->mtu : 1;
	double bytes = (double)size + (double)pkts * c->pkt_overhead;

	return bytes * 8.0 * 1e12 / (double)c->edge.rate_bps;
}

uint32_t ssemu_gen_port(struct ssemu_region *r, uint32_t gi)
{
	return gi < r->gen_neps ? gen_of(r)->ep[gi].port : 0;
}

static void tick_at(struct ssemu_region *r, uint32_t gi, ssemu_time_t t)
{
	struct gen_ep *ge = &gen_of(r)->ep[gi];

	if (ge->tick)
		return;
	ge->tick = 1;
	schedule(r, t, SSEMU_MEV_GEN, gi, GEN_TICK, 0);
}

/* Does rank @ge of job @j send at all? */
static bool gen_sender(const struct ssemu_mjob_desc *d, const struct gen_ep *ge,
		       uint32_t n)
{
	if (n < 2)
		return false;
	if (d->pattern == SSEMU_MJOB_INCAST ||
	    d->pattern == SSEMU_MJOB_BURSTY_INCAST)
		return ge->rank >= d->targets;
	return true;
}

/* NIC, endpoint and generator gi for rank @rank of job @j at @port. */
static void gen_attach(struct ssemu_region *r, uint32_t gi, uint32_t j,
		       uint32_t rank, uint32_t port)
{
	const struct ssemu_config *c = &r->config;
	struct ssemu_nic_sh *n = ssemu_r_nic(r, gi);
	struct ssemu_ep_sh *sh = ssemu_r_ep(r, gi);
	struct gen_ep *ge = &gen_of(r)->ep[gi];

	uint32_t tc;

	/* (a new region's NIC: its queues are empty, its credits full) */
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++)
		n->credits[tc] = tc < c->ntclass ? buf_cells(c) : 0;
	n->owner_pid = 0;
	n->port = port;
	n->job = SSEMU_MJOB_ID(j);
	n->rank = (int32_t)rank;
	n->jobslot = SSEMU_NONE;
	n->gen++;
	ssemu_tel_nic_attach(r, gi);
	n->state = SSEMU_NIC_ATTACHED;
	ssemu_r_portmap(r)[port] = gi;
	r->nnics++;

	ssemu_ring_init_tagged(ssemu_r_ring(r, sh->tx_ring_off),
			       c->msgs_per_ep);
	ssemu_ring_init(ssemu_r_ring(r, sh->ev_ring_off), r->config.ev_ring,
			sizeof(struct ssemu_event));
	sh->rx_head = sh->rx_tail = sh->tx_head = sh->tx_tail = SSEMU_NONE;
	sh->nic = gi;
	sh->pid = 0;
	sh->svc = SSEMU_SVC_ID_DEFAULT;
	sh->vni = SSEMU_VNI_DEFAULT;
	sh->gen++;
	ssemu_r_nic_eps(r, gi)[0] = gi;
	sh->open = 1;

	memset(ge, 0, sizeof(*ge));
	ge->job = j;
	ge->rank = rank;
	ge->port = port;
	ssemu_rng_seed(&ge->rng, c->seed ^ GEN_RNG_COMPONENT, gi);
}

int ssemu_gen_init(struct ssemu_region *r, uint64_t off)
{
	const struct ssemu_config *c = &r->config;
	struct gen_sh *g;
	uint32_t *ports, j, k, gi = 0;
	char err[256];
	int ret;

	r->gen_off = off;
	r->gen_neps = ssemu_gen_neps(c);
	g = gen_of(r);
	g->njobs = SSEMU_MIN(c->nmjobs, (uint32_t)SSEMU_CONFIG_MJOBS);
	g->neps = r->gen_neps;
	if (!r->gen_neps)
		return 0;
	ports = calloc(r->gen_neps, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	ret = ssemu_gen_place(c, &r->topo, ports, err, sizeof(err));
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "%s", err);
		free(ports);
		return ret;
	}
	for (j = 0; j < g->njobs; j++) {
		const struct ssemu_mjob_desc *d = &c->mjobs[j];
		struct gen_job *gj = &g->job[j];

		memcpy(gj->st.name, d->name, sizeof(gj->st.name));
		gj->st.name[SSEMU_NAME_MAX - 1] = 0;
		gj->st.endpoints = d->endpoints;
		gj->st.pattern = d->pattern;
		gj->st.tclass = d->tclass;
		gj->st.job = SSEMU_MJOB_ID(j);
		gj->first = gi;
		gj->n = d->endpoints;
		gj->rd = d->endpoints && !(d->endpoints & (d->endpoints - 1));
		gj->steps = gj->rd ? (uint32_t)__builtin_ctz(d->endpoints) :
				     2 * (d->endpoints - 1);
		gj->gap_ps = d->load > 0 ? wire_ps(c, d->size) / d->load : 0;
		for (k = 0; k < d->endpoints; k++, gi++)
			gen_attach(r, gi, j, k, ports[gi]);
		for (k = gj->first; k < gi; k++) {
			struct gen_ep *ge = &g->ep[k];
			ssemu_time_t t = d->start;

			if (!gen_sender(d, ge, gj->n))
				continue;
			if (d->pattern != SSEMU_MJOB_ALLREDUCE && d->load > 0)
				t += (ssemu_time_t)(ssemu_rng_double(&ge->rng) *
						    gj->gap_ps);
			tick_at(r, k, t);
		}
		ssemu_log(SSEMU_LOG_INFO, "modelled job %s: %u endpoints "
			  "(first at port %u), %s", d->name, d->endpoints,
			  d->endpoints ? ports[gj->first] : 0,
			  ssemu_mjob_pattern_name(d->pattern));
	}
	free(ports);
	return ssemu_broken(r) ? -EIO : 0;
}

/* ------------------------------------------------------------------ */
/* Generation                                                           */
/* ------------------------------------------------------------------ */

/* The next destination rank of @ge. */
static uint32_t gen_dest(const struct ssemu_mjob_desc *d,
			 const struct gen_job *gj, struct gen_ep *ge)
{
	uint32_t n = gj->n, dst;

	switch (d->pattern) {
	case SSEMU_MJOB_INCAST:
	case SSEMU_MJOB_BURSTY_INCAST:
		return ge->rank % d->targets;
	case SSEMU_MJOB_ALLTOALL:
		dst = (ge->rank + 1 + ge->cursor) % n;
		ge->cursor = (ge->cursor + 1) % (n - 1);
		return dst;
	case SSEMU_MJOB_BISECTION:
		dst = (ge->rank + n / 2) % n;
		return dst == ge->rank ? (ge->rank + 1) % n : dst;
	case SSEMU_MJOB_UNIFORM:
		dst = (uint32_t)ssemu_rng_below(&ge->rng, n - 1);
		return dst >= ge->rank ? dst + 1 : dst;
	default:
		return (ge->rank + 1) % n;
	}
}

/*
 * Message @mi joins NIC @gi's injection queue as ssemu_model_enqueue_msg
 * takes a posted one, and the NIC looks at it now (an event: the NIC's
 * code is above this file's, ssemu_model_int.h).
 */
static bool gen_enqueue(struct ssemu_region *r, uint32_t gi, uint32_t mi)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, gi);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);

	m->post_time = now_of(r);
	m->seq = ++r->msg_seq;
	m->mflags = SSEMU_MSGF_QUEUED;
	m->vni = ssemu_auth_ep_vni(r, gi);
	if (!injq_push(r, n, gi, mi))
		return false;
	n->stats.tx_msgs++;
	n->stats.tx_bytes += m->len;
	ssemu_tel_post(r, gi, m->tclass);
	schedule(r, now_of(r), SSEMU_MEV_NIC_KICK, gi, 0, 0);
	return true;
}

/*
 * Post a message from generator @gi to rank @dst of its job, step @step
 * (allreduce; in the header).  @return false: no free slot (it waits for
 * a completion), or the job's stop time has come (nothing is posted from
 * then on, not even what is owed or an operation's next step).
 */
static bool gen_post(struct ssemu_region *r, uint32_t gi, uint32_t dst,
		     uint32_t step)
{
	const struct ssemu_config *c = &r->config;
	struct gen_sh *g = gen_of(r);
	struct gen_ep *ge = &g->ep[gi];
	struct gen_job *gj = &g->job[ge->job];
	const struct ssemu_mjob_desc *d = &c->mjobs[ge->job];
	uint32_t k, low, mi = SSEMU_NONE, st, mask = c->msgs_per_ep - 1;
	uint32_t first = gi * c->msgs_per_ep;
	ssemu_time_t now = now_of(r);
	struct ssemu_msg *m;

	if (d->stop && now >= d->stop)
		return false;
	/* The lowest free one of the first chunk of slots, else the next
	 * free one after the last taken so, as a post takes them
	 * (msg_alloc): a generator with a few messages in flight keeps
	 * reusing the lines of its first slots, dense with every other
	 * endpoint's (ssemu_msg_place), where taking them round all of them
	 * would touch (and fault in) every slot of every endpoint as the run
	 * goes on. */
	for (k = 0, low = ssemu_msg_first_slots(r); k < low; k++) {
		st = ssemu_load_relaxed(ssemu_r_mstate(r, first + k));
		if (st == 0 || st == SSEMU_MSG_DONE) {
			mi = first + k;
			break;
		}
	}
	for (k = 0; mi == SSEMU_NONE && k <= mask; k++) {
		uint32_t i = first + ((ge->alloc + k) & mask);

		st = ssemu_load_relaxed(ssemu_r_mstate(r, i));
		if (st == 0 || st == SSEMU_MSG_DONE) {
			mi = i;
			ge->alloc = (ge->alloc + k + 1) & mask;
		}
	}
	if (mi == SSEMU_NONE)
		return false;
	m = ssemu_r_msg(r, mi);
	m->gen++;
	m->src = SSEMU_ADDR(ge->port, 0);
	m->dst = SSEMU_ADDR(g->ep[gj->first + dst].port, 0);
	m->buf = SSEMU_NONE;
	m->sent = m->arrived = m->acked = m->rx_acked = 0;
	m->rx_marked = 0;
	m->status = 0;
	m->ep_gen = ssemu_r_ep(r, gi)->gen;
	m->rma_op = 0;
	m->resp_npkts = m->resp_sent = m->resp_arrived = 0;
	m->rma_len = 0;
	m->tclass = d->tclass;
	m->flags = 0;
	m->len = d->size;
	memset(m->hdr, 0, sizeof(m->hdr));
	m->hdr[0] = step;
	m->hdr[1] = ge->ar_op;
	m->cookie = 0;
	m->crc = 0;
	m->npkts = d->size ? (uint32_t)((d->size + c->mtu - 1) / c->mtu) : 1;
	ssemu_store_release(ssemu_r_mstate(r, mi), SSEMU_MSG_BUSY);
	if (!gen_enqueue(r, gi, mi))
		return false;
	ge->inflight++;
	ge->sent++;
	if (!gj->st.posted || now < gj->st.first_post)
		gj->st.first_post = now;
	if (!ge->first_post && ge->sent == 1)
		ge->first_post = now;
	ge->last_post = now;
	gj->st.last_post = now;
	gj->st.posted++;
	return true;
}

/* Is generator @ge done for good (past its stop, or its count sent)? */
static bool gen_over(const struct ssemu_mjob_desc *d, const struct gen_ep *ge,
		     ssemu_time_t now)
{
	if (d->stop && now >= d->stop)
		return true;
	if (!d->count)
		return false;
	return d->pattern == SSEMU_MJOB_ALLREDUCE ? ge->ar_op >= d->count :
						    ge->sent >= d->count;
}

/* Post what is due: open loop, what is owed; closed loop, up to N. */
static void gen_flush(struct ssemu_region *r, uint32_t gi)
{
	struct gen_sh *g = gen_of(r);
	struct gen_ep *ge = &g->ep[gi];
	struct gen_job *gj = &g->job[ge->job];
	const struct ssemu_mjob_desc *d = &r->config.mjobs[ge->job];

	if (d->load > 0) {
		while (ge->owed && gen_post(r, gi, gen_dest(d, gj, ge), 0))
			ge->owed--;
		return;
	}
	while (ge->inflight < d->inflight && !gen_over(d, ge, now_of(r)) &&
	       gen_post(r, gi, gen_dest(d, gj, ge), 0))
		;
}

/* Allreduce: what generator @gi's partner for step @k is. */
static uint32_t ar_partner(const struct gen_job *gj, const struct gen_ep *ge,
			   uint32_t k)
{
	return gj->rd ? ge->rank ^ (1u << k) : (ge->rank + 1) % gj->n;
}

/* Have the messages step @k of the current operation waits for come? */
static bool ar_ready(const struct gen_job *gj, const struct gen_ep *ge,
		     uint32_t k)
{
	if (gj->rd)
		return ge->recv[k - 1] >= ge->ar_op + 1;
	return ge->recv[0] >= ge->ar_op * gj->steps + k;
}

static bool ar_done(const struct gen_job *gj, const struct gen_ep *ge)
{
	if (gj->rd)
		return ge->recv[gj->steps - 1] >= ge->ar_op + 1;
	return ge->recv[0] >= (ge->ar_op + 1) * gj->steps;
}

static void ar_latency(struct gen_job *gj, ssemu_time_t lat)
{
	gj->st.ops++;
	gj->st.op_lat_sum += lat;
	gj->st.op_lat[ssemu_tel_bin(lat)]++;
}

/* Allreduce: send every step that may go, close operations that are
 * done, start the next (after its gap). */
static void ar_advance(struct ssemu_region *r, uint32_t gi)
{
	struct gen_sh *g = gen_of(r);
	struct gen_ep *ge = &g->ep[gi];
	struct gen_job *gj = &g->job[ge->job];
	const struct ssemu_mjob_desc *d = &r->config.mjobs[ge->job];
	ssemu_time_t now = now_of(r);

	for (;;) {
		if (ge->ar_step == 0) {
			if (gen_over(d, ge, now) || ge->tick)
				return;
			/* (op_start: when the last one ended) */
			if (ge->ar_op && d->gap &&
			    now < ge->op_start + d->gap) {
				tick_at(r, gi, ge->op_start + d->gap);
				return;
			}
			ge->op_start = now;
		} else if (ge->ar_step < gj->steps && !ar_ready(gj, ge,
								 ge->ar_step)) {
			return;
		}
		if (ge->ar_step < gj->steps) {
			if (!gen_post(r, gi, ar_partner(gj, ge, ge->ar_step),
				      gj->rd ? ge->ar_step : 0))
				return;	/* a completion brings it back */
			ge->ar_step++;
			continue;
		}
		if (!ar_done(gj, ge))
			return;
		/* rank 0's operations stand for the job's */
		if (ge->rank == 0)
			ar_latency(gj, now - ge->op_start);
		ge->ar_op++;
		ge->ar_step = 0;
		ge->op_start = now;
	}
}

void ssemu_gen_tick(struct ssemu_region *r, uint32_t gi)
{
	struct gen_sh *g = gen_of(r);
	struct gen_ep *ge = &g->ep[gi];
	struct gen_job *gj = &g->job[ge->job];
	const struct ssemu_mjob_desc *d = &r->config.mjobs[ge->job];
	ssemu_time_t now = now_of(r), next;

	ge->tick = 0;
	if (d->pattern == SSEMU_MJOB_ALLREDUCE) {
		ar_advance(r, gi);
		return;
	}
	if (gen_over(d, ge, now))
		return;
	if (d->load <= 0) {
		gen_flush(r, gi);
		return;
	}
	if (!d->count || ge->sent + ge->owed < d->count)
		ge->owed++;
	gen_flush(r, gi);
	next = now + SSEMU_MAX((ssemu_time_t)llround(gj->gap_ps), 1);
	if (d->pattern == SSEMU_MJOB_BURSTY_INCAST &&
	    ++ge->in_burst >= SSEMU_MAX(d->burst, 1u)) {
		ge->in_burst = 0;
		next += d->gap;
	}
	if ((!d->stop || next < d->stop) &&
	    (!d->count || ge->sent + ge->owed < d->count))
		tick_at(r, gi, next);
}

void ssemu_gen_deliver(struct ssemu_region *r, uint32_t mi)
{
	struct gen_sh *g = gen_of(r);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	struct gen_ep *ge = &g->ep[ssemu_msg_ep(r, mi)];
	struct gen_job *gj = &g->job[ge->job];
	uint32_t tnic, step = (uint32_t)m->hdr[0];
	ssemu_time_t lat = now_of(r) - m->post_time;
	struct gen_ep *te;

	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
	if (m->status)
		return;	/* counted as failed when its source hears */
	tnic = ssemu_port_nic(r, SSEMU_ADDR_PORT(m->dst));
	if (tnic == SSEMU_NONE)
		return;
	ssemu_r_nic(r, tnic)->stats.rx_msgs++;
	ssemu_r_nic(r, tnic)->stats.rx_bytes += m->len;
	ssemu_tel_deliver(r, mi);
	gj->st.delivered++;
	gj->st.bytes += m->len;
	gj->st.lat_sum += lat;
	gj->st.lat[ssemu_tel_bin(lat)]++;
	if (tnic >= r->gen_neps)
		return;
	te = &g->ep[tnic];
	te->received++;
	if (r->config.mjobs[te->job].pattern == SSEMU_MJOB_ALLREDUCE &&
	    step < SSEMU_GEN_AR_STEPS) {
		te->recv[step]++;
		ar_advance(r, tnic);
	}
}

void ssemu_gen_sink(struct ssemu_region *r, uint32_t mi)
{
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t tnic = ssemu_port_nic(r, SSEMU_ADDR_PORT(m->dst));

	if (tnic < r->gen_neps) {
		ssemu_r_nic(r, tnic)->stats.rx_msgs++;
		ssemu_r_nic(r, tnic)->stats.rx_bytes += m->len;
		gen_of(r)->ep[tnic].received++;
	}
	ssemu_tel_deliver(r, mi);
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_RXDONE);
}

void ssemu_gen_complete(struct ssemu_region *r, uint32_t mi)
{
	struct gen_sh *g = gen_of(r);
	struct ssemu_msg *m = ssemu_r_msg(r, mi);
	uint32_t gi = ssemu_msg_ep(r, mi);
	struct gen_ep *ge = &g->ep[gi];
	struct gen_job *gj = &g->job[ge->job];

	gj->st.completed++;
	if (m->status)
		gj->st.failed++;
	msg_state_or(r, ssemu_msg_state(r, m), SSEMU_MSG_TXDONE);
	if (ge->inflight)
		ge->inflight--;
	if (r->config.mjobs[ge->job].pattern == SSEMU_MJOB_ALLREDUCE)
		ar_advance(r, gi);
	else
		gen_flush(r, gi);
}

void ssemu_gen_throttle(struct ssemu_region *r, uint32_t nic)
{
	struct gen_sh *g = gen_of(r);

	if (nic < r->gen_neps)
		g->job[g->ep[nic].job].st.throttles++;
}

void ssemu_gen_real_in(struct ssemu_region *r, struct ssemu_msg *m)
{
	m->mflags |= SSEMU_MSGF_REAL;
	gen_of(r)->real_inflight++;
}

SSEMU_HOT
void ssemu_gen_real_done(struct ssemu_region *r, struct ssemu_msg *m)
{
	struct gen_sh *g = gen_of(r);

	if (!(m->mflags & SSEMU_MSGF_REAL))
		return;
	m->mflags &= ~SSEMU_MSGF_REAL;
	if (g->real_inflight)
		g->real_inflight--;
}

void ssemu_gen_recount(struct ssemu_region *r)
{
	uint32_t mi, st;
	uint64_t n = 0;

	if (!r->gen_neps)
		return;
	for (mi = r->gen_neps * r->config.msgs_per_ep; mi < r->nmsgs; mi++) {
		st = ssemu_load_relaxed(ssemu_r_mstate(r, mi));
		if ((st & SSEMU_MSG_BUSY) && !(st & SSEMU_MSG_TXDONE) &&
		    (ssemu_r_msg(r, mi)->mflags & SSEMU_MSGF_REAL))
			n++;
	}
	gen_of(r)->real_inflight = n;
}

bool ssemu_gen_held(struct ssemu_region *r)
{
	/* (also read without the lock, as a hint: ssemu_runner.c's polls) */
	return !ssemu_load_relaxed(&gen_of(r)->real_inflight);
}

/* ------------------------------------------------------------------ */
/* What tools see                                                       */
/* ------------------------------------------------------------------ */

int ssemu_fabric_mjobs(struct ssemu_fabric *f, struct ssemu_mjob_stats *out,
		       uint32_t max)
{
	struct gen_sh *g;
	uint32_t j, n;

	if (!f || (max && !out))
		return -EINVAL;
	if (ssemu_fab_check(f))
		return -EIO;
	g = gen_of(f->r);
	n = SSEMU_MIN(f->cfg->nmjobs, (uint32_t)SSEMU_CONFIG_MJOBS);
	/* (counters the engine bumps: a snapshot, not under the lock) */
	for (j = 0; j < n && j < max; j++) {
		out[j] = g->job[j].st;
		out[j].name[SSEMU_NAME_MAX - 1] = 0;
	}
	return (int)n;
}

int ssemu_fabric_mjob_rank(struct ssemu_fabric *f, uint32_t job, uint32_t rank,
			   struct ssemu_mjob_rank *out)
{
	const struct ssemu_config *c;
	struct gen_ep *ge;
	uint32_t j, gi = 0;

	if (!f || !out)
		return -EINVAL;
	if (ssemu_fab_check(f))
		return -EIO;
	c = f->cfg;
	if (job >= c->nmjobs || job >= SSEMU_CONFIG_MJOBS ||
	    rank >= c->mjobs[job].endpoints)
		return -EINVAL;
	for (j = 0; j < job; j++)
		gi += c->mjobs[j].endpoints;
	ge = &gen_of(f->r)->ep[gi + rank];
	out->port = ge->port;
	out->inflight = ge->inflight;
	out->posted = ge->sent;
	out->received = ge->received;
	out->first_post = ge->first_post;
	out->last_post = ge->last_post;
	return 0;
}

void ssemu_mjob_print(FILE *o, const struct ssemu_config *c,
		      const struct ssemu_mjob_stats *st, uint32_t n,
		      ssemu_time_t now)
{
	struct ssemu_latency l, ol;
	uint32_t j;

	fprintf(o, "modelled_jobs: %u, model time %.3f us\n", n,
		(double)now / SSEMU_PS_PER_US);
	fprintf(o, "%-12s %5s %-13s %-16s %10s %10s %12s %8s %9s %9s %6s "
		"%9s\n", "job", "eps", "pattern", "class", "posted",
		"delivered", "bytes", "Gb/s", "p50_ns", "p99_ns", "drops",
		"throttles");
	for (j = 0; j < n; j++) {
		const struct ssemu_mjob_stats *s = &st[j];

		ssemu_tel_latency(s->lat, s->lat_sum, &l);
		fprintf(o, "%-12s %5u %-13s %-16s %10llu %10llu %12llu %8.2f "
			"%9.0f %9.0f %6llu %9llu\n", s->name, s->endpoints,
			ssemu_mjob_pattern_name(s->pattern),
			s->tclass < c->ntclass ? c->tclass[s->tclass].name :
						 "?",
			(unsigned long long)s->posted,
			(unsigned long long)s->delivered,
			(unsigned long long)s->bytes,
			now ? (double)s->bytes * 8000.0 / (double)now : 0.0,
			l.p50_ns, l.p99_ns, (unsigned long long)s->failed,
			(unsigned long long)s->throttles);
		if (s->pattern != SSEMU_MJOB_ALLREDUCE)
			continue;
		ssemu_tel_latency(s->op_lat, s->op_lat_sum, &ol);
		fprintf(o, "%-12s allreduce operations %llu: mean %.0f ns, "
			"p50 %.0f ns, p99 %.0f ns\n", s->name,
			(unsigned long long)s->ops, ol.mean_ns, ol.p50_ns,
			ol.p99_ns);
	}
}
