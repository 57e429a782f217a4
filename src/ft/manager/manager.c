/* The manager handle: options, create and destroy, the error latch, the
 * process group slot and the getters. The step's calls are in
 * manager_step.c, the registered state in manager_state.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft/manager/manager.h"

void ftc_manager_opts_init(ftc_manager_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->group_size = 1;
    o->min_replica_size = 1;
    o->world_size_mode = FTC_WORLD_DYNAMIC;
    o->timeout_ms = 60000;
    o->quorum_timeout_ms = 60000;
    o->connect_timeout_ms = 60000;
    o->heartbeat_interval_ms = 100;
    o->heal_sources = 2;
    o->heal_streams = 4;
    o->heal_chunk_bytes = (size_t)4 << 20;
    o->heal_threads = 2;
    o->heal_lend_ms = 2000;
}

void ftc_manager_quorum_opts_init(ftc_manager_quorum_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->timeout_ms = FTC_TIMEOUT_DEFAULT;
}

/* Copies text into a field of cap bytes; FTC_EINVAL names it if too long
 * (or missing when required). */
static int copy_str(char *dst, size_t cap, const char *src, const char *what,
                    bool required)
{
    if (src == NULL || src[0] == '\0') {
        dst[0] = '\0';
        return required
                   ? ftc__seterr(FTC_EINVAL, "manager: %s is required", what)
                   : 0;
    }
    size_t n = strlen(src);
    if (n >= cap) {
        return ftc__seterr(FTC_EINVAL, "manager: %s is longer than %zu bytes",
                           what, cap - 1);
    }
    memcpy(dst, src, n + 1);
    return 0;
}

/* The caller's fields over the defaults; then each is checked. */
static int resolve_opts(ftc_manager *m, const ftc_manager_opts *in)
{
    int rc = 0;
    ftc_manager_opts d;
    ftc_manager_opts_init(&d);
    ftc_manager_opts o = d;
    FTC__CHECK(FTC__OPTS_MERGE(&o, in, ftc_manager_opts, heal_lend_ms));
    FTC__OPT_DEFAULT(&o, &d, timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, quorum_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, connect_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, heal_lend_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, heal_chunk_bytes, FTC_SIZE_DEFAULT);
    FTC__CHECK(ftc__timeout_check(o.timeout_ms, "ftc_manager_opts.timeout_ms"));
    FTC__CHECK(ftc__timeout_check(o.quorum_timeout_ms,
                                  "ftc_manager_opts.quorum_timeout_ms"));
    FTC__CHECK(ftc__timeout_check(o.connect_timeout_ms,
                                  "ftc_manager_opts.connect_timeout_ms"));
    if (o.heal_chunk_bytes == 0) {
        FTC__FAIL(FTC_EINVAL, "manager: heal_chunk_bytes 0 (>= 1)");
    }
    if (o.group_size < 1 || o.group_rank < 0 || o.group_rank >= o.group_size ||
        o.min_replica_size < 1 ||
        (o.world_size_mode != FTC_WORLD_DYNAMIC &&
         o.world_size_mode != FTC_WORLD_FIXED_WITH_SPARES) ||
        o.heartbeat_interval_ms < 1 || o.max_retries < -1 ||
        o.heal_sources < 1 || o.heal_sources > 16 || o.heal_streams < 1 ||
        o.heal_streams > 64 || o.heal_threads < 1 || o.heal_threads > 64 ||
        o.heal_port < 0 || o.heal_port > 65535 || o.heal_lend_ms < 1) {
        FTC__FAIL(FTC_EINVAL,
                  "manager: group_rank %d of group_size %d, "
                  "min_replica_size %lld, world_size_mode %d, "
                  "heartbeat_interval_ms %lld, max_retries %lld, "
                  "heal_sources %d (1..16), heal_streams %d "
                  "(1..64), heal_threads %d (1..64), heal_port "
                  "%d or heal_lend_ms %lld out of range",
                  o.group_rank, o.group_size, (long long)o.min_replica_size,
                  o.world_size_mode, (long long)o.heartbeat_interval_ms,
                  (long long)o.max_retries, o.heal_sources, o.heal_streams,
                  o.heal_threads, o.heal_port, (long long)o.heal_lend_ms);
    }
    const char *env[FTC__MANAGER_ENV_COUNT];
    ftc__manager_env_read(env);
    const char *host = o.advertise_host != NULL
                           ? o.advertise_host
                           : env[FTC__MANAGER_ENV_ADVERTISE_HOST];
    const char *token = o.token != NULL ? o.token : env[FTC__MANAGER_ENV_TOKEN];
    ftc__manager_report_open(m, env[FTC__MANAGER_ENV_EVENT_FD]);
    FTC__CHECK(copy_str(m->lighthouse, sizeof(m->lighthouse), o.lighthouse,
                        "lighthouse", true));
    FTC__CHECK(copy_str(m->job, sizeof(m->job), o.job, "job", false));
    FTC__CHECK(copy_str(m->base_id, sizeof(m->base_id), o.replica_id,
                        "replica_id", true));
    FTC__CHECK(copy_str(m->store_addr, sizeof(m->store_addr), o.store_addr,
                        "store_addr", true));
    FTC__CHECK(copy_str(m->store_prefix, sizeof(m->store_prefix),
                        o.store_prefix != NULL ? o.store_prefix : o.replica_id,
                        "store_prefix", true));
    FTC__CHECK(copy_str(m->host, sizeof(m->host),
                        host != NULL && host[0] != '\0' ? host : "127.0.0.1",
                        "advertise_host", true));
    FTC__CHECK(copy_str(m->token, sizeof(m->token), token, "token", false));
    const char *tls_cert =
        o.tls_cert != NULL ? o.tls_cert : env[FTC__MANAGER_ENV_TLS_CERT];
    const char *tls_key =
        o.tls_key != NULL ? o.tls_key : env[FTC__MANAGER_ENV_TLS_KEY];
    const char *tls_ca =
        o.tls_ca != NULL ? o.tls_ca : env[FTC__MANAGER_ENV_TLS_CA];
    FTC__CHECK(copy_str(m->tls_cert, sizeof(m->tls_cert), tls_cert, "tls_cert",
                        false));
    FTC__CHECK(
        copy_str(m->tls_key, sizeof(m->tls_key), tls_key, "tls_key", false));
    FTC__CHECK(copy_str(m->tls_ca, sizeof(m->tls_ca), tls_ca, "tls_ca", false));
    const char *insecure = env[FTC__MANAGER_ENV_INSECURE];
    o.insecure = o.insecure || (insecure != NULL && strcmp(insecure, "1") == 0);
    if (strchr(m->base_id, ':') != NULL) {
        FTC__FAIL(FTC_EINVAL,
                  "manager: replica_id '%s' contains ':' "
                  "(the manager appends ':' and a "
                  "random suffix)",
                  m->base_id);
    }
    o.lighthouse = m->lighthouse;
    o.job = m->job[0] != '\0' ? m->job : NULL;
    o.replica_id = m->base_id;
    o.store_addr = m->store_addr;
    o.store_prefix = m->store_prefix;
    o.advertise_host = m->host;
    o.token = m->token[0] != '\0' ? m->token : NULL;
    o.tls_cert = m->tls_cert[0] != '\0' ? m->tls_cert : NULL;
    o.tls_key = m->tls_key[0] != '\0' ? m->tls_key : NULL;
    o.tls_ca = m->tls_ca[0] != '\0' ? m->tls_ca : NULL;
    if (o.token != NULL) {
        FTC__CHECK(ftc__auth_key(o.token, m->seal_key));
        m->seal = true;
    }
    ftc_pg_opts_init(&m->pg_opts);
    FTC__CHECK_ADDERR(
        FTC__OPTS_MERGE(&m->pg_opts, o.pg_opts, ftc_pg_opts, token),
        "manager: pg_opts");
    /* An address given for healing is the process group's too; without
     * one the process group keeps its own default (FTC_PG_HOST, ...). */
    if (m->pg_opts.host == NULL && host != NULL && host[0] != '\0') {
        m->pg_opts.host = m->host;
    }
    /* The backend's name is copied: every rebuild of the cross-replica
     * group after a quorum change uses it, long after the caller's
     * string may be gone. */
    if (m->pg_opts.backend != NULL) {
        if (strlen(m->pg_opts.backend) >= sizeof(m->pg_backend)) {
            FTC__FAIL(FTC_EINVAL,
                      "manager: pg_opts.backend '%.40s' is longer "
                      "than %zu characters",
                      m->pg_opts.backend, sizeof(m->pg_backend) - 1);
        }
        snprintf(m->pg_backend, sizeof(m->pg_backend), "%s",
                 m->pg_opts.backend);
        m->pg_opts.backend = m->pg_backend;
    }
    m->pg_opts.timeout_ms = o.timeout_ms;
    m->pg_opts.connect_timeout_ms = o.connect_timeout_ms;
    o.pg_opts = &m->pg_opts;
    m->init_sync = !o.skip_init_sync;
    m->o = o;
fail:
    return rc;
}

/* Connections and servers: the group store, the lighthouse client, the
 * healing server and client. */
static int open_endpoints(ftc_manager *m)
{
    ftc_store_client_opts so;
    ftc_store_client_opts_init(&so);
    so.connect_timeout_ms = m->o.connect_timeout_ms;
    so.timeout_ms = m->o.timeout_ms;
    so.token = m->o.token;
    int rc = 0;
    FTC__CHECK_ADDERR(
        ftc_store_client_connect(m->store_addr, &so, &m->store_conn),
        "manager: group store %s", m->store_addr);
    FTC__CHECK(
        ftc_store_client_prefix(m->store_conn, m->store_prefix, &m->store));
    ftc_lighthouse_client_opts lo;
    ftc_lighthouse_client_opts_init(&lo);
    lo.job = m->o.job;
    lo.token = m->o.token;
    lo.timeout_ms = m->o.quorum_timeout_ms;
    lo.tls_ca = m->o.tls_ca;
    lo.insecure = m->o.insecure;
    FTC__CHECK(ftc_lighthouse_client_create(m->lighthouse, &lo, &m->lh));
    ftc__heal_server_opts ho = {0};
    ho.host = m->host;
    ho.port = m->o.heal_port;
    ho.threads = (unsigned)m->o.heal_threads;
    ho.token = m->o.token;
    ho.tls_cert = m->o.tls_cert;
    ho.tls_key = m->o.tls_key;
    FTC__CHECK(ftc__heal_server_start(&m->heal_srv, &ho));
    FTC__CHECK(ftc__heal_client_create(&m->heal_cli));
    FTC__CHECK(ftc__heal_client_tls(m->heal_cli, m->o.tls_ca, m->o.insecure));
fail:
    return rc;
}

static int start_threads(ftc_manager *m)
{
    int rc = 0;
    FTC__CHECK(ftc__thread_start(&m->quorum_thr, "ftc-mgr-quorum",
                                 ftc__manager_quorum_main, m));
    m->quorum_started = true;
    FTC__CHECK(ftc__thread_start(&m->watch_thr, "ftc-mgr-watch",
                                 ftc__manager_watch_main, m));
    m->watch_started = true;
fail:
    return rc;
}

static void init_sync_objects(ftc_manager *m)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_cond_init(&m->pg_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->pg_mu, NULL);
    pthread_mutex_init(&m->err_mu, NULL);
    pthread_mutex_init(&m->work_mu, NULL);
    pthread_mutex_init(&m->stats_mu, NULL);
}

int ftc_manager_create(const ftc_manager_opts *opts, ftc_manager **out)
{
    ftc__clearerr();
    if (out == NULL || opts == NULL) {
        return ftc__seterr(FTC_EMISUSE, "manager create: NULL argument");
    }
    *out = NULL;
    ftc_manager *m = ftc__calloc(1, sizeof(*m));
    if (m == NULL) {
        return ftc__seterr(FTC_ENOMEM, "manager");
    }
    m->magic = FTC__MGR_MAGIC;
    m->report_fd = -1;
    init_sync_objects(m);
    ftc__heal_state_init(&m->state);
    ftc__heal_state_init(&m->adopted);
    m->pg_quorum_id = -1;
    m->pg_blamed_quorum_id = -1;
    atomic_init(&m->quorum_id, -1);
    atomic_init(&m->replica_rank, -1);
    int rc = 0;
    FTC__CHECK(resolve_opts(m, opts));
    if (m->o.group_rank == 0) {
        snprintf(m->replica_id, sizeof(m->replica_id), "%s:%08x", m->base_id,
                 (unsigned)(ftc__rand_u64() & 0xffffffffu));
    }
    FTC__CHECK(open_endpoints(m));
    FTC__CHECK(start_threads(m));
    FTC_LOG_INFO("manager.start",
                 "%s rank %d/%d: store %s/%s, healing on %s, lighthouse %s",
                 m->base_id, m->o.group_rank, m->o.group_size, m->store_addr,
                 m->store_prefix, ftc__heal_server_address(m->heal_srv),
                 m->lighthouse);
    *out = m;
    return 0;
fail:
    /* The message is the failure's, not one destroy leaves. */
    FTC__KEEP_MESSAGE(ftc_manager_destroy(m));
    return rc;
}

/* Joins the quorum thread, cancelling its store call until it returns: a
 * cancel that finds no call in progress is dropped, so it is repeated. */
static void join_quorum_thread(ftc_manager *m)
{
    for (;;) {
        ftc_store_client_cancel(m->store_conn);
        pthread_mutex_lock(&m->pg_mu);
        if (m->rdv_store != NULL) {
            ftc_store_client_cancel(m->rdv_store);
        }
        pthread_mutex_unlock(&m->pg_mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (pthread_timedjoin_np(m->quorum_thr, NULL, &ts) == 0) {
            return;
        }
    }
}

static void stop_threads(ftc_manager *m)
{
    pthread_mutex_lock(&m->mu);
    bool busy = m->phase == FTC__MGR_RUNNING || m->phase == FTC__MGR_DONE;
    m->stop = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_lock(&m->work_mu);
    busy = busy || m->works != NULL;
    pthread_mutex_unlock(&m->work_mu);
    if (m->lh != NULL) {
        ftc_lighthouse_client_abort(m->lh);
    }
    if (m->heal_cli != NULL) {
        ftc__heal_client_abort(m->heal_cli);
    }
    if (m->heal_srv != NULL) {
        ftc__heal_server_close(m->heal_srv);
    }
    /* Idle (no round, no collective): the group is destroyed in good
     * order below, and its peers hear a BYE. An abort would cut short a
     * peer's last collective still reading what this rank sent (a group
     * that finished first failed the others' last step). */
    if (busy) {
        ftc__manager_abort_pg(m);
    }
    if (m->quorum_started) {
        join_quorum_thread(m);
    }
    if (m->watch_started) {
        pthread_join(m->watch_thr, NULL);
    }
    if (m->hb_started) {
        pthread_join(m->hb_thr, NULL);
    }
}

/* Releases every work not waited for (the group is aborted by now, so
 * each completes at once). */
static void drop_works(ftc_manager *m)
{
    while (m->works != NULL) {
        ftc_manager_work *w = m->works;
        m->works = w->next;
        if (w->work != NULL) {
            ftc_work_wait(w->work, 1000);
            ftc_work_release(w->work);
        }
        ftc__free(w);
    }
}

int ftc_manager_finish(ftc_manager *m)
{
    ftc__clearerr();
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "ftc_manager_finish: bad handle");
    }
    atomic_store(&m->finished, true);
    return 0;
}

void ftc_manager_destroy(ftc_manager *m)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return;
    }
    pthread_mutex_lock(&m->mu);
    bool joined = m->leader_joined;
    pthread_mutex_unlock(&m->mu);
    if (m->o.group_rank == 0 && joined) {
        /* Leave at once rather than by the heartbeat timeout, and before
         * the watch (this replica's presence) closes: the others then
         * learn of a goodbye, not of a dropped connection. The steps it
         * committed keep a quorum of laggards from committing them again
         * after it (the job's committed step, docs/protocol.md). */
        ftc_lighthouse_client_goodbye(m->lh, m->replica_id,
                                      atomic_load(&m->step),
                                      atomic_load(&m->finished), 1000, NULL);
    }
    stop_threads(m);
    drop_works(m);
    ftc__manager_report_result(m);
    /* The threads are joined; a borrower can still be a trainer thread
     * that calls into the manager while destroying it (misuse), so the
     * group is taken out as the quorum thread does it. */
    pthread_mutex_lock(&m->pg_mu);
    ftc_pg *pg = ftc__manager_pg_take_out_locked(m);
    pthread_mutex_unlock(&m->pg_mu);
    ftc_pg_destroy(pg);
    ftc__free(m->pg_members);
    ftc__heal_server_stop(m->heal_srv);
    ftc__heal_client_destroy(m->heal_cli);
    ftc_store_client_close(m->store);
    ftc_store_client_close(m->store_conn);
    ftc_lighthouse_client_destroy(m->lh);
    ftc__heal_state_fini(&m->state);
    ftc__heal_state_fini(&m->adopted);
    ftc__free(m->staging);
    ftc__manager_arrival_fini(&m->arrival);
    ftc_lighthouse_quorum_fini(&m->left_out_q);
    pthread_cond_destroy(&m->cv);
    pthread_cond_destroy(&m->pg_cv);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->pg_mu);
    pthread_mutex_destroy(&m->err_mu);
    pthread_mutex_destroy(&m->work_mu);
    pthread_mutex_destroy(&m->stats_mu);
    m->magic = 0;
    ftc__auth_wipe(m->seal_key, sizeof(m->seal_key));
    ftc__free(m);
}

/* ---------------------------------------------------------- group keys */

void ftc__manager_key(char *buf, size_t cap, int64_t k, const char *what, int g)
{
    if (g >= 0) {
        snprintf(buf, cap, "ftc/r/%lld/%s/%d", (long long)k, what, g);
    } else {
        snprintf(buf, cap, "ftc/r/%lld/%s", (long long)k, what);
    }
}

int64_t ftc__manager_left_ms(ftc__deadline dl)
{
    int64_t ms = ftc__deadline_left_ms(dl);
    return ms == INT64_MAX ? FTC_TIMEOUT_INFINITE : ms;
}

ftc__deadline ftc__manager_leader_grace(ftc__deadline dl)
{
    if (!ftc__deadline_is_never(dl)) {
        dl.ns += (int64_t)5000 * 1000000;
    }
    return dl;
}

int ftc__manager_gather(ftc_manager *m, int64_t k, const char *what,
                        size_t from, int64_t timeout_ms, ftc_store_value *vals)
{
    size_t n = (size_t)m->o.group_size;
    size_t count = from < n ? n - from : 0;
    char(*keys)[64] = ftc__calloc(n, 64);
    const char **kp = ftc__calloc(n, sizeof(*kp));
    int rc = 0;
    if (keys == NULL || kp == NULL) {
        FTC__FAIL(FTC_ENOMEM, "keys");
    }
    for (size_t g = from; g < n; g++) {
        ftc__manager_key(keys[g], 64, k, what, (int)g);
        kp[g] = keys[g];
    }
    ftc__deadline dl = ftc__deadline_in_ms(timeout_ms);
    FTC__CHECK(ftc_store_client_wait(m->store, kp + from, count, timeout_ms));
    FTC__CHECK(ftc_store_client_multi_get(
        m->store, kp + from, count, vals + from, ftc__manager_left_ms(dl)));
    for (size_t g = from; g < n; g++) {
        FTC__CHECK_ADDERR(
            ftc__manager_unseal(m, keys[g], vals[g].data, &vals[g].len),
            "group rank %zu's record", g);
    }
fail:
    ftc__free(kp);
    ftc__free(keys);
    return rc;
}

static const char seal_label[] = "ftc manager record v1";

int ftc__manager_put(ftc_manager *m, const char *key, const char *text,
                     size_t len, int64_t timeout_ms)
{
    if (!m->seal) {
        return ftc_store_client_set(m->store, key, text, len, timeout_ms);
    }
    char ctx[sizeof(m->store_prefix) + 80];
    snprintf(ctx, sizeof(ctx), "%s/%s", m->store_prefix, key);
    char *sealed = ftc__malloc(len + FTC__AUTH_SEAL_EXTRA);
    if (sealed == NULL) {
        return ftc__seterr(FTC_ENOMEM, "group record");
    }
    memcpy(sealed, text, len);
    ftc__auth_seal(m->seal_key, seal_label, ctx, text, len, sealed + len);
    int rc = ftc_store_client_set(m->store, key, sealed,
                                  len + FTC__AUTH_SEAL_EXTRA, timeout_ms);
    ftc__free(sealed);
    return rc;
}

int ftc__manager_unseal(const ftc_manager *m, const char *key, const void *rec,
                        size_t *len)
{
    if (!m->seal) {
        return 0;
    }
    char ctx[sizeof(m->store_prefix) + 80];
    snprintf(ctx, sizeof(ctx), "%s/%s", m->store_prefix, key);
    int rc = ftc__auth_unseal(m->seal_key, seal_label, ctx, rec, *len, len);
    return rc == 0 ? 0
                   : ftc__seterr(FTC_EAUTH,
                                 "the group store's %s is not sealed with the "
                                 "job's token (changed in the store, or "
                                 "another token)",
                                 key);
}

/* ------------------------------------------------------- latch, group */

static void latch(ftc_manager *m, int64_t quorum_id, int code, const char *fmt,
                  va_list ap) __attribute__((format(printf, 4, 0)));
static void latch(ftc_manager *m, int64_t quorum_id, int code, const char *fmt,
                  va_list ap)
{
    char msg[FTC__MGR_MSG_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    pthread_mutex_lock(&m->err_mu);
    bool first = m->err_code == 0;
    if (first) {
        m->err_code = code < 0 ? code : FTC_EPEER;
        m->err_quorum_id = quorum_id;
        memcpy(m->err_msg, msg, sizeof(msg));
    }
    pthread_mutex_unlock(&m->err_mu);
    if (first) {
        FTC_LOG_WARN("manager.error", "%s: step %lld votes no: %s", m->base_id,
                     (long long)atomic_load(&m->step), msg);
    }
}

void ftc__manager_latch(ftc_manager *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    latch(m, -1, code, fmt, ap);
    va_end(ap);
}

void ftc__manager_latch_for(ftc_manager *m, int64_t quorum_id, int code,
                            const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    latch(m, quorum_id, code, fmt, ap);
    va_end(ap);
}

#ifdef FTC_TESTING
void (*_Atomic ftc__manager_testing_before_abort)(void);
void (*_Atomic ftc__manager_testing_before_watch)(void);
#endif

ftc_pg *ftc__manager_pg_borrow_locked(ftc_manager *m)
{
    if (m->pg != NULL) {
        m->pg_users++;
    }
    return m->pg;
}

void ftc__manager_pg_give_back(ftc_manager *m)
{
    pthread_mutex_lock(&m->pg_mu);
    if (--m->pg_users == 0) {
        pthread_cond_broadcast(&m->pg_cv);
    }
    pthread_mutex_unlock(&m->pg_mu);
}

ftc_pg *ftc__manager_pg_take_out_locked(ftc_manager *m)
{
    ftc_pg *pg = m->pg;
    m->pg = NULL;
    while (m->pg_users > 0) {
        pthread_cond_wait(&m->pg_cv, &m->pg_mu);
    }
    return pg;
}

void ftc__manager_pg_abort_unlocked(ftc_pg *pg)
{
#ifdef FTC_TESTING
    void (*hook)(void) = atomic_load(&ftc__manager_testing_before_abort);
    if (hook != NULL) {
        hook();
    }
#endif
    ftc_pg_abort(pg);
}

void ftc__manager_abort_pg(ftc_manager *m)
{
    pthread_mutex_lock(&m->pg_mu);
    ftc_pg *pg = ftc__manager_pg_borrow_locked(m);
    pthread_mutex_unlock(&m->pg_mu);
    if (pg != NULL) {
        ftc__manager_pg_abort_unlocked(pg);
        ftc__manager_pg_give_back(m);
    }
}

bool ftc__manager_pause(ftc_manager *m, ftc__deadline until)
{
    pthread_mutex_lock(&m->mu);
    while (!m->stop && !ftc__deadline_expired(until)) {
        struct timespec ts = {until.ns / 1000000000, until.ns % 1000000000};
        pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    }
    bool go = !m->stop;
    pthread_mutex_unlock(&m->mu);
    return go;
}

void ftc_manager_report_error(ftc_manager *m, int code, const char *message)
{
    if (m != NULL && m->magic == FTC__MGR_MAGIC) {
        ftc__manager_latch(m, code, "%s",
                           message != NULL ? message
                                           : "reported by the trainer");
    }
}

int ftc_manager_errored(ftc_manager *m, char *msg, size_t cap)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return FTC_EMISUSE;
    }
    pthread_mutex_lock(&m->err_mu);
    int code = m->err_code;
    if (msg != NULL && cap > 0) {
        snprintf(msg, cap, "%s", code != 0 ? m->err_msg : "");
    }
    pthread_mutex_unlock(&m->err_mu);
    return code;
}

/* ------------------------------------------------------------- getters */

#define FTC_MGR_GETTER(name, field, none)                                      \
    int64_t ftc_manager_##name(const ftc_manager *m)                           \
    {                                                                          \
        return m != NULL && m->magic == FTC__MGR_MAGIC                         \
                   ? atomic_load(&((ftc_manager *)m)->field)                   \
                   : (none);                                                   \
    }
FTC_MGR_GETTER(current_step, step, 0)
FTC_MGR_GETTER(batches_committed, batches, 0)
FTC_MGR_GETTER(num_participants, num_participants, 0)
FTC_MGR_GETTER(replica_rank, replica_rank, -1)
FTC_MGR_GETTER(replica_world_size, replica_world_size, 0)
FTC_MGR_GETTER(quorum_id, quorum_id, -1)
#undef FTC_MGR_GETTER

bool ftc_manager_is_participating(const ftc_manager *m)
{
    return m != NULL && m->magic == FTC__MGR_MAGIC &&
           atomic_load(&((ftc_manager *)m)->participating);
}

bool ftc_manager_is_healing(const ftc_manager *m)
{
    return m != NULL && m->magic == FTC__MGR_MAGIC &&
           atomic_load(&((ftc_manager *)m)->healing);
}

static int copy_out(char *buf, size_t cap, const char *s)
{
    if (buf == NULL || cap == 0) {
        return ftc__seterr(FTC_EMISUSE, "manager: NULL buffer");
    }
    size_t n = strlen(s);
    if (n >= cap) {
        buf[0] = '\0';
        return ftc__seterr(FTC_EMSGSIZE, "manager: %zu B > %zu B", n, cap - 1);
    }
    memcpy(buf, s, n + 1);
    return 0;
}

int ftc_manager_replica_id(const ftc_manager *m, char *buf, size_t cap)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a manager");
    }
    ftc_manager *w = (ftc_manager *)m;
    pthread_mutex_lock(&w->mu);
    char id[FTC__QUORUM_STR_MAX];
    memcpy(id, m->replica_id, sizeof(id));
    pthread_mutex_unlock(&w->mu);
    return copy_out(buf, cap, id);
}

int ftc_manager_heal_address(const ftc_manager *m, char *buf, size_t cap)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a manager");
    }
    return copy_out(buf, cap, ftc__heal_server_address(m->heal_srv));
}

int ftc_manager_stats_get(const ftc_manager *m, ftc_manager_stats *out)
{
    if (m == NULL || m->magic != FTC__MGR_MAGIC || out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "manager stats: NULL argument");
    }
    ftc_manager *w = (ftc_manager *)m;
    pthread_mutex_lock(&w->stats_mu);
    *out = m->stats;
    pthread_mutex_unlock(&w->stats_mu);
    return 0;
}
