/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared helpers of the study programs (the study/ directory): options,
 * clocks, the windowed streaming that the bisection and incast jobs use,
 * latency statistics, and the one output format.
 *
 * These are ordinary MPI programs: nothing in them knows about the
 * emulator.  Every result is one line of whitespace-separated key=value
 * fields whose first word names the record, so that a script can pick
 * lines with awk and fields by name:
 *
 *	bw job=A pair=0 t=1.500 epoch=1764495000.123 bytes=1048576 gbps=0.0280
 *	result job=V metric=latency_us mean=812.5 p50=800.1 p99=1020.4 n=400
 *
 * Times are the program's own MPI_Wtime; "epoch" is the host's
 * CLOCK_REALTIME so that two jobs' time series can be put on one axis.
 */
#ifndef STUDY_H
#define STUDY_H

#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STUDY_TAG_DATA 1
#define STUDY_TAG_LAST 2
#define STUDY_TAG_PAD 3

struct study_opts {
	const char *label;	/* job label printed in every line */
	double time;		/* seconds to run (0: use iters / stop file) */
	double interval;	/* reporting interval, seconds */
	size_t size;		/* message bytes */
	int window;		/* messages in flight per stream */
	long iters;		/* operations to time (0: use time) */
	long warmup;		/* untimed operations first */
	const char *stop_file;	/* run until this file exists */
	int senders;		/* incast: number of senders (0: all) */
};

static int study_rank = -1;
static const char *study_prog = "study";

static inline void __attribute__((noreturn, format(printf, 1, 2)))
study_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: rank %d: ", study_prog, study_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2);
}

static inline double study_epoch(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline double study_num(const char *opt, const char *v, double min,
			       double max)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || d < min || d > max)
		study_die("%s '%s': expected a number in [%g, %g]", opt, v,
			  min, max);
	return d;
}

/*
 * Options common to every study program; @usage names the ones the program
 * uses.  Unknown options are errors (a typo must not run the wrong study).
 */
static inline void study_parse(int argc, char **argv, struct study_opts *o,
			       const char *usage)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			if (study_rank <= 0)
				printf("usage: %s %s\n", study_prog, usage);
			MPI_Finalize();
			exit(0);
		}
		if (!v)
			study_die("%s: missing value (usage: %s)", a, usage);
		if (!strcmp(a, "--label"))
			o->label = v;
		else if (!strcmp(a, "--time"))
			o->time = study_num(a, v, 0, 1e6);
		else if (!strcmp(a, "--interval"))
			o->interval = study_num(a, v, 1e-3, 1e6);
		else if (!strcmp(a, "--size"))
			o->size = (size_t)study_num(a, v, 0, 1 << 30);
		else if (!strcmp(a, "--window"))
			o->window = (int)study_num(a, v, 1, 1024);
		else if (!strcmp(a, "--iters"))
			o->iters = (long)study_num(a, v, 0, 1e9);
		else if (!strcmp(a, "--warmup"))
			o->warmup = (long)study_num(a, v, 0, 1e9);
		else if (!strcmp(a, "--stop-file"))
			o->stop_file = v;
		else if (!strcmp(a, "--senders"))
			o->senders = (int)study_num(a, v, 1, 1 << 20);
		else
			study_die("unknown option '%s' (usage: %s)", a, usage);
		i++;
	}
}

/* Has the run reached its end (time up or stop file present)? */
static inline int study_done(const struct study_opts *o, double t0)
{
	if (o->time > 0 && MPI_Wtime() - t0 >= o->time)
		return 1;
	if (o->stop_file && access(o->stop_file, F_OK) == 0)
		return 1;
	return 0;
}

/*
 * A stream of @o->size byte messages from this rank to @dest, @o->window
 * in flight, until study_done().  The last data message carries TAG_LAST;
 * then window-1 empty TAG_PAD messages match the receives the receiver
 * still has posted, so both sides end with nothing outstanding (no cancel,
 * no unmatched receive).  Returns the number of data messages sent.
 */
static inline long study_stream_send(const struct study_opts *o, int dest,
				     double t0)
{
	int w = o->window, i, idx, last = 0;
	MPI_Request *req = calloc((size_t)w, sizeof(*req));
	char *buf = malloc(o->size ? o->size : 1);
	long sent = 0;

	if (!req || !buf)
		study_die("out of memory");
	memset(buf, 0x5a, o->size ? o->size : 1);
	for (i = 0; i < w; i++)
		req[i] = MPI_REQUEST_NULL;
	for (i = 0; !last; i = (i + 1) % w) {
		if (req[i] != MPI_REQUEST_NULL)
			MPI_Wait(&req[i], MPI_STATUS_IGNORE);
		last = study_done(o, t0);
		MPI_Isend(buf, (int)o->size, MPI_BYTE, dest,
			  last ? STUDY_TAG_LAST : STUDY_TAG_DATA,
			  MPI_COMM_WORLD, &req[i]);
		sent++;
	}
	for (idx = 0; idx < w - 1; idx++, i = (i + 1) % w) {
		if (req[i] != MPI_REQUEST_NULL)
			MPI_Wait(&req[i], MPI_STATUS_IGNORE);
		MPI_Isend(buf, 0, MPI_BYTE, dest, STUDY_TAG_PAD,
			  MPI_COMM_WORLD, &req[i]);
	}
	MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
	free(buf);
	free(req);
	return sent;
}

/* Bytes received per source, per interval, by study_stream_recv(). */
struct study_rx {
	int src;
	MPI_Request *req;
	char *buf;
	int next;		/* oldest posted receive */
	int done;		/* TAG_LAST seen */
	uint64_t bytes, total;
	uint64_t held;		/* bytes of the window held back */
};

/* A closed reporting window, printed one window late (see below). */
struct study_win {
	int open;		/* a window is held */
	double t, dt, epoch;	/* its end (since t0), length, epoch at end */
};

static inline void study_win_print(const char *rec,
				   const struct study_opts *o,
				   struct study_rx *rx, int nsrc,
				   const struct study_win *win)
{
	for (int s = 0; s < nsrc; s++) {
		printf("%s job=%s src=%d dst=%d t=%.3f dt=%.4f epoch=%.3f "
		       "bytes=%llu gbps=%.6f\n", rec, o->label, rx[s].src,
		       study_rank, win->t, win->dt, win->epoch,
		       (unsigned long long)rx[s].held,
		       rx[s].held * 8.0 / win->dt / 1e9);
		rx[s].held = 0;
	}
	fflush(stdout);
}

/*
 * Receive the streams of @nsrc senders (@srcs) with @o->window receives
 * posted per sender, printing one "bw" line per sender and interval.
 * Receives from one sender complete in order (MPI's non-overtaking rule),
 * so the oldest one is the one to wait for.
 *
 * Each window is printed when the next one closes.  The stream's last
 * window ends when the last message arrives, usually soon after the one
 * before it closed: a megabyte over a few milliseconds would print as a
 * rate many times the link's.  A last window shorter than half an
 * interval is therefore joined to the one held back and printed with it,
 * so every byte is counted once and no window is shorter than half an
 * interval (unless the whole stream was).
 */
static inline void study_stream_recv(const struct study_opts *o,
				     const char *rec, const int *srcs,
				     int nsrc, double t0)
{
	struct study_rx *rx = calloc((size_t)nsrc, sizeof(*rx));
	int w = o->window, s, i, flag, left = nsrc;
	double tlast = t0, t;
	struct study_win win = { 0 };
	MPI_Status st;

	if (!rx)
		study_die("out of memory");
	for (s = 0; s < nsrc; s++) {
		rx[s].src = srcs[s];
		rx[s].req = calloc((size_t)w, sizeof(MPI_Request));
		rx[s].buf = malloc((size_t)w * (o->size ? o->size : 1));
		if (!rx[s].req || !rx[s].buf)
			study_die("out of memory");
		for (i = 0; i < w; i++)
			MPI_Irecv(rx[s].buf + (size_t)i * o->size,
				  (int)o->size, MPI_BYTE, srcs[s],
				  MPI_ANY_TAG, MPI_COMM_WORLD, &rx[s].req[i]);
	}
	while (left) {
		for (s = 0; s < nsrc; s++) {
			struct study_rx *x = &rx[s];
			int cnt;

			if (x->done)
				continue;
			MPI_Test(&x->req[x->next], &flag, &st);
			if (!flag)
				continue;
			MPI_Get_count(&st, MPI_BYTE, &cnt);
			x->bytes += (uint64_t)cnt;
			x->total += (uint64_t)cnt;
			if (st.MPI_TAG == STUDY_TAG_LAST) {
				/* the rest are matched by the padding */
				x->done = 1;
				left--;
				MPI_Waitall(w, x->req, MPI_STATUSES_IGNORE);
				continue;
			}
			MPI_Irecv(x->buf + (size_t)x->next * o->size,
				  (int)o->size, MPI_BYTE, x->src, MPI_ANY_TAG,
				  MPI_COMM_WORLD, &x->req[x->next]);
			x->next = (x->next + 1) % w;
		}
		t = MPI_Wtime();
		if (t - tlast >= o->interval || !left) {
			bool join = !left && win.open &&
				    t - tlast < o->interval / 2;

			if (win.open && !join)
				study_win_print(rec, o, rx, nsrc, &win);
			for (s = 0; s < nsrc; s++) {
				rx[s].held += rx[s].bytes;
				rx[s].bytes = 0;
			}
			win.dt = join ? win.dt + (t - tlast) : t - tlast;
			win.t = t - t0;
			win.epoch = study_epoch();
			win.open = 1;
			tlast = t;
		}
	}
	if (win.open)
		study_win_print(rec, o, rx, nsrc, &win);
	t = MPI_Wtime();
	for (s = 0; s < nsrc; s++) {
		printf("total job=%s src=%d dst=%d seconds=%.3f bytes=%llu "
		       "gbps=%.6f\n", o->label, rx[s].src, study_rank, t - t0,
		       (unsigned long long)rx[s].total,
		       rx[s].total * 8.0 / (t - t0) / 1e9);
		free(rx[s].req);
		free(rx[s].buf);
	}
	fflush(stdout);
	free(rx);
}

static int study_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Print "result" for @n samples (seconds), as microseconds; sorts @v. */
static inline void study_stats(const char *label, const char *metric,
			       double *v, long n)
{
	double sum = 0;
	long i;

	if (n <= 0) {
		printf("result job=%s metric=%s n=0\n", label, metric);
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), study_cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	printf("result job=%s metric=%s mean=%.3f p50=%.3f p99=%.3f "
	       "min=%.3f max=%.3f n=%ld\n", label, metric, sum / n * 1e6,
	       v[n / 2] * 1e6, v[(long)(n * 0.99) < n ? (long)(n * 0.99) :
				 n - 1] * 1e6, v[0] * 1e6, v[n - 1] * 1e6, n);
	fflush(stdout);
}

/* MPI_Init, rank, program name, and a line saying the job started. */
static inline int study_init(int *argc, char ***argv, const char *prog)
{
	int size;

	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &study_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	study_prog = prog;
	return size;
}

#endif /* STUDY_H */
