/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the SPSC ring (include/private/ssemu_ring.h): empty and full,
 * count and space, a producer's copy of the head kept beside the tail,
 * entry integrity for odd entry sizes, free-running indices
 * that wrap past UINT32_MAX, a producer and a consumer in two processes
 * sharing one MAP_SHARED mapping across fork(), and tagged entries (the
 * consumer reads the entry, not the tail).
 */
#include <errno.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ssemu_ring.h"

static struct ssemu_ring *ring_new(uint32_t cap, uint32_t esize)
{
	struct ssemu_ring *r = aligned_alloc(SSEMU_CACHELINE,
			SSEMU_ALIGN_UP(ssemu_ring_bytes(cap, esize),
				       (size_t)SSEMU_CACHELINE));

	assert_non_null(r);
	ssemu_ring_init(r, cap, esize);
	return r;
}

static void test_ring_layout(void **state)
{
	struct ssemu_ring *r = ring_new(16, 8);

	(void)state;
	assert_int_equal(ssemu_ring_bytes(16, 8), sizeof(*r) + 16 * 8);
	/* producer and consumer indices never share a cache line */
	assert_true(offsetof(struct ssemu_ring, head) / SSEMU_CACHELINE !=
		    offsetof(struct ssemu_ring, tail) / SSEMU_CACHELINE);
	assert_true(offsetof(struct ssemu_ring, tail) / SSEMU_CACHELINE != 0);
	assert_int_equal(r->mask, 15);
	assert_int_equal(r->esize, 8);
	/* slots are inside the allocation and masked */
	assert_ptr_equal(ssemu_ring_slot(r, 0), (char *)r + sizeof(*r));
	assert_ptr_equal(ssemu_ring_slot(r, 16), ssemu_ring_slot(r, 0));
	assert_ptr_equal(ssemu_ring_slot(r, 17), (char *)r + sizeof(*r) + 8);
	free(r);
}

static void test_ring_empty_full(void **state)
{
	struct ssemu_ring *r = ring_new(8, sizeof(uint64_t));
	uint64_t v, i;

	(void)state;
	assert_int_equal(ssemu_ring_count(r), 0);
	assert_int_equal(ssemu_ring_space(r), 8);
	assert_int_equal(ssemu_ring_pop(r, &v), -1);

	for (i = 0; i < 8; i++) {
		assert_int_equal(ssemu_ring_push(r, &i), 0);
		assert_int_equal(ssemu_ring_count(r), i + 1);
		assert_int_equal(ssemu_ring_space(r), 7 - i);
	}
	v = 99;
	assert_int_equal(ssemu_ring_push(r, &v), -1);
	assert_int_equal(ssemu_ring_count(r), 8);
	assert_int_equal(ssemu_ring_space(r), 0);

	/* one slot freed: exactly one push fits */
	assert_int_equal(ssemu_ring_pop(r, &v), 0);
	assert_true(v == 0);
	assert_int_equal(ssemu_ring_space(r), 1);
	v = 8;
	assert_int_equal(ssemu_ring_push(r, &v), 0);
	assert_int_equal(ssemu_ring_push(r, &v), -1);

	for (i = 1; i <= 8; i++) {
		assert_int_equal(ssemu_ring_pop(r, &v), 0);
		assert_true(v == i);
	}
	assert_int_equal(ssemu_ring_pop(r, &v), -1);
	assert_int_equal(ssemu_ring_count(r), 0);
	assert_int_equal(ssemu_ring_space(r), 8);
	free(r);
}

/*
 * A producer that keeps the head it last read in the ring's tail line
 * (ssemu_ring_push_seen): it reads the consumer's head only when its copy
 * says the ring is full, so pops in between leave the copy behind, and
 * the ring is full exactly when it is; a copy past the tail (corrupt) is
 * read again, and nothing is overwritten.
 */
static void test_ring_push_seen(void **state)
{
	struct ssemu_ring *r = ring_new(8, sizeof(uint64_t));
	uint64_t v, i, want = 0;

	(void)state;
	/* the copy lives beside the tail, not in the consumer's line */
	assert_int_equal(offsetof(struct ssemu_ring, head_seen) /
				 SSEMU_CACHELINE,
			 offsetof(struct ssemu_ring, tail) / SSEMU_CACHELINE);
	for (i = 0; i < 8; i++)
		assert_int_equal(ssemu_ring_push_seen(r, &i), 0);
	assert_int_equal(r->head_seen, 0);
	v = 99;
	assert_int_equal(ssemu_ring_push_seen(r, &v), -1);
	/* three popped: the copy stays at 0 until the ring looks full */
	for (i = 0; i < 3; i++) {
		assert_int_equal(ssemu_ring_pop(r, &v), 0);
		assert_true(v == want++);
	}
	assert_int_equal(r->head_seen, 0);
	for (i = 8; i < 11; i++)
		assert_int_equal(ssemu_ring_push_seen(r, &i), 0);
	assert_int_equal(r->head_seen, 3);
	assert_int_equal(ssemu_ring_push_seen(r, &v), -1);
	assert_int_equal(ssemu_ring_count(r), 8);
	/* never past the real head */
	assert_true(r->head_seen <= r->head);
	/* a copy past the tail is read again: the ring as it is */
	r->head_seen = r->tail + 5;
	assert_int_equal(ssemu_ring_push_seen(r, &v), -1);
	assert_int_equal(r->head_seen, r->head);
	assert_int_equal(ssemu_ring_pop(r, &v), 0);
	assert_true(v == want++);
	r->head_seen = r->tail + 1;
	i = 11;
	assert_int_equal(ssemu_ring_push_seen(r, &i), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(ssemu_ring_pop(r, &v), 0);
		assert_true(v == want++);
	}
	assert_int_equal(ssemu_ring_pop(r, &v), -1);
	assert_true(want == 12);
	free(r);
}

static void test_ring_capacity_one(void **state)
{
	struct ssemu_ring *r = ring_new(1, sizeof(uint32_t));
	uint32_t v = 7, w = 0;

	(void)state;
	assert_int_equal(ssemu_ring_push(r, &v), 0);
	assert_int_equal(ssemu_ring_push(r, &v), -1);
	assert_int_equal(ssemu_ring_pop(r, &w), 0);
	assert_int_equal(w, 7);
	assert_int_equal(ssemu_ring_pop(r, &w), -1);
	free(r);
}

/* Entries of an odd size: every byte travels, nothing spills over. */
struct odd_ent {
	uint32_t seq;
	uint8_t bytes[19];
};

static void fill_odd(struct odd_ent *e, uint32_t seq)
{
	uint32_t i;

	memset(e, 0, sizeof(*e));
	e->seq = seq;
	for (i = 0; i < sizeof(e->bytes); i++)
		e->bytes[i] = (uint8_t)(seq * 31 + i);
}

static void test_ring_entry_integrity(void **state)
{
	const uint32_t cap = 32;
	struct ssemu_ring *r = ring_new(cap, sizeof(struct odd_ent));
	struct odd_ent in, out, want;
	uint32_t pushed = 0, popped = 0, round;

	(void)state;
	for (round = 0; round < 50; round++) {
		uint32_t n = (round * 7) % (cap + 1), i;

		for (i = 0; i < n; i++) {
			fill_odd(&in, pushed);
			if (ssemu_ring_push(r, &in))
				break;
			pushed++;
		}
		assert_int_equal(ssemu_ring_count(r), pushed - popped);
		n = (round * 5) % (cap + 1);
		for (i = 0; i < n; i++) {
			if (ssemu_ring_pop(r, &out))
				break;
			fill_odd(&want, popped++);
			assert_memory_equal(&out, &want, sizeof(out));
		}
	}
	assert_true(pushed > 4 * cap);
	free(r);
}

/* Free-running indices: start both just below UINT32_MAX and cross zero. */
static void test_ring_wraparound(void **state)
{
	const uint32_t cap = 8;
	struct ssemu_ring *r = ring_new(cap, sizeof(uint64_t));
	uint32_t start, i, k;
	uint64_t v, next_in = 0, next_out = 0;

	(void)state;
	for (start = UINT32_MAX - cap - 1; start != 3; start++) {
		ssemu_ring_init(r, cap, sizeof(uint64_t));
		r->head = start;
		r->tail = start;
		assert_int_equal(ssemu_ring_count(r), 0);
		assert_int_equal(ssemu_ring_space(r), cap);
		assert_int_equal(ssemu_ring_pop(r, &v), -1);

		for (i = 0; i < cap; i++) {
			assert_int_equal(ssemu_ring_push(r, &next_in), 0);
			next_in++;
		}
		/* full although tail < head numerically past the wrap */
		assert_int_equal(ssemu_ring_push(r, &v), -1);
		assert_int_equal(ssemu_ring_count(r), cap);
		assert_int_equal(ssemu_ring_space(r), 0);
		assert_int_equal(r->tail, start + cap);

		/* half out, half in again, then drain */
		for (k = 0; k < cap / 2; k++) {
			assert_int_equal(ssemu_ring_pop(r, &v), 0);
			assert_true(v == next_out++);
		}
		assert_int_equal(ssemu_ring_count(r), cap / 2);
		assert_int_equal(ssemu_ring_space(r), cap / 2);
		for (k = 0; k < cap / 2; k++) {
			assert_int_equal(ssemu_ring_push(r, &next_in), 0);
			next_in++;
		}
		assert_int_equal(ssemu_ring_push(r, &v), -1);
		for (k = 0; k < cap; k++) {
			assert_int_equal(ssemu_ring_pop(r, &v), 0);
			assert_true(v == next_out++);
		}
		assert_int_equal(ssemu_ring_pop(r, &v), -1);
		assert_int_equal(ssemu_ring_count(r), 0);
		assert_int_equal(r->head, start + cap + cap / 2);
		assert_int_equal(r->head, r->tail);
	}
	assert_true(next_out == next_in);
	free(r);
}

/*
 * SPSC across fork(): the child produces 1,000,000 sequence numbers with a
 * check word, the parent consumes them and checks order and contents.
 */
#define SPSC_COUNT 1000000u
#define SPSC_CAP 1024u

struct spsc_ent {
	uint64_t seq;
	uint64_t check;
};

static uint64_t spsc_check(uint64_t seq)
{
	return (seq * 0x9E3779B97F4A7C15ULL) ^ 0x55aa55aa55aa55aaULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Spin briefly, then yield: producer and consumer may share one core. */
static void spsc_backoff(uint32_t *spins)
{
	if (++*spins < 64) {
		ssemu_cpu_relax();
	} else {
		*spins = 0;
		sched_yield();
	}
}

static void spsc_producer(struct ssemu_ring *r)
{
	struct spsc_ent e;
	uint32_t spins = 0;
	uint64_t i;

	/* never outlive a parent that failed an assertion */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < SPSC_COUNT; i++) {
		e.seq = i;
		e.check = spsc_check(i);
		while (ssemu_ring_push(r, &e))
			spsc_backoff(&spins);
	}
	_exit(0);
}

static void test_ring_spsc_fork(void **state)
{
	size_t bytes = ssemu_ring_bytes(SPSC_CAP, sizeof(struct spsc_ent));
	uint64_t expect = 0, bad_seq = 0, bad_check = 0;
	uint32_t spins = 0;
	double deadline;
	struct ssemu_ring *r;
	struct spsc_ent e;
	int status = 0;
	pid_t pid;

	(void)state;
	r = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(r != MAP_FAILED);
	ssemu_ring_init(r, SPSC_CAP, sizeof(struct spsc_ent));

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		spsc_producer(r);

	/* no assertion inside the loop: the child must be reaped first */
	deadline = now_s() + 60.0;
	while (expect < SPSC_COUNT) {
		uint32_t n = ssemu_ring_count(r);

		if (n > SPSC_CAP) {
			bad_check++;
			break;
		}
		if (ssemu_ring_pop(r, &e)) {
			if (now_s() > deadline)
				break;
			spsc_backoff(&spins);
			continue;
		}
		if (e.seq != expect) {
			bad_seq++;
			break;
		}
		if (e.check != spsc_check(e.seq)) {
			bad_check++;
			break;
		}
		expect++;
	}
	if (expect < SPSC_COUNT)
		kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);

	if (bad_seq)
		fail_msg("out of order at %llu: got %llu",
			 (unsigned long long)expect,
			 (unsigned long long)e.seq);
	if (bad_check)
		fail_msg("corrupt entry or count at %llu",
			 (unsigned long long)expect);
	if (expect < SPSC_COUNT)
		fail_msg("timed out after %llu entries",
			 (unsigned long long)expect);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ssemu_ring_pop(r, &e), -1);
	assert_int_equal(ssemu_ring_count(r), 0);
	assert_int_equal(r->tail, SPSC_COUNT);
	munmap(r, bytes);
}

/*
 * Tagged entries: taken in order over many laps without the consumer ever
 * reading the tail; an entry from the lap before, one never written and
 * one whose tag was written over are not taken (the last one found by the
 * tail's count); a full ring refuses; a ring made again forgets its last
 * user's entries.
 */
static void test_ring_tagged(void **state)
{
	enum { CAP = 8 };
	struct ssemu_ring *r = ring_new(CAP, sizeof(uint32_t));
	uint32_t seen = 0, v, i, k;
	uint32_t *ent;

	(void)state;
	ssemu_ring_init_tagged(r, CAP);
	ent = ssemu_ring_slot(r, 0);
	/* a never-written ring: empty, and not stuck */
	assert_int_equal(ssemu_ring_peek_tagged(r, &v), -1);
	assert_false(ssemu_ring_tagged_stuck(r));
	/* 40 laps, three entries at a time: every value back, in order */
	for (i = 0; i < 40 * CAP; i += 3) {
		for (k = 0; k < 3; k++)
			assert_int_equal(ssemu_ring_push_tagged(
					 r, (i + k) & 0xffff, &seen), 0);
		for (k = 0; k < 3; k++) {
			assert_int_equal(ssemu_ring_peek_tagged(r, &v), 0);
			assert_int_equal(v, (i + k) & 0xffff);
			ssemu_ring_advance(r);
		}
		/* what is left at the head is from the lap before (or
		 * never written): not taken */
		assert_int_equal(ssemu_ring_peek_tagged(r, &v), -1);
		assert_false(ssemu_ring_tagged_stuck(r));
	}
	/* full: CAP pushes, then a refusal */
	for (k = 0; k < CAP; k++)
		assert_int_equal(ssemu_ring_push_tagged(r, 7000 + k, &seen), 0);
	assert_int_equal(ssemu_ring_push_tagged(r, 1, &seen), -1);
	assert_int_equal(ssemu_ring_count(r), CAP);
	/* the value whatever the tag, by index */
	assert_int_equal(ssemu_ring_tagged_value(r, r->head + 2), 7002);
	/* the head's tag written over: not taken, and the tail says stuck */
	ent[r->head & (CAP - 1)] ^= 0x30000;
	assert_int_equal(ssemu_ring_peek_tagged(r, &v), -1);
	assert_true(ssemu_ring_tagged_stuck(r));
	/* the consumer one past the tail (the producer between its two
	 * stores): nothing pending by the tail, and not stuck */
	ssemu_ring_init_tagged(r, CAP);
	seen = 0;
	assert_int_equal(ssemu_ring_push_tagged(r, 5, &seen), 0);
	r->tail--;			/* the tail's store not yet made */
	assert_int_equal(ssemu_ring_peek_tagged(r, &v), 0);
	assert_int_equal(v, 5);
	ssemu_ring_advance(r);
	assert_int_equal(ssemu_ring_tagged_pending(r), 0);
	assert_false(ssemu_ring_tagged_stuck(r));
	r->tail++;
	assert_int_equal(ssemu_ring_tagged_pending(r), 0);
	/* a tail far past the head: at most the ring's worth */
	r->tail = r->head + 1000;
	assert_int_equal(ssemu_ring_tagged_pending(r), CAP);
	/* made again: nothing of the last user's entries is taken */
	ssemu_ring_init_tagged(r, CAP);
	for (k = 0; k < CAP; k++)
		ent[k] = 1u << 16 | k;	/* as if lap 0 had written them */
	ssemu_ring_init_tagged(r, CAP);
	assert_int_equal(ssemu_ring_peek_tagged(r, &v), -1);
	assert_false(ssemu_ring_tagged_stuck(r));
	free(r);
}

/* Tags past 16 bits of laps: the head near UINT32_MAX, and through it. */
static void test_ring_tagged_wrap(void **state)
{
	enum { CAP = 4 };
	struct ssemu_ring *r = ring_new(CAP, sizeof(uint32_t));
	uint32_t seen, v, i;

	(void)state;
	ssemu_ring_init_tagged(r, CAP);
	r->head = r->tail = UINT32_MAX - 9;
	seen = r->head;
	for (i = 0; i < 40; i++) {
		assert_int_equal(ssemu_ring_push_tagged(r, i, &seen), 0);
		assert_int_equal(ssemu_ring_peek_tagged(r, &v), 0);
		assert_int_equal(v, i);
		ssemu_ring_advance(r);
		assert_int_equal(ssemu_ring_peek_tagged(r, &v), -1);
	}
	assert_int_equal(r->tail, (uint32_t)(UINT32_MAX - 9 + 40));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_layout),
		cmocka_unit_test(test_ring_empty_full),
		cmocka_unit_test(test_ring_push_seen),
		cmocka_unit_test(test_ring_capacity_one),
		cmocka_unit_test(test_ring_entry_integrity),
		cmocka_unit_test(test_ring_wraparound),
		cmocka_unit_test(test_ring_spsc_fork),
		cmocka_unit_test(test_ring_tagged),
		cmocka_unit_test(test_ring_tagged_wrap),
	};

	return cmocka_run_group_tests_name("ring", tests, NULL, NULL);
}
