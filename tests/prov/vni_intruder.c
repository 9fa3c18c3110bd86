/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A process that tries to reach another job (tests/mpi/two-jobs-vni.sh):
 * it joins the fabric the FI_SLINGSHOT_EMU_* variables name with the
 * VNI and service its SLINGSHOT_* variables give it, inserts the address
 * of pid 0 at endpoint port PORT (a rank of the other job) and sends one
 * message there.  It prints how the send completed and exits 0 if that
 * was the error the fabric gives a VNI the target does not hold
 * (FI_ENOTCONN), 1 if the send completed or failed otherwise, 99 on a
 * setup error.
 *
 * usage: vni_intruder PORT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <slingshot_emu/fi_slingshot_emu_ext.h>

#define TRY(expr)							\
	do {								\
		int _r = (int)(expr);					\
		if (_r) {						\
			fprintf(stderr, "vni_intruder: %s: %s\n", #expr, \
				fi_strerror(-_r));			\
			return 99;					\
		}							\
	} while (0)

int main(int argc, char **argv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *hints, *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_sse_addr me, target;
	struct fi_cq_entry e;
	struct fi_cq_err_entry err = { 0 };
	size_t len = sizeof(me);
	fi_addr_t dest;
	char msg[32] = "not yours";
	unsigned long port;
	long spins;
	ssize_t ret;

	if (argc != 2 || (port = strtoul(argv[1], NULL, 10)) >= 0xff0000) {
		fprintf(stderr, "usage: vni_intruder PORT\n");
		return 99;
	}
	hints = fi_allocinfo();
	if (!hints)
		return 99;
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("slingshot_emu");
	TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	fi_freeinfo(hints);
	TRY(fi_fabric(info->fabric_attr, &fab, NULL));
	TRY(fi_domain(fab, info, &dom, NULL));
	TRY(fi_av_open(dom, &av_attr, &av, NULL));
	TRY(fi_cq_open(dom, &cq_attr, &cq, NULL));
	TRY(fi_endpoint(dom, info, &ep, NULL));
	TRY(fi_ep_bind(ep, &av->fid, 0));
	TRY(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_enable(ep));
	TRY(fi_getname(&ep->fid, &me, &len));
	target.fabric_id = me.fabric_id;
	target.addr = (uint32_t)(port << 8);
	if (fi_av_insert(av, &target, 1, &dest, 0, NULL) != 1) {
		fprintf(stderr, "vni_intruder: fi_av_insert failed\n");
		return 99;
	}
	TRY(fi_send(ep, msg, sizeof(msg), NULL, dest, msg));
	for (spins = 0; spins < 100000000; spins++) {
		ret = fi_cq_read(cq, &e, 1);
		if (ret == 1) {
			printf("vni_intruder: the send to port %lu completed: "
			       "the other job was reached\n", port);
			return 1;
		}
		if (ret == -FI_EAVAIL) {
			if (fi_cq_readerr(cq, &err, 0) != 1)
				return 99;
			printf("vni_intruder: the send to port %lu failed: "
			       "%s (%d)\n", port, fi_strerror(err.err),
			       err.err);
			fi_close(&ep->fid);
			fi_close(&cq->fid);
			fi_close(&av->fid);
			fi_close(&dom->fid);
			fi_close(&fab->fid);
			fi_freeinfo(info);
			return err.err == FI_ENOTCONN ? 0 : 1;
		}
		if (ret != -FI_EAGAIN) {
			fprintf(stderr, "vni_intruder: fi_cq_read: %s\n",
				fi_strerror((int)-ret));
			return 99;
		}
	}
	fprintf(stderr, "vni_intruder: no completion\n");
	return 1;
}
