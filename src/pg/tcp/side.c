/* The side channel to each peer: p2p messages and control frames (PING,
 * PONG, ABORT, BYE). It is always read, whatever the collectives are
 * doing, so liveness probes and failure notices get through. */
#include "pg/tcp/tcp_int.h"

void ftc__chan_queue_ctrl(ftc__tcp *g, ftc__chan *c, int kind, uint64_t seq,
                          int code, const char *text)
{
    if (c->fd < 0) {
        return;
    }
    ftc__outmsg *m = ftc__calloc(1, sizeof(*m));
    size_t len = text != NULL ? strlen(text) : 0;
    len = len > FTC__PGW_TEXT_MAX ? FTC__PGW_TEXT_MAX : len;
    if (m == NULL || (len > 0 && (m->owned = ftc__memdup(text, len)) == NULL)) {
        ftc__free(m);
        return; /* best effort: the peer learns by other means */
    }
    ftc__pgw_hdr h = {.kind = (uint8_t)kind,
                      .flags = (uint8_t)(code < 0 ? -code : 0),
                      .group = g->group_id,
                      .epoch = g->epoch,
                      .seq = seq,
                      .src = (uint32_t)g->rank,
                      .len = len};
    ftc__pgw_encode(m->hdr, &h);
    m->payload = m->owned;
    m->len = len;
    /* Liveness frames go ahead of queued p2p data (after the frame being
     * written, if any): a large send must not make this rank look hung. */
    ftc__outmsg **at = &c->oq_head;
    if (kind == FTC__PGW_PING || kind == FTC__PGW_PONG) {
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
            niov += ftc__frame_iov(iov + niov, m->hdr, m->payload, m->len, NULL,
                                   skip);
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
        if (h->len > FTC__PGW_TEXT_MAX) {
            break;
        }
        if (c->tmp_cap < FTC__PGW_TEXT_MAX + 1) {
            uint8_t *t = ftc__realloc(c->tmp, FTC__PGW_TEXT_MAX + 1);
            if (t == NULL) {
                ftc__tcp_fail(g, FTC_EPEER, "%s aborted the group", c->name);
                return false;
            }
            c->tmp = t;
            c->tmp_cap = FTC__PGW_TEXT_MAX + 1;
        }
        c->dst = c->tmp;
        return true;
    case FTC__PGW_P2P:
        return ftc__p2p_match_header(g, c);
    default:
        break;
    }
    ftc__tcp_fail(g, FTC_EPROTO,
                  "from %s: unexpected message kind %u (%llu bytes) on the "
                  "side channel",
                  c->name, h->kind, (unsigned long long)h->len);
    return false;
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
    case FTC__PGW_ABORT: {
        int code = -(int)h->flags;
        if (code == FTC_ECANCELED || code >= 0 || code < FTC__ERR_LOWEST) {
            code = FTC_EPEER;
        }
        ftc__tcp_fail(g, code, "%s failed: %.*s", c->name, (int)h->len,
                      (const char *)c->tmp);
        break;
    }
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
        ftc__tcp_fail(g, FTC_EPEER,
                      "%s closed its connection without leaving the group "
                      "(the process died or was killed?)",
                      c->name);
    }
    return side_write(g, c) || moved;
}
