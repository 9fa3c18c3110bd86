/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI message-ordering test.  Messages with the same (source, tag,
 * communicator) must not overtake one another, whatever their sizes, whether
 * they arrive before or after the receive is posted, and with wildcard
 * receives; MPI_SOURCE, MPI_TAG and the counts in the status must describe
 * the message that was really delivered.
 *
 * usage: order [-k messages_per_stream] [-m max_size] [-w wildcard_messages]
 */
#include "mpit.h"

enum order_tag {
	TAG_UNEXPECTED = 1,
	TAG_PREPOSTED,
	TAG_MIXED,
	TAG_SELECT_A,
	TAG_SELECT_B,
	TAG_COLL_GUARD,
	TAG_WILD_BASE = 1000, /* + sequence number */
};

/* Small and large interleaved; consecutive sizes always differ. */
static const size_t order_sched[] = {
	8, 70001, 4, 1, 262147, 16, 0, 4096, 65536, 12, 1500, 1 << 20, 64,
	2048, 9,
};

static size_t order_max = 1 << 20;

static size_t order_size(int src, int seq)
{
	size_t len = order_sched[(unsigned)(seq + 3 * src) %
				 MPIT_ARRAY_SIZE(order_sched)];

	return len > order_max ? 4 + (size_t)seq % 61 : len;
}

static uint32_t order_seed(int src, int dst, int seq, int stream)
{
	return mpit_seed(src, dst, seq, stream);
}

/*
 * A message is the pattern for (src, dst, seq, stream) with the sequence
 * number written over its first four bytes when it is long enough.
 */
static void order_make(unsigned char *buf, int src, int dst, int seq,
		       int stream)
{
	size_t len = order_size(src, seq);
	int32_t s = seq;

	mpit_fill(buf, len, order_seed(src, dst, seq, stream));
	if (len >= sizeof(s))
		memcpy(buf, &s, sizeof(s));
}

static void order_check(unsigned char *buf, const MPI_Status *st, int src,
			int dst, int seq, int stream, int tag)
{
	size_t len = order_size(src, seq);
	int32_t got = -1;
	int count = -1;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count >= (int)sizeof(got))
		memcpy(&got, buf, sizeof(got));
	MPIT_CHECK(st->MPI_SOURCE == src && st->MPI_TAG == tag &&
			   count == (int)len,
		   "stream %d: receive #%d from rank %d (tag %d, %zu B) got "
		   "source %d, tag %d, %d B (sequence header %d): messages "
		   "overtook one another or were mixed up",
		   stream, seq, src, tag, len, st->MPI_SOURCE, st->MPI_TAG,
		   count, got);
	if (len >= sizeof(got)) {
		MPIT_CHECK(got == seq,
			   "stream %d: receive #%d from rank %d holds message "
			   "#%d",
			   stream, seq, src, got);
		/* restore the pattern under the header for mpit_verify */
		mpit_fill(buf, sizeof(got), order_seed(src, dst, seq, stream));
	}
	mpit_verify(buf, len, order_seed(src, dst, seq, stream),
		    "stream %d: message #%d from rank %d", stream, seq, src);
}

struct order_stream {
	int k;			/* messages */
	unsigned char **sbuf;	/* k send buffers */
	unsigned char **rbuf;	/* k receive buffers (+ MPIT_GUARD) */
	MPI_Request *sreq, *rreq;
	MPI_Status *st;
};

static void order_stream_alloc(struct order_stream *s, int k)
{
	int i;
	int left = (mpit_rank + mpit_size - 1) % mpit_size;

	s->k = k;
	s->sbuf = mpit_malloc(k * sizeof(*s->sbuf));
	s->rbuf = mpit_malloc(k * sizeof(*s->rbuf));
	s->sreq = mpit_malloc(k * sizeof(*s->sreq));
	s->rreq = mpit_malloc(k * sizeof(*s->rreq));
	s->st = mpit_malloc(k * sizeof(*s->st));
	for (i = 0; i < k; i++) {
		s->sbuf[i] = mpit_malloc(order_size(mpit_rank, i));
		s->rbuf[i] = mpit_malloc(order_size(left, i) + MPIT_GUARD);
	}
}

static void order_stream_free(struct order_stream *s)
{
	int i;

	for (i = 0; i < s->k; i++) {
		free(s->sbuf[i]);
		free(s->rbuf[i]);
	}
	free(s->sbuf);
	free(s->rbuf);
	free(s->sreq);
	free(s->rreq);
	free(s->st);
}

/*
 * Each receive buffer is exactly as long as the message it should get, so
 * a longer message that overtakes shows up as MPI_ERR_TRUNCATE: report it
 * as what it is.
 */
static void order_waitall_recv(struct order_stream *s, int stream, int left)
{
	char buf[MPI_MAX_ERROR_STRING + 64];
	int rc, i;

	rc = MPI_Waitall(s->k, s->rreq, s->st);
	if (rc == MPI_SUCCESS)
		return;
	MPIT_CHECK(rc == MPI_ERR_IN_STATUS, "stream %d: MPI_Waitall: %s",
		   stream, mpit_strerror(rc, buf, sizeof(buf)));
	for (i = 0; i < s->k; i++) {
		if (s->st[i].MPI_ERROR == MPI_SUCCESS)
			continue;
		MPIT_FAIL("stream %d: receive #%d from rank %d (%zu B) failed "
			  "with %s (source %d, tag %d): a later, longer "
			  "message overtook?",
			  stream, i, left, order_size(left, i),
			  mpit_strerror(s->st[i].MPI_ERROR, buf, sizeof(buf)),
			  s->st[i].MPI_SOURCE, s->st[i].MPI_TAG);
	}
}

/*
 * Ring streams: every rank sends k messages of mixed sizes to its right
 * neighbour with one tag and receives k from its left neighbour.
 *  - unexpected: all Isends are issued, a barrier, then blocking receives;
 *  - preposted: all Irecvs are posted, a barrier, then blocking MPI_Send
 *    for the small messages and MPI_Isend for the large ones;
 *  - mixed: half the receives before the barrier, the rest after the sends.
 */
static void order_ring(struct order_stream *s, int stream, int tag)
{
	int right = (mpit_rank + 1) % mpit_size;
	int left = (mpit_rank + mpit_size - 1) % mpit_size;
	int i, k = s->k, npre;

	for (i = 0; i < k; i++) {
		order_make(s->sbuf[i], mpit_rank, right, i, stream);
		mpit_poison(s->rbuf[i], order_size(left, i));
		s->sreq[i] = MPI_REQUEST_NULL;
	}
	npre = tag == TAG_UNEXPECTED ? 0 : tag == TAG_PREPOSTED ? k : k / 2;
	for (i = 0; i < npre; i++)
		MPIT_MPI(MPI_Irecv(s->rbuf[i], (int)order_size(left, i),
				   MPI_BYTE, left, tag, MPI_COMM_WORLD,
				   &s->rreq[i]));
	if (tag == TAG_UNEXPECTED) {
		for (i = 0; i < k; i++)
			MPIT_MPI(MPI_Isend(s->sbuf[i],
					   (int)order_size(mpit_rank, i),
					   MPI_BYTE, right, tag,
					   MPI_COMM_WORLD, &s->sreq[i]));
		MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
		for (i = 0; i < k; i++) {
			MPIT_MPI(MPI_Recv(s->rbuf[i], (int)order_size(left, i),
					  MPI_BYTE, left, tag, MPI_COMM_WORLD,
					  &s->st[i]));
			order_check(s->rbuf[i], &s->st[i], left, mpit_rank, i,
				    stream, tag);
		}
		MPIT_MPI(MPI_Waitall(k, s->sreq, MPI_STATUSES_IGNORE));
		return;
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	for (i = 0; i < k; i++) {
		size_t len = order_size(mpit_rank, i);

		if (tag == TAG_PREPOSTED && len <= 4096)
			MPIT_MPI(MPI_Send(s->sbuf[i], (int)len, MPI_BYTE,
					  right, tag, MPI_COMM_WORLD));
		else
			MPIT_MPI(MPI_Isend(s->sbuf[i], (int)len, MPI_BYTE,
					   right, tag, MPI_COMM_WORLD,
					   &s->sreq[i]));
	}
	for (i = npre; i < k; i++)
		MPIT_MPI(MPI_Irecv(s->rbuf[i], (int)order_size(left, i),
				   MPI_BYTE, left, tag, MPI_COMM_WORLD,
				   &s->rreq[i]));
	order_waitall_recv(s, stream, left);
	for (i = 0; i < k; i++)
		order_check(s->rbuf[i], &s->st[i], left, mpit_rank, i, stream,
			    tag);
	MPIT_MPI(MPI_Waitall(k, s->sreq, MPI_STATUSES_IGNORE));
}

/*
 * Fan-in with MPI_ANY_SOURCE and MPI_ANY_TAG: every other rank sends m
 * messages to root with tag TAG_WILD_BASE + seq.  Per source they must come
 * in order; the status must name the real source, tag and size.
 */
static void order_wildcard(int root, int m)
{
	int n = mpit_size, i, total = (n - 1) * m, *next, src, count;
	size_t maxlen = 0;
	unsigned char *buf;
	MPI_Status st;

	for (src = 0; src < n; src++)
		for (i = 0; i < m; i++)
			if (order_size(src, i) > maxlen)
				maxlen = order_size(src, i);
	buf = mpit_malloc(maxlen + MPIT_GUARD);
	if (mpit_rank != root) {
		for (i = 0; i < m; i++) {
			order_make(buf, mpit_rank, root, i, 100 + root);
			MPIT_MPI(MPI_Send(buf, (int)order_size(mpit_rank, i),
					  MPI_BYTE, root, TAG_WILD_BASE + i,
					  MPI_COMM_WORLD));
		}
		free(buf);
		return;
	}
	next = calloc(n, sizeof(*next));
	MPIT_CHECK(next, "calloc failed");
	for (i = 0; i < total; i++) {
		mpit_poison(buf, maxlen);
		MPIT_MPI(MPI_Recv(buf, (int)maxlen, MPI_BYTE, MPI_ANY_SOURCE,
				  MPI_ANY_TAG, MPI_COMM_WORLD, &st));
		src = st.MPI_SOURCE;
		MPIT_CHECK(src >= 0 && src < n && src != root,
			   "ANY_SOURCE receive #%d: MPI_SOURCE is %d", i, src);
		MPIT_CHECK(next[src] < m,
			   "ANY_SOURCE: more than %d messages from rank %d", m,
			   src);
		order_check(buf, &st, src, root, next[src], 100 + root,
			    TAG_WILD_BASE + next[src]);
		MPIT_MPI(MPI_Get_count(&st, MPI_INT, &count));
		if (order_size(src, next[src]) % sizeof(int))
			MPIT_CHECK(count == MPI_UNDEFINED,
				   "MPI_Get_count(MPI_INT) of a %zu-byte "
				   "message is %d, expected MPI_UNDEFINED",
				   order_size(src, next[src]), count);
		else
			MPIT_CHECK(count == (int)(order_size(src, next[src]) /
						  sizeof(int)),
				   "MPI_Get_count(MPI_INT) of a %zu-byte "
				   "message is %d",
				   order_size(src, next[src]), count);
		next[src]++;
	}
	for (src = 0; src < n; src++)
		MPIT_CHECK(src == root || next[src] == m,
			   "got %d of %d messages from rank %d", next[src], m,
			   src);
	/* Nothing may be left over. */
	MPIT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &count,
			    &st));
	MPIT_CHECK(!count, "stray message from %d, tag %d after fan-in",
		   st.MPI_SOURCE, st.MPI_TAG);
	free(next);
	free(buf);
}

/*
 * Tag selection and wildcards between pairs (0,1), (2,3)...: the even rank
 * sends a large TAG_SELECT_A message, then a small TAG_SELECT_B one, then a
 * small one with the largest tag allowed (MPI_TAG_UB).  The odd rank takes
 * them out of order: B by (source, tag), the MPI_TAG_UB one by
 * (ANY_SOURCE, tag), then A by (source, ANY_TAG).  A second round takes B
 * by (ANY_SOURCE, tag) and A by (ANY_SOURCE, ANY_TAG).
 */
static void order_select(void)
{
	int peer = mpit_rank ^ 1, *ub, flag, tag_ub, round;
	size_t la = order_max < 300000 ? order_max : 300000, lb = 33;
	unsigned char *a, *b;
	MPI_Request req[3];
	MPI_Status st;

	if (peer >= mpit_size)
		return;
	MPIT_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
	MPIT_CHECK(flag && *ub >= 32767, "MPI_TAG_UB is %d", flag ? *ub : -1);
	tag_ub = *ub;
	a = mpit_malloc(la + MPIT_GUARD);
	b = mpit_malloc(lb + MPIT_GUARD);
	if (mpit_rank % 2 == 0) {
		for (round = 0; round < 2; round++) {
			mpit_fill(a, la, mpit_seed(mpit_rank, 1, round, 0));
			mpit_fill(b, lb, mpit_seed(mpit_rank, 2, round, 0));
			MPIT_MPI(MPI_Isend(a, (int)la, MPI_BYTE, peer,
					   TAG_SELECT_A, MPI_COMM_WORLD,
					   &req[0]));
			MPIT_MPI(MPI_Isend(b, (int)lb, MPI_BYTE, peer,
					   TAG_SELECT_B, MPI_COMM_WORLD,
					   &req[1]));
			if (round == 0)
				MPIT_MPI(MPI_Isend(b, (int)lb, MPI_BYTE, peer,
						   tag_ub, MPI_COMM_WORLD,
						   &req[2]));
			MPIT_MPI(MPI_Waitall(round ? 2 : 3, req,
					     MPI_STATUSES_IGNORE));
		}
		goto out;
	}

	mpit_poison(b, lb);
	MPIT_MPI(MPI_Recv(b, (int)lb, MPI_BYTE, peer, TAG_SELECT_B,
			  MPI_COMM_WORLD, &st));
	mpit_check_status(&st, peer, TAG_SELECT_B, lb,
			  "B by (source, tag) before the earlier A");
	mpit_verify(b, lb, mpit_seed(peer, 2, 0, 0), "B by (source, tag)");
	mpit_poison(b, lb);
	MPIT_MPI(MPI_Recv(b, (int)lb, MPI_BYTE, MPI_ANY_SOURCE, tag_ub,
			  MPI_COMM_WORLD, &st));
	mpit_check_status(&st, peer, tag_ub, lb,
			  "(ANY_SOURCE, MPI_TAG_UB) before the earlier A");
	mpit_verify(b, lb, mpit_seed(peer, 2, 0, 0), "tag MPI_TAG_UB = %d",
		    tag_ub);
	mpit_poison(a, la);
	MPIT_MPI(MPI_Recv(a, (int)la, MPI_BYTE, peer, MPI_ANY_TAG,
			  MPI_COMM_WORLD, &st));
	mpit_check_status(&st, peer, TAG_SELECT_A, la,
			  "A by (source, ANY_TAG)");
	mpit_verify(a, la, mpit_seed(peer, 1, 0, 0), "A by (source, ANY_TAG)");

	mpit_poison(b, lb);
	MPIT_MPI(MPI_Recv(b, (int)lb, MPI_BYTE, MPI_ANY_SOURCE, TAG_SELECT_B,
			  MPI_COMM_WORLD, &st));
	mpit_check_status(&st, peer, TAG_SELECT_B, lb,
			  "B by (ANY_SOURCE, tag) before the earlier A");
	mpit_verify(b, lb, mpit_seed(peer, 2, 1, 0), "B by (ANY_SOURCE, tag)");
	mpit_poison(a, la);
	MPIT_MPI(MPI_Recv(a, (int)la, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
			  MPI_COMM_WORLD, &st));
	mpit_check_status(&st, peer, TAG_SELECT_A, la,
			  "A by (ANY_SOURCE, ANY_TAG)");
	mpit_verify(a, la, mpit_seed(peer, 1, 1, 0),
		    "A by (ANY_SOURCE, ANY_TAG)");
out:
	free(a);
	free(b);
}

/*
 * An (ANY_SOURCE, ANY_TAG) receive posted while collectives run on the same
 * communicator must not match their internal traffic (Open MPI's MTL
 * excludes the negative collective tags from MPI_ANY_TAG with its ignore
 * mask); only the user message sent afterwards may complete it.
 */
static void order_coll_guard(void)
{
	int root = 0, sender = mpit_size - 1, v = mpit_rank + 1, sum, flag;
	size_t len = 100000;
	unsigned char *buf = mpit_malloc(len + MPIT_GUARD);
	unsigned char *rbuf = mpit_malloc(64 + MPIT_GUARD);
	MPI_Request req = MPI_REQUEST_NULL;
	MPI_Status st;

	if (mpit_rank == root) {
		mpit_poison(rbuf, 64);
		MPIT_MPI(MPI_Irecv(rbuf, 64, MPI_BYTE, MPI_ANY_SOURCE,
				   MPI_ANY_TAG, MPI_COMM_WORLD, &req));
	}
	mpit_fill(buf, len, mpit_seed(root, 0, 0, 77));
	MPIT_MPI(MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
	memset(buf + len, MPIT_POISON, MPIT_GUARD);
	mpit_verify(buf, len, mpit_seed(root, 0, 0, 77), "bcast");
	MPIT_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	MPIT_CHECK(sum == mpit_size * (mpit_size + 1) / 2,
		   "allreduce gave %d", sum);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (mpit_rank == root) {
		MPIT_MPI(MPI_Test(&req, &flag, &st));
		MPIT_CHECK(!flag,
			   "(ANY_SOURCE, ANY_TAG) receive matched collective "
			   "traffic: source %d, tag %d",
			   st.MPI_SOURCE, st.MPI_TAG);
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (mpit_rank == sender) {
		mpit_fill(buf, 64, mpit_seed(sender, root, 1, 77));
		MPIT_MPI(MPI_Send(buf, 64, MPI_BYTE, root, TAG_COLL_GUARD,
				  MPI_COMM_WORLD));
	}
	if (mpit_rank == root) {
		MPIT_MPI(MPI_Wait(&req, &st));
		mpit_check_status(&st, sender, TAG_COLL_GUARD, 64,
				  "wildcard receive after collectives");
		mpit_verify(rbuf, 64, mpit_seed(sender, root, 1, 77),
			    "wildcard receive after collectives");
	}
	free(rbuf);
	free(buf);
}

int main(int argc, char **argv)
{
	int k = 200, m = 40, opt;
	struct order_stream s;

	mpit_init(&argc, &argv, "order");
	while ((opt = getopt(argc, argv, "k:m:w:")) != -1) {
		switch (opt) {
		case 'k':
			k = mpit_parse_int(optarg);
			break;
		case 'm':
			order_max = mpit_parse_size(optarg);
			break;
		case 'w':
			m = mpit_parse_int(optarg);
			break;
		default:
			MPIT_FAIL("usage: order [-k messages_per_stream] "
				  "[-m max_size] [-w wildcard_messages]");
		}
	}
	order_stream_alloc(&s, k);
	order_ring(&s, 1, TAG_UNEXPECTED);
	order_ring(&s, 2, TAG_PREPOSTED);
	order_ring(&s, 3, TAG_MIXED);
	order_stream_free(&s);
	/* barriers: a wildcard receive must not see the next phase's sends */
	order_wildcard(0, m);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	order_wildcard(mpit_size - 1, m);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	order_select();
	order_coll_guard();
	mpit_finish("3 ring streams of %d messages (0..%zu B), ANY_SOURCE/"
		    "ANY_TAG fan-in of %d per rank to 2 roots, tag selection "
		    "up to MPI_TAG_UB, wildcard vs collectives",
		    k, order_max, m);
	return 0;
}
