/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_fabric.c: fi_fabric.  A fabric object is a handle on one emulated
 * fabric; the emulator handle itself (and the process's NIC on it) lives in
 * a process-wide registry, shared by every fi_fabric/fi_domain that names
 * the same fabric, so that Open MPI's mtl and btl share one NIC.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sse.h"

static pthread_mutex_t sse_emu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sse_dlist sse_emus = { &sse_emus, &sse_emus };

/* FNV-1a over the store and the name; the private store adds the pid,
 * since a private fabric is reachable from this process only. */
uint32_t sse_fabric_id(enum ssemu_store store, const char *name)
{
	uint32_t h = 2166136261u;
	const unsigned char *p;
	char pidbuf[24];

	h = (h ^ (uint32_t)store) * 16777619u;
	for (p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	if (store == SSEMU_STORE_PRIVATE) {
		snprintf(pidbuf, sizeof(pidbuf), "/%d", (int)getpid());
		for (p = (const unsigned char *)pidbuf; *p; p++)
			h = (h ^ *p) * 16777619u;
	}
	return h ? h : 1;
}

int sse_emu_get(enum ssemu_store store, const char *name,
		struct sse_emu **emup)
{
	struct ssemu_fabric_opts opts = { 0 };
	struct ssemu_config cfg;
	struct sse_emu *emu;
	char err[256] = "";
	int ret;

	if (strlen(name) >= sizeof(emu->name) || strchr(name, '/'))
		return -FI_EINVAL;

	pthread_mutex_lock(&sse_emu_lock);
	sse_dlist_foreach(&sse_emus, emu, struct sse_emu, entry) {
		if (emu->store == store && !strcmp(emu->name, name)) {
			emu->ref++;
			*emup = emu;
			pthread_mutex_unlock(&sse_emu_lock);
			return 0;
		}
	}

	ret = sse_env_config(&cfg);
	if (ret)
		goto unlock;

	emu = calloc(1, sizeof(*emu));
	if (!emu) {
		ret = -FI_ENOMEM;
		goto unlock;
	}
	emu->store = store;
	strcpy(emu->name, name);
	emu->fabric_id = sse_fabric_id(store, name);

	opts.store = store;
	opts.name = name;
	opts.config = &cfg;
	ret = ssemu_fabric_open(&opts, &emu->fabric, err, sizeof(err));
	if (ret) {
		SSE_WARN(FI_LOG_FABRIC, "cannot open fabric %s (%s): %s%s%s\n",
			 name, store == SSEMU_STORE_SHM ? "shm" : "private",
			 strerror(-ret), *err ? ": " : "", err);
		ret = (ret == -ENOMEM) ? -FI_ENOMEM :
		      (ret == -EACCES) ? -FI_EACCES : -FI_EINVAL;
		goto err_free;
	}
	emu->cfg = ssemu_fabric_config(emu->fabric);
	emu->ref = 1;
	sse_dlist_insert_tail(&emu->entry, &sse_emus);
	*emup = emu;
	SSE_INFO(FI_LOG_FABRIC,
		 "fabric %s (%s) id %08x: preset %s, %llu ports, mtu %u\n",
		 name, store == SSEMU_STORE_SHM ? "shm" : "private",
		 emu->fabric_id, emu->cfg->preset,
		 (unsigned long long)ssemu_config_nports(emu->cfg),
		 emu->cfg->mtu);
	pthread_mutex_unlock(&sse_emu_lock);
	return 0;

err_free:
	free(emu);
unlock:
	pthread_mutex_unlock(&sse_emu_lock);
	return ret;
}

void sse_emu_put(struct sse_emu *emu)
{
	pthread_mutex_lock(&sse_emu_lock);
	if (--emu->ref == 0) {
		assert(!emu->nic && !emu->nic_ref);
		sse_dlist_remove(&emu->entry);
		ssemu_fabric_close(emu->fabric);
		free(emu);
	}
	pthread_mutex_unlock(&sse_emu_lock);
}

/* Launcher rank and job, for placement and per-job counters. */
static int32_t sse_env_rank(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
		"SLURM_PROCID",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long r;

		if (!v || !*v)
			continue;
		r = strtol(v, &end, 10);
		if (!*end && r >= 0 && r <= INT32_MAX)
			return (int32_t)r;
	}
	return -1;
}

static uint32_t sse_hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t sse_env_job(void)
{
	const char *v;
	char *end;

	v = getenv("OMPI_MCA_ess_base_jobid");
	if (v && *v) {
		unsigned long j = strtoul(v, &end, 10);

		return *end ? sse_hash_str(v) : (uint32_t)j;
	}
	v = getenv("PMIX_NAMESPACE");
	if (v && *v)
		return sse_hash_str(v);
	v = getenv("SLURM_JOB_ID");
	if (v && *v) {
		unsigned long j = strtoul(v, &end, 10);

		return *end ? sse_hash_str(v) : (uint32_t)j;
	}
	return 0;
}

/*
 * Attach (once per process and fabric) the NIC every domain shares.
 * @port: SSEMU_PORT_ANY, or the port a source address asks for.
 */
int sse_emu_nic_get(struct sse_emu *emu, uint32_t port)
{
	struct ssemu_nic_opts opts = { 0 };
	int ret = 0;

	pthread_mutex_lock(&sse_emu_lock);
	if (emu->nic) {
		if (port != SSEMU_PORT_ANY && port != ssemu_nic_port(emu->nic)) {
			SSE_WARN(FI_LOG_DOMAIN,
				 "this process's NIC is on port %u; port %u asked for by a source address is not available\n",
				 ssemu_nic_port(emu->nic), port);
			ret = -FI_EADDRNOTAVAIL;
			goto unlock;
		}
		emu->nic_ref++;
		goto unlock;
	}

	if (port == SSEMU_PORT_ANY && sse_env.port >= 0)
		port = (uint32_t)sse_env.port;
	opts.port = port;
	opts.rank = sse_env_rank();
	opts.job = sse_env_job();
	ret = ssemu_nic_attach(emu->fabric, &opts, &emu->nic);
	if (ret) {
		SSE_WARN(FI_LOG_DOMAIN,
			 "cannot attach a NIC to fabric %s (port %d, rank %d): %s\n",
			 emu->name, port == SSEMU_PORT_ANY ? -1 : (int)port,
			 opts.rank, strerror(-ret));
		ret = (ret == -EADDRINUSE) ? -FI_EADDRINUSE :
		      (ret == -ENOSPC) ? -FI_ENOSPC :
		      (ret == -ENOMEM) ? -FI_ENOMEM : -FI_EINVAL;
		emu->nic = NULL;
		goto unlock;
	}
	emu->nic_ref = 1;
	SSE_INFO(FI_LOG_DOMAIN, "NIC attached at port %u (rank %d, job %u)\n",
		 ssemu_nic_port(emu->nic), opts.rank, opts.job);
unlock:
	pthread_mutex_unlock(&sse_emu_lock);
	return ret;
}

void sse_emu_nic_put(struct sse_emu *emu)
{
	pthread_mutex_lock(&sse_emu_lock);
	if (--emu->nic_ref == 0) {
		ssemu_nic_detach(emu->nic);
		emu->nic = NULL;
	}
	pthread_mutex_unlock(&sse_emu_lock);
}

/* ------------------------------------------------------------------ */

static int sse_fabric_close(struct fid *fid)
{
	struct sse_fabric *fab = container_of(fid, struct sse_fabric,
					      fabric_fid.fid);

	if (__atomic_load_n(&fab->ref, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	sse_emu_put(fab->emu);
	free(fab->name);
	free(fab);
	return 0;
}

static int sse_fabric_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

static struct fi_ops sse_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sse_fabric_close,
	.bind = sse_no_bind,
	.control = sse_fabric_control,
	.ops_open = sse_no_ops_open,
	.tostr = sse_no_tostr,
	.ops_set = sse_no_ops_set,
};

static int sse_domain2(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return sse_domain_open(fabric, info, dom, context);
}

/*
 * fi_trywait: may the caller sleep on these objects' descriptors?  Not
 * while something is already there (-FI_EAGAIN: read it first).  A CQ is
 * progressed once before the answer; an EQ is looked at.  Only objects
 * opened with FI_WAIT_FD have a descriptor to sleep on.
 */
static int sse_fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
			      int count)
{
	struct sse_cq *cq;
	struct sse_eq *eq;
	bool busy;
	int i;

	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			cq = container_of(fids[i], struct sse_cq, cq_fid.fid);
			if (cq->fd < 0)
				return -FI_EINVAL;
			sse_domain_progress(cq->domain);
			pthread_mutex_lock(&cq->domain->lock);
			busy = cq->count > 0;
			pthread_mutex_unlock(&cq->domain->lock);
			break;
		case FI_CLASS_EQ:
			eq = container_of(fids[i], struct sse_eq, eq_fid.fid);
			if (eq->fd < 0)
				return -FI_EINVAL;
			pthread_mutex_lock(&eq->lock);
			busy = !sse_dlist_empty(&eq->events);
			pthread_mutex_unlock(&eq->lock);
			break;
		default:
			return -FI_EINVAL;
		}
		if (busy)
			return -FI_EAGAIN;
	}
	return 0;
}

static struct fi_ops_fabric sse_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = sse_domain_open,
	.passive_ep = sse_no_passive_ep,
	.eq_open = sse_eq_open,
	.wait_open = sse_no_wait_open,
	.trywait = sse_fabric_trywait,
	.domain2 = sse_domain2,
};

int sse_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context)
{
	enum ssemu_store store;
	struct sse_fabric *fab;
	int ret;

	if (!attr || !attr->name || !fabric)
		return -FI_EINVAL;
	ret = sse_env_store(&store);
	if (ret)
		return ret;
	if (attr->prov_version > SSE_PROV_VERSION)
		return -FI_ENODATA;

	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->name = strdup(attr->name);
	if (!fab->name) {
		ret = -FI_ENOMEM;
		goto err_free;
	}
	ret = sse_emu_get(store, attr->name, &fab->emu);
	if (ret)
		goto err_free_name;

	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &sse_fabric_fi_ops;
	fab->fabric_fid.ops = &sse_fabric_ops;
	fab->fabric_fid.api_version = SSE_FI_VERSION;
	*fabric = &fab->fabric_fid;
	return 0;

err_free_name:
	free(fab->name);
err_free:
	free(fab);
	return ret;
}
