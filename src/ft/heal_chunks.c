/* The healing client's chunk transfers: chunks striped over the sources
 * that hold the reference's bytes, received on several threads (lanes,
 * each a multi handle with its share of the transfers: one thread cannot
 * both receive and place the bytes as fast as loopback TCP carries them),
 * each chunk hashed as it arrives and fetched again when bad or lost. */
#include <stdio.h>
#include <string.h>

#include "ft/heal_client_int.h"

typedef ftc_heal_fetch_state fetch;
typedef ftc_heal_xfer xfer;

/* Writes received bytes at their place in the local buffers and hashes
 * them; more bytes than the chunk holds abort the transfer. Runs on the
 * transfer's lane, without the lock: it touches only its transfer and its
 * chunk's bytes. */
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

/* Starts chunk on x (ft->mu held). */
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
    char url[FTC_HOST_MAX + 96];
    ftc__heal_url(ft->f->sources[s], ft->f->step, what, url, sizeof(url));
    x->chunk = chunk;
    x->src = s;
    x->incident = ft->incidents[s];
    ftc__heal_chunk_range(&ft->meta, chunk, &x->off, &x->len);
    x->got = 0;
    x->refused = false;
    x->cursor = buffer_at(ft, x->off);
    XXH3_64bits_reset(x->hash);
    ftc__heal_request(ft, x->easy, url, x->error, dl);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_chunk);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    if (curl_multi_add_handle(x->multi, x->easy) != CURLM_OK) {
        return ftc__seterr(FTC_ENOMEM, "heal client: curl multi");
    }
    x->busy = true;
    return 0;
}

/* A transfer that failed without a bad answer (closed, refused, timed out,
 * 404): the source is given up after two such failures in a row, since
 * one may be its server restarting (ftc__heal_server_reclaim). ft->mu
 * held. */
static void source_failed(fetch *ft, const xfer *x, long status, CURLcode res)
{
    const char *src = ft->f->sources[x->src];
    snprintf(ft->error, sizeof(ft->error), "%s: %s", src,
             status != 0 && status != 200 ? "no snapshot of the step"
             : x->error[0] != '\0'        ? x->error
                                          : curl_easy_strerror(res));
    if (x->incident != ft->incidents[x->src] || ft->dead[x->src]) {
        return; /* the same failure as an earlier transfer's */
    }
    ft->incidents[x->src]++;
    if (++ft->strikes[x->src] < 2) {
        FTC_LOG_INFO("heal.source_retry",
                     "healing source %s: %s; asking "
                     "it again",
                     src, ft->error);
        return;
    }
    ft->dead[x->src] = true;
    FTC_LOG_WARN("heal.source_lost", "healing source %s failed: %s", src,
                 ft->error);
}

/* A finished transfer: the chunk is in place, or goes back in the queue
 * for the next source (a dead or refusing source is not asked again).
 * ft->mu held. */
static int finish_chunk(fetch *ft, xfer *x, CURLcode res)
{
    curl_multi_remove_handle(x->multi, x->easy);
    x->busy = false;
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    const char *src = ft->f->sources[x->src];
    bool whole = res == CURLE_OK && status == 200 && x->got == x->len;
    if (whole && XXH3_64bits_digest(x->hash) == ft->meta.chunk_hash[x->chunk]) {
        ft->strikes[x->src] = 0;
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
        source_failed(ft, x, status, res);
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

/* ---------------------------------------------------------------- lanes */

typedef struct lane {
    fetch *ft;
    CURLM *multi;
    xfer *xs;
    unsigned nx;
    ftc_deadline dl;
} lane;

/* Wakes every lane: a chunk went back in the queue, or the fetch ended. */
static void wake_lanes(fetch *ft)
{
    for (unsigned i = 0; i < ft->lanes; i++) {
        curl_multi_wakeup(ft->c->multi[i]);
    }
}

/* Records a lane's failure (ft->mu held): the first one ends the fetch. */
static void fail(fetch *ft, int rc)
{
    if (ft->rc == 0) {
        ft->rc = rc;
        snprintf(ft->rc_msg, sizeof(ft->rc_msg), "%s", ftc_last_error());
    }
}

/* Starts a chunk on every idle transfer of the lane; false once the fetch
 * is over (every chunk in, or a failure). */
static bool lane_start(lane *l)
{
    fetch *ft = l->ft;
    pthread_mutex_lock(&ft->mu);
    for (unsigned i = 0; ft->rc == 0 && i < l->nx && ft->queued > 0; i++) {
        if (!l->xs[i].busy) {
            int rc = start_chunk(ft, &l->xs[i], ft->queue[--ft->queued], l->dl);
            if (rc != 0) {
                fail(ft, rc);
            }
        }
    }
    bool go = ft->rc == 0 && ft->done < ft->meta.n_chunks;
    pthread_mutex_unlock(&ft->mu);
    return go;
}

static void *lane_main(void *arg)
{
    lane *l = arg;
    fetch *ft = l->ft;
    while (lane_start(l)) {
        int running;
        curl_multi_perform(l->multi, &running);
        CURLMsg *m;
        int left;
        bool wake = false;
        while ((m = curl_multi_info_read(l->multi, &left)) != NULL) {
            if (m->msg != CURLMSG_DONE) {
                continue;
            }
            xfer *x;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &x);
            pthread_mutex_lock(&ft->mu);
            int rc = finish_chunk(ft, x, m->data.result);
            if (rc != 0) {
                fail(ft, rc);
            }
            wake = wake || rc != 0 || ft->queued > 0 ||
                   ft->done == ft->meta.n_chunks;
            pthread_mutex_unlock(&ft->mu);
        }
        if (wake) {
            wake_lanes(ft);
        }
        int rc = ftc__heal_wait(ft, l->multi, l->dl, l->dl);
        if (rc != 0) {
            pthread_mutex_lock(&ft->mu);
            fail(ft, rc);
            pthread_mutex_unlock(&ft->mu);
            wake_lanes(ft);
        }
    }
    return NULL;
}

int ftc__heal_chunks_run(fetch *ft, xfer *xs, unsigned nx, ftc_deadline dl)
{
    lane ls[FTC__HEAL_MAX_LANES];
    pthread_t th[FTC__HEAL_MAX_LANES];
    unsigned n = ft->lanes;
    for (unsigned i = 0; i < n; i++) {
        /* Lane i takes transfers [i * nx / n, (i + 1) * nx / n). */
        unsigned a = i * nx / n, b = (i + 1) * nx / n;
        ls[i] = (lane){ft, ft->c->multi[i], xs + a, b - a, dl};
        for (unsigned k = a; k < b; k++) {
            xs[k].multi = ft->c->multi[i];
        }
    }
    unsigned started = 1;
    for (; started < n; started++) {
        if (ftc__thread_start(&th[started], "ftc-heal-lane", lane_main,
                              &ls[started]) != 0) {
            break;
        }
    }
    /* Fewer lanes if threads are short: lane 0 takes over their shares
     * (their transfers are idle, so it may). */
    for (unsigned i = started; i < n; i++) {
        for (unsigned k = 0; k < ls[i].nx; k++) {
            ls[i].xs[k].multi = ls[0].multi;
        }
        ls[0].nx += ls[i].nx;
    }
    lane_main(&ls[0]);
    for (unsigned i = 1; i < started; i++) {
        pthread_join(th[i], NULL);
    }
    if (ft->rc != 0) {
        return ftc__seterr(ft->rc, "%s", ft->rc_msg);
    }
    return 0;
}

/* ---------------------------------------------------------------- tables */

int ftc__heal_chunks_prepare(fetch *ft)
{
    const ftc_heal_fetch *f = ft->f;
    uint32_t n = ft->meta.n_chunks;
    size_t nc = n > 0 ? n : 1;
    ft->starts = ftc__calloc(f->layout->n + 1, sizeof(*ft->starts));
    ft->queue = ftc__calloc(nc, sizeof(*ft->queue));
    ft->next_src = ftc__calloc(nc, sizeof(*ft->next_src));
    ft->attempts = ftc__calloc(nc, sizeof(*ft->attempts));
    ft->dead = ftc__calloc(f->n_sources, sizeof(*ft->dead));
    ft->incidents = ftc__calloc(f->n_sources, sizeof(*ft->incidents));
    ft->strikes = ftc__calloc(f->n_sources, sizeof(*ft->strikes));
    if (ft->starts == NULL || ft->queue == NULL || ft->next_src == NULL ||
        ft->attempts == NULL || ft->dead == NULL || ft->incidents == NULL ||
        ft->strikes == NULL) {
        return ftc__seterr(FTC_ENOMEM, "healing tables for %u chunks", n);
    }
    for (size_t j = 0; j < f->layout->n; j++) {
        ft->starts[j + 1] = ft->starts[j] + f->layout->bufs[j].nbytes;
    }
    /* Chunks are queued so that the lowest indexes start first (the
     * queue pops from its end), striped over the sources. */
    for (uint32_t i = 0; i < n; i++) {
        ft->queue[i] = n - 1 - i;
        ft->next_src[i] = i % f->n_sources;
    }
    ft->queued = n;
    return 0;
}

void ftc__heal_chunks_free(fetch *ft)
{
    ftc__free(ft->starts);
    ftc__free(ft->queue);
    ftc__free(ft->next_src);
    ftc__free(ft->attempts);
    ftc__free(ft->dead);
    ftc__free(ft->incidents);
    ftc__free(ft->strikes);
}
