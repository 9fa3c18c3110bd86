/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intrusive doubly linked list for the provider (libfabric's ofi_list.h is
 * not installed, so an out-of-tree provider carries its own).
 */
#ifndef SSE_LIST_H
#define SSE_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include "ssemu_compiler.h"

struct sse_dlist {
	struct sse_dlist *next, *prev;
};

static inline void sse_dlist_init(struct sse_dlist *head)
{
	head->next = head->prev = head;
}

static inline bool sse_dlist_empty(const struct sse_dlist *head)
{
	return head->next == head;
}

static inline void sse_dlist_insert_after(struct sse_dlist *item,
					  struct sse_dlist *pos)
{
	item->next = pos->next;
	item->prev = pos;
	pos->next->prev = item;
	pos->next = item;
}

static inline void sse_dlist_insert_tail(struct sse_dlist *item,
					 struct sse_dlist *head)
{
	sse_dlist_insert_after(item, head->prev);
}

static inline void sse_dlist_insert_head(struct sse_dlist *item,
					 struct sse_dlist *head)
{
	sse_dlist_insert_after(item, head);
}

/* Unlinks @item and leaves it self-linked, so removing twice is harmless. */
static inline void sse_dlist_remove(struct sse_dlist *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	sse_dlist_init(item);
}

#define sse_dlist_first(head, type, field) \
	(sse_dlist_empty(head) ? NULL : container_of((head)->next, type, field))

/* Iterate over containers; @tmp allows removing @it inside the loop. */
#define sse_dlist_foreach_safe(head, it, tmp, type, field)		      \
	for ((it) = container_of((head)->next, type, field),		      \
	    (tmp) = container_of((it)->field.next, type, field);	      \
	     &(it)->field != (head);					      \
	     (it) = (tmp), (tmp) = container_of((tmp)->field.next, type, field))

#define sse_dlist_foreach(head, it, type, field)			      \
	for ((it) = container_of((head)->next, type, field);		      \
	     &(it)->field != (head);					      \
	     (it) = container_of((it)->field.next, type, field))

#endif /* SSE_LIST_H */
