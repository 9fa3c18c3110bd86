/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_pairs: every rank ping-pongs 8-byte messages with its partner
 * (rank ^ 1), all pairs at once, and rank 0 prints the one-way latency:
 * the mean over the pairs and the slowest pair.  With more ranks than
 * cores this measures how a transport shares the cores while it waits
 * (benchmarks/bench_provider.sh runs 8 ranks on 2 cores).  Rank 0 also
 * prints, over the timed loop, the ranks' CPU time (user and system,
 * getrusage) and context switches (voluntary and not) for each message
 * sent: what a transport spends on a message where ranks take turns on
 * the cores.
 *
 * usage: bench_pairs [ITERATIONS] [BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define WARMUP 100

/* This process's CPU seconds (user and system) and context switches so
 * far, into @usage[0] and @usage[1]. */
static void usage_now(double *usage)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru)) {
		usage[0] = usage[1] = 0;
		return;
	}
	usage[0] = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
		   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
	usage[1] = (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	int bytes = argc > 2 ? atoi(argv[2]) : 8;
	int rank, size, peer, i;
	double t, lat, sum, max, u0[2], u[2], tot[2];
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size % 2 || iters <= 0 || bytes < 0) {
		if (!rank)
			fprintf(stderr, "bench_pairs: an even number of ranks, ITERATIONS > 0, BYTES >= 0\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = calloc(1, bytes ? (size_t)bytes : 1);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	peer = rank ^ 1;
	t = 0;
	for (i = -WARMUP; i < iters; i++) {
		if (!i) {
			MPI_Barrier(MPI_COMM_WORLD);
			t = MPI_Wtime();
			usage_now(u0);
		}
		if (rank % 2 == 0) {
			MPI_Send(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
		}
	}
	lat = (MPI_Wtime() - t) / (2.0 * iters) * 1e6;
	usage_now(u);
	u[0] -= u0[0];
	u[1] -= u0[1];
	MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&lat, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(u, tot, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	/* (each rank sent iters messages in the timed loop) */
	if (!rank)
		printf("bench_pairs: ranks=%d bytes=%d iters=%d mean_usec=%.2f max_usec=%.2f cpu_usec_per_msg=%.2f switches_per_msg=%.2f\n",
		       size, bytes, iters, sum / size, max,
		       tot[0] / ((double)size * iters) * 1e6,
		       tot[1] / ((double)size * iters));
	free(buf);
	MPI_Finalize();
	return 0;
}
