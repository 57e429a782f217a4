/* Rooted plans (broadcast and reduce over a binomial tree for small
 * messages, a pipelined chain for large ones) and the dissemination
 * barrier. Ranks are renumbered relative to the root (vr = r - root). */
#include "pg/sched/sched_int.h"

static int real_rank(const ftc__sched_ctx *x, int vr)
{
    return ftc__mod(vr + x->op->root, x->size);
}

/* The lowest set bit of vr; for the root, a power of two >= size. */
static int subtree_span(const ftc__sched_ctx *x, int vr)
{
    if (vr == 0) {
        int span = 1;
        while (span < x->size) {
            span <<= 1;
        }
        return span;
    }
    return vr & -vr;
}

/* Binomial broadcast: a rank receives each segment from its parent and
 * forwards it to its children, largest subtree first. */
int ftc__build_bcast_tree(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int vr = ftc__mod(x->rank - op->root, x->size);
    int span = subtree_span(x, vr);
    size_t c = op->count, E = x->E;
    for (size_t j = 0; j < ftc__nseg(x, c); j++) {
        size_t o = j * x->seg * E, len = ftc__seg_len(x, c, j) * E;
        ftc__dep dep = FTC__NO_DEP;
        if (vr != 0) {
            int ch = ftc__seg_chan(x, real_rank(x, vr - span), j);
            dep = ftc__after_recv(
                ch, ftc__plan_recv(x->p, ch, op->out + o, len, FTC__NO_DEP));
        }
        for (int k = span >> 1; k >= 1; k >>= 1) {
            if (vr + k < x->size) {
                ftc__plan_send(x->p, ftc__seg_chan(x, real_rank(x, vr + k), j),
                               op->out + o, len, dep);
            }
        }
    }
    return x->p->error;
}

int ftc__build_bcast_chain_links(ftc__sched_ctx *x, int prev, int next)
{
    ftc__op *op = x->op;
    size_t c = op->count, E = x->E;
    for (size_t j = 0; j < ftc__nseg(x, c); j++) {
        size_t o = j * x->seg * E, len = ftc__seg_len(x, c, j) * E;
        ftc__dep dep = FTC__NO_DEP;
        if (prev >= 0) {
            int ch = ftc__seg_chan(x, prev, j);
            dep = ftc__after_recv(
                ch, ftc__plan_recv(x->p, ch, op->out + o, len, FTC__NO_DEP));
        }
        if (next >= 0) {
            ftc__plan_send(x->p, ftc__seg_chan(x, next, j), op->out + o, len,
                           dep);
        }
    }
    return x->p->error;
}

/* Chain broadcast root -> root+1 -> ...: every link carries the buffer
 * once, and segments pipeline down the chain. */
int ftc__build_bcast_chain(ftc__sched_ctx *x)
{
    int vr = ftc__mod(x->rank - x->op->root, x->size);
    return ftc__build_bcast_chain_links(x, vr != 0 ? real_rank(x, vr - 1) : -1,
                                        vr + 1 < x->size ? real_rank(x, vr + 1)
                                                         : -1);
}

/* Where a non-root rank accumulates: scratch, since in is read-only and
 * out is only meaningful at the root. */
static uint8_t *accumulator(ftc__sched_ctx *x, bool root)
{
    if (root) {
        return x->op->out;
    }
    return ftc__scratch_get(x->scratch, x->op->count * x->E);
}

/* Binomial reduce: children's partial results are folded in a fixed order
 * (smallest subtree first), then passed to the parent, per segment. */
int ftc__build_reduce_tree(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int vr = ftc__mod(x->rank - op->root, x->size);
    int span = subtree_span(x, vr);
    size_t c = op->count, E = x->E;
    bool has_children = span > 1 && vr + 1 < x->size;
    uint8_t *acc = has_children ? accumulator(x, vr == 0) : NULL;
    if (has_children && acc == NULL) {
        return ftc__seterr(FTC_ENOMEM, "reduce: out of memory");
    }
    int last_child = 0;
    for (int k = 1; k < span && vr + k < x->size; k <<= 1) {
        last_child = k;
    }
    for (size_t j = 0; j < ftc__nseg(x, c); j++) {
        size_t o = j * x->seg * E, len = ftc__seg_len(x, c, j) * E;
        ftc__dep dep = FTC__NO_DEP;
        const uint8_t *a = op->in + o;
        for (int k = 1; k < span && vr + k < x->size; k <<= 1) {
            int ch = ftc__seg_chan(x, real_rank(x, vr + k), j);
            bool avg = vr == 0 && op->op == FTC_OP_AVG && k == last_child;
            uint32_t i =
                ftc__plan_recv_reduce(x->p, ch, acc + o, a, len, dep, avg);
            dep = ftc__after_recv(ch, i);
            a = acc + o;
        }
        if (vr != 0) {
            ftc__plan_send(x->p, ftc__seg_chan(x, real_rank(x, vr - span), j),
                           a, len, dep);
        }
    }
    return x->p->error;
}

/* Chain reduce: partial results flow root+N-1 -> ... -> root, each rank
 * folding its own contribution in as segments pass. */
int ftc__build_reduce_chain(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int vr = ftc__mod(x->rank - op->root, x->size);
    size_t c = op->count, E = x->E;
    bool leaf = vr == x->size - 1;
    uint8_t *acc = leaf ? NULL : accumulator(x, vr == 0);
    if (!leaf && acc == NULL) {
        return ftc__seterr(FTC_ENOMEM, "reduce: out of memory");
    }
    for (size_t j = 0; j < ftc__nseg(x, c); j++) {
        size_t o = j * x->seg * E, len = ftc__seg_len(x, c, j) * E;
        ftc__dep dep = FTC__NO_DEP;
        const uint8_t *src = op->in + o;
        if (!leaf) {
            int ch = ftc__seg_chan(x, real_rank(x, vr + 1), j);
            uint32_t i = ftc__plan_recv_reduce(x->p, ch, acc + o, op->in + o,
                                               len, FTC__NO_DEP,
                                               vr == 0 && op->op == FTC_OP_AVG);
            dep = ftc__after_recv(ch, i);
            src = acc + o;
        }
        if (vr != 0) {
            ftc__plan_send(x->p, ftc__seg_chan(x, real_rank(x, vr - 1), j), src,
                           len, dep);
        }
    }
    return x->p->error;
}

/* Dissemination barrier (Hensgen, Finkel, Manber): in round k a rank
 * signals r + 2^k and waits for r - 2^k; after ceil(log2 N) rounds every
 * rank has heard, transitively, from every other. */
int ftc__build_barrier(ftc__sched_ctx *x)
{
    ftc__dep dep = FTC__NO_DEP;
    for (int d = 1; d < x->size; d <<= 1) {
        int to = ftc__mod(x->rank + d, x->size);
        int from = ftc__mod(x->rank - d, x->size);
        ftc__plan_send(x->p, ftc__sched_chan(x, to, 0), NULL, 0, dep);
        int ch = ftc__sched_chan(x, from, 0);
        dep =
            ftc__after_recv(ch, ftc__plan_recv(x->p, ch, NULL, 0, FTC__NO_DEP));
    }
    return x->p->error;
}
