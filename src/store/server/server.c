/* The store server's lifecycle: options, listen, the loop thread, accept,
 * the per-iteration pass (serve woken connections, then flush every reply
 * batch), published stats, and a stop that closes every handle. */
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

#include "store/server/server_int.h"

#define SERVER_MAGIC 0x53545253u /* "STRS" */

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

void ftc_store_server_opts_init(ftc_store_server_opts *o)
{
    if (o == NULL) {
        return;
    }
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->backlog = INT_MAX; /* the kernel caps it at net.core.somaxconn */
    o->max_key_bytes = 64 * KIB;
    o->max_value_bytes = 256 * MIB;
    o->max_keys_per_request = 128 * KIB;
    o->max_total_bytes = 4 * GIB;
    o->max_connections = 100000;
    o->max_output_bytes = 1 * GIB;
    o->max_request_bytes = FTC_SIZE_DEFAULT; /* computed from the others */
    o->handshake_timeout_ms = 10000;
    o->max_strangers_per_address = 256;
}

/* Lays in over the defaults into o; FTC_EINVAL for a bad value. */
static int settle_opts(ftc_store_server_opts *o,
                       const ftc_store_server_opts *in)
{
    ftc_store_server_opts d;
    ftc_store_server_opts_init(&d);
    *o = d;
    int rc = FTC__OPTS_MERGE(o, in, ftc_store_server_opts, max_request_bytes);
    if (rc != 0) {
        return rc;
    }
    size_t *fields[] = {&o->max_key_bytes,
                        &o->max_value_bytes,
                        &o->max_keys_per_request,
                        &o->max_total_bytes,
                        &o->max_connections,
                        &o->max_output_bytes,
                        &o->max_strangers_per_address};
    const size_t *defaults[] = {&d.max_key_bytes,
                                &d.max_value_bytes,
                                &d.max_keys_per_request,
                                &d.max_total_bytes,
                                &d.max_connections,
                                &d.max_output_bytes,
                                &d.max_strangers_per_address};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (*fields[i] == FTC_SIZE_DEFAULT) {
            *fields[i] = *defaults[i];
        }
        if (*fields[i] == 0) {
            return ftc__seterr(FTC_EINVAL,
                               "ftc_store_server_opts: a limit is 0 (each "
                               "max_* field must be >= 1)");
        }
    }
    FTC__OPT_DEFAULT(o, &d, handshake_timeout_ms, FTC_TIMEOUT_DEFAULT);
    rc = ftc__timeout_check(o->handshake_timeout_ms,
                            "ftc_store_server_opts.handshake_timeout_ms");
    if (rc != 0) {
        return rc;
    }
    if (o->backlog < 0) {
        return ftc__seterr(FTC_EINVAL, "backlog %d is negative", o->backlog);
    }
    if (o->port < 0 || o->port > 65535) {
        return ftc__seterr(FTC_EINVAL, "port %d out of range", o->port);
    }
    if (o->max_key_bytes > SIZE_MAX / 4 || o->max_value_bytes > SIZE_MAX / 4) {
        return ftc__seterr(FTC_EINVAL, "key or value limit too large");
    }
    size_t one_set = o->max_value_bytes + o->max_key_bytes + 64;
    if (o->max_request_bytes == FTC_SIZE_DEFAULT) {
        size_t cas = one_set + o->max_value_bytes;
        o->max_request_bytes = cas > 512 * MIB ? cas : 512 * MIB;
    } else if (o->max_request_bytes < one_set) {
        return ftc__seterr(FTC_EINVAL,
                           "max_request_bytes %zu < %zu (one largest SET)",
                           o->max_request_bytes, one_set);
    }
    return 0;
}

/* ------------------------------------------------------------ loop side */

static store_conn *conn_of(ftc__kv_client *kc)
{
    return (store_conn *)(void *)((char *)kc - offsetof(store_conn, kv));
}

static void on_kv_ready(void *ctx, ftc__kv_client *kc)
{
    (void)ctx;
    ftc__conn_unpark(conn_of(kc), FTC__WAIT_STOP_WAITING);
}

/* 1.13 watch events: [u8 type][key][old][new], pushed outside the FIFO of
 * replies, on the watching (callback) connection. */
static void on_kv_watch(void *ctx, ftc__kv_client *kc, int type,
                        ftc__wire_str key, ftc__wire_str old,
                        ftc__wire_str new_value)
{
    (void)ctx;
    store_conn *c = conn_of(kc);
    ftc__out_u8(c, (uint8_t)type);
    ftc__out_str(c, key.p, key.len);
    ftc__out_str(c, old.p, old.len);
    ftc__out_str(c, new_value.p, new_value.len);
}

/* How many connections the server can hold: max_connections, within what
 * the process may open. The soft limit on open files is raised to the
 * hard one first (a store holds a descriptor per client; 1,024 is a
 * common default), and some are kept for everything else. */
static size_t connection_limit(size_t max_connections)
{
    enum { KEEP = 64 };
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return max_connections;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
            FTC_LOG_INFO("store.nofile",
                         "open files limit raised from %llu to "
                         "%llu",
                         (unsigned long long)was,
                         (unsigned long long)rl.rlim_max);
        } else {
            rl.rlim_cur = was;
        }
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur <= KEEP) {
        return max_connections;
    }
    size_t fit = (size_t)(rl.rlim_cur - KEEP);
    return fit < max_connections ? fit : max_connections;
}

static void on_connection(uv_stream_t *listener, int status)
{
    ftc_store_server *srv = listener->data;
    if (status < 0) {
        FTC_LOG_WARN("store.accept", "%s", uv_strerror(status));
        return;
    }
    store_conn *c = ftc__conn_new(srv);
    if (c == NULL) {
        /* The connection stays in the kernel queue until memory frees. */
        FTC_LOG_ERROR("store.nomem", "no memory to accept a connection");
        return;
    }
    int rc = uv_accept(listener, (uv_stream_t *)&c->tcp);
    if (rc != 0) {
        ftc__conn_close(c, FTC_LOG_WARN, "store.accept", uv_strerror(rc));
        return;
    }
    if (srv->live.connections >= srv->conn_limit &&
        ftc__store_auth_evict_stranger(srv)) {
        srv->live.refused++;
    }
    if (srv->live.connections >= srv->conn_limit) {
        char why[96];
        snprintf(why, sizeof(why), "%llu connections open = limit",
                 (unsigned long long)srv->live.connections);
        srv->live.refused++;
        ftc__conn_close(c, FTC_LOG_WARN, "store.connlimit", why);
        return;
    }
    ftc__conn_start(c);
}

/* Runs once per loop iteration, after the I/O callbacks: connections whose
 * wait ended serve their held input, then each connection's replies of
 * this iteration go out in one write; a write that drains a connection
 * held back for its unsent replies lets it serve its input again. */
static void on_check(uv_check_t *h)
{
    ftc_store_server *srv = h->data;
    while (!ftc__list_empty(&srv->ready) || !ftc__list_empty(&srv->dirty)) {
        while (!ftc__list_empty(&srv->ready)) {
            store_conn *c =
                FTC_LIST_ENTRY(srv->ready.next, store_conn, ready_node);
            ftc__list_remove(&c->ready_node);
            ftc__conn_process(c);
        }
        while (!ftc__list_empty(&srv->dirty)) {
            store_conn *c =
                FTC_LIST_ENTRY(srv->dirty.next, store_conn, dirty_node);
            ftc__list_remove(&c->dirty_node);
            ftc__out_flush(c);
        }
    }
    uv_idle_stop(&srv->kick);
    srv->live.keys = ftc__kv_num_keys(srv->kv);
    srv->live.bytes = ftc__kv_bytes(srv->kv);
    pthread_mutex_lock(&srv->stats_lock);
    srv->shared = srv->live;
    pthread_mutex_unlock(&srv->stats_lock);
}

static void on_kick(uv_idle_t *h)
{
    (void)h; /* its being active is the point: see ftc__server_kick */
}

void ftc__server_kick(ftc_store_server *srv)
{
    uv_idle_start(&srv->kick, on_kick);
}

static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) {
        uv_close(h, NULL);
    }
}

static void on_stop(uv_async_t *h)
{
    ftc_store_server *srv = h->data;
    while (!ftc__list_empty(&srv->conns)) {
        store_conn *c = FTC_LIST_ENTRY(srv->conns.next, store_conn, node);
        ftc__conn_close(c, FTC_LOG_DEBUG, NULL, NULL);
    }
    /* Connections that were never started (refused) close on their own;
     * what is left is the listener, this async and the check handle. */
    uv_walk(&srv->loop, close_handle, NULL);
}

static void *loop_main(void *arg)
{
    ftc_store_server *srv = arg;
    uv_run(&srv->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* -------------------------------------------------------- caller side */

/* Closes whatever handles exist, runs the loop until they are closed and
 * frees the server. */
static void destroy(ftc_store_server *srv, int loop_ready)
{
    if (loop_ready) {
        uv_walk(&srv->loop, close_handle, NULL);
        uv_run(&srv->loop, UV_RUN_DEFAULT);
        int rc = uv_loop_close(&srv->loop);
        if (FTC_NEVER(rc != 0)) {
            FTC_LOG_ERROR("store.stop", "loop close: %s", uv_strerror(rc));
        }
    }
    ftc__kv_free(srv->kv);
    ftc__store_auth_free(&srv->auth);
    ftc__free(srv->rbuf);
    ftc__free(srv->iov);
    pthread_mutex_destroy(&srv->stats_lock);
    srv->magic = 0;
    ftc__free(srv);
}

static int listen_on(ftc_store_server *srv)
{
    int fd;
    int rc = ftc__sock_listen(srv->opts.bind_host, srv->opts.port,
                              srv->opts.backlog, &fd, &srv->port);
    if (rc != 0) {
        return rc;
    }
    uv_tcp_init(&srv->loop, &srv->listener);
    srv->listener.data = srv;
    rc = uv_tcp_open(&srv->listener, fd);
    if (rc != 0) {
        close(fd);
        return ftc__seterr(FTC_ESYS, "uv_tcp_open: %s", uv_strerror(rc));
    }
    rc = uv_listen((uv_stream_t *)&srv->listener, srv->opts.backlog,
                   on_connection);
    if (rc != 0) {
        return ftc__seterr(FTC_ESYS, "listen on port %d: %s", srv->port,
                           uv_strerror(rc));
    }
    return 0;
}

static int init_loop(ftc_store_server *srv)
{
    uv_async_init(&srv->loop, &srv->stop_async, on_stop);
    srv->stop_async.data = srv;
    uv_check_init(&srv->loop, &srv->check);
    srv->check.data = srv;
    uv_check_start(&srv->check, on_check);
    uv_idle_init(&srv->loop, &srv->kick);
    ftc__store_auth_start_sweeps(srv);
    return listen_on(srv);
}

int ftc_store_server_create(const ftc_store_server_opts *opts,
                            ftc_store_server **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "out is NULL");
    }
    *out = NULL;
    ftc_store_server *srv = ftc__calloc(1, sizeof(*srv));
    if (srv == NULL) {
        return ftc__seterr(FTC_ENOMEM, "store server");
    }
    pthread_mutex_init(&srv->stats_lock, NULL);
    ftc__list_init(&srv->conns);
    ftc__list_init(&srv->ready);
    ftc__list_init(&srv->dirty);
    ftc__list_init(&srv->strangers);
    ftc__store_hosts_init(srv);
    int rc = settle_opts(&srv->opts, opts);
    if (rc == 0) {
        rc = ftc__store_auth_init(&srv->auth, &srv->opts);
        srv->opts.token = NULL; /* only its key is kept */
        srv->opts.open_prefixes = NULL;
    }
    if (rc == 0 && srv->opts.bind_host == NULL && !srv->auth.has_token) {
        /* No token: nothing stops a stranger, so only this host may
         * connect unless the operator asks for more. */
        srv->opts.bind_host = "127.0.0.1";
    } else if (rc == 0 && srv->opts.bind_host != NULL &&
               strcmp(srv->opts.bind_host, "*") == 0) {
        srv->opts.bind_host = "";
    }
    if (rc == 0 && srv->opts.bind_host != NULL) {
        if (strlen(srv->opts.bind_host) >= sizeof(srv->bind_host)) {
            rc = ftc__seterr(FTC_EINVAL, "bind host too long");
        }
        snprintf(srv->bind_host, sizeof(srv->bind_host), "%s",
                 srv->opts.bind_host);
        srv->opts.bind_host = srv->bind_host;
    }
    if (rc != 0) {
        destroy(srv, 0);
        return rc;
    }
    srv->limits.max_key_bytes = srv->opts.max_key_bytes;
    srv->limits.max_value_bytes = srv->opts.max_value_bytes;
    srv->limits.max_keys = srv->opts.max_keys_per_request;
    srv->limits.max_request_bytes = srv->opts.max_request_bytes;
    /* Every rank but the last of a CONTROL_BARRIER holds a connection
     * while it waits, so a larger world could never complete. */
    srv->limits.max_world = srv->opts.max_connections;
    srv->conn_limit = connection_limit(srv->opts.max_connections);
    static const ftc__kv_hooks hooks = {on_kv_ready, on_kv_watch};
    srv->kv = ftc__kv_new(&hooks, srv, srv->opts.max_total_bytes);
    srv->rbuf = ftc__malloc(FTC__STORE_RBUF);
    if (srv->kv == NULL || srv->rbuf == NULL) {
        destroy(srv, 0);
        return ftc__seterr(FTC_ENOMEM, "store server");
    }
    rc = uv_loop_init(&srv->loop);
    if (rc != 0) {
        destroy(srv, 0);
        return ftc__seterr(FTC_ESYS, "uv_loop_init: %s", uv_strerror(rc));
    }
    rc = init_loop(srv);
    if (rc == 0) {
        rc = ftc__thread_start(&srv->thread, "ftc-store", loop_main, srv);
    }
    if (rc != 0) {
        destroy(srv, 1);
        return rc;
    }
    srv->magic = SERVER_MAGIC;
    FTC_LOG_INFO("store.listen", "serving on %s port %d%s",
                 srv->bind_host[0] != '\0' ? srv->bind_host : "every interface",
                 srv->port,
                 srv->auth.has_token ? " (token required)" : " (no token)");
    *out = srv;
    return 0;
}

int ftc_store_server_port(const ftc_store_server *srv)
{
    if (srv == NULL || srv->magic != SERVER_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a store server");
    }
    return srv->port;
}

int ftc_store_server_stats_get(ftc_store_server *srv,
                               ftc_store_server_stats *out)
{
    ftc__clearerr();
    if (srv == NULL || srv->magic != SERVER_MAGIC || out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "not a store server");
    }
    pthread_mutex_lock(&srv->stats_lock);
    *out = srv->shared;
    pthread_mutex_unlock(&srv->stats_lock);
    return 0;
}

void ftc_store_server_destroy(ftc_store_server *srv)
{
    if (srv == NULL || FTC_NEVER(srv->magic != SERVER_MAGIC)) {
        return;
    }
    uv_async_send(&srv->stop_async);
    pthread_join(srv->thread, NULL);
    destroy(srv, 1);
}
