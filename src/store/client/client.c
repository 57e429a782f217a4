/* Store client handles: connect, prefix views, close, cancel, and the
 * begin/end of every call (lock, reconnect, error messages). */
#include <stdio.h>
#include <string.h>

#include "store/client/client_int.h"
#include "store/client/endpoint.h"

void ftc_store_client_opts_init(ftc_store_client_opts *opts)
{
    if (opts == NULL) {
        return;
    }
    memset(opts, 0, sizeof(*opts));
    opts->struct_size = sizeof(*opts);
    opts->connect_timeout_ms = 30000;
    opts->timeout_ms = 300000;
    opts->dialect = FTC_STORE_DIALECT_V2;
    opts->max_value_bytes = (size_t)1 << 30;
}

/* The caller's fields over the defaults, checked. */
static int resolve_opts(ftc_store_client_opts *o,
                        const ftc_store_client_opts *in)
{
    ftc_store_client_opts d;
    ftc_store_client_opts_init(&d);
    *o = d;
    int rc = FTC__OPTS_MERGE(o, in, ftc_store_client_opts, max_value_bytes);
    if (rc != 0) {
        return rc;
    }
    FTC__OPT_DEFAULT(o, &d, connect_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, max_value_bytes, FTC_SIZE_DEFAULT);
    rc = ftc__timeout_check(o->connect_timeout_ms,
                            "ftc_store_client_opts.connect_timeout_ms");
    rc = rc != 0 ? rc
                 : ftc__timeout_check(o->timeout_ms,
                                      "ftc_store_client_opts.timeout_ms");
    if (rc != 0) {
        return rc;
    }
    if (o->max_value_bytes == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_store_client_opts: max_value_bytes 0 (>= 1)");
    }
    if (o->token != NULL &&
        (o->token[0] == '\0' || strlen(o->token) >= FTC__STORE_TOKEN_MAX)) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_store_client_opts: the token is empty or "
                           "longer than %d bytes",
                           FTC__STORE_TOKEN_MAX - 1);
    }
    if (o->token != NULL && o->dialect == FTC_STORE_DIALECT_V1) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_store_client_opts: a token needs the 2.x "
                           "dialect (1.13 has no handshake)");
    }
    if (o->dialect != FTC_STORE_DIALECT_V2 &&
        o->dialect != FTC_STORE_DIALECT_V1) {
        return ftc__seterr(FTC_EINVAL, "unknown store dialect %d", o->dialect);
    }
    return 0;
}

static int valid(const ftc_store_client *c)
{
    return c != NULL && c->magic == FTC__STORE_CLIENT_MAGIC;
}

static void core_free(ftc__store_core *core)
{
    ftc__store_conn_close(&core->conn);
    ftc__event_close(&core->cancel);
    ftc__auth_wipe(core->token, sizeof(core->token));
    pthread_mutex_destroy(&core->lock);
    ftc__free(core);
}

int ftc_store_client_connect(const char *addr,
                             const ftc_store_client_opts *opts,
                             ftc_store_client **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "store connect: out is NULL");
    }
    *out = NULL;
    if (addr == NULL) {
        return ftc__seterr(FTC_EINVAL, "store connect: addr is NULL");
    }
    ftc_store_client_opts o;
    char host[FTC_HOST_MAX];
    int port;
    int rc = resolve_opts(&o, opts);
    if (rc == 0) {
        rc = ftc__addr_split(addr, -1, host, sizeof(host), &port);
    }
    if (rc != 0) {
        return ftc__adderr(rc, "store connect");
    }
    ftc_store_client *c = ftc__calloc(1, sizeof(*c));
    ftc__store_core *core = ftc__calloc(1, sizeof(*core));
    if (c == NULL || core == NULL) {
        ftc__free(c);
        ftc__free(core);
        return ftc__seterr(FTC_ENOMEM, "store connect: client");
    }
    core->opts = o;
    core->cancel.fd = -1;
    if (o.token != NULL) {
        snprintf(core->token, sizeof(core->token), "%s", o.token);
        core->opts.token = core->token;
    }
    pthread_mutex_init(&core->lock, NULL);
    rc = ftc__store_conn_init(&core->conn, host, port, &core->opts);
    rc = rc != 0 ? rc : ftc__event_open(&core->cancel);
    if (rc == 0) {
        rc = ftc__store_conn_ready(&core->conn, FTC_DEADLINE_NEVER,
                                   &core->cancel);
    }
    if (rc != 0) {
        core_free(core);
        ftc__free(c);
        return ftc__adderr(rc, "store connect %s", addr);
    }
    c->magic = FTC__STORE_CLIENT_MAGIC;
    c->core = core;
    *out = c;
    return 0;
}

int ftc_store_client_prefix(ftc_store_client *base, const char *prefix,
                            ftc_store_client **out)
{
    ftc__clearerr();
    if (out == NULL || !valid(base)) {
        return ftc__seterr(FTC_EMISUSE, "store prefix: %s",
                           out == NULL ? "out is NULL" : "not a store client");
    }
    *out = NULL;
    if (prefix == NULL) {
        return ftc__seterr(FTC_EINVAL, "store prefix: prefix is NULL");
    }
    ftc_store_client *v = ftc__calloc(1, sizeof(*v));
    size_t blen = base->prefix != NULL ? strlen(base->prefix) + 1 : 0;
    size_t plen = strlen(prefix);
    char *joined = ftc__malloc(blen + plen + 1);
    if (v == NULL || joined == NULL) {
        ftc__free(v);
        ftc__free(joined);
        return ftc__seterr(FTC_ENOMEM, "store prefix '%s'", prefix);
    }
    /* Views nest like PrefixStore(b, PrefixStore(a, s)): "a/b/key". */
    if (blen > 0) {
        memcpy(joined, base->prefix, blen - 1);
        joined[blen - 1] = '/';
    }
    memcpy(joined + blen, prefix, plen + 1);
    v->magic = FTC__STORE_CLIENT_MAGIC;
    v->core = base->core;
    v->is_view = 1;
    v->prefix = joined;
    *out = v;
    return 0;
}

void ftc_store_client_close(ftc_store_client *client)
{
    if (client == NULL) {
        return;
    }
    if (!valid(client)) {
        FTC_LOG_ERROR("store.misuse", "close of an invalid store client");
        return;
    }
    client->magic = 0;
    if (!client->is_view) {
        core_free(client->core);
    }
    ftc__free(client->prefix);
    ftc__free(client);
}

void ftc_store_client_cancel(ftc_store_client *client)
{
    if (!valid(client)) {
        return;
    }
    ftc__store_conn_cancel(&client->core->conn, &client->core->cancel);
}

int ftc__store_call_begin(ftc__store_call *k, ftc_store_client *client,
                          const char *op, const char *const *keys, size_t nkeys,
                          int64_t timeout_ms, int flags)
{
    ftc__clearerr();
    memset(k, 0, sizeof(*k));
    k->op = op;
    if (!valid(client)) {
        return ftc__seterr(FTC_EMISUSE, "store %s: not a store client", op);
    }
    char call[48];
    snprintf(call, sizeof(call), "ftc_store_client_%s", op);
    int rc = ftc__timeout_check(timeout_ms, call);
    if (rc != 0) {
        return rc;
    }
    if ((flags & FTC__CALL_V2_ONLY) &&
        client->core->opts.dialect == FTC_STORE_DIALECT_V1) {
        return ftc__seterr(FTC_ENOTSUP,
                           "store %s: PyTorch 1.13 servers (dialect V1) have "
                           "no such query",
                           op);
    }
    if (nkeys > 0 && keys == NULL) {
        return ftc__seterr(FTC_EINVAL, "store %s: keys is NULL", op);
    }
    for (size_t i = 0; i < nkeys; i++) {
        if (keys[i] == NULL) {
            return ftc__seterr(FTC_EINVAL, "store %s: key %zu is NULL", op, i);
        }
    }
    ftc__store_core *core = client->core;
    k->core = core;
    k->conn = &core->conn;
    k->cancel = &core->cancel;
    k->prefix = client->prefix;
    k->timeout_ms = ftc__timeout_resolve(timeout_ms, core->opts.timeout_ms);
    k->dl = ftc__deadline_in_ms(k->timeout_ms);
    k->keys = keys;
    k->nkeys = nkeys;
    pthread_mutex_lock(&core->lock);
    ftc__store_conn_enter(k->conn, &core->cancel);
    rc = ftc__store_conn_ready(k->conn, k->dl, k->cancel);
    if (rc != 0) {
        ftc__store_conn_leave(k->conn);
        pthread_mutex_unlock(&core->lock);
        return ftc__adderr(rc, "store %s", op);
    }
    return 0;
}

/* "a, p/b, c" (view prefixes included), cut short when long. */
static void format_keys(const ftc__store_call *k, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < k->nkeys && at + 4 < cap; i++) {
        int n = snprintf(out + at, cap - at, "%s%s%s%s", i > 0 ? ", " : "",
                         k->prefix ? k->prefix : "", k->prefix ? "/" : "",
                         k->keys[i]);
        at += n > 0 ? (size_t)n : 0;
    }
    if (at >= cap - 1) {
        memcpy(out + cap - 4, "...", 4);
    }
}

int ftc__store_call_end(ftc__store_call *k, int rc)
{
    /* A request that failed half-encoded must not reach the next call. */
    ftc__store_req_reset(&k->conn->req);
    ftc__store_conn_leave(k->conn);
    pthread_mutex_unlock(&k->core->lock);
    if (rc == 0) {
        return 0;
    }
    char keys[200];
    format_keys(k, keys, sizeof(keys));
    if (rc == FTC_ETIMEDOUT) {
        return ftc__seterr(rc, "%s timeout after %lld ms, keys: %s", k->op,
                           (long long)k->timeout_ms, keys);
    }
    return ftc__adderr(rc, "store %s%s%s", k->op, k->nkeys ? " " : "", keys);
}

int ftc__store_call_wait(ftc__store_call *k)
{
    int rc = ftc__store_call_send(
        k, ftc__store_enc_keys(&k->conn->req, FTC__OP_WAIT, k->prefix, k->keys,
                               k->nkeys));
    return rc != 0 ? rc
                   : ftc__store_conn_recv_wait(k->conn, 0, k->dl, k->cancel);
}

/* Once the WAIT succeeded the fetch is owed an answer even if the deadline
 * passed meanwhile (the keys came just in time, or as the timed-out WAIT
 * was cancelled): it gets the cancel's grace instead. */
ftc__deadline ftc__store_call_fetch_deadline(const ftc__store_call *k)
{
    return ftc__deadline_expired(k->dl)
               ? ftc__deadline_in_ms(FTC__STORE_CANCEL_GRACE_MS)
               : k->dl;
}

/* An ftc server answers strictly in order and holds the requests behind a
 * parked WAIT, so WAIT and the fetch that needs its keys share one write
 * (one round trip). PyTorch servers answer a later request before a
 * parked WAIT, so there the fetch goes out only after STOP_WAITING. */
int ftc__store_call_wait_fetch(ftc__store_call *k, ftc__store_fetch_enc enc,
                               ftc__store_fetch_read read, void *ctx)
{
    ftc__store_conn *c = k->conn;
    int pipe = c->server == FTC__STORE_SERVER_FTC;
    int rc = pipe ? ftc__store_enc_keys(&c->req, FTC__OP_WAIT, k->prefix,
                                        k->keys, k->nkeys)
                  : ftc__store_call_wait(k);
    if (rc == 0 && !pipe) {
        k->dl = ftc__store_call_fetch_deadline(k);
    }
    rc = ftc__store_call_send(k, rc != 0 ? rc : enc(k, ctx));
    if (rc != 0 || !pipe) {
        return rc != 0 ? rc : read(k, ctx, k->dl, 0);
    }
    rc = ftc__store_conn_recv_wait(c, 1, k->dl, k->cancel);
    if (rc == FTC_ETIMEDOUT && c->held_replies) {
        /* Cancelled: the fetch was answered anyway; read past it. */
        c->held_replies = 0;
        return read(k, ctx, c->grace, 1);
    }
    if (rc != 0) {
        return rc;
    }
    k->dl = ftc__store_call_fetch_deadline(k);
    rc = read(k, ctx, k->dl, 0);
    if (rc == 0 && c->cancel_owed) {
        /* The keys came as the wait was cancelled: after the fetch comes
         * the cancel's own answer. */
        rc = ftc__store_conn_recv_cancel_owed(c);
    }
    return rc;
}

int ftc__store_call_send(ftc__store_call *k, int rc)
{
    return rc != 0 ? rc : ftc__store_conn_send(k->conn, k->dl, k->cancel);
}

int ftc__store_call_send_write(ftc__store_call *k, int rc)
{
    if (rc != 0 || !k->conn->locked) {
        return ftc__store_call_send(k, rc);
    }
    /* The server closes a connection whose write it refuses, and a write
     * has no reply: a probe behind it turns the refusal into this call's
     * error instead of the next call's. */
    uint32_t nonce = ftc__store_probe_nonce(ftc__rand_u64());
    rc = ftc__store_call_send(k, ftc__store_enc_ping(&k->conn->req, nonce));
    uint64_t reply = 0;
    rc = rc != 0 ? rc : ftc__store_conn_recv_uint(k->conn, 4, &reply, k->dl);
    return rc;
}

int ftc__store_call_i64(ftc__store_call *k, int rc, int64_t *v)
{
    rc = ftc__store_call_send(k, rc);
    return rc != 0 ? rc : ftc__store_conn_recv_i64(k->conn, v, k->dl);
}

int ftc__store_client_endpoint(const ftc_store_client *client,
                               ftc__store_endpoint *out)
{
    memset(out, 0, sizeof(*out));
    if (!valid(client)) {
        return ftc__seterr(FTC_EMISUSE, "store endpoint: not a store client");
    }
    const char *view = client->prefix != NULL ? client->prefix : "";
    if (strlen(view) >= sizeof(out->view)) {
        return ftc__seterr(FTC_EINVAL,
                           "store endpoint: the view prefix is %zu bytes "
                           "(at most %zu)",
                           strlen(view), sizeof(out->view) - 1);
    }
    const ftc__store_core *core = client->core;
    snprintf(out->host, sizeof(out->host), "%s", core->conn.host);
    out->port = core->conn.port;
    out->opts = core->opts;
    out->opts.token = NULL;
    snprintf(out->token, sizeof(out->token), "%s", core->token);
    snprintf(out->view, sizeof(out->view), "%s", view);
    return 0;
}

int ftc__store_client_cancel_fd(const ftc_store_client *client)
{
    return valid(client) ? client->core->cancel.fd : -1;
}

int ftc__store_client_reach(const ftc__store_endpoint *ep,
                            ftc_store_client **conn, ftc_store_client **out)
{
    *conn = NULL;
    *out = NULL;
    char addr[FTC_HOST_MAX + 16];
    bool v6 = strchr(ep->host, ':') != NULL;
    snprintf(addr, sizeof(addr), v6 ? "[%s]:%d" : "%s:%d", ep->host, ep->port);
    ftc_store_client_opts o = ep->opts;
    o.token = ep->token[0] != '\0' ? ep->token : NULL;
    int rc = ftc_store_client_connect(addr, &o, conn);
    if (rc != 0 || ep->view[0] == '\0') {
        *out = *conn;
        return rc;
    }
    rc = ftc_store_client_prefix(*conn, ep->view, out);
    if (rc != 0) {
        ftc_store_client_close(*conn);
        *conn = NULL;
    }
    return rc;
}
