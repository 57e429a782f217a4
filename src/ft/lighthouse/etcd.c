/* etcd's v3 JSON gateway over one libcurl easy handle (etcd.h). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ft/lighthouse/etcd.h"
#include "ft/lighthouse/lighthouse_json.h"

#define ETCD_URLS_MAX 8
#define ETCD_ANSWER_MAX (1u << 20)

struct ftc__etcd {
    char *urls[ETCD_URLS_MAX];
    size_t n, current; /* current: the endpoint that answered last */
    int64_t attempt_ms;
    CURL *easy;
    struct curl_slist *headers;
    ftc__buf answer;
    char error[CURL_ERROR_SIZE];
};

static void free_urls(ftc__etcd *e)
{
    for (size_t i = 0; i < e->n; i++) {
        ftc__free(e->urls[i]);
    }
}

/* Splits urls at commas into e->urls, each "http://host:port" without a
 * trailing slash. */
static int parse_urls(ftc__etcd *e, const char *urls)
{
    const char *p = urls;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        while (len > 0 && p[len - 1] == '/') {
            len--;
        }
        if (e->n == ETCD_URLS_MAX) {
            return ftc__seterr(FTC_EINVAL, "etcd: more than %d endpoints",
                               ETCD_URLS_MAX);
        }
        if (len <= 7 || strncmp(p, "http://", 7) != 0 || len > 512) {
            return ftc__seterr(FTC_EINVAL,
                               "etcd endpoint '%.*s' is not http://host:port",
                               (int)(len < 80 ? len : 80), p);
        }
        e->urls[e->n] = ftc__malloc(len + 1);
        if (e->urls[e->n] == NULL) {
            return ftc__seterr(FTC_ENOMEM, "etcd endpoints");
        }
        memcpy(e->urls[e->n], p, len);
        e->urls[e->n++][len] = '\0';
        p += len;
        while (*p == '/' || *p == ',') {
            p++;
        }
    }
    return e->n > 0 ? 0 : ftc__seterr(FTC_EINVAL, "etcd: no endpoint");
}

int ftc__etcd_create(const char *urls, int64_t attempt_ms, ftc__etcd **out)
{
    *out = NULL;
    if (urls == NULL || attempt_ms < 1) {
        return ftc__seterr(FTC_EINVAL, "etcd: no endpoints or attempt_ms < 1");
    }
    if (sodium_init() < 0 ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return ftc__seterr(FTC_ESYS, "etcd: curl or libsodium init failed");
    }
    ftc__etcd *e = ftc__calloc(1, sizeof(*e));
    if (e == NULL) {
        curl_global_cleanup();
        return ftc__seterr(FTC_ENOMEM, "etcd client");
    }
    e->attempt_ms = attempt_ms;
    ftc__buf_init(&e->answer, ETCD_ANSWER_MAX);
    int rc = parse_urls(e, urls);
    if (rc == 0) {
        e->easy = curl_easy_init();
        e->headers = curl_slist_append(NULL, "Content-Type: application/json");
        rc = e->easy == NULL || e->headers == NULL
                 ? ftc__seterr(FTC_ENOMEM, "etcd client")
                 : 0;
    }
    if (rc != 0) {
        ftc__etcd_destroy(e);
        return rc;
    }
    *out = e;
    return 0;
}

void ftc__etcd_destroy(ftc__etcd *e)
{
    if (e == NULL) {
        return;
    }
    free_urls(e);
    if (e->easy != NULL) {
        curl_easy_cleanup(e->easy);
    }
    curl_slist_free_all(e->headers);
    ftc__buf_free(&e->answer);
    ftc__free(e);
    curl_global_cleanup();
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    return ftc__buf_append(arg, p, size * n) == 0 ? size * n : 0;
}

/* One POST of text to endpoint i. 0 with *status, or a curl failure
 * described in e->error. */
static CURLcode attempt(ftc__etcd *e, size_t i, const char *path,
                        const char *text, ftc__deadline dl, long *status)
{
    char url[600];
    snprintf(url, sizeof(url), "%s%s", e->urls[i], path);
    int64_t left = ftc__deadline_left_ms(dl);
    long ms = (long)(left < e->attempt_ms ? left : e->attempt_ms);
    CURL *c = e->easy;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &e->answer);
    e->error[0] = '\0';
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, e->error);
    ftc__buf_reset(&e->answer);
    CURLcode res = curl_easy_perform(c);
    if (res == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    } else if (e->error[0] == '\0') {
        snprintf(e->error, sizeof(e->error), "%s", curl_easy_strerror(res));
    }
    return res;
}

static json_t *parse_answer(ftc__etcd *e)
{
    json_error_t err;
    return json_loadb((const char *)ftc__buf_begin(&e->answer),
                      ftc__buf_size(&e->answer), 0, &err);
}

/* gRPC codes an endpoint answers while it cannot serve (no leader, cut
 * off): another endpoint may. */
static bool unavailable(long code)
{
    return code == 4 /* DEADLINE_EXCEEDED */ || code == 14 /* UNAVAILABLE */;
}

/* etcd's error in an answer, if any: {"error": "text", "code": n} for a
 * call, {"error": {"grpc_code": n, "message": "text"}} for a stream's
 * (lease keepalive), even with HTTP 200. */
static bool answer_error(const json_t *a, const char **msg, long *code)
{
    const json_t *e = json_object_get(a, "error");
    if (e == NULL) {
        return false;
    }
    if (json_is_object(e)) {
        *msg = json_string_value(json_object_get(e, "message"));
        *code = (long)json_integer_value(json_object_get(e, "grpc_code"));
    } else {
        *msg = json_string_value(e);
        *code = (long)json_integer_value(json_object_get(a, "code"));
    }
    *msg = *msg != NULL ? *msg : "?";
    return true;
}

static void pause_until(int64_t ms, ftc__deadline dl)
{
    int64_t left = ftc__deadline_left_ms(dl);
    ms = ms < left ? ms : left;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
    while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* POSTs req (consumed) to path and returns etcd's answer object in *out,
 * trying the endpoints in turn until dl. */
static int post(ftc__etcd *e, const char *path, json_t *req, ftc__deadline dl,
                json_t **out)
{
    *out = NULL;
    char *text = NULL;
    int rc = req != NULL ? ftc__lhj_dump(req, &text, NULL)
                         : ftc__seterr(FTC_ENOMEM, "etcd request");
    json_decref(req);
    if (rc != 0) {
        return rc;
    }
    ftc__backoff bo;
    ftc__backoff_init(&bo, 20, 200);
    char last[CURL_ERROR_SIZE + 64] = "no attempt";
    for (size_t tried = 0;; tried++) {
        if (tried > 0 && tried % e->n == 0) {
            pause_until(ftc__backoff_next_ms(&bo), dl);
        }
        if (ftc__deadline_expired(dl)) {
            rc = ftc__seterr(FTC_ETIMEDOUT, "etcd %s: %s", path, last);
            break;
        }
        size_t i = e->current;
        long status = 0;
        CURLcode res = attempt(e, i, path, text, dl, &status);
        json_t *a = res == CURLE_OK ? parse_answer(e) : NULL;
        if (res != CURLE_OK) {
            snprintf(last, sizeof(last), "%s: %s", e->urls[i], e->error);
        } else if (!json_is_object(a)) {
            json_decref(a);
            rc = ftc__seterr(FTC_EPROTO, "etcd %s%s: HTTP %ld, not JSON",
                             e->urls[i], path, status);
            break;
        } else {
            const char *msg = "?";
            long code = 0;
            if (!answer_error(a, &msg, &code) && status == 200) {
                *out = a;
                rc = 0;
                break;
            }
            snprintf(last, sizeof(last), "%s: HTTP %ld: %s", e->urls[i], status,
                     msg);
            json_decref(a);
            if (!unavailable(code)) {
                /* The next call starts at another endpoint: this one may
                 * be the cause. */
                e->current = (i + 1) % e->n;
                rc = ftc__seterr(FTC_EPEER, "etcd %s: %s", path, last);
                break;
            }
        }
        e->current = (i + 1) % e->n;
    }
    ftc__free(text);
    return rc;
}

/* etcd writes 64-bit integers as strings and leaves out zeros. */
static int64_t get_i64(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) {
        return (int64_t)json_integer_value(v);
    }
    const char *s = json_string_value(v);
    return s != NULL ? (int64_t)strtoll(s, NULL, 10) : 0;
}

static json_t *i64_json(int64_t v)
{
    char s[24];
    snprintf(s, sizeof(s), "%lld", (long long)v);
    return json_string(s);
}

static json_t *b64_json(const char *text)
{
    size_t n = strlen(text);
    size_t cap = sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL);
    char *b = ftc__malloc(cap);
    if (b == NULL) {
        return NULL;
    }
    sodium_bin2base64(b, cap, (const unsigned char *)text, n,
                      sodium_base64_VARIANT_ORIGINAL);
    json_t *j = json_string(b);
    ftc__free(b);
    return j;
}

/* A base64 string of the JSON gateway into out (cap bytes with its NUL). */
static int unb64(const char *b64, char *out, size_t cap, const char *what)
{
    size_t n = 0;
    if (b64 == NULL ||
        sodium_base642bin((unsigned char *)out, cap - 1, b64, strlen(b64), NULL,
                          &n, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
        return ftc__seterr(FTC_EPROTO,
                           "etcd: a %s that is not base64 or longer than %zu B",
                           what, cap - 1);
    }
    out[n] = '\0';
    return 0;
}

/* A "kvs" entry into kv. */
static int read_kv(const json_t *o, ftc__etcd_kv *kv)
{
    memset(kv, 0, sizeof(*kv));
    kv->found = true;
    kv->create_revision = get_i64(o, "create_revision");
    kv->mod_revision = get_i64(o, "mod_revision");
    kv->lease = get_i64(o, "lease");
    const char *v = json_string_value(json_object_get(o, "value"));
    return v != NULL ? unb64(v, kv->value, sizeof(kv->value), "value") : 0;
}

/* The first of the "kvs" of a range answer into kv (absent: not found). */
static int read_range(const json_t *a, ftc__etcd_kv *kv)
{
    const json_t *kvs = json_object_get(a, "kvs");
    if (kvs != NULL && !json_is_array(kvs)) {
        return ftc__seterr(FTC_EPROTO, "etcd: kvs is not an array");
    }
    const json_t *first = json_array_get(kvs, 0);
    if (first == NULL) {
        memset(kv, 0, sizeof(*kv));
        return 0;
    }
    return json_is_object(first) ? read_kv(first, kv)
                                 : ftc__seterr(FTC_EPROTO, "etcd: bad kvs");
}

int ftc__etcd_get(ftc__etcd *e, const char *key, ftc__deadline dl,
                  ftc__etcd_kv *kv)
{
    json_t *a;
    int rc = post(e, "/v3/kv/range", json_pack("{s:o}", "key", b64_json(key)),
                  dl, &a);
    if (rc == 0) {
        rc = read_range(a, kv);
        json_decref(a);
    }
    return rc;
}

int ftc__etcd_lease_grant(ftc__etcd *e, int64_t ttl_s, ftc__deadline dl,
                          int64_t *id)
{
    json_t *a;
    int rc = post(e, "/v3/lease/grant",
                  json_pack("{s:o}", "TTL", i64_json(ttl_s)), dl, &a);
    if (rc == 0) {
        *id = get_i64(a, "ID");
        json_decref(a);
        rc = *id != 0 ? 0 : ftc__seterr(FTC_EPROTO, "etcd: a lease without ID");
    }
    return rc;
}

int ftc__etcd_lease_keepalive(ftc__etcd *e, int64_t id, ftc__deadline dl,
                              int64_t *ttl_s)
{
    json_t *a;
    int rc = post(e, "/v3/lease/keepalive",
                  json_pack("{s:o}", "ID", i64_json(id)), dl, &a);
    if (rc == 0) {
        /* A stream of one: {"result": {..., "TTL": "n"}}; no TTL: gone. */
        *ttl_s = get_i64(json_object_get(a, "result"), "TTL");
        json_decref(a);
    }
    return rc;
}

int ftc__etcd_lease_revoke(ftc__etcd *e, int64_t id, ftc__deadline dl)
{
    json_t *a;
    int rc = post(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", i64_json(id)),
                  dl, &a);
    json_decref(a);
    if (rc == FTC_EPEER && strstr(ftc_last_error(), "not found") != NULL) {
        ftc__clearerr();
        rc = 0;
    }
    return rc;
}

/* POSTs a transaction and returns whether it succeeded and its answer. */
static int txn(ftc__etcd *e, json_t *compare, json_t *success, json_t *failure,
               ftc__deadline dl, bool *ok, json_t **a)
{
    json_t *req = json_pack("{s:o, s:o, s:o}", "compare", compare, "success",
                            success, "failure", failure);
    int rc = post(e, "/v3/kv/txn", req, dl, a);
    if (rc == 0) {
        *ok = json_is_true(json_object_get(*a, "succeeded"));
    }
    return rc;
}

int ftc__etcd_put_if_absent(ftc__etcd *e, const char *key, const char *value,
                            int64_t lease, ftc__deadline dl, bool *won,
                            int64_t *revision, ftc__etcd_kv *holder)
{
    json_t *cmp =
        json_pack("[{s:o, s:s, s:s, s:s}]", "key", b64_json(key), "target",
                  "CREATE", "result", "EQUAL", "create_revision", "0");
    json_t *put =
        json_pack("[{s:{s:o, s:o, s:o}}]", "request_put", "key", b64_json(key),
                  "value", b64_json(value), "lease", i64_json(lease));
    json_t *get =
        json_pack("[{s:{s:o}}]", "request_range", "key", b64_json(key));
    json_t *a;
    int rc = txn(e, cmp, put, get, dl, won, &a);
    if (rc != 0) {
        return rc;
    }
    if (*won) {
        *revision = get_i64(json_object_get(a, "header"), "revision");
    } else if (holder != NULL) {
        const json_t *r =
            json_object_get(json_array_get(json_object_get(a, "responses"), 0),
                            "response_range");
        rc = read_range(r, holder);
    }
    json_decref(a);
    return rc;
}

int ftc__etcd_put_guarded(ftc__etcd *e, const char *guard,
                          int64_t guard_revision, const char *key,
                          int64_t key_mod_revision, const char *value,
                          ftc__deadline dl, bool *done)
{
    json_t *cmp = json_pack(
        "[{s:o, s:s, s:s, s:o}, {s:o, s:s, s:s, s:o}]", "key", b64_json(guard),
        "target", "CREATE", "result", "EQUAL", "create_revision",
        i64_json(guard_revision), "key", b64_json(key), "target", "MOD",
        "result", "EQUAL", "mod_revision", i64_json(key_mod_revision));
    json_t *put = json_pack("[{s:{s:o, s:o}}]", "request_put", "key",
                            b64_json(key), "value", b64_json(value));
    json_t *a;
    int rc = txn(e, cmp, put, json_array(), dl, done, &a);
    json_decref(a);
    return rc;
}

int ftc__etcd_list(ftc__etcd *e, const char *prefix, size_t limit,
                   ftc__deadline dl,
                   int (*each)(void *arg, const char *key,
                               const ftc__etcd_kv *kv),
                   void *arg, bool *more)
{
    size_t n = strlen(prefix);
    char end[FTC__ETCD_KEY_MAX];
    if (n == 0 || n >= sizeof(end) || (unsigned char)prefix[n - 1] == 0xff) {
        return ftc__seterr(FTC_EINVAL, "etcd list: prefix '%.40s'", prefix);
    }
    /* Every key with the prefix sorts below the prefix with its last byte
     * one higher. */
    memcpy(end, prefix, n + 1);
    end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
    json_t *a;
    int rc =
        post(e, "/v3/kv/range",
             json_pack("{s:o, s:o, s:o}", "key", b64_json(prefix), "range_end",
                       b64_json(end), "limit", i64_json((int64_t)limit)),
             dl, &a);
    if (rc != 0) {
        return rc;
    }
    *more = json_is_true(json_object_get(a, "more"));
    const json_t *kvs = json_object_get(a, "kvs");
    if (kvs != NULL && !json_is_array(kvs)) {
        rc = ftc__seterr(FTC_EPROTO, "etcd: kvs is not an array");
    }
    for (size_t i = 0; rc == 0 && i < json_array_size(kvs); i++) {
        const json_t *o = json_array_get(kvs, i);
        char key[FTC__ETCD_KEY_MAX];
        ftc__etcd_kv kv;
        rc = json_is_object(o) ? 0 : ftc__seterr(FTC_EPROTO, "etcd: bad kvs");
        if (rc == 0 && (unb64(json_string_value(json_object_get(o, "key")), key,
                              sizeof(key), "key") != 0 ||
                        read_kv(o, &kv) != 0)) {
            /* One record nobody can read must not hide the others. */
            FTC_LOG_WARN("etcd.list", "under %s: %s; left out", prefix,
                         ftc_last_error());
            continue;
        }
        rc = rc != 0 ? rc : each(arg, key, &kv);
    }
    json_decref(a);
    return rc;
}

int ftc__etcd_write_guarded(ftc__etcd *e, const char *guard,
                            int64_t guard_revision, const ftc__etcd_op *ops,
                            size_t n, ftc__deadline dl, bool *done)
{
    if (n > 128) {
        return ftc__seterr(FTC_EINVAL, "etcd: %zu writes in one transaction",
                           n);
    }
    json_t *cmp = json_pack("[{s:o, s:s, s:s, s:o}]", "key", b64_json(guard),
                            "target", "CREATE", "result", "EQUAL",
                            "create_revision", i64_json(guard_revision));
    json_t *writes = json_array();
    for (size_t i = 0; writes != NULL && i < n; i++) {
        json_t *w = ops[i].value != NULL
                        ? json_pack("{s:{s:o, s:o}}", "request_put", "key",
                                    b64_json(ops[i].key), "value",
                                    b64_json(ops[i].value))
                        : json_pack("{s:{s:o}}", "request_delete_range", "key",
                                    b64_json(ops[i].key));
        if (json_array_append_new(writes, w) != 0) {
            json_decref(writes);
            writes = NULL;
        }
    }
    if (cmp == NULL || writes == NULL) {
        json_decref(cmp);
        json_decref(writes);
        return ftc__seterr(FTC_ENOMEM, "etcd: transaction");
    }
    json_t *a = NULL;
    int rc = txn(e, cmp, writes, json_array(), dl, done, &a);
    json_decref(a);
    return rc;
}
