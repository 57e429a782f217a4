/* Connecting a group's full mesh: every rank dials the lower ranks
 * (streams collective connections plus one side channel each) and
 * accepts the higher ones. Each connection opens with a HELLO naming
 * group, epoch, ranks and channel, answered by an ACK or a reject with
 * its reason, so a stale or foreign dialer is turned away and told why.
 * Dials land in the listen backlog, so no rank waits on another's accept
 * loop and there is no cycle to deadlock on. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "pg/tcp/tcp_int.h"

/* Slot of a channel: collective stream s, or the side channel. */
static ftc__chan *slot(ftc__tcp *g, int peer, uint32_t channel)
{
    if (channel == FTC__PGW_SIDE) {
        return &g->side[peer];
    }
    return &g->coll[ftc__chan_id(g, peer, (int)channel)];
}

/* seq carries the sender's connection nonce (with a token; else 0). */
static void hello_header(const ftc__tcp *g, int kind, size_t len, int flags,
                         int code, uint64_t seq, uint8_t out[FTC__PGW_HDR])
{
    ftc__pgw_hdr h = {.kind = (uint8_t)kind,
                      .op = (uint8_t)(code < 0 ? -code : 0),
                      .flags = (uint8_t)flags,
                      .group = g->group_id,
                      .epoch = g->epoch,
                      .seq = seq,
                      .src = (uint32_t)g->rank,
                      .len = len};
    ftc__pgw_encode(out, &h);
}

/* A fresh connection nonce (0 without a token: nothing is derived). */
static int connection_nonce(const ftc__tcp *g, uint64_t *out)
{
    uint8_t b[8] = {0};
    int rc = g->auth ? ftc__auth_random(b, sizeof(b)) : 0;
    *out = ftc__get_u64le(b);
    return rc;
}

/* The connection's message keys, from both sides' nonces (so no two
 * connections share keys, whatever the group id and epoch). */
static void derive_keys(const ftc__tcp *g, ftc__chan *c, uint64_t dialer,
                        uint64_t listener)
{
    if (c->protect) {
        ftc__protect_keys(g->key, g->group_id, g->epoch, g->rank, c->peer,
                          c->stream >= 0 ? (uint32_t)c->stream : FTC__PGW_SIDE,
                          dialer, listener, c->k_tx, c->k_rx);
    }
}

/* Whether the dialer of connection fd protects its messages: with a
 * token, by the group's choice (AUTO: only between hosts). The listener
 * follows the dialer's choice under AUTO (so a same-host test that comes
 * out differently at the two ends, behind a NAT, cannot fail the group)
 * and must agree with it under MAC or OFF. */
static bool protects(const ftc__tcp *g, int fd)
{
    return g->protect == FTC_PG_PROTECT_MAC ||
           g->protect == FTC_PG_PROTECT_ENCRYPT ||
           (g->protect == FTC_PG_PROTECT_AUTO && !ftc__sock_same_host(fd));
}

/* How a connection's messages are protected, as its handshake flags say
 * (FTC__PGW_F_PROTECT, with FTC__PGW_F_ENCRYPT). */
static int protection_flags(bool protect, bool encrypt)
{
    return (protect ? FTC__PGW_F_PROTECT : 0) |
           (protect && encrypt ? FTC__PGW_F_ENCRYPT : 0);
}

/* The flags of this rank's HELLO and accepting ACK on a connection. */
static int hello_flags(const ftc__tcp *g, const ftc__chan *c)
{
    return (g->auth ? FTC__PGW_F_MAC : 0) |
           protection_flags(c->protect, c->encrypt);
}

static const char *protection_name(int flags)
{
    return (flags & FTC__PGW_F_ENCRYPT)   ? "encrypts"
           : (flags & FTC__PGW_F_PROTECT) ? "tags (no encryption)"
                                          : "does not protect";
}

/* Refuses a peer that protects messages on this connection otherwise than
 * this rank (want: protection_flags): their frames would not parse. */
static int protect_differs(int want, int flags, char *why, size_t cap)
{
    int got = flags & (FTC__PGW_F_PROTECT | FTC__PGW_F_ENCRYPT);
    if (got == want) {
        return 0;
    }
    snprintf(why, cap,
             "message protection differs: this rank %s, the peer %s "
             "(FTC_PG_PROTECT or ftc_pg_opts.protect)",
             protection_name(want), protection_name(got));
    return 1;
}

static int dial(ftc__tcp *g, int peer, const char *addr, uint32_t channel,
                ftc__deadline dl)
{
    char host[FTC_HOST_MAX];
    int port, fd;
    int rc = ftc__addr_split(addr, -1, host, sizeof(host), &port);
    if (rc == 0) {
        rc = ftc__sock_connect(host, port, dl, g->setup_cancel, &fd);
    }
    if (rc != 0) {
        g->blame[peer] = true; /* could not be reached */
        return ftc__adderr(rc, "connecting to rank %d at %s", peer, addr);
    }
    ftc__chan *c = slot(g, peer, channel);
    c->protect = protects(g, fd);
    c->encrypt = g->protect == FTC_PG_PROTECT_ENCRYPT;
    rc = connection_nonce(g, &c->nonce);
    if (rc != 0) {
        close(fd);
        return rc;
    }
    /* HELLO: header, body, and with a token the MAC of both. */
    uint8_t msg[FTC__PGW_HDR + FTC__PGW_HELLO_BODY + FTC__AUTH_MAC];
    size_t len = FTC__PGW_HELLO_BODY + (g->auth ? FTC__AUTH_MAC : 0);
    hello_header(g, FTC__PGW_HELLO, len, hello_flags(g, c), 0, c->nonce, msg);
    ftc__pgw_hello body = {.dst = (uint32_t)peer,
                           .size = (uint32_t)g->size,
                           .channel = channel,
                           .streams = (uint32_t)g->streams};
    ftc__pgw_hello_encode(msg + FTC__PGW_HDR, &body);
    if (g->auth) {
        ftc__auth_mac(g->key, msg, FTC__PGW_HDR, msg + FTC__PGW_HDR,
                      FTC__PGW_HELLO_BODY, c->mac);
        memcpy(msg + FTC__PGW_HDR + FTC__PGW_HELLO_BODY, c->mac, FTC__AUTH_MAC);
    }
    rc = ftc__sock_send_all(fd, msg, FTC__PGW_HDR + len, dl, g->setup_cancel);
    if (rc != 0) {
        close(fd);
        g->blame[peer] = true;
        return ftc__adderr(rc, "handshake with rank %d at %s", peer, addr);
    }
    c->fd = fd;
    return 0;
}

/* Reads the answer to our HELLO: 0, or the peer's reason for refusing.
 * With a token, the answer must carry the MAC of (answer header, our
 * HELLO's MAC): proof that the listener knows the token too. The peer is
 * blamed when it does not answer in time, drops the connection, or
 * answers wrongly; not for a refusal (whose fault it is cannot be told
 * here: the refuser names the dialer it waits for when it times out) nor
 * for protection settings that differ. */
static int read_ack(ftc__tcp *g, ftc__chan *c, ftc__deadline dl)
{
    g->blame[c->peer] = true;
    uint8_t b[FTC__PGW_HDR];
    ftc__pgw_hdr h;
    int rc = ftc__sock_recv_all(c->fd, b, sizeof(b), dl, g->setup_cancel);
    if (rc == 0) {
        rc = ftc__pgw_decode(b, &h);
    }
    if (rc == 0 && (h.kind != FTC__PGW_HELLO_ACK ||
                    h.src != (uint32_t)c->peer || h.len > FTC__PGW_TEXT_MAX)) {
        rc = ftc__seterr(FTC_EPROTO, "bad handshake answer");
    }
    if (rc != 0) {
        return ftc__adderr(rc, "handshake with %s", c->name);
    }
    char text[FTC__PGW_TEXT_MAX + 1];
    rc = ftc__sock_recv_all(c->fd, text, (size_t)h.len, dl, g->setup_cancel);
    if (rc != 0) {
        return ftc__adderr(rc, "handshake with %s", c->name);
    }
    if (h.flags & FTC__PGW_F_REJECT) {
        g->blame[c->peer] = false;
        text[h.len] = '\0';
        int code = -(int)h.op;
        code = code == FTC_EAUTH ? FTC_EAUTH : FTC_EPROTO;
        return ftc__seterr(code, "%s refused the connection: %s", c->name,
                           text);
    }
    bool mac = (h.flags & FTC__PGW_F_MAC) && h.len == FTC__AUTH_MAC;
    if (g->auth
            ? !mac || !ftc__auth_verify(g->key, b, sizeof(b), c->mac,
                                        FTC__AUTH_MAC, (const uint8_t *)text)
            : h.len != 0) {
        return ftc__seterr(FTC_EAUTH,
                           "%s did not prove it knows the token (FTC_TOKEN "
                           "differs, or is set on one side only)",
                           c->name);
    }
    char why[200];
    g->blame[c->peer] = false;
    if (protect_differs(protection_flags(c->protect, c->encrypt), h.flags, why,
                        sizeof(why))) {
        return ftc__seterr(FTC_EPROTO, "handshake with %s: %s", c->name, why);
    }
    derive_keys(g, c, c->nonce, h.seq);
    return 0;
}

typedef struct pending {
    int fd;
    uint64_t order; /* accepted as the order-th connection */
    size_t got;
    size_t need; /* the header, then header + its length */
    uint8_t buf[FTC__PGW_HDR + FTC__PGW_HELLO_BODY + FTC__AUTH_MAC];
} pending;

/* Checks a complete HELLO; NULL with a reason and its code, or the slot it
 * fills. */
static ftc__chan *admit(ftc__tcp *g, const pending *p, char *why, size_t cap,
                        int *code)
{
    ftc__pgw_hdr h;
    ftc__pgw_hello b;
    *code = FTC_EPROTO;
    ftc__pgw_decode(p->buf, &h); /* checked when the header arrived */
    ftc__pgw_hello_decode(p->buf + FTC__PGW_HDR, &b);
    bool mac = h.len == FTC__PGW_HELLO_BODY + FTC__AUTH_MAC &&
               (h.flags & FTC__PGW_F_MAC);
    if (g->auth != mac ||
        (mac &&
         !ftc__auth_verify(g->key, p->buf, FTC__PGW_HDR, p->buf + FTC__PGW_HDR,
                           FTC__PGW_HELLO_BODY,
                           p->buf + FTC__PGW_HDR + FTC__PGW_HELLO_BODY))) {
        *code = FTC_EAUTH;
        snprintf(why, cap,
                 g->auth ? "authentication failed (FTC_TOKEN differs or is "
                           "not set)"
                         : "this group has no token but the dialer sent one");
    } else if (g->protect != FTC_PG_PROTECT_AUTO &&
               protect_differs(
                   protection_flags(protects(g, p->fd),
                                    g->protect == FTC_PG_PROTECT_ENCRYPT),
                   h.flags, why, cap)) {
        *code = FTC_EPROTO;
    } else if (h.group != g->group_id) {
        snprintf(why, cap, "group %016llx is not this group (%016llx)",
                 (unsigned long long)h.group, (unsigned long long)g->group_id);
    } else if (h.epoch != g->epoch) {
        snprintf(why, cap, "epoch %llu is not this group's epoch %llu",
                 (unsigned long long)h.epoch, (unsigned long long)g->epoch);
    } else if (b.dst != (uint32_t)g->rank || b.size != (uint32_t)g->size ||
               b.streams != (uint32_t)g->streams) {
        snprintf(why, cap,
                 "dialed rank %u of %u with %u streams; this is rank %d of "
                 "%d with %d",
                 b.dst, b.size, b.streams, g->rank, g->size, g->streams);
    } else if (h.src <= (uint32_t)g->rank || h.src >= (uint32_t)g->size ||
               (b.channel != FTC__PGW_SIDE &&
                b.channel >= (uint32_t)g->streams)) {
        snprintf(why, cap, "rank %u, channel %u cannot dial rank %d", h.src,
                 b.channel, g->rank);
    } else if (slot(g, (int)h.src, b.channel)->fd >= 0) {
        snprintf(why, cap, "rank %u channel %u is already connected", h.src,
                 b.channel);
    } else {
        return slot(g, (int)h.src, b.channel);
    }
    return NULL;
}

/* Answers a complete HELLO (ACK, or reject with the reason) and keeps or
 * closes the socket. Returns 1 if it filled a slot. */
static int answer(ftc__tcp *g, pending *p, ftc__deadline dl)
{
    char why[200];
    int code;
    ftc__chan *c = admit(g, p, why, sizeof(why), &code);
    uint8_t msg[FTC__PGW_HDR + sizeof(why)];
    size_t len;
    ftc__pgw_hdr hello;
    ftc__pgw_decode(p->buf, &hello);
    uint64_t nonce = 0;
    if (c != NULL && connection_nonce(g, &nonce) != 0) {
        snprintf(why, sizeof(why), "%s", ftc_last_error());
        code = FTC_ESYS;
        c = NULL;
    }
    if (c == NULL) {
        len = strlen(why);
        hello_header(g, FTC__PGW_HELLO_ACK, len, FTC__PGW_F_REJECT, code, 0,
                     msg);
        memcpy(msg + FTC__PGW_HDR, why, len);
    } else if (g->auth) {
        len = FTC__AUTH_MAC;
        c->protect = (hello.flags & FTC__PGW_F_PROTECT) != 0;
        c->encrypt = c->protect && (hello.flags & FTC__PGW_F_ENCRYPT) != 0;
        hello_header(g, FTC__PGW_HELLO_ACK, len, hello_flags(g, c), 0, nonce,
                     msg);
        ftc__auth_mac(g->key, msg, FTC__PGW_HDR,
                      p->buf + FTC__PGW_HDR + FTC__PGW_HELLO_BODY,
                      FTC__AUTH_MAC, msg + FTC__PGW_HDR);
        derive_keys(g, c, hello.seq, nonce);
    } else {
        len = 0;
        hello_header(g, FTC__PGW_HELLO_ACK, 0, 0, 0, 0, msg);
    }
    /* A short deadline: a dialer that does not read must not stall us. */
    ftc__deadline short_dl = ftc__deadline_min(dl, ftc__deadline_in_ms(1000));
    int rc = ftc__sock_send_all(p->fd, msg, FTC__PGW_HDR + len, short_dl, NULL);
    if (c == NULL || rc != 0) {
        char peer[64];
        ftc__sock_peer_name(p->fd, peer, sizeof(peer));
        FTC_LOG_WARN("pg.handshake",
                     "rank %d refused a connection from %s: "
                     "%s",
                     g->rank, peer, c == NULL ? why : ftc_last_error());
        close(p->fd);
        return 0;
    }
    c->fd = p->fd;
    return 1;
}

/* Names (and blames) the higher ranks that have not connected every
 * channel yet. */
static int missing(ftc__tcp *g)
{
    char list[256] = "";
    size_t len = 0;
    for (int r = g->rank + 1; r < g->size; r++) {
        bool all = g->side[r].fd >= 0;
        for (int s = 0; s < g->streams; s++) {
            all = all && g->coll[ftc__chan_id(g, r, s)].fd >= 0;
        }
        g->blame[r] = g->blame[r] || !all;
        if (!all && len < sizeof(list) - 16) {
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d",
                                    len ? ", " : "", r);
        }
    }
    return ftc__seterr(FTC_ETIMEDOUT,
                       "rank %d: ranks %s did not connect in time", g->rank,
                       list);
}

/* Reads what p's dialer sent: -1 when it is gone (closed, or not one of
 * this group's dialers: closed here), 1 when its HELLO is complete and
 * answered (counted in *expected), 0 when more is to come. */
static int progress(ftc__tcp *g, pending *p, int *expected, ftc__deadline dl)
{
    bool gone = false;
    ssize_t k = 1;
    while (!gone && k > 0 && p->got < p->need) {
        k = recv(p->fd, p->buf + p->got, p->need - p->got, MSG_DONTWAIT);
        if (k > 0) {
            p->got += (size_t)k;
        }
        gone = k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR);
        if (!gone && p->got == FTC__PGW_HDR && p->need == FTC__PGW_HDR) {
            /* The header says how much follows: a HELLO body, with or
             * without a MAC; anything else is not our dialer. */
            ftc__pgw_hdr h;
            gone = ftc__pgw_decode(p->buf, &h) != 0 ||
                   h.kind != FTC__PGW_HELLO ||
                   (h.len != FTC__PGW_HELLO_BODY &&
                    h.len != FTC__PGW_HELLO_BODY + FTC__AUTH_MAC);
            p->need += gone ? 0 : (size_t)h.len;
        }
    }
    if (gone) {
        close(p->fd);
        return -1;
    }
    if (p->got == p->need && p->need > FTC__PGW_HDR) {
        *expected -= answer(g, p, dl);
        return 1;
    }
    return 0;
}

/* The pending connection that gives way to a new one when the table is
 * full: the oldest of those that sent nothing yet (else the oldest). A
 * dialer of this group sends its HELLO as it connects, and that is read
 * at once when accepted, so what lingers here without a byte is an idle
 * stranger. */
static int oldest(const pending *pend, int npend)
{
    int o = 0;
    for (int i = 1; i < npend; i++) {
        bool quieter = pend[i].got == 0 && pend[o].got > 0;
        bool as_quiet = (pend[i].got == 0) == (pend[o].got == 0);
        o = quieter || (as_quiet && pend[i].order < pend[o].order) ? i : o;
    }
    return o;
}

static int accept_all(ftc__tcp *g, int lfd, ftc__deadline dl)
{
    int expected = (g->size - 1 - g->rank) * (g->streams + 1);
    int cap = expected + 16, npend = 0, rc = 0;
    uint64_t accepted = 0, evicted = 0;
    pending *pend = ftc__calloc((size_t)cap, sizeof(*pend));
    /* The listener, the pending connections, and the cancel event. */
    struct pollfd *pfd = ftc__calloc((size_t)cap + 2, sizeof(*pfd));
    if (pend == NULL || pfd == NULL) {
        rc = ftc__seterr(FTC_ENOMEM, "accept: out of memory");
    }
    int cancel_fd = g->setup_cancel != NULL ? g->setup_cancel->fd : -1;
    while (rc == 0 && expected > 0) {
        pfd[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < npend; i++) {
            pfd[i + 1] = (struct pollfd){.fd = pend[i].fd, .events = POLLIN};
        }
        pfd[npend + 1] = (struct pollfd){.fd = cancel_fd, .events = POLLIN};
        int n = poll(pfd, (nfds_t)npend + 2, ftc__deadline_poll_ms(dl));
        if (n < 0 && errno != EINTR) {
            rc = ftc__seterr_errno(errno, "poll");
            break;
        }
        if (n > 0 && pfd[npend + 1].revents != 0) {
            rc = ftc__seterr(FTC_ECANCELED,
                             "rank %d: the group's set-up was "
                             "cancelled",
                             g->rank);
            break;
        }
        if (n <= 0 && ftc__deadline_expired(dl)) {
            rc = missing(g);
            break;
        }
        for (int i = npend - 1; i >= 0; i--) {
            if (pfd[i + 1].revents != 0 &&
                progress(g, &pend[i], &expected, dl) != 0) {
                pend[i] = pend[--npend];
            }
        }
        int fd;
        while ((pfd[0].revents & POLLIN) && expected > 0 &&
               (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
                   0) {
            if (npend == cap) {
                int o = oldest(pend, npend);
                close(pend[o].fd);
                pend[o] = pend[--npend];
                evicted++;
            }
            pend[npend] =
                (pending){.fd = fd, .order = accepted++, .need = FTC__PGW_HDR};
            if (progress(g, &pend[npend], &expected, dl) == 0) {
                npend++;
            }
        }
    }
    if (evicted > 0) {
        FTC_LOG_WARN("pg.rendezvous",
                     "rank %d: %llu connections that sent no HELLO were "
                     "closed to make room for the group's dialers",
                     g->rank, (unsigned long long)evicted);
    }
    for (int i = 0; i < npend; i++) {
        close(pend[i].fd);
    }
    ftc__free(pend);
    ftc__free(pfd);
    return rc;
}

/* Says which connections carry protected messages (AUTO: those between
 * hosts), so an operator can see it. */
static void log_protection(const ftc__tcp *g)
{
    int n = 0, on = 0, secret = 0;
    for (int p = 0; p < g->size; p++) {
        for (int s = 0; p != g->rank && s <= g->streams; s++) {
            const ftc__chan *c =
                s < g->streams ? &g->coll[ftc__chan_id(g, p, s)] : &g->side[p];
            n++;
            on += c->protect;
            secret += c->encrypt;
        }
    }
    FTC_LOG_INFO("pg.protect",
                 "group %016llx rank %d: messages protected on %d of %d "
                 "connections (%d of them encrypted)",
                 (unsigned long long)g->group_id, g->rank, on, n, secret);
}

int ftc__mesh_connect(ftc__tcp *g, ftc__pg_listener *l,
                      const char *const *addrs, ftc__deadline dl)
{
    for (int p = 0; p < g->size; p++) {
        for (int s = 0; s <= g->streams; s++) {
            ftc__chan *c =
                s < g->streams ? &g->coll[ftc__chan_id(g, p, s)] : &g->side[p];
            c->peer = p;
            c->stream = s < g->streams ? s : -1;
            snprintf(c->name, sizeof(c->name), "rank %d (%s)", p, addrs[p]);
        }
    }
    int rc = 0;
    for (int p = 0; rc == 0 && p < g->rank; p++) {
        for (int s = 0; rc == 0 && s < g->streams; s++) {
            rc = dial(g, p, addrs[p], (uint32_t)s, dl);
        }
        if (rc == 0) {
            rc = dial(g, p, addrs[p], FTC__PGW_SIDE, dl);
        }
    }
    if (rc == 0) {
        rc = accept_all(g, l->fd, dl);
    }
    for (int p = 0; rc == 0 && p < g->rank; p++) {
        for (int s = 0; rc == 0 && s < g->streams; s++) {
            rc = read_ack(g, &g->coll[ftc__chan_id(g, p, s)], dl);
        }
        if (rc == 0) {
            rc = read_ack(g, &g->side[p], dl);
        }
    }
    if (rc == 0 && g->auth && g->size > 1) {
        log_protection(g);
    }
    return rc;
}
