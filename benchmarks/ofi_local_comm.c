/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofi_local_comm: an LD_PRELOAD library for benchmarks/bench_provider.sh
 * that lets Open MPI's OFI MTL run over libfabric's shm provider.  The
 * MTL asks fi_getinfo for FI_LOCAL_COMM | FI_REMOTE_COMM; shm can reach
 * only processes on its own host, so it offers no FI_REMOTE_COMM and the
 * MTL finds no provider.  This fi_getinfo asks without the two (every
 * rank of the benchmark is on this host) and is libfabric's otherwise.
 *
 * build: cc -shared -fPIC -o ofi_local_comm.so ofi_local_comm.c -ldl -lfabric
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/fabric.h>

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t,
			  const struct fi_info *, struct fi_info **);

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints,
	       struct fi_info **info)
{
	static getinfo_fn real;
	struct fi_info *h = NULL;
	int ret;

	if (!real)
		real = (getinfo_fn)dlvsym(RTLD_NEXT, "fi_getinfo",
					  "FABRIC_1.3");
	if (!real)
		return -FI_ENOSYS;
	if (hints && (hints->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM))) {
		h = fi_dupinfo(hints);
		if (!h)
			return -FI_ENOMEM;
		h->caps &= ~(FI_LOCAL_COMM | FI_REMOTE_COMM);
		hints = h;
	}
	ret = real(version, node, service, flags, hints, info);
	fi_freeinfo(h);
	return ret;
}
