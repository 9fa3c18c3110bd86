/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI probe, matched-probe, cancel and truncation test, run between pairs
 * (0,1), (2,3)...: the even rank receives, the odd rank sends.  These map
 * onto the provider's FI_PEEK, FI_PEEK|FI_CLAIM, FI_CLAIM, fi_cancel and
 * FI_ETRUNC paths; a rank without a partner only joins the barriers.
 *
 * usage: probe [-m max_size]
 */
#include "mpit.h"

enum probe_tag {
	TAG_IPROBE = 1,
	TAG_PROBE,
	TAG_MPROBE,
	TAG_IMPROBE,
	TAG_CANCEL,
	TAG_CANCEL_DONE,
	TAG_TRUNC,
};

static const size_t probe_sizes[] = { 0, 5, 4096, 65537, 200000, 1 << 20 };

static size_t probe_max = 1 << 20;
static int peer;		/* partner rank, or -1 */
static int receiver;		/* this rank receives (even rank of a pair) */

static uint32_t probe_seed(int tag, int i)
{
	/* the sender is always peer of the receiver, i.e. rank | 1 */
	return mpit_seed(mpit_rank | 1, tag, i, 0);
}

static void probe_send(unsigned char *buf, size_t len, int tag, int i)
{
	mpit_fill(buf, len, probe_seed(tag, i));
	MPIT_MPI(MPI_Send(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
}

static void probe_recv_check(unsigned char *buf, size_t len, int tag, int i,
			     const char *what)
{
	MPI_Status st;

	mpit_poison(buf, len);
	MPIT_MPI(MPI_Recv(buf, (int)len, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
			  &st));
	mpit_check_status(&st, peer, tag, len, "%s: receive of %zu B", what,
			  len);
	mpit_verify(buf, len, probe_seed(tag, i), "%s: %zu B", what, len);
}

/* Poll MPI_Iprobe until it reports a message or MPIT_POLL_LIMIT passes. */
static void probe_iprobe_wait(int src, int tag, MPI_Status *st,
			      const char *what)
{
	double t0 = MPI_Wtime();
	int flag = 0;

	while (!flag) {
		MPIT_MPI(MPI_Iprobe(src, tag, MPI_COMM_WORLD, &flag, st));
		MPIT_CHECK(flag || MPI_Wtime() - t0 < MPIT_POLL_LIMIT,
			   "%s: MPI_Iprobe found no message in %.0f s", what,
			   MPIT_POLL_LIMIT);
	}
}

/*
 * MPI_Iprobe is false until the partner sends (it waits for a barrier),
 * then true with the right status, still true on a second call, and false
 * again once the message has been received.
 */
static void probe_iprobe(unsigned char *buf, size_t len, int i)
{
	MPI_Status st;
	int flag;

	if (receiver) {
		MPIT_MPI(MPI_Iprobe(peer, TAG_IPROBE, MPI_COMM_WORLD, &flag,
				    &st));
		MPIT_CHECK(!flag,
			   "MPI_Iprobe found a message (source %d, tag %d) "
			   "before anything was sent",
			   st.MPI_SOURCE, st.MPI_TAG);
		MPIT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
				    MPI_COMM_WORLD, &flag, &st));
		MPIT_CHECK(!flag,
			   "MPI_Iprobe(ANY_SOURCE, ANY_TAG) found a message "
			   "(source %d, tag %d) before anything was sent",
			   st.MPI_SOURCE, st.MPI_TAG);
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (peer < 0)
		return;
	if (!receiver) {
		probe_send(buf, len, TAG_IPROBE, i);
		return;
	}
	probe_iprobe_wait(peer, TAG_IPROBE, &st, "Iprobe after send");
	mpit_check_status(&st, peer, TAG_IPROBE, len, "Iprobe of %zu B", len);
	MPIT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
			    &flag, &st));
	MPIT_CHECK(flag, "second MPI_Iprobe of a %zu-byte message is false: "
			 "the first one consumed it",
		   len);
	mpit_check_status(&st, peer, TAG_IPROBE, len,
			  "Iprobe(ANY_SOURCE, ANY_TAG) of %zu B", len);
	MPIT_MPI(MPI_Iprobe(peer, TAG_IPROBE + 100, MPI_COMM_WORLD, &flag,
			    &st));
	MPIT_CHECK(!flag, "MPI_Iprobe for tag %d matched tag %d",
		   TAG_IPROBE + 100, st.MPI_TAG);
	probe_recv_check(buf, len, TAG_IPROBE, i, "Iprobe");
	MPIT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
			    &flag, &st));
	MPIT_CHECK(!flag, "MPI_Iprobe still finds a message (tag %d, %d) after "
			  "it was received",
		   st.MPI_TAG, st.MPI_SOURCE);
}

/* MPI_Probe to learn the size, then receive exactly that much. */
static void probe_blocking(unsigned char *buf)
{
	size_t len;
	MPI_Status st;
	int i, count;

	for (i = 0; i < (int)MPIT_ARRAY_SIZE(probe_sizes); i++) {
		len = probe_sizes[(i * 5) % MPIT_ARRAY_SIZE(probe_sizes)];
		if (len > probe_max)
			continue;
		if (!receiver) {
			probe_send(buf, len, TAG_PROBE, i);
			continue;
		}
		MPIT_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
				   &st));
		mpit_check_status(&st, peer, TAG_PROBE, len,
				  "MPI_Probe(ANY_SOURCE, ANY_TAG) #%d", i);
		MPIT_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
		probe_recv_check(buf, (size_t)count, TAG_PROBE, i,
				 "Probe then Recv");
	}
}

/*
 * MPI_Mprobe claims message X; a plain receive for the same (source, tag)
 * must then get the later message Y, and MPI_Mrecv gets X.  MPI_Improbe
 * is false before the partner sends and finds Z after; MPI_Imrecv gets Z.
 */
static void probe_matched(unsigned char *buf, unsigned char *buf2,
			  size_t lx, size_t ly)
{
	MPI_Message msg;
	MPI_Request req;
	MPI_Status st;
	int flag;
	double t0;

	if (peer >= 0 && !receiver) {
		MPI_Request sreq[2];

		/* nonblocking: X may wait for Mrecv, which comes after Y */
		mpit_fill(buf, lx, probe_seed(TAG_MPROBE, 1));
		mpit_fill(buf2, ly, probe_seed(TAG_MPROBE, 2));
		MPIT_MPI(MPI_Isend(buf, (int)lx, MPI_BYTE, peer, TAG_MPROBE,
				   MPI_COMM_WORLD, &sreq[0]));
		MPIT_MPI(MPI_Isend(buf2, (int)ly, MPI_BYTE, peer, TAG_MPROBE,
				   MPI_COMM_WORLD, &sreq[1]));
		MPIT_MPI(MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE));
	} else if (peer >= 0) {
		MPIT_MPI(MPI_Mprobe(peer, TAG_MPROBE, MPI_COMM_WORLD, &msg,
				    &st));
		mpit_check_status(&st, peer, TAG_MPROBE, lx, "Mprobe of X");
		probe_recv_check(buf2, ly, TAG_MPROBE, 2,
				 "Recv after Mprobe claimed the earlier X");
		mpit_poison(buf, lx);
		MPIT_MPI(MPI_Mrecv(buf, (int)lx, MPI_BYTE, &msg, &st));
		MPIT_CHECK(msg == MPI_MESSAGE_NULL,
			   "MPI_Mrecv did not reset the message handle");
		mpit_check_status(&st, peer, TAG_MPROBE, lx, "Mrecv of X");
		mpit_verify(buf, lx, probe_seed(TAG_MPROBE, 1), "Mrecv of X");

		MPIT_MPI(MPI_Improbe(peer, TAG_IMPROBE, MPI_COMM_WORLD, &flag,
				     &msg, &st));
		MPIT_CHECK(!flag, "MPI_Improbe found a message before the "
				  "partner sent one");
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (peer < 0)
		return;
	if (!receiver) {
		probe_send(buf, ly, TAG_IMPROBE, 3);
		return;
	}
	t0 = MPI_Wtime();
	do {
		MPIT_MPI(MPI_Improbe(MPI_ANY_SOURCE, TAG_IMPROBE,
				     MPI_COMM_WORLD, &flag, &msg, &st));
		MPIT_CHECK(flag || MPI_Wtime() - t0 < MPIT_POLL_LIMIT,
			   "MPI_Improbe found nothing in %.0f s",
			   MPIT_POLL_LIMIT);
	} while (!flag);
	mpit_check_status(&st, peer, TAG_IMPROBE, ly, "Improbe of Z");
	MPIT_MPI(MPI_Iprobe(peer, TAG_IMPROBE, MPI_COMM_WORLD, &flag, &st));
	MPIT_CHECK(!flag, "MPI_Iprobe still sees a message claimed by "
			  "MPI_Improbe");
	mpit_poison(buf, ly);
	MPIT_MPI(MPI_Imrecv(buf, (int)ly, MPI_BYTE, &msg, &req));
	MPIT_MPI(MPI_Wait(&req, &st));
	mpit_check_status(&st, peer, TAG_IMPROBE, ly, "Imrecv of Z");
	mpit_verify(buf, ly, probe_seed(TAG_IMPROBE, 3), "Imrecv of Z");

	/* MPI_PROC_NULL gives the "no process" message */
	MPIT_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
	MPIT_CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL,
		   "MPI_Mprobe(MPI_PROC_NULL) did not give "
		   "MPI_MESSAGE_NO_PROC");
	MPIT_MPI(MPI_Mrecv(buf, 0, MPI_BYTE, &msg, &st));
}

static void probe_check_poison(const unsigned char *buf, size_t len,
			       const char *what)
{
	size_t i;

	for (i = 0; i < len + MPIT_GUARD; i++)
		MPIT_CHECK(buf[i] == MPIT_POISON,
			   "cancelled %s receive: byte %zu of its buffer was "
			   "written (0x%02x)",
			   what, i, buf[i]);
}

/*
 * A receive that never matches is cancelled: MPI_Test_cancelled is true and
 * its buffer untouched; the message sent later with the same tag goes to a
 * new receive.  Cancelling a receive that has already completed fails:
 * MPI_Test_cancelled is false and the data is there.
 */
static void probe_cancel(unsigned char *buf, unsigned char *buf2, size_t len)
{
	MPI_Request req[2];
	MPI_Status st;
	int flag, i;
	double t0;

	if (peer >= 0 && receiver) {
		mpit_poison(buf, len);
		mpit_poison(buf2, len);
		MPIT_MPI(MPI_Irecv(buf, (int)len, MPI_BYTE, peer, TAG_CANCEL,
				   MPI_COMM_WORLD, &req[0]));
		MPIT_MPI(MPI_Irecv(buf2, (int)len, MPI_BYTE, MPI_ANY_SOURCE,
				   MPI_ANY_TAG, MPI_COMM_WORLD, &req[1]));
		for (i = 0; i < 2; i++) {
			MPIT_MPI(MPI_Cancel(&req[i]));
			MPIT_MPI(MPI_Wait(&req[i], &st));
			MPIT_MPI(MPI_Test_cancelled(&st, &flag));
			MPIT_CHECK(flag, "cancelled %s receive: "
					 "MPI_Test_cancelled is false (source "
					 "%d, tag %d)",
				   i ? "(ANY_SOURCE, ANY_TAG)" :
				       "(source, tag)",
				   st.MPI_SOURCE, st.MPI_TAG);
		}
		probe_check_poison(buf, len, "(source, tag)");
		probe_check_poison(buf2, len, "(ANY_SOURCE, ANY_TAG)");
	}
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (peer < 0)
		return;
	if (!receiver) {
		probe_send(buf, len, TAG_CANCEL, 0);
		probe_send(buf, len, TAG_CANCEL_DONE, 1);
		return;
	}
	probe_recv_check(buf, len, TAG_CANCEL, 0,
			 "message sent after its first receive was cancelled");

	mpit_poison(buf, len);
	MPIT_MPI(MPI_Irecv(buf, (int)len, MPI_BYTE, peer, TAG_CANCEL_DONE,
			   MPI_COMM_WORLD, &req[0]));
	t0 = MPI_Wtime();
	do {
		MPIT_MPI(MPI_Request_get_status(req[0], &flag, &st));
		MPIT_CHECK(flag || MPI_Wtime() - t0 < MPIT_POLL_LIMIT,
			   "receive did not complete in %.0f s",
			   MPIT_POLL_LIMIT);
	} while (!flag);
	MPIT_MPI(MPI_Cancel(&req[0]));
	MPIT_MPI(MPI_Wait(&req[0], &st));
	MPIT_MPI(MPI_Test_cancelled(&st, &flag));
	MPIT_CHECK(!flag, "MPI_Cancel of a completed receive succeeded");
	mpit_check_status(&st, peer, TAG_CANCEL_DONE, len,
			  "completed receive after MPI_Cancel");
	mpit_verify(buf, len, probe_seed(TAG_CANCEL_DONE, 1),
		    "completed receive after MPI_Cancel");
}

/*
 * For a truncated receive Open MPI 4.1's ofi MTL takes MPI_SOURCE from the
 * provider's error entry (its CQ data) but MPI_TAG from the posted receive,
 * so an MPI_ANY_TAG receive cannot report the real tag: tag MPI_ANY_TAG
 * checks the source only.
 */
static void probe_expect_trunc(int rc, const MPI_Status *st, size_t len,
			       int count, int tag, const char *what)
{
	char buf[MPI_MAX_ERROR_STRING + 64];

	MPIT_CHECK(rc != MPI_SUCCESS,
		   "%s: %zu-byte message into a %d-byte receive succeeded",
		   what, len, count);
	MPIT_CHECK(mpit_error_class(rc) == MPI_ERR_TRUNCATE,
		   "%s: %zu-byte message into a %d-byte receive: %s, not "
		   "MPI_ERR_TRUNCATE",
		   what, len, count, mpit_strerror(rc, buf, sizeof(buf)));
	if (st)
		MPIT_CHECK(st->MPI_SOURCE == peer &&
				   (tag == MPI_ANY_TAG || st->MPI_TAG == tag),
			   "%s: truncated receive has source %d, tag %d; "
			   "expected %d, %d",
			   what, st->MPI_SOURCE, st->MPI_TAG, peer, tag);
}

/*
 * Receives into buffers that are too small, on a communicator with
 * MPI_ERRORS_RETURN: each fails with MPI_ERR_TRUNCATE (through MPI_Recv,
 * MPI_Wait and MPI_Waitall), and the communicator keeps working.
 */
static void probe_truncate(unsigned char *buf, size_t big)
{
	static const size_t lens[] = { 1, 100, 4096, 65537, 300000 };
	MPI_Comm comm;
	MPI_Request req[2];
	MPI_Status st, sts[2];
	int i, rc, j = 0;
	size_t len;

	MPIT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
	MPIT_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
	if (peer < 0)
		goto out;
	for (i = 0; i < (int)MPIT_ARRAY_SIZE(lens); i++) {
		len = lens[i] > big ? big : lens[i];
		if (!receiver) {
			mpit_fill(buf, len, probe_seed(TAG_TRUNC, i));
			/* 3 truncated receives, then one that fits */
			for (j = 0; j < 4; j++)
				MPIT_MPI(MPI_Send(buf, (int)len, MPI_BYTE,
						  peer, TAG_TRUNC, comm));
			continue;
		}
		rc = MPI_Recv(buf, (int)len - 1, MPI_BYTE, peer, TAG_TRUNC,
			      comm, &st);
		probe_expect_trunc(rc, NULL, len, (int)len - 1, TAG_TRUNC,
				   "MPI_Recv");

		MPIT_MPI(MPI_Irecv(buf, (int)len / 2, MPI_BYTE, MPI_ANY_SOURCE,
				   MPI_ANY_TAG, comm, &req[0]));
		rc = MPI_Wait(&req[0], &st);
		probe_expect_trunc(rc, &st, len, (int)len / 2, MPI_ANY_TAG,
				   "MPI_Irecv(ANY_SOURCE, ANY_TAG) + MPI_Wait");

		MPIT_MPI(MPI_Irecv(buf, 0, MPI_BYTE, peer, TAG_TRUNC, comm,
				   &req[0]));
		mpit_poison(buf + len, len + 1);
		MPIT_MPI(MPI_Irecv(buf + len, (int)len + 1, MPI_BYTE, peer,
				   TAG_TRUNC, comm, &req[1]));
		rc = MPI_Waitall(2, req, sts);
		MPIT_CHECK(rc == MPI_ERR_IN_STATUS,
			   "MPI_Waitall with one truncated receive returned "
			   "%d, not MPI_ERR_IN_STATUS",
			   rc);
		probe_expect_trunc(sts[0].MPI_ERROR, &sts[0], len, 0, TAG_TRUNC,
				   "MPI_Waitall, status 0");
		/* MPI_ERR_PENDING: Open MPI stops at the first failure */
		if (sts[1].MPI_ERROR == MPI_ERR_PENDING)
			MPIT_MPI(MPI_Wait(&req[1], &sts[1]));
		else
			MPIT_CHECK(sts[1].MPI_ERROR == MPI_SUCCESS,
				   "MPI_Waitall: the receive that fits has "
				   "error %d",
				   sts[1].MPI_ERROR);
		mpit_check_status(&sts[1], peer, TAG_TRUNC, len,
				  "receive after truncations");
		mpit_verify(buf + len, len, probe_seed(TAG_TRUNC, i),
			    "receive after 3 truncated ones (%zu B)", len);
	}
out:
	MPIT_MPI(MPI_Comm_free(&comm));
}

int main(int argc, char **argv)
{
	unsigned char *buf, *buf2;
	int opt, i;
	size_t len;

	mpit_init(&argc, &argv, "probe");
	while ((opt = getopt(argc, argv, "m:")) != -1) {
		switch (opt) {
		case 'm':
			probe_max = mpit_parse_size(optarg);
			break;
		default:
			MPIT_FAIL("usage: probe [-m max_size]");
		}
	}
	peer = (mpit_rank ^ 1) < mpit_size ? mpit_rank ^ 1 : -1;
	receiver = mpit_rank % 2 == 0;
	/* the fixed-size phases below use up to 1000 B */
	len = probe_max > 4096 ? probe_max : 4096;
	buf = mpit_malloc(2 * len + 1 + MPIT_GUARD);
	buf2 = mpit_malloc(len + MPIT_GUARD);

	for (i = 0; i < (int)MPIT_ARRAY_SIZE(probe_sizes); i++)
		if (probe_sizes[i] <= probe_max)
			probe_iprobe(buf, probe_sizes[i], i);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (peer >= 0)
		probe_blocking(buf);
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	probe_matched(buf, buf2, 10, 20);
	probe_matched(buf, buf2, probe_max < 200000 ? probe_max : 200000,
		      probe_max < 70000 ? probe_max / 2 : 70000);
	probe_cancel(buf, buf2, 1000);
	probe_truncate(buf, probe_max);

	free(buf);
	free(buf2);
	mpit_finish("Iprobe (false before send) at %zu sizes up to %zu B, "
		    "Probe, Mprobe/Mrecv, Improbe/Imrecv, Cancel of "
		    "unmatched and completed receives, MPI_ERR_TRUNCATE via "
		    "Recv/Wait/Waitall",
		    MPIT_ARRAY_SIZE(probe_sizes), probe_max);
	return 0;
}
