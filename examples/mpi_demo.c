/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_demo: a plain MPI program (nothing slingshot-specific in it) that the
 * Quick start runs over the slingshot_emu provider: a ping-pong between
 * ranks 0 and 1 at a few sizes, then an allreduce and an alltoall across all
 * ranks, each checked for correctness.  Times are the job's own MPI_Wtime.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *what)
{
	fprintf(stderr, "mpi_demo: %s\n", what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 8, 1024, 65536, 1 << 20 };
	int rank, n, i, k, iters = 200;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n < 2)
		fail("needs at least 2 ranks");
	buf = malloc(1 << 20);
	if (!buf)
		fail("out of memory");

	if (rank == 0)
		printf("ping-pong between ranks 0 and 1 (%d ranks in all)\n"
		       "%10s %14s %14s\n", n, "bytes", "one-way us", "MB/s");
	for (k = 0; k < (int)(sizeof(sizes) / sizeof(sizes[0])); k++) {
		int sz = sizes[k], it = sz >= 65536 ? 20 : iters;
		double t0;

		/* round -1 warms up (buffers, first touches), untimed */
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = 0;
		for (i = -1; i < it && rank < 2; i++) {
			if (i == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				memset(buf, i & 0xff, sz);
				MPI_Send(buf, sz, MPI_CHAR, 1, k, MPI_COMM_WORLD);
				MPI_Recv(buf, sz, MPI_CHAR, 1, k, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if ((unsigned char)buf[sz - 1] !=
				    ((unsigned)(i + 1) & 0xff))
					fail("ping-pong data mismatch");
			} else {
				MPI_Recv(buf, sz, MPI_CHAR, 0, k, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				memset(buf, (unsigned)(i + 1) & 0xff, sz);
				MPI_Send(buf, sz, MPI_CHAR, 0, k, MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			double ow = (MPI_Wtime() - t0) / it / 2;

			printf("%10d %14.2f %14.1f\n", sz, ow * 1e6,
			       sz / ow / 1e6);
		}
	}

	{
		long mine = rank + 1, sum = 0;
		int *out = malloc(sizeof(int) * n), *in = malloc(sizeof(int) * n);

		MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
		if (sum != (long)n * (n + 1) / 2)
			fail("allreduce result wrong");
		for (i = 0; i < n; i++)
			out[i] = rank * 1000 + i;
		MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
		for (i = 0; i < n; i++)
			if (in[i] != i * 1000 + rank)
				fail("alltoall result wrong");
		if (rank == 0)
			printf("allreduce and alltoall over %d ranks: correct\n",
			       n);
		free(out);
		free(in);
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
