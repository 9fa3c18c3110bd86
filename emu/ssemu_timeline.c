/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The timeline's recorder (ssemu_timeline.h): one buffer a process, made
 * at the first fabric open that finds SSEMU_TIMELINE set, written out when
 * the process closes its last fabric, and at exit if it never does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "ssemu_priv.h"
#include "ssemu_timeline.h"

#define TL_RECORDS (1u << 20)	/* a buffer's points: 16 MiB */
#define TL_PATH_MAX 4096

struct ssemu_tl_buf {
	uint64_t n;		/* points taken (may pass TL_RECORDS) */
	uint64_t t0;		/* ticks and nanoseconds at the start */
	uint64_t ns0;
	pid_t pid;		/* the process it is of (a child forked
				 * with it records nothing into it) */
	char path[TL_PATH_MAX];
	struct ssemu_tl_rec rec[TL_RECORDS];
};

struct ssemu_tl_buf *ssemu_tl_on;

static pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned tl_opens;	/* fabrics this process has open */
static bool tl_exit_hook;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#else
	return mono_ns();
#endif
}

void ssemu_tl_put(struct ssemu_tl_buf *b, uint32_t point, uint32_t arg)
{
	uint64_t i = __atomic_fetch_add(&b->n, 1, __ATOMIC_RELAXED);

	if (i < TL_RECORDS) {
		b->rec[i].t = ticks();
		b->rec[i].point = point;
		b->rec[i].arg = arg;
	}
}

/* Write @b out (under tl_lock, recording stopped). */
static void tl_write(struct ssemu_tl_buf *b)
{
	struct ssemu_tl_file h = { .magic = SSEMU_TL_MAGIC };
	uint64_t t1 = ticks(), ns1 = mono_ns();
	bool ok;
	FILE *fp;

	h.pid = (uint32_t)getpid();
	h.nrec = b->n < TL_RECORDS ? b->n : TL_RECORDS;
	h.dropped = b->n - h.nrec;
	h.ticks_per_ns = ns1 > b->ns0 && t1 > b->t0 ?
				 (double)(t1 - b->t0) / (double)(ns1 - b->ns0) :
				 1.0;
#if !defined(__x86_64__)
	h.ticks_per_ns = 1.0;
#endif
	fp = fopen(b->path, "w");
	ok = fp && fwrite(&h, sizeof(h), 1, fp) == 1 &&
	     (!h.nrec ||
	      fwrite(b->rec, sizeof(b->rec[0]), h.nrec, fp) == h.nrec);
	if (fp && fclose(fp))
		ok = false;
	if (!ok)
		ssemu_log(SSEMU_LOG_WARN, "SSEMU_TIMELINE: cannot write %s: %s",
			  b->path, strerror(errno));
}

/* Stop recording and write the buffer out; free it unless @at_exit
 * (then a thread the process did not stop may still be taking a point). */
static void tl_stop_locked(bool at_exit)
{
	struct ssemu_tl_buf *b = ssemu_tl_on;

	if (!b)
		return;
	if (b->pid != getpid()) {
		/* a forked child's copy: its parent writes it */
		__atomic_store_n(&ssemu_tl_on, NULL, __ATOMIC_RELEASE);
		if (!at_exit)
			free(b);
		return;
	}
	/* (a thread still in ssemu_tl_put may write a point past the
	 * count written out: the buffer is freed after the write, and a
	 * fabric is closed only once its calls have returned) */
	__atomic_store_n(&ssemu_tl_on, NULL, __ATOMIC_RELEASE);
	tl_write(b);
	if (!at_exit)
		free(b);
}

static void tl_at_exit(void)
{
	pthread_mutex_lock(&tl_lock);
	tl_stop_locked(true);
	pthread_mutex_unlock(&tl_lock);
}

void ssemu_tl_open(void)
{
	const char *prefix = getenv("SSEMU_TIMELINE");
	struct ssemu_tl_buf *b;
	int len;

	pthread_mutex_lock(&tl_lock);
	if (ssemu_tl_on && ssemu_tl_on->pid != getpid()) {
		/* forked with the parent's buffer: start a buffer of its own */
		b = ssemu_tl_on;
		__atomic_store_n(&ssemu_tl_on, NULL, __ATOMIC_RELEASE);
		free(b);
		tl_opens = 0;
	}
	tl_opens++;
	if (ssemu_tl_on || !prefix || !*prefix)
		goto out;
	b = malloc(sizeof(*b));
	if (!b) {
		ssemu_log(SSEMU_LOG_WARN, "SSEMU_TIMELINE: no memory for its "
			  "buffer (%zu bytes): not recording", sizeof(*b));
		goto out;
	}
	len = snprintf(b->path, sizeof(b->path), "%s.%d", prefix,
		       (int)getpid());
	if (len < 0 || (size_t)len >= sizeof(b->path)) {
		ssemu_log(SSEMU_LOG_WARN, "SSEMU_TIMELINE: the prefix is too "
			  "long (at most %d bytes): not recording",
			  TL_PATH_MAX - 16);
		free(b);
		goto out;
	}
	b->n = 0;
	b->pid = getpid();
	b->ns0 = mono_ns();
	b->t0 = ticks();
	if (!tl_exit_hook && !atexit(tl_at_exit))
		tl_exit_hook = true;
	__atomic_store_n(&ssemu_tl_on, b, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&tl_lock);
}

void ssemu_tl_close(void)
{
	pthread_mutex_lock(&tl_lock);
	if (tl_opens && !--tl_opens)
		tl_stop_locked(false);
	pthread_mutex_unlock(&tl_lock);
}
