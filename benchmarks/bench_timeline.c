/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where the time of a message between processes goes: reads the timeline
 * files that processes write with SSEMU_TIMELINE set (emu/ssemu_timeline.h;
 * `bench_fabric latency --timeline PREFIX` makes them for its two-process
 * ping-pong), merges them by time and follows each message:
 *
 *   post     ssemu_ep_send, entered to posted
 *   to_run   posted to the lock taken by the run that takes it into the
 *            model (0 if that run had the lock already)
 *   drain    lock to the message taken into the model
 *   model    taken to its RECV pushed to the receiver's ring
 *   deliver  pushed to the receiver's poll that returns it
 *   total    ssemu_ep_send entered to the receiver's poll
 *
 * and the deliver stage in three, where the run that pushed it ended
 * before that poll (its process's points):
 *
 *   rest     pushed to the end of the run (the events after it)
 *   unlock   the run's end to the lock let go
 *   poll     the lock let go to the receiver's poll that returns it
 *
 * by who ran the engine for it: the sender's process, the receiver's or
 * a third; and the receiver's turnaround (its poll that returned a RECV
 * to its next ssemu_ep_send: the application's time, a ping-pong's reply).
 * Each figure is the median over the messages, in nanoseconds, as
 * "key value" lines.  It follows one message in flight at a time (a
 * ping-pong): a message whose points do not follow in that order is left
 * out and counted (unmatched).  Timings, so the machine's noise is in
 * them; the medians are steadier than a mean.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssemu_timeline.h"

#define MAX_FILES 64
#define MAX_OPEN 64	/* messages followed at once */

struct rec {
	uint64_t t;
	uint32_t point, arg;
	uint32_t proc;		/* file index */
};

struct msg {
	uint32_t sender, runner, slot;
	uint64_t send, posted, lock, taken, pushed;
	uint64_t run_end, unlocked;	/* the pushing run's (0: not yet) */
};

enum group { G_SENDER, G_RECEIVER, G_OTHER, G_N };

static const char *const group_name[G_N] = {
	"runner_sender", "runner_receiver", "runner_other",
};

#define NSEG 6
static const char *const seg_name[NSEG] = {
	"post", "to_run", "drain", "model", "deliver", "total",
};
#define NSPLIT 3
static const char *const split_name[NSPLIT] = {
	"rest", "unlock", "poll",
};

struct series {
	double *v;
	size_t n, cap;
};

static int push_value(struct series *s, double v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		double *p = realloc(s->v, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->v = p;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(struct series *s)
{
	qsort(s->v, s->n, sizeof(*s->v), cmp_double);
	return s->n ? s->v[s->n / 2] : 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->proc > y->proc) - (x->proc < y->proc);
}

/* Append file @path's records to *@recs (as process @proc); its ticks per
 * nanosecond to *@tpn.  @return 0, or -1 with the reason said. */
static int read_file(const char *path, uint32_t proc, struct rec **recs,
		     size_t *nrecs, double *tpn)
{
	struct ssemu_tl_file h;
	struct ssemu_tl_rec r;
	struct rec *p;
	uint64_t i;
	FILE *fp;
	long size;

	fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "bench_timeline: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	if (fseek(fp, 0, SEEK_END) || (size = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET)) {
		fprintf(stderr, "bench_timeline: %s: cannot tell its size\n",
			path);
		goto bad;
	}
	if (fread(&h, sizeof(h), 1, fp) != 1 || h.magic != SSEMU_TL_MAGIC) {
		fprintf(stderr, "bench_timeline: %s: not a timeline file (no "
			"header, or the wrong magic)\n", path);
		goto bad;
	}
	if (h.nrec > ((uint64_t)size - sizeof(h)) / sizeof(r) ||
	    (uint64_t)size != sizeof(h) + h.nrec * sizeof(r)) {
		fprintf(stderr, "bench_timeline: %s: its header says %" PRIu64
			" records, its size %ld bytes: cut short or damaged\n",
			path, h.nrec, size);
		goto bad;
	}
	if (!(h.ticks_per_ns > 0.01 && h.ticks_per_ns < 100)) {
		fprintf(stderr, "bench_timeline: %s: ticks per nanosecond "
			"%g out of range\n", path, h.ticks_per_ns);
		goto bad;
	}
	if (h.dropped)
		fprintf(stderr, "bench_timeline: %s: %" PRIu64 " points past "
			"its buffer were not kept\n", path, h.dropped);
	p = realloc(*recs, (*nrecs + h.nrec) * sizeof(*p));
	if (!p && h.nrec) {
		fprintf(stderr, "bench_timeline: out of memory\n");
		goto bad;
	}
	*recs = p;
	for (i = 0; i < h.nrec; i++) {
		if (fread(&r, sizeof(r), 1, fp) != 1) {
			fprintf(stderr, "bench_timeline: %s: short read\n",
				path);
			goto bad;
		}
		if (!r.point || r.point >= SSEMU_TL_NPOINTS) {
			fprintf(stderr, "bench_timeline: %s: record %" PRIu64
				" has point %u, not one of 1..%d\n", path, i,
				r.point, SSEMU_TL_NPOINTS - 1);
			goto bad;
		}
		p[*nrecs].t = r.t;
		p[*nrecs].point = r.point;
		p[*nrecs].arg = r.arg;
		p[*nrecs].proc = proc;
		(*nrecs)++;
	}
	fclose(fp);
	*tpn = h.ticks_per_ns;
	return 0;
bad:
	fclose(fp);
	return -1;
}

int main(int argc, char **argv)
{
	struct series seg[G_N][NSEG] = { 0 }, turn = { 0 };
	struct series split[G_N][NSPLIT] = { 0 };
	struct msg open[MAX_OPEN], *m;
	uint64_t lock_at[MAX_FILES] = { 0 }, got_at[MAX_FILES] = { 0 };
	uint64_t matched = 0, unmatched = 0, send_at[MAX_FILES] = { 0 };
	double tpn = 0, t, d[NSEG];
	struct rec *recs = NULL, *r;
	size_t nrecs = 0, i;
	unsigned nopen = 0, k, g, s;
	int nfiles = argc - 1, f, ret = 1;

	if (argc >= 2 && (!strcmp(argv[1], "-h") ||
			  !strcmp(argv[1], "--help"))) {
		printf("usage: bench_timeline FILE...\n"
		       "  the timeline files of the processes of a ping-pong\n"
		       "  (SSEMU_TIMELINE=PREFIX writes PREFIX.PID; bench_fabric\n"
		       "  latency --timeline PREFIX makes them)\n");
		return 0;
	}
	if (nfiles < 1 || nfiles > MAX_FILES) {
		fprintf(stderr, "bench_timeline: give 1 to %d timeline files "
			"(--help)\n", MAX_FILES);
		return 2;
	}
	for (f = 0; f < nfiles; f++) {
		double x;

		if (read_file(argv[f + 1], (uint32_t)f, &recs, &nrecs, &x))
			goto out2;
		tpn += x / nfiles;
	}
	qsort(recs, nrecs, sizeof(*recs), cmp_rec);

	for (i = 0; i < nrecs; i++) {
		r = &recs[i];
		switch (r->point) {
		case SSEMU_TL_SEND:
			send_at[r->proc] = r->t;
			if (got_at[r->proc] && r->t >= got_at[r->proc])
				push_value(&turn, (double)(r->t -
						got_at[r->proc]) / tpn);
			got_at[r->proc] = 0;
			break;
		case SSEMU_TL_POSTED:
			if (!send_at[r->proc])
				break;
			if (nopen == MAX_OPEN) {
				unmatched++;
				break;
			}
			m = &open[nopen++];
			*m = (struct msg){ .sender = r->proc,
					   .runner = UINT32_MAX,
					   .slot = r->arg,
					   .send = send_at[r->proc],
					   .posted = r->t };
			send_at[r->proc] = 0;
			break;
		case SSEMU_TL_LOCK:
			lock_at[r->proc] = r->t;
			break;
		case SSEMU_TL_TAKEN:
			for (k = 0; k < nopen; k++)
				if (open[k].slot == r->arg &&
				    open[k].runner == UINT32_MAX)
					break;
			if (k == nopen)
				break;
			m = &open[k];
			m->runner = r->proc;
			m->taken = r->t;
			/* the run that took it: its lock, or the post if
			 * the run had the lock before the post was done */
			m->lock = lock_at[r->proc] > m->posted ?
					  lock_at[r->proc] : m->posted;
			break;
		case SSEMU_TL_PUSH_RECV:
			for (k = 0; k < nopen; k++)
				if (open[k].slot == r->arg &&
				    open[k].runner != UINT32_MAX &&
				    !open[k].pushed)
					break;
			if (k < nopen)
				open[k].pushed = r->t;
			break;
		case SSEMU_TL_RUN_END:
		case SSEMU_TL_UNLOCK:
			/* the run that pushed a message, of its runner */
			for (k = 0; k < nopen; k++) {
				m = &open[k];
				if (m->runner != r->proc || !m->pushed)
					continue;
				if (r->point == SSEMU_TL_RUN_END &&
				    !m->run_end)
					m->run_end = r->t;
				else if (r->point == SSEMU_TL_UNLOCK &&
					 m->run_end && !m->unlocked)
					m->unlocked = r->t;
			}
			break;
		case SSEMU_TL_POLL_RECV:
			got_at[r->proc] = r->t;
			/* the oldest pushed message another process sent */
			for (k = 0; k < nopen; k++)
				if (open[k].pushed &&
				    open[k].sender != r->proc)
					break;
			if (k == nopen)
				break;
			m = &open[k];
			d[0] = (double)(m->posted - m->send);
			d[1] = (double)(m->lock - m->posted);
			d[2] = (double)(m->taken - m->lock);
			d[3] = (double)(m->pushed - m->taken);
			d[4] = (double)(r->t - m->pushed);
			d[5] = (double)(r->t - m->send);
			g = m->runner == m->sender ? G_SENDER :
			    m->runner == r->proc ? G_RECEIVER : G_OTHER;
			for (s = 0; s < NSEG; s++)
				push_value(&seg[g][s], d[s] / tpn);
			if (m->unlocked) {
				push_value(&split[g][0],
					   (double)(m->run_end - m->pushed) /
						   tpn);
				push_value(&split[g][1],
					   (double)(m->unlocked - m->run_end) /
						   tpn);
				push_value(&split[g][2],
					   (double)(r->t - m->unlocked) / tpn);
			}
			matched++;
			/* anything older than it is not coming */
			unmatched += k;
			memmove(open, open + k + 1,
				(nopen - k - 1) * sizeof(*open));
			nopen -= k + 1;
			break;
		}
	}
	unmatched += nopen;

	printf("files %d\n", nfiles);
	printf("ticks_per_ns %.4f\n", tpn);
	printf("messages %" PRIu64 "\n", matched);
	printf("unmatched %" PRIu64 "\n", unmatched);
	for (g = 0; g < G_N; g++) {
		if (!seg[g][NSEG - 1].n)
			continue;
		printf("%s_messages %zu\n", group_name[g], seg[g][0].n);
		for (s = 0; s < NSEG; s++) {
			t = median(&seg[g][s]);
			printf("%s_%s_ns %.0f\n", group_name[g], seg_name[s], t);
		}
		if (!split[g][0].n)
			continue;
		printf("%s_ended_first %zu\n", group_name[g], split[g][0].n);
		for (s = 0; s < NSPLIT; s++)
			printf("%s_deliver_%s_ns %.0f\n", group_name[g],
			       split_name[s], median(&split[g][s]));
	}
	if (turn.n)
		printf("turnaround_ns %.0f\n", median(&turn));
	ret = matched ? 0 : 1;
	if (!matched)
		fprintf(stderr, "bench_timeline: no message followed from "
			"its post to its receiver's poll\n");
	for (g = 0; g < G_N; g++)
		for (s = 0; s < NSEG; s++)
			free(seg[g][s].v);
	for (g = 0; g < G_N; g++)
		for (s = 0; s < NSPLIT; s++)
			free(split[g][s].v);
	free(turn.v);
	free(recs);
	return ret;
out2:
	free(recs);
	return 2;
}
