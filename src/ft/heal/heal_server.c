/* The healing server: each rank serves its published or lent snapshot
 * over HTTP (libmicrohttpd, a few threads), chunks straight from the
 * snapshot's memory, never blocking the publisher on a reader. */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft/heal/heal_server_int.h"

/* ------------------------------------------------------------- answers */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status,
                              struct MHD_Response *resp)
{
    if (resp == NULL) {
        return MHD_NO;
    }
    enum MHD_Result ok = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result refuse(ftc__heal_server *s, struct MHD_Connection *c,
                              unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result refuse(ftc__heal_server *s, struct MHD_Connection *c,
                              unsigned status, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    atomic_fetch_add(&s->refused, 1);
    FTC_LOG_DEBUG("heal.refused", "%u %s", status, text);
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(text), text, MHD_RESPMEM_MUST_COPY);
    if (r != NULL) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        if (status == MHD_HTTP_UNAUTHORIZED) {
            MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                    FTC__HTTP_CHALLENGE);
        }
    }
    return answer(c, status, r);
}

/* What an answer over snapshot memory holds: its reference, and the
 * server to tell when the answer ends (a lending waits for that). */
typedef struct ticket {
    ftc__heal_server *s;
    ftc__heal_snapshot *snap;
} ticket;

static void ticket_free(void *p)
{
    ticket *t = p;
    ftc__heal_snapshot_unref(t->snap);
    pthread_mutex_lock(&t->s->mu);
    pthread_cond_broadcast(&t->s->cv);
    pthread_mutex_unlock(&t->s->mu);
    ftc__free(t);
}

/* How many pieces state bytes [off, off + len) span. */
static size_t count_pieces(const ftc__heal_snapshot *snap, uint64_t off,
                           uint64_t len)
{
    size_t n = 0;
    for (; len > 0; n++) {
        ftc__heal_seg p = ftc__heal_snapshot_piece(snap, off, len);
        off += p.len;
        len -= p.len;
    }
    return n;
}

/* An answer over the snapshot's metadata (meta) or its bytes [off, off +
 * len) (len >= 1), sent straight from their memory: one piece per buffer
 * they span. The reference to snap goes with it, even on failure. */
static struct MHD_Response *from_snapshot(ftc__heal_server *s,
                                          ftc__heal_snapshot *snap, bool meta,
                                          uint64_t off, uint64_t len)
{
    size_t n = meta ? 1 : count_pieces(snap, off, len);
    struct MHD_IoVec *iov = ftc__calloc(n, sizeof(*iov));
    ticket *t = ftc__calloc(1, sizeof(*t));
    struct MHD_Response *r = NULL;
    if (iov != NULL && t != NULL) {
        *t = (ticket){s, snap};
        if (meta) {
            iov[0] = (struct MHD_IoVec){snap->meta_bytes, snap->meta_len};
        }
        for (size_t i = 0; !meta && i < n; i++) {
            ftc__heal_seg p = ftc__heal_snapshot_piece(snap, off, len);
            iov[i] = (struct MHD_IoVec){p.p, (size_t)p.len};
            off += p.len;
            len -= p.len;
        }
        r = MHD_create_response_from_iovec(iov, (unsigned)n, ticket_free, t);
    }
    ftc__free(iov);
    if (r == NULL) {
        if (t != NULL) {
            ticket_free(t);
        } else {
            ftc__heal_snapshot_unref(snap);
        }
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/octet-stream");
    return r;
}

#ifdef FTC_TESTING
/* A CUT answer: half of the chunk, then the connection is closed. */
typedef struct cut_body {
    uint8_t *copy;
    size_t half;
} cut_body;

static ssize_t cut_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    cut_body *b = cls;
    if (pos >= b->half) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = b->half - (size_t)pos < max ? b->half - (size_t)pos : max;
    memcpy(buf, b->copy + pos, n);
    return (ssize_t)n;
}

static void cut_free(void *cls)
{
    cut_body *b = cls;
    ftc__free(b->copy);
    ftc__free(b);
}

/* A faulty answer for chunk bytes [off, off + len), from a copy of them
 * (the reference to snap is released at once). */
static struct MHD_Response *faulty(int fault, ftc__heal_snapshot *snap,
                                   uint64_t off, uint64_t len)
{
    uint8_t *copy = ftc__malloc(len);
    for (uint64_t k = 0; copy != NULL && k < len;) {
        ftc__heal_seg p = ftc__heal_snapshot_piece(snap, off + k, len - k);
        memcpy(copy + k, p.p, p.len);
        k += p.len;
    }
    ftc__heal_snapshot_unref(snap);
    if (copy == NULL) {
        return NULL;
    }
    if (fault == FTC__HEAL_FAULT_CORRUPT) {
        copy[len / 2] ^= 0x5a;
        return MHD_create_response_from_buffer_with_free_callback_cls(
            len, copy, ftc__free, copy);
    }
    cut_body *b = ftc__calloc(1, sizeof(*b));
    if (b == NULL) {
        ftc__free(copy);
        return NULL;
    }
    *b = (cut_body){copy, len / 2};
    struct MHD_Response *r = MHD_create_response_from_callback(
        len, 64 * 1024, cut_read, b, cut_free);
    if (r == NULL) {
        cut_free(b);
    }
    return r;
}

void ftc__heal_server_inject(ftc__heal_server *s, ftc__heal_fault fault,
                             uint32_t chunk)
{
    pthread_mutex_lock(&s->mu);
    s->fault = fault;
    s->fault_chunk = chunk;
    pthread_mutex_unlock(&s->mu);
}

/* The fault for this chunk request, consumed unless it is CUT_ALL. */
static int take_fault(ftc__heal_server *s, uint32_t chunk)
{
    int f = FTC__HEAL_FAULT_NONE;
    if (s->fault == FTC__HEAL_FAULT_CUT_ALL) {
        f = FTC__HEAL_FAULT_CUT;
    } else if (s->fault != FTC__HEAL_FAULT_NONE && s->fault_chunk == chunk) {
        f = s->fault;
        s->fault = FTC__HEAL_FAULT_NONE;
    }
    return f;
}
#endif

/* ------------------------------------------------------------- routing */

/* Parses a decimal number that ends at *end (never past it). */
static bool parse_u64(const char *p, const char **end, uint64_t *v)
{
    if (*p < '0' || *p > '9') {
        return false;
    }
    errno = 0;
    char *e;
    unsigned long long x = strtoull(p, &e, 10);
    if (errno != 0) {
        return false;
    }
    *v = x;
    *end = e;
    return true;
}

typedef enum route {
    ROUTE_NONE,
    ROUTE_META,    /* GET /v1/heal/{step}/meta */
    ROUTE_CHUNK,   /* GET /v1/heal/{step}/chunk/{i} */
    ROUTE_RELEASE, /* POST /v1/heal/{step}/release?replica={id} */
} route;

static route parse_url(const char *url, uint64_t *step, uint64_t *chunk)
{
    static const char pre[] = "/v1/heal/";
    const char *p;
    if (strncmp(url, pre, sizeof(pre) - 1) != 0 ||
        !parse_u64(url + sizeof(pre) - 1, &p, step)) {
        return ROUTE_NONE;
    }
    if (strcmp(p, "/meta") == 0) {
        return ROUTE_META;
    }
    if (strcmp(p, "/release") == 0) {
        return ROUTE_RELEASE;
    }
    return strncmp(p, "/chunk/", 7) == 0 && parse_u64(p + 7, &p, chunk) &&
                   *p == '\0'
               ? ROUTE_CHUNK
               : ROUTE_NONE;
}

/* A healer no longer needs the lent state of step. */
static enum MHD_Result on_release(ftc__heal_server *s, struct MHD_Connection *c,
                                  uint64_t step)
{
    const char *id =
        MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "replica");
    if (id == NULL || id[0] == '\0' || strlen(id) >= FTC__HEAL_ID_MAX) {
        return refuse(s, c, 400, "replica=<id> of 1..%d bytes required",
                      FTC__HEAL_ID_MAX - 1);
    }
    if (step > INT64_MAX || !ftc__heal_lend_release(s, (int64_t)step, id)) {
        return refuse(s, c, 404, "not lending the state of step %llu",
                      (unsigned long long)step);
    }
    static const char ok[] = "released";
    return answer(c, 200,
                  MHD_create_response_from_buffer(sizeof(ok) - 1, (void *)ok,
                                                  MHD_RESPMEM_PERSISTENT));
}

/* The snapshot of step with one more reference, or NULL (404 sent). */
static ftc__heal_snapshot *snapshot_of(ftc__heal_server *s, uint64_t step,
                                       route rt, uint64_t chunk, int *fault)
{
    pthread_mutex_lock(&s->mu);
    ftc__heal_snapshot *snap = s->current;
    if (snap == NULL || (uint64_t)snap->meta.step != step ||
        (rt == ROUTE_CHUNK && chunk >= snap->meta.n_chunks)) {
        pthread_mutex_unlock(&s->mu);
        return NULL;
    }
    ftc__heal_snapshot_ref(snap);
    *fault = 0;
#ifdef FTC_TESTING
    *fault = rt == ROUTE_META ? FTC__HEAL_FAULT_NONE
                              : take_fault(s, (uint32_t)chunk);
#endif
    pthread_mutex_unlock(&s->mu);
    return snap;
}

/* Whether the state of step was refused (ftc__heal_server_refuse). */
static bool gone(ftc__heal_server *s, uint64_t step)
{
    pthread_mutex_lock(&s->mu);
    bool g = s->refused_step >= 0 && (uint64_t)s->refused_step == step;
    pthread_mutex_unlock(&s->mu);
    return g;
}

/* Whether the request announces a body: a Content-Length other than 0,
 * or any Transfer-Encoding (chunked). */
static bool has_body(struct MHD_Connection *c)
{
    const char *cl = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return te != NULL || (cl != NULL && cl[strspn(cl, "0")] != '\0');
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    ftc__heal_server *s = cls;
    bool post = strcmp(method, "POST") == 0;
    if (*con_cls == NULL) {
        *con_cls = s; /* the headers are in */
        /* No heal request has a body. One is refused before a byte of
         * it is read (MHD then closes the connection instead of reading
         * on): a client announcing a terabyte costs nothing. */
        if (has_body(c)) {
            return refuse(s, c, 413, "heal requests carry no body");
        }
        if (post) {
            return MHD_YES; /* the answer comes after the empty body */
        }
    }
    if (*upload_data_size != 0) {
        return MHD_NO; /* a body that was not announced: cut */
    }
    if (!post && strcmp(method, "GET") != 0) {
        return refuse(s, c, 405, "only GET and POST");
    }
    if (s->has_token && !ftc__http_token_ok(c, s->token_hash)) {
        return refuse(s, c, 401, "token required");
    }
    uint64_t step, chunk = 0;
    route rt = parse_url(url, &step, &chunk);
    if (rt == ROUTE_NONE) {
        return refuse(s, c, 404, "no such route");
    }
    if (post != (rt == ROUTE_RELEASE)) {
        return refuse(s, c, 405, "only %s here", post ? "GET" : "POST");
    }
    if (rt == ROUTE_RELEASE) {
        return on_release(s, c, step);
    }
    int fault;
    ftc__heal_snapshot *snap = snapshot_of(s, step, rt, chunk, &fault);
    if (snap == NULL && gone(s, step)) {
        return refuse(s, c, 410,
                      "this rank cannot serve the state of step "
                      "%llu (it could not take its snapshot)",
                      (unsigned long long)step);
    }
    if (snap == NULL) {
        return refuse(s, c, 404, "no snapshot of step %llu chunk %llu",
                      (unsigned long long)step, (unsigned long long)chunk);
    }
    if (rt == ROUTE_META) {
        atomic_fetch_add(&s->meta_served, 1);
        return answer(c, 200, from_snapshot(s, snap, true, 0, 0));
    }
    uint64_t off, len;
    ftc__heal_chunk_range(&snap->meta, (uint32_t)chunk, &off, &len);
    atomic_fetch_add(&s->chunks_served, 1);
    atomic_fetch_add(&s->bytes_served, len);
#ifdef FTC_TESTING
    if (fault != FTC__HEAL_FAULT_NONE) {
        return answer(c, 200, faulty(fault, snap, off, len));
    }
#endif
    return answer(c, 200, from_snapshot(s, snap, false, off, len));
}

/* ----------------------------------------------------- start and stop */

/* Serves on the listening socket fd (MHD owns it from here on, even when
 * this fails). */
static struct MHD_Daemon *start_daemon(ftc__heal_server *s, int fd)
{
    struct MHD_OptionItem tls[3];
    unsigned tls_flag = ftc__http_tls_mhd(&s->tls, tls);
    return MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG |
            tls_flag,
        0, ftc__http_admit_accept, &s->admit, on_request, s,
        MHD_OPTION_NOTIFY_CONNECTION, ftc__http_admit_notify, &s->admit,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE, s->threads,
        MHD_OPTION_CONNECTION_LIMIT, s->max_connections,
        MHD_OPTION_CONNECTION_TIMEOUT, s->idle_s, MHD_OPTION_EXTERNAL_LOGGER,
        ftc__http_mhd_log, (void *)"heal.http", MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
}

int ftc__heal_server_start(ftc__heal_server **out,
                           const ftc__heal_server_opts *o)
{
    *out = NULL;
    const char *host =
        o->host != NULL && o->host[0] != '\0' ? o->host : "127.0.0.1";
    if (strlen(host) >= FTC_HOST_MAX || o->port < 0 || o->port > 65535 ||
        (o->token != NULL && o->token[0] == '\0')) {
        return ftc__seterr(FTC_EINVAL,
                           "heal server: host '%.64s', port %d "
                           "or empty token",
                           host, o->port);
    }
    if (sodium_init() < 0) {
        return ftc__seterr(FTC_ESYS, "heal server: libsodium init failed");
    }
    ftc__heal_server *s = ftc__calloc(1, sizeof(*s));
    if (s == NULL) {
        return ftc__seterr(FTC_ENOMEM, "heal server");
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->refused_step = -1;
    s->last_step = -1;
    s->has_token = o->token != NULL;
    if (s->has_token) {
        ftc__http_token_hash(o->token, s->token_hash);
    }
    s->threads = o->threads > 0 ? o->threads : 2u;
    s->max_connections = o->max_connections > 0 ? o->max_connections : 256u;
    ftc__http_admit_init(
        &s->admit, s->max_connections, s->max_connections / 4,
        o->max_connections_per_address > 0 ? o->max_connections_per_address
                                           : 16u,
        "heal.refused_connections", "addresses not healing from this rank");
    s->idle_s =
        (unsigned)((o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 30000) +
                   999) /
        1000;
    int rc = 0;
    int fd, port;
    FTC__CHECK(
        ftc__http_tls_load(o->tls_cert, o->tls_key, "healing TLS", &s->tls));
    FTC__CHECK_ADDERR(ftc__sock_listen(host, o->port, 1024, &fd, &port),
                      "heal server on %s", host);
    bool v6 = strchr(host, ':') != NULL;
    snprintf(s->address, sizeof(s->address), "%s%s%s%s:%d",
             s->tls.cert != NULL ? "https://" : "", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    s->mhd = start_daemon(s, fd);
    if (s->mhd == NULL) {
        FTC__FAIL(FTC_ESYS, "heal server: libmicrohttpd did not start");
    }
    FTC_LOG_INFO("heal.serve", "serving state on %s", s->address);
    *out = s;
    return 0;
fail:
    FTC__KEEP_MESSAGE(ftc__heal_server_stop(s));
    return rc;
}

void ftc__heal_server_restart(ftc__heal_server *s)
{
    if (s->mhd == NULL) {
        return;
    }
    atomic_fetch_add(&s->cuts, 1);
    MHD_socket fd = MHD_quiesce_daemon(s->mhd);
    MHD_stop_daemon(s->mhd);
    s->mhd = fd != MHD_INVALID_SOCKET ? start_daemon(s, fd) : NULL;
    if (s->mhd == NULL) {
        FTC_LOG_ERROR("heal.serve",
                      "healing server %s did not restart: "
                      "this rank can no longer serve its state",
                      s->address);
    }
}

const char *ftc__heal_server_address(const ftc__heal_server *s)
{
    return s->address;
}

/* Serves snap (a reference taken) and, with refuse >= 0, answers 410 for
 * that step. */
static void set_current(ftc__heal_server *s, ftc__heal_snapshot *snap,
                        int64_t refuse)
{
    ftc__heal_snapshot_ref(snap);
    pthread_mutex_lock(&s->mu);
    ftc__heal_snapshot *old = s->current;
    s->current = snap;
    s->refused_step = refuse;
    int64_t step = snap != NULL ? snap->meta.step : refuse;
    s->last_step = step > s->last_step ? step : s->last_step;
    pthread_mutex_unlock(&s->mu);
    ftc__heal_snapshot_unref(old);
}

void ftc__heal_server_publish(ftc__heal_server *s, ftc__heal_snapshot *snap)
{
    set_current(s, snap, -1);
}

void ftc__heal_server_refuse(ftc__heal_server *s, int64_t step)
{
    set_current(s, NULL, step);
}

void ftc__heal_server_stats_get(ftc__heal_server *s,
                                ftc__heal_server_stats *out)
{
    out->meta_served = atomic_load(&s->meta_served);
    out->chunks_served = atomic_load(&s->chunks_served);
    out->bytes_served = atomic_load(&s->bytes_served);
    out->refused = atomic_load(&s->refused);
    out->releases = atomic_load(&s->releases);
    out->cuts = atomic_load(&s->cuts);
    ftc__http_admit_counts(&s->admit, &out->connections_refused,
                           &out->stranger_connections);
}

void ftc__heal_server_vouch(ftc__heal_server *s, const char *const *addrs,
                            size_t n)
{
    ftc__http_admit_vouch(&s->admit, addrs, n);
}

void ftc__heal_server_stop(ftc__heal_server *s)
{
    if (s == NULL) {
        return;
    }
    if (s->mhd != NULL) {
        MHD_stop_daemon(s->mhd);
    }
    ftc__heal_lend_clear(s);
    ftc__free(s->early);
    ftc__http_tls_free(&s->tls);
    ftc__http_admit_fini(&s->admit);
    ftc__heal_snapshot_unref(s->current);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    ftc__free(s);
}
