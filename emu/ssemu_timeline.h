/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The timeline: time-stamped points on the path of a message between
 * processes (post, the run that takes it into the model, the event pushed
 * to its receiver, the poll that finds it), for finding where the time of
 * a message between two processes goes.  Off unless SSEMU_TIMELINE names a
 * path prefix when a fabric is opened: each process then records into a
 * buffer of its own and writes it to PREFIX.PID when it closes its last
 * fabric (or exits).  `benchmarks/bench_timeline FILE...` reads the files.
 * Off, a point costs a load and a branch not taken.
 *
 * The file: struct ssemu_tl_file, then its records.  Time is the CPU's
 * time-stamp counter where it is one clock for every CPU (x86-64, which
 * the reader assumes), converted with the ticks per nanosecond the
 * process measured between its first point and its write; elsewhere
 * CLOCK_MONOTONIC in nanoseconds.
 */
#ifndef SSEMU_TIMELINE_H
#define SSEMU_TIMELINE_H

#include <stdint.h>

#include "ssemu_compiler.h"

enum ssemu_tl_point {
	SSEMU_TL_SEND = 1,	/* ssemu_ep_send entered */
	SSEMU_TL_POSTED,	/* ... and posted (arg: the slot) */
	SSEMU_TL_LOCK,		/* a progress call took the lock to run */
	SSEMU_TL_TAKEN,		/* ... took a posted message into the model
				 * (arg: its slot) */
	SSEMU_TL_PUSH_RECV,	/* the engine pushed its RECV (arg: the slot) */
	SSEMU_TL_POLL_RECV,	/* ssemu_ep_poll returned a RECV (arg: the
				 * endpoint) */
	SSEMU_TL_RUN_END,	/* a progress call's run ended (arg: its
				 * events) */
	SSEMU_TL_UNLOCK,	/* ... and it let the lock go */
	SSEMU_TL_NPOINTS
};

struct ssemu_tl_rec {
	uint64_t t;		/* ticks */
	uint32_t point;		/* enum ssemu_tl_point */
	uint32_t arg;
};

#define SSEMU_TL_MAGIC 0x314c54554d455353ULL	/* "SSEMUTL1" */

struct ssemu_tl_file {
	uint64_t magic;
	uint32_t pid;
	uint32_t pad;
	double ticks_per_ns;
	uint64_t nrec;		/* records that follow */
	uint64_t dropped;	/* points past the buffer's end, not kept */
};

struct ssemu_tl_buf;
extern struct ssemu_tl_buf *ssemu_tl_on;

void ssemu_tl_put(struct ssemu_tl_buf *b, uint32_t point, uint32_t arg);

static inline void ssemu_tl(enum ssemu_tl_point point, uint32_t arg)
{
	/* (set and cleared at fabric open and close, with release) */
	struct ssemu_tl_buf *b = __atomic_load_n(&ssemu_tl_on,
						 __ATOMIC_ACQUIRE);

	if (unlikely(b != NULL))
		ssemu_tl_put(b, (uint32_t)point, arg);
}

/* At each fabric open and close of this process (ssemu_fabric.c). */
void ssemu_tl_open(void);
void ssemu_tl_close(void);

#endif
