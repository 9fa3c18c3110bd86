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

/*
 * The libfabric code for an error of the emulator's (-errno): the same
 * value where fi_errno.h has it, so that the code returned and the log
 * line that names the error agree; the closest one otherwise.
 */
int sse_errno_fi(int err)
{
	switch (err) {
	case 0:
		return 0;
	case -EPERM: case -ENOENT: case -EINTR: case -EIO: case -E2BIG:
	case -EBADF: case -EAGAIN: case -ENOMEM: case -EACCES: case -EFAULT:
	case -EBUSY: case -ENODEV: case -EINVAL: case -EMFILE: case -ENOSPC:
	case -ENOSYS: case -ENOMSG: case -ENODATA: case -EOVERFLOW:
	case -EMSGSIZE: case -ENOPROTOOPT: case -EOPNOTSUPP:
	case -EADDRINUSE: case -EADDRNOTAVAIL: case -ENETDOWN:
	case -ENETUNREACH: case -ECONNABORTED: case -ECONNRESET:
	case -ENOBUFS: case -EISCONN: case -ENOTCONN: case -ESHUTDOWN:
	case -ETIMEDOUT: case -ECONNREFUSED: case -EHOSTDOWN:
	case -EHOSTUNREACH: case -EALREADY: case -EINPROGRESS:
	case -EREMOTEIO: case -ECANCELED: case -EKEYREJECTED:
		return err;
	case -EEXIST:		/* the name is taken by another fabric */
		return -FI_EADDRINUSE;
	case -ENFILE:
		return -FI_EMFILE;
	case -ENAMETOOLONG:
		return -FI_EINVAL;
	case -EPROTO:		/* a damaged or incompatible segment */
		return -FI_EIO;
	default:
		return -FI_EOTHER;
	}
}

/*
 * The fabrics this process may open: the one FI_SLINGSHOT_EMU_FABRIC
 * names (default ssemu-<uid>), created if nobody has yet, and any other
 * that exists already (a shared segment of that name, or a fabric this
 * process has open).  Returns the registry entry, or NULL.
 */
static struct sse_emu *__sse_emu_find(enum ssemu_store store,
				      const char *name)
{
	struct sse_emu *emu;

	sse_dlist_foreach(&sse_emus, emu, struct sse_emu, entry) {
		if (emu->store == store && !strcmp(emu->name, name))
			return emu;
	}
	return NULL;
}

static bool sse_fabric_name_ok(const char *name)
{
	return name[0] && strlen(name) < sizeof(((struct sse_emu *)0)->name) &&
	       !strchr(name, '/');
}

int sse_fabric_exists(enum ssemu_store store, const char *name)
{
	struct ssemu_fabric_opts opts = {
		.store = store,
		.name = name,
		.flags = SSEMU_OPEN_OBSERVER,
	};
	struct ssemu_fabric *f;
	char err[256];
	int ret;

	if (!sse_fabric_name_ok(name))
		return -FI_EINVAL;
	if (!strcmp(name, sse_default_fabric_name()))
		return 0;
	pthread_mutex_lock(&sse_emu_lock);
	ret = __sse_emu_find(store, name) ? 0 : -FI_ENODATA;
	pthread_mutex_unlock(&sse_emu_lock);
	if (!ret || store != SSEMU_STORE_SHM)
		return ret;
	ret = ssemu_fabric_open(&opts, &f, err, sizeof(err));
	if (ret)
		return ret == -ENOENT ? -FI_ENODATA : sse_errno_fi(ret);
	ssemu_fabric_close(f);
	return 0;
}

int sse_emu_get(enum ssemu_store store, const char *name,
		struct sse_emu **emup)
{
	struct ssemu_fabric_opts opts = { 0 };
	struct ssemu_config cfg;
	struct sse_emu *emu;
	char err[256] = "";
	bool own = !strcmp(name, sse_default_fabric_name());
	int ret;

	if (!sse_fabric_name_ok(name)) {
		SSE_WARN(FI_LOG_FABRIC, "fi_fabric: bad fabric name \"%s\" (1 to %zu characters, no '/')\n",
			 name, sizeof(emu->name) - 1);
		return -FI_EINVAL;
	}

	pthread_mutex_lock(&sse_emu_lock);
	emu = __sse_emu_find(store, name);
	if (emu) {
		emu->ref++;
		*emup = emu;
		pthread_mutex_unlock(&sse_emu_lock);
		return 0;
	}
	if (!own && store != SSEMU_STORE_SHM) {
		SSE_WARN(FI_LOG_FABRIC, "fi_fabric: no fabric named %s: this process's private fabric is %s (FI_SLINGSHOT_EMU_FABRIC)\n",
			 name, sse_default_fabric_name());
		ret = -FI_ENODATA;
		goto unlock;
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
	/* Only this process's own fabric is created on demand. */
	opts.flags = own ? 0 : SSEMU_OPEN_EXISTING;
	ret = ssemu_fabric_open(&opts, &emu->fabric, err, sizeof(err));
	if (ret == -ENOENT && !own) {
		SSE_WARN(FI_LOG_FABRIC, "fi_fabric: no fabric named %s (shm): only this process's own fabric (FI_SLINGSHOT_EMU_FABRIC, now %s) is created on demand\n",
			 name, sse_default_fabric_name());
		ret = -FI_ENODATA;
		goto err_free;
	}
	if (ret) {
		int fret = sse_errno_fi(ret);

		SSE_WARN(FI_LOG_FABRIC, "cannot open fabric %s (%s): %s%s%s (returning %s)\n",
			 name, store == SSEMU_STORE_SHM ? "shm" : "private",
			 strerror(-ret), *err ? ": " : "", err,
			 fi_strerror(-fret));
		ret = fret;
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

/*
 * What the launcher says about this process: rank, local rank and job size
 * from the first launcher whose rank variable is set (Open MPI, PMIx, PMI,
 * Slurm), the size from another one if that launcher has none; the job id
 * from Open MPI, PMIx or Slurm (job and step: two sruns in one allocation
 * are two jobs).  PMI alone names no job.
 */
struct sse_launch {
	const char *launcher;	/* NULL: none */
	int32_t rank;		/* -1 unknown */
	int32_t local_rank;
	uint32_t nranks;	/* 0 unknown */
	uint32_t job;		/* 0 unknown */
};

static const struct {
	const char *launcher, *rank, *size, *local_rank;
} sse_launchers[] = {
	{ "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	  "OMPI_COMM_WORLD_LOCAL_RANK" },
	{ "PMIx", "PMIX_RANK", NULL, "PMIX_LOCAL_RANK" },
	{ "PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID" },
	{ "Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID" },
};

/* A decimal in [0, INT32_MAX], or -1. */
static int32_t sse_env_int(const char *name)
{
	const char *v = name ? getenv(name) : NULL;
	char *end;
	long r;

	if (!v || !*v)
		return -1;
	errno = 0;
	r = strtol(v, &end, 10);
	if (errno || *end || r < 0 || r > INT32_MAX)
		return -1;
	return (int32_t)r;
}

static uint32_t sse_hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* A numeric id as it is, anything else hashed; never 0 ("unknown"). */
static uint32_t sse_job_id(const char *v)
{
	unsigned long j;
	char *end;
	uint32_t id;

	errno = 0;
	j = strtoul(v, &end, 10);
	id = (*end || errno || j > UINT32_MAX) ? sse_hash_str(v) : (uint32_t)j;
	return id ? id : 1;
}

static uint32_t sse_env_job(void)
{
	const char *v, *step;
	char buf[128];

	v = getenv("OMPI_MCA_ess_base_jobid");
	if (v && *v)
		return sse_job_id(v);
	v = getenv("PMIX_NAMESPACE");
	if (v && *v)
		return sse_job_id(v);
	v = getenv("SLURM_JOB_ID");
	if (v && *v) {
		step = getenv("SLURM_STEP_ID");
		if (!step || !*step)
			return sse_job_id(v);
		snprintf(buf, sizeof(buf), "%s.%s", v, step);
		return sse_job_id(buf);
	}
	return 0;
}

static void sse_env_launch(struct sse_launch *l)
{
	size_t i, k;
	int32_t n;

	memset(l, 0, sizeof(*l));
	l->rank = l->local_rank = -1;
	for (i = 0; i < ARRAY_SIZE(sse_launchers); i++) {
		l->rank = sse_env_int(sse_launchers[i].rank);
		if (l->rank < 0)
			continue;
		l->launcher = sse_launchers[i].launcher;
		l->local_rank = sse_env_int(sse_launchers[i].local_rank);
		n = sse_env_int(sse_launchers[i].size);
		for (k = 0; n < 0 && k < ARRAY_SIZE(sse_launchers); k++)
			n = sse_env_int(sse_launchers[k].size);
		l->nranks = n > 0 ? (uint32_t)n : 0;
		break;
	}
	l->job = sse_env_job();
}

/*
 * Read a placement map: "rank port" lines, '#' comments, every rank of
 * the job exactly once, each port at most once, ports the fabric has.
 * @return a malloc'ed array of @nranks ports, or NULL (warning logged
 * with file and line).
 */
static uint32_t *sse_map_load(const char *path, uint32_t nranks,
			      uint64_t nports)
{
	uint32_t *map, *line_of, r;
	unsigned long rank, port;
	char buf[256], *p, *end;
	FILE *f;
	int line = 0;
	bool ok = false;

	map = malloc(nranks * sizeof(*map));
	line_of = calloc(nranks, sizeof(*line_of));
	f = fopen(path, "r");
	if (!map || !line_of || !f) {
		SSE_WARN(FI_LOG_DOMAIN, "FI_SLINGSHOT_EMU_PLACEMENT=map:%s: cannot read it: %s\n",
			 path, strerror(f ? ENOMEM : errno));
		goto out;
	}
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		if (!strchr(buf, '\n') && !feof(f)) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: line too long\n", path,
				 line);
			goto out;
		}
		p = buf + strspn(buf, " \t");
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		errno = 0;
		rank = strtoul(p, &end, 10);
		if (end == p || !strchr(" \t", *end) || errno) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: expected \"rank port\"\n",
				 path, line);
			goto out;
		}
		p = end + strspn(end, " \t");
		port = strtoul(p, &end, 10);
		if (end == p || errno || (*(end += strspn(end, " \t\r")) &&
					  *end != '\n' && *end != '#')) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: expected \"rank port\"\n",
				 path, line);
			goto out;
		}
		if (rank >= nranks) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: rank %lu: the job has %u ranks\n",
				 path, line, rank, nranks);
			goto out;
		}
		if (port >= nports) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: port %lu out of range (the fabric has %llu ports)\n",
				 path, line, port, (unsigned long long)nports);
			goto out;
		}
		if (line_of[rank]) {
			SSE_WARN(FI_LOG_DOMAIN, "%s:%d: rank %lu is placed on line %u already\n",
				 path, line, rank, line_of[rank]);
			goto out;
		}
		for (r = 0; r < nranks; r++) {
			if (line_of[r] && map[r] == port) {
				SSE_WARN(FI_LOG_DOMAIN, "%s:%d: port %lu is rank %u's already (line %u)\n",
					 path, line, port, r, line_of[r]);
				goto out;
			}
		}
		map[rank] = (uint32_t)port;
		line_of[rank] = (uint32_t)line;
	}
	if (ferror(f)) {
		SSE_WARN(FI_LOG_DOMAIN, "%s: read error\n", path);
		goto out;
	}
	for (r = 0; r < nranks; r++) {
		if (!line_of[r]) {
			SSE_WARN(FI_LOG_DOMAIN, "%s: no port for rank %u (the job has %u ranks)\n",
				 path, r, nranks);
			goto out;
		}
	}
	ok = true;
out:
	if (f)
		fclose(f);
	free(line_of);
	if (!ok) {
		free(map);
		return NULL;
	}
	return map;
}

/*
 * The placement request of this process (@opts->port is SSEMU_PORT_ANY):
 * the policy of FI_SLINGSHOT_EMU_PLACEMENT, given rank, size and job by
 * the launcher; first free without them.  @map: the map to free later.
 * @return 0, or -FI_EINVAL for a bad setting or map file (logged).
 */
static int sse_place_opts(struct sse_emu *emu, struct ssemu_nic_opts *opts,
			  uint32_t **map)
{
	const char *pl = sse_env.placement ? sse_env.placement : "first-free";
	uint64_t nports = ssemu_config_nports(emu->cfg);
	struct sse_launch l;
	int policy;

	sse_env_launch(&l);
	opts->rank = l.rank;
	opts->job = l.job;
	opts->nranks = l.nranks;
	opts->seed = sse_env.placement_seed_set ? sse_env.placement_seed :
						  emu->cfg->seed;
	if (!strncmp(pl, "map:", 4)) {
		policy = SSEMU_PLACE_MAP;
		if (!pl[4]) {
			SSE_WARN(FI_LOG_DOMAIN, "FI_SLINGSHOT_EMU_PLACEMENT=%s: map: needs a file name\n",
				 pl);
			return -FI_EINVAL;
		}
	} else {
		policy = ssemu_place_policy_index(pl);
		if (policy < 0 || policy == SSEMU_PLACE_MAP) {
			SSE_WARN(FI_LOG_DOMAIN, "FI_SLINGSHOT_EMU_PLACEMENT=%s: expected first-free, linear, interleaved, random or map:<file>\n",
				 pl);
			return -FI_EINVAL;
		}
	}
	if (policy != SSEMU_PLACE_FIRST_FREE &&
	    (l.rank < 0 || !l.nranks || !l.job)) {
		SSE_WARN(FI_LOG_DOMAIN, "FI_SLINGSHOT_EMU_PLACEMENT=%s: the launcher (%s) gives no %s: the NIC takes the first free port\n",
			 pl, l.launcher ? l.launcher : "none found",
			 l.rank < 0 ? "rank" : !l.nranks ? "job size" :
			 "job id");
		policy = SSEMU_PLACE_FIRST_FREE;
	}
	if (policy != SSEMU_PLACE_FIRST_FREE &&
	    (uint32_t)l.rank >= l.nranks) {
		SSE_WARN(FI_LOG_DOMAIN, "launcher %s: rank %d is not below the job size %u\n",
			 l.launcher, l.rank, l.nranks);
		return -FI_EINVAL;
	}
	if (policy == SSEMU_PLACE_MAP) {
		if (l.nranks > nports) {
			SSE_WARN(FI_LOG_DOMAIN, "job of %u ranks: the fabric has %llu ports\n",
				 l.nranks, (unsigned long long)nports);
			return -FI_ENOSPC;
		}
		*map = sse_map_load(pl + 4, l.nranks, nports);
		if (!*map)
			return -FI_EINVAL;
		opts->map = *map;
	}
	opts->policy = (uint32_t)policy;
	SSE_INFO(FI_LOG_DOMAIN, "launcher %s: rank %d of %u (local rank %d), job %u; placement %s\n",
		 l.launcher ? l.launcher : "none", l.rank, l.nranks,
		 l.local_rank, l.job, ssemu_place_policy_name(opts->policy));
	return 0;
}

/*
 * Attach (once per process and fabric) the NIC every domain shares.
 * @port: SSEMU_PORT_ANY, or the port a source address asks for.
 */
int sse_emu_nic_get(struct sse_emu *emu, uint32_t port)
{
	struct ssemu_nic_opts opts = { 0 };
	uint32_t *map = NULL;
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
	if (port == SSEMU_PORT_ANY) {
		ret = sse_place_opts(emu, &opts, &map);
		if (ret)
			goto unlock;
	} else {
		struct sse_launch l;

		sse_env_launch(&l);
		opts.rank = l.rank;
		opts.job = l.job;
	}
	ret = ssemu_nic_attach(emu->fabric, &opts, &emu->nic);
	free(map);
	if (ret) {
		SSE_WARN(FI_LOG_DOMAIN,
			 "cannot attach a NIC to fabric %s (port %d, job %u, rank %d of %u, placement %s): %s\n",
			 emu->name, port == SSEMU_PORT_ANY ? -1 : (int)port,
			 opts.job, opts.rank, opts.nranks,
			 ssemu_place_policy_name(opts.policy), strerror(-ret));
		ret = sse_errno_fi(ret);
		emu->nic = NULL;
		goto unlock;
	}
	emu->nic_ref = 1;
	SSE_INFO(FI_LOG_DOMAIN, "NIC attached at port %u (job %u, rank %d)\n",
		 ssemu_nic_port(emu->nic), opts.job, opts.rank);
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
 * progressed once before the answer; an EQ is looked at; a wait set
 * looks at its members (sse_wait.c).  Only objects opened with FI_WAIT_FD
 * have a descriptor to sleep on.
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
			sse_cq_progress(cq);
			pthread_mutex_lock(&cq->domain->lock);
			busy = cq->count > 0;
			pthread_mutex_unlock(&cq->domain->lock);
			break;
		case FI_CLASS_WAIT: {
			int ret = sse_wait_trywait(container_of(fids[i],
						   struct sse_wait,
						   wait_fid.fid));

			if (ret)
				return ret;
			busy = false;
			break;
		}
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
	.wait_open = sse_wait_open,
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
