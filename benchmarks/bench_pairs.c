/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_pairs: every rank ping-pongs 8-byte messages with its partner
 * (rank ^ 1), all pairs at once, and rank 0 prints the one-way latency:
 * the mean over the pairs and the slowest pair.  With more ranks than
 * cores this measures how a transport shares the cores while it waits
 * (benchmarks/bench_provider.sh runs 8 ranks on 2 cores).
 *
 * usage: bench_pairs [ITERATIONS] [BYTES]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WARMUP 100

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	int bytes = argc > 2 ? atoi(argv[2]) : 8;
	int rank, size, peer, i;
	double t, lat, sum, max;
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
	MPI_Reduce(&lat, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&lat, &max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("bench_pairs: ranks=%d bytes=%d iters=%d mean_usec=%.2f max_usec=%.2f\n",
		       size, bytes, iters, sum / size, max);
	free(buf);
	MPI_Finalize();
	return 0;
}
