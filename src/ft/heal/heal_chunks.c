/* The healing client's chunk transfers: chunks striped over the sources
 * that hold the reference's bytes, received on several threads (lanes,
 * each with its share of the transfers: one thread cannot both receive
 * and hash the bytes as fast as loopback TCP carries them), each chunk
 * received straight into its place in the destination over a plain
 * HTTP/1.1 keep-alive connection (no staging copy), hashed right after
 * each read while the bytes are in the cache, and fetched again when bad
 * or lost. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ft/heal/heal_client_int.h"

typedef ftc__heal_fetch_state fetch;
typedef ftc__heal_xfer xfer;

/* A source that sends nothing for this long is left for another one,
 * not waited on until the deadline (a stopped or partitioned host). */
#define FTC__HEAL_STALL_MS 5000
/* Connecting to a source: refused or unreachable for this long is a
 * failure of the transfer (another source is asked). Short: a refused
 * connection means a source that is gone, and the lane waits meanwhile;
 * long enough for a few tries and a handshake across a data centre. */
#define FTC__HEAL_CONNECT_MS 250
/* Bytes received per call: small enough that the hash reads them from
 * the cache right after the kernel wrote them. */
#define FTC__HEAL_RECV_BYTES ((size_t)256 << 10)

/* The index of the buffer holding stream offset off. */
static size_t buffer_at(const fetch *ft, uint64_t off)
{
    size_t lo = 0, hi = ft->layout->n;
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

/* Assigns chunk to x (ft->mu held); its request is sent by its lane
 * outside the lock (send_request). */
static int start_chunk(fetch *ft, xfer *x, uint32_t chunk)
{
    size_t s = source_for(ft, chunk, ft->next_src[chunk]);
    if (s == SIZE_MAX) {
        return ftc__seterr(FTC_EPEER,
                           "healing: every source failed (last: "
                           "%s)",
                           ft->error);
    }
    x->chunk = chunk;
    x->src = s;
    x->incident = ft->incidents[s];
    ftc__heal_chunk_range(&ft->meta, chunk, &x->off, &x->len);
    x->got = 0;
    x->cursor = buffer_at(ft, x->off);
    XXH3_64bits_reset(x->hash);
    x->busy = true;
    return 0;
}

/* A transfer that failed without a bad answer (closed, refused, stalled,
 * not 200): the source is given up after two such failures in a row,
 * since one may be its server restarting (ftc__heal_server_reclaim).
 * ft->mu held. */
static void source_failed(fetch *ft, const xfer *x)
{
    const char *src = ft->f->sources[x->src];
    snprintf(ft->error, sizeof(ft->error), "%s: %s", src,
             x->status != 0 && x->status != 200 ? "no snapshot of the step"
                                                : x->error);
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

/* Closes x's connection. */
static void disconnect(xfer *x)
{
    ftc__heal_tls_close(x->tls);
    x->tls = NULL;
    if (x->fd >= 0) {
        close(x->fd);
        x->fd = -1;
    }
}

/* A finished transfer (io: the whole answer came): the chunk is in place,
 * or goes back in the queue for the next source (a dead or refusing
 * source is not asked again). ft->mu held. */
static int finish_chunk(fetch *ft, xfer *x, bool io)
{
    x->busy = false;
    const char *src = ft->f->sources[x->src];
    bool whole = io && x->status == 200 && x->got == x->len;
    if (!whole || x->close) {
        disconnect(x); /* what is left of the answer is not read */
    }
    if (whole && XXH3_64bits_digest(x->hash) == ft->meta.chunk_hash[x->chunk]) {
        ft->strikes[x->src] = 0;
        ft->done++;
        ft->out->bytes += x->len;
        if (ft->f->progress != NULL) {
            atomic_fetch_add(&ft->f->progress->bytes, x->len);
        }
        return 0;
    }
    if (x->status == 401 || x->status == 403) {
        return ftc__seterr(FTC_EAUTH, "healing: %s refused the token", src);
    }
    bool bad = whole || (io && x->status == 200);
    if (bad) {
        ft->out->bad_chunks++;
        FTC_LOG_WARN("heal.bad_chunk",
                     "chunk %u of step %lld from %s: %s; fetching it again",
                     x->chunk, (long long)ft->f->step, src,
                     whole ? "checksum mismatch" : "wrong length");
    } else {
        source_failed(ft, x);
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

/* ------------------------------------------------------------- transfer */

/* Sends x's request ("GET .../chunk/<i>", keep-alive), connecting first
 * when x has no connection to its source. False with x->error set when
 * the source cannot be reached. */
/* Connects x to its source (with TLS for an https one). False with
 * x->error set when it cannot. */
static bool connect_source(fetch *ft, xfer *x, ftc__deadline dl)
{
    bool tls;
    const char *src = ftc__heal_source_hostport(ft->f->sources[x->src], &tls);
    char host[FTC_HOST_MAX];
    int port = 0;
    ftc__deadline cdl =
        ftc__deadline_min(dl, ftc__deadline_in_ms(FTC__HEAL_CONNECT_MS));
    int rc = ftc__addr_split(src, 0, host, sizeof(host), &port);
    rc = rc != 0 ? rc
                 : ftc__sock_connect(host, port, cdl, &ft->c->abort_ev, &x->fd);
    if (rc == 0 && tls) {
        rc = ftc__heal_tls_open(
            x->fd, host, ft->trust,
            ftc__deadline_min(dl, ftc__deadline_in_ms(FTC__HEAL_STALL_MS)),
            &ft->c->abort_ev, &x->tls);
    }
    if (rc != 0) {
        snprintf(x->error, sizeof(x->error), "%s", ftc_last_error());
        disconnect(x);
        return false;
    }
    x->fd_src = x->src;
    return true;
}

static int send_all(fetch *ft, xfer *x, const char *p, size_t n,
                    ftc__deadline dl)
{
    return x->tls != NULL
               ? ftc__heal_tls_send_all(x->tls, p, n, dl, &ft->c->abort_ev)
               : ftc__sock_send_all(x->fd, p, n, dl, &ft->c->abort_ev);
}

static ssize_t recv_some(xfer *x, void *p, size_t n)
{
    return x->tls != NULL ? ftc__heal_tls_recv(x->tls, p, n)
                          : recv(x->fd, p, n, 0);
}

static bool send_request(fetch *ft, xfer *x, ftc__deadline dl)
{
    bool tls;
    const char *src = ftc__heal_source_hostport(ft->f->sources[x->src], &tls);
    if (x->fd >= 0 && x->fd_src != x->src) {
        disconnect(x);
    }
    x->reused = x->fd >= 0;
    if (x->fd < 0 && !connect_source(ft, x, dl)) {
        return false;
    }
    char req[FTC_HOST_MAX * 2 + 256];
    const char *tok = ft->f->token;
    int n = snprintf(req, sizeof(req),
                     "GET /v1/heal/%lld/chunk/%u HTTP/1.1\r\nHost: %s\r\n"
                     "%s%s%s\r\n",
                     (long long)ft->f->step, x->chunk, src,
                     tok != NULL ? "Authorization: Bearer " : "",
                     tok != NULL ? tok : "", tok != NULL ? "\r\n" : "");
    x->in_body = x->close = false;
    x->status = 0;
    x->head_len = 0;
    x->last_ns = ftc__now_ns();
    if (n < 0 || (size_t)n >= sizeof(req) ||
        send_all(ft, x, req, (size_t)n, dl) != 0) {
        snprintf(x->error, sizeof(x->error), "request to %s: %s", src,
                 n < 0 || (size_t)n >= sizeof(req) ? "too long"
                                                   : ftc_last_error());
        disconnect(x);
        return false;
    }
    return true;
}

/* Hashes received chunk bytes p[0..n) and advances past them. */
static void took(xfer *x, const uint8_t *p, size_t n)
{
    XXH3_64bits_update(x->hash, p, n);
    x->got += n;
}

/* Where the chunk's next bytes go, and how many fit there (>= 1). */
static uint8_t *next_place(fetch *ft, xfer *x, size_t *room)
{
    const ftc__heal_state *lay = ft->layout;
    uint64_t pos = x->off + x->got;
    while (pos >= ft->starts[x->cursor] + lay->bufs[x->cursor].nbytes) {
        x->cursor++;
    }
    uint64_t left = ft->starts[x->cursor] + lay->bufs[x->cursor].nbytes - pos;
    left = left < x->len - x->got ? left : x->len - x->got;
    *room = left < FTC__HEAL_RECV_BYTES ? (size_t)left : FTC__HEAL_RECV_BYTES;
    return (uint8_t *)ft->dest[x->cursor] + (pos - ft->starts[x->cursor]);
}

/* Copies body bytes that came with the head into place. */
static void place(fetch *ft, xfer *x, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t room;
        uint8_t *dst = next_place(ft, x, &room);
        size_t k = room < n ? room : n;
        memcpy(dst, p, k);
        took(x, dst, k);
        p += k;
        n -= k;
    }
}

/* Parses the answer's head once it is in: 1 (body next), 0 (more head
 * bytes needed), -1 (malformed, or not a 200 with the chunk's length:
 * done). */
static int parse_head(fetch *ft, xfer *x)
{
    x->head[x->head_len] = '\0';
    char *end = strstr(x->head, "\r\n\r\n");
    if (end == NULL) {
        snprintf(x->error, sizeof(x->error), "answer head over %d bytes",
                 FTC__HEAL_HEAD_MAX - 1);
        return x->head_len + 1 >= sizeof(x->head) ? -1 : 0;
    }
    *end = '\0';
    int minor;
    if (sscanf(x->head, "HTTP/1.%d %ld", &minor, &x->status) != 2) {
        snprintf(x->error, sizeof(x->error), "not an HTTP answer");
        x->status = 0;
        return -1;
    }
    unsigned long long length = ULLONG_MAX;
    for (char *h = strstr(x->head, "\r\n"); h != NULL;
         h = strstr(h + 2, "\r\n")) {
        if (strncasecmp(h + 2, "Content-Length:", 15) == 0) {
            length = strtoull(h + 17, NULL, 10);
        } else if (strncasecmp(h + 2, "Connection:", 11) == 0) {
            x->close = strstr(h + 13, "close") != NULL ||
                       strstr(h + 13, "Close") != NULL;
        }
    }
    if (x->status != 200) {
        snprintf(x->error, sizeof(x->error), "HTTP %ld", x->status);
        return -1;
    }
    if (length != x->len) {
        x->got = x->len + 1; /* marks the wrong length */
        return -1;
    }
    size_t body = x->head_len - (size_t)(end + 4 - x->head);
    x->in_body = true;
    if (body > x->len) {
        x->got = x->len + 1;
        return -1;
    }
    place(ft, x, (const uint8_t *)end + 4, body);
    return 1;
}

/* Receives what x's connection has: 1 when the answer is complete (io
 * true: whole; false: failed), 2 when a kept-alive connection turned out
 * closed before any answer, 0 for more later. */
static int on_readable(fetch *ft, xfer *x, bool *io)
{
    for (;;) {
        ssize_t k;
        if (!x->in_body) {
            k = recv_some(x, x->head + x->head_len,
                          sizeof(x->head) - 1 - x->head_len);
        } else if (x->got == x->len) {
            *io = true;
            return 1;
        } else {
            size_t room;
            uint8_t *dst = next_place(ft, x, &room);
            k = recv_some(x, dst, room);
            if (k > 0) {
                took(x, dst, (size_t)k);
            }
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        }
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            snprintf(x->error, sizeof(x->error), "%s",
                     k == 0 ? "connection closed" : strerror(errno));
            *io = false;
            return x->reused && !x->in_body && x->head_len == 0 ? 2 : 1;
        }
        x->last_ns = ftc__now_ns();
        if (!x->in_body) {
            x->head_len += (size_t)k;
            int h = parse_head(ft, x);
            if (h < 0) {
                *io = x->status != 0;
                return 1;
            }
        }
    }
}

/* ---------------------------------------------------------------- lanes */

typedef struct lane {
    fetch *ft;
    unsigned index;
    xfer *xs;
    unsigned nx;
    ftc__deadline dl;
} lane;

/* Wakes every lane: a chunk went back in the queue, or the fetch ended. */
static void wake_lanes(fetch *ft)
{
    for (unsigned i = 0; i < ft->lanes; i++) {
        ftc__event_signal(&ft->wake[i]);
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

/* Ends x's transfer (io: the whole answer came). */
static void finish(lane *l, xfer *x, bool io)
{
    fetch *ft = l->ft;
    pthread_mutex_lock(&ft->mu);
    int rc = finish_chunk(ft, x, io);
    if (rc != 0) {
        fail(ft, rc);
    }
    bool wake = rc != 0 || ft->queued > 0 || ft->done == ft->meta.n_chunks;
    pthread_mutex_unlock(&ft->mu);
    if (wake) {
        wake_lanes(ft);
    }
}

/* Starts a chunk on every idle transfer of the lane and sends their
 * requests; false once the fetch is over (every chunk in, or a
 * failure). */
static bool lane_start(lane *l)
{
    fetch *ft = l->ft;
    bool fresh[FTC__HEAL_MAX_STREAMS] = {false};
    pthread_mutex_lock(&ft->mu);
    for (unsigned i = 0; ft->rc == 0 && i < l->nx && ft->queued > 0; i++) {
        if (!l->xs[i].busy) {
            int rc = start_chunk(ft, &l->xs[i], ft->queue[--ft->queued]);
            fresh[i] = rc == 0;
            if (rc != 0) {
                fail(ft, rc);
            }
        }
    }
    pthread_mutex_unlock(&ft->mu);
    for (unsigned i = 0; i < l->nx; i++) {
        xfer *x = &l->xs[i];
        bool sent = fresh[i] && send_request(ft, x, l->dl);
        if (fresh[i] && !sent) {
            finish(l, x, false);
        }
    }
    pthread_mutex_lock(&ft->mu);
    bool go = ft->rc == 0 && ft->done < ft->meta.n_chunks;
    pthread_mutex_unlock(&ft->mu);
    return go;
}

/* Waits for the lane's connections, its wake event and the abort, at
 * most until the next stall check or dl. */
static int lane_wait(lane *l, struct pollfd *pf, xfer **who, unsigned *n)
{
    fetch *ft = l->ft;
    int rc = ftc__heal_check(ft, l->dl);
    if (rc != 0) {
        return rc;
    }
    unsigned k = 0;
    pf[k++] = (struct pollfd){ft->wake[l->index].fd, POLLIN, 0};
    pf[k++] = (struct pollfd){ft->c->abort_ev.fd, POLLIN, 0};
    bool pending = false; /* decrypted bytes poll(2) cannot see */
    for (unsigned i = 0; i < l->nx; i++) {
        if (l->xs[i].busy) {
            who[k] = &l->xs[i];
            pending |=
                l->xs[i].tls != NULL && ftc__heal_tls_pending(l->xs[i].tls);
            pf[k++] = (struct pollfd){l->xs[i].fd, POLLIN, 0};
        }
    }
    int ms = ftc__deadline_poll_ms(l->dl);
    ms = pending ? 0 : ms < 0 || ms > 1000 ? 1000 : ms;
    int r = poll(pf, k, ms);
    for (unsigned i = 0; r < 0 && i < k; i++) {
        pf[i].revents = 0; /* interrupted: look again */
    }
    for (unsigned i = 2; pending && i < k; i++) {
        if (who[i]->tls != NULL && ftc__heal_tls_pending(who[i]->tls)) {
            pf[i].revents |= POLLIN;
        }
    }
    if (pf[0].revents != 0) {
        ftc__event_clear(&ft->wake[l->index]);
    }
    *n = k;
    return 0;
}

static void *lane_main(void *arg)
{
    lane *l = arg;
    fetch *ft = l->ft;
    struct pollfd pf[FTC__HEAL_MAX_STREAMS + 2];
    xfer *who[FTC__HEAL_MAX_STREAMS + 2];
    while (lane_start(l)) {
        unsigned n = 0;
        int rc = lane_wait(l, pf, who, &n);
        if (rc != 0) {
            pthread_mutex_lock(&ft->mu);
            fail(ft, rc);
            pthread_mutex_unlock(&ft->mu);
            wake_lanes(ft);
            break;
        }
        int64_t now = ftc__now_ns();
        for (unsigned i = 2; i < n; i++) {
            xfer *x = who[i];
            bool io = false;
            int done = pf[i].revents != 0 ? on_readable(ft, x, &io) : 0;
            if (done == 0 &&
                now - x->last_ns > (int64_t)FTC__HEAL_STALL_MS * 1000000) {
                snprintf(x->error, sizeof(x->error), "no byte for %d ms",
                         FTC__HEAL_STALL_MS);
                done = 1;
            }
            /* A kept-alive connection that the source closed meanwhile
             * fails before any answer: asked once more on a new one. */
            if (done == 2) {
                disconnect(x);
                if (send_request(ft, x, l->dl)) {
                    continue;
                }
            }
            if (done != 0) {
                finish(l, x, io);
            }
        }
    }
    return NULL;
}

int ftc__heal_chunks_run(fetch *ft, xfer *xs, unsigned nx, ftc__deadline dl)
{
    lane ls[FTC__HEAL_MAX_LANES];
    pthread_t th[FTC__HEAL_MAX_LANES];
    unsigned n = ft->lanes;
    int rc = 0;
    unsigned opened = 0;
    for (; rc == 0 && opened < n; opened++) {
        ft->wake[opened].fd = -1;
        rc = ftc__event_open(&ft->wake[opened]);
    }
    for (unsigned i = 0; rc == 0 && i < n; i++) {
        /* Lane i takes transfers [i * nx / n, (i + 1) * nx / n). */
        unsigned a = i * nx / n, b = (i + 1) * nx / n;
        ls[i] = (lane){ft, i, xs + a, b - a, dl};
    }
    /* Lanes start from the last one down: if a thread cannot start,
     * lanes 1 .. lowest - 1 are left, and their transfers directly follow
     * lane 0's, which takes them over (they are idle, so it may). */
    unsigned lowest = n;
    for (unsigned i = n - 1; rc == 0 && i >= 1; i--) {
        if (ftc__thread_start(&th[i], "ftc-heal-lane", lane_main, &ls[i]) !=
            0) {
            break;
        }
        lowest = i;
    }
    for (unsigned i = 1; rc == 0 && i < lowest; i++) {
        ls[0].nx += ls[i].nx;
    }
    if (rc == 0) {
        lane_main(&ls[0]);
    }
    for (unsigned i = lowest; rc == 0 && i < n; i++) {
        pthread_join(th[i], NULL);
    }
    for (unsigned i = 0; i < opened; i++) {
        ftc__event_close(&ft->wake[i]);
    }
    if (rc != 0) {
        return ftc__adderr(rc, "healing lanes");
    }
    if (ft->rc != 0) {
        return ftc__seterr(ft->rc, "%s", ft->rc_msg);
    }
    return 0;
}

/* ---------------------------------------------------------------- tables */

int ftc__heal_chunks_prepare(fetch *ft)
{
    const ftc__heal_fetch *f = ft->f;
    uint32_t n = ft->meta.n_chunks;
    size_t nc = n > 0 ? n : 1;
    ft->starts = ftc__calloc(ft->layout->n + 1, sizeof(*ft->starts));
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
    for (size_t j = 0; j < ft->layout->n; j++) {
        ft->starts[j + 1] = ft->starts[j] + ft->layout->bufs[j].nbytes;
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
