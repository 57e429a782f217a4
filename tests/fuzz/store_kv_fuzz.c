/* libFuzzer target for the store state: the input is a stream of 2.x
 * requests, each preceded by a byte choosing which of four clients sends
 * it (bit 6: that client disconnects first; bit 7: it watches the
 * request's key instead, as 1.13's WATCH_KEY). They are applied to the
 * state as the server would (a client parked in a WAIT, BARRIER or
 * CONTROL_BARRIER only cancels until released; a done CONTROL_BARRIER's
 * answer is read and released). Random interleavings of waits, cancels,
 * barriers, queues, watches and disconnects must never crash or leak, a
 * client is parked exactly while it awaits keys, and data plus
 * bookkeeping never pass the total limit. */
#include <stdint.h>
#include <string.h>

#include "store/server/kv.h"
#include "store/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CLIENTS 4
#define MAX_BYTES (1u << 16)

typedef struct fuzz_client {
    ftc__kv_client kv;
    int parked;
} fuzz_client;

static fuzz_client clients[CLIENTS];

/* What the server sends for a done CONTROL_BARRIER: reads every byte of
 * the outcome (so ASan sees a stale one) and releases it. */
static void take_outcome(ftc__kv_client *c)
{
    if (!c->control) {
        __builtin_trap();
    }
    volatile uint8_t sink = 0;
    for (size_t i = 0; c->outcome != NULL && i < c->outcome->len; i++) {
        sink ^= c->outcome->data[i];
    }
    (void)sink;
    ftc__kv_value_unref(c->outcome);
    c->outcome = NULL;
    c->control = 0;
}

static void on_ready(void *ctx, ftc__kv_client *c)
{
    (void)ctx;
    fuzz_client *fc = (fuzz_client *)(void *)c;
    if (!fc->parked || c->awaited != 0) {
        __builtin_trap(); /* woken twice, or too early */
    }
    fc->parked = 0;
    if (c->control) {
        take_outcome(c);
    } else if (c->outcome != NULL) {
        __builtin_trap(); /* an answer nobody asked for */
    }
}

static void on_watch(void *ctx, ftc__kv_client *c, int type, ftc__wire_str key,
                     ftc__wire_str old, ftc__wire_str now)
{
    (void)ctx;
    (void)c;
    (void)type;
    /* Touch every byte so ASan sees a stale view. */
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < key.len; i++) {
        sink ^= key.p[i];
    }
    for (size_t i = 0; i < old.len; i++) {
        sink ^= old.p[i];
    }
    for (size_t i = 0; i < now.len; i++) {
        sink ^= now.p[i];
    }
    (void)sink;
}

static void touch_key(void *arg, ftc__wire_str key)
{
    (*(size_t *)arg) += key.len;
}

static void apply(ftc__kv *kv, fuzz_client *fc, const ftc__wire_req *r)
{
    ftc__wire_str reply;
    int64_t n;
    ftc__kv_value *item;
    if (fc->parked) {
        if (r->op == FTC__OP_CANCEL_WAIT) {
            if (ftc__kv_cancel_wait(kv, &fc->kv) != 1) {
                __builtin_trap();
            }
            fc->parked = 0;
        }
        return;
    }
    switch (r->op) {
    case FTC__OP_SET:
        ftc__kv_set(kv, r->key, r->val);
        break;
    case FTC__OP_COMPARE_SET:
        if (ftc__kv_compare_set(kv, r->key, r->val, r->val2, &reply) == 0 &&
            reply.len > 0) {
            volatile uint8_t b = reply.p[reply.len - 1];
            (void)b;
        }
        break;
    case FTC__OP_GET: {
        const ftc__kv_value *v = ftc__kv_get(kv, r->key);
        if (v != NULL && v->len > 0) {
            volatile uint8_t b = v->data[v->len - 1];
            (void)b;
        }
        break;
    }
    case FTC__OP_ADD:
        ftc__kv_add(kv, r->key, r->num, &n);
        break;
    case FTC__OP_CHECK:
        ftc__kv_check(kv, r->items, r->count);
        break;
    case FTC__OP_WAIT:
        fc->parked = ftc__kv_wait(kv, &fc->kv, r->items, r->count) == 0;
        break;
    case FTC__OP_BARRIER:
        fc->parked = ftc__kv_barrier(kv, &fc->kv, r->key, r->num) == 0;
        break;
    case FTC__OP_CONTROL_BARRIER: {
        int rc = ftc__kv_control_barrier(kv, &fc->kv, r->key, r->num2, r->num);
        fc->parked = rc == 0;
        if (rc == 1) {
            take_outcome(&fc->kv);
        }
        break;
    }
    case FTC__OP_DELETE_KEY:
        ftc__kv_delete(kv, r->key);
        break;
    case FTC__OP_APPEND:
        ftc__kv_append(kv, r->key, r->val);
        break;
    case FTC__OP_MULTI_SET: {
        const uint8_t *cur = r->items;
        for (uint64_t i = 0; i < r->count; i++) {
            ftc__wire_str k, v;
            ftc__wire_next_str(&cur, &k);
            ftc__wire_next_str(&cur, &v);
            ftc__kv_set(kv, k, v);
        }
        break;
    }
    case FTC__OP_CANCEL_WAIT:
        if (ftc__kv_cancel_wait(kv, &fc->kv) != 0) {
            __builtin_trap(); /* nothing was pending */
        }
        break;
    case FTC__OP_QUEUE_PUSH:
        ftc__kv_queue_push(kv, r->key, r->val);
        break;
    case FTC__OP_QUEUE_POP:
        ftc__kv_queue_pop(kv, r->key, &n, &item);
        ftc__kv_value_unref(item);
        break;
    case FTC__OP_QUEUE_LEN:
        ftc__kv_queue_len(kv, r->key);
        break;
    case FTC__OP_LIST_KEYS: {
        size_t total = 0;
        ftc__kv_foreach_key(kv, touch_key, &total);
        break;
    }
    case FTC__OP_GETNUMKEYS:
        ftc__kv_num_keys(kv);
        break;
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ftc__kv_hooks hooks = {on_ready, on_watch};
    static const ftc__wire_limits lim = {32, 256, 8, 4096, 8};
    ftc__kv *kv = ftc__kv_new(&hooks, NULL, MAX_BYTES);
    if (kv == NULL) {
        return 0;
    }
    for (int i = 0; i < CLIENTS; i++) {
        ftc__kv_client_init(&clients[i].kv);
        clients[i].parked = 0;
    }
    ftc__wire_decoder d;
    size_t off = 0;
    while (off + 1 < size) {
        uint8_t how = data[off];
        fuzz_client *fc = &clients[how % CLIENTS];
        off++;
        ftc__wire_decoder_init(&d, FTC__WIRE_V2);
        ftc__wire_req req;
        size_t need;
        if (ftc__wire_decode(&d, data + off, size - off, &lim, &req, &need) !=
            FTC__WIRE_DONE) {
            break;
        }
        off += req.size;
        if (how & 0x40) {
            ftc__kv_client_forget(kv, &fc->kv);
            fc->parked = 0;
        }
        if ((how & 0x80) && req.key.len > 0) {
            ftc__kv_watch(kv, &fc->kv, req.key);
        } else {
            apply(kv, fc, &req);
        }
        for (int i = 0; i < CLIENTS; i++) {
            /* A CONTROL_BARRIER is pending only while parked, and its
             * answer never outlives the reply. */
            const ftc__kv_client *k = &clients[i].kv;
            if (clients[i].parked != (k->awaited > 0) || k->outcome != NULL ||
                (k->control && !clients[i].parked)) {
                __builtin_trap();
            }
        }
        if (ftc__kv_bytes(kv) + ftc__kv_overhead(kv) > MAX_BYTES) {
            __builtin_trap(); /* the limit was passed */
        }
    }
    for (int i = 0; i < CLIENTS; i++) {
        ftc__kv_client_forget(kv, &clients[i].kv);
    }
    ftc__kv_free(kv);
    return 0;
}
