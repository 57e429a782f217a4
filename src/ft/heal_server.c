/* The healing server: each rank serves its published snapshot over HTTP
 * (libmicrohttpd, a few threads), chunks straight from the snapshot's
 * memory, never blocking the publisher on a reader. */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft/heal.h"
#include "ft/http_util.h"

struct ftc_heal_server {
    struct MHD_Daemon *mhd;
    char address[FTC_HOST_MAX + 16];
    bool has_token;
    unsigned char token_hash[FTC__TOKEN_HASH_BYTES];
    pthread_mutex_t mu; /* current and the fault below */
    ftc_heal_snapshot *current;
    int fault;
    uint32_t fault_chunk;
    atomic_uint_fast64_t meta_served, chunks_served, bytes_served, refused;
};

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

static enum MHD_Result refuse(ftc_heal_server *s, struct MHD_Connection *c,
                              unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result refuse(ftc_heal_server *s, struct MHD_Connection *c,
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
    }
    return answer(c, status, r);
}

static void snapshot_release(void *p)
{
    ftc__heal_snapshot_unref(p);
}

/* A response over snapshot memory: the reference is released with it. */
static struct MHD_Response *from_snapshot(ftc_heal_snapshot *snap,
                                          const uint8_t *p, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback_cls(
            len, (void *)p, snapshot_release, snap);
    if (r == NULL) {
        ftc__heal_snapshot_unref(snap);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            "application/octet-stream");
    return r;
}

#ifdef FTC_TESTING
/* A CUT answer: half of the chunk, then the connection is closed. */
typedef struct cut_body {
    ftc_heal_snapshot *snap;
    const uint8_t *p;
    size_t half;
} cut_body;

static ssize_t cut_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    cut_body *b = cls;
    if (pos >= b->half) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = b->half - (size_t)pos < max ? b->half - (size_t)pos : max;
    memcpy(buf, b->p + pos, n);
    return (ssize_t)n;
}

static void cut_free(void *cls)
{
    cut_body *b = cls;
    ftc__heal_snapshot_unref(b->snap);
    ftc__free(b);
}

static struct MHD_Response *faulty(int fault, ftc_heal_snapshot *snap,
                                   const uint8_t *p, size_t len)
{
    if (fault == FTC__HEAL_FAULT_CORRUPT) {
        uint8_t *copy = ftc__memdup(p, len > 0 ? len : 1);
        ftc__heal_snapshot_unref(snap);
        if (copy == NULL) {
            return NULL;
        }
        copy[len / 2] ^= 0x5a;
        return MHD_create_response_from_buffer_with_free_callback_cls(
            len, copy, ftc__free, copy);
    }
    cut_body *b = ftc__calloc(1, sizeof(*b));
    if (b == NULL) {
        ftc__heal_snapshot_unref(snap);
        return NULL;
    }
    *b = (cut_body){snap, p, len / 2};
    struct MHD_Response *r = MHD_create_response_from_callback(
        len, 64 * 1024, cut_read, b, cut_free);
    if (r == NULL) {
        cut_free(b);
    }
    return r;
}

void ftc__heal_server_inject(ftc_heal_server *s, ftc_heal_fault fault,
                             uint32_t chunk)
{
    pthread_mutex_lock(&s->mu);
    s->fault = fault;
    s->fault_chunk = chunk;
    pthread_mutex_unlock(&s->mu);
}

/* The fault for this chunk request, consumed unless it is CUT_ALL. */
static int take_fault(ftc_heal_server *s, uint32_t chunk)
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

/* "/v1/heal/{step}/meta" or "/v1/heal/{step}/chunk/{i}". */
static bool parse_url(const char *url, uint64_t *step, bool *meta,
                      uint64_t *chunk)
{
    static const char pre[] = "/v1/heal/";
    if (strncmp(url, pre, sizeof(pre) - 1) != 0) {
        return false;
    }
    const char *p;
    if (!parse_u64(url + sizeof(pre) - 1, &p, step)) {
        return false;
    }
    if (strcmp(p, "/meta") == 0) {
        *meta = true;
        return true;
    }
    *meta = false;
    return strncmp(p, "/chunk/", 7) == 0 && parse_u64(p + 7, &p, chunk) &&
           *p == '\0';
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    ftc_heal_server *s = cls;
    if (strcmp(method, "GET") != 0) {
        return refuse(s, c, 405, "only GET");
    }
    if (s->has_token && !ftc__http_bearer_ok(c, s->token_hash)) {
        return refuse(s, c, 401, "token required");
    }
    uint64_t step, chunk = 0;
    bool meta;
    if (!parse_url(url, &step, &meta, &chunk)) {
        return refuse(s, c, 404, "no such route");
    }
    pthread_mutex_lock(&s->mu);
    ftc_heal_snapshot *snap = s->current;
    int64_t have = snap != NULL ? snap->meta.step : -1;
    if (snap == NULL || (uint64_t)snap->meta.step != step ||
        (!meta && chunk >= snap->meta.n_chunks)) {
        pthread_mutex_unlock(&s->mu);
        return refuse(s, c, 404,
                      "no snapshot of step %llu chunk %llu (serving "
                      "step %lld)",
                      (unsigned long long)step, (unsigned long long)chunk,
                      (long long)have);
    }
    ftc__heal_snapshot_ref(snap);
#ifdef FTC_TESTING
    int fault = meta ? FTC__HEAL_FAULT_NONE : take_fault(s, (uint32_t)chunk);
#endif
    pthread_mutex_unlock(&s->mu);
    if (meta) {
        atomic_fetch_add(&s->meta_served, 1);
        return answer(c, 200,
                      from_snapshot(snap, snap->meta_bytes, snap->meta_len));
    }
    uint64_t off, len;
    ftc__heal_chunk_range(&snap->meta, (uint32_t)chunk, &off, &len);
    atomic_fetch_add(&s->chunks_served, 1);
    atomic_fetch_add(&s->bytes_served, len);
#ifdef FTC_TESTING
    if (fault != FTC__HEAL_FAULT_NONE) {
        return answer(c, 200, faulty(fault, snap, snap->data + off, len));
    }
#endif
    return answer(c, 200, from_snapshot(snap, snap->data + off, len));
}

/* ----------------------------------------------------- start and stop */

int ftc__heal_server_start(ftc_heal_server **out, const ftc_heal_server_opts *o)
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
    ftc_heal_server *s = ftc__calloc(1, sizeof(*s));
    if (s == NULL) {
        return ftc__seterr(FTC_ENOMEM, "heal server");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->has_token = o->token != NULL;
    if (s->has_token) {
        ftc__http_token_hash(o->token, s->token_hash);
    }
    int fd, port;
    int rc = ftc__sock_listen(host, o->port, 1024, &fd, &port);
    if (rc != 0) {
        ftc__heal_server_stop(s);
        return ftc__adderr(rc, "heal server on %s", host);
    }
    bool v6 = strchr(host, ':') != NULL;
    snprintf(s->address, sizeof(s->address), "%s%s%s:%d", v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    unsigned idle_s =
        (unsigned)((o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 30000) +
                   999) /
        1000;
    s->mhd = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_THREAD_POOL_SIZE, o->threads > 0 ? o->threads : 2u,
        MHD_OPTION_CONNECTION_LIMIT,
        o->max_connections > 0 ? o->max_connections : 256u,
        MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_EXTERNAL_LOGGER,
        ftc__http_mhd_log, (void *)"heal.http", MHD_OPTION_END);
    if (s->mhd == NULL) {
        /* MHD owns the listening socket from here on, even on failure. */
        ftc__heal_server_stop(s);
        return ftc__seterr(FTC_ESYS, "heal server: libmicrohttpd did not "
                                     "start");
    }
    FTC_LOG_INFO("heal.serve", "serving state on %s", s->address);
    *out = s;
    return 0;
}

const char *ftc__heal_server_address(const ftc_heal_server *s)
{
    return s->address;
}

void ftc__heal_server_publish(ftc_heal_server *s, ftc_heal_snapshot *snap)
{
    ftc__heal_snapshot_ref(snap);
    pthread_mutex_lock(&s->mu);
    ftc_heal_snapshot *old = s->current;
    s->current = snap;
    pthread_mutex_unlock(&s->mu);
    ftc__heal_snapshot_unref(old);
}

void ftc__heal_server_stats(ftc_heal_server *s, ftc_heal_server_stats *out)
{
    out->meta_served = atomic_load(&s->meta_served);
    out->chunks_served = atomic_load(&s->chunks_served);
    out->bytes_served = atomic_load(&s->bytes_served);
    out->refused = atomic_load(&s->refused);
}

void ftc__heal_server_stop(ftc_heal_server *s)
{
    if (s == NULL) {
        return;
    }
    if (s->mhd != NULL) {
        MHD_stop_daemon(s->mhd);
    }
    ftc__heal_snapshot_unref(s->current);
    pthread_mutex_destroy(&s->mu);
    ftc__free(s);
}
