/* The lighthouse server: options, create and destroy, and the wiring of
 * libmicrohttpd (request bodies, responses, auth, long-poll resumption). */
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ft/http_util.h"
#include "ft/lighthouse/lighthouse.h"
#include "ft/lighthouse/lighthouse_json.h"

const unsigned ftc__lighthouse_codes[FTC__LH_NCODES] = {
    200, 400, 401, 403, 404, 405, 409, 413, 429, 500, 503, 501, 0};

void ftc_lighthouse_opts_init(ftc_lighthouse_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->min_replicas = 1;
    o->join_timeout_ms = 10000;
    o->heartbeat_timeout_ms = 500;
    o->max_jobs = 64;
    o->max_replicas = 4096;
    o->max_data_bytes = 65536;
    o->max_body_bytes = 131072;
    o->max_connections = 8192;
    o->max_connections_per_ip = 256;
    o->idle_connection_timeout_ms = 30000;
    o->max_join_wait_ms = 3600000;
    o->event_ring = 256;
    o->job_idle_ms = 600000;
    o->rollback_after_ms = 60000;
    o->exclude_ms = 1000;
}

/* The caller's fields over the defaults; then every field is checked. */
int ftc__lighthouse_resolve_opts(const ftc_lighthouse_opts *in,
                                 ftc_lighthouse_opts *o)
{
    ftc_lighthouse_opts d;
    ftc_lighthouse_opts_init(&d);
    *o = d;
    int rc = FTC__OPTS_MERGE(o, in, ftc_lighthouse_opts, keep_dropped);
    if (rc != 0) {
        return rc;
    }
    FTC__OPT_DEFAULT(o, &d, join_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, heartbeat_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, idle_connection_timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, max_join_wait_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, job_idle_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, rollback_after_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, exclude_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(o, &d, max_body_bytes, FTC_SIZE_DEFAULT);
    if (o->min_replicas == 0 || o->max_jobs == 0 || o->max_replicas == 0 ||
        o->max_body_bytes == 0 || o->max_connections == 0 ||
        o->max_connections_per_ip == 0 || o->event_ring == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse opts: min_replicas, max_jobs, "
                           "max_replicas, max_body_bytes, max_connections, "
                           "max_connections_per_ip and event_ring must be "
                           ">= 1");
    }
    if (o->max_jobs > 4096 || o->max_body_bytes > (2u << 20) ||
        o->event_ring > 65536) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse opts: max_jobs %u (<= 4096), "
                           "max_body_bytes %zu (<= 2 MiB), event_ring %u "
                           "(<= 65536)",
                           o->max_jobs, o->max_body_bytes, o->event_ring);
    }
    if (o->join_timeout_ms < 0 || o->idle_connection_timeout_ms < 0 ||
        o->max_join_wait_ms < 0 || o->job_idle_ms < 0 ||
        o->heartbeat_timeout_ms < 0 || o->rollback_after_ms < 0 ||
        o->exclude_ms < 0) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse opts: a time is negative (only "
                           "FTC_TIMEOUT_DEFAULT is, for its default)");
    }
    if (o->token != NULL && o->token[0] == '\0') {
        return ftc__seterr(FTC_EINVAL, "lighthouse opts: empty token");
    }
    return 0;
}

static void job_defaults(const ftc_lighthouse_opts *o, ftc__quorum_opts *q)
{
    ftc__quorum_opts_init(q);
    q->min_replicas = o->min_replicas;
    q->join_timeout_ms = o->join_timeout_ms;
    q->heartbeat_timeout_ms = o->heartbeat_timeout_ms;
    q->strict_shrink_only = o->strict_shrink_only;
    q->rollback_after_ms = o->rollback_after_ms;
    q->exclude_ms = o->exclude_ms;
    q->max_replicas = o->max_replicas;
    q->max_data_bytes = o->max_data_bytes;
}

/* ------------------------------------------------------------- answers */

ftc__lighthouse_blob *ftc__lighthouse_blob_json(const json_t *j)
{
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;
    size_t n = json_dumpb(j, NULL, 0, flags);
    ftc__lighthouse_blob *b = ftc__malloc(sizeof(*b) + n + 1);
    if (b == NULL) {
        ftc__seterr(FTC_ENOMEM, "answer of %zu B", n);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->len = n > 0 ? json_dumpb(j, b->data, n, flags) : 0;
    b->data[b->len] = '\0';
    return b;
}

ftc__lighthouse_blob *ftc__lighthouse_blob_buf(const ftc__buf *buf)
{
    size_t n = ftc__buf_size(buf);
    ftc__lighthouse_blob *b = ftc__malloc(sizeof(*b) + n + 1);
    if (b == NULL) {
        ftc__seterr(FTC_ENOMEM, "answer of %zu B", n);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->len = n;
    memcpy(b->data, ftc__buf_begin(buf), n);
    b->data[n] = '\0';
    return b;
}

ftc__lighthouse_blob *ftc__lighthouse_blob_ref(ftc__lighthouse_blob *b)
{
    if (b != NULL) {
        atomic_fetch_add(&b->refs, 1);
    }
    return b;
}

void ftc__lighthouse_blob_unref(void *p)
{
    ftc__lighthouse_blob *b = p;
    if (b != NULL && atomic_fetch_sub(&b->refs, 1) == 1) {
        ftc__free(b);
    }
}

const double ftc__lighthouse_req_bounds[FTC__LH_REQ_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 10, 60};

/* The request's time from arrival to its answer, by kind (long-polls
 * wait by design: they are kinds of their own). */
static void observe_latency(const ftc__lighthouse_req *r)
{
    ftc_lighthouse *lh = r->lh;
    int64_t us = (ftc__now_ns() - r->start_ns) / 1000;
    double s = (double)us / 1e6;
    size_t k = (size_t)r->kind < FTC__LH_REQ_KINDS ? (size_t)r->kind : 0;
    for (size_t i = 0; i < FTC__LH_REQ_BUCKETS; i++) {
        if (s <= ftc__lighthouse_req_bounds[i]) {
            atomic_fetch_add_explicit(&lh->req_buckets[k][i], 1,
                                      memory_order_relaxed);
        }
    }
    atomic_fetch_add_explicit(&lh->req_count[k], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&lh->req_sum_us[k], (uint64_t)us,
                              memory_order_relaxed);
}

static void count_status(ftc_lighthouse *lh, unsigned status)
{
    size_t i = 0;
    while (i < FTC__LH_NCODES - 1 && ftc__lighthouse_codes[i] != status) {
        i++;
    }
    atomic_fetch_add_explicit(&lh->http[i], 1, memory_order_relaxed);
}

static enum MHD_Result queue_response(ftc__lighthouse_req *r, unsigned status,
                                      const char *content_type,
                                      struct MHD_Response *resp)
{
    if (resp == NULL) {
        return MHD_NO;
    }
    count_status(r->lh, status);
    observe_latency(r);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (status == MHD_HTTP_UNAUTHORIZED) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                FTC__HTTP_CHALLENGE);
    }
    if (strncmp(content_type, "text/html", 9) == 0) {
        /* The page may talk to this lighthouse only; no other origin. */
        MHD_add_response_header(resp, "Content-Security-Policy",
                                "default-src 'none'; connect-src 'self'; "
                                "script-src 'self' 'unsafe-inline'; "
                                "style-src 'unsafe-inline'; img-src data:");
    }
    enum MHD_Result ok = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return ok;
}

enum MHD_Result ftc__lighthouse_queue(ftc__lighthouse_req *r, unsigned status,
                                      const char *content_type,
                                      ftc__lighthouse_blob *answer)
{
    if (answer == NULL) {
        static const char oom[] =
            "{\"error\":\"no_memory\",\"detail\":\"out of memory\"}";
        return queue_response(
            r, MHD_HTTP_INTERNAL_SERVER_ERROR, "application/json",
            MHD_create_response_from_buffer(sizeof(oom) - 1, (void *)oom,
                                            MHD_RESPMEM_PERSISTENT));
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback_cls(
            answer->len, answer->data, ftc__lighthouse_blob_unref, answer);
    if (resp == NULL) {
        ftc__lighthouse_blob_unref(answer);
    }
    return queue_response(r, status, content_type, resp);
}

enum MHD_Result ftc__lighthouse_queue_static(ftc__lighthouse_req *r,
                                             const char *content_type,
                                             const char *data, size_t len)
{
    return queue_response(r, MHD_HTTP_OK, content_type,
                          MHD_create_response_from_buffer(
                              len, (void *)data, MHD_RESPMEM_PERSISTENT));
}

enum MHD_Result ftc__lighthouse_queue_json(ftc__lighthouse_req *r,
                                           unsigned status, const json_t *j)
{
    return ftc__lighthouse_queue(r, status, "application/json",
                                 j != NULL ? ftc__lighthouse_blob_json(j)
                                           : NULL);
}

ftc__lighthouse_blob *ftc__lighthouse_error_blob(const char *code,
                                                 const char *detail)
{
    json_t *j = json_pack("{s:s, s:s}", "error", code, "detail", detail);
    ftc__lighthouse_blob *b = j != NULL ? ftc__lighthouse_blob_json(j) : NULL;
    json_decref(j);
    return b;
}

enum MHD_Result ftc__lighthouse_queue_error(ftc__lighthouse_req *r,
                                            unsigned status, const char *code,
                                            const char *detail)
{
    FTC_LOG_DEBUG("lighthouse.refused", "%u %s: %s", status, code, detail);
    return ftc__lighthouse_queue(r, status, "application/json",
                                 ftc__lighthouse_error_blob(code, detail));
}

enum MHD_Result ftc__lighthouse_queue_ftc_error(ftc__lighthouse_req *r, int rc)
{
    static const struct {
        int rc;
        unsigned status;
        const char *code;
    } map[] = {
        {FTC_EINVAL, 400, "invalid"},   {FTC_EMSGSIZE, 413, "too_large"},
        {FTC_ENOENT, 404, "not_found"}, {FTC_ESTALE, 409, "superseded"},
        {FTC_EAUTH, 403, "forbidden"},  {FTC_ECLOSED, 503, "shutting_down"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].rc == rc) {
            return ftc__lighthouse_queue_error(r, map[i].status, map[i].code,
                                               ftc_last_error());
        }
    }
    return ftc__lighthouse_queue_error(r, 500, "internal", ftc_last_error());
}

bool ftc__lighthouse_has_token(const ftc_lighthouse *lh,
                               struct MHD_Connection *c)
{
    return lh->has_token && ftc__http_token_ok(c, lh->token_hash);
}

/* ------------------------------------------------------------ requests */

static ftc__lighthouse_req *req_new(ftc_lighthouse *lh,
                                    struct MHD_Connection *c)
{
    ftc__lighthouse_req *r = ftc__calloc(1, sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    r->lh = lh;
    r->conn = c;
    r->fd = -1;
    r->start_ms = ftc__now_ms();
    r->start_ns = ftc__now_ns();
    ftc__buf_init(&r->body, lh->max_body_bytes);
    return r;
}

void ftc__lighthouse_req_free(ftc__lighthouse_req *r)
{
    if (r->job != NULL) {
        pthread_mutex_lock(&r->job->mu);
        r->job->refs--;
        pthread_mutex_unlock(&r->job->mu);
    }
    ftc__lighthouse_blob_unref(r->answer);
    ftc__buf_free(&r->body);
    ftc__free(r);
}

/* The first call sees only the headers: refuse what needs no body to
 * refuse (a missing token, a declared length over the limit) before a
 * byte of the body is read. */
static enum MHD_Result on_headers(ftc__lighthouse_req *r, const char *method,
                                  const char *url)
{
    ftc_lighthouse *lh = r->lh;
    bool token = ftc__lighthouse_has_token(lh, r->conn);
    if (token) {
        /* A member of the job: its address keeps a place in a full table. */
        ftc__http_admit_vouch_client(&lh->admit, r->conn);
    }
    if (lh->has_token && ftc__lighthouse_route_needs_token(lh, method, url) &&
        !token) {
        r->refused = true;
        bool sent = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                "Authorization") != NULL;
        return ftc__lighthouse_queue_error(
            r, sent ? 403 : 401, sent ? "forbidden" : "unauthorized",
            sent ? "wrong token" : "token required");
    }
    const char *cl =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    if (cl != NULL) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno != 0 || *end != '\0' || n > lh->max_body_bytes) {
            r->refused = true;
            char detail[128];
            snprintf(detail, sizeof(detail),
                     "Content-Length %.40s > max_body_bytes %zu", cl,
                     lh->max_body_bytes);
            return ftc__lighthouse_queue_error(r, 413, "too_large", detail);
        }
    }
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    ftc__lighthouse_req *r = *con_cls;
    if (r == NULL) {
        r = req_new(cls, c);
        if (r == NULL) {
            return MHD_NO;
        }
        *con_cls = r;
        return on_headers(r, method, url);
    }
    ftc__lighthouse_job *job = r->job;
    if (job != NULL) {
        /* Resumed after a long-poll: the answer was prepared meanwhile,
         * under the job's lock, by whichever thread answered. */
        pthread_mutex_lock(&job->mu);
        bool answered = r->state == FTC__LH_ANSWERED;
        unsigned status = r->status;
        const char *content_type = r->content_type;
        ftc__lighthouse_blob *b = r->answer;
        r->answer = NULL;
        pthread_mutex_unlock(&job->mu);
        return answered ? ftc__lighthouse_queue(r, status, content_type, b)
                        : MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->refused) {
            return MHD_YES;
        }
        if (ftc__buf_append(&r->body, upload_data, n) != 0) {
            /* MHD cannot answer in the middle of a body (a declared
             * length was refused up front): close the connection. */
            char peer[64] = "?";
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
            if (ci != NULL) {
                ftc__sock_peer_name(ci->connect_fd, peer, sizeof(peer));
            }
            FTC_LOG_WARN("lighthouse.oversize",
                         "%s %s from %s: body over max_body_bytes %zu, "
                         "closing",
                         method, url, peer, r->lh->max_body_bytes);
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (r->refused) {
        return MHD_YES;
    }
    return ftc__lighthouse_route(r, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    ftc_lighthouse *lh = cls;
    ftc__lighthouse_req *r = *con_cls;
    *con_cls = NULL;
    if (r == NULL) {
        return;
    }
    if (r->job == NULL) {
        ftc__lighthouse_req_free(r);
        return;
    }
    pthread_mutex_lock(&r->job->mu);
    ftc__lighthouse_job_unlink(r->job, r);
    pthread_mutex_unlock(&r->job->mu);
    ftc__lighthouse_clock_retire(lh, r);
    pthread_mutex_lock(&lh->mu);
    if (atomic_fetch_sub(&lh->n_polls, 1) == 1) {
        pthread_cond_broadcast(&lh->cv);
    }
    pthread_mutex_unlock(&lh->mu);
}

void ftc__lighthouse_resume_all(ftc__lighthouse_resume *rs)
{
    ftc__lighthouse_req *r = rs->head;
    rs->head = NULL;
    while (r != NULL) {
        /* Read next first: once resumed, r may be completed and retired. */
        ftc__lighthouse_req *next = r->resume_next;
        MHD_resume_connection(r->conn);
        r = next;
    }
}

/* ------------------------------------------------------ create/destroy */

/* Listens on o->bind and records the address as bound. */
static int bind_socket(ftc_lighthouse *lh, const char *bind, int *fd)
{
    char host[FTC_HOST_MAX];
    int port;
    int rc =
        ftc__addr_split(bind != NULL ? bind : "[::]",
                        FTC_LIGHTHOUSE_DEFAULT_PORT, host, sizeof(host), &port);
    if (rc != 0) {
        return rc;
    }
    bool any = strcmp(host, "::") == 0 || strcmp(host, "*") == 0;
    rc = ftc__sock_listen(any ? NULL : host, port, 1024, fd, &lh->port);
    if (rc != 0) {
        return rc;
    }
    bool v6 = strchr(host, ':') != NULL;
    snprintf(lh->address, sizeof(lh->address), "%s%s%s:%d", v6 ? "[" : "",
             any ? "::" : host, v6 ? "]" : "", lh->port);
    return 0;
}

static int start_http(ftc_lighthouse *lh, const ftc_lighthouse_opts *o, int fd)
{
    unsigned idle_s = (unsigned)((o->idle_connection_timeout_ms + 999) / 1000);
    struct MHD_OptionItem tls[3];
    unsigned tls_flag = ftc__http_tls_mhd(&lh->tls, tls);
    lh->mhd = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
            MHD_USE_ERROR_LOG | tls_flag,
        0, ftc__http_admit_accept, &lh->admit, on_request, lh,
        MHD_OPTION_NOTIFY_CONNECTION, ftc__http_admit_notify, &lh->admit,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)o->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, idle_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, lh,
        MHD_OPTION_EXTERNAL_LOGGER, ftc__http_mhd_log,
        (void *)"lighthouse.http", MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (lh->mhd == NULL) {
        /* MHD owns the listening socket from here on, even on failure. */
        return ftc__seterr(FTC_ESYS, "lighthouse: libmicrohttpd did not start "
                                     "(see the lighthouse.http log)");
    }
    return 0;
}

int ftc_lighthouse_create(const ftc_lighthouse_opts *in, ftc_lighthouse **out)
{
    return ftc__lighthouse_create_fenced(in, 0, out);
}

int ftc__lighthouse_create_fenced(const ftc_lighthouse_opts *in,
                                  int64_t lease_until_ms, ftc_lighthouse **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse create: out is NULL");
    }
    *out = NULL;
    ftc_lighthouse_opts o;
    int rc = ftc__lighthouse_resolve_opts(in, &o);
    if (rc != 0) {
        return rc;
    }
    if (sodium_init() < 0) {
        return ftc__seterr(FTC_ESYS, "lighthouse: libsodium init failed");
    }
    ftc_lighthouse *lh = ftc__calloc(1, sizeof(*lh));
    if (lh == NULL) {
        return ftc__seterr(FTC_ENOMEM, "lighthouse");
    }
    job_defaults(&o, &lh->job_defaults);
    rc = ftc__quorum_opts_check(&lh->job_defaults);
    if (rc != 0) {
        ftc__free(lh);
        return rc;
    }
    lh->max_jobs = o.max_jobs;
    lh->max_body_bytes = o.max_body_bytes;
    lh->max_join_wait_ms = o.max_join_wait_ms;
    lh->event_ring = o.event_ring;
    lh->job_idle_ms = o.job_idle_ms;
    lh->public_reads = o.public_reads;
    lh->keep_dropped = o.keep_dropped;
    lh->has_token = o.token != NULL;
    if (lh->has_token) {
        ftc__http_token_hash(o.token, lh->token_hash);
    }
    pthread_mutex_init(&lh->mu, NULL);
    pthread_cond_init(&lh->cv, NULL);
    if (lease_until_ms != 0) {
        /* Elected: no job before the leader's epochs arrive (an empty
         * block, never a random epoch), no quorum past its lease. */
        lh->epoch_next = lh->epoch_end = 1;
        atomic_store(&lh->lease_until_ms, lease_until_ms);
    }
    lh->epfd = -1;
    lh->wake.fd = -1;
    int fd = -1;
    /* With a token, a quarter of the table is kept for the addresses
     * that sent it, which the per-address cap does not bind (a member is
     * trusted); the others share the rest, max_connections_per_ip each. */
    ftc__http_admit_init(&lh->admit, o.max_connections,
                         lh->has_token ? o.max_connections / 4 : 0,
                         o.max_connections_per_ip,
                         "lighthouse.refused_connections",
                         "addresses that never sent the token");
    rc = ftc__http_tls_load(o.tls_cert, o.tls_key, "lighthouse TLS", &lh->tls);
    rc = rc != 0 ? rc : bind_socket(lh, o.bind, &fd);
    if (rc == 0) {
        rc = ftc__lighthouse_clock_start(lh);
        if (rc != 0) {
            close(fd);
        }
    }
    if (rc == 0) {
        rc = start_http(lh, &o, fd);
    }
    if (rc != 0) {
        ftc_lighthouse_destroy(lh);
        return rc;
    }
    FTC_LOG_INFO("lighthouse.start", "serving on %s://%s",
                 ftc__http_tls_scheme(&lh->tls), lh->address);
    *out = lh;
    return 0;
}

int ftc_lighthouse_address(const ftc_lighthouse *lh, char *buf, size_t cap)
{
    if (lh == NULL || buf == NULL || cap == 0) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse address: NULL argument");
    }
    size_t n = strlen(lh->address);
    if (n >= cap) {
        buf[0] = '\0';
        return ftc__seterr(FTC_EMSGSIZE, "lighthouse address: %zu B > %zu B", n,
                           cap - 1);
    }
    memcpy(buf, lh->address, n + 1);
    return 0;
}

int ftc_lighthouse_port(const ftc_lighthouse *lh)
{
    return lh != NULL ? lh->port : -1;
}

int ftc_lighthouse_configure_job(ftc_lighthouse *lh, const char *spec)
{
    ftc__clearerr();
    if (lh == NULL || spec == NULL) {
        return ftc__seterr(FTC_EMISUSE, "configure job: NULL argument");
    }
    char name[FTC_LIGHTHOUSE_JOB_MAX];
    size_t n = strcspn(spec, ":");
    if (n >= sizeof(name)) {
        return ftc__seterr(FTC_EINVAL, "job spec '%s': name too long", spec);
    }
    memcpy(name, spec, n);
    name[n] = '\0';
    json_t *opts;
    int rc = ftc__lhj_spec_options(spec[n] == ':' ? spec + n + 1 : "", &opts);
    if (rc != 0) {
        return ftc__adderr(rc, "job spec '%s'", spec);
    }
    ftc__lighthouse_job *job;
    rc = ftc__lighthouse_job_get(lh, name, true, &job);
    if (rc == 0) {
        ftc__lighthouse_resume rs = {NULL};
        rc = ftc__lighthouse_job_configure(job, opts, ftc__now_ms(), &rs);
        if (rc == 0) {
            job->pinned = true;
        }
        ftc__lighthouse_job_unlock(job);
        ftc__lighthouse_resume_all(&rs);
    }
    json_decref(opts);
    return rc;
}

/* Answers every waiting request 503 and waits (bounded) until MHD has sent
 * them, so that stopping MHD finds no suspended connection. */
static void answer_all(ftc_lighthouse *lh)
{
    ftc__lighthouse_resume rs = {NULL};
    pthread_mutex_lock(&lh->mu);
    for (ftc__lighthouse_job *j = lh->jobs; j != NULL; j = j->next) {
        pthread_mutex_lock(&j->mu);
        ftc__lighthouse_job_answer_all(j, &rs);
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&lh->mu);
    ftc__lighthouse_resume_all(&rs);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    pthread_mutex_lock(&lh->mu);
    while (atomic_load(&lh->n_polls) > 0) {
        if (pthread_cond_timedwait(&lh->cv, &lh->mu, &until) != 0) {
            break;
        }
    }
    pthread_mutex_unlock(&lh->mu);
}

void ftc_lighthouse_destroy(ftc_lighthouse *lh)
{
    if (lh == NULL) {
        return;
    }
    atomic_store(&lh->stopping, true);
    if (lh->mhd != NULL) {
        answer_all(lh);
    }
    ftc__lighthouse_clock_stop(lh);
    if (lh->mhd != NULL) {
        MHD_stop_daemon(lh->mhd);
    }
    ftc__lighthouse_clock_close(lh);
    ftc__lighthouse_clock_reap(lh);
    while (lh->jobs != NULL) {
        ftc__lighthouse_job *j = lh->jobs;
        lh->jobs = j->next;
        ftc__lighthouse_job_destroy(j);
    }
    ftc__free(lh->forgotten);
    ftc__http_tls_free(&lh->tls);
    ftc__http_admit_fini(&lh->admit);
    pthread_cond_destroy(&lh->cv);
    pthread_mutex_destroy(&lh->mu);
    ftc__free(lh);
}
