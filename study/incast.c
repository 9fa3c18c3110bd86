/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Incast aggressor: every rank but 0 streams --size byte messages to rank
 * 0 (--window in flight each) until --time is up or the stop file exists;
 * rank 0 prints what it received from each sender per --interval ("bw")
 * and in all ("total").  Prints "running" when the streams have started.
 */
#include "study.h"

#define USAGE "[--label L] [--time S | --stop-file F] [--interval S] " \
	"[--size BYTES] [--window N]"

int main(int argc, char **argv)
{
	struct study_opts o = { .label = "incast", .time = 0,
				.interval = 1.0, .size = 1 << 20,
				.window = 4 };
	int n = study_init(&argc, &argv, "incast"), i;
	double t0;

	study_parse(argc, argv, &o, USAGE);
	if (!o.time && !o.stop_file)
		o.time = 10;
	if (n < 2)
		study_die("needs at least 2 ranks, got %d", n);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	if (study_rank == 0) {
		int *srcs = malloc((size_t)(n - 1) * sizeof(*srcs));

		if (!srcs)
			study_die("out of memory");
		for (i = 1; i < n; i++)
			srcs[i - 1] = i;
		printf("running job=%s ranks=%d epoch=%.3f size=%zu "
		       "window=%d\n", o.label, n, study_epoch(), o.size,
		       o.window);
		fflush(stdout);
		study_stream_recv(&o, "bw", srcs, n - 1, t0);
		free(srcs);
	} else {
		study_stream_send(&o, 0, t0);
	}
	MPI_Finalize();
	return 0;
}
