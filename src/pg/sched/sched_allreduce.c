/* Allreduce plans: the pipelined ring (bandwidth-optimal: each rank sends
 * and receives 2(N-1)/N of the buffer) and recursive doubling
 * (latency-optimal: ceil(log2 N) rounds, plus two for the ranks folded in
 * when N is not a power of two). */
#include "pg/sched/sched_int.h"

/* Ring: N-1 reduce-scatter steps then N-1 allgather steps over blocks of
 * an even split, each block cut into segments. A segment is forwarded as
 * soon as it was reduced (its send waits only on that segment's receive),
 * so reduction of one segment overlaps the transfer of the next. */
int ftc__build_allreduce_ring(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    int left = ftc__mod(r - 1, n), right = ftc__mod(r + 1, n);
    size_t E = x->E, count = op->count;
    size_t maxseg = ftc__nseg(x, ftc__blk_cnt(count, n, 0));
    /* last[b * maxseg + j]: the receive that last produced segment j of
     * block b, which the next send of it waits for. */
    ftc__dep *last = ftc__calloc((size_t)n * maxseg, sizeof(*last));
    if (last == NULL) {
        return ftc__seterr(FTC_ENOMEM, "ring allreduce: out of memory");
    }
    bool avg = op->op == FTC_OP_AVG;
    for (int pass = 0; pass < 2; pass++) {
        bool rs = pass == 0; /* reduce-scatter, then allgather */
        for (int s = 0; s < n - 1; s++) {
            int sb = ftc__mod(rs ? r - s : r + 1 - s, n);
            int rb = ftc__mod(rs ? r - s - 1 : r - s, n);
            size_t scnt = ftc__blk_cnt(count, n, sb);
            size_t soff = ftc__blk_off(count, n, sb);
            const uint8_t *sbase = (rs && s == 0) ? op->in : op->out;
            for (size_t j = 0; j < ftc__nseg(x, scnt); j++) {
                size_t o = (soff + j * x->seg) * E;
                ftc__dep dep = (rs && s == 0) ? FTC__NO_DEP
                                              : last[(size_t)sb * maxseg + j];
                ftc__plan_send(x->p, ftc__seg_chan(x, right, j), sbase + o,
                               ftc__seg_len(x, scnt, j) * E, dep);
            }
            size_t rcnt = ftc__blk_cnt(count, n, rb);
            size_t roff = ftc__blk_off(count, n, rb);
            for (size_t j = 0; j < ftc__nseg(x, rcnt); j++) {
                size_t o = (roff + j * x->seg) * E;
                int ch = ftc__seg_chan(x, left, j);
                size_t len = ftc__seg_len(x, rcnt, j) * E;
                uint32_t idx = rs ? ftc__plan_recv_reduce(
                                        x->p, ch, op->out + o, op->in + o, len,
                                        FTC__NO_DEP, avg && s == n - 2)
                                  : ftc__plan_recv(x->p, ch, op->out + o, len,
                                                   FTC__NO_DEP);
                last[(size_t)rb * maxseg + j] = ftc__after_recv(ch, idx);
            }
        }
    }
    ftc__free(last);
    return x->p->error;
}

/* Recursive doubling on the whole buffer. With p2 the largest power of two
 * <= N and rem = N - p2, the first 2*rem ranks pair up: each even one
 * hands its buffer to the odd one above it and later receives the
 * result. Every pairwise step computes a op b on one side and b op a on
 * the other; the ops are exactly commutative, so all ranks end with the
 * same bits. */
int ftc__build_allreduce_rdouble(ftc__sched_ctx *x)
{
    ftc__op *op = x->op;
    int n = x->size, r = x->rank;
    size_t bytes = op->count * x->E;
    bool avg = op->op == FTC_OP_AVG;
    int p2 = 1;
    while (p2 * 2 <= n) {
        p2 *= 2;
    }
    int rem = n - p2;
    int vr; /* rank among the p2 active ranks, or -1 when folded away */
    const uint8_t *acc = op->in; /* where this rank's partial result is */
    ftc__dep dep = FTC__NO_DEP;
    if (r < 2 * rem) {
        int ch = ftc__sched_chan(x, r ^ 1, 0);
        if (r % 2 == 0) {
            uint32_t s = ftc__plan_send(x->p, ch, op->in, bytes, FTC__NO_DEP);
            ftc__plan_recv(x->p, ch, op->out, bytes, ftc__after_send(ch, s));
            return x->p->error;
        }
        uint32_t i = ftc__plan_recv_reduce(x->p, ch, op->out, op->in, bytes,
                                           FTC__NO_DEP, avg && p2 == 1);
        dep = ftc__after_recv(ch, i);
        acc = op->out;
        vr = r / 2;
    } else {
        vr = r - rem;
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        int pv = vr ^ mask;
        int peer = pv < rem ? pv * 2 + 1 : pv + rem;
        int ch = ftc__sched_chan(x, peer, 0);
        uint32_t s = ftc__plan_send(x->p, ch, acc, bytes, dep);
        /* The buffer is overwritten only once it has been sent. */
        uint32_t i = ftc__plan_recv_reduce(x->p, ch, op->out, acc, bytes,
                                           ftc__after_send(ch, s),
                                           avg && mask * 2 == p2);
        dep = ftc__after_recv(ch, i);
        acc = op->out;
    }
    if (r < 2 * rem) {
        int ch = ftc__sched_chan(x, r - 1, 0);
        ftc__plan_send(x->p, ch, op->out, bytes, dep);
    }
    return x->p->error;
}
