/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency victim: 8-byte MPI_Allreduce in a loop, each one timed with
 * MPI_Wtime.  The reduction itself carries the stop decision (rank 0
 * contributes 1 once --time is up or the stop file exists; MPI_MAX), so
 * every rank ends after the same iteration with no extra message.  Prints
 * "result ... metric=allreduce_us" (mean, p50, p99 over the timed ones).
 */
#include "study.h"

#define USAGE "[--label L] [--time S | --iters N | --stop-file F] " \
	"[--warmup N]"

int main(int argc, char **argv)
{
	struct study_opts o = { .label = "allreduce", .time = 0,
				.warmup = 20 };
	int n = study_init(&argc, &argv, "allreduce");
	long cap = 1 << 16, k = 0, it;
	double *lat = malloc((size_t)cap * sizeof(*lat)), t0, t, e0;
	long in, out;

	study_parse(argc, argv, &o, USAGE);
	if (!lat)
		study_die("out of memory");
	if (!o.time && !o.iters && !o.stop_file)
		o.time = 5;
	for (it = 0; it < o.warmup; it++) {
		in = 0;
		MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	e0 = study_epoch();
	t0 = MPI_Wtime();
	for (it = 0;; it++) {
		in = study_rank == 0 &&
		     ((o.iters && it + 1 >= o.iters) ||
		      (!o.iters && study_done(&o, t0)));
		t = MPI_Wtime();
		MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
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
		if (out)
			break;
	}
	t = MPI_Wtime() - t0;
	if (study_rank == 0) {
		printf("run job=%s ranks=%d epoch_start=%.3f epoch_end=%.3f "
		       "seconds=%.3f iters=%ld\n", o.label, n, e0,
		       study_epoch(), t, k);
		study_stats(o.label, "allreduce_us", lat, k);
	}
	free(lat);
	MPI_Finalize();
	return 0;
}
