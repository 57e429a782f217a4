/* Non-blocking I/O of one channel, driven by the engine: collective
 * channels follow the current plan; side channels carry p2p messages and
 * control frames. Every header is checked before its payload is touched:
 * foreign or stale traffic fails the group and is never reduced. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "pg/reduce.h"
#include "pg/tcp/tcp_int.h"

void ftc__chan_close(ftc__chan *c)
{
    if (c->fd >= 0) {
        /* Unread bytes would turn the close into a reset, and a reset can
         * cost the peer what we sent last (our BYE): read them first. */
        uint8_t sink[4096];
        for (int i = 0; i < 256; i++) {
            if (recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0) {
                break;
            }
        }
        close(c->fd);
        c->fd = -1;
    }
    ftc__free(c->stage);
    c->stage = NULL;
    ftc__free(c->tmp);
    c->tmp = NULL;
    ftc__free(c->enc);
    c->enc = NULL;
    c->enc_cap = 0;
    ftc__chan_drop_queue(c);
    ftc__shm_lane_close(c);
    ftc__auth_wipe(c->k_tx, sizeof(c->k_tx));
    ftc__auth_wipe(c->k_rx, sizeof(c->k_rx));
    ftc__auth_wipe(&c->tx_mac, sizeof(c->tx_mac));
    ftc__auth_wipe(&c->rx_mac, sizeof(c->rx_mac));
}

/* How long a broken connection waits for the peer's side channel to say
 * why. A process that exits closes all its connections at once, so the
 * side channel's ABORT or end of stream follows within microseconds on one
 * host; over a network (or a relay) the two connections are not ordered,
 * and the reason can trail the break by a round trip. */
#define WHY_WAIT_NS (100 * 1000 * 1000LL)

bool ftc__chan_heard_why(ftc__tcp *g, int peer)
{
    ftc__chan *s = &g->side[peer];
    int64_t deadline = ftc__now_ns() + WHY_WAIT_NS;
    while (!g->failed && s->fd >= 0 && !s->eof) {
        s->readable = true;
        ftc__chan_pump_side(g, s);
        ftc__tcp_apply_held_abort(g); /* the peer is gone: it explains */
        int64_t left = deadline - ftc__now_ns();
        if (g->failed || s->eof || left <= 0) {
            break;
        }
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
        int ms = (int)((left + 999999) / 1000000);
        if (poll(&pfd, 1, ms) <= 0) {
            break;
        }
    }
    return g->failed != 0;
}

bool ftc__chan_lost(ftc__tcp *g, ftc__chan *c, int err)
{
    c->readable = false;
    c->eof = true;
    if (err != 0 && !ftc__chan_heard_why(g, c->peer)) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EPEER, "connection to %s broken: %s",
                           c->name, strerror(err));
    }
    return false;
}

/* Reads what the socket has into the staging buffer. Returns true if
 * bytes arrived; false on EAGAIN (readable cleared) or end of stream
 * (c->eof set; a reset fails the group). */
static bool fill_stage(ftc__tcp *g, ftc__chan *c, size_t limit)
{
    if (c->st_head > 0) {
        memmove(c->stage, c->stage + c->st_head, c->st_len - c->st_head);
        c->st_len -= c->st_head;
        c->st_head = 0;
    }
    size_t room = FTC__STAGE_CAP - c->st_len;
    room = room < limit ? room : limit;
    if (room == 0) {
        return false;
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->stage + c->st_len, room, MSG_DONTWAIT);
        if (n > 0) {
            c->st_len += (size_t)n;
            return true;
        }
        if (n == 0) {
            return ftc__chan_lost(g, c, 0);
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->readable = false;
            return false;
        }
        return ftc__chan_lost(g, c, errno);
    }
}

static size_t staged(const ftc__chan *c)
{
    return c->st_len - c->st_head;
}

bool ftc__chan_decode_header(ftc__tcp *g, ftc__chan *c,
                             const uint8_t in[FTC__PGW_HDR], ftc__pgw_hdr *h)
{
    int rc = ftc__pgw_decode(in, h);
    if (rc != 0) {
        ftc__tcp_fail_peer(g, c->peer, rc, "from %s: %s", c->name,
                           ftc_last_error());
        return false;
    }
    if (h->group != g->group_id || h->src != (uint32_t)c->peer) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO,
                           "from %s: message of another group (id %016llx, "
                           "rank %u); rejected",
                           c->name, (unsigned long long)h->group, h->src);
        return false;
    }
    if (h->epoch != g->epoch) {
        ftc__tcp_fail_peer(
            g, c->peer, FTC_ESTALE,
            "from %s: message of epoch %llu, this group is epoch "
            "%llu; rejected",
            c->name, (unsigned long long)h->epoch,
            (unsigned long long)g->epoch);
        return false;
    }
    return true;
}

bool ftc__chan_next_header(ftc__tcp *g, ftc__chan *c, bool exact)
{
    while (staged(c) < FTC__PGW_HDR) {
        size_t limit = exact ? FTC__PGW_HDR - staged(c) : FTC__STAGE_CAP;
        if (c->eof || !c->readable || !fill_stage(g, c, limit)) {
            return false;
        }
    }
    ftc__pgw_hdr h;
    if (!ftc__chan_decode_header(g, c, c->stage + c->st_head, &h)) {
        return false;
    }
    if (c->encrypt && h.len > FTC__PROTECT_CRYPT_MAX) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EMSGSIZE,
                           "from %s: an encrypted message of %llu bytes "
                           "(at most %llu)",
                           c->name, (unsigned long long)h.len,
                           (unsigned long long)FTC__PROTECT_CRYPT_MAX);
        return false;
    }
    if (c->protect) {
        ftc__protect_begin(&c->rx_mac, c->k_rx, c->n_rx, c->stage + c->st_head,
                           FTC__PGW_HDR);
        c->rx_tag_got = 0;
    }
    c->st_head += FTC__PGW_HDR;
    c->hdr = h;
    c->have_hdr = true;
    c->got = 0;
    c->dec_got = 0;
    c->dst = NULL;
    return true;
}

/* Reads the tag that follows a protected message and checks it against
 * the header and payload received. false: more bytes are needed, or the
 * check failed (the group failed with FTC_EAUTH). */
static bool take_tag(ftc__tcp *g, ftc__chan *c)
{
    while (c->rx_tag_got < FTC__PROTECT_TAG) {
        size_t have = staged(c);
        if (have > 0) {
            size_t want = FTC__PROTECT_TAG - c->rx_tag_got;
            size_t k = have < want ? have : want;
            memcpy(c->rx_tag + c->rx_tag_got, c->stage + c->st_head, k);
            c->st_head += k;
            c->rx_tag_got += k;
            continue;
        }
        if (c->eof || !c->readable || !fill_stage(g, c, FTC__STAGE_CAP)) {
            return false;
        }
    }
    if (!ftc__protect_check(&c->rx_mac, c->rx_tag)) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EAUTH,
                           "from %s: message %llu (%llu bytes) failed its "
                           "authentication check: changed, dropped or replayed "
                           "on the way",
                           c->name, (unsigned long long)c->n_rx,
                           (unsigned long long)c->hdr.len);
        return false;
    }
    c->n_rx++;
    return true;
}

/* Encrypting: decrypts in place the payload that landed since the last
 * call, in whole blocks until the payload's end (its tag, over the
 * ciphertext, was fed first). Nothing to do for a payload dropped. */
static void decrypt_landed(ftc__chan *c, size_t len)
{
    if (!c->encrypt || c->dst == NULL) {
        return;
    }
    size_t upto = c->got == len ? len : c->got - c->got % FTC__PROTECT_BLOCK;
    if (upto > c->dec_got) {
        ftc__protect_crypt(c->k_rx, c->n_rx, c->dec_got, c->dst + c->dec_got,
                           c->dst + c->dec_got, upto - c->dec_got);
        c->dec_got = upto;
    }
}

bool ftc__chan_take_payload(ftc__tcp *g, ftc__chan *c)
{
    size_t len = (size_t)c->hdr.len;
    while (c->got < len) {
        size_t want = len - c->got;
        size_t have = staged(c);
        if (have > 0) {
            size_t k = have < want ? have : want;
            const uint8_t *from = c->stage + c->st_head;
            if (c->dst != NULL) {
                memcpy(c->dst + c->got, from, k);
            }
            if (c->protect) {
                ftc__protect_add(&c->rx_mac, from, k);
            }
            c->st_head += k;
            c->got += k;
            decrypt_landed(c, len);
            continue;
        }
        if (c->eof || !c->readable) {
            return false;
        }
        if (c->dst != NULL && want >= FTC__DIRECT_MIN) {
            ssize_t n = recv(c->fd, c->dst + c->got, want, MSG_DONTWAIT);
            if (n > 0) {
                if (c->protect) {
                    ftc__protect_add(&c->rx_mac, c->dst + c->got, (size_t)n);
                }
                c->got += (size_t)n;
                decrypt_landed(c, len);
            } else if (n == 0) {
                return ftc__chan_lost(g, c, 0);
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                c->readable = false;
                return false;
            } else if (errno != EINTR) {
                return ftc__chan_lost(g, c, errno);
            }
            continue;
        }
        if (!fill_stage(g, c, FTC__STAGE_CAP)) {
            return false;
        }
    }
    return !c->protect || take_tag(g, c);
}

ssize_t ftc__chan_sendv(ftc__tcp *g, ftc__chan *c, struct iovec *iov, int niov)
{
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
    for (;;) {
        ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            return n;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->writable = false;
            return 0;
        }
        if (errno != EINTR) {
            int err = errno;
            /* Nothing more goes out on it: reading the side channel for
             * the peer's reason must not try this send again. */
            c->writable = false;
            if (!ftc__chan_heard_why(g, c->peer)) {
                ftc__tcp_fail_peer(g, c->peer, FTC_EPEER,
                                   "send to %s failed: %s", c->name,
                                   strerror(err));
            }
            return -1;
        }
    }
}

int ftc__frame_iov(struct iovec *iov, const uint8_t *hdr, const void *payload,
                   size_t len, size_t skip)
{
    const struct iovec parts[2] = {
        {(uint8_t *)hdr, FTC__PGW_HDR},
        {(uint8_t *)payload, len},
    };
    int n = 0;
    for (int i = 0; i < 2; i++) {
        size_t s = skip < parts[i].iov_len ? skip : parts[i].iov_len;
        skip -= s;
        if (parts[i].iov_len > s) {
            iov[n++] = (struct iovec){(uint8_t *)parts[i].iov_base + s,
                                      parts[i].iov_len - s};
        }
    }
    return n;
}

/* Frames with at most this much payload are tagged before they go, so
 * the header, payload and tag leave in one system call (a small frame's
 * tag costs less than a second call); larger ones are tagged as they go
 * out, so no pass over the payload comes before its first byte leaves. */
#define WHOLE_MAX 4096
/* Encrypting, a frame's payload goes out through windows of ciphertext
 * this long (a multiple of FTC__PROTECT_BLOCK, at least WHOLE_MAX): each
 * is made just before its bytes are sent, while they are in cache. */
#define ENC_WINDOW (64 * 1024)

/* The payload bytes that go out next (*out, *n), from offset p of the
 * frame's payload to the end of what is ready: the payload itself or,
 * encrypting, the ciphertext window holding p (made when it is not the
 * window of this payload, length and message number already; sized to
 * the message, at most ENC_WINDOW). false: no memory for the window. */
static bool outgoing(ftc__chan *c, uint64_t number, const void *payload,
                     size_t len, size_t p, const uint8_t **out, size_t *n)
{
    p = p < len ? p : len; /* a frame cut short after it started */
    if (!c->encrypt || p == len) {
        *n = len - p;
        *out = len > 0 ? (const uint8_t *)payload + p : NULL;
        return true;
    }
    size_t at = p - p % ENC_WINDOW;
    size_t need = len - at < ENC_WINDOW ? len - at : ENC_WINDOW;
    if (c->enc_n == 0 || c->enc_src != payload || c->enc_len != len ||
        c->enc_num != number || c->enc_at != at) {
        if (need > c->enc_cap) {
            uint8_t *w = ftc__realloc(c->enc, need);
            if (w == NULL) {
                return false;
            }
            c->enc = w;
            c->enc_cap = need;
        }
        c->enc_n = need;
        c->enc_src = payload;
        c->enc_len = len;
        c->enc_num = number;
        c->enc_at = at;
        ftc__protect_crypt(c->k_tx, number, at, (const uint8_t *)payload + at,
                           c->enc, need);
    }
    *n = c->enc_n - (p - at);
    *out = c->enc + (p - at);
    return true;
}

ssize_t ftc__chan_send_protected(ftc__tcp *g, ftc__chan *c, const uint8_t *hdr,
                                 const void *payload, size_t len,
                                 uint8_t tag[FTC__PROTECT_TAG], size_t *off,
                                 bool *done)
{
    size_t body = FTC__PGW_HDR + len;
    bool whole = len <= WHOLE_MAX;
    ssize_t total = 0;
    *done = false;
    if (c->encrypt && (uint64_t)len > FTC__PROTECT_CRYPT_MAX) {
        ftc__tcp_fail(g, FTC_EMSGSIZE,
                      "to %s: a message of %zu bytes cannot be encrypted "
                      "(at most %llu)",
                      c->name, len, (unsigned long long)FTC__PROTECT_CRYPT_MAX);
        return -1;
    }
    while (c->writable && !*done) {
        /* The frame's number: the next one until its first byte left. */
        uint64_t number = *off == 0 ? c->n_tx : c->n_tx - 1;
        size_t p = *off > FTC__PGW_HDR ? *off - FTC__PGW_HDR : 0, out_n;
        const uint8_t *out;
        if (!outgoing(c, number, payload, len, p, &out, &out_n)) {
            ftc__tcp_fail(g, FTC_ENOMEM,
                          "encryption window of a %zu B "
                          "message",
                          len);
            return -1;
        }
        if (whole && *off == 0) {
            ftc__protect_tag(c->k_tx, number, hdr, FTC__PGW_HDR, out, len, tag);
        }
        /* The rest of the header, the ready payload bytes, and the tag
         * once it is made and the payload's end is in this call. */
        struct iovec iov[3];
        int niov = 0;
        if (*off < FTC__PGW_HDR) {
            iov[niov++] =
                (struct iovec){(uint8_t *)hdr + *off, FTC__PGW_HDR - *off};
        }
        if (out_n > 0) {
            iov[niov++] = (struct iovec){(uint8_t *)out, out_n};
        }
        if (p + out_n == len && (whole || *off >= body)) {
            size_t t = *off > body ? *off - body : 0;
            iov[niov++] = (struct iovec){tag + t, FTC__PROTECT_TAG - t};
        }
        ssize_t n = ftc__chan_sendv(g, c, iov, niov);
        if (n <= 0) {
            return n < 0 ? -1 : total;
        }
        if (*off == 0) {
            /* Its first byte left: the frame has the next number. A frame
             * that never started (dropped at destroy, or overtaken by a
             * liveness frame) took none. */
            if (!whole) {
                ftc__protect_begin(&c->tx_mac, c->k_tx, c->n_tx, hdr,
                                   FTC__PGW_HDR);
                c->tx_open = true;
            }
            c->n_tx++;
        }
        size_t from = *off > FTC__PGW_HDR ? *off : FTC__PGW_HDR;
        size_t to = *off + (size_t)n < body ? *off + (size_t)n : body;
        if (c->tx_open && to > from) {
            /* out holds payload offset p = from - FTC__PGW_HDR */
            ftc__protect_add(&c->tx_mac, out, to - from);
        }
        *off += (size_t)n;
        total += n;
        if (*off == body && c->tx_open) {
            ftc__protect_finish(&c->tx_mac, tag);
            c->tx_open = false;
        }
        *done = *off == body + FTC__PROTECT_TAG;
    }
    if (*done) {
        c->enc_n = 0;
    }
    return total;
}

void ftc__chan_drop_queue(ftc__chan *c)
{
    while (c->oq_head != NULL) {
        ftc__outmsg *m = c->oq_head;
        c->oq_head = m->next;
        ftc__free(m->owned);
        ftc__free(m);
    }
    c->oq_tail = NULL;
    c->oq_off = 0;
    c->enc_n = 0; /* a window of a dropped frame is no one's */
}

/* ------------------------------------------------------------ collective */

void ftc__coll_header(const ftc__tcp *g, uint32_t k, size_t len,
                      uint8_t out[FTC__PGW_HDR])
{
    ftc__pgw_hdr h = {.kind = FTC__PGW_COLL,
                      .op = (uint8_t)g->cur->coll,
                      .group = g->group_id,
                      .epoch = g->epoch,
                      .seq = g->cur->seq,
                      .tag = k,
                      .src = (uint32_t)g->rank,
                      .len = len};
    ftc__pgw_encode(out, &h);
}

/* Sends ready messages of a protected channel, one frame at a time (each
 * tag follows its payload). */
static bool coll_write_protected(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    bool moved = false;
    while (c->writable && pc->sent < pc->nsends) {
        ftc__xfer *x = &pc->sends[pc->sent];
        if (!ftc__xfer_ready(&g->plan, x)) {
            break;
        }
        ftc__coll_header(g, pc->sent, x->len, c->hdrbuf);
        bool done;
        ssize_t n = ftc__chan_send_protected(g, c, c->hdrbuf, x->buf, x->len,
                                             c->coll_tag, &c->send_off, &done);
        if (n < 0) {
            return true;
        }
        moved = moved || n > 0;
        if (!done) {
            break;
        }
        c->send_off = 0;
        pc->sent++;
        g->plan.pending--;
    }
    return moved;
}

/* Sends ready messages of this channel, several per system call. */
static bool coll_write(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    enum { BATCH = 8 };
    if (c->protect) {
        return coll_write_protected(g, c, pc);
    }
    bool moved = false;
    while (c->writable && pc->sent < pc->nsends) {
        uint8_t hdrs[BATCH][FTC__PGW_HDR];
        struct iovec iov[2 * BATCH];
        int niov = 0, nmsg = 0;
        size_t skip = c->send_off;
        for (uint32_t k = pc->sent; k < pc->nsends && nmsg < BATCH; k++) {
            const ftc__xfer *x = &pc->sends[k];
            if (!ftc__xfer_ready(&g->plan, x)) {
                break;
            }
            ftc__coll_header(g, k, x->len, hdrs[nmsg]);
            niov +=
                ftc__frame_iov(iov + niov, hdrs[nmsg], x->buf, x->len, skip);
            skip = 0;
            nmsg++;
        }
        if (nmsg == 0) {
            break;
        }
        ssize_t n = ftc__chan_sendv(g, c, iov, niov);
        if (n <= 0) {
            return moved || n < 0;
        }
        moved = true;
        size_t left = (size_t)n;
        while (left > 0) {
            size_t rest = FTC__PGW_HDR + pc->sends[pc->sent].len - c->send_off;
            if (left < rest) {
                c->send_off += left;
                break;
            }
            left -= rest;
            c->send_off = 0;
            pc->sent++;
            g->plan.pending--;
        }
    }
    return moved;
}

/* Describes a header that does not fit the current plan and fails. */
static void mismatch(ftc__tcp *g, ftc__chan *c, const char *what)
{
    if (ftc__chan_heard_why(g, c->peer)) {
        return; /* the peer had failed first and said so */
    }
    const ftc__op *cur = g->cur;
    ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO,
                       "from %s: %s (its %s #%llu, message %u of %llu bytes; "
                       "this rank runs %s #%llu); do all ranks call the same "
                       "collectives in the same order with the same sizes?",
                       c->name, what, ftc__coll_name(c->hdr.op),
                       (unsigned long long)c->hdr.seq, c->hdr.tag,
                       (unsigned long long)c->hdr.len,
                       ftc__coll_name(cur->coll), (unsigned long long)cur->seq);
}

bool ftc__chan_coll_check(ftc__tcp *g, ftc__chan *c, const ftc__plan_chan *pc)
{
    const ftc__pgw_hdr *h = &c->hdr;
    if (h->kind != FTC__PGW_COLL) {
        mismatch(g, c, "not a collective message");
        return false;
    }
    if (h->seq > g->cur->seq) {
        return false; /* the peer is ahead: keep it for later */
    }
    if (h->seq < g->cur->seq) {
        mismatch(g, c, "stale message of an earlier collective");
        return false;
    }
    if (h->op != g->cur->coll) {
        mismatch(g, c, "a different collective");
        return false;
    }
    if (pc->recvd >= pc->nrecvs || h->tag != pc->recvd ||
        h->len != pc->recvs[pc->recvd].len) {
        mismatch(g, c, "an unexpected message");
        return false;
    }
    return ftc__xfer_ready(&g->plan, &pc->recvs[pc->recvd]);
}

/* Matches the parsed header to the next receive of the plan and says
 * where its payload lands. false: not yet, or the group failed. */
static bool coll_match(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    if (!ftc__chan_coll_check(g, c, pc)) {
        return false;
    }
    const ftc__xfer *x = &pc->recvs[pc->recvd];
    if (x->a != NULL) {
        if (c->tmp_cap < x->len) {
            uint8_t *t = ftc__realloc(c->tmp, x->len);
            if (t == NULL) {
                ftc__tcp_fail(g, FTC_ENOMEM, "receive buffer of %zu B", x->len);
                return false;
            }
            c->tmp = t;
            c->tmp_cap = x->len;
        }
        c->dst = c->tmp;
    } else {
        c->dst = x->buf;
    }
    return true;
}

bool ftc__chan_pump_coll(ftc__tcp *g, ftc__chan *c)
{
    ftc__plan_chan *pc = &g->plan.ch[c - g->coll];
    if (c->lane != NULL) {
        return ftc__shm_pump(g, c, pc);
    }
    bool moved = coll_write(g, c, pc);
    while (!g->failed && pc->recvd < pc->nrecvs) {
        /* A large payload comes next: read just its header, so the
         * payload goes from the socket straight to its place. */
        bool exact = pc->recvs[pc->recvd].len >= FTC__DIRECT_MIN;
        if (!c->have_hdr && !ftc__chan_next_header(g, c, exact)) {
            break;
        }
        if (!c->matched) {
            if (!coll_match(g, c, pc)) {
                break;
            }
            c->matched = true;
        }
        if (!ftc__chan_take_payload(g, c)) {
            break;
        }
        const ftc__xfer *x = &pc->recvs[pc->recvd];
        if (x->a != NULL) {
            size_t n = x->len / ftc_dtype_size(g->plan.dtype);
            ftc__reduce(x->buf, x->a, c->tmp, n, g->plan.dtype, g->plan.op);
            if (x->avg) {
                ftc__reduce_avg_finish(x->buf, n, g->plan.dtype, g->plan.size);
            }
        }
        c->have_hdr = false;
        c->matched = false;
        pc->recvd++;
        g->plan.pending--;
        moved = true;
    }
    if (!g->failed && c->eof && pc->recvd < pc->nrecvs) {
        ftc__chan_peer_gone(g, c, pc);
    }
    return moved;
}

void ftc__chan_peer_gone(ftc__tcp *g, ftc__chan *c, const ftc__plan_chan *pc)
{
    if (ftc__chan_heard_why(g, c->peer)) {
        return;
    }
    /* A peer that said BYE left in good order: not a fault of its link. */
    bool *blame = ftc__tcp_blame_begin(g);
    if (blame == NULL) {
        return;
    }
    blame[c->peer] = !g->side[c->peer].bye;
    ftc__tcp_fail_blamed(g, FTC_EPEER, false,
                         "Connection closed by peer %s during %s #%llu "
                         "(received %u of %u messages)",
                         c->name, ftc__coll_name(g->cur->coll),
                         (unsigned long long)g->cur->seq, pc->recvd,
                         pc->nrecvs);
}
