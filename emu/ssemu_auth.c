/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job isolation: the fabric's services, the VNI each endpoint holds, the
 * target NIC's VNI check and the per-VNI counters.
 *
 * A service (id, VNIs, traffic classes, users, endpoint limit) lives in
 * the segment's shared part, under the fabric lock; the default service
 * (SSEMU_SVC_ID_DEFAULT: VNI SSEMU_VNI_DEFAULT, every class, every user)
 * is there from the start, so that a fabric nobody configures behaves as
 * one without isolation.  Whether a process may use a service is decided
 * here, from its effective uid, when it opens an endpoint (twice: before,
 * for a clear answer, and under the lock while the endpoint is claimed);
 * nothing a process sets in its environment changes that.  The engine
 * stamps each message with its endpoint's VNI when it takes it, and every
 * packet carries it: a target NIC drops data for an endpoint on another
 * VNI, and RMA naming a memory region restricted to another VNI (an auth
 * key's); an initiator's NIC drops acknowledgements and RMA results on
 * another VNI than their operation's.
 *
 * The uid lists separate users only on a fabric several users may attach:
 * one created shared with a group (share_group, parsed here; the segment's
 * mode and group are set and checked by ssemu_store.c).
 */
#include <errno.h>
#include <grp.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ssemu_priv.h"
#include "ssemu_auth.h"

static uint32_t all_classes(const struct ssemu_config *c)
{
	return c->ntclass >= 32 ? UINT32_MAX : (1u << c->ntclass) - 1;
}

void ssemu_auth_init(struct ssemu_region *r, const struct ssemu_config *c)
{
	struct ssemu_service *d = &r->auth.svc[0];
	uint32_t i, k = 1;

	memset(&r->auth, 0, sizeof(r->auth));
	d->id = SSEMU_SVC_ID_DEFAULT;
	d->nvnis = 1;
	d->vnis[0] = SSEMU_VNI_DEFAULT;
	d->tc_mask = all_classes(c);
	for (i = 0; i < c->nservices && i < SSEMU_CONFIG_SERVICES; i++) {
		const struct ssemu_service *s = &c->services[i];

		/* a configuration's service of the default id replaces it */
		if (s->id == SSEMU_SVC_ID_DEFAULT) {
			*d = *s;
			d->eps = 0;
			continue;
		}
		if (k < SSEMU_MAX_SERVICES) {
			r->auth.svc[k] = *s;
			r->auth.svc[k++].eps = 0;
		}
	}
}

static const char *svc_problem(const struct ssemu_service *s, uint32_t ntc)
{
	uint32_t i;

	if (!s->id)
		return "service id 0 (ids start at 1)";
	if (!s->nvnis)
		return "no VNI";
	if (s->nvnis > SSEMU_SERVICE_VNIS)
		return "too many VNIs (at most 8)";
	for (i = 0; i < s->nvnis; i++)
		if (!s->vnis[i])
			return "VNI 0 (VNIs are 1 to 65535)";
	if (s->nuids > SSEMU_SERVICE_UIDS)
		return "too many users (at most 8)";
	if (!(s->tc_mask & (ntc >= 32 ? UINT32_MAX : (1u << ntc) - 1)))
		return "no traffic class of the fabric";
	return NULL;
}

int ssemu_auth_config_check(const struct ssemu_config *c, char *err,
			    size_t errlen)
{
	const char *why;
	uint32_t i, j;

	if (c->nservices > SSEMU_CONFIG_SERVICES) {
		snprintf(err, errlen, "services: %u of at most %u",
			 c->nservices, SSEMU_CONFIG_SERVICES);
		return -EINVAL;
	}
	for (i = 0; i < c->nservices; i++) {
		why = svc_problem(&c->services[i], c->ntclass);
		if (why) {
			snprintf(err, errlen, "services[%u]: %s", i, why);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (c->services[j].id == c->services[i].id) {
				snprintf(err, errlen, "services[%u]: id %u "
					 "twice", i, c->services[i].id);
				return -EINVAL;
			}
	}
	return 0;
}

static struct ssemu_service *svc_find_locked(struct ssemu_region *r,
					     uint32_t id)
{
	uint32_t i;

	for (i = 0; id && i < SSEMU_MAX_SERVICES; i++)
		if (r->auth.svc[i].id == id)
			return &r->auth.svc[i];
	return NULL;
}

/* Endpoints open under service @id now. */
static uint32_t svc_eps_locked(struct ssemu_region *r, uint32_t id)
{
	uint32_t i, n = 0;

	for (i = 0; i < r->neps; i++) {
		const struct ssemu_ep_sh *sh = ssemu_r_ep(r, i);

		n += ssemu_load_relaxed(&sh->open) && sh->svc == id;
	}
	return n;
}

static bool owner(const struct ssemu_region *r)
{
	return geteuid() == r->owner_uid || geteuid() == 0;
}

/* Is the caller entitled to @vni of @s?  0, or -EACCES/-EINVAL (@why). */
static int entitled(const struct ssemu_service *s, uint32_t vni, char *why,
		    size_t whylen)
{
	uid_t uid = geteuid();
	uint32_t i;
	bool ok = !s->nuids;

	if (!vni || vni > SSEMU_VNI_MAX) {
		snprintf(why, whylen, "VNI %u is out of range (1 to %u)", vni,
			 SSEMU_VNI_MAX);
		return -EINVAL;
	}
	for (i = 0; i < s->nuids && i < SSEMU_SERVICE_UIDS; i++)
		ok |= s->uids[i] == (uint32_t)uid;
	if (!ok) {
		snprintf(why, whylen, "service %u does not belong to uid %u",
			 s->id, (unsigned)uid);
		return -EACCES;
	}
	for (i = 0; i < s->nvnis && i < SSEMU_SERVICE_VNIS; i++)
		if (s->vnis[i] == vni)
			return 0;
	snprintf(why, whylen, "service %u does not allow VNI %u", s->id, vni);
	return -EACCES;
}

static int check_locked(struct ssemu_region *r, uint32_t id, uint32_t vni,
			char *why, size_t whylen)
{
	const struct ssemu_service *s = svc_find_locked(r, id);

	if (!s) {
		snprintf(why, whylen, "no service %u on the fabric", id);
		return -ENOENT;
	}
	return entitled(s, vni, why, whylen);
}

int ssemu_auth_check(struct ssemu_fabric *f, uint32_t id, uint32_t vni,
		     char *why, size_t whylen)
{
	char buf[128];
	int ret;

	if (!f)
		return -EINVAL;
	if (!why) {
		why = buf;
		whylen = sizeof(buf);
	}
	ret = ssemu_region_lock(f->r);
	if (ret)
		return ret;
	ret = check_locked(f->r, id, vni, why, whylen);
	ssemu_region_unlock(f->r);
	return ret;
}

int ssemu_auth_ep_open_locked(struct ssemu_region *r, struct ssemu_ep_sh *sh,
			      struct ssemu_ep *ep, uint32_t id, uint32_t vni)
{
	const struct ssemu_service *s;
	char why[128];
	int ret;

	ret = check_locked(r, id, vni, why, sizeof(why));
	if (ret) {
		ssemu_log(SSEMU_LOG_WARN, "endpoint refused: %s", why);
		return ret;
	}
	s = svc_find_locked(r, id);
	if (s->max_eps && svc_eps_locked(r, id) >= s->max_eps) {
		ssemu_log(SSEMU_LOG_WARN, "endpoint refused: service %u has "
			  "its %u endpoints open", id, s->max_eps);
		return -EDQUOT;
	}
	sh->svc = id;
	sh->vni = (uint16_t)vni;
	ep->tc_mask = s->tc_mask;
	return 0;
}

void ssemu_ep_auth(struct ssemu_ep *ep, uint32_t *id, uint32_t *vni)
{
	const struct ssemu_ep_sh *sh = ssemu_r_ep(ep->r, ep->index);

	if (id)
		*id = sh->svc;
	if (vni)
		*vni = sh->vni;
}

SSEMU_HOT
int ssemu_ep_tclass_allowed(struct ssemu_ep *ep, uint32_t tclass)
{
	return tclass < 32 && (ep->tc_mask >> tclass & 1);
}

/* ------------------------------------------------------------------ */
/* The table, for the fabric's owner                                    */
/* ------------------------------------------------------------------ */

int ssemu_service_add(struct ssemu_fabric *f, const struct ssemu_service *s)
{
	struct ssemu_region *r;
	struct ssemu_service *slot = NULL;
	const char *why;
	uint32_t i;
	int ret;

	if (!f || !s)
		return -EINVAL;
	r = f->r;
	why = svc_problem(s, f->cfg->ntclass);
	if (why) {
		ssemu_log(SSEMU_LOG_WARN, "service %u: %s", s->id, why);
		return -EINVAL;
	}
	if (!owner(r))
		return -EPERM;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	if (svc_find_locked(r, s->id)) {
		ret = -EEXIST;
		goto out;
	}
	for (i = 0; i < SSEMU_MAX_SERVICES && !slot; i++)
		if (!r->auth.svc[i].id)
			slot = &r->auth.svc[i];
	if (!slot) {
		ret = -ENOSPC;
		goto out;
	}
	*slot = *s;
	slot->eps = 0;
out:
	ssemu_region_unlock(r);
	return ret;
}

int ssemu_service_remove(struct ssemu_fabric *f, uint32_t id)
{
	struct ssemu_service *s;
	struct ssemu_region *r;
	int ret;

	if (!f)
		return -EINVAL;
	r = f->r;
	if (!owner(r))
		return -EPERM;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	s = svc_find_locked(r, id);
	if (!s)
		ret = -ENOENT;
	else if (svc_eps_locked(r, id))
		ret = -EBUSY;
	else
		memset(s, 0, sizeof(*s));
	ssemu_region_unlock(r);
	return ret;
}

/* The region of @f, locked for a reader that fills @out (up to @max), or
 * NULL with the error in *@ret. */
static struct ssemu_region *read_lock(struct ssemu_fabric *f, const void *out,
				      int max, int *ret)
{
	if (!f || (!out && max > 0)) {
		*ret = -EINVAL;
		return NULL;
	}
	*ret = ssemu_region_lock(f->r);
	return *ret ? NULL : f->r;
}

static int svc_cmp(const void *a, const void *b)
{
	const struct ssemu_service *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

int ssemu_service_list(struct ssemu_fabric *f, struct ssemu_service *out,
		       int max)
{
	struct ssemu_service all[SSEMU_MAX_SERVICES];
	struct ssemu_region *r;
	int i, n = 0, ret;

	r = read_lock(f, out, max, &ret);
	if (!r)
		return ret;
	for (i = 0; i < SSEMU_MAX_SERVICES; i++) {
		if (!r->auth.svc[i].id)
			continue;
		all[n] = r->auth.svc[i];
		all[n++].eps = svc_eps_locked(r, r->auth.svc[i].id);
	}
	ssemu_region_unlock(r);
	qsort(all, (size_t)n, sizeof(all[0]), svc_cmp);
	if (n > max)
		n = max > 0 ? max : 0;
	memcpy(out, all, (size_t)n * sizeof(all[0]));
	return n;
}

/* ------------------------------------------------------------------ */
/* The model's side                                                     */
/* ------------------------------------------------------------------ */

SSEMU_HOT
uint16_t ssemu_auth_ep_vni(struct ssemu_region *r, uint32_t epi)
{
	return ssemu_r_ep(r, epi)->vni;
}

/* A packet refused for its VNI at NIC @nic: its counters, the fabric's
 * and its job's. */
static void count_drop(struct ssemu_region *r, uint32_t nic)
{
	struct ssemu_nic_sh *n = ssemu_r_nic(r, nic);
	uint32_t i, free_slot = SSEMU_NONE;
	struct ssemu_job_vni_drops *j;

	n->stats.vni_drops++;
	r->auth.drops++;
	for (i = 0; i < SSEMU_AUTH_JOBS; i++) {
		j = &r->auth.job[i];
		if (j->drops && j->job == n->job) {
			j->drops++;
			return;
		}
		if (!j->drops && free_slot == SSEMU_NONE)
			free_slot = i;
	}
	if (free_slot != SSEMU_NONE) {
		r->auth.job[free_slot].job = n->job;
		r->auth.job[free_slot].drops = 1;
	}
}

SSEMU_HOT
bool ssemu_auth_rx_refused(struct ssemu_region *r, uint32_t nic,
			   const struct ssemu_msg *m,
			   const struct ssemu_pkt *pkt)
{
	uint32_t pid = SSEMU_ADDR_PID(m->dst), epi;

	if (pid >= r->config.eps_per_nic)
		return false;
	epi = ssemu_r_nic_eps(r, nic)[pid];
	/* nobody there: the delivery fails as it would without VNIs */
	if (epi >= r->neps || !ssemu_r_ep(r, epi)->open ||
	    ssemu_r_ep(r, epi)->vni == pkt->vni)
		return false;
	count_drop(r, nic);
	return true;
}

bool ssemu_auth_mr_refused(struct ssemu_region *r, uint32_t nic,
			   const struct ssemu_mr_sh *mr,
			   const struct ssemu_msg *m)
{
	if (!mr->vni || mr->vni == m->vni)
		return false;
	count_drop(r, nic);
	ssemu_log(SSEMU_LOG_DEBUG, "an RMA from port %u on VNI %u named a "
		  "memory region of port %u on VNI %u: refused",
		  SSEMU_ADDR_PORT(m->src), (unsigned)m->vni,
		  SSEMU_ADDR_PORT(m->dst), mr->vni);
	return true;
}

SSEMU_HOT
bool ssemu_auth_reply_refused(struct ssemu_region *r, uint32_t nic,
			      const struct ssemu_msg *m,
			      const struct ssemu_pkt *pkt)
{
	static bool warned;

	if (pkt->vni == m->vni)
		return false;
	count_drop(r, nic);
	ssemu_log(warned ? SSEMU_LOG_DEBUG : SSEMU_LOG_WARN, "%s for a "
		  "message from port %u on VNI %u came on VNI %u: refused, "
		  "the message fails (further ones are logged at debug level)",
		  pkt->type == SSEMU_PKT_ACK ? "an acknowledgement" :
					       "RMA results",
		  SSEMU_ADDR_PORT(m->src), (unsigned)m->vni,
		  (unsigned)pkt->vni);
	warned = true;
	return true;
}

/*
 * The entry of table @v that counts @vni: its own, or the first free one,
 * claimed for it; the last entry takes the VNIs that find no room (its VNI
 * stays 0).  A VNI is never 0 (ssemu_auth_ep_open_locked).
 */
static struct ssemu_vni_count *vni_entry(struct ssemu_vni_count *v,
					 uint16_t vni)
{
	uint32_t i;

	for (i = 0; i < SSEMU_SW_VNIS - 1; i++) {
		if (v[i].vni == vni)
			break;
		if (!v[i].vni) {
			v[i].vni = vni;
			break;
		}
	}
	return &v[i];
}

/* The port's count @a added to table @v. */
static void vni_add(struct ssemu_vni_count *v, const struct ssemu_vni_acc *a)
{
	struct ssemu_vni_count *e;

	if (!a->pkts)
		return;
	e = vni_entry(v, a->vni);
	e->pkts += a->pkts;
	e->bytes += a->bytes;
}

void ssemu_auth_port_turn(struct ssemu_switch_sh *s, struct ssemu_swport *op,
			  uint16_t vni, uint32_t bytes)
{
	vni_add(s->vni, &op->vacc);
	(void)vni_entry(s->vni, vni);
	op->vacc.vni = vni;
	op->vacc.pkts = 1;
	op->vacc.bytes = bytes;
}

int ssemu_switch_vni_stats(struct ssemu_fabric *f, uint32_t sw,
			   struct ssemu_vni_count *out, int max)
{
	struct ssemu_vni_count v[SSEMU_SW_VNIS];
	struct ssemu_switch_sh *s;
	struct ssemu_region *r;
	uint32_t inst, p;
	int i, n = 0, ret;

	if (f && sw >= f->cfg->topo.groups * f->cfg->topo.switches_per_group)
		return -EINVAL;
	r = read_lock(f, out, max, &ret);
	if (!r)
		return ret;
	inst = ssemu_sw_inst(r, sw);
	if (inst == SSEMU_NONE) {
		ssemu_region_unlock(r);
		return 0;
	}
	/* the table, and what each port counted since its VNI last changed
	 * (each VNI has its entry already: a copy's entry claimed in the
	 * copy, for a damaged segment's sake) */
	s = ssemu_r_switch(r, inst);
	memcpy(v, s->vni, sizeof(v));
	for (p = 0; p < r->topo.radix; p++)
		vni_add(v, &ssemu_sw_port(r, s, p)->vacc);
	ssemu_region_unlock(r);
	for (i = 0; i < SSEMU_SW_VNIS && n < max; i++)
		if (v[i].pkts)
			out[n++] = v[i];
	return n;
}

int ssemu_vni_drops_by_job(struct ssemu_fabric *f,
			   struct ssemu_job_vni_drops *out, int max)
{
	struct ssemu_region *r;
	int i, n = 0, ret;

	r = read_lock(f, out, max, &ret);
	if (!r)
		return ret;
	for (i = 0; i < SSEMU_AUTH_JOBS && n < max; i++)
		if (r->auth.job[i].drops)
			out[n++] = r->auth.job[i];
	ssemu_region_unlock(r);
	return n;
}

int ssemu_parse_vnis(const char *s, uint16_t *vnis, int max, char *err,
		     size_t errlen)
{
	const char *p = s;
	unsigned long v;
	char *end;
	int n = 0;

	if (!s || !*s) {
		snprintf(err, errlen, "an empty list of VNIs");
		return -EINVAL;
	}
	for (;;) {
		if (*p < '0' || *p > '9') {
			snprintf(err, errlen, "\"%s\": not a list of numbers",
				 s);
			return -EINVAL;
		}
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || !v || v > SSEMU_VNI_MAX) {
			snprintf(err, errlen, "\"%s\": VNI %.*s is out of "
				 "range (1 to %u)", s, (int)(end - p), p,
				 SSEMU_VNI_MAX);
			return -EINVAL;
		}
		if (n >= max) {
			snprintf(err, errlen, "\"%s\": more than %d VNIs", s,
				 max);
			return -EINVAL;
		}
		vnis[n++] = (uint16_t)v;
		if (!*end)
			return n;
		if (*end != ',' || !end[1]) {
			snprintf(err, errlen, "\"%s\": not a list of numbers",
				 s);
			return -EINVAL;
		}
		p = end + 1;
	}
}

/* ------------------------------------------------------------------ */
/* The configuration file's services                                    */
/* ------------------------------------------------------------------ */

static int cfail(const config_setting_t *s, const char *path,
		 const char *key, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s:%d: services: %s: %s", path,
		 config_setting_source_line(s), key, what);
	return -EINVAL;
}

/* An array of whole numbers in [lo, hi] into @out (at most @max). */
static int num_array(const config_setting_t *g, const char *key, long lo,
		     long long hi, uint32_t *out, uint32_t max, uint32_t *n,
		     const char *path, char *err, size_t errlen)
{
	const config_setting_t *a = config_setting_get_member(g, key);
	int i, len;

	if (!a)
		return 1;
	if (!config_setting_is_array(a))
		return cfail(a, path, key, "expected an array [ ... ]", err,
			     errlen);
	len = config_setting_length(a);
	if (len < 1 || (uint32_t)len > max) {
		snprintf(err, errlen, "%s:%d: services: %s: need 1 to %u "
			 "entries", path, config_setting_source_line(a), key,
			 max);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		const config_setting_t *e = config_setting_get_elem(a, i);
		long long v;

		if (config_setting_type(e) != CONFIG_TYPE_INT &&
		    config_setting_type(e) != CONFIG_TYPE_INT64)
			return cfail(e, path, key, "expected whole numbers",
				     err, errlen);
		v = config_setting_get_int64(e);
		if (config_setting_type(e) == CONFIG_TYPE_INT)
			v = config_setting_get_int(e);
		if (v < lo || v > hi)
			return cfail(e, path, key, "out of range", err,
				     errlen);
		out[i] = (uint32_t)v;
	}
	*n = (uint32_t)len;
	return 0;
}

int ssemu_auth_config_load(const struct config_setting_t *l,
			   struct ssemu_config *c, const char *path, char *err,
			   size_t errlen)
{
	static const char *const keys[] = { "id", "vnis", "tclasses", "uids",
					    "max_eps" };
	uint32_t v[SSEMU_SERVICE_VNIS], i, k, nv;
	int n, e, ret, ival;

	if (!config_setting_is_list(l))
		return cfail(l, path, "services", "expected a list "
			     "( { ... }, ... )", err, errlen);
	n = config_setting_length(l);
	if (n > SSEMU_CONFIG_SERVICES)
		return cfail(l, path, "services", "at most 8 services", err,
			     errlen);
	c->nservices = 0;
	memset(c->services, 0, sizeof(c->services));
	for (e = 0; e < n; e++) {
		const config_setting_t *g = config_setting_get_elem(l, e), *t;
		struct ssemu_service *s = &c->services[e];

		if (!config_setting_is_group(g))
			return cfail(g, path, "services", "expected a group "
				     "{ ... }", err, errlen);
		for (i = 0; i < (uint32_t)config_setting_length(g); i++) {
			const char *name =
				config_setting_name(config_setting_get_elem(g,
									    i));

			for (k = 0; k < 5 && strcmp(keys[k], name); k++)
				;
			if (k == 5)
				return cfail(config_setting_get_elem(g, i),
					     path, name, "unknown key", err,
					     errlen);
		}
		if (!config_setting_lookup_int(g, "id", &ival) || ival < 1)
			return cfail(g, path, "id", "a service needs an id of "
				     "1 or more", err, errlen);
		s->id = (uint32_t)ival;
		ret = num_array(g, "vnis", 1, SSEMU_VNI_MAX, v,
				SSEMU_SERVICE_VNIS, &nv, path, err, errlen);
		if (ret > 0)
			return cfail(g, path, "vnis", "a service needs its "
				     "VNIs", err, errlen);
		if (ret)
			return ret;
		s->nvnis = nv;
		for (i = 0; i < nv; i++)
			s->vnis[i] = (uint16_t)v[i];
		ret = num_array(g, "uids", 0, UINT32_MAX - 1, s->uids,
				SSEMU_SERVICE_UIDS, &s->nuids, path, err,
				errlen);
		if (ret < 0)
			return ret;
		if (config_setting_lookup_int(g, "max_eps", &ival)) {
			if (ival < 0)
				return cfail(g, path, "max_eps", "out of range",
					     err, errlen);
			s->max_eps = (uint32_t)ival;
		}
		t = config_setting_get_member(g, "tclasses");
		s->tc_mask = all_classes(c);
		if (t) {
			if (!config_setting_is_array(t) ||
			    !config_setting_length(t))
				return cfail(t, path, "tclasses", "expected "
					     "class names [ \"...\", ... ]",
					     err, errlen);
			s->tc_mask = 0;
			for (i = 0; i < (uint32_t)config_setting_length(t);
			     i++) {
				const char *name =
					config_setting_get_string_elem(t, (int)i);

				for (k = 0; name && k < c->ntclass; k++)
					if (!strcasecmp(c->tclass[k].name, name))
						break;
				if (!name || k >= c->ntclass)
					return cfail(t, path, "tclasses",
						     "no traffic class of that "
						     "name", err, errlen);
				s->tc_mask |= 1u << k;
			}
		}
	}
	c->nservices = (uint32_t)n;
	return ssemu_auth_config_check(c, err, errlen);
}

/* ------------------------------------------------------------------ */
/* A fabric shared with a group                                         */
/* ------------------------------------------------------------------ */

int ssemu_share_group_parse(const char *s, uint32_t *gid, char *err,
			    size_t errlen)
{
	struct group gr, *res = NULL;
	char buf[4096], *end;
	unsigned long v;
	int ret;

	if (!s || !*s) {
		snprintf(err, errlen, "an empty group");
		return -EINVAL;
	}
	if (*s >= '0' && *s <= '9') {
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || *end || v >= UINT32_MAX) {
			snprintf(err, errlen, "group \"%s\": not a group id "
				 "(0 to %u)", s, UINT32_MAX - 1);
			return -EINVAL;
		}
		*gid = (uint32_t)v;
		return 0;
	}
	ret = getgrnam_r(s, &gr, buf, sizeof(buf), &res);
	if (ret || !res) {
		snprintf(err, errlen, "no group named \"%s\"%s%s", s,
			 ret ? ": " : "", ret ? strerror(ret) : "");
		return -EINVAL;
	}
	*gid = (uint32_t)res->gr_gid;
	return 0;
}

int ssemu_auth_share_load(const config_setting_t *s, struct ssemu_config *c,
			  const char *path, char *err, size_t errlen)
{
	char num[24], why[200];
	const char *v = num;

	if (config_setting_type(s) == CONFIG_TYPE_INT ||
	    config_setting_type(s) == CONFIG_TYPE_INT64) {
		long long n = config_setting_get_int64(s);

		if (config_setting_type(s) == CONFIG_TYPE_INT)
			n = config_setting_get_int(s);
		if (n < 0) {
			snprintf(err, errlen, "%s:%d: share_group: %lld: a "
				 "group id is 0 or more", path,
				 config_setting_source_line(s), n);
			return -EINVAL;
		}
		snprintf(num, sizeof(num), "%lld", n);
	} else if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		v = config_setting_get_string(s);
	} else {
		snprintf(err, errlen, "%s:%d: share_group: expected a group "
			 "name or number", path, config_setting_source_line(s));
		return -EINVAL;
	}
	if (ssemu_share_group_parse(v, &c->share_gid, why, sizeof(why))) {
		snprintf(err, errlen, "%s:%d: share_group: %s", path,
			 config_setting_source_line(s), why);
		return -EINVAL;
	}
	c->share_group = 1;
	return 0;
}
