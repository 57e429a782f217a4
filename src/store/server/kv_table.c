/* Chained hash table of key slots (xxHash3 with a per-table random seed),
 * doubled when it holds more slots than buckets. */
#include "store/server/kv_table.h"

#include <string.h>
#include <xxhash.h>

#include "base/base_int.h"

#define INITIAL_BUCKETS 1024

int ftc__kv_table_init(ftc__kv_table *t)
{
    t->buckets = ftc__calloc(INITIAL_BUCKETS, sizeof(*t->buckets));
    if (t->buckets == NULL) {
        return ftc__seterr(FTC_ENOMEM, "key table");
    }
    t->mask = INITIAL_BUCKETS - 1;
    t->count = 0;
    t->seed = ftc__rand_u64();
    return 0;
}

void ftc__kv_table_free(ftc__kv_table *t)
{
    ftc__free(t->buckets);
    t->buckets = NULL;
}

static uint64_t hash_of(const ftc__kv_table *t, ftc__wire_str key)
{
    return XXH3_64bits_withSeed(key.p, key.len, t->seed);
}

ftc__kv_slot *ftc__kv_table_find(const ftc__kv_table *t, ftc__wire_str key)
{
    uint64_t h = hash_of(t, key);
    for (ftc__kv_slot *s = t->buckets[h & t->mask]; s != NULL; s = s->chain) {
        if (s->hash == h && s->klen == key.len &&
            memcmp(s->key, key.p, key.len) == 0) {
            return s;
        }
    }
    return NULL;
}

/* Doubles the bucket array; on allocation failure the table just stays
 * more loaded, which is slower but correct. */
static void grow(ftc__kv_table *t)
{
    size_t n = (t->mask + 1) * 2;
    ftc__kv_slot **b = ftc__calloc(n, sizeof(*b));
    if (b == NULL) {
        return;
    }
    for (size_t i = 0; i <= t->mask; i++) {
        ftc__kv_slot *s = t->buckets[i];
        while (s != NULL) {
            ftc__kv_slot *next = s->chain;
            s->chain = b[s->hash & (n - 1)];
            b[s->hash & (n - 1)] = s;
            s = next;
        }
    }
    ftc__free(t->buckets);
    t->buckets = b;
    t->mask = n - 1;
}

ftc__kv_slot *ftc__kv_table_get(ftc__kv_table *t, ftc__wire_str key)
{
    ftc__kv_slot *s = ftc__kv_table_find(t, key);
    if (s != NULL) {
        return s;
    }
    s = ftc__malloc(sizeof(*s) + key.len);
    if (s == NULL) {
        ftc__seterr(FTC_ENOMEM, "key of %zu B", key.len);
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    s->hash = hash_of(t, key);
    s->klen = key.len;
    if (key.len > 0) {
        memcpy(s->key, key.p, key.len);
    }
    ftc__list_init(&s->queue);
    ftc__list_init(&s->waiters);
    ftc__list_init(&s->watchers);
    if (t->count >= t->mask + 1) {
        grow(t);
    }
    s->chain = t->buckets[s->hash & t->mask];
    t->buckets[s->hash & t->mask] = s;
    t->count++;
    return s;
}

void ftc__kv_table_remove(ftc__kv_table *t, ftc__kv_slot *s)
{
    ftc__kv_slot **pp = &t->buckets[s->hash & t->mask];
    while (*pp != s) {
        pp = &(*pp)->chain;
    }
    *pp = s->chain;
    t->count--;
    ftc__free(s);
}

void ftc__kv_table_foreach(ftc__kv_table *t,
                           void (*fn)(void *arg, ftc__kv_slot *s), void *arg)
{
    for (size_t i = 0; i <= t->mask; i++) {
        ftc__kv_slot *s = t->buckets[i];
        while (s != NULL) {
            ftc__kv_slot *next = s->chain;
            fn(arg, s);
            s = next;
        }
    }
}
