/* The tcp backend: building a group from peer addresses, its table, and
 * tearing it down. */
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "pg/tcp/tcp_int.h"

static int check_device(void *impl, int device)
{
    (void)impl;
    /* Sockets move bytes the CPU can address; anything else needs a
     * backend of its own (NCCL, oneCCL) or staging by the caller. */
    int rc = ftc_device_require(device, FTC_DEVCAP_HOST_ACCESS);
    if (rc != 0) {
        return ftc__adderr(rc, "tcp backend cannot move %s buffers",
                           ftc_device_kind_name(device));
    }
    return 0;
}

static void tcp_destroy(void *impl);

static int tcp_wait(void *impl, ftc_work *w, int64_t deadline_ns)
{
    return ftc__tcp_wait(impl, w, (ftc__deadline){deadline_ns});
}

static int tcp_submit(void *impl, ftc_pg_backend_request *request,
                      const ftc_pg_request *desc)
{
    (void)desc; /* tcp reads the internal op */
    return ftc__tcp_submit(impl, request);
}

#define ALL_BITS(n) ((uint32_t)((1ull << (n)) - 1u))

const ftc_pg_backend ftc__tcp_backend = {
    .abi_version = FTC_PG_BACKEND_ABI_VERSION,
    .struct_size = sizeof(ftc_pg_backend),
    .name = "tcp",
    /* Every collective, dtype and op; any device kind the device layer
     * says is host-addressable (check_device). */
    .colls = ALL_BITS(FTC_PG_COLL_COUNT) & ~1u,
    .dtypes = ALL_BITS(FTC_DTYPE_COUNT),
    .ops = ALL_BITS(FTC_OP_COUNT),
    .devices = ALL_BITS(FTC_DEVICE_KIND_COUNT),
    .create = ftc__tcp_create,
    .check_device = check_device,
    .submit = tcp_submit,
    .wait = tcp_wait,
    .abort = ftc__tcp_abort,
    .status = ftc__tcp_status,
    .destroy = tcp_destroy,
    .failed_peers = ftc__tcp_failed_peers,
};

/* ---------------------------------------------------------------- listen */

/* The address peers should dial when the caller named none. */
static void default_host(char *out, size_t cap)
{
    ftc__pg_env env;
    ftc__pg_env_read(&env);
    if (env.host != NULL && env.host[0] != '\0') {
        snprintf(out, cap, "%s", env.host);
        return;
    }
    snprintf(out, cap, "127.0.0.1");
    char name[256];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (gethostname(name, sizeof(name)) != 0 ||
        getaddrinfo(name, NULL, &hints, &res) != 0) {
        FTC_LOG_WARN("pg.host", "cannot resolve this host's name; peers "
                                "will dial 127.0.0.1 (set FTC_PG_HOST)");
        return;
    }
    char buf[FTC_HOST_MAX + 16];
    ftc__addr_format(res->ai_addr, buf, sizeof(buf));
    freeaddrinfo(res);
    /* ftc__addr_format adds the port (0): keep the host part. */
    char host[FTC_HOST_MAX];
    int port;
    if (ftc__addr_split(buf, -1, host, sizeof(host), &port) == 0) {
        snprintf(out, cap, "%s", host);
    }
}

int ftc__pg_listen(const char *host, ftc__pg_listener *l)
{
    char h[FTC_HOST_MAX];
    if (host != NULL && host[0] != '\0') {
        snprintf(h, sizeof(h), "%s", host);
    } else {
        default_host(h, sizeof(h));
    }
    memset(l, 0, sizeof(*l));
    l->fd = -1;
    int rc = ftc__sock_listen(h, 0, SOMAXCONN, &l->fd, &l->port);
    if (rc != 0) {
        return ftc__adderr(rc, "process group listener");
    }
    snprintf(l->addr, sizeof(l->addr), strchr(h, ':') ? "[%s]:%d" : "%s:%d", h,
             l->port);
    return 0;
}

void ftc__pg_listener_close(ftc__pg_listener *l)
{
    if (l != NULL && l->fd >= 0) {
        close(l->fd);
        l->fd = -1;
    }
}

/* ---------------------------------------------------------------- create */

/* Poll before sleeping only when every local rank can have a core
 * (ftc__pg_spin_ns; docs/decisions.md has the measurements). */
static int64_t choose_spin_ns(const ftc_pg_opts *o, const char *const *addrs,
                              int rank, int size)
{
    if (o->spin_us != FTC_PG_SPIN_AUTO) {
        return ftc__pg_spin_ns(o, 1);
    }
    char mine[FTC_HOST_MAX], other[FTC_HOST_MAX];
    int port, local = 0;
    if (ftc__addr_split(addrs[rank], -1, mine, sizeof(mine), &port) != 0) {
        return 0;
    }
    for (int i = 0; i < size; i++) {
        if (ftc__addr_split(addrs[i], -1, other, sizeof(other), &port) == 0 &&
            strcmp(mine, other) == 0) {
            local++;
        }
    }
    return ftc__pg_spin_ns(o, local);
}

static void free_group(ftc__tcp *g)
{
    for (int i = 0; g->coll != NULL && i < g->size * g->streams; i++) {
        ftc__chan_close(&g->coll[i]);
    }
    for (int p = 0; g->side != NULL && p < g->size; p++) {
        ftc__chan_close(&g->side[p]);
    }
    ftc__p2p_free(g);
    ftc__plan_free(&g->plan);
    ftc__free(g->coll);
    ftc__free(g->side);
    ftc__free(g->pong);
    ftc__free(g->blame);
    ftc__free(g->held_abort.blame);
    ftc__scratch_free(&g->scratch);
    ftc__sched_hosts_free(&g->hosts);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->user_cv);
    pthread_cond_destroy(&g->pt_cv);
    ftc__free(g);
}

static void tcp_destroy(void *impl)
{
    ftc__tcp *g = impl;
    ftc__tcp_engine_stop(g);
    free_group(g);
}

static int alloc_group(ftc__tcp **out, ftc_pg *pg, uint64_t group_id)
{
    ftc__tcp *g = ftc__calloc(1, sizeof(*g));
    if (g == NULL) {
        return ftc__seterr(FTC_ENOMEM, "process group: out of memory");
    }
    g->pg = pg;
    g->rank = pg->rank;
    g->size = pg->size;
    g->streams = pg->opts.streams;
    g->group_id = group_id;
    g->epoch = pg->opts.epoch;
    g->auth = pg->token != NULL;
    g->protect = g->auth ? pg->opts.protect : FTC_PG_PROTECT_OFF;
    g->transport = pg->opts.transport;
    g->epfd = -1;
    g->doorbell.fd = -1;
    g->inbox_tail = &g->inbox;
    g->queue_tail = &g->queue;
    g->cbq_tail = &g->cbq;
    g->unexp_tail = &g->unexp;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->user_cv, &ca);
    pthread_cond_init(&g->pt_cv, &ca);
    pthread_condattr_destroy(&ca);
    int nch = g->size * g->streams;
    g->coll = ftc__calloc((size_t)nch, sizeof(*g->coll));
    g->side = ftc__calloc((size_t)g->size, sizeof(*g->side));
    g->pong = ftc__calloc((size_t)g->size, sizeof(*g->pong));
    g->blame = ftc__calloc((size_t)g->size, sizeof(*g->blame));
    g->held_abort.blame = ftc__calloc((size_t)g->size, sizeof(bool));
    int rc = (g->coll && g->side && g->pong && g->blame && g->held_abort.blame)
                 ? ftc__plan_init(&g->plan, nch)
                 : ftc__seterr(FTC_ENOMEM, "process group: out of memory");
    if (rc == 0 && g->auth) {
        rc = ftc__auth_key(pg->token, g->key);
    }
    if (rc == 0 && !g->auth &&
        (pg->opts.protect == FTC_PG_PROTECT_MAC ||
         pg->opts.protect == FTC_PG_PROTECT_ENCRYPT)) {
        /* Asked for by name, protection must not quietly not happen. */
        rc = ftc__seterr(FTC_EINVAL,
                         "message protection '%s' needs a token (FTC_TOKEN or "
                         "ftc_pg_opts.token): it keys the tags",
                         pg->opts.protect == FTC_PG_PROTECT_MAC ? "mac"
                                                                : "encrypt");
    }
    for (int i = 0; g->coll != NULL && i < nch; i++) {
        g->coll[i].fd = -1;
    }
    for (int p = 0; g->side != NULL && p < g->size; p++) {
        g->side[p].fd = -1;
    }
    if (rc != 0) {
        free_group(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* Socket options and buffers of every connected channel. */
static int prepare_chans(ftc__tcp *g)
{
    for (int i = 0; i < g->size * (g->streams + 1); i++) {
        ftc__chan *c = i < g->size * g->streams
                           ? &g->coll[i]
                           : &g->side[i - g->size * g->streams];
        if (c->fd < 0) {
            continue;
        }
        int rc = ftc__chan_tune(g, c);
        if (rc != 0) {
            return rc;
        }
        c->stage = ftc__malloc(FTC__STAGE_CAP);
        if (c->stage == NULL) {
            return ftc__seterr(FTC_ENOMEM, "process group: out of memory");
        }
        c->readable = c->writable = true;
    }
    return 0;
}

/* Hands the members the set-up blamed to the create's rendezvous. */
static void report_blame(const ftc__tcp *g, ftc_pg_backend_rendezvous *rv)
{
    int n = ftc__pg_blame_list(g->blame, g->size, NULL, 0);
    int *ranks = n > 0 ? ftc__calloc((size_t)n, sizeof(*ranks)) : NULL;
    if (ranks != NULL) {
        ftc__pg_blame_list(g->blame, g->size, ranks, n);
        ftc_pg_backend_blame(rv, ranks, n);
    }
    ftc__free(ranks);
}

int ftc__tcp_build(ftc_pg *pg, ftc__pg_listener *l, const char *const *addrs,
                   const uint64_t *host_keys, uint64_t group_id,
                   int64_t deadline_ns, const ftc__event *cancel,
                   ftc_pg_backend_rendezvous *rv, void **impl)
{
    *impl = NULL;
    int rc = ftc__tcp_check_congestion(&pg->opts);
    ftc__tcp *g = NULL;
    if (rc == 0) {
        rc = alloc_group(&g, pg, group_id);
    }
    if (rc == 0) {
        rc = ftc__tcp_hosts(g, host_keys);
    }
    if (rc == 0) {
        g->spin_ns = choose_spin_ns(&pg->opts, addrs, pg->rank, pg->size);
        g->spin_cur = g->spin_ns;
        g->setup_cancel = cancel;
        rc = ftc__mesh_connect(g, l, addrs, (ftc__deadline){deadline_ns});
    }
    if (rc == 0) {
        rc = ftc__shm_connect(g, (ftc__deadline){deadline_ns});
    }
    if (g != NULL) {
        g->setup_cancel = NULL;
    }
    ftc__pg_listener_close(l);
    if (rc == 0) {
        rc = prepare_chans(g);
    }
    if (rc == 0) {
        rc = ftc__tcp_engine_start(g);
    }
    if (rc != 0) {
        if (g != NULL) {
            if (rv != NULL && rc != FTC_ECANCELED) {
                report_blame(g, rv);
            }
            ftc__tcp_engine_stop(g);
            free_group(g);
        }
        return rc;
    }
    *impl = g;
    return 0;
}

int ftc__pg_create_from_peers(ftc_pg **out, ftc__pg_listener *l,
                              const char *const *addrs,
                              const uint64_t *host_keys, int rank, int size,
                              uint64_t group_id, const int *parent_ranks,
                              const ftc_pg_opts *opts)
{
    *out = NULL;
    ftc_pg *pg = ftc__calloc(1, sizeof(*pg));
    int rc = pg == NULL ? ftc__seterr(FTC_ENOMEM, "out of memory") : 0;
    if (rc == 0) {
        rc = ftc__pg_init(pg, rank, size, parent_ranks, opts);
    }
    if (rc == 0) {
        snprintf(pg->backend, sizeof(pg->backend), "tcp");
        pg->opts.backend = pg->backend;
        pg->ops = &ftc__tcp_backend;
        ftc__deadline dl = ftc__deadline_from_timeout(
            pg->opts.connect_timeout_ms, pg->opts.connect_timeout_ms);
        rc = ftc__tcp_build(pg, l, addrs, host_keys, group_id, dl.ns, NULL,
                            NULL, &pg->impl);
    } else {
        ftc__pg_listener_close(l);
    }
    if (rc != 0) {
        if (pg != NULL) {
            pg->impl = NULL;
            ftc__pg_free(pg);
        }
        return rc;
    }
    *out = pg;
    return 0;
}

#ifdef FTC_TESTING
void ftc__pg_testing_break_link(ftc_pg *pg, int peer)
{
    ftc__tcp *g = pg->impl;
    for (int s = 0; s < g->streams; s++) {
        ftc__chan *c = &g->coll[ftc__chan_id(g, peer, s)];
        if (c->fd >= 0) {
            shutdown(c->fd, SHUT_RDWR);
        }
    }
}
#endif
