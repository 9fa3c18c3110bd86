/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_av.c: address vectors.  FI_AV_TABLE and FI_AV_MAP share one table:
 * an fi_addr_t is the index of the entry (a TABLE's indices are consecutive
 * in insertion order; a MAP's values are simply opaque).  Indices are never
 * reused after fi_av_remove.  A hash on the fabric address gives the reverse
 * lookup that FI_SOURCE and directed receives need.  With an EQ bound
 * (FI_EVENT), insertions complete with an FI_AV_COMPLETE event.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "sse.h"

#define SSE_AV_MIN_CAP 64

static inline size_t sse_av_hash(ssemu_addr_t a, size_t mask)
{
	return (size_t)((a * 2654435761u) ^ (a >> 16)) & mask;
}

/*
 * Addresses one AV holds at most: fi_av_insert reports how many it
 * inserted as an int, and the table and its hash (24 + 8 bytes an entry)
 * stay far from overflowing a size_t.
 */
#define SSE_AV_MAX ((size_t)INT_MAX)

/* Room for @need entries; on failure the AV is as it was. */
static int __sse_av_grow(struct sse_av *av, size_t need)
{
	size_t cap = av->cap ? av->cap : SSE_AV_MIN_CAP;
	struct sse_av_entry *tab;
	int64_t *hash;
	size_t i;

	if (need <= av->cap)
		return 0;
	if (need > SSE_AV_MAX)
		return -FI_EINVAL;
	while (cap < need)
		cap *= 2;	/* need <= INT_MAX: never wraps */

	/* Keep the chains short: as many heads as entries. */
	hash = malloc(cap * sizeof(*hash));
	if (!hash)
		return -FI_ENOMEM;
	tab = realloc(av->tab, cap * sizeof(*tab));
	if (!tab) {
		free(hash);
		return -FI_ENOMEM;
	}
	av->tab = tab;
	av->cap = cap;
	for (i = 0; i < cap; i++)
		hash[i] = -1;
	free(av->hash);
	av->hash = hash;
	av->hmask = cap - 1;
	for (i = av->count; i-- > 0;) {
		size_t h;

		if (!av->tab[i].valid)
			continue;
		h = sse_av_hash(av->tab[i].addr, av->hmask);
		av->tab[i].hnext = av->hash[h];
		av->hash[h] = (int64_t)i;
	}
	return 0;
}

SSEMU_HOT
int __sse_av_lookup(struct sse_av *av, fi_addr_t fi_addr, ssemu_addr_t *addr)
{
	if (fi_addr >= av->count || !av->tab[fi_addr].valid)
		return -FI_EINVAL;
	*addr = av->tab[fi_addr].addr;
	return 0;
}

/* The lowest valid index holding @addr, or FI_ADDR_NOTAVAIL. */
SSEMU_HOT
fi_addr_t __sse_av_reverse(struct sse_av *av, ssemu_addr_t addr)
{
	int64_t i;

	if (!av->hash)
		return FI_ADDR_NOTAVAIL;
	for (i = av->hash[sse_av_hash(addr, av->hmask)]; i >= 0;
	     i = av->tab[i].hnext) {
		if (av->tab[i].addr == addr)
			return (fi_addr_t)i;
	}
	return FI_ADDR_NOTAVAIL;
}

static int sse_av_insert(struct fid_av *av_fid, const void *addr,
			 size_t count, fi_addr_t *fi_addr, uint64_t flags,
			 void *context)
{
	struct sse_av *av = container_of(av_fid, struct sse_av, av_fid);
	struct sse_domain *dom = av->domain;
	const struct fi_sse_addr *in = addr;
	struct fi_sse_addr *resolved = NULL;
	int *sync_err = (flags & FI_SYNC_ERR) ? context : NULL;
	size_t i;
	int n = 0, ret;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;
	if ((av->flags & FI_EVENT) && !av->eq)
		return -FI_ENOEQ;
	if ((flags & FI_SYNC_ERR) && (!context || (av->flags & FI_EVENT)))
		return -FI_EINVAL;
	if (count > SSE_AV_MAX) {
		SSE_WARN(FI_LOG_AV, "fi_av_insert: %zu addresses: an AV holds at most %zu\n",
			 count, SSE_AV_MAX);
		return -FI_EINVAL;
	}

	/* Services resolve before the domain lock: it may take a while. */
	for (i = 0; i < count; i++) {
		struct fi_sse_addr a;

		memcpy(&a, &in[i], sizeof(a));
		if (a.fabric_id == av->fabric_id && FI_SSE_ADDR_IS_SVC(&a))
			break;
	}
	if (i < count) {
		/* one wait for the whole call, however many services */
		uint64_t deadline = sse_svc_deadline();

		resolved = malloc(count * sizeof(*resolved));
		if (!resolved)
			return -FI_ENOMEM;
		memcpy(resolved, in, count * sizeof(*resolved));
		for (; i < count; i++) {
			ssemu_addr_t ea;

			if (resolved[i].fabric_id != av->fabric_id ||
			    !FI_SSE_ADDR_IS_SVC(&resolved[i]))
				continue;
			if (sse_svc_resolve(dom->emu->fabric,
					    FI_SSE_ADDR_SVC_KEY(&resolved[i]),
					    deadline, &ea))
				resolved[i].addr = FI_SSE_ADDR_ANY;
			else
				resolved[i].addr = ea;
		}
		in = resolved;
	}

	pthread_mutex_lock(&dom->lock);
	if (count > SSE_AV_MAX - av->count)
		ret = -FI_EINVAL;
	else
		ret = __sse_av_grow(av, av->count + count);
	if (ret) {
		i = av->count;
		pthread_mutex_unlock(&dom->lock);
		SSE_WARN(FI_LOG_AV, "fi_av_insert: no room for %zu more addresses (%zu in the AV): %s\n",
			 count, i, fi_strerror(-ret));
		free(resolved);
		return ret;
	}
	for (i = 0; i < count; i++) {
		struct fi_sse_addr a;
		struct sse_av_entry *e;
		size_t h;

		memcpy(&a, &in[i], sizeof(a));
		if (a.addr == FI_SSE_ADDR_ANY || FI_SSE_ADDR_IS_SVC(&a) ||
		    sse_addr_check(&a, av->fabric_id, av->nports)) {
			SSE_INFO(FI_LOG_AV,
				 "fi_av_insert: %08x/%u:%u is not an endpoint of fabric %08x\n",
				 a.fabric_id, FI_SSE_ADDR_PORT(&a),
				 FI_SSE_ADDR_PID(&a), av->fabric_id);
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (sync_err)
				sync_err[i] = FI_EADDRNOTAVAIL;
			if (av->eq)
				sse_eq_report_err(av->eq, &av->av_fid.fid,
						  context, i, FI_EADDRNOTAVAIL);
			continue;
		}
		e = &av->tab[av->count];
		e->addr = a.addr;
		e->valid = 1;
		h = sse_av_hash(a.addr, av->hmask);
		/* Append to the chain so the lowest index is found first. */
		e->hnext = -1;
		if (av->hash[h] < 0) {
			av->hash[h] = (int64_t)av->count;
		} else {
			int64_t j = av->hash[h];

			while (av->tab[j].hnext >= 0)
				j = av->tab[j].hnext;
			av->tab[j].hnext = (int64_t)av->count;
		}
		if (fi_addr)
			fi_addr[i] = (fi_addr_t)av->count;
		if (sync_err)
			sync_err[i] = 0;
		av->count++;
		n++;
	}
	pthread_mutex_unlock(&dom->lock);
	free(resolved);

	if (av->flags & FI_EVENT) {
		struct fi_eq_entry ev = {
			.fid = &av->av_fid.fid,
			.context = context,
			.data = (uint64_t)n,
		};

		ret = sse_eq_report(av->eq, FI_AV_COMPLETE, &ev, sizeof(ev),
				    0);
		return ret ? ret : 0;
	}
	return n;
}

static int sse_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			 size_t count, uint64_t flags)
{
	struct sse_av *av = container_of(av_fid, struct sse_av, av_fid);
	struct sse_domain *dom = av->domain;
	size_t i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;

	pthread_mutex_lock(&dom->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t x = fi_addr[i];
		int64_t *link;
		size_t h;

		if (x >= av->count || !av->tab[x].valid) {
			ret = -FI_EINVAL;
			continue;
		}
		h = sse_av_hash(av->tab[x].addr, av->hmask);
		for (link = &av->hash[h]; *link >= 0;
		     link = &av->tab[*link].hnext) {
			if ((fi_addr_t)*link == x) {
				*link = av->tab[x].hnext;
				break;
			}
		}
		av->tab[x].valid = 0;
		av->tab[x].hnext = -1;
	}
	pthread_mutex_unlock(&dom->lock);
	return ret;
}

static int sse_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr,
			 size_t *addrlen)
{
	struct sse_av *av = container_of(av_fid, struct sse_av, av_fid);
	struct fi_sse_addr a = { .fabric_id = av->fabric_id };
	ssemu_addr_t ea;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	pthread_mutex_lock(&av->domain->lock);
	ret = __sse_av_lookup(av, fi_addr, &ea);
	pthread_mutex_unlock(&av->domain->lock);
	if (ret)
		return ret;
	a.addr = ea;
	memcpy(addr, &a, SSEMU_MIN(*addrlen, sizeof(a)));
	ret = *addrlen < sizeof(a) ? -FI_ETOOSMALL : 0;
	*addrlen = sizeof(a);
	return ret;
}

static const char *sse_av_straddr(struct fid_av *av_fid, const void *addr,
				  char *buf, size_t *len)
{
	struct fi_sse_addr a;
	char tmp[FI_SSE_ADDR_STRLEN];
	int n;

	if (!addr || !len || (*len && !buf))
		return NULL;
	memcpy(&a, addr, sizeof(a));
	if (a.addr == FI_SSE_ADDR_ANY)
		n = snprintf(tmp, sizeof(tmp), "sse://%08x/any", a.fabric_id);
	else if (FI_SSE_ADDR_IS_SVC(&a))
		n = snprintf(tmp, sizeof(tmp), "sse://%08x/svc#%06x",
			     a.fabric_id, FI_SSE_ADDR_SVC_KEY(&a));
	else
		n = snprintf(tmp, sizeof(tmp), "sse://%08x/%u:%u", a.fabric_id,
			     FI_SSE_ADDR_PORT(&a), FI_SSE_ADDR_PID(&a));
	if (*len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)n + 1;
	return buf;
}

/*
 * fi_av_insertsvc: @node/@service as fi_getinfo takes them for a
 * destination (a name or address of this host with a service, or the
 * sse:// string fi_av_straddr prints), inserted as fi_av_insert inserts
 * that address: a service resolves to the endpoint bound to it.
 */
static int sse_av_insertsvc(struct fid_av *av_fid, const char *node,
			    const char *service, fi_addr_t *fi_addr,
			    uint64_t flags, void *context)
{
	struct sse_av *av = container_of(av_fid, struct sse_av, av_fid);
	struct fi_sse_addr a;

	if (!node && !service)
		return -FI_EINVAL;
	if (sse_addr_parse(node, service, av->domain->fabric->name,
			   av->fabric_id, av->nports, false, &a)) {
		if (fi_addr)
			*fi_addr = FI_ADDR_NOTAVAIL;
		return -FI_EADDRNOTAVAIL;
	}
	return sse_av_insert(av_fid, &a, 1, fi_addr, flags, context);
}

/*
 * fi_av_insertsym: @nodecnt nodes from @node and @svccnt services from
 * @service, counting up the decimal number that ends each.  The fabric is
 * on this host, so the nodes are either this host (@nodecnt 1) or sse://
 * addresses whose pid is what counts; the services are names of the
 * fabric's directory ("9228", "9229"...).  Addresses are inserted
 * node-major.
 * @return the number inserted, or -FI_EINVAL for counts the names cannot
 * make.
 */
static int sse_sym_name(const char *base, size_t i, char *out, size_t len)
{
	size_t n = strlen(base), d = n;
	unsigned long long v;

	while (d > 0 && base[d - 1] >= '0' && base[d - 1] <= '9')
		d--;
	if (d == n) {
		if (i || n >= len)
			return -FI_EINVAL;
		memcpy(out, base, n + 1);
		return 0;
	}
	v = strtoull(base + d, NULL, 10) + i;
	if ((size_t)snprintf(out, len, "%.*s%0*llu", (int)d, base,
			     (int)(n - d), v) >= len)
		return -FI_EINVAL;
	return 0;
}

static int sse_av_insertsym(struct fid_av *av_fid, const char *node,
			    size_t nodecnt, const char *service,
			    size_t svccnt, fi_addr_t *fi_addr, uint64_t flags,
			    void *context)
{
	struct sse_av *av = container_of(av_fid, struct sse_av, av_fid);
	char nbuf[256], sbuf[SSEMU_SVC_NAME_MAX];
	size_t i, j, k = 0, nsvc = service ? svccnt : 1;
	int n = 0, ret;

	if (!node || !nodecnt || (service && !svccnt) ||
	    (!service && svccnt > 1))
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) || (flags & ~FI_MORE))
		return -FI_EBADFLAGS;
	if (av->flags & FI_EVENT)
		return -FI_ENOSYS;	/* one event per address would do */
	for (i = 0; i < nodecnt; i++) {
		if (sse_sym_name(node, i, nbuf, sizeof(nbuf)))
			return -FI_EINVAL;
		for (j = 0; j < nsvc; j++, k++) {
			if (service &&
			    sse_sym_name(service, j, sbuf, sizeof(sbuf)))
				return -FI_EINVAL;
			ret = sse_av_insertsvc(av_fid, nbuf,
					       service ? sbuf : NULL,
					       fi_addr ? &fi_addr[k] : NULL,
					       flags, context);
			if (ret < 0 && ret != -FI_EADDRNOTAVAIL)
				return ret;
			if (ret == 1)
				n++;
		}
	}
	return n;
}

static struct fi_ops_av sse_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = sse_av_insert,
	.insertsvc = sse_av_insertsvc,
	.insertsym = sse_av_insertsym,
	.remove = sse_av_remove,
	.lookup = sse_av_lookup,
	.straddr = sse_av_straddr,
	.av_set = sse_no_av_set,
};

static int sse_av_close(struct fid *fid)
{
	struct sse_av *av = container_of(fid, struct sse_av, av_fid.fid);

	if (__atomic_load_n(&av->ref, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	if (av->eq)
		__atomic_sub_fetch(&av->eq->ref, 1, __ATOMIC_ACQ_REL);
	sse_domain_ref(av->domain, -1);
	free(av->hash);
	free(av->tab);
	free(av);
	return 0;
}

static int sse_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct sse_av *av = container_of(fid, struct sse_av, av_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ || flags)
		return -FI_EINVAL;
	if (!(av->flags & FI_EVENT) || av->eq)
		return -FI_EINVAL;
	av->eq = container_of(bfid, struct sse_eq, eq_fid.fid);
	__atomic_add_fetch(&av->eq->ref, 1, __ATOMIC_ACQ_REL);
	return 0;
}

static struct fi_ops sse_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_av_close,
	.bind = sse_av_bind,
	.control = sse_no_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

int sse_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **avp, void *context)
{
	struct sse_domain *dom = sse_dom(domain);
	enum fi_av_type type;
	struct sse_av *av;
	size_t nfab;
	int ret;

	if (!attr || !avp)
		return -FI_EINVAL;
	type = attr->type;
	if (type == FI_AV_UNSPEC)
		type = dom->av_type != FI_AV_UNSPEC ? dom->av_type : FI_AV_MAP;
	if (type != FI_AV_MAP && type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (dom->av_type != FI_AV_UNSPEC && type != dom->av_type)
		return -FI_EINVAL;
	if (attr->rx_ctx_bits)
		return -FI_ENOSYS;	/* no scalable endpoints */
	if (attr->name)
		return -FI_ENOSYS;	/* no shared AVs */
	if (attr->flags & ~(FI_EVENT | FI_READ | FI_SYMMETRIC))
		return -FI_EINVAL;
	if (attr->count > SSE_AV_MAX) {
		SSE_WARN(FI_LOG_AV, "fi_av_open: count %zu: an AV holds at most %zu addresses\n",
			 attr->count, SSE_AV_MAX);
		return -FI_EINVAL;
	}

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = dom;
	av->type = type;
	av->flags = attr->flags;
	av->fabric_id = dom->emu->fabric_id;
	av->nports = ssemu_config_nports(dom->emu->cfg);
	/*
	 * attr->count is a hint: the table starts with room for that many,
	 * but never for more distinct addresses than the fabric has
	 * endpoints; it grows past that as addresses come.
	 */
	nfab = (size_t)av->nports * dom->emu->cfg->eps_per_nic;
	ret = __sse_av_grow(av, SSEMU_MAX(SSEMU_MIN(attr->count, nfab),
					  (size_t)SSE_AV_MIN_CAP));
	if (ret) {
		free(av);
		return ret;
	}

	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &sse_av_fi_ops;
	av->av_fid.ops = &sse_av_ops;
	attr->type = type;
	sse_domain_ref(dom, 1);
	*avp = &av->av_fid;
	return 0;
}
