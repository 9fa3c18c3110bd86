/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_pool.h: fixed-size object pools for the data path (transfer objects,
 * receives, RMA operations and pieces, inject bounce buffers), as
 * libfabric's tcp provider takes them from an ofi_bufpool.
 *
 * A pool is a free list that grows in chunks of SSE_POOL_CHUNK objects and
 * never shrinks: getting and putting an object is a few loads and stores,
 * with no call into malloc and nothing zeroed (each caller sets or clears
 * the fields it relies on).  Its chunks are freed by sse_pool_fini, when
 * the endpoint owning it closes, every object having been put back.
 *
 * A pool is not thread-safe: an endpoint's pools are used under its
 * domain's lock.  Under AddressSanitizer free objects are poisoned, so a
 * use after sse_pool_put is reported as a use after free would be.
 */
#ifndef SSE_POOL_H
#define SSE_POOL_H

#include <stddef.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define SSE_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SSE_POOL_ASAN 1
#endif
#endif

#ifdef SSE_POOL_ASAN
#include <sanitizer/asan_interface.h>
#define SSE_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SSE_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SSE_POOL_POISON(p, n) ((void)(p), (void)(n))
#define SSE_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SSE_POOL_CHUNK 32

struct sse_pool_chunk;

struct sse_pool {
	void *free;		/* free objects, linked by their first word */
	struct sse_pool_chunk *chunks;
	size_t obj_size;	/* rounded up to the maximum alignment */
	size_t used;		/* objects handed out */
	size_t total;		/* objects in the chunks */
};

void sse_pool_init(struct sse_pool *pool, size_t obj_size);
/* Add a chunk to the free list.  @return 0 or -FI_ENOMEM. */
int sse_pool_grow(struct sse_pool *pool);
/* Free the chunks; @return the objects that were not put back. */
size_t sse_pool_fini(struct sse_pool *pool);

/* An object of the pool's size (contents undefined), or NULL. */
static inline void *sse_pool_get(struct sse_pool *pool)
{
	void *obj = pool->free;

	if (!obj) {
		if (sse_pool_grow(pool))
			return NULL;
		obj = pool->free;
	}
	SSE_POOL_UNPOISON(obj, pool->obj_size);
	pool->free = *(void **)obj;
	pool->used++;
	return obj;
}

/* An object whose bytes from @off to the end of its @size are zero. */
static inline void *sse_pool_get_cleared(struct sse_pool *pool, size_t off,
					 size_t size)
{
	char *obj = sse_pool_get(pool);

	if (obj)
		memset(obj + off, 0, size - off);
	return obj;
}

static inline void sse_pool_put(struct sse_pool *pool, void *obj)
{
	*(void **)obj = pool->free;
	pool->free = obj;
	pool->used--;
	SSE_POOL_POISON(obj, pool->obj_size);
}

#endif /* SSE_POOL_H */
