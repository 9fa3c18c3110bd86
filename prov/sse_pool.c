/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_pool.c: growing and freeing the data path's object pools
 * (sse_pool.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include <rdma/fi_errno.h>

#include "sse_pool.h"

/* A chunk: this header, then SSE_POOL_CHUNK objects. */
struct sse_pool_chunk {
	struct sse_pool_chunk *next;
	max_align_t objs[];
};

void sse_pool_init(struct sse_pool *pool, size_t obj_size)
{
	size_t align = _Alignof(max_align_t);

	if (obj_size < sizeof(void *))
		obj_size = sizeof(void *);
	pool->free = NULL;
	pool->chunks = NULL;
	pool->obj_size = (obj_size + align - 1) / align * align;
	pool->used = 0;
	pool->total = 0;
}

int sse_pool_grow(struct sse_pool *pool)
{
	struct sse_pool_chunk *c;
	char *obj;
	size_t i;

	c = malloc(sizeof(*c) + SSE_POOL_CHUNK * pool->obj_size);
	if (!c)
		return -FI_ENOMEM;
	c->next = pool->chunks;
	pool->chunks = c;
	/* pushed last to first: handed out in address order */
	for (i = SSE_POOL_CHUNK; i-- > 0;) {
		obj = (char *)c->objs + i * pool->obj_size;
		*(void **)obj = pool->free;
		pool->free = obj;
		SSE_POOL_POISON(obj, pool->obj_size);
	}
	pool->total += SSE_POOL_CHUNK;
	return 0;
}

size_t sse_pool_fini(struct sse_pool *pool)
{
	struct sse_pool_chunk *c, *next;
	size_t left = pool->used;

	for (c = pool->chunks; c; c = next) {
		next = c->next;
		SSE_POOL_UNPOISON(c->objs, SSE_POOL_CHUNK * pool->obj_size);
		free(c);
	}
	pool->chunks = NULL;
	pool->free = NULL;
	pool->used = 0;
	pool->total = 0;
	return left;
}
