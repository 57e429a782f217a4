/* Plans that move blocks between ranks: allgather(v) (ring and direct),
 * reduce_scatter (ring and direct), gather, scatter and alltoall(v). */
#include "pg/sched/sched_int.h"

/* How many parts a whole message is cut into: one per stream for large
 * messages, so every connection carries a share. */
static size_t parts_of(const ftc__sched_ctx *x, size_t bytes)
{
    size_t streams = (size_t)x->streams;
    if (streams == 1 || bytes < x->seg * x->E) {
        return 1;
    }
    return streams;
}

void ftc__send_parts(ftc__sched_ctx *x, int peer, const uint8_t *src,
                     size_t bytes, ftc__dep dep)
{
    size_t k = parts_of(x, bytes);
    for (size_t j = 0; j < k; j++) {
        size_t lo = bytes * j / k, hi = bytes * (j + 1) / k;
        ftc__plan_send(x->p, ftc__seg_chan(x, peer, j), src + lo, hi - lo, dep);
    }
}

void ftc__recv_parts(ftc__sched_ctx *x, int peer, uint8_t *dst, size_t bytes,
                     ftc__dep dep)
{
    size_t k = parts_of(x, bytes);
    for (size_t j = 0; j < k; j++) {
        size_t lo = bytes * j / k, hi = bytes * (j + 1) / k;
        ftc__plan_recv(x->p, ftc__seg_chan(x, peer, j), dst + lo, hi - lo, dep);
    }
}

/* Ring allgather: at step s a rank forwards the block it received at step
 * s-1, segment by segment, as soon as each segment arrived. */
int ftc__build_allgather_ring(ftc__sched_ctx *x, const size_t *cnt,
                              const size_t *off)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    int left = ftc__mod(r - 1, n), right = ftc__mod(r + 1, n);
    size_t E = x->E, maxseg = 1;
    for (int b = 0; b < n; b++) {
        size_t k = ftc__nseg(x, cnt[b]);
        maxseg = k > maxseg ? k : maxseg;
    }
    ftc__dep *last = ftc__calloc(maxseg, sizeof(*last));
    ftc__dep *next = ftc__calloc(maxseg, sizeof(*next));
    if (last == NULL || next == NULL) {
        ftc__free(last);
        ftc__free(next);
        return ftc__seterr(FTC_ENOMEM, "ring allgather: out of memory");
    }
    for (int s = 0; s < n - 1; s++) {
        int sb = ftc__mod(r - s, n), rb = ftc__mod(r - s - 1, n);
        const uint8_t *src = s == 0 ? op->in : op->out + off[sb] * E;
        for (size_t j = 0; j < ftc__nseg(x, cnt[sb]); j++) {
            ftc__plan_send(x->p, ftc__seg_chan(x, right, j),
                           src + j * x->seg * E,
                           ftc__seg_len(x, cnt[sb], j) * E,
                           s == 0 ? FTC__NO_DEP : last[j]);
        }
        for (size_t j = 0; j < ftc__nseg(x, cnt[rb]); j++) {
            int ch = ftc__seg_chan(x, left, j);
            uint32_t i =
                ftc__plan_recv(x->p, ch, op->out + (off[rb] + j * x->seg) * E,
                               ftc__seg_len(x, cnt[rb], j) * E, FTC__NO_DEP);
            next[j] = ftc__after_recv(ch, i);
        }
        ftc__dep *t = last;
        last = next;
        next = t;
    }
    ftc__free(last);
    ftc__free(next);
    return x->p->error;
}

/* Direct allgather: every rank sends its block to every other rank at
 * once (one round: best for small blocks). */
int ftc__build_allgather_direct(ftc__sched_ctx *x, const size_t *cnt,
                                const size_t *off)
{
    ftc__op *op = x->op;
    for (int i = 1; i < x->size; i++) {
        int to = ftc__mod(x->rank + i, x->size);
        int from = ftc__mod(x->rank - i, x->size);
        ftc__send_parts(x, to, op->in, cnt[x->rank] * x->E, FTC__NO_DEP);
        ftc__recv_parts(x, from, op->out + off[from] * x->E, cnt[from] * x->E,
                        FTC__NO_DEP);
    }
    return x->p->error;
}

/* Ring reduce-scatter: like the first half of the ring allreduce, shifted
 * by one block so that rank r ends with block r. Partial sums travel
 * through scratch memory because the input is not modified. */
int ftc__build_reduce_scatter_ring(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    int left = ftc__mod(r - 1, n), right = ftc__mod(r + 1, n);
    size_t E = x->E, c = op->count, blk = c * E;
    size_t nsg = ftc__nseg(x, c);
    uint8_t *scratch = ftc__scratch_get(x->scratch, (size_t)n * blk);
    ftc__dep *last = ftc__calloc(nsg, sizeof(*last));
    if ((scratch == NULL && n * blk > 0) || last == NULL) {
        ftc__free(last);
        return ftc__seterr(FTC_ENOMEM, "ring reduce_scatter: out of memory");
    }
    bool avg = op->op == FTC_OP_AVG;
    for (int s = 0; s < n - 1; s++) {
        int sb = ftc__mod(r - s - 1, n), rb = ftc__mod(r - s - 2, n);
        const uint8_t *src = (s == 0 ? op->in : scratch) + (size_t)sb * blk;
        for (size_t j = 0; j < nsg; j++) {
            ftc__plan_send(x->p, ftc__seg_chan(x, right, j),
                           src + j * x->seg * E, ftc__seg_len(x, c, j) * E,
                           s == 0 ? FTC__NO_DEP : last[j]);
        }
        bool final = s == n - 2;
        uint8_t *dst = final ? op->out : scratch + (size_t)rb * blk;
        for (size_t j = 0; j < nsg; j++) {
            int ch = ftc__seg_chan(x, left, j);
            size_t o = j * x->seg * E;
            uint32_t i = ftc__plan_recv_reduce(
                x->p, ch, dst + o, op->in + (size_t)rb * blk + o,
                ftc__seg_len(x, c, j) * E, FTC__NO_DEP, avg && final);
            last[j] = ftc__after_recv(ch, i);
        }
    }
    ftc__free(last);
    return x->p->error;
}

/* Direct reduce-scatter: block j goes straight to rank j; each rank folds
 * what it receives in rank order, so the result does not depend on
 * arrival order. */
int ftc__build_reduce_scatter_direct(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    size_t blk = op->count * x->E;
    for (int i = 1; i < n; i++) {
        int to = ftc__mod(r + i, n);
        ftc__plan_send(x->p, ftc__sched_chan(x, to, 0),
                       op->in + (size_t)to * blk, blk, FTC__NO_DEP);
    }
    ftc__dep dep = FTC__NO_DEP;
    const uint8_t *acc = op->in + (size_t)r * blk;
    int seen = 0;
    for (int from = 0; from < n; from++) {
        if (from == r) {
            continue;
        }
        int ch = ftc__sched_chan(x, from, 0);
        seen++;
        uint32_t i =
            ftc__plan_recv_reduce(x->p, ch, op->out, acc, blk, dep,
                                  op->op == FTC_OP_AVG && seen == n - 1);
        dep = ftc__after_recv(ch, i);
        acc = op->out;
    }
    return x->p->error;
}

int ftc__build_gather(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    size_t blk = op->count * x->E;
    if (x->rank != op->root) {
        ftc__send_parts(x, op->root, op->in, blk, FTC__NO_DEP);
        return x->p->error;
    }
    for (int i = 0; i < x->size; i++) {
        if (i != x->rank) {
            ftc__recv_parts(x, i, op->out + (size_t)i * blk, blk, FTC__NO_DEP);
        }
    }
    return x->p->error;
}

int ftc__build_scatter(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    size_t blk = op->count * x->E;
    if (x->rank != op->root) {
        ftc__recv_parts(x, op->root, op->out, blk, FTC__NO_DEP);
        return x->p->error;
    }
    for (int i = 0; i < x->size; i++) {
        if (i != x->rank) {
            ftc__send_parts(x, i, op->in + (size_t)i * blk, blk, FTC__NO_DEP);
        }
    }
    return x->p->error;
}

/* Pairwise exchange: at once with every peer, in the order r+1, r+2, ...
 * for sends and r-1, r-2, ... for receives, so no two ranks start on the
 * same peer. */
int ftc__build_alltoallv(ftc__sched_ctx *x, const size_t *scnt,
                         const size_t *rcnt)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    size_t soff = 0, roff = 0;
    size_t *so = ftc__calloc((size_t)n, sizeof(*so));
    size_t *ro = ftc__calloc((size_t)n, sizeof(*ro));
    if (so == NULL || ro == NULL) {
        ftc__free(so);
        ftc__free(ro);
        return ftc__seterr(FTC_ENOMEM, "alltoall: out of memory");
    }
    for (int i = 0; i < n; i++) {
        so[i] = soff;
        ro[i] = roff;
        soff += scnt[i];
        roff += rcnt[i];
    }
    for (int i = 1; i < n; i++) {
        int to = ftc__mod(r + i, n), from = ftc__mod(r - i, n);
        ftc__send_parts(x, to, op->in + so[to] * x->E, scnt[to] * x->E,
                        FTC__NO_DEP);
        ftc__recv_parts(x, from, op->out + ro[from] * x->E, rcnt[from] * x->E,
                        FTC__NO_DEP);
    }
    memmove(op->out + ro[r] * x->E, op->in + so[r] * x->E, rcnt[r] * x->E);
    ftc__free(so);
    ftc__free(ro);
    return x->p->error;
}
