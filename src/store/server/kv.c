/* The store state: values, queues, waiters and watchers per key slot, and
 * the byte accounting. Every write or registration checks the total limit
 * (data plus bookkeeping) before it changes anything, so a refused one
 * leaves the state as it was. */
#include "store/server/kv.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/base_int.h"
#include "store/server/kv_table.h"

struct ftc__kv {
    ftc__kv_table table;
    ftc__kv_hooks hooks;
    void *ctx;
    uint64_t max_bytes;
    uint64_t bytes;    /* keys holding data, values, queued items */
    uint64_t overhead; /* slots, headers, registrations, other keys */
    uint64_t nkeys;    /* slots with a map value */
    uint64_t reserved; /* room held for values still arriving */
    uint64_t charged;  /* connections' buffers, orphaned values */
};

typedef ftc__kv_reg kv_reg;

typedef struct kv_item {
    ftc__list node;
    ftc__kv_value *value;
} kv_item;

/* Bookkeeping counted against the total limit with the data, so a client
 * cannot exhaust memory with empty values, items, waits or watches. */
#define SLOT_COST sizeof(ftc__kv_slot)
#define VALUE_COST sizeof(ftc__kv_value)
#define ITEM_COST (sizeof(kv_item) + sizeof(ftc__kv_value))
#define REG_COST sizeof(kv_reg)

enum { REG_WAIT, REG_BARRIER, REG_WATCH };

/* ---------------------------------------------------------------- values */

ftc__kv_value *ftc__kv_value_alloc(size_t len)
{
    if (len > SIZE_MAX - sizeof(ftc__kv_value)) {
        ftc__seterr(FTC_ENOMEM, "value of %zu B", len);
        return NULL;
    }
    ftc__kv_value *v = ftc__malloc(sizeof(*v) + len);
    if (v == NULL) {
        ftc__seterr(FTC_ENOMEM, "value of %zu B", len);
        return NULL;
    }
    v->refs = 1;
    v->len = len;
    v->cap = len;
    v->orphan_of = NULL;
    return v;
}

static ftc__kv_value *value_new(const void *a, size_t alen, const void *b,
                                size_t blen)
{
    ftc__kv_value *v = ftc__kv_value_alloc(alen + blen);
    if (v == NULL) {
        return NULL;
    }
    if (alen > 0) {
        memcpy(v->data, a, alen);
    }
    if (blen > 0) {
        memcpy(v->data + alen, b, blen);
    }
    return v;
}

ftc__kv_value *ftc__kv_value_ref(ftc__kv_value *v)
{
    v->refs++;
    return v;
}

/* What a value's memory costs. */
static uint64_t value_footprint(const ftc__kv_value *v)
{
    return (uint64_t)v->cap + sizeof(*v);
}

void ftc__kv_value_unref(ftc__kv_value *v)
{
    if (v != NULL && --v->refs == 0) {
        if (v->orphan_of != NULL) {
            v->orphan_of->charged -= value_footprint(v);
        }
        ftc__free(v);
    }
}

/* The map drops its reference to v: a value that lives on in replies
 * stays charged until they release it, so unread replies cannot pin
 * memory the limit does not see. */
static void let_go(ftc__kv *kv, ftc__kv_value *v)
{
    if (v != NULL && v->refs > 1 && v->orphan_of == NULL) {
        v->orphan_of = kv;
        kv->charged += value_footprint(v);
    }
    ftc__kv_value_unref(v);
}

/* A value's bytes; an absent value is empty (never a NULL pointer, so
 * consumers may memcpy it). */
static ftc__wire_str bytes_of(const ftc__kv_value *v)
{
    static const uint8_t nothing[1];
    ftc__wire_str s = {v != NULL ? v->data : nothing, v != NULL ? v->len : 0};
    return s;
}

/* std::stoll on the value's bytes: blanks, a sign, at least one digit;
 * what follows the digits (a NUL included) is ignored. */
static int parse_decimal(const ftc__kv_value *v, int64_t *out)
{
    const uint8_t *p = v->data;
    size_t i = 0, n = v->len;
    while (i < n && (p[i] == ' ' || (p[i] >= '\t' && p[i] <= '\r'))) {
        i++;
    }
    int neg = i < n && p[i] == '-';
    if (i < n && (p[i] == '-' || p[i] == '+')) {
        i++;
    }
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t mag = 0;
    size_t digits = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
        uint64_t d = (uint64_t)(p[i] - '0');
        if (mag > (limit - d) / 10) {
            return ftc__seterr(FTC_EINVAL, "counter value out of range");
        }
        mag = mag * 10 + d;
    }
    if (digits == 0) {
        return ftc__seterr(FTC_EINVAL, "value '%.*s' is not a number",
                           (int)(v->len < 32 ? v->len : 32), v->data);
    }
    if (!neg) {
        *out = (int64_t)mag;
    } else {
        *out = mag == limit ? INT64_MIN : -(int64_t)mag;
    }
    return 0;
}

/* ----------------------------------------------------------- bookkeeping */

ftc__kv *ftc__kv_new(const ftc__kv_hooks *hooks, void *ctx,
                     uint64_t max_total_bytes)
{
    ftc__kv *kv = ftc__calloc(1, sizeof(*kv));
    if (kv == NULL) {
        return NULL;
    }
    if (ftc__kv_table_init(&kv->table) != 0) {
        ftc__free(kv);
        return NULL;
    }
    kv->hooks = *hooks;
    kv->ctx = ctx;
    kv->max_bytes = max_total_bytes;
    return kv;
}

uint64_t ftc__kv_num_keys(const ftc__kv *kv)
{
    return kv->nkeys;
}

uint64_t ftc__kv_bytes(const ftc__kv *kv)
{
    return kv->bytes;
}

uint64_t ftc__kv_overhead(const ftc__kv *kv)
{
    return kv->overhead;
}

uint64_t ftc__kv_reserved(const ftc__kv *kv)
{
    return kv->reserved;
}

uint64_t ftc__kv_charged(const ftc__kv *kv)
{
    return kv->charged;
}

void ftc__kv_client_init(ftc__kv_client *c)
{
    c->awaited = 0;
    c->first_used = 0;
    c->control = 0;
    c->arrived = 0;
    c->outcome = NULL;
    ftc__list_init(&c->waits);
    ftc__list_init(&c->watches);
}

static int holds_data(const ftc__kv_slot *s)
{
    return s != NULL && (s->value != NULL || s->queue_len > 0);
}

/* Refuses to let the store's memory (data plus bookkeeping) grow by add
 * (after dropping sub) past the total limit. */
static int afford(const ftc__kv *kv, uint64_t add, uint64_t sub)
{
    uint64_t all = kv->bytes + kv->overhead + kv->reserved + kv->charged;
    uint64_t held = all - sub;
    if (add > kv->max_bytes || held > kv->max_bytes - add) {
        return ftc__seterr(FTC_EMSGSIZE,
                           "store full: %" PRIu64 " B held (%" PRIu64
                           " B of it buffers and replies), +%" PRIu64
                           " B > limit %" PRIu64,
                           all, kv->charged, add, kv->max_bytes);
    }
    return 0;
}

int ftc__kv_afford(const ftc__kv *kv, uint64_t n)
{
    return afford(kv, n, 0);
}

void ftc__kv_charge(ftc__kv *kv, uint64_t n)
{
    kv->charged += n;
}

void ftc__kv_uncharge(ftc__kv *kv, uint64_t n)
{
    kv->charged -= n;
}

/* What a slot for key costs if it does not exist yet (s NULL). */
static uint64_t new_slot_cost(const ftc__kv_slot *s, ftc__wire_str key)
{
    return s != NULL ? 0 : SLOT_COST + key.len;
}

/* The slot s, or a new one for key; NULL when out of memory. */
static ftc__kv_slot *slot_for(ftc__kv *kv, ftc__kv_slot *s, ftc__wire_str key)
{
    if (s == NULL) {
        s = ftc__kv_table_get(&kv->table, key);
        if (s != NULL) {
            kv->overhead += SLOT_COST + key.len;
        }
    }
    return s;
}

/* Moves the key between bookkeeping and data when its slot starts or
 * stops holding data. */
static void account_key(ftc__kv *kv, ftc__kv_slot *s, int held_before)
{
    int held = holds_data(s);
    if (held && !held_before) {
        kv->bytes += s->klen;
        kv->overhead -= s->klen;
    } else if (!held && held_before) {
        kv->bytes -= s->klen;
        kv->overhead += s->klen;
    }
}

/* Frees a slot that no longer holds anything. */
static void tidy(ftc__kv *kv, ftc__kv_slot *s)
{
    if (s->value == NULL && s->queue_len == 0 && ftc__list_empty(&s->waiters) &&
        ftc__list_empty(&s->watchers)) {
        kv->overhead -= SLOT_COST + s->klen;
        ftc__kv_table_remove(&kv->table, s);
    }
}

/* Gives back a registration's storage (see new_reg). */
static void drop_new_reg(kv_reg *r, ftc__kv_client *c)
{
    if (r == &c->first) {
        c->first_used = 0;
    } else {
        ftc__free(r);
    }
}

static void release_reg(ftc__kv *kv, kv_reg *r)
{
    ftc__list_remove(&r->slot_node);
    ftc__list_remove(&r->client_node);
    kv->overhead -= REG_COST;
    drop_new_reg(r, r->client);
}

/* Storage for a registration of c: its own first one when unused (waits
 * only: a watch lasts, and would keep it from every later wait). */
static kv_reg *new_reg(ftc__kv_client *c, int kind)
{
    if (kind != REG_WATCH && !c->first_used) {
        c->first_used = 1;
        return &c->first;
    }
    return ftc__malloc(sizeof(kv_reg));
}

/* Registers c as a waiter (kind REG_WAIT or REG_BARRIER) or watcher of
 * key, whose slot is *sp (NULL: looked up, created if missing). */
static int add_reg(ftc__kv *kv, ftc__kv_slot **sp, ftc__wire_str key,
                   ftc__kv_client *c, int kind)
{
    ftc__kv_slot *s = *sp != NULL ? *sp : ftc__kv_table_find(&kv->table, key);
    int rc = afford(kv, REG_COST + new_slot_cost(s, key), 0);
    if (rc != 0) {
        return rc;
    }
    kv_reg *r = new_reg(c, kind);
    s = r != NULL ? slot_for(kv, s, key) : s;
    if (r == NULL || s == NULL) {
        if (r != NULL) {
            drop_new_reg(r, c);
        }
        return ftc__seterr(FTC_ENOMEM, "wait registration");
    }
    r->client = c;
    r->slot = s;
    r->barrier = kind == REG_BARRIER;
    if (kind == REG_WATCH) {
        ftc__list_push_back(&s->watchers, &r->slot_node);
        ftc__list_push_back(&c->watches, &r->client_node);
    } else {
        ftc__list_push_back(&s->waiters, &r->slot_node);
        ftc__list_push_back(&c->waits, &r->client_node);
    }
    kv->overhead += REG_COST;
    *sp = s;
    return 0;
}

/* The key arrived for the waiter r: one less to wait for. A
 * CONTROL_BARRIER (one key: last_members) takes that key's value along. */
static int satisfy(ftc__kv *kv, kv_reg *r)
{
    ftc__kv_client *c = r->client;
    ftc__kv_value *v = r->slot->value;
    release_reg(kv, r);
    if (--c->awaited == 0) {
        if (c->control) {
            c->outcome = v != NULL ? ftc__kv_value_ref(v) : NULL;
        }
        kv->hooks.ready(kv->ctx, c);
        return 1;
    }
    return 0;
}

/* Wakes the waiters of s: all of them, or only the first that completes
 * (a queue push serves one popper); barrier waiters only if barriers. */
static void wake(ftc__kv *kv, ftc__kv_slot *s, int barriers, int only_one)
{
    ftc__list *n = s->waiters.next;
    while (n != &s->waiters) {
        kv_reg *r = FTC_LIST_ENTRY(n, kv_reg, slot_node);
        n = n->next;
        if (r->barrier != barriers) {
            continue;
        }
        if (satisfy(kv, r) && only_one) {
            return;
        }
    }
}

static void notify(ftc__kv *kv, ftc__kv_slot *s, int type, ftc__wire_str old,
                   ftc__wire_str new_value)
{
    ftc__wire_str key = {s->key, s->klen};
    for (ftc__list *n = s->watchers.next; n != &s->watchers; n = n->next) {
        kv_reg *r = FTC_LIST_ENTRY(n, kv_reg, slot_node);
        kv->hooks.watch(kv->ctx, r->client, type, key, old, new_value);
    }
}

/* Replaces s's value with v (owned), then tells watchers and waiters. */
static void put_value(ftc__kv *kv, ftc__kv_slot *s, ftc__kv_value *v)
{
    ftc__kv_value *old = s->value;
    int held = holds_data(s);
    s->value = v;
    kv->bytes += v->len;
    kv->overhead += VALUE_COST;
    if (old != NULL) {
        kv->bytes -= old->len;
        kv->overhead -= VALUE_COST;
    } else {
        kv->nkeys++;
    }
    account_key(kv, s, held);
    if (!ftc__list_empty(&s->watchers)) {
        notify(kv, s,
               old != NULL ? FTC__WATCH_KEY_UPDATED : FTC__WATCH_KEY_CREATED,
               bytes_of(old), bytes_of(v));
    }
    let_go(kv, old);
    wake(kv, s, 0, 0);
}

/* The room a new value v_len bytes long for key takes, given its slot s
 * (NULL: none yet), and *sub what it frees (the value it replaces). */
static uint64_t value_cost(const ftc__kv_slot *s, ftc__wire_str key,
                           size_t vlen, uint64_t *sub)
{
    *sub = s != NULL && s->value != NULL ? s->value->len + VALUE_COST : 0;
    return (uint64_t)vlen + VALUE_COST + new_slot_cost(s, key);
}

/* Makes v (owned, already paid for) key's value in slot s (NULL: create). */
static int place(ftc__kv *kv, ftc__kv_slot *s, ftc__wire_str key,
                 ftc__kv_value *v, ftc__kv_slot **slot)
{
    s = slot_for(kv, s, key);
    if (s == NULL) {
        return ftc__seterr(FTC_ENOMEM, "key of %zu B", key.len);
    }
    put_value(kv, s, v);
    if (slot != NULL) {
        *slot = s;
    }
    return 0;
}

/* Stores a+b as key's value; the common path of every map write. */
static int store(ftc__kv *kv, ftc__wire_str key, const void *a, size_t alen,
                 const void *b, size_t blen, ftc__kv_slot **slot)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    uint64_t sub;
    uint64_t cost = value_cost(s, key, alen + blen, &sub);
    int rc = afford(kv, cost, sub);
    if (rc != 0) {
        return rc;
    }
    ftc__kv_value *v = value_new(a, alen, b, blen);
    if (v == NULL) {
        return FTC_ENOMEM;
    }
    rc = place(kv, s, key, v, slot);
    if (rc != 0) {
        ftc__kv_value_unref(v);
    }
    return rc;
}

/* ---------------------------------------------------------------- writes */

int ftc__kv_set(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val)
{
    return store(kv, key, val.p, val.len, NULL, 0, NULL);
}

int ftc__kv_set_value(ftc__kv *kv, ftc__wire_str key, ftc__kv_value *v)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    uint64_t sub;
    uint64_t cost = value_cost(s, key, v->len, &sub);
    int rc = afford(kv, cost, sub);
    return rc != 0 ? rc : place(kv, s, key, v, NULL);
}

int ftc__kv_reserve(ftc__kv *kv, size_t klen, size_t vlen, uint64_t *held)
{
    /* As if the key were new and replaced nothing: the most it can take. */
    uint64_t n = (uint64_t)vlen + VALUE_COST + SLOT_COST + klen;
    int rc = afford(kv, n, 0);
    if (rc == 0) {
        kv->reserved += n;
        *held = n;
    }
    return rc;
}

void ftc__kv_unreserve(ftc__kv *kv, uint64_t held)
{
    kv->reserved -= held;
}

/* Grows a value nobody else references in place (amortised doubling), so
 * repeated appends cost linear time. */
static int append_in_place(ftc__kv *kv, ftc__kv_slot *s, ftc__wire_str val)
{
    ftc__kv_value *v = s->value;
    size_t need = v->len + val.len;
    if (need > v->cap) {
        size_t cap = v->cap * 2 > need ? v->cap * 2 : need;
        if (cap > SIZE_MAX - sizeof(*v)) {
            cap = need;
        }
        ftc__kv_value *grown = ftc__realloc(v, sizeof(*v) + cap);
        if (grown == NULL) {
            return ftc__seterr(FTC_ENOMEM, "append to %zu B", v->len);
        }
        grown->cap = cap;
        s->value = v = grown;
    }
    memcpy(v->data + v->len, val.p, val.len);
    v->len = need;
    kv->bytes += val.len;
    wake(kv, s, 0, 0);
    return 0;
}

int ftc__kv_append(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    if (s == NULL || s->value == NULL) {
        return store(kv, key, val.p, val.len, NULL, 0, NULL);
    }
    int rc = afford(kv, val.len, 0);
    if (rc != 0) {
        return rc;
    }
    /* Watchers need the old value, and a value in a reply in flight must
     * not change: then build a new value instead. */
    if (s->value->refs == 1 && ftc__list_empty(&s->watchers)) {
        return append_in_place(kv, s, val);
    }
    return store(kv, key, s->value->data, s->value->len, val.p, val.len, NULL);
}

/* Stores a number as decimal text, as std::to_string does. */
static int store_number(ftc__kv *kv, ftc__wire_str key, int64_t n,
                        ftc__kv_slot **slot)
{
    char text[24];
    int len = snprintf(text, sizeof(text), "%" PRId64, n);
    return store(kv, key, text, (size_t)len, NULL, 0, slot);
}

/* The counter at key, 0 when missing. */
static int counter(ftc__kv *kv, ftc__wire_str key, int64_t *out)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    *out = 0;
    if (s == NULL || s->value == NULL) {
        return 0;
    }
    return parse_decimal(s->value, out);
}

int ftc__kv_add(ftc__kv *kv, ftc__wire_str key, int64_t delta, int64_t *out)
{
    int64_t old;
    int rc = counter(kv, key, &old);
    if (rc != 0) {
        return rc;
    }
    /* Wraps like PyTorch's int64 addition instead of being undefined. */
    int64_t sum = (int64_t)((uint64_t)old + (uint64_t)delta);
    rc = store_number(kv, key, sum, NULL);
    if (rc == 0) {
        *out = sum;
    }
    return rc;
}

int ftc__kv_compare_set(ftc__kv *kv, ftc__wire_str key, ftc__wire_str expected,
                        ftc__wire_str desired, ftc__wire_str *reply)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    if (s == NULL || s->value == NULL) {
        if (expected.len != 0) {
            *reply = expected;
            return 0;
        }
    } else if (s->value->len != expected.len ||
               (expected.len > 0 &&
                memcmp(s->value->data, expected.p, expected.len) != 0)) {
        *reply = bytes_of(s->value);
        return 0;
    }
    int rc = store(kv, key, desired.p, desired.len, NULL, 0, &s);
    if (rc == 0) {
        *reply = bytes_of(s->value);
    }
    return rc;
}

int ftc__kv_delete(ftc__kv *kv, ftc__wire_str key)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    if (s == NULL || s->value == NULL) {
        return 0;
    }
    ftc__kv_value *old = s->value;
    int held = holds_data(s);
    s->value = NULL;
    kv->bytes -= old->len;
    kv->overhead -= VALUE_COST;
    kv->nkeys--;
    account_key(kv, s, held);
    if (!ftc__list_empty(&s->watchers)) {
        notify(kv, s, FTC__WATCH_KEY_DELETED, bytes_of(old), bytes_of(NULL));
    }
    let_go(kv, old);
    tidy(kv, s);
    return 1;
}

int ftc__kv_queue_push(ftc__kv *kv, ftc__wire_str key, ftc__wire_str val)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    int rc = afford(kv, val.len + ITEM_COST + new_slot_cost(s, key), 0);
    if (rc != 0) {
        return rc;
    }
    kv_item *it = ftc__malloc(sizeof(*it));
    ftc__kv_value *v = value_new(val.p, val.len, NULL, 0);
    s = it != NULL && v != NULL ? slot_for(kv, s, key) : s;
    if (it == NULL || v == NULL || s == NULL) {
        ftc__free(it);
        ftc__kv_value_unref(v);
        if (s != NULL) {
            tidy(kv, s);
        }
        return ftc__seterr(FTC_ENOMEM, "queue item of %zu B", val.len);
    }
    it->value = v;
    int held = holds_data(s);
    ftc__list_push_back(&s->queue, &it->node);
    s->queue_len++;
    kv->bytes += val.len;
    kv->overhead += ITEM_COST;
    account_key(kv, s, held);
    wake(kv, s, 0, 1);
    return 0;
}

/* ----------------------------------------------------------------- reads */

const ftc__kv_value *ftc__kv_get(ftc__kv *kv, ftc__wire_str key)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    return s != NULL ? s->value : NULL;
}

static int present(ftc__kv *kv, ftc__wire_str key)
{
    return holds_data(ftc__kv_table_find(&kv->table, key));
}

int ftc__kv_check(ftc__kv *kv, const uint8_t *items, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        ftc__wire_str key;
        ftc__wire_next_str(&items, &key);
        if (!present(kv, key)) {
            return 0;
        }
    }
    return 1;
}

int64_t ftc__kv_queue_len(ftc__kv *kv, ftc__wire_str key)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    return s != NULL ? (int64_t)s->queue_len : 0;
}

void ftc__kv_queue_pop(ftc__kv *kv, ftc__wire_str key, int64_t *size,
                       ftc__kv_value **item)
{
    ftc__kv_slot *s = ftc__kv_table_find(&kv->table, key);
    *item = NULL;
    *size = s != NULL ? (int64_t)s->queue_len : 0;
    if (*size == 0) {
        return;
    }
    kv_item *it = FTC_LIST_ENTRY(s->queue.next, kv_item, node);
    int held = holds_data(s);
    ftc__list_remove(&it->node);
    s->queue_len--;
    kv->bytes -= it->value->len;
    kv->overhead -= ITEM_COST;
    account_key(kv, s, held);
    /* The caller's now: charged as a value outside the map. */
    *item = ftc__kv_value_ref(it->value);
    let_go(kv, it->value);
    ftc__free(it);
    tidy(kv, s);
}

struct foreach_ctx {
    void (*fn)(void *arg, ftc__wire_str key);
    void *arg;
};

static void foreach_value(void *arg, ftc__kv_slot *s)
{
    struct foreach_ctx *f = arg;
    if (s->value != NULL) {
        ftc__wire_str key = {s->key, s->klen};
        f->fn(f->arg, key);
    }
}

void ftc__kv_foreach_key(ftc__kv *kv, void (*fn)(void *arg, ftc__wire_str key),
                         void *arg)
{
    struct foreach_ctx f = {fn, arg};
    ftc__kv_table_foreach(&kv->table, foreach_value, &f);
}

/* --------------------------------------------------------------- waiting */

/* Drops every registration on a client list, tidying emptied slots. */
static void release_all(ftc__kv *kv, ftc__list *client_list)
{
    while (!ftc__list_empty(client_list)) {
        kv_reg *r = FTC_LIST_ENTRY(client_list->next, kv_reg, client_node);
        ftc__kv_slot *s = r->slot;
        release_reg(kv, r);
        tidy(kv, s);
    }
}

int ftc__kv_wait(ftc__kv *kv, ftc__kv_client *c, const uint8_t *items,
                 uint64_t count)
{
    if (FTC_NEVER(c->awaited != 0)) {
        ftc__kv_cancel_wait(kv, c);
    }
    if (ftc__kv_check(kv, items, count)) {
        return 1;
    }
    for (uint64_t i = 0; i < count; i++) {
        ftc__wire_str key;
        ftc__wire_next_str(&items, &key);
        if (present(kv, key)) {
            continue;
        }
        ftc__kv_slot *s = NULL;
        int rc = add_reg(kv, &s, key, c, REG_WAIT);
        if (rc != 0) {
            release_all(kv, &c->waits);
            c->awaited = 0;
            return rc;
        }
        c->awaited++;
    }
    return 0;
}

int ftc__kv_barrier(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key,
                    int64_t world_size)
{
    int64_t count;
    int rc = counter(kv, key, &count);
    if (rc != 0) {
        return rc;
    }
    ftc__kv_slot *s;
    count = (int64_t)((uint64_t)count + 1);
    rc = store_number(kv, key, count, &s);
    if (rc != 0) {
        return rc;
    }
    if (count >= world_size) {
        wake(kv, s, 1, 0);
        return 1;
    }
    rc = add_reg(kv, &s, key, c, REG_BARRIER);
    if (rc != 0) {
        return rc;
    }
    c->awaited = 1;
    return 0;
}

/* c10d's names and values for its barrier (StoreCollectives). */
#define RANK_JOINED "joined"
#define LAST_MEMBERS_DONE "<val_ignored>"

/* key + suffix in buf, which holds key's bytes at its start. */
static ftc__wire_str derived(uint8_t *buf, ftc__wire_str key,
                             const char *suffix)
{
    size_t n = strlen(suffix);
    memcpy(buf + key.len, suffix, n);
    ftc__wire_str s = {buf, key.len + n};
    return s;
}

int ftc__kv_control_barrier(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key,
                            int64_t rank, int64_t world_size)
{
    if (FTC_NEVER(c->awaited != 0)) {
        ftc__kv_cancel_wait(kv, c);
    }
    char rank_suffix[24];
    snprintf(rank_suffix, sizeof(rank_suffix), "/%" PRId64, rank);
    /* The derived keys: on the stack when short, as c10d's are. */
    uint8_t local[256];
    uint8_t *buf =
        key.len + 32 <= sizeof(local) ? local : ftc__malloc(key.len + 32);
    if (buf == NULL) {
        return ftc__seterr(FTC_ENOMEM, "barrier key of %zu B", key.len);
    }
    if (key.len > 0) {
        memcpy(buf, key.p, key.len);
    }
    /* Nothing changes unless the counter is a number. */
    int64_t count;
    int rc = counter(kv, derived(buf, key, "/num_members"), &count);
    if (rc == 0) {
        ftc__wire_str joined = {(const uint8_t *)RANK_JOINED,
                                strlen(RANK_JOINED)};
        rc = ftc__kv_set(kv, derived(buf, key, rank_suffix), joined);
    }
    if (rc == 0) {
        count = (int64_t)((uint64_t)count + 1);
        rc = store_number(kv, derived(buf, key, "/num_members"), count, NULL);
    }
    ftc__wire_str last_key = derived(buf, key, "/last_members");
    if (rc == 0 && count == world_size) {
        ftc__wire_str none = {(const uint8_t *)"", 0};
        ftc__wire_str done = {(const uint8_t *)LAST_MEMBERS_DONE,
                              strlen(LAST_MEMBERS_DONE)};
        ftc__wire_str reply;
        rc = ftc__kv_compare_set(kv, last_key, none, done, &reply);
    }
    ftc__kv_slot *s = NULL;
    if (rc == 0) {
        s = ftc__kv_table_find(&kv->table, last_key);
        c->control = 1;
        c->arrived = count;
    }
    if (rc == 0 && ((s != NULL && s->value != NULL) || count > world_size)) {
        c->outcome =
            s != NULL && s->value != NULL ? ftc__kv_value_ref(s->value) : NULL;
        rc = 1;
    } else if (rc == 0) {
        rc = add_reg(kv, &s, last_key, c, REG_WAIT);
        c->awaited = rc == 0 ? 1 : 0;
        c->control = rc == 0;
    }
    if (buf != local) {
        ftc__free(buf);
    }
    return rc;
}

int ftc__kv_cancel_wait(ftc__kv *kv, ftc__kv_client *c)
{
    int pending = c->awaited > 0;
    release_all(kv, &c->waits);
    c->awaited = 0;
    if (pending) {
        c->control = 0;
    }
    return pending;
}

int ftc__kv_watch(ftc__kv *kv, ftc__kv_client *c, ftc__wire_str key)
{
    ftc__kv_slot *s = NULL;
    return add_reg(kv, &s, key, c, REG_WATCH);
}

void ftc__kv_client_forget(ftc__kv *kv, ftc__kv_client *c)
{
    ftc__kv_cancel_wait(kv, c);
    ftc__kv_value_unref(c->outcome);
    c->outcome = NULL;
    c->control = 0;
    release_all(kv, &c->watches);
}

/* ------------------------------------------------------------- teardown */

static void free_list_regs(ftc__kv *kv, ftc__list *l)
{
    while (!ftc__list_empty(l)) {
        release_reg(kv, FTC_LIST_ENTRY(l->next, kv_reg, slot_node));
    }
}

static void free_slot(void *arg, ftc__kv_slot *s)
{
    ftc__kv *kv = arg;
    while (!ftc__list_empty(&s->queue)) {
        kv_item *it = FTC_LIST_ENTRY(s->queue.next, kv_item, node);
        ftc__list_remove(&it->node);
        ftc__kv_value_unref(it->value);
        ftc__free(it);
    }
    free_list_regs(kv, &s->waiters);
    free_list_regs(kv, &s->watchers);
    ftc__kv_value_unref(s->value);
    ftc__kv_table_remove(&kv->table, s);
}

void ftc__kv_free(ftc__kv *kv)
{
    if (kv == NULL) {
        return;
    }
    ftc__kv_table_foreach(&kv->table, free_slot, kv);
    ftc__kv_table_free(&kv->table);
    ftc__free(kv);
}
