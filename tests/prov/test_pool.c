/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data path's object pools (prov/sse_pool.h), on their own: objects
 * are aligned, distinct while handed out, reused once put back (most
 * recently put first), the pool grows one chunk at a time as objects are
 * taken, and sse_pool_fini reports what was not put back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sse_pool.h"

#define N (3 * SSE_POOL_CHUNK + 5)

static void test_pool_get_put(void **state)
{
	struct sse_pool pool;
	void *obj[N];
	size_t i, j;

	(void)state;
	sse_pool_init(&pool, 40);
	assert_int_equal(pool.obj_size % _Alignof(max_align_t), 0);
	assert_true(pool.obj_size >= 40);
	assert_int_equal(pool.total, 0);
	for (i = 0; i < N; i++) {
		obj[i] = sse_pool_get(&pool);
		assert_non_null(obj[i]);
		assert_int_equal((uintptr_t)obj[i] % _Alignof(max_align_t), 0);
		memset(obj[i], (int)i, 40);
		/* one chunk more only when the last one is used up */
		assert_int_equal(pool.total,
				 (i / SSE_POOL_CHUNK + 1) * SSE_POOL_CHUNK);
	}
	assert_int_equal(pool.used, N);
	/* distinct: each still holds what was written into it */
	for (i = 0; i < N; i++) {
		const unsigned char *p = obj[i];

		for (j = 0; j < 40; j++)
			assert_int_equal(p[j], (unsigned char)i);
	}
	/* put back, then taken again: the most recent first, no growth */
	sse_pool_put(&pool, obj[7]);
	sse_pool_put(&pool, obj[3]);
	assert_int_equal(pool.used, N - 2);
	assert_ptr_equal(sse_pool_get(&pool), obj[3]);
	assert_ptr_equal(sse_pool_get(&pool), obj[7]);
	assert_int_equal(pool.total, 4 * SSE_POOL_CHUNK);
	for (i = 0; i < N; i++)
		sse_pool_put(&pool, obj[i]);
	assert_int_equal(pool.used, 0);
	assert_int_equal(sse_pool_fini(&pool), 0);
	assert_int_equal(pool.total, 0);
}

static void test_pool_fini_reports(void **state)
{
	struct sse_pool pool;
	void *a, *b;

	(void)state;
	sse_pool_init(&pool, 1);
	/* room for the free-list link at least */
	assert_true(pool.obj_size >= sizeof(void *));
	a = sse_pool_get(&pool);
	b = sse_pool_get(&pool);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	sse_pool_put(&pool, a);
	assert_int_equal(sse_pool_fini(&pool), 1);
	/* usable again after fini */
	a = sse_pool_get(&pool);
	assert_non_null(a);
	sse_pool_put(&pool, a);
	assert_int_equal(sse_pool_fini(&pool), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_get_put),
		cmocka_unit_test(test_pool_fini_reports),
	};

	return cmocka_run_group_tests_name("pool", tests, NULL, NULL);
}
