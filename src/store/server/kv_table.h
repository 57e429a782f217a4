/* The key table of the store state: one slot per key name that has a value,
 * queued items, waiters or watchers; a chained hash table with a random
 * seed per table, so crafted keys cannot force collisions. */
#ifndef FTC_STORE_KV_TABLE_H
#define FTC_STORE_KV_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "store/server/kv.h"
#include "store/server/list.h"

typedef struct ftc__kv_slot {
    struct ftc__kv_slot *chain; /* next slot in the same bucket */
    uint64_t hash;
    ftc__kv_value *value; /* the map value, or NULL */
    ftc__list queue;      /* queued items, oldest first */
    uint64_t queue_len;
    ftc__list waiters;  /* registrations of parked WAITs and BARRIERs */
    ftc__list watchers; /* registrations of 1.13 WATCH_KEYs */
    size_t klen;
    uint8_t key[];
} ftc__kv_slot;

typedef struct ftc__kv_table {
    ftc__kv_slot **buckets;
    size_t mask; /* buckets - 1; a power of two minus one */
    size_t count;
    uint64_t seed;
} ftc__kv_table;

int ftc__kv_table_init(ftc__kv_table *t);
/* Frees the buckets; the caller has emptied or freed every slot. */
void ftc__kv_table_free(ftc__kv_table *t);
ftc__kv_slot *ftc__kv_table_find(const ftc__kv_table *t, ftc__wire_str key);
/* The slot of key, created empty if missing; NULL when out of memory. */
ftc__kv_slot *ftc__kv_table_get(ftc__kv_table *t, ftc__wire_str key);
/* Unlinks and frees a slot. */
void ftc__kv_table_remove(ftc__kv_table *t, ftc__kv_slot *s);
/* Calls fn on every slot; fn may remove the slot it is given. */
void ftc__kv_table_foreach(ftc__kv_table *t,
                           void (*fn)(void *arg, ftc__kv_slot *s), void *arg);

#endif
