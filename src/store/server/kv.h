/* The store's state, with no I/O: the key -> value map, per-key queues
 * (separate from the map), waiters and watchers per key, and byte
 * accounting against a total limit. The server calls it from its loop
 * thread only; effects on other clients (a wait completes, a watch event)
 * come back through hooks. Semantics: docs/protocol.md, store section. */
#ifndef FTC_STORE_KV_H
#define FTC_STORE_KV_H

#include <stddef.h>
#include <stdint.h>

#include "store/server/list.h"
#include "store/wire.h"

/* An immutable, reference-counted value: the map and replies in flight
 * share it, so a big value is never copied to be sent. */
typedef struct ftc__kv_value {
    uint32_t refs;
    size_t len;
    size_t cap;
    /* Set when the value left the store while something (a reply) still
     * held it: its memory stays charged to this state until it is
     * freed. */
    struct ftc__kv *orphan_of;
    uint8_t data[];
} ftc__kv_value;

ftc__kv_value *ftc__kv_value_ref(ftc__kv_value *v);
/* A value of len bytes whose contents the caller fills (one reference);
 * NULL when out of memory. */
ftc__kv_value *ftc__kv_value_alloc(size_t len);
void ftc__kv_value_unref(ftc__kv_value *v);

/* A client parked on a key (WAIT or BARRIER) or watching it. Private to
 * kv.c; declared here so a client can hold its first one. */
typedef struct ftc__kv_reg {
    ftc__list slot_node;   /* in slot->waiters or slot->watchers */
    ftc__list client_node; /* in client->waits or client->watches */
    struct ftc__kv_client *client;
    struct ftc__kv_slot *slot;
    int barrier; /* released only when a BARRIER on the key completes */
} ftc__kv_reg;

/* A client of the state (one per connection). */
typedef struct ftc__kv_client {
    size_t awaited;    /* keys its pending WAIT or BARRIER still needs */
    ftc__list waits;   /* its wait registrations */
    ftc__list watches; /* its watch registrations (1.13 WATCH_KEY) */
    /* The registration of its first wait key: a WAIT on one key or a
     * barrier parks without allocating. */
    ftc__kv_reg first;
    int first_used;
    /* Set by ftc__kv_control_barrier: its wait is a CONTROL_BARRIER's,
     * arrived is this client's arrival number, and outcome (once the
     * barrier is done, before the ready hook runs) a reference to the
     * value of last_members, NULL when it has none. Whoever sends the
     * answer releases outcome and clears control. */
    int control;
    int64_t arrived;
    ftc__kv_value *outcome;
} ftc__kv_client;

void ftc__kv_client_init(ftc__kv_client *c);

typedef struct ftc__kv_hooks {
    /* c's pending wait or barrier completed (called at most once per
     * wait; must not call back into the state). */
    void (*ready)(void *ctx, ftc__kv_client *c);
    /* A watched key changed: type is FTC__WATCH_KEY_{CREATED,UPDATED,
     * DELETED}; old or new is empty when absent. */
    void (*watch)(void *ctx, ftc__kv_client *c, int type, ftc__wire_str key,
                  ftc__wire_str old_value, ftc__wire_str new_value);
} ftc__kv_hooks;

typedef struct ftc__kv ftc__kv;

/* Creates an empty state; NULL when out of memory. hooks is copied. */
ftc__kv *ftc__kv_new(const ftc__kv_hooks *hooks, void *ctx,
                     uint64_t max_total_bytes);
/* Frees everything, registrations included. */
void ftc__kv_free(ftc__kv *kv);

/* Keys in the map (queues not counted); bytes held by keys, values and
 * queued items; and the bookkeeping around them (slots, value headers,
 * queue items, wait and watch registrations, keys known only to waiters
 * or watchers). max_total_bytes bounds the sum of the last two. */
uint64_t ftc__kv_num_keys(const ftc__kv *kv);
uint64_t ftc__kv_bytes(const ftc__kv *kv);
uint64_t ftc__kv_overhead(const ftc__kv *kv);
/* Bytes held by ftc__kv_reserve (also bounded by max_total_bytes). */
uint64_t ftc__kv_reserved(const ftc__kv *kv);
/* Memory outside the map that max_total_bytes also bounds: what the
 * server charges for its connections (input buffers, requests announced
 * by their headers, queued replies) and values that left the map while a
 * reply still holds them. */
uint64_t ftc__kv_charged(const ftc__kv *kv);
/* 0 if n more bytes fit under max_total_bytes now, else FTC_EMSGSIZE with
 * a message saying how much is held. Charges nothing. */
int ftc__kv_afford(const ftc__kv *kv, uint64_t n);
/* Moves the server's charge by n bytes (the caller checked with
 * ftc__kv_afford first where refusing is possible). */
void ftc__kv_charge(ftc__kv *kv, uint64_t n);
void ftc__kv_uncharge(ftc__kv *kv, uint64_t n);

/* Writes. Each returns 0, FTC_ENOMEM, or FTC_EMSGSIZE when the store would
 * pass max_total_bytes (nothing is changed then; the same holds for the
 * registrations of wait, barrier and watch below). A write that leaves a
 * value wakes every waiter on its key and notifies its watchers. */
int ftc__kv_set(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val);
/* Like ftc__kv_set with a value the caller built (ftc__kv_value_alloc):
 * on success the store takes the caller's reference; on failure the
 * caller keeps it. */
int ftc__kv_set_value(ftc__kv *kv, ftc__wire_str key, ftc__kv_value *v);
/* Holds room against max_total_bytes for a SET of a klen-byte key and a
 * vlen-byte value that is still arriving, so that writes in between
 * cannot take it; *held is what to give back with ftc__kv_unreserve
 * before the SET. FTC_EMSGSIZE (nothing held) when it would not fit. */
int ftc__kv_reserve(ftc__kv *kv, size_t klen, size_t vlen, uint64_t *held);
void ftc__kv_unreserve(ftc__kv *kv, uint64_t held);
int ftc__kv_append(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val);
/* Adds delta to the decimal integer at key (missing = 0; parsed like C++
 * std::stoll: leading blanks, a sign, digits, anything after ignored) and
 * stores the sum as decimal text. FTC_EINVAL when the value is not a
 * number (nothing changes). */
int ftc__kv_add(ftc__kv *kv, ftc__wire_str key, int64_t delta, int64_t *out);
/* PyTorch's four cases: missing and expected empty -> set, reply desired;
 * missing and expected not empty -> no change, reply expected; present and
 * equal -> set, reply the new value; present and different -> no change,
 * reply the current value. A change wakes waiters. *reply is valid until
 * the next call. */
int ftc__kv_compare_set(ftc__kv *kv, ftc__wire_str key, ftc__wire_str expected,
                        ftc__wire_str desired, ftc__wire_str *reply);
/* 1 if the key existed. Waiters are not touched. */
int ftc__kv_delete(ftc__kv *kv, ftc__wire_str key);
/* Appends an item to key's queue and wakes one waiter of key. */
int ftc__kv_queue_push(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val);

/* Reads. */
/* The value (borrowed until the next write), or NULL. */
const ftc__kv_value *ftc__kv_get(ftc__kv *kv, ftc__wire_str key);
/* 1 if every key of the list (count strings at items) is present: in the
 * map or as a non-empty queue. */
int ftc__kv_check(ftc__kv *kv, const uint8_t *items, uint64_t count);
int64_t ftc__kv_queue_len(ftc__kv *kv, ftc__wire_str key);
/* Pops the oldest item of key's queue: *size is the length before the pop
 * and *item (0 when empty) an owned reference to release with
 * ftc__kv_value_unref. */
void ftc__kv_queue_pop(ftc__kv *kv, ftc__wire_str key, int64_t *size,
                       ftc__kv_value **item);
/* Calls fn for every key in the map, in no particular order. */
void ftc__kv_foreach_key(ftc__kv *kv, void (*fn)(void *arg, ftc__wire_str key),
                         void *arg);

/* Waiting. */
/* Returns 1 if every key is present now; else registers c on each missing
 * key (c->awaited = how many) and returns 0; the ready hook fires when the
 * last one appears. FTC_ENOMEM leaves nothing registered. c must have no
 * pending wait. */
int ftc__kv_wait(ftc__kv *kv, ftc__kv_client *c, const uint8_t *items,
                 uint64_t count);
/* Increments the decimal counter at key. When it reaches world_size every
 * client parked in a barrier on key is released and 1 is returned; else c
 * is parked (0). FTC_EINVAL if the counter is not a number. */
int ftc__kv_barrier(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key,
                    int64_t world_size);
/* The barrier of PyTorch's StoreCollectives (c10d) in one step, on the
 * keys derived from key: sets "<key>/<rank>" to "joined", adds 1 to the
 * counter "<key>/num_members" (c->arrived = the new count), and the
 * arrival that brings it to world_size compare_sets "<key>/last_members"
 * from missing to c10d's "<val_ignored>". Returns 1 when last_members
 * exists (or more than world_size arrived), with c->control and
 * c->outcome set; else registers c as a waiter of last_members (0), and
 * the ready hook fires once any write gives it a value. FTC_EINVAL when
 * the counter is not a number (nothing changes); FTC_EMSGSIZE or
 * FTC_ENOMEM as for the writes (those done before stay). key must leave
 * room for the suffixes (FTC__WIRE_DERIVED_SUFFIX_MAX). */
int ftc__kv_control_barrier(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key,
                            int64_t rank, int64_t world_size);
/* Drops c's pending wait or barrier; 1 if there was one. */
int ftc__kv_cancel_wait(ftc__kv *kv, ftc__kv_client *c);
/* Registers c to be told of every later change of key. */
int ftc__kv_watch(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key);
/* Drops every registration of c (its connection is closing). */
void ftc__kv_client_forget(ftc__kv *kv, ftc__kv_client *c);

#endif
