/* pgt_check: one collective, its reference result, and a bit-exact
 * comparison. Inputs are small integers, so every reduction order gives
 * the same exact value and only the documented rounding (AVG's single
 * division) is modelled. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "pg/half.h"
#include "pg_kit.h"

static const char *const names[PGT_END] = {
    [PGT_ALLREDUCE] = "allreduce",   [PGT_BROADCAST] = "broadcast",
    [PGT_REDUCE] = "reduce",         [PGT_ALLGATHER] = "allgather",
    [PGT_ALLGATHERV] = "allgatherv", [PGT_REDUCE_SCATTER] = "reduce_scatter",
    [PGT_ALLTOALL] = "alltoall",     [PGT_ALLTOALLV] = "alltoallv",
    [PGT_GATHER] = "gather",         [PGT_SCATTER] = "scatter",
    [PGT_BARRIER] = "barrier",       [PGT_SENDRECV] = "send/recv",
};

const char *pgt_coll_name(int coll)
{
    return coll > 0 && coll < PGT_END ? names[coll] : "?";
}

/* The collective's own buffers: from ftc_pg_mem_alloc when
 * PGT_SHARED_BUFFERS is set (what Baby groups move without a copy), else
 * the C heap. Zero-filled. */
static bool shared_buffers(void)
{
    return getenv("PGT_SHARED_BUFFERS") != NULL;
}

static void *buf_alloc(size_t n, size_t elem)
{
    void *p = NULL;
    if (!shared_buffers()) {
        return calloc(n, elem);
    }
    return ftc_pg_mem_alloc(n * elem, &p) == 0 ? p : NULL;
}

static void buf_free(void *p)
{
    if (shared_buffers()) {
        ftc_pg_mem_free(p);
    } else {
        free(p);
    }
}

/* Stores v (an exact small integer, or an AVG quotient) as dtype. */
static void put(void *p, size_t i, int dt, double v)
{
    switch (dt) {
    case FTC_DTYPE_F32:
        ((float *)p)[i] = (float)v;
        break;
    case FTC_DTYPE_F64:
        ((double *)p)[i] = v;
        break;
    case FTC_DTYPE_F16:
        ((uint16_t *)p)[i] = ftc__f32_to_f16((float)v);
        break;
    case FTC_DTYPE_BF16:
        ((uint16_t *)p)[i] = ftc__f32_to_bf16((float)v);
        break;
    case FTC_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)(uint8_t)(int64_t)v;
        break;
    case FTC_DTYPE_U8:
        ((uint8_t *)p)[i] = (uint8_t)(int64_t)v;
        break;
    case FTC_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)(uint32_t)(int64_t)v;
        break;
    default:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    }
}

static double fold(double acc, double v, int op, bool first)
{
    if (first) {
        return v;
    }
    switch (op) {
    case FTC_OP_PROD:
        return acc * v;
    case FTC_OP_MIN:
        return v < acc ? v : acc;
    case FTC_OP_MAX:
        return v > acc ? v : acc;
    default:
        return acc + v;
    }
}

/* The reduction over all ranks of element i of block `blk` of each rank's
 * input (inputs have blocks of `stride` elements), stored as dtype. */
static void reduced(void *out, size_t o, int n, int seed, size_t blk,
                    size_t stride, size_t i, int dt, int op)
{
    double acc = 0;
    for (int r = 0; r < n; r++) {
        acc =
            fold(acc, pgt_value(seed, r, blk * stride + i, dt, op), op, r == 0);
    }
    if (op == FTC_OP_AVG) {
        /* One division, in f64 for f64 and in f32 otherwise. */
        acc = dt == FTC_DTYPE_F64 ? acc / n : (double)((float)acc / (float)n);
    } else if (dt == FTC_DTYPE_I8 || dt == FTC_DTYPE_U8 ||
               dt == FTC_DTYPE_I32) {
        /* Wrap like the kernels (products of up to 8 factors fit i64). */
        acc = (double)(int64_t)acc;
    }
    put(out, o, dt, acc);
}

typedef struct bufs {
    uint8_t *in, *out, *want;
    size_t in_n, out_n, elem;
} bufs;

static void fill_input(bufs *b, int seed, int rank, int dt, int op)
{
    for (size_t i = 0; i < b->in_n; i++) {
        put(b->in, i, dt, pgt_value(seed, rank, i, dt, op));
    }
}

static int compare(const bufs *b, const char *what, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (memcmp(b->out + i * b->elem, b->want + i * b->elem, b->elem) != 0) {
            uint64_t g = 0, w = 0;
            memcpy(&g, b->out + i * b->elem, b->elem);
            memcpy(&w, b->want + i * b->elem, b->elem);
            return ftc__seterr(
                FTC_EPROTO, "%s: element %zu of %zu is %#llx, want %#llx", what,
                i, n, (unsigned long long)g, (unsigned long long)w);
        }
    }
    return 0;
}

/* Per-pair alltoallv counts: rank i sends f(i, j) elements to rank j. */
static size_t vcount(size_t count, int i, int j)
{
    return (count + (size_t)i * 3 + (size_t)j) % 5 + (count > 4 ? count : 0);
}

static size_t gvcount(size_t count, int r)
{
    return r % 3 == 1 ? 0 : count + (size_t)r;
}

int pgt_check(ftc_pg *pg, int coll, int dt, int op, size_t count, int algo,
              int root, int seed)
{
    int n = ftc_pg_size(pg), r = ftc_pg_rank(pg);
    bufs b = {.elem = ftc_dtype_size(dt)};
    size_t *scnt = calloc((size_t)n, sizeof(size_t));
    size_t *rcnt = calloc((size_t)n, sizeof(size_t));
    switch (coll) {
    case PGT_ALLREDUCE:
    case PGT_BROADCAST:
    case PGT_REDUCE:
    case PGT_SENDRECV:
        b.in_n = b.out_n = count;
        break;
    case PGT_ALLGATHER:
    case PGT_GATHER:
        b.in_n = count;
        b.out_n = count * (size_t)n;
        break;
    case PGT_SCATTER:
    case PGT_REDUCE_SCATTER:
        b.in_n = count * (size_t)n;
        b.out_n = count;
        break;
    case PGT_ALLTOALL:
        b.in_n = b.out_n = count * (size_t)n;
        break;
    case PGT_ALLGATHERV:
        for (int i = 0; i < n; i++) {
            scnt[i] = gvcount(count, i);
            b.out_n += scnt[i];
        }
        b.in_n = scnt[r];
        break;
    case PGT_ALLTOALLV:
        for (int j = 0; j < n; j++) {
            scnt[j] = vcount(count, r, j);
            rcnt[j] = vcount(count, j, r);
            b.in_n += scnt[j];
            b.out_n += rcnt[j];
        }
        break;
    default:
        break;
    }
    b.in = buf_alloc(b.in_n + 1, b.elem);
    b.out = buf_alloc(b.out_n + 1, b.elem);
    b.want = calloc(b.out_n + 1, b.elem);
    memset(b.out, 0xa5, b.out_n * b.elem); /* garbage the op must replace */
    fill_input(&b, seed, r, dt, op);
    ftc_tensor in = ftc_tensor_cpu(b.in, b.in_n, dt);
    ftc_tensor out = ftc_tensor_cpu(b.out, b.out_n, dt);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.algo = algo;
    o.timeout_ms = tk_ms(60000);
    ftc_work *w = NULL;
    int rc = 0;
    size_t check_n = b.out_n;
    switch (coll) {
    case PGT_ALLREDUCE:
        if (seed % 2 == 0) { /* in place */
            memcpy(b.out, b.in, b.in_n * b.elem);
            rc = ftc_pg_allreduce(pg, &out, &out, op, &o, &w);
        } else {
            rc = ftc_pg_allreduce(pg, &in, &out, op, &o, &w);
        }
        for (size_t i = 0; i < count; i++) {
            reduced(b.want, i, n, seed, 0, 0, i, dt, op);
        }
        break;
    case PGT_REDUCE:
        rc = ftc_pg_reduce(pg, &in, r == root ? &out : NULL, op, root, &o, &w);
        for (size_t i = 0; i < count; i++) {
            reduced(b.want, i, n, seed, 0, 0, i, dt, op);
        }
        check_n = r == root ? count : 0;
        break;
    case PGT_REDUCE_SCATTER:
        rc = ftc_pg_reduce_scatter(pg, &in, &out, op, &o, &w);
        for (size_t i = 0; i < count; i++) {
            reduced(b.want, i, n, seed, (size_t)r, count, i, dt, op);
        }
        break;
    case PGT_BROADCAST:
        if (r == root) {
            memcpy(b.out, b.in, b.in_n * b.elem);
        }
        rc = ftc_pg_broadcast(pg, &out, root, &o, &w);
        for (size_t i = 0; i < count; i++) {
            put(b.want, i, dt, pgt_value(seed, root, i, dt, op));
        }
        break;
    case PGT_ALLGATHER:
    case PGT_GATHER:
        rc =
            coll == PGT_ALLGATHER
                ? ftc_pg_allgather(pg, &in, &out, &o, &w)
                : ftc_pg_gather(pg, &in, r == root ? &out : NULL, root, &o, &w);
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < count; i++) {
                put(b.want, (size_t)k * count + i, dt,
                    pgt_value(seed, k, i, dt, op));
            }
        }
        check_n = coll == PGT_GATHER && r != root ? 0 : check_n;
        break;
    case PGT_ALLGATHERV: {
        rc = ftc_pg_allgatherv(pg, &in, &out, scnt, &o, &w);
        size_t at = 0;
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < scnt[k]; i++) {
                put(b.want, at++, dt, pgt_value(seed, k, i, dt, op));
            }
        }
        break;
    }
    case PGT_SCATTER:
        rc = ftc_pg_scatter(pg, r == root ? &in : NULL, &out, root, &o, &w);
        for (size_t i = 0; i < count; i++) {
            put(b.want, i, dt,
                pgt_value(seed, root, (size_t)r * count + i, dt, op));
        }
        break;
    case PGT_ALLTOALL:
    case PGT_ALLTOALLV: {
        if (coll == PGT_ALLTOALL) {
            for (int j = 0; j < n; j++) {
                scnt[j] = rcnt[j] = count;
            }
            rc = ftc_pg_alltoall(pg, &in, &out, &o, &w);
        } else {
            rc = ftc_pg_alltoallv(pg, &in, scnt, &out, rcnt, &o, &w);
        }
        /* Block from rank j: its elements for me start after what it
         * sends to ranks before me. */
        size_t at = 0;
        for (int j = 0; j < n; j++) {
            size_t start = 0;
            for (int k = 0; k < r; k++) {
                start += coll == PGT_ALLTOALL ? count : vcount(count, j, k);
            }
            for (size_t i = 0; i < rcnt[j]; i++) {
                put(b.want, at++, dt, pgt_value(seed, j, start + i, dt, op));
            }
        }
        break;
    }
    case PGT_BARRIER:
        rc = ftc_pg_barrier(pg, &o, &w);
        check_n = 0;
        break;
    case PGT_SENDRECV: {
        /* A ring: send to r+1, receive from r-1 (any source when even). */
        ftc_work *ws = NULL;
        int to = (r + 1) % n, from = (r + n - 1) % n;
        if (n > 1) {
            rc = ftc_pg_recv(pg, &out, seed % 2 ? from : FTC_PG_ANY_SOURCE,
                             (uint32_t)seed, &o, &w);
            if (rc == 0) {
                rc = ftc_pg_send(pg, &in, to, (uint32_t)seed, &o, &ws);
            }
            if (rc == 0) {
                rc = pgt_wait(ws);
            }
            for (size_t i = 0; i < count; i++) {
                put(b.want, i, dt, pgt_value(seed, from, i, dt, op));
            }
        } else {
            check_n = 0;
        }
        break;
    }
    default:
        rc = FTC_EINVAL;
        break;
    }
    if (rc == 0 && w != NULL) {
        int src = -1;
        rc = ftc_work_wait(w, tk_ms(60000));
        if (rc == 0 && coll == PGT_SENDRECV &&
            (ftc_work_source(w, &src) != 0 || src != (r + n - 1) % n)) {
            rc = ftc__seterr(FTC_EPROTO, "recv source %d", src);
        }
        ftc_work_release(w);
    }
    if (rc == 0) {
        rc = compare(&b, pgt_coll_name(coll), check_n);
    }
    if (rc != 0) {
        ftc__adderr(rc,
                    "%s %s/%s count %zu algo %d root %d seed %d (rank %d "
                    "of %d)",
                    pgt_coll_name(coll), ftc_dtype_name(dt), ftc_op_name(op),
                    count, algo, root, seed, r, n);
    }
    buf_free(b.in);
    buf_free(b.out);
    free(b.want);
    free(scnt);
    free(rcnt);
    return rc;
}
