/* Serves one decoded request: applies it to the store state and queues its
 * reply (byte layouts in docs/protocol.md). A request that cannot be
 * served (a counter that is not a number, a full store) closes only its
 * own connection, as PyTorch's servers do. */
#include <stdio.h>

#include "store/server/server_int.h"

/* Closes the connection when a state call failed. Returns 1 if it did. */
static int failed(store_conn *c, int rc, const char *op)
{
    if (rc >= 0) {
        return 0;
    }
    const char *tag = rc == FTC_EMSGSIZE ? "store.full"
                      : rc == FTC_EINVAL ? "store.badvalue"
                                         : "store.nomem";
    char why[256];
    snprintf(why, sizeof(why), "%s: %s", op, ftc_last_error());
    if (rc == FTC_ENOMEM) {
        ftc__conn_close(c, FTC_LOG_ERROR, tag, why);
    } else {
        c->srv->live.protocol_errors++;
        ftc__conn_close(c, FTC_LOG_WARN, tag, why);
    }
    return 1;
}

void ftc__store_reply_done(store_conn *c)
{
    ftc__out_u8(c, FTC__WAIT_STOP_WAITING);
    if (!c->kv.control) {
        return;
    }
    /* CONTROL_BARRIER: i64 arrived, str value of last_members. */
    ftc__out_i64(c, c->kv.arrived);
    ftc__out_value(c, c->kv.outcome);
    ftc__kv_value_unref(c->kv.outcome);
    c->kv.outcome = NULL;
    c->kv.control = 0;
}

static void park_or_reply(store_conn *c, int rc, const char *op)
{
    if (failed(c, rc, op)) {
        return;
    }
    if (rc == 1) {
        ftc__store_reply_done(c);
    } else {
        c->parked = 1;
    }
}

void ftc__store_set_value(store_conn *c, ftc__wire_str key, ftc__kv_value *v)
{
    int rc = ftc__kv_set_value(c->srv->kv, key, v);
    if (rc != 0) {
        ftc__kv_value_unref(v);
    }
    failed(c, rc, "set");
}

static void multi_get(store_conn *c, const ftc__wire_req *r)
{
    /* The whole reply is checked against the limits before any of it is
     * built: a reply that cannot fit is refused, not half made. */
    const uint8_t *cur = r->items;
    uint64_t cost = 0;
    for (uint64_t i = 0; i < r->count; i++) {
        ftc__wire_str key;
        ftc__wire_next_str(&cur, &key);
        cost += ftc__out_value_cost(ftc__kv_get(c->srv->kv, key));
    }
    if (!ftc__out_prepare(c, cost)) {
        return;
    }
    cur = r->items;
    for (uint64_t i = 0; i < r->count && !c->closing; i++) {
        ftc__wire_str key;
        ftc__wire_next_str(&cur, &key);
        ftc__out_value(c, ftc__kv_get(c->srv->kv, key));
    }
}

static void multi_set(store_conn *c, const ftc__wire_req *r)
{
    const uint8_t *cur = r->items;
    for (uint64_t i = 0; i < r->count; i++) {
        ftc__wire_str key, val;
        ftc__wire_next_str(&cur, &key);
        ftc__wire_next_str(&cur, &val);
        if (failed(c, ftc__kv_set(c->srv->kv, key, val), "multi_set")) {
            return;
        }
    }
}

static void list_key(void *arg, ftc__wire_str key)
{
    ftc__out_str(arg, key.p, key.len);
}

static void queue_pop(store_conn *c, const ftc__wire_req *r)
{
    int64_t size;
    ftc__kv_value *item;
    ftc__kv_queue_pop(c->srv->kv, r->key, &size, &item);
    ftc__out_i64(c, size);
    if (item != NULL) {
        ftc__out_value(c, item);
        ftc__kv_value_unref(item);
    }
}

void ftc__store_dispatch(store_conn *c, const ftc__wire_req *r)
{
    ftc__kv *kv = c->srv->kv;
    ftc__wire_str reply;
    int64_t n;
    int rc;
    if (c->auth != STORE_AUTH_OK && !ftc__store_auth_admit(c, r)) {
        return;
    }
    switch (r->op) {
    case FTC__OP_VALIDATE:
        if (r->u32 != FTC__STORE_VALIDATE_MAGIC) {
            char why[64];
            snprintf(why, sizeof(why), "VALIDATE magic 0x%08x", r->u32);
            c->srv->live.protocol_errors++;
            ftc__conn_close(c, FTC_LOG_WARN, "store.badmagic", why);
        }
        break;
    case FTC__OP_SET:
        failed(c, ftc__kv_set(kv, r->key, r->val), "set");
        break;
    case FTC__OP_COMPARE_SET:
        rc = ftc__kv_compare_set(kv, r->key, r->val, r->val2, &reply);
        if (!failed(c, rc, "compare_set")) {
            ftc__out_str(c, reply.p, reply.len);
        }
        break;
    case FTC__OP_GET:
        ftc__out_value(c, ftc__kv_get(kv, r->key));
        break;
    case FTC__OP_ADD:
        if (!failed(c, ftc__kv_add(kv, r->key, r->num, &n), "add")) {
            ftc__out_i64(c, n);
        }
        break;
    case FTC__OP_CHECK:
        ftc__out_u8(c, ftc__kv_check(kv, r->items, r->count)
                           ? FTC__CHECK_READY
                           : FTC__CHECK_NOT_READY);
        break;
    case FTC__OP_WAIT:
        park_or_reply(c, ftc__kv_wait(kv, &c->kv, r->items, r->count), "wait");
        break;
    case FTC__OP_BARRIER:
        park_or_reply(c, ftc__kv_barrier(kv, &c->kv, r->key, r->num),
                      "barrier");
        break;
    case FTC__OP_CONTROL_BARRIER:
        park_or_reply(
            c, ftc__kv_control_barrier(kv, &c->kv, r->key, r->num2, r->num),
            "control_barrier");
        break;
    case FTC__OP_GETNUMKEYS:
        if (c->auth != STORE_AUTH_OK) {
            ftc__store_auth_num_keys(c);
            break;
        }
        ftc__out_i64(c, (int64_t)ftc__kv_num_keys(kv));
        break;
    case FTC__OP_WATCH_KEY:
        if (!failed(c, ftc__kv_watch(kv, &c->kv, r->key), "watch_key")) {
            ftc__out_u8(c, FTC__WATCH_CALLBACK_REGISTERED);
        }
        break;
    case FTC__OP_DELETE_KEY:
        ftc__out_i64(c, ftc__kv_delete(kv, r->key));
        break;
    case FTC__OP_APPEND:
        failed(c, ftc__kv_append(kv, r->key, r->val), "append");
        break;
    case FTC__OP_MULTI_GET:
        multi_get(c, r);
        break;
    case FTC__OP_MULTI_SET:
        multi_set(c, r);
        break;
    case FTC__OP_CANCEL_WAIT:
        /* Nothing pending (the wait completed first, and its
         * STOP_WAITING went out already): just confirm. */
        ftc__out_u8(c, FTC__WAIT_CANCELED);
        break;
    case FTC__OP_PING:
        ftc__store_auth_ping(c, r->u32);
        break;
    case FTC__OP_AUTH_HELLO:
        ftc__store_auth_hello(c, r);
        break;
    case FTC__OP_AUTH_PROOF:
        ftc__store_auth_proof(c, r);
        break;
    case FTC__OP_QUEUE_PUSH:
        failed(c, ftc__kv_queue_push(kv, r->key, r->val), "queue_push");
        break;
    case FTC__OP_QUEUE_POP:
        queue_pop(c, r);
        break;
    case FTC__OP_QUEUE_LEN:
        ftc__out_i64(c, ftc__kv_queue_len(kv, r->key));
        break;
    case FTC__OP_LIST_KEYS:
        if (c->auth != STORE_AUTH_OK) {
            ftc__store_auth_list_keys(c);
            break;
        }
        ftc__out_i64(c, (int64_t)ftc__kv_num_keys(kv));
        ftc__kv_foreach_key(kv, list_key, c);
        break;
    default:
        if (FTC_NEVER(1)) {
            ftc__conn_close(c, FTC_LOG_ERROR, "store.badop", "no handler");
        }
        break;
    }
}
