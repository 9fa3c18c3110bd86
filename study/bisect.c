/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bisection-bandwidth job: the first half of the ranks stream large
 * messages to the second half (rank i to rank i + n/2), each receiver
 * printing the bandwidth it got in every --interval of its MPI_Wtime
 * ("bw" lines) and its average at the end ("total").  Run two of these on
 * one fabric, with their pairs across the same link, and the lines show
 * how the link is shared (the Slingshot paper's Figure 14).
 */
#include "study.h"

#define USAGE "[--label L] [--time S | --stop-file F] [--interval S] " \
	"[--size BYTES] [--window N]"

int main(int argc, char **argv)
{
	struct study_opts o = { .label = "bisect", .time = 10,
				.interval = 0.5, .size = 1 << 20,
				.window = 4 };
	int n = study_init(&argc, &argv, "bisect"), half;
	double t0;

	study_parse(argc, argv, &o, USAGE);
	if (n < 2 || n % 2)
		study_die("needs an even number of ranks, got %d", n);
	half = n / 2;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (study_rank == 0)
		printf("start job=%s ranks=%d epoch=%.3f size=%zu window=%d\n",
		       o.label, n, study_epoch(), o.size, o.window);
	fflush(stdout);
	if (study_rank < half) {
		study_stream_send(&o, study_rank + half, t0);
	} else {
		int src = study_rank - half;

		study_stream_recv(&o, "bw", &src, 1, t0);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (study_rank == 0)
		printf("end job=%s epoch=%.3f\n", o.label, study_epoch());
	MPI_Finalize();
	return 0;
}
