/* The healing client: the handle, its requests, the reference metadata
 * from one source and the other sources' checksums, then the chunks
 * (heal_chunks.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ft/heal/heal_client_int.h"
#include "ft/http_tls.h"

typedef ftc__heal_fetch_state fetch;
typedef ftc__heal_xfer xfer;

int ftc__heal_client_create(ftc__heal_client **out)
{
    *out = NULL;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        return ftc__seterr(FTC_ESYS, "heal client: curl init failed");
    }
    int rc = 0;
    ftc__heal_client *c = ftc__calloc(1, sizeof(*c));
    if (c == NULL) {
        FTC__FAIL(FTC_ENOMEM, "heal client");
    }
    c->abort_ev.fd = -1;
    if (ftc__event_open(&c->abort_ev) != 0) {
        FTC__FAIL(FTC_ENOMEM, "heal client");
    }
    for (int i = 0; i < FTC__HEAL_MAX_LANES; i++) {
        c->multi[i] = curl_multi_init();
        if (c->multi[i] == NULL) {
            FTC__FAIL(FTC_ENOMEM, "heal client");
        }
    }
    *out = c;
    return 0;
fail:
    FTC__KEEP_MESSAGE(ftc__heal_client_destroy(c));
    return rc;
}

void ftc__heal_client_destroy(ftc__heal_client *c)
{
    if (c != NULL) {
        for (int i = 0; i < FTC__HEAL_MAX_LANES; i++) {
            curl_multi_cleanup(c->multi[i]);
        }
        ftc__event_close(&c->abort_ev);
        ftc__free(c->tls_ca);
        ftc__free(c);
        curl_global_cleanup();
    }
}

void ftc__heal_client_abort(ftc__heal_client *c)
{
    atomic_store(&c->aborted, true);
    ftc__event_signal(&c->abort_ev);
    curl_multi_wakeup(c->multi[0]);
}

void ftc__heal_client_clear_abort(ftc__heal_client *c)
{
    atomic_store(&c->aborted, false);
    ftc__event_clear(&c->abort_ev);
}

bool ftc__heal_client_aborted(ftc__heal_client *c)
{
    return atomic_load(&c->aborted);
}

/* ------------------------------------------------------------ requests */

const char *ftc__heal_source_hostport(const char *source, bool *tls)
{
    *tls = strncmp(source, "https://", 8) == 0;
    if (*tls) {
        return source + 8;
    }
    return strncmp(source, "http://", 7) == 0 ? source + 7 : source;
}

void ftc__heal_url(const char *source, int64_t step, const char *what,
                   char *out, size_t cap)
{
    bool tls;
    const char *hostport = ftc__heal_source_hostport(source, &tls);
    snprintf(out, cap, "%s://%s/v1/heal/%lld/%s", tls ? "https" : "http",
             hostport, (long long)step, what);
}

int ftc__heal_client_tls(ftc__heal_client *c, const char *ca_file,
                         bool insecure)
{
    char *ca = ca_file != NULL ? ftc__strdup(ca_file) : NULL;
    if (ca_file != NULL && ca == NULL) {
        return ftc__seterr(FTC_ENOMEM, "heal client");
    }
    ftc__free(c->tls_ca);
    c->tls_ca = ca;
    c->insecure = insecure;
    return 0;
}

int ftc__heal_token_may_go(const ftc__heal_client *c, const char *source)
{
    char url[FTC__HEAL_ADDR_MAX + 16];
    ftc__heal_url(source, 0, "", url, sizeof(url));
    return ftc__http_token_may_go(url, c->insecure);
}

void ftc__heal_request(fetch *ft, CURL *e, const char *url, char *errbuf,
                       ftc__deadline dl)
{
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 512L * 1024);
    ftc__http_tls_curl(e, ft->c->tls_ca);
    errbuf[0] = '\0';
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
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

int ftc__heal_check(fetch *ft, ftc__deadline dl)
{
    if (atomic_load(&ft->c->aborted)) {
        return ftc__seterr(FTC_ECANCELED, "healing aborted");
    }
    if (ftc__deadline_expired(dl)) {
        pthread_mutex_lock(&ft->mu);
        uint32_t done = ft->done;
        pthread_mutex_unlock(&ft->mu);
        return ftc__seterr(FTC_ETIMEDOUT,
                           "healing: deadline passed (%u of %u "
                           "chunks in)",
                           done, ft->meta.n_chunks);
    }
    return 0;
}

int ftc__heal_wait(fetch *ft, CURLM *multi, ftc__deadline dl,
                   ftc__deadline until)
{
    int rc = ftc__heal_check(ft, dl);
    if (rc != 0) {
        return rc;
    }
    int ms = ftc__deadline_poll_ms(ftc__deadline_min(dl, until));
    curl_multi_poll(multi, NULL, 0, ms < 0 || ms > 1000 ? 1000 : ms, NULL);
    return 0;
}

/* ------------------------------------------------------------ metadata */

static size_t on_meta(char *p, size_t size, size_t n, void *arg)
{
    return ftc__buf_append(arg, p, size * n) == 0 ? size * n : 0;
}

/* One GET of the metadata from source s: 0 with the body, FTC_ENOENT
 * ("not yet": try again later), FTC_EPEER (unreachable; or, with x->gone,
 * HTTP 410: it will not serve the step), FTC_EAUTH, FTC_EMSGSIZE, or a
 * poll error. */
static int get_meta_once(fetch *ft, xfer *x, size_t s, ftc__buf *body,
                         ftc__deadline dl)
{
    CURL *e = x->easy;
    CURLM *multi = ft->c->multi[0];
    char url[FTC_HOST_MAX + 96];
    ftc__heal_url(ft->f->sources[s], ft->f->step, "meta", url, sizeof(url));
    ftc__buf_reset(body);
    x->gone = false;
    ftc__heal_request(ft, e, url, x->error, dl);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_meta);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    if (curl_multi_add_handle(multi, e) != CURLM_OK) {
        return ftc__seterr(FTC_ENOMEM, "heal client: curl multi");
    }
    int rc = 0, running = 1;
    while (rc == 0 && running > 0) {
        curl_multi_perform(multi, &running);
        if (running > 0) {
            rc = ftc__heal_wait(ft, multi, dl, dl);
        }
    }
    int left;
    CURLMsg *m = curl_multi_info_read(multi, &left);
    CURLcode res = m != NULL ? m->data.result : CURLE_ABORTED_BY_CALLBACK;
    curl_multi_remove_handle(multi, e);
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
        /* A certificate refused is a refusal, as a 401 is: not retried. */
        return ftc__seterr(ftc__http_tls_refused(res) ? FTC_EAUTH : FTC_EPEER,
                           "heal metadata from %s: %s", src,
                           x->error[0] != '\0' ? x->error
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
    if (status == 410) {
        x->gone = true;
        return ftc__seterr(FTC_EPEER,
                           "%s cannot serve step %lld (it could not "
                           "take its snapshot: HTTP 410)",
                           src, (long long)ft->f->step);
    }
    if (status != 200) {
        return ftc__seterr(FTC_EPEER, "heal metadata from %s: HTTP %ld", src,
                           status);
    }
    return 0;
}

/* Decodes a metadata from source s and checks it against what was asked:
 * the step and the layout (the local one, or the one adopted; none
 * before the reference metadata of an adopting fetch, which is bounded
 * by max_adopt_bytes only). */
static int decode_meta(fetch *ft, size_t s, const ftc__buf *body,
                       ftc__heal_meta *m)
{
    const ftc__heal_fetch *f = ft->f;
    const ftc__heal_state *lay = ft->layout;
    ftc__heal_limits lim = {FTC__HEAL_ADOPT_MAX_BUFFERS,
                            FTC__HEAL_ADOPT_MAX_CHUNKS, f->max_adopt_bytes};
    if (lay != NULL) {
        lim = (ftc__heal_limits){
            (uint32_t)lay->n,
            (uint32_t)ftc__heal_chunk_count(lay->total, 1) + 1, lay->total};
    }
    int rc = ftc__heal_meta_decode(ftc__buf_begin(body), ftc__buf_size(body),
                                   &lim, m);
    if (rc == FTC_EMSGSIZE && lay != NULL) {
        /* The limits are the local layout's own sizes. */
        rc = ftc__seterr(FTC_EPROTO, "state layout differs: %s",
                         ftc_last_error());
    }
    if (rc == 0 && m->step != f->step) {
        rc = ftc__seterr(FTC_EPROTO, "%s sent step %lld, asked %lld",
                         f->sources[s], (long long)m->step, (long long)f->step);
    }
    if (rc == 0 && lay != NULL) {
        rc = ftc__heal_layout_check(m, lay->bufs, lay->n);
    }
    if (rc != 0) {
        ftc__heal_meta_fini(m);
        return ftc__adderr(rc, "metadata from %s", f->sources[s]);
    }
    return 0;
}

/* The reference metadata of f->step: from the first source that has it;
 * sources that do not have it yet (they checksum their state inside their
 * own quorum round, 10-20 ms per 256 MiB) are asked again, at most 4 ms
 * later (a healer waits for nothing else), until dl. A source that says it
 * will not serve the step (410) is not asked again; once every source
 * said so, the fetch fails at once (FTC_EPEER). */
static int get_meta(fetch *ft, xfer *x, ftc__buf *body, ftc__deadline dl)
{
    const ftc__heal_fetch *f = ft->f;
    ftc__backoff bo;
    ftc__backoff_init(&bo, 1, 4);
    char why[256] = "";
    size_t n_gone = 0;
    bool *gone = ftc__calloc(f->n_sources, sizeof(*gone));
    if (gone == NULL) {
        return ftc__seterr(FTC_ENOMEM, "healing sources");
    }
    int rc = 0;
    for (size_t s = 0;; s = (s + 1) % f->n_sources) {
        if (n_gone == f->n_sources) {
            rc = ftc__seterr(FTC_EPEER, "no source can serve step %lld: %s",
                             (long long)f->step, why);
            break;
        }
        rc = gone[s] ? FTC_EPEER : get_meta_once(ft, x, s, body, dl);
        if (rc == 0) {
            rc = decode_meta(ft, s, body, &ft->meta);
            ft->ref = s;
            if (rc == 0 && f->adopt != NULL) {
                rc = f->adopt(f->adopt_user, &ft->meta, &ft->layout, &ft->dest);
            }
            break;
        }
        if (rc != FTC_ENOENT && rc != FTC_EPEER) {
            break;
        }
        /* Say why no source had it: "not yet" outranks a request that the
         * deadline cut short; a refusal outranks both. */
        if (!gone[s] && (rc == FTC_ENOENT || x->gone || why[0] == '\0')) {
            snprintf(why, sizeof(why), "%s", ftc_last_error());
        }
        if (!gone[s] && x->gone) {
            gone[s] = true;
            n_gone++;
            continue;
        }
        /* After a round over every source, back off before the next. */
        if (s + 1 == f->n_sources) {
            int64_t wait = ftc__backoff_next_ms(&bo);
            int64_t left = ftc__deadline_left_ms(dl);
            ftc__deadline until =
                ftc__deadline_in_ms(wait < left ? wait : left);
            rc = 0;
            while (rc == 0 && !ftc__deadline_expired(until)) {
                rc = ftc__heal_wait(ft, ft->c->multi[0], dl, until);
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
    ftc__free(gone);
    return rc;
}

/* The other sources' checksums, one request each: a source that has no
 * snapshot of the step, or another layout, is not used. */
static int peer_metas(fetch *ft, xfer *x, ftc__buf *body, ftc__deadline dl)
{
    ft->hashes[ft->ref] = ft->meta.chunk_hash;
    for (size_t s = 0; s < ft->f->n_sources; s++) {
        if (s == ft->ref) {
            continue;
        }
        ftc__heal_meta m;
        int rc = get_meta_once(ft, x, s, body, dl);
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

static void fetch_free(fetch *ft, xfer *xs, unsigned nx)
{
    for (unsigned i = 0; i < nx; i++) {
        ftc__heal_tls_close(xs[i].tls);
        if (xs[i].fd >= 0) {
            close(xs[i].fd);
        }
        curl_easy_cleanup(xs[i].easy);
        XXH3_freeState(xs[i].hash);
    }
    ftc__heal_chunks_free(ft);
    for (size_t s = 0; ft->hashes != NULL && s < ft->f->n_sources; s++) {
        if (s != ft->ref || ft->hashes[s] != ft->meta.chunk_hash) {
            ftc__free(ft->hashes[s]);
        }
    }
    ftc__free(ft->hashes);
    curl_slist_free_all(ft->headers);
    ftc__heal_trust_free(ft->trust);
    ftc__heal_meta_fini(&ft->meta);
    pthread_mutex_destroy(&ft->mu);
}

int ftc__heal_auth_header(const char *token, struct curl_slist **out)
{
    *out = NULL;
    if (token == NULL) {
        return 0;
    }
    char line[FTC_HOST_MAX + 32];
    int n = snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return ftc__seterr(FTC_EINVAL, "healing token too long");
    }
    *out = curl_slist_append(NULL, line);
    return *out != NULL ? 0 : ftc__seterr(FTC_ENOMEM, "headers");
}

int ftc__heal_client_fetch(ftc__heal_client *c, const ftc__heal_fetch *f,
                           ftc__deadline dl, ftc__heal_fetch_result *out)
{
    memset(out, 0, sizeof(*out));
    if (f->n_sources == 0 || f->sources == NULL ||
        (f->adopt == NULL &&
         (f->layout == NULL || (f->layout->n > 0 && f->dest == NULL)))) {
        return ftc__seterr(FTC_EINVAL, "healing: no source or destination");
    }
    fetch ft;
    memset(&ft, 0, sizeof(ft));
    ft.c = c;
    ft.f = f;
    if (f->adopt == NULL) {
        ft.layout = f->layout;
        ft.dest = f->dest;
    }
    ft.out = out;
    pthread_mutex_init(&ft.mu, NULL);
    unsigned nx = f->streams > 0 ? f->streams : 4;
    nx = nx < FTC__HEAL_MAX_STREAMS ? nx : FTC__HEAL_MAX_STREAMS;
    ft.lanes = f->threads > 0 ? f->threads : 2;
    ft.lanes = ft.lanes < FTC__HEAL_MAX_LANES ? ft.lanes : FTC__HEAL_MAX_LANES;
    ft.lanes = ft.lanes < nx ? ft.lanes : nx;
    xfer xs[FTC__HEAL_MAX_STREAMS];
    memset(xs, 0, sizeof(xs));
    for (unsigned i = 0; i < nx; i++) {
        xs[i].fd = -1;
    }
    ftc__buf body;
    ftc__buf_init(&body,
                  f->max_meta_bytes > 0 ? f->max_meta_bytes : (size_t)64 << 20);
    int rc = 0;
    bool any_tls = false;
    for (size_t s = 0; s < f->n_sources; s++) {
        bool tls;
        ftc__heal_source_hostport(f->sources[s], &tls);
        any_tls |= tls;
        if (f->token != NULL) {
            FTC__CHECK(ftc__heal_token_may_go(c, f->sources[s]));
        }
    }
    if (any_tls) {
        FTC__CHECK(ftc__heal_trust_load(c->tls_ca, &ft.trust));
    }
    FTC__CHECK(ftc__heal_auth_header(f->token, &ft.headers));
    for (unsigned i = 0; i < nx; i++) {
        xs[i].ctx = &ft;
        xs[i].easy = curl_easy_init();
        xs[i].hash = XXH3_createState();
        if (xs[i].easy == NULL || xs[i].hash == NULL) {
            FTC__FAIL(FTC_ENOMEM, "heal client transfers");
        }
    }
    ft.hashes = ftc__calloc(f->n_sources, sizeof(*ft.hashes));
    if (ft.hashes == NULL) {
        FTC__FAIL(FTC_ENOMEM, "healing sources");
    }
    FTC__CHECK(get_meta(&ft, &xs[0], &body, dl));
    if (f->progress != NULL) {
        atomic_store(&f->progress->total_bytes, ft.meta.total_bytes);
    }
    FTC__CHECK(peer_metas(&ft, &xs[0], &body, dl));
    ftc__buf_free(&body); /* before the chunks: it may be large */
    FTC__CHECK(ftc__heal_chunks_prepare(&ft));
    FTC__CHECK(ftc__heal_chunks_run(&ft, xs, nx, dl));
    out->step = ft.meta.step;
    out->batches_committed = ft.meta.batches_committed;
    out->chunks = ft.meta.n_chunks;
    for (size_t s = 0; s < f->n_sources; s++) {
        out->sources += ft.hashes[s] != NULL;
    }
fail:
    ftc__buf_free(&body);
    fetch_free(&ft, xs, nx);
    return rc;
}
