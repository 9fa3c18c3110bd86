/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI_Alltoallw on MPI_BOTTOM with struct datatypes at absolute addresses.
 * Open MPI 4.1's ofi MTL hands the provider address 0 (MPI_BOTTOM) with
 * the message length for these: a buffer the NIC cannot read.  Every rank
 * must come back, either with the data (a transport that handles it: the
 * self-test's vader) or with an error (slingshot_emu: the sends and their
 * receives fail with FI_EFAULT), never hang.  Then a plain MPI_Alltoall
 * on the same communicator still works.
 */
#include "mpit.h"

#define N 1000

int main(int argc, char **argv)
{
	int *sbuf, *rbuf, *cnt, *displ, i, rc, err, any_err, all_err, bl = N;
	MPI_Datatype *st, *rt, t = MPI_INT;
	MPI_Aint a;

	mpit_init(&argc, &argv, "bottom");
	sbuf = mpit_malloc(sizeof(int) * N * mpit_size);
	rbuf = mpit_malloc(sizeof(int) * N * mpit_size);
	st = mpit_malloc(sizeof(*st) * mpit_size);
	rt = mpit_malloc(sizeof(*rt) * mpit_size);
	cnt = mpit_malloc(sizeof(int) * mpit_size);
	displ = mpit_malloc(sizeof(int) * mpit_size);
	for (i = 0; i < N * mpit_size; i++) {
		sbuf[i] = mpit_rank * 1000000 + i;
		rbuf[i] = -1;
	}
	for (i = 0; i < mpit_size; i++) {
		MPIT_MPI(MPI_Get_address(sbuf + i * N, &a));
		MPIT_MPI(MPI_Type_create_struct(1, &bl, &a, &t, &st[i]));
		MPIT_MPI(MPI_Type_commit(&st[i]));
		MPIT_MPI(MPI_Get_address(rbuf + i * N, &a));
		MPIT_MPI(MPI_Type_create_struct(1, &bl, &a, &t, &rt[i]));
		MPIT_MPI(MPI_Type_commit(&rt[i]));
		cnt[i] = 1;
		displ[i] = 0;
	}
	rc = MPI_Alltoallw(MPI_BOTTOM, cnt, displ, st, MPI_BOTTOM, cnt, displ,
			   rt, MPI_COMM_WORLD);
	err = rc != MPI_SUCCESS;
	if (!err) {
		for (i = 0; i < N * mpit_size; i++)
			MPIT_CHECK(rbuf[i] == (i / N) * 1000000 +
					      mpit_rank * N + i % N,
				   "rbuf[%d] = %d", i, rbuf[i]);
	}
	MPIT_MPI(MPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_MAX,
			       MPI_COMM_WORLD));
	MPIT_MPI(MPI_Allreduce(&err, &all_err, 1, MPI_INT, MPI_MIN,
			       MPI_COMM_WORLD));
	MPIT_CHECK(any_err == all_err, "MPI_Alltoallw failed on some ranks "
		   "only (this one: %s)", err ? "failed" : "succeeded");
	/* the communicator still carries data */
	for (i = 0; i < N * mpit_size; i++)
		rbuf[i] = -1;
	MPIT_MPI(MPI_Alltoall(sbuf, N, MPI_INT, rbuf, N, MPI_INT,
			      MPI_COMM_WORLD));
	for (i = 0; i < N * mpit_size; i++)
		MPIT_CHECK(rbuf[i] == (i / N) * 1000000 + mpit_rank * N + i % N,
			   "after: rbuf[%d] = %d", i, rbuf[i]);
	for (i = 0; i < mpit_size; i++) {
		MPI_Type_free(&st[i]);
		MPI_Type_free(&rt[i]);
	}
	mpit_finish("MPI_Alltoallw on MPI_BOTTOM %s on every rank",
		    all_err ? "failed" : "delivered");
	free(sbuf);
	free(rbuf);
	free(st);
	free(rt);
	free(cnt);
	free(displ);
	return 0;
}
