/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_local_pingpong: a ping-pong between two RDM endpoints of one process,
 * through any libfabric provider (FI_PROVIDER, or the first argument), for
 * benchmarks/bench_provider.sh.  Both ends live in one thread: a message
 * is posted, its receive and its send completed by reading the two CQs,
 * then the other way.  Nothing crosses between cores, so what a message
 * costs here is the provider's own work (and, for slingshot_emu, the
 * model's), without what two processes add by taking each other's cache
 * lines.
 *
 * usage: fi_local_pingpong PROVIDER SIZE ITERATIONS
 * prints: "usec_per_xfer U" (one way: the loop's time over 2 x ITERATIONS
 * messages, after ITERATIONS / 10 untimed).
 *
 * build: cc -O2 -o fi_local_pingpong fi_local_pingpong.c -lfabric
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#define CHECK(call)                                                        \
	do {                                                               \
		int ret_ = (int)(call);                                    \
		if (ret_) {                                                \
			fprintf(stderr, "fi_local_pingpong: %s: %s\n",     \
				#call, fi_strerror(-ret_));                \
			exit(1);                                           \
		}                                                          \
	} while (0)

struct end {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	char *buf;
};

static struct fi_info *info;
static struct fid_domain *dom;

static void end_open(struct end *e, size_t size)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };

	e->buf = calloc(1, size ? size : 1);
	if (!e->buf) {
		fprintf(stderr, "fi_local_pingpong: out of memory\n");
		exit(1);
	}
	CHECK(fi_endpoint(dom, info, &e->ep, NULL));
	CHECK(fi_cq_open(dom, &ca, &e->cq, NULL));
	CHECK(fi_av_open(dom, &aa, &e->av, NULL));
	CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_ep_bind(e->ep, &e->av->fid, 0));
	CHECK(fi_enable(e->ep));
}

/* @e knows @to by its name. */
static void end_meet(struct end *e, struct end *to)
{
	char name[256];
	size_t len = sizeof(name);

	CHECK(fi_getname(&to->ep->fid, name, &len));
	if (fi_av_insert(e->av, name, 1, &e->peer, 0, NULL) != 1) {
		fprintf(stderr, "fi_local_pingpong: fi_av_insert failed\n");
		exit(1);
	}
}

static void end_close(struct end *e)
{
	fi_close(&e->ep->fid);
	fi_close(&e->av->fid);
	fi_close(&e->cq->fid);
	free(e->buf);
}

/* One completion from @e's CQ; an error ends the run. */
static void complete(struct end *e)
{
	struct fi_cq_entry c;
	struct fi_cq_err_entry err;
	ssize_t n;

	while ((n = fi_cq_read(e->cq, &c, 1)) == -FI_EAGAIN)
		;
	if (n == 1)
		return;
	if (n == -FI_EAVAIL && fi_cq_readerr(e->cq, &err, 0) == 1)
		fprintf(stderr, "fi_local_pingpong: completion error %d (%s)\n",
			err.err, fi_strerror(err.err));
	else
		fprintf(stderr, "fi_local_pingpong: fi_cq_read: %zd\n", n);
	exit(1);
}

/* Messages [@i, @i + @n) of the ping-pong, message k from end k % 2; each
 * carries its number, which the receiver checks. */
static void messages(struct end *e, size_t size, long i, long n)
{
	long k;

	for (k = i; k < i + n; k++) {
		struct end *from = &e[k % 2], *to = &e[(k + 1) % 2];
		long got;

		CHECK(fi_recv(to->ep, to->buf, size, NULL, FI_ADDR_UNSPEC,
			      NULL));
		if (size >= sizeof(k))
			memcpy(from->buf, &k, sizeof(k));
		while (1) {
			ssize_t r = fi_send(from->ep, from->buf, size, NULL,
					    from->peer, NULL);

			if (!r)
				break;
			if (r != -FI_EAGAIN)
				CHECK(r);
			/* (both ends progressed: a provider may need the
			 * receiver's side of a first contact, as shm does) */
			fi_cq_read(from->cq, NULL, 0);
			fi_cq_read(to->cq, NULL, 0);
		}
		complete(to);
		complete(from);
		if (size >= sizeof(k)) {
			memcpy(&got, to->buf, sizeof(got));
			if (got != k) {
				fprintf(stderr, "fi_local_pingpong: message "
					"%ld arrived as %ld\n", k, got);
				exit(1);
			}
		}
	}
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct fi_info *hints;
	struct fid_fabric *fab;
	struct end e[2];
	size_t size;
	long iters;
	double t0, t1;

	if (argc != 4) {
		fprintf(stderr, "usage: fi_local_pingpong PROVIDER SIZE "
			"ITERATIONS\n");
		return 2;
	}
	size = strtoul(argv[2], NULL, 0);
	iters = strtol(argv[3], NULL, 0);
	if (iters <= 0) {
		fprintf(stderr, "fi_local_pingpong: ITERATIONS must be > 0\n");
		return 2;
	}
	hints = fi_allocinfo();
	if (!hints)
		return 1;
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(argv[1]);
	CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
	CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
	CHECK(fi_domain(fab, info, &dom, NULL));
	end_open(&e[0], size);
	end_open(&e[1], size);
	end_meet(&e[0], &e[1]);
	end_meet(&e[1], &e[0]);

	messages(e, size, 0, 2 * (iters / 10 + 1));
	t0 = wall();
	messages(e, size, 2 * (iters / 10 + 1), 2 * iters);
	t1 = wall();
	printf("usec_per_xfer %.3f\n", (t1 - t0) / (2.0 * (double)iters) * 1e6);

	end_close(&e[0]);
	end_close(&e[1]);
	fi_close(&dom->fid);
	fi_close(&fab->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	return 0;
}
