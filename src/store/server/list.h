/* A circular doubly-linked intrusive list (libuv's queue): O(1) insert and
 * removal of any node, used for waiters, watchers and connection sets. */
#ifndef FTC_STORE_LIST_H
#define FTC_STORE_LIST_H

#include <stddef.h>

typedef struct ftc__list {
    struct ftc__list *next, *prev;
} ftc__list;

/* The struct that holds node as its member field. */
#define FTC_LIST_ENTRY(node, type, field)                                      \
    ((type *)(void *)((char *)(node)-offsetof(type, field)))

static inline void ftc__list_init(ftc__list *l)
{
    l->next = l;
    l->prev = l;
}

static inline int ftc__list_empty(const ftc__list *l)
{
    return l->next == l;
}

/* True if node is in some list (nodes are initialised when removed). */
static inline int ftc__list_linked(const ftc__list *node)
{
    return node->next != node && node->next != NULL;
}

static inline void ftc__list_push_back(ftc__list *l, ftc__list *node)
{
    node->prev = l->prev;
    node->next = l;
    l->prev->next = node;
    l->prev = node;
}

static inline void ftc__list_remove(ftc__list *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    ftc__list_init(node);
}

#endif
