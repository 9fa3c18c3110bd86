/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Discrete-event engine: (time, seq) min-heap with deferred cancel.  See
 * ssemu_engine.h for the model.
 */
#include <errno.h>
#include <string.h>

#include "ssemu_engine.h"
#include "ssemu_compiler.h"

/* next_free of an event that is in the heap */
#define EV_INUSE (SSEMU_EV_NONE - 1)

static inline struct ssemu_heap_ent *heap(struct ssemu_engine *e)
{
	return (struct ssemu_heap_ent *)((char *)e + e->heap_off);
}

static inline struct ssemu_ev *pool(struct ssemu_engine *e)
{
	return (struct ssemu_ev *)((char *)e + e->pool_off);
}

size_t ssemu_engine_bytes(uint32_t cap)
{
	return SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64) +
	       (size_t)cap * sizeof(struct ssemu_heap_ent) +
	       (size_t)cap * sizeof(struct ssemu_ev);
}

void ssemu_engine_init(struct ssemu_engine *e, uint32_t cap)
{
	struct ssemu_ev *p;
	uint32_t i;

	assert(cap <= SSEMU_ENGINE_MAX_CAP);
	memset(e, 0, sizeof(*e));
	e->cap = cap;
	e->heap_off = SSEMU_ALIGN_UP(sizeof(struct ssemu_engine), 64);
	e->pool_off = e->heap_off + (uint64_t)cap * sizeof(struct ssemu_heap_ent);
	p = pool(e);
	for (i = 0; i < cap; i++) {
		p[i].gen = 0;
		p[i].next_free = i + 1 < cap ? i + 1 : SSEMU_EV_NONE;
	}
	e->free_head = cap ? 0 : SSEMU_EV_NONE;
}

static inline bool ent_less(const struct ssemu_heap_ent *x,
			    const struct ssemu_heap_ent *y)
{
	return x->time < y->time || (x->time == y->time && x->key < y->key);
}

static inline uint32_t ent_ev(const struct ssemu_heap_ent *x)
{
	return (uint32_t)(x->key & ((1u << SSEMU_ENGINE_IDX_BITS) - 1));
}

static void sift_up(struct ssemu_heap_ent *h, uint32_t i)
{
	struct ssemu_heap_ent v = h[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (!ent_less(&v, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = v;
}

static void sift_down(struct ssemu_heap_ent *h, uint32_t n, uint32_t i)
{
	struct ssemu_heap_ent v = h[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m;

		if (l >= n)
			break;
		m = l;
		if (l + 1 < n && ent_less(&h[l + 1], &h[l]))
			m = l + 1;
		if (!ent_less(&h[m], &v))
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = v;
}

int ssemu_engine_schedule(struct ssemu_engine *e, ssemu_time_t t,
			  uint32_t type, uint32_t a, uint32_t b, uint32_t c,
			  ssemu_evid_t *id)
{
	struct ssemu_heap_ent *h = heap(e);
	struct ssemu_ev *ev;
	uint32_t idx;

	if (t < e->now)
		return -EINVAL;
	if (e->free_head == SSEMU_EV_NONE || e->nheap >= e->cap)
		return -ENOSPC;
	if (e->seq >> (64 - SSEMU_ENGINE_IDX_BITS))
		return -EOVERFLOW;
	idx = e->free_head;
	ev = &pool(e)[idx];
	e->free_head = ev->next_free;
	ev->type = (uint16_t)type;
	ev->next_free = EV_INUSE;
	ev->cancelled = 0;
	ev->gen++;
	ev->a = a;
	ev->b = b;
	ev->c = c;

	h[e->nheap].time = t;
	h[e->nheap].key = (e->seq++ << SSEMU_ENGINE_IDX_BITS) | idx;
	sift_up(h, e->nheap);
	e->nheap++;
	e->nlive++;
	if (id)
		*id = ((uint64_t)ev->gen << 32) | idx;
	return 0;
}

int ssemu_engine_cancel(struct ssemu_engine *e, ssemu_evid_t id)
{
	uint32_t idx = (uint32_t)id;
	struct ssemu_ev *ev;

	if (id == SSEMU_EVID_NONE || idx >= e->cap)
		return -ENOENT;
	ev = &pool(e)[idx];
	if (ev->gen != (uint32_t)(id >> 32) || ev->cancelled ||
	    ev->next_free != EV_INUSE)
		return -ENOENT;
	ev->cancelled = 1;
	e->nlive--;
	e->ncancelled++;
	return 0;
}

/* Remove the heap top and return its event to the pool. */
static uint32_t pop_top(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *h = heap(e);
	uint32_t idx = ent_ev(&h[0]);

	e->nheap--;
	if (e->nheap) {
		h[0] = h[e->nheap];
		sift_down(h, e->nheap, 0);
	}
	return idx;
}

static void release(struct ssemu_engine *e, uint32_t idx)
{
	struct ssemu_ev *ev = &pool(e)[idx];

	ev->next_free = e->free_head;
	e->free_head = idx;
}

static void reap_cancelled(struct ssemu_engine *e)
{
	struct ssemu_heap_ent *h = heap(e);

	while (e->ncancelled && e->nheap && pool(e)[ent_ev(&h[0])].cancelled) {
		release(e, pop_top(e));
		e->ncancelled--;
	}
}

ssemu_time_t ssemu_engine_next_time(struct ssemu_engine *e)
{
	if (e->ncancelled)
		reap_cancelled(e);
	return e->nheap ? heap(e)[0].time : UINT64_MAX;
}

bool ssemu_engine_pop(struct ssemu_engine *e, ssemu_time_t limit,
		      struct ssemu_fired *out)
{
	struct ssemu_heap_ent *h = heap(e);
	struct ssemu_ev *ev;
	uint32_t idx;

	if (e->ncancelled)
		reap_cancelled(e);
	if (!e->nheap || h[0].time > limit)
		return false;
	out->time = h[0].time;
	idx = pop_top(e);
	ev = &pool(e)[idx];
	out->type = ev->type;
	out->a = ev->a;
	out->b = ev->b;
	out->c = ev->c;
	e->now = out->time;
	e->nlive--;
	e->executed++;
	release(e, idx);
	return true;
}
