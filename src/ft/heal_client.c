/* The healing client: metadata from one source, then every chunk striped
 * over several sources on one libcurl multi handle, each chunk hashed as
 * it arrives and fetched again elsewhere when it is bad or lost. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "base/xxh.h"
#include "ft/heal.h"

#define HEAL_MAX_STREAMS 64

struct ftc_heal_client {
    CURLM *multi;
    atomic_bool aborted;
};

/* One transfer slot: an easy handle reused for chunk after chunk. */
typedef struct xfer {
    CURL *easy;
    XXH3_state_t *hash;
    struct fetch *ctx;
    bool busy;
    uint32_t chunk;
    size_t src;
    uint64_t off, len, got;
    size_t cursor; /* buffer holding stream position off + got */
    bool refused;  /* the answer was not 200: its body is dropped */
} xfer;

/* The state of one fetch. */
typedef struct fetch {
    ftc_heal_client *c;
    const ftc_heal_fetch *f;
    ftc_heal_meta meta;
    uint64_t *starts;   /* stream offset of each local buffer */
    uint32_t *queue;    /* chunks waiting for a transfer */
    size_t queued;      /* entries in queue */
    size_t *next_src;   /* per chunk: the source to ask next */
    uint32_t *attempts; /* per chunk */
    bool *dead;         /* per source */
    size_t n_dead;
    /* Per source, the chunk checksums of its own metadata (NULL: it has
     * none of this step). A chunk is asked only of sources whose checksum
     * for it equals the reference's: replicas may legitimately differ in
     * part of their state (DiLoCo's local parameters), and a chunk from
     * such a source would only fail its check. */
    uint64_t **hashes;
    size_t ref; /* the source whose metadata is the reference */
    uint32_t done;
    char url[FTC_HOST_MAX + 96];
    struct curl_slist *headers;
    char error[CURL_ERROR_SIZE];
    ftc_heal_fetch_result *out;
} fetch;

int ftc__heal_client_create(ftc_heal_client **out)
{
    *out = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return ftc__seterr(FTC_ESYS, "heal client: curl init failed");
    }
    ftc_heal_client *c = ftc__calloc(1, sizeof(*c));
    if (c != NULL) {
        c->multi = curl_multi_init();
    }
    if (c == NULL || c->multi == NULL) {
        ftc__free(c);
        curl_global_cleanup();
        return ftc__seterr(FTC_ENOMEM, "heal client");
    }
    *out = c;
    return 0;
}

void ftc__heal_client_destroy(ftc_heal_client *c)
{
    if (c != NULL) {
        curl_multi_cleanup(c->multi);
        ftc__free(c);
        curl_global_cleanup();
    }
}

void ftc__heal_client_abort(ftc_heal_client *c)
{
    atomic_store(&c->aborted, true);
    curl_multi_wakeup(c->multi);
}

void ftc__heal_client_clear_abort(ftc_heal_client *c)
{
    atomic_store(&c->aborted, false);
}

/* ------------------------------------------------------------ requests */

static void url_of(const char *source, int64_t step, const char *what,
                   char *out, size_t cap)
{
    snprintf(out, cap, "http://%s/v1/heal/%lld/%s", source, (long long)step,
             what);
}

static void set_common(fetch *ft, CURL *e, const char *url, ftc_deadline dl)
{
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, ft->error);
    if (ft->headers != NULL) {
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, ft->headers);
    }
    /* A source that stops sending (stopped, partitioned) is left after a
     * few seconds for another one, not waited on until the deadline. */
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 5L);
    if (!ftc__deadline_is_never(dl)) {
        long left = (long)ftc__deadline_left_ms(dl);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, left > 0 ? left : 1L);
    }
}

/* Waits for activity on the multi handle, at most until `until` (never
 * past dl): FTC_ECANCELED after an abort, FTC_ETIMEDOUT once dl passed. */
static int wait_multi(fetch *ft, ftc_deadline dl, ftc_deadline until)
{
    if (atomic_load(&ft->c->aborted)) {
        return ftc__seterr(FTC_ECANCELED, "healing aborted");
    }
    if (ftc__deadline_expired(dl)) {
        return ftc__seterr(FTC_ETIMEDOUT,
                           "healing: deadline passed (%u of %u "
                           "chunks in)",
                           ft->done, ft->meta.n_chunks);
    }
    int ms = ftc__deadline_poll_ms(ftc__deadline_min(dl, until));
    curl_multi_poll(ft->c->multi, NULL, 0, ms < 0 || ms > 1000 ? 1000 : ms,
                    NULL);
    return 0;
}

/* ------------------------------------------------------------ metadata */

static size_t on_meta(char *p, size_t size, size_t n, void *arg)
{
    return ftc__buf_append(arg, p, size * n) == 0 ? size * n : 0;
}

/* One GET of the metadata from source s: 0 with the body, FTC_ENOENT
 * ("not yet": try again later), FTC_EPEER (unreachable), FTC_EAUTH,
 * FTC_EMSGSIZE, or a poll error. */
static int get_meta_once(fetch *ft, CURL *e, size_t s, ftc_buf *body,
                         ftc_deadline dl)
{
    url_of(ft->f->sources[s], ft->f->step, "meta", ft->url, sizeof(ft->url));
    ftc__buf_reset(body);
    set_common(ft, e, ft->url, dl);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_meta);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    if (curl_multi_add_handle(ft->c->multi, e) != CURLM_OK) {
        return ftc__seterr(FTC_ENOMEM, "heal client: curl multi");
    }
    int rc = 0, running = 1;
    while (rc == 0 && running > 0) {
        curl_multi_perform(ft->c->multi, &running);
        if (running > 0) {
            rc = wait_multi(ft, dl, dl);
        }
    }
    int left;
    CURLMsg *m = curl_multi_info_read(ft->c->multi, &left);
    CURLcode res = m != NULL ? m->data.result : CURLE_ABORTED_BY_CALLBACK;
    curl_multi_remove_handle(ft->c->multi, e);
    if (rc != 0) {
        return rc;
    }
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    const char *src = ft->f->sources[s];
    if (res == CURLE_WRITE_ERROR) {
        return ftc__seterr(FTC_EMSGSIZE, "heal metadata from %s over %zu B",
                           src, body->max);
    }
    if (res != CURLE_OK) {
        return ftc__seterr(FTC_EPEER, "heal metadata from %s: %s", src,
                           ft->error[0] != '\0' ? ft->error
                                                : curl_easy_strerror(res));
    }
    if (status == 401 || status == 403) {
        return ftc__seterr(FTC_EAUTH, "heal metadata from %s: HTTP %ld", src,
                           status);
    }
    if (status == 404) {
        return ftc__seterr(FTC_ENOENT, "%s has no snapshot of step %lld yet",
                           src, (long long)ft->f->step);
    }
    if (status != 200) {
        return ftc__seterr(FTC_EPEER, "heal metadata from %s: HTTP %ld", src,
                           status);
    }
    return 0;
}

/* Decodes a metadata from source s and checks it against what was asked:
 * the step and the local layout. */
static int decode_meta(fetch *ft, size_t s, const ftc_buf *body,
                       ftc_heal_meta *m)
{
    const ftc_heal_fetch *f = ft->f;
    ftc_heal_limits lim = {
        (uint32_t)f->layout->n,
        (uint32_t)ftc__heal_chunk_count(f->layout->total, 1) + 1,
        f->layout->total};
    int rc = ftc__heal_meta_decode(ftc__buf_begin(body), ftc__buf_size(body),
                                   &lim, m);
    if (rc == FTC_EMSGSIZE) {
        /* The limits are the local layout's own sizes. */
        rc = ftc__seterr(FTC_EPROTO, "state layout differs: %s",
                         ftc_last_error());
    }
    if (rc == 0 && m->step != f->step) {
        rc = ftc__seterr(FTC_EPROTO, "%s sent step %lld, asked %lld",
                         f->sources[s], (long long)m->step, (long long)f->step);
    }
    rc =
        rc != 0 ? rc : ftc__heal_layout_check(m, f->layout->bufs, f->layout->n);
    if (rc != 0) {
        ftc__heal_meta_fini(m);
        return ftc__adderr(rc, "metadata from %s", f->sources[s]);
    }
    return 0;
}

/* The reference metadata of f->step: from the first source that has it;
 * sources that do not have it yet (they snapshot inside their own quorum)
 * are asked again with backoff until dl. */
static int get_meta(fetch *ft, CURL *e, ftc_buf *body, ftc_deadline dl)
{
    const ftc_heal_fetch *f = ft->f;
    ftc_backoff bo;
    ftc__backoff_init(&bo, 2, 100);
    char why[256] = "";
    int rc;
    for (size_t s = 0;; s = (s + 1) % f->n_sources) {
        rc = get_meta_once(ft, e, s, body, dl);
        if (rc == 0) {
            rc = decode_meta(ft, s, body, &ft->meta);
            ft->ref = s;
            break;
        }
        if (rc != FTC_ENOENT && rc != FTC_EPEER) {
            break;
        }
        /* Say why no source had it: "not yet" outranks a request that the
         * deadline cut short. */
        if (rc == FTC_ENOENT || why[0] == '\0') {
            snprintf(why, sizeof(why), "%s", ftc_last_error());
        }
        /* After a round over every source, back off before the next. */
        if (s + 1 == f->n_sources) {
            int64_t wait = ftc__backoff_next_ms(&bo);
            int64_t left = ftc__deadline_left_ms(dl);
            ftc_deadline until = ftc__deadline_in_ms(wait < left ? wait : left);
            rc = 0;
            while (rc == 0 && !ftc__deadline_expired(until)) {
                rc = wait_multi(ft, dl, until);
            }
            if (rc != 0) {
                break;
            }
        }
    }
    if (rc == FTC_ETIMEDOUT && why[0] != '\0') {
        rc = ftc__seterr(FTC_ETIMEDOUT,
                         "healing: no metadata of step %lld "
                         "by the deadline: %s",
                         (long long)f->step, why);
    }
    return rc;
}

/* The other sources' checksums, one request each: a source that has no
 * snapshot of the step, or another layout, is not used. */
static int peer_metas(fetch *ft, CURL *e, ftc_buf *body, ftc_deadline dl)
{
    ft->hashes[ft->ref] = ft->meta.chunk_hash;
    for (size_t s = 0; s < ft->f->n_sources; s++) {
        if (s == ft->ref) {
            continue;
        }
        ftc_heal_meta m;
        int rc = get_meta_once(ft, e, s, body, dl);
        if (rc == 0 && decode_meta(ft, s, body, &m) == 0) {
            ft->hashes[s] = m.chunk_hash; /* taken over */
            m.chunk_hash = NULL;
            ftc__heal_meta_fini(&m);
        } else if (rc == FTC_ECANCELED || rc == FTC_ETIMEDOUT ||
                   rc == FTC_EAUTH) {
            return rc;
        } else {
            FTC_LOG_INFO("heal.source_skipped", "%s: %s", ft->f->sources[s],
                         ftc_last_error());
        }
    }
    return 0;
}

/* -------------------------------------------------------------- chunks */

/* Writes received bytes at their place in the local buffers and hashes
 * them; more bytes than the chunk holds abort the transfer. */
static size_t on_chunk(char *p, size_t size, size_t n, void *arg)
{
    xfer *x = arg;
    size_t total = size * n;
    if (!x->refused && x->got == 0) {
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        x->refused = status != 200;
    }
    if (x->refused) {
        return 0; /* an error text: never written into the state */
    }
    if (total > x->len - x->got) {
        x->got = x->len + 1; /* marks the overrun */
        return 0;
    }
    XXH3_64bits_update(x->hash, p, total);
    fetch *ft = x->ctx;
    const ftc_heal_state *lay = ft->f->layout;
    uint64_t pos = x->off + x->got;
    x->got += total;
    while (total > 0) {
        uint64_t end = ft->starts[x->cursor] + lay->bufs[x->cursor].nbytes;
        if (pos >= end) {
            x->cursor++;
            continue;
        }
        size_t k = end - pos < total ? (size_t)(end - pos) : total;
        memcpy((uint8_t *)ft->f->dest[x->cursor] +
                   (pos - ft->starts[x->cursor]),
               p, k);
        p += k;
        pos += k;
        total -= k;
    }
    return size * n;
}

/* The index of the buffer holding stream offset off. */
static size_t buffer_at(const fetch *ft, uint64_t off)
{
    size_t lo = 0, hi = ft->f->layout->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (ft->starts[mid] <= off) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The next source from s on that is alive and holds this chunk as the
 * reference does, or SIZE_MAX if none is left. */
static size_t source_for(const fetch *ft, uint32_t chunk, size_t s)
{
    for (size_t k = 0; k < ft->f->n_sources; k++) {
        size_t i = (s + k) % ft->f->n_sources;
        if (!ft->dead[i] && ft->hashes[i] != NULL &&
            ft->hashes[i][chunk] == ft->meta.chunk_hash[chunk]) {
            return i;
        }
    }
    return SIZE_MAX;
}

static int start_chunk(fetch *ft, xfer *x, uint32_t chunk, ftc_deadline dl)
{
    size_t s = source_for(ft, chunk, ft->next_src[chunk]);
    if (s == SIZE_MAX) {
        return ftc__seterr(FTC_EPEER,
                           "healing: every source failed (last: "
                           "%s)",
                           ft->error);
    }
    char what[32];
    snprintf(what, sizeof(what), "chunk/%u", chunk);
    char url[sizeof(ft->url)];
    url_of(ft->f->sources[s], ft->f->step, what, url, sizeof(url));
    x->chunk = chunk;
    x->src = s;
    ftc__heal_chunk_range(&ft->meta, chunk, &x->off, &x->len);
    x->got = 0;
    x->refused = false;
    x->cursor = buffer_at(ft, x->off);
    XXH3_64bits_reset(x->hash);
    set_common(ft, x->easy, url, dl);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_chunk);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(ft->c->multi, x->easy) != CURLM_OK) {
        return ftc__seterr(FTC_ENOMEM, "heal client: curl multi");
    }
    x->busy = true;
    return 0;
}

/* A finished transfer: the chunk is in place, or goes back in the queue
 * for the next source (a dead or refusing source is not asked again). */
static int finish_chunk(fetch *ft, xfer *x, CURLcode res)
{
    curl_multi_remove_handle(ft->c->multi, x->easy);
    x->busy = false;
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    const char *src = ft->f->sources[x->src];
    bool whole = res == CURLE_OK && status == 200 && x->got == x->len;
    if (whole && XXH3_64bits_digest(x->hash) == ft->meta.chunk_hash[x->chunk]) {
        ft->done++;
        ft->out->bytes += x->len;
        return 0;
    }
    if (status == 401 || status == 403) {
        return ftc__seterr(FTC_EAUTH, "healing: %s refused the token", src);
    }
    bool bad = whole || x->got > x->len || (res == CURLE_OK && status == 200);
    if (bad) {
        ft->out->bad_chunks++;
        FTC_LOG_WARN("heal.bad_chunk",
                     "chunk %u of step %lld from %s: %s; fetching it again",
                     x->chunk, (long long)ft->f->step, src,
                     whole ? "checksum mismatch" : "wrong length");
    } else {
        snprintf(ft->error, sizeof(ft->error), "%s: %s", src,
                 status != 0 && status != 200 ? "no snapshot of the step"
                                              : curl_easy_strerror(res));
        if (!ft->dead[x->src]) {
            ft->dead[x->src] = true;
            ft->n_dead++;
            FTC_LOG_WARN("heal.source_lost", "healing source %s failed: %s",
                         src, ft->error);
        }
    }
    ft->out->refetched++;
    /* Each source may be tried twice for one chunk before it is given up. */
    if (++ft->attempts[x->chunk] > 2 * ft->f->n_sources) {
        return ftc__seterr(FTC_EPROTO,
                           "healing: chunk %u of step %lld bad at "
                           "every source",
                           x->chunk, (long long)ft->f->step);
    }
    ft->next_src[x->chunk] = (x->src + 1) % ft->f->n_sources;
    ft->queue[ft->queued++] = x->chunk;
    return 0;
}

static int run_chunks(fetch *ft, xfer *xs, unsigned nx, ftc_deadline dl)
{
    int rc = 0;
    while (rc == 0 && ft->done < ft->meta.n_chunks) {
        for (unsigned i = 0; rc == 0 && i < nx && ft->queued > 0; i++) {
            if (!xs[i].busy) {
                rc = start_chunk(ft, &xs[i], ft->queue[--ft->queued], dl);
            }
        }
        int running;
        curl_multi_perform(ft->c->multi, &running);
        CURLMsg *m;
        int left;
        while (rc == 0 && (m = curl_multi_info_read(ft->c->multi, &left))) {
            if (m->msg == CURLMSG_DONE) {
                xfer *x;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &x);
                rc = finish_chunk(ft, x, m->data.result);
            }
        }
        if (rc == 0 && ft->done < ft->meta.n_chunks && running > 0) {
            rc = wait_multi(ft, dl, dl);
        }
    }
    return rc;
}

/* Allocates the per-chunk and per-source tables; chunks are queued so
 * that the lowest indexes start first (the queue pops from its end). */
static int prepare(fetch *ft)
{
    const ftc_heal_fetch *f = ft->f;
    uint32_t n = ft->meta.n_chunks;
    size_t nc = n > 0 ? n : 1;
    ft->starts = ftc__calloc(f->layout->n + 1, sizeof(*ft->starts));
    ft->queue = ftc__calloc(nc, sizeof(*ft->queue));
    ft->next_src = ftc__calloc(nc, sizeof(*ft->next_src));
    ft->attempts = ftc__calloc(nc, sizeof(*ft->attempts));
    ft->dead = ftc__calloc(f->n_sources, sizeof(*ft->dead));
    if (ft->starts == NULL || ft->queue == NULL || ft->next_src == NULL ||
        ft->attempts == NULL || ft->dead == NULL) {
        return ftc__seterr(FTC_ENOMEM, "healing tables for %u chunks", n);
    }
    for (size_t j = 0; j < f->layout->n; j++) {
        ft->starts[j + 1] = ft->starts[j] + f->layout->bufs[j].nbytes;
    }
    for (uint32_t i = 0; i < n; i++) {
        ft->queue[i] = n - 1 - i;
        ft->next_src[i] = i % f->n_sources;
    }
    ft->queued = n;
    return 0;
}

static void fetch_free(fetch *ft, xfer *xs, unsigned nx)
{
    for (unsigned i = 0; i < nx; i++) {
        if (xs[i].busy) {
            curl_multi_remove_handle(ft->c->multi, xs[i].easy);
        }
        curl_easy_cleanup(xs[i].easy);
        XXH3_freeState(xs[i].hash);
    }
    ftc__free(ft->starts);
    ftc__free(ft->queue);
    ftc__free(ft->next_src);
    ftc__free(ft->attempts);
    ftc__free(ft->dead);
    for (size_t s = 0; ft->hashes != NULL && s < ft->f->n_sources; s++) {
        if (s != ft->ref || ft->hashes[s] != ft->meta.chunk_hash) {
            ftc__free(ft->hashes[s]);
        }
    }
    ftc__free(ft->hashes);
    curl_slist_free_all(ft->headers);
    ftc__heal_meta_fini(&ft->meta);
}

static int make_headers(fetch *ft, const char *token)
{
    if (token == NULL) {
        return 0;
    }
    char line[FTC_HOST_MAX + 32];
    int n = snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return ftc__seterr(FTC_EINVAL, "healing token too long");
    }
    ft->headers = curl_slist_append(NULL, line);
    return ft->headers != NULL ? 0 : ftc__seterr(FTC_ENOMEM, "headers");
}

int ftc__heal_client_fetch(ftc_heal_client *c, const ftc_heal_fetch *f,
                           ftc_deadline dl, ftc_heal_fetch_result *out)
{
    memset(out, 0, sizeof(*out));
    if (f->n_sources == 0 || f->sources == NULL ||
        (f->layout->n > 0 && f->dest == NULL)) {
        return ftc__seterr(FTC_EINVAL, "healing: no source or destination");
    }
    fetch ft;
    memset(&ft, 0, sizeof(ft));
    ft.c = c;
    ft.f = f;
    ft.out = out;
    unsigned nx = f->streams > 0 ? f->streams : 4;
    nx = nx < HEAL_MAX_STREAMS ? nx : HEAL_MAX_STREAMS;
    xfer xs[HEAL_MAX_STREAMS];
    memset(xs, 0, sizeof(xs));
    int rc = make_headers(&ft, f->token);
    for (unsigned i = 0; rc == 0 && i < nx; i++) {
        xs[i].ctx = &ft;
        xs[i].easy = curl_easy_init();
        xs[i].hash = XXH3_createState();
        if (xs[i].easy == NULL || xs[i].hash == NULL) {
            rc = ftc__seterr(FTC_ENOMEM, "heal client transfers");
        }
    }
    ft.hashes = ftc__calloc(f->n_sources, sizeof(*ft.hashes));
    if (rc == 0 && ft.hashes == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "healing sources");
    }
    ftc_buf body;
    ftc__buf_init(&body,
                  f->max_meta_bytes > 0 ? f->max_meta_bytes : (size_t)64 << 20);
    rc = rc != 0 ? rc : get_meta(&ft, xs[0].easy, &body, dl);
    rc = rc != 0 ? rc : peer_metas(&ft, xs[0].easy, &body, dl);
    ftc__buf_free(&body);
    rc = rc != 0 ? rc : prepare(&ft);
    rc = rc != 0 ? rc : run_chunks(&ft, xs, nx, dl);
    if (rc == 0) {
        out->step = ft.meta.step;
        out->batches_committed = ft.meta.batches_committed;
        out->chunks = ft.meta.n_chunks;
        for (size_t s = 0; s < f->n_sources; s++) {
            out->sources += ft.hashes[s] != NULL;
        }
    }
    fetch_free(&ft, xs, nx);
    return rc;
}
