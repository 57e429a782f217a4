/* Shared helpers of the schedule builders (sched_*.c): block and segment
 * arithmetic and the per-call context. */
#ifndef FTC_PG_SCHED_SCHED_INT_H
#define FTC_PG_SCHED_SCHED_INT_H

#include "base/base_int.h"
#include "pg/sched/sched.h"

typedef struct ftc__sched_ctx {
    ftc__plan *p;
    ftc__op *op;
    int rank, size;
    int streams; /* channels per pair */
    size_t E;    /* bytes per element */
    size_t seg;  /* elements per pipeline segment */
    ftc__scratch *scratch;
    const ftc__sched_hosts *hosts; /* a two-level layout, or NULL */
} ftc__sched_ctx;

static inline int ftc__mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* Elements in segment j of a block of cnt elements; every block has at
 * least one (possibly empty) segment so every step sends a message. */
static inline size_t ftc__nseg(const ftc__sched_ctx *x, size_t cnt)
{
    return cnt == 0 ? 1 : (cnt + x->seg - 1) / x->seg;
}

static inline size_t ftc__seg_len(const ftc__sched_ctx *x, size_t cnt, size_t j)
{
    size_t start = j * x->seg;
    if (start >= cnt) {
        return 0;
    }
    return (cnt - start < x->seg ? cnt - start : x->seg);
}

/* The channel of stream s to or from peer. */
static inline int ftc__sched_chan(const ftc__sched_ctx *x, int peer, int s)
{
    return ftc__plan_chan_of(peer, s, x->streams);
}

/* The channel segment j to/from peer travels on (striped over streams). */
static inline int ftc__seg_chan(const ftc__sched_ctx *x, int peer, size_t j)
{
    return ftc__sched_chan(x, peer, (int)(j % (size_t)x->streams));
}

/* Block b of an even split of count into n blocks. */
static inline size_t ftc__blk_cnt(size_t count, int n, int b)
{
    return count / (size_t)n + ((size_t)b < count % (size_t)n ? 1 : 0);
}

static inline size_t ftc__blk_off(size_t count, int n, int b)
{
    size_t rem = count % (size_t)n;
    return (size_t)b * (count / (size_t)n) +
           ((size_t)b < rem ? (size_t)b : rem);
}

/* Whole-message transfers split over the streams, identically at both
 * ends. Return the index of the last part; dep applies to every part. */
void ftc__send_parts(ftc__sched_ctx *x, int peer, const uint8_t *src,
                     size_t bytes, ftc__dep dep);
void ftc__recv_parts(ftc__sched_ctx *x, int peer, uint8_t *dst, size_t bytes,
                     ftc__dep dep);

/* Builders, one per algorithm family (sched_*.c). */
int ftc__build_allreduce_ring(ftc__sched_ctx *x);
int ftc__build_allreduce_rdouble(ftc__sched_ctx *x);
/* Blocks of cnt[b] elements at off[b]; in is this rank's block. */
int ftc__build_allgather_ring(ftc__sched_ctx *x, const size_t *cnt,
                              const size_t *off);
int ftc__build_allgather_direct(ftc__sched_ctx *x, const size_t *cnt,
                                const size_t *off);
int ftc__build_reduce_scatter_ring(ftc__sched_ctx *x);
int ftc__build_reduce_scatter_direct(ftc__sched_ctx *x);
int ftc__build_bcast_tree(ftc__sched_ctx *x);
int ftc__build_bcast_chain(ftc__sched_ctx *x);
int ftc__build_reduce_tree(ftc__sched_ctx *x);
int ftc__build_reduce_chain(ftc__sched_ctx *x);
int ftc__build_gather(ftc__sched_ctx *x);
int ftc__build_scatter(ftc__sched_ctx *x);
int ftc__build_alltoallv(ftc__sched_ctx *x, const size_t *scnt,
                         const size_t *rcnt);
int ftc__build_barrier(ftc__sched_ctx *x);
/* Broadcast down the chain prev -> this rank -> next (-1: none). */
int ftc__build_bcast_chain_links(ftc__sched_ctx *x, int prev, int next);
/* Hierarchical plans (sched_hier.c); x->hosts is a two-level layout. */
int ftc__build_allreduce_hier(ftc__sched_ctx *x);
int ftc__build_allgather_hier(ftc__sched_ctx *x, const size_t *cnt,
                              const size_t *off);
int ftc__build_bcast_hier(ftc__sched_ctx *x);

#endif
