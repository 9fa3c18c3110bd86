/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The service directory: service names bound to endpoints, kept in the
 * fabric region (so in the shared segment when the fabric is shared) under
 * the fabric lock.
 *
 * An entry is live while its process runs, its NIC is still the one it
 * was bound on (same slot, same attach generation) and its endpoint is
 * open.  Closing an endpoint or detaching a NIC (a dead process's too,
 * through the liveness reaper) releases its entries; every bind and
 * lookup also checks liveness itself, so an entry left by a process that
 * died a moment ago is never returned and never blocks a new bind.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ssemu_priv.h"

uint32_t ssemu_svc_key(const char *name)
{
	/* FNV-1a, folded to 24 bits */
	uint32_t h = 2166136261u;
	const unsigned char *p;

	for (p = (const unsigned char *)name; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	h = (h >> 24) ^ (h & SSEMU_SVC_KEY_MASK);
	if (h == 0 || h == SSEMU_SVC_KEY_MASK)
		h = 1;
	return h;
}

static bool svc_live_locked(struct ssemu_region *r,
			    const struct ssemu_svc_sh *s)
{
	uint32_t slot;
	struct ssemu_nic_sh *n;

	if (s->state != SSEMU_SVC_BOUND || s->ep >= r->neps)
		return false;
	slot = ssemu_ep_nic(r, s->ep);
	n = ssemu_r_nic(r, slot);
	if (n->state != SSEMU_NIC_ATTACHED || n->gen != s->nic_gen ||
	    n->owner_pid != s->pid || !ssemu_r_ep(r, s->ep)->open)
		return false;
	return ssemu_pid_alive(s->pid);
}

static void svc_info(const struct ssemu_svc_sh *s, struct ssemu_svc_info *o)
{
	memcpy(o->name, s->name, sizeof(o->name));
	o->name[sizeof(o->name) - 1] = '\0';
	o->key = s->key;
	o->addr = s->addr;
	o->pid = s->pid;
}

static int svc_check_name(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	if (!n)
		return -EINVAL;
	if (n >= SSEMU_SVC_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int ssemu_svc_bind(struct ssemu_ep *ep, const char *name,
		   struct ssemu_svc_info *holder)
{
	struct ssemu_region *r;
	struct ssemu_svc_sh *s, *free_slot = NULL;
	uint32_t key, i;
	int ret;

	if (!ep)
		return -EINVAL;
	ret = svc_check_name(name);
	if (ret)
		return ret;
	key = ssemu_svc_key(name);
	r = ep->r;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	for (i = 0; i < SSEMU_MAX_SVCS; i++) {
		s = &r->svc[i];
		if (!svc_live_locked(r, s)) {
			s->state = SSEMU_SVC_FREE;
			if (!free_slot)
				free_slot = s;
			continue;
		}
		if (s->key == key) {
			if (holder)
				svc_info(s, holder);
			ret = -EADDRINUSE;
			goto out;
		}
	}
	if (!free_slot) {
		ret = -ENOSPC;
		goto out;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->key = key;
	free_slot->ep = ep->index;
	free_slot->nic_gen = ssemu_r_nic(r, ep->nic->slot)->gen;
	free_slot->addr = SSEMU_ADDR(ssemu_r_nic(r, ep->nic->slot)->port,
				     ep->pid);
	free_slot->pid = getpid();
	memcpy(free_slot->name, name, strlen(name) + 1);
	free_slot->state = SSEMU_SVC_BOUND;
out:
	ssemu_region_unlock(r);
	return ret;
}

int ssemu_svc_ep_closed_locked(struct ssemu_region *r, uint32_t epi)
{
	uint32_t i;
	int n = 0;

	for (i = 0; i < SSEMU_MAX_SVCS; i++) {
		if (r->svc[i].state == SSEMU_SVC_BOUND && r->svc[i].ep == epi) {
			r->svc[i].state = SSEMU_SVC_FREE;
			n++;
		}
	}
	return n;
}

int ssemu_svc_unbind(struct ssemu_ep *ep)
{
	struct ssemu_region *r;
	int n;

	if (!ep)
		return -EINVAL;
	r = ep->r;
	n = ssemu_region_lock(r);
	if (n)
		return n;
	n = ssemu_svc_ep_closed_locked(r, ep->index);
	ssemu_region_unlock(r);
	return n;
}

int ssemu_svc_lookup(struct ssemu_fabric *f, const char *name, uint32_t key,
		     struct ssemu_svc_info *out)
{
	struct ssemu_region *r;
	uint32_t i;
	int ret;

	if (!f || !out)
		return -EINVAL;
	if (name) {
		ret = svc_check_name(name);
		if (ret)
			return ret;
		key = ssemu_svc_key(name);
	}
	r = f->r;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < SSEMU_MAX_SVCS; i++) {
		struct ssemu_svc_sh *s = &r->svc[i];

		if (s->state != SSEMU_SVC_BOUND || s->key != key)
			continue;
		if (!svc_live_locked(r, s)) {
			s->state = SSEMU_SVC_FREE;
			continue;
		}
		/* keys are unique among live bindings; a name that is not
		 * this one's is a different service */
		if (name && strncmp(s->name, name, SSEMU_SVC_NAME_MAX))
			break;
		svc_info(s, out);
		ret = 0;
		break;
	}
	ssemu_region_unlock(r);
	return ret;
}

int ssemu_fabric_services(struct ssemu_fabric *f, struct ssemu_svc_info *out,
			  int max)
{
	struct ssemu_region *r;
	uint32_t i;
	int n = 0, ret;

	if (!f || (max > 0 && !out))
		return -EINVAL;
	r = f->r;
	ret = ssemu_region_lock(r);
	if (ret)
		return ret;
	for (i = 0; i < SSEMU_MAX_SVCS; i++) {
		if (!svc_live_locked(r, &r->svc[i]))
			continue;
		if (n < max)
			svc_info(&r->svc[i], &out[n]);
		n++;
	}
	ssemu_region_unlock(r);
	return n;
}
