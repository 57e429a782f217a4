/* The lighthouse client's transport: libcurl easy handles, each in its own
 * multi handle so another thread can wake and abort it, kept alive in a
 * pool for reuse; retry with backoff while the lighthouse is unreachable. */
#include <curl/curl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ft/http_tls.h"
#include "ft/lighthouse/lighthouse_client.h"
#include "ft/lighthouse/lighthouse_json.h"

/* One connection: an easy handle whose multi handle holds its connection
 * cache (so keep-alive spans calls) and can be woken from any thread. */
typedef struct lhc_conn {
    CURL *easy;
    CURLM *multi;
    char error[CURL_ERROR_SIZE]; /* libcurl's detail of a failure */
    struct lhc_conn *next, *prev;
} lhc_conn;

#define LHC_ADDRS_MAX 8
/* The longest pause between rounds of addresses of a highly available
 * set (the retry_max_ms of a single lighthouse otherwise). */
#define LHC_FAILOVER_MAX_MS 200
/* How long one of a set may take to accept a connection: a dead host
 * answers nothing, and the next address must still be tried in time. */
#define LHC_CONNECT_MS 1000
/* The least time an attempt of a short call gets in a set. */
#define LHC_ATTEMPT_MIN_MS 100

struct ftc_lighthouse_client {
    /* "http://host:port" or "https://...": one lighthouse, or each of a
     * highly available set of which one serves (ftc_lighthouse_ha). */
    char bases[LHC_ADDRS_MAX][FTC_HOST_MAX + 32];
    unsigned n_bases;
    /* Where calls go: the last that answered. A call stuck elsewhere
     * follows when another call gets an answer from a new one. */
    atomic_uint current;
    /* current + 1 after a short call timed out there (frozen or cut off),
     * so that the next call looks elsewhere first; 0: none. */
    atomic_uint timed_out_at;
    char *tls_ca; /* NULL: the system's CAs */
    char job[FTC_LIGHTHOUSE_JOB_MAX];
    struct curl_slist *headers;
    int64_t timeout_ms, retry_initial_ms, retry_max_ms;
    size_t max_response_bytes;
    pthread_mutex_t mu; /* the lists below */
    lhc_conn *idle, *busy;
    atomic_bool aborted;
    ftc__lighthouse_roster roster;
};

void ftc_lighthouse_client_opts_init(ftc_lighthouse_client_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->timeout_ms = 60000;
    o->retry_initial_ms = 50;
    o->retry_max_ms = 1000;
    o->max_response_bytes = 64u << 20;
}

/* "host:port", "[v6]:port" or "http[s]://host:port[/]" as a base URL. */
static int base_url(const char *addr, char *out, size_t cap)
{
    const char *scheme = "http";
    if (strncmp(addr, "http://", 7) == 0) {
        addr += 7;
    } else if (strncmp(addr, "https://", 8) == 0) {
        addr += 8;
        scheme = "https";
    }
    char text[FTC_HOST_MAX + 16];
    size_t n = strlen(addr);
    if (n >= sizeof(text)) {
        return ftc__seterr(FTC_EINVAL, "lighthouse address too long");
    }
    memcpy(text, addr, n + 1);
    if (n > 0 && text[n - 1] == '/') {
        text[n - 1] = '\0';
    }
    char host[FTC_HOST_MAX];
    int port;
    int rc = ftc__addr_split(text, FTC_LIGHTHOUSE_DEFAULT_PORT, host,
                             sizeof(host), &port);
    if (rc != 0) {
        return rc;
    }
    bool v6 = strchr(host, ':') != NULL;
    snprintf(out, cap, "%s://%s%s%s:%d", scheme, v6 ? "[" : "", host,
             v6 ? "]" : "", port);
    return 0;
}

/* addr: one address, or several separated by commas. */
static int base_urls(ftc_lighthouse_client *c, const char *addr, bool has_token,
                     bool insecure)
{
    if (strlen(addr) >= FTC_LIGHTHOUSE_ADDR_MAX) {
        return ftc__seterr(FTC_EINVAL, "lighthouse addresses: over %d B",
                           FTC_LIGHTHOUSE_ADDR_MAX - 1);
    }
    for (const char *p = addr;; p++) {
        size_t n = strcspn(p, ",");
        char one[FTC_HOST_MAX + 32];
        if (c->n_bases == LHC_ADDRS_MAX || n >= sizeof(one)) {
            return ftc__seterr(FTC_EINVAL,
                               "lighthouse addresses: more than "
                               "%d or one too long",
                               LHC_ADDRS_MAX);
        }
        memcpy(one, p, n);
        one[n] = '\0';
        char *base = c->bases[c->n_bases];
        int rc = base_url(one, base, sizeof(c->bases[0]));
        if (rc == 0 && has_token) {
            rc = ftc__http_token_may_go(base, insecure);
        }
        if (rc != 0) {
            return rc;
        }
        c->n_bases++;
        p += n;
        if (*p == '\0') {
            return 0;
        }
    }
}

static struct curl_slist *make_headers(const char *token)
{
    struct curl_slist *h =
        curl_slist_append(NULL, "Content-Type: application/json");
    /* No "Expect: 100-continue" round trip for bodies. */
    struct curl_slist *t = h != NULL ? curl_slist_append(h, "Expect:") : NULL;
    if (t != NULL && token != NULL) {
        size_t n = strlen(token) + 32;
        char *line = ftc__malloc(n);
        if (line != NULL) {
            snprintf(line, n, "Authorization: Bearer %s", token);
            t = curl_slist_append(h, line);
            sodium_memzero(line, n);
            ftc__free(line);
        } else {
            t = NULL;
        }
    }
    if (t == NULL) {
        curl_slist_free_all(h);
        return NULL;
    }
    return h;
}

int ftc_lighthouse_client_create(const char *addr,
                                 const ftc_lighthouse_client_opts *opts,
                                 ftc_lighthouse_client **out)
{
    ftc__clearerr();
    if (out == NULL || addr == NULL) {
        return ftc__seterr(FTC_EMISUSE, "lighthouse client: NULL argument");
    }
    *out = NULL;
    ftc_lighthouse_client_opts o, d;
    ftc_lighthouse_client_opts_init(&d);
    o = d;
    int rc = FTC__OPTS_MERGE(&o, opts, ftc_lighthouse_client_opts,
                             max_response_bytes);
    if (rc != 0) {
        return rc;
    }
    FTC__OPT_DEFAULT(&o, &d, timeout_ms, FTC_TIMEOUT_DEFAULT);
    FTC__OPT_DEFAULT(&o, &d, max_response_bytes, FTC_SIZE_DEFAULT);
    if (ftc__timeout_check(o.timeout_ms,
                           "ftc_lighthouse_client_opts.timeout_ms") != 0) {
        return FTC_EINVAL;
    }
    if (o.retry_initial_ms < 1 || o.retry_max_ms < o.retry_initial_ms ||
        o.max_response_bytes == 0) {
        return ftc__seterr(FTC_EINVAL,
                           "ftc_lighthouse_client_opts: retry_initial_ms "
                           "%lld must be >= 1, retry_max_ms %lld >= it and "
                           "max_response_bytes >= 1",
                           (long long)o.retry_initial_ms,
                           (long long)o.retry_max_ms);
    }
    const char *job = o.job != NULL ? o.job : "default";
    if (!ftc__lighthouse_job_name_ok(job)) {
        return ftc__seterr(FTC_EINVAL,
                           "lighthouse client: job name '%.80s' is not "
                           "[A-Za-z0-9._-]{1,64}",
                           job);
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return ftc__seterr(FTC_ESYS, "lighthouse client: curl init failed");
    }
    ftc_lighthouse_client *c = ftc__calloc(1, sizeof(*c));
    if (c == NULL) {
        curl_global_cleanup();
        return ftc__seterr(FTC_ENOMEM, "lighthouse client");
    }
    rc = base_urls(c, addr, o.token != NULL, o.insecure);
    if (rc == 0 && o.tls_ca != NULL) {
        c->tls_ca = ftc__strdup(o.tls_ca);
        rc = c->tls_ca == NULL ? ftc__seterr(FTC_ENOMEM, "tls_ca") : 0;
    }
    if (rc == 0) {
        c->headers = make_headers(o.token);
        rc = c->headers == NULL ? ftc__seterr(FTC_ENOMEM, "headers") : 0;
    }
    if (rc != 0) {
        ftc__free(c->tls_ca);
        ftc__free(c);
        curl_global_cleanup();
        return rc;
    }
    snprintf(c->job, sizeof(c->job), "%s", job);
    c->timeout_ms = o.timeout_ms;
    c->retry_initial_ms = o.retry_initial_ms;
    c->retry_max_ms = o.retry_max_ms;
    c->max_response_bytes = o.max_response_bytes;
    pthread_mutex_init(&c->mu, NULL);
    pthread_mutex_init(&c->roster.mu, NULL);
    *out = c;
    return 0;
}

static void conn_free(lhc_conn *k)
{
    curl_multi_cleanup(k->multi);
    curl_easy_cleanup(k->easy);
    ftc__free(k);
}

void ftc_lighthouse_client_destroy(ftc_lighthouse_client *c)
{
    if (c == NULL) {
        return;
    }
    while (c->idle != NULL) {
        lhc_conn *k = c->idle;
        c->idle = k->next;
        conn_free(k);
    }
    curl_slist_free_all(c->headers);
    ftc__free(c->tls_ca);
    pthread_mutex_destroy(&c->mu);
    for (unsigned i = 0; i < FTC__LH_ROSTERS; i++) {
        ftc__quorum_fini(&c->roster.q[i]);
    }
    pthread_mutex_destroy(&c->roster.mu);
    ftc__free(c);
    curl_global_cleanup();
}

ftc__lighthouse_roster *ftc__lighthouse_client_roster(ftc_lighthouse_client *c)
{
    return &c->roster;
}

void ftc_lighthouse_client_abort(ftc_lighthouse_client *c)
{
    if (c == NULL) {
        return;
    }
    /* Set first, then wake under the lock: a call that registers after
     * this lock sees the flag; one registered before is woken. */
    atomic_store(&c->aborted, true);
    pthread_mutex_lock(&c->mu);
    for (lhc_conn *k = c->busy; k != NULL; k = k->next) {
        curl_multi_wakeup(k->multi);
    }
    pthread_mutex_unlock(&c->mu);
}

void ftc_lighthouse_client_clear_abort(ftc_lighthouse_client *c)
{
    if (c != NULL) {
        atomic_store(&c->aborted, false);
    }
}

const char *ftc__lighthouse_client_job(const ftc_lighthouse_client *c)
{
    return c->job;
}

ftc__deadline ftc__lighthouse_client_deadline(const ftc_lighthouse_client *c,
                                              int64_t timeout_ms)
{
    return ftc__deadline_from_timeout(timeout_ms, c->timeout_ms);
}

/* The address a call starts at. */
static unsigned first_base(ftc_lighthouse_client *c)
{
    unsigned at = atomic_load(&c->current);
    return atomic_load(&c->timed_out_at) == at + 1 ? (at + 1) % c->n_bases : at;
}

/* base at answered: calls go there from now on, and calls waiting on
 * another one (which no longer leads) are woken to follow. */
static void answered_at(ftc_lighthouse_client *c, unsigned at)
{
    atomic_store(&c->timed_out_at, 0);
    if (c->n_bases == 1 || atomic_exchange(&c->current, at) == at) {
        return;
    }
    pthread_mutex_lock(&c->mu);
    for (lhc_conn *k = c->busy; k != NULL; k = k->next) {
        curl_multi_wakeup(k->multi);
    }
    pthread_mutex_unlock(&c->mu);
}

/* A connection from the pool (or a new one), registered as busy. */
static int acquire(ftc_lighthouse_client *c, lhc_conn **out)
{
    pthread_mutex_lock(&c->mu);
    lhc_conn *k = c->idle;
    if (k != NULL) {
        c->idle = k->next;
    }
    pthread_mutex_unlock(&c->mu);
    if (k == NULL) {
        k = ftc__calloc(1, sizeof(*k));
        if (k != NULL) {
            k->easy = curl_easy_init();
            k->multi = curl_multi_init();
        }
        if (k == NULL || k->easy == NULL || k->multi == NULL) {
            if (k != NULL) {
                conn_free(k);
            }
            return ftc__seterr(FTC_ENOMEM, "lighthouse client connection");
        }
    }
    pthread_mutex_lock(&c->mu);
    k->prev = NULL;
    k->next = c->busy;
    if (c->busy != NULL) {
        c->busy->prev = k;
    }
    c->busy = k;
    pthread_mutex_unlock(&c->mu);
    *out = k;
    return 0;
}

static void release(ftc_lighthouse_client *c, lhc_conn *k)
{
    pthread_mutex_lock(&c->mu);
    if (k->prev != NULL) {
        k->prev->next = k->next;
    } else {
        c->busy = k->next;
    }
    if (k->next != NULL) {
        k->next->prev = k->prev;
    }
    k->prev = NULL;
    k->next = c->idle;
    c->idle = k;
    pthread_mutex_unlock(&c->mu);
}

void ftc__lighthouse_client_reply_init(ftc__lighthouse_client_reply *r,
                                       size_t max)
{
    r->status = 0;
    r->waits = false;
    r->at = -1;
    ftc__buf_init(&r->body, max);
}

void ftc__lighthouse_client_reply_fini(ftc__lighthouse_client_reply *r)
{
    ftc__buf_free(&r->body);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    ftc__lighthouse_client_reply *r = arg;
    return ftc__buf_append(&r->body, p, size * n) == 0 ? size * n : 0;
}

/* CURLOPT_SOCKOPTFUNCTION: a join, a heartbeat or a watch sent into a
 * partition reaches the lighthouse within a second of its end. */
static int cap_rto(void *user, curl_socket_t fd, curlsocktype purpose)
{
    (void)user;
    if (purpose == CURLSOCKTYPE_IPCXN) {
        ftc__sock_cap_rto(fd);
    }
    return CURL_SOCKOPT_OK;
}

static void set_request(ftc_lighthouse_client *c, lhc_conn *k,
                        const char *method, const char *url, const char *body,
                        size_t len, ftc__deadline dl,
                        ftc__lighthouse_client_reply *reply)
{
    CURL *e = k->easy;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, cap_rto);
    ftc__http_tls_curl(e, c->tls_ca);
    k->error[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, reply);
    if (body != NULL) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (!ftc__deadline_is_never(dl)) {
        long left = (long)ftc__deadline_left_ms(dl);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left > 0 ? left : 1L);
    }
    if (c->n_bases > 1) {
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)LHC_CONNECT_MS);
    }
}

/* Runs the transfer to base at on k's multi handle until it ends, the
 * client is aborted, or calls moved from current to another base than at
 * (*moved): then the transfer is dropped, closing its connection. */
static int run(ftc_lighthouse_client *c, lhc_conn *k, unsigned at,
               unsigned current, CURLcode *res, bool *moved)
{
    *moved = false;
    *res = CURLE_ABORTED_BY_CALLBACK;
    if (curl_multi_add_handle(k->multi, k->easy) != CURLM_OK) {
        return ftc__seterr(FTC_ENOMEM, "lighthouse client: curl multi");
    }
    int rc = 0;
    for (;;) {
        int running = 0;
        curl_multi_perform(k->multi, &running);
        if (running == 0) {
            break;
        }
        if (atomic_load(&c->aborted)) {
            rc = ftc__seterr(FTC_ECANCELED, "lighthouse call aborted");
            break;
        }
        unsigned now = atomic_load(&c->current);
        if (now != current && now != at) {
            *moved = true;
            break;
        }
        curl_multi_poll(k->multi, NULL, 0, 1000, NULL);
    }
    int left;
    CURLMsg *m = curl_multi_info_read(k->multi, &left);
    *res = m != NULL && m->msg == CURLMSG_DONE ? m->data.result
                                               : CURLE_ABORTED_BY_CALLBACK;
    curl_multi_remove_handle(k->multi, k->easy);
    return rc;
}

static bool retryable(CURLcode res)
{
    switch (res) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
        return true;
    default:
        return false;
    }
}

/* Sleeps ms on k's multi handle, so an abort wakes it. */
static int pause_ms(ftc_lighthouse_client *c, lhc_conn *k, int64_t ms)
{
    int64_t end = ftc__now_ms() + ms;
    for (;;) {
        if (atomic_load(&c->aborted)) {
            return ftc__seterr(FTC_ECANCELED, "lighthouse call aborted");
        }
        int64_t left = end - ftc__now_ms();
        if (left <= 0) {
            return 0;
        }
        curl_multi_poll(k->multi, NULL, 0, (int)(left < 1000 ? left : 1000),
                        NULL);
    }
}

int ftc__lighthouse_client_exchange(ftc_lighthouse_client *c,
                                    const char *method, const char *path,
                                    const char *body, size_t len,
                                    ftc__deadline dl,
                                    ftc__lighthouse_client_reply *reply)
{
    if (strlen(path) > 2048) {
        return ftc__seterr(FTC_EINVAL, "lighthouse URL too long");
    }
    lhc_conn *k = NULL;
    int rc = acquire(c, &k);
    if (rc != 0) {
        return rc;
    }
    /* With several lighthouses a round of refusals is what a failover
     * looks like until the new leader listens: look again soon. */
    int64_t max_ms = c->n_bases > 1 && c->retry_max_ms > LHC_FAILOVER_MAX_MS
                         ? LHC_FAILOVER_MAX_MS
                         : c->retry_max_ms;
    ftc__backoff bo;
    ftc__backoff_init(&bo, c->retry_initial_ms,
                      max_ms > c->retry_initial_ms ? max_ms
                                                   : c->retry_initial_ms);
    char last[CURL_ERROR_SIZE] = "";
    unsigned at =
        reply->at >= 0 ? (unsigned)reply->at % c->n_bases : first_base(c);
    /* In a set, one that does not answer a short call (a heartbeat) in a
     * third of its time is left for the next in the first round: it may
     * be frozen while a standby takes over. After that (the others
     * refused) each gets what is left. A long-poll's time is the
     * server's to use. */
    int64_t attempt_ms = ftc__deadline_left_ms(dl);
    if (c->n_bases > 1 && !reply->waits) {
        attempt_ms = attempt_ms / 3 > LHC_ATTEMPT_MIN_MS ? attempt_ms / 3
                                                         : LHC_ATTEMPT_MIN_MS;
    }
    for (unsigned tried = 1;; tried++) {
        if (tried == c->n_bases + 1) {
            attempt_ms = INT64_MAX / 2;
        }
        const char *base = c->bases[at];
        if (atomic_load(&c->aborted)) {
            rc = ftc__seterr(FTC_ECANCELED, "lighthouse call aborted");
            break;
        }
        if (ftc__deadline_expired(dl)) {
            rc = ftc__seterr(FTC_ETIMEDOUT, "lighthouse %s: %s %s: %s", base,
                             method, path,
                             last[0] != '\0' ? last : "deadline passed");
            break;
        }
        char url[sizeof(c->bases[0]) + 2048];
        snprintf(url, sizeof(url), "%s%s", base, path);
        ftc__buf_reset(&reply->body);
        set_request(c, k, method, url, body, len,
                    ftc__deadline_min(dl, ftc__deadline_in_ms(attempt_ms)),
                    reply);
        CURLcode res = CURLE_OK;
        bool moved;
        rc = run(c, k, at, atomic_load(&c->current), &res, &moved);
        if (rc != 0) {
            break;
        }
        if (moved) { /* another call found the serving lighthouse */
            at = atomic_load(&c->current);
            if (reply->waits) {
                reply->at = (int)at;
                rc = FTC__LH_AGAIN;
                break;
            }
            continue;
        }
        if (res == CURLE_OK) {
            curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &reply->status);
            if (reply->status != 503) {
                answered_at(c, at);
                break;
            }
            snprintf(last, sizeof(last), "HTTP 503 (lighthouse stopping)");
        } else if (res == CURLE_OPERATION_TIMEDOUT &&
                   ftc__deadline_left_ms(dl) > 10) {
            /* Before the call's own timeout (the deadline): one of a set
             * that did not accept a connection in LHC_CONNECT_MS, or did
             * not answer a short call in its share of the call's time. */
            if (!reply->waits) {
                atomic_store(&c->timed_out_at, at + 1);
            }
            snprintf(last, sizeof(last), "%s", k->error);
        } else if (res == CURLE_OPERATION_TIMEDOUT) {
            if (!reply->waits && c->n_bases > 1) {
                atomic_store(&c->timed_out_at, at + 1);
            }
            rc = ftc__seterr(FTC_ETIMEDOUT, "lighthouse %s: %s %s: timed out",
                             base, method, path);
            break;
        } else if (res == CURLE_WRITE_ERROR) {
            rc = ftc__seterr(FTC_EMSGSIZE, "lighthouse %s: answer over %zu B",
                             base, c->max_response_bytes);
            break;
        } else if (!retryable(res)) {
            rc = ftc__seterr(
                ftc__http_tls_refused(res) ? FTC_EAUTH : FTC_EPROTO,
                "lighthouse %s: %s %s: %s", base, method, path,
                k->error[0] != '\0' ? k->error : curl_easy_strerror(res));
            break;
        } else {
            snprintf(last, sizeof(last), "%s",
                     k->error[0] != '\0' ? k->error : curl_easy_strerror(res));
        }
        /* Unreachable or stopping (restarting, or standing by in a highly
         * available set): the next address at once, and after a round of
         * them a backoff, never past the deadline. */
        at = (at + 1) % c->n_bases;
        if (tried % c->n_bases == 0) {
            int64_t wait = ftc__backoff_next_ms(&bo);
            int64_t left = ftc__deadline_left_ms(dl);
            rc = pause_ms(c, k, wait < left ? wait : left);
            if (rc != 0) {
                break;
            }
        }
        if (reply->waits && !ftc__deadline_expired(dl)) {
            /* Time passed: the caller asks the next one for a shorter
             * wait. */
            reply->at = (int)at;
            rc = FTC__LH_AGAIN;
            break;
        }
    }
    release(c, k);
    return rc;
}

int ftc__lighthouse_client_status_error(
    const ftc_lighthouse_client *c, const ftc__lighthouse_client_reply *reply,
    const char *what)
{
    char code[64] = "?", detail[512] = "";
    json_t *j;
    size_t n = ftc__buf_size(&reply->body);
    if (n > 0 && ftc__lhj_parse_object(
                     (const char *)ftc__buf_begin(&reply->body), n, &j) == 0) {
        ftc__lhj_get_string(j, "error", false, code, sizeof(code));
        ftc__lhj_get_string(j, "detail", false, detail, sizeof(detail));
        json_decref(j);
    }
    int rc;
    switch (reply->status) {
    case 400:
    case 405:
        rc = FTC_EINVAL;
        break;
    case 401:
    case 403:
        rc = FTC_EAUTH;
        break;
    case 404:
        rc = FTC_ENOENT;
        break;
    case 409:
        rc = strcmp(code, "job_finished") == 0 ? FTC_EFINISHED : FTC_ESTALE;
        break;
    case 413:
    case 429:
        rc = FTC_EMSGSIZE;
        break;
    default:
        rc = reply->status >= 500 ? FTC_EPEER : FTC_EPROTO;
    }
    return ftc__seterr(rc, "lighthouse %s: %s: HTTP %ld %s: %s",
                       c->bases[atomic_load(&c->current)], what, reply->status,
                       code, detail);
}
