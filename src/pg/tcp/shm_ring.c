/* The data path of a shared-memory lane (driver only): the plan's sends
 * to the peer are copied into this rank's ring, its receives copied or
 * reduced straight out of the peer's, so a reduction reads the peer's
 * bytes once and no byte enters the kernel. Every header and index read
 * from the segment is the peer's word and is checked like a socket's. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "pg/reduce.h"
#include "pg/tcp/tcp_int.h"

/* A writer publishes at least this often, so the reader starts early. */
#define CHUNK (64 * 1024)

static size_t ring_at(uint64_t index)
{
    return (size_t)(index & (FTC__SHM_RING - 1));
}

static size_t pad_after(size_t len)
{
    return (FTC__SHM_ALIGN - (FTC__PGW_HDR + len) % FTC__SHM_ALIGN) %
           FTC__SHM_ALIGN;
}

/* Rings the peer's doorbell if it said it sleeps on this flag. A full
 * socket already holds a ring it has not heard. */
static void doorbell(ftc__chan *c, _Atomic uint32_t *waits)
{
    if (atomic_load(waits) != 0 && atomic_exchange(waits, 0) != 0) {
        static const uint8_t one = 1;
        (void)send(c->fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

/* Reads the doorbells the peer rang; its end of stream marks c->eof. */
static void drain_doorbells(ftc__chan *c)
{
    uint8_t sink[256];
    while (c->readable && !c->eof) {
        ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0 || (n < 0 && errno == EINTR)) {
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            c->eof = true;
        }
        c->readable = false;
    }
}

static void corrupt(ftc__tcp *g, ftc__chan *c, const char *what)
{
    ftc__tcp_fail_peer(g, c->peer, FTC_EPROTO,
                       "shared memory with %s: %s is out of range (a corrupted "
                       "segment, or a peer writing outside its ring)",
                       c->name, what);
}

/* ------------------------------------------------------------ writing */

static void ring_put(uint8_t *ring, uint64_t at, const uint8_t *src, size_t n)
{
    size_t off = ring_at(at), first = FTC__SHM_RING - off;
    if (first >= n) {
        memcpy(ring + off, src, n);
    } else {
        memcpy(ring + off, src, first);
        memcpy(ring, src + first, n - first);
    }
}

static void publish(ftc__shm_lane *l, ftc__chan *c)
{
    atomic_store(&l->tx_ctl->head, l->tx_head);
    doorbell(c, &l->tx_ctl->consumer_waits);
}

static bool lane_write(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    ftc__shm_lane *l = c->lane;
    bool moved = false;
    while (!g->failed && pc->sent < pc->nsends) {
        const ftc__xfer *x = &pc->sends[pc->sent];
        if (!ftc__xfer_ready(&g->plan, x)) {
            break;
        }
        uint64_t used = l->tx_head - atomic_load_explicit(&l->tx_ctl->tail,
                                                          memory_order_acquire);
        if (used > FTC__SHM_RING) {
            corrupt(g, c, "the read index of its ring");
            return true;
        }
        size_t room = FTC__SHM_RING - (size_t)used;
        bool wrote = false;
        if (!l->tx_hdr_done) {
            /* Room for the header and the pad of an empty message. */
            if (room < FTC__SHM_ALIGN) {
                break;
            }
            ftc__coll_header(g, pc->sent, x->len, l->tx + ring_at(l->tx_head));
            l->tx_head += FTC__PGW_HDR;
            room -= FTC__PGW_HDR;
            l->tx_hdr_done = wrote = true;
        }
        size_t left = x->len - l->tx_off, pad = pad_after(x->len);
        size_t n = left < room ? left : room;
        n = n < CHUNK ? n : CHUNK;
        if (n == left && n + pad > room) {
            n = room > pad ? room - pad : 0; /* the end goes with its pad */
        }
        if (n > 0) { /* an empty message may have no buffer */
            ring_put(l->tx, l->tx_head, x->buf + l->tx_off, n);
        }
        l->tx_head += n;
        l->tx_off += n;
        bool last = l->tx_off == x->len;
        if (last) {
            l->tx_head += pad;
        }
        if (wrote || n > 0 || last) {
            publish(l, c);
            moved = true;
        }
        if (!last) {
            if (n == 0) {
                break;
            }
            continue;
        }
        l->tx_hdr_done = false;
        l->tx_off = 0;
        pc->sent++;
        g->plan.pending--;
    }
    return moved;
}

/* ------------------------------------------------------------ reading */

/* Copies or reduces n bytes of the ring into the receive's destination
 * from its byte got on. */
static void take(const ftc__tcp *g, const uint8_t *src, const ftc__xfer *x,
                 size_t got, size_t n)
{
    if (x->a == NULL) {
        memcpy(x->buf + got, src, n);
    } else {
        ftc__reduce(x->buf + got, x->a + got, src,
                    n / ftc_dtype_size(g->plan.dtype), g->plan.dtype,
                    g->plan.op);
    }
}

static void ring_take(const ftc__tcp *g, const uint8_t *ring, uint64_t at,
                      const ftc__xfer *x, size_t got, size_t n)
{
    size_t off = ring_at(at), first = FTC__SHM_RING - off;
    if (first >= n) {
        take(g, ring + off, x, got, n);
    } else {
        /* Payloads start 8-byte aligned: no element straddles the end. */
        take(g, ring + off, x, got, first);
        take(g, ring, x, got + first, n - first);
    }
}

static void consumed(ftc__shm_lane *l, ftc__chan *c)
{
    atomic_store(&l->rx_ctl->tail, l->rx_tail);
    doorbell(c, &l->rx_ctl->producer_waits);
}

/* The next message's header, checked against the plan. false: not there
 * yet, not due yet, or the group failed. */
static bool read_header(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc,
                        uint64_t avail)
{
    ftc__shm_lane *l = c->lane;
    if (avail < FTC__PGW_HDR) {
        return false;
    }
    /* A copy: the peer could change the ring's bytes after the check. */
    uint8_t h[FTC__PGW_HDR];
    memcpy(h, l->rx + ring_at(l->rx_tail), sizeof(h));
    if (!ftc__chan_decode_header(g, c, h, &c->hdr)) {
        return false;
    }
    if (!ftc__chan_coll_check(g, c, pc)) {
        return false;
    }
    l->rx_tail += FTC__PGW_HDR;
    l->rx_have_hdr = true;
    l->rx_got = 0;
    return true;
}

static bool lane_read(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    ftc__shm_lane *l = c->lane;
    size_t elem = ftc_dtype_size(g->plan.dtype);
    bool moved = false;
    while (!g->failed && pc->recvd < pc->nrecvs) {
        uint64_t avail =
            atomic_load_explicit(&l->rx_ctl->head, memory_order_acquire) -
            l->rx_tail;
        if (avail > FTC__SHM_RING) {
            corrupt(g, c, "the write index of its ring");
            return true;
        }
        if (!l->rx_have_hdr) {
            if (!read_header(g, c, pc, avail)) {
                break;
            }
            avail -= FTC__PGW_HDR;
            moved = true;
        }
        const ftc__xfer *x = &pc->recvs[pc->recvd];
        size_t n = x->len - l->rx_got;
        n = avail < n ? (size_t)avail : n;
        if (x->a != NULL) {
            n -= n % elem;
        }
        if (n > 0) {
            ring_take(g, l->rx, l->rx_tail, x, l->rx_got, n);
        }
        l->rx_got += n;
        l->rx_tail += n;
        moved = moved || n > 0;
        if (l->rx_got < x->len) {
            break;
        }
        /* The writer publishes a message's end with its pad. */
        l->rx_tail += pad_after(x->len);
        if (x->avg) {
            ftc__reduce_avg_finish(x->buf, x->len / elem, g->plan.dtype,
                                   g->plan.size);
        }
        l->rx_have_hdr = false;
        pc->recvd++;
        g->plan.pending--;
    }
    if (moved) {
        consumed(l, c); /* once per pump: the loop above never waits */
    }
    return moved;
}

/* ------------------------------------------------------------- driving */

/* Whether the lane's part of the plan can no longer finish, its peer gone
 * (c->eof) and nothing moved. Unlike a socket's, the ring's bytes are not
 * ordered before the end of stream: the peer's last messages may still be
 * unread there, behind a receive that waits for another channel (a
 * direct reduce_scatter's, for the one before it). Such a receive is
 * stuck only if the ring holds nothing more; one free to go that read
 * nothing lacks bytes the peer will never write. A send still to do to a
 * peer that left never had its receive. */
static bool lane_stuck(const ftc__tcp *g, const ftc__chan *c,
                       const ftc__plan_chan *pc)
{
    if (pc->sent < pc->nsends) {
        return true;
    }
    if (pc->recvd >= pc->nrecvs) {
        return false;
    }
    const ftc__shm_lane *l = c->lane;
    uint64_t unread =
        atomic_load_explicit(&l->rx_ctl->head, memory_order_acquire) -
        l->rx_tail;
    return unread == 0 || ftc__xfer_ready(&g->plan, &pc->recvs[pc->recvd]);
}

bool ftc__shm_pump(ftc__tcp *g, ftc__chan *c, ftc__plan_chan *pc)
{
    drain_doorbells(c);
    bool moved = lane_write(g, c, pc);
    moved |= lane_read(g, c, pc);
    g->shm_moved |= moved;
    if (!g->failed && c->eof && !moved && lane_stuck(g, c, pc)) {
        ftc__chan_peer_gone(g, c, pc);
    }
    return moved;
}

bool ftc__shm_arm(ftc__tcp *g)
{
    if (g->nlanes == 0) {
        return false; /* every sleep of a group without lanes */
    }
    bool moved = false;
    for (int i = 0; g->cur != NULL && !g->failed && i < g->plan.nactive; i++) {
        int ci = g->plan.active[i];
        ftc__chan *c = &g->coll[ci];
        ftc__plan_chan *pc = &g->plan.ch[ci];
        if (c->lane == NULL) {
            continue;
        }
        if (pc->recvd < pc->nrecvs) {
            atomic_store(&c->lane->rx_ctl->consumer_waits, 1);
        }
        if (pc->sent < pc->nsends) {
            atomic_store(&c->lane->tx_ctl->producer_waits, 1);
        }
        moved |= ftc__shm_pump(g, c, pc);
    }
    return moved;
}
