/* Store authentication (docs/protocol.md "Authentication"): the
 * AUTH_HELLO / AUTH_PROOF challenge-response keyed by the server's token,
 * and what a connection that has not authenticated may do: the handshake
 * itself, and keys under the open prefixes. A refusal closes only that
 * connection, before the request changes anything. */
#include <stdio.h>
#include <string.h>

#include "store/server/server_int.h"

static const char server_label[] = FTC__STORE_AUTH_SERVER_LABEL;
static const char client_label[] = FTC__STORE_AUTH_CLIENT_LABEL;

int ftc__store_auth_init(store_auth *a, const ftc_store_server_opts *o)
{
    memset(a, 0, sizeof(*a));
    if (o->token != NULL && o->token[0] == '\0') {
        return ftc__seterr(FTC_EINVAL, "ftc_store_server_opts: empty token");
    }
    if (o->n_open_prefixes > 0 && o->token == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_store_server_opts: open_prefixes without a "
                           "token (every key is open without one)");
    }
    if (o->n_open_prefixes > 0 && o->open_prefixes == NULL) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_store_server_opts: open_prefixes is NULL");
    }
    if (o->token == NULL) {
        return 0;
    }
    int rc = ftc__auth_key(o->token, a->key);
    if (rc != 0) {
        return rc;
    }
    a->has_token = 1;
    a->open = ftc__calloc(o->n_open_prefixes + 1, sizeof(*a->open));
    a->open_len = ftc__calloc(o->n_open_prefixes + 1, sizeof(*a->open_len));
    if (a->open == NULL || a->open_len == NULL) {
        ftc__store_auth_free(a);
        return ftc__seterr(FTC_ENOMEM, "store server: open prefixes");
    }
    for (size_t i = 0; i < o->n_open_prefixes; i++) {
        const char *p = o->open_prefixes[i];
        if (p == NULL || p[0] == '\0') {
            ftc__store_auth_free(a);
            return ftc__seterr(FTC_EINVAL,
                               "ftc_store_server_opts: open prefix %zu is "
                               "empty (it would open every key)",
                               i);
        }
        a->open[i] = ftc__strdup(p);
        if (a->open[i] == NULL) {
            ftc__store_auth_free(a);
            return ftc__seterr(FTC_ENOMEM, "store server: open prefixes");
        }
        a->open_len[i] = strlen(p);
        a->n_open++;
    }
    return 0;
}

void ftc__store_auth_free(store_auth *a)
{
    for (size_t i = 0; a->open != NULL && i < a->n_open; i++) {
        ftc__free(a->open[i]);
    }
    ftc__free(a->open);
    ftc__free(a->open_len);
    ftc__auth_wipe(a->key, sizeof(a->key));
    memset(a, 0, sizeof(*a));
}

int ftc__store_auth_key_open(const store_auth *a, ftc__wire_str key)
{
    /* PyTorch's clients send "/" + key; 1.13's worker counter is a bare
     * "init/". */
    if (key.len > 0 && key.p[0] == '/') {
        key.p++;
        key.len--;
    }
    for (size_t i = 0; i < a->n_open; i++) {
        if (key.len >= a->open_len[i] &&
            memcmp(key.p, a->open[i], a->open_len[i]) == 0) {
            return 1;
        }
    }
    return 0;
}

static void refuse(store_conn *c, const char *why)
{
    c->srv->live.protocol_errors++;
    ftc__conn_close(c, FTC_LOG_WARN, "store.auth", why);
}

/* Ops a connection may send before it authenticates whatever the server's
 * prefixes: the handshake, the probe, and cancelling its own wait. */
static int handshake_op(ftc__store_op op)
{
    return op == FTC__OP_VALIDATE || op == FTC__OP_PING ||
           op == FTC__OP_AUTH_HELLO || op == FTC__OP_AUTH_PROOF ||
           op == FTC__OP_CANCEL_WAIT;
}

int ftc__store_auth_refuse_op(store_conn *c, ftc__store_op op)
{
    if (c->srv->auth.n_open > 0 || handshake_op(op)) {
        return 0;
    }
    refuse(c, "a request before authenticating (the store has a token and "
              "no open prefix)");
    return 1;
}

void ftc__store_auth_refuse_key(store_conn *c, ftc__wire_str key)
{
    /* The key is the peer's: printable ASCII only in the log. */
    char shown[65];
    size_t n = key.len < sizeof(shown) - 1 ? key.len : sizeof(shown) - 1;
    for (size_t i = 0; i < n; i++) {
        shown[i] = key.p[i] >= 0x20 && key.p[i] < 0x7f ? (char)key.p[i] : '?';
    }
    shown[n] = '\0';
    char why[160];
    snprintf(why, sizeof(why),
             "key '%s'%s outside the open prefixes before authenticating",
             shown, key.len > n ? "..." : "");
    refuse(c, why);
}

/* Most bytes of items (CHECK, WAIT, MULTI_*) a stranger may send in one
 * request: keys are checked once the request is whole. */
#define STRANGER_ITEMS_MAX (1u << 20)

int ftc__store_auth_refuse_early(store_conn *c, const uint8_t *buf, size_t need)
{
    ftc__store_op op = c->dec.op;
    if (op == FTC__OP_INVALID || ftc__store_auth_refuse_op(c, op)) {
        return op != FTC__OP_INVALID;
    }
    ftc__wire_str key;
    if (ftc__wire_pending_key(&c->dec, buf, &key) &&
        !ftc__store_auth_key_open(&c->srv->auth, key)) {
        ftc__store_auth_refuse_key(c, key);
        return 1;
    }
    if (ftc__wire_has_items(op) && need > STRANGER_ITEMS_MAX) {
        refuse(c, "a request of items over 1 MiB before authenticating");
        return 1;
    }
    return 0;
}

/* The key of every item of a CHECK/WAIT/MULTI_GET/MULTI_SET. */
static int items_open(store_conn *c, const ftc__wire_req *r)
{
    const uint8_t *cur = r->items;
    for (uint64_t i = 0; i < r->count; i++) {
        ftc__wire_str key, val;
        ftc__wire_next_str(&cur, &key);
        if (r->op == FTC__OP_MULTI_SET) {
            ftc__wire_next_str(&cur, &val);
        }
        if (!ftc__store_auth_key_open(&c->srv->auth, key)) {
            ftc__store_auth_refuse_key(c, key);
            return 0;
        }
    }
    return 1;
}

int ftc__store_auth_admit(store_conn *c, const ftc__wire_req *r)
{
    if (handshake_op(r->op) || r->op == FTC__OP_GETNUMKEYS ||
        r->op == FTC__OP_LIST_KEYS) {
        return 1;
    }
    if (ftc__store_auth_refuse_op(c, r->op)) {
        return 0;
    }
    if (r->items != NULL ? !items_open(c, r)
                         : !ftc__store_auth_key_open(&c->srv->auth, r->key)) {
        if (r->items == NULL) {
            ftc__store_auth_refuse_key(c, r->key);
        }
        return 0;
    }
    ftc__store_auth_known(c); /* a client of the open prefixes */
    return 1;
}

void ftc__store_auth_hello(store_conn *c, const ftc__wire_req *r)
{
    uint8_t *sn = c->nonces + FTC__AUTH_NONCE;
    uint8_t mac[FTC__AUTH_MAC];
    if (!c->srv->auth.has_token) {
        /* Nothing to prove: all zeros tells the client this server has no
         * token (a client with one then refuses it). */
        uint8_t zeros[FTC__AUTH_NONCE + FTC__AUTH_MAC] = {0};
        ftc__out_raw(c, zeros, sizeof(zeros));
        return;
    }
    if (c->auth != STORE_AUTH_NONE) {
        refuse(c, "a second AUTH_HELLO");
        return;
    }
    if (ftc__auth_random(sn, FTC__AUTH_NONCE) != 0) {
        ftc__conn_close(c, FTC_LOG_ERROR, "store.auth", ftc_last_error());
        return;
    }
    memcpy(c->nonces, r->key.p, FTC__AUTH_NONCE);
    ftc__auth_mac(c->srv->auth.key, (const uint8_t *)server_label,
                  sizeof(server_label), c->nonces, sizeof(c->nonces), mac);
    c->auth = STORE_AUTH_CHALLENGED;
    ftc__out_raw(c, sn, FTC__AUTH_NONCE);
    ftc__out_raw(c, mac, sizeof(mac));
}

void ftc__store_auth_proof(store_conn *c, const ftc__wire_req *r)
{
    if (c->auth == STORE_AUTH_OK) {
        /* A server without a token, or a second proof: nothing to do. */
        ftc__out_u8(c, 0);
        return;
    }
    if (c->auth != STORE_AUTH_CHALLENGED) {
        refuse(c, "AUTH_PROOF without AUTH_HELLO");
        return;
    }
    if (!ftc__auth_verify(c->srv->auth.key, (const uint8_t *)client_label,
                          sizeof(client_label), c->nonces, sizeof(c->nonces),
                          r->key.p)) {
        refuse(c, "wrong token (its AUTH_PROOF does not match)");
        return;
    }
    c->auth = STORE_AUTH_OK;
    ftc__store_auth_known(c);
    ftc__out_u8(c, 0);
}

void ftc__store_auth_ping(store_conn *c, uint32_t nonce)
{
    if ((nonce & FTC__STORE_NONCE_TAG_MASK) != FTC__STORE_NONCE_TAG) {
        ftc__out_u32(c, nonce);
        return;
    }
    uint32_t locked = c->auth != STORE_AUTH_OK ? FTC__STORE_PROBE_LOCKED : 0;
    ftc__out_u32(c, ~nonce ^ locked);
}

/* Counts or lists the keys an unauthenticated connection may see. */
typedef struct open_keys {
    store_conn *c;
    int64_t n;
    int list;
} open_keys;

static void open_key(void *arg, ftc__wire_str key)
{
    open_keys *k = arg;
    if (!ftc__store_auth_key_open(&k->c->srv->auth, key)) {
        return;
    }
    k->n++;
    if (k->list) {
        ftc__out_str(k->c, key.p, key.len);
    }
}

void ftc__store_auth_num_keys(store_conn *c)
{
    open_keys k = {c, 0, 0};
    if (c->srv->auth.n_open > 0) { /* else nothing to see, nothing to scan */
        ftc__kv_foreach_key(c->srv->kv, open_key, &k);
    }
    ftc__out_i64(c, k.n);
}

void ftc__store_auth_list_keys(store_conn *c)
{
    /* The count goes first on the wire: count, then list. */
    ftc__store_auth_num_keys(c);
    open_keys k = {c, 0, 1};
    if (c->srv->auth.n_open > 0) {
        ftc__kv_foreach_key(c->srv->kv, open_key, &k);
    }
}

/* ------------------------------------------------------------ strangers */

/* Warns at most every 10 s about strangers closed for their address's
 * cap, with how many since the last warning. */
static void warn_evictions(struct ftc_store_server *srv, const char *peer)
{
    int64_t now = ftc__now_ms();
    srv->host_evicted++;
    if (now - srv->host_warned_ms < 10000) {
        return;
    }
    FTC_LOG_WARN("store.flood",
                 "%llu connection(s) closed before authenticating: their "
                 "address held max_strangers_per_address (%zu) such "
                 "connections (the last from %s)",
                 (unsigned long long)srv->host_evicted,
                 srv->opts.max_strangers_per_address, peer);
    srv->host_evicted = 0;
    srv->host_warned_ms = now;
}

void ftc__store_auth_greet(store_conn *c, const struct sockaddr *peer)
{
    c->born_ms = ftc__now_ms();
    ftc__list_push_back(&c->srv->strangers, &c->stranger_node);
    store_conn *oldest = peer != NULL ? ftc__store_hosts_add(c, peer) : NULL;
    if (oldest != NULL) {
        c->srv->live.refused++;
        warn_evictions(c->srv, oldest->peer);
        ftc__conn_close(oldest, FTC_LOG_DEBUG, "store.evict",
                        "its address has max_strangers_per_address "
                        "connections that have not authenticated: the "
                        "oldest closed to make room");
    }
}

void ftc__store_auth_known(store_conn *c)
{
    if (ftc__list_linked(&c->stranger_node)) {
        ftc__list_remove(&c->stranger_node);
    }
    ftc__store_hosts_remove(c);
}

int ftc__store_auth_evict_stranger(struct ftc_store_server *srv)
{
    if (ftc__list_empty(&srv->strangers)) {
        return 0;
    }
    store_conn *c =
        FTC_LIST_ENTRY(srv->strangers.next, store_conn, stranger_node);
    ftc__conn_close(c, FTC_LOG_DEBUG, "store.evict",
                    "the connection table is full and it has not "
                    "authenticated: closed to make room");
    return 1;
}

/* Closes the strangers past the handshake timeout (the list is oldest
 * first), with one warning per sweep that closed any. */
static void sweep(uv_timer_t *t)
{
    struct ftc_store_server *srv = t->data;
    int64_t cutoff = ftc__now_ms() - srv->opts.handshake_timeout_ms;
    int closed = 0;
    char last[64] = "";
    while (!ftc__list_empty(&srv->strangers)) {
        store_conn *c =
            FTC_LIST_ENTRY(srv->strangers.next, store_conn, stranger_node);
        if (c->born_ms > cutoff) {
            break;
        }
        snprintf(last, sizeof(last), "%s", c->peer);
        srv->live.protocol_errors++;
        ftc__conn_close(c, FTC_LOG_DEBUG, "store.handshake",
                        "neither authenticated nor used an open prefix in "
                        "time");
        closed++;
    }
    if (closed > 0) {
        FTC_LOG_WARN("store.handshake",
                     "closed %d connection%s that neither authenticated nor "
                     "used an open prefix within %lld ms (the last from %s)",
                     closed, closed == 1 ? "" : "s",
                     (long long)srv->opts.handshake_timeout_ms, last);
    }
}

void ftc__store_auth_start_sweeps(struct ftc_store_server *srv)
{
    int64_t timeout = srv->opts.handshake_timeout_ms;
    if (!srv->auth.has_token || timeout < 0) {
        return;
    }
    uint64_t every = timeout / 2 < 1000 ? (uint64_t)(timeout / 2) : 1000;
    every = every < 10 ? 10 : every;
    uv_timer_init(&srv->loop, &srv->sweep);
    srv->sweep.data = srv;
    uv_timer_start(&srv->sweep, sweep, every, every);
}
