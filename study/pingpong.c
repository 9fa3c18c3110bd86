/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency victim: ping-pong of --size bytes (8 by default) between rank i
 * and rank i + n/2, each round trip timed with MPI_Wtime.  The ping carries the stop decision of
 * the pinging rank (--time, --iters or the stop file), so both sides end
 * after the same exchange.  Prints, per pair, "result ...
 * metric=oneway_us" (half the round trip: mean, p50, p99).
 */
#include "study.h"

#define USAGE "[--label L] [--time S | --iters N | --stop-file F] " \
	"[--warmup N] [--size BYTES]"

int main(int argc, char **argv)
{
	struct study_opts o = { .label = "pingpong", .time = 0,
				.warmup = 20, .size = 8 };
	int n = study_init(&argc, &argv, "pingpong"), half, peer;
	long cap = 1 << 16, k = 0, it;
	double *lat = malloc((size_t)cap * sizeof(*lat)), t0, t, e0;
	int64_t msg = 0;
	char *buf;
	char metric[64];

	study_parse(argc, argv, &o, USAGE);
	if (o.size < sizeof(msg))
		study_die("--size must be at least %zu", sizeof(msg));
	buf = calloc(1, o.size);
	if (!lat || !buf)
		study_die("out of memory");
	if (n < 2 || n % 2)
		study_die("needs an even number of ranks, got %d", n);
	if (!o.time && !o.iters && !o.stop_file)
		o.time = 5;
	half = n / 2;
	peer = study_rank < half ? study_rank + half : study_rank - half;
	MPI_Barrier(MPI_COMM_WORLD);
	e0 = study_epoch();
	t0 = MPI_Wtime();
	for (it = 0;; it++) {
		if (study_rank < half) {
			int timed = it >= o.warmup;

			msg = timed && ((o.iters && it - o.warmup + 1 >=
					 o.iters) ||
					(!o.iters && study_done(&o, t0)));
			memcpy(buf, &msg, sizeof(msg));
			t = MPI_Wtime();
			MPI_Send(buf, (int)o.size, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD);
			MPI_Recv(buf, (int)o.size, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t = MPI_Wtime() - t;
			if (timed) {
				if (k == cap) {
					double *nl = realloc(lat, (size_t)cap *
							     2 * sizeof(*lat));

					if (!nl)
						study_die("out of memory");
					lat = nl;
					cap *= 2;
				}
				lat[k++] = t / 2;
			}
		} else {
			MPI_Recv(buf, (int)o.size, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)o.size, MPI_BYTE, peer, 0,
				 MPI_COMM_WORLD);
			memcpy(&msg, buf, sizeof(msg));
		}
		if (msg)
			break;
	}
	if (study_rank < half) {
		t = MPI_Wtime() - t0;
		printf("run job=%s pair=%d ranks=%d size=%zu epoch_start=%.3f "
		       "epoch_end=%.3f seconds=%.3f iters=%ld\n", o.label,
		       study_rank, n, o.size, e0, study_epoch(), t, k);
		snprintf(metric, sizeof(metric), "oneway_us pair=%d",
			 study_rank);
		study_stats(o.label, metric, lat, k);
	}
	free(lat);
	free(buf);
	MPI_Finalize();
	return 0;
}
