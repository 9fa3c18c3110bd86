/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI point-to-point test: blocking, nonblocking, synchronous and combined
 * send/receive at sizes on both sides of the inject, eager and rendezvous
 * thresholds (slingshot_emu's default eager_max is 16384), between pairs,
 * around a ring and between all ranks.  Every received byte, the byte
 * count, source and tag are checked.
 *
 * usage: p2p [-m max_size] [-a all_pairs_max_size] [-i iterations]
 */
#include "mpit.h"

static const size_t sizes[] = {
	0, 1, 7, 8, 63, 64, 255, 256, 1023, 1024, 2047, 2048, 2049, 4095,
	4096, 8192, 16383, 16384, 16385, 65535, 65536, 65537, 262144,
	1 << 20, 4 << 20,
};

enum p2p_phase {
	PH_PAIR_BLOCKING = 1,
	PH_PAIR_NONBLOCKING,
	PH_SSEND,
	PH_SENDRECV,
	PH_SENDRECV_REPLACE,
	PH_RING_NONBLOCKING,
	PH_ALL_PAIRS,
	PH_ISSEND,
	PH_ISSEND_GO,
	PH_VECTOR,
};

/* Tags stay unique per (phase, size) so a mismatched message is visible. */
static int p2p_tag(enum p2p_phase ph, int size_idx)
{
	return ph * 100 + size_idx;
}

static uint32_t p2p_seed(int src, int dst, size_t len, enum p2p_phase ph,
			 int iter)
{
	return mpit_seed(src, dst, (uint32_t)len, ph * 1000 + iter);
}

struct p2p_bufs {
	unsigned char *s[2];	/* send buffers */
	unsigned char *r[2];	/* receive buffers, len + MPIT_GUARD */
};

/* Partner in pairs (0,1), (2,3), ...; -1 for the odd rank out. */
static int p2p_partner(void)
{
	int p = mpit_rank ^ 1;

	return p < mpit_size ? p : -1;
}

static void p2p_pair_blocking(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int peer = p2p_partner(), tag = p2p_tag(PH_PAIR_BLOCKING, si);
	MPI_Status st;

	if (peer < 0)
		return;
	mpit_fill(b->s[0], len, p2p_seed(mpit_rank, peer, len,
					 PH_PAIR_BLOCKING, iter));
	mpit_poison(b->r[0], len);
	if (mpit_rank % 2 == 0) {
		MPIT_MPI(MPI_Send(b->s[0], (int)len, MPI_BYTE, peer, tag,
				  MPI_COMM_WORLD));
		MPIT_MPI(MPI_Recv(b->r[0], (int)len, MPI_BYTE, peer, tag,
				  MPI_COMM_WORLD, &st));
	} else {
		MPIT_MPI(MPI_Recv(b->r[0], (int)len, MPI_BYTE, peer, tag,
				  MPI_COMM_WORLD, &st));
		MPIT_MPI(MPI_Send(b->s[0], (int)len, MPI_BYTE, peer, tag,
				  MPI_COMM_WORLD));
	}
	mpit_check_status(&st, peer, tag, len, "pair Send/Recv %zu B", len);
	mpit_verify(b->r[0], len,
		    p2p_seed(peer, mpit_rank, len, PH_PAIR_BLOCKING, iter),
		    "pair Send/Recv %zu B from %d", len, peer);
}

static void p2p_pair_nonblocking(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int peer = p2p_partner(), tag = p2p_tag(PH_PAIR_NONBLOCKING, si);
	MPI_Request req[2];
	MPI_Status st[2];

	if (peer < 0)
		return;
	mpit_fill(b->s[0], len, p2p_seed(mpit_rank, peer, len,
					 PH_PAIR_NONBLOCKING, iter));
	mpit_poison(b->r[0], len);
	MPIT_MPI(MPI_Irecv(b->r[0], (int)len, MPI_BYTE, peer, tag,
			   MPI_COMM_WORLD, &req[0]));
	MPIT_MPI(MPI_Isend(b->s[0], (int)len, MPI_BYTE, peer, tag,
			   MPI_COMM_WORLD, &req[1]));
	MPIT_MPI(MPI_Waitall(2, req, st));
	mpit_check_status(&st[0], peer, tag, len, "pair Isend/Irecv %zu B",
			  len);
	mpit_verify(b->r[0], len,
		    p2p_seed(peer, mpit_rank, len, PH_PAIR_NONBLOCKING, iter),
		    "pair Isend/Irecv %zu B from %d", len, peer);
}

/* MPI_Ssend both ways; the even rank sends first. */
static void p2p_ssend(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int peer = p2p_partner(), tag = p2p_tag(PH_SSEND, si);
	MPI_Status st;
	int round;

	if (peer < 0)
		return;
	mpit_fill(b->s[0], len,
		  p2p_seed(mpit_rank, peer, len, PH_SSEND, iter));
	mpit_poison(b->r[0], len);
	for (round = 0; round < 2; round++) {
		if ((mpit_rank % 2) == round)
			MPIT_MPI(MPI_Ssend(b->s[0], (int)len, MPI_BYTE, peer,
					   tag, MPI_COMM_WORLD));
		else
			MPIT_MPI(MPI_Recv(b->r[0], (int)len, MPI_BYTE, peer,
					  tag, MPI_COMM_WORLD, &st));
	}
	mpit_check_status(&st, peer, tag, len, "Ssend/Recv %zu B", len);
	mpit_verify(b->r[0], len, p2p_seed(peer, mpit_rank, len, PH_SSEND,
					   iter),
		    "Ssend/Recv %zu B from %d", len, peer);
}

/* Ring: MPI_Sendrecv to the right, then MPI_Sendrecv_replace to the left. */
static void p2p_ring_sendrecv(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int right = (mpit_rank + 1) % mpit_size;
	int left = (mpit_rank + mpit_size - 1) % mpit_size;
	int tag = p2p_tag(PH_SENDRECV, si);
	MPI_Status st;

	mpit_fill(b->s[0], len,
		  p2p_seed(mpit_rank, right, len, PH_SENDRECV, iter));
	mpit_poison(b->r[0], len);
	MPIT_MPI(MPI_Sendrecv(b->s[0], (int)len, MPI_BYTE, right, tag,
			      b->r[0], (int)len, MPI_BYTE, left, tag,
			      MPI_COMM_WORLD, &st));
	mpit_check_status(&st, left, tag, len, "ring Sendrecv %zu B", len);
	mpit_verify(b->r[0], len,
		    p2p_seed(left, mpit_rank, len, PH_SENDRECV, iter),
		    "ring Sendrecv %zu B from %d", len, left);

	tag = p2p_tag(PH_SENDRECV_REPLACE, si);
	mpit_poison(b->r[0], len);
	mpit_fill(b->r[0], len, p2p_seed(mpit_rank, left, len,
					 PH_SENDRECV_REPLACE, iter));
	MPIT_MPI(MPI_Sendrecv_replace(b->r[0], (int)len, MPI_BYTE, left, tag,
				      right, tag, MPI_COMM_WORLD, &st));
	mpit_check_status(&st, right, tag, len, "ring Sendrecv_replace %zu B",
			  len);
	mpit_verify(b->r[0], len,
		    p2p_seed(right, mpit_rank, len, PH_SENDRECV_REPLACE, iter),
		    "ring Sendrecv_replace %zu B from %d", len, right);
}

/* Ring: Isend/Irecv in both directions at once. */
static void p2p_ring_nonblocking(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int nb[2] = { (mpit_rank + 1) % mpit_size,
		      (mpit_rank + mpit_size - 1) % mpit_size };
	int tag = p2p_tag(PH_RING_NONBLOCKING, si);
	MPI_Request req[4];
	MPI_Status st[4];
	int d;

	if (mpit_size == 2)
		nb[1] = nb[0]; /* both "directions" reach the same peer */
	for (d = 0; d < 2; d++) {
		mpit_fill(b->s[d], len, p2p_seed(mpit_rank, nb[d], len,
						 PH_RING_NONBLOCKING,
						 iter * 2 + d));
		mpit_poison(b->r[d], len);
		/* r[d] receives what the neighbour nb[d] sent the other way */
		MPIT_MPI(MPI_Irecv(b->r[d], (int)len, MPI_BYTE, nb[d], tag + d,
				   MPI_COMM_WORLD, &req[d]));
	}
	for (d = 0; d < 2; d++)
		MPIT_MPI(MPI_Isend(b->s[d], (int)len, MPI_BYTE, nb[d],
				   tag + 1 - d, MPI_COMM_WORLD, &req[2 + d]));
	MPIT_MPI(MPI_Waitall(4, req, st));
	for (d = 0; d < 2; d++) {
		mpit_check_status(&st[d], nb[d], tag + d, len,
				  "ring Isend/Irecv %zu B, direction %d", len,
				  d);
		mpit_verify(b->r[d], len,
			    p2p_seed(nb[d], mpit_rank, len,
				     PH_RING_NONBLOCKING, iter * 2 + 1 - d),
			    "ring Isend/Irecv %zu B from %d", len, nb[d]);
	}
}

/* Every rank exchanges with every other rank, one distance per round. */
static void p2p_all_pairs(struct p2p_bufs *b, int si, int iter)
{
	size_t len = sizes[si];
	int tag = p2p_tag(PH_ALL_PAIRS, si);
	MPI_Request req[2];
	MPI_Status st[2];
	int k;

	for (k = 1; k < mpit_size; k++) {
		int dst = (mpit_rank + k) % mpit_size;
		int src = (mpit_rank + mpit_size - k) % mpit_size;

		mpit_fill(b->s[0], len, p2p_seed(mpit_rank, dst, len,
						 PH_ALL_PAIRS, iter));
		mpit_poison(b->r[0], len);
		MPIT_MPI(MPI_Irecv(b->r[0], (int)len, MPI_BYTE, src, tag,
				   MPI_COMM_WORLD, &req[0]));
		MPIT_MPI(MPI_Isend(b->s[0], (int)len, MPI_BYTE, dst, tag,
				   MPI_COMM_WORLD, &req[1]));
		MPIT_MPI(MPI_Waitall(2, req, st));
		mpit_check_status(&st[0], src, tag, len,
				  "all-pairs %zu B, distance %d", len, k);
		mpit_verify(b->r[0], len,
			    p2p_seed(src, mpit_rank, len, PH_ALL_PAIRS, iter),
			    "all-pairs %zu B from %d", len, src);
	}
}

/*
 * MPI_Issend must not complete before the receiver has matched it.  The
 * receiver only posts its receive after a "go" message that the sender
 * sends once it has tested the Issend request a few times.
 */
static void p2p_issend_sync(struct p2p_bufs *b, size_t len)
{
	int peer = p2p_partner(), tag = p2p_tag(PH_ISSEND, 0);
	int go_tag = p2p_tag(PH_ISSEND_GO, 0), go = 1, flag, i;
	uint32_t seed;
	MPI_Request req;
	MPI_Status st;

	if (peer < 0)
		return;
	if (mpit_rank % 2 == 0) {
		seed = p2p_seed(mpit_rank, peer, len, PH_ISSEND, 0);
		mpit_fill(b->s[0], len, seed);
		MPIT_MPI(MPI_Issend(b->s[0], (int)len, MPI_BYTE, peer, tag,
				    MPI_COMM_WORLD, &req));
		for (i = 0; i < 20; i++) {
			MPIT_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
			MPIT_CHECK(!flag,
				   "MPI_Issend of %zu B completed before the "
				   "receiver posted its receive",
				   len);
			usleep(1000);
		}
		MPIT_MPI(MPI_Send(&go, 1, MPI_INT, peer, go_tag,
				  MPI_COMM_WORLD));
		MPIT_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
	} else {
		MPIT_MPI(MPI_Recv(&go, 1, MPI_INT, peer, go_tag,
				  MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		mpit_poison(b->r[0], len);
		MPIT_MPI(MPI_Recv(b->r[0], (int)len, MPI_BYTE, peer, tag,
				  MPI_COMM_WORLD, &st));
		mpit_check_status(&st, peer, tag, len, "Issend %zu B", len);
		mpit_verify(b->r[0], len,
			    p2p_seed(peer, mpit_rank, len, PH_ISSEND, 0),
			    "Issend %zu B from %d", len, peer);
	}
}

/*
 * A strided derived datatype on the send side, contiguous on the receive
 * side: the MTL has to pack it before handing it to the provider.
 */
static void p2p_vector(struct p2p_bufs *b, int n)
{
	int peer = p2p_partner(), tag = p2p_tag(PH_VECTOR, 0), i;
	int *src = (int *)b->s[0], *dst = (int *)b->r[0];
	MPI_Datatype vec;
	MPI_Status st;
	int count;

	if (peer < 0)
		return;
	MPIT_MPI(MPI_Type_vector(n, 1, 3, MPI_INT, &vec));
	MPIT_MPI(MPI_Type_commit(&vec));
	for (i = 0; i < 3 * n; i++)
		src[i] = (i % 3 == 0) ? mpit_rank * 1000000 + i / 3 : -1;
	memset(dst, 0, (size_t)n * sizeof(int));
	if (mpit_rank % 2 == 0) {
		MPIT_MPI(MPI_Send(src, 1, vec, peer, tag, MPI_COMM_WORLD));
		MPIT_MPI(MPI_Recv(dst, n, MPI_INT, peer, tag, MPI_COMM_WORLD,
				  &st));
	} else {
		MPIT_MPI(MPI_Recv(dst, n, MPI_INT, peer, tag, MPI_COMM_WORLD,
				  &st));
		MPIT_MPI(MPI_Send(src, 1, vec, peer, tag, MPI_COMM_WORLD));
	}
	MPIT_MPI(MPI_Get_count(&st, MPI_INT, &count));
	MPIT_CHECK(count == n, "vector: received %d ints, expected %d", count,
		   n);
	for (i = 0; i < n; i++)
		MPIT_CHECK(dst[i] == peer * 1000000 + i,
			   "vector of %d ints: element %d is %d, expected %d",
			   n, i, dst[i], peer * 1000000 + i);
	MPIT_MPI(MPI_Type_free(&vec));
}

int main(int argc, char **argv)
{
	size_t max = 4 << 20, all_max = 65537, len;
	int iters = 1, opt, iter, si, nsizes = 0;
	struct p2p_bufs b;

	mpit_init(&argc, &argv, "p2p");
	while ((opt = getopt(argc, argv, "m:a:i:")) != -1) {
		switch (opt) {
		case 'm':
			max = mpit_parse_size(optarg);
			break;
		case 'a':
			all_max = mpit_parse_size(optarg);
			break;
		case 'i':
			iters = mpit_parse_int(optarg);
			break;
		default:
			MPIT_FAIL("usage: p2p [-m max_size] "
				  "[-a all_pairs_max_size] [-i iterations]");
		}
	}
	/* Room for the vector test: 3 ints per element, 64 Ki elements. */
	len = max > 3 * 65536 * sizeof(int) ? max : 3 * 65536 * sizeof(int);
	for (si = 0; si < 2; si++) {
		b.s[si] = mpit_malloc(len);
		b.r[si] = mpit_malloc(len + MPIT_GUARD);
	}

	for (iter = 0; iter < iters; iter++) {
		for (si = 0; si < (int)MPIT_ARRAY_SIZE(sizes); si++) {
			if (sizes[si] > max)
				continue;
			if (iter == 0)
				nsizes++;
			p2p_pair_blocking(&b, si, iter);
			p2p_pair_nonblocking(&b, si, iter);
			p2p_ssend(&b, si, iter);
			p2p_ring_sendrecv(&b, si, iter);
			p2p_ring_nonblocking(&b, si, iter);
			if (sizes[si] <= all_max)
				p2p_all_pairs(&b, si, iter);
		}
	}
	p2p_issend_sync(&b, 0);
	p2p_issend_sync(&b, 100);
	p2p_issend_sync(&b, max < 262144 ? max : 262144);
	p2p_vector(&b, 10);
	p2p_vector(&b, 65536);

	for (si = 0; si < 2; si++) {
		free(b.s[si]);
		free(b.r[si]);
	}
	mpit_finish("%d sizes 0..%zu B x %d iteration(s): pair Send/Recv, "
		    "Isend/Irecv, Ssend, ring Sendrecv(_replace), ring "
		    "Isend/Irecv, all-pairs up to %zu B, Issend sync, vector "
		    "type",
		    nsizes, max, iters, all_max);
	return 0;
}
