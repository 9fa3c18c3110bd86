/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared helpers of the MPI integration tests: start-up checks that the run
 * really goes through slingshot_emu, failure reporting that names the rank,
 * the source line and what differed before it calls MPI_Abort, and the
 * position- and seed-dependent byte patterns used for every data check.
 */
#ifndef MPIT_H
#define MPIT_H

#include <mpi.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MPIT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes past the end of every receive buffer that must stay untouched. */
#define MPIT_GUARD 64
#define MPIT_POISON 0xa5

/* Upper bound for the polling loops (Iprobe, Testany, ...), in seconds. */
#define MPIT_POLL_LIMIT 120.0

static const char *mpit_name = "mpit";
static int mpit_rank = -1;
static int mpit_size = -1;
static int mpit_selftest;
static double mpit_t0;

static inline void __attribute__((noreturn, format(printf, 3, 4)))
mpit_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: FAIL: rank %d/%d: %s:%d: %s\n", mpit_name,
		mpit_rank, mpit_size, file, line, msg);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

#define MPIT_FAIL(...) mpit_fail(__FILE__, __LINE__, __VA_ARGS__)

#define MPIT_CHECK(cond, ...)                  \
	do {                                   \
		if (!(cond))                   \
			MPIT_FAIL(__VA_ARGS__); \
	} while (0)

static inline const char *mpit_strerror(int rc, char *buf, size_t len)
{
	char str[MPI_MAX_ERROR_STRING];
	int slen = 0, class = -1;

	MPI_Error_class(rc, &class);
	if (MPI_Error_string(rc, str, &slen) != MPI_SUCCESS)
		snprintf(str, sizeof(str), "unknown error");
	snprintf(buf, len, "error %d (class %d): %s", rc, class, str);
	return buf;
}

/*
 * MPI_COMM_WORLD (and every communicator derived from it) uses
 * MPI_ERRORS_RETURN, so each call is wrapped: a failure names the call.
 */
#define MPIT_MPI(call)                                                       \
	do {                                                                 \
		int mpit_rc_ = (call);                                       \
		char mpit_buf_[MPI_MAX_ERROR_STRING + 64];                   \
		if (mpit_rc_ != MPI_SUCCESS)                                 \
			MPIT_FAIL("%s returned %s", #call,                   \
				  mpit_strerror(mpit_rc_, mpit_buf_,         \
						sizeof(mpit_buf_)));         \
	} while (0)

static inline int mpit_error_class(int rc)
{
	int class = -1;

	MPI_Error_class(rc, &class);
	return class;
}

/*
 * Start MPI and refuse to run anywhere but on slingshot_emu: run-mpi.sh
 * exports FI_PROVIDER=slingshot_emu, and with --mca pml cm --mca mtl ofi
 * libfabric then offers the MTL nothing else.  SSEMU_MPI_SELFTEST=1 (set by
 * run-mpi.sh in its ob1/vader self-test mode) lifts the check so that the
 * programs themselves can be validated without the provider.
 */
static inline void mpit_init(int *argc, char ***argv, const char *name)
{
	const char *prov = getenv("FI_PROVIDER");
	const char *st = getenv("SSEMU_MPI_SELFTEST");

	mpit_name = name;
	mpit_selftest = st && strcmp(st, "1") == 0;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mpit_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mpit_size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPIT_CHECK(mpit_selftest ||
			   (prov && strcmp(prov, "slingshot_emu") == 0),
		   "FI_PROVIDER is \"%s\", not slingshot_emu: start this test "
		   "through tests/mpi/run-mpi.sh (or set SSEMU_MPI_SELFTEST=1 "
		   "to check the program itself on another transport)",
		   prov ? prov : "(unset)");
	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	mpit_t0 = MPI_Wtime();
}

/* Rank 0 prints the one-line summary once every rank has passed. */
static inline void __attribute__((format(printf, 1, 2)))
mpit_finish(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	MPIT_MPI(MPI_Barrier(MPI_COMM_WORLD));
	if (mpit_rank == 0) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		printf("%s: PASS: np=%d, %s: %s (%.2f s)\n", mpit_name,
		       mpit_size,
		       mpit_selftest ? "self-test transport" :
				       "FI_PROVIDER=slingshot_emu",
		       msg, MPI_Wtime() - mpit_t0);
	}
	MPI_Finalize();
}

static inline void *mpit_malloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	MPIT_CHECK(p, "malloc(%zu) failed", len);
	return p;
}

/* A seed that differs for every (a, b, c, d) the tests combine. */
static inline uint32_t mpit_seed(uint32_t a, uint32_t b, uint32_t c,
				 uint32_t d)
{
	uint32_t x = a * 0x9e3779b1u;

	x = (x ^ (x >> 16) ^ b) * 0x85ebca6bu;
	x = (x ^ (x >> 13) ^ c) * 0xc2b2ae35u;
	x = (x ^ (x >> 16) ^ d) * 0x27d4eb2fu;
	return x ^ (x >> 15);
}

/* Byte i of the pattern for seed: no short period, so shifts show up. */
static inline unsigned char mpit_byte(uint32_t seed, size_t i)
{
	uint32_t x = seed + (uint32_t)i * 0x9e3779b1u + (uint32_t)(i >> 20);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (unsigned char)x;
}

static inline void mpit_fill(void *buf, size_t len, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = mpit_byte(seed, i);
}

/* Poison a receive buffer and the MPIT_GUARD bytes after it. */
static inline void mpit_poison(void *buf, size_t len)
{
	memset(buf, MPIT_POISON, len + MPIT_GUARD);
}

/*
 * Check len bytes against the pattern and that the guard after them is
 * still poisoned; on a mismatch report the first differing offset and the
 * number of differing bytes, then abort.
 */
#define mpit_verify(buf, len, seed, ...) \
	mpit_verify_at(__FILE__, __LINE__, buf, len, seed, __VA_ARGS__)

static inline void __attribute__((format(printf, 6, 7)))
mpit_verify_at(const char *file, int line, const void *buf, size_t len,
	       uint32_t seed, const char *fmt, ...)
{
	const unsigned char *p = buf;
	size_t i, first = len, bad = 0;
	char what[256];
	va_list ap;

	for (i = 0; i < len; i++) {
		if (p[i] != mpit_byte(seed, i)) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	for (i = len; i < len + MPIT_GUARD; i++) {
		if (p[i] != MPIT_POISON) {
			if (!bad)
				first = i;
			bad++;
		}
	}
	if (!bad)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (first < len)
		mpit_fail(file, line,
			  "%s: data mismatch: %zu of %zu bytes differ, first "
			  "at offset %zu: expected 0x%02x, got 0x%02x",
			  what, bad, len, first, mpit_byte(seed, first),
			  p[first]);
	mpit_fail(file, line,
		  "%s: %zu-byte receive wrote past its end: guard byte at "
		  "offset %zu is 0x%02x, not 0x%02x",
		  what, len, first, p[first], MPIT_POISON);
}

/* Check a receive status: source, tag and byte count. */
#define mpit_check_status(st, src, tag, len, ...) \
	mpit_check_status_at(__FILE__, __LINE__, st, src, tag, len, __VA_ARGS__)

static inline void __attribute__((format(printf, 7, 8)))
mpit_check_status_at(const char *file, int line, const MPI_Status *st,
		     int src, int tag, size_t len, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	int count = -1;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (st->MPI_SOURCE == src && st->MPI_TAG == tag &&
	    count == (int)len)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	mpit_fail(file, line,
		  "%s: status is (source %d, tag %d, count %d), expected "
		  "(source %d, tag %d, count %zu)",
		  what, st->MPI_SOURCE, st->MPI_TAG, count, src, tag, len);
}

/* Parse a size argument with an optional k/m suffix (binary units). */
static inline size_t mpit_parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else
		MPIT_CHECK(*end == '\0', "bad size argument \"%s\"", s);
	return (size_t)v;
}

static inline int mpit_parse_int(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);

	MPIT_CHECK(*end == '\0' && v >= 0 && v < 1L << 30,
		   "bad count argument \"%s\"", s);
	return (int)v;
}

#endif
