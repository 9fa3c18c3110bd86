/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Aggressor: MPI_Alltoall of --size bytes per rank pair (256 KiB by
 * default, the paper's Figure 13) in a loop until --time is up or the stop
 * file exists.  Rank 0 decides when to stop and broadcasts it each
 * iteration, so every rank leaves after the same one.  Prints "running"
 * once the first alltoall completed (scripts wait for it before they
 * start the victim), then the alltoall time and the bandwidth each rank
 * sent ("result", "total").
 */
#include "study.h"

#define USAGE "[--label L] [--time S | --stop-file F] [--size BYTES]"

int main(int argc, char **argv)
{
	struct study_opts o = { .label = "alltoall", .time = 0,
				.size = 256 << 10 };
	int n = study_init(&argc, &argv, "alltoall");
	long cap = 1 << 12, k = 0;
	double *lat = malloc((size_t)cap * sizeof(*lat)), t0, t;
	char *sbuf, *rbuf;
	int stop = 0;

	study_parse(argc, argv, &o, USAGE);
	if (!o.time && !o.stop_file)
		o.time = 10;
	sbuf = malloc(o.size * (size_t)n + 1);
	rbuf = malloc(o.size * (size_t)n + 1);
	if (!lat || !sbuf || !rbuf)
		study_die("out of memory");
	memset(sbuf, 0x3c, o.size * (size_t)n);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	while (!stop) {
		t = MPI_Wtime();
		MPI_Alltoall(sbuf, (int)o.size, MPI_BYTE, rbuf, (int)o.size,
			     MPI_BYTE, MPI_COMM_WORLD);
		t = MPI_Wtime() - t;
		if (k == cap) {
			double *nl = realloc(lat, (size_t)cap * 2 *
					     sizeof(*lat));

			if (!nl)
				study_die("out of memory");
			lat = nl;
			cap *= 2;
		}
		lat[k++] = t;
		if (k == 1 && study_rank == 0) {
			printf("running job=%s ranks=%d epoch=%.3f size=%zu\n",
			       o.label, n, study_epoch(), o.size);
			fflush(stdout);
		}
		stop = study_rank == 0 && study_done(&o, t0);
		MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	t = MPI_Wtime() - t0;
	if (study_rank == 0) {
		printf("total job=%s ranks=%d seconds=%.3f iters=%ld "
		       "gbps_per_rank=%.6f epoch=%.3f\n", o.label, n, t, k,
		       (double)k * o.size * (n - 1) * 8 / t / 1e9,
		       study_epoch());
		study_stats(o.label, "alltoall_us", lat, k);
	}
	free(lat);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
