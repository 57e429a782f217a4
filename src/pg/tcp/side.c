/* The side channel to each peer: p2p messages and control frames (PING,
 * PONG, ABORT with the ranks its sender blames, BYE). It is always read,
 * whatever the collectives are doing, so liveness probes and failure notices
 * get through. */
#include "pg/tcp/tcp_int.h"

/* Queues a frame with header h on c; the queue owns payload (h->len
 * bytes, NULL when none) and frees it, also when queueing fails. */
static void queue_frame(ftc__chan *c, const ftc__pgw_hdr *h, uint8_t *payload)
{
    ftc__outmsg *m = ftc__calloc(1, sizeof(*m));
    if (m == NULL) {
        ftc__free(payload);
        return; /* best effort: the peer learns by other means */
    }
    ftc__pgw_encode(m->hdr, h);
    m->owned = payload;
    m->payload = payload;
    m->len = (size_t)h->len;
    /* Liveness frames go ahead of queued p2p data (after the frame being
     * written, if any): a large send must not make this rank look hung. */
    ftc__outmsg **at = &c->oq_head;
    if (h->kind == FTC__PGW_PING || h->kind == FTC__PGW_PONG) {
        if (c->oq_off > 0) {
            at = &c->oq_head->next;
        }
    } else {
        at = c->oq_tail != NULL ? &c->oq_tail->next : &c->oq_head;
    }
    m->next = *at;
    *at = m;
    if (m->next == NULL) {
        c->oq_tail = m;
    }
}

/* The header of a control frame of this group with len payload bytes. */
static ftc__pgw_hdr ctrl_header(const ftc__tcp *g, int kind, uint64_t seq,
                                int code, size_t len)
{
    return (ftc__pgw_hdr){.kind = (uint8_t)kind,
                          .flags = (uint8_t)(code < 0 ? -code : 0),
                          .group = g->group_id,
                          .epoch = g->epoch,
                          .seq = seq,
                          .src = (uint32_t)g->rank,
                          .len = len};
}

static size_t text_len(const char *text)
{
    size_t len = text != NULL ? strlen(text) : 0;
    return len > FTC__PGW_TEXT_MAX ? FTC__PGW_TEXT_MAX : len;
}

void ftc__chan_queue_ctrl(ftc__tcp *g, ftc__chan *c, int kind, uint64_t seq,
                          int code, const char *text)
{
    if (c->fd < 0) {
        return;
    }
    size_t len = text_len(text);
    uint8_t *payload = NULL;
    if (len > 0 && (payload = ftc__memdup(text, len)) == NULL) {
        return; /* best effort, as queue_frame */
    }
    ftc__pgw_hdr h = ctrl_header(g, kind, seq, code, len);
    queue_frame(c, &h, payload);
}

void ftc__chan_queue_abort(ftc__tcp *g, ftc__chan *c, int code,
                           const char *text)
{
    if (c->fd < 0) {
        return;
    }
    size_t len = text_len(text);
    int blamed = ftc__pg_blame_list(g->blame, g->size, NULL, 0);
    size_t ranks =
        4 * (size_t)(blamed < FTC__PGW_BLAME_MAX ? blamed : FTC__PGW_BLAME_MAX);
    uint8_t *payload = ranks + len > 0 ? ftc__malloc(ranks + len) : NULL;
    if (ranks + len > 0 && payload == NULL) {
        return; /* best effort, as queue_frame */
    }
    uint32_t n = ftc__pgw_blame_encode(payload, g->blame, (uint32_t)g->size);
    if (len > 0) {
        memcpy(payload + ranks, text, len);
    }
    ftc__pgw_hdr h = ctrl_header(g, FTC__PGW_ABORT, 0, code, ranks + len);
    h.tag = n;
    h.op = g->on_purpose ? FTC__PGW_ABORT_ON_PURPOSE : 0;
    queue_frame(c, &h, payload);
}

/* Done with the head frame: off the queue, its p2p send completed. */
static void pop_head(ftc__tcp *g, ftc__chan *c)
{
    ftc__outmsg *m = c->oq_head;
    c->oq_off = 0;
    c->oq_head = m->next;
    if (c->oq_head == NULL) {
        c->oq_tail = NULL;
    }
    if (m->send != NULL) {
        ftc__p2p_sent(g, m->send);
    }
    ftc__free(m->owned);
    ftc__free(m);
}

/* Writes queued frames of a protected channel, one at a time: each tag
 * follows its payload. */
static bool side_write_protected(ftc__tcp *g, ftc__chan *c)
{
    bool moved = false;
    while (c->writable && c->oq_head != NULL && c->fd >= 0) {
        ftc__outmsg *m = c->oq_head;
        bool done;
        ssize_t n = ftc__chan_send_protected(g, c, m->hdr, m->payload, m->len,
                                             m->tag, &c->oq_off, &done);
        if (n < 0) {
            return true;
        }
        moved = moved || n > 0;
        if (!done) {
            break;
        }
        pop_head(g, c);
    }
    return moved;
}

/* Writes queued frames, several per system call. */
static bool side_write(ftc__tcp *g, ftc__chan *c)
{
    enum { BATCH = 8 };
    if (c->protect) {
        return side_write_protected(g, c);
    }
    bool moved = false;
    while (c->writable && c->oq_head != NULL && c->fd >= 0) {
        struct iovec iov[2 * BATCH];
        int niov = 0, nmsg = 0;
        size_t skip = c->oq_off;
        for (ftc__outmsg *m = c->oq_head; m != NULL && nmsg < BATCH;
             m = m->next, nmsg++) {
            niov +=
                ftc__frame_iov(iov + niov, m->hdr, m->payload, m->len, skip);
            skip = 0;
        }
        ssize_t n = ftc__chan_sendv(g, c, iov, niov);
        if (n <= 0) {
            return moved || n < 0;
        }
        moved = true;
        size_t left = (size_t)n;
        while (left > 0) {
            ftc__outmsg *m = c->oq_head;
            size_t rest = FTC__PGW_HDR + m->len - c->oq_off;
            if (left < rest) {
                c->oq_off += left;
                break;
            }
            left -= rest;
            pop_head(g, c);
        }
    }
    return moved;
}

void ftc__chan_flush(ftc__tcp *g, ftc__chan *c)
{
    side_write(g, c);
}

/* Decides where the payload of the parsed header goes. false: the group
 * failed. */
static bool side_match(ftc__tcp *g, ftc__chan *c)
{
    const ftc__pgw_hdr *h = &c->hdr;
    c->dst = NULL;
    switch (h->kind) {
    case FTC__PGW_PING:
    case FTC__PGW_PONG:
    case FTC__PGW_BYE:
        if (h->len != 0) {
            break;
        }
        return true;
    case FTC__PGW_ABORT:
        if (ftc__pgw_abort_check(h) != 0) {
            ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO, "from %s: %s", c->name,
                               ftc_last_error());
            return false;
        }
        if (c->tmp_cap < FTC__PGW_ABORT_MAX) {
            uint8_t *t = ftc__realloc(c->tmp, FTC__PGW_ABORT_MAX);
            if (t == NULL) {
                ftc__tcp_fail(g, FTC_EPEER, "%s aborted the group", c->name);
                return false;
            }
            c->tmp = t;
            c->tmp_cap = FTC__PGW_ABORT_MAX;
        }
        c->dst = c->tmp;
        return true;
    case FTC__PGW_P2P:
        return ftc__p2p_match_header(g, c);
    default:
        break;
    }
    ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO,
                       "from %s: unexpected message kind %u (%llu bytes) on "
                       "the side channel",
                       c->name, h->kind, (unsigned long long)h->len);
    return false;
}

/* A peer's ABORT (checked by ftc__pgw_abort_check): fails the group with
 * its code, blaming what the peer blamed, corrected, unless the failure
 * was on purpose, by this rank's own probe (the peers' deadlines are
 * close: a rank that hears a timeout has usually probed long enough to
 * know first-hand). The correction matters to the lighthouse: a manager
 * reports what its groups blame as pairs with itself, so a rank that
 * repeated a blame between two peers it reaches both of would make its
 * replica group a party to a cut it is not in (three groups, two cut
 * apart, then report a triangle that leaves nobody out). */
static void take_abort(ftc__tcp *g, ftc__chan *c)
{
    const ftc__pgw_hdr *h = &c->hdr;
    int code = -(int)h->flags;
    bool on_purpose =
        code == FTC_ECANCELED || (h->op & FTC__PGW_ABORT_ON_PURPOSE) != 0;
    if (code == FTC_ECANCELED || code >= 0 || code < FTC__ERR_LOWEST) {
        code = FTC_EPEER;
    }
    if (g->failed || g->held_abort.pending) {
        return; /* the first failure is the one reported */
    }
    bool *blame = g->held_abort.blame;
    memset(blame, 0, (size_t)g->size * sizeof(*blame));
    if (ftc__pgw_blame_decode(c->tmp, h->tag, (uint32_t)g->size,
                              (uint32_t)c->peer, blame) != 0) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO, "from %s: ABORT: %s",
                           c->name, ftc_last_error());
        return;
    }
    /* The peer may blame this rank (it timed out before this rank's
     * answer came): a rank never blames itself. */
    blame[g->rank] = false;
    size_t ranks = 4 * (size_t)h->tag;
    g->held_abort.pending = true;
    g->held_abort.on_purpose = on_purpose;
    g->held_abort.code = code;
    g->held_abort.peer = c->peer;
    snprintf(g->held_abort.msg, sizeof(g->held_abort.msg), "%s failed: %.*s",
             c->name, (int)(h->len - ranks), (const char *)c->tmp + ranks);
}

void ftc__tcp_apply_held_abort(ftc__tcp *g)
{
    if (!g->held_abort.pending) {
        return;
    }
    g->held_abort.pending = false;
    bool *blame = ftc__tcp_blame_begin(g);
    if (blame == NULL) {
        return;
    }
    memcpy(blame, g->held_abort.blame, (size_t)g->size * sizeof(*blame));
    if (!g->held_abort.on_purpose) {
        ftc__tcp_probe_blame(g, blame, g->held_abort.peer);
    }
    ftc__tcp_fail_blamed(g, g->held_abort.code, g->held_abort.on_purpose, "%s",
                         g->held_abort.msg);
}

static void side_complete(ftc__tcp *g, ftc__chan *c)
{
    const ftc__pgw_hdr *h = &c->hdr;
    switch (h->kind) {
    case FTC__PGW_PING:
        ftc__chan_queue_ctrl(g, c, FTC__PGW_PONG, h->seq, 0, NULL);
        break;
    case FTC__PGW_PONG:
        if (g->probing && h->seq == g->probe_nonce) {
            g->pong[c->peer] = true;
        }
        break;
    case FTC__PGW_BYE:
        c->bye = true;
        break;
    case FTC__PGW_ABORT:
        take_abort(g, c);
        break;
    default:
        ftc__p2p_received(g, c);
        break;
    }
}

bool ftc__chan_pump_side(ftc__tcp *g, ftc__chan *c)
{
    bool moved = side_write(g, c);
    while (!g->failed && c->fd >= 0) {
        if (!c->have_hdr && !ftc__chan_next_header(g, c, false)) {
            break;
        }
        if (!c->matched) {
            if (!side_match(g, c)) {
                break;
            }
            c->matched = true;
        }
        if (!ftc__chan_take_payload(g, c)) {
            break;
        }
        c->have_hdr = false;
        c->matched = false;
        side_complete(g, c);
        moved = true;
    }
    if (!g->failed && c->eof && !c->bye) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EPEER,
                           "%s closed its connection without leaving the "
                           "group (the process died or was killed?)",
                           c->name);
    }
    return side_write(g, c) || moved;
}
