/* Tagged send/recv: sends queue on the side channel to their peer;
 * receives match incoming messages by (source, tag) in post order, and a
 * message that arrives before its receive waits, within limits, in the
 * unexpected list. */
#include "pg/tcp/tcp_int.h"

static size_t bytes_of(const ftc__op *op)
{
    return op->count * op->elem;
}

void ftc__p2p_take(ftc__tcp *g, ftc__op *op)
{
    op->next = NULL;
    if (op->coll == FTC__RECV) {
        ftc__op **pp = &g->posted;
        while (*pp != NULL) {
            pp = &(*pp)->next;
        }
        *pp = op;
        return;
    }
    ftc__chan *c = &g->side[op->root];
    ftc__outmsg *m = ftc__calloc(1, sizeof(*m));
    if (m == NULL) {
        ftc__tcp_op_done(g, op, FTC_ENOMEM, "send: out of memory");
        return;
    }
    ftc__pgw_hdr h = {.kind = FTC__PGW_P2P,
                      .group = g->group_id,
                      .epoch = g->epoch,
                      .seq = c->p2p_out++,
                      .tag = op->tag,
                      .src = (uint32_t)g->rank,
                      .len = bytes_of(op)};
    ftc__pgw_encode(m->hdr, &h);
    m->payload = op->in;
    m->len = bytes_of(op);
    m->send = op;
    if (c->oq_tail != NULL) {
        c->oq_tail->next = m;
    } else {
        c->oq_head = m;
    }
    c->oq_tail = m;
    op->next = g->sends;
    g->sends = op;
}

/* Unlinks op from a singly linked list; true if it was there. */
static bool unlink_op(ftc__op **list, ftc__op *op)
{
    for (ftc__op **pp = list; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == op) {
            *pp = op->next;
            op->next = NULL;
            return true;
        }
    }
    return false;
}

void ftc__p2p_sent(ftc__tcp *g, ftc__op *op)
{
    unlink_op(&g->sends, op);
    ftc__tcp_op_done(g, op, 0, NULL);
}

static bool matches(const ftc__op *r, int src, uint32_t tag)
{
    return (r->root == FTC_PG_ANY_SOURCE || r->root == src) && r->tag == tag;
}

/* A receive whose buffer does not fit the message fails alone; the group
 * stays usable because the message is consumed whole. */
static void size_mismatch(ftc__tcp *g, ftc__op *r, int src, size_t len)
{
    char msg[200];
    snprintf(msg, sizeof(msg),
             "recv from rank %d tag %u: the message has %zu bytes, the "
             "buffer %zu",
             src, r->tag, len, bytes_of(r));
    ftc__tcp_op_done(g, r, FTC_EMSGSIZE, msg);
}

bool ftc__p2p_match_header(ftc__tcp *g, ftc__chan *c)
{
    size_t len = (size_t)c->hdr.len;
    int src = c->peer;
    if (len > g->pg->opts.max_message_bytes) {
        ftc__tcp_fail_peer(g, c->peer, FTC_EMSGSIZE,
                           "from %s: message of %zu bytes exceeds "
                           "max_message_bytes %zu",
                           c->name, len, g->pg->opts.max_message_bytes);
        return false;
    }
    c->rx_recv = NULL;
    c->rx_unx = NULL;
    for (ftc__op *r = g->posted; r != NULL; r = r->next) {
        if (matches(r, src, c->hdr.tag)) {
            unlink_op(&g->posted, r);
            c->rx_recv = r;
            c->dst = bytes_of(r) == len ? r->out : NULL;
            return true;
        }
    }
    if (g->unexp_bytes + len > g->pg->opts.max_unexpected_bytes) {
        ftc__tcp_fail(g, FTC_EMSGSIZE,
                      "from %s: %zu bytes arrived before their recv was "
                      "posted, beyond max_unexpected_bytes %zu (post "
                      "receives earlier or raise the limit)",
                      c->name, g->unexp_bytes + len,
                      g->pg->opts.max_unexpected_bytes);
        return false;
    }
    ftc__unexp *u = ftc__calloc(1, sizeof(*u));
    uint8_t *data = ftc__malloc(len > 0 ? len : 1);
    if (u == NULL || data == NULL) {
        ftc__free(u);
        ftc__free(data);
        ftc__tcp_fail(g, FTC_ENOMEM, "from %s: no memory for %zu bytes",
                      c->name, len);
        return false;
    }
    u->src = src;
    u->tag = c->hdr.tag;
    u->data = data;
    u->len = len;
    g->unexp_bytes += len;
    c->rx_unx = u;
    c->dst = data;
    return true;
}

void ftc__p2p_received(ftc__tcp *g, ftc__chan *c)
{
    size_t len = (size_t)c->hdr.len;
    if (c->rx_recv != NULL) {
        ftc__op *r = c->rx_recv;
        c->rx_recv = NULL;
        if (bytes_of(r) != len) {
            size_mismatch(g, r, c->peer, len);
            return;
        }
        r->root = c->peer; /* reported by ftc_work_source */
        ftc__tcp_op_done(g, r, 0, NULL);
        return;
    }
    ftc__unexp *u = c->rx_unx;
    c->rx_unx = NULL;
    *g->unexp_tail = u;
    g->unexp_tail = &u->next;
}

bool ftc__p2p_match_unexpected(ftc__tcp *g)
{
    bool moved = false;
    ftc__op *r = g->posted;
    while (r != NULL) {
        ftc__op *next = r->next;
        ftc__unexp **pu = &g->unexp;
        while (*pu != NULL && !matches(r, (*pu)->src, (*pu)->tag)) {
            pu = &(*pu)->next;
        }
        if (*pu != NULL) {
            ftc__unexp *u = *pu;
            *pu = u->next;
            if (*pu == NULL) {
                /* rebuild the tail pointer */
                g->unexp_tail = &g->unexp;
                while (*g->unexp_tail != NULL) {
                    g->unexp_tail = &(*g->unexp_tail)->next;
                }
            }
            g->unexp_bytes -= u->len;
            unlink_op(&g->posted, r);
            if (bytes_of(r) != u->len) {
                size_mismatch(g, r, u->src, u->len);
            } else {
                memcpy(r->out, u->data, u->len);
                r->root = u->src;
                ftc__tcp_op_done(g, r, 0, NULL);
            }
            ftc__free(u->data);
            ftc__free(u);
            moved = true;
        }
        r = next;
    }
    return moved;
}

ftc__op *ftc__p2p_next_deadline(ftc__tcp *g)
{
    ftc__op *best = NULL;
    ftc__op *lists[2] = {g->posted, g->sends};
    for (int i = 0; i < 2; i++) {
        for (ftc__op *o = lists[i]; o != NULL; o = o->next) {
            if (best == NULL || o->deadline.ns < best->deadline.ns) {
                best = o;
            }
        }
    }
    return best;
}

void ftc__p2p_fail_all(ftc__tcp *g, int rc, const char *msg)
{
    while (g->posted != NULL) {
        ftc__op *r = g->posted;
        g->posted = r->next;
        ftc__tcp_op_done(g, r, rc, msg);
    }
    /* Sends stay referenced by their queued frames, which are dropped
     * with the channel; their works complete now. */
    while (g->sends != NULL) {
        ftc__op *s = g->sends;
        g->sends = s->next;
        for (int p = 0; p < g->size; p++) {
            for (ftc__outmsg *m = g->side[p].oq_head; m != NULL; m = m->next) {
                if (m->send == s) {
                    m->send = NULL;
                    m->payload = NULL;
                    m->len = 0;
                }
            }
        }
        ftc__tcp_op_done(g, s, rc, msg);
    }
    for (int p = 0; p < g->size; p++) {
        ftc__chan *c = &g->side[p];
        if (c->rx_recv != NULL) {
            ftc__tcp_op_done(g, c->rx_recv, rc, msg);
            c->rx_recv = NULL;
        }
    }
}

void ftc__p2p_free(ftc__tcp *g)
{
    while (g->unexp != NULL) {
        ftc__unexp *u = g->unexp;
        g->unexp = u->next;
        ftc__free(u->data);
        ftc__free(u);
    }
    g->unexp_tail = &g->unexp;
    for (int p = 0; p < g->size; p++) {
        ftc__chan *c = &g->side[p];
        if (c->rx_unx != NULL) {
            ftc__free(c->rx_unx->data);
            ftc__free(c->rx_unx);
            c->rx_unx = NULL;
        }
    }
}
