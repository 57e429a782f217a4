/* Choosing and building the plan of a collective (sched.h): by message
 * size and group size unless the caller named an algorithm. A group of
 * one only copies locally. */
#include "pg/sched/sched_int.h"

#include "pg/reduce.h"

/* Which algorithms each collective accepts, and which AUTO picks for small
 * and for large messages. */
static const struct {
    uint32_t allowed; /* 1 << FTC_ALGO_* */
    int small, large;
} choice[FTC__COLL_END] = {
    [FTC__ALLREDUCE] = {1 << FTC_ALGO_RING | 1 << FTC_ALGO_RDOUBLE |
                            1 << FTC_ALGO_HIER,
                        FTC_ALGO_RDOUBLE, FTC_ALGO_RING},
    [FTC__ALLGATHER] = {1 << FTC_ALGO_RING | 1 << FTC_ALGO_DIRECT |
                            1 << FTC_ALGO_HIER,
                        FTC_ALGO_DIRECT, FTC_ALGO_RING},
    [FTC__ALLGATHERV] = {1 << FTC_ALGO_RING | 1 << FTC_ALGO_DIRECT |
                             1 << FTC_ALGO_HIER,
                         FTC_ALGO_DIRECT, FTC_ALGO_RING},
    [FTC__REDUCE_SCATTER] = {1 << FTC_ALGO_RING | 1 << FTC_ALGO_DIRECT,
                             FTC_ALGO_DIRECT, FTC_ALGO_RING},
    [FTC__BROADCAST] = {1 << FTC_ALGO_TREE | 1 << FTC_ALGO_CHAIN |
                            1 << FTC_ALGO_HIER,
                        FTC_ALGO_TREE, FTC_ALGO_CHAIN},
    [FTC__REDUCE] = {1 << FTC_ALGO_TREE | 1 << FTC_ALGO_CHAIN, FTC_ALGO_TREE,
                     FTC_ALGO_CHAIN},
};

static const char *const algo_names[] = {"auto", "ring",  "rdouble", "direct",
                                         "tree", "chain", "hier"};

int ftc__sched_validate(int coll, int algo)
{
    if (algo == FTC_ALGO_AUTO) {
        return 0;
    }
    if (algo < 0 || algo > FTC_ALGO_HIER) {
        return ftc__seterr(FTC_EINVAL, "unknown algorithm %d", algo);
    }
    if (coll <= 0 || coll >= FTC__COLL_END ||
        !(choice[coll].allowed & (1u << algo))) {
        return ftc__seterr(FTC_EINVAL, "algorithm '%s' does not apply to %s",
                           algo_names[algo], ftc__coll_name(coll));
    }
    return 0;
}

/* Total bytes that decide small vs large. */
static size_t decisive_bytes(const ftc__sched_ctx *x, const size_t *cnt)
{
    const ftc__op *op = x->op;
    if (op->coll == FTC__ALLGATHERV) {
        size_t t = 0;
        for (int i = 0; i < x->size; i++) {
            t += cnt[i];
        }
        return t * x->E;
    }
    if (op->coll == FTC__ALLGATHER || op->coll == FTC__REDUCE_SCATTER) {
        return op->count * x->E * (size_t)x->size;
    }
    return op->count * x->E;
}

/* A group of one: the result is the input. */
static void local_only(const ftc__op *op)
{
    size_t bytes = op->count * op->elem;
    if (op->coll == FTC__ALLTOALL || op->coll == FTC__ALLTOALLV ||
        op->coll == FTC__ALLGATHERV) {
        bytes = op->counts[0] * op->elem;
    }
    if (op->in != NULL && op->out != NULL && op->in != op->out &&
        op->coll != FTC__BROADCAST && op->coll != FTC__BARRIER) {
        memmove(op->out, op->in, bytes);
    }
}

int ftc__sched_build(const ftc__sched_group *sg, ftc__plan *p, ftc__op *op)
{
    ftc__plan_reset(p, op->dtype, op->op, sg->size);
    if (sg->size == 1) {
        local_only(op);
        return 0;
    }
    ftc__sched_ctx x = {.p = p,
                        .op = op,
                        .rank = sg->rank,
                        .size = sg->size,
                        .streams = sg->streams,
                        .E = op->elem,
                        .scratch = sg->scratch,
                        .hosts = sg->hosts};
    x.seg = sg->segment_bytes / op->elem;
    x.seg = x.seg == 0 ? 1 : x.seg;

    /* Block layout of allgather(v): counts and offsets per rank. */
    size_t *cnt = NULL, *off = NULL;
    if (op->coll == FTC__ALLGATHER || op->coll == FTC__ALLGATHERV) {
        cnt = ftc__calloc((size_t)x.size, sizeof(*cnt));
        off = ftc__calloc((size_t)x.size, sizeof(*off));
        if (cnt == NULL || off == NULL) {
            ftc__free(cnt);
            ftc__free(off);
            return ftc__seterr(FTC_ENOMEM, "allgather: out of memory");
        }
        size_t at = 0;
        for (int i = 0; i < x.size; i++) {
            cnt[i] = op->coll == FTC__ALLGATHER ? op->count : op->counts[i];
            off[i] = at;
            at += cnt[i];
        }
        memmove(op->out + off[x.rank] * op->elem, op->in,
                cnt[x.rank] * op->elem);
    }
    int algo = op->algo;
    if (algo == FTC_ALGO_AUTO && op->coll < FTC__COLL_END &&
        choice[op->coll].allowed != 0) {
        algo = decisive_bytes(&x, cnt) <= sg->small_bytes
                   ? choice[op->coll].small
                   : choice[op->coll].large;
        if (algo == choice[op->coll].large &&
            (choice[op->coll].allowed & (1u << FTC_ALGO_HIER))) {
            algo = FTC_ALGO_HIER;
        }
    }
    bool two_level = x.hosts != NULL && x.hosts->nhost > 0;
    if (algo == FTC_ALGO_HIER && !two_level) {
        algo = choice[op->coll].large;
    }
    int rc;
    switch (op->coll) {
    case FTC__ALLREDUCE:
        rc = algo == FTC_ALGO_HIER   ? ftc__build_allreduce_hier(&x)
             : algo == FTC_ALGO_RING ? ftc__build_allreduce_ring(&x)
                                     : ftc__build_allreduce_rdouble(&x);
        break;
    case FTC__ALLGATHER:
    case FTC__ALLGATHERV:
        rc = algo == FTC_ALGO_HIER ? ftc__build_allgather_hier(&x, cnt, off)
             : algo == FTC_ALGO_RING
                 ? ftc__build_allgather_ring(&x, cnt, off)
                 : ftc__build_allgather_direct(&x, cnt, off);
        break;
    case FTC__REDUCE_SCATTER:
        rc = algo == FTC_ALGO_RING ? ftc__build_reduce_scatter_ring(&x)
                                   : ftc__build_reduce_scatter_direct(&x);
        break;
    case FTC__BROADCAST:
        rc = algo == FTC_ALGO_HIER    ? ftc__build_bcast_hier(&x)
             : algo == FTC_ALGO_CHAIN ? ftc__build_bcast_chain(&x)
                                      : ftc__build_bcast_tree(&x);
        break;
    case FTC__REDUCE:
        rc = algo == FTC_ALGO_CHAIN ? ftc__build_reduce_chain(&x)
                                    : ftc__build_reduce_tree(&x);
        break;
    case FTC__GATHER:
        if (x.rank == op->root) {
            memmove(op->out + (size_t)x.rank * op->count * op->elem, op->in,
                    op->count * op->elem);
        }
        rc = ftc__build_gather(&x);
        break;
    case FTC__SCATTER:
        if (x.rank == op->root) {
            memmove(op->out, op->in + (size_t)x.rank * op->count * op->elem,
                    op->count * op->elem);
        }
        rc = ftc__build_scatter(&x);
        break;
    case FTC__ALLTOALL:
    case FTC__ALLTOALLV:
        rc = ftc__build_alltoallv(&x, op->counts, op->rcounts);
        break;
    default:
        rc = ftc__build_barrier(&x);
        break;
    }
    ftc__free(cnt);
    ftc__free(off);
    return rc;
}

uint8_t *ftc__scratch_get(ftc__scratch *s, size_t bytes)
{
    bytes = bytes < 64 ? 64 : bytes;
    if (bytes > s->cap) {
        ftc__free(s->buf);
        s->buf = ftc__malloc(bytes);
        s->cap = s->buf != NULL ? bytes : 0;
    }
    return s->buf;
}

void ftc__scratch_free(ftc__scratch *s)
{
    ftc__free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}
