/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI nonblocking-operation test: about a thousand Isend/Irecv pairs of
 * mixed sizes in flight at once between all ranks, completed through
 * MPI_Waitall, MPI_Testany and MPI_Waitsome; then persistent requests and a
 * freed active send request.  Every message's status and bytes are checked.
 *
 * usage: nonblocking [-n messages_per_rank] [-m max_size]
 *                    [-p persistent_rounds]
 */
#include "mpit.h"

static const size_t nb_sched[] = {
	0, 1, 17, 64, 100, 512, 1024, 4000, 4096, 8191, 16384, 65536, 200,
	65537, 3,
};

static size_t nb_max = 65536;

enum nb_phase {
	PH_WAITALL = 1,
	PH_TESTANY,
	PH_WAITSOME,
	PH_PERSISTENT,
	PH_FREED,
};

static size_t nb_size(int src, int dst, int j)
{
	size_t len = nb_sched[(unsigned)(j + src + 2 * dst) %
			      MPIT_ARRAY_SIZE(nb_sched)];

	return len > nb_max ? (size_t)j % 100 : len;
}

/*
 * One exchange: round j, distance k (1..n-1) sends to rank + k and receives
 * from rank - k with tag j.  Receive i and send i sit at index i.
 */
struct nb_plan {
	int nmsg;		/* messages per direction */
	int rounds;
	unsigned char *sarena, *rarena;
	size_t *soff, *roff;	/* offsets in the arenas */
	MPI_Request *req;	/* nmsg receives, then nmsg sends */
	MPI_Status *st;
	char *done;
};

static int nb_dst(int i)
{
	return (mpit_rank + 1 + i % (mpit_size - 1)) % mpit_size;
}

static int nb_src(int i)
{
	return (mpit_rank + 2 * mpit_size - 1 - i % (mpit_size - 1)) %
	       mpit_size;
}

static int nb_round(int i)
{
	return i / (mpit_size - 1);
}

static void nb_plan_init(struct nb_plan *p, int nmsg_wanted)
{
	size_t so = 0, ro = 0;
	int i;

	p->rounds = (nmsg_wanted + mpit_size - 2) / (mpit_size - 1);
	p->nmsg = p->rounds * (mpit_size - 1);
	p->soff = mpit_malloc(p->nmsg * sizeof(*p->soff));
	p->roff = mpit_malloc(p->nmsg * sizeof(*p->roff));
	for (i = 0; i < p->nmsg; i++) {
		p->soff[i] = so;
		so += nb_size(mpit_rank, nb_dst(i), nb_round(i));
		p->roff[i] = ro;
		ro += nb_size(nb_src(i), mpit_rank, nb_round(i)) + MPIT_GUARD;
	}
	p->sarena = mpit_malloc(so);
	p->rarena = mpit_malloc(ro);
	p->req = mpit_malloc(2 * p->nmsg * sizeof(*p->req));
	p->st = mpit_malloc(2 * p->nmsg * sizeof(*p->st));
	p->done = mpit_malloc(2 * p->nmsg);
}

static void nb_plan_free(struct nb_plan *p)
{
	free(p->soff);
	free(p->roff);
	free(p->sarena);
	free(p->rarena);
	free(p->req);
	free(p->st);
	free(p->done);
}

static uint32_t nb_seed(int src, int dst, int j, int phase)
{
	return mpit_seed(src, dst, j, phase);
}

static void nb_post_recv(struct nb_plan *p, int i)
{
	int src = nb_src(i), j = nb_round(i);
	size_t len = nb_size(src, mpit_rank, j);

	mpit_poison(p->rarena + p->roff[i], len);
	MPIT_MPI(MPI_Irecv(p->rarena + p->roff[i], (int)len, MPI_BYTE, src, j,
			   MPI_COMM_WORLD, &p->req[i]));
}

static void nb_check_recv(struct nb_plan *p, int i, const MPI_Status *st,
			  int phase, const char *how)
{
	int src = nb_src(i), j = nb_round(i);
	size_t len = nb_size(src, mpit_rank, j);

	mpit_check_status(st, src, j, len, "%s: receive #%d", how, i);
	mpit_verify(p->rarena + p->roff[i], len,
		    nb_seed(src, mpit_rank, j, phase),
		    "%s: receive #%d (%zu B from %d, tag %d)", how, i, len, src,
		    j);
}

/*
 * Post half the receives (newest tag first), start every send (each
 * seventh one synchronous), then post the other half: some messages meet a
 * posted receive, others arrive unexpected.
 */
static void nb_start(struct nb_plan *p, int phase)
{
	int i, n = p->nmsg;

	for (i = 0; i < n; i++) {
		int dst = nb_dst(i), j = nb_round(i);

		mpit_fill(p->sarena + p->soff[i], nb_size(mpit_rank, dst, j),
			  nb_seed(mpit_rank, dst, j, phase));
	}
	for (i = n / 2 - 1; i >= 0; i--)
		nb_post_recv(p, i);
	for (i = 0; i < n; i++) {
		int dst = nb_dst(i), j = nb_round(i);
		int len = (int)nb_size(mpit_rank, dst, j);
		void *buf = p->sarena + p->soff[i];

		if (i % 7 == 3)
			MPIT_MPI(MPI_Issend(buf, len, MPI_BYTE, dst, j,
					    MPI_COMM_WORLD, &p->req[n + i]));
		else
			MPIT_MPI(MPI_Isend(buf, len, MPI_BYTE, dst, j,
					   MPI_COMM_WORLD, &p->req[n + i]));
	}
	for (i = n / 2; i < n; i++)
		nb_post_recv(p, i);
	memset(p->done, 0, 2 * n);
}

static void nb_waitall(struct nb_plan *p)
{
	int i;

	nb_start(p, PH_WAITALL);
	MPIT_MPI(MPI_Waitall(2 * p->nmsg, p->req, p->st));
	for (i = 0; i < p->nmsg; i++)
		nb_check_recv(p, i, &p->st[i], PH_WAITALL, "Waitall");
}

static void nb_complete_one(struct nb_plan *p, int idx, const MPI_Status *st,
			    int phase, const char *how)
{
	MPIT_CHECK(idx >= 0 && idx < 2 * p->nmsg,
		   "%s returned index %d of %d requests", how, idx,
		   2 * p->nmsg);
	MPIT_CHECK(!p->done[idx], "%s returned request %d twice", how, idx);
	MPIT_CHECK(p->req[idx] == MPI_REQUEST_NULL,
		   "%s did not set completed request %d to MPI_REQUEST_NULL",
		   how, idx);
	p->done[idx] = 1;
	if (idx < p->nmsg)
		nb_check_recv(p, idx, st, phase, how);
}

static void nb_testany(struct nb_plan *p)
{
	int n2 = 2 * p->nmsg, left = n2, idx, flag;
	double t0 = MPI_Wtime();
	MPI_Status st;

	nb_start(p, PH_TESTANY);
	while (left > 0) {
		MPIT_MPI(MPI_Testany(n2, p->req, &idx, &flag, &st));
		if (!flag) {
			MPIT_CHECK(idx == MPI_UNDEFINED,
				   "MPI_Testany: flag false but index %d", idx);
			MPIT_CHECK(MPI_Wtime() - t0 < MPIT_POLL_LIMIT,
				   "MPI_Testany: %d of %d requests still "
				   "incomplete after %.0f s",
				   left, n2, MPIT_POLL_LIMIT);
			continue;
		}
		nb_complete_one(p, idx, &st, PH_TESTANY, "MPI_Testany");
		left--;
	}
	MPIT_MPI(MPI_Testany(n2, p->req, &idx, &flag, &st));
	MPIT_CHECK(flag && idx == MPI_UNDEFINED,
		   "MPI_Testany on all-inactive requests: flag %d, index %d",
		   flag, idx);
}

static void nb_waitsome(struct nb_plan *p)
{
	int n2 = 2 * p->nmsg, left = n2, out, k, calls = 0;
	int *idx = mpit_malloc(n2 * sizeof(*idx));

	nb_start(p, PH_WAITSOME);
	while (left > 0) {
		MPIT_MPI(MPI_Waitsome(n2, p->req, &out, idx, p->st));
		MPIT_CHECK(out >= 1 && out <= left,
			   "MPI_Waitsome returned outcount %d with %d "
			   "requests active",
			   out, left);
		for (k = 0; k < out; k++)
			nb_complete_one(p, idx[k], &p->st[k], PH_WAITSOME,
					"MPI_Waitsome");
		left -= out;
		calls++;
	}
	MPIT_MPI(MPI_Waitsome(n2, p->req, &out, idx, p->st));
	MPIT_CHECK(out == MPI_UNDEFINED,
		   "MPI_Waitsome on all-inactive requests: outcount %d", out);
	free(idx);
}

/*
 * Persistent requests for the first few messages of the plan, started
 * together with MPI_Startall in several rounds with fresh data each round.
 */
static void nb_persistent(struct nb_plan *p, int rounds)
{
	int n = p->nmsg < 256 ? p->nmsg : 256, i, r;
	MPI_Request *req = mpit_malloc(2 * n * sizeof(*req));
	MPI_Status *st = mpit_malloc(2 * n * sizeof(*st));

	/* n is a multiple of (size - 1) or all of the plan: peers agree */
	if (n < p->nmsg)
		n -= n % (mpit_size - 1);
	for (i = 0; i < n; i++) {
		int src = nb_src(i), dst = nb_dst(i), j = nb_round(i);

		MPIT_MPI(MPI_Recv_init(p->rarena + p->roff[i],
				       (int)nb_size(src, mpit_rank, j),
				       MPI_BYTE, src, j, MPI_COMM_WORLD,
				       &req[i]));
		MPIT_MPI(MPI_Send_init(p->sarena + p->soff[i],
				       (int)nb_size(mpit_rank, dst, j),
				       MPI_BYTE, dst, j, MPI_COMM_WORLD,
				       &req[n + i]));
	}
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < n; i++) {
			int dst = nb_dst(i), j = nb_round(i);

			mpit_fill(p->sarena + p->soff[i],
				  nb_size(mpit_rank, dst, j),
				  nb_seed(mpit_rank, dst, j,
					  PH_PERSISTENT + 10 * r));
			mpit_poison(p->rarena + p->roff[i],
				    nb_size(nb_src(i), mpit_rank, j));
		}
		MPIT_MPI(MPI_Startall(2 * n, req));
		MPIT_MPI(MPI_Waitall(2 * n, req, st));
		for (i = 0; i < n; i++)
			nb_check_recv(p, i, &st[i], PH_PERSISTENT + 10 * r,
				      "persistent");
		MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* before refilling */
	}
	for (i = 0; i < 2 * n; i++) {
		MPIT_MPI(MPI_Request_free(&req[i]));
		MPIT_CHECK(req[i] == MPI_REQUEST_NULL,
			   "MPI_Request_free left a handle");
	}
	free(req);
	free(st);
}

/* An active send request may be freed; the message must still arrive. */
static void nb_freed_send(void)
{
	int dst = (mpit_rank + 1) % mpit_size;
	int src = (mpit_rank + mpit_size - 1) % mpit_size;
	size_t len = nb_max < 50000 ? nb_max : 50000;
	unsigned char *s = mpit_malloc(len), *r = mpit_malloc(len + MPIT_GUARD);
	MPI_Request req;
	MPI_Status st;

	mpit_fill(s, len, nb_seed(mpit_rank, dst, 0, PH_FREED));
	mpit_poison(r, len);
	MPIT_MPI(MPI_Isend(s, (int)len, MPI_BYTE, dst, PH_FREED,
			   MPI_COMM_WORLD, &req));
	MPIT_MPI(MPI_Request_free(&req));
	MPIT_MPI(MPI_Recv(r, (int)len, MPI_BYTE, src, PH_FREED, MPI_COMM_WORLD,
			  &st));
	mpit_check_status(&st, src, PH_FREED, len, "freed Isend");
	mpit_verify(r, len, nb_seed(src, mpit_rank, 0, PH_FREED),
		    "message of a freed Isend request");
	/* the receiver has the data, so the send is over: its buffer can go */
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	int nmsg = 1000, prounds = 5, opt;
	struct nb_plan p;

	mpit_init(&argc, &argv, "nonblocking");
	while ((opt = getopt(argc, argv, "n:m:p:")) != -1) {
		switch (opt) {
		case 'n':
			nmsg = mpit_parse_int(optarg);
			break;
		case 'm':
			nb_max = mpit_parse_size(optarg);
			break;
		case 'p':
			prounds = mpit_parse_int(optarg);
			break;
		default:
			MPIT_FAIL("usage: nonblocking [-n messages_per_rank] "
				  "[-m max_size] [-p persistent_rounds]");
		}
	}
	MPIT_CHECK(mpit_size >= 2, "needs at least 2 ranks");
	nb_plan_init(&p, nmsg);
	nb_waitall(&p);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	nb_testany(&p);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	nb_waitsome(&p);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	nb_persistent(&p, prounds);
	nb_freed_send();
	mpit_finish("%d Isend/Irecv pairs in flight per rank (0..%zu B, every "
		    "7th Issend) via Waitall, Testany, Waitsome; %d rounds of "
		    "persistent Startall; freed active Isend",
		    p.nmsg, nb_max, prounds);
	nb_plan_free(&p);
	return 0;
}
